// dsv4-cache fuzzing: shared helpers of the libFuzzer targets.
//
// A target reports a broken invariant with DSV4_FUZZ_CHECK (prints and aborts, which libFuzzer
// records as a crash). Only std::invalid_argument (and its subclasses, config_error) is a clean
// rejection: `expect_clean` swallows it and lets anything else escape, which libFuzzer also
// records as a crash. Plan invariants are re-derived here in 128-bit arithmetic, independently
// of the library's own overflow checks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>

#include <fuzzer/FuzzedDataProvider.h>

#include "dsv4/cache.hpp"

#define DSV4_FUZZ_CHECK(cond)                                                                      \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "dsv4 fuzz: check failed: %s (%s:%d)\n%s\n", #cond, __FILE__, __LINE__, \
                   dsv4::fuzz::context().c_str());                                                 \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)

namespace dsv4::fuzz {

/// What the current input is about, printed when a check fails.
inline std::string& context() {
  static std::string text;
  return text;
}

/// Records the model, options and budget under test for the failure message.
inline void set_context(const cache::model_config& c, const cache::plan_options& o, std::uint64_t budget) {
  context() = "model: layers=" + std::to_string(c.num_hidden_layers) + "+" +
              std::to_string(c.num_nextn_predict_layers) + " head_dim=" + std::to_string(c.head_dim) +
              " rope=" + std::to_string(c.qk_rope_head_dim) + " index_head_dim=" + std::to_string(c.index_head_dim) +
              " window=" + std::to_string(c.sliding_window) + " max_pos=" + std::to_string(c.max_position_embeddings) +
              "\noptions: indexer=" + std::string(to_string(o.indexer)) +
              " context=" + std::to_string(o.context_tokens) + " requests=" + std::to_string(o.requests) +
              " tokens_per_step=" + std::to_string(o.tokens_per_step) +
              " prefill=" + std::to_string(o.prefill_chunk_tokens) + " mtp=" + std::to_string(o.cache_mtp) +
              " budget=" + std::to_string(budget);
}

using u128 = unsigned __int128;
using i128 = __int128;

/// Runs `f()`; returns its value, or nullopt if it threw std::invalid_argument (a clean error).
/// Any other exception propagates and crashes the target.
template <class F>
auto expect_clean(F&& f) -> std::optional<decltype(f())> {
  try {
    return f();
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

/// Runs `f()` (returning void); true if it completed, false on std::invalid_argument.
template <class F>
bool completes(F&& f) {
  try {
    f();
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

/// An integer that is usually one of `interesting` (boundaries, real values) and otherwise any.
template <class T>
T pick(FuzzedDataProvider& fdp, std::initializer_list<T> interesting) {
  if (fdp.ConsumeBool()) {
    const auto i = fdp.ConsumeIntegralInRange<std::size_t>(0, interesting.size() - 1);
    return *(interesting.begin() + i);
  }
  return fdp.ConsumeIntegral<T>();
}

/// A shared-block-pool plan (vLLM) against its definition (memory_plan.hpp `size_plan`), in 128
/// bits: bytes_per_block the widest group's sum of pages, every group's blocks H x per request +
/// shared, the pool their sum + the null block but at least vLLM's startup charge + the null
/// block (the charge derived here from engines/vllm/engine.hpp's rule, not from the plan) and the
/// admission gate's bound, total bytes = blocks x bytes_per_block.
inline void check_shared_plan(const cache::memory_plan& p) {
  const cache::plan_options& o = p.options;
  DSV4_FUZZ_CHECK(p.pools.num_groups >= 1);
  const u128 ctx = static_cast<u128>(o.context_tokens);
  const u128 in_flight = static_cast<u128>(o.prefill_chunk_tokens) * (o.policy.overlap ? 2 : 1);
  u128 widest = 0;
  u128 blocks = 0;
  u128 charge = 0;
  for (int e = 0; e < p.pools.num_groups; ++e) {
    const cache::engine_group& g = p.pools[e];
    const cache::engine_group_plan& ep = p.engine_groups[static_cast<std::size_t>(e)];
    u128 bytes = 0;
    for (int m = 0; m < g.num_members; ++m) {
      const cache::engine_member& mb = g.members[static_cast<std::size_t>(m)];
      DSV4_FUZZ_CHECK(mb.page_bytes >= 1 && mb.rows_per_page >= 1);
      bytes += static_cast<u128>(mb.page_bytes) * static_cast<u128>(mb.layers.count());
    }
    widest = bytes > widest ? bytes : widest;
    DSV4_FUZZ_CHECK(ep.pages_per_request >= 1 && ep.shared_pages >= 0);
    DSV4_FUZZ_CHECK(static_cast<u128>(ep.blocks) ==
                    static_cast<u128>(p.holding_requests) * static_cast<u128>(ep.pages_per_request) +
                        static_cast<u128>(ep.shared_pages));
    blocks += static_cast<u128>(ep.blocks);
    const u128 r = static_cast<u128>(g.rule.page_tokens);
    u128 c = 0;
    if (g.rule.kind == cache::table_kind::full_history) {
      const u128 d = static_cast<u128>(o.dcp);
      c = ((ctx + d - 1) / d + r - 1) / r;
    } else if (g.rule.kind == cache::table_kind::sliding_window) {
      const u128 w = static_cast<u128>(g.rule.window_tokens) - 1 + in_flight;
      c = ((w < ctx ? w : ctx) + r - 1) / r + 1;
    } else {
      c = 1;
    }
    DSV4_FUZZ_CHECK(c == static_cast<u128>(ep.charge_blocks));
    charge += c;
  }
  DSV4_FUZZ_CHECK(widest == static_cast<u128>(p.pools.bytes_per_block));
  DSV4_FUZZ_CHECK(static_cast<u128>(p.planned_blocks) == blocks + 1);
  DSV4_FUZZ_CHECK(static_cast<u128>(p.startup_blocks) == charge + 1);
  u128 num = blocks + 1 > charge + 1 ? blocks + 1 : charge + 1;
  // The admission gate's bound (N - 1 requests' plan + a newcomer's prompt blocks), for N >= 2.
  DSV4_FUZZ_CHECK((o.requests >= 2) == (p.admission_blocks > 0));
  num = static_cast<u128>(p.admission_blocks) > num ? static_cast<u128>(p.admission_blocks) : num;
  DSV4_FUZZ_CHECK(static_cast<u128>(p.num_blocks) == num);
  DSV4_FUZZ_CHECK(static_cast<u128>(p.total_bytes) == num * widest);
  u128 groups = 0;
  for (const cache::group_plan& g : p) groups += static_cast<u128>(g.bytes);
  DSV4_FUZZ_CHECK(groups <= static_cast<u128>(p.total_bytes));  // the groups' pages lie inside the blocks
}

/// Checks every number of a plan against its definition (memory_plan.hpp), in 128 bits.
/// A parent-arena plan (tokenspeed) against its definition, in 128-bit arithmetic: every group's
/// pages H x per request + shared, ceil(pages / K) parents, the groups' parents + the null parent,
/// a budget at least that, tokenspeed's startup floor and one request alone, total = parents x
/// parent bytes; and tokenspeed, given the plan's bytes, allocates the groups' parents and admits
/// a request of L.
inline void check_parent_plan(const cache::memory_plan& p) {
  const cache::plan_options& o = p.options;
  DSV4_FUZZ_CHECK(p.pools.num_groups >= 1 && p.pools.bytes_per_block >= 1);
  u128 parents = 0;
  for (int e = 0; e < p.pools.num_groups; ++e) {
    const cache::engine_group& g = p.pools[e];
    const cache::engine_group_plan& ep = p.engine_groups[static_cast<std::size_t>(e)];
    DSV4_FUZZ_CHECK(g.pages_per_block >= 1 && ep.pages_per_request >= 1 && ep.shared_pages >= 0);
    DSV4_FUZZ_CHECK(static_cast<u128>(ep.blocks) ==
                    static_cast<u128>(p.holding_requests) * static_cast<u128>(ep.pages_per_request) +
                        static_cast<u128>(ep.shared_pages));
    const u128 k = static_cast<u128>(g.pages_per_block);
    DSV4_FUZZ_CHECK(static_cast<u128>(ep.parents) == (static_cast<u128>(ep.blocks) + k - 1) / k);
    DSV4_FUZZ_CHECK(p.pools.bytes_per_block % g.pages_per_block == 0);
    parents += static_cast<u128>(ep.parents);
  }
  DSV4_FUZZ_CHECK(static_cast<u128>(p.planned_blocks) == parents + 1);
  DSV4_FUZZ_CHECK(p.num_blocks >= p.planned_blocks && p.num_blocks >= p.startup_blocks &&
                  p.num_blocks >= p.admission_blocks);
  DSV4_FUZZ_CHECK(static_cast<u128>(p.total_bytes) ==
                  static_cast<u128>(p.num_blocks) * static_cast<u128>(p.pools.bytes_per_block));
  const cache::tokenspeed_startup_report t =
      cache::tokenspeed_startup(p.pools, cache::detail::tokenspeed_limits_of(o), p.total_bytes, 1, 0);
  DSV4_FUZZ_CHECK(t.starts);
  DSV4_FUZZ_CHECK(t.parents >= p.planned_blocks - 1 && t.parents <= t.budgeted_parents);
  DSV4_FUZZ_CHECK(t.admits_context);
  DSV4_FUZZ_CHECK(t.arena_bytes <= p.total_bytes);
}

inline void check_plan(const cache::memory_plan& p) {
  DSV4_FUZZ_CHECK(p.num_groups >= 1 && p.num_groups <= cache::kMaxGroups);
  const cache::plan_options& o = p.options;
  const bool shared = p.pools.structure == &cache::vllm_shared_block_pool;
  DSV4_FUZZ_CHECK(shared == (o.pools == cache::pools_choice::engine && o.policy.engine == "vllm"));
  if (shared) {
    check_shared_plan(p);
    return;
  }
  if (p.pools.structure == &cache::tokenspeed_parent_arena) {
    check_parent_plan(p);
    return;
  }
  DSV4_FUZZ_CHECK(o.context_tokens >= 1 && o.requests >= 0 && o.tokens_per_step >= 1 && o.prefill_chunk_tokens >= 1);
  u128 total = 0;
  u128 ideal = 0;
  for (const cache::group_plan& g : p) {
    const cache::paged_cache_group_spec& s = g.spec;
    DSV4_FUZZ_CHECK(s.rows_per_page >= 1 && s.entry_stride_tokens >= 1 && s.num_layers >= 1);
    DSV4_FUZZ_CHECK(s.num_pools >= 1 && s.num_pools <= 2 && s.page_bytes() >= 1);
    DSV4_FUZZ_CHECK(g.pages_per_request >= 1 && g.shared_pages >= 0);
    DSV4_FUZZ_CHECK(p.holding_requests >= 0 && p.holding_requests <= o.requests);
    const u128 pages = static_cast<u128>(p.holding_requests) * static_cast<u128>(g.pages_per_request) +
                       static_cast<u128>(g.shared_pages) + 1;
    DSV4_FUZZ_CHECK(pages == static_cast<u128>(g.pages_per_layer));
    u128 bytes = 0;
    for (int k = 0; k < s.num_pools; ++k) {
      const auto pool_pages = static_cast<u128>(g.pool_pages[static_cast<std::size_t>(k)]);
      DSV4_FUZZ_CHECK(pool_pages >= 1 && pool_pages <= pages);  // a DCP share never exceeds the whole
      if (!cache::dcp_sharded(s, k) || o.dcp == 1) DSV4_FUZZ_CHECK(pool_pages == pages);
      bytes += static_cast<u128>(s.pools[static_cast<std::size_t>(k)].page_bytes) * static_cast<u128>(s.num_layers) *
               pool_pages;
    }
    DSV4_FUZZ_CHECK(bytes == g.bytes);
    DSV4_FUZZ_CHECK(g.ideal_bytes <= g.bytes);
    const u128 ctx = static_cast<u128>(o.context_tokens);
    // Tokens a table may cover: L, or L + sf - 1 where extents run past the context.
    const u128 sf = static_cast<u128>(o.policy.overlap ? 2 * o.tokens_per_step : o.tokens_per_step);
    const u128 reach = o.policy.extent_capped ? ctx : ctx + sf - 1;
    const u128 page_tokens = static_cast<u128>(s.rows_per_page) * static_cast<u128>(s.entry_stride_tokens);
    const u128 cap = (reach + page_tokens - 1) / page_tokens;
    // No request holds more than its whole context; the prompt pages never exceed N whole contexts.
    DSV4_FUZZ_CHECK(static_cast<u128>(g.pages_per_request) <= cap);
    DSV4_FUZZ_CHECK(static_cast<u128>(g.shared_pages) <= static_cast<u128>(o.requests) * cap);
    if (!s.has_sliding_window()) {
      DSV4_FUZZ_CHECK(static_cast<u128>(g.pages_per_request) == cap);
      if (!o.policy.overlap) DSV4_FUZZ_CHECK(g.shared_pages == 0);
    }
    total += bytes;
    ideal += g.ideal_bytes;
  }
  DSV4_FUZZ_CHECK(total == p.total_bytes);
  DSV4_FUZZ_CHECK(ideal == p.ideal_bytes);
}

/// The plan of `c` with `o`, or nullopt for a clean error; checked when built.
inline std::optional<cache::memory_plan> checked_plan(const cache::model_config& c, const cache::plan_options& o) {
  auto p = expect_clean([&] { return cache::build_memory_plan(c, o); });
  if (p) check_plan(*p);
  return p;
}

/// Whether the plan of `c` with `o` fits in `budget` (false if it overflows or is rejected).
inline bool plan_fits(const cache::model_config& c, const cache::plan_options& o, std::uint64_t budget) {
  const auto p = checked_plan(c, o);
  return p && p->total_bytes <= budget;
}

/// max_requests_for_budget against its definition: N fits, N + 1 does not.
inline void check_max_requests(const cache::model_config& c, cache::plan_options o, std::uint64_t budget) {
  set_context(c, o, budget);
  const auto r = expect_clean([&] { return cache::max_requests_for_budget(c, o, budget); });
  if (!r) return;
  DSV4_FUZZ_CHECK(r->max_requests >= 0);
  DSV4_FUZZ_CHECK(r->total_bytes <= budget || r->max_requests == 0);
  if (r->max_requests > 0) {
    o.requests = r->max_requests;
    const auto p = checked_plan(c, o);
    DSV4_FUZZ_CHECK(p.has_value());
    DSV4_FUZZ_CHECK(p->total_bytes == r->total_bytes && p->total_bytes <= budget);
    DSV4_FUZZ_CHECK(r->bytes_left == budget - p->total_bytes);
    // The first request adds the most: the plan is concave in N.
    DSV4_FUZZ_CHECK(static_cast<u128>(p->total_bytes) <=
                    static_cast<u128>(r->fixed_bytes) +
                        static_cast<u128>(r->max_requests) * static_cast<u128>(r->bytes_per_request));
    if (r->max_requests < INT64_MAX) {
      o.requests = r->max_requests + 1;
      DSV4_FUZZ_CHECK(!plan_fits(c, o, budget));
    }
  } else {
    o.requests = 1;
    DSV4_FUZZ_CHECK(!plan_fits(c, o, budget));
    DSV4_FUZZ_CHECK(r->bytes_left == 0);
  }
}

/// max_context_for_budget against its definition: L fits, L + 1 does not (or L is the model max).
inline void check_max_context(const cache::model_config& c, cache::plan_options o, std::uint64_t budget) {
  set_context(c, o, budget);
  const auto r = expect_clean([&] { return cache::max_context_for_budget(c, o, budget); });
  if (!r) return;
  DSV4_FUZZ_CHECK(r->max_context_tokens >= 0 && r->max_context_tokens <= c.max_position_embeddings);
  DSV4_FUZZ_CHECK(r->limited_by_model == (r->max_context_tokens == c.max_position_embeddings));
  if (r->max_context_tokens > 0) {
    o.context_tokens = r->max_context_tokens;
    const auto p = checked_plan(c, o);
    DSV4_FUZZ_CHECK(p.has_value());
    DSV4_FUZZ_CHECK(p->total_bytes == r->total_bytes && p->total_bytes <= budget);
    DSV4_FUZZ_CHECK(r->bytes_left == budget - p->total_bytes);
    if (r->max_context_tokens < c.max_position_embeddings) {
      o.context_tokens = r->max_context_tokens + 1;
      DSV4_FUZZ_CHECK(!plan_fits(c, o, budget));
    }
  } else {
    o.context_tokens = 1;
    DSV4_FUZZ_CHECK(!plan_fits(c, o, budget));
    DSV4_FUZZ_CHECK(r->total_bytes == 0 && r->bytes_left == 0);
  }
}

}  // namespace dsv4::fuzz
