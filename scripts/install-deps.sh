#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing dsv4-cache needs, but only those
# that are missing: where everything is present it runs no apt-get at all (fast, and fine for a
# developer without root). Used by .ci/run and scripts/test.sh; safe to run any number of times.
#
#   bash scripts/install-deps.sh
#
# The CUDA toolkit (nvcc) is not a Debian package here: when present (PATH or /usr/local/cuda)
# the CUDA kernels' tests and sample are built too; without it they are skipped.
set -euo pipefail

packages=(
  cmake ninja-build g++ clang clang-tidy clang-format  # compilers and tools
  libclang-rt-14-dev                                    # ASan/UBSan/libFuzzer runtimes of clang 14
  libfmt-dev nlohmann-json3-dev libcli11-dev libssl-dev  # library dependencies (formatters, JSON, CLI, SHA-256)
  libgtest-dev libgmock-dev libbenchmark-dev libxxhash-dev  # tests and benchmarks
  python3                                               # the independent oracles of tests/oracle/
  librsvg2-bin                                          # rsvg-convert: the planner's --svg render test
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
