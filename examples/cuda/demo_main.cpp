// dsv4-cache-cuda-demo: build a DeepSeek V4 memory plan, print it, allocate every pool on the
// GPU, round-trip random rows through the FP8/MXFP4 kernels and check them bit for bit
// against the host codecs.
//
// Exit codes: 0 all checks passed; 1 a byte differed; 2 bad flags, an invalid plan, a plan
// above --memory-gib or above the device's free memory (one line on stderr); 3 the plan is
// valid and printed but no CUDA device was found.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <exception>
#include <iostream>
#include <string>

#include "demo.hpp"
#include "dsv4/tools/planner_cli.hpp"

int main(int argc, char** argv) {
  namespace cli = dsv4::cache::cli;
  namespace demo = dsv4::cache::cuda_demo;
  cli::planner_args a;
  a.context = 65536;  // the demo's defaults: a plan that allocates quickly
  a.pools = "own";    // the arena lays out the library's own pools (one region per group, layer and pool)
  a.requests = 4;
  std::int64_t max_tokens = 65536;
  CLI::App app{"dsv4-cache-cuda-demo: allocate a DeepSeek V4 KV cache on the GPU and check the FP8 kernels",
               "dsv4-cache-cuda-demo"};
  cli::add_model_options(app, a, "Memory budget in GiB: the plan must fit in it (exit 2 otherwise)");
  app.add_option("--max-tokens", max_tokens, "Rows inserted per pool round trip (default 65536)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return demo::kExitOk;
  } catch (const CLI::ParseError& e) {
    std::cerr << "dsv4-cache-cuda-demo: error: " << e.what() << " (see --help)\n";
    return demo::kExitUsage;
  }
  cli::planner_result r;
  try {
    if (a.context == 0) throw std::invalid_argument("--context must be >= 1");
    r = cli::compute(a);
    if (r.budget_bytes && r.plan.total_bytes > *r.budget_bytes)
      throw std::invalid_argument("the plan needs " + std::to_string(r.plan.total_bytes) +
                                  " B, more than --memory-gib (" + std::to_string(*r.budget_bytes) + " B)");
  } catch (const std::exception& e) {
    std::cerr << "dsv4-cache-cuda-demo: error: " << e.what() << "\n";
    return demo::kExitUsage;
  }
  std::cout << cli::to_text(r) << std::flush;
  return demo::run_on_device(r.model, r.plan, max_tokens, std::cout, std::cerr);
}
