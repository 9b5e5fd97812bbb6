// dsv4-cache-cuda-demo: build a DeepSeek V4 / V4.1 / V3.2 memory plan, print it, allocate every
// pool on the GPU, round-trip random rows through the insert / gather kernels (specialized where
// the format has them, generic otherwise) and check them bit for bit against the host codec of
// the writer used (each format's default writer, or --writer where the format lists it).
//
// The arena is the planner's plan for the same flags (--engine, --pools: the planner's defaults),
// laid out as the engine lays it (arena_layout.hpp); --json prints it (regions with offsets and
// page strides) with or without a GPU.
//
// Exit codes: 0 all checks passed; 1 a byte differed; 2 bad flags, an invalid plan, a plan
// above --memory-gib or above the device's free memory (one line on stderr); 3 the plan is
// valid and printed but no CUDA device was found.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <exception>
#include <iostream>
#include <optional>
#include <string>

#include "arena_json.hpp"
#include "demo.hpp"
#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/tools/messages.hpp"
#include "dsv4/tools/planner_cli.hpp"

int main(int argc, char** argv) {
  namespace cli = dsv4::cache::cli;
  namespace demo = dsv4::cache::cuda_demo;
  cli::planner_args a;
  a.context = 65536;  // the demo's defaults: a plan that allocates quickly
  a.requests = 4;     // --engine and --pools: the planner's defaults (the engine's pool structure)
  bool json = false;
  std::int64_t max_tokens = 65536;
  std::string writer_name;
  CLI::App app{
      "dsv4-cache-cuda-demo: allocate a DeepSeek V4 KV cache on the GPU and check the insert / gather "
      "kernels against the host codecs",
      "dsv4-cache-cuda-demo"};
  cli::add_model_options(app, a, "Memory budget in GiB: the plan must fit in it (exit 2 otherwise)");
  app.add_option("--max-tokens", max_tokens, "Rows inserted per pool round trip (default 65536)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  app.add_option("--writer", writer_name,
                 "Writer whose bytes the pools get where the format lists it: flashmla, vllm, sglang, tokenspeed, "
                 "trtllm or flashinfer (default: each format's default writer; `dsv4-cache-layout writers` lists "
                 "them)");
  // The planner's --engine and --pools (planner_cli.hpp `add_planner_options`), its defaults.
  app.add_option("--engine", a.engine,
                 "Engine whose pool structure the arena is laid out as, name or name@preset, as the planner takes "
                 "it: " +
                     dsv4::cache::engine_names())
      ->check(cli::kNonEmpty)
      ->capture_default_str();
  app.add_option("--pools", a.pools,
                 "engine: the engine's pool structure as it lays it out (vLLM: one shared block pool; tokenspeed: "
                 "its parent arena); own: one pool per group (the library's own pools)")
      ->check(CLI::IsMember(cli::kPoolsNames))
      ->capture_default_str();
  app.add_flag("--json", json,
               "Print the arena (total_bytes, regions: offset, page_stride, page_bytes, pages) as one JSON object "
               "instead of the plan's screen, with or without a GPU; the device's report then goes to stderr");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return demo::kExitOk;
  } catch (const CLI::ParseError& e) {
    std::cerr << "dsv4-cache-cuda-demo: error: " << e.what() << " (see --help)\n";
    return demo::kExitUsage;
  }
  std::optional<dsv4::cache::writer_id> writer;
  if (app.count("--writer") > 0) {
    dsv4::cache::writer_id w{};
    if (!dsv4::cache::writer_from_name(writer_name, w)) {
      std::cerr << "dsv4-cache-cuda-demo: error: --writer '" << dsv4::tools::one_line(writer_name)
                << "' is not a writer (flashmla, vllm, sglang, tokenspeed, trtllm, flashinfer)\n";
      return demo::kExitUsage;
    }
    writer = w;
  }
  cli::planner_result r;
  dsv4::cache::arena_layout arena;
  try {
    if (a.context == 0) throw std::invalid_argument("--context must be >= 1");
    r = cli::compute(a);
    if (r.budget_bytes && r.plan.total_bytes > *r.budget_bytes)
      throw std::invalid_argument("the plan needs " + std::to_string(r.plan.total_bytes) +
                                  " B, more than --memory-gib (" + std::to_string(*r.budget_bytes) + " B)");
    // The arena of exactly the planner's plan (own pools, or the engine's structure as it lays it).
    const dsv4::cache::pool_structure_traits& t = dsv4::cache::traits_of(r.plan.pools.structure);
    if (!t.laid_out && t.place == nullptr) {
      std::string why = "--engine ";
      why += a.engine;
      why += ": the arena does not lay out ";
      why += t.title;
      why += " (";
      why += t.unplaced_why;
      why += "); run it with --pools own";
      throw std::invalid_argument(why);
    }
    arena = dsv4::cache::build_arena_layout(r.model, r.plan);
  } catch (const std::exception& e) {
    std::cerr << "dsv4-cache-cuda-demo: error: " << e.what() << "\n";
    return demo::kExitUsage;
  }
  if (json) {
    std::cout << demo::arena_json(arena).dump(2) << "\n" << std::flush;
    return demo::run_on_device(r.model, r.plan, max_tokens, writer, std::cerr, std::cerr);
  }
  std::cout << cli::to_text(r) << demo::arena_line(arena) << std::flush;
  return demo::run_on_device(r.model, r.plan, max_tokens, writer, std::cout, std::cerr);
}
