// dsv4-cache: the paged cache groups of a DeepSeek V4 model, derived from the layer schemas.
//
// Source: tokenspeed `deepseek_v4_cache_spec.py` (`build_v4_cache_specs`,
// `PagedCacheGroupSpec`, the `v4.*` group ids). Group order is the seed's: `v4.swa_kv`; then
// for each compress ratio ascending its compressor-state group and its compressed-KV group;
// then `v4.c4a.indexer_compressor_state` if ratio 4 is present. Page bytes per layer
// (facts section 3, D = 512, R = 64, d = 128):
//
//   v4.swa_kv                        64 rows x 584 B, padded to 576 B      = 37,440
//   v4.c4a.compressor_state           4 rows x 8,192 B fp32               = 32,768
//   v4.c4a.compressed_kv             64 rows: 37,440 KV + 64 x 68 = 4,352 MXFP4 keys (or 64 x 132 = 8,448 FP8)
//   v4.c128a.compressor_state         8 rows x 4,096 B fp32               = 32,768
//   v4.c128a.compressed_kv            2 rows x 584 B, padded to 576 B      =  1,728
//   v4.c4a.indexer_compressor_state   4 rows x 2,048 B fp32               =  8,192
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "dsv4/cache/layer_schema.hpp"

namespace dsv4::cache {

/// Rows per page of the SWA KV group (the attention kernel's block).
inline constexpr std::int64_t kKernelBlockRows = 64;

/// Rows per page of a compressor-state group: 4 for ratio 4, 8 for ratio 128 (seed table).
constexpr std::int64_t compressor_state_rows_per_page(std::int64_t ratio) {
  if (ratio == kCsaRatio) return 4;
  if (ratio == kHcaRatio) return 8;
  fail("unsupported DeepSeek V4 compress_ratio (only 4 and 128 have compressor state)", {"compress_ratio", ratio});
}

/// What a group stores.
enum class group_kind : std::uint8_t { swa_kv, compressor_state, compressed_kv, indexer_compressor_state };

/// A group's identity: its kind and, for compressor-state / compressed-KV groups, the ratio.
/// Prints as and parses from the seed's ids: `v4.swa_kv`, `v4.c<R>a.compressor_state`,
/// `v4.c<R>a.compressed_kv`, `v4.c4a.indexer_compressor_state`.
struct group_id {
  group_kind kind = group_kind::swa_kv;
  int ratio = 0;  ///< 0 for swa_kv, 4 for the indexer state, else the group's ratio.
  friend constexpr bool operator==(const group_id&, const group_id&) = default;
};

/// The seed's id string of `id`, e.g. "v4.c128a.compressed_kv".
inline std::string to_string(group_id id) {
  switch (id.kind) {
    case group_kind::swa_kv: return "v4.swa_kv";
    case group_kind::compressor_state: return "v4.c" + std::to_string(id.ratio) + "a.compressor_state";
    case group_kind::compressed_kv: return "v4.c" + std::to_string(id.ratio) + "a.compressed_kv";
    case group_kind::indexer_compressor_state: return "v4.c4a.indexer_compressor_state";
  }
  return "?";
}

namespace detail {
/// Throws std::invalid_argument("dsv4::cache: <rule> (id=\"<s>\")") for a malformed group id:
/// the id is quoted with non-printable bytes as \xNN and cut at 64 characters (one line).
[[noreturn]] inline void fail_group_id(const char* rule, std::string_view s) {
  std::string msg = std::string("dsv4::cache: ") + rule + " (id=\"";
  for (const char ch : s.substr(0, 64)) {
    const auto b = static_cast<unsigned char>(ch);
    if (b >= 0x20 && b < 0x7F && ch != '"' && ch != '\\') {
      msg += ch;
    } else {
      constexpr std::string_view hex = "0123456789abcdef";
      msg += "\\x";
      msg += hex[b >> 4];
      msg += hex[b & 15];
    }
  }
  msg += s.size() > 64 ? "\"...)" : "\")";
  raise_invalid_argument(msg);
}
}  // namespace detail

/// Parses a seed group id. Accepts exactly the four id shapes above with a ratio of 4 or 128
/// written in plain decimal (no sign, no leading zero, no spaces). Throws
/// std::invalid_argument for anything else (the seed's parser returns None for malformed ids
/// and accepts any integer ratio; V4 has only 4 and 128).
constexpr group_id parse_group_id(std::string_view s) {
  if (s == "v4.swa_kv") return {group_kind::swa_kv, 0};
  if (s == "v4.c4a.indexer_compressor_state") return {group_kind::indexer_compressor_state, kCsaRatio};
  constexpr std::string_view prefix = "v4.c";
  constexpr std::string_view state_suffix = "a.compressor_state";
  constexpr std::string_view kv_suffix = "a.compressed_kv";
  if (s.size() > 64) detail::fail_group_id("malformed DeepSeek V4 group id (longer than 64 characters)", s);
  if (!s.starts_with(prefix))
    detail::fail_group_id("malformed DeepSeek V4 group id (must start with v4.swa_kv or v4.c<ratio>a.)", s);
  group_kind kind{};
  std::string_view rest = s.substr(prefix.size());
  if (rest.ends_with(state_suffix)) {
    kind = group_kind::compressor_state;
    rest.remove_suffix(state_suffix.size());
  } else if (rest.ends_with(kv_suffix)) {
    kind = group_kind::compressed_kv;
    rest.remove_suffix(kv_suffix.size());
  } else {
    detail::fail_group_id("malformed DeepSeek V4 group id (must end with a.compressor_state or a.compressed_kv)", s);
  }
  constexpr const char* bad_ratio = "malformed DeepSeek V4 group id (ratio must be 4 or 128 in plain decimal)";
  if (rest.empty() || rest.size() > 3 || rest[0] == '0') detail::fail_group_id(bad_ratio, s);
  int ratio = 0;
  for (char ch : rest) {
    if (ch < '0' || ch > '9') detail::fail_group_id(bad_ratio, s);
    ratio = ratio * 10 + (ch - '0');
  }
  require(ratio == kCsaRatio || ratio == kHcaRatio, "DeepSeek V4 group id ratio must be 4 or 128", {"ratio", ratio});
  return {kind, ratio};
}

/// The seed's family: sliding state, or full history.
enum class cache_family : std::uint8_t { state, history };
/// The seed's retention: a trailing window, or the whole context.
enum class cache_retention : std::uint8_t { sliding_window, full_history };

constexpr std::string_view to_string(cache_family f) { return f == cache_family::state ? "state" : "history"; }
constexpr std::string_view to_string(cache_retention r) {
  return r == cache_retention::sliding_window ? "sliding_window" : "full_history";
}

/// The row format of one pool.
enum class pool_format : std::uint8_t { fp8_ds_mla, indexer_fp8, indexer_mxfp4, compressor_state_fp32 };

/// "fp8_ds_mla", "indexer_fp8", "indexer_mxfp4" or "compressor_state_fp32".
constexpr std::string_view to_string(pool_format f) {
  switch (f) {
    case pool_format::fp8_ds_mla: return "fp8_ds_mla";
    case pool_format::indexer_fp8: return "indexer_fp8";
    case pool_format::indexer_mxfp4: return "indexer_mxfp4";
    case pool_format::compressor_state_fp32: return "compressor_state_fp32";
  }
  return "?";
}

/// One pool of a group in one layer: pages of `rows_per_page` rows of `row_bytes` each.
struct pool_spec {
  pool_format format = pool_format::fp8_ds_mla;
  std::int64_t rows_per_page = 0;
  std::int64_t row_bytes = 0;   ///< 584, 132, 68, 8,192, 4,096 or 2,048.
  std::int64_t page_bytes = 0;  ///< With the fp8_ds_mla padding to a multiple of 576 B.
};

/// The seed's `PagedCacheGroupSpec`, plus its pools and the layers that use it.
struct paged_cache_group_spec {
  group_id id{};
  cache_retention retention = cache_retention::sliding_window;
  std::int64_t rows_per_page = 0;          ///< Rows of one page (64, 4, 8 or 2).
  std::int64_t entry_stride_tokens = 0;    ///< Original tokens per row: 1, or the ratio.
  std::int64_t sliding_window_tokens = 0;  ///< Window for sliding groups; 0 = none (seed: None).
  /// Tokens an overlapping compressor keeps before a step of s tokens, where an engine grows the
  /// window with the verify width (tokenspeed: max(W, base + s)): the ratio (4) for the CSA
  /// compressor and indexer states, whose window (1 + overlap) x ratio exceeds the ratio; else 0.
  std::int64_t step_window_base_tokens = 0;
  cache_family family = cache_family::state;
  int num_pools = 0;                     ///< 2 for c4a.compressed_kv (KV + indexer keys), else 1.
  pool_spec pools[2]{};                  ///< A plain array: its members are callable in device code.
  int num_layers = 0;                    ///< Layers that keep a pool of this group.
  std::array<int, kMaxLayers> layers{};  ///< Their indices, ascending.

  [[nodiscard]] DSV4_HOST_DEVICE constexpr bool has_sliding_window() const {
    return retention == cache_retention::sliding_window;
  }
  /// Original tokens covered by one page: rows_per_page x entry_stride_tokens (256 for compressed).
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t page_size_tokens() const {
    return rows_per_page * entry_stride_tokens;
  }
  /// Bytes of one page of this group in one layer: the sum of its pools' pages.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t page_bytes() const {
    std::int64_t b = 0;
    for (int i = 0; i < num_pools; ++i) b += pools[static_cast<std::size_t>(i)].page_bytes;
    return b;
  }
  /// Bytes of one row of this group in one layer (all pools), without page padding.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t row_bytes() const {
    std::int64_t b = 0;
    for (int i = 0; i < num_pools; ++i) b += pools[static_cast<std::size_t>(i)].row_bytes;
    return b;
  }
};

/// At most 6 groups: swa, 2 x (state, compressed), indexer state.
inline constexpr int kMaxGroups = 6;

/// The groups of a model in the seed's order.
struct group_spec_list {
  int num_groups = 0;
  std::array<paged_cache_group_spec, kMaxGroups> groups{};

  [[nodiscard]] constexpr std::size_t size() const { return static_cast<std::size_t>(num_groups); }
  [[nodiscard]] constexpr const paged_cache_group_spec* begin() const { return groups.data(); }
  [[nodiscard]] constexpr const paged_cache_group_spec* end() const { return groups.data() + num_groups; }
  [[nodiscard]] constexpr const paged_cache_group_spec& operator[](int i) const {
    return groups[static_cast<std::size_t>(i)];
  }
  /// The group with this id; throws std::invalid_argument if the model has none.
  [[nodiscard]] constexpr const paged_cache_group_spec& at(group_id id) const {
    for (const paged_cache_group_spec& g : *this)
      if (g.id == id) return g;
    fail("the model has no such cache group", {"kind", static_cast<int>(id.kind)}, {"ratio", id.ratio});
  }
};

namespace detail {
constexpr pool_spec fp8_ds_mla_pool(const layer_cache_schema& l, std::int64_t rows) {
  const fp8_ds_mla_page_layout p = make_fp8_ds_mla_page_layout(l.kv_format, rows);
  return {pool_format::fp8_ds_mla, rows, l.kv_row_bytes(), p.page_bytes()};
}
constexpr pool_spec fp32_pool(std::int64_t row_bytes, std::int64_t rows) {
  return {pool_format::compressor_state_fp32, rows, row_bytes, checked_mul(rows, row_bytes)};
}
/// An empty compressor-state group (sliding, one fp32 pool, 4 or 8 rows per page by ratio).
constexpr paged_cache_group_spec compressor_state_group(group_id id) {
  paged_cache_group_spec g;
  g.id = id;
  g.retention = cache_retention::sliding_window;
  g.rows_per_page = compressor_state_rows_per_page(id.ratio);
  g.entry_stride_tokens = 1;
  g.family = cache_family::state;
  g.num_pools = 1;
  return g;
}
/// The step-window base of a layer's compressor states: its ratio if the compressor overlaps
/// windows (window (1 + overlap) x ratio > ratio), else 0.
constexpr std::int64_t step_window_base(const layer_cache_schema& l) {
  return l.compressor_state_window_tokens > l.compress_ratio ? l.compress_ratio : 0;
}
constexpr void add_layer(paged_cache_group_spec& g, int layer) {
  g.layers[static_cast<std::size_t>(g.num_layers++)] = layer;
}
}  // namespace detail

/// Whether pool `pool` of group `g` is sharded by decode context parallelism: the main-KV pool
/// (pool 0) of a full-history group. The indexer keys (pool 1) stay whole on every rank, since the
/// indexer scores every key, and so do the sliding windows and compressor states (tokenspeed PR
/// #1498, `DeepseekV4Recipe._declare_groups`: only the compressed KV gets `shard_count = dcp`).
DSV4_HOST_DEVICE constexpr bool dcp_sharded(const paged_cache_group_spec& g, int pool) {
  return !g.has_sliding_window() && pool == 0;
}

/// Builds the groups of a model from its layer schemas, which must use the 256-token logical
/// block (`build_model_schema(c, fmt, kCompressedLogicalBlockTokens)`): a compressed group's
/// rows per page is then the schema's `entries_per_block`. MTP layers are included only when
/// `include_mtp`. Throws std::invalid_argument for another block size or an empty schedule.
constexpr group_spec_list build_cache_specs(const model_cache_schema& schema, bool include_mtp = true) {
  require(schema.num_layers > 0, "schema has no layers");
  require(schema[0].block_size_tokens == kCompressedLogicalBlockTokens,
          "group specs need schemas built with the 256-token logical block",
          {"block_size_tokens", schema[0].block_size_tokens});
  group_spec_list out;
  const auto push = [&out]() -> paged_cache_group_spec& {
    return out.groups[static_cast<std::size_t>(out.num_groups++)];
  };

  // v4.swa_kv: every layer keeps the SWA window.
  paged_cache_group_spec& swa = push();
  swa.id = {group_kind::swa_kv, 0};
  swa.retention = cache_retention::sliding_window;
  swa.rows_per_page = kKernelBlockRows;
  swa.entry_stride_tokens = 1;
  swa.family = cache_family::state;
  swa.num_pools = 1;
  for (const layer_cache_schema& l : schema) {
    if (l.mtp && !include_mtp) continue;
    swa.sliding_window_tokens = l.swa_window_size;
    swa.pools[0] = detail::fp8_ds_mla_pool(l, kKernelBlockRows);
    detail::add_layer(swa, l.layer_idx);
  }
  require(swa.num_layers > 0, "no cached layers (all layers are MTP layers and MTP is excluded)");

  // v4.c4a.indexer_compressor_state comes last, after every ratio's pair of groups.
  paged_cache_group_spec idx = detail::compressor_state_group({group_kind::indexer_compressor_state, kCsaRatio});
  for (const int ratio : {kCsaRatio, kHcaRatio}) {  // ascending, as the seed's sorted set
    paged_cache_group_spec state = detail::compressor_state_group({group_kind::compressor_state, ratio});
    paged_cache_group_spec kv;
    kv.id = {group_kind::compressed_kv, ratio};
    kv.retention = cache_retention::full_history;
    kv.entry_stride_tokens = ratio;
    kv.family = cache_family::history;
    for (const layer_cache_schema& l : schema) {
      if (l.compress_ratio != ratio || (l.mtp && !include_mtp)) continue;
      state.sliding_window_tokens = l.compressor_state_window_tokens;
      state.step_window_base_tokens = detail::step_window_base(l);
      state.pools[0] = detail::fp32_pool(l.compressor_state_row_bytes, state.rows_per_page);
      detail::add_layer(state, l.layer_idx);
      kv.rows_per_page = l.entries_per_block;
      kv.pools[0] = detail::fp8_ds_mla_pool(l, l.entries_per_block);
      kv.num_pools = 1;
      if (l.indexer_head_dim > 0) {
        const indexer_page_layout ip = make_indexer_page_layout(l.indexer, l.entries_per_block);
        kv.pools[1] = {l.indexer.format == indexer_format::fp8 ? pool_format::indexer_fp8 : pool_format::indexer_mxfp4,
                       l.entries_per_block, l.indexer_row_bytes(), ip.page_bytes()};
        kv.num_pools = 2;
        idx.sliding_window_tokens = l.compressor_state_window_tokens;
        idx.step_window_base_tokens = detail::step_window_base(l);
        idx.pools[0] = detail::fp32_pool(l.indexer_compressor_state_row_bytes, idx.rows_per_page);
        detail::add_layer(idx, l.layer_idx);
      }
      detail::add_layer(kv, l.layer_idx);
    }
    if (state.num_layers == 0) continue;
    push() = state;
    push() = kv;
  }
  if (idx.num_layers > 0) push() = idx;
  return out;
}

/// Groups of `c` for indexer format `fmt`: `build_cache_specs(build_model_schema(c, fmt, 256))`.
constexpr group_spec_list build_cache_specs(const model_config& c, indexer_format fmt = indexer_format::fp8,
                                            bool include_mtp = true) {
  return build_cache_specs(build_model_schema(c, fmt, kCompressedLogicalBlockTokens), include_mtp);
}

}  // namespace dsv4::cache
