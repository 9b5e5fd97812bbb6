#!/usr/bin/env bash
# dsv4-cache GPU check: every GPU binary, the sample on every preset, the benchmark and
# compute-sanitizer, on one GPU machine, in under 5 minutes. One PASS / FAIL / SKIP line per step.
#
#   scripts/gpu-check.sh --prebuilt DIR [--out LOGDIR]   run the binaries of DIR, built elsewhere by
#                                                        scripts/gpu-build-prebuilt.sh DIR (needs
#                                                        only the NVIDIA driver and, for the
#                                                        sanitizer steps, compute-sanitizer)
#   scripts/gpu-check.sh [--build BUILD_DIR] [--out LOGDIR]
#                                                        build here first: with GoogleTest, fmt,
#                                                        CLI11, nlohmann_json and CMake >= 3.24,
#                                                        every GPU target with CMake; without them
#                                                        nvcc alone builds the self test, the
#                                                        layout check and the benchmark (the
#                                                        GoogleTest binaries and the sample: SKIP)
# Steps (each with its own time limit, all under one deadline, DSV4_GPU_CHECK_BUDGET_S, default
# 290 s):
#   machine            nvidia-smi, nvcc, compute-sanitizer, the prebuilt MANIFEST.txt
#   [build]            (build mode only)
#   cuda-kernels-test  cuda_kernels_test: the specialized and generic kernels through the sample's
#                      round trips (every region of V4-Flash, V4.1-Flash and V3.2 arenas; both
#                      paths for every writer), the arena, host-side launch validation
#   generic-kernels-test  generic_kernels_test: every registry format x writer against the host lanes
#   selftest           dsv4-cache-gpu-selftest: the round-trip cases without GoogleTest
#   host-device-layout dsv4-host-device-layout: layout members evaluated in device code
#   demo-<preset>      dsv4-cache-cuda-demo on v4-flash, v4-pro, v4.1-flash, v3.2 (4 requests x
#                      65,536 tokens, 16,384 rows per round trip): every pool, both paths, checked
#                      against the host codecs; demo-v4-flash-vllm: the same with --writer vllm
#   bench              dsv4-cache-gpu-bench (its whole output also in LOGDIR/bench.txt)
#   memcheck           compute-sanitizer memcheck --leak-check full on small sample runs of
#                      v4-flash, v4.1-flash and v3.2; memcheck-generic: on generic_kernels_test
#   racecheck, initcheck  the same tools on small v4-flash and v4.1-flash sample runs
# A step is SKIP when its binary reports no CUDA device (exit 3, or GoogleTest's "no CUDA device"
# skips), when the binary was not built, or when compute-sanitizer is missing; FAIL on any other
# non-zero exit or a time-out.
# Logs: LOGDIR (default: $OUT when set, else BUILD_DIR/logs or DIR.logs) gets summary.txt (the
# step lines), gpu-check.log (everything, each step's output capped at 400 KB) and bench.txt.
# Exit status: 0 every step passed; 1 a step failed; 3 nothing failed but a step was skipped.
# Environment: DSV4_CUDA_ARCH (build mode, default 90 = H100/H200), JOBS (default nproc),
# DSV4_GPU_CHECK_MODE=nvcc (build mode: the dependency-free build), DSV4_GPU_CHECK_BUDGET_S.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREBUILT=""
BUILD=""
LOGDIR=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prebuilt) PREBUILT="${2:?--prebuilt needs a directory}"; shift 2 ;;
    --out) LOGDIR="${2:?--out needs a directory}"; shift 2 ;;
    --build) BUILD="${2:?--build needs a directory}"; shift 2 ;;
    -h | --help) sed -n '2,40p' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "gpu-check: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) BUILD="$1"; shift ;;  # the old positional BUILD_DIR
  esac
done
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
if [ -n "$PREBUILT" ]; then
  PREBUILT="$(abs "$PREBUILT")"
  [ -d "$PREBUILT" ] || { echo "gpu-check: --prebuilt $PREBUILT is not a directory" >&2; exit 2; }
  LOGDIR="${LOGDIR:-${OUT:-$PREBUILT.logs}}"
else
  BUILD="$(abs "${BUILD:-$ROOT/build-gpu-check}")"
  LOGDIR="${LOGDIR:-${OUT:-$BUILD/logs}}"
fi
LOGDIR="$(abs "$LOGDIR")"
mkdir -p "$LOGDIR" || exit 2
WORK="$(mktemp -d)"
START=$(date +%s)
BUDGET="${DSV4_GPU_CHECK_BUDGET_S:-290}"
ARCH="${DSV4_CUDA_ARCH:-90}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
STEPS=()   # "NAME RESULT detail", in order
FAILED=0
SKIPPED=0
command -v nvcc >/dev/null || export PATH="$PATH:/usr/local/cuda/bin"
command -v nvidia-smi >/dev/null || export PATH="$PATH:/usr/local/nvidia/bin"

say() { echo "[gpu-check +$(($(date +%s) - START))s] $*"; }
record() {  # record NAME RESULT DETAIL
  STEPS+=("$(printf '%-22s %-4s %s' "$1" "$2" "$3")")
  [ "$2" = FAIL ] && FAILED=1
  [ "$2" = SKIP ] && SKIPPED=1
  say "$1: $2 $3"
}
skip() { record "$1" SKIP "($2)"; }

# step NAME LIMIT_S COMMAND: runs COMMAND (a bash command line) with a time limit, its output to
# $WORK/NAME.log; records PASS / FAIL / SKIP.
step() {
  local name="$1" limit="$2" cmd="$3"
  local left=$((BUDGET - ($(date +%s) - START)))
  if [ "$left" -lt 10 ]; then
    record "$name" FAIL "(not run: the ${BUDGET}s budget is spent)"
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "\$ $cmd" >"$WORK/$name.log"
  local t0
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" bash -c "$cmd" >>"$WORK/$name.log" 2>&1
  local rc=$?
  local dt=$(($(date +%s) - t0))
  tail -n 6 "$WORK/$name.log" | cut -c1-200
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    record "$name" FAIL "(timed out after ${limit}s)"
  elif [ $rc -eq 3 ]; then
    record "$name" SKIP "(exit 3: no CUDA device, ${dt}s)"
  elif [ $rc -ne 0 ]; then
    record "$name" FAIL "(exit $rc, ${dt}s; see gpu-check.log)"
  elif grep -q "no CUDA device" "$WORK/$name.log" || grep -q "^\[  SKIPPED \]" "$WORK/$name.log"; then
    record "$name" SKIP "(tests skipped: $(grep -m1 -o "no CUDA device[^\"]*" "$WORK/$name.log" || echo "see gpu-check.log"), ${dt}s)"
  else
    record "$name" PASS "(${dt}s)"
  fi
}

finish() {
  local verdict="every step PASSED"
  [ $SKIPPED -ne 0 ] && verdict="no failure, some steps SKIPPED"
  [ $FAILED -ne 0 ] && verdict="FAIL"
  {
    echo "dsv4-cache gpu-check: $([ -n "$PREBUILT" ] && echo "prebuilt $PREBUILT" || echo "build $BUILD")"
    for s in "${STEPS[@]}"; do echo "$s"; done
    echo "total $(($(date +%s) - START))s: $verdict"
  } >"$LOGDIR/summary.txt"
  {
    cat "$LOGDIR/summary.txt"
    for f in "$WORK"/*.log; do
      [ -f "$f" ] || continue
      echo
      echo "======== $(basename "$f" .log)"
      if [ "$(stat -c %s "$f")" -gt 400000 ]; then
        head -c 200000 "$f"
        echo
        echo "[... $(stat -c %s "$f") bytes, middle cut ...]"
        tail -c 200000 "$f"
      else
        cat "$f"
      fi
    done
  } >"$LOGDIR/gpu-check.log"
  [ -f "$WORK/bench.log" ] && cp "$WORK/bench.log" "$LOGDIR/bench.txt"
  rm -rf "$WORK"
  echo
  cat "$LOGDIR/summary.txt"
  echo "logs: $LOGDIR (summary.txt, gpu-check.log$([ -f "$LOGDIR/bench.txt" ] && echo ', bench.txt'))"
  [ $FAILED -ne 0 ] && exit 1
  [ $SKIPPED -ne 0 ] && exit 3
  exit 0
}

# ---- machine ----
{
  nvidia-smi || echo "nvidia-smi: not found or failed"
  nvcc --version || echo "nvcc: not found"
  cmake --version | head -n 1 || echo "cmake: not found"
  command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo "compute-sanitizer: not found"
  [ -n "$PREBUILT" ] && { cat "$PREBUILT/MANIFEST.txt" 2>/dev/null || echo "no MANIFEST.txt in $PREBUILT"; }
  (. /etc/os-release 2>/dev/null && echo "os: $PRETTY_NAME"; ldd --version 2>/dev/null | head -n 1)
} >"$WORK/machine.log" 2>&1
grep -m3 -E "Driver Version|NVIDIA H|release [0-9]" "$WORK/machine.log" | cut -c1-160
if nvidia-smi -L >/dev/null 2>&1; then
  record machine PASS "($(nvidia-smi -L 2>/dev/null | head -n 1 | cut -c1-80))"
else
  record machine SKIP "(nvidia-smi finds no GPU: the GPU steps will skip)"
fi

# ---- binaries: prebuilt, or built here ----
SELFTEST="" DEMO="" BENCH="" LAYOUT="" KTEST="" GTEST=""
if [ -n "$PREBUILT" ]; then
  export LD_LIBRARY_PATH="$PREBUILT${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  pick() { [ -x "$PREBUILT/$1" ] && echo "$PREBUILT/$1"; }
  KTEST=$(pick cuda_kernels_test)
  GTEST=$(pick generic_kernels_test)
  SELFTEST=$(pick dsv4-cache-gpu-selftest)
  LAYOUT=$(pick dsv4-host-device-layout)
  DEMO=$(pick dsv4-cache-cuda-demo)
  BENCH=$(pick dsv4-cache-gpu-bench)
  say "prebuilt: $PREBUILT ($(find "$PREBUILT" -maxdepth 1 -type f -printf '%f '))"
  # Every library the binaries need must resolve here (glibc, libstdc++, libgcc_s, DIR).
  missing=""
  for b in "$KTEST" "$GTEST" "$SELFTEST" "$LAYOUT" "$DEMO" "$BENCH"; do
    [ -n "$b" ] || continue
    m=$(ldd "$b" 2>&1 | grep -E "not found|not a dynamic" | sed 's/^[[:space:]]*//' | tr '\n' ' ')
    [ -n "$m" ] && missing+="$(basename "$b"): $m; "
  done
  n_bins=$(for b in "$KTEST" "$GTEST" "$SELFTEST" "$LAYOUT" "$DEMO" "$BENCH"; do [ -n "$b" ] && echo "$b"; done | wc -l)
  if [ -n "$missing" ]; then
    record libraries FAIL "(missing: $missing)"
  elif [ "$n_bins" -lt 6 ]; then
    record libraries FAIL "(only $n_bins of the 6 binaries are in $PREBUILT)"
  else
    record libraries PASS "(6 binaries, every shared library found)"
  fi
else
  if ! command -v nvcc >/dev/null; then
    record build FAIL "(no nvcc on PATH or in /usr/local/cuda/bin, and no --prebuilt DIR)"
    finish
  fi
  have_deps() {
    [ -d /usr/include/gtest ] || [ -d /usr/local/include/gtest ] || return 1
    [ -d /usr/include/fmt ] || [ -d /usr/local/include/fmt ] || return 1
    [ -f /usr/include/CLI/CLI.hpp ] || [ -f /usr/local/include/CLI/CLI.hpp ] || return 1
    [ -d /usr/include/nlohmann ] || [ -d /usr/local/include/nlohmann ] || return 1
    command -v cmake >/dev/null || return 1
    printf '3.24\n%s\n' "$(cmake --version | awk 'NR == 1 {print $3}')" | sort -V -C || return 1
  }
  mkdir -p "$BUILD"
  if [ "${DSV4_GPU_CHECK_MODE:-}" != nvcc ] && have_deps; then
    launcher=""
    command -v ccache >/dev/null && launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"
    step configure 90 "cmake -S '$ROOT' -B '$BUILD' -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=$ARCH \
      -DDSV4_CACHE_BUILD_TESTS=ON -DDSV4_CACHE_BUILD_EXAMPLES=ON -DDSV4_CACHE_ENABLE_CUDA=ON $launcher" &&
      step build 200 "cmake --build '$BUILD' -j $JOBS --target cuda_kernels_test generic_kernels_test \
        dsv4-cache-gpu-selftest dsv4-host-device-layout dsv4-cache-cuda-demo dsv4-cache-gpu-bench"
    KTEST="$BUILD/tests/cuda_kernels_test" GTEST="$BUILD/tests/generic_kernels_test"
    SELFTEST="$BUILD/tests/dsv4-cache-gpu-selftest" LAYOUT="$BUILD/tests/dsv4-host-device-layout"
    DEMO="$BUILD/examples/dsv4-cache-cuda-demo" BENCH="$BUILD/examples/dsv4-cache-gpu-bench"
  else
    say "build: nvcc only (GoogleTest / fmt / CLI11 / nlohmann_json / CMake >= 3.24 missing, or DSV4_GPU_CHECK_MODE=nvcc)"
    mkdir -p "$BUILD/nvcc"
    flags="-std=c++20 -O3 -arch=sm_$ARCH --expt-relaxed-constexpr -I'$ROOT/include' -I'$ROOT/examples/cuda'"
    step build-nvcc 240 "nvcc $flags '$ROOT/tests/cuda/kernel_selftest.cu' -o '$BUILD/nvcc/dsv4-cache-gpu-selftest' & \
      nvcc $flags '$ROOT/examples/cuda/gpu_bench.cu' -o '$BUILD/nvcc/dsv4-cache-gpu-bench' & \
      nvcc -std=c++20 -O3 -arch=sm_$ARCH -I'$ROOT/include' '$ROOT/tests/cuda/host_device_layout.cu' \
        -o '$BUILD/nvcc/dsv4-host-device-layout' & wait -n && wait -n && wait -n"
    SELFTEST="$BUILD/nvcc/dsv4-cache-gpu-selftest" BENCH="$BUILD/nvcc/dsv4-cache-gpu-bench"
    LAYOUT="$BUILD/nvcc/dsv4-host-device-layout"
  fi
  for v in KTEST GTEST SELFTEST LAYOUT DEMO BENCH; do [ -n "${!v}" ] && [ ! -x "${!v}" ] && printf -v "$v" ''; done
fi

# ---- GPU tests ----
if [ -n "$KTEST" ]; then step cuda-kernels-test 150 "'$KTEST'"; else skip cuda-kernels-test "not built: needs GoogleTest"; fi
if [ -n "$GTEST" ]; then step generic-kernels-test 90 "'$GTEST'"; else skip generic-kernels-test "not built: needs GoogleTest"; fi
if [ -n "$SELFTEST" ]; then step selftest 150 "'$SELFTEST'"; else skip selftest "not built"; fi
if [ -n "$LAYOUT" ]; then step host-device-layout 30 "'$LAYOUT'"; else skip host-device-layout "not built"; fi

# ---- the sample on every preset ----
for preset in v4-flash v4-pro v4.1-flash v3.2; do
  if [ -n "$DEMO" ]; then
    step "demo-$preset" 90 "'$DEMO' --preset $preset --context 65536 --requests 4 --max-tokens 16384"
  else
    skip "demo-$preset" "the sample was not built (it needs CLI11, fmt and nlohmann_json: use --prebuilt)"
  fi
done
if [ -n "$DEMO" ]; then
  step demo-v4-flash-vllm 90 "'$DEMO' --preset v4-flash --context 65536 --requests 4 --max-tokens 16384 --writer vllm"
else
  skip demo-v4-flash-vllm "the sample was not built"
fi

# ---- benchmark ----
if [ -n "$BENCH" ]; then step bench 120 "'$BENCH'"; else skip bench "not built"; fi

# ---- compute-sanitizer on small runs ----
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer \
  /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n 1 || true)"
small="--context 1024 --requests 1 --max-tokens 64"
if [ -z "$SAN" ]; then
  for t in memcheck memcheck-generic racecheck initcheck; do skip $t "compute-sanitizer not found"; done
elif [ -z "$DEMO" ]; then
  if [ -n "$SELFTEST" ]; then
    step memcheck 150 "'$SAN' --tool memcheck --leak-check full --error-exitcode 9 '$SELFTEST'"
  else
    skip memcheck "nothing to run"
  fi
  skip memcheck-generic "generic_kernels_test was not built"
  skip racecheck "the sample was not built"
  skip initcheck "the sample was not built"
else
  mc="'$SAN' --tool memcheck --leak-check full --error-exitcode 9"
  step memcheck 120 "$mc '$DEMO' --preset v4-flash $small && $mc '$DEMO' --preset v4.1-flash $small && \
    $mc '$DEMO' --preset v3.2 $small"
  if [ -n "$GTEST" ]; then step memcheck-generic 90 "$mc '$GTEST'"; else skip memcheck-generic "not built"; fi
  for t in racecheck initcheck; do
    tc="'$SAN' --tool $t --error-exitcode 9"
    step $t 90 "$tc '$DEMO' --preset v4-flash $small && $tc '$DEMO' --preset v4.1-flash $small"
  done
fi

finish
