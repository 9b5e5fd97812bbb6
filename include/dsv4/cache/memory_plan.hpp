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
// SGLang (ratio pools, engines/sglang.hpp) sizes every pool from the budget as a ratio of one
// "full token" count: its plan is the smallest KV budget (`available_bytes`) with which its
// configurator starts with the pool sizes N requests of L need (`sglang_plan_demand`, a bound of
// what engines/sglang_sim.hpp replays), the HCA-state reservation sized for max(its
// max_running_requests, N); a group's bytes are what the configurator charges its pool.
//
// All arithmetic is 64-bit and overflow-checked: an impossible plan is an error naming the
// values, never a wrapped number. Byte counts are unsigned (a budget may be 2^64 - 1 bytes).
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include "dsv4/cache/engines/registry.hpp"
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
  /// How pages become bytes: the engine's pool structure (vLLM: one shared block pool; tokenspeed:
  /// its parent arena), or `own`: every group in a pool of its own.
  pools_choice pools = pools_choice::engine;
  /// The engine's cap on running requests (vLLM's and tokenspeed's max_num_seqs, SGLang's
  /// --max-running-requests per attention-DP worker), which tokenspeed sizes its arena's windows
  /// and SGLang its HCA-state reservation for; 0: the engine's default
  /// (`tokenspeed_default_max_num_seqs`, SGLang's 256).
  std::int64_t max_running_requests = 0;
  vllm_pool_rules vllm_pools{};      ///< vLLM's pool rules (its version preset), for a shared block pool.
  sglang_pool_rules sglang_pools{};  ///< SGLang's rules (its version preset), for ratio pools.
  /// tokenspeed's rules (its version preset, default 0.1.1), for its parent arena.
  tokenspeed_pool_rules tokenspeed_pools{};
  /// SGLang's --swa-full-tokens-ratio (ratio pools): its SWA pool as a share of its full tokens.
  double swa_full_tokens_ratio = 0.1;
};

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

/// One engine group's (block table's) share of a shared-pool plan.
struct engine_group_plan {
  std::int64_t window_tokens = 0;      ///< W for sliding tables; 0 otherwise.
  std::int64_t pages_per_request = 0;  ///< Blocks one request holds in this table.
  std::int64_t shared_pages = 0;       ///< Blocks of the prompts a step admits, beyond their rings.
  std::int64_t blocks = 0;             ///< H x pages_per_request + shared_pages (the null block apart).
  std::int64_t charge_blocks = 0;      ///< The engine's startup charge of one request (vLLM).
  std::int64_t parents = 0;            ///< Parent arena: the parents its blocks bind, ceil(blocks / K).
};

/// The memory plan: every group's pages and bytes for N requests of L tokens.
struct memory_plan {
  plan_options options{};             ///< As given, with context_tokens resolved (never 0).
  std::int64_t holding_requests = 0;  ///< H: requests that can hold pages at once (<= N; see above).
  int num_groups = 0;
  std::array<group_plan, kMaxGroups> groups{};
  /// Own pools: the sum of the groups' bytes. Shared block pool: num_blocks x bytes_per_block.
  std::uint64_t total_bytes = 0;
  std::uint64_t ideal_bytes = 0;  ///< Sum of the groups' ideal bytes.
  /// The engine's pool structure: its block tables and (shared) bytes_per_block.
  engine_pools pools{};
  /// Shared block pool, per engine group (`pools.groups`).
  std::array<engine_group_plan, kMaxEngineGroups> engine_groups{};
  std::int64_t planned_blocks = 0;  ///< Shared: the tables' blocks + 1 null block.
  std::int64_t startup_blocks = 0;  ///< Shared: one request's startup charge + 1 null block (vLLM starts).
  /// Shared, N >= 2: the plan of N - 1 requests + a newcomer's admission gate + 1 null block
  /// (vLLM admits a request only if the free blocks cover its prompt); 0 for N < 2.
  std::int64_t admission_blocks = 0;
  std::int64_t num_blocks = 0;  ///< Shared: the largest of the three, the plan's blocks.
  /// Ratio pools (SGLang): what its configurator computes for the plan's budget (total_bytes),
  /// and the pool sizes the plan asked of it.
  sglang_pool_sizes sglang{};
  sglang_demand sglang_need{};

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

constexpr group_pages pages_of(const table_rule& spec, const plan_options& o, guard& g) {
  const allocation_policy& p = o.policy;
  const std::uint64_t ctx = u(o.context_tokens);
  const std::uint64_t b = u(o.prefill_chunk_tokens);
  const std::uint64_t sf = u(p.in_flight_tokens(o.tokens_per_step));  // s, or 2s with overlap
  const std::uint64_t r = u(spec.page_tokens);
  // Tokens a table may cover: L, or L + sf - 1 where extents run past the context.
  const std::uint64_t reach = p.extent_capped ? ctx : g.add(ctx, sf - 1);
  // A request ring (vLLM `CircularBufferSpec`) is one page for the request's life.
  const std::uint64_t cap = spec.kind == table_kind::request_ring ? 1 : ceil_div(reach, r);
  // Prompt tokens one step admits, or two with overlap (the step in flight still holds its pages).
  const std::uint64_t steps = p.overlap ? 2 : 1;
  const std::uint64_t budget = g.mul(b, steps);
  // Pages of the prompts those tokens start or continue: each may straddle one page more.
  const std::uint64_t prompts = min_u(u(o.requests), budget);
  const std::uint64_t prompt_pages = g.add(prompts, (budget - prompts) / r);
  group_pages out;
  if (!spec.sliding()) {
    out.per_request = cap;
    // Overlap: a finished request keeps its pages for the step in flight while its successor starts.
    out.shared =
        p.overlap && o.role == deployment_role::colocated ? guard::min_mul(u(o.requests), cap, prompt_pages) : 0;
    return out;
  }
  const std::uint64_t w = u(
      effective_window(spec.window_tokens, spec.step_window_base_tokens, p, o.tokens_per_step, spec.engine_state_ring));
  out.window = w;
  // A decoding request spans W - 1 history + sf verified + (sf - 1) lookahead or lag tokens.
  const std::uint64_t ring = ceil_div(g.add(w, g.mul(2, sf)) - 3, r) + 1;
  if (o.role == deployment_role::decode) {  // rings, and whole received prompts' windows: no prefill here
    out.per_request = min_u(cap, ring);
    return out;
  }
  if (p.scheduler == scheduler_kind::prefill_first || o.role == deployment_role::prefill) {
    // Each request may hold a whole last chunk (plus its window) until no prompt is queued, or
    // (prefill role) until its transfer ends.
    const std::uint64_t chunk = min_u(b, ctx - 1);
    const std::uint64_t hold = ceil_div(g.add(g.add(chunk, w), sf) - 2, r) + 1;
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
  const std::uint64_t blocks = ceil_div(pages, dcp);
  const std::uint64_t total = g.mul(pages, rows);
  // Rows on rank 0: each whole turn of dcp x interleave rows gives it `interleave`.
  std::uint64_t rows0 = min_u(total, interleave);  // less than one turn
  if (dcp <= total / interleave) {
    const std::uint64_t turn = dcp * interleave;  // <= total
    rows0 = total / turn * interleave + min_u(total % turn, interleave);
  }
  return max_u(blocks, ceil_div(rows0, rows));
}

/// One engine group's blocks per request and shared blocks for options `o` (DCP shards a
/// full-history table: every tensor of it).
constexpr group_pages engine_group_pages(const engine_group& eg, const plan_options& o, guard& g) {
  group_pages pg = pages_of(eg.rule, o, g);
  if (o.dcp > 1 && eg.rule.kind == table_kind::full_history) {
    pg.per_request =
        dcp_share_pages(pg.per_request, u(eg.members[0].rows_per_page), u(o.dcp), u(o.dcp_interleave_rows), g);
    pg.shared = ceil_div(pg.shared, u(o.dcp));
  }
  return pg;
}

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
  plan.total_bytes = g.mul(num, u(pools.bytes_per_block));
}

/// tokenspeed's scheduler limits for options `o` (engines/tokenspeed.hpp): max_num_seqs
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
  if (budgeted >= 0 && budgeted < static_cast<std::int64_t>(kMax)) {
    // What tokenspeed allocates with that budget must hold the plan's parents and admit a request
    // of L (the checks tokenspeed_startup makes); else the plan cannot be met.
    const std::int64_t cap = tokenspeed_capacity(pools, lim, budgeted);
    const auto alloc =
        static_cast<std::int64_t>(tokenspeed_parents_needed(pools, lim, static_cast<std::uint64_t>(cap)));
    if (cap < 1 || alloc < static_cast<std::int64_t>(need) ||
        tokenspeed_max_request_tokens(pools, lim, alloc) < o.context_tokens)
      budgeted = -1;
  }
  if (budgeted < 0) {  // tokenspeed never allocates that many parents: the plan cannot be met
    g.overflow = true;
    budgeted = static_cast<std::int64_t>(kMax);
  }
  plan.num_blocks = static_cast<std::int64_t>(min_u(g.add(u(budgeted), 1), kMax));
  plan.total_bytes = g.mul(u(plan.num_blocks), u(pools.bytes_per_block));
}

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

/// A library group's pages, window and pages per layer as the first engine group holding it has
/// them (the one rule of both engine structures; its bytes are summed over every holder).
constexpr void take_first_engine_group(const engine_group_plan& ep, group_plan& gp) {
  gp.window_tokens = ep.window_tokens;
  gp.pages_per_request = ep.pages_per_request;
  gp.shared_pages = ep.shared_pages;
  gp.pages_per_layer = ep.blocks;
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

/// A library group's share of a shared-pool plan: its tensors' pages in the engine groups that
/// hold them (one rule: the first one's pages per request).
constexpr void size_group_in_shared_pool(const engine_pools& pools, const memory_plan& plan, guard& g, group_plan& gp) {
  bool first = true;
  for (int e = 0; e < pools.num_groups; ++e) {
    const engine_group& eg = pools[e];
    const engine_group_plan& ep = plan.engine_groups[static_cast<std::size_t>(e)];
    for (int m = 0; m < eg.num_members; ++m) {
      const engine_member& mb = eg.members[static_cast<std::size_t>(m)];
      if (!(mb.group == gp.spec.id)) continue;
      if (first) take_first_engine_group(ep, gp);
      first = false;
      gp.pool_pages[static_cast<std::size_t>(mb.pool)] = ep.blocks;
      gp.bytes = g.add(gp.bytes, g.mul(u(mb.bytes()), u(ep.blocks)));
    }
  }
  g.mul(u(gp.pages_per_layer), u(gp.spec.num_layers));
}

/// A library group in its own pools: H x per request + shared pages + 1 null page per layer,
/// priced at its own page bytes (a DCP-sharded main-KV pool: its share).
constexpr void size_group_in_own_pools(const plan_options& o, std::uint64_t h, guard& g, group_plan& gp) {
  const paged_cache_group_spec& spec = gp.spec;
  const std::uint64_t layers = u(spec.num_layers);
  const group_pages pg = pages_of(table_rule_of(spec), o, g);
  const std::uint64_t pages = g.add(g.add(g.mul(h, pg.per_request), pg.shared), 1);
  gp.window_tokens = static_cast<std::int64_t>(pg.window);
  gp.pages_per_request = static_cast<std::int64_t>(pg.per_request);
  gp.shared_pages = static_cast<std::int64_t>(pg.shared);
  gp.pages_per_layer = static_cast<std::int64_t>(pages);
  g.mul(pages, layers);  // total_pages() must fit too
  for (int k = 0; k < spec.num_pools; ++k) {
    std::uint64_t pool_pages = pages;
    if (dcp_sharded(spec, k) && o.dcp > 1) {
      const std::uint64_t per =
          dcp_share_pages(pg.per_request, u(spec.rows_per_page), u(o.dcp), u(o.dcp_interleave_rows), g);
      pool_pages = g.add(g.add(g.mul(h, per), ceil_div(pg.shared, u(o.dcp))), 1);
    }
    gp.pool_pages[static_cast<std::size_t>(k)] = static_cast<std::int64_t>(pool_pages);
    gp.bytes = g.add(gp.bytes, g.mul(g.mul(u(spec.pools[static_cast<std::size_t>(k)].page_bytes), layers), pool_pages));
  }
}

/// Sizes every group of `specs` for the (already validated) options, priced in the pool
/// structure `pools` (built from the same groups, or projected onto the same stage); N may be 0.
/// Returns false if any quantity overflows 64 bits.
///
/// Own pools: every group holds H x per request + shared pages + 1 null page per layer, priced at
/// its own page bytes. Shared block pool (vLLM): every engine group (block table) holds
/// H x per request + shared blocks by the same rules; the pool holds their sum + 1 null block, at
/// least what vLLM's startup check asks (one request's charge + the null block) and, for N >= 2,
/// what its admission gate asks (N - 1 requests' plan + a newcomer's prompt blocks), each block
/// `pools.bytes_per_block` bytes. A library group's bytes are then what its tensors occupy of
/// those blocks. Parent arena (tokenspeed): every engine group holds H x per request + shared
/// pages by the same rules, ceil(pages / K) parents; the plan's budget makes tokenspeed allocate
/// at least their sum, what its recipe needs to start and what one request of L needs alone
/// (`tokenspeed_budgeted_parents_for`), + 1 null parent; a library group's bytes are its parents.
constexpr bool size_plan(const group_spec_list& specs, const plan_options& o, const engine_pools& pools,
                         memory_plan& plan) {
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
  plan.sglang = {};
  plan.sglang_need = {};
  const bool shared = pools.structure == pool_structure::shared_block_pool;
  const bool arena = pools.structure == pool_structure::parent_arena;
  const bool ratio = pools.structure == pool_structure::ratio_pools;
  if (shared) size_shared_blocks(pools, o, g, plan);
  if (arena) size_parent_arena(pools, o, g, plan);
  for (int i = 0; i < specs.num_groups; ++i) {
    plan.groups[static_cast<std::size_t>(i)] = {};
    plan.groups[static_cast<std::size_t>(i)].spec = specs[i];
  }
  if (ratio) size_ratio_pools(specs, pools, o, g, plan);
  for (int i = 0; i < specs.num_groups; ++i) {
    group_plan& gp = plan.groups[static_cast<std::size_t>(i)];
    if (ratio) {  // its bytes: size_ratio_pools; its window: the model's
      gp.window_tokens = gp.spec.has_sliding_window() ? gp.spec.sliding_window_tokens : 0;
    } else if (shared) {
      size_group_in_shared_pool(pools, plan, g, gp);
    } else if (arena) {
      size_group_in_parent_arena(pools, plan, g, gp);
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

/// The pool structure a plan of `c` with options `o` prices the groups `specs` in
/// (`plan_structure`): vLLM's shared block pool (`vllm_engine_pools` with the preset's rules
/// `o.vllm_pools` at s = o.tokens_per_step), tokenspeed's parent arena
/// (`tokenspeed_engine_pools`), or one pool per group. Errors as `vllm_engine_pools` (a format
/// vLLM does not store) and `tokenspeed_engine_pools`.
constexpr engine_pools plan_pools(const model_config& c, const group_spec_list& specs, const plan_options& o) {
  switch (plan_structure(o, c.family)) {
    case pool_structure::ratio_pools: {
      engine_pools e = own_pools_of(specs);
      e.structure = pool_structure::ratio_pools;
      e.sglang = sglang_geometry_of(c, o.tokens_per_step > 1, 0, -1, o.sglang_pools);
      return e;
    }
    case pool_structure::shared_block_pool: return vllm_engine_pools(specs, c.family, o.vllm_pools, o.tokens_per_step);
    case pool_structure::parent_arena: return tokenspeed_engine_pools(specs, o.tokenspeed_pools);
    case pool_structure::own_pools: break;
  }
  return own_pools_of(specs);
}

/// The memory plan for `specs` (the groups of `c`, built for the same indexer format and MTP
/// choice as `o`). Throws std::invalid_argument if an option is out of range (context_tokens
/// outside [1, max_position_embeddings], requests < 1, tokens_per_step outside
/// [1, context_tokens], prefill_chunk_tokens < 1) or the plan overflows 64 bits.
constexpr memory_plan build_memory_plan(const model_config& c, const group_spec_list& specs, const plan_options& o) {
  memory_plan plan;
  const plan_options r = detail::resolve(c, o, 1);
  if (!detail::size_plan(specs, r, plan_pools(c, specs, r), plan))
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
    const bool ok = detail::size_plan(specs, q, pools, p);
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
    return detail::size_plan(specs, q, pools, p) && p.total_bytes <= budget_bytes;
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
