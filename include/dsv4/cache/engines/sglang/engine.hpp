// dsv4-cache: SGLang as an engine value: its DeepSeek V4 pool configurator (how one KV budget
// becomes a number of "full tokens" and pools sized as ratios of it), the bytes its pools really
// allocate, and its occupancy of each pool at run time (what really fits).
//
// Every rule with its source (repository, file, commit, function) and what is not modelled:
// docs/engines/sglang.md; each function below cites the rule it implements. [G]: the pin,
// sgl-project/sglang cce0a1244b5a3ee60411fb403f65f856a1d012f0, paths relative to python/sglang/srt/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/engines/defaults.hpp"
#include "dsv4/cache/engines/traits.hpp"
#include "dsv4/cache/group_spec.hpp"
#include "dsv4/cache/kv_budget.hpp"
#include "dsv4/cache/layer_schedule.hpp"
#include "dsv4/cache/model.hpp"
#include "dsv4/cache/policy.hpp"

namespace dsv4::cache {

/// SGLang as an allocation policy: it names the engine and its prefill-first scheduler with
/// the overlap scheduler on (its default, scheduler.py:1873-1877). Its plan and occupancy read
/// none of the window or lookahead rules: they are SGLang's own (`sglang_plan_demand` below,
/// engines/sglang/replay.hpp).
inline constexpr allocation_policy sglang_policy{
    .engine = "sglang",
    .scheduler = scheduler_kind::prefill_first,
    .expiry = expiry_timing::every_allocation,
    .window_rules = static_cast<std::uint8_t>(window_rule::fixed),
    .first_chunk_lookaheads = 0,
    .running_lookahead = false,
    .extent_capped = true,
    .last_chunk_reserves_step = false,
    .decode_needs_whole_step = false,
    .overlap = true,
};

/// The rules of one SGLang version (a preset's data, engines/registry.hpp): how the configurator
/// prices a KV row and what the CSA compressor state is sized by. Sources at the top of this file.
struct sglang_pool_rules {
  const char* release = "0.5.23";  ///< The version the rules were read from (named in refusals).
  /// Rows priced as allocated (pages rounded up to 576 B: 585 / 585 / 864 B per SWA / CSA / HCA
  /// token); false: 584 B per row ([G]).
  bool page_rounded_rows = true;
  /// The c4 state sized ring / page (c4_state = swa // page x ring4); false: ring / window ([G]).
  bool c4_state_per_page = true;
};

/// SGLang 0.5.23 (the released default): `model_executor/pool_configurator.py` of the wheel.
inline constexpr sglang_pool_rules sglang_rules_0_5_23{"0.5.23", true, true};
/// SGLang at cce0a124 ([G]).
inline constexpr sglang_pool_rules sglang_rules_cce0a124{"cce0a124", false, false};

/// SGLang's defaults for DeepSeek V4 at cce0a124 on an H100 / H200-class GPU, each with where
/// SGLang sets it (paths relative to python/sglang/srt/, see the top of this file).
inline constexpr engine_defaults sglang_defaults{
    .overlap = true,
    .overlap_off_modelled = false,  // --disable-overlap-schedule is not modelled
    .overlap_name = "overlap scheduling",
    .overlap_ref = "sgl-project/sglang python/sglang/srt/managers/scheduler.py@cce0a124:1873-1877",
    .draft_layer = false,
    // speculative_algorithm None: no draft model (no MTP layer cached).
    .draft_layer_ref = "sgl-project/sglang python/sglang/srt/server_args.py@cce0a124 ServerArgs.speculative_algorithm",
    .tokens_per_step = 1,
    .tokens_per_step_ref =
        "sgl-project/sglang python/sglang/srt/server_args.py@cce0a124 ServerArgs.speculative_algorithm",
    .max_running = 256,
    .max_running_speculative = 256,
    .max_running_name = "max_running_requests",
    .max_running_ref = "sgl-project/sglang python/sglang/srt/arg_groups/deepseek_v4_hook.py@cce0a124:138-142",
    .prefill_chunk = 8192,
    .prefill_chunk_name = "chunked_prefill_size",
    .prefill_chunk_ref = "sgl-project/sglang python/sglang/srt/server_args.py@cce0a124 (H100 / H200 class: 8192)",
    .block_tokens = 256,
    .block_tokens_ref = "sgl-project/sglang python/sglang/srt/arg_groups/overrides.py@cce0a124:1139-1167",
    .indexer_mxfp4 = false,
    .indexer_ref = "sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py@cce0a124:881-921",
    .mxfp4_indexer_min_sm = 0,
    .mxfp4_indexer_rule = "",
    .mxfp4_indexer_ref = "",
    .v41_formats_follow_gpu = false,
    .v41_formats_ref = "",
    .swa_full_tokens_ratio = 0.1,
    .swa_ratio_ref = "sgl-project/sglang python/sglang/srt/arg_groups/overrides.py@cce0a124:1139-1167",
    .has_dp_attention = true,
    .dp_attention_ref = "sgl-project/sglang python/sglang/srt/server_args.py@cce0a124 ServerArgs.enable_dp_attention",
};

/// SGLang's server arguments the DeepSeek V4 configurator reads, for one attention-DP worker
/// group (`--dp-size` with DP attention splits max_running_requests over `attn_dp`).
struct sglang_options {
  double swa_full_tokens_ratio = 0.1;       ///< `--swa-full-tokens-ratio` (V4 default 0.1).
  std::int64_t page_size = 256;             ///< `--page-size` (V4: 256, asserted).
  std::int64_t max_running_requests = 256;  ///< `--max-running-requests` (V4 hook: 256).
  std::int64_t attn_dp = 1;                 ///< Attention data-parallel workers.
  /// Tokens verified per decode step (1: no speculative decoding; EAGLE / DSpark: 1 + drafts).
  std::int64_t tokens_per_step = 1;
  std::int64_t chunked_prefill_size = 8192;  ///< `--chunked-prefill-size` (H100 / H200 class: 8,192).
  std::int64_t context_len = 0;              ///< The model's context length (0: max_position_embeddings).

  [[nodiscard]] constexpr bool speculative() const { return tokens_per_step > 1; }
  [[nodiscard]] constexpr std::int64_t max_running_per_worker() const { return max_running_requests / attn_dp; }
};

/// What the configurator reads of the model (one pipeline stage of it), in SGLang's units.
struct sglang_geometry {
  int layers = 0;       ///< L: the stage's main layers (every one has an SWA row per token).
  int csa_layers = 0;   ///< L4: ratio-4 layers (compressed KV, index keys, two fp32 states).
  int hca_layers = 0;   ///< L128: ratio-128 layers (compressed KV, one request-scoped state).
  int kv_bytes = 0;     ///< 584: qk_nope + 2 x qk_rope + 8 (FP8 NoPE, BF16 RoPE, scales).
  int index_bytes = 0;  ///< 132: index_head_dim + index_head_dim / 128 x 4.
  int head_dim = 0;     ///< 512: qk_nope + qk_rope (the state rows' width).
  int index_head_dim = 0;
  int window = 0;     ///< 128: the sliding window (also the c4-state divisor in [G]).
  int c4_ring = 0;    ///< 8, or 16 with speculation.
  int c128_ring = 0;  ///< 128, or 256 with speculation.
  /// What the c4 state is sized by: the window (128, [G]) or the page (256, 0.5.23).
  int c4_state_divisor = 0;
  /// Bytes one token's row is priced at: SWA, CSA and HCA KV (584 each at [G]; 585, 585, 864 at
  /// 0.5.23: a page of 256, 64 and 2 rows rounded up to 576 B, over its rows).
  double swa_row_bytes = 0;
  double c4_row_bytes = 0;
  double c128_row_bytes = 0;
  bool release_order = false;  ///< 0.5.23's float order of the bytes per full token.
};

/// The configurator's geometry of layers [first, end) of `m` (a DeepSeek V4 model) with
/// speculative decoding or not, under SGLang version `rules`. Throws std::invalid_argument for a
/// model that is not V4 (naming the release) or a ratio other than 0, 4, 128 (SGLang:
/// "Unsupported compression ratio").
constexpr sglang_geometry sglang_geometry_of(const model_config& m, bool speculative, int first = 0, int end = -1,
                                             const sglang_pool_rules& rules = sglang_rules_0_5_23) {
  require(m.family == model_family::v4,
          rules.c4_state_per_page
              ? "SGLang 0.5.23's DeepSeek V4 pools are modelled for V4 models only (its V4.1 ratio-2 pools and V3.2's "
                "configurator are not)"
              : "SGLang's DeepSeek V4 pool configurator at cce0a124 sizes V4 models only (V4.1's ratio-2 rings and "
                "V3.2's pools are not in it)");
  if (end < 0) end = m.num_hidden_layers;
  require(first >= 0 && first < end && end <= m.num_hidden_layers, "layer range outside the main layers",
          {"first", first}, {"end", end});
  sglang_geometry g;
  for (int i = first; i < end; ++i) {
    const int r = m.compress_ratios[static_cast<std::size_t>(i)];
    require(r == 0 || r == 1 || r == kCsaRatio || r == kHcaRatio, "SGLang: unsupported compression ratio", {"layer", i},
            {"compress_ratio", r});
    ++g.layers;
    if (r == kCsaRatio) ++g.csa_layers;
    if (r == kHcaRatio) ++g.hca_layers;
  }
  const int nope = m.head_dim - m.qk_rope_head_dim;
  g.kv_bytes = nope + 2 * m.qk_rope_head_dim + 8;
  g.index_bytes = m.index_head_dim + m.index_head_dim / 128 * 4;
  g.head_dim = m.head_dim;
  g.index_head_dim = m.index_head_dim;
  g.window = m.sliding_window;
  g.c4_ring = speculative ? 16 : 8;
  g.c128_ring = speculative ? 256 : 128;
  // 0.5.23 `_get_paged_kv_bytes_per_token`: page_bytes(rows) / rows, a page of the 256-token
  // page's rows (256, 64, 2) rounded up to 576 B (DeepSeekV4SingleKVPool.create_buffer).
  const auto priced = [&](int rows) {
    if (!rules.page_rounded_rows) return static_cast<double>(g.kv_bytes);
    return static_cast<double>(ceil_div(std::int64_t{rows} * g.kv_bytes, std::int64_t{576}) * 576) / rows;
  };
  g.swa_row_bytes = priced(256);
  g.c4_row_bytes = priced(256 / kCsaRatio);
  g.c128_row_bytes = priced(256 / kHcaRatio);
  g.c4_state_divisor = rules.c4_state_per_page ? 256 : g.window;
  g.release_order = rules.c4_state_per_page;
  return g;
}

/// SGLang's bytes per full token (`_get_bytes_per_full_token`, the formula at the top of this
/// file, in its float order), including the speculative (L + 1) / L factor.
constexpr double sglang_bytes_per_full_token(const sglang_geometry& g, const sglang_options& o) {
  const double r = o.swa_full_tokens_ratio;
  const double kv = g.kv_bytes;
  const double c4_state_ratio = static_cast<double>(g.c4_ring) / static_cast<double>(g.c4_state_divisor);
  const double c4_state_bytes = 2.0 * 2 * g.head_dim * 4;
  const double c4_index_state_bytes = 2.0 * 2 * g.index_head_dim * 4;
  if (g.release_order) {
    // 0.5.23 `_get_bytes_per_full_token`: r x `_get_bytes_per_swa_token` + the compressed terms
    // per ratio (`_compressed_bytes_per_full_token` x layers; ratio 4 before 128 in V4's layer order).
    const double per_swa =
        g.swa_row_bytes * g.layers + c4_state_ratio * (c4_state_bytes + c4_index_state_bytes) * g.csa_layers;
    double b = r * per_swa;
    b += (1.0 / 4 * g.c4_row_bytes + 1.0 / 4 * g.index_bytes) * g.csa_layers;
    b += 1.0 / 128 * g.c128_row_bytes * g.hca_layers;
    if (o.speculative()) b *= static_cast<double>(g.layers + 1) / static_cast<double>(g.layers);
    return b;
  }
  double b = r * kv * g.layers;
  b += 1.0 / 4 * kv * g.csa_layers;
  b += 1.0 / 128 * kv * g.hca_layers;
  b += 1.0 / 4 * g.index_bytes * g.csa_layers;
  b += r * c4_state_ratio * c4_state_bytes * g.csa_layers;
  b += 0.0;  // the HCA state: request-scoped (c128_state_ratio = 0)
  b += r * c4_state_ratio * c4_index_state_bytes * g.csa_layers;
  if (o.speculative()) b *= static_cast<double>(g.layers + 1) / static_cast<double>(g.layers);
  return b;
}

/// Rows SGLang's compressor-state pool of `size` rows allocates for `ratio`
/// (deepseek_v4_compress_state.py:118-128): ceil((size + ring + 1) / ratio) x ratio.
constexpr std::int64_t sglang_state_rows(std::int64_t size, std::int64_t ring, std::int64_t ratio) {
  return checked_mul(ceil_div(checked_add(checked_add(size, ring), std::int64_t{1}), ratio), ratio);
}

/// The HCA state SGLang reserves before it sizes anything (`_get_c128_state_fixed_bytes`), for
/// `mrr` requests per worker: (mrr + 1) slots x ring128 rows, padded as the pool pads them, x
/// 2 x head x 4 B x L128.
constexpr std::uint64_t sglang_c128_state_fixed_bytes(const sglang_geometry& g, std::int64_t mrr) {
  if (g.hca_layers == 0) return 0;
  const std::int64_t rows =
      sglang_state_rows(checked_mul(checked_add(mrr, std::int64_t{1}), std::int64_t{g.c128_ring}), g.c128_ring, 128);
  return static_cast<std::uint64_t>(
      checked_mul(checked_mul(rows, std::int64_t{2} * g.head_dim * 4), std::int64_t{g.hca_layers}));
}

/// What SGLang's configurator computes for one KV budget (per worker).
struct sglang_pool_sizes {
  std::uint64_t available_bytes = 0;         ///< The budget it was given (`available_bytes`).
  double bytes_per_full_token = 0;           ///< bpft (float, as SGLang logs it with %.2f).
  std::uint64_t c128_state_fixed_bytes = 0;  ///< Taken off first.
  std::int64_t full = 0;                     ///< max_total_num_tokens: full tokens (a multiple of the page).
  std::int64_t swa = 0;                      ///< SWA pool tokens.
  std::int64_t c4 = 0;                       ///< CSA compressed-KV pool rows (full // 4).
  std::int64_t c128 = 0;                     ///< HCA compressed-KV pool rows (full // 128).
  std::int64_t c4_state = 0;                 ///< CSA state pool rows (swa // divisor x ring4).
  std::int64_t c128_state = 0;               ///< HCA state pool rows ((mrr + 1) x ring128).
  std::int64_t max_running_requests = 0;     ///< Per worker: min(mrr // attn_dp, full // 2).
  bool starts = false;                       ///< false: SGLang raises at startup (`refusal`).
  const char* refusal = "";                  ///< SGLang's own message.
};

/// SGLang's pool sizes for `available_bytes` of KV budget (`calculate_pool_sizes`,
/// `resolve_max_num_reqs`, `finalize_with_max_running_requests`; sources at the top of this
/// file). Never throws for a budget; throws std::invalid_argument for options SGLang refuses
/// before it sizes (page size other than 256, a ratio outside (0, 1], no requests, attn_dp < 1,
/// a draft count a state ring cannot keep: pool_configurator.py:861-879).
constexpr sglang_pool_sizes sglang_configure(const sglang_geometry& g, const sglang_options& o,
                                             std::uint64_t available_bytes) {
  require(o.page_size == 256, "SGLang: in paged SWA mode, page_size must be 256 (kv_cache_configurator.py:1085)",
          {"page_size", o.page_size});
  require(o.swa_full_tokens_ratio > 0 && o.swa_full_tokens_ratio <= 1, "swa_full_tokens_ratio must be in (0, 1]");
  require(o.attn_dp >= 1, "attn_dp must be >= 1", {"attn_dp", o.attn_dp});
  require(o.max_running_per_worker() >= 1,
          "SGLang: max_running_requests // attn_dp must be >= 1 (tp_worker.py:410 \"max_running_request is zero\")",
          {"max_running_requests", o.max_running_requests}, {"attn_dp", o.attn_dp});
  require(o.tokens_per_step >= 1, "tokens_per_step must be >= 1", {"tokens_per_step", o.tokens_per_step});
  // With speculation the rings must keep the drafts: <= ring - window + 2 (c4: window 8; c128: 128).
  require(!o.speculative() || g.csa_layers == 0 || o.tokens_per_step <= g.c4_ring - 8 + 2,
          "SGLang: the draft tokens exceed what the CSA compress-state ring keeps (16 rows: at most 10)",
          {"tokens_per_step", o.tokens_per_step});
  require(!o.speculative() || g.hca_layers == 0 || o.tokens_per_step <= g.c128_ring - 128 + 2,
          "SGLang: the draft tokens exceed what the HCA compress-state ring keeps (256 rows: at most 130)",
          {"tokens_per_step", o.tokens_per_step});
  sglang_pool_sizes s;
  s.available_bytes = available_bytes;
  s.bytes_per_full_token = sglang_bytes_per_full_token(g, o);
  const std::int64_t mrr = o.max_running_per_worker();
  s.c128_state_fixed_bytes = sglang_c128_state_fixed_bytes(g, mrr);
  const double rest = available_bytes > s.c128_state_fixed_bytes
                          ? static_cast<double>(available_bytes - s.c128_state_fixed_bytes)
                          : 0.0;
  const double full_f = rest / s.bytes_per_full_token;
  // int() of a float below 2^63 (a budget of at most 2^64 B over >= 1 B per token).
  std::int64_t full = full_f >= 9.2e18 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(full_f);
  full = full / o.page_size * o.page_size;
  s.full = full;
  s.swa = static_cast<std::int64_t>(static_cast<double>(full) * o.swa_full_tokens_ratio) / o.page_size * o.page_size;
  s.c4 = full / 4;
  s.c128 = full / 128;
  s.c4_state = s.swa / g.c4_state_divisor * g.c4_ring;
  if (full <= 0) {
    s.refusal = "Not enough memory. Please try to increase --mem-fraction-static.";
    return s;
  }
  s.max_running_requests = mrr < full / 2 ? mrr : full / 2;
  s.c128_state = (s.max_running_requests + 1) * g.c128_ring;
  s.starts = true;
  return s;
}

/// The bytes SGLang's DeepSeek V4 pools really allocate for the sizes `s` (one worker; the
/// tensors of mem_cache/deepseek_v4_memory_pool.py and deepseek_v4_compress_state.py at [G];
/// docs/engines/sglang-pools.md 7). Pages of 256 tokens (CSA pages of 64 rows, HCA of 2), each
/// rounded up to a multiple of 576 B, `(size + page + 1) // page` pages per buffer; index keys
/// unpadded; state rows ceil((size + ring + 1) / ratio) x ratio.
struct sglang_pool_bytes {
  std::uint64_t swa_kv = 0;           ///< L x (swa / 256 + 1) x 149,760 (585 B per token).
  std::uint64_t csa_kv = 0;           ///< L4 x (c4 / 64 + 1) x 37,440.
  std::uint64_t hca_kv = 0;           ///< L128 x (c128 / 2 + 1) x 1,728 (864 B per row).
  std::uint64_t index_keys = 0;       ///< L4 x (c4 / 64 + 1) x 64 x 132.
  std::uint64_t csa_state = 0;        ///< L4 x rows(c4_state, ring4, 4) x 2 x 2 x head x 4.
  std::uint64_t csa_index_state = 0;  ///< L4 x the same rows x 2 x 2 x index_head_dim x 4.
  std::uint64_t hca_state = 0;        ///< L128 x rows(c128_state, ring128, 128) x 2 x head x 4.
  /// Not charged by the configurator, outside the pool: req_to_token (mrr + 1) x (context + 4)
  /// int32, the full-to-SWA map (full + 257) int64, the free-page lists (full / 256 + swa / 256) int64.
  std::uint64_t index_space = 0;

  [[nodiscard]] constexpr std::uint64_t pools() const {
    return swa_kv + csa_kv + hca_kv + index_keys + csa_state + csa_index_state + hca_state;
  }
  [[nodiscard]] constexpr std::uint64_t total() const { return pools() + index_space; }
};

/// What SGLang allocates for the configurator's sizes `s` of geometry `g` with options `o` (see
/// `sglang_pool_bytes`). Throws std::invalid_argument if `o.context_len` is not resolved (< 1:
/// req_to_token is context_len + 4 wide) or a size overflows 64 bits.
constexpr sglang_pool_bytes sglang_allocated_bytes(const sglang_geometry& g, const sglang_options& o,
                                                   const sglang_pool_sizes& s) {
  require(o.context_len >= 1, "sglang_allocated_bytes needs the context length resolved (context_len >= 1)",
          {"context_len", o.context_len});
  using u64 = std::uint64_t;
  const auto padded_page = [](std::int64_t rows, std::int64_t row_bytes) {
    return checked_mul(ceil_div(checked_mul(rows, row_bytes), std::int64_t{576}), std::int64_t{576});
  };
  const auto buffer = [&](int layers, std::int64_t size, std::int64_t page, std::int64_t page_bytes) {
    const std::int64_t pages = checked_add(size, page + 1) / page;
    return static_cast<u64>(checked_mul(checked_mul(pages, page_bytes), std::int64_t{layers}));
  };
  const std::int64_t page = o.page_size;
  sglang_pool_bytes b;
  b.swa_kv = buffer(g.layers, s.swa, page, padded_page(page, g.kv_bytes));
  b.csa_kv = buffer(g.csa_layers, s.c4, page / 4, padded_page(page / 4, g.kv_bytes));
  b.hca_kv = buffer(g.hca_layers, s.c128, page / 128, padded_page(page / 128, g.kv_bytes));
  b.index_keys = buffer(g.csa_layers, s.c128 * 32, page / 4, page / 4 * g.index_bytes);
  const std::int64_t c4_rows = sglang_state_rows(s.c4_state, g.c4_ring, 4);
  b.csa_state = static_cast<u64>(
      checked_mul(checked_mul(c4_rows, std::int64_t{2} * 2 * g.head_dim * 4), std::int64_t{g.csa_layers}));
  b.csa_index_state = static_cast<u64>(
      checked_mul(checked_mul(c4_rows, std::int64_t{2} * 2 * g.index_head_dim * 4), std::int64_t{g.csa_layers}));
  // The HCA state pool holds max(c128_state, slots x ring128) rows, and c128_state is
  // slots x ring128 (finalize): the reservation's formula at the resolved requests.
  b.hca_state = sglang_c128_state_fixed_bytes(g, s.max_running_requests);
  const std::int64_t slots = checked_add(s.max_running_requests, std::int64_t{1});
  const std::int64_t ctx = o.context_len;
  b.index_space = static_cast<u64>(
      checked_add(checked_add(checked_mul(checked_mul(slots, checked_add(ctx, std::int64_t{4})), std::int64_t{4}),
                              checked_mul(checked_add(s.full, page + 1), std::int64_t{8})),
                  checked_mul(s.full / page + s.swa / page, std::int64_t{8})));
  return b;
}

/// Why SGLang's DeepSeek V4 pools cannot store pool `k` of group `g` in its format, or nullptr:
/// its KV pools hold v4.fp8_ds_mla rows (584 B: FP8 NoPE, BF16 RoPE, UE8M0 scales;
/// deepseek_v4_memory_pool.py), its index keys v4.indexer_fp8 (132 B: the FP4 indexer is not
/// modelled), its states fp32.
constexpr const char* sglang_format_mismatch(const paged_cache_group_spec& g, int k) {
  const format_layout& f = g.pools[static_cast<std::size_t>(k)].format;
  if (f.role == format_role::state) return nullptr;  // fp32_state
  if (f.role == format_role::indexer_k)
    return f.name == "v4.indexer_fp8" ? nullptr
                                      : "SGLang's DeepSeek V4 pools are modelled with 132-B FP8 index keys only "
                                        "(v4.indexer_fp8; its FP4 indexer is not modelled)";
  return f.name == "v4.fp8_ds_mla" ? nullptr : "SGLang's DeepSeek V4 pools store KV rows as v4.fp8_ds_mla only (584 B)";
}

/// The pool sizes N requests of L tokens need in SGLang's pools (per worker, tokens), a bound of
/// what its admission gates and occupancy ask (engines/sglang/replay.hpp replays them; tests check
/// the replay fits at the plan's sizes):
///   full = (N - 1) x (ceil256(L) + min(L + 255, 512)) + L + 257, page-rounded: every
///          admitted request holds at most ceil256(L) (under overlap its KV reaches L: it is
///          decoded once more before its finish is processed) and a gate reserves at most
///          min(L + 255, 512) more for each request admitted or running (ceil256(extend) +
///          min(max_new, 4096) + 256 in a batch, 0.7 x min(max_new - 1, 4096) running), and the
///          newcomer needs extend + min(max_new, 4096) + 256 < rem_total (<= L + 256);
///   swa  = min(N x A, N x min(1,024, A) + 2C + 1,280) + 256, A = max(min(ceil256(L),
///          ceil256(C) + 768), max(min(ceil256(L), ceil256(C)) - 128, 0) + 128 + 256): one request holds
///          at most its context or a chunk with the 512 slots the radix tree keeps (and a
///          continuing chunk leaves 256 free), or its SWA gate asks the second term; a decoding
///          request keeps at most 4 pages (lazy eviction's 2 past the window and 1 at a page
///          boundary under overlap, and the prompt's last page the radix tree keeps locked), and the two batches in
///          flight (one prefilled, its results pending, one being allocated) hold at most C + 512 beyond that.
struct sglang_demand {
  std::int64_t requests = 0;     ///< N (per worker).
  std::int64_t full_tokens = 0;  ///< max_total_num_tokens needed.
  std::int64_t swa_tokens = 0;   ///< SWA pool tokens needed.
};

/// `sglang_demand` for N requests of L with prefill chunk C; false if it overflows 64 bits.
/// N = 0 needs nothing.
constexpr bool sglang_plan_demand(std::int64_t N, std::int64_t L, std::int64_t C, std::int64_t page, sglang_demand& d) {
  d = {N, 0, 0};
  if (N == 0) return true;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  bool ok = true;
  const auto mul = [&](std::int64_t a, std::int64_t b) {
    if (a != 0 && b > kMax / a) ok = false;
    return ok ? a * b : 0;
  };
  const auto add = [&](std::int64_t a, std::int64_t b) {
    if (b > kMax - a) ok = false;
    return ok ? a + b : 0;
  };
  const std::int64_t held = mul(ceil_div(L, page), page);   // under overlap a request's KV reaches L
  const std::int64_t gate = L + 255 < 512 ? L + 255 : 512;  // what a gate reserves beyond `held`
  std::int64_t full = add(add(mul(N - 1, add(held, gate)), L), 257);
  full = mul(ceil_div(full, page), page);
  // One request at any time: what it holds (at most its context, or a chunk, the 512 slots the
  // tree keeps and the 256 a continuing chunk leaves free) or what its SWA gate asks.
  const std::int64_t chunk = add(mul(ceil_div(C, page), page), 768);
  const std::int64_t c_pages = mul(ceil_div(C, page), page);
  const std::int64_t first = (held < c_pages ? held : c_pages) - 128;  // the gate rounds the prompt to the page
  const std::int64_t need = (first > 0 ? first : 0) + 128 + 256;       // min(ceil256(extend) + max_new, 128) = 128
  const std::int64_t holds = held < chunk ? held : chunk;
  const std::int64_t alone = holds > need ? holds : need;
  const std::int64_t decoding = alone < 1024 ? alone : 1024;
  const std::int64_t by_request = mul(N, alone);
  const std::int64_t by_batches = add(add(mul(N, decoding), mul(C, 2)), 1280);
  const std::int64_t swa = add(by_request < by_batches ? by_request : by_batches, 256);
  d.full_tokens = full;
  d.swa_tokens = swa;
  return ok;
}

/// The smallest KV budget (`available_bytes`, bytes) for which `sglang_configure(g, o, budget)`
/// starts with at least `d`: full >= d.full_tokens, swa >= d.swa_tokens and
/// max_running_requests >= d.requests (o.max_running_requests must already be >= d.requests:
/// the reservation is sized for it). False if no budget below 2^64 gives that. Throws as
/// `sglang_configure` for bad options.
constexpr bool sglang_budget_for(const sglang_geometry& g, const sglang_options& o, const sglang_demand& d,
                                 std::uint64_t& budget) {
  const std::int64_t page = o.page_size;
  const auto fits = [&](std::uint64_t b) {
    const sglang_pool_sizes s = sglang_configure(g, o, b);
    return s.starts && s.full >= d.full_tokens && s.swa >= d.swa_tokens && s.max_running_requests >= d.requests;
  };
  // The full tokens the SWA need implies (swa = int(full x r) floored to the page: a page more).
  const double want = static_cast<double>(d.swa_tokens + page) / o.swa_full_tokens_ratio;
  if (want > 9.0e18 || static_cast<double>(d.full_tokens) > 9.0e18) return false;
  std::uint64_t hi = sglang_c128_state_fixed_bytes(g, o.max_running_per_worker());
  const double top = std::max(want, static_cast<double>(d.full_tokens)) + static_cast<double>(4 * page);
  const double bytes = top * sglang_bytes_per_full_token(g, o) + 1.0;
  if (bytes >= 1.8e19 - static_cast<double>(hi)) return false;
  hi += static_cast<std::uint64_t>(bytes);
  if (!fits(hi)) return false;
  std::uint64_t lo = 0;  // does not fit (a budget of 0 never starts)
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? hi : lo) = mid;
  }
  budget = hi;
  return true;
}

/// What SGLang's configurator charges pool `k` of library group `id` at sizes `s` (bytes,
/// `_get_bytes_per_full_token`'s terms at the pool sizes: SWA KV swa x row x L; CSA KV c4 x row x
/// L4; index keys c4 x 132 x L4; HCA KV c128 x row x L128 (rows as the version prices them); CSA states c4_state x
/// 8,192 x L4 and c4_state x 2,048 x L4; the HCA state its reservation). Groups it has no pool for: 0.
constexpr std::uint64_t sglang_group_charge(const sglang_geometry& g, const sglang_pool_sizes& s, group_id id, int k) {
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  const auto row = [](double b) { return static_cast<std::uint64_t>(b); };  // whole bytes: 584, 585, 864
  switch (id.kind) {
    case group_kind::swa_kv: return u(s.swa) * row(g.swa_row_bytes) * u(g.layers);
    case group_kind::compressed_kv:
      if (id.ratio == kHcaRatio) return u(s.c128) * row(g.c128_row_bytes) * u(g.hca_layers);
      return u(s.c4) * (k == 0 ? row(g.c4_row_bytes) : u(g.index_bytes)) * u(g.csa_layers);
    case group_kind::compressor_state:
      if (id.ratio == kHcaRatio) return s.c128_state_fixed_bytes;
      return u(s.c4_state) * u(std::int64_t{16} * g.head_dim) * u(g.csa_layers);
    case group_kind::indexer_compressor_state:
      return u(s.c4_state) * u(std::int64_t{16} * g.index_head_dim) * u(g.csa_layers);
    default: return 0;
  }
}

/// SGLang as the planner names it, derives its budget and refuses (engines/engine.hpp): its ratio
/// pools without pipeline stages, DCP or PD disaggregation, its overlap scheduler on, a step budget
/// of at least one 256-token page (its chunked prefill truncates a chunk to whole pages:
/// schedule_policy.py PrefillAdder, trunc_len = rem_chunk_tokens // page_size * page_size).
inline constexpr engine_traits sglang_traits{
    .title = "SGLang",
    .running_cap = "SGLang's max_running_requests",
    .weights = weight_engine::sglang,
    .fraction_flag = "--mem-fraction-static",
    .fraction_reference = "sgl-project/sglang python/sglang/srt/server_args.py@cce0a124:5006-5041",
    .default_fraction =
        [](const budget_inputs& in) {
          return sglang_default_mem_fraction_static(in.gpu_mib, in.tp, in.pp, in.prefill_chunk, in.dp_attention);
        },
    .takes_swa_ratio = true,
    .running_cap_per_attention_dp = true,
    .models_dcp = false,
    .models_pd = false,
    .simulates = false,
    .overlap_off_flag = "SGLang's --disable-overlap-schedule",
    .min_prefill_chunk = sglang_options{}.page_size,  // one page
    .min_prefill_chunk_reason =
        "its chunked prefill truncates a chunk to whole pages, so a longer prompt would never "
        "be admitted",
    .simulate_refusal =
        "--simulate replays vLLM's and tokenspeed's block tables; SGLang's occupancy is replayed in "
        "the engine report when a budget is given (--memory-gib)",
    .own_structure_models = [](model_family, std::int64_t) { return true; },
    .refusal = [](model_family, std::int64_t dcp, bool colocated) -> const char* {
      if (dcp != 1) return "SGLang's DeepSeek V4 pools under decode context parallelism are not modelled";
      if (!colocated)
        return "SGLang's DeepSeek V4 pools for a prefill or decode instance (PD disaggregation) are not modelled";
      return nullptr;
    },
    .format_mismatch = sglang_format_mismatch};

}  // namespace dsv4::cache
