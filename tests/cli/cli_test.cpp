// The planner CLI: its JSON on the real configs, its flags, and its bad-input contract
// (one line on stderr, exit code 2, nothing on stdout).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../test_util.hpp"
#include "dsv4/tools/planner_cli.hpp"

namespace dsv4::cache::cli {
namespace {
using nlohmann::json;

const std::string kData = DSV4_TEST_DATA_DIR;

using run_result = dsv4::cache::testing::cli_run;

run_result run(const std::vector<std::string>& args) {
  return dsv4::cache::testing::run_in_process(
      [&](std::ostream& out, std::ostream& err) { return run_planner(args, out, err); });
}

/// The planner with --verbose: every table, as the tests of table lines read them.
run_result tables(std::vector<std::string> args) {
  args.emplace_back("--verbose");
  return run(args);
}

/// Every case exits 2 with nothing on stdout and its message on stderr (the bad-input contract).
void expect_refused(const std::vector<std::pair<std::vector<std::string>, std::string>>& cases) {
  for (const auto& [args, message] : cases) {
    const run_result r = run(args);
    EXPECT_EQ(r.code, 2) << (args.empty() ? std::string() : args[0]);
    EXPECT_TRUE(r.out.empty());
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
}

/// `args` planned as before issue 35's defaults: synchronous scheduling and the MTP layer cached
/// (every engine's own default is async / overlap scheduling and no draft layer). The figures of
/// the tests that use it were derived for that configuration.
std::vector<std::string> sync_mtp(std::vector<std::string> args) {
  args.insert(args.end(), {"--no-overlap", "--mtp"});
  return args;
}

json run_json(std::vector<std::string> args) {
  args.emplace_back("--json");
  const run_result r = run(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return json::parse(r.out);
}

TEST(Cli, DefaultIsFlashAtFullContext) {
  const run_result r = tables(sync_mtp({}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty());
  EXPECT_NE(r.out.find("DeepSeek-V4-Flash"), std::string::npos);
  EXPECT_NE(r.out.find("v4.c128a.compressed_kv"), std::string::npos);
  // vLLM's shared block pool: 7,451 blocks (one request's startup charge and the null block) of
  // 1,002,240 B (tests/oracle/vllm_pool_oracle.py; static_checks.cpp works it by hand).
  EXPECT_NE(r.out.find("total 7467690240 B"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("= 7451 blocks x 1002240 B"), std::string::npos);
  // One pool per group, the library's own model: 6,755,043,136 B (static_checks.cpp).
  EXPECT_NE(tables(sync_mtp({"--pools", "own"})).out.find("total 6755043136 B"), std::string::npos);
}

TEST(Cli, JsonSchemaOnFlash) {
  const json j = run_json(sync_mtp({}));
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
  // vLLM pads every page to a multiple of 576 B: states 32,832 and 8,640, index keys 8,640.
  const std::array<std::int64_t, 6> engine_page_bytes = {37'440, 32'832, 37'440 + 8'640, 32'832, 1'728, 8'640};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(j["groups"][i]["engine_page_bytes"], engine_page_bytes[i]) << i;
  EXPECT_EQ(j["plan"]["total_bytes"], 7'467'690'240ULL);
  EXPECT_EQ(j["plan"]["pools"], "engine");
  EXPECT_EQ(j["plan"]["pool_structure"], "shared_block_pool");
  EXPECT_EQ(j["plan"]["bytes_per_block"], 1'002'240);
  EXPECT_EQ(j["plan"]["num_blocks"], 7'451);
  EXPECT_FALSE(j["plan"].contains("max_requests"));
  std::uint64_t sum = 0;
  for (const json& g : j["groups"]) sum += g["bytes"].get<std::uint64_t>();
  EXPECT_LE(sum, j["plan"]["total_bytes"].get<std::uint64_t>());  // the groups' pages lie inside the blocks
  // Own pools: the groups' bytes are the plan.
  const json own = run_json(sync_mtp({"--pools", "own"}));
  EXPECT_EQ(own["plan"]["total_bytes"], 6'755'043'136ULL);
  EXPECT_EQ(own["plan"]["pool_structure"], "own_pools");
  EXPECT_FALSE(own["plan"].contains("bytes_per_block"));
  sum = 0;
  for (const json& g : own["groups"]) sum += g["bytes"].get<std::uint64_t>();
  EXPECT_EQ(sum, own["plan"]["total_bytes"].get<std::uint64_t>());
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
  // 80 GiB = 85,707 blocks of 1,002,240 B. N requests of 1M tokens take N x (4,096 + 2 x 3 + 3 + 17)
  // blocks (their rings) + the prompt blocks of one step (2 x 128 + 2,048 + 1,024) + the null block:
  // 19 -> 81,647 fit, 20 -> 85,769 do not. (Own pools fit 20: 80 GiB / 20 = 4 GiB a request.)
  const json j = run_json(sync_mtp({"--memory-gib", "80"}));
  EXPECT_EQ(j["plan"]["max_requests"], 19);
  EXPECT_EQ(run_json(sync_mtp({"--memory-gib", "80", "--pools", "own"}))["plan"]["max_requests"], 20);
  EXPECT_EQ(j["plan"]["budget_bytes"], 80ULL << 30);
  // MXFP4 index keys: vLLM takes them on Blackwell only (indexer.py @ 07492607).
  const json k = run_json({"--requests", "64", "--context", "65536", "--indexer", "mxfp4", "--tokens-per-step", "3",
                           "--prefill-chunk", "4096", "--no-mtp", "--no-overlap", "--gpu", "b200"});
  EXPECT_EQ(k["plan"]["requests"], 64);
  EXPECT_EQ(k["plan"]["context_tokens"], 65536);
  EXPECT_EQ(k["plan"]["indexer"], "mxfp4");
  EXPECT_EQ(k["plan"]["cache_mtp"], false);
  EXPECT_EQ(k["groups"][0]["num_layers"], 43);
  EXPECT_EQ(k["groups"][2]["page_bytes"], 37'440 + 4'352);
  // 64 prompts in a 4,096-token step, each straddling a page: 64 + floor((4096 - 64) / 64) = 127
  EXPECT_EQ(k["groups"][0]["shared_pages"], 127);
  EXPECT_EQ(k["groups"][0]["pages_per_request"], 4);  // ceil((128 + 6 - 3) / 64) + 1
  const run_result text = tables(sync_mtp({"--memory-gib", "80"}));
  EXPECT_NE(text.out.find("max requests at 1048576 tokens: 19"), std::string::npos);
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
    const std::filesystem::path root = dsv4::cache::testing::unique_temp_path("cli");
    const std::filesystem::path dir = root / dir_name;
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(kData + "/deepseek-v4-flash.config.json", dir / "config.json",
                               std::filesystem::copy_options::overwrite_existing);
    const run_result r = run({"--config", dir.string(), "--json"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(json::accept(r.out)) << r.out.substr(0, 200);
    std::filesystem::remove_all(root);
  }
}

TEST(Cli, NothingFitsSaysWhatOneRequestNeeds) {
  const json j = run_json({"--memory-gib", "1"});
  EXPECT_EQ(j["plan"]["max_requests"], 0);
  EXPECT_EQ(j["plan"]["max_requests_total_bytes"], 0);  // never more than the budget
  const run_result r = tables(sync_mtp({"--memory-gib", "1", "--pools", "own"}));
  // 4,161,088 B of null pages + 6,750,882,048 B for the first request (6,755,043,136 B in all)
  EXPECT_NE(r.out.find("max requests at 1048576 tokens: 0 (one request needs 4161088 B fixed + 6750882048 B)"),
            std::string::npos)
      << r.out;
  // vLLM's pool: it needs 7,451 blocks of 1,002,240 B to start at all, and says so.
  const run_result v = tables(sync_mtp({"--memory-gib", "1"}));
  EXPECT_NE(v.out.find("max requests at 1048576 tokens: 0 (vLLM needs 7467690240 B to start: 7451 blocks of "
                       "1002240 B)"),
            std::string::npos)
      << v.out;
  EXPECT_NE(v.out.find("vLLM refuses to start: ValueError: To serve at least one request with the model's max seq "
                       "len (1048576), (6.95 GiB KV cache is needed"),
            std::string::npos)
      << v.out;
}

TEST(Cli, ConfigErrorsAtPlanTimeNameTheFile) {
  const run_result r = run({"--config", kData + "/deepseek-v4-flash.config.json", "--context", "2000000"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("deepseek-v4-flash.config.json: --context 2,000,000 is more than the model's "
                       "max_position_embeddings 1,048,576"),
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
  EXPECT_EQ(run_binary("> /dev/full").code, 3);  // a failed write is never a success (the exit-code table: 3)
  // Issue 42: the reason, from the failing write's errno (/dev/full: ENOSPC).
  // (stderr through the pipe, stdout to /dev/full)
  const run_result full = run_binary("2>&1 >/dev/full | cat");
  EXPECT_NE(full.out.find("dsv4-cache-plan: error: writing the output failed: No space left on device (errno 28)"),
            std::string::npos)
      << full.out;
  // --require-fit: 1 when the answer is no, 0 when yes, 2 without a budget.
  EXPECT_EQ(run_binary("--require-fit --memory-gib 64").code, 0);
  EXPECT_EQ(run_binary("--require-fit --memory-gib 64 --requests 20").code, 1);
  EXPECT_EQ(run_binary("--require-fit").code, 2);
}

TEST(Cli, VerdictFirst) {
  // V4-Flash, vLLM's defaults (async scheduling), 64 GiB, 1,048,576 tokens: the plan's bytes
  // guarantee 13, vLLM starts, its allocator replayed holds 16 at once: the headline is 16 (the
  // budget binds), the plan's 13 is its bound.
  const run_result yes = run({"--memory-gib", "64"});
  EXPECT_EQ(yes.out.substr(0, yes.out.find('\n')),
            "verdict: 1 x 1,048,576 tokens FITS: 16 fit at once (replayed; limit: the 64.00 GiB budget)");
  EXPECT_NE(yes.out.find("bound    the plan's bytes guarantee 13: lower"), std::string::npos) << yes.out;
  // 16 fit, 17 do not: the verdict, JSON fits and --require-fit follow the one number.
  const json at = run_json({"--memory-gib", "64", "--requests", "16"});
  EXPECT_EQ(at["fits"], true);
  EXPECT_EQ(run({"--memory-gib", "64", "--requests", "16", "--require-fit"}).code, 0);
  const json no = run_json({"--memory-gib", "64", "--requests", "17"});
  EXPECT_EQ(no["fits"], false);
  EXPECT_EQ(run({"--memory-gib", "64", "--requests", "17", "--require-fit"}).code, 1);
  EXPECT_EQ(no["verdict"]["plan_max_requests"], 13);
  EXPECT_EQ(no["verdict"]["simulated_max_requests"], 16);
  EXPECT_EQ(no["verdict"]["max_requests"], 16);
  EXPECT_EQ(no["verdict"]["limit"], "budget");
  EXPECT_EQ(no["verdict"]["why"], "the 64.00 GiB budget");
  // Above vLLM's running cap the cap binds, not the budget (issue 35: 8,982 GiB left).
  const json cap = run_json({"--requests", "2000", "--memory-gib", "10000", "--context", "131072"});
  EXPECT_EQ(cap["fits"], false);
  EXPECT_EQ(cap["verdict"]["max_requests"], 1024);  // max_num_seqs, EngineArgs.get_batch_defaults
  EXPECT_EQ(cap["verdict"]["limit"], "running cap");
  EXPECT_EQ(cap["verdict"]["line"],
            "verdict: 2,000 x 131,072 tokens DOES NOT FIT: 1,024 fit at once (plan bound; limit: vLLM's running "
            "cap, max_num_seqs 1,024)");
  // vLLM's startup check binds below one request's charge.
  const json start = run_json({"--memory-gib", "1"});
  EXPECT_EQ(start["verdict"]["limit"], "startup check");
  EXPECT_EQ(start["verdict"]["max_requests"], 0);
  // SGLang refuses to start below its HCA-state reservation (2.53 GiB at 256 requests).
  const json refused = run_json({"--engine", "sglang", "--memory-gib", "2"});
  EXPECT_EQ(refused["fits"], false);
  EXPECT_EQ(refused["verdict"]["engine_starts"], false);
  // Without a budget there is no verdict, and it says so.
  EXPECT_EQ(run_json({})["fits"], nullptr);
  const run_result plain = run({});
  EXPECT_EQ(plain.out.rfind("verdict: 1 x 1,048,576 tokens: no budget given", 0), 0U);
}

}  // namespace
}  // namespace dsv4::cache::cli

namespace dsv4::cache::cli {
namespace {

// The issue's "done when": vLLM, N = 2, L = 63, B = 512, --simulate: no group below its
// simulated peak; the CSA compressor and indexer states peak at 33 pages per layer.
TEST(CliEngine, SimulateShowsNoGroupBelowItsPeak) {
  const json j = run_json(sync_mtp({"--engine", "vllm", "--requests", "2", "--context", "63", "--prefill-chunk", "512",
                                    "--simulate", "--pools", "own"}));
  EXPECT_EQ(j["plan"]["engine"], "vllm");
  EXPECT_EQ(j["plan"]["overlap"], false);
  for (const json& g : j["groups"]) {
    const std::int64_t per_layer = g["pages"].get<std::int64_t>() / g["num_layers"].get<std::int64_t>();
    EXPECT_GE(per_layer, g["simulated_peak_pages"].get<std::int64_t>()) << g["id"];
  }
  EXPECT_EQ(j["groups"][1]["simulated_peak_pages"], 33);
  EXPECT_EQ(j["groups"][5]["simulated_peak_pages"], 33);
  EXPECT_GE(j["plan"]["total_bytes"].get<std::uint64_t>(), j["plan"]["simulated_peak_bytes"].get<std::uint64_t>());
  const run_result text =
      tables(sync_mtp({"--requests", "2", "--context", "63", "--prefill-chunk", "512", "--simulate"}));
  EXPECT_EQ(text.code, 0);
  EXPECT_EQ(text.out.find("BELOW"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("sim/L"), std::string::npos);
  // vLLM's shared pool: the 4-token states' table peaks at 32 blocks (16 for each prompt), the
  // whole pool at 54 blocks in use; the plan holds 55 with the null block.
  const json v = run_json(sync_mtp({"--requests", "2", "--context", "63", "--prefill-chunk", "512", "--simulate"}));
  EXPECT_EQ(v["groups"][1]["simulated_peak_pages"], 32);
  for (const json& g : v["groups"]) EXPECT_GE(g["pools"][0]["pages_per_layer"], g["simulated_peak_pages"]) << g["id"];
  EXPECT_EQ(v["plan"]["num_blocks"], 55);
  EXPECT_EQ(v["plan"]["simulated_peak_blocks"], 55);
  EXPECT_LE(v["plan"]["simulated_peak_admission_blocks"], v["plan"]["num_blocks"]);
}

TEST(CliEngine, EnginesAndOverlap) {
  const json v = run_json({"--context", "8192", "--tokens-per-step", "2", "--no-overlap"});
  const json t = run_json({"--context", "8192", "--tokens-per-step", "2", "--engine", "tokenspeed", "--no-overlap"});
  EXPECT_EQ(t["plan"]["engine"], "tokenspeed");
  // tokenspeed's extent runs s - 1 tokens past L: ceil(8,193 / 256) = 33 compressed pages per request.
  EXPECT_EQ(v["groups"][2]["pages_per_request"], 32);
  EXPECT_EQ(t["groups"][2]["pages_per_request"], 33);
  const json o = run_json({"--context", "8192", "--tokens-per-step", "2", "--overlap"});
  EXPECT_EQ(o["plan"]["overlap"], true);
  EXPECT_EQ(v["plan"]["overlap"], false);
  EXPECT_GT(o["plan"]["total_bytes"].get<std::uint64_t>(), v["plan"]["total_bytes"].get<std::uint64_t>());
  // Left out, overlap is every engine's default (vLLM VllmConfig.__post_init__, tokenspeed
  // scheduler_utils.py, SGLang scheduler.py): the flag changes nothing but the source.
  const json dflt = run_json({"--context", "8192", "--tokens-per-step", "2"});
  EXPECT_EQ(dflt["plan"], o["plan"]);
  EXPECT_EQ(dflt["assumptions"]["async_scheduling"]["source"], "engine default");
  EXPECT_EQ(o["assumptions"]["async_scheduling"]["source"], "flag");
  EXPECT_TRUE(o["assumptions"]["async_scheduling"]["reference"].is_null());
  for (const char* engine : {"tokenspeed", "tokenspeed-default", "sglang"}) {
    const json e = run_json({"--context", "8192", "--engine", engine});
    EXPECT_EQ(e["assumptions"]["async_scheduling"]["value"], true) << engine;
    EXPECT_EQ(e["assumptions"]["draft_layer"]["value"], false) << engine;
    EXPECT_EQ(e["plan"]["cache_mtp"], false) << engine;
  }
  const json d = run_json({"--context", "8192", "--engine", "tokenspeed-default", "--requests", "4", "--no-overlap"});
  EXPECT_EQ(d["plan"]["engine"], "tokenspeed-default");
  EXPECT_EQ(d["groups"][0]["shared_pages"], 0);  // each request holds its own chunk instead
}

TEST(CliEngine, RefusedInputsExit2) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--engine", "sglang", "--pp", "2"}, "--engine sglang: --pp 2 (pipeline stages) is not modelled"},
      {{"--engine", "sglang", "--dcp", "2", "--tp", "2"}, "--engine sglang: --dcp 2"},
      {{"--engine", "sglang", "--role", "decode"}, "--engine sglang: --role decode (PD disaggregation)"},
      {{"--engine", "sglang", "--no-overlap"}, "--no-overlap (SGLang's --disable-overlap-schedule) is not modelled"},
      {{"--overlap", "--no-overlap"}, "--overlap and --no-overlap contradict each other"},
      {{"--mtp", "--no-mtp"}, "--mtp and --no-mtp contradict each other"},
      {{"--indexer", "mxfp4"},
       "refuses MXFP4 index keys (v4.indexer_mxfp4) on the assumed H200 (SM 9.0): \"use_fp4_indexer_cache requires "
       "Blackwell datacenter GPUs"},
      {{"--indexer", "mxfp4", "--gpu", "h100"}, "on --gpu H100 80GB (SM 9.0)"},
      {{"--preset", "v4.1-flash", "--format-set", "v41"}, "refuses MXFP4 index keys"},
      {{"--gpu", "a100"}, "--gpu A100 80GB: an Ampere GPU; the engines' GPU-dependent defaults"},
      {{"--gpu", "mi300x"}, "are modelled for Hopper and Blackwell GPUs (SM 9.x, 10.x) only"},
      {{"--gpu", "rtx9090"},
       "--gpu must be one of H200, H100 80GB, H800, B200, B300, GB200, GB300 (A100 80GB, MI300X: known, not "
       "modelled), got 'rtx9090'"},
      {{"--enable-dp-attention", "--dp", "2", "--tp", "2"}, "--engine vllm@2026.11 has no such flag"},
      {{"--engine", "tokenspeed", "--enable-dp-attention"}, "--engine tokenspeed@0.1.1 has no such flag"},
      {{"--engine", "sglang", "--enable-dp-attention", "--tp", "8", "--dp", "3"}, "--dp 3 must divide --tp 8"},
      {{"--engine", "sglang", "--simulate"}, "SGLang's occupancy is replayed in the engine report"},
      {{"--engine", "sglang", "--preset", "v4.1-flash"},
       "SGLang 0.5.23's DeepSeek V4 pools are modelled for V4 models only"},
      {{"--engine", "sglang@cce0a124", "--preset", "v4.1-flash"}, "at cce0a124 sizes V4 models only"},
      {{"--engine", "sglang", "--max-running-requests", "3", "--dp", "4", "--tp", "4", "--enable-dp-attention"},
       "--max-running-requests 3 // --dp 4 is 0, which SGLang refuses"},
      {{"--engine", "sglang", "--tokens-per-step", "12"}, "the draft tokens exceed what the CSA compress-state ring"},
      {{"--engine", "tensorrt-llm"}, "--engine must be one of"},
      {{"--engine", "trtllm", "--pp", "2"},
       "--engine trtllm: --pp 2 (pipeline stages) is not modelled for TensorRT-LLM"},
      {{"--engine", "trtllm", "--dcp", "2", "--tp", "2"}, "--engine trtllm: --dcp 2 (decode context parallelism)"},
      {{"--engine", "trtllm", "--role", "decode"}, "--engine trtllm: --role decode (PD disaggregation)"},
      {{"--engine", "trtllm", "--simulate"}, "TensorRT-LLM's KVCacheManagerV2 is not replayed so"},
      {{"--engine", "trtllm", "--tokens-per-step", "2"}, "TensorRT-LLM with speculative decoding is not modelled"},
      {{"--engine", "trtllm", "--preset", "v4.1-flash", "--gpu", "b200"},
       "TensorRT-LLM is modelled for DeepSeek V4 only"},
      {{"--engine", "trtllm", "--preset", "v4.1-flash"}, "indexer_k_dtype='fp4' requires SM>=100 (Blackwell)"},
      {{"--engine", "trtllm", "--gpu", "h200", "--gpu-memory-utilization", "0.8"},
       "--gpu-memory-utilization is vLLM's flag; TensorRT-LLM's memory fraction is --free-gpu-memory-fraction"},
      {{"--context", "0"}, "--context must be >= 1, got 0"},
      {{"--engine", "tokenspeed", "--tokens-per-step", "4", "--prefill-chunk", "2"},
       "--prefill-chunk 2 must be >= --tokens-per-step 4: tokenspeed@0.1.1 decodes only with a whole step"},
      {{"--simulate", "--requests", "4096", "--context", "100000"}, "the estimated work of 4096 requests x 100000"},
      {{"--simulate", "--requests", "5000", "--context", "100"}, "--simulate replays at most 4096 requests"},
      {{"--engine", "vllm@2025.01"}, "--engine must be one of vllm, vllm@2026.11, vllm@0.33.0, tokenspeed"},
      {{"--engine", "tokenspeed", "--pp", "2"},
       "--engine tokenspeed: --pp 2 (pipeline stages) is not modelled for tokenspeed 0.1.1"},
      {{"--pools", "shared"}, "--pools"},
      {{"--max-running-requests", "0"}, "--max-running-requests must be >= 1, got 0"},
      {{"--dcp", "2", "--tp", "2"}, "vLLM rejects decode context parallelism for DeepSeek V4"},
      {{"--simulate", "--context", "1"}, "--simulate needs --context >= 2"},
  };
  expect_refused(cases);
}

// TensorRT-LLM (engines/trtllm/, one registry entry): its plan, report and admission through the
// planner. The slots are the independent oracle's (python3 tests/oracle/trtllm_oracle.py
// tests/data/deepseek-v4-flash.config.json --budget-bytes 64424509440 --sm 90 --kv-dtype fp8_ds_mla
// --max-batch-size 256 --max-seq-len 131072 --json: blocks [109183, 256, 256]); 106 requests of 128K
// fit by its 109,183 history slots (1,024 each), under its admission's 114 (TrtllmEngine tests).
TEST(CliEngine, TrtllmPlansReportsAndReplays) {
  const json j =
      run_json({"--engine", "trtllm", "--memory-gib", "60", "--context", "131072", "--max-running-requests", "256"});
  EXPECT_EQ(j["plan"]["engine"], "trtllm");
  EXPECT_EQ(j["plan"]["pool_structure"], "life_cycle_pools");
  const json& e = j["engine_report"];
  EXPECT_EQ(e["structure"], "life_cycle_pools");
  EXPECT_EQ(e["quota"], 64424509440U);
  EXPECT_EQ(e["granularity"], 33554432U);
  std::vector<std::int64_t> slots;
  for (const json& g : e["pool_groups"]) slots.push_back(g["slots"].get<std::int64_t>());
  EXPECT_EQ(slots, (std::vector<std::int64_t>{109183, 256, 256}));
  EXPECT_EQ(e["simulated_max_requests"], 106);
  EXPECT_EQ(e["log_lines"][1], "KV cache manager v2 device quota set to 60.0GiB");
  const run_result text =
      tables({"--engine", "trtllm", "--memory-gib", "60", "--context", "131072", "--max-running-requests", "256"});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("TensorRT-LLM logs:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("GUARANTEED_NO_EVICT admission"), std::string::npos) << text.out;
  // Its default max_batch_size 2,048 needs more minimum slots than 60 GiB: the verdict says so.
  const run_result dflt = run({"--engine", "trtllm", "--memory-gib", "60", "--context", "131072"});
  EXPECT_EQ(dflt.code, 0) << dflt.err;
  EXPECT_NE(dflt.out.find("does not start"), std::string::npos) << dflt.out;
}

// tokenspeed under DCP: its ranks are priced as own pools (its arena under DCP is not modelled),
// so the report has no arena startup. It used to take the whole model's arena structure and fail
// with "tokenspeed_startup needs a parent arena (bytes_per_block=0)" (exit 2) on a valid input.
TEST(CliEngine, TokenspeedUnderDcpPricesOwnPools) {
  const json j = run_json({"--preset", "v4-pro", "--engine", "tokenspeed", "--tp", "4", "--dcp", "2", "--context",
                           "65536", "--requests", "32", "--memory-gib", "50"});
  EXPECT_EQ(j["engine_report"]["structure"], "own_pools");
  EXPECT_EQ(run_json({"--preset", "v4-pro", "--engine", "tokenspeed", "--tp", "4"})["engine_report"]["structure"],
            "parent_arena");
  for (const json& rank : j["ranks"]) EXPECT_GT(rank["total_bytes"].get<std::int64_t>(), 0);
  EXPECT_TRUE(j["fits"].get<bool>());
}

TEST(CliEngine, SglangReportsItsPoolSizesAndWhatReallyFits) {
  // The pin's figures (sglang@cce0a124; the default --engine sglang is 0.5.23, below): SGLang's own figures
  // (tests/oracle/sglang_pool_oracle.py gives the same lines; ctest oracle.sglang_plan_agrees compares 22 cases) and
  // the replayed capacity.
  const run_result r =
      tables({"--preset", "v4-flash", "--engine", "sglang@cce0a124", "--memory-gib", "64", "--context", "1048576"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line :
       {"DSV4 memory calculation: bytes_per_full_token=7705.45, available_bytes=64.00 GB, c128_state_fixed=2.53 GB, "
        "full_token=8565760",
        "DSV4 pool sizes: full=8565760, swa=856576, c4=2141440, c128=66920, c4_state=53536, c128_state=0",
        "max_total_num_tokens=8565760, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=256, "
        "context_len=1048576",
        // 8,565,760 full tokens hold 8 requests of 1,048,576 (4,096 pages each, 33,460 pages): the replay agrees.
        "): 8 request(s) of 1,048,576 tokens"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  const json j =
      run_json({"--preset", "v4-flash", "--engine", "sglang@cce0a124", "--memory-gib", "64", "--context", "1048576"});
  const json& e = j["engine_report"];
  EXPECT_EQ(e["structure"], "ratio_pools");
  EXPECT_EQ(e["max_total_num_tokens"], 8565760);
  EXPECT_EQ(e["max_running_requests"], 256);
  EXPECT_EQ(e["fixed_bytes"], 2715811840U);
  EXPECT_EQ(e["pool_sizes"]["c128_state"], 32896);
  EXPECT_EQ(e["simulated_max_requests"], 8);
  EXPECT_EQ(e["allocated_beyond_budget"], 465943872U);  // sglang_engine_test: the doc's hand sums
  // The plan's bytes: the smallest budget SGLang accepts for 1 x 1,048,576 (full >= 1,049,088).
  EXPECT_EQ(j["plan"]["pools"], "engine");
  const std::uint64_t plan_bytes = j["plan"]["total_bytes"];
  const std::string gib = fmt::format("{:.17g}", static_cast<double>(plan_bytes) / 1073741824.0);  // exact
  const json at = run_json({"--engine", "sglang@cce0a124", "--memory-gib", gib, "--context", "1048576"});
  EXPECT_EQ(at["engine_report"]["available_bytes"], plan_bytes);
  EXPECT_GE(at["engine_report"]["max_total_num_tokens"].get<std::int64_t>(), 1049088);
  EXPECT_EQ(at["engine_report"]["simulated_max_requests"], 1);
  // The released SGLang 0.5.23 is the default: rows priced as allocated (585 / 864 B per token),
  // the c4 state ring / page (sglang_engine_test hand-sums these figures); the JSON names the preset.
  const json rel =
      run_json({"--preset", "v4-flash", "--engine", "sglang", "--memory-gib", "64", "--context", "131072"});
  EXPECT_EQ(rel["engine_report"]["engine"], "sglang");
  EXPECT_EQ(rel["engine_report"]["preset"], "0.5.23");
  EXPECT_EQ(rel["engine_report"]["max_total_num_tokens"], 9313536);
  EXPECT_EQ(rel["engine_report"]["pool_sizes"]["swa"], 931328);
  EXPECT_EQ(rel["engine_report"]["pool_sizes"]["c4_state"], 29104);
  EXPECT_EQ(run_json({"--preset", "v4-flash", "--engine", "sglang@0.5.23", "--memory-gib", "64", "--context",
                      "131072"})["engine_report"]["max_total_num_tokens"],
            9313536);
}

TEST(CliEngine, SglangRatioFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--swa-full-tokens-ratio", "0.05"}, "--swa-full-tokens-ratio has no effect without --engine sglang"},
      {{"--engine", "sglang", "--swa-full-tokens-ratio", "0"}, "--swa-full-tokens-ratio must be in (0, 1], got 0"},
      {{"--engine", "sglang", "--swa-full-tokens-ratio", "1.5"}, "must be in (0, 1], got 1.5"},
  };
  expect_refused(cases);
  // SGLang's V4 override turns 0.8 into 0.1; 0.05 halves the SWA pool (int(full x 0.05) floored to 256).
  EXPECT_EQ(
      run_json({"--engine", "sglang", "--swa-full-tokens-ratio", "0.8"})["engine_report"]["swa_full_tokens_ratio"],
      0.1);
  const json half = run_json({"--engine", "sglang", "--swa-full-tokens-ratio", "0.05", "--memory-gib", "64"});
  const std::int64_t full = half["engine_report"]["pool_sizes"]["full"];
  EXPECT_EQ(half["engine_report"]["pool_sizes"]["swa"],
            static_cast<std::int64_t>(static_cast<double>(full) * 0.05) / 256 * 256);
}

TEST(CliEngine, StepBudgetBoundsRequestsInTheBudgetLine) {
  // Synchronous scheduling, B = 64: at most 64 requests hold pages; any number of queued requests fits in 1 TiB, and
  // tokenspeed runs at most its max_num_seqs (160 by default) at once.
  const run_result r = tables({"--context", "8192", "--prefill-chunk", "64", "--memory-gib", "1024", "--pools", "own",
                               "--engine", "tokenspeed", "--no-overlap"});
  EXPECT_NE(r.out.find("max requests at 8192 tokens: 160 (the engine runs at most 160 at once: "
                       "--max-running-requests, tokenspeed's max_num_seqs; memory alone fits any number)"),
            std::string::npos)
      << r.out;
  // vLLM runs at most max_num_seqs (1,024 by default) at once: the answer says so.
  const run_result v = tables({"--context", "8192", "--prefill-chunk", "64", "--memory-gib", "1024", "--no-overlap"});
  EXPECT_NE(v.out.find("max requests at 8192 tokens: 1024 (the engine runs at most 1024 at once: "
                       "--max-running-requests, vLLM's max_num_seqs; memory alone fits any number)"),
            std::string::npos)
      << v.out;
}

}  // namespace
}  // namespace dsv4::cache::cli

namespace dsv4::cache::cli {
namespace {

// The per-rank issue's "done when": every rank and the cluster's largest N.
TEST(CliParallel, ProOn32GpusPrintsEveryRankAndTheClusterCapacity) {
  // DCP as tokenspeed shards it (vLLM rejects DCP for DeepSeek V4): one pool per group.
  const json j = run_json({"--preset", "v4-pro", "--tp", "8", "--dcp", "4", "--dp", "2", "--pp", "2", "--requests",
                           "64", "--memory-gib", "80", "--pools", "own", "--mtp"});
  ASSERT_EQ(j["ranks"].size(), 32U);
  EXPECT_EQ(j["parallel"]["world_size"], 32);
  const json& r27 = j["ranks"][27];
  EXPECT_EQ(r27["dp_rank"], 1);
  EXPECT_EQ(r27["stage"], 1);
  EXPECT_EQ(r27["tp_rank"], 3);
  EXPECT_EQ(r27["dcp_rank"], 3);
  EXPECT_EQ(r27["requests"], 32);
  EXPECT_EQ(r27["layers"].front(), 31);  // 61 layers on 2 stages: 31, 30; the MTP layer 61 last
  EXPECT_EQ(r27["layers"].back(), 61);
  EXPECT_TRUE(j["cluster"]["max_requests"].get<std::int64_t>() > 64);
  EXPECT_TRUE(j["cluster"].contains("worst_rank"));
  std::uint64_t worst = 0;
  for (const json& r : j["ranks"]) worst = std::max(worst, r["total_bytes"].get<std::uint64_t>());
  EXPECT_EQ(j["cluster"]["worst_rank_bytes"], worst);
}

// Fresh-eyes finding: CLI11 read a leading 0 as octal ("0100" = 64 tokens, "08" an error).
TEST(CliParallel, LeadingZerosAreDecimal) {
  EXPECT_EQ(run_json({"--context", "0100"})["plan"]["context_tokens"], 100);
  EXPECT_EQ(run_json({"--requests", "08"})["plan"]["requests"], 8);
  EXPECT_EQ(run_json({"--tp", "016"})["parallel"]["tp"], 16);  // (octal 14 would not divide 64 heads)
}

TEST(CliParallel, WithoutParallelFlagsNoRanks) {
  const json j = run_json({});
  EXPECT_FALSE(j.contains("ranks"));
  EXPECT_FALSE(j.contains("cluster"));
}

TEST(CliParallel, GpuMemoryMinusReserved) {
  const json a = run_json({"--tp", "2", "--gpu-memory-gib", "141", "--reserved-gib", "61"});
  const json b = run_json({"--tp", "2", "--memory-gib", "80"});
  EXPECT_EQ(a["cluster"]["budget_bytes_per_gpu"], 80ULL << 30);
  EXPECT_EQ(a["cluster"]["max_requests"], b["cluster"]["max_requests"]);
}

TEST(CliParallel, MemoryFlagsTakeUnits) {
  // 141 GB = 141 x 10^9 B (an H200's HBM as sold); 2,048 MiB = 2 GiB; a bare number is GiB.
  EXPECT_EQ(run_json({"--memory-gib", "141GB"})["plan"]["budget_bytes"], 141'000'000'000ULL);
  EXPECT_EQ(run_json({"--memory-gib", "2048MiB"})["plan"]["budget_bytes"], 2ULL << 30);
  EXPECT_EQ(run_json({"--memory-gib", "0.5TB"})["plan"]["budget_bytes"], 500'000'000'000ULL);
  EXPECT_EQ(run_json({"--memory-gib", "64"})["plan"]["budget_bytes"], 64ULL << 30);
  EXPECT_EQ(run_json({"--gpu-memory-gib", "141GB", "--reserved-gib", "61GiB"})["plan"]["budget_bytes"],
            141'000'000'000ULL - (61ULL << 30));
  EXPECT_EQ(run_json({"--gpu-memory-gib", "80", "--reserved-gib", "0"})["plan"]["budget_bytes"], 80ULL << 30);
}

TEST(CliParallel, RefusedInputsExit2) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--tp", "3", "--dcp", "2"}, "dcp must divide tp"},
      {{"--preset", "v4-pro", "--tp", "3"}, "tp must divide num_attention_heads"},
      {{"--pp", "2", "--pp-layers", "22,x"}, "--pp-layers must be comma-separated decimal layer counts"},
      {{"--pp", "2", "--pp-layers", "22,20"}, "explicit layer split must sum to num_hidden_layers"},
      {{"--pp", "3", "--pp-layers", "22,21"}, "one entry per pipeline stage"},
      {{"--reserved-gib", "10"}, "--reserved-gib needs --gpu-memory-gib"},
      {{"--gpu-memory-gib", "80", "--reserved-gib", "90"}, "no KV budget left"},
      {{"--gpu-memory-gib", "80", "--memory-gib", "70"}, "not both"},
      {{"--tp", "64", "--dp", "128"}, "dp x pp x tp must be <= 4096"},
      {{"--handover", "2"}, "--handover 2 is for --role decode only"},
      // An error of the default model names the model, never a --preset the user did not give.
      {{"--engine", "sglang", "--tokens-per-step", "12"}, "DeepSeek-V4-Flash (the default model): SGLang: the draft"},
      {{"--role", "router"}, "--role"},
      {{"--pp", "2", "--pp-layers", ""}, "--pp-layers: must not be empty"},
      {{"--simulate", "--role", "decode", "--context", "300"}, "--simulate replays colocated engines only"},
      {{"--gpu-memory-gib", "-1"}, "--gpu-memory-gib must be at least 1 byte"},
      {{"--gpu-memory-gib", "141"}, "--gpu-memory-gib needs --reserved-gib"},
      {{"--dcp-interleave", "4"}, "--dcp-interleave 4 has no effect without --dcp"},
      {{"--indexer", "mxfp4", "--indexer-format", "v4.indexer_fp8"},
       "--indexer mxfp4 has no effect with --indexer-format v4.indexer_fp8"},
      {{"--pools", "own", "--format", "v4.swa_kv=v4.fp8_ds_mla", "--format", "v4.swa_kv=v4.bf16"},
       "--format v4.swa_kv given twice (v4.fp8_ds_mla, v4.bf16): give each group once"},
      {{"--memory-gib", "141gb"}, "'141gb' is not a memory size"},
      {{"--memory-gib", "GB"}, "'GB' is not a memory size"},
      {{"--gpu-memory-gib", "141GB", "--reserved-gib", "0x10"}, "'0x10' is not a memory size"},
      {{"--context", "-1"}, "--context must be >= 1, got -1"},
  };
  expect_refused(cases);
}

// ---- DeepSeek V4.1 (issue: V4.1-Flash) ----

TEST(CliV41, PresetReports890BytesPerTokenAndTheOwners) {
  // The V4.1 records (the v41 format set): vLLM's default on Blackwell (sparse_mla.py @ cf4bfd81).
  const json j = run_json({"--preset", "v4.1-flash", "--gpu", "b200"});
  EXPECT_EQ(j["model"]["name"], "DeepSeek-V4.1-Flash");
  EXPECT_EQ(j["model"]["family"], "v4.1");
  EXPECT_EQ(j["model"]["kv_source_layer_ids"], json({2, 8, 14, 20}));
  EXPECT_EQ(j["model"]["dspark_block_size"], 5);
  EXPECT_EQ(j["plan"]["format_set"], "v41");
  EXPECT_EQ(j["plan"]["indexer"], "mxfp4");
  // 3 ratio-2 owners x (288 + 68) / 2 + 1 ratio-1 owner x (288 + 68) = 534 + 356.
  EXPECT_EQ(j["plan"]["main_layer_bytes_per_context_token"], 890.0);
  ASSERT_EQ(j["layers"].size(), 43U);
  double sum = 0;
  for (int i = 0; i < 40; ++i) {
    const json& l = j["layers"][static_cast<std::size_t>(i)];
    const double want = i == 20 ? 356.0 : (i == 2 || i == 8 || i == 14) ? 178.0 : 0.0;
    EXPECT_EQ(l["bytes_per_context_token"], want) << i;
    sum += l["bytes_per_context_token"].get<double>();
  }
  EXPECT_EQ(sum, 890.0);
  EXPECT_EQ(j["layers"][0]["attention"], "swa");
  EXPECT_EQ(j["layers"][0]["compress_ratio"], 0);
  EXPECT_EQ(j["layers"][0]["role"], "none");
  EXPECT_TRUE(j["layers"][0]["kv_owner"].is_null());
  EXPECT_EQ(j["layers"][2]["attention"], "csa2");
  EXPECT_EQ(j["layers"][2]["role"], "owner");
  EXPECT_EQ(j["layers"][3]["role"], "reuse");
  EXPECT_EQ(j["layers"][3]["kv_owner"], 2);
  EXPECT_EQ(j["layers"][20]["attention"], "csa1");
  EXPECT_EQ(j["layers"][20]["compress_ratio"], 1);
  EXPECT_EQ(j["layers"][24]["role"], "reindex");
  EXPECT_EQ(j["layers"][24]["kv_owner"], 20);
  EXPECT_EQ(j["layers"][40]["role"], "draft");
  EXPECT_EQ(j["layers"][40]["mtp"], true);
  ASSERT_EQ(j["groups"].size(), 4U);
  const std::array<const char*, 4> ids = {"v4.1.swa", "v4.1.global_r2", "v4.1.global_r1", "v4.1.compressor_state_r2"};
  const std::array<const char*, 4> prefix = {"replay", "persist", "persist", "persist"};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(j["groups"][i]["id"], ids[i]);
    EXPECT_EQ(j["groups"][i]["prefix_cache"], prefix[i]);
  }
  EXPECT_EQ(j["groups"][1]["pools"][0]["format"], "v4.1.fp4");
  EXPECT_EQ(j["groups"][1]["pools"][1]["format"], "v4.indexer_mxfp4");
  // SWA per request: 40 main layers x 128 rows x 528 B = 2,703,360 B; the 3 ratio-2 owners also keep
  // vLLM's state ring of 8 rows x 4,096 B (s = 1).
  EXPECT_EQ(j["layers"][0]["fixed_bytes_per_request"], 128 * 528);
  std::uint64_t fixed = 0;
  for (int i = 0; i < 40; ++i)
    fixed += j["layers"][static_cast<std::size_t>(i)]["fixed_bytes_per_request"].get<std::uint64_t>();
  EXPECT_EQ(fixed, 2'703'360U + 3U * 8U * 4'096U);
  const run_result text = tables({"--preset", "v4.1-flash", "--gpu", "b200"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("owners (kv_source_layer_ids) 2, 8, 14, 20"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("plan it with --tokens-per-step 6"), std::string::npos);
  EXPECT_NE(text.out.find("over the 40 main layers: 890.00 B"), std::string::npos);
  EXPECT_NE(text.out.find("reuse of 2"), std::string::npos);
}

TEST(CliV41, ConfigFilesAndFormatSets) {
  const json preset = run_json({"--preset", "v4.1-flash", "--context", "65536"});
  EXPECT_EQ(run_json({"--config", kData + "/deepseek-v4.1-flash.config.json", "--context", "65536"})["plan"],
            preset["plan"]);
  // Owners 2, 8, 20 only: 2 x 178 + 356 = 712 B per token of context.
  nlohmann::json cfg;
  {
    std::ifstream in(kData + "/deepseek-v4.1-flash.config.json");
    cfg = json::parse(in);
  }
  cfg["text_config"]["kv_source_layer_ids"] = {2, 8, 20};
  const std::filesystem::path dir = dsv4::cache::testing::unique_temp_path("v41_owners_2_8_20");
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << cfg.dump();
  const json three = run_json({"--config", dir.string(), "--context", "65536", "--gpu", "b200"});
  EXPECT_EQ(three["plan"]["main_layer_bytes_per_context_token"], 712.0);
  EXPECT_EQ(three["layers"][14]["role"], "reindex");
  EXPECT_EQ(three["layers"][14]["kv_owner"], 8);
  std::filesystem::remove_all(dir);
  // The Hopper fallback: 584-B rows and 132-B FP8 index keys: 3 x (584 + 132) / 2 + (584 + 132) = 1,790.
  const json hopper = run_json({"--preset", "v4.1-flash", "--format-set", "v4"});
  EXPECT_EQ(hopper["plan"]["main_layer_bytes_per_context_token"], 1'790.0);
  EXPECT_EQ(hopper["plan"]["format_set"], "v4");
  EXPECT_EQ(hopper["groups"][0]["pools"][0]["format"], "v4.fp8_ds_mla");
  // ... which is vLLM's default on the assumed H200 (its V4.1 records need SM 10.x).
  const json dflt = run_json({"--preset", "v4.1-flash"});
  EXPECT_EQ(dflt["plan"], hopper["plan"]);
  EXPECT_EQ(dflt["assumptions"]["format_set"]["value"], "v4");
  EXPECT_EQ(dflt["assumptions"]["format_set"]["source"], "engine default");
  EXPECT_EQ(dflt["assumptions"]["gpu"]["value"], "H200");
  EXPECT_EQ(dflt["assumptions"]["gpu"]["source"], "planner default");
  EXPECT_EQ(run_json({"--preset", "v4.1-flash", "--gpu", "b200"})["plan"]["format_set"], "v41");
  // tokenspeed models V4.1 in own pools with the library's formats whatever the GPU.
  EXPECT_EQ(run_json({"--preset", "v4.1-flash", "--engine", "tokenspeed"})["plan"]["format_set"], "v41");
  // V4-Flash on the same basis: 21 x (584 + 68) / 4 + 20 x 584 / 128 = 3,514.25 (MXFP4 keys), 3,850.25 (FP8).
  EXPECT_EQ(run_json({"--preset", "v4-flash", "--indexer", "mxfp4", "--gpu",
                      "b200"})["plan"]["main_layer_bytes_per_context_token"],
            3'514.25);
  EXPECT_EQ(run_json({"--preset", "v4-flash"})["plan"]["main_layer_bytes_per_context_token"], 3'850.25);
  // The interleaved page rule through --format.
  const json inter = run_json({"--preset", "v4.1-flash", "--format", "v4.1.swa=v4.1.fp8.interleaved", "--format",
                               "v4.1.global_r2=v4.1.fp4.interleaved", "--pools", "own", "--gpu", "b200"});
  EXPECT_EQ(inter["groups"][0]["pools"][0]["format"], "v4.1.fp8.interleaved");
  EXPECT_EQ(inter["groups"][1]["pools"][0]["format"], "v4.1.fp4.interleaved");
  EXPECT_EQ(inter["groups"][2]["pools"][0]["format"], "v4.1.fp4");
}

TEST(CliV41, SimulateShowsNoGroupBelowItsPeak) {
  for (const char* engine : {"vllm", "tokenspeed", "tokenspeed-default"}) {
    const json j = run_json({"--preset", "v4.1-flash", "--engine", engine, "--requests", "3", "--context", "2049",
                             "--tokens-per-step", "6", "--prefill-chunk", "512", "--simulate"});
    ASSERT_EQ(j["groups"].size(), 4U);
    for (const json& g : j["groups"]) {
      const std::int64_t per_layer = g["pages"].get<std::int64_t>() / g["num_layers"].get<std::int64_t>();
      EXPECT_GE(per_layer, g["simulated_peak_pages"].get<std::int64_t>()) << engine << " " << g["id"];
    }
    EXPECT_GE(j["plan"]["total_bytes"].get<std::uint64_t>(), j["plan"]["simulated_peak_bytes"].get<std::uint64_t>());
  }
  const run_result text = tables(
      {"--preset", "v4.1-flash", "--requests", "2", "--context", "1000", "--tokens-per-step", "6", "--simulate"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(text.out.find("BELOW"), std::string::npos) << text.out;
}

TEST(CliV41, RefusedInputsExit2) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--preset", "v4.1-flash", "--indexer", "mxfp4"}, "takes its index-key format from --format-set"},
      {{"--preset", "v4-flash", "--format-set", "v41"}, "format sets are for DeepSeek V4.1 models"},
      {{"--preset", "v4.1-flash", "--format", "v4.swa_kv=v4.fp8_ds_mla"}, "v4.1.swa, v4.1.global_r2, v4.1.global_r1"},
      {{"--preset", "v4-flash", "--kv-format", "v4.1.fp8"}, "another model family"},
      {{"--preset", "v4.1-flash", "--format", "v4.1.global_r2=v4.indexer_mxfp4"}, "another kind of row"},
  };
  for (const auto& [args, part] : cases) {
    const run_result r = run(args);
    EXPECT_EQ(r.code, 2) << args[2];
    EXPECT_TRUE(r.out.empty());
    EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
  }
  // A bad V4.1 config names the file, the key and the value.
  nlohmann::json cfg;
  {
    std::ifstream in(kData + "/deepseek-v4.1-flash.config.json");
    cfg = json::parse(in);
  }
  cfg["text_config"]["kv_source_layer_ids"] = {2, 8, 14, 1};
  const std::filesystem::path file = dsv4::cache::testing::unique_temp_path("v41_bad_owner.config.json");
  std::ofstream(file) << cfg.dump();
  const run_result r = run({"--config", file.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("kv_source_layer_ids=1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(file.string()), std::string::npos) << r.err;
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace dsv4::cache::cli

namespace dsv4::cache::cli {
namespace {

// The vLLM engine issue's "done when": vLLM's startup line as the pinned version computes it
// (tests/oracle/vllm_pool_oracle.py gives the same), the simulated number of requests that really
// fit, and a 1 x 1,048,576-token plan at least what vLLM needs to start.
TEST(CliVllm, StartupLinesAndWhatReallyFits) {
  const run_result r =
      tables({"--preset", "v4-flash", "--engine", "vllm", "--memory-gib", "64", "--context", "1048576"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("engine vllm@2026.11"), std::string::npos) << r.out;
  // vLLM's defaults (issue 35): async scheduling (max_in_flight_tokens 2 x 8,192), no draft model.
  // One request of 1,048,576 tokens: 4,096 full-history blocks + 2 SWA tables x (cdiv(127 + 16,384,
  // 64) + 1 = 259) + the 4-token states (cdiv(7 + 16,384, 4) + 1 = 4,099) + the 8-token states
  // (cdiv(127 + 16,384, 8) + 1 = 2,065) = 10,778 blocks; 64 GiB // 1,002,240 B = 68,565 blocks;
  // 68,565 / 10,778 = 6.36x, int(6.3616 x 1,048,576) = 6,670,589 tokens (vLLM 0.33.0 logs the same).
  EXPECT_NE(r.out.find("vLLM logs: GPU KV cache size: 6,670,589 tokens, Maximum concurrency for 1,048,576 tokens per "
                       "request: 6.36x"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("vLLM starts with at least 10,803,144,960 B of KV cache"), std::string::npos);  // 10,779 blocks
  EXPECT_NE(r.out.find("what really fits (simulated on this pool"), std::string::npos);
  EXPECT_NE(r.out.find("async scheduling on (max_in_flight_tokens 16,384)"), std::string::npos);
  EXPECT_EQ(std::int64_t{64} * 1073741824 / 1'002'240, 68'565);
  const json j = run_json({"--preset", "v4-flash", "--memory-gib", "64", "--no-overlap"});
  const json& e = j["engine_report"];
  EXPECT_EQ(e["engine"], "vllm");
  EXPECT_EQ(e["preset"], "2026.11");
  EXPECT_EQ(e["source_commit"], "4253bd44243c89bb62c1898399f69236b2b5c721");
  EXPECT_EQ(e["structure"], "shared_block_pool");
  EXPECT_EQ(e["bytes_per_block"], 1'002'240);
  EXPECT_EQ(e["num_blocks"], 68'565);
  EXPECT_EQ(e["request_blocks"], 7'450);
  EXPECT_EQ(e["reported_tokens"], 9'650'417);
  EXPECT_EQ(e["log_lines"].size(), 1U);
  ASSERT_EQ(e["groups"].size(), 5U);
  EXPECT_EQ(e["groups"][2]["table"], "full_history");
  EXPECT_EQ(e["groups"][2]["charge_blocks"], 4'096);
  EXPECT_EQ(e["groups"][2]["tensors"][0]["page_bytes"], 8'640);  // index keys, 576-B padded
  const std::int64_t fit = e["simulated_max_requests"].get<std::int64_t>();
  EXPECT_FALSE(e["max_requests_by_plan"].get<bool>());  // simulated, not taken from the plan
  EXPECT_FALSE(e["simulated_lower_bound"].get<bool>());
  EXPECT_GE(fit, j["plan"]["max_requests"].get<std::int64_t>());  // the plan never promises more than fits
  EXPECT_GT(fit, 9);  // more than vLLM's own concurrency figure: its startup charge counts a prompt chunk per request
  // The 1 x 1M plan: vLLM starts with it.
  EXPECT_GE(j["plan"]["total_bytes"].get<std::uint64_t>(), e["min_bytes_to_start"].get<std::uint64_t>());
  // With async scheduling (vLLM's default, left out): 10,778 blocks a request, 6.36x.
  const json a = run_json({"--preset", "v4-flash", "--memory-gib", "64", "--context", "1048576"});
  EXPECT_EQ(a["assumptions"]["async_scheduling"]["value"], true);
  EXPECT_EQ(a["assumptions"]["async_scheduling"]["source"], "engine default");
  EXPECT_EQ(a["assumptions"]["async_scheduling"]["reference"],
            "vllm-project/vllm vllm/config/vllm.py@000fc94b VllmConfig.__post_init__");
  EXPECT_EQ(a["engine_report"]["num_blocks"], 68'565);
  EXPECT_EQ(a["engine_report"]["request_blocks"], 10'778);
  EXPECT_EQ(a["engine_report"]["max_in_flight_tokens"], 16'384);
  EXPECT_EQ(a["engine_report"]["log_lines"][0],
            "GPU KV cache size: 6,670,589 tokens, Maximum concurrency for 1,048,576 tokens per request: 6.36x");
  // 131,072-token requests: 512 + 2 x 259 + 4,099 + 2,065 = 7,194 blocks, 68,565 / 7,194 = 9.53x;
  // async off: 512 + 2 x 131 + 2,051 + 1,041 = 3,866 blocks, 17.74x (vLLM 0.33.0 logs both).
  EXPECT_NE(
      run_json({"--memory-gib", "64", "--context", "131072"})["engine_report"]["log_lines"][0].get<std::string>().find(
          "request: 9.53x"),
      std::string::npos);
  EXPECT_NE(run_json({"--memory-gib", "64", "--context", "131072", "--no-overlap"})["engine_report"]["log_lines"][0]
                .get<std::string>()
                .find("request: 17.74x"),
            std::string::npos);
}

// The fit search within its work limit: a search cut short answers at least the plan's answer
// (its pages bound the peak), never the "at least 0" of a search that proved nothing.
TEST(CliVllm, FitSearchCutAtItsWorkLimitAnswersAtLeastThePlan) {
  const std::vector<std::string> args = sync_mtp({"--context", "65536", "--memory-gib", "8", "--json"});
  std::ostringstream out, err;
  ASSERT_EQ(run_planner(args, out, err, /*max_sim_visits=*/1000), 0) << err.str();
  const json j = json::parse(out.str());
  const json& e = j["engine_report"];
  const std::int64_t planned = j["plan"]["max_requests"].get<std::int64_t>();
  ASSERT_GT(planned, 1);
  EXPECT_TRUE(e["simulated_lower_bound"].get<bool>());
  EXPECT_TRUE(e["max_requests_by_plan"].get<bool>());
  EXPECT_EQ(e["simulated_max_requests"].get<std::int64_t>(), planned);
  // With the default limit the search finishes, from the plan's answer upward.
  const json full = run_json(sync_mtp({"--context", "65536", "--memory-gib", "8"}));
  EXPECT_FALSE(full["engine_report"]["simulated_lower_bound"].get<bool>());
  EXPECT_FALSE(full["engine_report"]["max_requests_by_plan"].get<bool>());
  EXPECT_GE(full["engine_report"]["simulated_max_requests"].get<std::int64_t>(), planned);
  // When the plan already fits the running cap, there is nothing above it to search.
  const json capped = run_json({"--context", "8192", "--memory-gib", "1024", "--max-running-requests", "16"});
  EXPECT_EQ(capped["engine_report"]["simulated_max_requests"], 16);
  EXPECT_TRUE(capped["engine_report"]["max_requests_by_plan"].get<bool>());
  EXPECT_FALSE(capped["engine_report"]["simulated_lower_bound"].get<bool>());
  // Above the simulator's 2^20 requests (a running cap of 2,000,000): at least 2^20, said so.
  const json huge = run_json({"--context", "8192", "--memory-gib", "1000000000", "--max-running-requests", "2000000"});
  EXPECT_EQ(huge["engine_report"]["simulated_max_requests"], 1 << 20);
  EXPECT_TRUE(huge["engine_report"]["simulated_lower_bound"].get<bool>());
}

// `--simulate` cut at its work limit is an error naming the limit, never a peak of part of the
// workloads passed off as the worst case.
TEST(CliVllm, SimulateCutAtItsWorkLimitIsRefused) {
  std::ostringstream out, err;
  EXPECT_EQ(run_planner({"--simulate", "--requests", "8", "--context", "65536"}, out, err, /*max_sim_visits=*/100), 2);
  EXPECT_NE(err.str().find("--simulate stopped at its work limit (100 request visits"), std::string::npos) << err.str();
  EXPECT_TRUE(out.str().empty()) << out.str();  // nothing half-written
}

// The issue's done-when command: tokenspeed's `Cache profile` figures as tokenspeed computes them
// (tokenspeed_engine_test and the oracle check the numbers) and what really fits on its arena.
TEST(CliTokenspeed, CacheProfileAndWhatReallyFits) {
  // tokenspeed's defaults at f4d8ec6e (the pin, by name): overlap scheduling on, no draft model
  // (recipes/base.py `num_draft_layers` 0): parent_bytes 2,403,072, 28,595 parents,
  // token_capacity 5,924,096, as tokenspeed starts at 64 GiB with 1M-token contexts.
  const std::vector<std::string> args = {"--preset",     "v4-flash", "--engine",  "tokenspeed@f4d8ec6e",
                                         "--memory-gib", "64",       "--context", "1048576"};
  const run_result dflt = tables(args);
  ASSERT_EQ(dflt.code, 0) << dflt.err;
  EXPECT_NE(dflt.out.find("tokenspeed logs: Cache profile: parent_bytes=2403072, P=256, parents=28595, "
                          "token_capacity=5924096, layers=43 (draft 0), groups={'v4.c128a.compressed_kv': 32, "),
            std::string::npos)
      << dflt.out;
  const json dj = run_json(args);
  EXPECT_EQ(dj["engine_report"]["parent_bytes"], 2'403'072);
  EXPECT_EQ(dj["engine_report"]["parents"], 28'595);
  EXPECT_EQ(dj["engine_report"]["token_capacity"], 5'924'096);
  EXPECT_EQ(dj["assumptions"]["draft_layer"]["source"], "engine default");
  // The default `--engine tokenspeed` is tokenspeed 0.1.1: the index keys a group of their own
  // (K 8), the CSA compressed KV K 2; its parent 20 x 92,160 + 76,032 + 22 x 39,168 = 2,780,928 B;
  // 68,719,476,736 // 2,780,928 - 1 = 24,709 budgeted, the sliding groups 4,400 parents and the
  // history groups x = 30,944 pages each (ceil(x / 2) + ceil(x / 8) + ceil(x / 32) = 20,307):
  // 24,707 parents, token_capacity 30,624 x 256 (tokenspeed_engine_test Release011StartupByHand).
  const std::vector<std::string> rel = {"--preset",     "v4-flash", "--engine",  "tokenspeed",
                                        "--memory-gib", "64",       "--context", "1048576"};
  const run_result rt = tables(rel);
  ASSERT_EQ(rt.code, 0) << rt.err;
  EXPECT_NE(rt.out.find("tokenspeed logs: Cache profile: parent_bytes=2780928, P=256, parents=24707, "
                        "token_capacity=7839744, layers=43 (draft 0), groups={'v4.c128a.compressed_kv': 32, "
                        "'v4.c128a.compressor_state': 2, 'v4.c4a.compressed_kv': 2, 'v4.c4a.compressor_state': 2, "
                        "'v4.c4a.indexer_compressor_state': 8, 'v4.c4a.indexer_kv': 8, 'v4.swa_kv': 1}"),
            std::string::npos)
      << rt.out;
  EXPECT_NE(rt.out.find("v4.c4a.indexer_kv"), std::string::npos);  // a row of the group table
  const json rj = run_json(rel);
  EXPECT_EQ(rj["engine_report"]["preset"], "0.1.1");
  EXPECT_EQ(rj["engine_report"]["parent_bytes"], 20 * 92'160 + 76'032 + 22 * 39'168);
  EXPECT_EQ(rj["engine_report"]["parents"], 24'707);
  EXPECT_EQ(rj["engine_report"]["token_capacity"], 30'624 * 256);
  EXPECT_EQ(rj["engine_report"]["packing"]["v4.c4a.indexer_kv"], 8);
  EXPECT_EQ(rj["engine_report"]["packing"]["v4.c4a.compressed_kv"], 2);
  // With the draft layer: one more SWA-only plane, 2,780,928 + 39,168 B.
  EXPECT_EQ(run_json({"--preset", "v4-flash", "--engine", "tokenspeed", "--memory-gib", "64",
                      "--mtp"})["engine_report"]["parent_bytes"],
            2'780'928 + 39'168);
  // With the draft model's MTP layer (--mtp): one more SWA plane, fewer parents.
  const run_result text = tables({"--preset", "v4-flash", "--engine", "tokenspeed@f4d8ec6e", "--memory-gib", "64",
                                  "--context", "1048576", "--mtp"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("tokenspeed logs: Cache profile: parent_bytes=2442240, P=256, parents=28136, "
                          "token_capacity=5810176, layers=44 (draft 1), groups={'v4.c128a.compressed_kv': 32, "),
            std::string::npos)
      << text.out;
  const json j = run_json({"--preset", "v4-flash", "--engine", "tokenspeed@f4d8ec6e", "--memory-gib", "64", "--context",
                           "1048576", "--mtp"});
  const json& e = j["engine_report"];
  EXPECT_EQ(e["structure"], "parent_arena");
  EXPECT_EQ(j["plan"]["pools"], "engine");
  EXPECT_EQ(e["parent_bytes"], 2'442'240);  // 2,403,072 + the draft layer's SWA plane (39,168 B)
  EXPECT_EQ(e["packing"]["v4.c128a.compressed_kv"], 32);
  EXPECT_EQ(e["max_num_seqs"], 160);
  EXPECT_EQ(e["overlap_schedule_depth"], 1);
  const std::int64_t planned = j["plan"]["max_requests"].get<std::int64_t>();
  EXPECT_GE(e["simulated_max_requests"].get<std::int64_t>(), planned);  // the plan never promises more
  EXPECT_GE(planned, 1);
  // The plan's bytes are a budget tokenspeed starts with and runs one request of L on.
  const json one = run_json({"--engine", "tokenspeed@f4d8ec6e", "--mtp"});
  EXPECT_EQ(one["plan"]["total_bytes"], one["plan"]["num_parents"].get<std::uint64_t>() * 2'442'240ULL);
  EXPECT_TRUE(one["engine_report"]["starts"].get<bool>());
  EXPECT_TRUE(one["engine_report"]["budget_is_plan"].get<bool>());
  EXPECT_GE(one["engine_report"]["max_request_tokens"].get<std::int64_t>(), 1'048'576);
  // A format tokenspeed's recipe does not write is refused under its arena, named; own pools take it.
  const run_result bf16 = run({"--engine", "tokenspeed", "--format", "v4.swa_kv=v4.bf16"});
  EXPECT_EQ(bf16.code, 2);
  EXPECT_NE(bf16.err.find("tokenspeed's V4 recipe stores KV rows as v4.fp8_ds_mla only"), std::string::npos)
      << bf16.err;
  EXPECT_EQ(run({"--engine", "tokenspeed", "--format", "v4.swa_kv=v4.bf16", "--pools", "own"}).code, 0);
  // Pipeline stages (the pin's reading): each its own arena, the report of the widest stage's; its
  // layers and draft.
  const json pp = run_json({"--engine", "tokenspeed@f4d8ec6e", "--pp", "2", "--memory-gib", "64", "--mtp"});
  EXPECT_EQ(pp["engine_report"]["pipeline_stage"], 1);  // 21 main layers + the MTP layer
  EXPECT_LT(pp["engine_report"]["parent_bytes"].get<std::int64_t>(), 2'442'240);
  EXPECT_NE(pp["engine_report"]["log_lines"][0].get<std::string>().find("layers=22 (draft 1)"), std::string::npos);
  EXPECT_LT(pp["ranks"][0]["total_bytes"].get<std::uint64_t>(), one["plan"]["total_bytes"].get<std::uint64_t>());
}

TEST(CliVllm, OwnPoolsAndOtherEngines) {
  const json own = run_json({"--memory-gib", "64", "--pools", "own"});
  EXPECT_EQ(own["engine_report"]["structure"], "own_pools");
  EXPECT_FALSE(own["engine_report"].contains("bytes_per_block"));
  EXPECT_TRUE(own["engine_report"].contains("simulated_max_requests"));
  const json t = run_json({"--engine", "tokenspeed", "--context", "8192"});
  EXPECT_EQ(t["engine_report"]["engine"], "tokenspeed");
  EXPECT_EQ(t["engine_report"]["preset"], "0.1.1");  // the released tokenspeed is the default
  EXPECT_EQ(t["plan"]["pool_structure"], "parent_arena");
  const json pin = run_json({"--engine", "tokenspeed@f4d8ec6e", "--context", "8192"});
  EXPECT_EQ(pin["engine_report"]["preset"], "f4d8ec6e");
  EXPECT_EQ(pin["engine_report"]["source_commit"], "f4d8ec6e039c028c7ee71317ccfb84e56ae2b45c");
  // vLLM 0.33.0: the rules of vllm@2026.11 under the release's name, the same plan.
  const json v033 = run_json({"--engine", "vllm@0.33.0"});
  EXPECT_EQ(v033["engine_report"]["preset"], "0.33.0");
  json v033_plan = v033["plan"];
  EXPECT_EQ(v033_plan["engine_preset"], "0.33.0");
  v033_plan["engine_preset"] = "2026.11";  // the one difference: the preset's name
  EXPECT_EQ(v033_plan, run_json({})["plan"]);
  EXPECT_EQ(run_json({"--engine", "vllm@2026.11"})["plan"], run_json({})["plan"]);
}

TEST(CliVllm, RefusalAndMaxRunningRequests) {
  const json j = run_json({"--memory-gib", "1"});
  EXPECT_EQ(j["engine_report"]["starts"], false);
  EXPECT_EQ(j["engine_report"]["estimated_max_model_len"], 2'592);
  EXPECT_EQ(j["engine_report"]["simulated_max_requests"], 0);
  // max_num_seqs caps what runs at once: 8,192-token requests on 64 GiB, at most 16 running.
  const json m = run_json({"--memory-gib", "64", "--context", "8192", "--max-running-requests", "16"});
  EXPECT_EQ(m["engine_report"]["simulated_max_requests"], 16);
  EXPECT_EQ(m["engine_report"]["max_running_requests"], 16);
}

TEST(CliVllm, SimulateRunsMillionTokenContexts) {
  // The work estimate, not N x L, bounds --simulate: 16 requests of 1M tokens replay in well under a second.
  const json j = run_json({"--requests", "16", "--simulate"});
  EXPECT_GE(j["plan"]["num_blocks"].get<std::int64_t>(), j["plan"]["simulated_peak_blocks"].get<std::int64_t>());
  EXPECT_GE(j["plan"]["num_blocks"].get<std::int64_t>(),
            j["plan"]["simulated_peak_admission_blocks"].get<std::int64_t>());
}

}  // namespace
}  // namespace dsv4::cache::cli

// ---- The operator screen (issue 26): verdict first, one screen, per GPU vs cluster, the why ----
namespace dsv4::cache::cli {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// The screen's contract: at most 22 lines of at most 100 columns, the verdict first.
void expect_one_screen(const run_result& r, const std::string& what) {
  ASSERT_EQ(r.code, 0) << what << ": " << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  EXPECT_LE(lines.size(), 22U) << what << "\n" << r.out;
  for (const std::string& line : lines) EXPECT_LE(line.size(), 100U) << what << ": " << line;
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].rfind("verdict: ", 0), 0U) << what << ": " << lines[0];
}

TEST(CliScreen, TheIssuesCommandFitsOneScreen) {
  const std::vector<std::string> args = {"--preset", "v4-pro",    "--tp",   "8",          "--memory-gib",
                                         "60",       "--context", "131072", "--requests", "64"};
  const run_result r = run(args);
  expect_one_screen(r, "v4-pro tp 8");
  const json j = run_json(args);
  // The screen quotes the report: the verdict's line (the one number that really fits: vLLM's
  // allocator replayed holds 66, the plan's bytes guarantee 57, issue 35), what it assumed, vLLM's
  // own log line, the plan's bound once.
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), j["verdict"]["line"].get<std::string>()) << r.out;
  EXPECT_EQ(j["verdict"]["line"],
            "verdict: 64 x 131,072 tokens FITS: 66 fit at once (replayed; limit: the 60.00 GiB budget)");
  EXPECT_EQ(j["verdict"]["simulated_max_requests"], 66);
  EXPECT_EQ(j["verdict"]["plan_max_requests"], 57);
  EXPECT_NE(r.out.find("assumes  async scheduling (vLLM's default), no MTP draft, max_num_seqs 1,024, chunk 8,192, "
                       "Hopper\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("bound    the plan's bytes guarantee 57: lower"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("replayed "), std::string::npos) << "one headline number: " << r.out;
  // The context follows the replay too (the plan's bytes would say 116,992), and the plan's worst
  // case over the budget is named as a peak the replay never reaches, not as a second verdict.
  EXPECT_NE(r.out.find("cluster  tp 8 x dp 1 x pp 1 = 8 GPUs; 64 request(s) fit up to " +
                       thousands(j["engine_report"]["simulated_max_context_tokens"].get<std::int64_t>()) +
                       " tokens (replayed)"),
            std::string::npos)
      << r.out;
  EXPECT_GT(j["engine_report"]["simulated_max_context_tokens"].get<std::int64_t>(), 131072);
  EXPECT_NE(r.out.find("4.66 GiB over the 60.00 GiB budget, a peak the replay never reaches"), std::string::npos)
      << r.out;
  const std::string log = j["engine_report"]["log_lines"][0].get<std::string>();  // vLLM's own text
  EXPECT_NE(r.out.find(log.substr(0, 40)), std::string::npos) << log << "\n" << r.out;
  // The worst rank's bytes, synchronous and with the MTP layer: 59,327,017,920 B = 55.25 GiB
  // (every TP rank holds the whole cache).
  const run_result sync = run(sync_mtp(args));
  EXPECT_NE(sync.out.find("per GPU  rank 0 of 8 (the worst): 64 x 131,072 tokens take 55.25 GiB of 60.00 GiB"),
            std::string::npos)
      << sync.out;
  EXPECT_NE(sync.out.find("where the 55.25 GiB of this GPU's plan go:"), std::string::npos);
  EXPECT_EQ(run_json(sync_mtp(args))["ranks"][0]["total_bytes"], 59327017920ULL);
  // The tables moved behind flags; --verbose has them all.
  EXPECT_EQ(r.out.find("layer  attention"), std::string::npos);
  EXPECT_NE(tables(args).out.find("layer  attention"), std::string::npos);
  EXPECT_NE(run({"--preset", "v4-pro", "--tp", "8", "--layers"}).out.find("layer  attention"), std::string::npos);
  EXPECT_NE(run({"--preset", "v4-pro", "--tp", "8", "--ranks"}).out.find("worst rank 0:"), std::string::npos);
  // Other deployments stay on one screen too.
  for (const std::vector<std::string>& other : std::vector<std::vector<std::string>>{
           {},
           {"--memory-gib", "64"},
           {"--memory-gib", "64", "--requests", "20"},
           {"--preset", "v4-flash", "--engine", "sglang", "--memory-gib", "64", "--context", "1048576"},
           {"--preset", "v4-flash", "--engine", "tokenspeed", "--memory-gib", "64", "--context", "1048576"},
           {"--preset", "v4.1-flash", "--memory-gib", "30", "--requests", "40", "--context", "65536"},
           {"--preset", "v3.2", "--memory-gib", "10", "--pools", "own", "--requests", "8"},
           {"--preset", "v4-flash", "--engine", "sglang", "--memory-gib", "2"},
           {"--memory-gib", "1"},
       })
    expect_one_screen(run(other), other.empty() ? "default" : other[0] + " " + other[1]);
}

// Issue 42: the KV budget derived from the GPU as the engine derives it. The figures: CUDA's total
// for an H200 (150,109,880,320 B, measured), vLLM's default utilization 0.92 (vllm/config/cache.py
// @ 002f10e0): usable = floor(150,109,880,320 x 0.92) = 138,101,089,894 B; V4-Pro's weights on the
// fullest of 8 TP ranks 109,457,016,548 B (tests/oracle/weights_oracle.py's own count, ctest
// oracle.budget_chain_agrees); the runtime reserve is the library's estimate, 5,394,923,520 B.
TEST(CliBudget, TheChainFromTheGpuToTheKvBudget) {
  const std::vector<std::string> args = {"--preset", "v4-pro", "--gpu", "h200", "--tp", "8", "--context", "1048576"};
  const run_result r = run(args);
  expect_one_screen(r, "v4-pro --gpu h200 --tp 8");
  EXPECT_NE(r.out.find("\nbudget   H200 139.80 GiB x 0.92 default - weights 101.94 GiB - reserve 5.02 GiB est. = "
                       "21.65 GiB\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.rfind("verdict: 1 x 1,048,576 tokens FITS: ", 0), 0U) << r.out;
  const json j = run_json(args);
  const json& b = j["budget"];
  EXPECT_EQ(b["gpu_bytes"], 150109880320LL);
  EXPECT_EQ(b["fraction"], 0.92);
  EXPECT_EQ(b["fraction_source"], "engine default");
  EXPECT_EQ(b["usable_bytes"], 138101089894LL);
  EXPECT_EQ(b["weights_bytes_per_rank"], 109457016548LL);
  EXPECT_EQ(b["reserve_bytes"], 5394923520LL);
  EXPECT_EQ(b["kv_budget_bytes"], 138101089894LL - 109457016548LL - 5394923520LL);
  for (const char* key : {"gpu_source", "fraction_reference", "weights_source"})
    EXPECT_FALSE(b[key].get<std::string>().empty()) << key;
  // The budget the answers use is the derived one, to the byte.
  EXPECT_EQ(j["plan"]["budget_bytes"], 23249149826LL);
  // The flag given: the screen says so (no "default"), the figure follows.
  const run_result flagged =
      run({"--preset", "v4-pro", "--gpu", "h200", "--tp", "8", "--gpu-memory-utilization", "0.9"});
  EXPECT_NE(flagged.out.find("budget   H200 139.80 GiB x 0.9 - weights"), std::string::npos) << flagged.out;
  // vLLM's fixed budget, as vLLM spells it.
  const json fixed =
      run_json({"--preset", "v4-pro", "--gpu", "h200", "--tp", "8", "--kv-cache-memory-bytes", "20000000000"});
  EXPECT_EQ(fixed["budget"]["kv_budget_bytes"], 20000000000LL);
  EXPECT_EQ(fixed["plan"]["budget_bytes"], 20000000000LL);
}

// One H200 cannot hold V4-Flash's weights (145.30 GiB without the MTP layer) in the 128.62 GiB
// (138,101,089,894 B) vLLM may use: that is the verdict, and --require-fit says no.
TEST(CliBudget, WeightsThatDoNotFitAreTheVerdict) {
  const run_result r = run({"--preset", "v4-flash", "--gpu", "h200"});
  expect_one_screen(r, "v4-flash --gpu h200");
  EXPECT_EQ(r.out.rfind("verdict: 1 x 1,048,576 tokens DOES NOT FIT: the weights need 145.30 GiB per GPU,", 0), 0U)
      << r.out;
  EXPECT_NE(r.out.find("more than the 128.62 GiB vLLM may use (H200 x 0.92)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("= no KV cache"), std::string::npos) << r.out;
  const json j = run_json({"--preset", "v4-flash", "--gpu", "h200"});
  EXPECT_EQ(j["verdict"]["fits"], false);
  EXPECT_EQ(j["verdict"]["limit"], "weights");
  EXPECT_EQ(j["budget"]["weights_fit"], false);
  EXPECT_EQ(run({"--preset", "v4-flash", "--gpu", "h200", "--require-fit"}).code, 1);
  // Two GPUs hold them: 78,666,270,300 B per rank (the oracle's count), and the answer is a fit.
  const run_result two = run({"--preset", "v4-flash", "--gpu", "h200", "--tp", "2", "--require-fit"});
  EXPECT_EQ(two.code, 0) << two.out << two.err;
}

// vLLM's --kv-cache-memory-bytes is allocated beside the weights: a fixed budget that does not fit
// on the GPU with them is the verdict (it said FITS for 20 GB beside V4-Flash's 145.30 GiB on one
// H200, and for 2^63 - 1 bytes). H200: 150,109,880,320 B = 139.80 GiB; 200,000,000,000 B =
// 186.26 GiB; V4-Pro at tp 8: 101.94 GiB of weights per GPU (CliBudget's chain above).
TEST(CliBudget, FixedKvBudgetMustFitBesideTheWeights) {
  for (const char* kv : {"20000000000", "9223372036854775807"}) {
    const run_result r = run({"--kv-cache-memory-bytes", kv, "--context", "65536"});
    EXPECT_EQ(r.out.rfind("verdict: 1 x 65,536 tokens DOES NOT FIT: the weights need 145.30 GiB per GPU,", 0), 0U)
        << kv << "\n"
        << r.out;
    EXPECT_NE(r.out.find("more than the H200's 139.80 GiB"), std::string::npos) << r.out;
  }
  const run_result pro =
      run({"--preset", "v4-pro", "--gpu", "h200", "--tp", "8", "--kv-cache-memory-bytes", "200000000000"});
  EXPECT_NE(pro.out.find("DOES NOT FIT: the weights (101.94 GiB) and --kv-cache-memory-bytes"), std::string::npos)
      << pro.out;
  EXPECT_NE(pro.out.find("(186.26 GiB) need 288.20 GiB per GPU, more than the H200's 139.80 GiB"), std::string::npos)
      << pro.out;
  const json j =
      run_json({"--preset", "v4-pro", "--gpu", "h200", "--tp", "8", "--kv-cache-memory-bytes", "200000000000"});
  EXPECT_EQ(j["verdict"]["fits"], false);
  EXPECT_EQ(j["verdict"]["limit"], "weights");
  EXPECT_EQ(run({"--preset", "v4-pro", "--gpu", "h200", "--tp", "8", "--kv-cache-memory-bytes", "200000000000",
                 "--require-fit"})
                .code,
            1);
  // V4.1's weights are not modelled: the budget alone against the GPU.
  const run_result v41 = run({"--preset", "v4.1-flash", "--kv-cache-memory-bytes", "200000000000"});
  EXPECT_NE(v41.out.find("DOES NOT FIT: --kv-cache-memory-bytes (186.26 GiB) is more than the"), std::string::npos)
      << v41.out;
  // Beside the weights it fits (101.94 + 18.63 GiB of 139.80).
  EXPECT_EQ(run({"--preset", "v4-pro", "--gpu", "h200", "--tp", "8", "--kv-cache-memory-bytes", "20000000000",
                 "--require-fit"})
                .code,
            0);
}

// Every engine's chain stays on one screen, and what cannot be derived says why.
TEST(CliBudget, EveryEngineOnOneScreenAndModelsWithoutWeightsSayWhy) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--preset", "v4-flash", "--gpu", "b200", "--engine", "sglang"},
           {"--preset", "v4-flash", "--gpu", "h200", "--tp", "4", "--engine", "tokenspeed"},
           {"--preset", "v4-pro", "--gpu", "gb300", "--tp", "8", "--engine", "tokenspeed-default"},
           {"--preset", "v4-pro", "--gpu", "h200", "--tp", "8", "--dp", "2", "--ep", "16", "--mtp"},
           {"--preset", "v4.1-flash", "--gpu", "h200"},
       }) {
    const run_result r = run(args);
    expect_one_screen(r, args[1] + " " + args[3]);
    EXPECT_NE(r.out.find("\nbudget   "), std::string::npos) << r.out;
  }
  const run_result v41 = run({"--preset", "v4.1-flash", "--gpu", "h200"});
  EXPECT_NE(v41.out.find("not derived from H200: DeepSeek V4.1's weights"), std::string::npos) << v41.out;
  EXPECT_NE(v41.out.find("no budget (give --memory-gib; see budget)"), std::string::npos) << v41.out;
  EXPECT_NE(v41.out.find("no DSpark draft"), std::string::npos) << v41.out;
}

TEST(CliBudget, BadChainFlagsAreRefusedNamingTheFlag) {
  expect_refused({
      {{"--gpu", "h200", "--mem-fraction-static", "0.8"}, "--mem-fraction-static is SGLang's flag"},
      {{"--gpu", "h200", "--engine", "sglang", "--gpu-memory-utilization", "0.8"},
       "SGLang's memory fraction is --mem-fraction-static"},
      {{"--gpu", "h200", "--engine", "sglang", "--kv-cache-memory-bytes", "1000"}, "--kv-cache-memory-bytes is vLLM's"},
      {{"--gpu", "h200", "--gpu-memory-utilization", "1.5"}, "--gpu-memory-utilization must be in (0, 1]"},
      {{"--gpu", "h200", "--gpu-memory-utilization", "0"}, "--gpu-memory-utilization must be in (0, 1]"},
      {{"--memory-gib", "64", "--gpu-memory-utilization", "0.9"}, "give them without --memory-gib"},
      {{"--gpu", "h200", "--ep", "0"}, "--ep"},
      {{"--preset", "v4.1-flash", "--gpu", "h200", "--gpu-memory-utilization", "0.9"},
       "the budget cannot be derived from --gpu"},
      {{"--preset", "v4.1-flash", "--gpu", "h200", "--require-fit"}, "--require-fit needs a budget"},
  });
}

// Issue 42: messages echo what the user typed (the flag, the value in their unit), never the
// library's namespace, an internal enum value or float noise. 155 GB = 155e9 / 2^30 GiB =
// 144.3549990654 GiB and 141 GB = 131.3164830208 GiB (by hand), printed to 2 decimals.
TEST(CliHygiene, MessagesEchoTheUserNotTheLibrary) {
  expect_refused({
      {{"--requests", "-1"}, "--requests: '-1' must be at least 1"},
      {{"--tp", "0"}, "--tp: '0' must be at least 1"},
      {{"--dp", "0"}, "--dp: '0' must be at least 1"},
      {{"--pp", "-2"}, "--pp: '-2' must be at least 1"},
      {{"--dcp", "0"}, "--dcp: '0' must be at least 1"},
      {{"--tokens-per-step", "0"}, "--tokens-per-step: '0' must be at least 1"},
      {{"--tokens-per-step", "9", "--context", "8"},
       "--tokens-per-step 9 is more than the context of 8 tokens (--context)"},
      {{"--memory-gib", "500", "--gpu", "h100"},
       "--memory-gib 500 GiB is more than the H100 80GB's 79.19 GiB of memory (--gpu h100): the KV budget is per GPU"},
      {{"--gpu-memory-gib", "1000", "--reserved-gib", "0", "--gpu", "h100"},
       "--gpu-memory-gib 1000 GiB is more than the H100 80GB's 79.19 GiB of memory (--gpu h100)"},
      {{"--gpu-memory-utilization", ""}, "--gpu-memory-utilization: must not be empty"},
      {{"--gpu-memory-utilization", "0x0.8"}, "--gpu-memory-utilization: '0x0.8' is not a decimal number"},
      {{"--engine", "sglang", "--mem-fraction-static", ""}, "--mem-fraction-static: must not be empty"},
      {{"--prefill-chunk", "-8"}, "--prefill-chunk: '-8' must be at least 1"},
      {{"--gpu-memory-gib", "141GB", "--reserved-gib", "155GB"},
       "--reserved-gib 155 GB (144.35 GiB) must be below --gpu-memory-gib 141 GB (131.32 GiB): no KV budget left"},
      {{"--gpu-memory-gib", "80", "--reserved-gib", "90"},
       "--reserved-gib 90 GiB must be below --gpu-memory-gib 80 GiB"},
      {{"--memory-gib", "0.0000000001"}, "got 0.107 B"},  // 1e-10 GiB = 0.107374 B (2^30 x 1e-10)
      {{"--preset", "v4.1-flash", "--engine", "sglang"},
       "--preset v4.1-flash: SGLang 0.5.23's DeepSeek V4 pools are modelled for V4 models only"},
      // Its replay used to loop forever: SGLang truncates a prefill chunk to whole 256-token pages.
      {{"--preset", "v4-pro", "--engine", "sglang", "--context", "8192", "--prefill-chunk", "128", "--memory-gib",
        "60"},
       "--engine sglang: --prefill-chunk 128 is below SGLang's page of 256 tokens"},
  });
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--requests", "-1"},
           {"--preset", "v4.1-flash", "--engine", "sglang"},
           {"--preset", "v3.2", "--engine", "sglang", "--memory-gib", "8"},
           {"--gpu-memory-gib", "141GB", "--reserved-gib", "155GB"},
           {"--memory-gib", "1e-12"},
           {"--preset", "v4.1-flash", "--format-set", "v9"},
           {"--engine", "sglang", "--role", "decode"},
       }) {
    const run_result r = run(args);
    EXPECT_EQ(r.code, 2) << args[0];
    EXPECT_EQ(r.err.find("dsv4::cache"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("family="), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("role="), std::string::npos) << r.err;
    EXPECT_FALSE(std::regex_search(r.err, std::regex(R"(\.[0-9]{7,})"))) << "float noise: " << r.err;
  }
}

// The struct path (the fuzzer's, the Python module's) skips the flags' checks: compute() checks the
// counts it formats before any arithmetic on them (cli_fuzz found tokens_per_step = INT64_MIN
// reaching "tokens_per_step - 1" in the assumptions line, a signed overflow).
TEST(CliHygiene, ComputeChecksStepCountsBeforeUsingThem) {
  for (const std::int64_t bad : {std::int64_t{0}, std::int64_t{-1}, std::numeric_limits<std::int64_t>::min()}) {
    cli::planner_args a;
    a.tokens_per_step = bad;
    try {
      (void)cli::compute(a, false);
      ADD_FAILURE() << "tokens_per_step " << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "--tokens-per-step: '" + std::to_string(bad) + "' must be at least 1");
    }
    cli::planner_args b;
    b.prefill_chunk = bad;
    try {
      (void)cli::compute(b, false);
      ADD_FAILURE() << "prefill_chunk " << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "--prefill-chunk: '" + std::to_string(bad) + "' must be at least 1");
    }
  }
}

// Issue 42: every planner command in the README's code blocks runs as written (exit 0) under the
// defaults it leaves out; the one that reads a user's model directory reads the test config instead.
TEST(CliReadme, EveryPlannerCommandRunsAsWritten) {
  std::ifstream in(std::filesystem::path(kData).parent_path().parent_path() / "README.md");
  ASSERT_TRUE(in) << "README.md next to tests/";
  std::string line;
  bool code = false;
  int commands = 0;
  const std::string prefix = "build/tools/dsv4-cache-plan";
  while (std::getline(in, line)) {
    if (line.starts_with("```")) {
      code = !code;
      continue;
    }
    if (!code || !line.starts_with(prefix)) continue;
    for (const std::string_view cut : {" #", " &&", " >", " |"}) line = line.substr(0, line.find(cut));
    std::istringstream words(line.substr(prefix.size()));
    std::vector<std::string> args;
    for (std::string w; words >> w;)
      args.push_back(w.starts_with("/models/") ? kData + "/deepseek-v4-flash.config.json" : w);
    const run_result r = run(args);
    EXPECT_EQ(r.code, 0) << line << "\n" << r.err;
    ++commands;
  }
  EXPECT_GE(commands, 14) << "the README's planner commands were found";
}

// Issue 42: the speculative setting on the default screen's assumptions line, not only under
// --verbose: DSpark's block of 5 drafts (--tokens-per-step 6) and V4's MTP.
TEST(CliScreen, SpeculationOnTheAssumptionsLine) {
  std::string out = run({"--preset", "v4.1-flash", "--tokens-per-step", "6"}).out;
  EXPECT_NE(out.find("DSpark draft not cached, 6 tokens/step (1 + 5 drafted)"), std::string::npos) << out;
  out = run({"--preset", "v4-flash", "--tokens-per-step", "2", "--mtp"}).out;
  EXPECT_NE(out.find("MTP draft cached (--mtp), 2 tokens/step (1 + 1 drafted)"), std::string::npos) << out;
  out = run({}).out;
  EXPECT_NE(out.find("no MTP draft, max_num_seqs"), std::string::npos) << out;
}

// The screen's line budget: what it gives up, in order, when the lines would run past 22.
TEST(CliScreen, FitScreenGivesUpTheOptionalLinesInOrder) {
  const auto head = [](int lines) {
    std::string h;
    for (int i = 0; i < lines; ++i) h += "head " + std::to_string(i) + "\n";
    return h;
  };
  const std::string why = "where the 1 GiB of this GPU's plan go:\n  1 GiB  rows\n";  // 2 lines
  const std::string fig(150, 'f');                                                    // 2 lines wrapped, 1 when cut
  const std::string bound(150, 'b');                                                  // the same
  const std::string hint = std::string(80, 'h') + " " + std::string(60, 'h');
  // 10 + 2 + 2 + 1 blank + 2 + 2 + 1 footer = 20: everything shows.
  std::string s = fit_screen(head(10), "vLLM", fig, bound, why, hint);
  EXPECT_EQ(lines_of(s).size(), 20U) << s;
  EXPECT_NE(s.find("\n\nwhere"), std::string::npos) << s;
  EXPECT_NE(s.find("(tables: "), std::string::npos) << s;
  // 13 + 9 = 22 with the blank: all kept; 14 + 9 = 23: the blank goes first.
  EXPECT_EQ(lines_of(fit_screen(head(12), "vLLM", fig, bound, why, hint)).size(), 22U);
  s = fit_screen(head(13), "vLLM", fig, bound, why, hint);
  EXPECT_EQ(lines_of(s).size(), 22U) << s;
  EXPECT_EQ(s.find("\n\nwhere"), std::string::npos) << s;
  EXPECT_NE(s.find("(tables: "), std::string::npos) << s;
  // Then the footer, the hint's second line, the figure's, the bound's, then the hint.
  s = fit_screen(head(14), "vLLM", fig, bound, why, hint);
  EXPECT_EQ(s.find("(tables: "), std::string::npos) << s;
  EXPECT_EQ(lines_of(s).size(), 22U) << s;
  s = fit_screen(head(15), "vLLM", fig, bound, why, hint);
  EXPECT_NE(s.find("hint     hhh"), std::string::npos) << s;
  EXPECT_EQ(lines_of(s).size(), 22U) << s;
  s = fit_screen(head(18), "vLLM", fig, bound, why, hint);
  EXPECT_EQ(s.find("hint "), std::string::npos) << s;
  EXPECT_EQ(lines_of(s).size(), 22U) << s;  // 18 + 1 + 1 + 2
  EXPECT_NE(s.find("vLLM     fff"), std::string::npos) << s;
  EXPECT_NE(s.find("bound    bbb"), std::string::npos) << s;
  EXPECT_NE(s.find("  1 GiB  rows"), std::string::npos) << "the breakdown always stays: " << s;
}

// Issue 42: every model under every engine and flag set prints at most 22 lines of at most 100
// columns, or is refused naming why (exit 2, nothing on stdout).
TEST(CliScreen, EveryModelEngineAndFlagSetFitsOneScreen) {
  const std::vector<std::vector<std::string>> engines = {
      {"--engine", "vllm"}, {"--engine", "sglang"}, {"--engine", "tokenspeed"}, {"--pools", "own"}};
  // Small enough to replay fast (issue 41 owns the replay's speed); each line of the screen shows.
  const std::vector<std::vector<std::string>> flag_sets = {
      {},
      {"--memory-gib", "2"},
      {"--memory-gib", "8", "--requests", "8", "--context", "65536"},
      {"--gpu", "h200", "--tp", "8"},
      {"--gpu", "gb300", "--tp", "8", "--requests", "64", "--context", "8192", "--mtp"},
      {"--memory-gib", "120", "--requests", "4096", "--context", "8192"},
      {"--memory-gib", "8", "--tp", "8", "--pp", "2", "--requests", "8", "--context", "16384"},
      {"--memory-gib", "8", "--tp", "4", "--dp", "4", "--requests", "16", "--context", "16384"},
      {"--memory-gib", "2", "--tokens-per-step", "6", "--context", "8192"},
      {"--memory-gib", "8", "--role", "decode", "--context", "8192"},
      {"--memory-gib", "0.001"},
  };
  int screens = 0;
  for (const char* model : {"v4-flash", "v4-pro", "v4.1-flash", "v3.2"})
    for (const std::vector<std::string>& engine : engines)
      for (const std::vector<std::string>& flags : flag_sets) {
        std::vector<std::string> args = {"--preset", model};
        args.insert(args.end(), engine.begin(), engine.end());
        args.insert(args.end(), flags.begin(), flags.end());
        std::string what;
        for (const std::string& a : args) what += a + " ";
        const run_result r = run(args);
        if (r.code == 2) {  // refused: one line naming why, nothing on stdout
          EXPECT_TRUE(r.out.empty()) << what;
          EXPECT_EQ(lines_of(r.err).size(), 1U) << what << r.err;
          continue;
        }
        expect_one_screen(r, what);
        ++screens;
      }
  EXPECT_GE(screens, 80) << "most of the grid is planned, not refused";
}

// Issue 23's command on the screen: SGLang's own pool-size line and figures, and what really fits.
TEST(CliScreen, SglangPoolSizesOnTheScreen) {
  const std::vector<std::string> args = {"--preset",     "v4-flash", "--engine",  "sglang",
                                         "--memory-gib", "64",       "--context", "1048576"};
  const run_result r = run(args);
  expect_one_screen(r, "sglang");
  const json j = run_json(args);
  std::string pools;
  for (const json& line : j["engine_report"]["log_lines"])
    if (line.get<std::string>().rfind("DSV4 pool sizes", 0) == 0) pools = line.get<std::string>();
  ASSERT_FALSE(pools.empty());
  std::string joined;  // the screen wraps at 100 columns: join its continuation lines
  for (const std::string& line : lines_of(r.out))
    joined += line.rfind("         ", 0) == 0 ? " " + line.substr(9) : "\n" + line;
  EXPECT_NE(joined.find("SGLang   logs " + pools + "; max_total_num_tokens=" +
                        std::to_string(j["engine_report"]["max_total_num_tokens"].get<std::int64_t>()) +
                        ", max_running_requests=" +
                        std::to_string(j["engine_report"]["max_running_requests"].get<std::int64_t>())),
            std::string::npos)
      << joined;
  // What really fits: SGLang's occupancy replayed, on the verdict line.
  EXPECT_NE(joined.find(": " + thousands(j["verdict"]["simulated_max_requests"].get<std::int64_t>()) +
                        " fit at once (replayed;"),
            std::string::npos)
      << joined;
  EXPECT_EQ(j["verdict"]["max_requests"], j["verdict"]["simulated_max_requests"]);
}

// Independent of the breakdown's code: the parts sum to the plan's bytes, and in own pools the
// rows and null pages are what the JSON's groups say (N x layers x floor(L / stride) x row bytes
// for full-history groups; one page per pool and layer).
TEST(CliScreen, BreakdownSumsToThePlan) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"--pools", "own"},
           {"--pools", "own", "--requests", "3", "--context", "100000"},
           {"--engine", "tokenspeed", "--context", "65536", "--requests", "4"},
           {"--engine", "sglang", "--memory-gib", "64"},
           {"--preset", "v4-pro", "--pp", "2", "--requests", "4", "--context", "65536"},
           {"--tp", "4", "--dcp", "4", "--pools", "own", "--requests", "4", "--context", "65536"},
           {"--preset", "v4.1-flash", "--requests", "2"},
       }) {
    const json j = run_json(args);
    const json& b = j["breakdown"];
    const std::uint64_t sum = b["context_rows_bytes"].get<std::uint64_t>() + b["window_bytes"].get<std::uint64_t>() +
                              b["page_rounding_bytes"].get<std::uint64_t>() +
                              b["in_flight_bytes"].get<std::uint64_t>() + b["null_page_bytes"].get<std::uint64_t>() +
                              b["engine_structure_bytes"].get<std::uint64_t>();
    EXPECT_EQ(sum, b["total_bytes"].get<std::uint64_t>()) << (args.empty() ? "default" : args[0]);
    const json& plan_bytes = j.contains("ranks")
                                 ? j["ranks"][j["cluster"]["worst_rank"].get<std::size_t>()]["total_bytes"]
                                 : j["plan"]["total_bytes"];
    EXPECT_EQ(b["total_bytes"], plan_bytes);
  }
  // Own pools, V4-Flash, 3 x 100,000 tokens: the groups' own figures.
  const json j = run_json({"--pools", "own", "--requests", "3", "--context", "100000"});
  std::uint64_t rows = 0, nulls = 0;
  for (const json& g : j["groups"]) {
    const std::uint64_t layers = g["num_layers"];
    for (const json& pool : g["pools"]) nulls += pool["page_bytes"].get<std::uint64_t>() * layers;
    if (g["retention"] == "full_history")
      rows +=
          3 * layers * (100000 / g["entry_stride_tokens"].get<std::uint64_t>()) * g["row_bytes"].get<std::uint64_t>();
  }
  EXPECT_EQ(j["breakdown"]["context_rows_bytes"], rows);
  EXPECT_EQ(j["breakdown"]["null_page_bytes"], nulls);
  EXPECT_EQ(j["breakdown"]["engine_structure_bytes"], 0);
}

// Issue 35: the breakdown under every engine and model family, each part computed here from the
// JSON's groups: the parts sum to the plan's bytes; rows of context = H x layers x floor(L /
// stride) x row bytes over the full-history groups; windows and rings = the sliding groups' exact
// rows; page rounding at most the pages those rows span (one page a full-history table, two a
// window) per request; the rest is in flight or the engine's.
TEST(CliScreen, BreakdownPartsUnderEveryEngineAndFamily) {
  for (const char* engine : {"vllm", "tokenspeed", "tokenspeed-default", "sglang"})
    for (const char* preset : {"v4-flash", "v4.1-flash", "v3.2"}) {
      if (std::string_view(engine) == "sglang" && std::string_view(preset) != "v4-flash") continue;  // V4 only
      const std::string what = std::string(engine) + " " + preset;
      const json j = run_json(
          {"--preset", preset, "--engine", engine, "--memory-gib", "25", "--context", "131072", "--requests", "3"});
      const json& b = j["breakdown"];
      const auto part = [&](const char* k) { return b[k].get<std::uint64_t>(); };
      EXPECT_EQ(part("context_rows_bytes") + part("window_bytes") + part("page_rounding_bytes") +
                    part("in_flight_bytes") + part("null_page_bytes") + part("engine_structure_bytes"),
                part("total_bytes"))
          << what;
      const std::uint64_t h = j["plan"]["holding_requests"];
      std::uint64_t rows = 0, windows = 0, rounding = 0;
      for (const json& g : j["groups"]) {
        const std::uint64_t layers = g["num_layers"];
        const bool full = g["retention"] == "full_history";
        const std::uint64_t rpp = g["rows_per_page"];
        // A request's exact rows: L / stride (full history), its window's (sliding: the ideal rows).
        const std::uint64_t per_request =
            full ? 131072 / g["entry_stride_tokens"].get<std::uint64_t>()
                 : g["ideal_bytes"].get<std::uint64_t>() / (h * layers * g["row_bytes"].get<std::uint64_t>());
        if (full)
          rows += h * layers * per_request * g["row_bytes"].get<std::uint64_t>();
        else
          windows += g["ideal_bytes"].get<std::uint64_t>();
        // The pages those rows span (a window at any offset: cdiv(W - 1, R) + 1) minus the rows.
        const std::uint64_t span = full ? (per_request + rpp - 1) / rpp : (per_request - 1 + rpp - 1) / rpp + 1;
        for (const json& pool : g["pools"])
          rounding +=
              h * layers *
              (span * pool["page_bytes"].get<std::uint64_t>() - per_request * pool["row_bytes"].get<std::uint64_t>());
      }
      EXPECT_EQ(part("context_rows_bytes"), rows) << what;  // never 0 (V4.1 under vLLM was)
      EXPECT_GT(rows, 0U) << what;
      EXPECT_EQ(part("window_bytes"), windows) << what;
      // Rounding (and the format's page padding) in the library's pages: the engines' own pages are
      // the library's for V4 and V3.2 (vLLM's 576-B alignment is the engine's share); V4.1 under
      // vLLM has blocks of its own. Never a request's chunk (tokenspeed-default's was).
      if (std::string_view(engine) != "sglang" && std::string_view(preset) != "v4.1-flash") {
        EXPECT_EQ(part("page_rounding_bytes"), rounding) << what;
      }
    }
  // The issue's case: V4.1-Flash under vLLM holds rows of context (Blackwell: the V4.1 records,
  // 890 B a token over 40 layers: 131,072 x 890 = 116,654,080 B; Hopper: V4 rows, 1,790 B).
  EXPECT_EQ(run_json({"--preset", "v4.1-flash", "--memory-gib", "25", "--context", "131072", "--gpu",
                      "b200"})["breakdown"]["context_rows_bytes"],
            131072ULL * 890);
  EXPECT_EQ(run_json({"--preset", "v4.1-flash", "--memory-gib", "25", "--context",
                      "131072"})["breakdown"]["context_rows_bytes"],
            131072ULL * 1790);
}

// SGLang's DP attention (issue 35): its dp workers split the TP group's GPUs; off (its default),
// every --dp replica is a server of --tp GPUs with its own max_running_requests.
TEST(CliScreen, SglangDpAttentionCountsGpusAsSglang) {
  const std::vector<std::string> base = {"--preset",   "v4-flash", "--engine",  "sglang",       "--tp",
                                         "8",          "--dp",     "8",         "--memory-gib", "60",
                                         "--requests", "64",       "--context", "131072"};
  std::vector<std::string> attn = base;
  attn.emplace_back("--enable-dp-attention");
  const json a = run_json(attn);
  EXPECT_EQ(a["parallel"]["world_size"], 8);
  EXPECT_EQ(a["parallel"]["tp"], 8);
  EXPECT_EQ(a["parallel"]["attention_tp"], 1);
  EXPECT_EQ(a["assumptions"]["dp_attention"]["source"], "flag");
  EXPECT_EQ(a["engine_report"]["max_running_requests"], 256 / 8);  // per worker: max_running_requests // dp
  const run_result screen = run(attn);
  expect_one_screen(screen, "sglang dp attention");
  EXPECT_NE(screen.out.find("cluster  tp 8 (dp 8 attention workers inside) x pp 1 = 8 GPUs"), std::string::npos)
      << screen.out;
  const json off = run_json(base);
  EXPECT_EQ(off["parallel"]["world_size"], 64);
  EXPECT_EQ(off["assumptions"]["dp_attention"]["value"], false);
  EXPECT_EQ(off["assumptions"]["dp_attention"]["source"], "engine default");
  EXPECT_EQ(off["engine_report"]["max_running_requests"], 256);
}

TEST(CliScreen, DataParallelPerGpuAndClusterAndNoBudget) {
  const run_result r =
      run({"--dp", "4", "--tp", "4", "--memory-gib", "40", "--context", "262144", "--requests", "100"});
  expect_one_screen(r, "dp 4");
  // 100 requests over 4 DP ranks: 25 on the worst GPU, the cluster's answer for all 16.
  EXPECT_NE(r.out.find("per GPU  rank 0 of 16 (the worst): 25 x 262,144 tokens take"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cluster  tp 4 x dp 4 x pp 1 = 16 GPUs; 100 request(s) fit up to"), std::string::npos) << r.out;
  const run_result none = run({"--dp", "2", "--requests", "4"});
  expect_one_screen(none, "dp 2, no budget");
  EXPECT_NE(none.out.find("no budget given"), std::string::npos);
  EXPECT_NE(none.out.find("per GPU  rank 0 of 2 (the worst): 2 x 1,048,576 tokens take"), std::string::npos)
      << none.out;
  EXPECT_NE(none.out.find(" in all"), std::string::npos) << none.out;
  // --summary: one line.
  const run_result s = run({"--memory-gib", "64", "--summary"});
  EXPECT_EQ(lines_of(s.out).size(), 1U) << s.out;
  EXPECT_NE(s.out.find("1 x 1,048,576 tokens FITS (16 fit at once, replayed; limit: budget; the plan's bound 13;"),
            std::string::npos)
      << s.out;
  // An engine that does not start with the budget: the cluster line's context is the plan's alone.
  const run_result ts = run({"--engine", "tokenspeed", "--gpu", "h200", "--preset", "pro", "--tp", "8"});
  EXPECT_NE(ts.out.find("tokenspeed refuses to start"), std::string::npos) << ts.out;
  // (the screen wraps its lines: compare with the wraps undone)
  const std::string unwrapped = std::regex_replace(ts.out, std::regex("\n +"), " ");
  EXPECT_NE(unwrapped.find("fit up to 48 tokens by the plan's bytes, but the engine does not start"), std::string::npos)
      << ts.out;
  // A budget from --gpu that the weights leave empty: the line says so (it once read an empty budget).
  const run_result w = run({"--gpu", "h200", "--context", "131072", "--requests", "64", "--summary"});
  EXPECT_EQ(w.code, 0) << w.err;
  EXPECT_NE(w.out.find("DOES NOT FIT (0 fit at once, replayed; limit: weights; the plan's bound 0; per GPU 45.13 GiB "
                       "with no KV budget: the weights leave none)"),
            std::string::npos)
      << w.out;
}

// --groups' pool line adds up: the pool's blocks are the tables' + the null block, or it says
// what raised them (vLLM's startup need, or N - 1 requests and a newcomer's admission gate).
TEST(CliTables, SharedPoolBlocksAddUp) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--preset", "v4-pro", "--tp", "8", "--memory-gib", "60", "--context", "131072",
                                 "--requests", "64", "--groups"},
        std::vector<std::string>{"--context", "4096", "--groups"},
        std::vector<std::string>{"--requests", "8", "--context", "65536", "--groups"}}) {
    const run_result r = run(args);
    ASSERT_EQ(r.code, 0) << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m,
                                  std::regex("= (\\d+) blocks x \\d+ B: the tables' (\\d+) blocks \\+ 1 null "
                                             "block([^\\n]*)")))
        << r.out;
    const std::int64_t blocks = std::stoll(m[1]);
    const std::int64_t tables = std::stoll(m[2]);
    if (blocks != tables + 1) {
      EXPECT_TRUE(m[3].str().find(fmt::format("raised to {} blocks", blocks)) != std::string::npos ||
                  m[3].str().find(fmt::format("startup need of {} blocks", blocks)) != std::string::npos)
          << m[0];
    }
  }
}

// The hint's figure is the plan's own answer with the flag it names.
TEST(CliScreen, HintIsThePlanWithItsFlag) {
  const std::vector<std::string> args = {"--preset", "v4-pro",    "--tp",   "8",          "--memory-gib",
                                         "60",       "--context", "131072", "--requests", "64"};
  const json j = run_json(args);
  ASSERT_FALSE(j["hint"].is_null());
  EXPECT_EQ(j["hint"]["flag"], "--prefill-chunk 2048");
  std::vector<std::string> with = args;
  with.insert(with.end(), {"--prefill-chunk", "2048"});
  EXPECT_EQ(j["hint"]["requests_then"], run_json(with)["verdict"]["plan_max_requests"]);
  EXPECT_EQ(j["hint"]["requests_now"], j["verdict"]["plan_max_requests"]);
  EXPECT_TRUE(run_json(with)["hint"].is_null());  // already there: no hint
}

TEST(CliScreen, OutputFlagsThatDoNotCombine) {
  expect_refused({
      {{"--json", "--summary"}, "--json and --summary each print a whole output"},
      {{"--verbose", "--json"}, "--json and --verbose each print a whole output"},
      {{"--verbose", "--layers"}, "--layers adds a table to the screen; --verbose prints every table already"},
      {{"--summary", "--groups"}, "--groups adds a table to the screen; --summary prints an output of its own"},
      {{"--ranks"}, "--ranks prints every rank's plan: it needs --tp, --dp, --pp or --dcp above 1"},
      {{"--svg", ""}, "--svg"},
  });
}

TEST(CliScreen, SvgWrittenWholeOrNotAtAll) {
  namespace fs = std::filesystem;
  const fs::path dir = dsv4::cache::testing::unique_temp_path("svg");
  fs::remove_all(dir);
  // A folder that does not exist: refused (exit 2), nothing on stdout, no file.
  const run_result bad = run({"--memory-gib", "64", "--svg", (dir / "plan.svg").string()});
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("folder " + dir.string() + " does not exist"), std::string::npos) << bad.err;
  EXPECT_TRUE(bad.out.empty());
  EXPECT_NE(bad.err.find("--svg"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir));
  fs::create_directories(dir);
  const run_result ok = run({"--memory-gib", "64", "--svg", (dir / "plan.svg").string()});
  ASSERT_EQ(ok.code, 0) << ok.err;
  std::ifstream in(dir / "plan.svg");
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(svg.rfind("<?xml", 0), 0U);
  EXPECT_NE(svg.find("</svg>\n"), std::string::npos);
  std::size_t bars = 0, curves = 0;
  for (std::size_t at = svg.find("class=\"bar\""); at != std::string::npos; at = svg.find("class=\"bar\"", at + 1))
    ++bars;
  for (std::size_t at = svg.find("class=\"curve\""); at != std::string::npos; at = svg.find("class=\"curve\"", at + 1))
    ++curves;
  EXPECT_EQ(bars, 7U);    // V4-Flash's 6 groups and the engine's share
  EXPECT_EQ(curves, 4U);  // vllm, tokenspeed, sglang, trtllm: one per engine (engine_family_names)
  // Only the SVG in the directory: no temporary file left behind.
  std::size_t files = 0;
  for ([[maybe_unused]] const fs::directory_entry& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1U);
  // A directory in place of the file: refused (exit 2, file_output_test has every kind), the
  // directory untouched.
  fs::create_directories(dir / "taken.svg");
  EXPECT_EQ(run({"--svg", (dir / "taken.svg").string()}).code, 2);
  EXPECT_TRUE(fs::is_directory(dir / "taken.svg"));
  fs::remove_all(dir);
}

/// The --svg file of `args` (written into a fresh folder), or "" when the planner failed.
std::string svg_of(std::vector<std::string> args) {
  namespace fs = std::filesystem;
  const fs::path dir = dsv4::cache::testing::unique_temp_path("svg-reads");
  fs::remove_all(dir);
  fs::create_directories(dir);
  args.emplace_back("--svg");
  args.push_back((dir / "plan.svg").string());
  const run_result r = run(args);
  EXPECT_EQ(r.code, 0) << r.err;
  std::ifstream in(dir / "plan.svg");
  std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);
  return svg;
}

/// One <text> of an SVG: its string (unescaped), class and estimated box (svg_text_width).
struct svg_text_box {
  std::string text, cls, engine;
  double left = 0, top = 0, right = 0, bottom = 0;
};

std::vector<svg_text_box> svg_texts(const std::string& svg) {
  const auto attr = [](std::string_view tag, std::string_view name) {
    const std::string key = " " + std::string(name) + "=\"";
    const std::size_t at = tag.find(key);
    if (at == std::string_view::npos) return std::string();
    const std::size_t from = at + key.size();
    return std::string(tag.substr(from, tag.find('"', from) - from));
  };
  std::vector<svg_text_box> out;
  for (std::size_t at = svg.find("<text "); at != std::string::npos; at = svg.find("<text ", at + 1)) {
    const std::size_t close = svg.find('>', at);
    const std::string_view tag(svg.data() + at, close - at);
    std::string t = svg.substr(close + 1, svg.find("</text>", close) - close - 1);
    for (const auto& [from, to] : std::array<std::pair<std::string_view, std::string_view>, 5>{
             {{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&amp;", "&"}}})
      for (std::size_t k = t.find(from); k != std::string::npos; k = t.find(from, k + to.size()))
        t.replace(k, from.size(), to);
    svg_text_box b{t, attr(tag, "class"), attr(tag, "data-engine")};
    const double size = attr(tag, "font-size").empty() ? 12 : std::stod(attr(tag, "font-size"));
    const double x = std::stod(attr(tag, "x")), y = std::stod(attr(tag, "y"));
    const double w = svg_text_width(t, size);
    const std::string anchor = attr(tag, "text-anchor");
    b.left = anchor == "end" ? x - w : anchor == "middle" ? x - w / 2 : x;
    b.right = b.left + w;
    b.top = y - 0.95 * size;
    b.bottom = y + 0.25 * size;
    if (!attr(tag, "transform").empty()) {  // rotate(-90 x y): the box turned about (x, y)
      EXPECT_EQ(attr(tag, "transform").rfind("rotate(-90 ", 0), 0U) << attr(tag, "transform");
      b = {t, b.cls, b.engine, x - 0.95 * size, y - w / 2, x + 0.25 * size, y + w / 2};
    }
    out.push_back(b);
  }
  return out;
}

// Issue 42, item 2 (the SVG reads right), without a renderer (tests/cli/svg_render_test.py
// renders with rsvg-convert): every text box inside the 1,000-px canvas at the longest model
// name; SGLang's refusal of --no-overlap a legend note below the plot, whole, the other curves
// drawn; "(replay)" only for a model with a replay group; the log axis from 1 (no 0 tick); the
// largest N that fits marked with --json's answer; each curve labelled with its scheduling; the
// compressor-state bar's in-flight prompt pages a part of its own, said in its label.
// A config may give max_position_embeddings up to 2^63 - 1: the SVG's context axis stops its
// ticks before 4 x the last one overflows (it looped, writing ticks until memory ran out). Context
// 1,024: ticks 2^10, 2^12, ..., 2^62, (62 - 10) / 2 + 1 = 27 of them, for 2^62 and 2^63 - 1 alike.
TEST(CliScreen, SvgOfAModelWithAHugeMaximumContext) {
  nlohmann::json cfg;
  {
    std::ifstream in(kData + "/tiny-v4.config.json");
    cfg = json::parse(in);
  }
  const std::filesystem::path dir = dsv4::cache::testing::unique_temp_path("huge_mpe");
  std::filesystem::create_directories(dir);
  for (const std::int64_t mpe : {std::int64_t{1} << 62, std::numeric_limits<std::int64_t>::max()}) {
    cfg["max_position_embeddings"] = mpe;
    std::ofstream(dir / "config.json") << cfg.dump();
    const std::string svg = (dir / "plan.svg").string();
    const run_result r = run({"--config", dir.string(), "--context", "1024", "--memory-gib", "80", "--svg", svg});
    EXPECT_EQ(r.code, 0) << mpe << ": " << r.err;
    std::ifstream in(svg);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(text.ends_with("</svg>\n")) << mpe;
    std::size_t ticks = 0;
    for (std::size_t at = text.find("class=\"tick-x\""); at != std::string::npos;
         at = text.find("class=\"tick-x\"", at + 1))
      ++ticks;
    EXPECT_EQ(ticks, 27U) << mpe;
  }
  std::filesystem::remove_all(dir);
}

TEST(CliScreen, SvgReadsRight) {
  namespace fs = std::filesystem;
  const std::vector<std::string> flash = {"--preset",  "v4-flash", "--memory-gib", "30",
                                          "--context", "131072",   "--no-overlap"};
  const std::string svg = svg_of(flash);
  ASSERT_FALSE(svg.empty());
  const double width = 1000;
  const double height = std::stod(svg.substr(svg.find("height=\"") + 8));
  const std::vector<svg_text_box> texts = svg_texts(svg);
  const auto inside = [&](const std::vector<svg_text_box>& all, double h) {
    for (const svg_text_box& b : all)
      EXPECT_TRUE(b.left >= 0 && b.right <= width && b.top >= 0 && b.bottom <= h)
          << b.text << " [" << b.left << ", " << b.right << "] x [" << b.top << ", " << b.bottom << "]";
  };
  inside(texts, height);
  // The refusal: a legend note below the plot, the whole message; vLLM's and tokenspeed's curves drawn.
  EXPECT_EQ(svg.find("class=\"curve\" data-engine=\"sglang\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"curve\" data-engine=\"vllm\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"curve\" data-engine=\"tokenspeed\""), std::string::npos);
  const std::size_t plot = svg.find("class=\"plot\"");
  EXPECT_NE(plot, std::string::npos);
  const double plot_bottom =
      plot == std::string::npos ? height : std::stod(svg.substr(svg.find("y=\"", plot) + 3)) + 280;
  std::string note;
  for (const svg_text_box& b : texts)
    if (b.cls == "refusal") {
      EXPECT_EQ(b.engine, "sglang");
      EXPECT_GT(b.top, plot_bottom);
      note += b.text + " ";
    }
  EXPECT_NE(note.find("--no-overlap (SGLang's --disable-overlap-schedule) is not modelled"), std::string::npos) << note;
  EXPECT_EQ(note.find("..."), std::string::npos) << note;
  // V4 has no replay group: no replay in the legend.
  EXPECT_EQ(svg.find("(replay)"), std::string::npos);
  EXPECT_EQ(svg.find("data-kind=\"replay\""), std::string::npos);
  for (svg_text_box b : texts) {  // "replayed" (the verdict's) aside, no text says replay
    for (std::size_t k = b.text.find("replayed"); k != std::string::npos; k = b.text.find("replayed"))
      b.text.erase(k, 8);
    EXPECT_EQ(b.text.find("replay"), std::string::npos) << b.text;
  }
  // The log axis: 1, 10, 100, ... and no 0.
  std::vector<std::string> ticks;
  for (const svg_text_box& b : texts)
    if (b.cls == "tick-y") ticks.push_back(b.text);
  EXPECT_EQ(svg.find(">0</text>"), std::string::npos);
  EXPECT_GE(ticks.size(), 2U);
  if (ticks.size() >= 2) {
    EXPECT_EQ(ticks[0], "1");
    EXPECT_EQ(ticks[1], "10");
  }
  EXPECT_EQ(std::find(ticks.begin(), ticks.end(), "0"), ticks.end());
  // The largest N that fits at L, marked and labelled, as --json's verdict says.
  std::vector<std::string> with_json = flash;
  with_json.emplace_back("--json");
  const json j = json::parse(run(with_json).out);
  const std::int64_t most = j["verdict"]["max_requests"].get<std::int64_t>();
  EXPECT_NE(svg.find(fmt::format("class=\"max-fit\" data-requests=\"{}\" data-context=\"131072\"", most)),
            std::string::npos);
  bool tagged = false, said = false;
  std::string vllm_label, tokenspeed_label;
  for (const svg_text_box& b : texts) {
    tagged = tagged || (b.cls == "max-fit-label" && b.text == "largest N: " + thousands(most));
    said = said || b.text.starts_with("largest N that fits at 131,072 tokens: " + thousands(most));
    if (b.cls == "curve-label" && b.engine == "vllm") vllm_label += b.text + " ";
    if (b.cls == "curve-label" && b.engine == "tokenspeed") tokenspeed_label += b.text + " ";
  }
  EXPECT_TRUE(tagged);
  EXPECT_TRUE(said);
  // Each curve names the scheduling it assumes, as the report's assumptions say it.
  EXPECT_NE(vllm_label.find("mixed batches, no async scheduling (--no-overlap)"), std::string::npos) << vllm_label;
  EXPECT_NE(tokenspeed_label.find("mixed batches, no overlap scheduling (--no-overlap)"), std::string::npos)
      << tokenspeed_label;
  // The compressor-state bar: its in-flight prompt pages a part of their own, said in its label.
  const std::size_t bar = svg.find("data-group=\"v4.c4a.compressor_state\"");
  ASSERT_NE(bar, std::string::npos);
  EXPECT_LT(svg.find("data-cause=\"in_flight\"", bar), svg.find("</g>", bar));
  EXPECT_NE(svg.find("in flight (prompt pages)"), std::string::npos);
  // V4.1 has a replay group (v4.1.swa): the legend says what replay means.
  const std::string v41 = svg_of({"--preset", "v4.1-flash", "--memory-gib", "30", "--context", "65536"});
  EXPECT_NE(v41.find("data-group=\"v4.1.swa (replay)\" data-kind=\"replay\""), std::string::npos);
  EXPECT_NE(v41.find("(replay): a prefix cache rebuilds"), std::string::npos);
  // The longest model name (63 bytes of wide letters, from a --config folder): the title wraps.
  const fs::path dir = dsv4::cache::testing::unique_temp_path("svg-long-name") / std::string(63, 'W');
  fs::create_directories(dir);
  fs::copy_file(fs::path(DSV4_TEST_DATA_DIR) / "deepseek-v4-pro.config.json", dir / "config.json");
  const std::string long_svg =
      svg_of({"--config", dir.string(), "--engine", "sglang", "--memory-gib", "60", "--requests", "100000"});
  fs::remove_all(dir.parent_path());
  ASSERT_FALSE(long_svg.empty());
  EXPECT_NE(long_svg.find(std::string(63, 'W')), std::string::npos);
  inside(svg_texts(long_svg), std::stod(long_svg.substr(long_svg.find("height=\"") + 8)));
}

// A computation that runs past the threshold says so on stderr, once and then every 5 s; the
// answer on stdout is unchanged. (The threshold is 3 s in the CLI.) The work here waits until the
// first line has been formed, so the test does not depend on how fast this machine is.
TEST(CliHygiene, LongReplaysPrintProgressOnStderr) {
  std::ostringstream err;
  std::promise<void> said;
  std::future<void> heard = said.get_future();
  int lines = 0;
  const int answer = run_with_progress(
      err, std::chrono::milliseconds(1),
      [&](std::chrono::seconds s) {
        if (lines++ == 0) said.set_value();
        return "still at " + std::to_string(s.count()) + " s\n";
      },
      [&] { return heard.wait_for(std::chrono::seconds(60)) == std::future_status::ready ? 42 : -1; });
  EXPECT_EQ(answer, 42);
  EXPECT_EQ(err.str(), "still at 0 s\n");  // written before the work returned, joined before this returns
  // What is thrown is rethrown after the thread is joined; nothing is written when the work is quick.
  std::ostringstream quiet;
  EXPECT_THROW(run_with_progress(
                   quiet, std::chrono::seconds(3), [](std::chrono::seconds) { return std::string("x"); },
                   []() -> int { throw std::invalid_argument("bad"); }),
               std::invalid_argument);
  EXPECT_TRUE(quiet.str().empty());
  // The planner's line names what it replays and its work limit.
  planner_args a;
  a.simulate = true;
  a.max_sim_visits = 250'000'000;
  EXPECT_EQ(progress_line(a, std::chrono::seconds(5)),
            "dsv4-cache-plan: still computing after 5 s: replaying the engine's allocator (--simulate) (it stops at "
            "its work limit of 2.5e+08 request visits, about 25 million a second on 2 busy cores: at most about 10 "
            "s)\n");
  // Through the planner: with any threshold, stdout is the same, and under 3 s stderr is empty.
  const std::vector<std::string> args = {"--requests", "16", "--context", "65536", "--simulate"};
  std::ostringstream out, err0, quiet_out, quiet_err;
  ASSERT_EQ(run_planner(args, out, err0, kSimulateMaxVisits, std::chrono::milliseconds(0)), 0) << err0.str();
  ASSERT_EQ(run_planner(args, quiet_out, quiet_err), 0);
  EXPECT_TRUE(quiet_err.str().empty()) << quiet_err.str();
  EXPECT_EQ(out.str(), quiet_out.str());
}

// Arguments nothing takes are listed as typed (CLI11 lists a vector's back to front; the layout
// CLI's subcommands: LayoutCli.UnexpectedArgumentsInTheOrderGiven).
TEST(CliHygiene, UnexpectedArgumentsInTheOrderGiven) {
  const run_result r = run({"--pools", "own", "extra1", "extra2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("The following arguments were not expected: extra1 extra2"), std::string::npos) << r.err;
}

// Bytes of a path that are not valid UTF-8 are escaped in the message (valid UTF-8 is kept).
TEST(CliHygiene, NonUtf8BytesInPathsAreEscaped) {
  const run_result r = run({"--config", "/no-such-\xff\xfe-dir/\xc3\xa9/config.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/no-such-\\xFF\\xFE-dir/\xc3\xa9/config.json"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\xff'), std::string::npos);
  EXPECT_EQ(dsv4::tools::one_line("a\xe0\x80\x80"
                                  "b\xed\xa0\x80"
                                  "c\xf4\x90\x80\x80"),
            "a\\xE0\\x80\\x80b\\xED\\xA0\\x80c\\xF4\\x90\\x80\\x80");  // overlong, surrogate, > U+10FFFF
}

}  // namespace
}  // namespace dsv4::cache::cli
