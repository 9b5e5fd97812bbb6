// The layout contract (issue: descriptor, fingerprint, diff, check): the canonical bytes and
// their XXH64 against libxxhash, a preset and its config.json giving one fingerprint, the diff
// of layouts that engines confuse, and `check` naming a hand-edited number.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "../test_util.hpp"
#include "dsv4/cache/config_json.hpp"
#include "dsv4/cache/descriptor.hpp"
#include "dsv4/tools/layout_cli.hpp"

namespace {

using namespace dsv4::cache;  // NOLINT(google-build-using-namespace)
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

const fs::path kData = DSV4_TEST_DATA_DIR;

// The fingerprints a static_assert can check (g++ 12 and clang 14, default limits). Their values
// are checked against libxxhash at run time below (LibxxhashAgrees).
static_assert(fingerprint(describe_layout(deepseek_v4_pro)) == 0x2a0f2a1ab200ee9cULL);
static_assert(fingerprint(describe_layout(deepseek_v4_flash)) == 0xf8c17eefea49254eULL);

using run_out = dsv4::cache::testing::cli_run;
run_out layout_cli(const std::vector<std::string>& args) {
  return dsv4::cache::testing::run_in_process(
      [&](std::ostream& out, std::ostream& err) { return dsv4::tools::run_layout(args, out, err); });
}

fs::path temp_file(const std::string& name, const std::string& text) {
  const fs::path p = dsv4::cache::testing::unique_temp_path("contract-" + name);
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

/// `describe` with `args`, written to a temporary file.
fs::path describe(const std::string& name, std::vector<std::string> args) {
  args.insert(args.begin(), "describe");
  const run_out r = layout_cli(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return temp_file(name, r.out);
}

std::uint64_t libxxhash(std::string_view s) { return XXH64(s.data(), s.size(), 0); }

/// "0x..." of libxxhash's XXH64 of `s` (an independent hash of the compact layout).
std::string fingerprint_hex_string(const std::string& s) { return dsv4::tools::contract_detail::hex(libxxhash(s)); }

TEST(Contract, LibxxhashAgrees) {
  for (const model_config* m : {&deepseek_v4_flash, &deepseek_v4_pro, &deepseek_v4_1_flash, &deepseek_v3_2}) {
    const cache_layout l = describe_layout(*m);
    EXPECT_EQ(fingerprint(l), libxxhash(canonical_layout(l).view())) << m->name.view();
  }
  EXPECT_EQ(libxxhash(canonical_layout(describe_layout(deepseek_v4_pro)).view()), 0x2a0f2a1ab200ee9cULL);
}

TEST(Contract, CanonicalBytesAreTheCheckedInString) {
  // tests/data/fingerprint/v4-flash.layout.json: the canonical layout of V4-Flash with the
  // default formats, checked in; its libxxhash hash is the fingerprint.
  std::ifstream in(kData / "fingerprint" / "v4-flash.layout.json", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string want = ss.str();
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(canonical_layout(describe_layout(deepseek_v4_flash)).view(), want);
  EXPECT_EQ(fingerprint(describe_layout(deepseek_v4_flash)), libxxhash(want));
  // Canonical form: compact, no floats, booleans or nulls, no trailing newline; nlohmann's
  // compact dump of the parsed text gives the same bytes back.
  EXPECT_EQ(want.find_first_of(" \n\t"), std::string::npos);
  EXPECT_EQ(ojson::parse(want).dump(), want);
  const auto only_ints_and_strings = [](const ojson& v, const auto& self) -> bool {
    if (v.is_object() || v.is_array()) {
      for (const ojson& x : v)
        if (!self(x, self)) return false;
      return true;
    }
    return v.is_number_integer() || v.is_string();
  };
  EXPECT_TRUE(only_ints_and_strings(ojson::parse(want), only_ints_and_strings));
}

TEST(Contract, PresetAndConfigGiveOneFingerprint) {
  const std::vector<std::pair<std::string, std::string>> pairs = {{"v4-flash", "deepseek-v4-flash.config.json"},
                                                                  {"v4-pro", "deepseek-v4-pro.config.json"},
                                                                  {"v3.2", "deepseek-v3.2.config.json"}};
  for (const auto& [preset, file] : pairs) {
    const run_out a = layout_cli({"fingerprint", "--preset", preset});
    const run_out b = layout_cli({"fingerprint", "--config", (kData / file).string()});
    EXPECT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(a.out, b.out) << preset;
    EXPECT_EQ(a.out.size(), 19U);  // 0x + 16 hex + newline
  }
  // The layout does not depend on the plan's sizes: only on where bytes go.
  EXPECT_EQ(layout_cli({"fingerprint", "--context", "4096", "--requests", "9"}).out, layout_cli({"fingerprint"}).out);
}

TEST(Contract, DescriptorLayoutIsTheCanonicalBytes) {
  const run_out r = layout_cli({"describe", "--preset", "v4-pro"});
  ASSERT_EQ(r.code, 0) << r.err;
  const ojson d = ojson::parse(r.out);
  EXPECT_EQ(d["schema"], "dsv4-cache-layout/1");
  EXPECT_EQ(d["layout"].dump(), canonical_layout(describe_layout(deepseek_v4_pro)).view());
  EXPECT_EQ(d["fingerprint"], "0x2a0f2a1ab200ee9c");
  EXPECT_EQ(d["info"]["model"], "DeepSeek-V4-Pro");
  EXPECT_EQ(d["info"]["windows"]["v4.swa_kv"], 128);
}

TEST(Contract, FlashMlaVersusTensorRtFooterPages) {
  // The issue's done-when: V4-Flash with FlashMLA pages vs TensorRT-LLM footer pages.
  const fs::path a = describe("flashmla.json", {});
  const fs::path b = describe("footer.json", {"--kv-format", "v4.fp8_ds_mla.footer"});
  const run_out r = layout_cli({"diff", a.string(), b.string()});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("v4.swa_kv pool 0: page 37,440 B vs 37,376 B"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("v4.c128a.compressed_kv pool 0: page 1,728 B vs 1,168 B"), std::string::npos) << r.out;
  const run_out fa = layout_cli({"fingerprint"});
  const run_out fb = layout_cli({"fingerprint", "--kv-format", "v4.fp8_ds_mla.footer"});
  EXPECT_NE(fa.out, fb.out);
  EXPECT_NE(r.out.find("fingerprint " + fa.out.substr(0, 18) + " vs " + fb.out.substr(0, 18)), std::string::npos);
  // The verdict first, naming what a transfer would break: the format (equal row bytes are
  // said so, never as a difference); the format line before the page line.
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "incompatible: v4.swa_kv pool 0: format v4.fp8_ds_mla vs v4.fp8_ds_mla.footer (rows of 584 B each)");
  EXPECT_EQ(r.out.find("584 B vs 584 B"), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("vs v4.fp8_ds_mla.footer"), r.out.find("page 37,440 B"));
  EXPECT_EQ(layout_cli({"diff", a.string(), a.string()}).code, 0);
  EXPECT_EQ(layout_cli({"diff", a.string(), a.string()}).out, "identical (fingerprint " + fa.out.substr(0, 18) + ")\n");
}

TEST(Contract, Fp8DsMlaVersusUniformRows) {
  // SGLang's handshake compares a dtype string only: 584-B and 512-B rows both pass it.
  const fs::path a = describe("dsmla.json", {});
  const fs::path b = describe("uniform.json", {"--format", "v4.c4a.compressed_kv=v4.fp8_uniform"});
  const run_out r = layout_cli({"diff", a.string(), b.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("v4.c4a.compressed_kv pool 0: row 584 B (v4.fp8_ds_mla) vs 512 B (v4.fp8_uniform)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("v4.c4a.compressed_kv pool 0: row 1 scales at 36,872 vs none"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("v4.swa_kv"), std::string::npos) << "only the changed group differs";
  // A missing group (an indexer pool skipped by a transfer path) comes first.
  const fs::path v32 = describe("v32.json", {"--preset", "v3.2"});
  const run_out m = layout_cli({"diff", a.string(), v32.string()});
  EXPECT_EQ(m.code, 1);
  EXPECT_EQ(m.out.rfind("incompatible: model \"v4\" vs \"v3.2\"\n", 0), 0U) << m.out;  // the verdict names it
  const std::size_t second = m.out.find('\n') + 1;  // after the verdict, the fingerprints, then the model
  EXPECT_EQ(m.out.find("model \"v4\" vs \"v3.2\"", second), m.out.find('\n', second) + 1) << m.out;
  EXPECT_NE(m.out.find("group v4.c4a.indexer_compressor_state: only in A"), std::string::npos);
}

TEST(Contract, DiffOfOtherLayerSetsIsCompatibleForPageTransfer) {
  // Two pipeline stages of one deployment: the same groups, formats and pages, other layers and
  // another rank part: a page moves between them byte for byte (exit 4, the verdict says so).
  const fs::path s0 = temp_file("stage0.json", layout_cli({"describe", "--pp", "2", "--rank", "0"}).out);
  const fs::path s1 = temp_file("stage1.json", layout_cli({"describe", "--pp", "2", "--rank", "1"}).out);
  const run_out r = layout_cli({"diff", s0.string(), s1.string()});
  EXPECT_EQ(r.code, 4) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("compatible for page transfer: every page has the same bytes\n", 0), 0U) << r.out;
  EXPECT_NE(r.out.find("layers"), std::string::npos) << r.out;
}

TEST(Contract, PerRankLayouts) {
  const run_out r0 = layout_cli({"describe", "--tp", "2", "--dcp", "2", "--pp", "2", "--rank", "0"});
  const run_out r3 = layout_cli({"describe", "--tp", "2", "--dcp", "2", "--pp", "2", "--rank", "3"});
  ASSERT_EQ(r0.code, 0) << r0.err;
  const ojson a = ojson::parse(r0.out);
  const ojson b = ojson::parse(r3.out);
  // Flash: 43 main layers over 2 stages (vLLM's split 22 + 21); rank 3 = stage 1, tp rank 1.
  EXPECT_EQ(a["layout"]["rank"]["pp_layers"], ojson::parse("[0,22]"));
  EXPECT_FALSE(a["layout"]["rank"].contains("draft_layers"));
  EXPECT_EQ(b["layout"]["rank"]["pp_layers"], ojson::parse("[22,43]"));
  EXPECT_EQ(b["layout"]["rank"]["draft_layers"], ojson::parse("[43,44]"));
  EXPECT_EQ(b["layout"]["rank"]["dcp_rank"], 1);
  EXPECT_EQ(b["layout"]["rank"]["dcp_size"], 2);
  EXPECT_NE(a["fingerprint"], b["fingerprint"]);
  EXPECT_EQ(layout_cli({"describe", "--rank", "1"}).code, 2);  // --rank without parallel flags
}

// check / diff on an unknown key anywhere, an unknown schema, an empty or non-regular file: exit 2,
// one line naming the file and what is wrong.
TEST(Contract, UnknownKeysSchemasAndFilesAreBadInput) {
  const run_out r = layout_cli({"describe"});
  ASSERT_EQ(r.code, 0);
  const ojson base = ojson::parse(r.out);
  ojson group = base;
  group["layout"]["groups"][1]["pages_per_request"] = 3;
  ojson top = base;
  top["comment"] = "x";
  ojson schema = base;
  schema["schema"] = "dsv4-cache-layout/9";
  const fs::path empty = temp_file("empty.json", "");
  for (const auto& [j, name, message] : std::vector<std::tuple<ojson, std::string, std::string>>{
           {group, "unknown-group-key.json", "layout.groups[1].pages_per_request: not a key of a dsv4-cache-layout/1"},
           {top, "unknown-top-key.json", "descriptor.comment: not a key of a"},
           {schema, "unknown-schema.json", "not a dsv4-cache-layout descriptor (\"schema\" must be"}}) {
    const fs::path f = temp_file(name, j.dump(2));
    for (const run_out& o : {layout_cli({"check", f.string()}), layout_cli({"diff", f.string(), f.string()})}) {
      EXPECT_EQ(o.code, 2) << name << o.out;
      EXPECT_TRUE(o.out.empty());
      EXPECT_NE(o.err.find(f.string()), std::string::npos) << o.err;
      EXPECT_NE(o.err.find(message), std::string::npos) << o.err;
    }
  }
  EXPECT_NE(layout_cli({"check", empty.string()}).err.find("the file is empty (0 bytes)"), std::string::npos);
  const run_out dir = layout_cli({"check", fs::temp_directory_path().string()});
  EXPECT_EQ(dir.code, 2);
  EXPECT_NE(dir.err.find("is actually a directory: " + fs::temp_directory_path().string()), std::string::npos)
      << dir.err;
}

// A TP or DP rank of a replicated cache holds the whole model's pages: no rank part, the whole
// model's fingerprint, and `diff` against the whole model says identical (exit 0).
TEST(Contract, TensorParallelRankIsTheWholeModel) {
  const run_out whole = layout_cli({"describe", "--preset", "v4-pro"});
  const run_out tp = layout_cli({"describe", "--preset", "v4-pro", "--tp", "8", "--rank", "5"});
  const run_out dp = layout_cli({"describe", "--preset", "v4-pro", "--tp", "4", "--dp", "2"});
  ASSERT_EQ(tp.code, 0) << tp.err;
  EXPECT_FALSE(ojson::parse(tp.out)["layout"].contains("rank"));
  EXPECT_EQ(ojson::parse(tp.out)["fingerprint"], ojson::parse(whole.out)["fingerprint"]);
  EXPECT_EQ(ojson::parse(dp.out)["fingerprint"], ojson::parse(whole.out)["fingerprint"]);
  const fs::path a = temp_file("whole.json", whole.out);
  const fs::path b = temp_file("tp8.json", tp.out);
  const run_out d = layout_cli({"diff", a.string(), b.string()});
  EXPECT_EQ(d.code, 0) << d.out << d.err;
  EXPECT_EQ(d.out.rfind("identical", 0), 0U) << d.out;
  // A DCP shard is a part of the cache: it keeps its rank part.
  EXPECT_TRUE(
      ojson::parse(layout_cli({"describe", "--preset", "v4-pro", "--tp", "8", "--dcp", "2"}).out)["layout"].contains(
          "rank"));
}

TEST(Contract, CheckNamesTheFirstWrongNumber) {
  const run_out r = layout_cli({"describe"});
  ASSERT_EQ(r.code, 0);
  const fs::path good = temp_file("good.json", r.out);
  EXPECT_EQ(layout_cli({"check", good.string()}).code, 0);
  EXPECT_NE(layout_cli({"check", good.string()}).out.find("ok, fingerprint 0xf8c17eefea49254e"), std::string::npos);

  const auto edited = [&](const std::string& name, auto&& edit) {
    ojson d = ojson::parse(r.out);
    edit(d);
    return temp_file(name, d.dump(2));
  };
  const run_out page = layout_cli({"check", edited("page.json", [](ojson& d) {
                                              d["layout"]["groups"][0]["pools"][0]["page_bytes"] = 37376;
                                            }).string()});
  EXPECT_EQ(page.code, 1);
  EXPECT_NE(page.out.find("layout.groups[0].pools[0].page_bytes: 37,376, but v4.fp8_ds_mla pages of 64 rows are "
                          "37,440 B"),
            std::string::npos)
      << page.out;
  const run_out scales = layout_cli({"check", edited("scales.json", [](ojson& d) {
                                                d["layout"]["groups"][0]["pools"][0]["row1"]["scales"] = 584;
                                              }).string()});
  EXPECT_EQ(scales.code, 1);
  EXPECT_NE(scales.out.find("row1.scales: 584, but v4.fp8_ds_mla puts row 1's scales at 36,872"), std::string::npos)
      << scales.out;
  const run_out fp = layout_cli({"check", edited("fp.json", [](ojson& d) {
                                            d["layout"]["groups"][0]["rows_per_page"] = 64;  // unchanged
                                            d["fingerprint"] = "0x0000000000000000";
                                          }).string()});
  EXPECT_EQ(fp.code, 1);
  EXPECT_NE(fp.out.find("fingerprint: 0x0000000000000000, but XXH64 of the compact layout is 0xf8c17eefea49254e"),
            std::string::npos);
  const run_out ratio =
      layout_cli({"check", edited("ratio.json", [](ojson& d) { d["layout"]["layers"][2]["ratio"] = 128; }).string()});
  EXPECT_EQ(ratio.code, 1);
  EXPECT_NE(ratio.out.find("layout.layers[2].ratio: 128, but csa layers have ratio 4"), std::string::npos);
  // A descriptor that fails check is bad input to diff.
  const run_out d = layout_cli({"diff", good.string(), edited("page2.json", [](ojson& x) {
                                                         x["layout"]["groups"][0]["pools"][0]["page_bytes"] = 1;
                                                       }).string()});
  EXPECT_EQ(d.code, 2);
  EXPECT_NE(d.err.find("fails check"), std::string::npos);
}

TEST(Contract, V41SplitVersusInterleavedPages) {
  // The issue's hazard: FlashMLA 2026.09.10 split pages vs its 2026.09.30 interleaved rows, the
  // same row and page bytes (N = 64): only the offsets differ.
  const fs::path split = describe("v41-split.json", {"--preset", "v4.1-flash"});
  const fs::path inter =
      describe("v41-inter.json", {"--preset", "v4.1-flash", "--format", "v4.1.swa=v4.1.fp8.interleaved"});
  EXPECT_EQ(layout_cli({"check", split.string()}).code, 0) << layout_cli({"check", split.string()}).out;
  EXPECT_EQ(layout_cli({"check", inter.string()}).code, 0);
  const run_out r = layout_cli({"diff", split.string(), inter.string()});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("v4.1.swa pool 0: row 1 scales at 32,784 vs 1,040"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("page 33,792"), std::string::npos) << "same page bytes: " << r.out;
  // Preset and released config.json: one fingerprint.
  EXPECT_EQ(layout_cli({"fingerprint", "--preset", "v4.1-flash"}).out,
            layout_cli({"fingerprint", "--config", (kData / "deepseek-v4.1-flash.config.json").string()}).out);
  // check knows V4.1's roles: a reuse layer reads an earlier owner of its ratio.
  ojson d = ojson::parse(layout_cli({"describe", "--preset", "v4.1-flash"}).out);
  EXPECT_EQ(d["layout"]["layers"][3]["role"], "reuse");
  EXPECT_EQ(d["layout"]["layers"][3]["owner"], 2);
  d["layout"]["layers"][21]["owner"] = 14;  // a ratio-1 layer reading a ratio-2 owner
  const run_out bad = layout_cli({"check", temp_file("v41-owner.json", d.dump()).string()});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("layout.layers[21].owner: 14, but layer 14 is not an owner layer of ratio 1"),
            std::string::npos)
      << bad.out;
}

TEST(Contract, BadInput) {
  const fs::path junk = temp_file("junk.json", "{not json");
  const fs::path other = temp_file("other.json", R"({"schema":"something/1","layout":{}})");
  for (const std::vector<std::string>& args : {std::vector<std::string>{"check", junk.string()},
                                               {"check", other.string()},
                                               {"check", "/nonexistent.json"},
                                               {"diff", junk.string()},
                                               {"diff", junk.string(), other.string()},
                                               {"fingerprint", "--kv-format", "x"},
                                               {"describe", "--preset", "v3.2", "--kv-format", "v4.fp8_ds_mla"}}) {
    const run_out r = layout_cli(args);
    EXPECT_EQ(r.code, 2) << args[0] << " " << args[1];
    EXPECT_EQ(r.out, "") << args[0];
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
}

}  // namespace

namespace {
TEST(Contract, ReadmeExampleIsTheTinyConfigsCanonicalLayout) {
  // The README shows one complete canonical layout and its fingerprint; they must stay true.
  std::ifstream in(fs::path(DSV4_TEST_DATA_DIR).parent_path().parent_path() / "README.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string readme = ss.str();
  const std::size_t at = readme.find("<!-- canonical-example -->\n```json\n");
  ASSERT_NE(at, std::string::npos);
  const std::size_t begin = readme.find('\n', readme.find("```json", at)) + 1;
  const std::string shown = readme.substr(begin, readme.find('\n', begin) - begin);
  const cache_layout l = describe_layout(load_model_config(kData / "tiny-v4.config.json"));
  EXPECT_EQ(shown, canonical_layout(l).view());
  EXPECT_EQ(fingerprint(l), libxxhash(shown));
  EXPECT_NE(readme.find("fingerprint is `" + dsv4::tools::contract_detail::hex(fingerprint(l)) + "`"),
            std::string::npos);
}
}  // namespace

namespace {

// `describe --engine vllm`: vLLM's placement (its shared block pool) under schema /2, so two peers
// say whether their blocks can move as they are; without --engine the fingerprint stays /1's.
TEST(ContractEngine, VllmPlacementUnderSchemaTwo) {
  const run_out d = layout_cli({"describe", "--engine", "vllm", "--context", "65536"});
  ASSERT_EQ(d.code, 0) << d.err;
  const ojson j = ojson::parse(d.out);
  EXPECT_EQ(j["schema"], "dsv4-cache-layout/2");
  EXPECT_EQ(j["layout"]["schema"], "dsv4-cache-layout/2");
  const ojson& e = j["layout"]["engine"];
  EXPECT_EQ(e["name"], "vllm");
  EXPECT_EQ(e["block_bytes"], 1'002'240);
  ASSERT_EQ(e["groups"].size(), 5U);
  // The full-history block: index keys (21 x 8,640), then the CSA KV (21 x 37,440) at 181,440, then
  // the HCA KV (20 x 1,728) at 181,440 + 786,240 = 967,680, in vLLM's registration order.
  const ojson& full = e["groups"][2]["tensors"];
  EXPECT_EQ(full[0]["group"], "v4.c4a.compressed_kv");
  EXPECT_EQ(full[0]["pool"], 1);
  EXPECT_EQ(full[1]["offset"], 21 * 8'640);
  EXPECT_EQ(full[2]["offset"], 21 * 8'640 + 21 * 37'440);
  EXPECT_EQ(full[2]["page_bytes"], 1'728);
  EXPECT_EQ(full[2]["alignment"], 576);
  // The fingerprint hashes the compact layout; check recomputes every offset and page.
  EXPECT_EQ(j["fingerprint"], fingerprint_hex_string(j["layout"].dump()));
  const fs::path f = temp_file("engine.json", d.out);
  EXPECT_EQ(layout_cli({"check", f.string()}).code, 0);
  // Without --engine: the library's pages alone, schema /1, today's fingerprint.
  EXPECT_EQ(layout_cli({"fingerprint"}).out, "0xf8c17eefea49254e\n");
  EXPECT_NE(layout_cli({"fingerprint", "--engine", "vllm"}).out, "0xf8c17eefea49254e\n");
}

// Issue 42: --engine sglang is refused naming why, never a silent schema /1 whose fingerprint
// would match any generic descriptor; a message's suggestion is a flag this CLI takes. (Issue 45:
// tokenspeed's parent arena is recorded, ContractEngine.TokenspeedParentArenaUnderSchemaTwo.)
TEST(ContractEngine, EnginesWhosePagesAreNotRecordedAreRefused) {
  for (const char* sub : {"describe", "fingerprint"}) {
    const run_out s = layout_cli({sub, "--engine", "sglang"});
    EXPECT_EQ(s.code, 2) << sub;
    EXPECT_EQ(s.out, "") << sub;
    EXPECT_NE(s.err.find("--engine sglang: SGLang's pages are not recorded"), std::string::npos) << s.err;
    EXPECT_NE(s.err.find("describe without --engine"), std::string::npos) << s.err;
    EXPECT_NE(s.err.find("or --engine tokenspeed"), std::string::npos) << s.err;
    const run_out t = layout_cli({sub, "--engine", "tokenspeed", "--preset", "v4-pro"});
    EXPECT_EQ(t.code, 0) << sub << ": " << t.err;
    // TensorRT-LLM's pool groups are not recorded either: its structure says so, not a list of names.
    const run_out r = layout_cli({sub, "--engine", "trtllm"});
    EXPECT_EQ(r.code, 2) << sub;
    EXPECT_NE(r.err.find("--engine trtllm: TensorRT-LLM's pages are not recorded"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("or --engine vllm"), std::string::npos) << r.err;
    // tokenspeed keeps V4.1 and V3.2 in one pool per group (its arena is V4's): refused, never a
    // schema /1 descriptor under tokenspeed's name.
    for (const char* preset : {"v4.1-flash", "v3.2"}) {
      const run_out u = layout_cli({sub, "--engine", "tokenspeed", "--preset", preset});
      EXPECT_EQ(u.code, 2) << sub << " " << preset;
      EXPECT_EQ(u.out, "");
      EXPECT_NE(u.err.find("--engine tokenspeed: tokenspeed@0.1.1's own pools are not modelled for DeepSeek-V"),
                std::string::npos)
          << u.err;
      EXPECT_NE(u.err.find("describe without --engine"), std::string::npos) << u.err;
    }
  }
  EXPECT_EQ(layout_cli({"describe", "--engine", "sglang@x"}).code, 2);
  EXPECT_EQ(layout_cli({"describe", "--engine", "vllm"}).code, 0);
}

// `describe --engine tokenspeed`: tokenspeed's parent arena under schema /2, its planes and
// packings (docs/engines/tokenspeed.md). V4-Flash, 0.1.1, no MTP layer, by hand: packings SWA 1,
// CSA state 2, CSA KV 2, index keys 8 (a group of their own), HCA state 2, HCA KV 32, indexer
// state 8; planes 0-19 of 92,160 B, 20 of 76,032 B, 21-42 of 39,168 B: a 2,780,928-B parent.
TEST(ContractEngine, TokenspeedParentArenaUnderSchemaTwo) {
  const run_out d = layout_cli({"describe", "--engine", "tokenspeed", "--context", "65536"});
  ASSERT_EQ(d.code, 0) << d.err;
  const ojson j = ojson::parse(d.out);
  EXPECT_EQ(j["layout"]["schema"], "dsv4-cache-layout/2");
  const ojson& e = j["layout"]["engine"];
  EXPECT_EQ(e["structure"], "parent_arena");
  EXPECT_EQ(e["block_bytes"], 2'780'928);
  const ojson& planes = e["planes"];
  ASSERT_EQ(planes.size(), 43U);
  // Arena order: ids as strings, unit.10 before unit.2.
  EXPECT_EQ(planes[2]["id"], "unit.10");
  EXPECT_EQ(planes[2]["bytes"], 92'160);
  EXPECT_EQ(planes[12]["id"], "unit.2");
  EXPECT_EQ(planes[13]["id"], "unit.20");
  EXPECT_EQ(planes[13]["bytes"], 76'032);
  EXPECT_EQ(planes[14]["id"], "unit.21");
  EXPECT_EQ(planes[14]["bytes"], 39'168);
  std::map<std::string, std::int64_t> packing;
  for (const ojson& g : e["groups"]) {
    const ojson& t = g["tensors"][0];
    packing[t["group"].get<std::string>() + "[" + t["pool"].dump() + "]"] = g["packing"].get<std::int64_t>();
    EXPECT_EQ(t["planes"].size(), t["layers"].size());
    EXPECT_EQ(t["planes"][0], 0);  // every group's first layer on unit.0
  }
  EXPECT_EQ(packing["v4.swa_kv[0]"], 1);
  EXPECT_EQ(packing["v4.c4a.compressed_kv[0]"], 2);
  EXPECT_EQ(packing["v4.c4a.compressed_kv[1]"], 8);
  EXPECT_EQ(packing["v4.c128a.compressed_kv[0]"], 32);
  EXPECT_EQ(packing["v4.c4a.indexer_compressor_state[0]"], 8);
  const fs::path f = temp_file("tokenspeed.json", d.out);
  EXPECT_EQ(layout_cli({"check", f.string()}).code, 0);
  // A wrong parent, a plane out of tokenspeed's order, a packing the plane cannot hold: check
  // names the number.
  const auto tampered = [&](const std::function<void(ojson&)>& change, const std::string& says) {
    ojson t = j;
    change(t["layout"]["engine"]);
    const run_out c = layout_cli({"check", temp_file("tokenspeed-bad.json", t.dump(2)).string()});
    EXPECT_EQ(c.code, 1) << says;
    EXPECT_NE((c.out + c.err).find(says), std::string::npos) << c.out << c.err;
  };
  tampered([](ojson& x) { x["block_bytes"] = 2'781'184; }, "block_bytes: 2,781,184");
  tampered([](ojson& x) { std::swap(x["planes"][1], x["planes"][2]); }, "does not follow");
  tampered([](ojson& x) { x["groups"][5]["packing"] = 64; }, "less than packing 64");
  // The pin packs the index keys beside the CSA KV: another parent, another fingerprint.
  const run_out pin = layout_cli({"describe", "--engine", "tokenspeed@f4d8ec6e", "--context", "65536"});
  ASSERT_EQ(pin.code, 0) << pin.err;
  EXPECT_EQ(ojson::parse(pin.out)["layout"]["engine"]["block_bytes"], 2'403'072);
  EXPECT_NE(ojson::parse(pin.out)["fingerprint"], j["fingerprint"]);
}

TEST(ContractEngine, SuggestionsAreFlagsTheLayoutCliTakes) {
  const run_out r = layout_cli({"describe", "--engine", "vllm", "--tp", "8", "--dcp", "2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.find("--pools"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("describe without --engine"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("decode context parallelism"), std::string::npos) << r.err;
  // Following the suggestion works.
  EXPECT_EQ(layout_cli({"describe", "--tp", "8", "--dcp", "2"}).code, 0);
  // And --pools itself is not a flag of the layout CLI.
  EXPECT_EQ(layout_cli({"describe", "--pools", "own"}).code, 2);
}

TEST(ContractEngine, CheckNamesAWrongOffsetAndDiffNamesTheBlock) {
  const run_out d = layout_cli({"describe", "--engine", "vllm"});
  ASSERT_EQ(d.code, 0) << d.err;
  ojson j = ojson::parse(d.out);
  j["layout"]["engine"]["groups"][2]["tensors"][1]["offset"] = 181'441;
  j["fingerprint"] = fingerprint_hex_string(j["layout"].dump());  // a consistent fingerprint: the number is wrong
  const fs::path bad = temp_file("engine-bad.json", j.dump(2));
  const run_out c = layout_cli({"check", bad.string()});
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.out.find("layout.engine.groups[2].tensors[1].offset: 181,441, but the tensors before it end at 181,440"),
            std::string::npos)
      << c.out;
  const fs::path a = describe("engine-fp8.json", {"--engine", "vllm"});
  // MXFP4 index keys: vLLM takes them on Blackwell only (indexer.py @ 07492607).
  EXPECT_EQ(layout_cli({"describe", "--engine", "vllm", "--indexer", "mxfp4"}).code, 2);
  const fs::path b = describe("engine-mxfp4.json", {"--engine", "vllm", "--indexer", "mxfp4", "--gpu", "b200"});
  const run_out diff = layout_cli({"diff", a.string(), b.string()});
  EXPECT_EQ(diff.code, 1);
  EXPECT_NE(diff.out.find("engine block 1,002,240 B vs 917,568 B"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("engine group 2 tensors v4.c4a.compressed_kv[1]: page 8,640 B vs 4,608 B"),
            std::string::npos);
  const fs::path plain = describe("engine-none.json", {});
  const run_out mixed = layout_cli({"diff", a.string(), plain.string()});
  EXPECT_EQ(mixed.code, 1);
  EXPECT_NE(mixed.out.find("engine placement: only in A (vllm)"), std::string::npos) << mixed.out;
}

TEST(ContractEngine, PerRankBlocksAreTheStagesOwn) {
  // V4-Pro on 2 pipeline stages: each stage's block is its widest projected group (718,848 B on
  // stage 0, 717,120 B on stage 1; vllm_engine_test works them by hand).
  const run_out s0 = layout_cli({"describe", "--preset", "v4-pro", "--engine", "vllm", "--pp", "2", "--rank", "0"});
  const run_out s1 = layout_cli({"describe", "--preset", "v4-pro", "--engine", "vllm", "--pp", "2", "--rank", "1"});
  ASSERT_EQ(s0.code, 0) << s0.err;
  EXPECT_EQ(ojson::parse(s0.out)["layout"]["engine"]["block_bytes"], 718'848);
  EXPECT_EQ(ojson::parse(s1.out)["layout"]["engine"]["block_bytes"], 717'120);
  // vLLM refuses DCP for DeepSeek V4: --engine vllm with --dcp is bad input.
  const run_out dcp = layout_cli({"describe", "--engine", "vllm", "--tp", "2", "--dcp", "2"});
  EXPECT_EQ(dcp.code, 2);
  EXPECT_NE(dcp.err.find("vLLM rejects decode context parallelism"), std::string::npos) << dcp.err;
}

}  // namespace

namespace {

// `check` on forged /2 descriptors (fingerprint recomputed, so only the numbers are wrong): every
// library pool of every layer placed exactly once, layers of its group, an engine that is
// registered, no 64-bit wrap in the offsets, no integer read past 2^63 - 1.
TEST(ContractEngine, CheckRefusesForgedPlacements) {
  const run_out d = layout_cli({"describe", "--engine", "vllm"});
  ASSERT_EQ(d.code, 0) << d.err;
  const ojson base = ojson::parse(d.out);
  const auto check_of = [](ojson j) {
    j["fingerprint"] = fingerprint_hex_string(j["layout"].dump());
    return layout_cli({"check", temp_file("engine-forged.json", j.dump(2)).string()});
  };
  ojson dup = base;
  dup["layout"]["engine"]["groups"][0]["tensors"][0]["layers"].push_back(0);  // layer 0 twice: not ascending
  EXPECT_NE(check_of(dup).out.find("layers: 0 is not an ascending layer of v4.swa_kv"), std::string::npos);
  ojson missing = base;
  missing["layout"]["engine"]["groups"][1]["tensors"][0]["layers"].erase(0);  // layer 1 nowhere
  const run_out m = check_of(missing);
  EXPECT_EQ(m.code, 1);
  EXPECT_NE(m.out.find("v4.swa_kv pool 0 of layer 1 is placed 0 time(s), not once"), std::string::npos) << m.out;
  ojson preset = base;
  preset["layout"]["engine"]["preset"] = "2025.01";
  EXPECT_NE(check_of(preset).out.find("engine 'vllm' preset '2025.01' is not registered"), std::string::npos);
  ojson huge = base;
  huge["layout"]["engine"]["groups"][2]["tensors"][0]["rows_per_page"] = 43'370'087'947'593'037LL;
  EXPECT_NE(check_of(huge).out.find("must be in [1, 2^32]"), std::string::npos);
  ojson wide = base;
  wide["layout"]["engine"]["block_bytes"] = 9'223'372'036'854'775'808ULL;  // 2^63
  const run_out w = check_of(wide);
  EXPECT_EQ(w.code, 2);
  EXPECT_NE(w.err.find("does not fit in a signed 64-bit integer"), std::string::npos) << w.err;
}

// V4.1's ratio-2 compressor state under vLLM: a per-request ring of max(8, the next power of two
// >= s + 1) rows for s tokens per decode step (4,096-B fp32 rows): 8 rows at s = 1, 16 at s = 8.
// `describe --tokens-per-step` records the ring the engine really allocates.
TEST(ContractEngine, V41RingFollowsTokensPerStep) {
  const auto rings = [](const std::string& s) {
    const run_out d = layout_cli({"describe", "--preset", "v4.1-flash", "--engine", "vllm", "--tokens-per-step", s});
    EXPECT_EQ(d.code, 0) << d.err;
    const ojson j = ojson::parse(d.out);
    std::vector<std::pair<std::int64_t, std::int64_t>> out;  // (rows per page, page bytes)
    for (const ojson& g : j["layout"]["engine"]["groups"])
      if (g["table"] == "request_ring")
        for (const ojson& t : g["tensors"]) out.emplace_back(t["rows_per_page"], t["page_bytes"]);
    return std::make_pair(out, j["fingerprint"].get<std::string>());
  };
  const auto [one, fp1] = rings("1");
  ASSERT_FALSE(one.empty());
  for (const auto& [rows, bytes] : one)
    EXPECT_EQ(std::make_pair(rows, bytes), std::make_pair(std::int64_t{8}, std::int64_t{32'768}));
  const auto [eight, fp8] = rings("8");
  ASSERT_FALSE(eight.empty());
  for (const auto& [rows, bytes] : eight)
    EXPECT_EQ(std::make_pair(rows, bytes), std::make_pair(std::int64_t{16}, std::int64_t{65'536}));
  EXPECT_NE(fp1, fp8);  // another ring, another placement
  EXPECT_EQ(layout_cli({"describe", "--preset", "v4.1-flash", "--engine", "vllm", "--tokens-per-step", "0"}).code, 2);
}

// `check`'s plausibility rules on /2 placements: no unknown keys, vLLM's page alignments, block
// tokens that are the tensors' rows in tokens, tables that keep what their groups keep.
TEST(ContractEngine, CheckRefusesImplausiblePlacements) {
  const run_out d = layout_cli({"describe", "--engine", "vllm"});
  ASSERT_EQ(d.code, 0) << d.err;
  const ojson base = ojson::parse(d.out);
  const auto check_of = [](ojson j) {
    j["fingerprint"] = fingerprint_hex_string(j["layout"].dump());
    return layout_cli({"check", temp_file("engine-implausible.json", j.dump(2)).string()});
  };
  ojson key = base;
  key["layout"]["engine"]["block_byte"] = 1;  // a misspelt key
  const run_out k = check_of(key);
  EXPECT_EQ(k.code, 2);  // an unknown key is bad input, naming the file and the key
  EXPECT_NE(k.err.find("engine-implausible.json"), std::string::npos) << k.err;
  EXPECT_NE(k.err.find("layout.engine.block_byte: not a key of a dsv4-cache-layout/2 descriptor"), std::string::npos)
      << k.err;
  ojson tkey = base;
  tkey["layout"]["engine"]["groups"][2]["tensors"][0]["stride"] = 64;
  EXPECT_NE(check_of(tkey).err.find("layout.engine.groups[2].tensors[0].stride: not a key of a"), std::string::npos);
  ojson align = base;
  align["layout"]["engine"]["groups"][2]["tensors"][0]["alignment"] = 4096;
  EXPECT_NE(check_of(align).out.find(
                "layout.engine.groups[2].tensors[0].alignment: 4096, but vLLM pads pages to 1, 256, 512 or 576 B"),
            std::string::npos);
  ojson tokens = base;
  const std::int64_t bt = base["layout"]["engine"]["groups"][2]["block_tokens"].get<std::int64_t>();
  tokens["layout"]["engine"]["groups"][2]["block_tokens"] = bt * 2;
  const run_out t = check_of(tokens);
  EXPECT_NE(t.out.find(fmt::format("layout.engine.groups[2].block_tokens: {}, but its tensors' ", bt * 2)),
            std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find(fmt::format("hold {} tokens", bt)), std::string::npos) << t.out;
  ojson table = base;
  ASSERT_EQ(base["layout"]["engine"]["groups"][0]["table"], "sliding_window");
  table["layout"]["engine"]["groups"][0]["table"] = "full_history";
  EXPECT_NE(check_of(table).out.find("layout.engine.groups[0].tensors[0]: a full_history table, but v4.swa_kv is "),
            std::string::npos);
}

}  // namespace
