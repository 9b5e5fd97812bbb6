// config.json loading: the real Flash and Pro configs, both ratio schemas, every error path.
#include "dsv4/cache/config_json.hpp"
#include "dsv4/cache/group_spec.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using nlohmann::json;
using testing::expect_invalid;

const std::filesystem::path kData = DSV4_TEST_DATA_DIR;

json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

void expect_same_layout(const model_config& a, const model_config& b) {
  EXPECT_EQ(a.num_hidden_layers, b.num_hidden_layers);
  EXPECT_EQ(a.num_nextn_predict_layers, b.num_nextn_predict_layers);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.qk_rope_head_dim, b.qk_rope_head_dim);
  EXPECT_EQ(a.index_head_dim, b.index_head_dim);
  EXPECT_EQ(a.sliding_window, b.sliding_window);
  EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings);
  EXPECT_EQ(a.compress_ratios, b.compress_ratios);
}

TEST(ConfigJson, RealFlashConfigMatchesPreset) {
  const model_config c = load_model_config(kData / "deepseek-v4-flash.config.json");
  expect_same_layout(c, deepseek_v4_flash);
  EXPECT_EQ(c.name.view(), "deepseek-v4-flash.config.json");
  const layer_schedule s = build_layer_schedule(c);
  EXPECT_EQ(s.count(attention_kind::swa, false), 2);
  EXPECT_EQ(s.count(attention_kind::csa, false), 21);
  EXPECT_EQ(s.count(attention_kind::hca, false), 20);
  EXPECT_TRUE(s[43].mtp && s[43].kind == attention_kind::swa);
}

TEST(ConfigJson, RealProConfigMatchesPreset) {
  const model_config c = load_model_config(kData / "deepseek-v4-pro.config.json");
  expect_same_layout(c, deepseek_v4_pro);
  const layer_schedule s = build_layer_schedule(c);
  EXPECT_EQ(s.count(attention_kind::csa, false), 30);
  EXPECT_EQ(s.count(attention_kind::hca, false), 31);
  EXPECT_TRUE(s[61].mtp && s[61].kind == attention_kind::swa);
}

TEST(ConfigJson, ModelDirectoryHoldingConfigJson) {
  const std::filesystem::path root = dsv4::cache::testing::unique_temp_path("config");
  const std::filesystem::path dir = root / "dsv4-cache-test-DeepSeek-V4-Pro";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kData / "deepseek-v4-pro.config.json", dir / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  const model_config c = load_model_config(dir);
  EXPECT_EQ(c.name.view(), "dsv4-cache-test-DeepSeek-V4-Pro");
  expect_same_layout(c, deepseek_v4_pro);
  std::filesystem::remove_all(root);
}

TEST(ConfigJson, TrailingDraftLayerZerosAreIgnored) {
  json j = read_json(kData / "deepseek-v4-flash.config.json");
  j["compress_ratios"].push_back(0);
  j["compress_ratios"].push_back(0);  // length layers + 3
  expect_same_layout(model_config_from_json(j), deepseek_v4_flash);
}

TEST(ConfigJson, LayerTypesSchemaGivesTheSameSchedule) {
  json j = read_json(kData / "deepseek-v4-flash.config.json");
  json types = json::array();
  for (int i = 0; i < 43; ++i) {
    const int r = j["compress_ratios"][static_cast<std::size_t>(i)].get<int>();
    types.push_back(r == 0   ? "sliding_attention"
                    : r == 4 ? "compressed_sparse_attention"
                             : "heavily_compressed_attention");
  }
  j.erase("compress_ratios");
  j["layer_types"] = types;
  j["compress_rates"] = {{"compressed_sparse_attention", 4}, {"heavily_compressed_attention", 128}};
  expect_same_layout(model_config_from_json(j), deepseek_v4_flash);  // MTP layer unlisted -> SWA
  // A rate contradicting its layer type is an error naming the key, never a silent retype.
  j["compress_rates"]["heavily_compressed_attention"] = 8;
  expect_invalid([&] { (void)model_config_from_json(j); },
                 {"'compress_rates.heavily_compressed_attention' must be 128", "got 8"});
  j["compress_rates"] = {{"compressed_sparse_attention", 0}, {"heavily_compressed_attention", 128}};
  expect_invalid([&] { (void)model_config_from_json(j); },
                 {"'compress_rates.compressed_sparse_attention' must be 4", "got 0"});
  j["compress_rates"] = {{"compressed_sparse_attention", 128}, {"heavily_compressed_attention", 4}};
  expect_invalid([&] { (void)model_config_from_json(j); },
                 {"'compress_rates.compressed_sparse_attention' must be 4", "got 128"});
  j["compress_rates"] = {{"compressed_sparse_attention", 4}};
  j["compress_rates"].erase("heavily_compressed_attention");
  expect_invalid([&] { (void)model_config_from_json(j); },
                 {"missing key 'compress_rates.heavily_compressed_attention'"});
  j["layer_types"][3] = "full_attention";
  expect_invalid([&] { (void)model_config_from_json(j); }, {"layer_types[3]", "full_attention"});
  j["layer_types"] = json::array({"sliding_attention"});
  expect_invalid([&] { (void)model_config_from_json(j); }, {"'layer_types' has 1 entries", "num_hidden_layers = 43"});
}

TEST(ConfigJson, TextConfigNesting) {
  json j = read_json(kData / "deepseek-v4-flash.config.json");
  json text = j;
  j = {{"model_type", "deepseek_v4"}, {"text_config", text}};
  expect_same_layout(model_config_from_json(j), deepseek_v4_flash);
}

class ConfigJsonErrors : public ::testing::Test {
 protected:
  json j = read_json(kData / "deepseek-v4-flash.config.json");
  void expect(std::initializer_list<const char*> parts) {
    testing::expect_invalid([&] { (void)model_config_from_json(j); }, parts);
    try {
      (void)model_config_from_json(j);
    } catch (const config_error&) {
      SUCCEED();
    } catch (...) {
      ADD_FAILURE() << "expected config_error";
    }
  }
};

TEST_F(ConfigJsonErrors, MissingKey) {
  j.erase("head_dim");
  expect({"missing key 'head_dim'"});
}
TEST_F(ConfigJsonErrors, IllTypedKey) {
  j["sliding_window"] = "128";
  expect({"key 'sliding_window' must be an integer", "\"128\""});
}
TEST_F(ConfigJsonErrors, FractionalDim) {
  j["head_dim"] = 512.5;
  expect({"key 'head_dim' must be an integer", "512.5"});
}
TEST_F(ConfigJsonErrors, NotV4) {
  j["model_type"] = "deepseek_v3";
  expect({"model_type", "deepseek_v4", "deepseek_v32", "got \"deepseek_v3\""});
}
TEST_F(ConfigJsonErrors, MissingModelType) {
  j.erase("model_type");
  expect({"missing key 'model_type'"});
}
TEST_F(ConfigJsonErrors, NegativeDim) {
  j["index_head_dim"] = -128;
  expect({"key 'index_head_dim' must be in [1,", "got -128"});
}
TEST_F(ConfigJsonErrors, ZeroDim) {
  j["num_hidden_layers"] = 0;
  expect({"key 'num_hidden_layers' must be in [1, 256]", "got 0"});
}
TEST_F(ConfigJsonErrors, HugeDim) {
  j["head_dim"] = 1ULL << 40;
  expect({"key 'head_dim' must be in [1, 2147483647]", "got 1099511627776"});
}
TEST_F(ConfigJsonErrors, ShortRatioList) {
  j["compress_ratios"].erase(43);
  expect({"'compress_ratios' has 43 entries", "= 44"});
}
TEST_F(ConfigJsonErrors, RatioEight) {
  j["compress_ratios"][7] = 8;
  expect({"layer=7", "compress_ratio=8"});
}
TEST_F(ConfigJsonErrors, RatioNotAnInteger) {
  j["compress_ratios"][7] = "4";
  expect({"compress_ratios[7]", "must be an integer"});
}
TEST_F(ConfigJsonErrors, RatiosNotAList) {
  j["compress_ratios"] = 4;
  expect({"'compress_ratios' must be an array"});
}
TEST_F(ConfigJsonErrors, NoRatiosAtAll) {
  j.erase("compress_ratios");
  expect({"missing key 'compress_ratios'"});
}
TEST_F(ConfigJsonErrors, RopeNotSmallerThanHeadDim) {
  j["qk_rope_head_dim"] = 512;
  expect({"head_dim must be larger than qk_rope_head_dim"});
}
TEST_F(ConfigJsonErrors, BadIndexHeadDimForFp8IsLaterAPlanError) {
  j["index_head_dim"] = 96;  // a valid config; FP8 indexer rows need 128 | d, MXFP4 accepts it
  const model_config c = model_config_from_json(j);
  expect_invalid([&] { (void)build_cache_specs(c, indexer_format::fp8); }, {"divisible by 128", "index_head_dim=96"});
  // The seed's MXFP4 rule accepts 96 (3 x 32); no registered format stores 96-value keys.
  expect_invalid([&] { (void)build_cache_specs(c, indexer_format::mxfp4); }, {"another number of values per row"});
}

TEST(ConfigJson, OnlyRegularFilesOfBoundedSize) {
  // /dev/zero and a FIFO would never end; a huge file would take all memory.
  expect_invalid([] { (void)load_model_config("/dev/zero"); }, {"/dev/zero", "not a regular file"});
  expect_invalid([] { (void)load_model_config("/dev/null"); }, {"/dev/null", "not a regular file"});
  const std::filesystem::path root = dsv4::cache::testing::unique_temp_path("config");
  std::filesystem::create_directories(root);
  const std::filesystem::path big = root / "dsv4-cache-test-big.json";
  {
    std::ofstream out(big, std::ios::binary);
    out << std::string((std::size_t{1} << 22) + 1, ' ');
  }
  expect_invalid([&] { (void)load_model_config(big); }, {"dsv4-cache-test-big.json", "more than 4 MiB"});
  std::filesystem::remove_all(root);
}

TEST(ConfigJson, NulByteIsNotTheEndOfTheText) {
  const std::string text = std::string("{\"model_type\": \"deepseek_v4\"}") + '\0' + "garbage";
  expect_invalid([&] { (void)parse_model_config(text, "x"); }, {"NUL byte at offset 29"});
}

TEST(ConfigJson, ErrorsNameTheFileOnceAndQuoteShortly) {
  const std::filesystem::path p = dsv4::cache::testing::unique_temp_path("long.json");
  json j = read_json(kData / "deepseek-v4-flash.config.json");
  j["model_type"] = std::string(100'000, 'x');
  {
    std::ofstream out(p);
    out << j.dump();
  }
  try {
    (void)load_model_config(p);
    ADD_FAILURE() << "expected config_error";
  } catch (const config_error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find(p.string() + ": key 'model_type'"), 0U) << msg;
    EXPECT_LT(msg.size(), 300U);
    EXPECT_NE(msg.find("..."), std::string::npos);
  }
  std::filesystem::remove(p);
}

TEST(ConfigJson, HeadDimWithoutAnFp8RowNamesTheKeys) {
  json j = read_json(kData / "deepseek-v4-flash.config.json");
  j["head_dim"] = 500;
  expect_invalid([&] { (void)model_config_from_json(j); },
                 {"'head_dim' = 500", "'qk_rope_head_dim' = 64", "divisible by 64", "nope_dim=436"});
}

TEST(ConfigJson, LongUtf8NamesAreCutOnACharacterBoundary) {
  std::string name;
  for (int i = 0; i < 40; ++i) name += "\xC3\xA9";  // 40 x U+00E9, 80 bytes
  const model_name m(name);
  EXPECT_EQ(m.view().size(), 62U);  // 31 whole characters, not 63 bytes
  EXPECT_EQ(m.view(), name.substr(0, 62));
}

TEST(ConfigJson, MalformedAndUnreadableFiles) {
  expect_invalid([] { (void)parse_model_config("{\"model_type\": \"deepseek_v4\",", "x"); }, {"malformed JSON"});
  expect_invalid([] { (void)parse_model_config("", "x"); }, {"malformed JSON"});
  expect_invalid([] { (void)parse_model_config("[1, 2]", "x"); }, {"top level must be a JSON object"});
  expect_invalid([] { (void)load_model_config("/nonexistent/dsv4/config.json"); },
                 {"/nonexistent/dsv4/config.json", "no such file"});
  expect_invalid([] { (void)load_model_config(std::filesystem::temp_directory_path() / "dsv4-no-such-dir"); },
                 {"no such file"});
}

}  // namespace
}  // namespace dsv4::cache

namespace dsv4::cache {
namespace {
using nlohmann::json;
using testing::expect_invalid;

// Issue 42: a key given twice is refused naming it (nlohmann would keep the last silently), also
// inside a nested object, and the first of several is named.
TEST(ConfigJsonIssue42, DuplicateKeysAreRefusedNamingTheKey) {
  const std::string text = R"({"model_type": "deepseek_v4", "num_hidden_layers": 2, "head_dim": 512,
    "qk_rope_head_dim": 64, "index_head_dim": 128, "sliding_window": 128, "sliding_window": 256,
    "max_position_embeddings": 65536, "compress_ratios": [0, 4]})";
  expect_invalid([&] { (void)parse_model_config(text, "x"); }, {"key 'sliding_window' is given twice"});
  const std::string nested = R"({"model_type": "deepseek_v41", "text_config": {"head_dim": 512, "head_dim": 512}})";
  expect_invalid([&] { (void)parse_model_config(nested, "x"); }, {"key 'text_config.head_dim' is given twice"});
  // The same key in two different objects is not a duplicate.
  const std::string two_objects = R"({"model_type": "deepseek_v4", "num_hidden_layers": 2, "head_dim": 512,
    "qk_rope_head_dim": 64, "index_head_dim": 128, "sliding_window": 128, "max_position_embeddings": 65536,
    "compress_ratios": [0, 4], "rope_scaling": {"factor": 16}, "quantization": {"factor": 2}})";
  EXPECT_EQ(parse_model_config(two_objects, "x").num_hidden_layers, 2);
}

json tiny_json() {
  return json::parse(R"({"model_type": "deepseek_v4", "num_hidden_layers": 2, "head_dim": 512,
    "qk_rope_head_dim": 64, "index_head_dim": 128, "sliding_window": 128,
    "max_position_embeddings": 65536, "compress_ratios": [0, 4]})");
}

// Keys the library recognises but could not honour are refused naming the key and why.
TEST(ConfigJsonIssue42, RecognisedButUnhonouredKeysAreRefused) {
  json j = tiny_json();
  j["num_key_value_heads"] = 2;
  expect_invalid([&] { (void)model_config_from_json(j); }, {"key 'num_key_value_heads' must be 1, got 2", "MQA"});
  j["num_key_value_heads"] = 1;
  EXPECT_NO_THROW((void)model_config_from_json(j));
  j["tie_word_embeddings"] = true;
  expect_invalid([&] { (void)model_config_from_json(j); }, {"key 'tie_word_embeddings' must be false", "head.weight"});
  j["tie_word_embeddings"] = false;
  j["attention_bias"] = true;
  expect_invalid([&] { (void)model_config_from_json(j); }, {"key 'attention_bias' must be false", "biases"});
  j["attention_bias"] = "no";
  expect_invalid([&] { (void)model_config_from_json(j); }, {"key 'attention_bias' must be true or false"});
  // V3.2's 128 KV heads are its MLA heads, not cached rows: accepted there.
  EXPECT_NO_THROW((void)load_model_config(std::filesystem::path(DSV4_TEST_DATA_DIR) / "deepseek-v3.2.config.json"));
}

// The weight fields: all or none; each bad one named.
TEST(ConfigJsonIssue42, WeightFieldsAreAllOrNone) {
  json j = json::parse(std::ifstream(std::filesystem::path(DSV4_TEST_DATA_DIR) / "deepseek-v4-flash.config.json"));
  j.erase("o_groups");
  j.erase("hc_mult");
  expect_invalid([&] { (void)model_config_from_json(j); }, {"missing keys 'o_groups', 'hc_mult'"});
  j = json::parse(std::ifstream(std::filesystem::path(DSV4_TEST_DATA_DIR) / "deepseek-v4-flash.config.json"));
  j["expert_dtype"] = "fp6";
  expect_invalid([&] { (void)model_config_from_json(j); }, {"key 'expert_dtype'", "fp6"});
  j["expert_dtype"] = "fp8";
  const model_config fp8 = model_config_from_json(j);
  EXPECT_EQ(fp8.arch.experts, expert_storage::fp8);
  EXPECT_EQ(fp8.arch.scales, block_scale_dtype::fp32);  // vLLM: FP8-expert checkpoints keep FP32 scales
  j["quantization_config"]["quant_method"] = "awq";
  expect_invalid([&] { (void)model_config_from_json(j); }, {"quantization_config.quant_method", "awq"});
  j["quantization_config"]["quant_method"] = "fp8";
  j["o_groups"] = 7;  // 64 heads
  expect_invalid([&] { (void)model_config_from_json(j); }, {"o_groups must divide num_attention_heads"});
  j["o_groups"] = 8;
  j["num_hash_layers"] = 44;
  expect_invalid([&] { (void)model_config_from_json(j); }, {"num_hash_layers", "44"});
  EXPECT_FALSE(model_config_from_json(tiny_json()).arch.known);
}

}  // namespace
}  // namespace dsv4::cache
