// dsv4-cache: the per-layer cache schema, the one source of truth for every pool size.
//
// Source: nvfp4-megamoe-kernel `dsv4/cache/schema.py` (the seed's `LayerCacheSchema`,
// `build_schema`, `compute_block_budget`). Group specs (group_spec.hpp) and the memory plan
// (memory_plan.hpp) are derived from these schemas, never computed on their own.
//
// Added to the seed, per layer:
// - the block size is a parameter (the seed fixes 128 = lcm(4, 128) original tokens); with
//   256 (`kCompressedLogicalBlockTokens`) `entries_per_block` is the rows per page of the
//   compressed groups (64 for CSA, 2 for HCA);
// - the row bytes of each sub-pool (fp8_ds_mla KV row, indexer key row, compressor states);
// - the indexer format (FP8 or MXFP4);
// - the compressor-state window (1 + overlap) x ratio (8 for CSA, 128 for HCA), kept beside
//   the seed's tail buffer of ratio - 1 pending tokens (3 / 127): the tail is what the seed
//   stores between flushes, the window is what an overlapping compressor must keep.
#pragma once

#include <array>
#include <cstdint>

#include "dsv4/cache/layer_schedule.hpp"
#include "dsv4/cache/row_format.hpp"

namespace dsv4::cache {

/// The seed's block: lcm(4, 128) = 128 original tokens (32 CSA entries or 1 HCA entry).
inline constexpr std::int64_t kBlockSizeOriginalTokens = 128;
/// The compressed groups' logical block: 256 original tokens (64 CSA rows, 2 HCA rows per page).
inline constexpr std::int64_t kCompressedLogicalBlockTokens = 256;

/// Cache layout of one layer. Seed fields first (entries, not bytes), then the additions.
struct layer_cache_schema {
  int layer_idx = 0;
  attention_kind attn_type = attention_kind::swa;

  // ---- Seed: classical paged pool (compressed entries) ----
  std::int64_t entries_per_block = 0;  ///< block_size / ratio: CSA 32, HCA 1 (block 128); SWA 0.
  std::int64_t entry_head_dim = 0;     ///< D = head_dim (512).
  std::int64_t rope_dim = 0;           ///< R, kept as BF16 (64).
  // ---- Seed: indexer pool (CSA only) ----
  std::int64_t indexer_entries_per_block = 0;  ///< = entries_per_block for CSA, else 0.
  std::int64_t indexer_head_dim = 0;           ///< index_head_dim (128) for CSA, else 0.
  // ---- Seed: state cache ----
  std::int64_t swa_window_size = 0;   ///< sliding_window tokens (128), every layer.
  std::int64_t tail_buffer_size = 0;  ///< ratio - 1 pending tokens (CSA 3, HCA 127, SWA 0).
  bool needs_inv_scale = true;        ///< Seed field; V4 rows carry UE8M0 / fp32 / E8M0 scales.

  // ---- Added ----
  int compress_ratio = 1;                               ///< 1 (SWA, CSA1), 2 (CSA2), 4 (CSA) or 128 (HCA).
  bool mtp = false;                                     ///< An MTP layer.
  layer_role role = layer_role::none;                   ///< V4.1 KV sharing: only owners cache beyond SWA.
  int kv_owner = -1;                                    ///< V4.1 ratio-1/2 layers: the layer whose caches it reads.
  std::int64_t block_size_tokens = 0;                   ///< Original tokens per block of this schema.
  fp8_ds_mla_format kv_format{};                        ///< V4: SWA window and compressed KV rows (seed sizes).
  indexer_row_format indexer{};                         ///< CSA only; index_head_dim 0 elsewhere.
  std::int64_t compressor_state_window_tokens = 0;      ///< (1 + overlap) x ratio; 0 for SWA.
  std::int64_t compressor_state_row_bytes = 0;          ///< fp32 [kv | score] row; 0 for SWA.
  std::int64_t indexer_compressor_state_row_bytes = 0;  ///< CSA only: 2,048 for d = 128.

  /// Bytes of one fp8_ds_mla row (SWA window and compressed KV): 584.
  [[nodiscard]] constexpr std::int64_t kv_row_bytes() const { return kv_format.row_bytes(); }
  /// Bytes of one indexer key: 132 (FP8) or 68 (MXFP4) for CSA, 0 elsewhere.
  [[nodiscard]] constexpr std::int64_t indexer_row_bytes() const {
    return indexer_head_dim == 0 ? 0 : indexer.row_bytes();
  }
  /// Seed sizes of a V4 compressed entry: KV row + indexer key (CSA 584 + 132); 0 for SWA, for
  /// V4.1 layers that own no global cache and for V3.2 MLA layers (their row bytes come from the
  /// group specs' formats).
  [[nodiscard]] constexpr std::int64_t compressed_entry_bytes() const {
    return attn_type == attention_kind::swa || attn_type == attention_kind::mla || entries_per_block == 0
               ? 0
               : kv_row_bytes() + indexer_row_bytes();
  }
};

/// Builds the schema of one layer. `block_size_tokens` must be > 0 and, for CSA/HCA layers, a
/// multiple of the layer's ratio. Throws std::invalid_argument for an invalid config, a bad
/// row format (head_dim, rope dim, index_head_dim) or block size, naming the value.
constexpr layer_cache_schema build_schema(const model_config& c, const layer_spec& spec,
                                          indexer_format fmt = indexer_format::fp8,
                                          std::int64_t block_size_tokens = kBlockSizeOriginalTokens) {
  validate(c);
  require(block_size_tokens > 0, "block_size_tokens must be > 0", {"block_size_tokens", block_size_tokens});
  layer_cache_schema s;
  s.layer_idx = spec.index;
  s.attn_type = spec.kind;
  s.compress_ratio = spec.kind == attention_kind::swa ? 1 : spec.compress_ratio;
  s.mtp = spec.mtp;
  s.role = spec.role;
  s.kv_owner = spec.kv_owner;
  s.block_size_tokens = block_size_tokens;
  s.entry_head_dim = c.head_dim;
  s.rope_dim = c.qk_rope_head_dim;
  s.swa_window_size = c.sliding_window;
  if (spec.kind == attention_kind::mla) {  // V3.2: one latent row and one indexer key per token
    s.entries_per_block = block_size_tokens;
    s.indexer_entries_per_block = block_size_tokens;
    s.indexer_head_dim = c.index_head_dim;
    s.indexer = make_indexer_row_format(indexer_format::fp8, c.index_head_dim);
    return s;
  }
  s.kv_format = make_fp8_ds_mla_format(c.head_dim, c.qk_rope_head_dim);
  if (spec.kind == attention_kind::swa) return s;
  if (spec.kind == attention_kind::csa2 || spec.kind == attention_kind::csa1) {
    // V4.1: only the owner caches beyond its window (global KV, index keys, ratio-2 state of
    // (1 + 0 overlap) x 2 tokens in 4,096-B fp32 [kv | score] rows); no indexer compressor state.
    if (spec.role != layer_role::owner) return s;
    const std::int64_t ratio = s.compress_ratio;
    require(block_size_tokens % ratio == 0, "block_size_tokens must be a multiple of the layer's compress ratio",
            {"block_size_tokens", block_size_tokens}, {"compress_ratio", ratio}, {"layer", spec.index});
    s.entries_per_block = block_size_tokens / ratio;
    s.tail_buffer_size = ratio - 1;
    s.indexer_entries_per_block = s.entries_per_block;
    s.indexer_head_dim = c.index_head_dim;
    s.indexer = make_indexer_row_format(fmt, c.index_head_dim);
    if (ratio > 1) {
      s.compressor_state_window_tokens = compressor_state_window_tokens(ratio);  // coff 1: 2
      s.compressor_state_row_bytes = compressor_state_row_bytes(ratio, c.head_dim);
    }
    return s;
  }

  const std::int64_t ratio = s.compress_ratio;
  require(block_size_tokens % ratio == 0, "block_size_tokens must be a multiple of the layer's compress ratio",
          {"block_size_tokens", block_size_tokens}, {"compress_ratio", ratio}, {"layer", spec.index});
  s.entries_per_block = block_size_tokens / ratio;
  s.tail_buffer_size = ratio - 1;
  s.compressor_state_window_tokens = compressor_state_window_tokens(ratio);
  s.compressor_state_row_bytes = compressor_state_row_bytes(ratio, c.head_dim);
  if (spec.kind == attention_kind::csa) {
    s.indexer_entries_per_block = s.entries_per_block;
    s.indexer_head_dim = c.index_head_dim;
    s.indexer = make_indexer_row_format(fmt, c.index_head_dim);
    s.indexer_compressor_state_row_bytes = compressor_state_row_bytes(ratio, c.index_head_dim);
  }
  return s;
}

/// The schemas of every cached layer (main + MTP), in layer order.
struct model_cache_schema {
  model_family family = model_family::v4;  ///< The model's family (what its layers' kinds mean).
  int num_layers = 0;
  std::array<layer_cache_schema, kMaxLayers> layers{};

  [[nodiscard]] constexpr const layer_cache_schema* begin() const { return layers.data(); }
  [[nodiscard]] constexpr const layer_cache_schema* end() const { return layers.data() + num_layers; }
  [[nodiscard]] constexpr const layer_cache_schema& operator[](int i) const {
    return layers[static_cast<std::size_t>(i)];
  }
};

/// Schemas of every layer of `c`, built on `build_layer_schedule(c)`. Errors as `build_schema`
/// and `build_layer_schedule` (a ratio other than 0, 1, 4, 128 names the layer).
constexpr model_cache_schema build_model_schema(const model_config& c, indexer_format fmt = indexer_format::fp8,
                                                std::int64_t block_size_tokens = kBlockSizeOriginalTokens) {
  const layer_schedule sched = build_layer_schedule(c);
  model_cache_schema m;
  m.family = c.family;
  m.num_layers = sched.num_layers;
  for (int i = 0; i < sched.num_layers; ++i)
    m.layers[static_cast<std::size_t>(i)] = build_schema(c, sched[i], fmt, block_size_tokens);
  return m;
}

/// The seed's block budget, corrected (see `compute_block_budget`).
struct block_budget {
  std::int64_t blocks_per_request = 0;  ///< ceil(max_context / block_size) blocks of one request.
  std::int64_t csa_blocks = 0;          ///< Blocks per CSA layer for all requests + headroom; 0 if no CSA.
  std::int64_t hca_blocks = 0;          ///< Blocks per HCA layer for all requests + headroom; 0 if no HCA.
  std::int64_t state_slots = 0;         ///< State slots per layer: one per request, every layer.
  std::int64_t swa_window_rows = 0;     ///< Rows of the SWA window in each state slot.
  std::int64_t max_tail_rows = 0;       ///< Largest tail buffer (rows) of any layer's state slot.
};

/// Block counts for a paged allocator of `schema.block_size_tokens`-token blocks.
/// Fixes the seed's `compute_block_budget`: the blocks per request are ceil(L / block)
/// (a 1,000-token context needs 8 blocks of 128, not 7), every product is overflow-checked,
/// the headroom is an integer percentage rounded up, and the SWA window / tail state slots
/// are returned instead of silently dropped. Throws std::invalid_argument if
/// max_context_tokens < 1, max_concurrent_requests < 1, headroom_percent < 0, or on overflow.
constexpr block_budget compute_block_budget(const model_cache_schema& schema, std::int64_t max_context_tokens,
                                            std::int64_t max_concurrent_requests, std::int64_t headroom_percent = 10) {
  require(schema.num_layers > 0, "schema has no layers");
  require(max_context_tokens >= 1, "max_context_tokens must be >= 1", {"max_context_tokens", max_context_tokens});
  require(max_concurrent_requests >= 1, "max_concurrent_requests must be >= 1",
          {"max_concurrent_requests", max_concurrent_requests});
  require(headroom_percent >= 0, "headroom_percent must be >= 0", {"headroom_percent", headroom_percent});
  block_budget b;
  b.blocks_per_request = ceil_div(max_context_tokens, schema[0].block_size_tokens);
  const std::int64_t raw = checked_mul(max_concurrent_requests, b.blocks_per_request);
  const std::int64_t with_headroom =
      ceil_div(checked_mul(raw, checked_add<std::int64_t>(100, headroom_percent)), std::int64_t{100});
  b.state_slots = max_concurrent_requests;
  for (const layer_cache_schema& l : schema) {
    if (l.attn_type == attention_kind::csa) b.csa_blocks = with_headroom;
    if (l.attn_type == attention_kind::hca) b.hca_blocks = with_headroom;
    b.swa_window_rows = l.swa_window_size > b.swa_window_rows ? l.swa_window_size : b.swa_window_rows;
    b.max_tail_rows = l.tail_buffer_size > b.max_tail_rows ? l.tail_buffer_size : b.max_tail_rows;
  }
  return b;
}

}  // namespace dsv4::cache
