// dsv4-cache: SGLang's ratio pools in a memory plan (plan_types.hpp). SGLang sizes every pool from
// the budget as a ratio of one "full token" count: its plan is the smallest KV budget
// (`available_bytes`) with which its configurator starts with the pool sizes N requests of L need
// (`sglang_plan_demand`, a bound of what engines/sglang/replay.hpp replays), the HCA-state
// reservation sized for max(its max_running_requests, N); a group's bytes are what the
// configurator charges its pool. Rules and sources: engines/sglang/engine.hpp.
#pragma once

#include <cstdint>
#include <limits>

#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/sglang/engine.hpp"
#include "dsv4/cache/plan_types.hpp"

namespace dsv4::cache {

namespace detail {

/// SGLang's options for a plan with options `o`: its V4 defaults, the plan's step, chunk and
/// context, and max_running_requests = max(o.max_running_requests or SGLang's 256, N): the
/// HCA-state reservation must hold N requests for N to run at once.
constexpr sglang_options sglang_options_of(const plan_options& o) {
  sglang_options so;
  const std::int64_t mrr = o.max_running_requests > 0 ? o.max_running_requests : so.max_running_requests;
  so.max_running_requests = mrr > o.requests ? mrr : o.requests;
  so.swa_full_tokens_ratio = o.swa_full_tokens_ratio;
  so.tokens_per_step = o.tokens_per_step;
  so.chunked_prefill_size = o.prefill_chunk_tokens;
  so.context_len = o.context_tokens;
  return so;
}

/// Ratio pools (SGLang, see the top of this file): the smallest budget its configurator turns
/// into the pools N requests of L need; every library group's bytes are its pool's charge.
constexpr void size_ratio_pools(const group_spec_list& specs, const engine_pools& pools, const plan_options& o,
                                guard& g, memory_plan& plan) {
  // More than 2^32 requests need more than 2^64 B (the HCA state alone): no plan, never a throw.
  if (o.requests > (std::int64_t{1} << 32)) {
    g.overflow = true;
    return;
  }
  const sglang_options so = sglang_options_of(o);
  std::uint64_t budget = 0;
  if (!sglang_plan_demand(o.requests, o.context_tokens, o.prefill_chunk_tokens, so.page_size, plan.sglang_need) ||
      !sglang_budget_for(pools.sglang, so, plan.sglang_need, budget)) {
    g.overflow = true;
    return;
  }
  plan.total_bytes = budget;
  plan.sglang = sglang_configure(pools.sglang, so, budget);
  for (int i = 0; i < specs.num_groups; ++i) {
    group_plan& gp = plan.groups[static_cast<std::size_t>(i)];
    for (int k = 0; k < specs[i].num_pools; ++k)
      gp.bytes = g.add(gp.bytes, sglang_group_charge(pools.sglang, plan.sglang, specs[i].id, k));
  }
}

}  // namespace detail

/// SGLang's pool structure: one pool per kind (SWA, CSA / HCA KV, index keys, states) sized from
/// the budget as ratios of one "full token" count by its configurator (engines/sglang/engine.hpp); the
/// groups are the library's.
inline constexpr pool_structure_traits sglang_ratio_pools{
    .name = "ratio_pools",
    .title = "SGLang's ratio sizing",
    .overhead = "SGLang's ratio sizing: pools sized as shares of its full tokens, state rings",
    .summary = "ratio pools sized from one full-token count (SWA x {swa_ratio:g})",
    .legend =
        "(rows, tokens, page B: per page of the library's layout; pages/L, pages: none, SGLang sizes pools in "
        "tokens, not pages per request (its pool sizes: the engine section); bytes: what SGLang's configurator "
        "charges the group's pool at the plan's budget; the total is that budget)\n",
    .sim_legend = "",
    .token_ratios = true,
    .unplaced_why =
        "its own pools of 576-B-aligned rows with padding pages and state rows, "
        "include/dsv4/cache/engines/sglang/engine.hpp"};

/// SGLang's sizing: the library's groups, each in its pool, sized by its configurator
/// (`sglang_geometry_of` with the preset's rules `o.sglang_pools`); a group's window is the model's.
inline constexpr engine_sizing sglang_sizing{
    .build =
        [](const model_config& c, const group_spec_list& specs, const plan_options& o) {
          engine_pools e = own_pools_of(specs);
          e.structure = &sglang_ratio_pools;
          e.sglang = sglang_geometry_of(c, o.tokens_per_step > 1, 0, -1, o.sglang_pools);
          return e;
        },
    .size_units = [](const model_config&, const group_spec_list& specs, const engine_pools& pools,
                     const plan_options& o, detail::guard& g,
                     memory_plan& plan) { detail::size_ratio_pools(specs, pools, o, g, plan); },
    .size_group =
        [](const engine_pools&, const memory_plan&, detail::guard&, group_plan& gp) {
          gp.window_tokens = gp.spec.has_sliding_window() ? gp.spec.sliding_window_tokens : 0;
        }};

}  // namespace dsv4::cache
