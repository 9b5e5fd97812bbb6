#!/usr/bin/env bash
# Builds dsv4-cache and passes its checks. Stages:
#
#   deps    the Debian packages that are missing (scripts/install-deps.sh)
#   gcc     g++ Release build (the CUDA kernels too, when nvcc is found), the planner on its
#           default, and every test (GPU tests skip without a device)
#   python  the Python package: `pip install .` into the virtual environment the deps stage made
#           (.venv, or $DSV4_VENV), then pytest tests/python, which compares it with the gcc
#           stage's CLIs (torch tests skip with the reason when torch is not installed)
#   tidy    clang-tidy (.clang-tidy) over the public headers (in one translation unit per job): zero
#           warnings
#   format  clang-format (.clang-format) check of every C++/CUDA file in the tree
#   clang   clang++ Release build (CUDA off: the g++ build compiles the kernels) and every test
#   asan    clang++ with AddressSanitizer + UndefinedBehaviorSanitizer (-fno-sanitize-recover=all)
#           and libstdc++ assertions (examples and the compile-only header check not built: nothing
#           runs them); host tests without the labels sweep (2^32-input sweeps) and grid (the
#           plan-safety grids, about two minutes in Release), too slow under sanitizers, gpu and
#           packaging (no sanitizer content)
#   fuzz    the libFuzzer targets of fuzz/, each for DSV4_FUZZ_SECONDS (default 60)
#   slow    the g++ build's slow sweeps and grids (ctest labels sweep: the 2^32-input codec sweeps
#           against NVIDIA's host conversions; grid: the plan-safety grids): every check the gcc
#           stage leaves out of the README command
#   oracles the released engines' own sizing code as the planner's oracle (issue 38):
#           tools/engine-oracles/run.py downloads SGLang 0.5.23, vLLM 0.33.0 and tokenspeed 0.1.1 with
#           torch from the package index (over 1.4 GB the first time; about 8.5 GB of environments in
#           ~/.cache/dsv4-engine-oracles or $DSV4_ORACLE_CACHE), runs their sizing functions on CPU and compares every figure with the
#           gcc stage's planner. Not in the default or --all lists (network, downloads): run it by name,
#           DSV4_STAGES=oracles bash scripts/test.sh
#
# `bash scripts/test.sh` (the README's test command) runs deps, gcc, python, tidy and format: every
# test but the sweeps and grids, in under 20 minutes on 2 cores. `bash scripts/test.sh --all` (what
# .ci/run runs) adds the sweeps and grids (slow), the other compiler, the sanitizers and the
# fuzzers, each a stage of its own.
# Every stage has a time budget on the 2-core machine (stage_budget below; the README command's
# total 1,200 s, --all's 3,600 s): a stage or total over its budget prints a WARNING line (the run
# still passes; the budget is a promise to keep, not a test). After the gcc stage the ten slowest
# compile units (Ninja's log) and the ten slowest tests are printed.
#
# Usage: bash scripts/test.sh [--all]    (from anywhere; works in the repository root)
# Environment:
#   DSV4_BUILD_DIR      build directory of the g++ stage (default: build, as the README's first
#                       command); the others use <dir>-clang, <dir>-asan and <dir>-fuzz
#   DSV4_JOBS           parallel jobs (default: nproc)
#   DSV4_FUZZ_SECONDS   seconds per fuzz target (default 60)
#   DSV4_STAGES         the stages to run, in order (default: "deps gcc python tidy format"; with
#                       --all "deps gcc python tidy format slow clang asan fuzz"; oracles, which
#                       downloads the engines, only when named: DSV4_STAGES=oracles)
#   DSV4_ORACLE_CACHE   where the oracles stage keeps the engines' environments
#                       (default ~/.cache/dsv4-engine-oracles)
#   DSV4_VENV           the Python environment (default: .venv, made by scripts/install-deps.sh)
# Prints each stage's time and ctest's summary lines at the end; any failure exits non-zero.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
build=${DSV4_BUILD_DIR:-build}
jobs=${DSV4_JOBS:-$(nproc)}
fuzz_seconds=${DSV4_FUZZ_SECONDS:-60}
all_stages="deps gcc python tidy format slow clang asan fuzz"
default_stages="deps gcc python tidy format"
case "${1:-}" in
  "") ;;
  --all) default_stages=$all_stages ;;
  *) echo "scripts/test.sh: unknown argument '$1' (usage: bash scripts/test.sh [--all])" >&2; exit 2 ;;
esac
stages=${DSV4_STAGES:-$default_stages}
summary=$(mktemp)

# nvcc is not on PATH in a fresh root shell; CMake's check_language(CUDA) looks there.
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="$PATH:/usr/local/cuda/bin"
fi
# Ninja for new build directories (an existing directory keeps its generator).
if command -v ninja >/dev/null 2>&1; then export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}; fi
export CTEST_OUTPUT_ON_FAILURE=1
export CI=${CI:-false}

# ---- stage bookkeeping: every stage is timed; the EXIT trap prints the table and the verdict ----
# Seconds each stage may take on the 2-core machine (a fresh clone, dependencies installed).
declare -A stage_budget=([deps]=300 [gcc]=780 [python]=240 [tidy]=150 [format]=30 [slow]=600
  [clang]=900 [asan]=900 [fuzz]=$((fuzz_seconds * 8 + 400)) [oracles]=900)
total_budget=1200
if [[ $default_stages == "$all_stages" ]]; then total_budget=3600; fi
warnings=()
stage_names=()
stage_secs=()
current=""
stage_t0=0
t_start=$SECONDS
begin() {
  current=$1
  stage_t0=$SECONDS
  echo
  echo "==== [$current] $2"
}
end() {
  local took=$((SECONDS - stage_t0)) budget=${stage_budget[$current]:-0}
  stage_names+=("$current")
  stage_secs+=("$took")
  if ((budget > 0 && took > budget)); then
    warnings+=("WARNING: stage $current took $took s, over its budget of $budget s on 2 cores")
    echo "${warnings[-1]}" >&2
  fi
  current=""
}
pids=()
finish() {
  local rc=$?
  if ((${#pids[@]} > 0)); then kill "${pids[@]}" 2>/dev/null || true; fi  # fuzzers still running after a failure
  echo
  echo "==== summary"
  if [[ -s $summary ]]; then cat "$summary"; fi
  local i
  for i in "${!stage_names[@]}"; do printf '  %-7s %5d s\n' "${stage_names[$i]}" "${stage_secs[$i]}"; done
  if [[ -n $current ]]; then printf '  %-7s %5d s  FAILED\n' "$current" $((SECONDS - stage_t0)); fi
  printf '  %-7s %5d s\n' total $((SECONDS - t_start))
  if ((SECONDS - t_start > total_budget)); then
    warnings+=("WARNING: the run took $((SECONDS - t_start)) s, over its budget of $total_budget s on 2 cores")
  fi
  for i in "${!warnings[@]}"; do echo "${warnings[$i]}"; done
  rm -f "$summary"
  if ((rc == 0)); then echo "scripts/test.sh: all stages passed"; else echo "scripts/test.sh: FAILED (exit $rc)" >&2; fi
  exit "$rc"
}
trap finish EXIT

# ctest_run <label> <build dir> [ctest args...]: runs ctest, keeps its summary lines.
ctest_run() {
  local label=$1 dir=$2
  shift 2
  local log="$dir/ctest.log"
  local rc=0
  ctest --test-dir "$dir" -j "$jobs" --timeout 1500 "$@" 2>&1 | tee "$log" || rc=$?
  grep -E 'tests passed|tests failed|Total Test time' "$log" | sed "s/^/  ctest $label: /" >>"$summary" || true
  return "$rc"
}

# slowest <build dir>: the ten slowest compile units of the last build (Ninja's log: the latest
# entry of each output) and the ten slowest tests of the last ctest run (its log).
slowest() {
  local dir=$1
  if [[ -f $dir/.ninja_log ]]; then
    echo "ten slowest compile units (s):"
    awk -F'\t' '!/^#/ && $4 ~ /\.o$/ {t[$4] = ($2 - $1) / 1000} END {for (o in t) printf "%8.1f  %s\n", t[o], o}' \
      "$dir/.ninja_log" | sort -rn | head -n 10
  fi
  if [[ -f $dir/ctest.log ]]; then
    echo "ten slowest tests (s):"
    sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.+ +Passed +([0-9.]+) sec.*/\2  \1/p' "$dir/ctest.log" |
      sort -rn | head -n 10 | awk '{printf "%8.1f  %s\n", $1, $2}'
  fi
}

# require_compiler <build dir> <CMake compiler id>: the directory must be configured with it.
require_compiler() {
  if ! grep -qs "set(CMAKE_CXX_COMPILER_ID \"$2\")" "$1"/CMakeFiles/*/CMakeCXXCompiler.cmake; then
    echo "scripts/test.sh: $1 is configured with another C++ compiler than $2; remove it or set DSV4_BUILD_DIR" >&2
    return 1
  fi
}

sanitizer_flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -D_GLIBCXX_ASSERTIONS"
# The sanitizer builds (asan, fuzz) keep line tables only: a report's stack names file and line;
# full debug info (RelWithDebInfo's -g) only made the builds slower.
sanitizer_build_type_flags="-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

for stage in $stages; do
  case $stage in
    deps)
      begin deps "install missing packages"
      bash scripts/install-deps.sh
      end
      ;;
    gcc)
      begin gcc "g++ Release build (CUDA when nvcc is found), the planner, every test [$build]"
      CXX=g++ CUDAHOSTCXX=g++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
      require_compiler "$build" GNU
      cmake --build "$build" -j "$jobs"
      "$build/tools/dsv4-cache-plan" >"$build/plan-default.txt"
      head -n 3 "$build/plan-default.txt"
      ctest_run g++ "$build" -LE 'sweep|grid'
      slowest "$build" || true  # a report, never a failure
      end
      ;;
    python)
      venv=${DSV4_VENV:-$root/.venv}
      begin python "the Python package: pip install . into $venv, pytest tests/python"
      CMAKE_BUILD_PARALLEL_LEVEL=$jobs "$venv/bin/python" -m pip install -q --no-build-isolation "$root"
      py_log="$root/$build/pytest.log"
      rc=0
      (cd "$root" && DSV4_TOOLS_DIR="$root/$build/tools" DSV4_REQUIRE_TOOLS=1 \
        "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider tests/python) 2>&1 | tee "$py_log" || rc=$?
      grep -E '^[0-9]+ (passed|failed)|^SKIPPED' "$py_log" | sed 's/^/  pytest: /' >>"$summary" || true
      ((rc == 0)) || exit "$rc"
      end
      ;;
    slow)
      begin slow "the sweeps and grids of the g++ build (ctest -L 'sweep|grid') [$build]"
      [[ -f $build/CTestTestfile.cmake ]] || { echo "scripts/test.sh: the slow stage needs the gcc stage's build ($build)" >&2; exit 1; }
      ctest_run slow "$build" -L 'sweep|grid'
      end
      ;;
    clang)
      begin clang "clang++ Release build (CUDA off), every test [$build-clang]"
      CXX=clang++ cmake -S . -B "$build-clang" -DCMAKE_BUILD_TYPE=Release -DDSV4_CACHE_ENABLE_CUDA=OFF
      require_compiler "$build-clang" Clang
      cmake --build "$build-clang" -j "$jobs"
      ctest_run clang++ "$build-clang"
      end
      ;;
    asan)
      begin asan "clang++ ASan+UBSan build, host tests without sweep/grid/gpu/packaging [$build-asan]"
      CXX=clang++ cmake -S . -B "$build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSV4_CACHE_ENABLE_CUDA=OFF \
        -DDSV4_CACHE_BUILD_EXAMPLES=OFF -DDSV4_CACHE_HEADER_CHECK=OFF \
        "$sanitizer_build_type_flags" \
        "-DCMAKE_CXX_FLAGS=$sanitizer_flags" "-DCMAKE_EXE_LINKER_FLAGS=$sanitizer_flags"
      require_compiler "$build-asan" Clang
      cmake --build "$build-asan" -j "$jobs"
      ctest_run asan+ubsan "$build-asan" -LE 'sweep|grid|gpu|packaging'
      end
      ;;
    tidy)
      begin tidy "clang-tidy over the public headers"
      # The headers in $jobs translation units (each includes its share of them), not one unit per
      # header: .clang-tidy's HeaderFilterRegex reports every public header a unit includes, so a
      # unit per header analysed the umbrella's headers again for each one (7 minutes on 2 cores).
      # That each header compiles alone is the dsv4_selfcontained target's check (g++ and clang++).
      mapfile -t headers < <(find include -name '*.hpp' | sort)
      tidy_dir="$(mktemp -d)"
      for i in "${!headers[@]}"; do
        echo "#include \"$root/${headers[$i]}\"" >>"$tidy_dir/unit_$((i % jobs)).cpp"
      done
      rc=0
      printf '%s\n' "$tidy_dir"/unit_*.cpp |
        xargs -P "$jobs" -I{} clang-tidy --quiet --config-file="$root/.clang-tidy" {} -- -x c++ -std=c++20 \
          -I"$root/include" >"$tidy_dir/log" 2>/dev/null || rc=$?
      findings=$(grep -E '(warning|error):' "$tidy_dir/log" | sort -u || true)
      rm -rf "$tidy_dir"
      if [[ -n $findings || $rc -ne 0 ]]; then
        echo "$findings"
        echo "clang-tidy: $(grep -c . <<<"$findings") finding(s) in the public headers (exit $rc)" >&2
        exit 1
      fi
      # clang-tidy 14 cannot parse the CUDA 13 headers (clang 14 supports CUDA <= 11.5); the .cuh
      # headers are compiled by nvcc with the g++ stage instead.
      echo "clang-tidy: ${#headers[@]} headers in $jobs units, 0 warnings ($(find include -name '*.cuh' | wc -l) .cuh headers need a CUDA-13-capable clang-tidy)"
      end
      ;;
    format)
      begin format "clang-format check of the tree"
      if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        mapfile -t sources < <(git ls-files -co --exclude-standard -- '*.hpp' '*.cpp' '*.h' '*.cuh' '*.cu' | sort)
      else
        mapfile -t sources < <(find . -path './build*' -prune -o -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.h' \
          -o -name '*.cuh' -o -name '*.cu' \) -print | sort)
      fi
      clang-format --dry-run --Werror "${sources[@]}"
      echo "clang-format: ${#sources[@]} files formatted"
      end
      ;;
    fuzz)
      begin fuzz "libFuzzer targets, ${fuzz_seconds} s each [$build-fuzz]"
      CXX=clang++ cmake -S . -B "$build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSV4_CACHE_FUZZ=ON \
        "$sanitizer_build_type_flags" \
        -DDSV4_CACHE_BUILD_TESTS=OFF -DDSV4_CACHE_BUILD_EXAMPLES=OFF -DDSV4_CACHE_ENABLE_CUDA=OFF -DDSV4_CACHE_INSTALL=OFF
      require_compiler "$build-fuzz" Clang
      cmake --build "$build-fuzz" -j "$jobs"
      mapfile -t targets < <(find "$build-fuzz/fuzz" -maxdepth 1 -type f -executable -name '*fuzz*' -printf '%f\n' | sort)
      ((${#targets[@]} > 0)) || { echo "no fuzz targets built" >&2; exit 1; }
      # Run the targets $jobs at a time; each writes its log, new inputs and crashes under the build dir.
      pids=()
      names=()
      for t in "${targets[@]}"; do
        mkdir -p "$build-fuzz/corpus-run/$t" "$build-fuzz/artifacts"
        dict=()
        if [[ -f fuzz/dict/$t.dict ]]; then dict=("-dict=fuzz/dict/$t.dict"); fi
        "$build-fuzz/fuzz/$t" "${dict[@]}" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
          -max_len=4096 -print_final_stats=1 -artifact_prefix="$build-fuzz/artifacts/$t-" \
          "$build-fuzz/corpus-run/$t" "fuzz/corpus/$t" >"$build-fuzz/$t.log" 2>&1 </dev/null &
        pids+=($!)
        names+=("$t")
        if ((${#pids[@]} >= jobs)); then
          wait "${pids[0]}" || { rc=$?; echo "fuzz: ${names[0]} failed (exit $rc):"; tail -n 40 "$build-fuzz/${names[0]}.log"; exit 1; }
          echo "  fuzz ${names[0]}: $(grep -m1 -oE 'stat::number_of_executed_units: [0-9]+' "$build-fuzz/${names[0]}.log" | grep -oE '[0-9]+$') runs, no crash" | tee -a "$summary"
          pids=("${pids[@]:1}")
          names=("${names[@]:1}")
        fi
      done
      for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || { rc=$?; echo "fuzz: ${names[$i]} failed (exit $rc):"; tail -n 40 "$build-fuzz/${names[$i]}.log"; exit 1; }
        echo "  fuzz ${names[$i]}: $(grep -m1 -oE 'stat::number_of_executed_units: [0-9]+' "$build-fuzz/${names[$i]}.log" | grep -oE '[0-9]+$') runs, no crash" | tee -a "$summary"
      done
      end
      ;;
    oracles)
      begin oracles "the released engines' sizing code against the planner (tools/engine-oracles/run.py) [$build]"
      [[ -x $build/tools/dsv4-cache-plan ]] || { echo "scripts/test.sh: the oracles stage needs the gcc stage's planner ($build/tools/dsv4-cache-plan)" >&2; exit 1; }
      oracle_log="$root/$build/oracles.log"
      rc=0
      python3 tools/engine-oracles/run.py --planner "$build/tools/dsv4-cache-plan" --json "$root/$build/oracles.json" 2>&1 |
        tee "$oracle_log" || rc=$?
      grep -E '^== ' "$oracle_log" | sed 's/^== /  oracles: /' >>"$summary" || true
      ((rc == 0)) || exit "$rc"
      end
      ;;
    *)
      echo "scripts/test.sh: unknown stage '$stage'" >&2
      exit 2
      ;;
  esac
done
