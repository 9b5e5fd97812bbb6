#!/usr/bin/env python3
"""Compare engines/trtllm (tests/oracle/trtllm_dump.cpp) with the independent oracle trtllm_oracle.py.

Usage: compare_trtllm.py DUMP_BINARY DATA_DIR
       compare_trtllm.py --planner PLAN_BINARY DATA_DIR
Runs both on V4-Flash and V4-Pro (SM90, fp8_ds_mla) over a grid of budgets, batch sizes, sequence
lengths, scratch reuse on and off, and a max_tokens case; exits 1 on any disagreement. With
--planner, the planner's own report (`dsv4-cache-plan --engine trtllm --json`: quota, granules,
slots per pool group, bytes, log lines) against the oracle, for the cases the planner's flags
express (scratch reuse on, no max_tokens).
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GiB = 1 << 30
KEYS = ("quota", "granularity", "min_quota", "effective_quota", "min_slots", "typical_slots", "blocks",
        "total_physical_bytes", "total_logical_bytes")
CASES = [
    # (budget bytes, max_seq_len, max_batch_size, extra flags)
    (GiB, 131072, 64, []),
    (3 * GiB, 32768, 16, ["--no-scratch"]),
    (8 * GiB, 131072, 64, []),
    (8 * GiB, 65536, 32, []),
    (8 * GiB, 131072, 64, ["--max-tokens", "500000"]),
    (17 * GiB, 262144, 128, []),
    (60 * GiB, 131072, 64, []),
    (60 * GiB, 1048576, 2048, []),
    (141 * GiB, 1048576, 256, ["--no-scratch"]),
    (1024 * GiB, 1048576, 2048, []),
]


def run_oracle(config, budget, seq, batch, flags):
    cmd = [sys.executable, os.path.join(HERE, "trtllm_oracle.py"), config, "--budget-bytes", str(budget),
           "--sm", "90", "--kv-dtype", "fp8_ds_mla", "--max-seq-len", str(seq), "--max-batch-size", str(batch),
           "--json"] + flags
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def run_dump(binary, config, budget, seq, batch, flags):
    cmd = [binary, config, str(budget), str(seq), str(batch)] + flags
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def run_planner(binary, config, budget, seq, batch):
    cmd = [binary, "--config", config, "--engine", "trtllm", "--memory-gib", repr(budget / GiB), "--context",
           str(seq), "--max-running-requests", str(batch), "--json"]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["engine_report"]


def compare_planner(binary, data):
    failures = 0
    for name in ("deepseek-v4-flash.config.json", "deepseek-v4-pro.config.json"):
        config = os.path.join(data, name)
        for budget, seq, batch, flags in CASES:
            if flags:
                continue  # --no-scratch and --max-tokens are not planner flags
            want = run_oracle(config, budget, seq, batch, flags)
            got = run_planner(binary, config, budget, seq, batch)
            tag = f"planner {name} budget={budget} S={seq} B={batch}"
            groups = got["pool_groups"]
            pairs = [("quota", got["quota"], want["quota"]), ("granularity", got["granularity"], want["granularity"]),
                     ("min_quota", got["min_quota"], want["min_quota"]),
                     ("effective_quota", got["effective_quota"], want["effective_quota"]),
                     ("min_slots", [g["min_slots"] for g in groups], want["min_slots"]),
                     ("typical_slots", [g["typical_slots"] for g in groups], want["typical_slots"]),
                     ("slots", [g["slots"] for g in groups], want["blocks"]),
                     ("allocated_bytes", got["allocated_bytes"], want["total_physical_bytes"]),
                     ("pool slot bytes", [[p["slot_bytes"] for p in g["pools"]] for g in groups],
                      [[p["bytes_per_block"] for p in g["pools"]] for g in want["groups"]])]
            # The V2 quota lines the planner reproduces, as the oracle writes them.
            for line in ("max_gpu_total_bytes is provided.", "KV cache manager v2 device quota set to"):
                pairs.append((line, [x for x in got["log_lines"] if x.startswith(line)],
                              [x for x in want["logs"] if x.startswith(line)]))
            bad = [(k, g, w) for k, g, w in pairs if g != w]
            for k, g, w in bad:
                print(f"[FAIL] {tag}: {k}: planner {g} oracle {w}")
            failures += len(bad)
            if not bad:
                print(f"[ok ] {tag}: slots {[g['slots'] for g in groups]}")
    print("TRTLLM PLANNER AGREES" if failures == 0 else f"{failures} DISAGREEMENTS")
    return 0 if failures == 0 else 1


def main(argv):
    if len(argv) == 4 and argv[1] == "--planner":
        return compare_planner(argv[2], argv[3])
    if len(argv) != 3:
        print(__doc__)
        return 2
    binary, data = argv[1], argv[2]
    failures = 0
    for name in ("deepseek-v4-flash.config.json", "deepseek-v4-pro.config.json"):
        config = os.path.join(data, name)
        for budget, seq, batch, flags in CASES:
            want = run_oracle(config, budget, seq, batch, flags)
            got = run_dump(binary, config, budget, seq, batch, flags)
            tag = f"{name} budget={budget} S={seq} B={batch} {' '.join(flags)}"
            for k in KEYS:
                if want[k] != got[k]:
                    print(f"[FAIL] {tag}: {k}: dump {got[k]} oracle {want[k]}")
                    failures += 1
            pools = [[p["bytes_per_block"] for p in g["pools"]] for g in want["groups"]]
            if pools != got["pool_bytes_per_block"]:
                print(f"[FAIL] {tag}: pools: dump {got['pool_bytes_per_block']} oracle {pools}")
                failures += 1
            if abs(want["dsv4_max_tokens_from_quota"] - got["dsv4_max_tokens_from_quota"]) > 1e-6 * max(
                    1.0, abs(want["dsv4_max_tokens_from_quota"])):
                print(f"[FAIL] {tag}: max tokens: dump {got['dsv4_max_tokens_from_quota']} "
                      f"oracle {want['dsv4_max_tokens_from_quota']}")
                failures += 1
            if not failures:
                print(f"[ok ] {tag}: blocks {got['blocks']}")
    print("TRTLLM AGREES" if failures == 0 else f"{failures} DISAGREEMENTS")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
