// dsv4-cache: loading a DeepSeek V4 HF `config.json` into a `model_config` (nlohmann_json).
//
// Kept out of the core so that the layout headers need no third-party library. Reads:
//   model_type                 "deepseek_v4", or "deepseek_v32" (DeepSeek V3.2, see below)
//   num_hidden_layers          > 0
//   num_nextn_predict_layers   >= 0, optional (0 when absent: a config without MTP layers)
//   head_dim, index_head_dim, sliding_window, max_position_embeddings   > 0
//   qk_rope_head_dim           > 0; when absent, head_dim x partial_rotary_factor (newer schema)
//   compress_ratios            ints, one per layer: num_hidden_layers + num_nextn_predict_layers;
//                              extra trailing entries must be 0 (draft-model layers; ignored)
//   or layer_types + compress_rates (newer schema): one of "sliding_attention",
//     "compressed_sparse_attention", "heavily_compressed_attention" per main layer, the rates
//     of the two compressed types in the `compress_rates` object; MTP layers not listed are SWA
//     (the list has num_hidden_layers entries, or one per main and MTP layer).
// Every missing required key is named at once ("missing keys 'head_dim', 'sliding_window'").
// A key missing at the top level is also looked up in a `text_config` object.
// deepseek_v32 reads num_hidden_layers, num_nextn_predict_layers, kv_lora_rank (> 0),
// qk_rope_head_dim, index_head_dim and max_position_embeddings; the cached latent row is
// head_dim = kv_lora_rank + qk_rope_head_dim (576); V3.2 has no sliding window and no ratios.
// deepseek_v41 (DeepSeek V4.1; the text fields at the top level or in `text_config`, whose
// model_type is deepseek_v41_text) reads the V4 dims, compress_ratios (0, 1 or 2; the draft
// layers' entries 0), kv_source_layer_ids (the owner layers), index_source_layer_ids (optional:
// the owners when absent), num_nextn_predict_layers (the DSpark draft layers) and
// dspark_block_size (optional, 0 when absent); docs/layout-variants.md 1.2-1.3.
//
// Weight fields (`model_arch`, deepseek_v4 only; weights.hpp counts the checkpoint from them): when
// `hidden_size` is present, every one of vocab_size, num_attention_heads, q_lora_rank,
// o_lora_rank, o_groups, index_n_heads, index_topk, n_routed_experts, n_shared_experts, moe_intermediate_size,
// num_experts_per_tok, hc_mult and quantization_config (quant_method "fp8", weight_block_size
// [rows, cols], scale_fmt "ue8m0" when given) is required; num_hash_layers is 0 and expert_dtype
// "fp4" when absent (vLLM's reading). Without `hidden_size` the config is a cache-only config
// and a weight count is refused later, naming why.
//
// Refused, naming the key: a key given twice in one object (the JSON parser would keep the last
// silently); keys this library recognises but whose value it cannot honour:
// num_key_value_heads other than 1 (V4 and V4.1 cache one latent row per token: MQA),
// tie_word_embeddings true and attention_bias true (the V4 checkpoint has its own head.weight
// and no projection biases, so the weight count would be wrong).
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dsv4/cache/layer_schedule.hpp"
#include "dsv4/cache/row_format.hpp"

namespace dsv4::cache {

/// A config.json that cannot be used: unreadable, malformed, not V4, or a bad key. The
/// message names the file (when known), the key and the rule.
class config_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {

inline const nlohmann::json* find_key(const nlohmann::json& root, const char* key) {
  if (auto it = root.find(key); it != root.end()) return &*it;
  if (auto tc = root.find("text_config"); tc != root.end() && tc->is_object())
    if (auto it = tc->find(key); it != tc->end()) return &*it;
  return nullptr;
}

[[noreturn]] inline void config_fail(const std::string& msg) { throw config_error("config.json: " + msg); }

/// A JSON value as text for an error message: at most 64 characters, then "...".
inline std::string quote(const nlohmann::json& v) {
  std::string t = v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  if (t.size() > 64) t = t.substr(0, 61) + "...";
  return t;
}

/// The message of a core error without its "dsv4::cache: " prefix (it is re-prefixed here).
inline std::string core_message(const std::invalid_argument& e) {
  std::string_view m = e.what();
  if (m.starts_with("dsv4::cache: ")) m.remove_prefix(13);
  return std::string(m);
}

/// The largest config.json read: real ones are about 2 KB.
inline constexpr std::uintmax_t kMaxConfigBytes = std::uintmax_t{1} << 22;  // 4 MiB

/// An integer key within [min, max]. Integral floats (512.0) are accepted; anything else fails.
inline std::int64_t int_value(const nlohmann::json& v, const std::string& key, std::int64_t min, std::int64_t max) {
  std::int64_t out = 0;
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))
      config_fail("key '" + key + "' must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                  quote(v));
    out = v.get<std::int64_t>();
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && std::trunc(v.get<double>()) == v.get<double>() &&
             std::fabs(v.get<double>()) < 9.0e15) {
    out = static_cast<std::int64_t>(v.get<double>());
  } else {
    config_fail("key '" + key + "' must be an integer, got " + quote(v));
  }
  if (out < min || out > max)
    config_fail("key '" + key + "' must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                std::to_string(out));
  return out;
}

inline std::int64_t required_int(const nlohmann::json& root, const char* key, std::int64_t min, std::int64_t max) {
  const nlohmann::json* v = find_key(root, key);
  if (v == nullptr) config_fail(std::string("missing key '") + key + "'");
  return int_value(*v, key, min, max);
}

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

inline int ratio_of_layer_type(const nlohmann::json& types, const nlohmann::json* rates, std::size_t i) {
  const nlohmann::json& t = types[i];
  const std::string key = "layer_types[" + std::to_string(i) + "]";
  if (!t.is_string()) config_fail("key '" + key + "' must be a string, got " + quote(t));
  const auto& name = t.get_ref<const std::string&>();
  if (name == "sliding_attention") return 0;
  if (name != "compressed_sparse_attention" && name != "heavily_compressed_attention")
    config_fail("key '" + key + "' must be sliding_attention, compressed_sparse_attention or " +
                "heavily_compressed_attention, got " + quote(t));
  if (rates == nullptr || !rates->is_object())
    config_fail("key 'compress_rates' must be an object giving the rate of " + name);
  const auto it = rates->find(name);
  if (it == rates->end()) config_fail("missing key 'compress_rates." + name + "'");
  // Each type has one rate in V4: a contradicting rate would silently turn the layer into
  // another kind (0 makes a CSA layer SWA; 4 and 128 swapped swap CSA and HCA).
  const std::int64_t expected = name == "compressed_sparse_attention" ? kCsaRatio : kHcaRatio;
  const std::int64_t rate = int_value(*it, "compress_rates." + name, 0, kIntMax);
  if (rate != expected)
    config_fail("key 'compress_rates." + name + "' must be " + std::to_string(expected) + " in DeepSeek V4, got " +
                std::to_string(rate));
  return static_cast<int>(rate);
}

}  // namespace detail

namespace detail {
/// The deepseek_v32 fields of `root` into `c` (named, family v3.2). Errors as below.
/// Fails naming every key of `keys` that `root` lacks (each entry: alternatives, any one present
/// will do; an empty entry requires nothing), all at once: "missing keys 'a', 'b' (or 'c')".
inline void require_keys(const nlohmann::json& root, std::initializer_list<std::initializer_list<const char*>> keys) {
  std::string missing;
  int count = 0;
  for (const auto& alternatives : keys) {
    bool found = alternatives.size() == 0;  // an empty entry requires nothing
    for (const char* k : alternatives) found = found || find_key(root, k) != nullptr;
    if (found) continue;
    if (count++ > 0) missing.append(", ");
    bool first = true;
    for (const char* k : alternatives) {
      missing.append(first ? "'" : " (or '").append(k).append(first ? "'" : "')");
      first = false;
    }
  }
  if (count == 1) config_fail("missing key " + missing);
  if (count > 1) config_fail("missing keys " + missing);
}

inline model_config v32_config_from_json(const nlohmann::json& root, model_config c) {
  require_keys(
      root,
      {{"num_hidden_layers"}, {"kv_lora_rank"}, {"qk_rope_head_dim"}, {"index_head_dim"}, {"max_position_embeddings"}});
  c.family = model_family::v3_2;
  c.num_hidden_layers = static_cast<int>(required_int(root, "num_hidden_layers", 1, kMaxLayers));
  const nlohmann::json* mtp = find_key(root, "num_nextn_predict_layers");
  c.num_nextn_predict_layers =
      mtp ? static_cast<int>(int_value(*mtp, "num_nextn_predict_layers", 0, kMaxLayers - c.num_hidden_layers)) : 0;
  const std::int64_t rank = required_int(root, "kv_lora_rank", 1, kIntMax / 2);
  c.qk_rope_head_dim = static_cast<int>(required_int(root, "qk_rope_head_dim", 1, kIntMax / 2));
  c.head_dim = static_cast<int>(rank + c.qk_rope_head_dim);
  c.index_head_dim = static_cast<int>(required_int(root, "index_head_dim", 1, kIntMax));
  c.sliding_window = 0;
  c.max_position_embeddings =
      required_int(root, "max_position_embeddings", 1, std::numeric_limits<std::int64_t>::max());
  try {
    (void)build_layer_schedule(c);  // validates every field
  } catch (const std::invalid_argument& e) {
    config_fail(core_message(e));
  }
  return c;
}
}  // namespace detail

namespace detail {
/// A list of layer ids `key` (ints in [0, kMaxLayers)) into `out`.
inline void layer_ids(const nlohmann::json& v, const char* key, layer_id_list& out) {
  if (!v.is_array()) config_fail(std::string("key '") + key + "' must be an array of layer ids, got " + quote(v));
  if (v.size() > static_cast<std::size_t>(kMaxLayers))
    config_fail(std::string("key '") + key + "' has " + std::to_string(v.size()) + " entries, more than 256");
  for (std::size_t i = 0; i < v.size(); ++i)
    out.push_back(
        static_cast<int>(int_value(v[i], std::string(key) + "[" + std::to_string(i) + "]", 0, kMaxLayers - 1)));
}

/// `compress_ratios` (or V4's newer `layer_types` + `compress_rates`) of `root` into `c`, one
/// per main and MTP layer; extra trailing entries are ignored. V4.1 reads compress_ratios only.
inline void ratios_from_json(const nlohmann::json& root, model_config& c, bool v41) {
  const auto layers = static_cast<std::size_t>(c.num_layers());
  if (const nlohmann::json* ratios = find_key(root, "compress_ratios")) {
    if (!ratios->is_array()) config_fail("key 'compress_ratios' must be an array, got " + quote(*ratios));
    if (ratios->size() < layers)
      config_fail("key 'compress_ratios' has " + std::to_string(ratios->size()) +
                  " entries, fewer than num_hidden_layers + num_nextn_predict_layers = " + std::to_string(layers));
    for (std::size_t i = 0; i < layers; ++i)
      c.compress_ratios[i] =
          static_cast<int>(int_value((*ratios)[i], "compress_ratios[" + std::to_string(i) + "]", 0, kIntMax));
    // Longer lists: only the known form, trailing zero entries (a draft model's layers).
    for (std::size_t i = layers; i < ratios->size(); ++i)
      if (!((*ratios)[i].is_number_integer() && (*ratios)[i].get<std::int64_t>() == 0))
        config_fail("key 'compress_ratios' has " + std::to_string(ratios->size()) +
                    " entries, more than num_hidden_layers + num_nextn_predict_layers = " + std::to_string(layers) +
                    ", and entry " + std::to_string(i) + " is " + quote((*ratios)[i]) +
                    ": entries past the layers must be 0 (draft layers)");
  } else if (const nlohmann::json* types = v41 ? nullptr : find_key(root, "layer_types")) {
    if (!types->is_array()) config_fail("key 'layer_types' must be an array, got " + quote(*types));
    const auto main_layers = static_cast<std::size_t>(c.num_hidden_layers);
    if (types->size() < main_layers)
      config_fail("key 'layer_types' has " + std::to_string(types->size()) +
                  " entries, fewer than num_hidden_layers = " + std::to_string(main_layers));
    if (types->size() != main_layers && types->size() != layers)
      config_fail("key 'layer_types' has " + std::to_string(types->size()) + " entries: it lists num_hidden_layers = " +
                  std::to_string(main_layers) + " layers, or with the MTP layers " + std::to_string(layers));
    const nlohmann::json* rates = find_key(root, "compress_rates");
    for (std::size_t i = 0; i < layers; ++i)
      c.compress_ratios[i] = i < types->size() ? ratio_of_layer_type(*types, rates, i) : 0;
  } else {
    config_fail(v41 ? "missing key 'compress_ratios'"
                    : "missing key 'compress_ratios' (or 'layer_types' with 'compress_rates')");
  }
}

/// The V4.1 keys of `root` into `c`: kv_source_layer_ids (required), index_source_layer_ids (the
/// owners when absent), dspark_block_size (0 when absent). The schedule checks their rules.
inline void v41_sources_from_json(const nlohmann::json& root, model_config& c) {
  const nlohmann::json* kv = find_key(root, "kv_source_layer_ids");
  if (kv == nullptr) config_fail("missing key 'kv_source_layer_ids' (the V4.1 owner layers)");
  layer_ids(*kv, "kv_source_layer_ids", c.kv_source_layer_ids);
  if (const nlohmann::json* idx = find_key(root, "index_source_layer_ids"))
    layer_ids(*idx, "index_source_layer_ids", c.index_source_layer_ids);
  else
    c.index_source_layer_ids = c.kv_source_layer_ids;
  if (const nlohmann::json* d = find_key(root, "dspark_block_size"))
    c.dspark_block_size = static_cast<int>(int_value(*d, "dspark_block_size", 0, kIntMax));
}
}  // namespace detail

namespace detail {
/// Refuses the keys this library recognises but cannot honour (see the file comment).
inline void refuse_ignored_keys(const nlohmann::json& root, bool v32) {
  if (const nlohmann::json* kv = find_key(root, "num_key_value_heads"); kv != nullptr && !v32) {
    const std::int64_t heads = int_value(*kv, "num_key_value_heads", 1, kIntMax);
    if (heads != 1)
      config_fail("key 'num_key_value_heads' must be 1, got " + std::to_string(heads) +
                  ": DeepSeek V4 caches one latent KV row per token (MQA); a layout with " + std::to_string(heads) +
                  " KV heads is not a DeepSeek V4 layout and would be sized wrong");
  }
  for (const char* key : {"tie_word_embeddings", "attention_bias"}) {
    const nlohmann::json* v = find_key(root, key);
    if (v == nullptr || v32) continue;
    if (!v->is_boolean()) config_fail(std::string("key '") + key + "' must be true or false, got " + quote(*v));
    if (v->get<bool>())
      config_fail(std::string("key '") + key + "' must be false, got true: the DeepSeek V4 checkpoint " +
                  (std::string_view(key) == "attention_bias" ? "has no projection biases"
                                                             : "has its own head.weight (no tied embeddings)") +
                  ", so the weight count would be wrong");
  }
}

/// The weight fields of a deepseek_v4 `root` into `c.arch` (see the file comment).
inline void arch_from_json(const nlohmann::json& root, model_config& c) {
  if (find_key(root, "hidden_size") == nullptr) {
    c.arch = model_arch{};
    c.arch.gap = arch_gap::fields_missing;
    return;
  }
  require_keys(root, {{"vocab_size"},
                      {"num_attention_heads"},
                      {"q_lora_rank"},
                      {"o_lora_rank"},
                      {"o_groups"},
                      {"index_n_heads"},
                      {"index_topk"},
                      {"n_routed_experts"},
                      {"n_shared_experts"},
                      {"moe_intermediate_size"},
                      {"num_experts_per_tok"},
                      {"hc_mult"},
                      {"quantization_config"}});
  model_arch& a = c.arch;
  const auto field = [&](const char* key) { return static_cast<int>(required_int(root, key, 1, kIntMax)); };
  a.hidden_size = field("hidden_size");
  a.vocab_size = field("vocab_size");
  a.num_attention_heads = field("num_attention_heads");
  a.q_lora_rank = field("q_lora_rank");
  a.o_lora_rank = field("o_lora_rank");
  a.o_groups = field("o_groups");
  a.index_n_heads = field("index_n_heads");
  a.index_topk = field("index_topk");
  a.n_routed_experts = field("n_routed_experts");
  a.n_shared_experts = static_cast<int>(required_int(root, "n_shared_experts", 0, kIntMax));
  a.moe_intermediate_size = field("moe_intermediate_size");
  a.num_experts_per_tok = field("num_experts_per_tok");
  a.hc_mult = field("hc_mult");
  const nlohmann::json* hash = find_key(root, "num_hash_layers");
  a.num_hash_layers = hash ? static_cast<int>(int_value(*hash, "num_hash_layers", 0, c.num_hidden_layers)) : 0;
  a.experts = expert_storage::fp4;  // vLLM: a missing expert_dtype is fp4
  if (const nlohmann::json* e = find_key(root, "expert_dtype")) {
    if (*e == "fp8")
      a.experts = expert_storage::fp8;
    else if (*e != "fp4")
      config_fail(R"(key 'expert_dtype' must be "fp4" (MXFP4) or "fp8", got )" + quote(*e));
  }
  const nlohmann::json& q = *find_key(root, "quantization_config");
  if (!q.is_object()) config_fail("key 'quantization_config' must be an object, got " + quote(q));
  const auto method = q.find("quant_method");
  if (method == q.end() || *method != "fp8")
    config_fail(R"(key 'quantization_config.quant_method' must be "fp8" (FP8 block linears), got )" +
                (method == q.end() ? std::string("nothing") : quote(*method)));
  const auto block = q.find("weight_block_size");
  if (block == q.end() || !block->is_array() || block->size() != 2)
    config_fail("key 'quantization_config.weight_block_size' must be [rows, cols], got " +
                (block == q.end() ? std::string("nothing") : quote(*block)));
  a.weight_block_rows =
      static_cast<int>(int_value((*block)[0], "quantization_config.weight_block_size[0]", 1, 1 << 16));
  a.weight_block_cols =
      static_cast<int>(int_value((*block)[1], "quantization_config.weight_block_size[1]", 1, 1 << 16));
  if (const auto fmt = q.find("scale_fmt"); fmt != q.end() && *fmt != "ue8m0")
    config_fail(R"(key 'quantization_config.scale_fmt' must be "ue8m0", got )" + quote(*fmt));
  // vLLM keys the scale dtype off expert_dtype: UE8M0 bytes with FP4 experts, float32 with FP8
  // experts (deepseek_v4.py @ 023da1fc, DeepseekV4FP8Config.is_scale_e8m0).
  a.scales = a.experts == expert_storage::fp4 ? block_scale_dtype::ue8m0 : block_scale_dtype::fp32;
  a.known = true;
  a.gap = arch_gap::none;
}

/// Fails naming the first key that appears twice in one object of `text` (nlohmann keeps the last).
inline nlohmann::json parse_refusing_duplicates(std::string_view text) {
  std::vector<std::set<std::string>> seen;
  std::vector<std::string> path;  // the enclosing keys, for the message
  std::string last_key;
  std::string duplicate;
  const auto callback = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using ev = nlohmann::json::parse_event_t;
    if (event == ev::object_start) {
      seen.emplace_back();
      path.push_back(last_key);
    } else if (event == ev::object_end) {
      if (!seen.empty()) seen.pop_back();
      if (!path.empty()) path.pop_back();
    } else if (event == ev::key) {
      last_key = parsed.get<std::string>();
      if (!seen.empty() && !seen.back().insert(last_key).second && duplicate.empty()) {
        std::string where;
        for (const std::string& p : path)
          if (!p.empty()) where += p + ".";
        duplicate = where + last_key;
      }
    } else if (event == ev::array_start) {
      path.push_back(last_key);
      last_key.clear();
    } else if (event == ev::array_end) {
      if (!path.empty()) path.pop_back();
    }
    return true;
  };
  nlohmann::json root = nlohmann::json::parse(text.begin(), text.end(), callback);
  if (!duplicate.empty())
    config_fail("key '" + duplicate +
                "' is given twice: a JSON parser keeps one of them silently, so which value is meant is unclear");
  return root;
}
}  // namespace detail

/// Reads a parsed config.json object. `name` labels the model (e.g. the file name). Throws
/// config_error naming the key for a missing or ill-typed key, a non-V4 `model_type`, a
/// zero or negative dim, a ratio list shorter than the layer count, or a ratio other than
/// 0, 1, 4, 128 (naming the layer); std::invalid_argument cannot escape.
inline model_config model_config_from_json(const nlohmann::json& root, std::string_view name = "DeepSeek V4") {
  using detail::config_fail;
  using detail::kIntMax;
  if (!root.is_object()) config_fail("top level must be a JSON object");
  const nlohmann::json* type = detail::find_key(root, "model_type");
  if (type == nullptr) config_fail("missing key 'model_type'");
  const std::string kind = type->is_string() ? type->get<std::string>() : std::string();
  const bool v32 = kind == "deepseek_v32";
  const bool v41 = kind == "deepseek_v41" || kind == "deepseek_v41_text";
  if (!v32 && !v41 && kind != "deepseek_v4")
    config_fail(R"(key 'model_type' must be "deepseek_v4" (DeepSeek V4), "deepseek_v41" (DeepSeek V4.1) or )"
                R"("deepseek_v32" (DeepSeek V3.2), got )" +
                detail::quote(*type));

  model_config c;
  c.name = model_name(name);
  detail::refuse_ignored_keys(root, v32);
  if (v32) {
    c = detail::v32_config_from_json(root, c);
    c.arch.gap = arch_gap::v32_unmodelled;
    return c;
  }
  if (v41) {
    c.family = model_family::v4_1;
    c.arch.gap = arch_gap::v41_unmodelled;
  }
  // V4.1 has no layer_types form, and its owner layers are required.
  using alternatives = std::initializer_list<const char*>;
  detail::require_keys(root, {{"num_hidden_layers"},
                              {"head_dim"},
                              {"qk_rope_head_dim", "partial_rotary_factor"},
                              {"index_head_dim"},
                              {"sliding_window"},
                              {"max_position_embeddings"},
                              v41 ? alternatives{"compress_ratios"} : alternatives{"compress_ratios", "layer_types"},
                              v41 ? alternatives{"kv_source_layer_ids"} : alternatives{}});
  c.num_hidden_layers = static_cast<int>(detail::required_int(root, "num_hidden_layers", 1, kMaxLayers));
  const nlohmann::json* mtp = detail::find_key(root, "num_nextn_predict_layers");
  c.num_nextn_predict_layers =
      mtp ? static_cast<int>(detail::int_value(*mtp, "num_nextn_predict_layers", 0, kMaxLayers - c.num_hidden_layers))
          : 0;
  c.head_dim = static_cast<int>(detail::required_int(root, "head_dim", 1, kIntMax));
  if (const nlohmann::json* rope = detail::find_key(root, "qk_rope_head_dim")) {
    c.qk_rope_head_dim = static_cast<int>(detail::int_value(*rope, "qk_rope_head_dim", 1, kIntMax));
  } else if (const nlohmann::json* f = detail::find_key(root, "partial_rotary_factor")) {
    const double r = f->is_number() ? f->get<double>() * c.head_dim : -1.0;
    if (!(r >= 1.0 && r < static_cast<double>(c.head_dim)) || std::trunc(r) != r)
      config_fail("key 'partial_rotary_factor' must give a whole RoPE dim in [1, head_dim), got " + detail::quote(*f));
    c.qk_rope_head_dim = static_cast<int>(r);
  } else {
    config_fail("missing key 'qk_rope_head_dim'");
  }
  c.index_head_dim = static_cast<int>(detail::required_int(root, "index_head_dim", 1, kIntMax));
  c.sliding_window = static_cast<int>(detail::required_int(root, "sliding_window", 1, kIntMax));
  c.max_position_embeddings =
      detail::required_int(root, "max_position_embeddings", 1, std::numeric_limits<std::int64_t>::max());

  detail::ratios_from_json(root, c, v41);
  if (v41) detail::v41_sources_from_json(root, c);
  if (!v41) detail::arch_from_json(root, c);
  try {
    (void)build_layer_schedule(c);  // validates every field and names a bad layer's ratio
  } catch (const std::invalid_argument& e) {
    config_fail(detail::core_message(e));
  }
  try {  // the KV row format must exist (NoPE width a positive multiple of 64)
    (void)swa_row_bytes(c.head_dim, c.qk_rope_head_dim);
  } catch (const std::invalid_argument& e) {
    config_fail("keys 'head_dim' = " + std::to_string(c.head_dim) + " and 'qk_rope_head_dim' = " +
                std::to_string(c.qk_rope_head_dim) + " give no fp8_ds_mla row: " + detail::core_message(e));
  }
  return c;
}

/// Parses config.json text. Errors as `model_config_from_json`; a syntax error becomes a
/// config_error with the parser's position.
inline model_config parse_model_config(std::string_view text, std::string_view name = "DeepSeek V4") {
  // nlohmann_json stops at a NUL byte as if the text ended there: reject it instead.
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos)
    detail::config_fail("not a JSON text: NUL byte at offset " + std::to_string(nul));
  nlohmann::json root;
  try {
    root = detail::parse_refusing_duplicates(text);
  } catch (const nlohmann::json::exception& e) {
    detail::config_fail(std::string("malformed JSON: ") + e.what());
  }
  return model_config_from_json(root, name);
}

/// Loads `path`: a config.json file, or a model directory holding one. The model is named
/// after the directory (or the file, if it is not called config.json). Throws config_error,
/// its message prefixed with the path, for a path that is not a regular file (a device, a
/// FIFO, a directory without config.json), a file over 4 MiB, a read error, malformed JSON or
/// any error of `parse_model_config`.
inline model_config load_model_config(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path file = path;
  if (std::filesystem::is_directory(path, ec)) file = path / "config.json";
  // Only regular files: /dev/zero or a FIFO would never end; a size cap bounds the memory.
  if (!std::filesystem::is_regular_file(file, ec))
    throw config_error(file.string() + (std::filesystem::exists(file, ec)
                                            ? ": not a regular file (a device, a FIFO or a socket): not a config.json"
                                            : ": no such file"));
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec || size > detail::kMaxConfigBytes)
    throw config_error(file.string() + ": not a config.json (" + std::to_string(size) + " bytes, more than 4 MiB)");
  if (size == 0) throw config_error(file.string() + ": the file is empty (0 bytes), not a config.json");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw config_error(file.string() + ": cannot read the file (not readable)");
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size)) throw config_error(file.string() + ": read error");
  std::filesystem::path label = file.filename() == "config.json" ? file.parent_path().filename() : file.filename();
  if (label.empty()) label = std::filesystem::absolute(file, ec).parent_path().filename();
  try {
    return parse_model_config(text, label.string());
  } catch (const config_error& e) {
    std::string_view m = e.what();
    if (m.starts_with("config.json: ")) m.remove_prefix(13);  // the path says which file
    throw config_error(file.string() + ": " + std::string(m));
  }
}

}  // namespace dsv4::cache
