#!/usr/bin/env python3
"""Compares dsv4-cache-plan's tokenspeed engine report with the independent oracle
tests/oracle/tokenspeed_oracle.py (written from tokenspeed's source, apart from the C++), case by
case: parent bytes, the packing, budgeted and allocated parents, the token capacity, the arena's
bytes and tokenspeed's `Cache profile` line or refusal, for DeepSeek-V4-Flash and V4-Pro, FP8 and
MXFP4 index keys, overlap scheduling on and off, without and with the MTP draft (4 decode
tokens, 80 sequences by default), budgets that fit and ones tokenspeed refuses, other chunk
sizes, contexts and max_num_seqs; each case under both presets: `--engine tokenspeed` (tokenspeed
0.1.1, the oracle's `--release 0.1.1`) and `--engine tokenspeed@f4d8ec6e` (the pin, the oracle's
default). Standard library only.

  python3 tests/oracle/compare_tokenspeed_plan.py PATH/TO/dsv4-cache-plan

Exit 0 if every case agrees, 1 (printing each disagreement) otherwise.
"""
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORACLE = HERE / "tokenspeed_oracle.py"
GIB = 1 << 30

# (preset, indexer, overlap, draft, budget bytes, context, chunk, max_num_seqs or None)
CASES = []
for preset in ("v4-flash", "v4-pro"):
    for indexer in ("fp8", "mxfp4"):
        for overlap in (True, False):
            for draft in (False, True):
                for budget in (64 * GIB, 8 * GIB):
                    CASES.append((preset, indexer, overlap, draft, budget, 1048576, 8192, None))
    CASES.append((preset, "fp8", True, False, 4 * GIB, 1048576, 8192, None))  # refused: one token does not fit
    CASES.append((preset, "fp8", False, False, 2 * 3499776, 1048576, 8192, None))  # one usable parent at most
    CASES.append((preset, "fp8", True, False, 16 * GIB, 131072, 4096, 64))
    CASES.append((preset, "fp8", False, False, 24 * GIB, 65536, 2048, 256))
CASES.append(("v4-flash", "fp8", True, False, 6769453824, 1048576, 8192, None))  # 2,816 parents: starts
CASES.append(("v4-flash", "fp8", True, False, 6769453823, 1048576, 8192, None))  # one byte less: refused

# (the planner's --engine, the oracle's --release)
RELEASES = [("tokenspeed", "0.1.1"), ("tokenspeed@f4d8ec6e", "f4d8ec6e")]


def run(cmd, allow_fail=False):
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0 and not allow_fail:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    plan_bin = sys.argv[1]
    bad = 0
    runs = [(engine, release, case) for engine, release in RELEASES for case in CASES]
    for engine, release, (preset, indexer, overlap, draft, budget, L, C, seqs) in runs:
        label = (f"{engine} {preset} {indexer} overlap={'on' if overlap else 'off'} draft={'yes' if draft else 'no'} "
                 f"budget={budget} L={L} C={C} seqs={seqs or 'default'}")
        cmd = [plan_bin, "--preset", preset, "--engine", engine, "--indexer", indexer, "--memory-gib",
               f"{budget / GIB:.17g}", "--context", str(L), "--prefill-chunk", str(C), "--json"]
        cmd += ["--overlap"] if overlap else ["--no-overlap"]
        cmd += ["--tokens-per-step", "4", "--mtp"] if draft else ["--no-mtp"]
        cmd += ["--max-running-requests", str(seqs)] if seqs else []
        plan = run(cmd)
        ocmd = [sys.executable, str(ORACLE), "--json", preset, str(budget), str(L), "--chunk", str(C),
                "--indexer", "fp4" if indexer == "mxfp4" else "fp8", "--release", release]
        ocmd += [] if overlap else ["--no-overlap"]
        ocmd += ["--draft"] if draft else []
        ocmd += ["--max-num-seqs", str(seqs)] if seqs else []
        oracle = run(ocmd, allow_fail=True)
        e = plan["engine_report"]
        if e.get("budget_bytes") != budget:
            print(f"{label}: the planner's budget is {e.get('budget_bytes')} B, not {budget} B")
            bad += 1
            continue
        if "error" in oracle:
            want = {"starts": False, "refusal": oracle["error"]}
        else:
            want = {"starts": True, "parent_bytes": oracle["parent_bytes"],
                    "prefix_granularity": oracle["prefix_granularity"], "packing": oracle["packing_by_group_id"],
                    "budgeted_parents": oracle["budgeted_parents"], "parents": oracle["parents"],
                    "token_capacity": oracle["token_capacity"], "arena_bytes": oracle["arena_bytes"],
                    "log_lines": [oracle["log"]]}
        for k, v in want.items():
            if e.get(k) != v:
                print(f"{label}: {k}: planner {e.get(k)!r}, oracle {v!r}")
                bad += 1
    print(f"{len(runs)} cases ({len(CASES)} under each of {len(RELEASES)} presets), {bad} disagreement(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
