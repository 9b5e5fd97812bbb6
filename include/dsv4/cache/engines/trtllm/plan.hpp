// dsv4-cache: TensorRT-LLM's pool groups in a memory plan (plan_types.hpp): the plan of N
// requests of L is what its StorageManager allocates at the smallest quota whose slot counts hold
// them in every pool group (engines/trtllm/sizing.hpp), with max_batch_size, max_seq_len L and
// max_num_tokens from the plan's options. Units: bytes, slots (blocks of 128 tokens), tokens.
#pragma once

#include <cstdint>
#include <string_view>

#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/trtllm/engine.hpp"
#include "dsv4/cache/engines/trtllm/pools.hpp"
#include "dsv4/cache/engines/trtllm/sizing.hpp"
#include "dsv4/cache/plan_types.hpp"

namespace dsv4::cache {

namespace detail {

/// TensorRT-LLM's options for a plan with options `o`: max_batch_size its running cap
/// (`o.max_running_requests`, or its default 2048), max_seq_len L, max_num_tokens the step budget,
/// 128-token blocks, SWA scratch reuse on (the V4 model defaults).
constexpr trtllm_options trtllm_options_of(const plan_options& o) {
  trtllm_options t;
  t.max_batch_size = o.max_running_requests > 0 ? o.max_running_requests : trtllm_defaults.max_running;
  t.max_seq_len = o.context_tokens;
  t.max_num_tokens = o.prefill_chunk_tokens;
  t.tokens_per_block = trtllm_defaults.block_tokens;
  return t;
}

/// TensorRT-LLM's layout of the plan's groups `specs` of `c`. Refuses (naming the rule) what it
/// does not model, as `trtllm_build_layout`, and FP4 index keys: TensorRT-LLM takes them on SM100
/// and later only, where its fp8_ds_mla cache needs 256-token blocks (not modelled).
constexpr trtllm_layout trtllm_layout_of(const model_config& c, const group_spec_list& specs) {
  for (const paged_cache_group_spec& g : specs)
    for (int p = 0; p < g.num_pools; ++p)
      require(std::string_view(g.pools[static_cast<std::size_t>(p)].format.name) != "v4.indexer_mxfp4",
              "TensorRT-LLM takes FP4 index keys on SM100 and later only, where its fp8_ds_mla cache needs "
              "tokens_per_block 256 (not modelled): plan it with FP8 index keys (--indexer fp8)");
  return trtllm_build_layout(c, specs, trtllm_defaults.block_tokens);
}

/// The largest quota the plan searches (bytes): past it the plan overflows.
inline constexpr std::uint64_t kTrtllmMaxQuota = std::uint64_t{1} << 60;

/// The smallest quota, a multiple of 2 MiB, whose slot counts hold `n` requests of `ctx` tokens
/// (n = 0: 2 MiB, its minimum slots); 0 if no quota up to kTrtllmMaxQuota does. As
/// `trtllm_min_quota_for`, within the plan's bounds (never throws for a large n).
constexpr std::uint64_t trtllm_plan_quota(const trtllm_layout& L, const trtllm_options& t, std::int64_t n,
                                          std::int64_t ctx) {
  constexpr std::uint64_t step = 2 * kTrtllmMiB;
  if (n == 0) return step;
  if (n > (std::int64_t{1} << 40)) return 0;  // 2^40 requests hold more than 2^60 bytes of windows
  std::uint64_t hi = step;
  while (!trtllm_quota_holds(L, hi, t, n, ctx)) {
    if (hi >= kTrtllmMaxQuota) return 0;
    hi *= 2;
  }
  std::uint64_t lo = hi / 2;  // does not hold (or is below 2 MiB)
  if (lo < step) return hi;
  while (hi - lo > step) {
    const std::uint64_t mid = lo + (hi - lo) / step / 2 * step;
    if (trtllm_quota_holds(L, mid, t, n, ctx))
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

/// The plan's pool groups: the StorageManager's slots at the smallest quota that holds N requests
/// of L (`trtllm_plan_quota`); the plan's bytes are what it allocates then (whole granules, its
/// minimum slots included); per table (one per pool group) its window, one request's blocks and its
/// slots. Records overflow in `g` (no quota up to 2^60 B), never throws for a large N.
constexpr void size_trtllm_pools(const model_config& c, const group_spec_list& specs, const plan_options& o, guard& g,
                                 memory_plan& plan) {
  const trtllm_layout L = trtllm_layout_of(c, specs);
  const trtllm_options t = trtllm_options_of(o);
  if (t.max_batch_size > (std::int64_t{1} << 30)) {  // its minimum slots alone pass 2^60 B
    g.overflow = true;
    return;
  }
  const std::uint64_t quota = trtllm_plan_quota(L, t, o.requests, o.context_tokens);
  if (quota == 0) {
    g.overflow = true;
    return;
  }
  const trtllm_sizing s = trtllm_size(L, quota, t);
  const trtllm_slots per_request = trtllm_request_blocks(L, o.context_tokens, t.swa_scratch_reuse);
  for (int e = 0; e < L.num_groups; ++e) {
    engine_group_plan& ep = plan.engine_groups[static_cast<std::size_t>(e)];
    ep.window_tokens = L[e].window_tokens;
    ep.pages_per_request = per_request[static_cast<std::size_t>(e)];
    ep.blocks = s.slots[static_cast<std::size_t>(e)];
  }
  plan.total_bytes = s.allocated_bytes;
}

}  // namespace detail

/// TensorRT-LLM's sizing: `trtllm_build_layout`'s block tables (one per pool group), priced by
/// its StorageManager (`detail::size_trtllm_pools`); a library group's bytes are its pages' share
/// of its pool group's slots.
inline constexpr engine_sizing trtllm_engine_sizing{
    .build =
        [](const model_config& c, const group_spec_list& specs, const plan_options& o) {
          require(o.tokens_per_step == 1,
                  "TensorRT-LLM with speculative decoding is not modelled (MTP: its draft layers, and every window "
                  "grown by max_draft_len): plan it with --tokens-per-step 1",
                  {"tokens_per_step", o.tokens_per_step});
          engine_pools e = detail::trtllm_layout_of(c, specs).tables;
          e.structure = &trtllm_life_cycle_pools;
          return e;
        },
    .size_units = [](const model_config& c, const group_spec_list& specs, const engine_pools&, const plan_options& o,
                     detail::guard& g, memory_plan& plan) { detail::size_trtllm_pools(c, specs, o, g, plan); },
    .size_group = detail::size_group_in_tables};

}  // namespace dsv4::cache
