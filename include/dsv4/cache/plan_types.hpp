// dsv4-cache: what a memory plan is asked (`plan_options`) and answers (`memory_plan`), the page
// rules every pool structure sizes by, and the hooks an engine sizes its own structure with
// (`engine_sizing`; engines/registry.hpp). memory_plan.hpp builds plans from them.
//
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
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string_view>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/sglang/engine.hpp"
#include "dsv4/cache/engines/tokenspeed/engine.hpp"
#include "dsv4/cache/engines/vllm/engine.hpp"
#include "dsv4/cache/group_spec.hpp"
#include "dsv4/cache/model.hpp"
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
  /// The units the engine lays its pages out in (arena_layout.hpp, `pool_structure_traits::place`):
  /// vLLM num_blocks; tokenspeed the parents it allocates for the plan's budget + its null parent
  /// (<= num_blocks: what the planes' offsets follow). 0 for own and ratio pools.
  std::int64_t arena_units = 0;
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
  constexpr std::uint64_t mul(std::uint64_t a, std::uint64_t b) { return saturating_mul(a, b, overflow); }
  constexpr std::uint64_t add(std::uint64_t a, std::uint64_t b) { return saturating_add(a, b, overflow); }
  /// min(a x b, limit), exact even where a x b does not fit in 64 bits.
  static constexpr std::uint64_t min_mul(std::uint64_t a, std::uint64_t b, std::uint64_t limit) {
    const std::uint64_t r = saturating_mul(a, b);
    return r < limit ? r : limit;
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

/// A library group's pages, window and pages per layer as the first engine group holding it has
/// them (the one rule of both engine structures; its bytes are summed over every holder).
constexpr void take_first_engine_group(const engine_group_plan& ep, group_plan& gp) {
  gp.window_tokens = ep.window_tokens;
  gp.pages_per_request = ep.pages_per_request;
  gp.shared_pages = ep.shared_pages;
  gp.pages_per_layer = ep.blocks;
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

/// A library group's share of a plan whose engine tables' blocks are sized (`engine_group_plan::blocks`,
/// each block holding one page of every member): its tensors' pages in the tables that hold them
/// (one rule: the first one's pages per request), bytes = page bytes x blocks over them.
constexpr void size_group_in_tables(const engine_pools& pools, const memory_plan& plan, guard& g, group_plan& gp) {
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

}  // namespace detail

/// How an engine's own pool structure enters a plan: `size_plan` (memory_plan.hpp) calls these
/// for a plan that prices the engine's structure (`plans_engine_structure`) and sizes own pools
/// itself. Each engine defines its value beside its rules (engines/<engine>/plan.hpp).
struct engine_sizing {
  /// The engine's structure of the groups `specs` of `c` (built for the indexer format and MTP
  /// choice of `o`) for the validated options `o`. Errors as the engine's builder.
  engine_pools (*build)(const model_config& c, const group_spec_list& specs, const plan_options& o) = nullptr;
  /// Sizes what the structure allocates as a whole (blocks, parents, pool sizes) for the validated
  /// options `o` into `plan`, whose groups' specs are set; records overflow in `g`, never throws.
  void (*size_units)(const model_config& c, const group_spec_list& specs, const engine_pools& pools,
                     const plan_options& o, detail::guard& g, memory_plan& plan) = nullptr;
  /// One library group's share of those units after `size_units`: its window, pages and bytes.
  void (*size_group)(const engine_pools& pools, const memory_plan& plan, detail::guard& g, group_plan& gp) = nullptr;
};

}  // namespace dsv4::cache
