// dsv4-cache: tokenspeed's parent arena in a memory plan (plan_types.hpp): the parents every engine
// group's pages bind, what its recipe needs to start, and the budget that makes tokenspeed
// allocate them. Rules and sources: engines/tokenspeed/engine.hpp.
#pragma once

#include <cstdint>
#include <limits>

#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/tokenspeed/engine.hpp"
#include "dsv4/cache/plan_types.hpp"

namespace dsv4::cache {

namespace detail {

/// tokenspeed's scheduler limits for options `o` (engines/tokenspeed/engine.hpp): max_num_seqs
/// (`o.max_running_requests`, or tokenspeed's default), the prefill chunk, L, s and the overlap.
constexpr tokenspeed_limits tokenspeed_limits_of(const plan_options& o) {
  tokenspeed_limits lim;
  lim.max_num_seqs =
      o.max_running_requests > 0 ? o.max_running_requests : tokenspeed_default_max_num_seqs(o.tokens_per_step);
  lim.chunk_tokens = o.prefill_chunk_tokens;
  lim.context_tokens = o.context_tokens;
  lim.decode_tokens = o.tokens_per_step;
  lim.overlap_depth = o.policy.overlap ? 1 : 0;
  return lim;
}

/// A parent arena's parents (tokenspeed, see `size_plan`): every engine group's pages by the
/// policy's rules, ceil(pages / K) parents of each (a group fills its parents before it binds
/// another, so it never holds more), at least what tokenspeed's recipe needs to start and what
/// one request of L needs alone, and the budget that makes tokenspeed allocate that many.
constexpr void size_parent_arena(const engine_pools& pools, const plan_options& o, guard& g, memory_plan& plan) {
  const std::uint64_t h = holding_requests(o);
  std::uint64_t parents = 0;
  for (int e = 0; e < pools.num_groups; ++e) {
    const engine_group& eg = pools[e];
    engine_group_plan& ep = plan.engine_groups[static_cast<std::size_t>(e)];
    const group_pages pg = engine_group_pages(eg, o, g);
    ep.window_tokens = static_cast<std::int64_t>(pg.window);
    ep.pages_per_request = static_cast<std::int64_t>(pg.per_request);
    ep.shared_pages = static_cast<std::int64_t>(pg.shared);
    const std::uint64_t pages = g.add(g.mul(h, pg.per_request), pg.shared);
    ep.blocks = static_cast<std::int64_t>(min_u(pages, u(std::numeric_limits<std::int64_t>::max())));
    ep.parents = static_cast<std::int64_t>(min_u(ceil_div(pages, u(eg.pages_per_block)), u(ep.blocks)));
    parents = g.add(parents, u(ep.parents));
  }
  constexpr std::uint64_t kMax = (std::uint64_t{1} << 62) - 2;  // below tokenspeed_startup's 2^62 cap
  const tokenspeed_limits lim = tokenspeed_limits_of(o);
  const std::uint64_t start = tokenspeed_parents_needed(pools, lim, 1);
  const std::uint64_t alone = tokenspeed_request_parents(pools, lim, u(o.context_tokens));
  const std::uint64_t need = max_u(max_u(parents, start), alone);
  if (need >= kMax) g.overflow = true;
  plan.planned_blocks = static_cast<std::int64_t>(min_u(g.add(parents, 1), kMax));
  plan.startup_blocks = static_cast<std::int64_t>(min_u(g.add(start, 1), kMax));
  plan.admission_blocks = static_cast<std::int64_t>(min_u(g.add(alone, 1), kMax));
  std::int64_t budgeted = need >= kMax ? static_cast<std::int64_t>(kMax)
                                       : tokenspeed_budgeted_parents_for(pools, lim, static_cast<std::int64_t>(need));
  std::int64_t alloc = 0;  // the parents tokenspeed allocates with that budget (num_lcm_blocks)
  if (budgeted >= 0 && budgeted < static_cast<std::int64_t>(kMax)) {
    // What tokenspeed allocates with that budget must hold the plan's parents and admit a request
    // of L (the checks tokenspeed_startup makes); else the plan cannot be met.
    const std::int64_t cap = tokenspeed_capacity(pools, lim, budgeted);
    alloc = static_cast<std::int64_t>(tokenspeed_parents_needed(pools, lim, static_cast<std::uint64_t>(cap)));
    if (cap < 1 || alloc < static_cast<std::int64_t>(need) ||
        tokenspeed_max_request_tokens(pools, lim, alloc) < o.context_tokens)
      budgeted = -1;
  }
  if (budgeted < 0) {  // tokenspeed never allocates that many parents: the plan cannot be met
    g.overflow = true;
    budgeted = static_cast<std::int64_t>(kMax);
  }
  plan.num_blocks = static_cast<std::int64_t>(min_u(g.add(u(budgeted), 1), kMax));
  // tokenspeed lays its arena out for the parents it allocates (+ the null parent), at most the
  // budget's: the plane offsets follow that count (recipes/plan.py `CacheLayout.with_num_lcm_blocks`).
  plan.arena_units = budgeted == static_cast<std::int64_t>(kMax) ? plan.num_blocks : alloc + 1;
  plan.total_bytes = g.mul(u(plan.num_blocks), u(pools.bytes_per_block));
}

/// A library group's share of a parent-arena plan: the parents its pages bind, in every engine
/// group holding one of its pools (one per library group; tokenspeed 0.1.1 holds the CSA index
/// keys in a group of their own), its pages and window the first one's.
constexpr void size_group_in_parent_arena(const engine_pools& pools, const memory_plan& plan, guard& g,
                                          group_plan& gp) {
  bool first = true;
  for (int e = 0; e < pools.num_groups; ++e) {
    const engine_group& eg = pools[e];
    if (!(eg.members[0].group == gp.spec.id)) continue;
    const engine_group_plan& ep = plan.engine_groups[static_cast<std::size_t>(e)];
    if (first) take_first_engine_group(ep, gp);
    first = false;
    for (int m = 0; m < eg.num_members; ++m)
      gp.pool_pages[static_cast<std::size_t>(eg.members[static_cast<std::size_t>(m)].pool)] = ep.blocks;
    gp.bytes = g.add(gp.bytes, g.mul(u(ep.parents), u(pools.bytes_per_block)));
  }
  g.mul(u(gp.pages_per_layer), u(gp.spec.num_layers));
}

}  // namespace detail

/// tokenspeed's sizing: `tokenspeed_engine_pools` with the preset's rules `o.tokenspeed_pools`.
inline constexpr engine_sizing tokenspeed_sizing{
    .build = [](const model_config&, const group_spec_list& specs,
                const plan_options& o) { return tokenspeed_engine_pools(specs, o.tokenspeed_pools); },
    .size_units = [](const model_config&, const group_spec_list&, const engine_pools& pools, const plan_options& o,
                     detail::guard& g, memory_plan& plan) { detail::size_parent_arena(pools, o, g, plan); },
    .size_group = detail::size_group_in_parent_arena};

}  // namespace dsv4::cache
