#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing dsv4-cache needs, but only those
# that are missing: where everything is present it runs no apt-get at all (fast, and fine for a
# developer without root). Then makes the Python virtual environment .venv (PEP 668: Debian's
# Python takes no pip packages of its own) with the packages of python/requirements.txt, from
# PyPI, unless they are there already. Used by .ci/run and scripts/test.sh; safe to run any
# number of times.
#
#   bash scripts/install-deps.sh          DSV4_VENV=DIR: the environment elsewhere
#
# The CUDA toolkit (nvcc) is not a Debian package here: when present (PATH or /usr/local/cuda)
# the CUDA kernels' tests and sample are built too; without it they are skipped.
set -euo pipefail

packages=(
  cmake ninja-build g++ clang clang-tidy clang-format  # compilers and tools
  libclang-rt-14-dev                                    # ASan/UBSan/libFuzzer runtimes of clang 14
  libfmt-dev nlohmann-json3-dev libcli11-dev libssl-dev  # library dependencies (formatters, JSON, CLI, SHA-256)
  libgtest-dev libgmock-dev libbenchmark-dev libxxhash-dev  # tests and benchmarks
  python3 python3-venv python3-dev                      # the oracles of tests/oracle/, the Python package
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
else
  echo "install-deps: installing ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
fi

# The Python environment: Debian's python3 (not one that PATH may put first), its venv module.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${DSV4_VENV:-$root/.venv}"
if [[ ! -x "$venv/bin/python" ]]; then
  echo "install-deps: making the Python environment $venv"
  /usr/bin/python3 -m venv "$venv"
fi
if "$venv/bin/python" - "$root/python/requirements.txt" <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
want = [l.split("#")[0].strip() for l in open(sys.argv[1])]
names = [w.split(">=")[0] for w in want if w]
try:
    [version(n) for n in names]
except PackageNotFoundError:
    sys.exit(1)
PY
then
  echo "install-deps: Python packages present in $venv"
else
  echo "install-deps: installing python/requirements.txt into $venv (PyPI)"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -r "$root/python/requirements.txt"
fi
