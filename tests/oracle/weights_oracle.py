#!/usr/bin/env python3
"""Independent count of a DeepSeek V4 checkpoint's tensors and of the weight bytes per GPU.

Written from the sources, not from include/dsv4/cache/weights.hpp: the checkpoint's tensor names
as fxp19950422/rtp-llm rtp_llm/model_loader/test/dsv4_checkpoint_inventory.py (0cc3ab0b) lists
them, the shapes and dtypes as vllm-project/vllm builds the parameters
(vllm/model_executor/models/deepseek_v4.py @ 023da1fc, layers/deepseek_compressor.py @ 0de10a27)
and the splits as vLLM and SGLang (python/sglang/srt/models/deepseek_v4.py @ 000328a8) build the
layers. Every tensor gets a full name; per-rank bytes come from slicing each tensor's shape.

  weights_oracle.py --self-test DATA_DIR   the published index totals (V4-Flash 159,609,485,896 B
                                           in 69,187 tensors; V4-Pro 864,704,792,696 B in 145,116)
  weights_oracle.py --compare BIN DATA_DIR runs BIN (tests/oracle/weights_dump.cpp) on each V4
                                           config and compares every figure
  weights_oracle.py --planner PLAN DATA_DIR  runs dsv4-cache-plan --gpu ... --json on V4-Flash and
                                           V4-Pro layouts and checks its `budget` chain: the GPU's
                                           bytes, the engine's default fraction, the weights per
                                           rank (this count) and the sum usable - weights - reserve
"""

import json
import math
import subprocess
import sys
from pathlib import Path

PUBLISHED = {
    "deepseek-v4-flash.config.json": (159_609_485_896, 69_187),
    "deepseek-v4-pro.config.json": (864_704_792_696, 145_116),
}
SIZE = {"BF16": 2, "F32": 4, "F8_E4M3": 1, "F8_E8M0": 1, "I8": 1, "I64": 8}


def tensors(cfg):
    """Yields (name, [rows, cols], dtype, split) for every checkpoint tensor.

    split: None (replicated), or (kind, dim) with kind in attn / dense / vocab_embed / vocab_head /
    expert; dim the axis sliced.
    """
    hid = cfg["hidden_size"]
    n_layers = cfg["num_hidden_layers"]
    heads = cfg["num_attention_heads"]
    hd = cfg["head_dim"]
    ql = cfg["q_lora_rank"]
    groups, ol = cfg["o_groups"], cfg["o_lora_rank"]
    n_exp, inter = cfg["n_routed_experts"], cfg["moe_intermediate_size"]
    shared = inter * cfg["n_shared_experts"]
    hc = cfg["hc_mult"]
    q = cfg["quantization_config"]
    br, bc = q["weight_block_size"]
    fp4 = cfg.get("expert_dtype", "fp4") == "fp4"
    scale_t = "F8_E8M0" if fp4 else "F32"

    def fp8(name, rows, cols, split):
        yield name + ".weight", [rows, cols], "F8_E4M3", split
        yield name + ".scale", [-(-rows // br), -(-cols // bc)], scale_t, split

    def comp(prefix, ratio, width):
        k = 2 if ratio == 4 else 1
        yield prefix + ".wkv.weight", [k * width, hid], "BF16", None
        yield prefix + ".wgate.weight", [k * width, hid], "BF16", None
        yield prefix + ".norm.weight", [width], "BF16", None
        yield prefix + ".ape", [ratio, k * width], "F32", None

    def layer(p, ratio, hashed):
        yield p + ".attn_norm.weight", [hid], "BF16", None
        yield p + ".attn.q_norm.weight", [ql], "BF16", None
        yield p + ".attn.kv_norm.weight", [hd], "BF16", None
        yield p + ".attn.attn_sink", [heads], "F32", ("attn", 0)
        yield from fp8(p + ".attn.wq_a", ql, hid, None)
        yield from fp8(p + ".attn.wq_b", heads * hd, ql, ("attn", 0))
        yield from fp8(p + ".attn.wkv", hd, hid, None)
        yield from fp8(p + ".attn.wo_a", groups * ol, heads * hd // groups, ("attn", 0))
        yield from fp8(p + ".attn.wo_b", hid, groups * ol, ("attn", 1))
        if ratio in (4, 128):
            yield from comp(p + ".attn.compressor", ratio, hd)
        if ratio == 4:
            yield from fp8(p + ".attn.indexer.wq_b", cfg["index_n_heads"] * cfg["index_head_dim"], ql, None)
            yield p + ".attn.indexer.weights_proj.weight", [cfg["index_n_heads"], hid], "BF16", None
            yield from comp(p + ".attn.indexer.compressor", 4, cfg["index_head_dim"])
        for blk in ("attn", "ffn"):
            yield f"{p}.hc_{blk}_fn", [(2 + hc) * hc, hc * hid], "F32", None
            yield f"{p}.hc_{blk}_base", [(2 + hc) * hc], "F32", None
            yield f"{p}.hc_{blk}_scale", [3], "F32", None
        yield p + ".ffn_norm.weight", [hid], "BF16", None
        yield p + ".ffn.gate.weight", [n_exp, hid], "BF16", None
        if hashed:
            yield p + ".ffn.gate.tid2eid", [cfg["vocab_size"], cfg["num_experts_per_tok"]], "I64", None
        else:
            yield p + ".ffn.gate.bias", [n_exp], "F32", None
        yield from fp8(p + ".ffn.shared_experts.w1", shared, hid, ("dense", 0))
        yield from fp8(p + ".ffn.shared_experts.w2", hid, shared, ("dense", 1))
        yield from fp8(p + ".ffn.shared_experts.w3", shared, hid, ("dense", 0))
        for e in range(n_exp):
            for w, rows, cols in (("w1", inter, hid), ("w2", hid, inter), ("w3", inter, hid)):
                dim = 1 if w == "w2" else 0
                name = f"{p}.ffn.experts.{e}.{w}"
                if fp4:
                    yield name + ".weight", [rows, cols // 2], "I8", ("expert", dim, e)
                    yield name + ".scale", [rows, cols // 32], "F8_E8M0", ("expert", dim, e)
                else:
                    yield name + ".weight", [rows, cols], "F8_E4M3", ("expert", dim, e)
                    yield name + ".scale", [-(-rows // br), -(-cols // bc)], scale_t, ("expert", dim, e)

    def heads_(p):
        yield p + "hc_head_fn", [hc, hc * hid], "F32", None
        yield p + "hc_head_base", [hc], "F32", None
        yield p + "hc_head_scale", [1], "F32", None

    yield "embed.weight", [cfg["vocab_size"], hid], "BF16", ("vocab_embed", 0)
    ratios = cfg["compress_ratios"]
    for i in range(n_layers):
        yield from layer(f"layers.{i}", ratios[i], i < cfg.get("num_hash_layers", 0))
    yield "norm.weight", [hid], "BF16", None
    yield "head.weight", [cfg["vocab_size"], hid], "BF16", ("vocab_head", 0)
    yield from heads_("")
    for m in range(cfg.get("num_nextn_predict_layers", 0)):
        p = f"mtp.{m}"
        yield from layer(p, 0, False)
        yield p + ".norm.weight", [hid], "BF16", None
        yield from heads_(p + ".")
        yield p + ".enorm.weight", [hid], "BF16", None
        yield p + ".hnorm.weight", [hid], "BF16", None
        yield from fp8(p + ".e_proj", hid, hid, None)
        yield from fp8(p + ".h_proj", hid, hid, None)


def nbytes(shape, dtype):
    return math.prod(shape) * SIZE[dtype]


def layer_of(name, n_layers):
    parts = name.split(".")
    if parts[0] == "layers":
        return int(parts[1])
    if parts[0] == "mtp":
        return n_layers + int(parts[1])
    return -1


def stage_layers(n, pp):
    """vLLM get_pp_indices: n // pp each, the remainder added from the second-to-last back."""
    parts = [n // pp] * pp
    for i in range(2, n % pp + 2):
        parts[-i] += 1
    bounds, start = [], 0
    for k in parts:
        bounds.append((start, start + k))
        start += k
    return bounds


def divisors(engine, tp, dp, ep, dpa):
    """Per split kind: (attn, dense, vocab_embed, vocab_head, expert ranks, expert dim split)."""
    if engine == "vllm":  # DP ranks are replicas; MoE over tp x dp (EP: experts, else the I dim)
        moe = tp * dp
        return {"attn": tp, "dense": tp, "vocab_embed": tp, "vocab_head": tp,
                "ep": ep, "moe_tp": moe if ep == 1 else 1}
    attn = tp // dp if dpa else tp  # SGLang / tokenspeed: attention TP inside the tp GPUs
    return {"attn": attn, "dense": tp, "vocab_embed": 1 if dpa else tp, "vocab_head": tp,
            "ep": ep, "moe_tp": tp // ep}


def rank_bytes(cfg, layout):
    n = cfg["num_hidden_layers"]
    div = divisors(layout["engine"], layout["tp"], layout["dp"], layout["ep"], layout["dp_attention"])
    pp = layout["pp"]
    bounds = stage_layers(n, pp)
    best = 0
    for stage in range(pp):
        lo, hi = bounds[stage]
        total = 0
        for name, shape, dtype, split in tensors(cfg):
            layer = layer_of(name, n)
            if layer >= n:
                keep = layout["mtp"] and stage == pp - 1
            elif layer >= 0:
                keep = lo <= layer < hi
            elif name == "embed.weight":
                keep = stage == 0
            elif name in ("head.weight", "norm.weight"):
                keep = stage == pp - 1
            else:
                keep = True
            if not keep:
                continue
            shape = list(shape)
            if split is not None:
                kind, dim = split[0], split[1]
                if kind == "expert":
                    per_rank = -(-cfg["n_routed_experts"] // div["ep"])
                    if split[2] >= per_rank:  # rank 0 holds experts [0, per_rank)
                        continue
                    shape[dim] = -(-shape[dim] // div["moe_tp"])
                else:
                    shape[dim] = -(-shape[dim] // div[kind])
            total += nbytes(shape, dtype)
        best = max(best, total)
    return best


def totals(cfg):
    n = cfg["num_hidden_layers"]
    count = size = mtp = 0
    for name, shape, dtype, _ in tensors(cfg):
        count += 1
        size += nbytes(shape, dtype)
        if layer_of(name, n) >= n:
            mtp += nbytes(shape, dtype)
    return size, count, mtp


def self_test(data):
    ok = True
    for file, (size, count) in PUBLISHED.items():
        got_size, got_count, _ = totals(json.loads((Path(data) / file).read_text()))
        good = got_size == size and got_count == count
        ok &= good
        print(f"{file}: {got_size:,} B in {got_count:,} tensors; published {size:,} B in {count:,}: "
              f"{'OK' if good else 'MISMATCH'}")
    names = [t[0] for t in tensors(json.loads((Path(data) / "deepseek-v4-flash.config.json").read_text()))]
    unique = len(set(names)) == len(names)
    print(f"unique names: {'OK' if unique else 'DUPLICATES'}")
    return ok and unique


def compare(binary, data):
    ok = True
    for file in PUBLISHED:
        cfg = json.loads((Path(data) / file).read_text())
        run = subprocess.run([binary, str(Path(data) / file)], capture_output=True, text=True, check=False)
        if run.returncode != 0:
            print(f"{file}: {binary} failed: {run.stderr.strip()}")
            return False
        got = json.loads(run.stdout)
        size, count, mtp = totals(cfg)
        for key, want in (("bytes", size), ("tensors", count), ("mtp_bytes", mtp)):
            good = got[key] == want
            ok &= good
            print(f"{file} {key}: C++ {got[key]:,}, oracle {want:,}: {'OK' if good else 'MISMATCH'}")
        for layout in got["layouts"]:
            want = rank_bytes(cfg, layout)
            good = layout["max_rank_bytes"] == want
            ok &= good
            desc = ", ".join(f"{k}={layout[k]}" for k in ("engine", "tp", "dp", "ep", "pp", "dp_attention", "mtp"))
            print(f"{file} [{desc}]: C++ {layout['max_rank_bytes']:,}, oracle {want:,}: "
                  f"{'OK' if good else 'MISMATCH'}")
    return ok


# The memory CUDA reports (torch.cuda.mem_get_info total), as docs/engines/budget.md sources it:
# H200 measured on a lent H200 SXM 141GB; B200 aiconfigurator b200_sxm.yaml @ 095f58a5 (180 GiB).
GPU_BYTES = {"h200": 150_109_880_320, "b200": 193_273_528_320}


def default_fraction(engine, world):
    """The engine's own default: vLLM vllm/config/cache.py @ 002f10e0 (0.92); tokenspeed
    python/tokenspeed/runtime/utils/server_args.py @ f4d8ec6e 461-474 (by world size)."""
    if engine == "vllm":
        return 0.92
    for at_least, f in ((16, 0.79), (8, 0.81), (4, 0.95), (2, 0.87), (1, 0.88)):
        if world >= at_least:
            return f
    raise ValueError(world)


# (preset, planner flags, layout for rank_bytes, the fraction the flags give or None: the default)
PLANNER_CASES = [
    ("v4-pro", ["--gpu", "h200", "--tp", "8", "--context", "1048576"],
     {"engine": "vllm", "tp": 8, "dp": 1, "ep": 1, "pp": 1, "dp_attention": False, "mtp": False}, None),
    ("v4-pro", ["--gpu", "h200", "--tp", "8", "--ep", "8", "--mtp"],
     {"engine": "vllm", "tp": 8, "dp": 1, "ep": 8, "pp": 1, "dp_attention": False, "mtp": True}, None),
    ("v4-pro", ["--gpu", "h200", "--tp", "4", "--pp", "2", "--gpu-memory-utilization", "0.9"],
     {"engine": "vllm", "tp": 4, "dp": 1, "ep": 1, "pp": 2, "dp_attention": False, "mtp": False}, 0.9),
    ("v4-flash", ["--gpu", "h200", "--tp", "2"],
     {"engine": "vllm", "tp": 2, "dp": 1, "ep": 1, "pp": 1, "dp_attention": False, "mtp": False}, None),
    ("v4-flash", ["--gpu", "b200", "--engine", "tokenspeed", "--tp", "4"],
     {"engine": "tokenspeed", "tp": 4, "dp": 1, "ep": 1, "pp": 1, "dp_attention": False, "mtp": False}, None),
    ("v4-flash", ["--gpu", "h200", "--engine", "sglang", "--tp", "8", "--dp", "8", "--enable-dp-attention",
                  "--mem-fraction-static", "0.85", "--ep", "8"],
     {"engine": "sglang", "tp": 8, "dp": 8, "ep": 8, "pp": 1, "dp_attention": True, "mtp": False}, 0.85),
]


def compare_planner(binary, data):
    ok = True
    files = {"v4-flash": "deepseek-v4-flash.config.json", "v4-pro": "deepseek-v4-pro.config.json"}
    for preset, flags, layout, fraction in PLANNER_CASES:
        cfg = json.loads((Path(data) / files[preset]).read_text())
        argv = [binary, "--preset", preset, *flags, "--json"]
        run = subprocess.run(argv, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            print(f"{' '.join(argv[1:])}: failed: {run.stderr.strip()}")
            return False
        b = json.loads(run.stdout)["budget"]
        gpu = flags[flags.index("--gpu") + 1]
        world = layout["tp"] * (1 if layout["dp_attention"] else layout["dp"]) * layout["pp"]
        f = fraction if fraction is not None else default_fraction(layout["engine"], world)
        weights = rank_bytes(cfg, layout)
        usable = math.floor(GPU_BYTES[gpu] * f)
        checks = [("gpu_bytes", b["gpu_bytes"], GPU_BYTES[gpu]), ("fraction", b["fraction"], f),
                  ("usable_bytes", b["usable_bytes"], usable),
                  ("weights_bytes_per_rank", b["weights_bytes_per_rank"], weights),
                  ("reserve = its parts", b["reserve_bytes"],
                   sum(v for k, v in b["reserve"].items() if k.endswith("_bytes") and k != "bytes")),
                  ("kv_budget_bytes", b["kv_budget_bytes"], usable - weights - b["reserve_bytes"])]
        for key, got, want in checks:
            good = got == want
            ok &= good
            print(f"{preset} {' '.join(flags)}: {key} planner {got:,}, oracle {want:,}: {'OK' if good else 'MISMATCH'}")
    return ok


def main(argv):
    if len(argv) == 4 and argv[1] == "--planner":
        return 0 if compare_planner(argv[2], argv[3]) else 1
    if len(argv) == 3 and argv[1] == "--self-test":
        return 0 if self_test(argv[2]) else 1
    if len(argv) == 4 and argv[1] == "--compare":
        return 0 if compare(argv[2], argv[3]) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
