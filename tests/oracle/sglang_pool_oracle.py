#!/usr/bin/env python3
"""Independent oracle of how SGLang sizes its DeepSeek V4 KV-cache pools.
Standard library only (Python 3.11).

Pinned version [G] = sgl-project/sglang cce0a1244b5a3ee60411fb403f65f856a1d012f0 (2026-08-23,
"refactor(disagg): hoist staging helper imports out of the bootstrap loops (#35980)"), read with
`git show` from the fork snapshot HaiShaw/sglang, which holds that upstream commit. Written from
SGLang's code and docs/engines/sglang-pools.md (used as a map; every rule was re-read in [G]),
apart from this project's C++. Line numbers are [G]'s.

What it reproduces (target worker, pp = 1, CUDA, no HiSparse unless c4_shrink_factor > 1,
SGLANG_OPT_USE_ONLINE_COMPRESS off, not PD decode unless disaggregation_decode):

S1  Server-arg defaults for DeepseekV4ForCausalLM
    - arg_groups/overrides.py:1139-1167 `_deepseek_v4_overrides`: page_size 256; and
      swa_full_tokens_ratio 0.1 when it equals the class default 0.8 (server_args.py:931-943), so
      an explicit 0.8 also becomes 0.1 (this oracle does the same, with SGLang's info line).
    - arg_groups/deepseek_v4_hook.py:138-142: max_running_requests None -> 256 (warning
      "Setting max_running_requests to 256 for DeepseekV4ForCausalLM."). It runs before the
      speculative hook, whose "48 if None" therefore never fires for V4.
S2  Model geometry (configs/model_config.py:946-958, V4 branch): qk_rope_head_dim = hf
    qk_rope_head_dim; qk_nope_head_dim = hf head_dim - qk_rope_head_dim (448);
    window_size = hf sliding_window (128); index_head_dim = hf index_head_dim (128);
    compress_ratios = hf compress_ratios (the whole list). (The DeepSeekV4Config dataclass
    defaults in configs/deepseek_v4.py, qk_nope_head_dim 448 / window_size 128, are not what
    the configurator reads; the HF config has neither key. The values agree for V4-Flash/Pro.)
    context_len = get_context_length (utils/hf_transformers/common.py:563-580):
    max_position_embeddings, times rope factor unless rope_scaling has
    original_max_position_embeddings (V4 has it) -> 1,048,576.
S3  Layer slice: DSV4PoolConfigurator (model_executor/pool_configurator.py:767-813) uses
    compress_ratios[start_layer:end_layer]; ModelLayerInfo comes from the model's make_layers
    (models/deepseek_v4.py:2697, range(num_hidden_layers)) -> [0, num_hidden_layers) at pp = 1
    (model_runner_components/layer_setup.py:117-190). The MTP entry is NOT counted.

    What the configs say (checked from tests/data/*.config.json):
    - V4-Flash: num_hidden_layers 43, num_nextn_predict_layers 1, len(compress_ratios) = 44,
      so compress_ratios DOES list the MTP layer (index 43, ratio 0). Layers 0..42:
      SWA-only (ratio 0): 0, 1 (2 layers); CSA (ratio 4): 2, 4, ..., 42 (21 layers);
      HCA (ratio 128): 3, 5, ..., 41 (20 layers). The worked example's 2/21/20 split holds.
    - V4-Pro: num_hidden_layers 61, len(compress_ratios) = 62 (MTP at index 61, ratio 0).
      Layers 0..60: no SWA-only layer; HCA: 0, 1, 3, 5, ..., 59 (31); CSA: 2, 4, ..., 60 (30).
S4  Rings (mem_cache/deepseek_v4_memory_pool.py:34-56): c4 8, c128 128; speculative 16 / 256.
    With speculation the draft count must be <= ring - window + 2 (c4: window 8 -> 10;
    c128: window 128 -> 130), asserted at pool_configurator.py:861-879 with the draft count
    max_speculative_num_draft_tokens (V4 auto: 4).
S5  bytes_per_full_token (pool_configurator.py:881-921), evaluated in the same float order:
      kv = nope + 2*rope + 8 = 584; idx = d + d//128*4 = 132; head = nope + rope = 512
      c4_state = 2*2*head*4 = 8192; c4_idx_state = 2*2*d*4 = 2048 (fp32; SGLANG_DSV4_COMPRESS_
      STATE_DTYPE=bf16 gives 2 B); c4_state_ratio = ring4 / window (128, not the page size)
      bpft = r*kv*L + (1/(4*s))*kv*L4 + 1/128*kv*L128 + 1/4*idx*L4
             + r*c4_state_ratio*c4_state*L4 + 0 + r*c4_state_ratio*c4_idx_state*L4
    Speculative (821-829): bpft *= (L + 1) / L (one draft layer, always).
S6  Fixed bytes first (940-973): requests = max_running_requests // attn_dp_size (set by S1);
    slots = requests + 1 (+ decode extra slots in PD decode); rows = ceil((slots*ring128 +
    ring128 + 1) / 128) * 128; bytes = rows * 2*head * 4 * L128. (Only if mrr is None and the
    hook is bypassed: requests = min(clamp(int(int(avail/bpft)/context_len*512), 2048, 4096),
    int(avail/bpft)//2).)
S7  calculate_pool_sizes (1006-1034): assert page_size % 128 == 0;
    full = int(max(avail - fixed, 0) / bpft); full = full // page * page;
    swa = int(full * r) // page * page; c4 = full // (4*s); c128 = full // 128;
    c4_state = swa // window(128) * ring4; c128_state = 0. Logs
    "DSV4 memory calculation: ..." then "DSV4 pool sizes: ..." (_to_config, 975-993), then
    MemoryPoolConfig.__post_init__ (73-78) raises RuntimeError "Not enough memory. Please try
    to increase --mem-fraction-static." when full <= 0 (mem_fraction_static is not passed there,
    so no "Current value" suffix).
S8  mem_cache/kv_cache_configurator.py: config_from_budget (2008-2029) applies
    --max-total-tokens (_apply_token_constraints, 1906-1933: warning when larger, then min) and re-runs only
    _compute_dsv4_sizes when the value changed (logs "DSV4 pool sizes" again);
    resolve_max_num_reqs (1935-1988): min(mrr // attn_dp, full // 2) (warning when reduced);
    finalize_with_max_running_requests (995-1004): c128_state = (mrr + 1) * ring128.
S9  Pool build: _build_dsv4_kv_pool asserts page_size == 256 ("In paged swa mode, page_size must
    be 256.", kv_cache_configurator.py:1085-1086); DeepSeekV4TokenToKVPool logs its sizes
    (deepseek_v4_memory_pool.py:504-509); tp_worker.py:410 asserts max_running_requests > 0
    ("max_running_request is zero"). Allocated state rows (deepseek_v4_compress_state.py:118-128):
    ceil((size + ring + 1) / ratio) * ratio, c128 size = max(cfg, slots * ring128).
S10 Scheduler log (managers/scheduler.py:1095-1103): "max_total_num_tokens=..., chunked_prefill_
    size=..., max_prefill_tokens=..., max_running_requests=..., context_len=...,
    available_gpu_mem=X.XX GB". chunked_prefill_size (8192 on H100/H200-class memory),
    max_prefill_tokens (16384) and available_gpu_mem (free memory after all init) are inputs
    here; without available_gpu_mem_gb the line stops after context_len.

Output keys of configure(): bytes_per_full_token (float), fixed_bytes (c128 state reservation),
full_tokens (= max_total_num_tokens), swa_tokens, c4_tokens, c128_tokens, c4_state_rows
(configurator's c4_state_pool_size), c128_state_rows (c128_state_pool_size after finalize),
c4_state_alloc_rows / c128_state_alloc_rows (rows CompressStatePool allocates per layer),
max_running_requests (per attention-DP worker, as the scheduler prints it), layer counts, rings,
and logs (every line in order, plus log_memory_calculation / log_pool_sizes / log_scheduler).

Usage:
  python3 tests/oracle/sglang_pool_oracle.py --self-test
  python3 tests/oracle/sglang_pool_oracle.py --config tests/data/deepseek-v4-flash.config.json \\
      --available-gib 64 [--max-running-requests N] [--speculative] [--json]
"""

import argparse
import json
import sys
from pathlib import Path

GIB = 1 << 30
ARCH = "DeepseekV4ForCausalLM"
SWA_RATIO_CLASS_DEFAULT = 0.8   # server_args.py:943
V4_SWA_RATIO = 0.1              # overrides.py:1165-1167
V4_DEFAULT_MRR = 256            # deepseek_v4_hook.py:138-139
NOT_ENOUGH_MEMORY = "Not enough memory. Please try to increase --mem-fraction-static."


class SGLangError(Exception):
    """A refusal SGLang raises; .sglang_type is the Python type SGLang raises, .logs the lines
    SGLang printed before it."""

    sglang_type = "Exception"

    def __init__(self, message, logs=()):
        super().__init__(message)
        self.message = message
        self.logs = list(logs)


class SGLangRuntimeError(SGLangError, RuntimeError):
    sglang_type = "RuntimeError"


class SGLangAssertionError(SGLangError, AssertionError):
    sglang_type = "AssertionError"


class SGLangValueError(SGLangError, ValueError):
    sglang_type = "ValueError"


def ceil_div(a, b):
    return -(-a // b)


def load_config(path):
    with open(path) as f:
        return json.load(f)


def context_length(cfg):
    """utils/hf_transformers/common.py:563-580 get_context_length."""
    rs = cfg.get("rope_scaling")
    if rs:
        factor = rs.get("factor", 1)
        if "original_max_position_embeddings" in rs:
            factor = 1
        if rs.get("rope_type", None) == "llama3":
            factor = 1
    else:
        factor = 1
    for key in ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                "max_position_embeddings"):
        if cfg.get(key) is not None:
            return int(factor * cfg[key])
    return 2048


def ring_size(ratio, speculative):
    """deepseek_v4_memory_pool.py:34-48 (online c128 off)."""
    assert ratio in (4, 128), f"Unsupported compress_ratio = {ratio}"
    if speculative:
        return 16 if ratio == 4 else 256
    return 8 if ratio == 4 else 128


def write_pad(ratio, ring):
    """deepseek_v4_memory_pool.py:51-56."""
    window = ratio * (2 if ratio == 4 else 1)
    return ring - window + 2 if ring > window else 0


def layer_counts(cfg, start_layer=0, end_layer=None):
    if end_layer is None:
        end_layer = cfg["num_hidden_layers"]
    ratios = list(cfg["compress_ratios"][start_layer:end_layer])
    return ratios, len(ratios), sum(1 for r in ratios if r == 4), \
        sum(1 for r in ratios if r == 128)


def configure(config, available_bytes, max_running_requests=None, swa_full_tokens_ratio=0.1,
              speculative=False, attn_dp=1, page_size=256, *, num_draft_tokens=4,
              max_total_tokens=None, context_len=None, state_dtype_bytes=4,
              c4_shrink_factor=1, disaggregation_decode=False, decode_extra_slots=0,
              apply_v4_hook=True, chunked_prefill_size=8192, max_prefill_tokens=16384,
              available_gpu_mem_gb=None):
    """What [G]'s DSV4 path computes for one attention-DP worker; see the module docstring.
    Raises an SGLangError subclass (with SGLang's message) where SGLang refuses."""
    logs = []
    avail = int(available_bytes)
    if avail <= 0:
        # _profile_available_bytes raises when rest_memory <= 0 (kv_cache_configurator.py:
        # 1855-1871); its text quotes mem_fraction_static and free memory, unknown here.
        raise SGLangValueError("Loaded weights leave no GPU memory for the KV cache under "
                               "--mem-fraction-static=<mfs>. ...", logs)

    # S1: server-arg defaults.
    ratio = swa_full_tokens_ratio
    if ratio == SWA_RATIO_CLASS_DEFAULT:
        ratio = V4_SWA_RATIO
        logs.append(f"Setting swa_full_tokens_ratio to 0.1 for {ARCH}.")
    mrr_arg = max_running_requests
    if mrr_arg is None and apply_v4_hook:
        mrr_arg = V4_DEFAULT_MRR
        logs.append(f"Setting max_running_requests to {mrr_arg} for {ARCH}.")

    # S2/S3: geometry and this stage's layers.
    rope = config["qk_rope_head_dim"]
    nope = config["head_dim"] - rope
    window = config["sliding_window"]
    d_idx = config["index_head_dim"]
    ctx = context_len if context_len is not None else context_length(config)
    ratios, L, L4, L128 = layer_counts(config)
    for r in ratios:
        if r not in (0, 4, 128):
            raise SGLangValueError(f"Unsupported compression ratio: {r}", logs)

    # S4.
    ring4 = ring_size(4, speculative)
    ring128 = ring_size(128, speculative)
    requested = mrr_arg // attn_dp if mrr_arg is not None else None
    s = c4_shrink_factor
    assert s >= 1
    if speculative:
        for cr, ring, n in ((4, ring4, L4), (128, ring128, L128)):
            if n == 0:
                continue
            mx = write_pad(cr, ring)
            if not num_draft_tokens <= mx:
                raise SGLangAssertionError(
                    f"speculative_num_draft_tokens={num_draft_tokens} exceeds what the c{cr} "
                    f"compress state ring can keep resident (ring_size={ring} serves at most "
                    f"{mx} draft tokens). Lower the draft count, or grow the ring in "
                    f"get_compress_state_ring_size().", logs)

    # S5: same expression, same order, as _get_bytes_per_full_token.
    kv_bytes = nope + rope * 2 + 8
    indexer_bytes = d_idx + d_idx // 128 * 4
    head = nope + rope
    c4_state_bytes = 2 * 2 * head * state_dtype_bytes
    c128_state_bytes = 2 * 1 * head * state_dtype_bytes
    c4_indexer_state_bytes = 2 * 2 * d_idx * state_dtype_bytes
    c4_state_ratio = ring4 / window
    c128_state_ratio = 0
    c4_frac = 1 / (4 * s)
    bpft = (
        ratio * kv_bytes * L
        + c4_frac * kv_bytes * L4
        + 1 / 128 * kv_bytes * L128
        + 1 / 4 * indexer_bytes * L4
        + ratio * c4_state_ratio * c4_state_bytes * L4
        + c128_state_ratio * c128_state_bytes * L128
        + ratio * c4_state_ratio * c4_indexer_state_bytes * L4
    )
    if speculative:
        bpft *= (L + 1) / L

    def slots(mrr):
        return mrr + decode_extra_slots + 1 if disaggregation_decode else mrr + 1

    def c128_fixed(mrr):
        if L128 == 0:
            return 0
        rows = slots(mrr) * ring128 + ring128 + 1
        rows = ceil_div(rows, 128) * 128
        return rows * (2 * head) * state_dtype_bytes * L128

    def sizes(full):
        full = full // page_size * page_size
        swa = int(full * ratio) // page_size * page_size
        return {"full": full, "swa": swa, "c4": full // (4 * s), "c128": full // 128,
                "c4_state": swa // window * ring4, "c128_state": 0}

    def pool_log(z):
        return (f"DSV4 pool sizes: full={z['full']}, swa={z['swa']}, c4={z['c4']}, "
                f"c128={z['c128']}, c4_state={z['c4_state']}, c128_state={z['c128_state']}")

    # S6/S7: calculate_pool_sizes.
    if page_size % 128 != 0:
        raise SGLangAssertionError(
            "page_size must be multiple of 128 for compressed attention", logs)
    if requested is not None:
        fixed = c128_fixed(requested)
    else:
        f0 = int(avail / bpft)
        est = max(min(int(f0 / ctx * 512), 4096), 2048)
        fixed = c128_fixed(min(est, f0 // 2))
    full_token = int(max(avail - fixed, 0) / bpft)
    z = sizes(full_token)
    log_mem = (f"DSV4 memory calculation: bytes_per_full_token={bpft:.2f}, "
               f"available_bytes={avail / (1 << 30):.2f} GB, "
               f"c128_state_fixed={fixed / (1 << 30):.2f} GB, full_token={z['full']}")
    logs.append(log_mem)
    log_sizes = pool_log(z)
    logs.append(log_sizes)
    if z["full"] <= 0:
        raise SGLangRuntimeError(NOT_ENOUGH_MEMORY, logs)

    # S8: token constraints, then requests, then finalize.
    if max_total_tokens is not None:
        cap = z["full"]
        if max_total_tokens > cap:
            logs.append(f"max_total_tokens={max_total_tokens} is larger than the profiled "
                        f"value {cap}. Use the profiled value instead.")
        cap = min(cap, max_total_tokens)
        if cap != z["full"]:
            z = sizes(cap)
            logs.append(pool_log(z))
            if z["full"] <= 0:
                raise SGLangRuntimeError(NOT_ENOUGH_MEMORY, logs)
    full = z["full"]
    if mrr_arg is not None:
        req = mrr_arg // attn_dp
        mrr = min(req, full // 2)
        if mrr < req:
            logs.append(f"max_running_requests was reduced from the requested {req} to {mrr} "
                        f"(per dp worker) due to the available KV cache capacity.")
    else:
        mrr = min(max(min(int(full / ctx * 512), 4096), 2048), full // 2)
    c128_state = slots(mrr) * ring128

    # S9: pool build.
    if page_size != 256:
        raise SGLangAssertionError("In paged swa mode, page_size must be 256.", logs)
    logs.append(f"Initialize DeepSeekV4TokenToKVPool with max_num_reqs={mrr} "
                f"swa_size={z['swa']} c4_size={z['c4']} c4_logical_size={z['c128'] * 32} "
                f"c128_size={z['c128']} c4_state_pool_size={z['c4_state']} "
                f"c128_state_pool_size={c128_state}")
    if not mrr > 0:
        raise SGLangAssertionError("max_running_request is zero", logs)
    if not min(ctx - 1, full - 1) > 0:
        raise SGLangAssertionError("Memory pool size is too small", logs)
    c4_alloc = ceil_div(z["c4_state"] + ring4 + 1, 4) * 4
    c128_alloc = ceil_div(max(c128_state, slots(mrr) * ring128) + ring128 + 1, 128) * 128

    # S10.
    log_sched = (f"max_total_num_tokens={full}, chunked_prefill_size={chunked_prefill_size}, "
                 f"max_prefill_tokens={max_prefill_tokens}, max_running_requests={mrr}, "
                 f"context_len={ctx}")
    if available_gpu_mem_gb is not None:
        log_sched += f", available_gpu_mem={available_gpu_mem_gb:.2f} GB"
    logs.append(log_sched)

    return {
        "bytes_per_full_token": bpft,
        "fixed_bytes": fixed,
        "available_bytes": avail,
        "full_tokens": full,
        "max_total_num_tokens": full,
        "swa_tokens": z["swa"],
        "c4_tokens": z["c4"],
        "c128_tokens": z["c128"],
        "c4_state_rows": z["c4_state"],
        "c128_state_rows": c128_state,
        "c4_state_alloc_rows": c4_alloc,
        "c128_state_alloc_rows": c128_alloc,
        "max_running_requests": mrr,
        "swa_full_tokens_ratio": ratio,
        "layers": L, "csa_layers": L4, "hca_layers": L128, "swa_only_layers": L - L4 - L128,
        "c4_ring": ring4, "c128_ring": ring128,
        "context_len": ctx,
        "log_memory_calculation": log_mem,
        "log_pool_sizes": log_sizes,
        "log_scheduler": log_sched,
        "logs": logs,
    }


def _expect_refusal(cls, msg, fn):
    try:
        fn()
    except cls as e:
        assert e.message == msg, (e.message, msg)
        return e
    raise AssertionError(f"expected {cls.__name__}: {msg}")


def self_test():
    data = Path(__file__).resolve().parents[1] / "data"
    flash = load_config(data / "deepseek-v4-flash.config.json")
    pro = load_config(data / "deepseek-v4-pro.config.json")

    # ---- layer split (read off the configs by hand) ----
    # Flash: 44 ratios = 43 layers + MTP (index 43, ratio 0); 0,1 -> 0; even 2..42 -> 4;
    # odd 3..41 -> 128.  Pro: 62 = 61 + MTP (index 61, 0); 0,1 and odd 3..59 -> 128; even -> 4.
    assert len(flash["compress_ratios"]) == 44 and flash["compress_ratios"][43] == 0
    assert layer_counts(flash)[1:] == (43, 21, 20)
    assert [i for i, r in enumerate(flash["compress_ratios"][:43]) if r == 0] == [0, 1]
    assert len(pro["compress_ratios"]) == 62 and pro["compress_ratios"][61] == 0
    assert layer_counts(pro)[1:] == (61, 30, 31)

    # ---- bytes per full token (hand, S5), ratio 0.1, fp32 state ----
    # Flash: 0.1*584*43 = 2511.2; 0.25*584*21 = 3066; 584/128*20 = 91.25; 0.25*132*21 = 693;
    #   0.1*(8/128)*8192*21 = 1075.2; 0.1*(8/128)*2048*21 = 268.8  -> 7705.45
    # Flash spec (rings 16): 1075.2 -> 2150.4, 268.8 -> 537.6 -> 9049.45; *44/43 = 9259.9023...
    # Pro: 0.1*584*61 = 3562.4; 146*30 = 4380; 4.5625*31 = 141.4375; 33*30 = 990;
    #   51.2*30 = 1536; 12.8*30 = 384 -> 10993.8375
    # Pro spec: + 1536 + 384 = 12913.8375; *62/61 = 13125.5397...
    fA = configure(flash, 64 * GIB)
    assert abs(fA["bytes_per_full_token"] - 7705.45) < 1e-9
    fB = configure(flash, 64 * GIB, speculative=True)
    assert abs(fB["bytes_per_full_token"] - 9049.45 * 44 / 43) < 1e-9
    assert f"{fB['bytes_per_full_token']:.2f}" == "9259.90"
    pA = configure(pro, 64 * GIB)
    assert abs(pA["bytes_per_full_token"] - 10993.8375) < 1e-9
    pB = configure(pro, 64 * GIB, speculative=True)
    assert f"{pB['bytes_per_full_token']:.2f}" == "13125.54"

    # ---- c128 fixed bytes (hand, S6): row = 2*512*4 = 4096 B ----
    # mrr 256, ring 128: 257*128 = 32896, +129 = 33025 -> 259*128 = 33152 rows.
    #   Flash (20 HCA): 33152*4096*20 = 2,715,811,840;  Pro (31): 33152*126976 = 4,209,508,352.
    # mrr 256, ring 256: 257*256 = 65792, +257 = 66049 -> 517*128 = 66176 rows.
    #   Flash: 66176*81920 = 5,421,137,920;  Pro: 66176*126976 = 8,402,763,776.
    # mrr 64, ring 128: 65*128 = 8320, +129 = 8449 -> 67*128 = 8576 -> Flash 702,545,920.
    # mrr 1024, ring 128: 1025*128 = 131200, +129 = 131329 -> 1027*128 = 131456 rows
    #   -> Flash 131456*81920 = 10,768,875,520.
    assert fA["fixed_bytes"] == 2715811840 and fB["fixed_bytes"] == 5421137920
    assert pA["fixed_bytes"] == 4209508352 and pB["fixed_bytes"] == 8402763776

    # ---- Flash 64 GiB, default mrr (256), no speculation ----
    # 64 GiB = 68,719,476,736; minus 2,715,811,840 = 66,003,664,896; / 7705.45 = 8,565,841.7
    # -> 8,565,841 -> floor 256: 33,460 pages = 8,565,760.
    # swa = int(856,576.0) = 856,576 -> //256*256 = 856,576 (3346 pages).
    # c4 = 2,141,440; c128 = 66,920; c4_state = 856,576//128*8 = 6692*8 = 53,536.
    # mrr = min(256, 4,282,880) = 256; c128_state = 257*128 = 32,896.
    # Alloc rows: c4 ceil((53536+9)/4)*4 = 53,548; c128 ceil((32896+129)/128)*128 = 33,152.
    assert (fA["full_tokens"], fA["swa_tokens"], fA["c4_tokens"], fA["c128_tokens"],
            fA["c4_state_rows"], fA["c128_state_rows"], fA["max_running_requests"]) == \
        (8565760, 856576, 2141440, 66920, 53536, 32896, 256), fA
    assert (fA["c4_state_alloc_rows"], fA["c128_state_alloc_rows"]) == (53548, 33152)
    # 2,715,811,840 / 2^30 = 2.529 -> "2.53".
    assert fA["log_memory_calculation"] == (
        "DSV4 memory calculation: bytes_per_full_token=7705.45, available_bytes=64.00 GB, "
        "c128_state_fixed=2.53 GB, full_token=8565760"), fA["log_memory_calculation"]
    assert fA["log_pool_sizes"] == ("DSV4 pool sizes: full=8565760, swa=856576, c4=2141440, "
                                    "c128=66920, c4_state=53536, c128_state=0")
    assert fA["log_scheduler"] == (
        "max_total_num_tokens=8565760, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=256, context_len=1048576")
    assert fA["logs"][0] == "Setting max_running_requests to 256 for DeepseekV4ForCausalLM."

    # ---- Flash 64 GiB, speculative (rings 16/256) ----
    # 68,719,476,736 - 5,421,137,920 = 63,298,338,816; / 9259.9023 = 6,835,745.8 -> 6,835,745
    # -> floor 256: 26,702 pages = 6,835,712. swa = int(683,571.2) = 683,571 -> 683,520.
    # c4 = 1,708,928; c128 = 53,404; c4_state = 683,520//128*16 = 5340*16 = 85,440.
    # c128_state = 257*256 = 65,792.  5,421,137,920 / 2^30 = 5.049 -> "5.05".
    assert (fB["full_tokens"], fB["swa_tokens"], fB["c4_tokens"], fB["c128_tokens"],
            fB["c4_state_rows"], fB["c128_state_rows"], fB["max_running_requests"]) == \
        (6835712, 683520, 1708928, 53404, 85440, 65792, 256), fB
    assert fB["log_memory_calculation"] == (
        "DSV4 memory calculation: bytes_per_full_token=9259.90, available_bytes=64.00 GB, "
        "c128_state_fixed=5.05 GB, full_token=6835712")

    # ---- Flash 64 GiB, --max-running-requests 64 ----
    # 68,719,476,736 - 702,545,920 = 68,016,930,816; / 7705.45 = 8,827,119.9 -> 8,827,119
    # -> 34,480 pages = 8,826,880. swa int(882,688.0) -> 882,688 (3448 pages).
    # c4 2,206,720; c128 68,960; c4_state 6896*8 = 55,168; mrr 64; c128_state 65*128 = 8,320.
    fC = configure(flash, 64 * GIB, max_running_requests=64)
    assert (fC["fixed_bytes"], fC["full_tokens"], fC["swa_tokens"], fC["c4_tokens"],
            fC["c128_tokens"], fC["c4_state_rows"], fC["c128_state_rows"],
            fC["max_running_requests"]) == \
        (702545920, 8826880, 882688, 2206720, 68960, 55168, 8320, 64), fC
    assert not any(l.startswith("Setting max_running_requests") for l in fC["logs"])
    # mrr 64 + speculation: 65*256 = 16640 + 257 = 16897 -> 133*128 = 17024 rows * 81920 =
    # 1,394,606,080 (1.30 GB). 68,719,476,736 - that = 67,324,870,656; / 9259.9023 =
    # 7,270,581.1 -> 7,270,581 -> 28,400 pages = 7,270,400. swa int(727,040.0) -> 727,040
    # (2840 pages). c4 1,817,600; c128 56,800; c4_state 5680*16 = 90,880; c128_state 65*256
    # = 16,640.
    fC2 = configure(flash, 64 * GIB, max_running_requests=64, speculative=True)
    assert (fC2["fixed_bytes"], fC2["full_tokens"], fC2["swa_tokens"], fC2["c4_tokens"],
            fC2["c128_tokens"], fC2["c4_state_rows"], fC2["c128_state_rows"],
            fC2["max_running_requests"]) == \
        (1394606080, 7270400, 727040, 1817600, 56800, 90880, 16640, 64), fC2

    # ---- Flash 20 GiB ----
    # 20 GiB = 21,474,836,480.  Default: - 2,715,811,840 = 18,759,024,640; / 7705.45 =
    # 2,434,513.8 -> 2,434,513 -> 9509 pages = 2,434,304. swa int(243,430.4) = 243,430
    # -> 950 pages = 243,200. c4 608,576; c128 19,018; c4_state 1900*8 = 15,200.
    fD = configure(flash, 20 * GIB)
    assert (fD["full_tokens"], fD["swa_tokens"], fD["c4_tokens"], fD["c128_tokens"],
            fD["c4_state_rows"], fD["c128_state_rows"], fD["max_running_requests"]) == \
        (2434304, 243200, 608576, 19018, 15200, 32896, 256), fD
    # Speculative: - 5,421,137,920 = 16,053,698,560; / 9259.9023 = 1,733,679.0 -> 1,733,679
    # -> 6772 pages = 1,733,632. swa int(173,363.2) = 173,363 -> 677 pages = 173,312.
    # c4 433,408; c128 13,544; c4_state 1354*16 = 21,664; c128_state 65,792.
    fE = configure(flash, 20 * GIB, speculative=True)
    assert (fE["full_tokens"], fE["swa_tokens"], fE["c4_tokens"], fE["c128_tokens"],
            fE["c4_state_rows"], fE["c128_state_rows"], fE["max_running_requests"]) == \
        (1733632, 173312, 433408, 13544, 21664, 65792, 256), fE
    # mrr 1024: - 10,768,875,520 = 10,705,960,960; / 7705.45 = 1,389,401.1 -> 1,389,401
    # -> 5427 pages = 1,389,312. swa int(138,931.2) = 138,931 -> 542 pages = 138,752.
    # c4 347,328; c128 10,854; c4_state 1084*8 = 8,672; c128_state 1025*128 = 131,200.
    fF = configure(flash, 20 * GIB, max_running_requests=1024)
    assert (fF["fixed_bytes"], fF["full_tokens"], fF["swa_tokens"], fF["c4_tokens"],
            fF["c128_tokens"], fF["c4_state_rows"], fF["c128_state_rows"],
            fF["max_running_requests"]) == \
        (10768875520, 1389312, 138752, 347328, 10854, 8672, 131200, 1024), fF
    # mrr 1024 + speculation: 1025*256 = 262,400 + 257 = 262,657 -> 2053*128 = 262,784 rows
    # -> 262,784*81920 = 21,527,265,280 > 20 GiB (21,474,836,480) -> max(.., 0) = 0 -> full 0 -> refusal.
    e = _expect_refusal(SGLangRuntimeError, NOT_ENOUGH_MEMORY, lambda: configure(
        flash, 20 * GIB, max_running_requests=1024, speculative=True))
    assert e.logs[-2] == ("DSV4 memory calculation: bytes_per_full_token=9259.90, "
                          "available_bytes=20.00 GB, c128_state_fixed=20.05 GB, full_token=0")
    assert e.logs[-1] == ("DSV4 pool sizes: full=0, swa=0, c4=0, c128=0, c4_state=0, "
                          "c128_state=0")

    # ---- Pro 64 GiB ----
    # Default: 68,719,476,736 - 4,209,508,352 = 64,509,968,384; / 10993.8375 = 5,867,829.9
    # -> 5,867,829 -> 22,921 pages = 5,867,776. swa int(586,777.6) = 586,777 -> 2292 pages
    # = 586,752. c4 1,466,944; c128 45,842; c4_state 4584*8 = 36,672; c128_state 32,896.
    assert (pA["full_tokens"], pA["swa_tokens"], pA["c4_tokens"], pA["c128_tokens"],
            pA["c4_state_rows"], pA["c128_state_rows"], pA["max_running_requests"]) == \
        (5867776, 586752, 1466944, 45842, 36672, 32896, 256), pA
    # 4,209,508,352 / 2^30 = 3.9204 -> "3.92".
    assert pA["log_memory_calculation"] == (
        "DSV4 memory calculation: bytes_per_full_token=10993.84, available_bytes=64.00 GB, "
        "c128_state_fixed=3.92 GB, full_token=5867776")
    # Speculative: - 8,402,763,776 = 60,316,712,960; / 13125.5397 = 4,595,370.1 -> 4,595,370
    # -> 17,950 pages = 4,595,200. swa int(459,520.0) = 459,520 -> 1795 pages = 459,520.
    # c4 1,148,800; c128 35,900; c4_state 3590*16 = 57,440; c128_state 65,792.
    assert (pB["full_tokens"], pB["swa_tokens"], pB["c4_tokens"], pB["c128_tokens"],
            pB["c4_state_rows"], pB["c128_state_rows"], pB["max_running_requests"]) == \
        (4595200, 459520, 1148800, 35900, 57440, 65792, 256), pB
    # mrr 128: 129*128 = 16512 + 129 = 16641 -> 131*128 = 16768 rows * 126976 = 2,129,133,568.
    # 68,719,476,736 - 2,129,133,568 = 66,590,343,168; / 10993.8375 = 6,057,060.9 -> 6,057,060
    # -> 23,660 pages = 6,056,960. swa int(605,696.0) -> 605,696 (2366 pages).
    # c4 1,514,240; c128 47,320; c4_state 4732*8 = 37,856; c128_state 129*128 = 16,512.
    pC = configure(pro, 64 * GIB, max_running_requests=128)
    assert (pC["fixed_bytes"], pC["full_tokens"], pC["swa_tokens"], pC["c4_tokens"],
            pC["c128_tokens"], pC["c4_state_rows"], pC["c128_state_rows"],
            pC["max_running_requests"]) == \
        (2129133568, 6056960, 605696, 1514240, 47320, 37856, 16512, 128), pC

    # ---- Pro 20 GiB ----
    # Default: 21,474,836,480 - 4,209,508,352 = 17,265,328,128; / 10993.8375 = 1,570,455.1
    # -> 1,570,455 -> 6134 pages = 1,570,304. swa int(157,030.4) = 157,030 -> 613 pages
    # = 156,928. c4 392,576; c128 12,268; c4_state 1226*8 = 9,808.
    pD = configure(pro, 20 * GIB)
    assert (pD["full_tokens"], pD["swa_tokens"], pD["c4_tokens"], pD["c128_tokens"],
            pD["c4_state_rows"], pD["c128_state_rows"], pD["max_running_requests"]) == \
        (1570304, 156928, 392576, 12268, 9808, 32896, 256), pD
    # mrr 512: 513*128 = 65664 + 129 = 65793 -> 515*128 = 65920 rows * 126976 =
    # 8,370,257,920. 21,474,836,480 - that = 13,104,578,560; / 10993.8375 = 1,191,993.1
    # -> 1,191,993 -> 4656 pages = 1,191,936. swa int(119,193.6) = 119,193 -> 465 pages =
    # 119,040. c4 297,984; c128 9,312; c4_state 930*8 = 7,440; c128_state 513*128 = 65,664.
    pD2 = configure(pro, 20 * GIB, max_running_requests=512)
    assert (pD2["fixed_bytes"], pD2["full_tokens"], pD2["swa_tokens"], pD2["c4_tokens"],
            pD2["c128_tokens"], pD2["c4_state_rows"], pD2["c128_state_rows"],
            pD2["max_running_requests"]) == \
        (8370257920, 1191936, 119040, 297984, 9312, 7440, 65664, 512), pD2
    # Speculative: - 8,402,763,776 = 13,072,072,704; / 13125.5397 = 995,926.5 -> 995,926
    # -> 3890 pages = 995,840. swa int(99,584.0) -> 99,584 (389 pages). c4 248,960;
    # c128 7,780; c4_state 778*16 = 12,448; c128_state 65,792.
    pE = configure(pro, 20 * GIB, speculative=True)
    assert (pE["full_tokens"], pE["swa_tokens"], pE["c4_tokens"], pE["c128_tokens"],
            pE["c4_state_rows"], pE["c128_state_rows"], pE["max_running_requests"]) == \
        (995840, 99584, 248960, 7780, 12448, 65792, 256), pE
    # Speculative + mrr 32: 33*256 = 8448 + 257 = 8705 -> 69*128 = 8832 rows;
    # 8832*126976 = 1,121,452,032. 21,474,836,480 - 1,121,452,032 = 20,353,384,448;
    # / 13125.5397 = 1,550,670.3 -> 1,550,670 -> 6057 pages = 1,550,592.
    # swa int(155,059.2) = 155,059 -> 605 pages = 154,880. c4 387,648; c128 12,114;
    # c4_state 1210*16 = 19,360; c128_state 33*256 = 8,448.
    pF = configure(pro, 20 * GIB, max_running_requests=32, speculative=True)
    assert (pF["fixed_bytes"], pF["full_tokens"], pF["swa_tokens"], pF["c4_tokens"],
            pF["c128_tokens"], pF["c4_state_rows"], pF["c128_state_rows"],
            pF["max_running_requests"]) == \
        (1121452032, 1550592, 154880, 387648, 12114, 19360, 8448, 32), pF

    # ---- attention DP 2: 256 // 2 = 128 per worker (Flash, 64 GiB per rank) ----
    # 129*128 = 16512 + 129 -> 16768 rows * 81920 = 1,373,634,560. 68,719,476,736 - that =
    # 67,345,842,176; / 7705.45 = 8,740,027.1 -> 8,740,027 -> 34,140 pages = 8,739,840.
    fG = configure(flash, 64 * GIB, attn_dp=2)
    assert (fG["fixed_bytes"], fG["full_tokens"], fG["max_running_requests"],
            fG["c128_state_rows"]) == (1373634560, 8739840, 128, 16512), fG

    # ---- full // 2 caps the requests: Flash, mrr 256, 300 tokens' worth past the fixed ----
    # avail = 2,715,811,840 + 300*7705.45 (= 2,311,635) = 2,718,123,475 -> full int(300.0)
    # = 300 (or 299) -> 256; swa int(25.6) = 25 -> 0; c4 64; c128 2; c4_state 0.
    # mrr = min(256, 128) = 128 (+ warning); c128_state = 129*128 = 16,512.
    fH = configure(flash, 2718123475)
    assert (fH["full_tokens"], fH["swa_tokens"], fH["c4_tokens"], fH["c128_tokens"],
            fH["c4_state_rows"], fH["max_running_requests"], fH["c128_state_rows"]) == \
        (256, 0, 64, 2, 0, 128, 16512), fH
    assert ("max_running_requests was reduced from the requested 256 to 128 (per dp worker) "
            "due to the available KV cache capacity.") in fH["logs"]

    # ---- --max-total-tokens: Flash 64 GiB capped at 100,000 -> 390 pages = 99,840 ----
    # swa int(9,984.0) -> 9,984 -> 39 pages = 9,984; c4 24,960; c128 780; c4_state 78*8 = 624.
    fI = configure(flash, 64 * GIB, max_total_tokens=100000)
    assert (fI["full_tokens"], fI["swa_tokens"], fI["c4_tokens"], fI["c128_tokens"],
            fI["c4_state_rows"]) == (99840, 9984, 24960, 780, 624), fI
    assert fI["logs"].count(fI["log_pool_sizes"]) == 1 and \
        "DSV4 pool sizes: full=99840, swa=9984, c4=24960, c128=780, c4_state=624, " \
        "c128_state=0" in fI["logs"]

    # ---- the class-default ratio 0.8 is replaced by 0.1 ----
    assert configure(flash, 64 * GIB, swa_full_tokens_ratio=0.8)["full_tokens"] == 8565760
    # ---- ratio 0.2 (explicit): Flash bpft = 7705.45 + 2511.2 + 1075.2 + 268.8 = 11560.65 ----
    # 66,003,664,896 / 11560.65 = 5,709,338.6 -> 5,709,338 -> 22,302 pages = 5,709,312.
    fJ = configure(flash, 64 * GIB, swa_full_tokens_ratio=0.2)
    assert abs(fJ["bytes_per_full_token"] - 11560.65) < 1e-9 and fJ["full_tokens"] == 5709312

    # ---- hook bypassed (unreachable for V4 in [G], S6 estimate path), Flash 64 GiB ----
    # f0 = int(68,719,476,736 / 7705.45) = 8,918,295; est = int(8,918,295/1,048,576*512) = 4354
    # -> clamp 4096; min(4096, 4,459,147) = 4096 -> 4097*128 = 524,416 + 129 = 524,545 ->
    # 4099*128 = 524,672 rows * 81920 = 42,981,130,240. Left 25,738,346,496 / 7705.45 =
    # 3,340,278.2 -> 13,047 pages = 3,340,032. Final mrr = min(clamp(int(3,340,032/1,048,576
    # *512) = 1630 -> 2048), 1,670,016) = 2048; c128_state = 2049*128 = 262,272.
    fK = configure(flash, 64 * GIB, apply_v4_hook=False)
    assert (fK["fixed_bytes"], fK["full_tokens"], fK["max_running_requests"],
            fK["c128_state_rows"]) == (42981130240, 3340032, 2048, 262272), fK

    # ---- refusals ----
    _expect_refusal(SGLangRuntimeError, NOT_ENOUGH_MEMORY, lambda: configure(flash, GIB))
    _expect_refusal(SGLangAssertionError,
                    "page_size must be multiple of 128 for compressed attention",
                    lambda: configure(flash, 64 * GIB, page_size=192))
    _expect_refusal(SGLangAssertionError, "In paged swa mode, page_size must be 256.",
                    lambda: configure(flash, 64 * GIB, page_size=128))
    _expect_refusal(SGLangAssertionError,
                    "speculative_num_draft_tokens=11 exceeds what the c4 compress state ring "
                    "can keep resident (ring_size=16 serves at most 10 draft tokens). Lower the "
                    "draft count, or grow the ring in get_compress_state_ring_size().",
                    lambda: configure(flash, 64 * GIB, speculative=True, num_draft_tokens=11))
    configure(flash, 64 * GIB, speculative=True, num_draft_tokens=10)
    # mrr 1 with attn_dp 2 -> 0 per worker -> tp_worker's assertion.
    _expect_refusal(SGLangAssertionError, "max_running_request is zero",
                    lambda: configure(flash, 64 * GIB, max_running_requests=1, attn_dp=2))
    print("self-test passed")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--config")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--available-gib", type=float,
                   help="available KV bytes in GiB (int(X * 2^30), as SGLang converts)")
    g.add_argument("--available-bytes", type=int)
    ap.add_argument("--max-running-requests", type=int)
    ap.add_argument("--swa-full-tokens-ratio", type=float, default=0.1)
    ap.add_argument("--speculative", action="store_true")
    ap.add_argument("--num-draft-tokens", type=int, default=4)
    ap.add_argument("--attn-dp", type=int, default=1)
    ap.add_argument("--page-size", type=int, default=256)
    ap.add_argument("--max-total-tokens", type=int)
    ap.add_argument("--json", action="store_true", help="print the result dict as JSON")
    a = ap.parse_args(argv)
    if a.self_test:
        self_test()
        return 0
    if not a.config or (a.available_gib is None and a.available_bytes is None):
        ap.error("--config and --available-gib/--available-bytes are required")
    avail = a.available_bytes if a.available_bytes is not None else int(a.available_gib * GIB)
    try:
        res = configure(load_config(a.config), avail, a.max_running_requests,
                        a.swa_full_tokens_ratio, a.speculative, a.attn_dp, a.page_size,
                        num_draft_tokens=a.num_draft_tokens, max_total_tokens=a.max_total_tokens)
    except SGLangError as e:
        if a.json:
            json.dump({"refusal": {"type": e.sglang_type, "message": e.message},
                       "logs": e.logs}, sys.stdout, indent=1)
            print()
        else:
            for line in e.logs:
                print(line)
            print(f"{e.sglang_type}: {e.message}")
        return 1
    if a.json:
        json.dump(res, sys.stdout, indent=1)
        print()
    else:
        for line in res["logs"]:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
