#!/usr/bin/env python3
"""Independent oracle of how the inference engine tokenspeed (github.com/lightseekorg/tokenspeed)
sizes its KV-cache parent ("LCM") arena for DeepSeek V4 models. Standard library only
(Python 3.11).

Written only from tokenspeed's own source (snapshot HEAD f4d8ec6e039c028c7ee71317ccfb84e56ae2b45c,
2026-08-22), apart from this project's C++ (include/, tools/, src/ were not read). Each rule names
the tokenspeed file, function and the commit that last touched the file
(`git log -1 --format=%H -- <path>` in that snapshot). Paths are relative to the tokenspeed root;
"recipes/" means python/tokenspeed/runtime/layers/attention/kv_cache/recipes/, "attention/" means
python/tokenspeed/runtime/layers/attention/.

Commits (last change to each file):
  attention/registry.py                         074049d4328171efc0cb3855cdfb72b9c3dacd2e
  recipes/deepseek_v4.py                        c731cb889dd9b9d697d92c7580a26408305f886b
  recipes/base.py                               c731cb889dd9b9d697d92c7580a26408305f886b
  recipes/spec.py                               c731cb889dd9b9d697d92c7580a26408305f886b
  recipes/setup.py                              c731cb889dd9b9d697d92c7580a26408305f886b
  recipes/plan.py                               6083537ed3a712d49eb30ce1170dd28c1d037f70
  recipes/__init__.py                           f0e1d68e43a103ff7d8cd9c38639e14c4982b2e8
  attention/deepseek_v4_geometry.py             6083537ed3a712d49eb30ce1170dd28c1d037f70
  attention/kernel_page_sizes.py                ed545eacce6f8429d0b43b0dd30ded373aabb59c
  attention/configs/mla.py                      6083537ed3a712d49eb30ce1170dd28c1d037f70
  python/tokenspeed/runtime/configs/model_config.py      6083537ed3a712d49eb30ce1170dd28c1d037f70
  python/tokenspeed/runtime/utils/server_args.py         eaf9e503bbfda773a4749500e973c68538247ee2
  python/tokenspeed/runtime/utils/hf_transformers_utils.py 739c0194d9eb602a566c808daa3bb4bd74217c16
  python/tokenspeed/runtime/engine/event_loop.py         739c0194d9eb602a566c808daa3bb4bd74217c16
  python/tokenspeed/runtime/engine/scheduler_utils.py    6083537ed3a712d49eb30ce1170dd28c1d037f70
  test/runtime/test_cache_memory_plan.py                 6083537ed3a712d49eb30ce1170dd28c1d037f70
  test/runtime/test_v4_sliding_window_groups_smoke.py    c731cb889dd9b9d697d92c7580a26408305f886b

Rules
-----
T1  Inputs (server defaults).  utils/server_args.py @ eaf9e503, ServerArgs fields and
    resolve_memory_and_scheduling: max_num_seqs None -> 80 with a speculative algorithm, else
    160; chunked_prefill_size None -> 8192; prefix_granularity field default 64, replaced by the
    DeepSeek V4 family default DEEPSEEK_V4_PAGE_SIZE = 256 (configs/model_config.py @ 6083537e,
    _ATTENTION_FAMILY_SPECS "DeepSeek V4" default_prefix_granularity and
    _apply_attention_family_defaults; attention/kernel_page_sizes.py @ ed545eac).
    Overlap: engine/event_loop.py @ 739c0194 sets overlap_schedule_depth =
    int(should_use_overlap_schedule(...)) (engine/scheduler_utils.py @ 6083537e: False only with
    --disable-overlap-schedule or disaggregation_mode prefill/encode), and decode_input_tokens =
    speculative_num_draft_tokens with a speculative algorithm, else 1.  MTP defaults:
    speculative_num_steps 3 -> speculative_num_draft_tokens = 4 (server_args
    resolve_config_aliases).
T2  Attention config.  attention/configs/mla.py @ 6083537e, MLAConfig.generate (V4 resolves to
    AttentionArch.MLA, configs/model_config.py configure_deepseek_v4_attention):
    max_bs = max_num_seqs // data-parallel size; context_len = model context_len +
    spec_context_pad, spec_context_pad = 3 * speculative_num_draft_tokens with spec-dec, else 0
    (server_args.py _SPEC_OVERSHOOT_SPANS).  model context_len = --max-model-len if given (<=
    max_position_embeddings, otherwise ModelConfig raises), else max_position_embeddings.
T3  Layers.  recipes/deepseek_v4.py @ c731cb88, DeepseekV4Recipe._cache_layout/layer_types and
    attention/deepseek_v4_geometry.py @ 6083537e, deepseek_v4_cache_layout_from_config: the
    layers are compress_ratios[0 : num_target + num_draft], each clamped to max(1, r) (ratio 0 =
    SWA only).  num_target = num_hidden_layers (model_config.py _derive_num_attention_layers);
    num_draft = 1 with the MTP draft (the draft config becomes DeepseekV4ForCausalLMNextN,
    hf_transformers_utils.get_config, whose num_attention_layers = num_nextn_predict_layers), 0
    without one (recipes/base.py num_draft_layers).
T4  Row and block bytes.  attention/deepseek_v4_geometry.py @ 6083537e:
    deepseek_v4_swa_token_stride = (head_dim - rope) + rope*2 = 448 + 128 = 576 (FP8 NoPE + BF16
    RoPE); deepseek_v4_swa_scale_dim = 448/64 + 1 = 8; deepseek_v4_swa_row_bytes = 584.
    DeepseekV4CacheLayout.swa_block_bytes(n) = round_up(n * 584, 576).
    V4_KERNEL_BLOCK_ROWS = 64 -> SWA block 64*584 = 37376 -> 37440.
    v4_compressed_rows_per_page(r) = max(1, 256 // r): c4 64 rows -> 37440, c128 2 rows
    (1168) -> 1728.
    Indexer K row: deepseek_v4_indexer_fp8_row_bytes = d + d/128*4 = 132 (FP8); MXFP4
    deepseek_v4_indexer_mxfp4_row_bytes = d/2 + d/32 = 68; indexer_kv field = 64 rows * row.
    Which one: DeepseekV4Recipe._use_fp4_indexer: --attention-config use_fp4_indexer_cache if
    set, else hf attention_config.use_fp4_indexer_cache, else FP4 iff GPU arch major >= 10
    (Blackwell); the configs here carry no attention_config, so Hopper -> FP8.
    Compressor state (fp32): V4_COMPRESSOR_STATE_ROWS_PER_PAGE {4: 4, 128: 8};
    field shape (rows, head_dim * (2 if r == 4 else 1) * 2) -> c4 4*2048*4 = 32768 B,
    c128 8*1024*4 = 32768 B; indexer state (4, index_head_dim*2*2) -> 4*512*4 = 8192 B.
T5  Groups and fields.  recipes/deepseek_v4.py @ c731cb88, DeepseekV4Recipe.groups and the
    v4_*_spec constructors: one walk over the layers; every layer puts one SWA field
    (plane unit.<swa slot>, flexible stride, page_stride_alignment 576) in v4.swa_kv; a ratio-r
    layer (r > 1) also puts compressed_kv (unit.<slot>, align 576) in v4.c<r>a.compressed_kv
    and compressor_state (unit.<slot>) in v4.c<r>a.compressor_state; a ratio-4 layer also puts
    indexer_kv in v4.c4a.compressed_kv on plane unit.<count(r=4) + slot> and indexer_state in
    v4.c4a.indexer_compressor_state (unit.<slot>).  Slots count per group, so planes are shared
    (aliased) across groups.
    Specs (block_granularity = rows_per_page * entry_stride_tokens, spec.py CacheGroupSpec):
      v4.swa_kv                        sliding, window = sliding_window (128), 64 x 1 -> 64
      v4.c4a.compressed_kv             full history, 64 x 4 -> 256
      v4.c128a.compressed_kv           full history, 2 x 128 -> 256
      v4.c4a.compressor_state          sliding, window = v4_c4_state_window, 4 x 1 -> 4
      v4.c128a.compressor_state        sliding, window 128, 8 x 1 -> 8
      v4.c4a.indexer_compressor_state  sliding, window = v4_c4_state_window, 4 x 1 -> 4
    v4_c4_state_window(t) = max(8, 4 + t), t = decode_input_tokens.
    Checks: prefix_granularity % sliding_window == 0, sliding_window % 64 == 0,
    check_layout: prefix_granularity % block_granularity == 0 for every group.
T6  Packing.  recipes/deepseek_v4.py DeepseekV4Recipe.packing: raw(g) = sum of its fields'
    payload bytes; K(g) = 1 << max(0, bit_length(max_raw // raw(g)) - 1) (largest power of two
    <= max_raw // raw(g)).  All groups pinned, so plan.pack uses K as given.
T7  Parent bytes.  recipes/plan.py @ 6083537e, pack (alignment 256 from recipes/base.py
    CacheRecipe.alignment, max_padding_fraction 2.0 from deepseek_v4.py _MAX_PADDING_FRACTION):
    per plane, bytes = round_up(max over groups g on it of K(g) * bytes of g's fields on that
    plane, lcm(256, K(g)*element_size, K(g)*page_stride_alignment_bytes over its fields));
    lcm_block_bytes = round_up(sum of planes, lcm(256, every K)); each group must have
    lcm_block_bytes % K == 0 and (lcm_block_bytes/K - raw)/raw <= 2.0; exact-stride fields must
    get plane/K == payload.  (The generic unpinned path -- byte-ratio packing, exact-stride
    union-find, flexible fill -- is reproduced too, for the planner's own tests.)
T8  Per-group page demand.  recipes/spec.py @ c731cb88, compute_cache_group_page_counts with
    recipes/base.py CacheRecipe.scheduler_limits (max_live_requests = max_bs,
    max_scheduled_tokens = max(0, chunked_prefill_size), max_context_len = context_len,
    decode_input_tokens, overlap_schedule_depth), safety_margin 0; for each group, with
    b = block_granularity and protected = max_bs * ceil(depth * t / b):
      full history:   ceil(T / b) + max_bs + protected + 1
      sliding window: max_bs * ceil(min(window - 1, context_len) / b)
                      + ceil(min(max_scheduled, T) / b) + max_bs + protected + 1
    parents_needed(T) = sum over groups of ceil((count - 1) / K)   (base.py parents_needed;
    page 0 is the null page).
T9  Parent count and capacity.  recipes/deepseek_v4.py DeepseekV4Recipe.num_lcm_blocks /
    token_capacity and base.py _capacity_from_parents:
      budgeted = budget // lcm_block_bytes - 1   (< 1 -> ValueError)
      cap(n)   = largest T in [1, upper] with parents_needed(T) <= n (binary search; 0 ->
                 ValueError), upper = max_total_tokens if set, else n * max(K) * 256
      parents  = parents_needed(cap(budgeted))
      token_capacity = cap(parents)          (recipes/base.py CacheRecipe.setup)
    The V4 recipe subtracts no workspace (workspace_bytes() = 0) and reads the budget as given:
    `budget_bytes` here is registry.py's cache_memory (profile_available_cache_memory_bytes),
    which is not modelled.
T10 Log.  attention/registry.py @ 074049d4, create_attn_components, logger.info:
    "Cache profile: parent_bytes=%d, P=%d, parents=%d, token_capacity=%d, layers=%d (draft %d),
    groups=%s" with memory_plan.lcm_block_bytes, prefix_granularity, num_lcm_blocks,
    spec.token_capacity, len(layer_types), num_draft_layers, and the dict
    {group_id: cache_blocks_per_lcm_block} in memory_plan.groups order (sorted group ids,
    plan.CacheLayout.bind); the logger's own prefix (time, level) is not included.
    Arena bytes = (parents + 1) * lcm_block_bytes (plan.CacheMemoryPlan.arena_bytes);
    group page_count = 1 + parents * K (plan.CacheLayout.bind).

tokenspeed 0.1.1 (`--release 0.1.1`; the wheel tokenspeed-0.1.1-py3-none-any.whl from PyPI,
2026-10, read in python/tokenspeed/runtime/layers/attention/ of the unpacked wheel; these three
rules were added by the session that wrote the C++ rule, from the wheel's code, and are checked
by the hand sums in _hand_cases):
R1  recipes/deepseek_v4.py v4_indexer_kv_spec and DeepseekV4Recipe.groups: a ratio-4 layer puts
    indexer_kv in a group of its own, v4.c4a.indexer_kv (deepseek_v4_geometry.py
    V4_INDEXER_KV_GROUP_ID; full history, v4_compressed_rows_per_page(4) = 64 rows x 4 tokens),
    on plane unit.<its slot in that group>; v4.c4a.compressed_kv keeps the compressed KV alone.
R2  recipes/deepseek_v4.py v4_compressor_state_spec / v4_indexer_state_spec: the ratio-4 state
    windows are V4_COMPRESSOR_STATE_WINDOW_TOKENS[4] = 8 at any decode width (v4_c4_state_window
    is gone).
R3  recipes/base.py CacheRecipe._budgeted_parents: the budget refusal reads "deepseek_v4 cache
    budget must hold a null parent and one usable LCM parent".
The page demand (T8) is no longer Python in 0.1.1: recipes/base.py parents_needed asks the
compiled tokenspeed_scheduler CapacityModel (recipes/scheduler_bridge.py), not run here; the
oracle keeps T8 of f4d8ec6e for 0.1.1, as the planner does (an assumption, not a reading).

Group short names used in `packing`: swa = v4.swa_kv, c4kv = v4.c4a.compressed_kv,
c4st = v4.c4a.compressor_state, idxst = v4.c4a.indexer_compressor_state,
c128kv = v4.c128a.compressed_kv, c128st = v4.c128a.compressor_state, idxkv = v4.c4a.indexer_kv
(0.1.1).

Not modelled: the budget itself (gpu_memory_utilization profiling); data-parallel attention
(dp = 1 only, option given); PD disaggregation (transfer policies do not change sizing, but
V4 PD forbids drafts); DSpark drafts; TOKENSPEED_CI_SMALL_KV_SIZE (acts like max_total_tokens);
DeepSeek V4.1.

Usage:
  python3 tests/oracle/tokenspeed_oracle.py --json v4-flash 68719476736 1048576 \
      [--max-num-seqs N] [--chunk C] [--no-overlap] [--draft] [--indexer fp8|fp4] \
      [--max-total-tokens T]
  python3 tests/oracle/tokenspeed_oracle.py --self-test
--json prints the plan dict (indent 1); if tokenspeed would refuse to start, it prints
{"error": "<tokenspeed's message>", ...} and exits 1.
"""
import argparse
import json
import math
import sys
from pathlib import Path

# ---------------------------------------------------------------------------------------------
# Model hyperparameters, hard-coded from tests/data/deepseek-v4-{flash,pro}.config.json (the
# self-test checks them against those files).  compress_ratios carries num_hidden_layers +
# num_nextn_predict_layers entries; the last (MTP) entry is 0 = SWA only.
# ---------------------------------------------------------------------------------------------
MODELS = {
    "v4-flash": {
        "config": "deepseek-v4-flash.config.json",
        "num_hidden_layers": 43,
        "num_nextn_predict_layers": 1,
        "head_dim": 512,
        "qk_rope_head_dim": 64,
        "index_head_dim": 128,
        "sliding_window": 128,
        "max_position_embeddings": 1048576,
        # layers 0,1 SWA only; 2..42 alternate 4,128 (21 x 4, 20 x 128); MTP layer 43 -> 0
        "compress_ratios": (0, 0) + (4, 128) * 20 + (4,) + (0,),
    },
    "v4-pro": {
        "config": "deepseek-v4-pro.config.json",
        "num_hidden_layers": 61,
        "num_nextn_predict_layers": 1,
        "head_dim": 512,
        "qk_rope_head_dim": 64,
        "index_head_dim": 128,
        "sliding_window": 128,
        "max_position_embeddings": 1048576,
        # layers 0,1 ratio 128; 2..60 alternate 4,128 (30 x 4, 31 x 128 in all); MTP -> 0
        "compress_ratios": (128, 128) + (4, 128) * 29 + (4,) + (0,),
    },
}

# attention/kernel_page_sizes.py @ ed545eac: DEEPSEEK_V4_PAGE_SIZE
DEEPSEEK_V4_PAGE_SIZE = 256
# attention/deepseek_v4_geometry.py @ 6083537e: module constants
V4_KERNEL_BLOCK_ROWS = 64
DEEPSEEK_V4_FP8_QUANT_BLOCK = 64
DEEPSEEK_V4_FP8_INDEXER_BLOCK_SIZE = 128
DEEPSEEK_V4_FP8_SCALE_BYTES = 4
DEEPSEEK_V4_MXFP4_BLOCK_SIZE = 32
DEEPSEEK_V4_MXFP4_SCALE_BYTES = 1
V4_COMPRESSOR_STATE_WINDOW_TOKENS = {4: 8, 128: 128}
V4_COMPRESSOR_STATE_ROWS_PER_PAGE = {4: 4, 128: 8}
V4_SWA_KV_GROUP_ID = "v4.swa_kv"
V4_INDEXER_KV_GROUP_ID = "v4.c4a.indexer_kv"  # tokenspeed 0.1.1 deepseek_v4_geometry.py (R1)
PIN = "f4d8ec6e"
RELEASE_011 = "0.1.1"
V4_INDEXER_COMPRESSOR_STATE_GROUP_ID = "v4.c4a.indexer_compressor_state"
# recipes/deepseek_v4.py @ c731cb88: _MAX_PADDING_FRACTION; recipes/base.py: alignment 256
V4_MAX_PADDING_FRACTION = 2.0
RECIPE_ALIGNMENT = 256
# recipes/plan.py @ 6083537e
_MAX_LCM_BLOCK_BYTES = (1 << 63) - 1
_MAX_KERNEL_PAGE_ID = (1 << 31) - 1
_DTYPE_BYTES = {"uint8": 1, "int8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
                "float8_e8m0fnu": 1, "bfloat16": 2, "float16": 2, "int32": 4, "float32": 4,
                "int64": 8, "float64": 8}
# recipes/spec.py @ c731cb88: _CACHE_GROUP_DUMMY_PAGES
_DUMMY_PAGES = 1
# utils/server_args.py @ eaf9e503: _SPEC_OVERSHOOT_SPANS, speculative_num_steps default 3
_SPEC_OVERSHOOT_SPANS = 3
_DEFAULT_SPEC_STEPS = 3

SHORT = {
    "v4.swa_kv": "swa",
    "v4.c4a.compressed_kv": "c4kv",
    "v4.c4a.compressor_state": "c4st",
    "v4.c4a.indexer_compressor_state": "idxst",
    "v4.c128a.compressed_kv": "c128kv",
    "v4.c128a.compressor_state": "c128st",
    "v4.c4a.indexer_kv": "idxkv",  # tokenspeed 0.1.1 only (R1)
}


class Refusal(ValueError):
    """tokenspeed would raise this ValueError at startup."""


def ceil_div(a, b):
    return (a + b - 1) // b


def round_up(v, a):
    return ceil_div(v, a) * a


def lcm(a, b):
    return a // math.gcd(a, b) * b


# ---------------------------------------------------------------------------------------------
# T4: byte geometry -- attention/deepseek_v4_geometry.py @ 6083537e
# ---------------------------------------------------------------------------------------------
def swa_token_stride(head_dim, rope):
    # deepseek_v4_swa_token_stride: nope (FP8, 1 B) + rope * 2 (BF16)
    nope = head_dim - rope
    if nope <= 0:
        raise ValueError(f"head_dim={head_dim} must be larger than rope_dim={rope}")
    return nope + rope * 2


def swa_scale_dim(head_dim, rope):
    # deepseek_v4_swa_scale_dim: one scale byte per 64 NoPE values, plus 1
    nope = head_dim - rope
    if nope % DEEPSEEK_V4_FP8_QUANT_BLOCK:
        raise ValueError("DeepSeek V4 FP8 NoPE dim must be divisible by 64")
    return nope // DEEPSEEK_V4_FP8_QUANT_BLOCK + 1


def swa_row_bytes(head_dim, rope):
    # deepseek_v4_swa_row_bytes = token stride + scale dim (584 for 512/64)
    return swa_token_stride(head_dim, rope) + swa_scale_dim(head_dim, rope)


def swa_block_bytes(rows, head_dim, rope):
    # DeepseekV4CacheLayout.swa_block_bytes: rows * row bytes rounded up to the token stride
    return round_up(rows * swa_row_bytes(head_dim, rope), swa_token_stride(head_dim, rope))


def indexer_row_bytes(index_head_dim, indexer):
    # DeepseekV4CacheLayout.indexer_row_bytes
    if indexer == "fp8":
        # deepseek_v4_indexer_fp8_row_bytes: d + d/128 * 4 (fp32 scale per 128)
        if index_head_dim % DEEPSEEK_V4_FP8_INDEXER_BLOCK_SIZE:
            raise ValueError("FP8 index head dim must be divisible by 128")
        return index_head_dim + (index_head_dim // DEEPSEEK_V4_FP8_INDEXER_BLOCK_SIZE
                                 * DEEPSEEK_V4_FP8_SCALE_BYTES)
    # deepseek_v4_indexer_mxfp4_row_bytes: d/2 (e2m1 pairs) + d/32 (ue8m0 scale bytes)
    if index_head_dim % 2 or index_head_dim % DEEPSEEK_V4_MXFP4_BLOCK_SIZE:
        raise ValueError("MXFP4 index head dim must be divisible by 32")
    return index_head_dim // 2 + (index_head_dim // DEEPSEEK_V4_MXFP4_BLOCK_SIZE
                                  * DEEPSEEK_V4_MXFP4_SCALE_BYTES)


def compressed_rows_per_page(ratio):
    # v4_compressed_rows_per_page: max(1, DEEPSEEK_V4_PAGE_SIZE // ratio)
    if ratio <= 1:
        raise ValueError(f"ratio must be > 1, got {ratio}")
    return max(1, DEEPSEEK_V4_PAGE_SIZE // ratio)


def c4_state_window(decode_input_tokens):
    # recipes/deepseek_v4.py @ c731cb88, v4_c4_state_window
    if isinstance(decode_input_tokens, bool) or not isinstance(decode_input_tokens, int) \
            or decode_input_tokens <= 0:
        raise ValueError("decode_input_tokens must be a positive integer")
    return max(V4_COMPRESSOR_STATE_WINDOW_TOKENS[4], 4 + decode_input_tokens)


# ---------------------------------------------------------------------------------------------
# Field and group-spec records (recipes/plan.py CacheFieldSpec, recipes/spec.py CacheGroupSpec)
# ---------------------------------------------------------------------------------------------
class Field:
    __slots__ = ("field_id", "plane_id", "shape", "dtype", "exact_page_stride",
                 "page_stride_alignment_bytes")

    def __init__(self, field_id, plane_id, shape, dtype, exact_page_stride=True,
                 page_stride_alignment_bytes=1):
        if dtype not in _DTYPE_BYTES:
            raise ValueError(f"unsupported cache dtype {dtype!r}")
        self.field_id = field_id
        self.plane_id = plane_id
        self.shape = tuple(shape)
        self.dtype = dtype
        self.exact_page_stride = exact_page_stride
        self.page_stride_alignment_bytes = page_stride_alignment_bytes

    @property
    def element_size(self):
        return _DTYPE_BYTES[self.dtype]

    @property
    def payload_bytes(self):
        return math.prod(self.shape) * self.element_size


class Spec:
    """recipes/spec.py CacheGroupSpec (row geometry or checkpoint geometry)."""

    def __init__(self, group_id, retention, rows_per_page=None, entry_stride_tokens=None,
                 sliding_window_tokens=None, family="history", checkpoint_granularity=None):
        if checkpoint_granularity is None:
            if rows_per_page is None or entry_stride_tokens is None:
                raise ValueError(f"group {group_id!r}: declare either row geometry or "
                                 "checkpoint_granularity")
            if rows_per_page <= 0 or entry_stride_tokens <= 0:
                raise ValueError(f"group {group_id!r}: rows_per_page and entry_stride_tokens "
                                 "must be > 0")
        self.group_id = group_id
        self.retention = retention
        self.rows_per_page = rows_per_page
        self.entry_stride_tokens = entry_stride_tokens
        self.sliding_window_tokens = sliding_window_tokens
        self.family = family
        self.checkpoint_granularity = checkpoint_granularity

    @property
    def block_granularity(self):
        # CacheGroupSpec.block_granularity = checkpoint_granularity or rows * stride tokens
        if self.checkpoint_granularity is not None:
            return self.checkpoint_granularity
        return self.rows_per_page * self.entry_stride_tokens


# ---------------------------------------------------------------------------------------------
# T7: recipes/plan.py @ 6083537e -- pack / bind / capacity_report (planner)
# ---------------------------------------------------------------------------------------------
def _packing_by_group_ratio(raw_by_group):
    # plan._packing_by_group_ratio
    largest = max(raw_by_group.values())
    return {g: max(1, largest // raw) for g, raw in raw_by_group.items()}


def _solve_packing(ordered_fields):
    # plan._solve_packing: union exact-stride tenants sharing a plane by their byte ratio
    exact_by_plane = {}
    groups = set()
    for gid, f in ordered_fields:
        groups.add(gid)
        if f.exact_page_stride:
            plane = exact_by_plane.setdefault(f.plane_id, {})
            plane[gid] = plane.get(gid, 0) + f.payload_bytes
    root = {g: g for g in groups}
    ratio = {g: (1, 1) for g in groups}

    def resolve(g):
        num, den = 1, 1
        while root[g] != g:
            rn, rd = ratio[g]
            num, den = num * rn, den * rd
            g = root[g]
        return g, (num, den)

    for plane_id in sorted(exact_by_plane):
        tenants = sorted(exact_by_plane[plane_id].items())
        for (a_id, a_bytes), (b_id, b_bytes) in zip(tenants, tenants[1:]):
            a_root, (an, ad) = resolve(a_id)
            b_root, (bn, bd) = resolve(b_id)
            if a_root == b_root:
                if an * bd * a_bytes != bn * ad * b_bytes:
                    return None
                continue
            num = an * bd * a_bytes
            den = bn * ad * b_bytes
            c = math.gcd(num, den)
            root[b_root] = a_root
            ratio[b_root] = (num // c, den // c)
    members = {}
    for g in sorted(groups):
        comp, frac = resolve(g)
        members.setdefault(comp, []).append((g, frac))
    packing = {}
    for comp_members in members.values():
        if len(comp_members) == 1:
            continue
        scale = 1
        for _, (_, den) in comp_members:
            scale = lcm(scale, den)
        counts = {g: num * scale // den for g, (num, den) in comp_members}
        smallest = 0
        for c in counts.values():
            smallest = math.gcd(smallest, c)
        packing.update({g: c // smallest for g, c in counts.items()})
    return packing


def _is_pos_int(v):
    return not isinstance(v, bool) and isinstance(v, int) and v >= 1


def pack(groups, *, prefix_granularity, cache_blocks_per_lcm_block=None, alignment=1,
         max_padding_fraction=0.25):
    """plan.pack.  groups: sequence of (group_id, [Field, ...])."""
    if prefix_granularity <= 0:
        raise ValueError("prefix_granularity must be > 0")
    if alignment <= 0:
        raise ValueError("alignment must be > 0")
    if max_padding_fraction < 0:
        raise ValueError("max_padding_fraction must be >= 0")
    groups = [(gid, tuple(fs)) for gid, fs in groups]
    ids = [gid for gid, _ in groups]
    if len(ids) != len(set(ids)):
        raise ValueError(f"cache group declared more than once: {ids}")
    empty = sorted(gid for gid, fs in groups if not fs)
    if empty:
        raise ValueError(f"cache groups {empty} declare no fields")
    # fields ordered by (plane_id, group_id, field_id)
    ordered = sorted(((gid, f) for gid, fs in groups for f in fs),
                     key=lambda e: (e[1].plane_id, e[0], e[1].field_id))
    if not ordered:
        raise ValueError("at least one cache group is required")
    if len({f.field_id for _, f in ordered}) != len(ordered):
        raise ValueError("cache field ids must be unique")
    raw = {}
    for gid, f in ordered:
        if not f.shape or any(x <= 0 for x in f.shape) or not _is_pos_int(
                f.page_stride_alignment_bytes):
            raise ValueError(f"cache field {f.field_id!r} has invalid geometry")
        raw[gid] = raw.get(gid, 0) + f.payload_bytes
    group_ids = sorted(raw)
    pinned = dict(cache_blocks_per_lcm_block or {})
    unknown = set(pinned) - set(group_ids)
    if unknown:
        raise ValueError("cache_blocks_per_lcm_block names groups outside the plan: "
                         f"{sorted(unknown)}")
    if any(not _is_pos_int(c) for c in pinned.values()):
        raise ValueError("cache group packing must be a positive integer")
    if set(pinned) == set(group_ids):
        packing = dict(pinned)
    else:
        packing = _packing_by_group_ratio(raw)
        constrained = _solve_packing(ordered)
        if constrained is not None:
            packing.update(constrained)
        packing.update(pinned)

    plane_fields = {}
    for gid, f in ordered:
        plane_fields.setdefault(f.plane_id, {}).setdefault(gid, []).append(f)
    field_offsets = {}
    gp_bytes = {}  # (group, plane) -> bytes of that group's fields on that plane
    for pid, by_group in plane_fields.items():
        for gid, fs in by_group.items():
            off = 0
            for f in fs:
                off = round_up(off, f.element_size)
                field_offsets[f.field_id] = off
                off += f.payload_bytes
            gp_bytes[(gid, pid)] = off

    # flexible groups fill slack left by exact fields (only when nothing is pinned)
    exact_groups = {gid for gid, f in ordered if f.exact_page_stride}
    flexible = set(group_ids) - exact_groups
    if flexible and not pinned:
        fixed_plane = {}
        for pid, by_group in plane_fields.items():
            fa, req = alignment, 0
            for gid, fs in by_group.items():
                if gid in flexible:
                    continue
                req = max(req, packing[gid] * gp_bytes[(gid, pid)])
                for f in fs:
                    fa = lcm(fa, packing[gid] * f.element_size)
            if req:
                fixed_plane[pid] = round_up(req, fa)
        for gid in sorted(flexible):
            occupied = {pid: b for (g, pid), b in gp_bytes.items() if g == gid}
            if not all(pid in fixed_plane for pid in occupied):
                continue
            upper = min(fixed_plane[pid] // b for pid, b in occupied.items())
            elem_align = {}
            for pid, by_group in plane_fields.items():
                fs = by_group.get(gid, ())
                ea = 1
                for f in fs:
                    ea = lcm(ea, f.element_size)
                if fs:
                    elem_align[pid] = ea
            for count in range(upper, 0, -1):
                if all(fixed_plane[pid] % (count * elem_align[pid]) == 0 for pid in occupied):
                    packing[gid] = count
                    break

    plane_bytes = {}
    for pid, by_group in plane_fields.items():
        pa, req = alignment, 0
        for gid, fs in by_group.items():
            req = max(req, packing[gid] * gp_bytes[(gid, pid)])
            for f in fs:
                pa = lcm(pa, packing[gid] * f.element_size)
                pa = lcm(pa, packing[gid] * f.page_stride_alignment_bytes)
                if pa > _MAX_LCM_BLOCK_BYTES:
                    raise ValueError(f"LCM block size alignment {pa} exceeds limit")
        plane_bytes[pid] = round_up(req, pa)

    # plan._check_exact_page_strides
    for gid, f in ordered:
        if f.exact_page_stride:
            stride = plane_bytes[f.plane_id] // packing[gid]
            if stride != f.payload_bytes:
                raise ValueError(f"cache field {f.field_id!r} needs page stride "
                                 f"{f.payload_bytes} but plane {f.plane_id!r} gives {stride}")

    parent_alignment = alignment
    for c in packing.values():
        parent_alignment = lcm(parent_alignment, c)
    lcm_block_bytes = round_up(sum(plane_bytes.values()), parent_alignment)
    if lcm_block_bytes > _MAX_LCM_BLOCK_BYTES:
        raise ValueError(f"LCM block size {lcm_block_bytes} exceeds limit")
    for gid in group_ids:
        k = packing[gid]
        if lcm_block_bytes % k:
            raise ValueError(f"cache group {gid!r}: packing {k} does not partition LCM block "
                             f"size {lcm_block_bytes}")
        pad = (lcm_block_bytes // k - raw[gid]) / raw[gid]
        if pad > max_padding_fraction:
            raise ValueError(f"cache group {gid!r}: padding fraction {pad:.6f} exceeds limit "
                             f"{max_padding_fraction:.6f}")
    fields = [{"group_id": gid, "field_id": f.field_id, "plane_id": f.plane_id,
               "shape": f.shape, "dtype": f.dtype, "payload_bytes": f.payload_bytes,
               "field_offset_bytes": field_offsets[f.field_id],
               "page_stride_bytes": plane_bytes[f.plane_id] // packing[gid]}
              for gid, f in ordered]
    return {
        "prefix_granularity": prefix_granularity,
        "lcm_block_bytes": lcm_block_bytes,
        "group_packing": [(g, packing[g]) for g in group_ids],
        "plane_bytes": [(p, plane_bytes[p]) for p in sorted(plane_bytes)],
        "fields": fields,
        "raw_by_group": {g: raw[g] for g in group_ids},
    }


def bind(layout, num_lcm_blocks):
    # plan.CacheLayout.bind
    if not _is_pos_int(num_lcm_blocks):
        raise ValueError("num_lcm_blocks must be a positive integer")
    groups = []
    for gid, k in layout["group_packing"]:
        if num_lcm_blocks * k > _MAX_KERNEL_PAGE_ID:
            raise ValueError(f"cache group {gid!r}: kernel page id exceeds {_MAX_KERNEL_PAGE_ID}")
        groups.append({"group_id": gid, "cache_blocks_per_lcm_block": k,
                       "page_count": 1 + num_lcm_blocks * k})
    planes, off = [], 0
    for pid, b in layout["plane_bytes"]:
        planes.append({"plane_id": pid, "bytes_per_lcm_block": b, "arena_offset_bytes": off})
        off += (num_lcm_blocks + 1) * b
    return {
        "prefix_granularity": layout["prefix_granularity"],
        "lcm_block_bytes": layout["lcm_block_bytes"],
        "num_lcm_blocks": num_lcm_blocks,
        "groups": groups,
        "planes": planes,
        "fields": layout["fields"],
        # plan.CacheMemoryPlan.arena_bytes: the null parent included
        "arena_bytes": (num_lcm_blocks + 1) * layout["lcm_block_bytes"],
    }


def capacity_report(mplan, window_tokens=None, per_request_blocks=None, max_num_seqs=None):
    # plan.CacheMemoryPlan.capacity_report
    window_tokens = dict(window_tokens or {})
    per_request_blocks = dict(per_request_blocks or {})
    gbytes = {}
    for f in mplan["fields"]:
        gbytes[f["group_id"]] = gbytes.get(f["group_id"], 0) + f["payload_bytes"]
    lbb, n, P = mplan["lcm_block_bytes"], mplan["num_lcm_blocks"], mplan["prefix_granularity"]
    out = {}
    for g in mplan["groups"]:
        gid, k = g["group_id"], g["cache_blocks_per_lcm_block"]
        usable = n * k
        bb = gbytes.get(gid, 0)
        util = k * bb / lbb if lbb else 0.0
        if gid in per_request_blocks:
            bpr = max(1, per_request_blocks[gid])
            sup = usable // bpr
            demand = max_num_seqs * bpr if max_num_seqs else None
            out[gid] = {"unit": "requests", "capacity": sup, "supported_requests": sup,
                        "dead_bytes": max(0, usable - demand) * bb if demand is not None else None,
                        "binding_utilization": util}
            continue
        tokens = usable * P
        if gid in window_tokens:
            w = max(1, window_tokens[gid])
            demand = max_num_seqs * w if max_num_seqs else None
            out[gid] = {"unit": "tokens", "capacity": tokens, "supported_requests": tokens // w,
                        "dead_bytes": (max(0, tokens - demand) // P * bb
                                       if demand is not None else None),
                        "binding_utilization": util}
            continue
        out[gid] = {"unit": "tokens", "capacity": tokens, "supported_requests": None,
                    "dead_bytes": 0, "binding_utilization": util}
    return out


# ---------------------------------------------------------------------------------------------
# T8: recipes/spec.py @ c731cb88 -- compute_cache_group_page_counts
# ---------------------------------------------------------------------------------------------
def page_counts(specs, *, max_live_requests, max_scheduled_tokens, max_total_tokens,
                max_context_len, decode_input_tokens=1, overlap_schedule_depth=0,
                safety_margin=0):
    if max_live_requests < 0 or max_scheduled_tokens < 0 or max_total_tokens < 0 \
            or max_context_len < 0 or decode_input_tokens < 0 or safety_margin < 0:
        raise ValueError("page-count inputs must be >= 0")
    if overlap_schedule_depth not in (0, 1):
        raise ValueError(f"overlap_schedule_depth must be 0 or 1, got {overlap_schedule_depth}")
    if overlap_schedule_depth > 0 and decode_input_tokens == 0:
        raise ValueError("overlapped cache sizing requires decode_input_tokens > 0")
    counts = {}
    for s in specs:
        b = s.block_granularity
        protected = max_live_requests * ceil_div(overlap_schedule_depth * decode_input_tokens, b)
        if s.family == "state" and s.retention == "full_history":
            total = max_live_requests * 2 + _DUMMY_PAGES + safety_margin
        elif s.retention == "full_history":
            total = (ceil_div(max_total_tokens, b) + max_live_requests + protected
                     + _DUMMY_PAGES + safety_margin)
        elif s.retention == "sliding_window":
            w = s.sliding_window_tokens
            if w is None or w <= 0:
                raise ValueError(f"CacheGroupSpec {s.group_id}: sliding group missing positive "
                                 "sliding_window_tokens")
            resident = max_live_requests * ceil_div(min(max(w - 1, 0), max_context_len), b)
            scheduled = ceil_div(min(max_scheduled_tokens, max_total_tokens), b)
            total = (resident + scheduled + max_live_requests + protected + _DUMMY_PAGES
                     + safety_margin)
        else:
            raise ValueError(f"CacheGroupSpec {s.group_id}: unsupported retention "
                             f"{s.retention!r}")
        counts[s.group_id] = int(total)
    return counts


def parents_needed(specs, group_packing, limits, token_capacity):
    # recipes/base.py @ c731cb88, CacheRecipe.parents_needed
    counts = page_counts(specs, max_total_tokens=token_capacity, **limits)
    return sum(ceil_div(counts[g] - 1, k) for g, k in group_packing)


def capacity_from_parents(specs, group_packing, limits, num_lcm_blocks, upper_bound,
                          family="deepseek_v4"):
    # recipes/base.py @ c731cb88, CacheRecipe._capacity_from_parents (monotonic binary search)
    if num_lcm_blocks <= 0:
        raise ValueError("num_lcm_blocks must be positive")
    if upper_bound <= 0:
        raise ValueError("upper_bound must be positive")
    lo, hi = 0, upper_bound
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if parents_needed(specs, group_packing, limits, mid) <= num_lcm_blocks:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        raise Refusal(f"num_lcm_blocks={num_lcm_blocks} cannot admit one token with the "
                      f"configured {family} cache scheduler limits")
    return lo


# ---------------------------------------------------------------------------------------------
# T5/T6: recipes/deepseek_v4.py @ c731cb88 -- DeepseekV4Recipe.groups / packing
# ---------------------------------------------------------------------------------------------
def v4_declarations(ratios, *, head_dim, rope, index_head_dim, sliding_window,
                    prefix_granularity, decode_input_tokens, indexer, release=PIN):
    """[(Spec, [Field, ...]), ...] in first-appearance order, as DeepseekV4Recipe.groups
    (`release` "0.1.1": rules R1 and R2 below)."""
    if sliding_window <= 0 or prefix_granularity % sliding_window:
        raise Refusal("DeepSeek V4 sliding_window must divide the prefix granularity")
    if sliding_window % V4_KERNEL_BLOCK_ROWS:
        raise Refusal("DeepSeek V4 sliding_window must be divisible by the SWA kernel page")
    if any(r not in (1, 4, 128) for r in ratios):
        raise Refusal("DeepSeek V4 layer ratios must be 1, 4, or 128")
    # R2 (0.1.1): the ratio-4 state windows are V4_COMPRESSOR_STATE_WINDOW_TOKENS[4] = 8 at any t.
    c4w = V4_COMPRESSOR_STATE_WINDOW_TOKENS[4] if release == RELEASE_011 else c4_state_window(
        decode_input_tokens)
    swa_bytes = swa_block_bytes(V4_KERNEL_BLOCK_ROWS, head_dim, rope)
    align = swa_token_stride(head_dim, rope)
    n4 = sum(1 for r in ratios if r == 4)
    idx_row = indexer_row_bytes(index_head_dim, indexer)
    declared = {}  # group_id -> (Spec, [fields]), insertion = first appearance
    occ = {}

    def slot(gid):
        s = occ.get(gid, 0)
        occ[gid] = s + 1
        return s

    def declare(spec, field):
        if spec.group_id not in declared:
            declared[spec.group_id] = (spec, [])
        declared[spec.group_id][1].append(field)

    # v4_swa_kv_spec: sliding window, 64 rows x 1 token, state family
    swa_spec = Spec(V4_SWA_KV_GROUP_ID, "sliding_window", V4_KERNEL_BLOCK_ROWS, 1,
                    sliding_window, "state")
    for lid, r in enumerate(ratios):
        declare(swa_spec, Field(f"layer.{lid}.swa", f"unit.{slot(swa_spec.group_id)}",
                                (swa_bytes,), "uint8", False, align))
        if r == 1:
            continue
        # v4_compressed_kv_spec: full history, 256//r rows x r tokens, history family
        kv_spec = Spec(f"v4.c{r}a.compressed_kv", "full_history", compressed_rows_per_page(r),
                       r, None, "history")
        # v4_compressor_state_spec: sliding, rows {4:4,128:8}, window c4w (r=4) or 128
        st_spec = Spec(f"v4.c{r}a.compressor_state", "sliding_window",
                       V4_COMPRESSOR_STATE_ROWS_PER_PAGE[r], 1,
                       c4w if r == 4 else V4_COMPRESSOR_STATE_WINDOW_TOKENS[r], "state")
        kv_slot = slot(kv_spec.group_id)
        st_slot = slot(st_spec.group_id)
        declare(kv_spec, Field(f"layer.{lid}.compressed_kv", f"unit.{kv_slot}",
                               (swa_block_bytes(compressed_rows_per_page(r), head_dim, rope),),
                               "uint8", False, align))
        declare(st_spec, Field(f"layer.{lid}.compressor_state", f"unit.{st_slot}",
                               (V4_COMPRESSOR_STATE_ROWS_PER_PAGE[r],
                                head_dim * (2 if r == 4 else 1) * 2), "float32", False))
        if r != 4:
            continue
        # v4_indexer_state_spec: sliding, 4 rows x 1, window c4w, state family
        ix_spec = Spec(V4_INDEXER_COMPRESSOR_STATE_GROUP_ID, "sliding_window",
                       V4_COMPRESSOR_STATE_ROWS_PER_PAGE[4], 1, c4w, "state")
        ix_slot = slot(ix_spec.group_id)
        if release == RELEASE_011:
            # R1 (0.1.1, v4_indexer_kv_spec): indexer K is a full-history group of its own,
            # 64 rows x 4 tokens, its field on plane unit.<its own slot>.
            ik_spec = Spec(V4_INDEXER_KV_GROUP_ID, "full_history", compressed_rows_per_page(4), 4,
                           None, "history")
            declare(ik_spec, Field(f"layer.{lid}.indexer_kv", f"unit.{slot(ik_spec.group_id)}",
                                   (V4_KERNEL_BLOCK_ROWS * idx_row,), "uint8", False))
        else:
            # indexer K shares the c4 compressed group, on planes after every compressed tenant
            declare(kv_spec, Field(f"layer.{lid}.indexer_kv", f"unit.{n4 + kv_slot}",
                                   (V4_KERNEL_BLOCK_ROWS * idx_row,), "uint8", False))
        declare(ix_spec, Field(f"layer.{lid}.indexer_state", f"unit.{ix_slot}",
                               (V4_COMPRESSOR_STATE_ROWS_PER_PAGE[4], index_head_dim * 2 * 2),
                               "float32", False))
    return list(declared.values())


def v4_packing(decls):
    # DeepseekV4Recipe.packing: largest power of two <= max_raw // raw
    raw = {spec.group_id: sum(f.payload_bytes for f in fs) for spec, fs in decls}
    largest = max(raw.values())
    return {g: 1 << max(0, (largest // b).bit_length() - 1) for g, b in raw.items()}


# ---------------------------------------------------------------------------------------------
# The whole V4 setup: registry.create_attn_components -> prepare_cache_setup ->
# DeepseekV4Recipe.setup (recipes/base.py CacheRecipe.setup)
# ---------------------------------------------------------------------------------------------
def plan(model, budget_bytes, max_model_len, max_num_seqs=None, chunked_prefill=None,
         overlap=None, draft=False, indexer="fp8", max_total_tokens=None,
         prefix_granularity=None, num_draft_tokens=None, dp_size=1, release=PIN):
    if release not in (PIN, RELEASE_011):
        raise ValueError(f"release must be {PIN} or {RELEASE_011}, got {release!r}")
    m = MODELS[model]
    indexer = {"fp8": "fp8", "fp4": "fp4", "mxfp4": "fp4"}[indexer]
    # T1 defaults
    if max_num_seqs is None:
        max_num_seqs = 80 if draft else 160
    if chunked_prefill is None:
        chunked_prefill = 8192
    if overlap is None:
        overlap = True
    if prefix_granularity is None:
        prefix_granularity = DEEPSEEK_V4_PAGE_SIZE
    if draft:
        if num_draft_tokens is None:
            num_draft_tokens = _DEFAULT_SPEC_STEPS + 1
        decode_input_tokens = int(num_draft_tokens)
        spec_pad = _SPEC_OVERSHOOT_SPANS * int(num_draft_tokens)
    else:
        decode_input_tokens, spec_pad = 1, 0
    depth = int(bool(overlap))
    # T2: ModelConfig context_len, MLAConfig.generate
    if max_model_len is None:
        max_model_len = m["max_position_embeddings"]
    if max_model_len > m["max_position_embeddings"]:
        raise Refusal(f"User-specified context_length ({max_model_len}) is greater than the "
                      f"derived context_length ({m['max_position_embeddings']}).")
    context_len = max_model_len + spec_pad
    max_bs = max_num_seqs // dp_size
    # T3 layers
    n_target = m["num_hidden_layers"]
    n_draft = m["num_nextn_predict_layers"] if draft else 0
    ratios = tuple(max(1, r) for r in m["compress_ratios"][: n_target + n_draft])
    # T5/T6
    decls = v4_declarations(ratios, head_dim=m["head_dim"], rope=m["qk_rope_head_dim"],
                            index_head_dim=m["index_head_dim"],
                            sliding_window=m["sliding_window"],
                            prefix_granularity=prefix_granularity,
                            decode_input_tokens=decode_input_tokens, indexer=indexer,
                            release=release)
    packing = v4_packing(decls)
    # T7
    layout = pack([(s.group_id, fs) for s, fs in decls], prefix_granularity=prefix_granularity,
                  cache_blocks_per_lcm_block=packing, alignment=RECIPE_ALIGNMENT,
                  max_padding_fraction=V4_MAX_PADDING_FRACTION)
    specs = [s for s, _ in decls]
    for s in specs:  # DeepseekV4Recipe.check_layout
        if prefix_granularity % s.block_granularity:
            raise Refusal(f"group {s.group_id!r} cache block tokens must divide "
                          f"prefix_granularity={prefix_granularity}")
    # T8/T9
    limits = {"max_live_requests": max_bs, "max_scheduled_tokens": max(0, int(chunked_prefill)),
              "max_context_len": context_len, "decode_input_tokens": decode_input_tokens,
              "overlap_schedule_depth": depth}
    gp = layout["group_packing"]
    kmax = max(k for _, k in gp)
    lbb = layout["lcm_block_bytes"]

    def cap(n):
        upper = max_total_tokens if max_total_tokens is not None else n * kmax * DEEPSEEK_V4_PAGE_SIZE
        return capacity_from_parents(specs, gp, limits, n, upper)

    budgeted = budget_bytes // lbb - 1
    if budgeted < 1:
        if release == RELEASE_011:  # R3: recipes/base.py CacheRecipe._budgeted_parents
            raise Refusal("deepseek_v4 cache budget must hold a null parent and one usable LCM parent")
        raise Refusal("DeepSeek V4 cache budget must hold a null parent and one usable parent")
    parents = parents_needed(specs, gp, limits, cap(budgeted))
    mplan = bind(layout, parents)
    token_capacity = cap(parents)
    # T10
    groups_log = {g["group_id"]: g["cache_blocks_per_lcm_block"] for g in mplan["groups"]}
    log = ("Cache profile: parent_bytes=%d, P=%d, parents=%d, token_capacity=%d, "
           "layers=%d (draft %d), groups=%s" % (lbb, prefix_granularity, parents,
                                                 token_capacity, len(ratios), n_draft,
                                                 groups_log))
    counts = page_counts(specs, max_total_tokens=token_capacity, **limits)
    return {
        "model": model,
        "release": release,
        "parent_bytes": lbb,
        "prefix_granularity": prefix_granularity,
        "parents": parents,
        "token_capacity": token_capacity,
        "packing": {SHORT[g]: k for g, k in gp},
        "log": log,
        # extras
        "packing_by_group_id": dict(gp),
        "budget_bytes": budget_bytes,
        "budgeted_parents": budgeted,
        "arena_bytes": mplan["arena_bytes"],
        "group_raw_bytes": {SHORT[g]: b for g, b in layout["raw_by_group"].items()},
        "group_page_count": {SHORT[g["group_id"]]: g["page_count"] for g in mplan["groups"]},
        "group_pages_needed": {SHORT[g]: c for g, c in counts.items()},
        "plane_bytes_total": sum(b for _, b in layout["plane_bytes"]),
        "num_planes": len(layout["plane_bytes"]),
        "layers": len(ratios),
        "draft_layers": n_draft,
        "ratio_counts": {str(r): ratios.count(r) for r in (1, 4, 128)},
        "row_bytes": {"swa_row": swa_row_bytes(m["head_dim"], m["qk_rope_head_dim"]),
                      "swa_block": swa_block_bytes(V4_KERNEL_BLOCK_ROWS, m["head_dim"],
                                                   m["qk_rope_head_dim"]),
                      "indexer_row": indexer_row_bytes(m["index_head_dim"], indexer)},
        "inputs": {"max_model_len": max_model_len, "context_len": context_len,
                   "max_num_seqs": max_num_seqs, "max_bs": max_bs,
                   "chunked_prefill_size": chunked_prefill, "overlap_schedule_depth": depth,
                   "decode_input_tokens": decode_input_tokens, "indexer": indexer,
                   "max_total_tokens": max_total_tokens},
    }


# ---------------------------------------------------------------------------------------------
# Self-test
# ---------------------------------------------------------------------------------------------
def _raises(fn, needle):
    try:
        fn()
    except ValueError as exc:
        assert needle in str(exc), (needle, str(exc))
        return
    raise AssertionError(f"expected ValueError containing {needle!r}")


def _planner_cases():
    """test/runtime/test_cache_memory_plan.py @ 6083537e, CacheMemoryPlanTest and friends.
    V4 pins every group (T6), so the pinned path, flexible strides and bind are the ones the
    V4 plan uses; the unpinned cases check the shared pack() as a whole."""
    F = Field

    def plan_fields(tagged, *, budget_bytes=None, num_lcm_blocks=None, **kw):
        by = {}
        for gid, f in tagged:
            by.setdefault(gid, []).append(f)
        lay = pack(list(by.items()), **kw)
        if budget_bytes is not None:
            num_lcm_blocks = budget_bytes // lay["lcm_block_bytes"] - 1
        return bind(lay, num_lcm_blocks)

    def grp(p, gid):
        return next(g for g in p["groups"] if g["group_id"] == gid)

    def fld(p, fid):
        return next(f for f in p["fields"] if f["field_id"] == fid)

    # test_planner_expresses_byte_ratio_as_per_group_packing: history 1, state 8
    p = plan_fields([("history", F("history.k", "unit.0.a", (128, 1, 8), "bfloat16")),
                     ("history", F("history.v", "unit.0.b", (128, 1, 8), "bfloat16")),
                     ("state", F("state.ssm", "unit.0.a", (1, 1, 128), "bfloat16")),
                     ("state", F("state.conv", "unit.0.b", (1, 128), "bfloat16", False))],
                    prefix_granularity=128, budget_bytes=8192, alignment=256)
    assert p["prefix_granularity"] == 128
    assert grp(p, "history")["cache_blocks_per_lcm_block"] == 1
    assert grp(p, "state")["cache_blocks_per_lcm_block"] == 8
    # test_layout_is_capacity_independent: page_count 3 / 6, plane 1 offsets differ
    lay = pack([("full", [F("full.k", "unit.0.k", (128, 8), "bfloat16"),
                          F("full.v", "unit.0.v", (128, 8), "bfloat16")])],
               prefix_granularity=128, alignment=16)
    small, large = bind(lay, 2), bind(lay, 5)
    assert small["lcm_block_bytes"] == large["lcm_block_bytes"]
    assert [f["page_stride_bytes"] for f in small["fields"]] == \
        [f["page_stride_bytes"] for f in large["fields"]]
    assert grp(small, "full")["page_count"] == 3 and grp(large, "full")["page_count"] == 6
    assert small["planes"][1]["arena_offset_bytes"] != large["planes"][1]["arena_offset_bytes"]
    # test_flexible_field_preserves_required_page_stride_alignment (V4 compressed-KV shape:
    # 576-byte TMA row stride, 8 blocks per parent, P = 256)
    p = plan_fields([("compressed", F("compressed.kv", "unit.0", (64, 9), "uint8", False, 576)),
                     ("wide", F("wide.state", "unit.0", (6000,), "uint8", False))],
                    prefix_granularity=256, num_lcm_blocks=2,
                    cache_blocks_per_lcm_block={"compressed": 8, "wide": 1}, alignment=256,
                    max_padding_fraction=float("inf"))
    c = fld(p, "compressed.kv")
    assert c["page_stride_bytes"] > c["payload_bytes"] and c["page_stride_bytes"] % 576 == 0
    # hand: plane = round_up(max(8*576, 6000), lcm(256, 8, 8*576 = 4608) = 4608) = 9216 -> 1152
    assert c["page_stride_bytes"] == 1152 and p["lcm_block_bytes"] == 9216
    # test_layout_constructors_derive_sizes_from_geometry: payload 256, arena (4+1)*1024
    assert F("history.k", "plane.a", (8, 16), "bfloat16").payload_bytes == 256
    assert (4 + 1) * 1024 == 5120
    # test_duplicate_field_ids_are_rejected
    _raises(lambda: plan_fields([("a", F("duplicate", "plane.a", (16,), "bfloat16")),
                                 ("b", F("duplicate", "plane.b", (16,), "bfloat16"))],
                                prefix_granularity=16, budget_bytes=4096),
            "field ids must be unique")
    # test_fixed_parent_count_and_explicit_packing: page counts 8 and 29
    p = plan_fields([("history", F("history.k", "plane.k", (128, 8), "bfloat16")),
                     ("state", F("state.ssm", "plane.k", (128, 2), "bfloat16"))],
                    prefix_granularity=128, num_lcm_blocks=7,
                    cache_blocks_per_lcm_block={"history": 1, "state": 4}, alignment=256)
    assert p["num_lcm_blocks"] == 7
    assert grp(p, "history")["page_count"] == 8 and grp(p, "state")["page_count"] == 29
    # test_explicit_packing_is_bounded_by_page_ids_not_a_magic_count: 256 -> 513 pages
    p = plan_fields([("history", F("history.k", "plane.k", (1,), "uint8"))],
                    prefix_granularity=16, num_lcm_blocks=2,
                    cache_blocks_per_lcm_block={"history": 256})
    assert grp(p, "history")["cache_blocks_per_lcm_block"] == 256
    assert grp(p, "history")["page_count"] == 513
    # test_automatic_packing_keeps_large_exact_byte_ratio: 256 / 1
    p = plan_fields([("history", F("history.k", "plane.shared", (1,), "uint8")),
                     ("state", F("state.ssm", "plane.shared", (256,), "uint8"))],
                    prefix_granularity=16, num_lcm_blocks=2)
    assert grp(p, "history")["cache_blocks_per_lcm_block"] == 256
    assert grp(p, "state")["cache_blocks_per_lcm_block"] == 1
    # test_fixed_parent_count_must_be_a_positive_integer / test_explicit_packing_rejects_*
    for bad in (0, -1, True, 1.5, "2"):
        _raises(lambda: plan_fields([("history", F("history.k", "plane.k", (128, 8),
                                                   "bfloat16"))],
                                    prefix_granularity=128, num_lcm_blocks=bad),
                "positive integer")
        _raises(lambda: plan_fields([("history", F("history.k", "plane.k", (128, 8),
                                                   "bfloat16"))],
                                    prefix_granularity=128, num_lcm_blocks=2,
                                    cache_blocks_per_lcm_block={"history": bad}),
                "packing")
    two = [("history", F("history.k", "plane.k", (128, 8), "bfloat16")),
           ("state", F("state.ssm", "plane.s", (128, 2), "bfloat16"))]
    _raises(lambda: plan_fields(two, prefix_granularity=128, num_lcm_blocks=2,
                                cache_blocks_per_lcm_block={"history": 1, "state": 4,
                                                            "extra": 1}),
            "outside the plan")
    # test_partial_packing_pins_named_groups_and_solves_the_rest
    un = plan_fields(two, prefix_granularity=128, num_lcm_blocks=2, max_padding_fraction=1.0)
    hk = grp(un, "history")["cache_blocks_per_lcm_block"]
    pi = plan_fields(two, prefix_granularity=128, num_lcm_blocks=2, max_padding_fraction=1.0,
                     cache_blocks_per_lcm_block={"history": hk})
    assert grp(pi, "history")["cache_blocks_per_lcm_block"] == hk
    assert grp(pi, "state")["cache_blocks_per_lcm_block"] == \
        grp(un, "state")["cache_blocks_per_lcm_block"]
    # test_explicit_packing_preserves_exact_stride_validation
    _raises(lambda: plan_fields([("history", F("history.k", "plane.shared", (128, 8),
                                               "bfloat16")),
                                 ("state", F("state.ssm", "plane.shared", (128, 3),
                                             "bfloat16"))],
                                prefix_granularity=128, num_lcm_blocks=2,
                                cache_blocks_per_lcm_block={"history": 1, "state": 2}),
            "needs page stride")
    # CapacityReportTest (same file): units, supported requests, dead bytes
    mixed = bind(pack([("history", [F("history.k", "plane.shared", (128, 8), "bfloat16")]),
                       ("state", [F("state.ssm", "plane.shared", (128, 8), "bfloat16")]),
                       ("swa", [F("swa.kv", "plane.shared", (128, 8), "bfloat16")])],
                      prefix_granularity=128), 100)
    rep = capacity_report(mixed, window_tokens={"swa": 512}, per_request_blocks={"state": 2},
                          max_num_seqs=32)
    assert rep["state"]["unit"] == "requests"
    assert rep["state"]["supported_requests"] == 100 * grp(mixed, "state")[
        "cache_blocks_per_lcm_block"] // 2
    assert rep["swa"]["supported_requests"] == 100 * grp(mixed, "swa")[
        "cache_blocks_per_lcm_block"] * 128 // 512
    assert rep["history"]["supported_requests"] is None and rep["history"]["dead_bytes"] == 0
    rep = capacity_report(mixed, window_tokens={"swa": 512}, max_num_seqs=4)
    swa_tokens = 100 * grp(mixed, "swa")["cache_blocks_per_lcm_block"] * 128
    assert rep["swa"]["dead_bytes"] == (swa_tokens - 4 * 512) // 128 * (128 * 8 * 2) > 0
    # ContinuationLayerFieldsTest.test_merged_solve_shares_group_packing
    lay = pack([("history", [F("layer.0.kv", "slot.0", (128, 8), "bfloat16"),
                             F("layer.1.kv", "slot.1", (128, 8), "bfloat16"),
                             F("layer.2.kv", "slot.2", (128, 8), "bfloat16")])],
               prefix_granularity=128)
    p = bind(lay, 2)
    assert dict(lay["group_packing"]) == {"history": 1}
    assert fld(p, "layer.2.kv")["page_stride_bytes"] == fld(p, "layer.0.kv")["page_stride_bytes"]
    assert len(p["planes"]) == 3
    # BindingUtilizationTest.test_wide_group_full_narrow_group_partial
    p = plan_fields([("wide", F("w.kv", "plane.shared", (256,), "uint8")),
                     ("narrow", F("n.state", "plane.shared", (100,), "uint8", False))],
                    prefix_granularity=16, num_lcm_blocks=2,
                    cache_blocks_per_lcm_block={"wide": 1, "narrow": 1},
                    max_padding_fraction=2.0)
    rep = capacity_report(p)
    assert abs(rep["wide"]["binding_utilization"] - 1.0) < 1e-9
    assert abs(rep["narrow"]["binding_utilization"] - 100 / 256) < 1e-3


def _v4_cases():
    """DeepSeek V4 cases of tokenspeed's tests, re-derived."""
    # test/runtime/test_cache_memory_plan.py as of 18e5fd4bd49ce7f1f5b0c349eb0f3a70cb77a2f6 (the
    # parent of 6083537e, which removed it): test_deepseek_v4_recipe_uses_one_p256_scheduler_
    # domain, layer ratios (1, 4, 128), P = 256: layer.0.swa and layer.1.compressed_kv share a
    # plane; layer.1.indexer_kv sits on unit.1; SWA and compressor state are flexible; SWA and
    # compressed KV carry the 576-byte stride alignment; the six group ids.  (Its field shapes
    # were caller-supplied dummies of the old API and are not restated.)
    decls = v4_declarations((1, 4, 128), head_dim=512, rope=64, index_head_dim=128,
                            sliding_window=128, prefix_granularity=256, decode_input_tokens=1,
                            indexer="fp8")
    by = {f.field_id: f for _, fs in decls for f in fs}
    assert by["layer.0.swa"].plane_id == by["layer.1.compressed_kv"].plane_id == "unit.0"
    assert by["layer.1.indexer_kv"].plane_id == "unit.1"
    assert not by["layer.0.swa"].exact_page_stride
    assert not by["layer.1.compressor_state"].exact_page_stride
    assert by["layer.0.swa"].page_stride_alignment_bytes == 576
    assert by["layer.1.compressed_kv"].page_stride_alignment_bytes == 576
    lay = pack([(s.group_id, fs) for s, fs in decls], prefix_granularity=256,
               cache_blocks_per_lcm_block=v4_packing(decls), alignment=256,
               max_padding_fraction=float("inf"))
    p = bind(lay, 4)
    assert p["prefix_granularity"] == 256
    assert {g["group_id"] for g in p["groups"]} == set(SHORT) - {V4_INDEXER_KV_GROUP_ID}

    # test/runtime/test_v4_sliding_window_groups_smoke.py @ c731cb88
    specs = {s.group_id: s for s, _ in decls}
    # test_lcm_specs_own_row_geometry_and_declare_no_packing
    assert specs["v4.swa_kv"].rows_per_page == 64
    assert specs["v4.c4a.compressor_state"].rows_per_page == 4
    assert specs["v4.c128a.compressor_state"].rows_per_page == 8
    # test_c4_state_window_covers_wide_verify_blocks: 8 (t = 1), 10 (t = 6)
    wide = {s.group_id: s for s, _ in v4_declarations(
        (4,), head_dim=512, rope=64, index_head_dim=128, sliding_window=128,
        prefix_granularity=256, decode_input_tokens=6, indexer="fp8")}
    for gid in ("v4.c4a.compressor_state", "v4.c4a.indexer_compressor_state"):
        assert specs[gid].sliding_window_tokens == 8
        assert wide[gid].sliding_window_tokens == 10
    # test_sliding_window_scheduled_tokens_are_global_and_capped: 10*2 + 5 + 10 + 1 = 36
    sl = Spec("sliding", "sliding_window", 4, 1, 8)
    assert page_counts([sl], max_live_requests=10, max_scheduled_tokens=100,
                       max_total_tokens=20, max_context_len=4096)["sliding"] == 36
    # test_page_counts_positive_finite_and_under_total_times_live
    inputs = {"max_live_requests": 32, "max_scheduled_tokens": 2048,
              "max_total_tokens": 64 * 1024, "max_context_len": 64 * 1024}
    for n in page_counts(specs.values(), **inputs).values():
        assert 0 < n < 64 * 1024 * 32
    # test_overlap_page_budget_is_parameterized_by_verify_width_and_depth
    for rows, stride in ((4, 1), (4, 2), (16, 4), (2, 128)):
        raw = rows * stride
        ss = [Spec("full", "full_history", rows, stride, None),
              Spec("sliding", "sliding_window", rows, stride, 3 * raw + 1)]
        common = {"max_live_requests": 3, "max_scheduled_tokens": 1024,
                  "max_total_tokens": 4096, "max_context_len": 4096}
        for vw in (1, 2, 4, 8):
            base = page_counts(ss, **common, decode_input_tokens=vw, overlap_schedule_depth=0)
            for d in (0, 1):
                act = page_counts(ss, **common, decode_input_tokens=vw, overlap_schedule_depth=d)
                prot = 3 * ceil_div(d * vw, raw)
                assert all(act[g] == base[g] + prot for g in ("full", "sliding"))
    # test_lcm_capacity_is_the_inverse_of_parent_demand (packing given by the test)
    gp = (("v4.swa_kv", 1), ("v4.c4a.compressor_state", 4), ("v4.c4a.compressed_kv", 2),
          ("v4.c128a.compressor_state", 1), ("v4.c128a.compressed_kv", 8),
          ("v4.c4a.indexer_compressor_state", 4))
    lim = {"max_live_requests": 1, "max_scheduled_tokens": 256, "max_context_len": 4096,
           "decode_input_tokens": 1, "overlap_schedule_depth": 0}
    sl = list(specs.values())
    cap = capacity_from_parents(sl, gp, lim, 100, 4096)
    assert parents_needed(sl, gp, lim, cap) <= 100 < parents_needed(sl, gp, lim, cap + 1)
    # overlap_schedule truth table (engine/scheduler_utils.should_use_overlap_schedule) is
    # modelled as the `overlap` switch: on by default, off with --no-overlap.


def _hand_cases():
    """Hand derivations of the full V4 plan (rules T1-T10)."""
    here = Path(__file__).resolve().parents[1] / "data"
    for name, m in MODELS.items():
        cfg = json.loads((here / m["config"]).read_text())
        for key in ("num_hidden_layers", "num_nextn_predict_layers", "head_dim",
                    "qk_rope_head_dim", "index_head_dim", "sliding_window",
                    "max_position_embeddings"):
            assert cfg[key] == m[key], (name, key, cfg[key], m[key])
        assert tuple(cfg["compress_ratios"]) == m["compress_ratios"], name
        assert cfg.get("attention_config") is None  # -> FP8 indexer on Hopper (T4)
    # T4 rows: 576 + 8 = 584; 64 rows -> 37376 -> 65*576 = 37440; c128 2 rows 1168 -> 1728;
    # FP8 index 128 + 4 = 132 -> 8448 per page; MXFP4 64 + 4 = 68.
    assert swa_row_bytes(512, 64) == 584 and swa_block_bytes(64, 512, 64) == 37440
    assert swa_block_bytes(2, 512, 64) == 1728
    assert indexer_row_bytes(128, "fp8") == 132 and indexer_row_bytes(128, "fp4") == 68

    M = 1048576
    # V4-Flash: 43 layers (2 SWA-only, 21 x r4, 20 x r128).  raw bytes per group:
    #   swa 43*37440 = 1,609,920; c4kv 21*(37440 + 8448) = 963,648; c4st 21*32768 = 688,128;
    #   idxst 21*8192 = 172,032; c128kv 20*1728 = 34,560; c128st 20*32768 = 655,360.
    # K = pow2 floor of 1609920 // raw: 1, 1, 2 (2), 8 (9), 32 (46), 2 (2).
    # planes: unit.0-19 hold swa 37440, c4kv 37440, c4st 2*32768, idxst 8*8192, c128kv
    #   32*1728 = 55296, c128st 2*32768 -> 65536, alignment lcm(256, 576, 32*576) = 18432
    #   -> 73,728; unit.20 (no c128) -> align 2304 -> 66,816; unit.21-41 (swa, indexer_kv) and
    #   unit.42 (swa) -> round_up(37440, 2304) = 39,168.
    #   parent = 20*73728 + 66816 + 22*39168 = 2,403,072 (a multiple of lcm(256, K) = 256).
    r = plan("v4-flash", 64 << 30, M)
    assert r["packing"] == {"c128kv": 32, "c128st": 2, "c4kv": 1, "c4st": 2, "idxst": 8,
                            "swa": 1}, r["packing"]
    assert r["parent_bytes"] == 2403072 and r["prefix_granularity"] == 256
    # budgeted = 68,719,476,736 // 2,403,072 - 1 = 28,596 - 1 = 28,595.
    # Demand with max_bs 160, chunk 8192, overlap on (protected = 160 per group), T >= 8192:
    #   swa 320 + 128 + 160 + 160 = 768; c4st (320 + 2048 + 320)/2 = 1344; idxst 2688/8 = 336;
    #   c128st (2560 + 1024 + 320)/2 = 1952  -> 4400 fixed;  c4kv N + 320, c128kv
    #   ceil((N + 320)/32), N = ceil(T/256).  M + ceil(M/32) <= 28595 - 4400 = 24195
    #   -> M = 23461 (23461 + 734 = 24195) -> N = 23141 -> T = 5,924,096; parents = 28,595.
    assert r["budgeted_parents"] == 28595 and r["parents"] == 28595
    assert r["token_capacity"] == 5924096
    assert r["log"] == (
        "Cache profile: parent_bytes=2403072, P=256, parents=28595, token_capacity=5924096, "
        "layers=43 (draft 0), groups={'v4.c128a.compressed_kv': 32, "
        "'v4.c128a.compressor_state': 2, 'v4.c4a.compressed_kv': 1, "
        "'v4.c4a.compressor_state': 2, 'v4.c4a.indexer_compressor_state': 8, "
        "'v4.swa_kv': 1}"), r["log"]
    # Overlap off: protected = 0 -> fixed 608 + 1264 + 316 + 1872 = 4060; c4kv N + 160:
    #   M + ceil(M/32) <= 24535 -> M = 23791 (+744) -> N = 23631 -> T = 6,049,536.
    r = plan("v4-flash", 64 << 30, M, overlap=False)
    assert r["parents"] == 28595 and r["token_capacity"] == 6049536, r
    # Flash, 8 GiB: budgeted = 8,589,934,592 // 2,403,072 - 1 = 3,573.  T < chunk, so the
    # sliding groups see min(8192, T) = T.  Overlap on, T = 3192: swa 320 + 50 + 320 = 690;
    # c4kv 13 + 320 = 333; c4st (320 + 798 + 320)/2 = 719; idxst 1438/8 -> 180; c128kv
    # 333/32 -> 11; c128st (2560 + 399 + 320)/2 -> 1640; sum 3573.  T = 3193 adds a c4st page.
    r = plan("v4-flash", 8 << 30, M)
    assert (r["parents"], r["token_capacity"]) == (3573, 3192), r
    # Overlap off, T = 5312: 563 + 181 + 904 + 226 + 6 + 1692 = 3572; T = 5313 needs 3576, so
    # one budgeted parent stays unused (parents = parents_needed(cap), T9).
    r = plan("v4-flash", 8 << 30, M, overlap=False)
    assert (r["budgeted_parents"], r["parents"], r["token_capacity"]) == (3573, 3572, 5312), r
    # V4-Pro: 61 layers (30 x r4, 31 x r128, none SWA-only); same K.  planes unit.0-29 and
    # unit.30 (swa, indexer_kv, c128kv, c128st) 73,728 each; unit.31-59 (swa, indexer_kv) and
    # unit.60 (swa) 39,168 each -> 31*73728 + 30*39168 = 3,460,608.
    # 64 GiB: budgeted 19,857 - 1 = 19,856; fixed 4400 (demand per group does not depend on the
    # layer count) -> M + ceil(M/32) <= 15456 -> M = 14987 -> T = 14667*256 = 3,754,752.
    r = plan("v4-pro", 64 << 30, M)
    assert (r["parent_bytes"], r["parents"], r["token_capacity"]) == (3460608, 19856, 3754752)
    r = plan("v4-pro", 64 << 30, M, overlap=False)   # 15796 -> M = 15317 -> T = 3,880,192
    assert (r["parents"], r["token_capacity"]) == (19856, 3880192), r
    # Pro, 8 GiB: budgeted 2482 - 1 = 2481.  Overlap on, T = 1 already needs
    # 641 + 321 + 321 + 81 + 11 + 1441 = 2816 > 2481 -> tokenspeed refuses to start.
    _raises(lambda: plan("v4-pro", 8 << 30, M),
            "num_lcm_blocks=2481 cannot admit one token with the configured deepseek_v4")
    # Overlap off: T = 1 needs 2311; the search ends at T = 728 with all 2481 parents.
    r = plan("v4-pro", 8 << 30, M, overlap=False)
    assert (r["parents"], r["token_capacity"]) == (2481, 728), r
    # MTP draft (44 / 62 layers, one more SWA-only plane; max_num_seqs 80, t = 4):
    r = plan("v4-flash", 64 << 30, M, draft=True)
    assert r["parent_bytes"] == 2403072 + 39168 and r["layers"] == 44 and r["draft_layers"] == 1
    assert "layers=44 (draft 1)" in r["log"]
    # Invariants of T9 on a grid of budgets
    for model in MODELS:
        for gib in (8, 16, 64, 141):
            for ov in (True, False):
                try:
                    q = plan(model, gib << 30, M, overlap=ov)
                except Refusal as exc:
                    assert "cannot admit one token" in str(exc)
                    continue
                assert q["parents"] <= q["budgeted_parents"]
                assert (q["parents"] + 1) * q["parent_bytes"] <= gib << 30
                assert q["token_capacity"] >= 1
    # Refusals
    _raises(lambda: plan("v4-flash", 2403072 * 2 - 1, M), "null parent and one usable")
    _raises(lambda: plan("v4-flash", 2403072 * 100, M), "cannot admit one token")
    _raises(lambda: plan("v4-flash", 64 << 30, M + 1), "greater than the derived")

    # tokenspeed 0.1.1 (R1-R3).  V4-Flash raw bytes: swa 1,609,920; c4kv 21*37440 = 786,240;
    # idxkv 21*8448 = 177,408; c4st 688,128; idxst 172,032; c128kv 34,560; c128st 655,360.
    # K = pow2 floor of 1609920 // raw: swa 1, c4kv 2 (2), idxkv 8 (9), c4st 2, idxst 8, c128kv
    # 32, c128st 2.  planes unit.0-19: c4kv 2*37440 = 74,880 the largest, alignment
    # lcm(256, 2*576, 32*576) = 18432 -> 92,160; unit.20 (no c128): 74,880 -> align 2304 ->
    # 76,032; unit.21-42 (swa alone) 39,168.  20*92160 + 76032 + 22*39168 = 2,780,928.
    r = plan("v4-flash", 64 << 30, M, release=RELEASE_011)
    assert r["packing"] == {"c128kv": 32, "c128st": 2, "c4kv": 2, "c4st": 2, "idxst": 8,
                            "idxkv": 8, "swa": 1}, r["packing"]
    assert r["parent_bytes"] == 20 * 92160 + 76032 + 22 * 39168 == 2780928, r["parent_bytes"]
    # budgeted = 68,719,476,736 // 2,780,928 - 1 = 24,709; sliding groups 4,400 as above; the
    # history groups x = ceil(T/256) + 320 pages each, ceil(x/2) + ceil(x/8) + ceil(x/32)
    # parents <= 20,309: x = 30,944 (15,472 + 3,868 + 967 = 20,307; x + 1 needs 20,310)
    # -> ceil(T/256) = 30,624 -> T = 7,839,744, parents 24,707.
    assert (r["budgeted_parents"], r["parents"], r["token_capacity"]) == (24709, 24707, 7839744), r
    assert r["log"] == (
        "Cache profile: parent_bytes=2780928, P=256, parents=24707, token_capacity=7839744, "
        "layers=43 (draft 0), groups={'v4.c128a.compressed_kv': 32, "
        "'v4.c128a.compressor_state': 2, 'v4.c4a.compressed_kv': 2, "
        "'v4.c4a.compressor_state': 2, 'v4.c4a.indexer_compressor_state': 8, "
        "'v4.c4a.indexer_kv': 8, 'v4.swa_kv': 1}"), r["log"]
    # V4-Pro: c4kv 30*37440 = 1,123,200 (K 2), idxkv 253,440 (K 8), c128kv 53,568 (K 32):
    # unit.0-29 92,160; unit.30 (c128 fields and swa: 65,536 -> 18432-aligned) 73,728;
    # unit.31-60 39,168: 30*92160 + 73728 + 30*39168 = 4,013,568.
    r = plan("v4-pro", 64 << 30, M, release=RELEASE_011)
    assert r["parent_bytes"] == 30 * 92160 + 73728 + 30 * 39168 == 4013568, r["parent_bytes"]
    # MTP draft: one more SWA-only plane; R2: the c4 state windows stay 8 at t = 4.
    r = plan("v4-flash", 64 << 30, M, draft=True, release=RELEASE_011)
    assert r["parent_bytes"] == 2780928 + 39168, r["parent_bytes"]
    d = v4_declarations((4,), head_dim=512, rope=64, index_head_dim=128, sliding_window=128,
                        prefix_granularity=256, decode_input_tokens=6, indexer="fp8",
                        release=RELEASE_011)
    assert {s.group_id: s.sliding_window_tokens for s, _ in d}["v4.c4a.compressor_state"] == 8
    _raises(lambda: plan("v4-flash", 2780928 * 2 - 1, M, release=RELEASE_011),
            "deepseek_v4 cache budget must hold a null parent and one usable LCM parent")


def self_test():
    _planner_cases()
    _v4_cases()
    _hand_cases()
    print("self-test passed")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--json", nargs=3, metavar=("MODEL", "BUDGET_BYTES", "MAX_MODEL_LEN"))
    ap.add_argument("--max-num-seqs", type=int)
    ap.add_argument("--chunk", type=int, help="chunked_prefill_size (default 8192)")
    ap.add_argument("--no-overlap", action="store_true", help="--disable-overlap-schedule")
    ap.add_argument("--draft", action="store_true", help="MTP draft (speculative_algorithm MTP)")
    ap.add_argument("--num-draft-tokens", type=int, help="speculative_num_draft_tokens (4)")
    ap.add_argument("--indexer", choices=("fp8", "fp4", "mxfp4"), default="fp8")
    ap.add_argument("--max-total-tokens", type=int)
    ap.add_argument("--release", choices=(PIN, RELEASE_011), default=PIN,
                    help="tokenspeed's rules: the pin f4d8ec6e (default) or the release 0.1.1")
    a = ap.parse_args(argv)
    if a.self_test:
        try:
            self_test()
        except AssertionError as exc:
            print(f"self-test FAILED: {exc!r}", file=sys.stderr)
            raise
        return 0
    if not a.json:
        ap.error("--json MODEL BUDGET_BYTES MAX_MODEL_LEN or --self-test is required")
    model, budget, mml = a.json
    if model not in MODELS:
        ap.error(f"MODEL must be one of {sorted(MODELS)}")
    try:
        res = plan(model, int(budget), int(mml), max_num_seqs=a.max_num_seqs,
                   chunked_prefill=a.chunk, overlap=not a.no_overlap, draft=a.draft,
                   indexer=a.indexer, max_total_tokens=a.max_total_tokens,
                   num_draft_tokens=a.num_draft_tokens, release=a.release)
    except ValueError as exc:
        json.dump({"model": model, "budget_bytes": int(budget), "max_model_len": int(mml),
                   "error": str(exc)}, sys.stdout, indent=1)
        print()
        return 1
    json.dump(res, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
