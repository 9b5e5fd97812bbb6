// dsv4-cache: how many bytes the DeepSeek V4 KV cache needs, and what fits in a budget: the plan
// of N requests of L tokens under an engine's allocation policy, priced in the engine's pool
// structure (its `engine_sizing`, engines/registry.hpp) or in one pool per group. The page rules
// and what a plan holds: plan_types.hpp.
//
// All arithmetic is 64-bit and overflow-checked: an impossible plan is an error naming the
// values, never a wrapped number. Byte counts are unsigned (a budget may be 2^64 - 1 bytes).
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include "dsv4/cache/engines/registry.hpp"
#include "dsv4/cache/group_spec.hpp"
#include "dsv4/cache/plan_types.hpp"
#include "dsv4/cache/policy.hpp"

namespace dsv4::cache {

/// Whether a plan of a `family` model with options `o` prices the engine's own pool structure
/// (`engine_spec::structure` of the engine `o.policy` names): with `pools_choice::engine` where
/// the engine's structure is modelled for the family and DCP (`engine_traits::own_structure_models`:
/// tokenspeed's parent arena for DeepSeek V4 without DCP only); else own pools. Throws as `engine_of`.
constexpr bool plans_engine_structure(const plan_options& o, model_family family) {
  const engine_spec& e = engine_of(o.policy.engine);
  return o.pools == pools_choice::engine && e.traits.own_structure_models(family, o.dcp);
}

/// The pool structure a plan of a `family` model with options `o` prices: the engine's own where
/// `plans_engine_structure`, else one pool per group (`own_pools_of`). Throws as `engine_of`.
constexpr pool_structure plan_structure(const plan_options& o, model_family family) {
  return plans_engine_structure(o, family) ? engine_of(o.policy.engine).structure : engine_pools{}.structure;
}

namespace detail {

/// Sizes every group of `specs` for the (already validated) options, priced in the pool
/// structure `pools` (built from the same groups, or projected onto the same stage); N may be 0.
/// Returns false if any quantity overflows 64 bits.
///
/// Own pools: every group holds H x per request + shared pages + 1 null page per layer, priced at
/// its own page bytes. The engine's own structure: its `engine_sizing` (engines/<engine>/plan.hpp)
/// sizes what it allocates as a whole (vLLM's blocks, tokenspeed's parents, SGLang's pools) and
/// each library group's share of it.
constexpr bool size_plan(const model_config& c, const group_spec_list& specs, const plan_options& o,
                         const engine_pools& pools, memory_plan& plan) {
  guard g;
  const std::uint64_t ctx = u(o.context_tokens);
  const std::uint64_t h = holding_requests(o);
  plan.options = o;
  plan.holding_requests = static_cast<std::int64_t>(h);
  plan.num_groups = specs.num_groups;
  plan.total_bytes = 0;
  plan.ideal_bytes = 0;
  plan.pools = pools;
  plan.engine_groups = {};
  plan.planned_blocks = 0;
  plan.startup_blocks = 0;
  plan.admission_blocks = 0;
  plan.num_blocks = 0;
  plan.arena_units = 0;
  plan.sglang = {};
  plan.sglang_need = {};
  for (int i = 0; i < specs.num_groups; ++i) {
    plan.groups[static_cast<std::size_t>(i)] = {};
    plan.groups[static_cast<std::size_t>(i)].spec = specs[i];
  }
  // The engine's own structure is sized by the engine (its `engine_sizing`); own pools here.
  const engine_sizing* sizing = is_own_pools(pools) ? nullptr : &engine_of_structure(pools.structure).sizing;
  if (sizing != nullptr) sizing->size_units(c, specs, pools, o, g, plan);
  for (int i = 0; i < specs.num_groups; ++i) {
    group_plan& gp = plan.groups[static_cast<std::size_t>(i)];
    if (sizing != nullptr) {
      sizing->size_group(pools, plan, g, gp);
    } else {
      size_group_in_own_pools(o, h, g, gp);
      plan.total_bytes = g.add(plan.total_bytes, gp.bytes);
    }
    // The exact rows of the H requests that hold pages at once (<= the plan's bytes).
    const std::uint64_t ideal_rows =
        gp.spec.has_sliding_window() ? min_u(ctx, u(gp.window_tokens)) : ctx / u(gp.spec.entry_stride_tokens);
    gp.ideal_bytes = g.mul(g.mul(g.mul(h, u(gp.spec.num_layers)), ideal_rows), u(gp.spec.row_bytes()));
    plan.ideal_bytes = g.add(plan.ideal_bytes, gp.ideal_bytes);
  }
  return !g.overflow;
}

/// Validates the options against the model and resolves context_tokens = 0.
/// `min_requests` is 1 for a plan, 0 for the inverse searches.
constexpr plan_options resolve(const model_config& c, plan_options o, std::int64_t min_requests) {
  if (o.context_tokens == 0) o.context_tokens = c.max_position_embeddings;
  require(o.context_tokens >= 1, "context_tokens must be >= 1 (or 0 for the model's max_position_embeddings)",
          {"context_tokens", o.context_tokens});
  require(o.context_tokens <= c.max_position_embeddings, "context_tokens must be <= max_position_embeddings",
          {"context_tokens", o.context_tokens}, {"max_position_embeddings", c.max_position_embeddings});
  require(o.requests >= min_requests, "requests must be >= 1", {"requests", o.requests});
  require(o.tokens_per_step >= 1, "tokens_per_step must be >= 1", {"tokens_per_step", o.tokens_per_step});
  require(o.tokens_per_step <= o.context_tokens, "tokens_per_step must be <= context_tokens",
          {"tokens_per_step", o.tokens_per_step}, {"context_tokens", o.context_tokens});
  require(o.prefill_chunk_tokens >= 1, "prefill_chunk_tokens must be >= 1",
          {"prefill_chunk_tokens", o.prefill_chunk_tokens});
  (void)concrete_variants(o.policy);  // a well-formed policy
  require(o.dcp >= 1, "dcp must be >= 1", {"dcp", o.dcp});
  require(o.dcp_interleave_rows >= 1, "dcp_interleave_rows must be >= 1",
          {"dcp_interleave_rows", o.dcp_interleave_rows});
  require(o.handover_requests >= 0, "handover_requests must be >= 0", {"handover_requests", o.handover_requests});
  require(o.handover_requests == 0 || o.role == deployment_role::decode,
          "handover_requests are for the decode role only", {"handover_requests", o.handover_requests});
  require(!o.policy.decode_needs_whole_step || o.prefill_chunk_tokens >= o.tokens_per_step,
          "this engine decodes only with a whole step of tokens_per_step tokens in the budget: "
          "prefill_chunk_tokens must be >= tokens_per_step",
          {"prefill_chunk_tokens", o.prefill_chunk_tokens}, {"tokens_per_step", o.tokens_per_step});
  // The engine's own refusals of its pools (engines/: vLLM's DCP assert, SGLang's unmodelled cases).
  if (plans_engine_structure(o, c.family))
    if (const char* why =
            engine_of(o.policy.engine).traits.refusal(c.family, o.dcp, o.role == deployment_role::colocated))
      fail(why, {"dcp", o.dcp});
  return o;
}

}  // namespace detail

/// The pool structure a plan of `c` with options `o` prices the groups `specs` in: the engine's
/// own (`engine_sizing::build` of the engine `o.policy` names) where `plans_engine_structure`,
/// else one pool per group (`own_pools_of`). Errors as the engine's builder (vLLM: a format it
/// does not store) and `engine_of`.
constexpr engine_pools plan_pools(const model_config& c, const group_spec_list& specs, const plan_options& o) {
  if (!plans_engine_structure(o, c.family)) return own_pools_of(specs);
  return engine_of(o.policy.engine).sizing.build(c, specs, o);
}

/// The memory plan for `specs` (the groups of `c`, built for the same indexer format and MTP
/// choice as `o`). Throws std::invalid_argument if an option is out of range (context_tokens
/// outside [1, max_position_embeddings], requests < 1, tokens_per_step outside
/// [1, context_tokens], prefill_chunk_tokens < 1) or the plan overflows 64 bits.
constexpr memory_plan build_memory_plan(const model_config& c, const group_spec_list& specs, const plan_options& o) {
  memory_plan plan;
  const plan_options r = detail::resolve(c, o, 1);
  if (!detail::size_plan(c, specs, r, plan_pools(c, specs, r), plan))
    fail("memory plan overflows 64 bits", {"requests", o.requests}, {"context_tokens", plan.options.context_tokens});
  return plan;
}

/// The groups a plan of `c` with options `o` covers: `build_cache_specs(c, resolve_formats(
/// c.family, o.indexer, o.formats), o.cache_mtp)`. Errors as `build_cache_specs`.
constexpr group_spec_list plan_cache_specs(const model_config& c, const plan_options& o) {
  return build_cache_specs(c, resolve_formats(c.family, o.indexer, o.formats), o.cache_mtp);
}

/// The memory plan of model `c` with options `o`: groups from `plan_cache_specs(c, o)`.
/// Errors as `plan_cache_specs` and the overload above.
constexpr memory_plan build_memory_plan(const model_config& c, const plan_options& o = {}) {
  return build_memory_plan(c, plan_cache_specs(c, o), o);
}

/// How many requests fit in a byte budget (see `max_requests_for_budget`).
struct request_capacity {
  std::int64_t max_requests = 0;  ///< Largest N whose plan fits; 0 if even N = 1 does not.
  std::uint64_t fixed_bytes = 0;  ///< Bytes with N = 0: null pages (UINT64_MAX if > 64 bits).
  std::uint64_t bytes_per_request =
      0;  ///< Bytes the first request adds; later ones add at most this (UINT64_MAX if > 64 bits).
  std::uint64_t total_bytes = 0;  ///< Plan bytes at max_requests; 0 if no request fits.
  std::uint64_t bytes_left = 0;   ///< budget - total_bytes; 0 if no request fits.
};

/// The largest number of requests of `o.context_tokens` tokens (o.requests is ignored) whose
/// plan fits in `budget_bytes`. Exact: the plan never shrinks as N grows (each term is a
/// minimum of non-decreasing functions of N), so a binary search over N finds the largest.
/// Saturates at INT64_MAX requests where the step budget, not memory, bounds the requests
/// holding pages (vLLM with a budget B below N: at most B hold pages, the rest wait).
/// Throws std::invalid_argument for out-of-range options as `build_memory_plan`.
constexpr request_capacity max_requests_for_budget(const model_config& c, plan_options o, std::uint64_t budget_bytes) {
  o.requests = 0;
  o = detail::resolve(c, o, 0);
  const group_spec_list specs = plan_cache_specs(c, o);
  const engine_pools pools = plan_pools(c, specs, o);
  memory_plan p;
  const auto bytes_at = [&](std::int64_t n, std::uint64_t& bytes) {
    plan_options q = o;
    q.requests = n;
    const bool ok = detail::size_plan(c, specs, q, pools, p);
    bytes = p.total_bytes;
    return ok;
  };
  request_capacity r;
  constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t b0 = 0;
  std::uint64_t b1 = 0;
  const bool ok0 = bytes_at(0, b0);
  const std::int64_t planned0 = p.planned_blocks;
  const bool ok1 = bytes_at(1, b1);
  // A plan that overflows 64 bits holds wrapped sums: report those quantities saturated, never wrapped.
  r.fixed_bytes = ok0 ? b0 : kSaturated;
  r.bytes_per_request = ok0 && ok1 ? b1 - b0 : kSaturated;
  // A shared pool's fixed bytes hold vLLM's startup charge (a parent arena's, tokenspeed's startup
  // need): a request adds at most its own blocks (parents).
  if (ok0 && ok1 && traits_of(pools.structure).whole_blocks)
    r.bytes_per_request = detail::u(p.planned_blocks - planned0) * detail::u(pools.bytes_per_block);
  if (!ok0 || !ok1 || b1 > budget_bytes) return r;  // not even one request fits
  std::uint64_t bytes = 0;
  const std::int64_t n = detail::largest_fitting(1, std::numeric_limits<std::int64_t>::max(), [&](std::int64_t m) {
    return bytes_at(m, bytes) && bytes <= budget_bytes;
  });
  bytes_at(n, bytes);
  r.max_requests = n;
  r.total_bytes = bytes;
  r.bytes_left = budget_bytes - bytes;
  return r;
}

/// How long a context fits in a byte budget (see `max_context_for_budget`).
struct context_capacity {
  std::int64_t max_context_tokens = 0;  ///< Largest L whose plan fits; 0 if even L = 1 does not.
  std::uint64_t total_bytes = 0;        ///< Plan bytes at max_context_tokens.
  std::uint64_t bytes_left = 0;         ///< budget - total_bytes, or 0 if nothing fits.
  bool limited_by_model = false;        ///< true if the model's max_position_embeddings fits whole.
};

/// The largest context L in [tokens_per_step, max_position_embeddings] (o.context_tokens is ignored) such that
/// `o.requests` requests fit in `budget_bytes`; a binary search over L (the plan grows
/// monotonically with L). Throws std::invalid_argument for out-of-range options.
constexpr context_capacity max_context_for_budget(const model_config& c, plan_options o, std::uint64_t budget_bytes) {
  o.context_tokens = 0;
  const plan_options base = detail::resolve(c, o, 1);
  const group_spec_list specs = plan_cache_specs(c, base);
  const engine_pools pools = plan_pools(c, specs, base);
  memory_plan p;
  const auto fits = [&](std::int64_t ctx) {
    plan_options q = base;
    q.context_tokens = ctx;
    return detail::size_plan(c, specs, q, pools, p) && p.total_bytes <= budget_bytes;
  };
  context_capacity r;
  // A context shorter than tokens_per_step is no valid plan (resolve() rejects it): search [s, max] only.
  const std::int64_t lo = fits(base.tokens_per_step)
                              ? detail::largest_fitting(base.tokens_per_step, c.max_position_embeddings, fits)
                              : 0;  // 0: none fits
  r.max_context_tokens = lo;
  r.limited_by_model = lo == c.max_position_embeddings;
  if (lo > 0) {
    fits(lo);
    r.total_bytes = p.total_bytes;
    r.bytes_left = budget_bytes - p.total_bytes;
  }
  return r;
}

}  // namespace dsv4::cache
