// dsv4-cache-plan: prints whether N requests of L tokens fit a DeepSeek V4-family model's KV
// cache on a budget, and why (the operator screen), or its layout and memory plan as tables
// (--verbose), JSON (--json) or an SVG picture (--svg FILE).
//
// The CLI lives in headers (not in main) so that tests and the fuzzer drive the same code with an
// argument list and two streams: planner_args.hpp (the flags), planner_report.hpp (the computed
// report), one renderer per output (render_screen.hpp, render_tables.hpp, render_json.hpp,
// render_svg.hpp). Exit codes: 0 success (or --help); 1 --require-fit and N x L does not fit;
// 2 bad input; 3 a write error or an internal error (a bug: please report it). Nothing is
// written to `out` unless the whole report was built: a bad input leaves one line on `err`.
#pragma once

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "dsv4/tools/cli_parse.hpp"
#include "dsv4/tools/file_io.hpp"
#include "dsv4/tools/messages.hpp"
#include "dsv4/tools/planner_args.hpp"
#include "dsv4/tools/planner_flags.hpp"
#include "dsv4/tools/planner_report.hpp"
#include "dsv4/tools/render_json.hpp"
#include "dsv4/tools/render_screen.hpp"
#include "dsv4/tools/render_svg.hpp"
#include "dsv4/tools/render_tables.hpp"

namespace dsv4::cache::cli {

/// Whether `path` ends in ".svg" (any case): the name --svg FILE takes.
inline bool svg_name_ok(std::string_view path) {
  if (path.size() < 4) return false;
  const std::string_view end = path.substr(path.size() - 4);
  return end[0] == '.' && (end[1] | 0x20) == 's' && (end[2] | 0x20) == 'v' && (end[3] | 0x20) == 'g';
}

/// Refuses output flags that do not combine (exit 2, naming both): --json, --summary and
/// --verbose each print a whole output of their own; --layers / --groups / --ranks add a
/// table to the screen; --ranks needs parallel flags; --svg FILE must end in .svg.
inline void check_output_flags(const planner_args& a) {
  const std::array<std::pair<bool, std::string_view>, 3> whole = {
      {{a.json, "--json"}, {a.summary, "--summary"}, {a.verbose, "--verbose"}}};
  const std::array<std::pair<bool, std::string_view>, 3> parts = {
      {{a.layers, "--layers"}, {a.groups, "--groups"}, {a.ranks, "--ranks"}}};
  std::string_view first;
  for (const auto& [on, name] : whole) {
    if (!on) continue;
    if (!first.empty())
      throw std::invalid_argument(fmt::format("{} and {} each print a whole output: give one of them", first, name));
    first = name;
  }
  for (const auto& [on, name] : parts)
    if (on && !first.empty())
      throw std::invalid_argument(
          fmt::format("{} adds a table to the screen; {} {}: give one of them", name, first,
                      first == "--verbose" ? "prints every table already" : "prints an output of its own"));
  if (a.ranks && a.tp == 1 && a.dp == 1 && a.pp == 1 && a.dcp == 1)
    throw std::invalid_argument("--ranks prints every rank's plan: it needs --tp, --dp, --pp or --dcp above 1");
  if (!a.svg_path.empty() && !svg_name_ok(a.svg_path))
    throw std::invalid_argument(
        fmt::format("--svg {}: the file name must end in .svg (the output is an SVG image)", a.svg_path));
}

/// The output `a` asks for: JSON, the summary line, every table, or the screen with the tables
/// asked for after it.
inline std::string render(const planner_args& a, const planner_result& r) {
  // replace: a model name from a file name need not be valid UTF-8
  if (a.json) return to_json(r).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  if (a.summary) return summary_line(r);
  if (a.verbose) return to_text(r);
  std::string s = screen_text(r);
  if (a.layers) s += "\n" + tables_layers(r);
  if (a.groups) s += "\n" + tables_groups(r);
  if (a.ranks) s += "\n" + tables_ranks(r);
  return s;
}

/// Runs `work()` on the caller's thread; while it runs past `after`, a second thread writes
/// `line(elapsed)` to `err` then and every 5 s after (`work` must not write to `err`). The thread
/// is joined before this returns or rethrows what `work` threw. Returns what `work` returns.
template <class Work, class Line>
auto run_with_progress(std::ostream& err, std::chrono::milliseconds after, const Line& line, Work&& work) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread progress([&] {
    std::unique_lock lock(m);
    const auto start = std::chrono::steady_clock::now();
    std::chrono::milliseconds wait = after;
    while (!cv.wait_for(lock, wait, [&] { return done; })) {
      err << line(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start))
          << std::flush;
      wait = std::chrono::seconds(5);
    }
  });
  const auto stop = [&] {
    {
      const std::lock_guard lock(m);
      done = true;
    }
    cv.notify_all();
    progress.join();
  };
  try {
    auto r = std::forward<Work>(work)();
    stop();
    return r;
  } catch (...) {
    stop();
    throw;
  }
}

/// The planner's progress line after `elapsed` of computing `a`: what it is doing and that it
/// stops at its work limit (`a.max_sim_visits` request visits).
inline std::string progress_line(const planner_args& a, std::chrono::seconds elapsed) {
  return fmt::format(
      "dsv4-cache-plan: still computing after {} s: replaying the engine's allocator{} (it stops "
      "at its work limit of {:.2g} request visits, about 25 million a second on 2 busy cores: at most "
      "about {:.0f} s)\n",
      elapsed.count(), a.simulate ? " (--simulate)" : " to find what really fits",
      static_cast<double>(a.max_sim_visits), std::ceil(static_cast<double>(a.max_sim_visits) / 2.5e7));
}

/// `compute(a)`, and while it runs past `after` (the engine replays can take seconds), a
/// `progress_line` on `err` then and every 5 s after (`run_with_progress`).
inline planner_result compute_with_progress(const planner_args& a, std::ostream& err, std::chrono::milliseconds after) {
  return run_with_progress(
      err, after, [&](std::chrono::seconds s) { return progress_line(a, s); }, [&] { return compute(a); });
}

/// Registers every dsv4-cache-plan flag on `app`, parsing into `a` (the planner, its tests and the
/// Python package's `plan()` parse with this one table).
inline void add_planner_options(CLI::App& app, planner_args& a) {
  app.footer(std::string(kExitCodesHelp));
  add_model_options(app, a, "A memory budget in GiB: also print the largest N and L that fit");
  app.add_option("--tokens-per-step", a.tokens_per_step,
                 "Tokens per decode step s (1 + speculative tokens; default the engine's: 1, no speculative "
                 "decoding)")
      ->transform(kCount);
  app.add_option("--prefill-chunk", a.prefill_chunk,
                 "Prefill chunk tokens B: the token budget of one scheduler step (default the engine's: vLLM "
                 "max_num_batched_tokens 8192, tokenspeed and SGLang chunked prefill 8192)")
      ->transform(kCount);
  app.add_option("--gpu", a.gpu,
                 "The GPU (H200, H100, H800, B200, GB200, B300, GB300): the engine defaults and refusals that depend "
                 "on it (vLLM's MXFP4 index keys need Blackwell), and without --memory-gib the KV budget as the "
                 "engine derives it: its memory x the engine's fraction - the weights per GPU - a runtime reserve "
                 "(estimate); default H200 (Hopper), no budget")
      ->check(kNonEmpty);
  app.add_option("--gpu-memory-utilization", a.gpu_memory_utilization,
                 "vLLM / tokenspeed: the fraction of the GPU's memory the engine may use (vLLM's default 0.92, "
                 "tokenspeed's by world size); derives the budget from --gpu (H200 when left out)")
      ->check(kDecimalNumber);
  app.add_option("--mem-fraction-static", a.mem_fraction_static,
                 "SGLang: the fraction of the GPU's memory for weights and KV (its default from the GPU's memory, tp "
                 "and pp); derives the budget from --gpu")
      ->check(kDecimalNumber);
  app.add_option("--kv-cache-memory-bytes", a.kv_cache_memory_bytes,
                 "vLLM: the KV budget per GPU in bytes, whatever --gpu-memory-utilization (as vLLM spells it)")
      ->transform(kDecimalInt);
  app.add_option("--ep", a.ep,
                 "Expert parallel GPUs for the weights per GPU (vLLM --enable-expert-parallel: tp x dp; SGLang / "
                 "tokenspeed: a divisor of --tp); default 1")
      ->transform(kDecimalInt)
      ->capture_default_str();
  app.add_option("--engine", a.engine,
                 "Engine to plan for, name or name@preset (a name alone: its newest preset): " + engine_names())
      ->check(kNonEmpty)
      ->capture_default_str();
  app.add_option("--pools", a.pools,
                 "engine: price pages as the engine allocates them (vLLM: one shared block pool); own: one pool per "
                 "group, to show what the engine's structure costs")
      ->check(CLI::IsMember(kPoolsNames))
      ->capture_default_str();
  app.add_option("--swa-full-tokens-ratio", a.swa_ratio,
                 "SGLang's --swa-full-tokens-ratio: its SWA pool as a share of its full tokens (DeepSeek V4 default "
                 "0.1; 0.8, its class default, becomes 0.1 as SGLang does); --engine sglang only")
      ->check(kDecimalNumber);
  app.add_option("--max-running-requests", a.max_running,
                 "The engine's cap on requests running at once (vLLM max_num_seqs; SGLang --max-running-requests, "
                 "which sizes its HCA-state reservation; default the engine's: vLLM 1024, tokenspeed 160, SGLang 256), "
                 "applied to what really fits")
      ->transform(kDecimalInt);
  app.add_flag("--overlap", a.overlap,
               "Async / overlap scheduling: one more step in flight (2s in place of s; vLLM: max_in_flight_tokens = "
               "2 x B); every engine's default");
  app.add_flag("--no-overlap", a.no_overlap,
               "Synchronous scheduling (vLLM --no-async-scheduling, tokenspeed --disable-overlap-schedule; not "
               "modelled for SGLang)");
  app.add_flag("--enable-dp-attention", a.dp_attention,
               "SGLang only: data-parallel attention inside the TP group (--dp splits the --tp GPUs' requests; "
               "tp x pp GPUs in all); its default is off (--dp replicas of tp GPUs each)");
  add_parallel_options(app, a);
  app.add_option("--role", a.role,
                 "colocated; prefill (N prompts held whole until transferred) or decode (N decoding + --handover)")
      ->check(CLI::IsMember(kRoleNames))
      ->capture_default_str();
  app.add_option("--handover", a.handover, "Decode role: requests being received at once")
      ->transform(kDecimalInt)
      ->capture_default_str();
  app.add_option("--gpu-memory-gib", a.gpu_memory_gib,
                 "GPU memory (GiB, or with a unit: 141GB, 144GiB); the KV budget is this minus --reserved-gib, "
                 "which it needs")
      ->transform(kMemorySize);
  app.add_option("--reserved-gib", a.reserved_gib,
                 "Memory of each GPU for weights and activations (GiB, or with a unit), with --gpu-memory-gib")
      ->transform(kMemorySize);
  app.add_flag("--simulate", a.simulate,
               "Also replay the engine's allocator (every concrete rule, prompt lengths, arrivals) on its pool and "
               "print its peak pages beside the plan's; refused above 4096 requests or an estimated 4e10 request "
               "steps (about 10 s)");
  app.add_flag("--mtp", a.mtp,
               "Cache the MTP layers (a draft model for speculative decoding; the engines' default is none)");
  app.add_flag("--no-mtp", a.no_mtp, "Do not cache the MTP layers (the engines' default)");
  app.add_flag("--json", a.json,
               "Print one JSON object (exact integer bytes, `fits`, `verdict`) instead of the screen");
  app.add_flag("--verbose", a.verbose, "Print every table (model, layers, groups, plan, ranks, the engine's section)");
  app.add_flag("--layers", a.layers, "After the screen, the table of every layer");
  app.add_flag("--groups", a.groups, "After the screen, the table of every group, the plan and the budget's answers");
  app.add_flag("--ranks", a.ranks, "After the screen, every rank's plan (needs --tp, --dp, --pp or --dcp)");
  app.add_flag("--summary", a.summary, "Print the verdict as one line, for a ticket");
  app.add_option("--svg", a.svg_path,
                 "Also write the plan as an SVG image to FILE (a name ending in .svg): bytes per group and the "
                 "capacity curve under each engine; FILE must be new, a regular file you may write or a symlink to "
                 "one (written through), and is written whole or not at all")
      ->check(kNonEmpty);
  app.add_flag("--require-fit", a.require_fit,
               "Exit 1 when N x L does not fit the budget (the verdict); needs a budget: --memory-gib, "
               "--gpu-memory-gib with --reserved-gib, or --gpu");
}

/// `args` (without the program name) parsed as dsv4-cache-plan parses them, into a planner_args
/// with `max_sim_visits`. Throws std::invalid_argument with CLI11's message for a flag it
/// refuses (an unknown flag, a value its validator rejects); --help is refused too.
inline planner_args parse_planner_args(const std::vector<std::string>& args,
                                       std::int64_t max_sim_visits = kSimulateMaxVisits) {
  planner_args a;
  a.max_sim_visits = max_sim_visits;
  CLI::App app{"dsv4-cache-plan", "dsv4-cache-plan"};
  add_planner_options(app, a);
  try {
    dsv4::tools::parse_args(app, args);
  } catch (const CLI::ParseError& e) {
    throw std::invalid_argument(one_line(e.what()));
  }
  a.preset_given = app.count("--preset") > 0;
  return a;
}

/// Runs the planner on `args` (without the program name). Returns the exit code.
/// `max_sim_visits` bounds the simulations' work (request visits; the fuzz target lowers it);
/// `progress_after`: when a still-running computation first reports on `err` (tests lower it).
inline int run_planner(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                       std::int64_t max_sim_visits = kSimulateMaxVisits,
                       std::chrono::milliseconds progress_after = std::chrono::seconds(3)) {
  planner_args a;
  a.max_sim_visits = max_sim_visits;
  CLI::App app{"dsv4-cache-plan: KV-cache layout and memory plan of a DeepSeek V4 model", "dsv4-cache-plan"};
  add_planner_options(app, a);
  try {
    dsv4::tools::parse_args(app, args);
    a.preset_given = app.count("--preset") > 0;
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    err << "dsv4-cache-plan: error: " << dsv4::tools::error_text(e.what()) << " (see --help)\n";
    return 2;
  }
  try {
    if (a.require_fit && !a.memory_gib && !a.gpu_memory_gib && a.gpu.empty() && !chain_flags_given(a))
      throw std::invalid_argument(
          "--require-fit needs a budget: --memory-gib, --gpu-memory-gib with --reserved-gib, or --gpu NAME");
    check_output_flags(a);
    // --svg FILE: refused before anything is computed unless it is a file this run may write
    // (file_io.hpp); write_file_atomic checks it again when it writes.
    if (!a.svg_path.empty()) (void)dsv4::tools::file_io::check_output_file(a.svg_path, "--svg");
    planner_result r = compute_with_progress(a, err, progress_after);
    if (a.require_fit && !verdict_of(r).has_budget)
      throw std::invalid_argument("--require-fit needs a budget: " +
                                  (r.budget && !r.budget->derived
                                       ? "--gpu " + std::string(r.budget->gpu->name) + " derives none (" +
                                             r.budget->why_not + "); give --memory-gib"
                                       : std::string("--memory-gib, --gpu-memory-gib with --reserved-gib, or --gpu")));
    if (!a.svg_path.empty()) {
      r.curves = capacity_curves(a, r.model);
      dsv4::tools::file_io::write_file_atomic(a.svg_path, plan_svg(r), "--svg");
    }
    errno = 0;
    out << render(a, r) << std::flush;
    if (!out) {
      err << "dsv4-cache-plan: error: " << dsv4::tools::write_failure(errno) << "\n";
      return 3;
    }
    return a.require_fit && !verdict_of(r).fits ? 1 : 0;
  } catch (const dsv4::tools::file_io::write_error& e) {
    err << "dsv4-cache-plan: error: " << dsv4::tools::error_text(e.what()) << "\n";
    return 3;
  } catch (const std::invalid_argument& e) {  // bad input: the library's errors, config_error included
    err << "dsv4-cache-plan: error: " << dsv4::tools::error_text(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {  // anything else is a bug, not the user's input
    err << "dsv4-cache-plan: internal error: " << dsv4::tools::error_text(e.what()) << "\n";
    return 3;
  }
}

}  // namespace dsv4::cache::cli
