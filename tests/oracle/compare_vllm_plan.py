#!/usr/bin/env python3
"""Compares dsv4-cache-plan's vLLM engine report with the independent oracle
tests/oracle/vllm_pool_oracle.py (written from vLLM's source, apart from the C++), case by case:
bytes per block, num_blocks, the per-group and total per-request blocks, the smallest KV budget
vLLM starts with, whether it starts, and vLLM's log line or refusal text, for DeepSeek-V4-Flash
and V4-Pro, FP8 and MXFP4 index keys, async scheduling off and on, budgets that fit and one that
does not, and several contexts and step budgets. Standard library only.

  python3 tests/oracle/compare_vllm_plan.py PATH/TO/dsv4-cache-plan

Exit 0 if every case agrees, 1 (printing each disagreement) otherwise.
"""
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
ORACLE = HERE / "vllm_pool_oracle.py"

MODELS = {"v4-flash": "deepseek-v4-flash.config.json", "v4-pro": "deepseek-v4-pro.config.json"}

CASES = []
for preset in MODELS:
    for indexer in ("fp8", "mxfp4"):
        for async_sched in (False, True):
            for gib in ("64", "16"):
                CASES.append((preset, indexer, async_sched, gib, 1048576, 8192))
    CASES.append((preset, "fp8", False, "1", 1048576, 8192))        # refused: 6.95 GiB needed
    CASES.append((preset, "fp8", True, "0.0001", 1048576, 8192))    # below one block
    CASES.append((preset, "mxfp4", False, "8", 131072, 4096))
    CASES.append((preset, "fp8", True, "2", 8192, 2048))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    plan_bin = sys.argv[1]
    bad = 0
    for preset, indexer, async_sched, gib, L, B in CASES:
        label = f"{preset} {indexer} {'async' if async_sched else 'sync'} {gib} GiB L={L} B={B}"
        plan = run([plan_bin, "--preset", preset, "--indexer", indexer, "--memory-gib", gib, "--context", str(L),
                    "--prefill-chunk", str(B), "--no-mtp", "--json"] + (["--overlap"] if async_sched else ["--no-overlap"])
                   + (["--gpu", "b200"] if indexer == "mxfp4" else []))  # vLLM: MXFP4 keys on SM 10.x only
        oracle = run([sys.executable, str(ORACLE), "--config", str(DATA / MODELS[preset]), "--kv-gib", gib,
                      "--max-model-len", str(L), "--max-num-batched-tokens", str(B), "--indexer", indexer]
                     + (["--async"] if async_sched else []))
        e = plan["engine_report"]
        want = {
            "bytes_per_block": oracle["bytes_per_block"],
            "num_blocks": oracle["num_blocks"],
            "request_blocks": oracle["total_per_request_blocks"],
            "charge_blocks": list(oracle["per_request_blocks"].values())
            if isinstance(oracle["per_request_blocks"], dict) else oracle["per_request_blocks"],
            "min_bytes_to_start": oracle["min_kv_bytes_to_start"],
            "starts": oracle["fits"],
        }
        got = {
            "bytes_per_block": e["bytes_per_block"],
            "num_blocks": e["num_blocks"],
            "request_blocks": e["request_blocks"],
            "charge_blocks": [g["charge_blocks"] for g in e["groups"]],
            "min_bytes_to_start": e["min_bytes_to_start"],
            "starts": e["starts"],
        }
        if oracle["fits"]:
            want["log"] = oracle["log_lines"]
            got["log"] = e["log_lines"]
        else:
            want["refusal"] = oracle["refusal"].removeprefix("ValueError: ")
            got["refusal"] = e["refusal"]
        for key in want:
            if want[key] != got[key]:
                bad += 1
                print(f"DIFFER {label}: {key}: plan {got[key]!r} vs oracle {want[key]!r}")
        # The plan of 1 request is never below what vLLM needs to start.
        if plan["plan"]["total_bytes"] < oracle["min_kv_bytes_to_start"]:
            bad += 1
            print(f"DIFFER {label}: plan {plan['plan']['total_bytes']} B below vLLM's start "
                  f"{oracle['min_kv_bytes_to_start']} B")
    print(f"{len(CASES)} cases compared, {bad} disagreement(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
