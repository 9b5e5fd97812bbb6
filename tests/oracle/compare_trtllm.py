#!/usr/bin/env python3
"""Compare engines/trtllm (tests/oracle/trtllm_dump.cpp) with the independent oracle trtllm_oracle.py.

Usage: compare_trtllm.py DUMP_BINARY DATA_DIR
Runs both on V4-Flash and V4-Pro (SM90, fp8_ds_mla) over a grid of budgets, batch sizes, sequence
lengths, scratch reuse on and off, and a max_tokens case; exits 1 on the first disagreement.
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


def main(argv):
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
