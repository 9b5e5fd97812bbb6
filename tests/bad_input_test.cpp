// Bad input at every boundary of the library: one test per row of docs/bad-input.md, named
// after the row. Each checks the exception type, and that the message names the rule and the
// offending value. The overflow rows compare with an independent 128-bit oracle built from the
// docs/facts.md (page bytes of section 3, the plan formula of memory_plan.hpp), so a clear error
// is proven necessary and a saturated or exact answer is proven right, never wrapped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "dsv4/cache.hpp"
#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/config_json.hpp"
#include "dsv4/cache/slot_work.hpp"
#include "test_util.hpp"

// The planner rows need CLI11 (header-only), as the planner does.
#if __has_include(<CLI/CLI.hpp>)
#include "dsv4/tools/planner_cli.hpp"
#define DSV4_HAS_PLANNER 1
#endif

namespace {
using namespace dsv4::cache;
using json = nlohmann::json;
/// `o` in own pools: the overflow oracles below are the library's per-group formula.
constexpr plan_options own(plan_options o = {}) {
  o.pools = pools_choice::own;
  return o;
}
__extension__ typedef unsigned __int128 u128;  // NOLINT(modernize-use-using): __extension__ keeps -Wpedantic quiet

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
const std::filesystem::path kData = DSV4_TEST_DATA_DIR;

/// The message of the std::invalid_argument (or subclass E) that `f` throws; fails the test
/// if it throws nothing.
template <class E = std::invalid_argument, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception, nothing was thrown";
  return {};
}

/// Expects `f` to throw E whose message contains every one of `parts` (the rule and the values).
template <class E = std::invalid_argument, class F>
void expect_error(F&& f, std::initializer_list<const char*> parts) {
  const std::string msg = error_of<E>(f);
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
}

json flash_json() {
  std::ifstream in(kData / "deepseek-v4-flash.config.json");
  return json::parse(in);
}

/// The loader's error for `j`: always a config_error.
void expect_config_error(const json& j, std::initializer_list<const char*> parts) {
  expect_error<config_error>([&] { (void)parse_model_config(j.dump()); }, parts);
}

// ---- The independent oracle: DeepSeek-V4-Flash plan bytes from docs/facts.md ----

struct oracle_group {
  std::uint64_t page_bytes;  // one layer, all pools (facts section 3, FP8 indexer)
  std::uint64_t layers;
  std::uint64_t rows;    // rows per page
  std::uint64_t window;  // 0 = full history (256-token pages)
  bool csa_window;       // window max(8, 4 + s) under tokenspeed's older rule (8 under vLLM's)
};

// Flash: 44 layers keep SWA; 21 CSA (layers 2..42 even), 20 HCA (3..41 odd).
constexpr oracle_group kFlashGroups[] = {
    {37'440, 44, 64, 128, false},         // v4.swa_kv
    {32'768, 21, 4, 8, true},             // v4.c4a.compressor_state
    {37'440 + 8'448, 21, 256, 0, false},  // v4.c4a.compressed_kv (KV + FP8 indexer keys)
    {32'768, 20, 8, 128, false},          // v4.c128a.compressor_state
    {1'728, 20, 256, 0, false},           // v4.c128a.compressed_kv
    {8'192, 21, 4, 8, true},              // v4.c4a.indexer_compressor_state
};

u128 ceil_div128(u128 a, u128 b) { return (a + b - 1) / b; }

/// Plan bytes of Flash under vLLM's rules (memory_plan.hpp) for context L, N requests, s tokens
/// per step and a step budget of B tokens, in 128 bits: H = min(N, B) requests hold pages;
/// full history H x ceil(L / 256) + 1; sliding H x min(ring, cap) + min(N (cap - per), n +
/// (B - n) / R) + 1 with ring = ceil((W + 2s - 3) / R) + 1, n = min(N, B).
u128 flash_oracle(u128 L, u128 N, u128 s = 1, u128 B = 8192) {
  u128 total = 0;
  const u128 h = N < B ? N : B;
  for (const oracle_group& g : kFlashGroups) {
    u128 pages = 0;
    if (g.window == 0) {
      pages = h * ceil_div128(L, 256) + 1;
    } else {
      const u128 ring = ceil_div128(g.window + 2 * s - 3, g.rows) + 1;
      const u128 cap = ceil_div128(L, g.rows);
      const u128 per = ring < cap ? ring : cap;
      const u128 prompt_pages = h + (B - h) / g.rows;
      const u128 beyond = N * (cap - per);
      pages = h * per + (beyond < prompt_pages ? beyond : prompt_pages) + 1;
    }
    total += static_cast<u128>(g.page_bytes) * g.layers * pages;
  }
  return total;
}

/// The largest N with flash_oracle(L, N, 1, B) <= budget (the oracle grows with N), up to 2^63 - 1.
u128 oracle_max_requests(u128 L, u128 B, u128 budget) {
  u128 lo = 0;
  u128 hi = u128{1} << 63;  // exclusive
  while (hi - lo > 1) {
    const u128 mid = lo + (hi - lo) / 2;
    if (flash_oracle(L, mid, 1, B) <= budget)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

model_config flash_with_max_context(std::int64_t max_pos) {
  model_config c = deepseek_v4_flash;
  c.max_position_embeddings = max_pos;
  return c;
}

/// Plan options for a 4,096-token context (small arenas).
plan_options short_context() {
  plan_options o;
  o.context_tokens = 4096;
  return o;
}

#ifdef DSV4_HAS_PLANNER
/// run_planner on `args`: exit code, stdout, stderr.
using cli_result = dsv4::cache::testing::cli_run;
cli_result run_cli(const std::vector<std::string>& args) {
  return dsv4::cache::testing::run_in_process(
      [&](std::ostream& out, std::ostream& err) { return cli::run_planner(args, out, err); });
}
#endif  // DSV4_HAS_PLANNER

// ================================ config.json keys ================================

TEST(BadInput, ConfigMissingKey) {
  json j = flash_json();
  j.erase("head_dim");
  expect_config_error(j, {"missing key 'head_dim'"});
}

// Every missing key at once, in the order the config documents them.
TEST(BadInput, ConfigEveryMissingKeyAtOnce) {
  json j = flash_json();
  for (const char* k : {"head_dim", "sliding_window", "compress_ratios"}) j.erase(k);
  expect_config_error(j, {"missing keys 'head_dim', 'sliding_window', 'compress_ratios' (or 'layer_types')"});
  json v32 = json::parse(R"({"model_type": "deepseek_v32", "num_hidden_layers": 61})");
  expect_config_error(v32, {"missing keys 'kv_lora_rank', 'qk_rope_head_dim', 'index_head_dim', "
                            "'max_position_embeddings'"});
}

// Per-layer lists match the layer counts: 43 + 1 entries, or trailing zeros for draft layers.
TEST(BadInput, ConfigPerLayerListsMatchTheLayerCounts) {
  json longer = flash_json();
  longer["compress_ratios"].push_back(0);  // a draft layer's zero: the known form
  longer["compress_ratios"].push_back(0);
  EXPECT_NO_THROW((void)model_config_from_json(longer));
  json wrong = flash_json();
  wrong["compress_ratios"].push_back(4);  // a 45th layer the config does not have
  expect_config_error(wrong, {"key 'compress_ratios' has 45 entries, more than num_hidden_layers + "
                              "num_nextn_predict_layers = 44, and entry 44 is 4"});
  json types = flash_json();
  types.erase("compress_ratios");
  types["layer_types"] = json::array();
  for (int i = 0; i < 50; ++i) types["layer_types"].push_back("sliding_attention");
  types["compress_rates"] = {{"compressed_sparse_attention", 4}, {"heavily_compressed_attention", 128}};
  expect_config_error(types, {"key 'layer_types' has 50 entries: it lists num_hidden_layers = 43 layers, or with the "
                              "MTP layers 44"});
}

TEST(BadInput, ConfigMissingModelType) {
  json j = flash_json();
  j.erase("model_type");
  expect_config_error(j, {"missing key 'model_type'"});
}

TEST(BadInput, ConfigIllTypedKey) {
  json j = flash_json();
  j["num_hidden_layers"] = "43";
  expect_config_error(j, {"key 'num_hidden_layers' must be an integer", "\"43\""});
}

TEST(BadInput, ConfigNonIntegralNumber) {
  json j = flash_json();
  j["index_head_dim"] = 128.5;
  expect_config_error(j, {"key 'index_head_dim' must be an integer", "128.5"});
}

TEST(BadInput, ConfigNonV4ModelType) {
  json j = flash_json();
  j["model_type"] = "deepseek_v3";  // DeepSeek V3: MLA without the indexer, not a layout this library knows
  expect_config_error(
      j,
      {"key 'model_type' must be \"deepseek_v4\" (DeepSeek V4), \"deepseek_v41\" (DeepSeek V4.1) or \"deepseek_v32\"",
       "\"deepseek_v3\""});
}

TEST(BadInput, ConfigZeroDim) {
  json j = flash_json();
  j["head_dim"] = 0;
  expect_config_error(j, {"key 'head_dim' must be in [1, 2147483647]", "got 0"});
}

TEST(BadInput, ConfigNegativeDim) {
  json j = flash_json();
  j["sliding_window"] = -128;
  expect_config_error(j, {"key 'sliding_window' must be in [1, 2147483647]", "got -128"});
}

TEST(BadInput, ConfigDimAboveInt) {
  json j = flash_json();
  j["head_dim"] = std::int64_t{1} << 40;
  expect_config_error(j, {"key 'head_dim' must be in [1, 2147483647]", "got 1099511627776"});
}

TEST(BadInput, ConfigIntegerAbove64Bits) {
  json j = flash_json();
  j["max_position_embeddings"] = kU64Max;
  expect_config_error(
      j, {"key 'max_position_embeddings' must be in [1, 9223372036854775807]", "got 18446744073709551615"});
}

TEST(BadInput, ConfigTooManyLayers) {
  json j = flash_json();
  j["num_hidden_layers"] = 300;
  expect_config_error(j, {"key 'num_hidden_layers' must be in [1, 256]", "got 300"});
}

TEST(BadInput, ConfigShortRatioList) {
  json j = flash_json();
  j["compress_ratios"] = json::array({0, 0, 4, 128, 4, 128, 4, 128, 4, 128});
  expect_config_error(
      j, {"key 'compress_ratios' has 10 entries", "fewer than num_hidden_layers + num_nextn_predict_layers = 44"});
}

TEST(BadInput, ConfigRatioListNotArray) {
  json j = flash_json();
  j["compress_ratios"] = 4;
  expect_config_error(j, {"key 'compress_ratios' must be an array", "got 4"});
}

TEST(BadInput, ConfigRatio8) {
  json j = flash_json();
  j["compress_ratios"][5] = 8;
  expect_config_error(j, {"compress ratio must be 0 or 1 (SWA), 4 (CSA) or 128 (HCA)", "layer=5", "compress_ratio=8"});
}

TEST(BadInput, ConfigRatio8File) {  // the checked-in bad config, through the file loader
  expect_error<config_error>(
      [] { (void)load_model_config(kData / "bad" / "ratio8.config.json"); },
      {"ratio8.config.json", "compress ratio must be 0 or 1 (SWA), 4 (CSA) or 128 (HCA)", "compress_ratio=8"});
}

TEST(BadInput, ConfigRopeNotBelowHeadDim) {
  json j = flash_json();
  j["qk_rope_head_dim"] = 512;
  expect_config_error(j, {"head_dim must be larger than qk_rope_head_dim", "head_dim=512", "qk_rope_head_dim=512"});
}

TEST(BadInput, ConfigPartialRotaryFactorNotWhole) {
  json j = flash_json();
  j.erase("qk_rope_head_dim");
  j["partial_rotary_factor"] = 0.3;
  expect_config_error(j, {"key 'partial_rotary_factor' must give a whole RoPE dim in [1, head_dim)", "0.3"});
}

TEST(BadInput, ConfigUnknownLayerType) {
  json j = flash_json();
  j.erase("compress_ratios");
  j["layer_types"] = json::array();
  for (int i = 0; i < 43; ++i) j["layer_types"].push_back(i == 7 ? "linear_attention" : "sliding_attention");
  expect_config_error(
      j, {"key 'layer_types[7]' must be sliding_attention, compressed_sparse_attention or", "\"linear_attention\""});
}

TEST(BadInput, ConfigShortLayerTypes) {
  json j = flash_json();
  j.erase("compress_ratios");
  j["layer_types"] = json::array({"sliding_attention", "sliding_attention"});
  expect_config_error(j, {"key 'layer_types' has 2 entries, fewer than num_hidden_layers = 43"});
}

TEST(BadInput, ConfigMissingCompressRate) {
  json j = flash_json();
  j.erase("compress_ratios");
  j["layer_types"] = json::array();
  for (int i = 0; i < 43; ++i) j["layer_types"].push_back(i == 2 ? "compressed_sparse_attention" : "sliding_attention");
  j["compress_rates"] = json::object({{"heavily_compressed_attention", 128}});
  expect_config_error(j, {"missing key 'compress_rates.compressed_sparse_attention'"});
}

TEST(BadInput, ConfigMalformedJson) {
  expect_error<config_error>([] { (void)parse_model_config("{\"model_type\": \"deepseek_v4\","); },
                             {"malformed JSON", "parse error"});
}

TEST(BadInput, ConfigTopLevelNotObject) {
  expect_error<config_error>([] { (void)parse_model_config("[1, 2, 3]"); }, {"top level must be a JSON object"});
}

TEST(BadInput, ConfigUnreadableFile) {
  expect_error<config_error>([] { (void)load_model_config(kData / "no-such-dir" / "config.json"); },
                             {"no-such-dir", "no such file"});
}

TEST(BadInput, ConfigDirectoryWithoutConfig) {
  expect_error<config_error>([] { (void)load_model_config(kData); }, {"config.json", "no such file"});
}

// A file that reads empty says so (not "malformed JSON at byte 0").
TEST(BadInput, ConfigEmptyFile) {
  const std::filesystem::path file = dsv4::cache::testing::unique_temp_path("empty.config.json");
  { std::ofstream(file).flush(); }
  expect_error<config_error>([&] { (void)load_model_config(file); },
                             {"empty.config.json", "the file is empty (0 bytes)"});
  std::filesystem::remove(file);
}

// ================================ dims ================================

TEST(BadInput, DimsModelZeroLayers) {
  model_config c = deepseek_v4_flash;
  c.num_hidden_layers = 0;
  expect_error([&] { validate(c); }, {"num_hidden_layers must be > 0", "num_hidden_layers=0"});
}

TEST(BadInput, DimsModelNonPositiveWindow) {
  model_config c = deepseek_v4_flash;
  c.sliding_window = -1;
  expect_error([&] { (void)build_memory_plan(c); }, {"sliding_window must be > 0", "sliding_window=-1"});
}

TEST(BadInput, DimsHeadDimNotAboveRope) {
  expect_error([] { (void)swa_row_bytes(64, 64); },
               {"head_dim must be larger than rope_dim", "head_dim=64", "rope_dim=64"});
}

TEST(BadInput, DimsNegativeRope) {
  expect_error([] { (void)swa_row_bytes(512, -1); }, {"rope_dim must be >= 0", "rope_dim=-1"});
}

TEST(BadInput, DimsNopeNotMultipleOf64) {
  expect_error([] { (void)swa_scale_dim(500, 64); }, {"NoPE dim must be divisible by 64", "nope_dim=436"});
}

TEST(BadInput, DimsIndexerFp8NotMultipleOf128) {
  expect_error([] { (void)indexer_fp8_row_bytes(96); },
               {"FP8 index head dim must be divisible by 128", "index_head_dim=96"});
}

TEST(BadInput, DimsIndexerMxfp4Odd) {
  expect_error([] { (void)indexer_mxfp4_value_bytes(33); }, {"MXFP4 index head dim must be even", "index_head_dim=33"});
}

TEST(BadInput, DimsIndexerMxfp4NotMultipleOf32) {
  expect_error([] { (void)indexer_mxfp4_row_bytes(48); },
               {"MXFP4 index head dim must be divisible by 32", "index_head_dim=48"});
}

TEST(BadInput, DimsIndexerZero) {
  expect_error([] { (void)indexer_fp8_row_bytes(0); }, {"index_head_dim must be > 0", "index_head_dim=0"});
}

TEST(BadInput, DimsConfigIndexerDimThePlanRejects) {
  // The loader accepts any positive index_head_dim; the plan names the format's rule.
  json j = flash_json();
  j["index_head_dim"] = 96;
  const model_config c = parse_model_config(j.dump());
  expect_error([&] { (void)build_memory_plan(c); },
               {"FP8 index head dim must be divisible by 128", "index_head_dim=96"});
  // 96 = 3 x 32 passes the seed's MXFP4 rule, but no registered indexer format stores 96 values:
  // the row formats are the engines' fixed layouts (128-value keys).
  plan_options o;
  o.indexer = indexer_format::mxfp4;
  expect_error([&] { (void)build_memory_plan(c, o); },
               {"the row format stores another number of values per row", "format_values=128", "model_values=96"});
  expect_error(
      [&] { check_formats(c, default_formats(c.family, indexer_format::mxfp4)); },
      {"row format 'v4.indexer_mxfp4'", "indexer keys of v4.c4a.compressed_kv", "128 values", "model v4: 96 values"});
}

TEST(BadInput, DimsRowsPerPageZero) {
  expect_error([] { (void)make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(512, 64), 0); },
               {"rows_per_page must be > 0", "rows_per_page=0"});
  expect_error([] { (void)make_indexer_page_layout(make_indexer_row_format(indexer_format::fp8, 128), -1); },
               {"rows_per_page must be > 0", "rows_per_page=-1"});
}

TEST(BadInput, DimsBlockSizeNotMultipleOfRatio) {
  const layer_schedule s = build_layer_schedule(deepseek_v4_flash);
  expect_error([&] { (void)build_schema(deepseek_v4_flash, s[3], indexer_format::fp8, 100); },
               {"block_size_tokens must be a multiple of the layer's compress ratio", "block_size_tokens=100",
                "compress_ratio=128", "layer=3"});
  expect_error([&] { (void)build_schema(deepseek_v4_flash, s[0], indexer_format::fp8, 0); },
               {"block_size_tokens must be > 0", "block_size_tokens=0"});
}

TEST(BadInput, DimsGroupSpecsNeed256TokenBlock) {
  const model_cache_schema m = build_model_schema(deepseek_v4_flash, indexer_format::fp8, 128);
  expect_error([&] { (void)build_cache_specs(m); },
               {"group specs need schemas built with the 256-token logical block", "block_size_tokens=128"});
}

// ================================ ratios ================================

TEST(BadInput, RatiosUnsupportedValue) {
  expect_error([] { (void)attention_from_ratio(3, 8); },
               {"compress ratio must be 0 or 1 (SWA), 4 (CSA) or 128 (HCA)", "layer=3", "compress_ratio=8"});
}

TEST(BadInput, RatiosNegative) {
  model_config c = deepseek_v4_pro;
  c.compress_ratios[60] = -4;
  expect_error([&] { (void)build_layer_schedule(c); }, {"layer=60", "compress_ratio=-4"});
}

TEST(BadInput, RatiosCompressorStateRatio) {
  expect_error([] { (void)compressor_state_rows_per_page(8); },
               {"unsupported DeepSeek V4 compress_ratio (only 4 and 128 have compressor state)", "compress_ratio=8"});
  expect_error([] { (void)compressor_state_row_bytes(1, 512); }, {"compressor ratio must be > 1", "ratio=1"});
}

// ================================ list lengths ================================

TEST(BadInput, ListsTooManyLayers) {
  model_config c = deepseek_v4_flash;
  c.num_hidden_layers = 256;  // + 1 MTP layer = 257 > kMaxLayers
  expect_error([&] { (void)build_layer_schedule(c); }, {"num_hidden_layers + num_nextn_predict_layers must be <= 256",
                                                        "num_hidden_layers=256", "num_nextn_predict_layers=1"});
}

TEST(BadInput, ListsNegativeMtpLayers) {
  model_config c = deepseek_v4_flash;
  c.num_nextn_predict_layers = -1;
  expect_error([&] { validate(c); }, {"num_nextn_predict_layers must be >= 0", "num_nextn_predict_layers=-1"});
}

// ================================ plan options ================================

TEST(BadInput, OptionsRequestsBelowOne) {
  plan_options o;
  o.requests = 0;
  expect_error([&] { (void)build_memory_plan(deepseek_v4_flash, o); }, {"requests must be >= 1", "requests=0"});
}

TEST(BadInput, OptionsNegativeContext) {
  plan_options o;
  o.context_tokens = -5;
  expect_error([&] { (void)build_memory_plan(deepseek_v4_flash, o); },
               {"context_tokens must be >= 1", "context_tokens=-5"});
}

TEST(BadInput, OptionsContextAboveModel) {
  plan_options o;
  o.context_tokens = std::int64_t{1} << 40;
  expect_error([&] { (void)build_memory_plan(deepseek_v4_flash, o); },
               {"context_tokens must be <= max_position_embeddings", "context_tokens=1099511627776",
                "max_position_embeddings=1048576"});
}

TEST(BadInput, OptionsTokensPerStep) {
  plan_options o;
  o.tokens_per_step = 0;
  expect_error([&] { (void)build_memory_plan(deepseek_v4_flash, o); },
               {"tokens_per_step must be >= 1", "tokens_per_step=0"});
  o.tokens_per_step = 9;
  o.context_tokens = 8;
  expect_error([&] { (void)build_memory_plan(deepseek_v4_flash, o); },
               {"tokens_per_step must be <= context_tokens", "tokens_per_step=9", "context_tokens=8"});
}

TEST(BadInput, OptionsPrefillChunk) {
  plan_options o;
  o.prefill_chunk_tokens = 0;
  expect_error([&] { (void)build_memory_plan(deepseek_v4_flash, o); },
               {"prefill_chunk_tokens must be >= 1", "prefill_chunk_tokens=0"});
}

TEST(BadInput, OptionsTokenspeedBudgetBelowStep) {
  plan_options o;
  o.policy = tokenspeed_policy;
  o.tokens_per_step = 4;
  o.prefill_chunk_tokens = 2;
  expect_error([&] { (void)build_memory_plan(deepseek_v4_flash, o); },
               {"this engine decodes only with a whole step of tokens_per_step tokens in the budget",
                "prefill_chunk_tokens=2", "tokens_per_step=4"});
  o.policy = vllm_policy;  // vLLM shrinks a decode to the budget left: a valid plan
  EXPECT_NO_THROW((void)build_memory_plan(deepseek_v4_flash, o));
}

TEST(BadInput, OptionsPolicyWithoutRules) {
  plan_options o;
  o.policy.window_rules = 0;
  expect_error([&] { (void)build_memory_plan(deepseek_v4_flash, o); },
               {"an allocation policy needs one or two window rules", "window_rules=0"});
  o.policy = vllm_policy;
  o.policy.first_chunk_lookaheads = 0;
  expect_error([&] { (void)build_memory_plan(deepseek_v4_flash, o); },
               {"an engine with running lookahead needs a first-chunk lookahead rule"});
}

TEST(BadInput, OptionsBlockBudget) {
  const model_cache_schema m = build_model_schema(deepseek_v4_flash);
  expect_error([&] { (void)compute_block_budget(m, 0, 1); },
               {"max_context_tokens must be >= 1", "max_context_tokens=0"});
  expect_error([&] { (void)compute_block_budget(m, 1000, 0); },
               {"max_concurrent_requests must be >= 1", "max_concurrent_requests=0"});
  expect_error([&] { (void)compute_block_budget(m, 1000, 1, -1); },
               {"headroom_percent must be >= 0", "headroom_percent=-1"});
}

// ================================ sizes that overflow 64 bits ================================

TEST(BadInput, OverflowPlanContext2e40Requests2e30) {
  const model_config c = flash_with_max_context(std::int64_t{1} << 40);
  plan_options o;
  o.pools = pools_choice::own;
  o.context_tokens = std::int64_t{1} << 40;
  o.requests = std::int64_t{1} << 30;
  ASSERT_GT(flash_oracle(u128{1} << 40, u128{1} << 30), u128{kU64Max});  // the true size needs > 64 bits
  expect_error([&] { (void)build_memory_plan(c, o); },
               {"memory plan overflows 64 bits", "requests=1073741824", "context_tokens=1099511627776"});
}

TEST(BadInput, OverflowPlanContext2e40OneRequestIsExact) {
  const model_config c = flash_with_max_context(std::int64_t{1} << 40);
  plan_options o;
  o.pools = pools_choice::own;
  o.context_tokens = std::int64_t{1} << 40;
  const memory_plan p = build_memory_plan(c, o);
  EXPECT_EQ(u128{p.total_bytes}, flash_oracle(u128{1} << 40, 1));
}

TEST(BadInput, OverflowBudgetAllOnesMaxRequests) {
  // Default Flash, L = 2^20, a step budget of 2^40 tokens (every request may hold its whole
  // context): the largest N whose plan fits in 2^64 - 1 bytes, exactly.
  const u128 L = 1'048'576;
  const u128 B = u128{1} << 40;
  plan_options o;
  o.pools = pools_choice::own;
  o.prefill_chunk_tokens = std::int64_t{1} << 40;
  const u128 n = oracle_max_requests(L, B, kU64Max);
  const request_capacity r = max_requests_for_budget(deepseek_v4_flash, own(o), kU64Max);
  EXPECT_EQ(u128{static_cast<std::uint64_t>(r.max_requests)}, n);
  EXPECT_EQ(u128{r.fixed_bytes}, flash_oracle(L, 0, 1, B));
  EXPECT_EQ(u128{r.bytes_per_request}, flash_oracle(L, 1, 1, B) - flash_oracle(L, 0, 1, B));
  EXPECT_EQ(u128{r.total_bytes}, flash_oracle(L, n, 1, B));
  EXPECT_EQ(u128{r.bytes_left}, u128{kU64Max} - flash_oracle(L, n, 1, B));
  EXPECT_GT(flash_oracle(L, n + 1, 1, B), u128{kU64Max});  // one more does not fit
  // With vLLM's default budget of 8,192 tokens at most 8,192 requests hold pages: any number fits.
  const request_capacity any = max_requests_for_budget(deepseek_v4_flash, own({}), kU64Max);
  EXPECT_EQ(any.max_requests, kI64Max);
  EXPECT_EQ(u128{any.total_bytes}, flash_oracle(L, 8192));
}

TEST(BadInput, OverflowBudgetAllOnesMaxRequestsAtContext2e40) {
  const model_config c = flash_with_max_context(std::int64_t{1} << 40);
  plan_options o;
  o.pools = pools_choice::own;
  o.context_tokens = std::int64_t{1} << 40;
  o.prefill_chunk_tokens = std::int64_t{1} << 40;
  const u128 L = u128{1} << 40;
  const u128 B = u128{1} << 40;
  const u128 n = oracle_max_requests(L, B, kU64Max);
  const request_capacity r = max_requests_for_budget(c, own(o), kU64Max);
  EXPECT_EQ(u128{static_cast<std::uint64_t>(r.max_requests)}, n);
  EXPECT_LE(flash_oracle(L, n, 1, B), u128{kU64Max});
  EXPECT_GT(flash_oracle(L, n + 1, 1, B), u128{kU64Max});
  EXPECT_EQ(u128{r.total_bytes}, flash_oracle(L, n, 1, B));
}

TEST(BadInput, OverflowBudgetAllOnesMaxContext) {
  // N = 2^30 requests, a model allowing 2^40 tokens: the longest context that fits in 2^64 - 1.
  const model_config c = flash_with_max_context(std::int64_t{1} << 40);
  plan_options o;
  o.pools = pools_choice::own;
  o.requests = std::int64_t{1} << 30;
  const context_capacity r = max_context_for_budget(c, own(o), kU64Max);
  const u128 L = static_cast<std::uint64_t>(r.max_context_tokens);
  ASSERT_GT(L, 0U);
  EXPECT_FALSE(r.limited_by_model);
  EXPECT_LE(flash_oracle(L, u128{1} << 30), u128{kU64Max});
  EXPECT_GT(flash_oracle(L + 1, u128{1} << 30), u128{kU64Max});
  EXPECT_EQ(u128{r.total_bytes}, flash_oracle(L, u128{1} << 30));
  EXPECT_EQ(u128{r.bytes_left}, u128{kU64Max} - flash_oracle(L, u128{1} << 30));
}

TEST(BadInput, OverflowMaxRequestsSaturatesWhenOneRequestOverflows) {
  // Regression (fuzz): a plan that overflows 64 bits at N = 1 reported bytes_per_request as a
  // wrapped difference. Now: max_requests 0, fixed bytes exact (null pages), bytes_per_request saturated.
  const model_config c = flash_with_max_context(std::int64_t{1} << 62);
  plan_options o;
  o.pools = pools_choice::own;
  o.context_tokens = std::int64_t{1} << 62;
  ASSERT_GT(flash_oracle(u128{1} << 62, 1), u128{kU64Max});
  const request_capacity r = max_requests_for_budget(c, own(o), kU64Max);
  EXPECT_EQ(r.max_requests, 0);
  EXPECT_EQ(u128{r.fixed_bytes}, flash_oracle(u128{1} << 62, 0));
  EXPECT_EQ(r.bytes_per_request, kU64Max);
  EXPECT_EQ(r.bytes_left, 0U);
}

TEST(BadInput, OverflowMaxContextWithInt64MaxPositions) {
  // Regression (fuzz): max_position_embeddings = INT64_MAX made the binary search compute
  // hi - lo + 1 = 2^63 (signed overflow). Now the answer is exact.
  const model_config c = flash_with_max_context(kI64Max);
  const std::uint64_t budget = std::uint64_t{80} << 30;
  const context_capacity r = max_context_for_budget(c, own({}), budget);
  const u128 L = static_cast<std::uint64_t>(r.max_context_tokens);
  ASSERT_GT(L, 0U);
  EXPECT_LE(flash_oracle(L, 1), u128{budget});
  EXPECT_GT(flash_oracle(L + 1, 1), u128{budget});
}

TEST(BadInput, OverflowMaxContextBelowTokensPerStep) {
  // Regression (fuzz): with s tokens per step, a context L < s is no valid plan, yet the search
  // could return one. Now: if L = s does not fit, the answer is 0.
  plan_options o;
  o.pools = pools_choice::own;
  o.tokens_per_step = 1'048'576;
  o.context_tokens = 1'048'576;
  const std::uint64_t at_s = build_memory_plan(deepseek_v4_flash, o).total_bytes;
  const context_capacity none = max_context_for_budget(deepseek_v4_flash, own(o), at_s - 1);
  EXPECT_EQ(none.max_context_tokens, 0);
  EXPECT_EQ(none.total_bytes, 0U);
  const context_capacity just = max_context_for_budget(deepseek_v4_flash, own(o), at_s);
  EXPECT_EQ(just.max_context_tokens, 1'048'576);
  EXPECT_EQ(just.total_bytes, at_s);
}

TEST(BadInput, OverflowBlockBudget) {
  const model_cache_schema m = build_model_schema(deepseek_v4_flash);
  expect_error([&] { (void)compute_block_budget(m, kI64Max, kI64Max); }, {"size overflows 64 bits"});
}

TEST(BadInput, OverflowFp8DsMlaPageBytes) {
  // Regression (fuzz): rows_per_page x row_bytes was an unchecked (undefined) signed product.
  expect_error(
      [] { (void)make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(512, 64), std::int64_t{1} << 60); },
      {"fp8_ds_mla page bytes (rows_per_page x row_bytes) overflow 64 bits", "a=1152921504606846976", "b=584"});
}

TEST(BadInput, OverflowIndexerPageBytes) {
  expect_error(
      [] {
        (void)make_indexer_page_layout(make_indexer_row_format(indexer_format::mxfp4, 128), std::int64_t{1} << 60);
      },
      {"indexer page bytes (rows_per_page x row_bytes) overflow 64 bits", "a=1152921504606846976", "b=68"});
}

TEST(BadInput, OverflowIndexerFp8RowBytes) {
  // Regression (fuzz): d + d/32 overflowed in a "validated" format's row_bytes().
  const std::int64_t d = kI64Max / 128 * 128;
  expect_error([&] { (void)indexer_fp8_row_bytes(d); }, {"size overflows 64 bits"});
  expect_error([&] { (void)make_indexer_row_format(indexer_format::fp8, d); }, {"size overflows 64 bits"});
}

// ================================ row sizes (inverse functions) ================================

TEST(BadInput, RowBytesMxfp4NotAligned) {
  expect_error([] { (void)indexer_mxfp4_layout_from_row_bytes(67); },
               {"MXFP4 indexer row bytes must be value+scale aligned (a multiple of 17)", "row_bytes=67"});
}

TEST(BadInput, RowBytesMxfp4NotPositive) {
  expect_error([] { (void)indexer_mxfp4_layout_from_row_bytes(0); },
               {"MXFP4 indexer row bytes must be > 0", "row_bytes=0"});
}

TEST(BadInput, RowBytesMxfp4Overflow) {
  // Regression (fuzz): 17 x 541988411009308311 gave index_head_dim = blocks x 32 > INT64_MAX.
  const std::int64_t row = 17 * std::int64_t{541'988'411'009'308'311};
  expect_error(
      [&] { (void)indexer_mxfp4_layout_from_row_bytes(row); },
      {"MXFP4 indexer row bytes give an index_head_dim that overflows 64 bits", "row_bytes=9213802987158241287"});
}

TEST(BadInput, RowBytesFp8NotAligned) {
  expect_error([] { (void)indexer_fp8_layout_from_row_bytes(131); },
               {"FP8 indexer row bytes must be value+scale aligned (a multiple of 132)", "row_bytes=131"});
}

TEST(BadInput, RowBytesFp8NotPositive) {
  expect_error([] { (void)indexer_fp8_layout_from_row_bytes(-132); },
               {"FP8 indexer row bytes must be > 0", "row_bytes=-132"});
}

// ================================ group ids ================================

TEST(BadInput, GroupIdUnsupportedRatio) {
  expect_error([] { (void)parse_group_id("v4.c8a.compressed_kv"); },
               {"DeepSeek V4 group id ratio must be 4 or 128", "ratio=8"});
}

TEST(BadInput, GroupIdRatioNotPlainDecimal) {
  expect_error([] { (void)parse_group_id("v4.c04a.compressed_kv"); },
               {"ratio must be 4 or 128 in plain decimal", "id=\"v4.c04a.compressed_kv\""});
  expect_error([] { (void)parse_group_id("v4.c+4a.compressor_state"); },
               {"ratio must be 4 or 128 in plain decimal", "id=\"v4.c+4a.compressor_state\""});
}

TEST(BadInput, GroupIdBadPrefix) {
  expect_error([] { (void)parse_group_id("v5.swa_kv"); },
               {"must start with v4.swa_kv or v4.c<ratio>a.", "id=\"v5.swa_kv\""});
  expect_error([] { (void)parse_group_id(""); }, {"must start with v4.swa_kv or v4.c<ratio>a.", "id=\"\""});
}

TEST(BadInput, GroupIdBadSuffix) {
  expect_error([] { (void)parse_group_id("v4.c4a.bogus"); },
               {"must end with a.compressor_state or a.compressed_kv", "id=\"v4.c4a.bogus\""});
}

TEST(BadInput, GroupIdTooLong) {
  const std::string id = "v4.c" + std::string(100, '4') + "a.compressed_kv";
  expect_error([&] { (void)parse_group_id(id); }, {"longer than 64 characters", "id=\"v4.c4444", "\"...)"});
}

TEST(BadInput, GroupIdControlBytes) {
  // The id is quoted with \xNN escapes: the message stays one line.
  const std::string msg = error_of([] { (void)parse_group_id(std::string_view("v4.c4a\n\"x", 9)); });
  EXPECT_NE(msg.find(R"(id="v4.c4a\x0a\x22x")"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(BadInput, GroupIdNotInModel) {
  model_config c = deepseek_v4_flash;
  for (int i = 0; i < c.num_layers(); ++i) c.compress_ratios[static_cast<std::size_t>(i)] = 0;  // SWA only
  const group_spec_list g = build_cache_specs(c);
  expect_error([&] { (void)g.at(parse_group_id("v4.c4a.compressed_kv")); },
               {"the model has no such cache group", "ratio=4"});
}

// ================================ budgets ================================

TEST(BadInput, BudgetZero) {
  const request_capacity r = max_requests_for_budget(deepseek_v4_flash, own({}), 0);
  EXPECT_EQ(r.max_requests, 0);
  EXPECT_EQ(r.bytes_left, 0U);
  const context_capacity l = max_context_for_budget(deepseek_v4_flash, own({}), 0);
  EXPECT_EQ(l.max_context_tokens, 0);
  EXPECT_EQ(l.bytes_left, 0U);
}

#ifdef DSV4_HAS_PLANNER
TEST(BadInput, BudgetCliMemoryGib) {
  for (const char* gib : {"0", "-1", "1e300", "17179869184", "1e-308"}) {
    const cli_result r = run_cli({"--memory-gib", gib});
    EXPECT_EQ(r.code, 2) << gib;
    EXPECT_EQ(r.out, "") << gib;
    EXPECT_NE(r.err.find("--memory-gib must be at least 1 byte (2^-30 GiB) and below 2^34 GiB (2^64 bytes)"),
              std::string::npos)
        << gib << ": " << r.err;
  }
  for (const char* gib : {"nan", "inf", "0x10", ""}) {  // not plain decimal: refused before conversion
    const cli_result r = run_cli({"--memory-gib", gib});
    EXPECT_EQ(r.code, 2) << gib;
    EXPECT_EQ(r.out, "") << gib;
    EXPECT_NE(r.err.find("--memory-gib: "), std::string::npos) << gib << ": " << r.err;
  }
}

TEST(BadInput, BudgetCliJustBelow2e64Bytes) {
  const cli_result r = run_cli({"--memory-gib", "17179869183", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  // 17,179,869,183 GiB = (2^34 - 1) x 2^30 B = 2^64 - 2^30 = 18,446,744,073,709,551,616 - 1,073,741,824.
  EXPECT_EQ(j["plan"]["budget_bytes"].get<std::uint64_t>(), 18'446'744'072'635'809'792U);
}

#endif  // DSV4_HAS_PLANNER

// ================================ the CLI's arguments ================================

#ifdef DSV4_HAS_PLANNER
TEST(BadInput, CliBadArguments) {
  const std::vector<std::vector<std::string>> cases = {{"--bogus"},
                                                       {"--preset", "v3"},
                                                       {"--indexer", "fp4"},
                                                       {"--context", "-5"},
                                                       {"--requests", "0"},
                                                       {"--requests", "x"},
                                                       {"--context", "1099511627776", "--requests", "1073741824"},
                                                       {"--config", (kData / "bad" / "ratio8.config.json").string()},
                                                       {"--config", (kData / "missing.json").string()}};
  for (const auto& args : cases) {
    const cli_result r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args[0];
    EXPECT_EQ(r.out, "") << args[0];
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  }
}

/// Runs the planner on `args`, expecting exit 2, nothing on stdout and one stderr line holding every `parts`.
void expect_cli_error(const std::vector<std::string>& args, const std::vector<std::string>& parts) {
  const cli_result r = run_cli(args);
  EXPECT_EQ(r.code, 2) << args[0] << " " << r.err;
  EXPECT_EQ(r.out, "") << args[0];
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  for (const std::string& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << "'" << p << "' in: " << r.err;
}

TEST(BadInput, FormatUnknownName) {
  expect_cli_error({"--kv-format", "v4.fp8"},
                   {"--kv-format: unknown row format 'v4.fp8'", "registered: v4.fp8_ds_mla,"});
  expect_cli_error({"--indexer-format", "mxfp4"}, {"--indexer-format: unknown row format 'mxfp4'"});
  expect_cli_error({"--format", "v4.swa_kv=v4.fp8"}, {"--format v4.swa_kv: unknown row format 'v4.fp8'"});
}

TEST(BadInput, FormatDoesNotFit) {
  // A format of another kind of row, another family, or another width names both sides.
  expect_cli_error(
      {"--kv-format", "v4.indexer_fp8"},
      {"row format 'v4.indexer_fp8' (v4, indexer_k) cannot hold the SWA rows of v4.swa_kv", "another kind of row"});
  expect_cli_error(
      {"--kv-format", "v3.2.fp8_ds_mla"},
      {"row format 'v3.2.fp8_ds_mla' (v3.2, main_kv) cannot hold the SWA rows of v4.swa_kv", "another model family"});
  expect_cli_error({"--preset", "v3.2", "--kv-format", "v4.fp8_ds_mla"},
                   {"row format 'v4.fp8_ds_mla' (v4, main_kv) cannot hold the latent rows of v3.2.mla_kv"});
  expect_cli_error({"--indexer-format", "fp32_state"},
                   {"row format 'fp32_state'", "indexer keys of v4.c4a.compressed_kv"});
  expect_cli_error({"--preset", "v3.2", "--indexer", "mxfp4"},
                   {"--indexer mxfp4: DeepSeek V3.2 indexer keys are FP8 only"});
  // The core refuses the same without names (a constant expression: a static_assert would not compile).
  format_selection s;
  s.swa_kv = formats::v4_indexer_fp8::layout;
  expect_error([&] { (void)build_cache_specs(deepseek_v4_flash, s); }, {"another kind of row"});
}

TEST(BadInput, FormatGroupFlag) {
  expect_cli_error({"--format", "v4.swa_kv"}, {"--format must be GROUP=NAME", "got 'v4.swa_kv'"});
  expect_cli_error({"--format", "v4.c4a.compressor_state=fp32_state"},
                   {"group 'v4.c4a.compressor_state' has no format to choose for a v4 model",
                    "compressor states are always fp32_state"});
  expect_cli_error({"--format", "v3.2.mla_kv=v3.2.bf16"},
                   {"group 'v3.2.mla_kv' has no format to choose for a v4 model"});
  expect_cli_error({"--preset", "v3.2", "--format", "v4.swa_kv=v4.bf16"},
                   {"group 'v4.swa_kv' has no format to choose for a v3.2 model"});
}

#endif  // DSV4_HAS_PLANNER

// ================================ arena and slots ================================

TEST(BadInput, ArenaAlignment) {
  const memory_plan p = build_memory_plan(deepseek_v4_flash, own(short_context()));
  expect_error([&] { (void)build_arena_layout(deepseek_v4_flash, p, 100); },
               {"arena alignment must be a power of two and >= 16 bytes", "alignment=100"});
}

TEST(BadInput, ArenaPlanOfAnotherModel) {
  const memory_plan p = build_memory_plan(deepseek_v4_flash, own(short_context()));
  model_config other = deepseek_v4_flash;
  other.head_dim = 576;  // (576 - 64) % 64 == 0: a valid model, other rows
  expect_error([&] { (void)build_arena_layout(other, p); },
               {"plan's pool format does not hold the model's rows", "row_bytes=584"});
}

TEST(BadInput, ArenaRegionIndex) {
  const arena_layout a = build_arena_layout(deepseek_v4_flash, short_context());
  expect_error([&] { (void)a.region(a.num_regions); }, {"arena region index out of range", "num_regions="});
  expect_error([&] { (void)a.region(-1); }, {"arena region index out of range", "region=-1"});
  expect_error([&] { (void)a.find(parse_group_id("v4.c4a.compressed_kv"), 3); },
               {"the cache group does not cover this layer", "layer=3"});
}

TEST(BadInput, SlotsNullPageAndRange) {
  // Facts 5.10 on the lane work of the generic kernels (slot_work.hpp: `insert_unit`,
  // `gather_unit`), run on the host with emulated lanes in shuffled order on a buffer standing in
  // for an arena region of a 4,096-token Flash plan: slot -1 (padding), a slot in page 0 (the
  // null page) and a slot past the pool write nothing, byte for byte, and gather gives a zero row
  // for them; slot rows_per_page writes page 1 row 0 and nothing else. The buffer has one guard
  // page before and after the region (the arena's neighbours), and page 0 is zero (the arena is
  // zero-filled); the other pages hold a pattern that any stray write would change.
  struct slot_case {
    const char* what;
    pool_region r;
    std::int64_t page_bytes, rows, pages;  // facts section 3; pages from ArenaLayout.FlashGoldenOffsets
    std::int64_t data_begin, data_end;     // page 1 row 0, from the region's first byte (facts section 2)
    std::int64_t scale_begin, scale_end;
  };
  const arena_layout a = build_arena_layout(deepseek_v4_flash, short_context());
  plan_options mx = short_context();
  mx.indexer = indexer_format::mxfp4;
  const arena_layout amx = build_arena_layout(deepseek_v4_flash, mx);
  const std::vector<slot_case> cases = {
      // 64 rows of 576 + 8 B, page 37,440: data 37,440 + [0, 576); scales 37,440 + 64 x 576 = 74,304.
      {"swa layer 0 (region 0)", a.region(0), 37'440, 64, 65, 37'440, 38'016, 74'304, 74'312},
      // 64 FP8 keys of 128 + 4 B, page 8,448: values 8,448 + [0, 128); scale 8,448 + 64 x 128 = 16,640.
      {"c4a keys layer 2", a.find(parse_group_id("v4.c4a.compressed_kv"), 2, 1), 8'448, 64, 17, 8'448, 8'576, 16'640,
       16'644},
      // 2 rows of 576 + 8 B, page 1,728: data 1,728 + [0, 576); scales 1,728 + 2 x 576 = 2,880.
      {"c128a kv layer 3", a.find(parse_group_id("v4.c128a.compressed_kv"), 3), 1'728, 2, 17, 1'728, 2'304, 2'880,
       2'888},
      // 64 MXFP4 keys of 64 + 4 B, page 4,352: values 4,352 + [0, 64); scales 4,352 + 64 x 64 = 8,448.
      {"c4a MXFP4 keys layer 2", amx.find(parse_group_id("v4.c4a.compressed_kv"), 2, 1), 4'352, 64, 17, 4'352, 4'416,
       8'448, 8'452},
  };
  std::mt19937 rng(5);
  for (const slot_case& c : cases) {
    SCOPED_TRACE(c.what);
    const pool_region& r = c.r;
    ASSERT_EQ(r.page_bytes, c.page_bytes);
    ASSERT_EQ(r.rows_per_page, c.rows);
    ASSERT_EQ(r.num_pages, c.pages);
    const std::int64_t region_bytes = c.pages * c.page_bytes;
    const std::int64_t guard = c.page_bytes;
    std::vector<std::uint8_t> buf(static_cast<std::size_t>(guard + region_bytes + guard));
    for (std::size_t k = 0; k < buf.size(); ++k) buf[k] = static_cast<std::uint8_t>(k * 131 + 7);
    std::fill_n(buf.begin() + guard, c.page_bytes, std::uint8_t{0});  // the null page
    const std::vector<std::uint8_t> before = buf;
    const pool_pages pool{buf.data() + guard, r.page_bytes, r.num_pages, r.rows_per_page};
    const std::int64_t slots = c.pages * c.rows;
    visit_format(format_index(r.format.name), [&]<row_format F>() {
      if constexpr (!std::is_same_v<typename F::input_type, bf16>) {
        ADD_FAILURE() << "not a BF16-input format: " << F::layout.name;
        return;
      } else {
        const format_layout& l = r.format;
        validate_pool_pages<F>(l, pool);
        std::vector<typename F::input_type> in(static_cast<std::size_t>(l.values));
        for (std::size_t i = 0; i < in.size(); ++i)  // nonzero everywhere: every code byte is nonzero
          in[i] = float_to_bf16((i % 2 == 0 ? 1.0f : -1.0f) * (1.0f + static_cast<float>(i % 13) / 4.0f));
        std::vector<int> lanes(static_cast<std::size_t>(F::units(l)));
        std::iota(lanes.begin(), lanes.end(), 0);
        const auto insert = [&](std::int64_t slot) {
          std::shuffle(lanes.begin(), lanes.end(), rng);
          std::vector<slot_status> st;
          for (const int u : lanes) st.push_back(insert_unit<F>(l, F::default_policy, pool, slot, in.data(), u));
          return st;
        };
        const auto gather = [&](std::int64_t slot) {
          std::shuffle(lanes.begin(), lanes.end(), rng);
          std::vector<float> out(static_cast<std::size_t>(l.values), -7.0f);
          for (const int u : lanes)
            EXPECT_EQ(gather_unit<F>(l, F::default_policy, pool, slot, out.data(), u), classify_slot(pool, slot));
          return out;
        };
        // Refused and padding slots: -1; the null page's first and last rows; one past the pool,
        // a page past it; other negatives; the extremes.
        const std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
        for (const std::int64_t s : {std::int64_t{-1}, std::int64_t{0}, c.rows - 1, slots, slots + c.rows,
                                     std::int64_t{-2}, -c.rows, kMin, kI64Max}) {
          SCOPED_TRACE(::testing::Message() << "slot " << s);
          const slot_status want = s == -1 ? slot_status::padding : slot_status::refused;
          EXPECT_EQ(classify_slot(pool, s), want);
          for (const slot_status st : insert(s)) EXPECT_EQ(st, want);
          EXPECT_TRUE(buf == before) << "a refused slot changed the buffer";
          for (const float v : gather(s)) ASSERT_EQ(v, 0.0f);
        }
        // The first and the last usable slot.
        EXPECT_EQ(classify_slot(pool, c.rows), slot_status::written);
        EXPECT_EQ(classify_slot(pool, slots - 1), slot_status::written);
        for (const slot_status st : insert(c.rows)) EXPECT_EQ(st, slot_status::written);
        std::int64_t changed = 0;
        for (std::int64_t k = 0; k < static_cast<std::int64_t>(buf.size()); ++k) {
          if (buf[static_cast<std::size_t>(k)] == before[static_cast<std::size_t>(k)]) continue;
          const std::int64_t at = k - guard;  // from the region's first byte
          EXPECT_TRUE((at >= c.data_begin && at < c.data_end) || (at >= c.scale_begin && at < c.scale_end))
              << "byte " << at << " of the region written";
          ++changed;
        }
        EXPECT_GT(changed, (c.data_end - c.data_begin) / 2);
        // What was written decodes as the row codec's page 1 row 0 (row_codec.hpp, another implementation).
        std::vector<float> want(static_cast<std::size_t>(l.values));
        std::vector<std::uint8_t> page(static_cast<std::size_t>(c.page_bytes));
        if (l.name == "v4.fp8_ds_mla") {
          quantize_fp8_ds_mla_row(a.fp8_ds_mla_layout(r), page.data(), 0, in.data());
          dequantize_fp8_ds_mla_row(a.fp8_ds_mla_layout(r), page.data(), 0, want.data());
        } else {
          const indexer_page_layout il = (l.name == "v4.indexer_fp8" ? a : amx).indexer_layout(r);
          quantize_indexer_row(il, page.data(), 0, in.data());
          dequantize_indexer_row(il, page.data(), 0, want.data());
        }
        for (std::int64_t k = 0; k < c.page_bytes; ++k) {
          const bool row0 = (k >= c.data_begin - c.page_bytes && k < c.data_end - c.page_bytes) ||
                            (k >= c.scale_begin - c.page_bytes && k < c.scale_end - c.page_bytes);
          if (row0) {
            EXPECT_EQ(buf[static_cast<std::size_t>(guard + c.page_bytes + k)], page[static_cast<std::size_t>(k)]) << k;
          }
        }
        EXPECT_EQ(gather(c.rows), want);
        // Refused slots still read zeros with page 1 written.
        for (const std::int64_t s : {std::int64_t{-1}, std::int64_t{0}, slots}) {
          for (const float v : gather(s)) ASSERT_EQ(v, 0.0f) << "slot " << s;
        }
      }
    });
  }
}

}  // namespace
