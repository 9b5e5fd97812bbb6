// The planner CLI: its JSON on the real configs, its flags, and its bad-input contract
// (one line on stderr, exit code 2, nothing on stdout).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "planner_cli.hpp"

namespace dsv4::cache::cli {
namespace {
using nlohmann::json;

const std::string kData = DSV4_TEST_DATA_DIR;

struct run_result {
  int code;
  std::string out, err;
};

run_result run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run_planner(args, out, err);
  return {code, out.str(), err.str()};
}

json run_json(std::vector<std::string> args) {
  args.emplace_back("--json");
  const run_result r = run(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return json::parse(r.out);
}

TEST(Cli, DefaultIsFlashAtFullContext) {
  const run_result r = run({});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty());
  EXPECT_NE(r.out.find("DeepSeek-V4-Flash"), std::string::npos);
  EXPECT_NE(r.out.find("v4.c128a.compressed_kv"), std::string::npos);
  EXPECT_NE(r.out.find("total 6755043136 B"), std::string::npos);
}

TEST(Cli, JsonSchemaOnFlash) {
  const json j = run_json({});
  EXPECT_EQ(j["model"]["name"], "DeepSeek-V4-Flash");
  EXPECT_EQ(j["model"]["num_hidden_layers"], 43);
  EXPECT_EQ(j["model"]["num_nextn_predict_layers"], 1);
  ASSERT_EQ(j["layers"].size(), 44U);
  EXPECT_EQ(j["layers"][0]["attention"], "swa");
  EXPECT_EQ(j["layers"][2]["attention"], "csa");
  EXPECT_EQ(j["layers"][3]["attention"], "hca");
  EXPECT_EQ(j["layers"][3]["compress_ratio"], 128);
  EXPECT_EQ(j["layers"][43]["mtp"], true);
  ASSERT_EQ(j["groups"].size(), 6U);
  const std::array<const char*, 6> ids = {"v4.swa_kv",
                                          "v4.c4a.compressor_state",
                                          "v4.c4a.compressed_kv",
                                          "v4.c128a.compressor_state",
                                          "v4.c128a.compressed_kv",
                                          "v4.c4a.indexer_compressor_state"};
  const std::array<std::int64_t, 6> page_bytes = {37'440, 32'768, 45'888, 32'768, 1'728, 8'192};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(j["groups"][i]["id"], ids[i]);
    EXPECT_EQ(j["groups"][i]["page_bytes"], page_bytes[i]);
    for (const char* key : {"family", "retention", "rows_per_page", "entry_stride_tokens", "page_size_tokens",
                            "sliding_window_tokens", "num_layers", "row_bytes", "pages", "bytes"})
      EXPECT_TRUE(j["groups"][i].contains(key)) << key;
  }
  EXPECT_TRUE(j["groups"][2]["sliding_window_tokens"].is_null());
  EXPECT_EQ(j["groups"][0]["sliding_window_tokens"], 128);
  EXPECT_EQ(j["groups"][2]["row_bytes"], 584 + 132);
  EXPECT_EQ(j["plan"]["total_bytes"], 6'755'043'136ULL);
  EXPECT_FALSE(j["plan"].contains("max_requests"));
  std::uint64_t sum = 0;
  for (const json& g : j["groups"]) sum += g["bytes"].get<std::uint64_t>();
  EXPECT_EQ(sum, j["plan"]["total_bytes"].get<std::uint64_t>());
}

TEST(Cli, RealConfigsGiveThePresetPlans) {
  EXPECT_EQ(run_json({"--config", kData + "/deepseek-v4-flash.config.json"})["plan"],
            run_json({"--preset", "flash"})["plan"]);
  const json pro = run_json({"--config", kData + "/deepseek-v4-pro.config.json"});
  EXPECT_EQ(pro["plan"], run_json({"--preset", "pro"})["plan"]);
  EXPECT_EQ(pro["layers"].size(), 62U);
  EXPECT_EQ(pro["groups"][4]["num_layers"], 31);
}

TEST(Cli, MemoryBudgetAndFlags) {
  const json j = run_json({"--memory-gib", "80"});
  EXPECT_EQ(j["plan"]["max_requests"], 20);
  EXPECT_EQ(j["plan"]["budget_bytes"], 80ULL << 30);
  const json k = run_json({"--requests", "64", "--context", "65536", "--indexer", "mxfp4", "--tokens-per-step", "3",
                           "--prefill-chunk", "4096", "--no-mtp"});
  EXPECT_EQ(k["plan"]["requests"], 64);
  EXPECT_EQ(k["plan"]["context_tokens"], 65536);
  EXPECT_EQ(k["plan"]["indexer"], "mxfp4");
  EXPECT_EQ(k["plan"]["cache_mtp"], false);
  EXPECT_EQ(k["groups"][0]["num_layers"], 43);
  EXPECT_EQ(k["groups"][2]["page_bytes"], 37'440 + 4'352);
  EXPECT_EQ(k["groups"][0]["shared_pages"], 64);  // 4096 / 64
  const run_result text = run({"--memory-gib", "80"});
  EXPECT_NE(text.out.find("max requests at 1048576 tokens: 20"), std::string::npos);
}

TEST(Cli, BadInputIsOneLineOnStderrAndExitCode2) {
  const std::vector<std::vector<std::string>> cases = {
      {"--bogus"},
      {"--config", kData + "/bad/ratio8.config.json"},
      {"--config", "/nonexistent/config.json"},
      {"--config", kData},  // a directory without config.json
      {"--requests", "-1"},
      {"--requests", "0"},
      {"--context", "abc"},
      {"--context", "-5"},
      {"--context", "2000000"},
      {"--memory-gib", "-1"},
      {"--memory-gib", "1e30"},
      {"--memory-gib", "nan"},
      {"--preset", "ultra"},
      {"--indexer", "int4"},
      {"--tokens-per-step", "0"},
      {"--prefill-chunk", "0"},
      {"--requests", "99999999999999999999"},
      {"--context", "9223372036854775808"},  // never clamped to INT64_MAX
      {"--context", "0x10"},                 // decimal only
      {"--context", ""},                     // an empty value is not "not given"
      {"--config", ""},
      {"--config", "/dev/zero"},   // never read a stream that does not end
      {"--memory-gib", "1e-308"},  // never rounded to a 0-byte budget
      {"--memory-gib", "inf"},
      {"--memory-gib", ""},
      {"--config", "/tmp/dsv4\nno-such\x01dir/config.json"},  // still one line
  };
  for (const auto& args : cases) {
    std::vector<std::string> with_json = args;
    with_json.emplace_back("--json");
    const run_result r = run(with_json);
    const std::string what = args[0] + (args.size() > 1 ? " " + args[1] : "");
    EXPECT_EQ(r.code, 2) << what;
    EXPECT_TRUE(r.out.empty()) << what << ": " << r.out;
    EXPECT_EQ(r.err.find("dsv4-cache-plan: error: "), 0U) << what << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
  }
  const run_result ratio8 = run({"--config", kData + "/bad/ratio8.config.json"});
  EXPECT_NE(ratio8.err.find("layer=5, compress_ratio=8"), std::string::npos) << ratio8.err;
}

/// Runs the built binary through the shell; returns the exit code and stdout.
run_result run_binary(const std::string& args) {
  const std::string cmd = std::string(DSV4_PLAN_BIN) + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, ""};
}

TEST(Cli, NonAsciiModelDirectoryNamesStayValidJson) {
  std::string name;
  for (int i = 0; i < 40; ++i) name += "\xC3\xA9";  // 80 bytes of U+00E9: cut at 63 on a boundary
  for (const std::string& dir_name : {name, std::string("bad-utf8-\xFE\xFF")}) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / dir_name;
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(kData + "/deepseek-v4-flash.config.json", dir / "config.json",
                               std::filesystem::copy_options::overwrite_existing);
    const run_result r = run({"--config", dir.string(), "--json"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(json::accept(r.out)) << r.out.substr(0, 200);
    std::filesystem::remove_all(dir);
  }
}

TEST(Cli, NothingFitsSaysWhatOneRequestNeeds) {
  const json j = run_json({"--memory-gib", "1"});
  EXPECT_EQ(j["plan"]["max_requests"], 0);
  EXPECT_EQ(j["plan"]["max_requests_total_bytes"], 0);  // never more than the budget
  const run_result r = run({"--memory-gib", "1"});
  EXPECT_NE(r.out.find("max requests at 1048576 tokens: 0 (one request needs 2647719488 B fixed + 4107323648 B)"),
            std::string::npos)
      << r.out;
}

TEST(Cli, ConfigErrorsAtPlanTimeNameTheFile) {
  const run_result r = run({"--config", kData + "/deepseek-v4-flash.config.json", "--context", "2000000"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("deepseek-v4-flash.config.json: dsv4::cache: context_tokens must be <= max_position_embeddings"),
            std::string::npos)
      << r.err;
}

TEST(CliBinary, ExitCodes) {
  EXPECT_EQ(run_binary("").code, 0);
  EXPECT_EQ(run_binary("--help").code, 0);
  const run_result bad = run_binary("--config " + kData + "/bad/ratio8.config.json --json");
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(bad.out.empty());
  EXPECT_EQ(run_binary("--requests -3").code, 2);
  EXPECT_EQ(run_binary("> /dev/full").code, 1);  // a failed write is never a success
}

}  // namespace
}  // namespace dsv4::cache::cli
