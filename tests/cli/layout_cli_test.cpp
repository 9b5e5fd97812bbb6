// The layout CLI (dsv4-cache-layout): `formats` as JSON and as a table, the worked offsets of
// docs/layout-variants.md and docs/facts.md, and the bad-input contract (one line on stderr,
// exit code 2, nothing on stdout), in process and through the built binary.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../test_util.hpp"
#include "dsv4/tools/layout_cli.hpp"

namespace dsv4::tools {
namespace {
using nlohmann::json;

using run_result = dsv4::cache::testing::cli_run;

run_result run(const std::vector<std::string>& args) {
  return dsv4::cache::testing::run_in_process(
      [&](std::ostream& out, std::ostream& err) { return run_layout(args, out, err); });
}

json run_json(std::vector<std::string> args) {
  args.emplace_back("--json");
  const run_result r = run(args);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  return json::parse(r.out);
}

const json& by_name(const json& list, const std::string& name) {
  for (const json& f : list)
    if (f["name"] == name) return f;
  ADD_FAILURE() << "no format " << name;
  static const json none;
  return none;
}

/// Expected row-1 offsets and page bytes for one format (nullopt: the row has no such part).
struct worked {
  const char* name;
  std::int64_t data;
  std::optional<std::int64_t> scales, rope;
  std::int64_t page;
};

std::optional<std::int64_t> opt(const json& v) {
  return v.is_null() ? std::nullopt : std::optional(v.get<std::int64_t>());
}

// N = 64, r = 1, typed from the docs (not from the registry):
const std::array<worked, 16> kWorked64 = {{
    // docs/facts.md section 2 (fp8_ds_mla row; page padded to 576: N=64 -> 37,440) and
    // section 5 item 6 (row 1's data at 576, scales at 64*576 + 8 = 36,872); RoPE after 448 NoPE B.
    {"v4.fp8_ds_mla", 576, 36'872, 1'024, 37'440},
    // layout-variants.md 2.1 (B1): data at 576 (RoPE at 1,024), scales at 36,872, page 37,376.
    {"v4.fp8_ds_mla.footer", 576, 36'872, 1'024, 37'376},
    // 2.2 (B2): row at 512 (its RoPE at 960), page 32,768; no block scales.
    {"v4.fp8_uniform", 512, std::nullopt, 960, 32'768},
    // 2.4 (B5): row at 368, scales at 592, RoPE at 608, page 23,552.
    {"v4.mxfp4_kv", 368, 592, 608, 23'552},
    // 2.5 (B6): data at 352 (RoPE at 576), scales at 22,560, page 24,576.
    {"v4.nvfp4_kv", 352, 22'560, 576, 24'576},
    // 2.6 (B7): row at 432, scales at 688, RoPE at 736, packed page 27,648.
    {"v4.nvfp4_kv432", 432, 688, 736, 27'648},
    // 2.7 (FP8 indexer for comparison: values at r x 128, scale at N x 128 + r x 4) and the
    // summary table (0, C2/B8: N x 132 -> 8,448).
    {"v4.indexer_fp8", 128, 8'196, std::nullopt, 8'448},
    // 2.7 (values at r x 64, scales at N x 64 + r x 4 = 4,100; the fixed 68-B row: page N x 68 = 4,352).
    {"v4.indexer_mxfp4", 64, 4'100, std::nullopt, 4'352},
    // 2.7 (B8): values at 64, scales at 4,100; used 4,352 of 8,448.
    {"v4.indexer_mxfp4_in_fp8_slot", 64, 4'100, std::nullopt, 8'448},
    // 3.2 (C1): row at 656, scales at 1,168, RoPE at 1,184, page 41,984.
    {"v3.2.fp8_ds_mla", 656, 1'168, 1'184, 41'984},
    // 3.3 (C2): values at 128, scale at 8,196, page 8,448.
    {"v3.2.indexer_fp8", 128, 8'196, std::nullopt, 8'448},
    // 1.6 (a): v41_fp8 split, data at 512, scales at 64 x 512 + 16 = 32,784, page 33,792 (RoPE
    // at 512 + 448 = 960, 1.4).
    {"v4.1.fp8", 512, 32'784, 960, 33'792},
    // 1.6 (b): interleaved, data at 528, scales at 1,040 (RoPE at 528 + 448 = 976), page 33,792.
    {"v4.1.fp8.interleaved", 528, 1'040, 976, 33'792},
    // 1.6 (a): v41_fp4 split, data at 256, scales at 16,384 + 32 = 16,416, page 18,432 (RoPE
    // dims 448.. in bytes 224.. of the row, 1.5: 256 + 224 = 480).
    {"v4.1.fp4", 256, 16'416, 480, 18'432},
    // 7: padded to 256 instead of 512: the same for N = 64.
    {"v4.1.fp4.align256", 256, 16'416, 480, 18'432},
    // 1.6 (b): data at 288, scales at 544 (RoPE at 288 + 224 = 512), page 18,432.
    {"v4.1.fp4.interleaved", 288, 544, 512, 18'432},
}};

TEST(LayoutCli, FormatsJsonListsEveryFormatOnceWithTheDocumentedKeys) {
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(run({"formats", "--json"}).out);  // key order kept
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 20U);
  std::set<std::string> names;
  const std::vector<std::string> keys = {"name", "model",      "role", "row_bytes", "page_rule", "alignment",
                                         "rows", "page_bytes", "row1", "fields",    "source"};
  for (std::size_t i = 0; i < j.size(); ++i) {
    const nlohmann::ordered_json& f = j[i];
    names.insert(f["name"].get<std::string>());
    EXPECT_EQ(f["name"], std::string(cache::kFormats[i].name)) << i;  // registry order
    std::vector<std::string> got;
    for (const auto& [k, v] : f.items()) got.push_back(k);
    EXPECT_EQ(got, keys) << f["name"];
    EXPECT_EQ(f["rows"], 64);
    const std::set<std::string> models = {"v4", "v4.1", "v3.2", "any"};
    EXPECT_TRUE(models.count(f["model"].get<std::string>())) << f["model"];
    for (const char* part : {"data", "scales", "rope"}) {
      const nlohmann::ordered_json& field = f["fields"][part];
      if (field.is_null()) continue;
      EXPECT_EQ(field.size(), 3U) << f["name"] << " " << part;
      for (const char* k : {"type", "count", "block"}) EXPECT_TRUE(field.contains(k)) << f["name"] << " " << k;
    }
  }
  EXPECT_EQ(names.size(), 20U);
}

TEST(LayoutCli, FormatsJsonGivesTheWorkedOffsetsOfTheDocs) {
  const json j = run_json({"formats"});
  for (const worked& w : kWorked64) {
    const json& f = by_name(j, w.name);
    ASSERT_TRUE(f["row1"].is_object()) << w.name;
    EXPECT_EQ(opt(f["row1"]["data"]), w.data) << w.name;
    EXPECT_EQ(opt(f["row1"]["scales"]), w.scales) << w.name;
    EXPECT_EQ(opt(f["row1"]["rope"]), w.rope) << w.name;
    EXPECT_EQ(f["page_bytes"], w.page) << w.name;
  }
  const json& mla = by_name(j, "v4.fp8_ds_mla");
  EXPECT_EQ(mla["row_bytes"], 584);
  EXPECT_EQ(mla["page_rule"], "split_padded");
  EXPECT_EQ(mla["alignment"], 576);
  EXPECT_EQ(mla["model"], "v4");
  EXPECT_EQ(mla["role"], "main_kv");
  EXPECT_EQ(mla["fields"]["data"], (json{{"type", "e4m3"}, {"count", 448}, {"block", 0}}));
  EXPECT_EQ(mla["fields"]["scales"], (json{{"type", "ue8m0"}, {"count", 7}, {"block", 64}}));
  EXPECT_EQ(mla["fields"]["rope"], (json{{"type", "bf16"}, {"count", 64}, {"block", 0}}));
  const json& footer = by_name(j, "v4.fp8_ds_mla.footer");
  EXPECT_EQ(footer["page_rule"], "split");
  EXPECT_TRUE(footer["alignment"].is_null());
  EXPECT_TRUE(by_name(j, "v4.fp8_uniform")["fields"]["scales"].is_null());
  EXPECT_EQ(by_name(j, "v3.2.fp8_ds_mla")["model"], "v3.2");
}

TEST(LayoutCli, Fp32StateIsBoundPerGroup) {
  const json f = by_name(run_json({"formats"}), "fp32_state");
  EXPECT_EQ(f["model"], "any");
  EXPECT_EQ(f["role"], "state");
  EXPECT_TRUE(f["row_bytes"].is_null());
  EXPECT_TRUE(f["page_bytes"].is_null());
  for (const char* part : {"data", "scales", "rope"}) EXPECT_TRUE(f["row1"][part].is_null()) << part;
  EXPECT_EQ(f["fields"]["data"]["type"], "fp32");
  EXPECT_TRUE(f["fields"]["data"]["count"].is_null());
  const run_result t = run({"formats"});
  const std::size_t at = t.out.find("\nfp32_state ");
  ASSERT_NE(at, std::string::npos) << t.out;
  const std::string line = t.out.substr(at + 1, t.out.find('\n', at + 1) - at - 1);
  EXPECT_NE(line.find(" group "), std::string::npos) << line;
  EXPECT_NE(t.out.find("(group: the row bytes of fp32_state are bound per group"), std::string::npos) << t.out;
}

// docs/facts.md section 2: N=2 -> 1,728 (layout-variants.md 2.1: "FlashMLA's is 1,728"; the
// footer page of 2 rows is 1,168, its scales at 1,152 + r x 8).
TEST(LayoutCli, RowsFlagChangesThePage) {
  const json j = run_json({"formats", "--rows", "2"});
  EXPECT_EQ(by_name(j, "v4.fp8_ds_mla")["page_bytes"], 1'728);
  EXPECT_EQ(by_name(j, "v4.fp8_ds_mla")["rows"], 2);
  EXPECT_EQ(by_name(j, "v4.fp8_ds_mla.footer")["page_bytes"], 1'168);
  EXPECT_EQ(by_name(j, "v4.fp8_ds_mla.footer")["row1"]["scales"], 1'160);
  // Leading zeros are decimal, not octal; the largest N is accepted.
  EXPECT_EQ(run_json({"formats", "--rows", "0064"}), run_json({"formats"}));
  EXPECT_EQ(run_json({"formats", "--rows", "010"})[0]["rows"], 10);
  const json big = run_json({"formats", "--rows", "1048576"});
  EXPECT_EQ(by_name(big, "v3.2.bf16")["page_bytes"], std::int64_t{1'152} * 1'048'576);
}

TEST(LayoutCli, OneRowPageHasNoRow1) {
  const json j = run_json({"formats", "--rows", "1"});
  for (const json& f : j) EXPECT_TRUE(f["row1"].is_null()) << f["name"];
  EXPECT_EQ(by_name(j, "v4.fp8_ds_mla")["page_bytes"], 576 * 2);  // 584 padded to 2 x 576
  const run_result t = run({"formats", "--rows", "1"});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("offset of row 0 (a page of 1 row has no row 1)"), std::string::npos) << t.out;
}

TEST(LayoutCli, TableHasOneLinePerFormatInRegistryOrder) {
  const run_result t = run({"formats"});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_TRUE(t.err.empty());
  EXPECT_NE(t.out.find("offset of row 1 in bytes"), std::string::npos) << t.out;
  std::size_t last = 0;
  for (const cache::format_layout& l : cache::kFormats) {
    const std::size_t at = t.out.find("\n" + std::string(l.name) + " ");
    ASSERT_NE(at, std::string::npos) << l.name;
    EXPECT_GT(at, last) << l.name;
    last = at;
  }
  // The v4.fp8_ds_mla line: 584 B rows, split_padded/576, 37,440 B page, row 1 at 576 / 36,872 / 1,024.
  const std::size_t at = t.out.find("\nv4.fp8_ds_mla ");
  std::istringstream line(t.out.substr(at + 1, t.out.find('\n', at + 1) - at - 1));
  std::vector<std::string> cells;
  for (std::string c; line >> c;) cells.push_back(c);
  ASSERT_GE(cells.size(), 10U);
  EXPECT_EQ(std::vector<std::string>(cells.begin(), cells.begin() + 9),
            (std::vector<std::string>{"v4.fp8_ds_mla", "v4", "main_kv", "584", "split_padded/576", "37440", "576",
                                      "36872", "1024"}));
  // A format without scales shows a dash: v4.fp8_uniform row 1 at 512, RoPE at 960 (layout-variants.md 2.2).
  const std::size_t u = t.out.find("\nv4.fp8_uniform ");
  std::istringstream uniform(t.out.substr(u + 1, t.out.find('\n', u + 1) - u - 1));
  cells.clear();
  for (std::string c; uniform >> c;) cells.push_back(c);
  ASSERT_GE(cells.size(), 10U);
  EXPECT_EQ(std::vector<std::string>(cells.begin() + 3, cells.begin() + 9),
            (std::vector<std::string>{"512", "interleaved", "32768", "512", "-", "960"}));
}

TEST(LayoutCli, BadInputIsOneLineOnStderrAndExitCode2) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"formats", "--rows", "0"}, "got '0'"},
      {{"formats", "--rows", "-1"}, "got '-1'"},
      {{"formats", "--rows", "x"}, "got 'x'"},
      {{"formats", "--rows", "1048577"}, "got '1048577'"},
      {{"formats", "--rows", "99999999999999999999"}, "got '99999999999999999999'"},
      {{"formats", "--rows", "0x10"}, "got '0x10'"},
      {{"formats", "--rows", ""}, "got an empty value"},
      {{"formats", "--rows", "6\n4"}, "got '6\\x0A4'"},  // still one line
      {{},
       "a subcommand is required (subcommands: formats, describe, fingerprint, diff, check, golden, transfer, "
       "writers)"},
      {{"bogus"},
       "unknown subcommand 'bogus' (subcommands: formats, describe, fingerprint, diff, check, golden, transfer, "
       "writers)"},
      {{"-x"}, "unexpected argument '-x' before a subcommand"},
      {{"bogus", "formats"}, "bogus"},
      {{"formats", "--bogus"}, "--bogus"},
      {{"--rows", "2", "formats"}, "--rows"},  // --rows belongs to the subcommand
      {{"formats", "formats"}, "formats"},
      // (LayoutCli.UnexpectedArgumentsInTheOrderGiven) as typed, not back to front
      {{"describe", "--pools", "own"}, "The following arguments were not expected: --pools own"},
      {{"describe", "--preset", "v4-flash", "x", "y", "z"}, "The following arguments were not expected: x y z"},
  };
  for (const auto& [args, message] : cases) {
    const run_result r = run(args);
    const std::string what = args.empty() ? std::string("(none)") : args.back();
    EXPECT_EQ(r.code, 2) << what;
    EXPECT_TRUE(r.out.empty()) << what << ": " << r.out;
    EXPECT_EQ(r.err.find("dsv4-cache-layout: error: "), 0U) << what << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << what << ": " << r.err;
  }
  // The rule is named along with the value.
  EXPECT_NE(run({"formats", "--rows", "0"}).err.find("rows per page must be a decimal integer in [1, 1048576]"),
            std::string::npos);
}

TEST(LayoutCli, WritersListsEveryFormatAndAWitnessPerRule) {
  const json j = run_json({"writers"});
  EXPECT_EQ(j["schema"], "dsv4-cache-writers/1");
  ASSERT_EQ(j["formats"].size(), dsv4::cache::kFormats.size());
  std::size_t rules = 0;
  for (const json& f : j["formats"]) {
    ASSERT_GE(f["writers"].size(), 1U) << f["format"];
    EXPECT_TRUE(f["writers"][0]["default"].get<bool>());
    EXPECT_FALSE(f["writers"][0]["source"].get<std::string>().empty());
    // Every pair of modelled writers differs, and every rule has a witness.
    EXPECT_EQ(f["differences"].size(), f["writers"].size() * (f["writers"].size() - 1) / 2) << f["format"];
    for (const json& d : f["differences"]) {
      ASSERT_FALSE(d["rules"].empty()) << f["format"];
      for (const json& r : d["rules"]) {
        ++rules;
        ASSERT_FALSE(r["witness"].is_null()) << f["format"] << ": " << r["rule"];
      }
    }
  }
  EXPECT_EQ(rules, 6U);  // v4.fp8_ds_mla, v4.1.fp8 (x2 page rules), v4.indexer_fp8, v4.indexer_mxfp4 (x2)
  // Hand-derived witnesses: the all-zero block's scale under each floor (docs/engines/writers.md 3, 4).
  const auto witness = [&](const std::string& format, std::size_t rule) {
    for (const json& f : j["formats"])
      if (f["format"] == format) return f["differences"][0]["rules"][rule]["witness"];
    return json();
  };
  EXPECT_EQ(witness("v4.fp8_ds_mla", 0)["scale_bytes"], json::array({"72", "69"}));  // 114 vs 105
  EXPECT_EQ(witness("v4.indexer_fp8", 0)["scale_bytes"], json::array({"00 00 80 34", "00 00 00 2f"}));
  EXPECT_EQ(witness("v4.indexer_mxfp4", 0)["scale_bytes"], json::array({"01", "70"}));
  const json ties = witness("v4.indexer_mxfp4", 1);
  EXPECT_EQ(ties["code_bytes"], json::array({"27 64 88 64", "17 53 00 64"}));
  EXPECT_EQ(ties["decoded"][0], json::array({"6", "1", "2", "4", "-0", "-0", "2", "4"}));
  EXPECT_EQ(ties["decoded"][1], json::array({"6", "0.5", "1.5", "3", "0", "0", "2", "4"}));
  // The text names the default (*) and the compared (=) writers.
  const run_result t = run({"writers"});
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("v4.indexer_mxfp4               vllm*, tokenspeed="), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("rule: E2M1 rounding"), std::string::npos);
  // Issue 42: scale bytes in decimal as the README quotes them (114 vs 105), the hex beside;
  // an fp32 scale as its value: 0x34800000 = 2^-22 = 2.38419e-07 vs 0x2f000000 = 2^-33 = 1.16415e-10.
  EXPECT_NE(t.out.find("scale @576: 114 (0x72) vs 105 (0x69)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("scale @128: 2.38419e-07 (00 00 80 34) vs 1.16415e-10 (00 00 00 2f)"), std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("scale @64: 1 (0x01) vs 112 (0x70)"), std::string::npos) << t.out;
}

TEST(LayoutCli, HelpExits0) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--help"}, {"formats", "--help"}, {"-h"}}) {
    const run_result r = run(args);
    EXPECT_EQ(r.code, 0) << args[0];
    EXPECT_TRUE(r.err.empty());
    EXPECT_NE(r.out.find("formats"), std::string::npos) << r.out;
  }
  EXPECT_NE(run({"formats", "--help"}).out.find("bound per group"), std::string::npos);
}

/// Runs the built binary through the shell; returns the exit code and stdout (stderr to `err_file`).
run_result run_binary(const std::string& args) {
  const std::string err_file = dsv4::cache::testing::unique_temp_path("layout_cli_stderr.txt").string();
  const std::string cmd = std::string(DSV4_LAYOUT_BIN) + " " + args + " 2>" + err_file;
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int status = pclose(p);
  std::string err;
  if (FILE* e = std::fopen(err_file.c_str(), "r")) {
    while (std::size_t n = std::fread(buf.data(), 1, buf.size(), e)) err.append(buf.data(), n);
    std::fclose(e);
  }
  std::remove(err_file.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, err};
}

TEST(LayoutCliBinary, FormatsJsonAndTable) {
  const run_result r = run_binary("formats --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j.size(), 20U);
  EXPECT_EQ(j, run_json({"formats"}));  // the binary prints what run_layout does
  const run_result two = run_binary("formats --rows 2 --json");
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(by_name(json::parse(two.out), "v4.fp8_ds_mla")["page_bytes"], 1'728);
  const run_result table = run_binary("formats");
  EXPECT_EQ(table.code, 0);
  EXPECT_EQ(table.out, run({"formats"}).out);
}

TEST(LayoutCliBinary, ExitCodes) {
  EXPECT_EQ(run_binary("--help").code, 0);
  EXPECT_EQ(run_binary("formats --help").code, 0);
  for (const std::string args : {"formats --rows 0", "formats --rows -1", "formats --rows x", "", "bogus"}) {
    const run_result r = run_binary(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
    EXPECT_EQ(r.err.find("dsv4-cache-layout: error: "), 0U) << args << ": " << r.err;
  }
  EXPECT_EQ(run_binary("formats > /dev/full").code, 3);  // a failed write is never a success
  // Issue 42: the reason, from the failing write's errno (/dev/full: ENOSPC).
  const run_result full = run_binary("writers > /dev/full");
  EXPECT_EQ(full.code, 3);
  EXPECT_NE(full.err.find("writing the output failed: No space left on device (errno 28)"), std::string::npos)
      << full.err;
}

TEST(LayoutCli, WriteFailuresNameTheReason) {
  EXPECT_EQ(write_failure(ENOSPC), "writing the output failed: No space left on device (errno 28)");
  EXPECT_EQ(write_failure(EPIPE), "writing the output failed: Broken pipe (errno 32)");
  EXPECT_EQ(write_failure(0), "writing the output failed (the system gave no reason)");
}

}  // namespace
}  // namespace dsv4::tools
