// dsv4-cache: the per-layer attention schedule of a DeepSeek V4, V4.1 or V3.2 model.
//
// Source: HF `compress_ratios` (docs/facts.md section 1). A ratio's meaning depends on the family.
// V4: 0 or 1 = sliding-window-only attention (SWA), 4 = compressed sparse attention with a
// lightning indexer (CSA), 128 = heavily compressed attention (HCA). V4.1 (docs/layout-variants.md
// section 1.3): 0 = SWA, 2 = CSA2 (one global row per 2 tokens, no overlap), 1 = CSA1 (one
// global row per token); only the owner layers (`kv_source_layer_ids`) keep global KV and index
// keys, every other ratio-1/2 layer reads its owner's: "reuse", or "reindex" when it computes its
// own top-k over them (`index_source_layer_ids`). Every layer, whatever its kind, keeps the SWA
// window. MTP layers (V4.1: DSpark draft layers) follow the main layers and are marked.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "dsv4/cache/model.hpp"

namespace dsv4::cache {

/// The attention kind of one layer.
/// V4: swa, csa, hca. V4.1: swa, csa2 (ratio 2), csa1 (ratio 1). V3.2: mla (every layer;
/// full-history latent rows + indexer keys).
enum class attention_kind : std::uint8_t { swa, csa, hca, mla, csa2, csa1 };

/// "swa", "csa", "hca", "mla", "csa2" or "csa1".
constexpr std::string_view to_string(attention_kind k) {
  switch (k) {
    case attention_kind::swa: return "swa";
    case attention_kind::csa: return "csa";
    case attention_kind::hca: return "hca";
    case attention_kind::mla: return "mla";
    case attention_kind::csa2: return "csa2";
    case attention_kind::csa1: return "csa1";
  }
  return "?";
}

/// What a layer caches of its own (V4.1 KV sharing; V4 and V3.2 layers are all `none`).
enum class layer_role : std::uint8_t {
  none,     ///< V4 / V3.2 layer, or a V4.1 SWA-only main layer: owns its caches, shares none.
  owner,    ///< V4.1 `kv_source_layer_ids`: keeps global KV, index keys and (ratio 2) compressor state.
  reuse,    ///< V4.1 ratio-1/2 layer reading its owner's global KV and top-k: caches only its SWA window.
  reindex,  ///< V4.1 `index_source_layer_ids` non-owner: its own top-k over its owner's keys; SWA only.
  draft,    ///< V4.1 DSpark draft layer (after the main layers): SWA only.
};

/// "none", "owner", "reuse", "reindex" or "draft" (the JSON spelling).
constexpr std::string_view to_string(layer_role r) {
  switch (r) {
    case layer_role::none: return "none";
    case layer_role::owner: return "owner";
    case layer_role::reuse: return "reuse";
    case layer_role::reindex: return "reindex";
    case layer_role::draft: return "draft";
  }
  return "?";
}

/// Compression ratio of CSA layers (one compressed entry per 4 tokens).
inline constexpr int kCsaRatio = 4;
/// Compression ratio of HCA layers (one compressed entry per 128 tokens).
inline constexpr int kHcaRatio = 128;

/// Maps a layer's compress ratio to its attention kind: 0|1 -> SWA, 4 -> CSA, 128 -> HCA.
/// Throws std::invalid_argument naming the layer and the ratio for anything else.
constexpr attention_kind attention_from_ratio(int layer, int ratio) {
  switch (ratio) {
    case 0:
    case 1: return attention_kind::swa;
    case kCsaRatio: return attention_kind::csa;
    case kHcaRatio: return attention_kind::hca;
    default: break;
  }
  fail("compress ratio must be 0 or 1 (SWA), 4 (CSA) or 128 (HCA)", {"layer", layer}, {"compress_ratio", ratio});
}

/// One layer of the schedule.
struct layer_spec {
  int index = 0;                              ///< 0-based; MTP layers follow the main layers.
  attention_kind kind = attention_kind::swa;  ///< SWA, CSA, HCA, MLA, CSA2 or CSA1.
  int compress_ratio = 0;                     ///< 1 for SWA (one window row per token), else 4, 128, 2 or 1.
  bool mtp = false;                           ///< true for the MTP (next-n predict, DSpark draft) layers.
  layer_role role = layer_role::none;         ///< V4.1 KV sharing (see `layer_role`).
  int kv_owner = -1;                          ///< V4.1 ratio-1/2 layers: the owner whose caches it reads.
};

/// All cached layers of a model, main layers first, then MTP layers.
struct layer_schedule {
  int num_layers = 0;
  std::array<layer_spec, kMaxLayers> layers{};

  [[nodiscard]] constexpr const layer_spec* begin() const { return layers.data(); }
  [[nodiscard]] constexpr const layer_spec* end() const { return layers.data() + num_layers; }
  [[nodiscard]] constexpr const layer_spec& operator[](int i) const { return layers[static_cast<std::size_t>(i)]; }

  /// Number of layers of kind `k`; MTP layers count only when `include_mtp`.
  [[nodiscard]] constexpr int count(attention_kind k, bool include_mtp = true) const {
    int n = 0;
    for (const layer_spec& l : *this) n += (l.kind == k && (include_mtp || !l.mtp)) ? 1 : 0;
    return n;
  }
};

namespace detail {
/// Checks a V4.1 `kv_source_layer_ids` / `index_source_layer_ids` entry: a main layer with a
/// ratio of 1 or 2, strictly after the previous entry.
constexpr void check_v41_source(const model_config& c, const char* field, int layer, int previous) {
  require(layer >= 0 && layer < c.num_hidden_layers,
          "a V4.1 source layer must be a main layer (in [0, num_hidden_layers))", {field, layer},
          {"num_hidden_layers", c.num_hidden_layers});
  require(layer > previous, "V4.1 source layer ids must be strictly ascending (no duplicates)", {field, layer},
          {"previous", previous});
  const int ratio = c.compress_ratios[static_cast<std::size_t>(layer)];
  require(ratio == 1 || ratio == 2, "a V4.1 source layer must be a ratio-1 or ratio-2 layer", {field, layer},
          {"compress_ratio", ratio});
}

/// The V4.1 schedule (docs/layout-variants.md 1.3; ROCm/ATOM `deepseek_v41/config.py` validator):
/// ratios 0, 1, 2 only, draft entries 0; each ratio-1/2 layer's owner is the nearest
/// `kv_source_layer_ids` entry at or before it with the same ratio (vLLM takes the nearest source
/// of any ratio: the same owners for the released config, section 7).
constexpr layer_schedule build_v41_schedule(const model_config& c) {
  layer_schedule s;
  s.num_layers = c.num_layers();
  int previous = -1;
  for (const int l : c.kv_source_layer_ids) {
    check_v41_source(c, "kv_source_layer_ids", l, previous);
    previous = l;
  }
  previous = -1;
  for (const int l : c.index_source_layer_ids) {
    check_v41_source(c, "index_source_layer_ids", l, previous);
    previous = l;
  }
  for (int i = 0; i < s.num_layers; ++i) {
    const int ratio = c.compress_ratios[static_cast<std::size_t>(i)];
    const bool draft = i >= c.num_hidden_layers;
    require(ratio == 0 || ratio == 1 || ratio == 2, "a DeepSeek V4.1 compress ratio must be 0 (SWA), 1 or 2",
            {"layer", i}, {"compress_ratio", ratio});
    require(!draft || ratio == 0, "DeepSeek V4.1 draft (DSpark) layers are SWA only: their compress ratio must be 0",
            {"layer", i}, {"compress_ratio", ratio});
    layer_spec& l = s.layers[static_cast<std::size_t>(i)];
    l.index = i;
    l.mtp = draft;
    l.compress_ratio = ratio == 0 ? 1 : ratio;
    l.kind = ratio == 0 ? attention_kind::swa : ratio == 2 ? attention_kind::csa2 : attention_kind::csa1;
    l.role = draft ? layer_role::draft : layer_role::none;
    if (ratio == 0) continue;
    for (const int o : c.kv_source_layer_ids)
      if (o <= i && c.compress_ratios[static_cast<std::size_t>(o)] == ratio) l.kv_owner = o;
    require(l.kv_owner >= 0,
            "a V4.1 ratio-1/2 layer needs an owner: a kv_source_layer_ids entry at or before it with its ratio",
            {"layer", i}, {"compress_ratio", ratio});
    l.role = l.kv_owner == i                        ? layer_role::owner
             : c.index_source_layer_ids.contains(i) ? layer_role::reindex
                                                    : layer_role::reuse;
  }
  return s;
}
}  // namespace detail

/// Builds the schedule of `c` (validated first): one entry per main and MTP layer.
/// Throws std::invalid_argument for an invalid config, a V4 ratio other than 0, 1, 4, 128, a V3.2
/// ratio other than 0, or a V4.1 config breaking its rules (ratios 0, 1, 2; draft entries 0;
/// source layers main ratio-1/2 layers, ascending; every ratio-1/2 layer has an owner), naming the
/// field and value.
constexpr layer_schedule build_layer_schedule(const model_config& c) {
  validate(c);
  if (c.family == model_family::v4_1) return detail::build_v41_schedule(c);
  layer_schedule s;
  s.num_layers = c.num_layers();
  for (int i = 0; i < s.num_layers; ++i) {
    if (c.family == model_family::v3_2) {  // V3.2: no compression, every layer MLA
      require(c.compress_ratios[static_cast<std::size_t>(i)] == 0, "a V3.2 model has no compress ratios", {"layer", i},
              {"compress_ratio", c.compress_ratios[static_cast<std::size_t>(i)]});
      s.layers[static_cast<std::size_t>(i)] = {i, attention_kind::mla, 1, i >= c.num_hidden_layers};
      continue;
    }
    const int ratio = c.compress_ratios[static_cast<std::size_t>(i)];
    const attention_kind k = attention_from_ratio(i, ratio);
    s.layers[static_cast<std::size_t>(i)] = {i, k, k == attention_kind::swa ? 1 : ratio, i >= c.num_hidden_layers};
  }
  return s;
}

}  // namespace dsv4::cache
