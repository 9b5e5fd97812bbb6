#!/usr/bin/env python3
"""Independent oracle: how TensorRT-LLM (PyTorch backend) sizes the KV cache
for DeepSeek-V4-family checkpoints (and, roughly, DeepSeek-V3.2 / DSA).

Standard library only.  Every step cites the TensorRT-LLM source it follows.
The sources were read from the public index of NVIDIA/TensorRT-LLM (the full
git snapshot was too large to fetch), file by file; each file is cited with
the commit of the stored version that was read:

  [CM]    tensorrt_llm/_torch/attention/backends/sparse/deepseek_v4/cache_manager.py
          @ 0393e46e3b5f10070168747400aeddb7b7c33a3d   (class DeepseekV4CacheManager)
  [PAR]   tensorrt_llm/_torch/attention/backends/sparse/deepseek_v4/params.py
          @ 50aec1cbae9c474f177ec905be5897abf99bc481
  [FOOT]  tensorrt_llm/_torch/attention/backends/sparse/deepseek_v4/footer_scale_kv.py
          @ d77955c52716fe6ff51d047f0eb93a443a342ef9
  [V2]    tensorrt_llm/_torch/pyexecutor/kv_cache/kv_cache_manager_v2.py
          @ 0004396720054fd8e205cbf616f21f0b57c6b412   (class KVCacheManagerV2)
  [UTIL]  tensorrt_llm/_torch/pyexecutor/_util.py
          @ 0004396720054fd8e205cbf616f21f0b57c6b412   (class KvCacheCreator)
  [ARGS]  tensorrt_llm/llmapi/llm_args.py
          @ 0004396720054fd8e205cbf616f21f0b57c6b412   (KvCacheConfig, DeepSeekV4SparseAttentionConfig)
  [MODEL] tensorrt_llm/_torch/models/modeling_deepseekv4.py
          @ 02586bf0b0f59d29967bf4aa27d5714a0b4788f6   (DeepseekV4ForCausalLM.get_model_defaults)
  [HFCFG] tensorrt_llm/_torch/configs/deepseekv4.py
          @ 173717475a3a117c15f8b5d2becb295f6c96293d   (DeepseekV4Config, kv_lora_rank=448)
  [SMPY]  tensorrt_llm/runtime/kv_cache_manager_v2/_storage_manager.py
          @ 00f6bd61f297eaefd98fcabd562d3a8e3df12a96   (class StorageManager)
  [SMCPP] cpp/tensorrt_llm/batch_manager/kv_cache_manager_v2/storageManager.cpp
          @ 2cdb4523511c9ae64a383b90287e5165f2e75772   (C++ port of the same algorithm)
  [SCPY]  tensorrt_llm/runtime/kv_cache_manager_v2/_storage/_config.py
          @ 1148a82f66d3ca1de3fe385c927297599e68109e   (create_storage_config)
  [SCCPP] cpp/tensorrt_llm/batch_manager/kv_cache_manager_v2/storage/config.cpp
          @ 1148a82f66d3ca1de3fe385c927297599e68109e   (createStorageConfig)
  [CORE]  tensorrt_llm/runtime/kv_cache_manager_v2/_storage/_core.py
          @ 02e3bf9a80685715b7c79ef1b4abb3862b52c228   (CacheLevelStorage.ratio_to_slot_count_list)
  [LC]    tensorrt_llm/runtime/kv_cache_manager_v2/_life_cycle_registry.py
          @ 1548780d8b82c1d5fb3c8052d2127179a88e18b7   (AttnLifeCycle, compute_scratch_range)
  [DSA]   tensorrt_llm/_torch/attention_backend/sparse/dsa/cache_manager.py
          @ 0bbb76d22e61bde633cc5f7733f5194881853501   (DSACacheManager, V3.2 only)

The files come from different stored commits (see FINDINGS.md, "What could
not be confirmed").  Run `python3 trtllm_oracle.py --self-test`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import OrderedDict
from fractions import Fraction

GiB = 1 << 30
MiB = 1 << 20

# ---------------------------------------------------------------------------
# [PAR] DeepseekV4AttentionType; the role string is f"deepseek_v4_{name.lower()}"
# ---------------------------------------------------------------------------
SWA, CKV, CSCORE, ICKV, ICSCORE, COMPRESS, ICOMPRESS = (
    "SWA", "COMPRESSOR_KV", "COMPRESSOR_SCORE", "INDEXER_COMPRESSOR_KV",
    "INDEXER_COMPRESSOR_SCORE", "COMPRESS", "INDEXER_COMPRESS")
ALL_ATTN = [SWA, CKV, CSCORE, ICKV, ICSCORE, COMPRESS, ICOMPRESS]  # enum order [PAR]
SLIDING = [SWA, CKV, CSCORE, ICKV, ICSCORE]   # [PAR] DEEPSEEK_V4_SLIDING_ATTENTION
NON_SLIDING = [COMPRESS, ICOMPRESS]           # [PAR] DEEPSEEK_V4_NON_SLIDING_ATTENTION
SPARSE_RATIO = 4                              # [PAR] DEEPSEEK_V4_SPARSE_RATIO
OVERLAP_RATIO = 4                             # [PAR] DEEPSEEK_V4_OVERLAP_COMPRESSOR_RATIO


def role(attn):
    return f"deepseek_v4_{attn.lower()}"      # [PAR] DeepseekV4AttentionType.role


def has_attention(ratio, attn):
    """[PAR] compress_ratio_has_attention"""
    is_sparse = ratio == SPARSE_RATIO
    is_compress = ratio > 1
    if attn == SWA:
        return True
    if attn in (COMPRESS, CKV, CSCORE):
        return is_compress
    if attn in (ICOMPRESS, ICKV, ICSCORE):
        return is_sparse
    raise ValueError(attn)


def attn_dim(head_dim, index_head_dim, ratio, attn):
    """[CM] get_attn_dim: state_factor = 2 for the overlapping ratio-4 compressor."""
    sf = 2 if ratio == OVERLAP_RATIO else 1
    return {SWA: head_dim, COMPRESS: head_dim, CKV: sf * head_dim, CSCORE: sf * head_dim,
            ICOMPRESS: index_head_dim, ICKV: sf * index_head_dim,
            ICSCORE: sf * index_head_dim}[attn]


# [FOOT] footer-scale ("fp8_ds_mla") token: 448 fp8 + 64 bf16 rope (128 B) + 7 ue8m0 + 1 pad
FOOT_TOKEN_BYTES = 448 + 64 * 2 + (448 // 64 + 1)   # = 584  ([FOOT] TOKEN_BYTES)
NVFP4_VECTOR_SIZE = 16                               # [CM] NVFP4_VECTOR_SIZE


def token_bytes(head_dim, index_head_dim, ratio, attn, fp8_kv, indexer_k_dtype,
                fp8_ds_mla, nvfp4_compress):
    """[CM] get_token_bytes (bytes per *stored* token of one layer / one role)."""
    if not has_attention(ratio, attn):
        raise ValueError("no such attention for this ratio")
    if fp8_ds_mla and attn in (SWA, COMPRESS):
        if head_dim != 448 + 64:       # [CM] footer-scale layout requires head_dim 512
            raise ValueError("footer-scale KV layout requires head_dim 512")
        return FOOT_TOKEN_BYTES
    d = attn_dim(head_dim, index_head_dim, ratio, attn)
    dtype_bytes = 1 if fp8_kv else 2                   # [CM] BF16=2, FP8=1
    if attn in (CKV, CSCORE, ICKV, ICSCORE):
        dtype_bytes = 4                                # [CM] compressor state is fp32
    if attn == ICOMPRESS:
        if indexer_k_dtype == "fp8":
            return d + index_head_dim // 128 * 4       # [CM] fp8 data + one fp32 scale / 128
        if indexer_k_dtype == "fp4":
            return index_head_dim // 2 + index_head_dim // 32   # [CM] e2m1 + ue8m0 / 32
        raise ValueError(indexer_k_dtype)
    if attn == COMPRESS and nvfp4_compress:
        return d // 2 + d // NVFP4_VECTOR_SIZE         # [CM] nvfp4 data + e4m3 scales
    return d * dtype_bytes


def attn_bytes_per_token(hd, ihd, ratio, attn, kv):
    """[CM] _get_attn_bytes_per_token: compressed roles are divided by the ratio."""
    tb = token_bytes(hd, ihd, ratio, attn, kv["fp8"], kv["idx"], kv["ds_mla"], kv["nvfp4"])
    if attn in (COMPRESS, ICOMPRESS):
        tb //= ratio
    return tb


def attn_bytes_per_block(hd, ihd, ratio, attn, kv, tpb):
    """[CM] _get_attn_bytes_per_block: COMPRESS/INDEXER_COMPRESS blocks hold
    tokens_per_block // ratio compressed entries ([CM] compressed_block_sizes)."""
    tb = token_bytes(hd, ihd, ratio, attn, kv["fp8"], kv["idx"], kv["ds_mla"], kv["nvfp4"])
    if attn == COMPRESS and kv["nvfp4"]:
        tb = hd // 2                                   # [CM] data part; scales are a 2nd buffer
    block = tpb // ratio if attn in (COMPRESS, ICOMPRESS) else tpb
    return tb * block


# ---------------------------------------------------------------------------
# Model config -> DeepSeek-V4 sparse attention parameters
# ---------------------------------------------------------------------------
def load_model(path):
    with open(path) as f:
        cfg = json.load(f)
    arch = (cfg.get("architectures") or [""])[0]
    text = cfg.get("text_config")
    if text is not None and "compress_ratios" in text:
        cfg = dict(text, architectures=[arch])
    return cfg


def v4_params(cfg):
    """ModelConfig.from_pretrained (DeepseekV4ForCausalLM branch, stored version of
    tensorrt_llm/_torch/model_config.py, index id 54702305068): compress_ratios from the
    checkpoint, window from `sliding_window`, ratio 0 normalized to 1 (also [ARGS]
    DeepSeekV4SparseAttentionConfig.normalize_compress_ratios)."""
    ratios = [r if r > 0 else 1 for r in cfg["compress_ratios"]]
    window = cfg.get("window_size", cfg.get("sliding_window"))
    # [HFCFG] DeepseekV4Config: kv_lora_rank defaults to 448 (not in config.json);
    # the cache head_dim is kv_lora_rank + qk_rope_head_dim ([UTIL] _create_kv_cache_manager,
    # is_mla branch: head_dim=config.kv_lora_rank + config.qk_rope_head_dim).
    kv_lora_rank = cfg.get("kv_lora_rank", 448)
    head_dim = kv_lora_rank + cfg.get("qk_rope_head_dim", 64)
    return dict(ratios=ratios, window=window, head_dim=head_dim,
                index_head_dim=cfg.get("index_head_dim", 128),
                num_layers=cfg["num_hidden_layers"])


# ---------------------------------------------------------------------------
# [CM] DeepseekV4CacheManager._build_cache_config: manager layers
# ---------------------------------------------------------------------------
def manager_layers(p, kv, tpb, max_draft_len=0):
    """Returns [(layer_idx, ratio, [attn types], window or None, [(attn, bytes/block)])]."""
    ratios, W = p["ratios"], p["window"]
    hd, ihd = p["head_dim"], p["index_head_dim"]

    def win(ratio, attn):                       # [CM] _get_window_size
        if attn == SWA:
            base = W
        elif attn in (CKV, CSCORE, ICKV, ICSCORE):
            base = (2 if ratio == OVERLAP_RATIO else 1) * ratio
        else:
            return None
        return base + max_draft_len

    out = []
    for layer in range(p["num_layers"]):        # pp_layers (pp_size=1, no MTP)
        r = ratios[layer]
        if r == 1:
            groups = [([SWA], win(r, SWA))]
        elif r == SPARSE_RATIO:
            groups = [([SWA], win(r, SWA)),
                      ([COMPRESS, ICOMPRESS], None),
                      ([CKV, CSCORE, ICKV, ICSCORE], win(r, CKV))]
        elif r == 128:
            groups = [([SWA, CKV, CSCORE], win(r, SWA)),
                      ([COMPRESS], None)]
        else:
            # [CM] _build_cache_config: raise ValueError(f"Unsupported DeepSeek-V4 compress ratio {r}.")
            raise SystemExit(f"REFUSED: Unsupported DeepSeek-V4 compress ratio {r}.")
        for attns, w in groups:
            bufs = [(a, attn_bytes_per_block(hd, ihd, r, a, kv, tpb)) for a in attns]
            if kv["nvfp4"] and COMPRESS in attns:   # [CM] extra COMPRESS_BLOCK_SCALE_ROLE buffer
                bufs.append(("COMPRESS_BLOCK_SCALE", (tpb // r) * hd // NVFP4_VECTOR_SIZE))
            out.append((layer, r, attns, w, bufs))
    return out


# ---------------------------------------------------------------------------
# [SCPY]/[SCCPP] create_storage_config: life cycles, coalesced buffers, pool groups
# ---------------------------------------------------------------------------
def storage_config(mlayers, order="cpp"):
    # [LC] AttnLifeCycle.make: key = (window_size, num_sink_blocks=0); registry ids by first use.
    lc_ids = OrderedDict()
    for (_, _, _, w, _) in mlayers:
        lc_ids.setdefault(w, len(lc_ids))
    # group buffers by life cycle then by single-buffer size ([SCPY] buffer_groups)
    groups = {lc: OrderedDict() for lc in lc_ids.values()}
    layer_of = []
    for mid, (layer, r, attns, w, bufs) in enumerate(mlayers):
        lc = lc_ids[w]
        layer_of.append(lc)
        for (a, size) in bufs:
            groups[lc].setdefault(size, []).append((mid, a))
    variants = []
    for lc, size_map in groups.items():
        cbs = [(size, ids) for size, ids in size_map.items()]
        cbs.sort(key=lambda c: c[0] * len(c[1]), reverse=True)   # by coalesced size, desc
        variants.append((lc, cbs))
    # merge life cycles with identical slot_size_list into one pool group
    by_sizes = OrderedDict()
    for lc, cbs in variants:
        key = tuple(s * len(ids) for s, ids in cbs)
        by_sizes.setdefault(key, []).append((lc, cbs))
    keys = list(by_sizes.keys())
    if order == "cpp":
        # [SCCPP] std::map<std::vector<size_t>, ...>: pool groups ordered by the
        # lexicographically ascending slot-size vector (the code comment says this
        # can differ from Python's insertion order).
        keys.sort()
    pools = [(k, by_sizes[k]) for k in keys]
    windows = {v: k for k, v in lc_ids.items()}
    return pools, windows, layer_of


def slot_util_frac_max(pools):
    """[SCPY] StorageConfig.layer_attributes / [SMPY] _slot_util_frac_max per life cycle."""
    frac = {}
    for _, variants in pools:
        for lc, cbs in variants:
            per_layer = {}
            for size, ids in cbs:
                n = len(ids)
                cnt = {}
                for (mid, _) in ids:
                    cnt[mid] = cnt.get(mid, 0) + 1
                for mid, c in cnt.items():
                    per_layer[mid] = max(per_layer.get(mid, Fraction(0)), Fraction(c, n))
            frac[lc] = max(per_layer.values())
    return frac


# ---------------------------------------------------------------------------
# [LC] stale / scratch ranges
# ---------------------------------------------------------------------------
def cdiv(a, b):
    return -(-a // b)


def stale_len(window, history, tpb):
    """[LC] AttnLifeCycle.get_stale_range (num_sink_blocks = 0)."""
    if window is None:
        return 0
    return max(0, (history + 1 - window) // tpb)       # range [0, end)


def scratch_len(window, history, capacity, tpb, max_rewind):
    """[LC] compute_scratch_range = stale_at_capacity ∩ [ceil(h/tpb), ceil(cap/tpb))."""
    if window is None:
        return 0
    nr = max(0, capacity - max_rewind)
    cap_end = max(0, (nr + 1 - window) // tpb)
    beg, end = cdiv(history, tpb), cdiv(capacity, tpb)
    return max(0, min(cap_end, end) - max(0, beg))


# ---------------------------------------------------------------------------
# [SMPY]/[SMCPP] StorageManager: ratio from typical batch, min slots from constraints
# ---------------------------------------------------------------------------
def slots_for_batch(batch, pools, windows, tpb, scratch, frac):
    """[SMPY] _compute_slots_for_batch (system_prompt_length = 0)."""
    out = []
    for _, variants in pools:
        n = 0
        for lc, _ in variants:
            w = windows[lc]
            for cap, hist in batch:
                non_stale = cdiv(cap, tpb) - stale_len(w, hist, tpb)
                unique = max(0, non_stale)
                if scratch is not None:
                    s = scratch_len(w, hist, cap, tpb, scratch)
                    n += (unique - s) + math.ceil(s * frac[lc])
                else:
                    n += unique
        out.append(n)
    return out


def round_up(x, g):
    return cdiv(x, g) * g


def slots_to_bytes(slots, pools, g):
    """[SMPY] _slots_to_bytes: each pool rounded up to the granularity."""
    return [sum(round_up(n * s, g) for s in key) for n, (key, _) in zip(slots, pools)]


def gpu_granularity(quota):
    """[SMPY]/[SMCPP] CacheLevelManager.cache_tier_granularity (GPU):
    2 MiB << min(4, max(0, int(log2(quota / 1 GiB))))."""
    page = 2 << 20
    return page << min(4, max(0, int(math.log(quota / (page * 512), 2))))


def _round_half(x, mode):
    if mode == "cpp":                      # std::round: half away from zero
        return int(math.floor(x + 0.5))
    return round(x)                        # Python banker's rounding


def grains_for_slots(n, sizes, g):
    """[CORE] _grains_for_slots"""
    return sum(cdiv(n * s, g) for s in sizes)


def grains_to_slots(pg_grains, sizes, g, mode):
    """[CORE] _grains_to_slots"""
    min_pool = [cdiv(s, g) for s in sizes]
    if pg_grains < sum(min_pool):
        return 0, 0
    num = 1 << 63
    remaining = pg_grains
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for j, pi in enumerate(order):
        s = sizes[pi]
        pool_grains = max(min_pool[pi],
                          _round_half(remaining * (s / sum(sizes[k] for k in order[j:])), mode))
        num = min(num, pool_grains * g // s)
        remaining -= pool_grains
    lo, step = num, 1
    hi = lo + step
    while grains_for_slots(hi, sizes, g) <= pg_grains:
        lo = hi
        step *= 2
        hi = lo + step
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if grains_for_slots(mid, sizes, g) <= pg_grains:
            lo = mid
        else:
            hi = mid
    return lo, grains_for_slots(lo, sizes, g)


def ratio_to_slot_count_list(quota, size_lists, ratio, g, min_slots, mode):
    """[CORE] CacheLevelStorage.ratio_to_slot_count_list (mirrored in C++)."""
    assert all(x > 0 for x in ratio) and quota % g == 0
    remaining = quota // g
    cnt = [0] * len(size_lists)
    active = list(range(len(size_lists)))
    while active:
        ar = [ratio[pg] for pg in active]
        slots = [0] * len(active)
        budget = remaining
        idx = sorted(range(len(active)), key=lambda i: ar[i])
        for i, k in enumerate(idx):
            pct = ar[k] / sum(ar[j] for j in idx[i:])
            s, used = grains_to_slots(_round_half(budget * pct, mode), size_lists[active[k]], g, mode)
            slots[k] = s
            budget -= used
        constrained = [k for k in range(len(active)) if slots[k] <= min_slots[active[k]]]
        unconstrained = [k for k in range(len(active)) if slots[k] > min_slots[active[k]]]
        if not constrained:
            for k in range(len(active)):
                cnt[active[k]] = slots[k]
            break
        for k in constrained:
            pg = active[k]
            s, used = grains_to_slots(grains_for_slots(min_slots[pg], size_lists[pg], g),
                                      size_lists[pg], g, mode)
            cnt[pg] = s
            remaining -= used
        if not unconstrained:
            break
        if remaining <= 0:
            raise SystemExit("REFUSED: Insufficient quota to satisfy min_slots constraints")
        active = [active[k] for k in unconstrained]
    for pg in range(len(size_lists)):       # bump while still within the same grains
        now = grains_for_slots(cnt[pg], size_lists[pg], g)
        while grains_for_slots(cnt[pg] + 1, size_lists[pg], g) <= now:
            cnt[pg] += 1
    return cnt


# ---------------------------------------------------------------------------
# [CM] quota <-> tokens helpers of DeepseekV4CacheManager
# ---------------------------------------------------------------------------
def non_sliding_per_token(p, kv):
    """[CM] _estimate_non_sliding_attn_size_per_token"""
    return sum(attn_bytes_per_token(p["head_dim"], p["index_head_dim"], r, a, kv)
               for r in p["ratios"][:p["num_layers"]] for a in NON_SLIDING if has_attention(r, a))


def swa_cache_size(p, kv, tpb, context, scratch):
    """[CM] _estimate_swa_cache_size -> (size_per_token, size_per_request)"""
    per_tok = per_req = 0
    keys = set()
    for r in p["ratios"][:p["num_layers"]]:
        for a in SLIDING:
            if not has_attention(r, a):
                continue
            w = p["window"] if a == SWA else (2 if r == OVERLAP_RATIO else 1) * r
            if w is None or w <= 0:
                continue
            wt = cdiv(w, tpb) * tpb
            tb = attn_bytes_per_token(p["head_dim"], p["index_head_dim"], r, a, kv)
            if not context:
                per_req += wt * tb
            elif not scratch:
                per_tok += tb
            else:
                if (a, r) in keys:
                    per_req += wt * tb
                else:
                    keys.add((a, r))
                    per_tok += tb
    return per_tok, per_req


PADDING = len(ALL_ATTN) * (2 << 20)   # [CM] _get_extra_quota_padding: 7 * 2 MiB


def quota_from_max_tokens(p, kv, tpb, max_tokens, B, max_num_tokens, scratch_on):
    """[CM] DeepseekV4CacheManager._get_quota_from_max_tokens"""
    ns = non_sliding_per_token(p, kv)
    ctx_tok, _ = swa_cache_size(p, kv, tpb, True, scratch_on)
    gen_tok, gen_req = swa_cache_size(p, kv, tpb, False, False)
    mct = max_num_tokens if max_num_tokens is not None else max_tokens
    ctx_tokens = min(max_tokens, mct)
    gen_tokens = max_tokens - ctx_tokens
    gen_quota = max_tokens * ns + gen_tokens * gen_tok + B * gen_req
    return int(gen_quota + ctx_tokens * ctx_tok + PADDING)


def max_tokens_from_quota(p, kv, tpb, quota, B, max_num_tokens, scratch_on):
    """[CM] DeepseekV4CacheManager._get_max_tokens_from_quota"""
    ns = non_sliding_per_token(p, kv)
    ctx_tok, _ = swa_cache_size(p, kv, tpb, True, scratch_on)
    gen_tok, gen_req = swa_cache_size(p, kv, tpb, False, False)
    per_batch = B * gen_req + PADDING
    if quota < per_batch:
        return 0
    ctx_per_tok = ns + ctx_tok
    if max_num_tokens is None:
        return (quota - per_batch) / ctx_per_tok
    lim = max_num_tokens * ctx_per_tok + per_batch
    if quota <= lim:
        return (quota - per_batch) / ctx_per_tok
    gpt = ns + gen_tok
    return float("inf") if gpt <= 0 else max_num_tokens + (quota - lim) / gpt


def cache_size_per_token(p, kv, tpb, B):
    """[CM] get_cache_size_per_token (used by [UTIL] KvCacheCreator): (slope, intercept)."""
    ns = non_sliding_per_token(p, kv)
    swa_tok, swa_req = swa_cache_size(p, kv, tpb, False, False)
    return ns + swa_tok, swa_req * B


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------
def compute_v4(cfg, *, budget=None, free_bytes=None, fraction=0.9, tpb=128,
               kv_dtype="auto", indexer_k_dtype=None, sm=100, max_tokens=None,
               max_seq_len=None, max_batch_size=2048, max_num_tokens=8192,
               avg_seq_len=None, scratch=True, max_util=0.95, order="cpp",
               host_quota=None):
    p = v4_params(cfg)
    logs, refusals = [], []
    # ---- refusals ([CM] DeepseekV4CacheManager.__init__, [ARGS]) ----
    if len(p["ratios"]) < p["num_layers"]:
        refusals.append("The length of compress ratios must be >= the number of layers")
    if tpb not in (128, 256):
        refusals.append(f"DeepseekV4CacheManager requires tokens_per_block in [128, 256], got {tpb}. "
                        "Set kv_cache_config.tokens_per_block to 128 or 256.")
    fp8_ds_mla = kv_dtype == "fp8_ds_mla"
    if sm == 90 and not fp8_ds_mla:
        refusals.append("DeepSeek-V4 on Hopper requires kv_cache_config.dtype='fp8_ds_mla'; "
                        f"got {kv_dtype!r}.")
    if fp8_ds_mla and sm != 90 and tpb != 256:
        refusals.append(f"DeepSeek-V4 fp8_ds_mla KV cache requires tokens_per_block=256 on SM{sm}, got {tpb}.")
    if indexer_k_dtype is None:
        # [ARGS] DeepSeekV4SparseAttentionConfig: default 'fp4'; on SM<100 the *default*
        # falls back to 'fp8' with a warning ("DeepSeek-V4 defaults indexer_k_dtype to 'fp4', ...").
        indexer_k_dtype = "fp4" if sm >= 100 else "fp8"
    elif indexer_k_dtype == "fp4" and sm < 100:
        refusals.append(f"indexer_k_dtype='fp4' requires SM>=100 (Blackwell); current device is SM{sm}. "
                        "Set indexer_k_dtype='fp8' for non-Blackwell GPUs.")
    if indexer_k_dtype == "fp4" and p["index_head_dim"] != 128:
        refusals.append("FP4 indexer K cache requires index_head_dim=128")
    if max_seq_len is None:
        max_seq_len = cfg.get("max_position_embeddings")
    if avg_seq_len is not None and avg_seq_len > max_seq_len:
        refusals.append(f"kv_cache_config.avg_seq_len ({avg_seq_len}) must be less than or equal "
                        f"to max_seq_len ({max_seq_len})")     # [V2] _build_base_config
    if budget is None and free_bytes is None and max_tokens is None:
        refusals.append("Quota not set. Check kv_cache_config.max_tokens or kv_cache_config.max_gpu_total_bytes")
    for r in set(p["ratios"]):
        if r not in (1, 4, 128):
            refusals.append(f"Unsupported DeepSeek-V4 compress ratio {r}.")
    if refusals:
        return dict(refusals=refusals)

    # ---- kv dtype ([UTIL] _create_kv_cache_manager: FP8 if has_fp8_kv_cache, NVFP4 if
    # has_fp4_kv_cache, else model dtype (bf16); [CM]: NVFP4 -> cache dtype FP8 + nvfp4 COMPRESS).
    kv = dict(fp8=kv_dtype in ("fp8", "nvfp4"), idx=indexer_k_dtype,
              ds_mla=fp8_ds_mla, nvfp4=kv_dtype == "nvfp4")

    # ---- KvCacheCreator: budget ([UTIL] _cal_max_memory / configure_kv_cache_capacity) ----
    slope, intercept = cache_size_per_token(p, kv, tpb, max_batch_size)
    if budget is None and free_bytes is not None:
        # available_kv_mem = (total_gpu_memory - peak_memory + allocated_bytes) * fraction;
        # here free_bytes stands for (total - peak + allocated).
        budget = int(free_bytes * fraction)
        logs.append(f"available KV cache memory when calculating max tokens: {budget / GiB:.2f} GiB, "
                    f"fraction is set {fraction}, kv size per token is {slope} bytes/token + "
                    f"{intercept} bytes fixed cost.")
    if budget is not None:
        logs.append(f"Estimated max memory in KV cache : {budget / GiB:.2f} GiB")

    # ---- KVCacheManagerV2.__init__ quota ([V2]) ----
    quota = sys.maxsize
    if budget is not None and budget > 0:
        quota = int(budget)
        logs.append(f"max_gpu_total_bytes is provided. New quota is {quota / GiB}GiB")
    if max_tokens is not None:
        qmt = int(math.ceil(quota_from_max_tokens(p, kv, tpb, max_tokens, max_batch_size,
                                                  max_num_tokens, scratch) / max_util))
        quota = min(quota, qmt)
        logs.append(f"max_tokens {max_tokens} is provided. Allowed quota from max_tokens is "
                    f"{qmt / GiB}GiB. New quota is {quota / GiB}GiB")
    logs.append(f"KV cache manager v2 device quota set to {quota / GiB}GiB")
    if host_quota:
        logs.append(f"KV cache manager v2 host cache quota set to {host_quota / GiB:.2f}GiB")

    # ---- layers / storage config ----
    ml = manager_layers(p, kv, tpb)
    pools, windows, layer_of = storage_config(ml, order)
    frac = slot_util_frac_max(pools)
    size_lists = [list(k) for k, _ in pools]

    # ---- typical step & constraints ([V2] _build_base_config; [CM] _get_typical_seq_len) ----
    extra = 0          # num_extra_kv_tokens (no speculative decoding)
    draft = 0
    tsl = avg_seq_len if avg_seq_len is not None else max_seq_len
    typical = [(max_num_tokens + extra, 0)] + [(tsl, max(0, tsl - draft - 1))] * (max_batch_size - 1)
    constraints = [
        [(max_seq_len, max_seq_len - 1)] + [(1 + draft + extra, 0)] * (max_batch_size - 1),
        [(max_num_tokens + extra, 0)],
    ]
    sc = extra if scratch else None      # SwaScratchReuseConfig(max_rewind_len=num_extra_kv_tokens)

    # ---- StorageManager.__init__ ([SMPY]/[SMCPP]) ----
    g = gpu_granularity(quota)
    min_slots = [len(v) for _, v in pools]           # floor: 1 per life cycle in the group
    for b in constraints:
        s = slots_for_batch(b, pools, windows, tpb, sc, frac)
        min_slots = [max(a, c) for a, c in zip(min_slots, s)]
    typ_slots = slots_for_batch(typical, pools, windows, tpb, sc, frac)
    typ_bytes = slots_to_bytes(typ_slots, pools, g)
    ratio = [x / sum(typ_bytes) for x in typ_bytes]
    min_quota = sum(round_up(m * s, g) for m, sl in zip(min_slots, size_lists) for s in sl)
    eff_quota = max(min_quota, round_up(quota, g))     # _compute_slot_count_for_level
    slots = ratio_to_slot_count_list(eff_quota, size_lists, ratio, g, min_slots, order)

    host = None
    if host_quota:
        hg = 4096     # [SMCPP] cacheTierGranularity(HOST_MEM) = HostMem::kAlignment (4 KiB)
        hmin = sum(round_up(m * s, hg) for m, sl in zip(min_slots, size_lists) for s in sl)
        hq = max(hmin, round_up(host_quota, hg))
        host = ratio_to_slot_count_list(hq, size_lists, ratio, hg, min_slots, order)

    # ---- report ----
    groups = []
    total_logical = total_phys = 0
    for pg, ((key, variants), n) in enumerate(zip(pools, slots)):
        pl = []
        for lc, cbs in variants:
            for size, ids in cbs:
                kinds = sorted({a for _, a in ids})
                logical = n * size * len(ids)
                phys = cdiv(logical, g) * g   # GpuSlotPool: whole physical pages of `g` bytes
                total_logical += logical
                total_phys += phys
                pl.append(dict(life_cycle=lc, window=windows[lc], bytes_per_block=size * len(ids),
                               single_buffer_bytes=size, num_buffers=len(ids), roles=kinds,
                               logical_bytes=logical, physical_bytes=phys))
        groups.append(dict(pool_group=pg, blocks=n, min_blocks=min_slots[pg],
                           host_blocks=None if host is None else host[pg],
                           windows=[windows[lc] for lc, _ in variants], pools=pl,
                           bytes_per_block=sum(key)))

    full_pg = [i for i, gr in enumerate(groups) if None in gr["windows"]]
    tokens_history = slots[full_pg[0]] * tpb if full_pg else None
    per_seq = {}
    for i, gr in enumerate(groups):
        ws = [w for w in gr["windows"] if w is not None]
        if ws:
            worst = max(cdiv(h + 1, tpb) - stale_len(max(ws), h, tpb) for h in range(max(ws), max(ws) + 2 * tpb))
            per_seq[i] = worst
    conc = min((slots[i] // b for i, b in per_seq.items()), default=None)

    # [V2] _log_kv_cache_pool_lifecycle_mapping + [CM] _format_kv_cache_pool_lifecycle_entry
    lc2pg = {lc: pg for pg, (_, variants) in enumerate(pools) for lc, _ in variants}
    entries = OrderedDict()
    for mid, (layer, r, attns, w, bufs) in enumerate(ml):
        lc = layer_of[mid]
        for a, _ in bufs:
            name = a if a != "COMPRESS_BLOCK_SCALE" else COMPRESS
            rl = role(a) if a != "COMPRESS_BLOCK_SCALE" else "deepseek_v4_compress_block_scale"
            entries.setdefault(f"deepseek_role={name}, compress_ratio={r}, role={rl}, "
                               f"pool_group_id={lc2pg[lc]}, layer_group_id={lc}", None)
    logs.append(f"KVCacheManagerV2: IndexMapper capacity={max_batch_size + 1} (max_num_sequences="
                f"{max_batch_size}, is_disagg=False, num_reserved_index_slots=1, max_beam_width=1)")
    logs.append("DeepseekV4CacheManager role-to-pool/lifecycle mapping:")
    logs.extend(entries.keys())

    return dict(
        refusals=[], quota=quota, granularity=g, effective_quota=eff_quota,
        min_quota=min_quota, typical_slots=typ_slots, ratio=ratio, min_slots=min_slots,
        blocks=slots, groups=groups, total_logical_bytes=total_logical,
        total_physical_bytes=total_phys, tokens_of_compressed_history=tokens_history,
        max_concurrent_long_sequences=conc,
        dsv4_max_tokens_from_quota=max_tokens_from_quota(p, kv, tpb, quota, max_batch_size,
                                                         max_num_tokens, scratch),
        cache_size_per_token=(slope, intercept), non_sliding_per_token=non_sliding_per_token(p, kv),
        indexer_k_dtype=indexer_k_dtype, logs=logs)


def compute_v32(cfg, *, budget, tpb=64, kv_dtype="auto", indexer_k_dtype="fp8"):
    """Rough V3.2 (DSA) path: V1 manager.  [DSA] DSACacheManager.get_cache_size_per_token:
    bytes/token = L * (kv_lora_rank+qk_rope) * dtype_bytes + L_idx * (data + 4 scale bytes);
    [UTIL] V1: max_tokens = CacheCost.tokens_for_budget(budget) = budget // slope;
    C++ V1 (older kvCacheManager.cpp, index id 36939959573): blocks = ceilDiv(maxTokens, tpb).
    NOT CONFIRMED for the current C++ code (per-window-size share logic)."""
    L = cfg["num_hidden_layers"]
    hd = cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]
    ihd = cfg.get("index_head_dim", 128)
    per_layer = hd * (1 if kv_dtype == "fp8" else 2)
    idx = (ihd // 2 if indexer_k_dtype == "fp4" else ihd) + ihd // 128 * 4
    slope = L * per_layer + L * idx
    max_tokens = budget // slope
    blocks = cdiv(max_tokens, tpb)
    logs = [f"Number of blocks in KV cache primary pool: {blocks}",
            f"Number of tokens per block: {tpb}.",
            f"[MemUsageChange] Allocated {blocks * tpb * slope / GiB:.2f} GiB for max tokens in paged KV cache ({blocks * tpb})."]
    return dict(bytes_per_token=slope, max_tokens=max_tokens, blocks=blocks, logs=logs)


# ---------------------------------------------------------------------------
# Self test: three hand-computed cases
# ---------------------------------------------------------------------------
FLASH = {"num_hidden_layers": 43, "head_dim": 512, "qk_rope_head_dim": 64, "index_head_dim": 128,
         "sliding_window": 128, "max_position_embeddings": 1048576,
         "compress_ratios": [0, 0] + [4, 128] * 20 + [4, 0]}
PRO = {"num_hidden_layers": 61, "head_dim": 512, "qk_rope_head_dim": 64, "index_head_dim": 128,
       "sliding_window": 128, "max_position_embeddings": 1048576,
       "compress_ratios": [128, 128] + [4, 128] * 29 + [4, 0]}


def self_test():
    ok = True

    def check(name, got, want):
        nonlocal ok
        flag = "ok " if got == want else "FAIL"
        ok &= got == want
        print(f"[{flag}] {name}: got {got} want {want}")

    # ---------------- Case 1: V4-Flash, BF16 latent, FP4 indexer, tpb=128 -------------
    # Layers: 0,1 -> ratio 1 (checkpoint 0); 2,4..42 -> ratio 4 (21 layers);
    #         3,5..41 -> ratio 128 (20 layers).  head_dim = 448 + 64 = 512.
    # Bytes per block (tpb=128):
    #   SWA        512*2*128           = 131072 x 43 layers = 5636096
    #   CKV/CS@128 512*4*128 each      = 262144 x 40        = 10485760   (window 128 -> same LC as SWA)
    #   CKV/CS@4   2*512*4*128 each    = 524288 x 42        = 22020096   (window 2*4 = 8)
    #   ICKV/ICS@4 2*128*4*128 each    = 131072 x 42        = 5505024
    #   COMPRESS@4 512*2*(128/4=32)    = 32768  x 21        = 688128     (window None)
    #   IDX@4 fp4  (64+4)*32           = 2176   x 21        = 45696
    #   COMPRESS@128 512*2*(128/128=1) = 1024   x 20        = 20480
    # Non-sliding bytes/token: 21*(1024//4 + 68//4) + 20*(1024//128) = 21*273 + 160 = 5893.
    # SWA per request (context=False): 128 * (43*1024 + 20*4096 + 21*10240) = 128*340992 = 43646976.
    # Context SWA per token with scratch: 3*1024 (SWA @1,@4,@128) + 4096 + 10240 = 17408.
    # quota_from_max_tokens(100000, B=2048, max_num_tokens=8192):
    #   100000*5893 + 2048*43646976 + 8192*17408 + 7*2MiB
    #   = 589300000 + 89389006848 + 142606336 + 14680064 = 90135593248
    p = v4_params(FLASH)
    kv = dict(fp8=False, idx="fp4", ds_mla=False, nvfp4=False)
    pools, windows, _ = storage_config(manager_layers(p, kv, 128), "python")
    check("flash slot size lists (python order: SWA, full, cmp4)",
          [list(k) for k, _ in pools],
          [[10485760, 5636096], [688128, 45696, 20480], [22020096, 5505024]])
    check("flash windows per life cycle", [windows[lc] for _, v in pools for lc, _ in v], [128, None, 8])
    check("flash non-sliding bytes/token", non_sliding_per_token(p, kv), 5893)
    check("flash SWA bytes/request", swa_cache_size(p, kv, 128, False, False), (0, 43646976))
    check("flash ctx SWA bytes/token (scratch)", swa_cache_size(p, kv, 128, True, True)[0], 17408)
    check("flash quota_from_max_tokens(100000)",
          quota_from_max_tokens(p, kv, 128, 100000, 2048, 8192, True), 90135593248)
    pools_c, _, _ = storage_config(manager_layers(p, kv, 128), "cpp")
    check("flash pool-group order in C++ backend (ascending slot-size vector)",
          [list(k) for k, _ in pools_c],
          [[688128, 45696, 20480], [10485760, 5636096], [22020096, 5505024]])

    # ---------------- Case 2: V4-Flash, quota 1 GiB (below the min), B=1 ---------------
    # granularity: log2(1GiB / (2MiB*512)) = 0 -> 2 MiB.
    # typical step [KV(cap=8192, hist=0)]: 64 blocks in every life cycle (nothing stale).
    # constraints [KV(8192, 8191)] -> SWA 1, full 64, cmp4 1; [KV(8192, 0)] -> 64 each
    #   => min_slots = [64, 64, 64].
    # bytes for 64 slots, each pool rounded up to 2 MiB:
    #   SWA LC : 64*10 MiB=640 MiB + 64*5.375 MiB=344 MiB          = 984 MiB
    #   full LC: 64*688128=42 MiB + 64*45696=2.79->4 MiB + 1.25->2 MiB = 48 MiB
    #   cmp4 LC: 64*21 MiB=1344 MiB + 64*5.25 MiB=336 MiB           = 1680 MiB
    # min_quota = 2712 MiB > round_up(1 GiB) -> effective quota 2712 MiB (1356 grains).
    # Distribution by ratio 48:984:1680 gives exactly 24/492/840 grains = 64 slots each,
    # all <= min_slots -> pinned to 64.  => blocks [64, 64, 64], 2712 MiB allocated.
    r = compute_v4(FLASH, budget=1 * GiB, max_seq_len=8192, max_batch_size=1,
                   max_num_tokens=8192, scratch=False, order="python", sm=100)
    check("case2 granularity", r["granularity"], 2 * MiB)
    check("case2 min_slots", r["min_slots"], [64, 64, 64])
    check("case2 min_quota", r["min_quota"], 2712 * MiB)
    check("case2 blocks", r["blocks"], [64, 64, 64])
    check("case2 physical bytes", r["total_physical_bytes"], 2712 * MiB)

    # ---------------- Case 3: V4-Pro, FP8 latent, FP8 indexer, quota 8 GiB, B=1 --------
    # Pro: ratio 128 on layers 0,1,3,5..59 (31), ratio 4 on 2,4..60 (30); no ratio-1 layer.
    # Bytes per block: SWA 512*128=65536 x61 = 3997696; CKV/CS@128 262144 x62 = 16252928;
    #   CKV/CS@4 524288 x60 = 31457280; ICKV/ICS@4 131072 x60 = 7864320;
    #   COMPRESS@4 512*32=16384 x30 = 491520; IDX fp8 132*32=4224 x30 = 126720;
    #   COMPRESS@128 512*1 x31 = 15872.
    # granularity: log2(8) = 3 -> 16 MiB; 8 GiB = 512 grains.
    # typical [KV(8192,0)] -> 64 slots each; bytes rounded to 16 MiB:
    #   SWA 992+256=1248 MiB, full 32+16+16=64 MiB, cmp4 1920+480=2400 MiB.
    # min_slots [64,64,64]; min_quota 3712 MiB < 8 GiB.
    # full : round(512*64/3712=8.83)=9 grains -> max n with ceil(15n/512)+ceil(126720n/16Mi)
    #        +ceil(15872n/16Mi) <= 9 -> n=204 (6+2+1); budget 503.
    # SWA  : round(503*1248/3648=172.08)=172 -> ceil(31n/32)+ceil(61n/256)<=172 -> n=142
    #        (138+34); budget 331.
    # cmp4 : 331 -> ceil(1.875n)+ceil(0.46875n)<=331 -> n=140 (263+66=329).
    # All > 64 -> accepted.  Python order [SWA, full, cmp4] = [142, 204, 140].
    # Compressed history that fits: 204 * 128 = 26112 tokens.
    r = compute_v4(PRO, budget=8 * GiB, kv_dtype="fp8", indexer_k_dtype="fp8",
                   max_seq_len=8192, max_batch_size=1, max_num_tokens=8192,
                   scratch=False, order="python", sm=100)
    check("case3 granularity", r["granularity"], 16 * MiB)
    check("case3 slot sizes", [g["bytes_per_block"] for g in r["groups"]],
          [16252928 + 3997696, 491520 + 126720 + 15872, 31457280 + 7864320])
    check("case3 blocks", r["blocks"], [142, 204, 140])
    check("case3 tokens of compressed history", r["tokens_of_compressed_history"], 26112)
    print("SELF-TEST", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config", nargs="?", help="path to config.json")
    ap.add_argument("--budget-bytes", type=int, help="KV cache GPU budget (max_gpu_total_bytes)")
    ap.add_argument("--free-bytes", type=int,
                    help="total - peak + allocated GPU bytes (KvCacheCreator._cal_max_memory)")
    ap.add_argument("--fraction", type=float, default=0.9, help="free_gpu_memory_fraction (default 0.9)")
    ap.add_argument("--tokens-per-block", type=int, default=128,
                    help="default 128 = DeepseekV4ForCausalLM.get_model_defaults")
    ap.add_argument("--kv-dtype", default="auto", choices=["auto", "bf16", "fp8", "fp8_ds_mla", "nvfp4"])
    ap.add_argument("--indexer-k-dtype", choices=["fp8", "fp4"])
    ap.add_argument("--sm", type=int, default=100, help="GPU SM version (90 = H100/H200)")
    ap.add_argument("--max-tokens", type=int, help="kv_cache_config.max_tokens")
    ap.add_argument("--max-seq-len", type=int)
    ap.add_argument("--max-batch-size", type=int, default=2048)
    ap.add_argument("--max-num-tokens", type=int, default=8192)
    ap.add_argument("--avg-seq-len", type=int)
    ap.add_argument("--no-scratch", action="store_true", help="enable_swa_scratch_reuse=False")
    ap.add_argument("--max-util-for-resume", type=float, default=0.95)
    ap.add_argument("--order", choices=["cpp", "python"], default="cpp")
    ap.add_argument("--host-quota", type=int, help="host (secondary) tier bytes")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args(argv)
    if a.self_test:
        return self_test()
    if not a.config:
        ap.error("config path required")
    cfg = load_model(a.config)
    arch = (cfg.get("architectures") or [""])[0]
    if arch.startswith("DeepseekV41") or "kv_source_layer_ids" in cfg:
        # TensorRT-LLM has a separate DeepSeek-V4.1 path (modeling_deepseekv41.py,
        # DeepSeekV4SparseAttentionConfig(variant="v41", kv_source_layer_ids=...)); it was
        # not read, so it is not modeled here.
        print("NOT MODELED: DeepSeek-V4.1 uses a separate TensorRT-LLM path that was not read.")
        return 3
    if "compress_ratios" not in cfg:
        budget = a.budget_bytes if a.budget_bytes is not None else int((a.free_bytes or 0) * a.fraction)
        r = compute_v32(cfg, budget=budget, tpb=a.tokens_per_block,
                        kv_dtype="fp8" if a.kv_dtype == "fp8" else "auto",
                        indexer_k_dtype=a.indexer_k_dtype or "fp8")
    else:
        r = compute_v4(cfg, budget=a.budget_bytes, free_bytes=a.free_bytes, fraction=a.fraction,
                       tpb=a.tokens_per_block, kv_dtype="auto" if a.kv_dtype == "bf16" else a.kv_dtype,
                       indexer_k_dtype=a.indexer_k_dtype, sm=a.sm, max_tokens=a.max_tokens,
                       max_seq_len=a.max_seq_len, max_batch_size=a.max_batch_size,
                       max_num_tokens=a.max_num_tokens, avg_seq_len=a.avg_seq_len,
                       scratch=not a.no_scratch, max_util=a.max_util_for_resume,
                       order=a.order, host_quota=a.host_quota)
    if a.json:
        print(json.dumps(r, indent=1, default=str))
        return 0
    if r.get("refusals"):
        for x in r["refusals"]:
            print("REFUSED:", x)
        return 2
    for k, v in r.items():
        if k in ("logs", "groups"):
            continue
        print(f"{k}: {v}")
    for gr in r.get("groups", []):
        print(f"pool group {gr['pool_group']}: windows={gr['windows']} blocks={gr['blocks']} "
              f"(min {gr['min_blocks']}, host {gr['host_blocks']}) bytes/block={gr['bytes_per_block']}")
        for pl in gr["pools"]:
            print(f"   pool: {pl['num_buffers']} x {pl['single_buffer_bytes']} B = "
                  f"{pl['bytes_per_block']} B/block roles={pl['roles']} "
                  f"logical={pl['logical_bytes']} physical={pl['physical_bytes']}")
    print("--- startup log lines (reconstructed) ---")
    for line in r["logs"]:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
