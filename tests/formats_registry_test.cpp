// The format registry as the rest of the library uses it: lookups, the generic kernels' per-lane
// work run with emulated lanes (every format's device byte placement, checked without a GPU),
// the planner's format flags, and DeepSeek V3.2 as a model family.
//
// The bytes each format writes are checked independently of its header in
// tests/formats/format_pages_test.cpp; here the host row codec is the reference for the lanes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dsv4/cache.hpp"
#include "dsv4/cache/config_json.hpp"
#include "dsv4/cache/slot_work.hpp"
#include "dsv4/tools/planner_cli.hpp"
#include "test_util.hpp"

namespace {

using namespace dsv4::cache;  // NOLINT(google-build-using-namespace)
using json = nlohmann::json;

const std::string kData = DSV4_TEST_DATA_DIR;

TEST(FormatRegistry, NamesAndLookups) {
  std::set<std::string_view> names;
  for (const format_layout& f : kFormats) names.insert(f.name);
  EXPECT_EQ(names.size(), 20U);
  EXPECT_EQ(format_index("v4.fp8_ds_mla"), 0);
  EXPECT_EQ(format_index("v4.fp8"), -1);
  EXPECT_EQ(format_by_name("v3.2.fp8_ds_mla").row_bytes, 656);
  try {
    (void)format_by_name("v4.fp9");
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown row format 'v4.fp9' (registered: v4.fp8_ds_mla, "),
              std::string::npos);
  }
  // visit_format reaches the type at each index.
  for (int i = 0; i < static_cast<int>(kFormats.size()); ++i)
    visit_format(i, [&]<row_format F>() { EXPECT_EQ(F::layout.name, kFormats[static_cast<std::size_t>(i)].name); });
  EXPECT_THROW(visit_format(static_cast<int>(kFormats.size()), []<row_format F>() {}), std::invalid_argument);
}

// Writers as values: every format names at least one, its default policy is its first writer's,
// no producer twice, every source names a repository; the lookups answer as documented.
TEST(FormatRegistry, WritersAreValues) {
  for (int i = 0; i < static_cast<int>(kFormats.size()); ++i) {
    const auto ws = kFormatWriters[static_cast<std::size_t>(i)];
    SCOPED_TRACE(std::string(kFormats[static_cast<std::size_t>(i)].name));
    ASSERT_FALSE(ws.empty());
    visit_format(i, [&]<row_format F>() {
      EXPECT_EQ(F::default_policy.fp8_amax_floor, ws[0].policy.fp8_amax_floor);
      EXPECT_EQ(F::default_policy.mxfp4_amax_floor, ws[0].policy.mxfp4_amax_floor);
      EXPECT_EQ(F::default_policy.mxfp4_rounding, ws[0].policy.mxfp4_rounding);
      EXPECT_EQ(F::default_policy.fp8_exp, ws[0].policy.fp8_exp);
    });
    std::set<writer_id> seen;
    for (const format_writer& w : ws) {
      EXPECT_TRUE(seen.insert(w.producer).second) << to_string(w.producer) << " twice";
      EXPECT_NE(w.source.find('/'), std::string_view::npos) << w.source;
      EXPECT_EQ(find_writer(i, w.producer), &w);
    }
  }
  // The defaults of docs/engines/writers.md: FlashMLA's for its pages, vLLM's for the indexer keys,
  // TensorRT-LLM's for the footer page.
  const auto default_of = [](std::string_view f) {
    return kFormatWriters[static_cast<std::size_t>(format_index(f))][0].producer;
  };
  EXPECT_EQ(default_of("v4.fp8_ds_mla"), writer_id::flashmla);
  EXPECT_EQ(default_of("v3.2.fp8_ds_mla"), writer_id::flashmla);
  EXPECT_EQ(default_of("v4.1.fp8"), writer_id::flashmla);
  EXPECT_EQ(default_of("v4.1.fp8.interleaved"), writer_id::flashmla);
  EXPECT_EQ(default_of("v4.1.fp4"), writer_id::flashmla);
  EXPECT_EQ(default_of("v4.indexer_fp8"), writer_id::vllm);
  EXPECT_EQ(default_of("v4.indexer_mxfp4"), writer_id::vllm);
  EXPECT_EQ(default_of("v4.fp8_ds_mla.footer"), writer_id::trtllm);
  EXPECT_EQ(find_writer(format_index("v4.bf16"), writer_id::flashmla), nullptr);
  EXPECT_EQ(find_writer(-1, writer_id::vllm), nullptr);
  writer_id w{};
  EXPECT_TRUE(writer_from_name("tokenspeed", w));
  EXPECT_EQ(w, writer_id::tokenspeed);
  EXPECT_FALSE(writer_from_name("trt-llm", w));
}
// Usable in constant expressions.
static_assert(formats::v4_fp8_ds_mla::writers[0].producer == writer_id::flashmla);
static_assert(find_writer(format_index("v4.indexer_mxfp4"), writer_id::tokenspeed)->policy.mxfp4_rounding ==
              e2m1_rounding::ties_toward_zero);

TEST(FormatRegistry, RowsStayInsideTheirPage) {
  // The last row's data, scales and RoPE end inside the page, for several page sizes.
  for (const format_layout& base : kFormats) {
    const format_layout f = base.role == format_role::state ? bind_state_row_bytes(4096) : base;
    for (const std::int64_t n : {1, 2, 5, 64, 256}) {
      SCOPED_TRACE(std::string(f.name) + " N=" + std::to_string(n));
      EXPECT_GE(f.row_bytes, f.data_bytes + f.scale_bytes);
      EXPECT_LE(f.data_offset(n, n - 1) + f.data_bytes, f.page_bytes(n));
      if (f.has_scales()) {
        EXPECT_LE(f.scale_offset(n, n - 1) + f.scale_bytes, f.page_bytes(n));
      }
      if (f.has_rope()) {
        EXPECT_LE(f.rope_offset(n, n - 1), f.page_bytes(n));
      }
    }
  }
}

// ---------------------------------------------------------------- emulated lanes

/// Deterministic input rows: mixed magnitudes and signs, with an all-zero row.
template <class In>
std::vector<In> make_rows(std::int64_t rows, std::int64_t values, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mant(-1.0F, 1.0F);
  std::uniform_int_distribution<int> expo(-12, 12);
  std::vector<In> v(static_cast<std::size_t>(rows * values));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const float x = i / static_cast<std::size_t>(values) == 1 ? 0.0F : std::ldexp(mant(rng), expo(rng));
    if constexpr (std::is_same_v<In, bf16>) {
      v[i] = float_to_bf16(x);
    } else {
      v[i] = x;
    }
  }
  return v;
}

/// Runs the generic kernels' lane work (slot_work.hpp) for every (token, unit) in a shuffled order
/// and compares with the host row codecs writing the same rows: the pool's bytes, the slot
/// statuses, and the gathered rows (zeros for padding and refused slots).
template <row_format F>
void check_emulated_lanes(const format_layout& l) {
  using In = typename F::input_type;
  SCOPED_TRACE(std::string(l.name));
  constexpr std::int64_t kRows = 64;
  constexpr std::int64_t kPages = 4;
  const std::int64_t page_bytes = l.page_bytes(kRows) + 16;  // a stride above the minimum
  std::vector<std::uint8_t> lanes(static_cast<std::size_t>(page_bytes * kPages), 0);
  std::vector<std::uint8_t> host = lanes;
  const pool_pages pool{lanes.data(), page_bytes, kPages, kRows};
  validate_pool_pages<F>(l, pool);

  // Tokens: distinct usable slots, then padding (-1), the null page (5) and past the end.
  std::vector<std::int64_t> slots = {64, 65, 127, 128, 200, 255, 70, 190, -1, 5, kPages * kRows};
  const auto tokens = static_cast<std::int64_t>(slots.size());
  const std::vector<In> in = make_rows<In>(tokens, l.values, 7);
  const int units = F::units(l);
  std::vector<std::pair<std::int64_t, int>> work;
  for (std::int64_t k = 0; k < tokens; ++k)
    for (int u = 0; u < units; ++u) work.emplace_back(k, u);
  std::mt19937 rng(11);
  std::shuffle(work.begin(), work.end(), rng);
  std::vector<int> refused(static_cast<std::size_t>(tokens), 0);
  for (const auto& [k, u] : work) {
    const slot_status st =
        insert_unit<F>(l, F::default_policy, pool, slots[static_cast<std::size_t>(k)], in.data() + k * l.values, u);
    refused[static_cast<std::size_t>(k)] += st == slot_status::refused ? 1 : 0;
  }
  for (std::int64_t k = 0; k < tokens; ++k) {
    const std::int64_t s = slots[static_cast<std::size_t>(k)];
    const bool usable = s >= kRows && s < kPages * kRows;
    EXPECT_EQ(refused[static_cast<std::size_t>(k)], usable || s == -1 ? 0 : units) << "slot " << s;
    if (usable) quantize_row<F>(l, host.data() + (s / kRows) * page_bytes, kRows, s % kRows, in.data() + k * l.values);
  }
  ASSERT_EQ(lanes, host) << "the lanes' bytes differ from the host row codec's";
  EXPECT_TRUE(std::all_of(lanes.begin(), lanes.begin() + page_bytes, [](std::uint8_t b) { return b == 0; }))
      << "the null page was written";

  std::vector<float> out(static_cast<std::size_t>(tokens * l.values), -1.0F);
  std::shuffle(work.begin(), work.end(), rng);
  for (const auto& [k, u] : work)
    (void)gather_unit<F>(l, F::default_policy, pool, slots[static_cast<std::size_t>(k)], out.data() + k * l.values, u);
  std::vector<float> want(static_cast<std::size_t>(l.values));
  for (std::int64_t k = 0; k < tokens; ++k) {
    const std::int64_t s = slots[static_cast<std::size_t>(k)];
    const bool usable = s >= kRows && s < kPages * kRows;
    if (usable) {
      dequantize_row<F>(l, lanes.data() + (s / kRows) * page_bytes, kRows, s % kRows, want.data());
    } else {
      std::fill(want.begin(), want.end(), 0.0F);
    }
    for (std::int64_t i = 0; i < l.values; ++i) {
      const float got = out[static_cast<std::size_t>(k * l.values + i)];
      const float exp = want[static_cast<std::size_t>(i)];
      ASSERT_TRUE(got == exp || (got != got && exp != exp)) << "token " << k << " value " << i;
    }
  }
}

TEST(FormatLanes, EveryFormatMatchesTheHostCodec) {
  for (int i = 0; i < static_cast<int>(kFormats.size()); ++i) {
    visit_format(i, [&]<row_format F>() {
      check_emulated_lanes<F>(F::layout.role == format_role::state ? bind_state_row_bytes(4096) : F::layout);
    });
  }
}

TEST(FormatLanes, PoolChecks) {
  std::vector<std::uint8_t> page(100);
  const format_layout& l = formats::v4_fp8_ds_mla::layout;
  EXPECT_THROW(validate_pool_pages<formats::v4_fp8_ds_mla>(l, {page.data(), 100, 1, 64}), std::invalid_argument);
  EXPECT_THROW(validate_pool_pages<formats::v4_fp8_ds_mla>(formats::v4_bf16::layout, {page.data(), 1 << 20, 1, 64}),
               std::invalid_argument);
  EXPECT_THROW(validate_pool_pages<formats::fp32_state>(formats::fp32_state::layout, {page.data(), 1 << 20, 1, 4}),
               std::invalid_argument);  // unbound row bytes
}

// ---------------------------------------------------------------- planner flags and V3.2

using cli_out = dsv4::cache::testing::cli_run;
cli_out plan(const std::vector<std::string>& args) {
  return dsv4::cache::testing::run_in_process(
      [&](std::ostream& out, std::ostream& err) { return cli::run_planner(args, out, err); });
}
json plan_json(std::vector<std::string> args) {
  args.emplace_back("--json");
  const cli_out r = plan(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return json::parse(r.out);
}
const json& group(const json& j, const std::string& id) {
  for (const json& g : j["groups"])
    if (g["id"] == id) return g;
  throw std::runtime_error("no group " + id);
}

TEST(FormatFlags, FooterPagesForEveryMainKvPool) {
  // The done-when: --kv-format v4.fp8_ds_mla.footer plans V4 with 37,376-B SWA pages
  // (64 x 584, unpadded; FlashMLA's are 37,440), HCA pages of 2 x 584 = 1,168 (FlashMLA: 1,728).
  const json j = plan_json({"--kv-format", "v4.fp8_ds_mla.footer", "--context", "65536", "--pools", "own"});
  EXPECT_EQ(group(j, "v4.swa_kv")["page_bytes"], 37'376);
  EXPECT_EQ(group(j, "v4.swa_kv")["pools"][0]["format"], "v4.fp8_ds_mla.footer");
  EXPECT_EQ(group(j, "v4.c4a.compressed_kv")["pools"][0]["page_bytes"], 37'376);
  EXPECT_EQ(group(j, "v4.c4a.compressed_kv")["pools"][1]["format"], "v4.indexer_fp8");
  EXPECT_EQ(group(j, "v4.c128a.compressed_kv")["page_bytes"], 1'168);
  EXPECT_EQ(group(j, "v4.c4a.compressor_state")["pools"][0]["format"], "fp32_state");
  const json d = plan_json({"--context", "65536"});
  EXPECT_EQ(group(d, "v4.swa_kv")["page_bytes"], 37'440);
  EXPECT_EQ(group(d, "v4.swa_kv")["pools"][0]["format"], "v4.fp8_ds_mla");
}

TEST(FormatFlags, OneGroupAndTheIndexer) {
  const json j = plan_json({"--format", "v4.c4a.compressed_kv=v4.nvfp4_kv", "--indexer-format",
                            "v4.indexer_mxfp4_in_fp8_slot", "--context", "65536", "--pools", "own", "--gpu", "b200"});
  const json& c4 = group(j, "v4.c4a.compressed_kv");
  EXPECT_EQ(c4["pools"][0]["format"], "v4.nvfp4_kv");
  EXPECT_EQ(c4["pools"][0]["page_bytes"], 24'576);  // 64 x 384, a multiple of 16
  EXPECT_EQ(c4["pools"][1]["format"], "v4.indexer_mxfp4_in_fp8_slot");
  EXPECT_EQ(c4["pools"][1]["page_bytes"], 8'448);                           // the 132-B slot, 68 B used
  EXPECT_EQ(group(j, "v4.swa_kv")["pools"][0]["format"], "v4.fp8_ds_mla");  // other groups keep the default
  // --format wins over --kv-format for its group.
  const json k = plan_json(
      {"--kv-format", "v4.bf16", "--format", "v4.swa_kv=v4.fp8_uniform", "--context", "4096", "--pools", "own"});
  EXPECT_EQ(group(k, "v4.swa_kv")["page_bytes"], 64 * 512);
  EXPECT_EQ(group(k, "v4.c128a.compressed_kv")["page_bytes"], 2 * 1'024);
}

TEST(FormatFlags, NothingBelowTheSimulatedPeakWithOtherFormats) {
  const json j =
      plan_json({"--kv-format", "v4.mxfp4_kv", "--context", "2048", "--requests", "3", "--simulate", "--pools", "own"});
  for (const json& g : j["groups"])
    EXPECT_GE(g["pools"][0]["pages_per_layer"].get<std::int64_t>(), g["simulated_peak_pages"].get<std::int64_t>())
        << g["id"];
}

TEST(FormatFlags, VllmPoolsRefuseFormatsVllmDoesNotWrite) {
  // vLLM stores DeepSeek V4 KV only as fp8_ds_mla (vllm/models/deepseek_v4/attention.py
  // _resolve_dsv4_kv_cache_dtype) and index keys as 132-B FP8 or 68-B MXFP4 rows: other formats are
  // refused under its pool (exit 2, naming the format, the group and the way out), not silently priced.
  const cli_out footer = plan({"--kv-format", "v4.fp8_ds_mla.footer"});
  EXPECT_EQ(footer.code, 2);
  EXPECT_TRUE(footer.out.empty());
  for (const char* part : {"row format 'v4.fp8_ds_mla.footer' of v4.swa_kv", "fp8_ds_mla layout", "--pools own"})
    EXPECT_NE(footer.err.find(part), std::string::npos) << footer.err;
  // (On a Blackwell GPU: on Hopper vLLM refuses MXFP4 index keys before any pool, cli_test.)
  const cli_out keys = plan({"--indexer-format", "v4.indexer_mxfp4_in_fp8_slot", "--gpu", "b200"});
  EXPECT_EQ(keys.code, 2);
  EXPECT_NE(keys.err.find("v4.c4a.compressed_kv[1]"), std::string::npos) << keys.err;
  // tokenspeed's arena stores v4.fp8_ds_mla KV rows only; its own pools take any registered format.
  const cli_out ts = plan({"--kv-format", "v4.fp8_ds_mla.footer", "--engine", "tokenspeed"});
  EXPECT_EQ(ts.code, 2);
  EXPECT_NE(ts.err.find("tokenspeed's V4 recipe stores KV rows as v4.fp8_ds_mla only"), std::string::npos) << ts.err;
  EXPECT_EQ(plan({"--kv-format", "v4.fp8_ds_mla.footer", "--engine", "tokenspeed", "--pools", "own"}).code, 0);
}

TEST(DeepseekV32, PresetEqualsTheConfig) {
  const model_config c = load_model_config(kData + "/deepseek-v3.2.config.json");
  EXPECT_EQ(c.family, model_family::v3_2);
  EXPECT_EQ(c.head_dim, 576);  // kv_lora_rank 512 + qk_rope_head_dim 64
  const group_spec_list a = build_cache_specs(c);
  const group_spec_list b = build_cache_specs(deepseek_v3_2);
  ASSERT_EQ(a.num_groups, 2);
  ASSERT_EQ(b.num_groups, 2);
  for (int g = 0; g < 2; ++g) {
    EXPECT_EQ(a[g].id, b[g].id);
    EXPECT_EQ(a[g].pools[0].format, b[g].pools[0].format);
    EXPECT_EQ(a[g].num_layers, b[g].num_layers);
    EXPECT_EQ(a[g].layers, b[g].layers);
  }
  EXPECT_EQ(c.num_layers(), deepseek_v3_2.num_layers());
  EXPECT_EQ(c.max_position_embeddings, deepseek_v3_2.max_position_embeddings);
}

TEST(DeepseekV32, GroupsAndBytes) {
  // Every one of the 61 + 1 layers caches a 656-B latent row and a 132-B FP8 indexer key per
  // token, full history, 64 rows per page; the MTP layer keeps its indexer cache (vLLM PR #25896).
  constexpr group_spec_list g = build_cache_specs(deepseek_v3_2);
  static_assert(g.num_groups == 2 && g[0].page_bytes() == 64 * 656 && g[1].page_bytes() == 64 * 132);
  EXPECT_EQ(to_string(g[0].id), "v3.2.mla_kv");
  EXPECT_EQ(to_string(g[1].id), "v3.2.indexer_k");
  EXPECT_EQ(parse_group_id("v3.2.indexer_k"), g[1].id);
  EXPECT_EQ(g[0].num_layers, 62);
  EXPECT_EQ(g[1].num_layers, 62);
  EXPECT_FALSE(g[0].has_sliding_window());
  EXPECT_EQ(g[0].page_size_tokens(), 64);
  EXPECT_EQ(build_cache_specs(deepseek_v3_2, indexer_format::fp8, false)[1].num_layers, 61);

  // With the MTP layer cached (--mtp: vLLM caches it with speculative decoding only).
  const json j = plan_json({"--preset", "v3.2", "--context", "8192", "--requests", "2", "--mtp"});
  EXPECT_EQ(j["layers"].size(), 62U);
  for (const json& l : j["layers"]) {
    EXPECT_EQ(l["attention"], "mla");
    EXPECT_EQ(l["bytes_per_context_token"], 656.0 + 132.0);
    EXPECT_EQ(l["fixed_bytes_per_request"], 0);
  }
  EXPECT_EQ(group(j, "v3.2.mla_kv")["pools"][0]["format"], "v3.2.fp8_ds_mla");
  EXPECT_EQ(group(j, "v3.2.indexer_k")["pools"][0]["format"], "v3.2.indexer_fp8");
  // Ideal bytes: 2 requests x 8,192 tokens x 62 layers x 788 B.
  EXPECT_EQ(j["plan"]["ideal_bytes"], 2ULL * 8192 * 62 * 788);
  // vLLM's default (no speculative decoding): the 61 main layers only, 2 x 8,192 x 61 x 788 B.
  EXPECT_EQ(plan_json({"--preset", "v3.2", "--context", "8192", "--requests", "2"})["plan"]["ideal_bytes"],
            2ULL * 8192 * 61 * 788);
  // Other V3.2 formats: the flat FP8 and BF16 rows.
  EXPECT_EQ(group(plan_json({"--preset", "v3.2", "--kv-format", "v3.2.fp8_flat", "--context", "64"}),
                  "v3.2.mla_kv")["page_bytes"],
            64 * 576);
  EXPECT_EQ(group(plan_json({"--preset", "v3.2", "--format", "v3.2.mla_kv=v3.2.bf16", "--context", "64"}),
                  "v3.2.mla_kv")["page_bytes"],
            64 * 1'152);
}

TEST(DeepseekV32, PlanAtOrAboveTheSimulatedPeak) {
  for (const std::string engine : {"vllm", "tokenspeed", "tokenspeed-default"}) {
    const json j = plan_json({"--preset", "v3.2", "--engine", engine, "--context", "3000", "--requests", "3",
                              "--tokens-per-step", "2", "--prefill-chunk", "512", "--simulate"});
    for (const json& g : j["groups"])
      EXPECT_GE(g["pools"][0]["pages_per_layer"].get<std::int64_t>(), g["simulated_peak_pages"].get<std::int64_t>())
          << engine << " " << g["id"];
  }
}

TEST(DeepseekV32, TextOutput) {
  const cli_out r = plan({"--preset", "v3.2", "--context", "4096", "--verbose"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("DeepSeek-V3.2: 61 layers + 1 MTP, head_dim 576 (512 NoPE + 64 RoPE)"), std::string::npos);
  EXPECT_NE(r.out.find("sliding_window none"), std::string::npos);
  EXPECT_NE(r.out.find("main layers: 61 MLA; MTP layers: 1 MLA"), std::string::npos);
  EXPECT_NE(r.out.find("v3.2.mla_kv v3.2.fp8_ds_mla (656 B)"), std::string::npos);
}

}  // namespace
