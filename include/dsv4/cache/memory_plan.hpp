// dsv4-cache: how many bytes the DeepSeek V4 KV cache needs, and what fits in a budget.
//
// The plan is derived from the group specs (themselves derived from the layer schemas) and
// bounds the pages an engine's allocator really holds at its worst, under an
// `allocation_policy` (policy.hpp: vLLM, tokenspeed mixed-batch, tokenspeed default, with
// their sources). Per group with page bytes P (one layer, all pools) and R tokens per page,
// for N requests of L context tokens, s tokens per decode step, a step budget of B tokens
// (the prefill chunk), and sf = s (2s with overlap: one more step in flight):
//
//   reach = L (vLLM caps tables at max_model_len), or L + sf - 1 (tokenspeed: a prompt of
//           L - 1 tokens reserves s more);   cap = ceil(reach / R)
//   ring  = ceil((W + 2 sf - 3) / R) + 1: a decoding request spans W - 1 history tokens, sf
//           verified and sf - 1 lookahead (vLLM) or expiry lag (tokenspeed) tokens
//   H     = min(N, B) when every running request takes a token of each step that admits a
//           prompt (vLLM's scheduler: running requests first, decodes shrink to the budget
//           left; tokenspeed mixed with s = 1; no overlap): at most B requests hold pages;
//           else H = N
//   prompt pages = n + floor((S - n) / R), S = B (2B with overlap), n = min(N, S): the prompts
//           of a step's budget, each straddling at most one page more
//   full history:          pages per layer = N_h x cap + [overlap: min(N cap, prompt pages)] + 1
//   sliding, running first: per = min(cap, ring)
//                          pages per layer = H x per + min(N (cap - per), prompt pages) + 1
//                          (overlap: min(N cap, prompt pages): successors start while
//                          finished requests still hold their pages)
//   sliding, prefill first (tokenspeed default: a prefilled request keeps its whole last
//           chunk until no prompt is queued): per = min(cap, max(ring, ceil((min(B, L - 1)
//           + W + sf - 2) / R) + 1)), pages per layer = N x per + 1
//   bytes(g) = P x layers(g) x pages per layer;   plan = sum over groups
//
// (N_h = H.) W is the group's window under the policy (`effective_window`): 128 for v4.swa_kv
// and v4.c128a.compressor_state; 8 for the CSA compressor and indexer states, or max(8, 4 + s)
// where the policy has tokenspeed's older rule; V4.1: 128 for v4.1.swa, 2 for
// v4.1.compressor_state_r2, or under vLLM its fixed ring max(8, next power of two >= s + 1) rows
// (`vllm_state_ring_rows`). Every layer's pool also keeps its null page.
//
// Each term was derived from the worst cases of the allocation simulator (alloc_sim.hpp),
// which replays the engines' page tables step by step and never uses these formulas; the test
// `plan_safety_grid` checks plan >= simulated peak + null page for every group over N in
// {1, 2, 7, 64}, L in {5, ..., 131072}, s in 1..4, B in {1, 64, 512, 8192} and every policy,
// and prints plan / peak bytes (median 1.05 vLLM, 1.01 tokenspeed, 1.00 tokenspeed default;
// overlap is safe but looser, median about 1.5).
//
// Ideal bytes (no paging): H x per layer [floor(L / ratio) compressed rows x (KV + indexer row
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
#include "dsv4/cache/policy.hpp"

namespace dsv4::cache {

/// What an instance does under prefill/decode disaggregation.
enum class deployment_role : std::uint8_t {
  colocated,  ///< Prefills and decodes (no disaggregation).
  prefill,    ///< Prefills N prompts at once, each held whole (its history, window and last chunk) until
              ///< its transfer ends: no page of it expires meanwhile.
  decode,     ///< Decodes N requests and receives `handover_requests` more (whole prompts) at once; no prefill.
};

constexpr std::string_view to_string(deployment_role r) {
  switch (r) {
    case deployment_role::colocated: return "colocated";
    case deployment_role::prefill: return "prefill";
    case deployment_role::decode: return "decode";
  }
  return "?";
}

/// What to plan for. `context_tokens == 0` means the model's max_position_embeddings.
struct plan_options {
  indexer_format indexer = indexer_format::fp8;  ///< Indexer key format of CSA layers (family default).
  format_overrides formats{};                    ///< Registry formats over the family's defaults.
  std::int64_t context_tokens = 0;               ///< L: max context per request, tokens (0 = model max).
  std::int64_t requests = 1;                     ///< N: concurrent requests.
  std::int64_t tokens_per_step = 1;              ///< s: tokens per decode step (1 + speculative tokens).
  std::int64_t prefill_chunk_tokens = 8192;      ///< B: tokens of one prefill chunk.
  bool cache_mtp = true;                         ///< Whether MTP layers keep caches.
  allocation_policy policy = vllm_policy;        ///< The engine's allocation rules (policy.hpp).
  /// Prefill/decode disaggregation: what this instance does (see `deployment_role`).
  deployment_role role = deployment_role::colocated;
  std::int64_t handover_requests = 0;  ///< decode role: requests being received at once, beside N decoding.
  /// Decode context parallelism: the main-KV pool of every full-history group holds 1 / dcp of each
  /// request's rows on this rank (parallel.hpp); the indexer keys, windows and states stay whole.
  std::int64_t dcp = 1;
  std::int64_t dcp_interleave_rows = 1;  ///< Rows of a request dealt to one DCP rank in turn (vLLM's interleave).
};

/// One group's share of the plan.
struct group_plan {
  paged_cache_group_spec spec{};
  std::int64_t window_tokens = 0;      ///< Effective window W for sliding groups; 0 for full history.
  std::int64_t pages_per_request = 0;  ///< Pages one request holds in one layer.
  std::int64_t shared_pages = 0;       ///< Pages per layer of the prompts a step admits, beyond their rings.
  std::int64_t pages_per_layer = 0;    ///< H x pages_per_request + shared_pages + 1 (null page).
  /// Pages per layer of each pool: pages_per_layer, except a DCP-sharded main-KV pool (its share of
  /// pages_per_request and shared_pages on this rank, + 1).
  std::array<std::int64_t, 2> pool_pages{};
  std::uint64_t bytes = 0;        ///< Sum over pools of pool page bytes x num_layers x pool_pages.
  std::uint64_t ideal_bytes = 0;  ///< Exact row bytes of the H requests holding pages, no paging.

  /// Pages of this group over all its layers.
  [[nodiscard]] constexpr std::int64_t total_pages() const { return pages_per_layer * spec.num_layers; }
};

/// The memory plan: every group's pages and bytes for N requests of L tokens.
struct memory_plan {
  plan_options options{};             ///< As given, with context_tokens resolved (never 0).
  std::int64_t holding_requests = 0;  ///< H: requests that can hold pages at once (<= N; see above).
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
/// Results saturate at UINT64_MAX, so arithmetic after an overflow never wraps either.
struct guard {
  bool overflow = false;
  constexpr std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 0;
    if (!__builtin_mul_overflow(a, b, &r)) return r;
    overflow = true;
    return std::numeric_limits<std::uint64_t>::max();
  }
  constexpr std::uint64_t add(std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 0;
    if (!__builtin_add_overflow(a, b, &r)) return r;
    overflow = true;
    return std::numeric_limits<std::uint64_t>::max();
  }
  /// ceil(a / b), b > 0.
  static constexpr std::uint64_t cdiv(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }
  /// min(a x b, limit), exact even where a x b does not fit in 64 bits.
  static constexpr std::uint64_t min_mul(std::uint64_t a, std::uint64_t b, std::uint64_t limit) {
    return b != 0 && a > limit / b ? limit : (a * b < limit ? a * b : limit);
  }
};

constexpr std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }
constexpr std::uint64_t min_u(std::uint64_t a, std::uint64_t b) { return a < b ? a : b; }
constexpr std::uint64_t max_u(std::uint64_t a, std::uint64_t b) { return a > b ? a : b; }

/// Pages per layer of one group under policy `o.policy` (see the header comment).
struct group_pages {
  std::uint64_t window = 0;  ///< W (sliding groups), tokens.
  std::uint64_t per_request = 0;
  std::uint64_t shared = 0;
};

/// Requests that can hold pages at once. N, except where every running request takes at least
/// one token of every step that admits a prompt (running first, decodes that shrink to the
/// budget left, or s = 1): a prompt is admitted only with budget left after all running
/// requests, so at most B requests run at once.
constexpr std::uint64_t holding_requests(const plan_options& o) {
  const allocation_policy& p = o.policy;
  if (o.role == deployment_role::prefill) return u(o.requests);
  if (o.role == deployment_role::decode) return u(o.requests) + u(o.handover_requests);
  const bool budget_bounds = p.scheduler == scheduler_kind::running_first &&
                             (!p.decode_needs_whole_step || o.tokens_per_step == 1) && !p.overlap;
  const std::uint64_t n = u(o.requests);
  return budget_bounds ? min_u(n, u(o.prefill_chunk_tokens)) : n;
}

constexpr group_pages pages_of(const paged_cache_group_spec& spec, const plan_options& o, guard& g) {
  const allocation_policy& p = o.policy;
  const std::uint64_t ctx = u(o.context_tokens);
  const std::uint64_t b = u(o.prefill_chunk_tokens);
  const std::uint64_t sf = u(p.in_flight_tokens(o.tokens_per_step));  // s, or 2s with overlap
  const std::uint64_t r = u(spec.page_size_tokens());
  // Tokens a table may cover: L, or L + sf - 1 where extents run past the context.
  const std::uint64_t reach = p.extent_capped ? ctx : g.add(ctx, sf - 1);
  const std::uint64_t cap = guard::cdiv(reach, r);
  // Prompt tokens one step admits, or two with overlap (the step in flight still holds its pages).
  const std::uint64_t steps = p.overlap ? 2 : 1;
  const std::uint64_t budget = g.mul(b, steps);
  // Pages of the prompts those tokens start or continue: each may straddle one page more.
  const std::uint64_t prompts = min_u(u(o.requests), budget);
  const std::uint64_t prompt_pages = g.add(prompts, (budget - prompts) / r);
  group_pages out;
  if (!spec.has_sliding_window()) {
    out.per_request = cap;
    // Overlap: a finished request keeps its pages for the step in flight while its successor starts.
    out.shared =
        p.overlap && o.role == deployment_role::colocated ? guard::min_mul(u(o.requests), cap, prompt_pages) : 0;
    return out;
  }
  const std::uint64_t w = u(effective_window(spec.sliding_window_tokens, spec.step_window_base_tokens, p,
                                             o.tokens_per_step, spec.engine_state_ring));
  out.window = w;
  // A decoding request spans W - 1 history + sf verified + (sf - 1) lookahead or lag tokens.
  const std::uint64_t ring = guard::cdiv(g.add(w, g.mul(2, sf)) - 3, r) + 1;
  if (o.role == deployment_role::decode) {  // rings, and whole received prompts' windows: no prefill here
    out.per_request = min_u(cap, ring);
    return out;
  }
  if (p.scheduler == scheduler_kind::prefill_first || o.role == deployment_role::prefill) {
    // Each request may hold a whole last chunk (plus its window) until no prompt is queued, or
    // (prefill role) until its transfer ends.
    const std::uint64_t chunk = min_u(b, ctx - 1);
    const std::uint64_t hold = guard::cdiv(g.add(g.add(chunk, w), sf) - 2, r) + 1;
    out.per_request = min_u(cap, max_u(ring, hold));
    out.shared = p.overlap ? guard::min_mul(u(o.requests), cap, prompt_pages) : 0;
    return out;
  }
  out.per_request = min_u(cap, ring);
  // The prompts of one step's budget hold up to cap pages each, beyond their ring; with
  // overlap also successors of requests that still hold theirs.
  out.shared = guard::min_mul(u(o.requests), p.overlap ? cap : cap - out.per_request, prompt_pages);
  return out;
}

/// Pages one DCP rank needs for a request whose sharded pool spans `pages` pages of `rows` rows
/// when rows are dealt to `dcp` ranks `interleave` at a time: the engine allocates every virtual
/// block (dcp pages) on every rank, ceil(pages / dcp) (vLLM `SingleTypeKVCacheManager`, block size
/// x dcp), and the first rank, which gets the most rows, needs ceil(rows_0 / rows) pages.
constexpr std::uint64_t dcp_share_pages(std::uint64_t pages, std::uint64_t rows, std::uint64_t dcp,
                                        std::uint64_t interleave, guard& g) {
  const std::uint64_t blocks = guard::cdiv(pages, dcp);
  const std::uint64_t total = g.mul(pages, rows);
  // Rows on rank 0: each whole turn of dcp x interleave rows gives it `interleave`.
  std::uint64_t rows0 = min_u(total, interleave);  // less than one turn
  if (dcp <= total / interleave) {
    const std::uint64_t turn = dcp * interleave;  // <= total
    rows0 = total / turn * interleave + min_u(total % turn, interleave);
  }
  return max_u(blocks, guard::cdiv(rows0, rows));
}

/// Sizes every group of `specs` for the (already validated) options; N may be 0.
/// Returns false if any quantity overflows 64 bits.
constexpr bool size_plan(const group_spec_list& specs, const plan_options& o, memory_plan& plan) {
  guard g;
  const std::uint64_t ctx = u(o.context_tokens);
  plan.options = o;
  plan.holding_requests = static_cast<std::int64_t>(holding_requests(o));
  plan.num_groups = specs.num_groups;
  plan.total_bytes = 0;
  plan.ideal_bytes = 0;
  for (int i = 0; i < specs.num_groups; ++i) {
    const paged_cache_group_spec& spec = specs[i];
    group_plan& gp = plan.groups[static_cast<std::size_t>(i)];
    gp = {};
    gp.spec = spec;
    const group_pages pg = pages_of(spec, o, g);
    const std::uint64_t ideal_rows =
        spec.has_sliding_window() ? min_u(ctx, pg.window) : ctx / u(spec.entry_stride_tokens);
    const std::uint64_t layers = u(spec.num_layers);
    const std::uint64_t pages = g.add(g.add(g.mul(u(plan.holding_requests), pg.per_request), pg.shared), 1);
    gp.window_tokens = static_cast<std::int64_t>(pg.window);
    gp.pages_per_request = static_cast<std::int64_t>(pg.per_request);
    gp.shared_pages = static_cast<std::int64_t>(pg.shared);
    gp.pages_per_layer = static_cast<std::int64_t>(pages);
    g.mul(pages, layers);  // total_pages() must fit too
    gp.bytes = 0;
    for (int k = 0; k < spec.num_pools; ++k) {
      std::uint64_t pool_pages = pages;
      if (dcp_sharded(spec, k) && o.dcp > 1) {
        const std::uint64_t per =
            dcp_share_pages(pg.per_request, u(spec.rows_per_page), u(o.dcp), u(o.dcp_interleave_rows), g);
        pool_pages = g.add(g.add(g.mul(u(plan.holding_requests), per), guard::cdiv(pg.shared, u(o.dcp))), 1);
      }
      gp.pool_pages[static_cast<std::size_t>(k)] = static_cast<std::int64_t>(pool_pages);
      gp.bytes =
          g.add(gp.bytes, g.mul(g.mul(u(spec.pools[static_cast<std::size_t>(k)].page_bytes), layers), pool_pages));
    }
    // The exact rows of the H requests that hold pages at once (<= the plan's bytes).
    gp.ideal_bytes = g.mul(g.mul(g.mul(u(plan.holding_requests), layers), ideal_rows), u(spec.row_bytes()));
    plan.total_bytes = g.add(plan.total_bytes, gp.bytes);
    plan.ideal_bytes = g.add(plan.ideal_bytes, gp.ideal_bytes);
  }
  return !g.overflow;
}

/// The largest x in [lo, hi] with fits(x), given fits(lo) and that fits is monotone (true up to
/// some x, false after). A binary search that never computes hi - lo + 1 (hi may be INT64_MAX).
template <class Fits>
constexpr std::int64_t largest_fitting(std::int64_t lo, std::int64_t hi, Fits&& fits) {
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2 + (hi - lo) % 2;  // ceil((lo + hi) / 2), no overflow
    if (fits(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
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
  memory_plan p;
  const auto bytes_at = [&](std::int64_t n, std::uint64_t& bytes) {
    plan_options q = o;
    q.requests = n;
    const bool ok = detail::size_plan(specs, q, p);
    bytes = p.total_bytes;
    return ok;
  };
  request_capacity r;
  constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t b0 = 0;
  std::uint64_t b1 = 0;
  const bool ok0 = bytes_at(0, b0);
  const bool ok1 = bytes_at(1, b1);
  // A plan that overflows 64 bits holds wrapped sums: report those quantities saturated, never wrapped.
  r.fixed_bytes = ok0 ? b0 : kSaturated;
  r.bytes_per_request = ok0 && ok1 ? b1 - b0 : kSaturated;
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
  memory_plan p;
  const auto fits = [&](std::int64_t ctx) {
    plan_options q = base;
    q.context_tokens = ctx;
    return detail::size_plan(specs, q, p) && p.total_bytes <= budget_bytes;
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
