// DeepSeek V4.1: the config, its KV-sharing schedule (owners, reuse, reindex, draft layers), the
// four groups and their formats, the ratio-2 state ring of each engine, and plan >= simulated peak.
// Right values are the released config's (docs/layout-variants.md 1.2-1.3) and hand arithmetic.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dsv4/cache.hpp"
#include "dsv4/cache/alloc_sim.hpp"
#include "dsv4/cache/config_json.hpp"
#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

const std::string kData = DSV4_TEST_DATA_DIR;

nlohmann::json released_config() {
  std::ifstream in(kData + "/deepseek-v4.1-flash.config.json");
  return nlohmann::json::parse(in);
}

/// The released config with its text_config fields moved to the top level (a flat config).
nlohmann::json flat_config() {
  nlohmann::json root = released_config();
  nlohmann::json flat = root["text_config"];
  flat["model_type"] = "deepseek_v41";
  return flat;
}

// ---- schedule ----

TEST(V41Schedule, ReleasedConfigOwnersRolesAndDraftLayers) {
  const layer_schedule s = build_layer_schedule(deepseek_v4_1_flash);
  ASSERT_EQ(s.num_layers, 43);
  EXPECT_EQ(s.count(attention_kind::swa, false), 2);
  EXPECT_EQ(s.count(attention_kind::csa2, false), 18);
  EXPECT_EQ(s.count(attention_kind::csa1, false), 20);
  EXPECT_EQ(s.count(attention_kind::swa) - s.count(attention_kind::swa, false), 3);  // draft layers
  for (int i = 0; i < 43; ++i) {
    const layer_spec& l = s[i];
    // The released owner map (layout-variants 7): 2-7 -> 2, 8-13 -> 8, 14-19 -> 14, 20-39 -> 20.
    const int owner = i < 2 || i >= 40 ? -1 : i < 8 ? 2 : i < 14 ? 8 : i < 20 ? 14 : 20;
    EXPECT_EQ(l.kv_owner, owner) << "layer " << i;
    const bool is_owner = i == 2 || i == 8 || i == 14 || i == 20;
    const bool reindex = i == 24 || i == 28 || i == 32 || i == 36;
    const layer_role want = i >= 40    ? layer_role::draft
                            : i < 2    ? layer_role::none
                            : is_owner ? layer_role::owner
                            : reindex  ? layer_role::reindex
                                       : layer_role::reuse;
    EXPECT_EQ(l.role, want) << "layer " << i;
    EXPECT_EQ(l.mtp, i >= 40) << "layer " << i;
  }
  EXPECT_EQ(to_string(s[2].kind), "csa2");
  EXPECT_EQ(to_string(s[20].kind), "csa1");
  EXPECT_EQ(to_string(s[0].kind), "swa");
}

TEST(V41Schedule, OwnerIsTheNearestEarlierSourceOfTheSameRatio) {
  model_config c = deepseek_v4_1_flash;
  c.kv_source_layer_ids = {};
  for (const int l : {2, 8, 20}) c.kv_source_layer_ids.push_back(l);  // no owner 14
  const layer_schedule s = build_layer_schedule(c);
  for (int i = 8; i < 20; ++i) EXPECT_EQ(s[i].kv_owner, 8) << i;
  EXPECT_EQ(s[14].role, layer_role::reindex);  // still an index source, no longer an owner
  // A ratio-1 layer never reads a ratio-2 owner, even a nearer one.
  c.kv_source_layer_ids = {};
  for (const int l : {2, 20, 22}) c.kv_source_layer_ids.push_back(l);
  const layer_schedule t = build_layer_schedule(c);
  EXPECT_EQ(t[21].kv_owner, 20);
  EXPECT_EQ(t[30].kv_owner, 22);
  EXPECT_EQ(t[19].kv_owner, 2);
}

TEST(V41Schedule, ValidatorsNameTheFieldAndValue) {
  const auto with = [](auto edit) {
    model_config c = deepseek_v4_1_flash;
    edit(c);
    return c;
  };
  expect_invalid([&] { (void)build_layer_schedule(with([](model_config& c) { c.compress_ratios[5] = 4; })); },
                 {"0 (SWA), 1 or 2", "layer=5", "compress_ratio=4"});
  expect_invalid([&] { (void)build_layer_schedule(with([](model_config& c) { c.compress_ratios[41] = 1; })); },
                 {"draft", "layer=41", "compress_ratio=1"});
  expect_invalid(
      [&] {
        (void)build_layer_schedule(with([](model_config& c) {
          c.kv_source_layer_ids = {};
          for (const int l : {1, 8, 14, 20}) c.kv_source_layer_ids.push_back(l);  // layer 1 is SWA
        }));
      },
      {"ratio-1 or ratio-2", "kv_source_layer_ids=1", "compress_ratio=0"});
  expect_invalid(
      [&] {
        (void)build_layer_schedule(with([](model_config& c) {
          c.kv_source_layer_ids = {};
          for (const int l : {8, 14, 20}) c.kv_source_layer_ids.push_back(l);  // layers 2-7 have no owner
        }));
      },
      {"needs an owner", "layer=2", "compress_ratio=2"});
  expect_invalid(
      [&] {
        (void)build_layer_schedule(with([](model_config& c) {
          c.index_source_layer_ids = {};
          c.index_source_layer_ids.push_back(0);
        }));
      },
      {"ratio-1 or ratio-2", "index_source_layer_ids=0"});
  expect_invalid(
      [&] {
        (void)build_layer_schedule(with([](model_config& c) {
          c.kv_source_layer_ids = {};
          for (const int l : {2, 8, 8, 20}) c.kv_source_layer_ids.push_back(l);
        }));
      },
      {"strictly ascending", "kv_source_layer_ids=8"});
  expect_invalid(
      [&] {
        (void)build_layer_schedule(with([](model_config& c) {
          c.kv_source_layer_ids = {};
          for (const int l : {2, 8, 14, 40}) c.kv_source_layer_ids.push_back(l);  // a draft layer
        }));
      },
      {"main layer", "kv_source_layer_ids=40"});
  // V4 and V3.2 configs have no source lists.
  expect_invalid(
      [] {
        model_config c = deepseek_v4_flash;
        c.kv_source_layer_ids.push_back(2);
        (void)build_layer_schedule(c);
      },
      {"only a DeepSeek V4.1 model"});
}

// ---- config.json ----

TEST(V41Config, ReleasedConfigIsThePreset) {
  const model_config c = load_model_config(kData + "/deepseek-v4.1-flash.config.json");
  EXPECT_EQ(c.family, model_family::v4_1);
  EXPECT_EQ(c.num_hidden_layers, 40);
  EXPECT_EQ(c.num_nextn_predict_layers, 3);
  EXPECT_EQ(c.dspark_block_size, 5);
  EXPECT_EQ(std::vector<int>(c.kv_source_layer_ids.begin(), c.kv_source_layer_ids.end()),
            (std::vector<int>{2, 8, 14, 20}));
  EXPECT_EQ(std::vector<int>(c.index_source_layer_ids.begin(), c.index_source_layer_ids.end()),
            (std::vector<int>{2, 8, 14, 20, 24, 28, 32, 36}));
  const plan_options o{.context_tokens = 65'536, .requests = 8};
  EXPECT_EQ(fingerprint(describe_layout(c, o)), fingerprint(describe_layout(deepseek_v4_1_flash, o)));
  EXPECT_EQ(build_memory_plan(c, o).total_bytes, build_memory_plan(deepseek_v4_1_flash, o).total_bytes);
}

TEST(V41Config, NestedAndFlatConfigsPlanTheSame) {
  const model_config nested = model_config_from_json(released_config(), "v41");
  const model_config flat = model_config_from_json(flat_config(), "v41");
  const plan_options o{.context_tokens = 131'072, .requests = 4};
  EXPECT_EQ(canonical_layout(describe_layout(nested, o)).view(), canonical_layout(describe_layout(flat, o)).view());
  EXPECT_EQ(build_memory_plan(nested, o).total_bytes, build_memory_plan(flat, o).total_bytes);
  // The text_config's own model_type names the family too.
  nlohmann::json text_only = released_config();
  text_only.erase("model_type");
  EXPECT_EQ(model_config_from_json(text_only, "v41").family, model_family::v4_1);
}

TEST(V41Config, BadConfigsNameTheKeyAndValue) {
  const auto fails = [](nlohmann::json j, std::initializer_list<const char*> parts) {
    expect_invalid([&] { (void)model_config_from_json(j, "bad"); }, parts);
  };
  nlohmann::json j = released_config();
  j["text_config"]["compress_ratios"][7] = 4;
  fails(j, {"layer=7", "compress_ratio=4"});
  j = released_config();
  j["text_config"]["compress_ratios"][42] = 2;
  fails(j, {"draft", "layer=42", "compress_ratio=2"});
  j = released_config();
  j["text_config"].erase("kv_source_layer_ids");
  fails(j, {"missing key 'kv_source_layer_ids'"});
  j = released_config();
  j["text_config"]["kv_source_layer_ids"] = "2,8";
  fails(j, {"kv_source_layer_ids", "array"});
  j = released_config();
  j["text_config"]["kv_source_layer_ids"] = {2, 8, 14, 19.5};
  fails(j, {"kv_source_layer_ids[3]", "integer"});
  j = released_config();
  j["text_config"]["kv_source_layer_ids"] = {0, 8, 14, 20};
  fails(j, {"kv_source_layer_ids=0", "compress_ratio=0"});
  j = released_config();
  j["text_config"]["index_source_layer_ids"] = {2, 8, 14, 20, 41};
  fails(j, {"index_source_layer_ids=41", "main layer"});
  j = released_config();
  j["text_config"]["dspark_block_size"] = -1;
  fails(j, {"dspark_block_size", "-1"});
  j = released_config();
  j["model_type"] = "deepseek_v42";
  fails(j, {"deepseek_v41", "deepseek_v42"});
}

// ---- groups and formats ----

TEST(V41Groups, DefaultFormatSetGeometry) {
  const group_spec_list g = build_cache_specs(deepseek_v4_1_flash);
  ASSERT_EQ(g.num_groups, 4);
  const paged_cache_group_spec& swa = g.at(parse_group_id("v4.1.swa"));
  EXPECT_EQ(to_string(swa.id), "v4.1.swa");
  EXPECT_EQ(swa.num_layers, 43);  // 40 main + 3 draft layers
  EXPECT_EQ(swa.rows_per_page, 64);
  EXPECT_EQ(swa.entry_stride_tokens, 1);
  EXPECT_EQ(swa.sliding_window_tokens, 128);
  EXPECT_EQ(swa.pools[0].format.name, "v4.1.fp8");
  EXPECT_EQ(swa.page_bytes(), 64 * 528);  // 33,792 = 66 x 512: no padding
  EXPECT_EQ(swa.prefix, prefix_reuse::replay);

  const paged_cache_group_spec& r2 = g.at(parse_group_id("v4.1.global_r2"));
  EXPECT_EQ(std::vector<int>(r2.layers.begin(), r2.layers.begin() + r2.num_layers), (std::vector<int>{2, 8, 14}));
  EXPECT_EQ(r2.rows_per_page, 64);
  EXPECT_EQ(r2.entry_stride_tokens, 2);
  EXPECT_EQ(r2.page_size_tokens(), 128);
  ASSERT_EQ(r2.num_pools, 2);
  EXPECT_EQ(r2.pools[0].format.name, "v4.1.fp4");
  EXPECT_EQ(r2.pools[0].page_bytes, 64 * 288);  // 18,432
  EXPECT_EQ(r2.pools[1].format.name, "v4.indexer_mxfp4");
  EXPECT_EQ(r2.pools[1].page_bytes, 64 * 68);  // 4,352
  EXPECT_FALSE(r2.has_sliding_window());
  EXPECT_EQ(r2.prefix, prefix_reuse::persist);

  const paged_cache_group_spec& r1 = g.at(parse_group_id("v4.1.global_r1"));
  EXPECT_EQ(std::vector<int>(r1.layers.begin(), r1.layers.begin() + r1.num_layers), (std::vector<int>{20}));
  EXPECT_EQ(r1.entry_stride_tokens, 1);
  EXPECT_EQ(r1.row_bytes(), 288 + 68);

  const paged_cache_group_spec& st = g.at(parse_group_id("v4.1.compressor_state_r2"));
  EXPECT_EQ(std::vector<int>(st.layers.begin(), st.layers.begin() + st.num_layers), (std::vector<int>{2, 8, 14}));
  EXPECT_EQ(st.rows_per_page, 2);
  EXPECT_EQ(st.pools[0].row_bytes, 4096);  // fp32 [512 kv | 512 score]
  EXPECT_EQ(st.page_bytes(), 8192);
  EXPECT_EQ(st.sliding_window_tokens, 2);
  EXPECT_TRUE(st.engine_state_ring);
  EXPECT_EQ(st.prefix, prefix_reuse::persist);

  // Without the draft layers the SWA group has the 40 main layers only.
  EXPECT_EQ(build_cache_specs(deepseek_v4_1_flash, indexer_format::fp8, false)[0].num_layers, 40);
}

TEST(V41Groups, HopperFormatSetAndOverrides) {
  format_overrides o;
  o.set = format_set::v4;
  const group_spec_list g =
      build_cache_specs(deepseek_v4_1_flash, resolve_formats(model_family::v4_1, indexer_format::fp8, o));
  EXPECT_EQ(g[0].pools[0].format.name, "v4.fp8_ds_mla");
  EXPECT_EQ(g[0].page_bytes(), 37'440);  // 64 x 584 padded to 576
  EXPECT_EQ(g[1].pools[0].format.name, "v4.fp8_ds_mla");
  EXPECT_EQ(g[1].pools[1].format.name, "v4.indexer_fp8");
  EXPECT_EQ(g[1].row_bytes(), 584 + 132);
  // A V4.1 format cannot hold a V4 model's rows; a V4.1 set is refused for V4.
  format_overrides v41_on_v4;
  v41_on_v4.swa_kv = format_index("v4.1.fp8");
  expect_invalid(
      [&] { check_formats(deepseek_v4_flash, resolve_formats(model_family::v4, indexer_format::fp8, v41_on_v4)); },
      {"v4.1.fp8", "another model family", "v4.swa_kv"});
  format_overrides set_on_v4;
  set_on_v4.set = format_set::v41;
  expect_invalid([&] { (void)resolve_formats(model_family::v4, indexer_format::fp8, set_on_v4); },
                 {"DeepSeek V4.1 models only"});
  // The interleaved page rule through a group override.
  format_overrides inter;
  inter.swa_kv = format_index("v4.1.fp8.interleaved");
  const group_spec_list gi =
      build_cache_specs(deepseek_v4_1_flash, resolve_formats(model_family::v4_1, indexer_format::fp8, inter));
  EXPECT_EQ(gi[0].pools[0].format.name, "v4.1.fp8.interleaved");
  EXPECT_EQ(gi[0].pools[0].format.scale_offset(64, 1), 1'040);  // row 1 at 528: scales at 528 + 512
  EXPECT_EQ(g[0].pools[0].format.name, "v4.fp8_ds_mla");
}

TEST(V41Groups, GroupIdsRoundTrip) {
  for (const char* id : {"v4.1.swa", "v4.1.global_r2", "v4.1.global_r1", "v4.1.compressor_state_r2"})
    EXPECT_EQ(to_string(parse_group_id(id)), id);
  expect_invalid([] { (void)parse_group_id("v4.1.global_r4"); }, {"v4.1.global_r4"});
}

// ---- engine rules and plan safety ----

TEST(V41Policy, StateRingPerEngine) {
  // vLLM CompressorStateCache: max(8, next_pow2(num_spec + 2)), num_spec = s - 1.
  const std::vector<std::pair<std::int64_t, std::int64_t>> vllm = {{1, 8}, {6, 8}, {7, 8}, {8, 16}, {15, 16}, {16, 32}};
  for (const auto& [s, rows] : vllm) {
    EXPECT_EQ(vllm_state_ring_rows(s), rows) << "s=" << s;
    EXPECT_EQ(effective_window(2, 0, vllm_policy, s, true), rows) << "s=" << s;
  }
  // tokenspeed: the window, 2 tokens (its protection is the in-flight tokens of the page rule).
  EXPECT_EQ(effective_window(2, 0, tokenspeed_policy, 6, true), 2);
  // Groups without the engine ring are untouched.
  EXPECT_EQ(effective_window(128, 0, vllm_policy, 6, false), 128);
}

TEST(V41Plan, PlanIsAtLeastTheSimulatedPeakForEveryEngine) {
  const group_spec_list specs = build_cache_specs(deepseek_v4_1_flash);
  for (const std::string_view e : {"vllm", "tokenspeed", "tokenspeed-default"})
    for (const std::int64_t s : {std::int64_t{1}, std::int64_t{6}})  // 6 = 1 + dspark_block_size
      for (const auto& [n, ctx, b] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
               {1, 300, 64}, {3, 1'000, 256}, {7, 2'049, 512}}) {
        const allocation_policy p = policy_for(e);
        const plan_options o{.context_tokens = ctx,
                             .requests = n,
                             .tokens_per_step = s,
                             .prefill_chunk_tokens = b,
                             .policy = p,
                             .pools = pools_choice::own};
        const memory_plan plan = build_memory_plan(deepseek_v4_1_flash, o);
        const sim_result sim = simulate_worst_case(specs, p, n, ctx, s, b);
        SCOPED_TRACE(std::string(e) + " s=" + std::to_string(s) + " N=" + std::to_string(n) +
                     " L=" + std::to_string(ctx));
        ASSERT_EQ(plan.num_groups, 4);
        for (int g = 0; g < plan.num_groups; ++g)
          EXPECT_GE(plan.groups[static_cast<std::size_t>(g)].pages_per_layer,
                    sim.peak_pages[static_cast<std::size_t>(g)] + 1)
              << to_string(plan.groups[static_cast<std::size_t>(g)].spec.id);
        EXPECT_GE(plan.total_bytes, sim.peak_bytes);
        if (e != "vllm") continue;
        // vLLM's shared pool: 32-token SWA blocks, 128-token global blocks, one ring block a request.
        plan_options v = o;
        v.pools = pools_choice::engine;
        const memory_plan shared = build_memory_plan(deepseek_v4_1_flash, v);
        const sim_result on_pool = simulate_worst_case(shared.pools, p, n, ctx, s, b);
        EXPECT_GE(shared.num_blocks - 1, std::max(on_pool.peak_blocks, on_pool.peak_admission_blocks));
        for (int g = 0; g < shared.pools.num_groups; ++g)
          EXPECT_GE(shared.engine_groups[static_cast<std::size_t>(g)].blocks,
                    on_pool.peak_pages[static_cast<std::size_t>(on_pool.table_of_group[static_cast<std::size_t>(g)])])
              << "engine group " << g;
      }
}

TEST(V41Plan, VllmStateRingHoldsAtLeastItsRows) {
  // One request under vLLM: the ratio-2 state keeps max(8, ...) rows = at least 4 pages of 2 rows.
  for (const std::int64_t s : {std::int64_t{1}, std::int64_t{6}, std::int64_t{8}}) {
    const plan_options o{.context_tokens = 4'096, .requests = 1, .tokens_per_step = s, .pools = pools_choice::own};
    const memory_plan p = build_memory_plan(deepseek_v4_1_flash, o);
    const group_plan& st = p.groups[3];
    ASSERT_EQ(to_string(st.spec.id), "v4.1.compressor_state_r2");
    EXPECT_EQ(st.window_tokens, s < 8 ? 8 : 16);
    EXPECT_GE(st.pages_per_request, (s < 8 ? 8 : 16) / 2);
    // In vLLM's own pool the ring is one block of those rows for the request's life
    // (CircularBufferSpec): 8 or 16 rows of 4,096 B, unpadded.
    plan_options v = o;
    v.pools = pools_choice::engine;
    const memory_plan shared = build_memory_plan(deepseek_v4_1_flash, v);
    // The 3 ratio-2 owners' rings: one group while 3 rings fit the widest block (114,688 B), else one
    // group a ring (vLLM's state-bucket cap).
    std::int64_t ring_bytes = 0;
    int ring_groups = 0;
    for (int g = 0; g < shared.pools.num_groups; ++g) {
      const engine_group& ring = shared.pools[g];
      if (ring.rule.kind != table_kind::request_ring) continue;
      ++ring_groups;
      ring_bytes += ring.bytes();
      EXPECT_EQ(ring.members[0].rows_per_page, s < 8 ? 8 : 16);
      EXPECT_EQ(shared.engine_groups[static_cast<std::size_t>(g)].pages_per_request, 1);
      EXPECT_LE(ring.bytes(), shared.pools.bytes_per_block);
    }
    EXPECT_EQ(ring_bytes, 3 * (s < 8 ? 8 : 16) * 4'096);
    EXPECT_EQ(ring_groups, s < 8 ? 1 : 3);
  }
}

TEST(V41Descriptor, RolesAndOwnersInTheCanonicalLayout) {
  const std::string text(canonical_layout(describe_layout(deepseek_v4_1_flash)).view());
  EXPECT_NE(text.find(R"("model":"v4.1")"), std::string::npos);
  EXPECT_NE(text.find(R"({"index":2,"attention":"csa2","ratio":2,"role":"owner","owner":2})"), std::string::npos);
  EXPECT_NE(text.find(R"({"index":3,"attention":"csa2","ratio":2,"role":"reuse","owner":2})"), std::string::npos);
  EXPECT_NE(text.find(R"({"index":24,"attention":"csa1","ratio":1,"role":"reindex","owner":20})"), std::string::npos);
  EXPECT_NE(text.find(R"({"index":40,"attention":"swa","ratio":0,"role":"draft","owner":40})"), std::string::npos);
  EXPECT_NE(
      text.find(
          R"("id":"v4.1.global_r2","retention":"full_history","tokens_per_row":2,"rows_per_page":64,"layers":[2,8,14])"),
      std::string::npos);
  // The split and the interleaved V4.1 pages are different layouts.
  format_overrides inter;
  inter.swa_kv = format_index("v4.1.fp8.interleaved");
  EXPECT_NE(fingerprint(describe_layout(deepseek_v4_1_flash)),
            fingerprint(describe_layout(deepseek_v4_1_flash, plan_options{.formats = inter})));
}

TEST(V41Parallel, StageMayNotSplitAnOwnerFromItsReaders) {
  parallel_config p;
  p.pp = 4;  // vLLM's even split: 0-9, 10-19, 20-29, 30-39; layers 10-13 read owner 8
  expect_invalid([&] { validate(p, deepseek_v4_1_flash); },
                 {"pipeline stage of the owner", "layer=10", "kv_owner=8", "stage_first_layer=10"});
  for (const int n : {8, 6, 6, 20}) p.stage_layers[static_cast<std::size_t>(p.num_stage_layers++)] = n;
  validate(p, deepseek_v4_1_flash);  // 0-7, 8-13, 14-19, 20-39: every owner with its readers
  const rank_plan_result last = rank_plan(deepseek_v4_1_flash, plan_options{.context_tokens = 8'192}, p, 3);
  ASSERT_EQ(last.plan.num_groups, 2);  // swa and global_r1 (owner 20); no ratio-2 group on this stage
  EXPECT_EQ(to_string(last.plan.groups[1].spec.id), "v4.1.global_r1");
  EXPECT_EQ(last.plan.groups[0].spec.num_layers, 20 + 3);  // layers 20-39 and the draft layers
  parallel_config two;
  two.pp = 2;  // 0-19 | 20-39
  validate(two, deepseek_v4_1_flash);
}

}  // namespace
}  // namespace dsv4::cache
