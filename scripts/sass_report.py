#!/usr/bin/env python3
"""What the CUDA kernels compile to, read from their SASS without a GPU (issue 40).

    python3 scripts/sass_report.py [BINARY ...] [--tools DIR] [--fetch DIR] [--json]

For each kernel of the sm_90 code in BINARY (default: build/examples/dsv4-cache-gpu-bench, the
benchmark, which instantiates every kernel), from `cuobjdump -sass` and `cuobjdump -res-usage`:
registers per thread, SASS instructions (NOPs apart), loops (backward branches), subroutine
calls, global loads and stores by width (16-B vector accesses are what a kernel at memory speed
issues), and the instruction mix: integer, FP32, FP64, conversions (F2FP: the hardware
E4M3 / BF16 pair conversions; I2F, F2I, F2F) and warp shuffles. A kernel with one row per warp
and no loop runs at most its instruction count per row (warp instructions, each lane at once);
Nsight Compute measured 693 warp instructions per row for the V4 fp8_ds_mla insert on an H200.

cuobjdump needs nvdisasm beside it. Both come with the CUDA toolkit; where the toolkit has
neither (some containers ship nvcc and ptxas only), `--fetch DIR` downloads the NVIDIA PyPI
wheels nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (pip, network) and unpacks them in DIR,
and `--tools DIR` uses them from there later. Exit status: 0, 2 for bad arguments or a missing
binary, 3 when the tools are missing or fail.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections import Counter
from dataclasses import dataclass, field

# One SASS instruction line of cuobjdump: /*0140*/  @!P0 BRA 0x220 ;
_INSTR = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_RES_FUNCTION = re.compile(r"^\s*Function\s+(\S+?):\s*$")
_REGS = re.compile(r"\bREG:(\d+)")
_BRANCH_TARGET = re.compile(r"^\s*(0x[0-9a-f]+)\b")

_INTEGER = {"IMAD", "IADD3", "IADD", "LOP3", "LOP", "SHF", "SHL", "SHR", "ISETP", "SEL", "PRMT", "LEA", "IABS",
            "VIADD", "VIMNMX", "VIMNMX3", "IMNMX", "FLO", "POPC", "BREV", "BMSK", "IMUL", "IDP", "IMAD.WIDE"}
_FP32 = {"FMUL", "FFMA", "FADD", "FSETP", "FMNMX", "FSEL", "MUFU", "FCHK", "FSWZADD", "FRND", "FMUL2", "FFMA2",
         "FADD2", "HFMA2", "HMUL2", "HADD2"}
_FP64 = {"DMUL", "DFMA", "DADD", "DSETP", "DMNMX"}
_CONVERSIONS = {"F2FP", "F2F", "I2F", "I2FP", "F2I", "F2IP", "I2I", "I2IP"}


@dataclass
class Kernel:
    """One kernel's SASS, summed."""

    mangled: str
    name: str = ""
    registers: int | None = None
    instructions: int = 0
    loops: int = 0
    calls: int = 0
    loads: Counter = field(default_factory=Counter)  # width in bytes -> global loads
    stores: Counter = field(default_factory=Counter)  # width in bytes -> global stores
    mix: Counter = field(default_factory=Counter)  # integer, fp32, fp64, conversion, f2fp, shuffle, other
    opcodes: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        return {
            "kernel": self.name,
            "mangled": self.mangled,
            "registers": self.registers,
            "instructions": self.instructions,
            "loops": self.loops,
            "calls": self.calls,
            "global_loads": {str(k): v for k, v in sorted(self.loads.items())},
            "global_stores": {str(k): v for k, v in sorted(self.stores.items())},
            "mix": dict(sorted(self.mix.items())),
        }


def access_width(opcode: str) -> int:
    """Bytes one lane moves with a global load or store: LDG.E.128 -> 16, LDG.E.U16 -> 2, LDG.E -> 4."""
    parts = opcode.split(".")
    for p in parts[1:]:
        if p in ("128", "64"):
            return int(p) // 8
        if p in ("U8", "S8"):
            return 1
        if p in ("U16", "S16"):
            return 2
    return 4


def classify(opcode: str) -> str:
    """The mix class of one opcode (its root before the first dot)."""
    root = opcode.split(".")[0]
    if root == "F2FP":
        return "f2fp"
    if root in _CONVERSIONS:
        return "conversion"
    if root in _INTEGER or opcode.startswith("IMAD"):
        return "integer"
    if root in _FP32:
        return "fp32"
    if root in _FP64:
        return "fp64"
    if root in ("SHFL", "VOTE", "VOTEU", "REDUX", "MATCH"):
        return "warp"
    if root in ("LDG", "STG", "LD", "ST", "LDS", "STS", "LDL", "STL", "LDC", "ULDC", "ATOMG", "RED", "LDGSTS"):
        return "memory"
    if root in ("BRA", "EXIT", "CALL", "RET", "BSSY", "BSYNC", "WARPSYNC", "BAR", "JMP", "BRX"):
        return "control"
    return "other"


def parse_sass(text: str) -> list[Kernel]:
    """The kernels of `cuobjdump -sass` output, in order."""
    kernels: list[Kernel] = []
    k: Kernel | None = None
    for line in text.splitlines():
        m = _FUNCTION.match(line)
        if m:
            k = Kernel(mangled=m.group(1))
            kernels.append(k)
            continue
        m = _INSTR.match(line)
        if not m or k is None:
            continue
        address = int(m.group(1), 16)
        opcode = m.group(2)
        operands = m.group(3)
        root = opcode.split(".")[0]
        if root == "NOP":
            continue
        k.instructions += 1
        k.opcodes[root] += 1
        k.mix[classify(opcode)] += 1
        if root == "BRA":
            t = _BRANCH_TARGET.match(operands)
            if t and int(t.group(1), 16) <= address:
                k.loops += 1
        elif root == "CALL":
            k.calls += 1
        elif root == "LDG":
            k.loads[access_width(opcode)] += 1
        elif root == "STG":
            k.stores[access_width(opcode)] += 1
    return kernels


def parse_registers(text: str) -> dict[str, int]:
    """Registers per thread of each kernel in `cuobjdump -res-usage` output."""
    regs: dict[str, int] = {}
    name = None
    for line in text.splitlines():
        m = _RES_FUNCTION.match(line)
        if m:
            name = m.group(1)
            continue
        m = _REGS.search(line)
        if m and name is not None:
            regs[name] = int(m.group(1))
            name = None
    return regs


def short_name(demangled: str) -> str:
    """`void dsv4::cache::cuda::detail::generic_insert_kernel<dsv4::cache::formats::v41_fp8>(...)`
    -> `generic_insert_kernel<v41_fp8>`."""
    s = demangled
    if s.startswith("void "):
        s = s[5:]
    depth = 0
    for i, c in enumerate(s):  # cut the parameter list: the first '(' outside template brackets
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0:
            s = s[:i]
            break
    for prefix in ("dsv4::cache::cuda::detail::", "dsv4::cache::cuda::", "dsv4::cache::formats::", "dsv4::cache::"):
        s = s.replace(prefix, "")
    return s


def demangle(names: list[str]) -> list[str]:
    """c++filt's names, or the mangled ones where it is missing."""
    tool = shutil.which("c++filt")
    if tool is None or not names:
        return names
    out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, check=False)
    lines = out.stdout.splitlines()
    return lines if out.returncode == 0 and len(lines) == len(names) else names


def find_tools(tools_dir: str | None) -> str:
    """The cuobjdump to run (nvdisasm beside it or on PATH); raises FileNotFoundError naming where it looked."""
    places = []
    if tools_dir:
        places += [tools_dir, os.path.join(tools_dir, "bin")]
        places += glob.glob(os.path.join(tools_dir, "nvidia", "*", "bin"))
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            places.append(os.path.join(os.environ[env], "bin"))
    places.append("/usr/local/cuda/bin")
    for p in places:
        c = os.path.join(p, "cuobjdump")
        if os.access(c, os.X_OK) and os.access(os.path.join(p, "nvdisasm"), os.X_OK):
            return c
    c = shutil.which("cuobjdump")
    if c and (shutil.which("nvdisasm") or os.access(os.path.join(os.path.dirname(c), "nvdisasm"), os.X_OK)):
        return c
    raise FileNotFoundError(
        "cuobjdump with nvdisasm beside it not found (looked in " + ", ".join(places) + " and PATH); "
        "give --tools DIR, or --fetch DIR to download the NVIDIA PyPI wheels nvidia-cuda-cuobjdump and "
        "nvidia-cuda-nvdisasm into DIR")


def fetch_tools(directory: str) -> None:
    """Downloads and unpacks nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (the newest) into `directory`."""
    os.makedirs(directory, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", directory, "nvidia-cuda-cuobjdump",
           "nvidia-cuda-nvdisasm"]
    subprocess.run(cmd, check=True)
    for wheel in glob.glob(os.path.join(directory, "nvidia_cuda_*.whl")):
        with zipfile.ZipFile(wheel) as z:
            z.extractall(directory)
    for tool in glob.glob(os.path.join(directory, "nvidia", "*", "bin", "*")):
        os.chmod(tool, 0o755)


def report(binaries: list[str], cuobjdump: str) -> list[Kernel]:
    """Every kernel of `binaries`, named, with its registers."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(cuobjdump) + os.pathsep + env.get("PATH", "")
    kernels: list[Kernel] = []
    for b in binaries:
        sass = subprocess.run([cuobjdump, "-sass", b], capture_output=True, text=True, env=env, check=False)
        if sass.returncode != 0:
            raise RuntimeError(f"cuobjdump -sass {b} failed: {sass.stderr.strip()}")
        res = subprocess.run([cuobjdump, "-res-usage", b], capture_output=True, text=True, env=env, check=False)
        regs = parse_registers(res.stdout) if res.returncode == 0 else {}
        found = parse_sass(sass.stdout)
        for k, name in zip(found, demangle([k.mangled for k in found])):
            k.name = short_name(name)
            k.registers = regs.get(k.mangled)
        kernels += found
    return kernels


def table(kernels: list[Kernel]) -> str:
    """The report as text: one line per kernel."""
    def widths(c: Counter) -> str:
        return " ".join(f"{w}B:{n}" for w, n in sorted(c.items(), reverse=True)) or "-"

    head = f"{'kernel':<58} {'regs':>4} {'instr':>6} {'loops':>5} {'calls':>5} {'int':>5} {'fp32':>5} " \
           f"{'fp64':>4} {'cvt':>4} {'f2fp':>4}  global loads / stores (bytes per lane: count)"
    lines = [head]
    for k in sorted(kernels, key=lambda k: k.name):
        lines.append(
            f"{k.name[:58]:<58} {k.registers if k.registers is not None else '?':>4} {k.instructions:>6} "
            f"{k.loops:>5} {k.calls:>5} {k.mix['integer']:>5} {k.mix['fp32']:>5} {k.mix['fp64']:>4} "
            f"{k.mix['conversion']:>4} {k.mix['f2fp']:>4}  {widths(k.loads)} / {widths(k.stores)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="*", default=["build/examples/dsv4-cache-gpu-bench"],
                    help="CUDA executables or objects (default: build/examples/dsv4-cache-gpu-bench)")
    ap.add_argument("--tools", help="a directory holding cuobjdump and nvdisasm (or a --fetch directory)")
    ap.add_argument("--fetch", metavar="DIR", help="download the PyPI cuobjdump and nvdisasm into DIR first")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    a = ap.parse_args(argv)
    for b in a.binaries:
        if not os.path.isfile(b):
            print(f"sass_report: {b}: no such file (build the CUDA targets first)", file=sys.stderr)
            return 2
    try:
        if a.fetch:
            fetch_tools(a.fetch)
        kernels = report(a.binaries, find_tools(a.tools or a.fetch))
    except (FileNotFoundError, RuntimeError, subprocess.CalledProcessError) as e:
        print(f"sass_report: {e}", file=sys.stderr)
        return 3
    if a.json:
        print(json.dumps([k.as_dict() for k in kernels], indent=1))
    else:
        print(table(kernels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
