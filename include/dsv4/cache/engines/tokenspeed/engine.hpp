// dsv4-cache: tokenspeed as an engine value: its allocation policies (policy.hpp, with their
// sources), its parent arena (the pool structure) and its startup figures (`Cache profile`).
//
// Every rule with its source (repository, file, commit, function) and what is not modelled:
// docs/engines/tokenspeed.md; each function below cites the rule it implements.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/tokenspeed/arena.hpp"
#include "dsv4/cache/engines/traits.hpp"
#include "dsv4/cache/group_spec.hpp"
#include "dsv4/cache/kv_budget.hpp"
#include "dsv4/cache/policy.hpp"

namespace dsv4::cache {

/// tokenspeed with --enable-mixed-batch: expiry at the request's own admission
/// (`CacheCoordinator::Admit`), extents past the context, a decode needs all s tokens of the
/// step's budget; bounds both CSA-state window rules (max(8, 4 + s), and 8 since PR #1612).
inline constexpr allocation_policy tokenspeed_policy{
    .engine = "tokenspeed",
    .scheduler = scheduler_kind::running_first,
    .expiry = expiry_timing::own_admission,
    .window_rules =
        static_cast<std::uint8_t>(window_rule::fixed) | static_cast<std::uint8_t>(window_rule::grows_with_step),
    .first_chunk_lookaheads = 0,
    .running_lookahead = false,
    .extent_capped = false,
    .last_chunk_reserves_step = true,
    .decode_needs_whole_step = true,
};

/// tokenspeed's default scheduler (no mixed batches): as `tokenspeed_policy`, prefill first.
inline constexpr allocation_policy tokenspeed_default_policy = [] {
  allocation_policy p = tokenspeed_policy;
  p.engine = "tokenspeed-default";
  p.scheduler = scheduler_kind::prefill_first;
  return p;
}();

/// tokenspeed's prefix granularity P for DeepSeek V4 (tokens; kernel_page_sizes.py @ ed545eac
/// DEEPSEEK_V4_PAGE_SIZE). It bounds the capacity search, never the sizing.
inline constexpr std::int64_t kTokenspeedPrefixTokens = 256;
/// The parent's and every plane's base alignment (recipes/base.py `CacheRecipe.alignment`), bytes.
inline constexpr std::int64_t kTokenspeedAlignment = 256;
/// The page stride alignment of the SWA and compressed-KV fields (576 B: the FP8 NoPE + BF16
/// RoPE token stride, deepseek_v4_geometry.py `deepseek_v4_swa_token_stride`).
inline constexpr std::int64_t kTokenspeedKvStrideAlignment = 576;
/// tokenspeed's padding limit per group: (parent / K - raw) / raw <= 2 (`_MAX_PADDING_FRACTION`).
inline constexpr std::int64_t kTokenspeedMaxPaddingFraction = 2;

/// tokenspeed's default max_num_seqs (utils/server_args.py @ eaf9e503): 80 with speculative
/// decoding (s > 1 tokens per step), else 160.
constexpr std::int64_t tokenspeed_default_max_num_seqs(std::int64_t tokens_per_step) {
  return tokens_per_step > 1 ? 80 : 160;
}

/// tokenspeed's defaults at f4d8ec6e (both schedulers), each with where tokenspeed sets it; the
/// 0.1.1 presets share them (0.1.1 sets the same: utils/server_args.py max_num_seqs 160, 80 with a
/// speculative algorithm, chunked_prefill_size 8192; engine/scheduler_utils.py
/// `should_use_overlap_schedule`; kernel_page_sizes.py DEEPSEEK_V4_PAGE_SIZE 256).
inline constexpr engine_defaults tokenspeed_defaults{
    .overlap = true,
    .overlap_off_modelled = true,
    .overlap_name = "overlap scheduling",
    // Off only with --disable-overlap-schedule (or for PD prefill).
    .overlap_ref = "lightseekorg/tokenspeed python/tokenspeed/runtime/engine/scheduler_utils.py@6083537e",
    .draft_layer = false,
    // num_draft_layers: 0 without a draft model config (no speculative decoding by default).
    .draft_layer_ref =
        "lightseekorg/tokenspeed python/tokenspeed/runtime/layers/attention/kv_cache/recipes/"
        "base.py@f4d8ec6e CacheRecipe.num_draft_layers",
    .tokens_per_step = 1,
    .tokens_per_step_ref = "lightseekorg/tokenspeed python/tokenspeed/runtime/utils/server_args.py@eaf9e503",
    .max_running = 160,
    .max_running_speculative = 80,
    .max_running_name = "max_num_seqs",
    .max_running_ref = "lightseekorg/tokenspeed python/tokenspeed/runtime/utils/server_args.py@eaf9e503",
    .prefill_chunk = 8192,
    .prefill_chunk_name = "chunked prefill size",
    .prefill_chunk_ref = "lightseekorg/tokenspeed python/tokenspeed/runtime/utils/server_args.py@eaf9e503",
    .block_tokens = 256,
    .block_tokens_ref = "lightseekorg/tokenspeed python/tokenspeed/runtime/configs/model_config.py@6083537e",
    .indexer_mxfp4 = false,
    .indexer_ref =
        "lightseekorg/tokenspeed python/tokenspeed/runtime/layers/attention/deepseek_v4_geometry.py@6083537e",
    .mxfp4_indexer_min_sm = 0,
    .mxfp4_indexer_rule = "",
    .mxfp4_indexer_ref = "",
    .v41_formats_follow_gpu = false,
    .v41_formats_ref = "",
    .swa_full_tokens_ratio = 0,
    .swa_ratio_ref = "",
    .has_dp_attention = false,
    .dp_attention_ref = "",
};

/// The scheduler limits tokenspeed sizes its arena with (recipes/base.py
/// `CacheRecipe.scheduler_limits`), all in requests or tokens.
struct tokenspeed_limits {
  std::int64_t max_num_seqs = 160;   ///< N: max_live_requests (max_num_seqs / attention DP).
  std::int64_t chunk_tokens = 8192;  ///< C: max_scheduled_tokens (the chunked-prefill size).
  std::int64_t context_tokens = 0;   ///< max_context_len (max_model_len).
  std::int64_t decode_tokens = 1;    ///< d: decode input tokens (1 + speculative tokens).
  std::int64_t overlap_depth = 0;    ///< o: 1 with overlap scheduling (tokenspeed's default), else 0.
};

namespace detail {

constexpr std::int64_t ts_round_up(std::int64_t v, std::int64_t a) {
  return checked_mul(checked_add(v, a - 1) / a, a);  // throws past 2^63 - 1, never wraps
}

/// The sliding window a tokenspeed group keeps (tokens): its own, or max(W, base + d) for the
/// CSA states (v4_c4_state_window: max(8, 4 + d)); saturates at INT64_MAX for a huge d.
constexpr std::int64_t ts_window(const table_rule& r, std::int64_t d) {
  if (r.step_window_base_tokens <= 0 || d <= r.window_tokens - r.step_window_base_tokens) return r.window_tokens;
  return saturating_add(r.step_window_base_tokens, d);
}

}  // namespace detail

/// Whether tokenspeed's parent arena models `family`'s groups: DeepSeek V4 only (tokenspeed has
/// no V4.1 or V3.2 code at f4d8ec6e).
constexpr bool tokenspeed_arena_models(model_family family) { return family == model_family::v4; }

/// Why tokenspeed does not store pool `k` of group `g` as the library lays it out, or nullptr:
/// its V4 recipe writes FP8 KV rows of 584 B (v4.fp8_ds_mla pages), FP8 or MXFP4 index keys and
/// fp32 compressor states (deepseek_v4_geometry.py @ 6083537e), nothing else.
constexpr const char* tokenspeed_format_mismatch(const paged_cache_group_spec& g, int k) {
  const format_layout& f = g.pools[static_cast<std::size_t>(k)].format;
  if (f.role == format_role::state) return nullptr;  // fp32_state
  if (f.role == format_role::indexer_k)
    return f.name == "v4.indexer_fp8" || f.name == "v4.indexer_mxfp4"
               ? nullptr
               : "tokenspeed stores V4 index keys as 132-B FP8 or 68-B MXFP4 rows only (v4.indexer_fp8, "
                 "v4.indexer_mxfp4)";
  return f.name == "v4.fp8_ds_mla" ? nullptr
                                   : "tokenspeed's V4 recipe stores KV rows as v4.fp8_ds_mla only (584 B, 576-B pages)";
}

/// tokenspeed's pool rules of one version preset (engines/registry.hpp), each with where that
/// version sets it (see the top of this file).
struct tokenspeed_pool_rules {
  /// The CSA layers' index keys in a group of their own, `v4.c4a.indexer_kv` (full history, the
  /// compressed KV's 256-token pages, its own packing; a layer's keys on plane "unit.<slot>"),
  /// as tokenspeed 0.1.1 declares them (recipes/deepseek_v4.py `v4_indexer_kv_spec`); false:
  /// beside the compressed KV in `v4.c4a.compressed_kv`, on plane "unit.<n4 + slot>" (f4d8ec6e).
  bool indexer_keys_own_group = true;
  /// The CSA-state windows grow with the decode input tokens d, max(8, 4 + d) (f4d8ec6e
  /// `v4_c4_state_window`); false: 8 at any d (0.1.1: V4_COMPRESSOR_STATE_WINDOW_TOKENS[4]).
  bool c4_state_window_grows = false;
  /// tokenspeed's ValueError for a budget below two parents: 0.1.1's recipes/base.py
  /// `CacheRecipe._budgeted_parents` ("{family} cache budget ..." with family "deepseek_v4");
  /// f4d8ec6e's recipes/deepseek_v4.py `DeepseekV4Recipe.num_lcm_blocks`.
  std::string_view budget_refusal = "deepseek_v4 cache budget must hold a null parent and one usable LCM parent";
  /// Each pipeline stage builds its own arena from its layers (f4d8ec6e, as read); false: 0.1.1
  /// keeps the whole model's parent geometry on every stage and drops the other stages' planes
  /// (recipes/plan.py `CacheMemoryPlan.narrow_to_layers`), not modelled: the planner refuses --pp.
  bool stage_own_arena = false;
  friend constexpr bool operator==(const tokenspeed_pool_rules&, const tokenspeed_pool_rules&) = default;
};

/// tokenspeed 0.1.1 as released (wheel tokenspeed-0.1.1, 2026-10): index keys in their own group,
/// CSA-state windows of 8.
inline constexpr tokenspeed_pool_rules tokenspeed_rules_0_1_1{
    .indexer_keys_own_group = true,
    .c4_state_window_grows = false,
    .budget_refusal = "deepseek_v4 cache budget must hold a null parent and one usable LCM parent",
    .stage_own_arena = false};
/// tokenspeed at f4d8ec6e (2026-08-22): index keys in the compressed-KV group, windows max(8, 4 + d).
inline constexpr tokenspeed_pool_rules tokenspeed_rules_f4d8ec6e{
    .indexer_keys_own_group = false,
    .c4_state_window_grows = true,
    .budget_refusal = "DeepSeek V4 cache budget must hold a null parent and one usable parent",
    .stage_own_arena = true};

/// Whether engine group `g` of a tokenspeed arena is 0.1.1's own index-key group: its tensors are
/// pool 1 (the index keys) of the CSA compressed-KV group only.
constexpr bool tokenspeed_is_indexer_group(const engine_group& g) {
  return g.num_members > 0 && g.members[0].pool == 1 && g.members[0].group.kind == group_kind::compressed_kv &&
         g.members[0].group.ratio == 4;
}

/// tokenspeed's id of engine group `g` ("v4.c4a.indexer_kv" for 0.1.1's index keys, else the
/// library group's id).
inline std::string tokenspeed_group_id(const engine_group& g) {
  return tokenspeed_is_indexer_group(g) ? std::string("v4.c4a.indexer_kv") : to_string(g.members[0].group);
}

namespace detail {

/// tokenspeed's engine groups before they are built: library group `lib`, its pools
/// [first_pool, end_pool), its bytes per block (`raw`: the pools' pages x layers).
struct ts_source {
  int lib = 0;
  int first_pool = 0;
  int end_pool = 0;
  std::int64_t raw = 0;
};
struct ts_sources {
  std::array<ts_source, kMaxEngineGroups> src{};
  int n = 0;
  std::int64_t max_raw = 0;
  int csa_layers = 0;  ///< layers of the CSA compressed-KV group (f4d8ec6e's index-key planes follow them)
};

/// One source per library group, the CSA index keys a source of their own where `rules` say so.
constexpr ts_sources ts_collect_sources(const group_spec_list& specs, const tokenspeed_pool_rules& rules) {
  ts_sources out;
  for (int gi = 0; gi < specs.num_groups; ++gi) {
    const paged_cache_group_spec& g = specs[gi];
    const bool csa_kv = g.id.kind == group_kind::compressed_kv && g.id.ratio == 4;
    if (csa_kv) out.csa_layers = g.num_layers;
    const bool split = rules.indexer_keys_own_group && csa_kv && g.num_pools > 1;
    for (int part = 0; part < (split ? 2 : 1); ++part) {
      require(out.n < kMaxEngineGroups, "too many tokenspeed cache groups", {"groups", out.n});
      ts_source& s = out.src[static_cast<std::size_t>(out.n)];
      s = {gi, split ? part : 0, split && part == 0 ? 1 : g.num_pools, 0};
      std::int64_t page = 0;
      for (int p = s.first_pool; p < s.end_pool; ++p)
        page = checked_add(page, g.pools[static_cast<std::size_t>(p)].page_bytes);
      s.raw = checked_mul(page, std::int64_t{g.num_layers});
      if (s.raw > out.max_raw) out.max_raw = s.raw;
      ++out.n;
    }
  }
  return out;
}

/// The planes of a parent (recipes/plan.py @ 6083537e `pack`, every packing pinned): each plane
/// the max over its groups of K x field bytes, rounded up to the lcm of 256, K x element size (4
/// for fp32 states, 1 for uint8 rows) and K x the KV fields' page stride alignment (576 B).
constexpr tokenspeed_planes ts_planes(const group_spec_list& specs, const tokenspeed_pool_rules& rules,
                                      const ts_sources& ss, const engine_pools& e) {
  std::array<std::int64_t, kMaxTokenspeedPlanes> need{};   // max over groups of K x field bytes
  std::array<std::int64_t, kMaxTokenspeedPlanes> align{};  // lcm of the plane's alignments
  for (std::int64_t& a : align) a = kTokenspeedAlignment;
  tokenspeed_planes out;
  for (int ei = 0; ei < ss.n; ++ei) {
    const ts_source& s = ss.src[static_cast<std::size_t>(ei)];
    const paged_cache_group_spec& g = specs[s.lib];
    const std::int64_t k = e.groups[static_cast<std::size_t>(ei)].pages_per_block;
    for (int slot = 0; slot < g.num_layers; ++slot) {
      for (int p = s.first_pool; p < s.end_pool; ++p) {
        const format_role role = g.pools[static_cast<std::size_t>(p)].format.role;
        const int plane = tokenspeed_plane_of(p, slot, rules.indexer_keys_own_group, ss.csa_layers);
        require(plane < kMaxTokenspeedPlanes, "too many tokenspeed planes", {"plane", plane});
        if (plane + 1 > out.num_planes) out.num_planes = plane + 1;
        const std::int64_t bytes = checked_mul(k, g.pools[static_cast<std::size_t>(p)].page_bytes);
        std::int64_t& nd = need[static_cast<std::size_t>(plane)];
        if (bytes > nd) nd = bytes;
        std::int64_t& a = align[static_cast<std::size_t>(plane)];
        // Element size: fp32 states, uint8 rows; the KV fields' page stride alignment (576 B).
        a = std::lcm(a, checked_mul(k, std::int64_t{role == format_role::state ? 4 : 1}));
        if (role == format_role::main_kv) a = std::lcm(a, checked_mul(k, kTokenspeedKvStrideAlignment));
      }
    }
  }
  for (int pl = 0; pl < out.num_planes; ++pl)
    if (need[static_cast<std::size_t>(pl)] > 0)
      out.bytes[static_cast<std::size_t>(pl)] =
          ts_round_up(need[static_cast<std::size_t>(pl)], align[static_cast<std::size_t>(pl)]);
  return out;
}

/// The parent's bytes: the planes' sum (`ts_planes`), rounded up to the lcm of 256 and every
/// packing (recipes/plan.py `pack`).
constexpr std::int64_t ts_parent_bytes(const tokenspeed_planes& planes, const engine_pools& e) {
  std::int64_t parent_align = kTokenspeedAlignment;
  for (const engine_group& g : e) parent_align = std::lcm(parent_align, g.pages_per_block);
  std::int64_t sum = 0;
  for (int pl = 0; pl < planes.num_planes; ++pl) sum = checked_add(sum, planes.bytes[static_cast<std::size_t>(pl)]);
  return ts_round_up(sum, parent_align);
}

}  // namespace detail

/// tokenspeed's pool structure: one arena of parents; a parent is bound to one engine group at a
/// time and holds `pages_per_block` (K) of its pages, from any requests; every parent
/// `bytes_per_block` bytes.
inline constexpr pool_structure_traits tokenspeed_parent_arena{
    .name = "parent_arena",
    .title = "the parent arena",
    .overhead = "the parent arena: parents rounded up, the null parent, what it needs to start",
    .summary = "one parent arena, {block_bytes} B per parent",
    .legend =
        "(rows, tokens: per page of the library's layout; window: tokens a sliding group keeps per request; "
        "page B: one page of one layer, all pools; pages/L: the group's pages (each over all its layers), H x "
        "per request + prompt pages; bytes: the parents its pages bind{sim})\n",
    .sim_legend = "; sim/L: the simulator's peak pages of the group; slack: pages/L - sim/L",
    .whole_blocks = true,
    .measure = peak_measure::parents,
    .place = tokenspeed_page_placement,
    .stage_builds_own = true,
    .placed = true,
    .key_unit_bytes = "parent_bytes",
    .key_units = "num_parents",
    .key_planned = "planned_parents",
    .key_startup = "startup_parents",
    .key_admission = "request_parents",
    .key_sim_peak = "simulated_peak_parents"};

/// tokenspeed's parent arena for the V4 groups `specs` (the MTP layers in them only when a draft
/// model runs) under the rules `rules` of a preset: one engine group per library group (its table
/// rule, K = `pages_per_block`), the CSA index keys a group of their own where the rules say so,
/// every parent `bytes_per_block` bytes (the planes' sum, see the top of this file). Throws
/// std::invalid_argument if a group breaks tokenspeed's padding or partition check (tokenspeed
/// refuses the layout) or a layer sits in no group.
constexpr engine_pools tokenspeed_engine_pools(const group_spec_list& specs,
                                               const tokenspeed_pool_rules& rules = tokenspeed_rules_0_1_1) {
  engine_pools e;
  e.structure = &tokenspeed_parent_arena;
  require(specs.num_groups > 0, "tokenspeed's arena needs at least one cache group", {"groups", specs.num_groups});
  const detail::ts_sources ss = detail::ts_collect_sources(specs, rules);
  // One engine group per source, K its packing.
  for (int ei = 0; ei < ss.n; ++ei) {
    const detail::ts_source& s = ss.src[static_cast<std::size_t>(ei)];
    const paged_cache_group_spec& g = specs[s.lib];
    require(s.raw > 0, "a tokenspeed cache group declares no bytes", {"group", s.lib});
    engine_group& eg = e.groups[static_cast<std::size_t>(e.num_groups++)];
    eg.rule = table_rule_of(g);
    if (!rules.c4_state_window_grows) eg.rule.step_window_base_tokens = 0;  // 0.1.1: the windows stay W
    eg.pages_per_block = static_cast<std::int64_t>(std::bit_floor(static_cast<std::uint64_t>(ss.max_raw / s.raw)));
    for (int p = s.first_pool; p < s.end_pool; ++p) {
      engine_member& m = eg.members[static_cast<std::size_t>(eg.num_members++)];
      m.group = g.id;
      m.pool = p;
      for (int i = 0; i < g.num_layers; ++i) m.layers.set(g.layers[static_cast<std::size_t>(i)]);
      m.rows_per_page = g.pools[static_cast<std::size_t>(p)].rows_per_page;
      m.page_bytes = g.pools[static_cast<std::size_t>(p)].page_bytes;
    }
  }
  e.tokenspeed = detail::ts_planes(specs, rules, ss, e);
  e.bytes_per_block = detail::ts_parent_bytes(e.tokenspeed, e);
  for (int ei = 0; ei < ss.n; ++ei) {
    const std::int64_t k = e.groups[static_cast<std::size_t>(ei)].pages_per_block;
    const std::int64_t r = ss.src[static_cast<std::size_t>(ei)].raw;
    require(e.bytes_per_block % k == 0, "tokenspeed: a group's packing does not partition the parent", {"group", ei},
            {"packing", k}, {"parent_bytes", e.bytes_per_block});
    require(e.bytes_per_block / k - r <= kTokenspeedMaxPaddingFraction * r,
            "tokenspeed: a group's padding in the parent exceeds its limit (2x its bytes)", {"group", ei},
            {"packing", k}, {"parent_bytes", e.bytes_per_block});
  }
  return e;
}

/// tokenspeed's page demand of one group (pages, the null page included) at T tokens of capacity
/// under `lim` (recipes/spec.py `compute_cache_group_page_counts`, safety margin 0). Saturates.
constexpr std::uint64_t tokenspeed_group_pages(const engine_group& g, const tokenspeed_limits& lim, std::uint64_t T) {
  const auto b = static_cast<std::uint64_t>(g.rule.page_tokens);
  const auto n = static_cast<std::uint64_t>(lim.max_num_seqs);
  const std::uint64_t protected_pages =
      saturating_mul(n, ceil_div(saturating_mul(static_cast<std::uint64_t>(lim.overlap_depth),
                                                static_cast<std::uint64_t>(lim.decode_tokens)),
                                 b));
  const std::uint64_t fixed = saturating_add(saturating_add(n, protected_pages), 1);
  if (!g.rule.sliding()) return saturating_add(ceil_div(T, b), fixed);
  const std::int64_t w = detail::ts_window(g.rule, lim.decode_tokens);
  const std::int64_t behind = w - 1 < lim.context_tokens ? w - 1 : lim.context_tokens;
  const std::uint64_t resident = saturating_mul(n, ceil_div(static_cast<std::uint64_t>(behind > 0 ? behind : 0), b));
  const auto c = static_cast<std::uint64_t>(lim.chunk_tokens);
  const std::uint64_t scheduled = ceil_div(c < T ? c : T, b);
  return saturating_add(saturating_add(resident, scheduled), fixed);
}

/// Parents tokenspeed's recipe needs for T tokens of capacity: sum over groups of
/// ceil((pages - 1) / K) (recipes/base.py `CacheRecipe.parents_needed`). Saturates.
constexpr std::uint64_t tokenspeed_parents_needed(const engine_pools& pools, const tokenspeed_limits& lim,
                                                  std::uint64_t T) {
  std::uint64_t sum = 0;
  for (const engine_group& g : pools)
    sum = saturating_add(
        sum, ceil_div(tokenspeed_group_pages(g, lim, T) - 1, static_cast<std::uint64_t>(g.pages_per_block)));
  return sum;
}

/// The largest token capacity T in [1, n x max K x P] whose demand fits `n` parents, 0 if not
/// even T = 1 fits (recipes/base.py `_capacity_from_parents`, a binary search).
constexpr std::int64_t tokenspeed_capacity(const engine_pools& pools, const tokenspeed_limits& lim, std::int64_t n) {
  if (n < 1) return 0;
  std::int64_t max_k = 1;
  for (const engine_group& g : pools) max_k = g.pages_per_block > max_k ? g.pages_per_block : max_k;
  const std::uint64_t upper =
      saturating_mul(saturating_mul(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(max_k)),
                     static_cast<std::uint64_t>(kTokenspeedPrefixTokens));
  std::uint64_t lo = 0;
  std::uint64_t hi = upper < (std::uint64_t{1} << 62) ? upper : (std::uint64_t{1} << 62);
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo + 1) / 2;
    if (tokenspeed_parents_needed(pools, lim, mid) <= static_cast<std::uint64_t>(n))
      lo = mid;
    else
      hi = mid - 1;
  }
  return static_cast<std::int64_t>(lo);
}

/// The parents one request of L tokens (prompt and output) needs alone, the fused role
/// (tokenspeed-scheduler `singleRequestLcmBlocksRequired`): with w = d, protected = o x w and
/// p = max(L - w, 0): a full-history group ceil((L + protected) / b) pages; a sliding group
/// ceil((min(p, C) + w + protected) / b), and when p > C at least look + ceil(C / b) and
/// look + ceil((min(p - C, C) + w + protected) / b), look = ceil((W - 1) / b); summed as
/// ceil(pages / K). Saturates.
constexpr std::uint64_t tokenspeed_request_parents(const engine_pools& pools, const tokenspeed_limits& lim,
                                                   std::uint64_t L) {
  const auto w = static_cast<std::uint64_t>(lim.decode_tokens);
  const std::uint64_t prot = saturating_mul(static_cast<std::uint64_t>(lim.overlap_depth), w);
  const std::uint64_t p = L > w ? L - w : 0;
  const auto c = static_cast<std::uint64_t>(lim.chunk_tokens);
  std::uint64_t sum = 0;
  for (const engine_group& g : pools) {
    const auto b = static_cast<std::uint64_t>(g.rule.page_tokens);
    std::uint64_t pages = 0;
    if (!g.rule.sliding()) {
      pages = ceil_div(saturating_add(L, prot), b);
    } else {
      const std::int64_t win = detail::ts_window(g.rule, lim.decode_tokens);
      const std::uint64_t look = ceil_div(static_cast<std::uint64_t>(win > 1 ? win - 1 : 0), b);
      pages = ceil_div(saturating_add(saturating_add(p < c ? p : c, w), prot), b);
      if (p > c) {
        const std::uint64_t later = p - c < c ? p - c : c;
        const std::uint64_t a = saturating_add(look, ceil_div(c, b));
        const std::uint64_t z = saturating_add(look, ceil_div(saturating_add(saturating_add(later, w), prot), b));
        pages = pages > a ? pages : a;
        pages = pages > z ? pages : z;
      }
    }
    sum = saturating_add(sum, ceil_div(pages, static_cast<std::uint64_t>(g.pages_per_block)));
  }
  return sum;
}

/// The longest request (tokens) `n` parents admit alone: the largest L in [0, 2^31 - 1] with
/// `tokenspeed_request_parents(L) <= n` (`calculateMaxSingleRequestTokens`).
constexpr std::int64_t tokenspeed_max_request_tokens(const engine_pools& pools, const tokenspeed_limits& lim,
                                                     std::int64_t n) {
  std::uint64_t lo = 0;
  std::uint64_t hi = (std::uint64_t{1} << 31) - 1;
  if (tokenspeed_request_parents(pools, lim, 0) > static_cast<std::uint64_t>(n)) return -1;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo + 1) / 2;
    if (tokenspeed_request_parents(pools, lim, mid) <= static_cast<std::uint64_t>(n))
      lo = mid;
    else
      hi = mid - 1;
  }
  return static_cast<std::int64_t>(lo);
}

/// What tokenspeed computes and logs at startup from a KV budget (recipes/base.py
/// `CacheRecipe.setup`, registry.py `create_attn_components`).
struct tokenspeed_startup_report {
  std::int64_t parent_bytes = 0;
  std::int64_t prefix_tokens = kTokenspeedPrefixTokens;  ///< P.
  std::int64_t budgeted_parents = 0;                     ///< budget // parent_bytes - 1.
  std::int64_t parents = 0;                              ///< num_lcm_blocks: parents_needed(cap(budgeted)).
  std::int64_t token_capacity = 0;                       ///< cap(parents).
  std::int64_t max_request_tokens = 0;                   ///< The longest request the parents admit alone.
  std::uint64_t arena_bytes = 0;                         ///< (parents + 1) x parent_bytes.
  std::int64_t min_parents_to_start = 0;                 ///< parents_needed(1): the recipe's floor.
  bool starts = false;
  bool admits_context = false;  ///< A request of max_model_len is admitted (L <= max_request_tokens).
  std::string log_line;         ///< The `Cache profile` line (when it starts).
  std::string refusal;          ///< tokenspeed's ValueError (when it does not).
};

/// The packing as tokenspeed logs it: a Python dict of group id -> K, ids sorted.
inline std::string tokenspeed_packing_text(const engine_pools& pools) {
  std::array<std::pair<std::string, std::int64_t>, kMaxEngineGroups> items{};
  int n = 0;
  for (const engine_group& g : pools)
    items[static_cast<std::size_t>(n++)] = {tokenspeed_group_id(g), g.pages_per_block};
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && items[static_cast<std::size_t>(j)].first < items[static_cast<std::size_t>(j - 1)].first;
         --j)
      std::swap(items[static_cast<std::size_t>(j)], items[static_cast<std::size_t>(j - 1)]);
  std::string s = "{";
  for (int i = 0; i < n; ++i)
    s += (i > 0 ? ", '" : "'") + items[static_cast<std::size_t>(i)].first +
         "': " + std::to_string(items[static_cast<std::size_t>(i)].second);
  return s + "}";
}

/// tokenspeed's startup figures for the arena `pools` under `lim` with a KV budget of `budget`
/// bytes, `layers` cache layers of which `draft_layers` are the draft model's (the log's
/// "layers=%d (draft %d)"). Refuses as tokenspeed does (in the words of the preset's `rules`): a
/// budget below two parents, or parents that cannot admit one token. Throws
/// std::invalid_argument for limits below 1 (N, C, d) or a context below 1.
inline tokenspeed_startup_report tokenspeed_startup(const engine_pools& pools, const tokenspeed_limits& lim,
                                                    std::uint64_t budget, int layers, int draft_layers,
                                                    const tokenspeed_pool_rules& rules = tokenspeed_rules_0_1_1) {
  require(lim.max_num_seqs >= 1 && lim.chunk_tokens >= 1, "tokenspeed's max_num_seqs and chunk must be >= 1",
          {"max_num_seqs", lim.max_num_seqs}, {"chunk_tokens", lim.chunk_tokens});
  require(lim.decode_tokens >= 1 && lim.context_tokens >= 1, "tokenspeed's decode tokens and context must be >= 1",
          {"decode_tokens", lim.decode_tokens}, {"context_tokens", lim.context_tokens});
  require(pools.structure == &tokenspeed_parent_arena && pools.bytes_per_block > 0,
          "tokenspeed_startup needs a parent arena", {"bytes_per_block", pools.bytes_per_block});
  tokenspeed_startup_report r;
  r.parent_bytes = pools.bytes_per_block;
  r.min_parents_to_start = static_cast<std::int64_t>(tokenspeed_parents_needed(pools, lim, 1));
  const std::uint64_t whole = budget / static_cast<std::uint64_t>(r.parent_bytes);
  r.budgeted_parents =
      whole >= 1 ? static_cast<std::int64_t>(whole > (std::uint64_t{1} << 62) ? (std::uint64_t{1} << 62) : whole) - 1
                 : -1;
  if (r.budgeted_parents < 1) {
    r.refusal = std::string(rules.budget_refusal);
    return r;
  }
  const std::int64_t cap = tokenspeed_capacity(pools, lim, r.budgeted_parents);
  if (cap < 1) {
    r.refusal = "num_lcm_blocks=" + std::to_string(r.budgeted_parents) +
                " cannot admit one token with the configured deepseek_v4 cache scheduler limits";
    return r;
  }
  r.parents = static_cast<std::int64_t>(tokenspeed_parents_needed(pools, lim, static_cast<std::uint64_t>(cap)));
  r.token_capacity = tokenspeed_capacity(pools, lim, r.parents);
  r.max_request_tokens = tokenspeed_max_request_tokens(pools, lim, r.parents);
  r.arena_bytes = saturating_mul(static_cast<std::uint64_t>(r.parents) + 1, static_cast<std::uint64_t>(r.parent_bytes));
  r.starts = true;
  r.admits_context = r.max_request_tokens >= lim.context_tokens;
  r.log_line = "Cache profile: parent_bytes=" + std::to_string(r.parent_bytes) +
               ", P=" + std::to_string(r.prefix_tokens) + ", parents=" + std::to_string(r.parents) +
               ", token_capacity=" + std::to_string(r.token_capacity) + ", layers=" + std::to_string(layers) +
               " (draft " + std::to_string(draft_layers) + "), groups=" + tokenspeed_packing_text(pools);
  return r;
}

/// The smallest budgeted parent count m (budget // parent_bytes - 1) whose arena holds at least
/// `need` parents (tokenspeed allocates parents_needed(cap(m)) <= m of them), and can admit a
/// token; -1 if no budget makes tokenspeed allocate that many (a recipe without a full-history
/// group demands a bounded number of parents at any capacity). `need` >= 1.
constexpr std::int64_t tokenspeed_budgeted_parents_for(const engine_pools& pools, const tokenspeed_limits& lim,
                                                       std::int64_t need) {
  if (tokenspeed_parents_needed(pools, lim, std::uint64_t{1} << 62) < static_cast<std::uint64_t>(need)) return -1;
  const auto start = static_cast<std::int64_t>(tokenspeed_parents_needed(pools, lim, 1));
  std::int64_t m = need > start ? need : start;
  if (m < 1) m = 1;
  // parents_needed is a step function of T: the allocation reaches `need` within a few parents
  // past it (one step: at most a page of every group at once).
  for (int i = 0; i < 4096 && m < (std::int64_t{1} << 62); ++i, ++m) {
    const std::int64_t cap = tokenspeed_capacity(pools, lim, m);
    if (cap >= 1 &&
        static_cast<std::int64_t>(tokenspeed_parents_needed(pools, lim, static_cast<std::uint64_t>(cap))) >= need)
      return m;
  }
  return -1;  // not within 4,096 parents past `need` (never for the demand's unit steps)
}

/// tokenspeed as the planner names it, derives its budget and refuses (engines/engine.hpp): its
/// parent arena is modelled for DeepSeek V4 without DCP (else own pools).
inline constexpr engine_traits tokenspeed_traits{
    .title = "tokenspeed",
    .running_cap = "tokenspeed's max_num_seqs",
    .weights = weight_engine::tokenspeed,
    .fraction_flag = "--gpu-memory-utilization",
    .fraction_reference =
        "lightseekorg/tokenspeed python/tokenspeed/runtime/utils/server_args.py@f4d8ec6e:461-474 (by world size)",
    .default_fraction = [](const budget_inputs& in) { return tokenspeed_default_gpu_memory_utilization(in.world); },
    .own_structure_models = [](model_family family,
                               std::int64_t dcp) { return tokenspeed_arena_models(family) && dcp == 1; },
    .own_structure_scope = "tokenspeed's parent arena is modelled for DeepSeek V4 without DCP only",
    .refusal = [](model_family, std::int64_t, bool) -> const char* { return nullptr; },
    .format_mismatch = tokenspeed_format_mismatch};

}  // namespace dsv4::cache
