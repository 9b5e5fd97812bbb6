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
//
// DeepSeek V4.1 (docs/layout-variants.md 1.3, 1.10; tokenspeed `deepseek_v41_geometry.py`, which
// names them `v41.swa`, `v41.global_r2`, `v41.global_r1`, `v41.compressor_tail_r2`), default
// formats (`format_set::v41`):
//
//   v4.1.swa                   every layer    64 rows x 528 B (1 token/row)       = 33,792
//   v4.1.global_r2             owners 2, 8, 14  64 rows x 2 tokens: 64 x 288 B global KV (18,432)
//                                               + 64 x 68 B MXFP4 index keys (4,352)
//   v4.1.global_r1             owner 20       64 rows x 1 token, the same two pools
//   v4.1.compressor_state_r2   owners 2, 8, 14  2 rows x 4,096 B fp32 [kv | score] = 8,192
//
// Reuse, reindex and draft layers keep only their SWA window.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "dsv4/cache/formats/registry.hpp"
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
/// V3.2 adds mla_kv (latent rows) and indexer_k (indexer keys), both full history. V4.1 adds
/// v41_swa (every layer's window), v41_global (the owners' global KV + index keys, ratio 1 or 2)
/// and v41_compressor_state (the ratio-2 owners' fp32 state).
enum class group_kind : std::uint8_t {
  swa_kv,
  compressor_state,
  compressed_kv,
  indexer_compressor_state,
  mla_kv,
  indexer_k,
  v41_swa,
  v41_global,
  v41_compressor_state
};

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
    case group_kind::mla_kv: return "v3.2.mla_kv";
    case group_kind::indexer_k: return "v3.2.indexer_k";
    case group_kind::v41_swa: return "v4.1.swa";
    case group_kind::v41_global: return "v4.1.global_r" + std::to_string(id.ratio);
    case group_kind::v41_compressor_state: return "v4.1.compressor_state_r" + std::to_string(id.ratio);
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

/// Parses a group id. Accepts `v3.2.mla_kv`, `v3.2.indexer_k`, the V4.1 ids `v4.1.swa`,
/// `v4.1.global_r2`, `v4.1.global_r1`, `v4.1.compressor_state_r2`, and the seed's four V4 id
/// shapes with a ratio of 4 or 128 written in plain decimal (no sign, no leading zero, no
/// spaces). Throws std::invalid_argument for anything else (the seed's parser returns None for
/// malformed ids and accepts any integer ratio; V4 has only 4 and 128).
constexpr group_id parse_group_id(std::string_view s) {
  if (s == "v4.swa_kv") return {group_kind::swa_kv, 0};
  if (s == "v4.c4a.indexer_compressor_state") return {group_kind::indexer_compressor_state, kCsaRatio};
  if (s == "v3.2.mla_kv") return {group_kind::mla_kv, 0};
  if (s == "v3.2.indexer_k") return {group_kind::indexer_k, 0};
  if (s == "v4.1.swa") return {group_kind::v41_swa, 0};
  if (s == "v4.1.global_r2") return {group_kind::v41_global, 2};
  if (s == "v4.1.global_r1") return {group_kind::v41_global, 1};
  if (s == "v4.1.compressor_state_r2") return {group_kind::v41_compressor_state, 2};
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

/// What a prefix cache must do with a group's pages to resume a request at a hit.
enum class prefix_reuse : std::uint8_t {
  persist,  ///< Store them: nothing else rebuilds them (V4, V3.2, V4.1 global KV, index keys, ratio-2 state).
  replay,   ///< Rebuilt by bounded replay of the last window's tokens (V4.1 SWA: vLLM
            ///< --swa-bounded-replay, SGLang --enable-*-swa-bounded-replay; layout-variants 1.9).
};

constexpr std::string_view to_string(prefix_reuse r) { return r == prefix_reuse::persist ? "persist" : "replay"; }

constexpr std::string_view to_string(cache_family f) { return f == cache_family::state ? "state" : "history"; }
constexpr std::string_view to_string(cache_retention r) {
  return r == cache_retention::sliding_window ? "sliding_window" : "full_history";
}

/// One pool of a group in one layer: pages of `rows_per_page` rows of `row_bytes` each.
/// `format` is the registry format (fp32_state bound to the group's row bytes); row and page
/// bytes are the format's, kept beside it for the plan's arithmetic.
struct pool_spec {
  format_layout format{};
  std::int64_t rows_per_page = 0;
  std::int64_t row_bytes = 0;   ///< format.row_bytes: 584, 132, 68, 8,192, 4,096, 2,048, 656, ...
  std::int64_t page_bytes = 0;  ///< format.page_bytes(rows_per_page), padding included.
};

/// The registry formats a model's pools use. V4: the main-KV format of the SWA, CSA and HCA
/// groups and the CSA indexer-key format; V4.1: the SWA rows (`swa_kv`), the global KV of the
/// ratio-2 and ratio-1 owners and the index keys (`indexer`); V3.2: the latent rows and the
/// indexer keys. Compressor states are always `fp32_state`.
struct format_selection {
  format_layout swa_kv = formats::v4_fp8_ds_mla::layout;
  format_layout csa_kv = formats::v4_fp8_ds_mla::layout;
  format_layout hca_kv = formats::v4_fp8_ds_mla::layout;
  format_layout mla_kv = formats::v32_fp8_ds_mla::layout;
  format_layout global_r2 = formats::v41_fp4::layout;  ///< V4.1 v4.1.global_r2 pool 0
  format_layout global_r1 = formats::v41_fp4::layout;  ///< V4.1 v4.1.global_r1 pool 0
  format_layout indexer = formats::v4_indexer_fp8::layout;
};

/// A named set of V4.1 default formats (tokenspeed `V41_CACHE_FORMATS`, PR #1636).
enum class format_set : std::uint8_t {
  family_default,  ///< The family's defaults: `v41` for V4.1.
  v41,             ///< SWA `v4.1.fp8` (528), global `v4.1.fp4` (288), index `v4.indexer_mxfp4` (68), split pages:
                   ///< what vLLM (PRs #56893, #56935) and SGLang (`kv_layout.py`) ship on SM100.
  v4,              ///< The Hopper fallback: SWA and global `v4.fp8_ds_mla` (584), index `v4.indexer_fp8` (132).
};

/// "default", "v41" or "v4" (the planner's --format-set names; "default" is not a flag value).
constexpr std::string_view to_string(format_set s) {
  switch (s) {
    case format_set::family_default: return "default";
    case format_set::v41: return "v41";
    case format_set::v4: return "v4";
  }
  return "?";
}

/// The default formats of a family: V4 `v4.fp8_ds_mla` everywhere and `v4.indexer_fp8` or
/// `v4.indexer_mxfp4` keys; V3.2 `v3.2.fp8_ds_mla` and `v3.2.indexer_fp8` (V3.2 has no MXFP4
/// indexer: `indexer` must be fp8 there, else this fails); V4.1 the formats of `set` (`indexer`
/// is not used: the set decides the index keys). Fails for a V4.1 set on another family.
constexpr format_selection default_formats(model_family family, indexer_format indexer = indexer_format::fp8,
                                           format_set set = format_set::family_default) {
  format_selection s;
  require(set == format_set::family_default || family == model_family::v4_1,
          "a format set (--format-set v41|v4) is for DeepSeek V4.1 models only");
  if (family == model_family::v4_1) {
    if (set == format_set::v4) {  // the Hopper fallback: V4 rows everywhere
      s.swa_kv = s.global_r2 = s.global_r1 = formats::v4_fp8_ds_mla::layout;
      s.indexer = formats::v4_indexer_fp8::layout;
    } else {
      s.swa_kv = formats::v41_fp8::layout;
      s.indexer = formats::v4_indexer_mxfp4::layout;
    }
  } else if (family == model_family::v3_2) {
    require(indexer == indexer_format::fp8, "DeepSeek V3.2 indexer keys are FP8 only (v3.2.indexer_fp8)");
    s.indexer = formats::v32_indexer_fp8::layout;
  } else if (indexer == indexer_format::mxfp4) {
    s.indexer = formats::v4_indexer_mxfp4::layout;
  }
  return s;
}

/// Registry indices chosen over a family's defaults (-1: keep the default). `kv` sets every
/// main-KV pool (planner `--kv-format`); the per-group fields override it (`--format GROUP=NAME`);
/// `indexer` sets the indexer keys (`--indexer-format`).
struct format_overrides {
  int kv = -1;
  int swa_kv = -1;     ///< v4.swa_kv
  int csa_kv = -1;     ///< v4.c4a.compressed_kv pool 0
  int hca_kv = -1;     ///< v4.c128a.compressed_kv
  int mla_kv = -1;     ///< v3.2.mla_kv
  int global_r2 = -1;  ///< v4.1.global_r2 pool 0
  int global_r1 = -1;  ///< v4.1.global_r1 pool 0
  int indexer = -1;
  format_set set = format_set::family_default;  ///< V4.1: the defaults before the overrides (--format-set).
  friend constexpr bool operator==(const format_overrides&, const format_overrides&) = default;
};

/// `default_formats(family, indexer, o.set)` with `o` applied. Fails for an index outside the
/// registry, or a V4.1 format set on another family.
constexpr format_selection resolve_formats(model_family family, indexer_format indexer, const format_overrides& o) {
  format_selection s = default_formats(family, indexer, o.set);
  const auto pick = [](format_layout& slot, int i) {
    if (i < 0) return;
    require(i < static_cast<int>(kFormats.size()), "format index outside the registry", {"index", i});
    slot = kFormats[static_cast<std::size_t>(i)];
  };
  for (format_layout* f : {&s.swa_kv, &s.csa_kv, &s.hca_kv, &s.mla_kv, &s.global_r2, &s.global_r1}) pick(*f, o.kv);
  pick(s.swa_kv, o.swa_kv);
  pick(s.csa_kv, o.csa_kv);
  pick(s.hca_kv, o.hca_kv);
  pick(s.mla_kv, o.mla_kv);
  pick(s.global_r2, o.global_r2);
  pick(s.global_r1, o.global_r1);
  pick(s.indexer, o.indexer);
  return s;
}

/// Why `f` cannot hold a pool of `role` with `values` values per row (`rope` of them RoPE) for a
/// model of `family`, or nullptr if it can. A V4.1 model also takes V4 formats (the Hopper
/// fallback, tokenspeed PR #1636; vLLM's 584-B SWA rows off SM100). Used by the group builder
/// (a constant expression: a bad static_assert input does not compile) and by `check_formats`
/// (host, names both).
constexpr const char* format_mismatch(const format_layout& f, format_role role, model_family family,
                                      std::int64_t values, std::int64_t rope) {
  if (f.role != role) return "the row format stores another kind of row (main KV, indexer key or state)";
  const bool v4_on_v41 = family == model_family::v4_1 && f.model == model_family::v4;
  if (f.model != family && f.model != model_family::any && !v4_on_v41)
    return "the row format belongs to another model family";
  if (f.values != values) return "the row format stores another number of values per row";
  if (role == format_role::main_kv && f.rope.count != rope) return "the row format stores another RoPE width";
  return nullptr;
}

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
  prefix_reuse prefix = prefix_reuse::persist;  ///< What a prefix cache does with its pages.
  /// V4.1 ratio-2 compressor state: the engine keeps a fixed ring of rows per request, which the
  /// policy may size beyond the window (`allocation_policy::state_ring`, vLLM max(8, ...)).
  bool engine_state_ring = false;
  int num_pools = 0;                     ///< 2 for c4a.compressed_kv and the V4.1 global groups, else 1.
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

/// At most 6 groups: swa, 2 x (state, compressed), indexer state (V4.1: 4, V3.2: 2).
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

/// Host check of `formats` against model `c` before any group is built, with names: throws
/// std::invalid_argument("dsv4::cache: row format 'v4.indexer_mxfp4' cannot hold the indexer keys
/// of v4.c4a.compressed_kv: <reason> (format: 128 values, 0 RoPE; model: 96, 0)") for the first
/// pool whose format does not fit (`format_mismatch`). Pools the model does not have are not checked.
inline void check_formats(const model_config& c, const format_selection& formats) {
  const auto check = [&c](const format_layout& f, format_role role, const char* what, const char* group) {
    const bool keys = role == format_role::indexer_k;
    const std::int64_t values = keys ? c.index_head_dim : c.head_dim;
    const std::int64_t rope = keys ? 0 : c.qk_rope_head_dim;
    const char* why = format_mismatch(f, role, c.family, values, rope);
    if (why == nullptr) return;
    detail::raise_invalid_argument("dsv4::cache: row format '" + std::string(f.name) + "' (" +
                                   std::string(to_string(f.model)) + ", " + std::string(to_string(f.role)) +
                                   ") cannot hold the " + what + " of " + group + ": " + why +
                                   " (format: " + std::to_string(f.values) + " values, " +
                                   std::to_string(f.rope.count) + " RoPE; model " + std::string(to_string(c.family)) +
                                   ": " + std::to_string(values) + " values, " + std::to_string(rope) + " RoPE)");
  };
  if (c.family == model_family::v3_2) {
    check(formats.mla_kv, format_role::main_kv, "latent rows", "v3.2.mla_kv");
    check(formats.indexer, format_role::indexer_k, "indexer keys", "v3.2.indexer_k");
    return;
  }
  if (c.family == model_family::v4_1) {
    check(formats.swa_kv, format_role::main_kv, "SWA rows", "v4.1.swa");
    bool r2 = false;
    bool r1 = false;
    for (const int o : c.kv_source_layer_ids) {
      r2 = r2 || c.compress_ratios[static_cast<std::size_t>(o)] == 2;
      r1 = r1 || c.compress_ratios[static_cast<std::size_t>(o)] == 1;
    }
    if (r2) check(formats.global_r2, format_role::main_kv, "global KV rows", "v4.1.global_r2");
    if (r1) check(formats.global_r1, format_role::main_kv, "global KV rows", "v4.1.global_r1");
    if (r2 || r1)
      check(formats.indexer, format_role::indexer_k, "index keys", r2 ? "v4.1.global_r2" : "v4.1.global_r1");
    return;
  }
  bool csa = false;
  bool hca = false;
  for (int i = 0; i < c.num_layers(); ++i) {
    csa = csa || c.compress_ratios[static_cast<std::size_t>(i)] == kCsaRatio;
    hca = hca || c.compress_ratios[static_cast<std::size_t>(i)] == kHcaRatio;
  }
  check(formats.swa_kv, format_role::main_kv, "SWA rows", "v4.swa_kv");
  if (csa) check(formats.csa_kv, format_role::main_kv, "compressed rows", "v4.c4a.compressed_kv");
  if (csa) check(formats.indexer, format_role::indexer_k, "indexer keys", "v4.c4a.compressed_kv");
  if (hca) check(formats.hca_kv, format_role::main_kv, "compressed rows", "v4.c128a.compressed_kv");
}

namespace detail {
/// A pool of format `f` with `rows` rows per page; fails (naming the values) if `f` cannot hold
/// the rows (`format_mismatch`).
constexpr pool_spec format_pool(const format_layout& f, std::int64_t rows, format_role role, model_family family,
                                std::int64_t values, std::int64_t rope) {
  const char* why = format_mismatch(f, role, family, values, rope);
  if (why != nullptr) fail(why, {"format_values", f.values}, {"model_values", values}, {"model_rope", rope});
  return {f, rows, f.row_bytes, f.page_bytes(rows)};
}
constexpr pool_spec main_kv_pool(const format_layout& f, const layer_cache_schema& l, model_family family,
                                 std::int64_t rows) {
  return format_pool(f, rows, format_role::main_kv, family, l.entry_head_dim, l.rope_dim);
}
constexpr pool_spec fp32_pool(std::int64_t row_bytes, std::int64_t rows) {
  const format_layout f = bind_state_row_bytes(row_bytes);
  return {f, rows, row_bytes, f.page_bytes(rows)};
}
/// A group without layers: sliding groups are state, full-history groups history.
constexpr paged_cache_group_spec empty_group(group_id id, cache_retention retention, std::int64_t rows_per_page,
                                             std::int64_t tokens_per_row, int num_pools) {
  paged_cache_group_spec g;
  g.id = id;
  g.retention = retention;
  g.rows_per_page = rows_per_page;
  g.entry_stride_tokens = tokens_per_row;
  g.family = retention == cache_retention::sliding_window ? cache_family::state : cache_family::history;
  g.num_pools = num_pools;
  return g;
}
/// An empty compressor-state group (sliding, one fp32 pool, 4 or 8 rows per page by ratio).
constexpr paged_cache_group_spec compressor_state_group(group_id id) {
  return empty_group(id, cache_retention::sliding_window, compressor_state_rows_per_page(id.ratio), 1, 1);
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

namespace detail {
/// The V3.2 groups: `v3.2.mla_kv` (latent rows) and `v3.2.indexer_k` (indexer keys), both full
/// history with 64 rows of one token per page, every cached layer (the MTP layer too: it keeps
/// its own indexer cache, vLLM PR #25896, `deepseek_v32/nvidia/mtp.py`).
constexpr group_spec_list build_v32_specs(const model_cache_schema& schema, const format_selection& formats,
                                          bool include_mtp) {
  group_spec_list out;
  paged_cache_group_spec kv =
      empty_group({group_kind::mla_kv, 0}, cache_retention::full_history, kKernelBlockRows, 1, 1);
  paged_cache_group_spec keys = kv;
  keys.id = {group_kind::indexer_k, 0};
  for (const layer_cache_schema& l : schema) {
    if (l.mtp && !include_mtp) continue;
    kv.pools[0] = main_kv_pool(formats.mla_kv, l, model_family::v3_2, kKernelBlockRows);
    keys.pools[0] = format_pool(formats.indexer, kKernelBlockRows, format_role::indexer_k, model_family::v3_2,
                                l.indexer_head_dim, 0);
    add_layer(kv, l.layer_idx);
    add_layer(keys, l.layer_idx);
  }
  require(kv.num_layers > 0, "no cached layers (all layers are MTP layers and MTP is excluded)");
  out.groups[0] = kv;
  out.groups[1] = keys;
  out.num_groups = 2;
  return out;
}

/// The V4.1 groups (see the top of this file): `v4.1.swa` for every cached layer, then, from the
/// owners only, `v4.1.global_r2`, `v4.1.global_r1` (64 rows of 2 or 1 tokens: global KV + index
/// keys) and `v4.1.compressor_state_r2` (2 rows of 4,096 B, window 2 tokens). Groups without
/// layers are left out.
constexpr group_spec_list build_v41_specs(const model_cache_schema& schema, const format_selection& formats,
                                          bool include_mtp) {
  paged_cache_group_spec swa =
      empty_group({group_kind::v41_swa, 0}, cache_retention::sliding_window, kKernelBlockRows, 1, 1);
  swa.prefix = prefix_reuse::replay;
  // Ratio 2, then ratio 1: 64 rows of 2 or 1 tokens, global KV + index keys.
  std::array<paged_cache_group_spec, 2> global = {
      empty_group({group_kind::v41_global, 2}, cache_retention::full_history, kKernelBlockRows, 2, 2),
      empty_group({group_kind::v41_global, 1}, cache_retention::full_history, kKernelBlockRows, 1, 2)};
  paged_cache_group_spec state =
      empty_group({group_kind::v41_compressor_state, 2}, cache_retention::sliding_window, 2, 1, 1);
  state.engine_state_ring = true;
  for (const layer_cache_schema& l : schema) {
    if (l.mtp && !include_mtp) continue;
    swa.sliding_window_tokens = l.swa_window_size;
    swa.pools[0] = main_kv_pool(formats.swa_kv, l, model_family::v4_1, kKernelBlockRows);
    add_layer(swa, l.layer_idx);
    if (l.role != layer_role::owner) continue;
    paged_cache_group_spec& g = global[l.compress_ratio == 2 ? 0 : 1];
    g.pools[0] = main_kv_pool(l.compress_ratio == 2 ? formats.global_r2 : formats.global_r1, l, model_family::v4_1,
                              kKernelBlockRows);
    g.pools[1] = format_pool(formats.indexer, kKernelBlockRows, format_role::indexer_k, model_family::v4_1,
                             l.indexer_head_dim, 0);
    add_layer(g, l.layer_idx);
    if (l.compressor_state_row_bytes == 0) continue;  // ratio 1: no state
    state.sliding_window_tokens = l.compressor_state_window_tokens;
    state.pools[0] = fp32_pool(l.compressor_state_row_bytes, state.rows_per_page);
    add_layer(state, l.layer_idx);
  }
  require(swa.num_layers > 0, "no cached layers (all layers are MTP layers and MTP is excluded)");
  group_spec_list out;
  out.groups[static_cast<std::size_t>(out.num_groups++)] = swa;
  for (const paged_cache_group_spec& g : {global[0], global[1], state})
    if (g.num_layers > 0) out.groups[static_cast<std::size_t>(out.num_groups++)] = g;
  return out;
}
}  // namespace detail

/// Builds the groups of a model from its layer schemas, which must use the 256-token logical
/// block (`build_model_schema(c, fmt, kCompressedLogicalBlockTokens)`): a compressed group's
/// rows per page is then the schema's `entries_per_block`. Each pool takes its format from
/// `formats`. MTP layers are included only when `include_mtp`.
/// Throws std::invalid_argument for another block size, an empty schedule, or a format that
/// cannot hold the group's rows (`format_mismatch`: role, family, values or RoPE width differ).
constexpr group_spec_list build_cache_specs(const model_cache_schema& schema, const format_selection& formats,
                                            bool include_mtp = true) {
  require(schema.num_layers > 0, "schema has no layers");
  require(schema[0].block_size_tokens == kCompressedLogicalBlockTokens,
          "group specs need schemas built with the 256-token logical block",
          {"block_size_tokens", schema[0].block_size_tokens});
  if (schema[0].attn_type == attention_kind::mla) return detail::build_v32_specs(schema, formats, include_mtp);
  if (schema.family == model_family::v4_1) return detail::build_v41_specs(schema, formats, include_mtp);
  group_spec_list out;
  const auto push = [&out]() -> paged_cache_group_spec& {
    return out.groups[static_cast<std::size_t>(out.num_groups++)];
  };

  // v4.swa_kv: every layer keeps the SWA window.
  paged_cache_group_spec& swa = push();
  swa = detail::empty_group({group_kind::swa_kv, 0}, cache_retention::sliding_window, kKernelBlockRows, 1, 1);
  for (const layer_cache_schema& l : schema) {
    if (l.mtp && !include_mtp) continue;
    swa.sliding_window_tokens = l.swa_window_size;
    swa.pools[0] = detail::main_kv_pool(formats.swa_kv, l, model_family::v4, kKernelBlockRows);
    detail::add_layer(swa, l.layer_idx);
  }
  require(swa.num_layers > 0, "no cached layers (all layers are MTP layers and MTP is excluded)");

  // v4.c4a.indexer_compressor_state comes last, after every ratio's pair of groups.
  paged_cache_group_spec idx = detail::compressor_state_group({group_kind::indexer_compressor_state, kCsaRatio});
  for (const int ratio : {kCsaRatio, kHcaRatio}) {  // ascending, as the seed's sorted set
    paged_cache_group_spec state = detail::compressor_state_group({group_kind::compressor_state, ratio});
    paged_cache_group_spec kv = detail::empty_group({group_kind::compressed_kv, ratio}, cache_retention::full_history,
                                                    0, ratio, 1);  // rows per page from the schema
    const format_layout& kv_format = ratio == kCsaRatio ? formats.csa_kv : formats.hca_kv;
    for (const layer_cache_schema& l : schema) {
      if (l.compress_ratio != ratio || (l.mtp && !include_mtp)) continue;
      state.sliding_window_tokens = l.compressor_state_window_tokens;
      state.step_window_base_tokens = detail::step_window_base(l);
      state.pools[0] = detail::fp32_pool(l.compressor_state_row_bytes, state.rows_per_page);
      detail::add_layer(state, l.layer_idx);
      kv.rows_per_page = l.entries_per_block;
      kv.pools[0] = detail::main_kv_pool(kv_format, l, model_family::v4, l.entries_per_block);
      kv.num_pools = 1;
      if (l.indexer_head_dim > 0) {
        kv.pools[1] = detail::format_pool(formats.indexer, l.entries_per_block, format_role::indexer_k,
                                          model_family::v4, l.indexer_head_dim, 0);
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

/// `build_cache_specs(schema, default_formats(family, indexer))`, with the indexer format the
/// schema was built with.
constexpr group_spec_list build_cache_specs(const model_cache_schema& schema, bool include_mtp = true) {
  require(schema.num_layers > 0, "schema has no layers");
  indexer_format fmt = indexer_format::fp8;
  for (const layer_cache_schema& l : schema)
    if (l.indexer_head_dim > 0) fmt = l.indexer.format;
  return build_cache_specs(schema, default_formats(schema.family, fmt), include_mtp);
}

/// Groups of `c` with the formats of `formats`: `build_cache_specs(build_model_schema(c, fp8, 256), formats)`.
constexpr group_spec_list build_cache_specs(const model_config& c, const format_selection& formats,
                                            bool include_mtp = true) {
  const indexer_format seed =
      formats.indexer.data.type == element_type::e2m1 ? indexer_format::mxfp4 : indexer_format::fp8;
  return build_cache_specs(build_model_schema(c, seed, kCompressedLogicalBlockTokens), formats, include_mtp);
}

/// Groups of `c` for indexer format `fmt`, every other pool in its family's default format.
constexpr group_spec_list build_cache_specs(const model_config& c, indexer_format fmt = indexer_format::fp8,
                                            bool include_mtp = true) {
  return build_cache_specs(c, default_formats(c.family, fmt), include_mtp);
}

}  // namespace dsv4::cache
