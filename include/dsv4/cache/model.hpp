// dsv4-cache: the model fields that drive the DeepSeek V4 KV-cache layout.
//
// Source: the published DeepSeek-V4-Flash and DeepSeek-V4-Pro `config.json` files (HF keys
// in the comments). Only what the cache needs is kept; everything is `constexpr`, so a
// preset or a hand-written config can be checked in a `static_assert`.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>

#include "dsv4/cache/platform.hpp"

namespace dsv4::cache {

/// Capacity of the per-layer arrays: main layers + MTP layers. Pro uses 62.
inline constexpr int kMaxLayers = 256;

/// Fixed-capacity model name, so a config stays a literal type (usable in constant expressions).
struct model_name {
  std::array<char, 64> chars{};

  constexpr model_name() = default;
  /// Copies `s`, truncated to at most 63 bytes on a UTF-8 character boundary (a multi-byte
  /// character is never cut in half).
  constexpr model_name(std::string_view s) {  // NOLINT(google-explicit-constructor)
    std::size_t n = s.size() < chars.size() - 1 ? s.size() : chars.size() - 1;
    if (n < s.size())  // cut: back up over UTF-8 continuation bytes (10xxxxxx)
      while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0U) == 0x80U) --n;
    for (std::size_t i = 0; i < n; ++i) chars[i] = s[i];
  }
  [[nodiscard]] constexpr std::string_view view() const {
    std::size_t n = 0;
    while (n < chars.size() && chars[n] != '\0') ++n;
    return {chars.data(), n};
  }
};

/// The DeepSeek model family, which decides what a config's fields and ratios mean.
enum class model_family : std::uint8_t { v4, v4_1, v3_2, any };

/// "v4", "v4.1", "v3.2" or "any" (the JSON spelling; `any` only for formats shared by all).
constexpr std::string_view to_string(model_family m) {
  switch (m) {
    case model_family::v4: return "v4";
    case model_family::v4_1: return "v4.1";
    case model_family::v3_2: return "v3.2";
    case model_family::any: return "any";
  }
  return "?";
}

/// A list of layer indices read from a config (V4.1 `kv_source_layer_ids`,
/// `index_source_layer_ids`), in config order.
struct layer_id_list {
  int count = 0;
  std::array<int, kMaxLayers> ids{};

  [[nodiscard]] constexpr const int* begin() const { return ids.data(); }
  [[nodiscard]] constexpr const int* end() const { return ids.data() + count; }
  [[nodiscard]] constexpr bool contains(int layer) const { return std::find(begin(), end(), layer) != end(); }
  /// Appends `layer`; fails if the list already holds `kMaxLayers` entries.
  constexpr void push_back(int layer) {
    require(count < kMaxLayers, "a layer id list holds at most 256 layers", {"count", count});
    ids[static_cast<std::size_t>(count++)] = layer;
  }
};

/// How the routed experts' weights are stored (config.json `expert_dtype`; vLLM reads a missing
/// key as fp4: vllm-project/vllm vllm/model_executor/models/deepseek_v4.py @ 023da1fc,
/// `DeepseekV4FP8Config.expert_dtype`).
enum class expert_storage : std::uint8_t {
  fp4,  ///< MXFP4: two E2M1 values per byte, one UE8M0 scale byte per 32 values along the input dim.
  fp8,  ///< E4M3 in 128 x 128 blocks like the dense linears (DeepSeek-V4-Flash-Base).
};

/// The dtype of the FP8 linears' block scales. vLLM: "FP4 checkpoints store FP8 linear scales as
/// e8m0fnu; FP8 expert checkpoints (Flash-Base) store them as float32"
/// (deepseek_v4.py @ 023da1fc, `DeepseekV4FP8Config.is_scale_e8m0`).
enum class block_scale_dtype : std::uint8_t { ue8m0, fp32 };

/// Why `model_arch::known` is false: what a weight count would have needed.
enum class arch_gap : std::uint8_t {
  none,            ///< the fields are known
  fields_missing,  ///< a config.json without `hidden_size` (a cache-only config, like tests/data/tiny-v4)
  v41_unmodelled,  ///< V4.1: vision tower, Engram tables and DSpark draft tensors not modelled
  v32_unmodelled,  ///< V3.2: the V3 tensor list (MLA, dense first layers) not modelled
};

/// The fields that fix the checkpoint's parameter tensors (HF keys in the comments). Read from
/// config.json (`config_json.hpp`) or set by the V4 presets; the cache layout does not use them.
struct model_arch {
  bool known = false;  ///< every field below was read (false: see `gap`)
  arch_gap gap = arch_gap::fields_missing;
  int hidden_size = 0;            ///< `hidden_size`
  int vocab_size = 0;             ///< `vocab_size`
  int num_attention_heads = 0;    ///< `num_attention_heads`
  int q_lora_rank = 0;            ///< `q_lora_rank`
  int o_lora_rank = 0;            ///< `o_lora_rank`
  int o_groups = 0;               ///< `o_groups`: grouped output projection wo_a
  int index_n_heads = 0;          ///< `index_n_heads`: lightning-indexer query heads
  int index_topk = 0;             ///< `index_topk`: compressed entries a query reads (runtime buffers)
  int n_routed_experts = 0;       ///< `n_routed_experts`
  int n_shared_experts = 0;       ///< `n_shared_experts`: the shared MLP is I x this wide
  int moe_intermediate_size = 0;  ///< `moe_intermediate_size` (I)
  int num_experts_per_tok = 0;    ///< `num_experts_per_tok` (the hash routers' table width)
  int num_hash_layers = 0;        ///< `num_hash_layers`: first layers routed by a token-id table
  int hc_mult = 0;                ///< `hc_mult`: hyper-connection streams
  int weight_block_rows = 128;    ///< `quantization_config.weight_block_size[0]`
  int weight_block_cols = 128;    ///< `quantization_config.weight_block_size[1]`
  block_scale_dtype scales = block_scale_dtype::ue8m0;
  expert_storage experts = expert_storage::fp4;
};

/// What the KV cache of a DeepSeek V4, V4.1 or V3.2 model depends on.
struct model_config {
  model_name name;
  /// `model_type`: deepseek_v4 (V4), deepseek_v41 (V4.1: KV-sharing owner layers, ratios 0, 1,
  /// 2) or deepseek_v32 (V3.2: every layer caches one MLA latent row and one indexer key per
  /// token, full history; no SWA, no compression).
  model_family family = model_family::v4;
  int num_hidden_layers = 0;         ///< `num_hidden_layers`: main transformer layers.
  int num_nextn_predict_layers = 0;  ///< `num_nextn_predict_layers`: MTP (V4.1: DSpark draft) layers after them.
  /// `head_dim`: latent KV width D with RoPE (one KV head, MQA). V3.2 has no such key: there
  /// it is `kv_lora_rank` + `qk_rope_head_dim` = 512 + 64 = 576, the cached latent row.
  int head_dim = 0;
  int qk_rope_head_dim = 0;                  ///< `qk_rope_head_dim`: RoPE part R of the KV row.
  int index_head_dim = 0;                    ///< `index_head_dim`: lightning-indexer key width.
  int sliding_window = 0;                    ///< `sliding_window`: SWA window in tokens.
  std::int64_t max_position_embeddings = 0;  ///< `max_position_embeddings`: longest context, tokens.
  /// `compress_ratios[0 .. num_layers())`. V4: 0 or 1 = SWA, 4 = CSA, 128 = HCA. V4.1: 0 = SWA,
  /// 1 = CSA1 (one global row per token), 2 = CSA2 (one per 2 tokens). Entries past the main +
  /// MTP layers (draft-model padding in some configs) are not stored.
  std::array<int, kMaxLayers> compress_ratios{};
  /// V4.1 `kv_source_layer_ids`: the owner layers, which keep global KV and index keys; every
  /// other ratio-1/2 layer reads the caches of the nearest owner at or before it with its ratio.
  layer_id_list kv_source_layer_ids{};
  /// V4.1 `index_source_layer_ids`: layers that compute their own top-k (owners and reindex layers).
  layer_id_list index_source_layer_ids{};
  /// V4.1 `dspark_block_size`: draft tokens DSpark proposes per step (0: none given). A decode step
  /// with DSpark verifies s = 1 + dspark_block_size tokens.
  int dspark_block_size = 0;
  /// The checkpoint's weight fields (`weights.hpp`); not part of the cache layout.
  model_arch arch{};

  /// Main layers + MTP layers: the layers whose caches this library lays out.
  [[nodiscard]] constexpr int num_layers() const { return num_hidden_layers + num_nextn_predict_layers; }
};

/// Checks the weight fields of `c.arch` (known only): every count > 0 (num_hash_layers >= 0,
/// n_shared_experts >= 0), o_groups dividing the heads, an even hidden size and intermediate
/// size (FP4 packs two values a byte) that are multiples of 32 for MXFP4 scales, positive
/// blocks. Throws std::invalid_argument naming the field.
constexpr void validate_arch(const model_config& c) {
  const model_arch& a = c.arch;
  for (const named_value v :
       {named_value{"hidden_size", a.hidden_size}, named_value{"vocab_size", a.vocab_size},
        named_value{"num_attention_heads", a.num_attention_heads}, named_value{"q_lora_rank", a.q_lora_rank},
        named_value{"o_lora_rank", a.o_lora_rank}, named_value{"o_groups", a.o_groups},
        named_value{"index_n_heads", a.index_n_heads}, named_value{"index_topk", a.index_topk},
        named_value{"n_routed_experts", a.n_routed_experts},
        named_value{"moe_intermediate_size", a.moe_intermediate_size},
        named_value{"num_experts_per_tok", a.num_experts_per_tok}, named_value{"hc_mult", a.hc_mult},
        named_value{"weight_block_size[0]", a.weight_block_rows},
        named_value{"weight_block_size[1]", a.weight_block_cols}})
    require(static_cast<std::int64_t>(v.bits) > 0, "a weight field must be > 0", v);
  require(a.n_shared_experts >= 0, "n_shared_experts must be >= 0", {"n_shared_experts", a.n_shared_experts});
  require(a.num_hash_layers >= 0 && a.num_hash_layers <= c.num_hidden_layers,
          "num_hash_layers must be in [0, num_hidden_layers]", {"num_hash_layers", a.num_hash_layers},
          {"num_hidden_layers", c.num_hidden_layers});
  require(a.num_attention_heads % a.o_groups == 0, "o_groups must divide num_attention_heads", {"o_groups", a.o_groups},
          {"num_attention_heads", a.num_attention_heads});
  require(a.num_experts_per_tok <= a.n_routed_experts, "num_experts_per_tok must be <= n_routed_experts",
          {"num_experts_per_tok", a.num_experts_per_tok}, {"n_routed_experts", a.n_routed_experts});
  if (a.experts == expert_storage::fp4) {
    require(a.hidden_size % 32 == 0, "MXFP4 experts need hidden_size to be a multiple of 32 (one scale per 32)",
            {"hidden_size", a.hidden_size});
    require(a.moe_intermediate_size % 32 == 0,
            "MXFP4 experts need moe_intermediate_size to be a multiple of 32 (one scale per 32)",
            {"moe_intermediate_size", a.moe_intermediate_size});
  }
}

/// Checks every field: positive dims, a layer count within `kMaxLayers`, head_dim > rope dim.
/// Ratios are checked by the layer schedule, which names the layer.
/// Throws std::invalid_argument naming the field and its value.
constexpr void validate(const model_config& c) {
  require(c.num_hidden_layers > 0, "num_hidden_layers must be > 0", {"num_hidden_layers", c.num_hidden_layers});
  require(c.num_nextn_predict_layers >= 0, "num_nextn_predict_layers must be >= 0",
          {"num_nextn_predict_layers", c.num_nextn_predict_layers});
  require(c.num_hidden_layers <= kMaxLayers && c.num_nextn_predict_layers <= kMaxLayers - c.num_hidden_layers,
          "num_hidden_layers + num_nextn_predict_layers must be <= 256", {"num_hidden_layers", c.num_hidden_layers},
          {"num_nextn_predict_layers", c.num_nextn_predict_layers});
  require(c.head_dim > 0, "head_dim must be > 0", {"head_dim", c.head_dim});
  require(c.qk_rope_head_dim > 0, "qk_rope_head_dim must be > 0", {"qk_rope_head_dim", c.qk_rope_head_dim});
  require(c.head_dim > c.qk_rope_head_dim, "head_dim must be larger than qk_rope_head_dim", {"head_dim", c.head_dim},
          {"qk_rope_head_dim", c.qk_rope_head_dim});
  require(c.index_head_dim > 0, "index_head_dim must be > 0", {"index_head_dim", c.index_head_dim});
  require(c.family == model_family::v4 || c.family == model_family::v4_1 || c.family == model_family::v3_2,
          "model family must be v4, v4.1 or v3.2", {"family", static_cast<int>(c.family)});
  require(c.dspark_block_size >= 0, "dspark_block_size must be >= 0", {"dspark_block_size", c.dspark_block_size});
  require(c.family == model_family::v4_1 || (c.kv_source_layer_ids.count == 0 && c.index_source_layer_ids.count == 0),
          "only a DeepSeek V4.1 model has kv_source_layer_ids / index_source_layer_ids",
          {"kv_source_layer_ids", c.kv_source_layer_ids.count},
          {"index_source_layer_ids", c.index_source_layer_ids.count});
  if (c.family != model_family::v3_2) {
    require(c.sliding_window > 0, "sliding_window must be > 0", {"sliding_window", c.sliding_window});
  } else {
    require(c.sliding_window == 0, "a V3.2 model has no sliding window", {"sliding_window", c.sliding_window});
  }
  require(c.max_position_embeddings > 0, "max_position_embeddings must be > 0",
          {"max_position_embeddings", c.max_position_embeddings});
  if (c.arch.known) validate_arch(c);
}

namespace detail {
/// Builds the published V4 ratio pattern: `head` ratios, then [4, 128] pairs, then the
/// last main layer's 4 and the MTP layer's 0.
constexpr model_config make_v4(std::string_view name, int layers, int first_ratio) {
  model_config c;
  c.name = model_name(name);
  c.num_hidden_layers = layers;
  c.num_nextn_predict_layers = 1;
  c.head_dim = 512;
  c.qk_rope_head_dim = 64;
  c.index_head_dim = 128;
  c.sliding_window = 128;
  c.max_position_embeddings = 1'048'576;
  c.compress_ratios[0] = first_ratio;
  c.compress_ratios[1] = first_ratio;
  for (std::size_t i = 2; i < static_cast<std::size_t>(layers); ++i) c.compress_ratios[i] = (i % 2 == 0) ? 4 : 128;
  c.compress_ratios[static_cast<std::size_t>(layers)] = 0;  // the MTP layer: SWA only
  return c;
}

/// The weight fields shared by the V4 presets (published config.json files, tests/data):
/// FP8 128 x 128 blocks with UE8M0 scales, MXFP4 experts, 3 hash-routed layers, vocab 129,280.
constexpr model_arch make_v4_arch(int hidden, int heads, int q_lora, int o_groups, int experts, int inter,
                                  int index_topk) {
  model_arch a;
  a.known = true;
  a.gap = arch_gap::none;
  a.hidden_size = hidden;
  a.vocab_size = 129'280;
  a.num_attention_heads = heads;
  a.q_lora_rank = q_lora;
  a.o_lora_rank = 1024;
  a.o_groups = o_groups;
  a.index_n_heads = 64;
  a.index_topk = index_topk;
  a.n_routed_experts = experts;
  a.n_shared_experts = 1;
  a.moe_intermediate_size = inter;
  a.num_experts_per_tok = 6;
  a.num_hash_layers = 3;
  a.hc_mult = 4;
  return a;
}

constexpr model_config with_arch(model_config c, const model_arch& a) {
  c.arch = a;
  return c;
}
}  // namespace detail

/// DeepSeek-V4-Flash: 43 layers + 1 MTP, ratios `[0,0] + [4,128]*20 + [4,0]`.
/// Weights: hidden 4,096, 64 heads, q_lora 1,024, o_groups 8, 256 experts of 2,048, index_topk 512.
inline constexpr model_config deepseek_v4_flash = detail::with_arch(
    detail::make_v4("DeepSeek-V4-Flash", 43, 0), detail::make_v4_arch(4096, 64, 1024, 8, 256, 2048, 512));
/// DeepSeek-V4-Pro: 61 layers + 1 MTP, ratios `[128,128] + [4,128]*29 + [4,0]`.
/// Weights: hidden 7,168, 128 heads, q_lora 1,536, o_groups 16, 384 experts of 3,072, index_topk 1,024.
inline constexpr model_config deepseek_v4_pro = detail::with_arch(
    detail::make_v4("DeepSeek-V4-Pro", 61, 128), detail::make_v4_arch(7168, 128, 1536, 16, 384, 3072, 1024));

namespace detail {
constexpr model_config make_v41_flash() {
  model_config c;
  c.name = model_name("DeepSeek-V4.1-Flash");
  c.family = model_family::v4_1;
  c.num_hidden_layers = 40;
  c.num_nextn_predict_layers = 3;  // DSpark draft layers, SWA only
  c.head_dim = 512;
  c.qk_rope_head_dim = 64;
  c.index_head_dim = 128;
  c.sliding_window = 128;
  c.max_position_embeddings = 1'048'576;
  for (std::size_t i = 2; i < 20; ++i) c.compress_ratios[i] = 2;   // CSA2 encoder layers
  for (std::size_t i = 20; i < 40; ++i) c.compress_ratios[i] = 1;  // CSA1 decoder layers
  for (const int l : {2, 8, 14, 20}) c.kv_source_layer_ids.push_back(l);
  for (const int l : {2, 8, 14, 20, 24, 28, 32, 36}) c.index_source_layer_ids.push_back(l);
  c.dspark_block_size = 5;
  c.arch.gap = arch_gap::v41_unmodelled;
  return c;
}

constexpr model_config make_v32() {
  model_config c;
  c.name = model_name("DeepSeek-V3.2");
  c.family = model_family::v3_2;
  c.num_hidden_layers = 61;
  c.num_nextn_predict_layers = 1;
  c.head_dim = 512 + 64;  // kv_lora_rank + qk_rope_head_dim
  c.qk_rope_head_dim = 64;
  c.index_head_dim = 128;
  c.sliding_window = 0;
  c.max_position_embeddings = 163'840;
  c.arch.gap = arch_gap::v32_unmodelled;
  return c;  // compress_ratios all 0: no compression
}
}  // namespace detail

/// DeepSeek-V4.1-Flash: 40 layers + 3 DSpark draft layers, ratios `[0,0] + [2]*18 + [1]*20 + [0]*3`,
/// owners (`kv_source_layer_ids`) 2, 8, 14, 20; index sources 2, 8, 14, 20, 24, 28, 32, 36;
/// `dspark_block_size` 5 (docs/layout-variants.md section 1.2: the released config.json).
inline constexpr model_config deepseek_v4_1_flash = detail::make_v41_flash();

/// DeepSeek-V3.2: 61 layers + 1 MTP, every layer MLA (latent 512 + RoPE 64) with an indexer key
/// of 128; max_position_embeddings 163,840 (docs/layout-variants.md section 3.1).
inline constexpr model_config deepseek_v3_2 = detail::make_v32();

}  // namespace dsv4::cache
