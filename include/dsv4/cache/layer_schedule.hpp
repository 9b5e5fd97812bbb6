// dsv4-cache: the per-layer attention schedule (SWA / CSA / HCA) of a DeepSeek V4 model.
//
// Source: HF `compress_ratios` (docs/facts.md section 1). Ratio 0 or 1: sliding-window-only
// attention (SWA). Ratio 4: compressed sparse attention with a lightning indexer (CSA).
// Ratio 128: heavily compressed attention (HCA). Every layer, whatever its kind, also keeps
// the SWA window. MTP layers follow the main layers and are marked.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "dsv4/cache/model.hpp"

namespace dsv4::cache {

/// The attention kind of one layer.
/// V4: swa, csa, hca. V3.2: mla (every layer; full-history latent rows + indexer keys).
enum class attention_kind : std::uint8_t { swa, csa, hca, mla };

/// "swa", "csa", "hca" or "mla".
constexpr std::string_view to_string(attention_kind k) {
  switch (k) {
    case attention_kind::swa: return "swa";
    case attention_kind::csa: return "csa";
    case attention_kind::hca: return "hca";
    case attention_kind::mla: return "mla";
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
  attention_kind kind = attention_kind::swa;  ///< SWA, CSA or HCA.
  int compress_ratio = 0;                     ///< 1 for SWA (0 and 1 are the same), 4 or 128.
  bool mtp = false;                           ///< true for the MTP (next-n predict) layers.
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

/// Builds the schedule of `c` (validated first): one entry per main and MTP layer.
/// Throws std::invalid_argument for an invalid config or a ratio other than 0, 1, 4, 128.
constexpr layer_schedule build_layer_schedule(const model_config& c) {
  validate(c);
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
