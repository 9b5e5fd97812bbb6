#!/usr/bin/env bash
# dsv4-cache GPU check: one command for a GPU machine (made for a bare H200 with CUDA 12+/13).
#
#   scripts/gpu-check.sh [BUILD_DIR]        (default: build-gpu-check in the repository root)
#
# Steps, each with its own time limit, all under one deadline (290 s) so that the whole run
# stays under 5 minutes:
#   1. record the machine: nvidia-smi, nvcc, cmake, compute-sanitizer;
#   2. build. With GoogleTest, fmt, CLI11 and nlohmann_json present (tried: apt-get, if root
#      and a package index is reachable within 60 s), configure the project with CMake and
#      build only the CUDA targets: cuda_kernels_test, dsv4-cache-gpu-selftest,
#      dsv4-cache-cuda-demo, dsv4-cache-gpu-bench. Without them, fall back to nvcc alone: the
#      self test (the same GPU cases as the GoogleTest binary) and the benchmark need nothing
#      but the CUDA toolkit; the sample (CLI11 + nlohmann_json) is then skipped and said so.
#      Nothing is vendored;
#   3. ctest -L gpu (or the self test in the fallback);
#   4. the sample on Flash (dsv4-cache-cuda-demo --preset flash, 65,536-token contexts);
#   5. the benchmark (dsv4-cache-gpu-bench);
#   6. compute-sanitizer --tool memcheck on a small sample run (or the self test in the
#      fallback), if compute-sanitizer exists.
# Logs go to BUILD_DIR/logs and, when $OUT is set, are copied to $OUT/gpu-check/. The summary
# lists each step as PASS / FAIL / SKIP; the exit status is 1 if any step failed.
# Environment: DSV4_CUDA_ARCH (default 90 = H100/H200), JOBS (default nproc),
# DSV4_GPU_CHECK_MODE=nvcc to force the dependency-free build.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build-gpu-check}"
LOGS="$BUILD/logs"
ARCH="${DSV4_CUDA_ARCH:-90}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
START=$(date +%s)
mkdir -p "$LOGS"
SUMMARY="$LOGS/summary.txt"
: >"$SUMMARY"
FAILED=0

log() { echo "[gpu-check +$(($(date +%s) - START))s] $*" | tee -a "$SUMMARY"; }
# step NAME LIMIT_S CMD...: runs CMD with a time limit, output to $LOGS/NAME.log; records the result.
step() {
  local name="$1" limit="$2"
  shift 2
  # One deadline for the whole script (DSV4_GPU_CHECK_BUDGET_S, default 290 s): each step gets
  # at most what is left, so the run ends inside 5 minutes whatever a step does.
  local left=$((${DSV4_GPU_CHECK_BUDGET_S:-290} - ($(date +%s) - START)))
  if [ "$left" -lt 10 ]; then
    log "$name: FAIL (out of time: the script's 5-minute budget is spent)"
    FAILED=1
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  log "$name: $*"
  timeout --kill-after=10 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  tail -n 40 "$LOGS/$name.log"
  if [ $rc -eq 0 ]; then
    log "$name: PASS"
  elif [ $rc -eq 3 ]; then
    log "$name: FAIL (exit 3: no CUDA device visible)"
    FAILED=1
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    log "$name: FAIL (timed out after ${limit}s)"
    FAILED=1
  else
    log "$name: FAIL (exit $rc)"
    FAILED=1
  fi
  return $rc
}
finish() {
  log "done in $(($(date +%s) - START))s; $([ $FAILED -eq 0 ] && echo 'all steps passed' || echo 'some steps FAILED')"
  if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT/gpu-check" && cp -r "$LOGS/." "$OUT/gpu-check/"
  fi
  exit $FAILED
}

# ---- 1. the machine ----
{
  nvidia-smi || echo "nvidia-smi: not found"
  command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
  nvcc --version || echo "nvcc: not found"
  cmake --version || echo "cmake: not found"
  command -v compute-sanitizer || echo "compute-sanitizer: not found"
} >"$LOGS/machine.log" 2>&1
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
cat "$LOGS/machine.log"
if ! command -v nvcc >/dev/null; then
  log "machine: FAIL (no nvcc on PATH or in /usr/local/cuda/bin)"
  FAILED=1
  finish
fi

# ---- 2. dependencies and build ----
have_deps() {
  [ -d /usr/include/gtest ] || [ -d /usr/local/include/gtest ] || return 1
  [ -d /usr/include/fmt ] || [ -d /usr/local/include/fmt ] || return 1
  [ -f /usr/include/CLI/CLI.hpp ] || [ -f /usr/local/include/CLI/CLI.hpp ] || return 1
  [ -d /usr/include/nlohmann ] || [ -d /usr/local/include/nlohmann ] || return 1
  command -v cmake >/dev/null || return 1
  # The project needs CMake >= 3.24 (Ubuntu 22.04's apt cmake is 3.22).
  printf '3.24\n%s\n' "$(cmake --version | awk 'NR == 1 {print $3}')" | sort -V -C || return 1
}
if ! have_deps && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  log "deps: trying apt-get (GoogleTest, fmt, CLI11, nlohmann_json, cmake)"
  { timeout 40 apt-get update && DEBIAN_FRONTEND=noninteractive timeout 60 apt-get install -y --no-install-recommends \
      libgtest-dev libfmt-dev libcli11-dev nlohmann-json3-dev cmake make g++; } >"$LOGS/apt.log" 2>&1 ||
    log "deps: apt-get failed (offline?): see apt.log"
fi

CUDA_FLAGS=(-std=c++20 -O3 "-arch=sm_$ARCH" --expt-relaxed-constexpr -I"$ROOT/include" -I"$ROOT/examples/cuda")
# The dependency-free build: the self test and the benchmark need nothing but the CUDA toolkit.
nvcc_build() {
  MODE=nvcc
  log "build: nvcc only (GoogleTest/fmt/CLI11/nlohmann_json/CMake >= 3.24 missing or failing, or DSV4_GPU_CHECK_MODE=nvcc): self test + benchmark; sample SKIP"
  mkdir -p "$BUILD/nvcc"
  SELFTEST="$BUILD/nvcc/dsv4-cache-gpu-selftest"
  BENCH="$BUILD/nvcc/dsv4-cache-gpu-bench"
  DEMO=""
  ( step build-selftest 150 nvcc "${CUDA_FLAGS[@]}" "$ROOT/tests/cuda/kernel_selftest.cu" -o "$SELFTEST" ) &
  ( step build-bench 150 nvcc "${CUDA_FLAGS[@]}" "$ROOT/examples/cuda/gpu_bench.cu" -o "$BENCH" ) &
  wait
  grep -q "build-.*FAIL" "$SUMMARY" && FAILED=1
}
if [ "${DSV4_GPU_CHECK_MODE:-}" != nvcc ] && have_deps; then
  MODE=cmake
  log "build: CMake, CUDA architecture $ARCH, $JOBS jobs"
  SELFTEST="$BUILD/tests/dsv4-cache-gpu-selftest"
  DEMO="$BUILD/examples/dsv4-cache-cuda-demo"
  BENCH="$BUILD/examples/dsv4-cache-gpu-bench"
  # A failed configure or build still runs the GPU cases: through the nvcc-only build.
  step configure 90 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
    -DDSV4_CACHE_BUILD_TESTS=ON -DDSV4_CACHE_BUILD_EXAMPLES=ON -DDSV4_CACHE_ENABLE_CUDA=ON &&
    step build 180 cmake --build "$BUILD" -j "$JOBS" --target cuda_kernels_test dsv4-cache-gpu-selftest \
      dsv4-cache-cuda-demo dsv4-cache-gpu-bench ||
    nvcc_build
else
  nvcc_build
fi

# ---- 3. GPU tests ----
if [ "$MODE" = cmake ]; then
  step ctest-gpu 120 ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 100
else
  step selftest 120 "$SELFTEST"
fi

# ---- 4. the sample on Flash ----
if [ -n "$DEMO" ]; then
  step demo-flash 90 "$DEMO" --preset flash --context 65536 --requests 4
else
  log "demo-flash: SKIP (the sample needs CLI11 and nlohmann_json)"
fi

# ---- 5. benchmark ----
if [ -x "$BENCH" ]; then step bench 90 "$BENCH"; else log "bench: SKIP (not built)"; fi

# ---- 6. memcheck on a small run ----
SANITIZER="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)"
if [ -n "$SANITIZER" ]; then
  if [ -n "$DEMO" ]; then
    step memcheck 120 "$SANITIZER" --tool memcheck --error-exitcode 9 --leak-check full \
      "$DEMO" --preset flash --context 1024 --requests 1 --max-tokens 128
  else
    step memcheck 120 "$SANITIZER" --tool memcheck --error-exitcode 9 "$SELFTEST"
  fi
else
  log "memcheck: SKIP (compute-sanitizer not found)"
fi

finish
