#!/usr/bin/env python3
"""Compares dsv4-cache-plan's SGLang engine report with the independent oracle
tests/oracle/sglang_pool_oracle.py (written from SGLang's source at cce0a124, apart from the C++),
case by case: bytes per full token, the HCA-state reservation, every pool size, max_running_requests,
SGLang's three startup log lines and its refusal, for DeepSeek-V4-Flash and V4-Pro at two budgets,
with and without --max-running-requests and speculative decoding, and budgets SGLang refuses.
Standard library only.

  python3 tests/oracle/compare_sglang_plan.py PATH/TO/dsv4-cache-plan

Exit 0 if every case agrees, 1 (printing each disagreement) otherwise.
"""
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORACLE = HERE / "sglang_pool_oracle.py"
CONFIGS = HERE.parent / "data"
GIB = 1 << 30

# (preset, budget bytes, max_running_requests or None, tokens per step, attention DP)
CASES = []
for preset in ("v4-flash", "v4-pro"):
    for budget in (64 * GIB, 40 * GIB):
        for mrr in (None, 64):
            for step in (1, 4):
                CASES.append((preset, budget, mrr, step, 1))
    CASES.append((preset, 2 * GIB, None, 1, 1))  # the HCA-state reservation alone is above it: refused
    CASES.append((preset, 96 * GIB, 512, 1, 2))  # attention DP 2: 256 requests per worker
    CASES.append((preset, 17 * GIB + 12345, 3, 1, 1))  # an odd budget, few requests


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    try:
        return r.returncode, json.loads(r.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{' '.join(cmd)} printed no JSON ({r.returncode}): {r.stderr.strip()}")


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    plan_bin = sys.argv[1]
    bad = 0
    for preset, budget, mrr, step, dp in CASES:
        label = f"{preset} budget={budget} mrr={mrr or 'default'} tokens_per_step={step} dp={dp}"
        cmd = [plan_bin, "--preset", preset, "--engine", "sglang@cce0a124", "--memory-gib", f"{budget / GIB:.17g}",
               "--context", "1048576", "--requests", "1", "--json"]
        cmd += ["--max-running-requests", str(mrr)] if mrr else []
        cmd += ["--tokens-per-step", str(step)] if step > 1 else []
        # attention DP: SGLang's --enable-dp-attention, its dp workers inside a TP group of dp GPUs
        cmd += ["--dp", str(dp), "--tp", str(dp), "--enable-dp-attention"] if dp > 1 else []
        rc, plan = run(cmd)
        if rc != 0:
            print(f"{label}: the planner exited {rc}")
            bad += 1
            continue
        e = plan["engine_report"]
        config = CONFIGS / f"deepseek-{preset}.config.json"
        ocmd = [sys.executable, str(ORACLE), "--config", str(config), "--available-bytes", str(budget), "--json"]
        ocmd += ["--max-running-requests", str(mrr)] if mrr else []
        ocmd += ["--speculative", "--num-draft-tokens", str(step)] if step > 1 else []
        ocmd += ["--attn-dp", str(dp)] if dp > 1 else []
        orc, o = run(ocmd)
        mine_logs = e["log_lines"]
        if "refusal" in o:
            want = {"starts": False, "refusal": o["refusal"]["message"],
                    "logs": [line for line in o["logs"] if line.startswith("DSV4 ")]}
            got = {"starts": e["starts"], "refusal": e.get("refusal"),
                   "logs": [line for line in mine_logs if line.startswith("DSV4 ")]}
        else:
            want = {"starts": True, "bytes_per_full_token": round(o["bytes_per_full_token"], 9),
                    "fixed_bytes": o["fixed_bytes"], "max_total_num_tokens": o["max_total_num_tokens"],
                    "pool_sizes": {"full": o["full_tokens"], "swa": o["swa_tokens"], "c4": o["c4_tokens"],
                                   "c128": o["c128_tokens"], "c4_state": o["c4_state_rows"],
                                   "c128_state": o["c128_state_rows"]},
                    "max_running_requests": o["max_running_requests"],
                    "logs": [o["log_memory_calculation"], o["log_pool_sizes"], o["log_scheduler"]]}
            got = {"starts": e["starts"], "bytes_per_full_token": round(e["bytes_per_full_token"], 9),
                   "fixed_bytes": e["fixed_bytes"], "max_total_num_tokens": e["max_total_num_tokens"],
                   "pool_sizes": e["pool_sizes"], "max_running_requests": e["max_running_requests"],
                   "logs": mine_logs}
        for key in want:
            if want[key] != got[key]:
                print(f"{label}: {key}: planner {got[key]!r}, oracle {want[key]!r}")
                bad += 1
    print(f"{len(CASES)} cases, {bad} disagreement(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
