#!/usr/bin/env bash
# dsv4-cache: build every GPU binary on a development machine (CUDA toolkit, GoogleTest, fmt,
# CLI11, nlohmann_json; no GPU needed) into one directory that a bare GPU machine can run with
# `scripts/gpu-check.sh --prebuilt DIR` (it needs only the NVIDIA driver there).
#
#   scripts/gpu-build-prebuilt.sh [DIR]      (default: build-gpu-prebuilt in the repository root)
#
# What DIR holds, stripped: cuda_kernels_test and generic_kernels_test (GoogleTest, linked
# statically), dsv4-cache-gpu-selftest, dsv4-host-device-layout, dsv4-cache-cuda-demo,
# dsv4-cache-gpu-bench, and MANIFEST.txt (commit, toolkit, architecture, the newest glibc and
# libstdc++ symbol versions the binaries need, sizes). Every binary links the static CUDA
# runtime (-DDSV4_CACHE_CUDART_STATIC=ON; the driver's libcuda is loaded at run time) and fmt
# header-only (-DDSV4_CACHE_FMT_HEADER_ONLY=ON), so they need nothing beyond glibc, libstdc++
# and libgcc_s, which every machine with a C++ runtime (PyTorch's included) has; libstdc++ stays
# shared on purpose (statically linked it would need glibc 2.36's arc4random). Any other shared
# library a binary needs is copied into DIR (gpu-check.sh puts DIR on LD_LIBRARY_PATH). The
# build directory is DIR.build (CMake, Release, CMAKE_CUDA_ARCHITECTURES=${DSV4_CUDA_ARCH:-90}).
#
# Checks before it exits 0: every binary starts and says it found no CUDA device (or, on a GPU
# machine, runs), `ldd` finds every library in DIR or in glibc, and DIR is under 48 MiB (the
# device tool carries at most 64 MiB with the working tree). Exit 1 on any failure.
# Environment: DSV4_CUDA_ARCH (default 90 = H100/H200), JOBS (default nproc).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${1:-$ROOT/build-gpu-prebuilt}"
case "$DIR" in /*) ;; *) DIR="$PWD/$DIR" ;; esac
BUILD="$DIR.build"
ARCH="${DSV4_CUDA_ARCH:-90}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
command -v nvcc >/dev/null || { echo "gpu-build-prebuilt: nvcc not found (PATH, /usr/local/cuda/bin)" >&2; exit 1; }

BINARIES=(tests/cuda_kernels_test tests/generic_kernels_test tests/dsv4-cache-gpu-selftest
  tests/dsv4-host-device-layout examples/dsv4-cache-cuda-demo examples/dsv4-cache-gpu-bench)
TARGETS=()
for b in "${BINARIES[@]}"; do TARGETS+=("$(basename "$b")"); done

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
mkdir -p "$BUILD"
WORKLOG="$BUILD/configure.log"
echo "gpu-build-prebuilt: configuring $BUILD (sm_$ARCH, static CUDA runtime, header-only fmt)"
cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DDSV4_CACHE_ENABLE_CUDA=ON -DDSV4_CACHE_CUDART_STATIC=ON \
  -DDSV4_CACHE_FMT_HEADER_ONLY=ON -DDSV4_CACHE_BUILD_TESTS=ON -DDSV4_CACHE_BUILD_EXAMPLES=ON \
  -DDSV4_CACHE_BUILD_PYTHON=OFF >"$WORKLOG" 2>&1 ||
  { tail -n 30 "$WORKLOG" >&2; exit 1; }
grep -q "^CMAKE_CUDA_COMPILER:[A-Z]*=/" "$BUILD/CMakeCache.txt" ||
  { echo "gpu-build-prebuilt: CMake found no CUDA compiler" >&2; exit 1; }
echo "gpu-build-prebuilt: building ${TARGETS[*]} ($JOBS jobs)"
cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}"

rm -rf "$DIR"
mkdir -p "$DIR"
for b in "${BINARIES[@]}"; do
  cp "$BUILD/$b" "$DIR/"
  strip --strip-unneeded "$DIR/$(basename "$b")"
done

# Shared libraries: glibc's, libstdc++ and libgcc_s come from the GPU machine, the driver's
# libcuda is loaded at run time by the static CUDA runtime; anything else is copied into DIR.
system_lib() {
  case "$1" in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | \
      libstdc++.so.6 | libgcc_s.so.1) return 0 ;;
  esac
  return 1
}
failed=0
for b in "${BINARIES[@]}"; do
  while read -r name _ path _; do
    [ -n "$name" ] || continue
    system_lib "$name" && continue
    if [ -z "$path" ] || [ "$path" = "not" ] || [ ! -f "$path" ]; then
      echo "gpu-build-prebuilt: $(basename "$b") needs $name, which is not found here" >&2
      failed=1
      continue
    fi
    [ -f "$DIR/$name" ] || cp -L "$path" "$DIR/$name"
  done < <(ldd "$BUILD/$b" | sed 's/^[[:space:]]*//' | grep -v '^/')
done
[ "$failed" -eq 0 ] || exit 1

# Verify: resolved from DIR or glibc only; every binary starts.
for b in "${BINARIES[@]}"; do
  exe="$DIR/$(basename "$b")"
  bad=$(LD_LIBRARY_PATH="$DIR" ldd "$exe" | sed 's/^[[:space:]]*//' | grep -v '^/' |
    while read -r name _ path _; do
      system_lib "$name" && continue
      case "$path" in "$DIR"/*) ;; *) echo "$name => ${path:-?}" ;; esac
    done)
  if [ -n "$bad" ]; then
    echo "gpu-build-prebuilt: $(basename "$exe") resolves outside DIR and glibc: $bad" >&2
    failed=1
  fi
  case "$(basename "$exe")" in
    dsv4-cache-cuda-demo) args=(--preset v4-flash --context 1024 --requests 1 --max-tokens 16) ;;
    cuda_kernels_test | generic_kernels_test) args=(--gtest_brief=1) ;;
    *) args=() ;;
  esac
  set +e
  out=$(LD_LIBRARY_PATH="$DIR" timeout 120 "$exe" "${args[@]}" 2>&1)
  rc=$?
  set -e
  if [ $rc -eq 0 ] || [ $rc -eq 3 ]; then
    echo "gpu-build-prebuilt: $(basename "$exe") starts (exit $rc): $(echo "$out" | grep -i -m1 "no CUDA device\|passed\|ok:\|bit-exact" || echo "$out" | tail -n 1)"
  else
    echo "gpu-build-prebuilt: $(basename "$exe") failed to start here (exit $rc):" >&2
    echo "$out" | tail -n 10 >&2
    failed=1
  fi
done

# The newest glibc and libstdc++ symbol versions any binary needs (the GPU machine's must be as new).
symbols=$(for f in "$DIR"/*; do objdump -T "$f" 2>/dev/null; done)
glibc_max=$(echo "$symbols" | grep -o 'GLIBC_[0-9.]*[0-9]' | sort -uV | tail -n 1)
glibcxx_max=$(echo "$symbols" | grep -o 'GLIBCXX_[0-9.]*[0-9]' | sort -uV | tail -n 1)
bytes=$(du -sb "$DIR" | cut -f1)
{
  echo "dsv4-cache prebuilt GPU binaries"
  echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -sm), $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "toolkit: $(nvcc --version | tail -n 1)"
  echo "architecture: sm_$ARCH; CUDA runtime static; fmt header-only"
  echo "needs: NVIDIA driver for CUDA $(nvcc --version | grep -o 'release [0-9.]*' | cut -d' ' -f2) or newer; glibc with ${glibc_max:-?}; libstdc++ with ${glibcxx_max:-?}"
  echo "bytes: $bytes"
  echo "files:"
  find "$DIR" -maxdepth 1 -type f ! -name MANIFEST.txt -printf '  %s  %f\n' | sort -k2
} >"$DIR/MANIFEST.txt"
cat "$DIR/MANIFEST.txt"
if [ "$bytes" -gt $((48 * 1024 * 1024)) ]; then
  echo "gpu-build-prebuilt: $DIR is $bytes bytes, over 48 MiB" >&2
  failed=1
fi
[ "$failed" -eq 0 ] || exit 1
echo "gpu-build-prebuilt: done: $DIR (carry it; run: bash scripts/gpu-check.sh --prebuilt ${DIR#"$ROOT"/} --out \$OUT)"
