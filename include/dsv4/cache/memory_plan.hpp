// dsv4-cache: how many bytes the DeepSeek V4 KV cache needs, and what fits in a budget.
//
// The plan is derived from the group specs (themselves derived from the layer schemas).
// The model, per group g with page bytes P (one layer, all pools), R rows per page, and
// entry stride S tokens per row, for N requests of L context tokens, s tokens verified per
// decode step and prefill chunks of B tokens:
//
//   full-history group (compressed KV): pages per request = ceil(L / (R x S)), shared = 0
//   sliding group of window W:          pages per request = min(ceil(L / R), ceil((W + s - 2) / R) + 1)
//                                       shared            = ceil(min(B, L) / R)   (one prefill chunk, all requests)
//   every layer's pool keeps one reserved null page (page 0)
//   bytes(g) = P x layers(g) x (N x pages per request + shared + 1);   plan = sum over groups
//
// W is the group's window: sliding_window (128) for v4.swa_kv, 128 for v4.c128a.compressor_state,
// and max(8, 4 + s) for v4.c4a.compressor_state and v4.c4a.indexer_compressor_state (the CSA
// compressor keeps its overlapping windows plus the tokens a speculative step adds).
// (W + s - 2) is the span of positions a ring of W live tokens touches while s new ones are
// written; +1 page because that span may straddle page boundaries. The prefill chunk is
// capped at L (a deviation from the plain ceil(B / R)): a chunk never holds more tokens than
// a request's context, so a 1,000-token deployment is not charged for 8,192-token chunks.
//
// Ideal bytes (no paging): N x per layer [floor(L / ratio) compressed rows x (KV + indexer row
// bytes) + min(L, W) rows of each sliding group x its row bytes]: no page rounding, no prefill
// chunk, no null page. total / ideal is the paging overhead the planner prints.
//
// All arithmetic is 64-bit and overflow-checked: an impossible plan is an error naming the
// values, never a wrapped number. Byte counts are unsigned (a budget may be 2^64 - 1 bytes).
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include "dsv4/cache/group_spec.hpp"

namespace dsv4::cache {

/// What to plan for. `context_tokens == 0` means the model's max_position_embeddings.
struct plan_options {
  indexer_format indexer = indexer_format::fp8;  ///< Indexer key format of CSA layers.
  std::int64_t context_tokens = 0;               ///< L: max context per request, tokens (0 = model max).
  std::int64_t requests = 1;                     ///< N: concurrent requests.
  std::int64_t tokens_per_step = 1;              ///< s: tokens per decode step (1 + speculative tokens).
  std::int64_t prefill_chunk_tokens = 8192;      ///< B: tokens of one prefill chunk.
  bool cache_mtp = true;                         ///< Whether MTP layers keep caches.
};

/// One group's share of the plan.
struct group_plan {
  paged_cache_group_spec spec{};
  std::int64_t window_tokens = 0;      ///< Effective window W for sliding groups; 0 for full history.
  std::int64_t pages_per_request = 0;  ///< Pages one request holds in one layer.
  std::int64_t shared_pages = 0;       ///< Prefill-chunk pages per layer, shared by all requests.
  std::int64_t pages_per_layer = 0;    ///< N x pages_per_request + shared_pages + 1 (null page).
  std::uint64_t bytes = 0;             ///< page_bytes x num_layers x pages_per_layer.
  std::uint64_t ideal_bytes = 0;       ///< Exact row bytes of N requests, no paging.

  /// Pages of this group over all its layers.
  [[nodiscard]] constexpr std::int64_t total_pages() const { return pages_per_layer * spec.num_layers; }
};

/// The memory plan: every group's pages and bytes for N requests of L tokens.
struct memory_plan {
  plan_options options{};  ///< As given, with context_tokens resolved (never 0).
  int num_groups = 0;
  std::array<group_plan, kMaxGroups> groups{};
  std::uint64_t total_bytes = 0;  ///< Sum of the groups' bytes.
  std::uint64_t ideal_bytes = 0;  ///< Sum of the groups' ideal bytes.

  [[nodiscard]] constexpr const group_plan* begin() const { return groups.data(); }
  [[nodiscard]] constexpr const group_plan* end() const { return groups.data() + num_groups; }
  /// total_bytes / ideal_bytes (>= 1): what paging, prefill chunks and null pages cost.
  [[nodiscard]] constexpr double overhead() const {
    return ideal_bytes == 0 ? 0.0 : static_cast<double>(total_bytes) / static_cast<double>(ideal_bytes);
  }
};

namespace detail {

/// Overflow-tracking arithmetic for the plan: the inverse searches need "does not fit"
/// instead of an exception, so the sizing core records overflow and callers decide.
struct guard {
  bool overflow = false;
  constexpr std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 0;
    overflow |= __builtin_mul_overflow(a, b, &r);
    return r;
  }
  constexpr std::uint64_t add(std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 0;
    overflow |= __builtin_add_overflow(a, b, &r);
    return r;
  }
};

constexpr std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }

/// Sizes every group of `specs` for the (already validated) options; N may be 0.
/// Returns false if any quantity overflows 64 bits.
constexpr bool size_plan(const group_spec_list& specs, const plan_options& o, memory_plan& plan) {
  guard g;
  const std::uint64_t n = u(o.requests);
  const std::uint64_t ctx = u(o.context_tokens);
  const std::uint64_t s = u(o.tokens_per_step);
  plan.options = o;
  plan.num_groups = specs.num_groups;
  plan.total_bytes = 0;
  plan.ideal_bytes = 0;
  for (int i = 0; i < specs.num_groups; ++i) {
    const paged_cache_group_spec& spec = specs[i];
    group_plan& gp = plan.groups[static_cast<std::size_t>(i)];
    gp = {};
    gp.spec = spec;
    const std::uint64_t rows = u(spec.rows_per_page);
    std::uint64_t ppr = 0;
    std::uint64_t shared = 0;
    std::uint64_t ideal_rows = 0;
    if (spec.has_sliding_window()) {
      std::uint64_t w = u(spec.sliding_window_tokens);
      const bool csa_state = spec.id.ratio == kCsaRatio;  // c4a compressor and indexer states
      if (csa_state) {
        const std::uint64_t grown = g.add(u(kCsaRatio), s);
        w = grown > w ? grown : w;
      }
      gp.window_tokens = static_cast<std::int64_t>(w);
      const std::uint64_t span = g.add(w, s) - 2;  // w >= 1, s >= 1
      const std::uint64_t ring = span / rows + (span % rows != 0 ? 1 : 0) + 1;
      const std::uint64_t full = ctx / rows + (ctx % rows != 0 ? 1 : 0);
      ppr = ring < full ? ring : full;
      const std::uint64_t chunk = u(o.prefill_chunk_tokens) < ctx ? u(o.prefill_chunk_tokens) : ctx;
      shared = chunk / rows + (chunk % rows != 0 ? 1 : 0);
      ideal_rows = ctx < w ? ctx : w;
    } else {
      const std::uint64_t page_tokens = u(spec.page_size_tokens());
      ppr = ctx / page_tokens + (ctx % page_tokens != 0 ? 1 : 0);
      ideal_rows = ctx / u(spec.entry_stride_tokens);
    }
    const std::uint64_t layers = u(spec.num_layers);
    const std::uint64_t pages = g.add(g.add(g.mul(n, ppr), shared), 1);
    gp.pages_per_request = static_cast<std::int64_t>(ppr);
    gp.shared_pages = static_cast<std::int64_t>(shared);
    gp.pages_per_layer = static_cast<std::int64_t>(pages);
    g.mul(pages, layers);  // total_pages() must fit too
    gp.bytes = g.mul(g.mul(u(spec.page_bytes()), layers), pages);
    gp.ideal_bytes = g.mul(g.mul(g.mul(n, layers), ideal_rows), u(spec.row_bytes()));
    plan.total_bytes = g.add(plan.total_bytes, gp.bytes);
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
  return o;
}

}  // namespace detail

/// The memory plan for `specs` (the groups of `c`, built for the same indexer format and MTP
/// choice as `o`). Throws std::invalid_argument if an option is out of range (context_tokens
/// outside [1, max_position_embeddings], requests < 1, tokens_per_step outside
/// [1, context_tokens], prefill_chunk_tokens < 1) or the plan overflows 64 bits.
constexpr memory_plan build_memory_plan(const model_config& c, const group_spec_list& specs, const plan_options& o) {
  memory_plan plan;
  if (!detail::size_plan(specs, detail::resolve(c, o, 1), plan))
    fail("memory plan overflows 64 bits", {"requests", o.requests}, {"context_tokens", plan.options.context_tokens});
  return plan;
}

/// The memory plan of model `c` with options `o`: groups from `build_cache_specs(c,
/// o.indexer, o.cache_mtp)`. Errors as `build_cache_specs` and the overload above.
constexpr memory_plan build_memory_plan(const model_config& c, const plan_options& o = {}) {
  return build_memory_plan(c, build_cache_specs(c, o.indexer, o.cache_mtp), o);
}

/// How many requests fit in a byte budget (see `max_requests_for_budget`).
struct request_capacity {
  std::int64_t max_requests = 0;        ///< Largest N whose plan fits; 0 if even N = 1 does not.
  std::uint64_t fixed_bytes = 0;        ///< Bytes with N = 0: prefill chunks and null pages (UINT64_MAX if > 64 bits).
  std::uint64_t bytes_per_request = 0;  ///< Bytes each further request adds (UINT64_MAX if > 64 bits).
  std::uint64_t total_bytes = 0;        ///< Plan bytes at max_requests; 0 if no request fits.
  std::uint64_t bytes_left = 0;         ///< budget - total_bytes; 0 if no request fits.
};

/// The largest number of requests of `o.context_tokens` tokens (o.requests is ignored) whose
/// plan fits in `budget_bytes`. Exact: the plan is affine in N. Saturates at INT64_MAX
/// requests. Throws std::invalid_argument for out-of-range options as `build_memory_plan`.
constexpr request_capacity max_requests_for_budget(const model_config& c, plan_options o, std::uint64_t budget_bytes) {
  o.requests = 0;
  o = detail::resolve(c, o, 0);
  const group_spec_list specs = build_cache_specs(c, o.indexer, o.cache_mtp);
  memory_plan p0;
  memory_plan p1;
  const bool ok0 = detail::size_plan(specs, o, p0);
  o.requests = 1;
  const bool ok1 = detail::size_plan(specs, o, p1);
  request_capacity r;
  // A plan that overflows 64 bits holds wrapped sums: report those quantities saturated, never wrapped.
  r.fixed_bytes = ok0 ? p0.total_bytes : std::numeric_limits<std::uint64_t>::max();
  r.bytes_per_request = ok0 && ok1 ? p1.total_bytes - p0.total_bytes : std::numeric_limits<std::uint64_t>::max();
  if (!ok0 || !ok1 || p1.total_bytes > budget_bytes) return r;  // not even one request fits
  const std::uint64_t n = (budget_bytes - r.fixed_bytes) / r.bytes_per_request;
  const auto cap = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  r.max_requests = static_cast<std::int64_t>(n < cap ? n : cap);
  r.total_bytes = r.fixed_bytes + static_cast<std::uint64_t>(r.max_requests) * r.bytes_per_request;  // <= budget
  r.bytes_left = budget_bytes - r.total_bytes;
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
  const group_spec_list specs = build_cache_specs(c, base.indexer, base.cache_mtp);
  memory_plan p;
  const auto fits = [&](std::int64_t ctx) {
    plan_options q = base;
    q.context_tokens = ctx;
    return detail::size_plan(specs, q, p) && p.total_bytes <= budget_bytes;
  };
  context_capacity r;
  std::int64_t lo = 0;  // largest L known to fit (0 = none)
  std::int64_t hi = c.max_position_embeddings;
  // A context shorter than tokens_per_step is no valid plan (resolve() rejects it): search [s, max] only.
  if (fits(base.tokens_per_step))
    lo = base.tokens_per_step;
  else
    hi = 0;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2 + (hi - lo) % 2;  // ceil; hi - lo + 1 overflows for hi = INT64_MAX
    if (fits(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
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
