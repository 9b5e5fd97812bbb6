// dsv4-cache: TensorRT-LLM's DeepSeek V4 KV cache geometry (DeepseekV4CacheManager on
// KVCacheManagerV2): its life cycles, pool groups and coalesced pools, and its block tables over
// the library's group specs.
//
// Rules, sources (repository, path, commit) and what is not modelled: docs/engines/trtllm.md.
// Files cited below (all NVIDIA/TensorRT-LLM):
//   CM   tensorrt_llm/_torch/attention/backends/sparse/deepseek_v4/cache_manager.py
//        @ 0393e46e3b5f10070168747400aeddb7b7c33a3d (and the later stored copy with V4.1, index id 70181721244)
//   SC   cpp/tensorrt_llm/batch_manager/kv_cache_manager_v2/storage/config.cpp (index id 55475463710)
//   LCR  cpp/tensorrt_llm/batch_manager/kv_cache_manager_v2/lifeCycleRegistry.h (index id 55118970483) and
//        lifeCycleRegistry.cpp @ 4d1d9639434e3d907ef77364758b73b3d38d8133 (ids in order of first use)
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/group_spec.hpp"
#include "dsv4/cache/model.hpp"

namespace dsv4::cache {

/// DeepseekV4AttentionType: the seven buffer roles of a V4 manager layer (CM `params.py`).
enum class trtllm_attention_type : std::uint8_t {
  swa,
  compress,
  compressor_kv,
  compressor_score,
  indexer_compress,
  indexer_compressor_kv,
  indexer_compressor_score,
};
inline constexpr int kTrtllmAttentionTypes = 7;  // len(DeepseekV4AttentionType) (CM `_get_extra_quota_padding`)

/// The enum member's name as TensorRT-LLM logs it (`attn_type.name`): "SWA", "COMPRESS", ...
constexpr std::string_view trtllm_type_name(trtllm_attention_type t) {
  switch (t) {
    case trtllm_attention_type::swa: return "SWA";
    case trtllm_attention_type::compress: return "COMPRESS";
    case trtllm_attention_type::compressor_kv: return "COMPRESSOR_KV";
    case trtllm_attention_type::compressor_score: return "COMPRESSOR_SCORE";
    case trtllm_attention_type::indexer_compress: return "INDEXER_COMPRESS";
    case trtllm_attention_type::indexer_compressor_kv: return "INDEXER_COMPRESSOR_KV";
    case trtllm_attention_type::indexer_compressor_score: return "INDEXER_COMPRESSOR_SCORE";
  }
  return "?";
}

/// The buffer's DataRole string: `DataRole(f"deepseek_v4_{self.name.lower()}")`
/// (tensorrt_llm/_torch/attention/backends/sparse/deepseek_v4/params.py `DeepseekV4AttentionType.role`,
/// stored copies index ids 56888553428, 70650072706).
constexpr std::string_view trtllm_data_role(trtllm_attention_type t) {
  switch (t) {
    case trtllm_attention_type::swa: return "deepseek_v4_swa";
    case trtllm_attention_type::compress: return "deepseek_v4_compress";
    case trtllm_attention_type::compressor_kv: return "deepseek_v4_compressor_kv";
    case trtllm_attention_type::compressor_score: return "deepseek_v4_compressor_score";
    case trtllm_attention_type::indexer_compress: return "deepseek_v4_indexer_compress";
    case trtllm_attention_type::indexer_compressor_kv: return "deepseek_v4_indexer_compressor_kv";
    case trtllm_attention_type::indexer_compressor_score: return "deepseek_v4_indexer_compressor_score";
  }
  return "?";
}

/// The KV dtype of the SWA and COMPRESS buffers: `kv_cache_config.dtype` "fp8_ds_mla" (584-B
/// footer-scale rows, mandatory on SM90) or BF16 (1,024-B rows).
enum class trtllm_kv_dtype : std::uint8_t { fp8_ds_mla, bf16 };
/// `indexer_k_dtype`: "fp8" (132 B per key at index_head_dim 128) or "fp4" (68 B, SM >= 100).
enum class trtllm_indexer_dtype : std::uint8_t { fp8, fp4 };

/// Ratio 0 (SWA only in the checkpoint) read as 1, as TensorRT-LLM normalizes it
/// (`DeepSeekV4SparseAttentionConfig.normalize_compress_ratios`, tensorrt_llm/llmapi/llm_args.py
/// @ 0004396720054fd8e205cbf616f21f0b57c6b412).
constexpr int trtllm_ratio(int checkpoint_ratio) { return checkpoint_ratio == 0 ? 1 : checkpoint_ratio; }

/// Whether a layer of `ratio` (1, 4 or 128) has buffers of type `t` (CM `compress_ratio_has_attention`):
/// every layer SWA; ratio 4 all seven; ratio 128 SWA, COMPRESS and the two compressor states.
constexpr bool trtllm_has_type(int ratio, trtllm_attention_type t) {
  using T = trtllm_attention_type;
  if (t == T::swa) return true;
  if (ratio == 4) return true;
  if (ratio == 128) return t == T::compress || t == T::compressor_kv || t == T::compressor_score;
  return false;
}

/// Bytes of one stored entry of type `t` in a layer of `ratio` (CM `get_token_bytes`):
/// SWA, COMPRESS 584 (fp8_ds_mla: 448 e4m3 + 64 bf16 RoPE + 7 ue8m0 + 1 pad, `footer_scale_kv.TOKEN_BYTES`)
/// or head_dim x 2 (BF16); INDEXER_COMPRESS index_head_dim + index_head_dim / 128 x 4 (fp8, 132)
/// or index_head_dim / 2 + index_head_dim / 32 (fp4, 68); the compressor states fp32:
/// state_factor x dim x 4 with state_factor 2 for ratio 4 (overlapping compressor), else 1, dim
/// head_dim (COMPRESSOR_*) or index_head_dim (INDEXER_COMPRESSOR_*). Fails for fp8_ds_mla with
/// head_dim != 512 (CM: "footer-scale KV layout requires head_dim 512"), an fp4 indexer with
/// index_head_dim != 128, or a type the ratio does not have.
constexpr std::int64_t trtllm_entry_bytes(trtllm_attention_type t, int ratio, std::int64_t head_dim,
                                          std::int64_t index_head_dim, trtllm_kv_dtype kv, trtllm_indexer_dtype idx) {
  using T = trtllm_attention_type;
  require(trtllm_has_type(ratio, t), "Layer with compress ratio does not have attention type (CM get_token_bytes)",
          {"compress_ratio", ratio}, {"attention_type", static_cast<int>(t)});
  const std::int64_t state_factor = ratio == 4 ? 2 : 1;  // CM get_attn_dim: is_overlap_compressor
  switch (t) {
    case T::swa:
    case T::compress:
      if (kv == trtllm_kv_dtype::fp8_ds_mla) {
        require(head_dim == 512, "footer-scale KV layout requires head_dim 512 (CM get_token_bytes)",
                {"head_dim", head_dim});
        return 584;  // footer_scale_kv.TOKEN_BYTES
      }
      return checked_mul<std::int64_t>(head_dim, 2);
    case T::indexer_compress:
      if (idx == trtllm_indexer_dtype::fp8) return index_head_dim + index_head_dim / 128 * 4;
      require(index_head_dim == 128, "FP4 indexer K cache requires index_head_dim=128 (CM _init_indexer_dtype)",
              {"index_head_dim", index_head_dim});
      return index_head_dim / 2 + index_head_dim / 32;
    case T::compressor_kv:
    case T::compressor_score: return checked_mul<std::int64_t>(state_factor * head_dim, 4);
    case T::indexer_compressor_kv:
    case T::indexer_compressor_score: return checked_mul<std::int64_t>(state_factor * index_head_dim, 4);
  }
  return 0;
}

/// Entries one block of type `t` holds: tokens_per_block / ratio for COMPRESS and
/// INDEXER_COMPRESS (CM `compressed_block_sizes`), tokens_per_block for every other type.
constexpr std::int64_t trtllm_entries_per_block(trtllm_attention_type t, int ratio, std::int64_t tokens_per_block) {
  const bool compressed = t == trtllm_attention_type::compress || t == trtllm_attention_type::indexer_compress;
  return compressed ? tokens_per_block / ratio : tokens_per_block;
}

/// The sliding window of a manager layer holding type `t` at `ratio`, in tokens; 0 = none (CM
/// `_get_window_size`): SWA window_size (128); COMPRESS / INDEXER_COMPRESS none; the compressor
/// states state_factor x ratio (8 for ratio 4, 128 for ratio 128). MTP's + max_draft_len is not modelled.
constexpr std::int64_t trtllm_window_tokens(trtllm_attention_type t, int ratio, std::int64_t window_size) {
  using T = trtllm_attention_type;
  if (t == T::swa) return window_size;
  if (t == T::compress || t == T::indexer_compress) return 0;
  return (ratio == 4 ? 2 : 1) * std::int64_t{ratio};
}

/// The tokens_per_block values DeepseekV4CacheManager accepts (CM `__init__` assert).
constexpr bool trtllm_tokens_per_block_ok(std::int64_t tpb) { return tpb == 128 || tpb == 256; }

/// A coalesced pool (SC `createStorageConfig`): the buffers of one life cycle with the same
/// per-block size, one slot holding that buffer for every one of them.
struct trtllm_pool {
  std::int64_t buffer_bytes = 0;  ///< One buffer's bytes per block (`singleBufferSize`).
  int num_buffers = 0;            ///< Buffers (layer x role) coalesced into it.
  std::uint8_t roles = 0;         ///< Bit (1 << attention type) of each role it holds.
  /// Bytes of one slot (block) of this pool: buffer_bytes x num_buffers.
  [[nodiscard]] constexpr std::int64_t slot_bytes() const {
    return checked_mul<std::int64_t>(buffer_bytes, num_buffers);
  }
  [[nodiscard]] constexpr bool holds(trtllm_attention_type t) const { return (roles >> static_cast<int>(t) & 1U) != 0; }
};

inline constexpr int kTrtllmMaxPools = 8;
inline constexpr int kTrtllmMaxLifeCycles = 4;

/// A pool group: one life cycle (V4 never merges two: their slot-size lists differ) and its pools,
/// a slot allocated in every pool at once.
struct trtllm_pool_group {
  std::int64_t window_tokens = 0;  ///< The life cycle's window; 0 = none (full history).
  int life_cycle_id = 0;           ///< Registration order of the life cycle (first manager layer using it).
  int num_pools = 0;
  std::array<trtllm_pool, kTrtllmMaxPools> pools{};  ///< Descending slot bytes (SC: "sorted by size descending").
  /// `slotUtilFracMax` of the life cycle (SC `layerAttributes`): the largest share of a pool's
  /// buffers one manager layer holds, as num / den (scratch blocks are weighted by it).
  std::int64_t util_num = 0, util_den = 1;

  [[nodiscard]] constexpr const trtllm_pool& operator[](int i) const { return pools[static_cast<std::size_t>(i)]; }
  /// Bytes of one slot over all pools of the group.
  [[nodiscard]] constexpr std::int64_t slot_bytes() const {
    std::int64_t b = 0;
    for (int i = 0; i < num_pools; ++i) b = checked_add(b, (*this)[i].slot_bytes());
    return b;
  }
};

/// Per-token figures of the DeepSeek-V4 max_tokens <-> quota conversion (CM
/// `_estimate_non_sliding_attn_size_per_token`, `_estimate_swa_cache_size`), bytes.
struct trtllm_token_costs {
  std::int64_t non_sliding_per_token = 0;  ///< sum over COMPRESS / INDEXER_COMPRESS of entry bytes / ratio (floor).
  std::int64_t context_swa_per_token = 0;  ///< Context SWA bytes per token, scratch reuse on.
  std::int64_t context_swa_per_token_no_scratch = 0;  ///< The same with scratch reuse off.
  std::int64_t generation_swa_per_request = 0;        ///< Sum of window (rounded up to a block) x entry bytes.
  /// Context SWA bytes per request, scratch reuse on: window x entry bytes of every (type, ratio)
  /// after its first layer (the first is charged per token); 0 with scratch reuse off.
  std::int64_t context_swa_per_request = 0;
};

/// TensorRT-LLM's view of a V4 model: its pool groups in the C++ backend's order, and the block
/// tables over the library's groups (`tables`, one per pool group, in the same order).
struct trtllm_layout {
  std::int64_t tokens_per_block = 0;
  int num_layers = 0;          ///< Model layers (num_hidden_layers; MTP not modelled).
  int num_manager_layers = 0;  ///< KVCacheManagerV2 layers (CM `_add_v4_cache_layers`).
  int num_groups = 0;
  std::array<trtllm_pool_group, kTrtllmMaxLifeCycles> groups{};
  trtllm_token_costs costs{};
  engine_pools tables{};  ///< `structure` left at its default (the integrator sets it).

  [[nodiscard]] constexpr const trtllm_pool_group& operator[](int i) const {
    return groups[static_cast<std::size_t>(i)];
  }
  [[nodiscard]] constexpr int num_pools() const {
    int n = 0;
    for (int g = 0; g < num_groups; ++g) n += (*this)[g].num_pools;
    return n;
  }
  /// The pool group of the life cycle with window `w` (0: none); fails if there is none.
  [[nodiscard]] constexpr int group_of_window(std::int64_t w) const {
    for (int g = 0; g < num_groups; ++g)
      if ((*this)[g].window_tokens == w) return g;
    fail("TensorRT-LLM layout has no life cycle with this window", {"window_tokens", w});
  }
};

/// Why TensorRT-LLM does not store pool `pool` of library group `g` in that format, or nullptr.
/// TensorRT-LLM stores (CM `get_token_bytes`): main KV as fp8_ds_mla 584-B rows (`v4.fp8_ds_mla.footer`
/// byte for byte; `v4.fp8_ds_mla` has the same rows, only FlashMLA's page padding differs, and
/// TensorRT-LLM's block is rows x 584 unpadded) or BF16 (`v4.bf16`); index keys `v4.indexer_fp8`
/// (132) or `v4.indexer_mxfp4` (68); compressor states fp32. Every other format is refused.
constexpr const char* trtllm_format_mismatch(const paged_cache_group_spec& g, int pool) {
  const format_layout& f = g.pools[static_cast<std::size_t>(pool)].format;
  if (f.role == format_role::state) return nullptr;
  const std::string_view n = f.name;
  if (f.role == format_role::indexer_k) {
    if (n == "v4.indexer_fp8" || n == "v4.indexer_mxfp4") return nullptr;
    return "TensorRT-LLM stores indexer keys as fp8 (v4.indexer_fp8, 132 B) or fp4 (v4.indexer_mxfp4, 68 B) only";
  }
  if (n == "v4.fp8_ds_mla" || n == "v4.fp8_ds_mla.footer" || n == "v4.bf16") return nullptr;
  return "TensorRT-LLM stores DeepSeek V4 KV rows as fp8_ds_mla (584 B) or BF16 (1024 B) only (nvfp4, fp8 "
         "per-tensor and other layouts are not modelled)";
}

namespace detail {
/// One manager layer (CM `_add_v4_cache_layers`): a model layer's buffers sharing a window.
struct trtllm_manager_layer {
  int model_layer = 0;
  int ratio = 1;
  std::int64_t window = 0;
  int num_types = 0;
  std::array<trtllm_attention_type, 4> types{};
};

/// The manager layers of a model layer of `ratio`, in CM `_add_v4_cache_layers` order.
constexpr int trtllm_manager_layers_of(int layer, int ratio, std::int64_t window_size,
                                       std::array<trtllm_manager_layer, 3>& out) {
  using T = trtllm_attention_type;
  const auto make = [&](std::initializer_list<T> ts) {
    trtllm_manager_layer m;
    m.model_layer = layer;
    m.ratio = ratio;
    for (const T t : ts) m.types[static_cast<std::size_t>(m.num_types++)] = t;
    m.window = trtllm_window_tokens(m.types[0], ratio, window_size);
    return m;
  };
  if (ratio == 1) {
    out[0] = make({T::swa});
    return 1;
  }
  if (ratio == 4) {
    out[0] = make({T::swa});
    out[1] = make({T::compress, T::indexer_compress});
    out[2] = make({T::compressor_kv, T::compressor_score, T::indexer_compressor_kv, T::indexer_compressor_score});
    return 3;
  }
  if (ratio == 128) {
    out[0] = make({T::swa, T::compressor_kv, T::compressor_score});
    out[1] = make({T::compress});
    return 2;
  }
  fail("Unsupported DeepSeek-V4 compress ratio (CM _add_v4_cache_layers: only 1, 4, 128)", {"compress_ratio", ratio});
}

/// The library group (and pool) that holds type `t` of a ratio-`ratio` layer.
struct trtllm_library_home {
  group_id id{};
  int pool = 0;
  bool half_row = false;  ///< KV or SCORE: half of the library's [kv | score] state row.
};
constexpr trtllm_library_home trtllm_home_of(trtllm_attention_type t, int ratio) {
  using T = trtllm_attention_type;
  switch (t) {
    case T::swa: return {{group_kind::swa_kv, 0}, 0, false};
    case T::compress: return {{group_kind::compressed_kv, ratio}, 0, false};
    case T::indexer_compress: return {{group_kind::compressed_kv, ratio}, 1, false};
    case T::compressor_kv:
    case T::compressor_score: return {{group_kind::compressor_state, ratio}, 0, true};
    case T::indexer_compressor_kv:
    case T::indexer_compressor_score: return {{group_kind::indexer_compressor_state, 4}, 0, true};
  }
  return {};
}

constexpr bool spec_has_layer(const paged_cache_group_spec& g, int layer) {
  for (int i = 0; i < g.num_layers; ++i)
    if (g.layers[static_cast<std::size_t>(i)] == layer) return true;
  return false;
}

/// (a) lexicographically before (b): SC's `std::map<std::vector<size_t>, ...>` order of pool groups.
constexpr bool slot_sizes_less(const trtllm_pool_group& a, const trtllm_pool_group& b) {
  for (int i = 0; i < a.num_pools && i < b.num_pools; ++i) {
    if (a[i].slot_bytes() != b[i].slot_bytes()) return a[i].slot_bytes() < b[i].slot_bytes();
  }
  return a.num_pools < b.num_pools;
}
}  // namespace detail

namespace detail {

/// The KV and index-key dtypes of the library formats in `specs` (each checked against what
/// TensorRT-LLM stores, `trtllm_format_mismatch`), refusing MTP layers (>= `num_layers`).
struct trtllm_dtypes {
  trtllm_kv_dtype kv = trtllm_kv_dtype::fp8_ds_mla;
  trtllm_indexer_dtype idx = trtllm_indexer_dtype::fp8;
};
constexpr trtllm_dtypes trtllm_dtypes_of(const group_spec_list& specs, int num_layers) {
  trtllm_dtypes d;
  for (const paged_cache_group_spec& g : specs) {
    for (int p = 0; p < g.num_pools; ++p) {
      if (const char* why = trtllm_format_mismatch(g, p)) fail(why, {"pool", p}, {"row_bytes", g.pools[p].row_bytes});
      const format_layout& f = g.pools[static_cast<std::size_t>(p)].format;
      if (f.role == format_role::main_kv && std::string_view(f.name) == "v4.bf16") d.kv = trtllm_kv_dtype::bf16;
      if (f.role == format_role::indexer_k && std::string_view(f.name) == "v4.indexer_mxfp4")
        d.idx = trtllm_indexer_dtype::fp4;
    }
    for (int i = 0; i < g.num_layers; ++i)
      require(g.layers[static_cast<std::size_t>(i)] < num_layers,
              "MTP layers are not modelled for TensorRT-LLM (build the specs with include_mtp = false)",
              {"layer", g.layers[static_cast<std::size_t>(i)]}, {"num_hidden_layers", num_layers});
  }
  return d;
}

/// Fails unless the library's row for role `t` of layer `l` (ratio `r`) is TensorRT-LLM's entry of
/// `entry` bytes, byte for byte (a state row: KV + SCORE).
constexpr void trtllm_check_library_row(const group_spec_list& specs, int l, trtllm_attention_type t, int r,
                                        std::int64_t entry) {
  const trtllm_library_home h = trtllm_home_of(t, r);
  const paged_cache_group_spec& g = specs.at(h.id);
  require(spec_has_layer(g, l), "the library group lacks a layer TensorRT-LLM gives this role", {"layer", l},
          {"attention_type", static_cast<int>(t)}, {"compress_ratio", r});
  require(h.pool < g.num_pools, "the library group lacks the pool TensorRT-LLM gives this role", {"layer", l},
          {"attention_type", static_cast<int>(t)});
  const std::int64_t row = g.pools[static_cast<std::size_t>(h.pool)].row_bytes;
  require((h.half_row ? 2 * entry : entry) == row,
          "library row bytes differ from TensorRT-LLM's entry bytes (state rows: KV + SCORE)", {"row_bytes", row},
          {"trtllm_entry_bytes", entry}, {"attention_type", static_cast<int>(t)});
}

/// Coalesces one buffer of `bytes` per block holding role `t` into life cycle `lc`: into its pool
/// of that buffer size, or a new one.
constexpr void trtllm_add_buffer(trtllm_pool_group& lc, std::int64_t bytes, trtllm_attention_type t) {
  int p = 0;
  while (p < lc.num_pools && lc[p].buffer_bytes != bytes) ++p;
  if (p == lc.num_pools) {
    require(lc.num_pools < kTrtllmMaxPools, "too many pools in a life cycle", {"pools", lc.num_pools});
    lc.pools[static_cast<std::size_t>(lc.num_pools++)].buffer_bytes = bytes;
  }
  trtllm_pool& pool = lc.pools[static_cast<std::size_t>(p)];
  pool.num_buffers += 1;
  pool.roles = static_cast<std::uint8_t>(pool.roles | (1U << static_cast<unsigned>(t)));
}

/// The life cycles of TensorRT-LLM's manager layers, by registration order.
struct trtllm_life_cycles {
  std::array<trtllm_pool_group, kTrtllmMaxLifeCycles> groups{};
  int num = 0;
  std::array<trtllm_manager_layer, std::size_t{3} * kMaxLayers> layers{};
  int num_layers = 0;

  /// The life cycle of window `w` (0: none), registered on first use.
  constexpr trtllm_pool_group& of(std::int64_t w) {
    for (int i = 0; i < num; ++i)
      if (groups[static_cast<std::size_t>(i)].window_tokens == w) return groups[static_cast<std::size_t>(i)];
    require(num < kTrtllmMaxLifeCycles, "too many life cycles", {"windows", num});
    trtllm_pool_group& g = groups[static_cast<std::size_t>(num)];
    g.window_tokens = w;
    g.life_cycle_id = num++;
    return g;
  }
};

/// Every manager layer of `c` (CM `_add_v4_cache_layers`) and its buffers coalesced into its life
/// cycle's pools, each buffer's library row checked.
constexpr trtllm_life_cycles trtllm_life_cycles_of(const model_config& c, const group_spec_list& specs,
                                                   std::int64_t tokens_per_block, const trtllm_dtypes& d) {
  trtllm_life_cycles lcs;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const int r = trtllm_ratio(c.compress_ratios[static_cast<std::size_t>(l)]);
    std::array<trtllm_manager_layer, 3> m{};
    const int k = trtllm_manager_layers_of(l, r, c.sliding_window, m);
    for (int j = 0; j < k; ++j) {
      const trtllm_manager_layer& ml = m[static_cast<std::size_t>(j)];
      lcs.layers[static_cast<std::size_t>(lcs.num_layers++)] = ml;
      trtllm_pool_group& lc = lcs.of(ml.window);
      for (int b = 0; b < ml.num_types; ++b) {
        const trtllm_attention_type t = ml.types[static_cast<std::size_t>(b)];
        const std::int64_t entry = trtllm_entry_bytes(t, r, c.head_dim, c.index_head_dim, d.kv, d.idx);
        trtllm_check_library_row(specs, l, t, r, entry);
        trtllm_add_buffer(lc, checked_mul(entry, trtllm_entries_per_block(t, r, tokens_per_block)), t);
      }
    }
  }
  return lcs;
}

/// Fails if a library group holds a layer TensorRT-LLM gives none of the group's roles.
constexpr void trtllm_check_library_layers(const model_config& c, const group_spec_list& specs) {
  for (const paged_cache_group_spec& g : specs)
    for (int i = 0; i < g.num_layers; ++i) {
      const int l = g.layers[static_cast<std::size_t>(i)];
      const int r = trtllm_ratio(c.compress_ratios[static_cast<std::size_t>(l)]);
      const bool ok = g.id.kind == group_kind::swa_kv || (g.id.ratio == r && r != 1);
      require(ok, "a library group holds a layer TensorRT-LLM gives no such role", {"layer", l},
              {"group_ratio", g.id.ratio}, {"compress_ratio", r});
    }
}

/// slotUtilFracMax of every life cycle (SC `layerAttributes`): per manager layer, per pool, its
/// buffers / the pool's; the largest kept as num / den.
constexpr void trtllm_slot_util(const model_config& c, std::int64_t tokens_per_block, const trtllm_dtypes& d,
                                trtllm_life_cycles& lcs) {
  for (int i = 0; i < lcs.num_layers; ++i) {
    const trtllm_manager_layer& ml = lcs.layers[static_cast<std::size_t>(i)];
    trtllm_pool_group& lc = lcs.of(ml.window);
    for (int p = 0; p < lc.num_pools; ++p) {
      std::int64_t count = 0;
      for (int b = 0; b < ml.num_types; ++b) {
        const trtllm_attention_type t = ml.types[static_cast<std::size_t>(b)];
        const std::int64_t bytes = trtllm_entry_bytes(t, ml.ratio, c.head_dim, c.index_head_dim, d.kv, d.idx) *
                                   trtllm_entries_per_block(t, ml.ratio, tokens_per_block);
        if (bytes == lc[p].buffer_bytes) ++count;
      }
      if (count * lc.util_den > lc.util_num * lc[p].num_buffers) {
        lc.util_num = count;
        lc.util_den = lc[p].num_buffers;
      }
    }
  }
}

/// Pools by slot bytes descending; pool groups by slot-size list ascending (SC); fails where two
/// life cycles would share a pool group (equal slot-size lists: not modelled).
constexpr void trtllm_sort_groups(trtllm_life_cycles& lcs) {
  for (int i = 0; i < lcs.num; ++i) {
    trtllm_pool_group& lc = lcs.groups[static_cast<std::size_t>(i)];
    for (int a = 1; a < lc.num_pools; ++a)
      for (int b = a; b > 0 && lc[b - 1].slot_bytes() < lc[b].slot_bytes(); --b)
        std::swap(lc.pools[static_cast<std::size_t>(b - 1)], lc.pools[static_cast<std::size_t>(b)]);
  }
  auto& g = lcs.groups;
  for (int a = 1; a < lcs.num; ++a)
    for (int b = a; b > 0 && slot_sizes_less(g[static_cast<std::size_t>(b)], g[static_cast<std::size_t>(b - 1)]); --b)
      std::swap(g[static_cast<std::size_t>(b - 1)], g[static_cast<std::size_t>(b)]);
  for (int a = 1; a < lcs.num; ++a)
    require(slot_sizes_less(g[static_cast<std::size_t>(a - 1)], g[static_cast<std::size_t>(a)]),
            "two life cycles with equal slot sizes share a pool group: not modelled", {"life_cycle", a});
}

/// The key of (attention type `t`, ratio 1 / 4 / 128) in a per-role table of kTrtllmRoleKeys entries.
inline constexpr std::size_t kTrtllmRoleKeys = static_cast<std::size_t>(kTrtllmAttentionTypes) * 3;
constexpr std::size_t trtllm_role_key(int t, int ratio) {
  return static_cast<std::size_t>(t) * 3 + (ratio == 1 ? 0 : ratio == 4 ? 1 : 2);
}

/// Per-token costs (CM `_estimate_non_sliding_attn_size_per_token`, `_estimate_swa_cache_size`).
constexpr trtllm_token_costs trtllm_costs_of(const model_config& c, std::int64_t tokens_per_block,
                                             const trtllm_dtypes& d) {
  using T = trtllm_attention_type;
  trtllm_token_costs costs;
  std::array<bool, kTrtllmRoleKeys> seen{};  // (type, ratio): scratch keys
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const int r = trtllm_ratio(c.compress_ratios[static_cast<std::size_t>(l)]);
    for (int ti = 0; ti < kTrtllmAttentionTypes; ++ti) {
      const T t = static_cast<T>(ti);
      if (!trtllm_has_type(r, t)) continue;
      const std::int64_t e = trtllm_entry_bytes(t, r, c.head_dim, c.index_head_dim, d.kv, d.idx);
      if (t == T::compress || t == T::indexer_compress) {
        costs.non_sliding_per_token = checked_add(costs.non_sliding_per_token, e / r);
        continue;
      }
      const std::int64_t w = trtllm_window_tokens(t, r, c.sliding_window);
      const std::int64_t window_bytes = checked_mul(checked_mul(ceil_div(w, tokens_per_block), tokens_per_block), e);
      costs.generation_swa_per_request = checked_add(costs.generation_swa_per_request, window_bytes);
      costs.context_swa_per_token_no_scratch = checked_add(costs.context_swa_per_token_no_scratch, e);
      const std::size_t key = trtllm_role_key(ti, r);
      if (!seen[key]) {
        seen[key] = true;
        costs.context_swa_per_token = checked_add(costs.context_swa_per_token, e);
      } else {
        costs.context_swa_per_request = checked_add(costs.context_swa_per_request, window_bytes);
      }
    }
  }
  return costs;
}

/// The block table of pool group `pg` over the library's groups `specs`: the groups of its window,
/// every pool of them a member, `tokens_per_block` tokens a block.
constexpr engine_group trtllm_table_of(const trtllm_pool_group& pg, const group_spec_list& specs, std::int64_t window,
                                       std::int64_t tokens_per_block) {
  engine_group eg;
  eg.rule.kind = pg.window_tokens == 0 ? table_kind::full_history : table_kind::sliding_window;
  eg.rule.page_tokens = tokens_per_block;
  eg.rule.window_tokens = pg.window_tokens;
  for (const paged_cache_group_spec& g : specs) {
    const bool state = g.id.kind == group_kind::compressor_state || g.id.kind == group_kind::indexer_compressor_state;
    const std::int64_t w = g.id.kind == group_kind::swa_kv          ? window
                           : g.id.kind == group_kind::compressed_kv ? 0
                                                                    : (g.id.ratio == 4 ? 8 : g.id.ratio);
    if (w != pg.window_tokens || g.num_layers == 0) continue;
    for (int p = 0; p < g.num_pools; ++p) {
      require(eg.num_members < kMaxGroupMembers, "too many members in a TensorRT-LLM table",
              {"members", eg.num_members});
      engine_member& m = eg.members[static_cast<std::size_t>(eg.num_members++)];
      m.group = g.id;
      m.pool = p;
      for (int i = 0; i < g.num_layers; ++i) m.layers.set(g.layers[static_cast<std::size_t>(i)]);
      const std::int64_t stride = state ? 1 : g.entry_stride_tokens;
      m.rows_per_page = tokens_per_block / stride;
      m.page_bytes = checked_mul(m.rows_per_page, g.pools[static_cast<std::size_t>(p)].row_bytes);
      m.alignment = 1;
    }
  }
  require(eg.bytes() == pg.slot_bytes(), "TensorRT-LLM table bytes differ from its pool group's slot bytes",
          {"table_bytes", eg.bytes()}, {"slot_bytes", pg.slot_bytes()});
  return eg;
}

}  // namespace detail

/// TensorRT-LLM's layout of model `c` over the library's groups `specs` (build them with
/// `build_cache_specs(c, formats, /*include_mtp=*/false)`), `tokens_per_block` tokens per block.
///
/// Life cycles: one per window (none, 128, 8), ids in order of first use by a manager layer
/// (LCR `LifeCycleRegistry`). Pools: per life cycle, buffers of equal per-block size coalesced,
/// sorted by slot bytes descending; pool groups ordered by their slot-size lists ascending (SC
/// `createStorageConfig`, the C++ backend; Python keeps insertion order). Block tables: one per
/// pool group, page_tokens = tokens_per_block, members the library (group, pool, layers) with
/// rows_per_page = tokens_per_block / entry stride and page_bytes = rows x row bytes.
///
/// Each library row is checked byte for byte against TensorRT-LLM's entry bytes (`trtllm_entry_bytes`;
/// a state row is KV + SCORE). Fails (naming the value and the rule) for: a family other than V4
/// (V4.1: TensorRT-LLM's `_add_v41_cache_layers` is not modelled; V3.2 uses the V1 `DSACacheManager`),
/// tokens_per_block not in {128, 256}, sliding_window != 128, a ratio outside {1, 4, 128}, MTP layers
/// in `specs`, a format TensorRT-LLM does not store (`trtllm_format_mismatch`), a row whose bytes
/// differ, or library groups whose layers differ from TensorRT-LLM's roles.
constexpr trtllm_layout trtllm_build_layout(const model_config& c, const group_spec_list& specs,
                                            std::int64_t tokens_per_block = 128) {
  require(c.family != model_family::v4_1,
          "DeepSeek V4.1 is not modelled for TensorRT-LLM (its _add_v41_cache_layers path: KV-sharing owners, "
          "ratios 0/1/2)",
          {"family", static_cast<int>(c.family)});
  require(c.family != model_family::v3_2,
          "DeepSeek V3.2 is not modelled for TensorRT-LLM (it uses the V1 DSACacheManager, not KVCacheManagerV2)",
          {"family", static_cast<int>(c.family)});
  require(trtllm_tokens_per_block_ok(tokens_per_block),
          "DeepseekV4CacheManager requires tokens_per_block in [128, 256]", {"tokens_per_block", tokens_per_block});
  require(c.sliding_window == 128,
          "Dual-pool sparse MLA requires window_size == 128 (DeepseekV4TrtllmAttentionMetadata)",
          {"window_size", c.sliding_window});
  require(c.head_dim > 0 && c.index_head_dim > 0, "head_dim and index_head_dim must be > 0", {"head_dim", c.head_dim},
          {"index_head_dim", c.index_head_dim});
  const detail::trtllm_dtypes d = detail::trtllm_dtypes_of(specs, c.num_hidden_layers);
  detail::trtllm_life_cycles lcs = detail::trtllm_life_cycles_of(c, specs, tokens_per_block, d);
  detail::trtllm_check_library_layers(c, specs);
  detail::trtllm_slot_util(c, tokens_per_block, d, lcs);
  detail::trtllm_sort_groups(lcs);
  trtllm_layout out;
  out.tokens_per_block = tokens_per_block;
  out.num_layers = c.num_hidden_layers;
  out.num_manager_layers = lcs.num_layers;
  out.groups = lcs.groups;
  out.num_groups = lcs.num;
  out.costs = detail::trtllm_costs_of(c, tokens_per_block, d);
  for (int gi = 0; gi < out.num_groups; ++gi)  // block tables over the library's groups, one per pool group
    out.tables.groups[static_cast<std::size_t>(out.tables.num_groups++)] =
        detail::trtllm_table_of(out[gi], specs, c.sliding_window, tokens_per_block);
  return out;
}

/// The library's groups as TensorRT-LLM reads them: `build_cache_specs(c, indexer, false)` (no MTP).
constexpr group_spec_list trtllm_cache_specs(const model_config& c, indexer_format indexer = indexer_format::fp8) {
  return build_cache_specs(c, indexer, /*include_mtp=*/false);
}

/// `trtllm_build_layout(c, trtllm_cache_specs(c, indexer), tokens_per_block)`.
constexpr trtllm_layout trtllm_build_layout(const model_config& c, std::int64_t tokens_per_block = 128,
                                            indexer_format indexer = indexer_format::fp8) {
  return trtllm_build_layout(c, trtllm_cache_specs(c, indexer), tokens_per_block);
}

/// GPU refusals of DeepseekV4CacheManager / DeepSeekV4SparseAttentionConfig for SM `sm` (90:
/// H100/H200): SM90 needs the fp8_ds_mla KV dtype (CM `__init__`: "DeepSeek-V4 on Hopper requires
/// kv_cache_config.dtype='fp8_ds_mla'"); fp8_ds_mla off SM90 needs tokens_per_block 256 (CM
/// `__init__`); an explicit fp4 indexer needs SM >= 100 (llm_args.py @ 0004396720054fd8e205cbf616f21f0b57c6b412
/// `DeepSeekV4SparseAttentionConfig`: "indexer_k_dtype='fp4' requires SM>=100").
constexpr void trtllm_check_gpu(int sm, trtllm_kv_dtype kv, trtllm_indexer_dtype idx, std::int64_t tokens_per_block) {
  require(sm != 90 || kv == trtllm_kv_dtype::fp8_ds_mla,
          "DeepSeek-V4 on Hopper requires kv_cache_config.dtype='fp8_ds_mla'", {"sm", sm});
  require(sm == 90 || kv != trtllm_kv_dtype::fp8_ds_mla || tokens_per_block == 256,
          "DeepSeek-V4 fp8_ds_mla KV cache requires tokens_per_block=256 off SM90", {"sm", sm},
          {"tokens_per_block", tokens_per_block});
  require(idx != trtllm_indexer_dtype::fp4 || sm >= 100, "indexer_k_dtype='fp4' requires SM>=100 (Blackwell)",
          {"sm", sm});
}

}  // namespace dsv4::cache
