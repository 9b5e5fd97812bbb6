// dsv4-cache: SGLang as an engine value: its DeepSeek V4 pool configurator (how one KV budget
// becomes a number of "full tokens" and pools sized as ratios of it), the bytes its pools really
// allocate, and its occupancy of each pool at run time (what really fits).
//
// Pinned: sgl-project/sglang cce0a1244b5a3ee60411fb403f65f856a1d012f0 (2026-08-23, "[G]"; read
// from the fork snapshot HaiShaw/sglang, which holds that upstream commit). Paths are relative to
// python/sglang/srt/; line numbers are [G]'s. docs/engines/sglang-pools.md has the reading.
//
//   defaults  arg_groups/overrides.py:1139-1167 `_deepseek_v4_overrides`: page_size 256,
//             swa_full_tokens_ratio 0.1 (when left at the class default 0.8);
//             arg_groups/deepseek_v4_hook.py:138-142: max_running_requests 256 when unset (the
//             configurator's own [2048, 4096] estimate is then never reached for V4).
//   layers    model_executor/pool_configurator.py:767-813 `DSV4PoolConfigurator`: the stage's
//             compress_ratios[start_layer:end_layer] of the main layers (the MTP entry is not
//             counted): L layers, L4 with ratio 4 (CSA), L128 with ratio 128 (HCA).
//   rings     mem_cache/deepseek_v4_memory_pool.py:34-56 `get_compress_state_ring_size`: 8 (CSA)
//             and 128 (HCA); 16 and 256 with speculative decoding (online c128 off).
//   per token pool_configurator.py:881-921 `_get_bytes_per_full_token`, in float, in this order:
//               r x 584 x L + 1/4 x 584 x L4 + 1/128 x 584 x L128 + 1/4 x 132 x L4
//               + r x (ring4 / 128) x 8,192 x L4 + r x (ring4 / 128) x 2,048 x L4
//             r = swa_full_tokens_ratio, 584 = nope + 2 x rope + 8, 132 = index keys + scales,
//             8,192 / 2,048 = fp32 CSA KV / indexer state rows (2 x 2 x head x 4); the HCA state
//             is request-scoped (not per token). Speculative: x (L + 1) / L (lines 821-829).
//   fixed     lines 940-973: the HCA state for (mrr // attn_dp + 1) request slots,
//             ceil(((slots x ring128) + ring128 + 1) / 128) x 128 rows x 4,096 B x L128.
//   sizes     lines 1006-1034 `calculate_pool_sizes`: full = int(max(avail - fixed, 0) / bpft)
//             floored to the page (256); swa = int(full x r) floored to the page; c4 = full // 4;
//             c128 = full // 128; c4_state = swa // 128 x ring4 (128: the window, not the page the
//             state is addressed by: half its rows are never used, #30371 / #40337);
//             c128_state = (mrr + 1) x ring128 (finalize, lines 995-1004).
//   requests  mem_cache/kv_cache_configurator.py:1935-1988 `resolve_max_num_reqs`:
//             min(mrr // attn_dp, full // 2).
//   refusals  pool_configurator.py:73-78: full <= 0 -> RuntimeError "Not enough memory. Please
//             try to increase --mem-fraction-static."; kv_cache_configurator.py:1085-1086: page
//             size 256 only. [G] has no SWA-pool floor for DeepSeek V4 (#37610 added one later).
//
// Not modelled (named, refused or left to the report): the FP4 indexer (the configurator still
// charges 132 B), HiSparse (c4 shrink), online c128 compression, PD decode's extra slots,
// `--max-total-tokens`, the later configurator's cap mode for the SWA pool, V4.1 (ratio 2 rings
// are not in [G]) and V3.2 (another configurator).
#pragma once

#include <cstdint>
#include <limits>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/layer_schedule.hpp"
#include "dsv4/cache/model.hpp"

namespace dsv4::cache {

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
};

/// The configurator's geometry of layers [first, end) of `m` (a DeepSeek V4 model) with
/// speculative decoding or not. Throws std::invalid_argument for a model that is not V4 or a
/// ratio other than 0, 4, 128 (SGLang: "Unsupported compression ratio").
constexpr sglang_geometry sglang_geometry_of(const model_config& m, bool speculative, int first = 0, int end = -1) {
  require(m.family == model_family::v4,
          "SGLang's DeepSeek V4 pool configurator at cce0a124 sizes V4 models only (V4.1's ratio-2 rings and "
          "V3.2's pools are not in it)",
          {"family", static_cast<int>(m.family)});
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
  return g;
}

/// SGLang's bytes per full token (`_get_bytes_per_full_token`, the formula at the top of this
/// file, in its float order), including the speculative (L + 1) / L factor.
constexpr double sglang_bytes_per_full_token(const sglang_geometry& g, const sglang_options& o) {
  const double r = o.swa_full_tokens_ratio;
  const double kv = g.kv_bytes;
  const double c4_state_ratio = static_cast<double>(g.c4_ring) / static_cast<double>(g.window);
  const double c4_state_bytes = 2.0 * 2 * g.head_dim * 4;
  const double c4_index_state_bytes = 2.0 * 2 * g.index_head_dim * 4;
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
  std::int64_t c4_state = 0;                 ///< CSA state pool rows (swa // window x ring4).
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
  s.c4_state = s.swa / g.window * g.c4_ring;
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

}  // namespace dsv4::cache
