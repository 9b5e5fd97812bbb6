// dsv4-cache: vLLM's shared block pool in a memory plan (plan_types.hpp): the blocks every engine
// group (block table) holds by the plan's page rules, vLLM's startup need and its admission gate,
// and what a library group's tensors occupy of those blocks. Rules and sources: engines/vllm/engine.hpp.
#pragma once

#include <cstdint>
#include <limits>

#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/vllm/engine.hpp"
#include "dsv4/cache/plan_types.hpp"

namespace dsv4::cache {

namespace detail {

/// A shared block pool's blocks (vLLM, see `size_plan`): every engine group's, vLLM's startup
/// need, and the admission gate's bound. Fills plan.engine_groups and the block counts.
constexpr void size_shared_blocks(const engine_pools& pools, const plan_options& o, guard& g, memory_plan& plan) {
  const std::uint64_t h = holding_requests(o);
  // vLLM's max_in_flight_tokens (2B with async scheduling), saturated: the charge never overflows.
  const std::uint64_t in_flight = g.mul(u(o.prefill_chunk_tokens), o.policy.overlap ? 2 : 1);
  const auto in_flight_i = static_cast<std::int64_t>(min_u(in_flight, u(std::numeric_limits<std::int64_t>::max())));
  std::uint64_t blocks = 0;
  std::uint64_t charge = 0;
  for (int e = 0; e < pools.num_groups; ++e) {
    const engine_group& eg = pools[e];
    engine_group_plan& ep = plan.engine_groups[static_cast<std::size_t>(e)];
    const group_pages pg = engine_group_pages(eg, o, g);
    // A ring keeps its rows for the request's life: its "window" is its rows.
    ep.window_tokens =
        eg.rule.kind == table_kind::request_ring ? eg.rule.page_tokens : static_cast<std::int64_t>(pg.window);
    ep.pages_per_request = static_cast<std::int64_t>(pg.per_request);
    ep.shared_pages = static_cast<std::int64_t>(pg.shared);
    const std::uint64_t b = g.add(g.mul(h, pg.per_request), pg.shared);
    ep.blocks = static_cast<std::int64_t>(b);
    ep.charge_blocks = vllm_charge_blocks(eg.rule, o.context_tokens, in_flight_i, o.dcp);
    blocks = g.add(blocks, b);
    charge = g.add(charge, u(ep.charge_blocks));
  }
  const std::uint64_t planned = g.add(blocks, 1);
  const std::uint64_t startup = g.add(charge, 1);
  // vLLM's admission gate (M allocate_slots, full_sequence_must_fit): a new request is admitted
  // only if the free blocks cover its whole prompt, sliding tables capped at their charge. The
  // others hold at most the plan of N - 1 requests, so the pool must hold that + the newcomer's
  // gate: every table's whole context (cap), sliding ones capped at the charge, one ring block.
  std::uint64_t gate = 0;
  if (o.requests >= 2) {
    plan_options others = o;
    others.requests = o.requests - 1;
    const std::uint64_t h1 = holding_requests(others);
    gate = 1;  // the null block
    for (int e = 0; e < pools.num_groups; ++e) {
      const engine_group& eg = pools[e];
      const group_pages pg = engine_group_pages(eg, others, g);
      std::uint64_t cap =
          eg.rule.kind == table_kind::request_ring ? 1 : ceil_div(u(o.context_tokens), u(eg.rule.page_tokens));
      if (o.dcp > 1 && eg.rule.kind == table_kind::full_history) cap = ceil_div(cap, u(o.dcp));
      const std::uint64_t need =
          eg.rule.sliding() ? min_u(cap, u(plan.engine_groups[static_cast<std::size_t>(e)].charge_blocks)) : cap;
      gate = g.add(g.add(gate, g.add(g.mul(h1, pg.per_request), pg.shared)), need);
    }
  }
  constexpr std::uint64_t kMax = std::numeric_limits<std::int64_t>::max();
  const std::uint64_t num = max_u(max_u(planned, startup), gate);
  if (num > kMax) g.overflow = true;
  plan.planned_blocks = static_cast<std::int64_t>(min_u(planned, kMax));
  plan.startup_blocks = static_cast<std::int64_t>(min_u(startup, kMax));
  plan.admission_blocks = static_cast<std::int64_t>(min_u(gate, kMax));
  plan.num_blocks = static_cast<std::int64_t>(min_u(num, kMax));
  plan.arena_units = plan.num_blocks;  // vLLM's one tensor of num_blocks blocks
  plan.total_bytes = g.mul(num, u(pools.bytes_per_block));
}

}  // namespace detail

/// vLLM's sizing: `vllm_engine_pools` with the preset's rules `o.vllm_pools` at s = o.tokens_per_step.
inline constexpr engine_sizing vllm_sizing{
    .build = [](const model_config& c, const group_spec_list& specs,
                const plan_options& o) { return vllm_engine_pools(specs, c.family, o.vllm_pools, o.tokens_per_step); },
    .size_units = [](const model_config&, const group_spec_list&, const engine_pools& pools, const plan_options& o,
                     detail::guard& g, memory_plan& plan) { detail::size_shared_blocks(pools, o, g, plan); },
    .size_group = detail::size_group_in_tables};

}  // namespace dsv4::cache
