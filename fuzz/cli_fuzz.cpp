// Fuzz target: the planner CLI's argument handling (tools/include/dsv4/tools/planner_cli.hpp).
//
// Input: the arguments, separated by '\n'. `run_planner` must return 0, 1 or 2; with 2 it writes
// exactly one line to `err` and nothing to `out`. A `--config` value is replaced by one of a
// fixed set of paths (the real configs, a directory without config.json, a missing file):
// fuzzing file names would only read arbitrary files of the machine (/dev/zero never ends).
// A `--svg` value is replaced by one of a fixed set of names inside the target's own mkdtemp
// folder (removed at exit), each a kind of output the planner must write (a new file, a regular
// file, a symlink to one) or refuse with exit 2 (a FIFO, a directory, a dangling symlink, a
// symlink loop, a missing folder, a name without .svg): the fuzzer never writes outside it.
//
// An input whose first byte is 0xFF instead drives `compute` + `to_json` + `to_text` with
// fuzzed planner_args directly, where (unlike in run_planner, which turns every
// std::exception into exit code 2) an exception other than std::invalid_argument escapes
// and crashes the target.
#include <sys/stat.h>
#include <unistd.h>

#include <any>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "dsv4/tools/planner_cli.hpp"
#include "fuzz_common.hpp"

namespace {

/// The simulations' work bound for the fuzzer (request visits): every input must end well inside
/// its 10 s timeout under the fuzzer's instrumentation (the planner's own bound is about 10 s
/// unsanitized).
constexpr std::int64_t kFuzzSimVisits = 2'000'000;

std::string config_path(std::string_view value) {
  static const char* const paths[] = {DSV4_FUZZ_DATA_DIR "/deepseek-v4-flash.config.json",
                                      DSV4_FUZZ_DATA_DIR "/deepseek-v4-pro.config.json", DSV4_FUZZ_DATA_DIR,
                                      DSV4_FUZZ_DATA_DIR "/no-such-config.json"};
  std::size_t h = 0;
  for (const char ch : value) h += static_cast<unsigned char>(ch);
  return paths[h % std::size(paths)];
}

/// The target's own folder for --svg (mkdtemp, made on first use, removed at exit) with one
/// target of each kind in it.
const std::string& svg_folder() {
  // Never destroyed: the atexit handler below runs after the function statics' destructors.
  static const std::string& dir = *new std::string([] {
    std::string t = (std::filesystem::temp_directory_path() / "dsv4-cli-fuzz-XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr) {
      std::perror("cli_fuzz: mkdtemp");
      std::abort();
    }
    std::ofstream(t + "/plan.svg") << "old";
    bool ok = ::mkfifo((t + "/fifo.svg").c_str(), 0600) == 0 && ::mkdir((t + "/dir.svg").c_str(), 0700) == 0 &&
              ::symlink("nowhere.svg", (t + "/dangling.svg").c_str()) == 0 &&
              ::symlink("loop.svg", (t + "/loop.svg").c_str()) == 0 &&
              ::symlink("plan.svg", (t + "/link.svg").c_str()) == 0;
    if (!ok) {
      std::perror("cli_fuzz: making the --svg targets");
      std::abort();
    }
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(svg_folder(), ec);
    });
    return t;
  }());
  return dir;
}

/// A --svg value replaced by a path in svg_folder(), chosen by the value's bytes.
std::string svg_path(std::string_view value) {
  static const char* const names[] = {"new.svg",  "plan.svg",     "link.svg",      "fifo.svg", "dir.svg",
                                      "loop.svg", "dangling.svg", "missing/x.svg", "plan.png", "PLAN.SVG"};
  std::size_t h = 0;
  for (const char ch : value) h += static_cast<unsigned char>(ch);
  return svg_folder() + "/" + names[h % std::size(names)];
}

int run_args(std::string_view text) {
  std::vector<std::string> args;
  std::size_t start = 0;
  while (start <= text.size() && args.size() < 32) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    args.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  // --svg FILE would write files of the fuzzer's choosing: its value becomes a path in the
  // target's own folder (svg_path); its renderer also runs in run_struct.
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (i > 0 && args[i - 1] == "--config" && !args[i].starts_with("-")) args[i] = config_path(args[i]);
    if (args[i].starts_with("--config=")) args[i] = "--config=" + config_path(args[i].substr(9));
    if (i > 0 && args[i - 1] == "--svg") args[i] = svg_path(args[i]);
    if (args[i].starts_with("--svg=")) args[i] = "--svg=" + svg_path(args[i].substr(6));
  }
  std::ostringstream out;
  std::ostringstream err;
  const int rc = dsv4::cache::cli::run_planner(args, out, err, kFuzzSimVisits);
  DSV4_FUZZ_CHECK(rc == 0 || rc == 1 || rc == 2);  // 1: --require-fit and it does not fit
  if (rc == 2) {
    const std::string e = err.str();
    DSV4_FUZZ_CHECK(out.str().empty());
    DSV4_FUZZ_CHECK(!e.empty() && e.find('\n') == e.size() - 1);  // one line
  } else {
    DSV4_FUZZ_CHECK(!out.str().empty());
  }
  return 0;
}

int run_struct(FuzzedDataProvider& fdp) {
  using dsv4::fuzz::pick;
  dsv4::cache::cli::planner_args a;
  a.preset = fdp.PickValueInArray<const char*>({"flash", "pro", "", "Flash", "v3.2", "v4-pro", "v4.1-flash"});
  if (fdp.ConsumeBool()) a.config_path = config_path(fdp.ConsumeRandomLengthString(8));
  a.context = pick<std::int64_t>(fdp, {-1, 0, 1, 1000, 1'048'576, std::int64_t{1} << 40, INT64_MAX});
  a.requests = pick<std::int64_t>(fdp, {-1, 0, 1, 8, std::int64_t{1} << 30, INT64_MAX});
  if (fdp.ConsumeBool())
    a.memory_gib = fdp.ConsumeBool() ? fdp.PickValueInArray<double>({-1.0, 0.0, 1e-300, 0.5, 80.0, 141.0, 1.7e10,
                                                                     1.8e10, 1e300, __builtin_inf(), __builtin_nan("")})
                                     : fdp.ConsumeFloatingPoint<double>();
  if (fdp.ConsumeBool()) a.indexer = fdp.PickValueInArray<const char*>({"fp8", "mxfp4", "fp4"});
  a.format_set = fdp.PickValueInArray<const char*>({"", "v41", "v4", "v5"});
  // Row formats: registered ones that fit, ones that do not (another role or family), unknown names.
  constexpr const char* kFormatNames[] = {"",         "v4.fp8_ds_mla.footer", "v4.nvfp4_kv", "v3.2.bf16",
                                          "v4.bf16",  "v4.indexer_mxfp4",     "fp32_state",  "v4.fp9",
                                          "v4.1.fp8", "v4.1.fp4.interleaved"};
  a.kv_format = fdp.PickValueInArray(kFormatNames);
  a.indexer_format = fdp.PickValueInArray<const char*>({"", "v4.indexer_mxfp4_in_fp8_slot", "v3.2.indexer_fp8", "x"});
  if (fdp.ConsumeBool())
    a.group_formats.push_back(fdp.PickValueInArray<const char*>({"v4.swa_kv", "v3.2.mla_kv", "v4.c4a.compressor_state",
                                                                 "v4.c128a.compressed_kv", "", "v4.1.swa",
                                                                 "v4.1.global_r1", "v4.1.compressor_state_r2"}) +
                              std::string(fdp.ConsumeBool() ? "=" : "") + fdp.PickValueInArray(kFormatNames));
  a.tokens_per_step = pick<std::int64_t>(fdp, {-1, 0, 1, 2, 5, INT64_MAX});
  a.prefill_chunk = pick<std::int64_t>(fdp, {-1, 0, 1, 8192, INT64_MAX});
  a.no_mtp = fdp.ConsumeBool();
  a.json = fdp.ConsumeBool();
  a.engine = fdp.PickValueInArray<const char*>(
      {"vllm", "tokenspeed", "tokenspeed-default", "sglang", "vLLM", "vllm@2026.11", "vllm@", "vllm@1999.01"});
  a.pools = fdp.PickValueInArray<const char*>({"engine", "own", "shared"});
  if (fdp.ConsumeBool()) a.max_running = pick<std::int64_t>(fdp, {-1, 0, 1, 4, 1024, INT64_MAX});
  if (fdp.ConsumeBool()) a.swa_ratio = fdp.PickValueInArray<double>({0.1, 0.8, 0.01, 1e-300, 0.0, 1.0, 1.5});
  a.max_sim_visits = kFuzzSimVisits;
  a.overlap = fdp.ConsumeBool();
  a.tp = pick<std::int64_t>(fdp, {1, 2, 3, 8, 0, -1});
  a.dp = pick<std::int64_t>(fdp, {1, 2, 3, 0});
  a.pp = pick<std::int64_t>(fdp, {1, 2, 3, 44});
  a.dcp = pick<std::int64_t>(fdp, {1, 2, 4});
  if (fdp.ConsumeBool()) a.pp_layers = fdp.ConsumeRandomLengthString(12);
  a.role = fdp.PickValueInArray<const char*>({"colocated", "prefill", "decode", "router"});
  a.handover = pick<std::int64_t>(fdp, {0, 1, 7, -1});
  // The budget chain (issue 42): a GPU, the engines' fraction flags, vLLM's fixed budget, --ep.
  a.gpu = fdp.PickValueInArray<const char*>({"", "h200", "H100", "b200", "gb300", "a100", "mi300x", "x"});
  if (fdp.ConsumeBool())
    a.gpu_memory_utilization = fdp.PickValueInArray<double>({0.9, 0.92, 1.0, 0.0, -0.5, 1.5, 1e-300});
  if (fdp.ConsumeBool()) a.mem_fraction_static = fdp.PickValueInArray<double>({0.85, 0.897, 0.0, 2.0});
  if (fdp.ConsumeBool()) a.kv_cache_memory_bytes = pick<std::int64_t>(fdp, {-1, 0, 1, 1'000'000'000, INT64_MAX});
  a.ep = pick<std::int64_t>(fdp, {1, 2, 8, 16, 0, -1, 3});
  const auto r = dsv4::fuzz::expect_clean([&] { return dsv4::cache::cli::compute(a); });
  if (!r) return 0;
  dsv4::fuzz::check_plan(r->plan);
  const std::string text = a.json ? dsv4::cache::cli::to_json(*r).dump(2) : dsv4::cache::cli::to_text(*r);
  // The operator screen: every line within its columns; the breakdown sums to the plan's bytes.
  const std::string screen = dsv4::cache::cli::screen_text(*r);
  for (std::size_t at = 0; at < screen.size();) {
    const std::size_t end = screen.find('\n', at);
    DSV4_FUZZ_CHECK(end != std::string::npos && end - at <= dsv4::cache::cli::kScreenColumns);
    at = end + 1;
  }
  const dsv4::cache::cli::plan_breakdown b = dsv4::cache::cli::breakdown_of(dsv4::cache::cli::screen_plan(*r));
  DSV4_FUZZ_CHECK(b.context_rows + b.windows + b.rounding + b.in_flight + b.null_pages + b.engine == b.total);
  DSV4_FUZZ_CHECK(!dsv4::cache::cli::summary_line(*r).empty());
  DSV4_FUZZ_CHECK(dsv4::cache::cli::plan_svg(*r).ends_with("</svg>\n"));
  // The engine report: vLLM's figures as vLLM computes them (the plan of the pool never below them).
  const std::any* details = r->report ? &r->report->startup.details : nullptr;
  if (const auto* vp = details ? std::any_cast<dsv4::cache::vllm_startup_report>(details) : nullptr) {
    const dsv4::cache::vllm_startup_report& v = *vp;
    DSV4_FUZZ_CHECK(v.min_bytes_to_start == v.request_bytes + static_cast<std::uint64_t>(v.bytes_per_block));
    if (v.available_bytes && v.starts) DSV4_FUZZ_CHECK(v.num_blocks >= v.request_blocks + 1);
    if (r->parallel == std::nullopt) DSV4_FUZZ_CHECK(r->plan.num_blocks >= v.request_blocks + 1);
  }
  // tokenspeed's figures: it allocates no more parents than the budget holds, and no arena above it.
  const auto* tp = details ? std::any_cast<dsv4::cache::tokenspeed_engine_report>(details) : nullptr;
  if (tp != nullptr && tp->startup.starts) {
    const dsv4::cache::tokenspeed_startup_report& t = tp->startup;
    DSV4_FUZZ_CHECK(t.parents >= 1 && t.parents <= t.budgeted_parents && t.token_capacity >= 1);
    DSV4_FUZZ_CHECK(t.arena_bytes <= tp->budget);
  }
  // SGLang: without a budget its report configures the plan's bytes, which start with the pools the
  // plan asked for (the plan is a budget SGLang accepts).
  const auto* sp = details ? std::any_cast<dsv4::cache::sglang_engine_report>(details) : nullptr;
  if (sp != nullptr && sp->budget_is_plan && r->parallel == std::nullopt) {
    const dsv4::cache::sglang_pool_sizes& z = sp->sizes;
    DSV4_FUZZ_CHECK(z.starts && z.full >= r->plan.sglang_need.full_tokens && z.swa >= r->plan.sglang_need.swa_tokens);
  }
  DSV4_FUZZ_CHECK(!text.empty());
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 0 && data[0] == 0xFF) {
    FuzzedDataProvider fdp(data + 1, size - 1);
    return run_struct(fdp);
  }
  return run_args(std::string_view(reinterpret_cast<const char*>(data), size));
}
