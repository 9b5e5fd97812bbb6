#!/usr/bin/env python3
"""Independent oracle of how vLLM v1 sizes its KV cache for DeepSeek V4 models.
Standard library only (Python 3.11).

Written from vLLM's own source code, apart from this project's C++ (include/, tools/ were not
read) and apart from any other helper's notes. The project's spec notes (shared/spec/*.md) were
read only as a map and every rule below was checked against vLLM's code. The code index mixes
many vLLM versions and forks; where a read named its commit it is given, otherwise the index id
of the copy read is given (such reads name no commit).

Rules and where they come from
------------------------------
R1  Per-layer specs (registration order inside one decoder layer, which fixes bucket order):
    indexer.k_cache, indexer.compressor.state_cache (CSA layers only), swa_cache, the layer's
    own compressed KV (ratio > 1 only), compressor.state_cache (ratio > 1 only).
    - vllm/models/deepseek_v4/attention.py @ 0484480bc73081c4a5133b3cb53018323fce632d,
      DeepseekV4Attention.__init__ / get_kv_cache_spec: compress_ratio = max(1, ratios[i]) for
      i < num_hidden_layers, 1 for the MTP layer (SWA only); ratio <= 1 -> no main spec;
      otherwise MLAAttentionSpec(block_size=cache_config.block_size, compress_ratio=r,
      state_content_bytes=584, alignment=576 for fp8_ds_mla). Indexer only when r == 4.
    - same file, DeepseekV4Indexer.__init__: k-cache row = d + d/128*4 = 132 B (FP8, default) or
      d/2 + d/32 = 68 B (MXFP4, `dsa_indexer_uses_fp4`); DeepseekV4IndexerCache.get_kv_cache_spec:
      MLAAttentionSpec(block_size=cache_config.block_size, head_size=row, uint8, compress_ratio=r,
      alignment=576 for fp8_ds_mla).
    - vllm/v1/attention/backends/mla/sparse_swa.py @ 03dc564956172b5b2835be7a84ddde5de1d5dba6,
      DeepseekV4SWACache: block_size 64 (hard-coded), SlidingWindowMLASpec(window=
      config.sliding_window, model_version deepseek_v4, alignment 576); DeepseekSparseSWABackend
      .get_preferred_block_size -> 256 (so cache_config.block_size = 256).
    - vllm/models/deepseek_v4/compressor.py @ 01cc1d3e7640a8ada37f99ca60cc3ee66490cf38,
      CompressorStateCache: coff = 2 if r == 4 else 1, state_dim = 2*coff*head_dim (fp32),
      window = coff*r, block_size 4 (r=4) or 8 (r=128), SlidingWindowMLASpec(alignment 576 for
      fp8_ds_mla). The indexer's compressor uses head_dim = index_head_dim.
R2  Page bytes: vllm/v1/kv_cache_interface.py (copy id 54532791230, MLAAttentionSpec /
    SlidingWindowMLASpec with compress_ratio; and the newer copy id 57535294933 with
    tokens_per_state, which gives the same numbers): storage rows = block_size // compress_ratio;
    row bytes 584 for fp8_ds_mla + deepseek_v4, head_size*dtype otherwise; then
    _apply_alignment_padding: page_size_padded = round_up(page, alignment) when different.
R3  Grouping: vllm/v1/core/kv_cache_planning.py @ 4253bd44243c89bb62c1898399f69236b2b5c721,
    get_kv_cache_groups -> _get_packed_kv_cache_groups: greedy buckets of uniform type
    (UniformTypeKVCacheSpecs.is_uniform_type: one block size; full-attention family, or sliding
    window with equal window); a bucket is "balanced" when every page size has the same layer
    count; min_repeats = max repeats of balanced multi-page-size buckets; repeats =
    _approximate_gcd(repeats of all balanced buckets, lower_bound=min_repeats) (brute force
    d in [lb, max], least total round-up padding, ties -> larger d); balanced buckets split into
    cdiv(repeats_b, repeats) groups taking pattern repeats i::n; unbalanced buckets stay whole.
R4  bytes_per_block = max over groups of the sum of its layers' page bytes
    (_get_kv_cache_bytes_per_block); num_blocks = available // bytes_per_block
    (get_kv_cache_config_from_groups); the null block is one of them.
R5  Per-request charge per group (_max_memory_usage_bytes_from_groups ->
    UniformTypeKVCacheSpecs.max_memory_usage_pages = max over the group's layers of
    cdiv(spec.max_memory_usage_bytes, page)):
    full (FullAttentionSpec.max_memory_usage_bytes): cdiv(L', block), L' = cdiv(L, dcp) if dcp > 1;
    sliding (SlidingWindowSpec.max_admission_blocks_per_request, copy id 57535294933):
      cdiv(min(window - 1 + extra_retained + max_in_flight_tokens, L), block) + 1,
      and `assert decode_context_parallel_size == 1, "DCP not support sliding window."`.
    extra_retained = k - 1 only with multi-module MTP (get_kv_cache_configs @ 4253bd44;
    SpeculativeConfig.use_multi_module_mtp, copy id 57350804838: min(num_nextn_predict_layers,
    k) > 1); V4-Flash/Pro have one MTP module, so 0.
    max_in_flight_tokens = max_concurrent_batches * max_num_batched_tokens, with
    max_concurrent_batches = 2 under async scheduling (pp = 1) else 1
    (vllm/config/vllm.py @ 000fc94b754f66aeb60ef5acf1ea2e94cdc65164). Speculative tokens do not
    enter it. vLLM's default is async ON (VllmConfig.__post_init__, copy id 58727431697: None ->
    True unless pooling / non-EAGLE-family speculator / unsupported executor); here --async
    selects it.
R6  Startup check (get_kv_cache_configs @ 4253bd44): check = available - bytes_per_block (null
    block); _check_enough_kv_cache_memory: check <= 0 -> "No available memory ..." ValueError;
    needed = bytes_per_block * total per-request blocks > check -> ValueError with
    _estimate_max_model_len_from_groups (binary search over [1, L]); GiB figures by
    vllm/utils/mem_utils.py @ a6d5c39009eb73797b276cc557ca9659c396ca14 format_gib =
    round(b / 2**30, 2).
R7  Capacity log: vllm/v1/core/kv_cache_utils.py (post-split copy id 58890209066):
    max_concurrency = num_blocks / sum over groups of per-request blocks (null block not
    removed); tokens = int(max_concurrency * L); one line
    "GPU KV cache size: {tokens:,} tokens, Maximum concurrency for {L:,} tokens per request:
    {conc:.2f}x" (update_kv_cache_capacity, logger.info_once).
R8  MTP draft layer: its KV exists only when vLLM loads the MTP drafter (speculative decoding
    with method "mtp"), so here it is counted when --num-speculative-tokens > 0, unless
    --no-mtp (a non-MTP speculator), or forced with --with-mtp. It adds one SWA layer per MTP
    module; for Flash and Pro it changes neither the group count nor bytes_per_block.
Cross-check: vLLM PR #48993 (merged 2026-07-17) measured, for V4-Pro with MXFP4 index keys on
FlashMLA, a block stride of 1,315,008 B and 21,306 blocks at 26.09 GiB; R1-R4 reproduce both
(self-test). Its FlashInfer figure 1,228,800 B = 30*32768 + 30*8192 is the state group of R3
without the 576 alignment, which corroborates the grouping.

Not covered: DeepSeek V4.1 (model_type deepseek_v41: shared kv/index source layers,
CircularBufferSpec compressor ring, arch-dependent 528/584 rows, SWA block 32/64) -- its rules
were not established; DCP > 1 (vLLM asserts, see R5; figures with the assertion lifted are
printed as hypothetical); pipeline parallelism; kv-cache dtypes other than fp8_ds_mla;
--block-size other than 256 (option given, untested); num_gpu_blocks_override.

Usage:
  python3 tests/oracle/vllm_pool_oracle.py --config tests/data/deepseek-v4-flash.config.json \
      --kv-gib 64 --max-model-len 1048576 --max-num-batched-tokens 8192 [--async] \
      [--num-speculative-tokens K] [--indexer fp8|mxfp4] [--dcp D] [--no-mtp|--with-mtp]
  python3 tests/oracle/vllm_pool_oracle.py --self-test
"""
import argparse
import json
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path

GIB = 1 << 30
FP8_DS_MLA_ROW = 584      # 448 fp8 NoPE + 128 bf16 RoPE + 8 scale bytes (vLLM hard-codes 584)
FP8_DS_MLA_ALIGN = 576
SWA_BLOCK = 64            # DeepseekV4SWACache.block_size
DEFAULT_BLOCK = 256       # DeepseekSparseSWABackend.get_preferred_block_size


def cdiv(a, b):
    return -(-a // b)


def round_up(x, m):
    return cdiv(x, m) * m


class Spec:
    """One layer's cache tensor (a KVCacheSpec)."""

    def __init__(self, name, layer, kind, cls, block_size, rows, row_bytes, window=None,
                 alignment=FP8_DS_MLA_ALIGN):
        self.name, self.layer, self.kind, self.cls = name, layer, kind, cls
        self.block_size, self.rows, self.row_bytes = block_size, rows, row_bytes
        self.window = window                      # None: full history
        self.extra_retained = 0
        self.page_unpadded = rows * row_bytes
        self.page = round_up(self.page_unpadded, alignment) if alignment else self.page_unpadded

    @property
    def sliding(self):
        return self.window is not None

    def type_key(self):
        # UniformTypeKVCacheSpecs.is_uniform_type: same block size, and full-attention family
        # or SlidingWindowMLASpec with the same window.
        return (self.block_size, "sliding", self.window) if self.sliding else \
            (self.block_size, "full", None)

    def blocks_per_request(self, L, in_flight, dcp):
        if self.sliding:
            if dcp != 1:
                raise AssertionError("DCP not support sliding window.")
            n = min(self.window - 1 + self.extra_retained + in_flight, L)
            return cdiv(n, self.block_size) + 1
        if dcp > 1:
            L = cdiv(L, dcp)
        return cdiv(L, self.block_size)

    def to_json(self):
        return {"name": self.name, "layer": self.layer, "kind": self.kind, "spec": self.cls,
                "block_size": self.block_size, "rows_per_page": self.rows,
                "row_bytes": self.row_bytes,
                "window": self.window if self.sliding else "full",
                "page_bytes_unpadded": self.page_unpadded, "page_bytes": self.page}


def load_config(path):
    cfg = json.loads(Path(path).read_text())
    mt = cfg.get("model_type")
    if mt != "deepseek_v4":
        raise SystemExit(f"not covered: model_type {mt!r} (this oracle covers deepseek_v4 only; "
                         "V4.1 rules were not established)")
    return cfg


def build_specs(cfg, indexer="fp8", mtp_layers=0, block_size=DEFAULT_BLOCK):
    n = cfg["num_hidden_layers"]
    ratios = cfg["compress_ratios"]
    D = cfg["head_dim"]
    d_idx = cfg["index_head_dim"]
    window = cfg["sliding_window"]
    if indexer == "fp8":
        idx_row = d_idx + d_idx // 128 * 4
    elif indexer == "mxfp4":
        idx_row = d_idx // 2 + d_idx // 32
    else:
        raise ValueError(indexer)
    specs = []
    for i in range(n + mtp_layers):
        r = max(1, ratios[i]) if i < n else 1
        if r not in (1, 4, 128):
            raise SystemExit(f"layer {i}: unsupported compress ratio {r}")
        p = f"layers.{i}.attn"
        if r == 4:
            specs.append(Spec(f"{p}.indexer.k_cache", i, "indexer_k", "MLAAttentionSpec",
                              block_size, block_size // r, idx_row))
            # indexer compressor: head_dim = index_head_dim, coff 2, fp32 [kv | score]
            specs.append(Spec(f"{p}.indexer.compressor.state_cache", i, "indexer_state",
                              "SlidingWindowMLASpec", 4, 4, 2 * 2 * d_idx * 4, window=8))
        specs.append(Spec(f"{p}.swa_cache", i, "swa", "SlidingWindowMLASpec", SWA_BLOCK,
                          SWA_BLOCK, FP8_DS_MLA_ROW, window=window))
        if r > 1:
            specs.append(Spec(p, i, f"c{r}_kv", "MLAAttentionSpec", block_size,
                              block_size // r, FP8_DS_MLA_ROW))
            coff = 2 if r == 4 else 1
            sb = 4 if r == 4 else 8
            specs.append(Spec(f"{p}.compressor.state_cache", i, f"c{r}_state",
                              "SlidingWindowMLASpec", sb, sb, 2 * coff * D * 4,
                              window=coff * r))
    return specs


def approximate_gcd(values, lower_bound=None):
    """kv_cache_planning._approximate_gcd, verbatim logic."""
    if not values:
        raise ValueError("values must be non-empty")
    min_d = max(1, lower_bound if lower_bound is not None else 1)
    max_d = max(values)
    if min_d > max_d:
        return min_d
    best_d, best_pad = min_d, None
    for d in range(min_d, max_d + 1):
        pad = sum((d - (x % d)) % d for x in values)
        if best_pad is None or pad < best_pad or (pad == best_pad and d > best_d):
            best_pad, best_d = pad, d
    return best_d


def packed_groups(specs):
    """kv_cache_planning._get_packed_kv_cache_groups (no mamba buckets for V4)."""
    buckets = []   # list of (type_key, [spec])
    for s in specs:
        for key, members in buckets:
            if key == s.type_key():
                members.append(s)
                break
        else:
            buckets.append((s.type_key(), [s]))
    info = []
    for key, members in buckets:
        by_page = {}
        for s in members:
            by_page.setdefault(s.page, []).append(s)
        balanced = len({len(v) for v in by_page.values()}) == 1
        max_per_page = Counter(s.page for s in members).most_common(1)[0][1]
        info.append((members, by_page, balanced, max_per_page))
    min_rep = max((mp for _, bp, bal, mp in info if bal and len(bp) > 1), default=0)
    reps = approximate_gcd([mp for _, _, bal, mp in info if bal], lower_bound=min_rep) \
        if min_rep else None
    groups = []
    for members, by_page, balanced, mp in info:
        ng = cdiv(mp, reps) if (balanced and reps is not None) else 1
        if ng == 1:
            groups.append(list(members))
            continue
        pattern = list(zip(*by_page.values()))
        for i in range(ng):
            groups.append([s for rep in pattern[i::ng] for s in rep])
    return groups, reps


def plan(cfg, kv_bytes, L, B, async_sched=False, k=0, indexer="fp8", dcp=1, mtp=None,
         block_size=DEFAULT_BLOCK):
    n_mtp_cfg = cfg.get("num_nextn_predict_layers", 0)
    use_mtp = (k > 0) if mtp is None else mtp
    mtp_layers = n_mtp_cfg if use_mtp else 0
    specs = build_specs(cfg, indexer, mtp_layers, block_size)
    extra = k - 1 if (k > 0 and use_mtp and min(n_mtp_cfg, k) > 1) else 0
    for s in specs:
        if s.sliding:
            s.extra_retained = extra
    groups, reps = packed_groups(specs)
    group_bytes = [sum(s.page for s in g) for g in groups]
    bpb = max(group_bytes)
    num_blocks = kv_bytes // bpb
    in_flight = (2 if async_sched else 1) * B

    def per_request(Lx, dcp_x):
        return [max(s.blocks_per_request(Lx, in_flight, dcp_x) for s in g) for g in groups]

    out_groups = []
    for gi, (g, gb) in enumerate(zip(groups, group_bytes)):
        s0 = g[0]
        out_groups.append({
            "index": gi, "block_size": s0.block_size,
            "window": s0.window if s0.sliding else "full",
            "num_layers": len(g), "bytes_per_block": gb,
            "tensors": Counter(f"{s.kind}:{s.page}" for s in g),
            "layers": [s.name for s in g],
        })
    res = {
        "model": cfg.get("model_type"), "num_hidden_layers": cfg["num_hidden_layers"],
        "mtp_layers": mtp_layers, "indexer": indexer, "kv_cache_dtype": "fp8_ds_mla",
        "block_size": block_size, "kv_bytes": kv_bytes, "max_model_len": L,
        "max_num_batched_tokens": B, "async_scheduling": async_sched,
        "num_speculative_tokens": k, "dcp": dcp,
        "max_in_flight_tokens": in_flight, "extra_retained_tokens": extra,
        "repeats_per_group": reps,
        "specs": [s.to_json() for s in specs],
        "groups": out_groups,
        "bytes_per_block": bpb, "num_blocks": num_blocks,
    }
    # Startup check (R6)
    check = kv_bytes - bpb
    if check <= 0:
        refusal = ("ValueError: No available memory for the cache blocks. Try increasing "
                   "`gpu_memory_utilization` when initializing the engine (this flag also "
                   "controls CPU memory reservation on the CPU backend, despite its name). See "
                   "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more "
                   "details.")
        res.update(fits=False, refusal=refusal)
        if dcp != 1:
            return res
    if dcp != 1:
        res.update(fits=False, refusal="AssertionError: DCP not support sliding window.",
                   per_request_blocks=None, total_per_request_blocks=None, needed_bytes=None,
                   min_kv_bytes_to_start=None, log_lines=[])
        # Not vLLM behaviour: full groups sharded by cdiv(L, dcp), sliding groups unsharded.
        hyp = [max(s.blocks_per_request(L, in_flight, dcp) if not s.sliding else
                   _sliding_no_assert(s, L, in_flight) for s in g) for g in groups]
        res["hypothetical_if_assert_lifted"] = {
            "per_request_blocks": hyp, "total_per_request_blocks": sum(hyp),
            "needed_bytes": bpb * sum(hyp), "min_kv_bytes_to_start": bpb * (sum(hyp) + 1)}
        return res
    pr = per_request(L, 1)
    total = sum(pr)
    needed = bpb * total
    res.update(per_request_blocks=pr, total_per_request_blocks=total, needed_bytes=needed,
               min_kv_bytes_to_start=bpb * (total + 1))
    if check > 0:
        if needed > check:
            est = estimate_max_model_len(lambda Lx: bpb * sum(per_request(Lx, 1)), L, check)
            msg = ("Based on the available memory, the estimated maximum model length is "
                   f"{est}. ") if est > 0 else ""
            refusal = (
                "ValueError: To serve at least one request with the model's max seq len "
                f"({L}), ({format_gib(needed)} GiB KV cache is needed, which is larger than the "
                f"available KV cache memory ({format_gib(check)} GiB). {msg}Try increasing "
                "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend) "
                "or decreasing `max_model_len` when initializing the engine. See "
                "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more "
                "details.")
            res.update(fits=False, refusal=refusal, estimated_max_model_len=est)
        else:
            res.update(fits=True, refusal=None)
    if res["fits"]:
        conc = num_blocks / total
        tokens = int(conc * L)
        res["max_concurrency"] = conc
        res["kv_cache_size_tokens"] = tokens
        res["log_lines"] = [f"GPU KV cache size: {tokens:,} tokens, Maximum concurrency for "
                            f"{L:,} tokens per request: {conc:.2f}x"]
    else:
        res["log_lines"] = []
    return res


def _sliding_no_assert(s, L, in_flight):
    n = min(s.window - 1 + s.extra_retained + in_flight, L)
    return cdiv(n, s.block_size) + 1


def estimate_max_model_len(needed_for, L, avail):
    """_estimate_max_model_len_from_groups: binary search over [1, L]."""
    if needed_for(1) > avail:
        return 0
    lo, hi, best = 1, L, 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if needed_for(mid) <= avail:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def format_gib(b):
    return f"{round(b / GIB, 2)}"


def to_jsonable(o):
    if isinstance(o, Counter):
        return dict(o)
    raise TypeError(type(o))


# ---------------------------------------------------------------------------------------------
def self_test():
    here = Path(__file__).resolve().parents[1] / "data"
    flash = load_config(here / "deepseek-v4-flash.config.json")
    pro = load_config(here / "deepseek-v4-pro.config.json")
    M = 1048576

    # Pages (hand): SWA 64*584 = 37376 -> ceil(37376/576)=65 -> 65*576 = 37440.
    # c4 KV 256/4=64 rows *584 = 37376 -> 37440; c128 KV 2*584 = 1168 -> 3*576 = 1728.
    # idx FP8 64*132 = 8448 -> 15*576 = 8640; idx MXFP4 64*68 = 4352 -> 8*576 = 4608.
    # c4 state 4 rows * 2*2*512*4 B = 32768 -> 57*576 = 32832; c128 state 8*1024*4 = 32768
    # -> 32832; indexer state 4 * 2*2*128*4 = 8192 -> 15*576 = 8640.
    pages = {(s.kind, s.page_unpadded, s.page) for s in build_specs(flash, "fp8")}
    assert pages == {("swa", 37376, 37440), ("c4_kv", 37376, 37440), ("c128_kv", 1168, 1728),
                     ("indexer_k", 8448, 8640), ("c4_state", 32768, 32832),
                     ("c128_state", 32768, 32832), ("indexer_state", 8192, 8640)}, pages
    assert {s.page for s in build_specs(flash, "mxfp4") if s.kind == "indexer_k"} == {4608}

    # V4-Flash, no MTP: layers 0,1 SWA-only; CSA at 2,4,..,42 (21); HCA at 3,..,41 (20).
    # Buckets: SWA (43 x 37440), full/256 (21 c4 + 20 c128 + 21 idx: unbalanced -> whole),
    # block 4/window 8 (21 c4 state + 21 idx state: balanced, 2 page sizes), block 8/window 128
    # (20). min_repeats = 21; approx_gcd([43, 21, 20], lb 21): d=21 pad 21+0+1=22? (63-43=20,
    # 0, 1 -> 21); d=22 -> 1+1+2 = 4; d=23 -> 3+2+3 = 8; ... -> 22. SWA -> cdiv(43,22) = 2 groups.
    # Full group bytes = 21*37440 + 20*1728 + 21*8640 = 786240 + 34560 + 181440 = 1,002,240.
    # State group = 21*32832 + 21*8640 = 870,912; SWA groups 22*37440 = 823,680 and 21*37440;
    # HCA state 20*32832 = 656,640.  bytes_per_block = 1,002,240.
    r = plan(flash, 64 * GIB, M, 8192)
    assert r["repeats_per_group"] == 22
    assert sorted(g["bytes_per_block"] for g in r["groups"]) == \
        sorted([823680, 786240, 1002240, 870912, 656640]), r["groups"]
    assert r["bytes_per_block"] == 1002240
    # 64 GiB = 68,719,476,736 B; 68,565 * 1,002,240 = 68,718,585,600 (rest 891,136).
    assert r["num_blocks"] == 68565
    # Sync, B = 8192: full cdiv(1048576,256) = 4096; SWA cdiv(127+8192=8319, 64) = 130, +1 = 131
    # (x2 groups); block 4: cdiv(7+8192, 4) = 2050, +1 = 2051; block 8: cdiv(8319, 8) = 1040,
    # +1 = 1041.  Total = 4096 + 262 + 2051 + 1041 = 7450.
    assert sorted(r["per_request_blocks"]) == sorted([131, 131, 4096, 2051, 1041])
    assert r["total_per_request_blocks"] == 7450
    assert r["needed_bytes"] == 7450 * 1002240 == 7466688000
    assert r["min_kv_bytes_to_start"] == 7451 * 1002240
    # 68565 / 7450 = 9.2034 -> "9.20x"; 68565 * 1048576 = 71,895,613,440 and / 7450 =
    # 9,650,417.9 (7450 * 9,650,417 = 71,895,606,650, rest 6,790) -> 9,650,417.
    assert r["log_lines"] == ["GPU KV cache size: 9,650,417 tokens, Maximum concurrency for "
                              "1,048,576 tokens per request: 9.20x"], r["log_lines"]
    # Async (in flight 16384): SWA cdiv(16511,64)=258 +1 = 259; block 4 cdiv(16391,4)=4098 +1
    # = 4099; block 8 cdiv(16511,8)=2064 +1 = 2065.  Total 4096 + 518 + 4099 + 2065 = 10778.
    ra = plan(flash, 64 * GIB, M, 8192, async_sched=True)
    assert ra["total_per_request_blocks"] == 10778
    # Start threshold: available - one block >= needed  <=>  available >= bpb * (total + 1).
    edge = plan(flash, 7451 * 1002240, M, 8192)
    assert edge["fits"] and not plan(flash, 7451 * 1002240 - 1, M, 8192)["fits"]
    # MTP layer (k > 0) adds one SWA layer: 44 -> approx_gcd([44,21,20], 21) = 22 -> 2 groups of
    # 22; nothing else changes.
    rk = plan(flash, 64 * GIB, M, 8192, k=1)
    assert rk["mtp_layers"] == 1 and rk["total_per_request_blocks"] == 7450
    assert rk["bytes_per_block"] == 1002240
    # MXFP4 index keys: full group = 786240 + 34560 + 21*4608 (96768) = 917,568 (> 870,912).
    assert plan(flash, 64 * GIB, M, 8192, indexer="mxfp4")["bytes_per_block"] == 917568

    # V4-Pro: 61 layers, HCA at 0,1,3,..,59 (31), CSA at 2,..,60 (30). FP8 full group =
    # 30*37440 + 31*1728 + 30*8640 = 1123200 + 53568 + 259200 = 1,435,968.
    # approx_gcd([61, 30, 31], lb 30): d=30 -> 29+0+29; d=31 -> 1+1+0 = 2 (best) -> SWA 2 groups.
    rp = plan(pro, 64 * GIB, M, 8192)
    assert rp["bytes_per_block"] == 1435968 and rp["repeats_per_group"] == 31
    # MXFP4: 1123200 + 53568 + 30*4608 (138240) = 1,315,008 = vLLM PR #48993's measured
    # FlashMLA block stride; 21,306 blocks * 1,315,008 = 28,017,560,448 B = 26.09 GiB (PR table).
    rpm = plan(pro, 21306 * 1315008, M, 8192, indexer="mxfp4")
    assert rpm["bytes_per_block"] == 1315008 and rpm["num_blocks"] == 21306
    assert format_gib(21306 * 1315008) == "26.09"

    # Refusal text: 1 GiB for Flash at 1M (needs 6.95 GiB).
    rr = plan(flash, GIB, M, 8192)
    assert not rr["fits"] and "(6.95 GiB KV cache is needed" in rr["refusal"]
    # check = 1 GiB - 1,002,240 = 1,072,739,584 B -> at most 1070 blocks (1070.3).  Below the
    # window caps every group grows with L: L = 2592 -> 11 + 2*(41+1) + (648+1) + (324+1) = 1069
    # fits; L = 2593 -> 11 + 84 + (649+1) + (325+1) = 1071 does not.  Estimate = 2592.
    assert rr["estimated_max_model_len"] == 2592
    assert "the estimated maximum model length is 2592. Try increasing" in rr["refusal"]
    assert "memory (1.0 GiB)" in rr["refusal"]
    # DCP: vLLM asserts in SlidingWindowSpec.max_memory_usage_bytes.
    assert plan(flash, 64 * GIB, M, 8192, dcp=2)["refusal"] == \
        "AssertionError: DCP not support sliding window."
    # approximate_gcd sanity (docstring semantics): ties prefer larger d.
    assert approximate_gcd([4, 8], lower_bound=1) == 4 and approximate_gcd([6], 1) == 6
    print("self-test passed")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--config")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--kv-bytes", type=int)
    g.add_argument("--kv-gib", type=str, help="G x 2^30, floor (decimal allowed)")
    ap.add_argument("--max-model-len", type=int)
    ap.add_argument("--max-num-batched-tokens", type=int)
    ap.add_argument("--async", dest="async_sched", action="store_true",
                    help="async scheduling (vLLM's default when not disabled)")
    ap.add_argument("--num-speculative-tokens", type=int, default=0)
    ap.add_argument("--indexer", choices=("fp8", "mxfp4"), default="fp8")
    ap.add_argument("--dcp", type=int, default=1)
    ap.add_argument("--block-size", type=int, default=DEFAULT_BLOCK)
    m = ap.add_mutually_exclusive_group()
    m.add_argument("--no-mtp", action="store_true", help="no MTP draft layer even with K > 0")
    m.add_argument("--with-mtp", action="store_true", help="count the MTP layer even with K = 0")
    a = ap.parse_args(argv)
    if a.self_test:
        self_test()
        return 0
    if not (a.config and a.max_model_len and a.max_num_batched_tokens) or \
            (a.kv_bytes is None and a.kv_gib is None):
        ap.error("--config, --kv-bytes/--kv-gib, --max-model-len, --max-num-batched-tokens "
                 "are required")
    kv = a.kv_bytes if a.kv_bytes is not None else int(Fraction(a.kv_gib) * GIB)
    cfg = load_config(a.config)
    mtp = False if a.no_mtp else (True if a.with_mtp else None)
    res = plan(cfg, kv, a.max_model_len, a.max_num_batched_tokens, a.async_sched,
               a.num_speculative_tokens, a.indexer, a.dcp, mtp, a.block_size)
    json.dump(res, sys.stdout, indent=1, default=to_jsonable)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
