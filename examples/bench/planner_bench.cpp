// dsv4-cache-planner-bench: the wall time of the planner's answers with a budget (issue 41),
// dominated by the replays of the engines' allocators (alloc_sim.hpp, engines/sglang/replay.hpp).
// A plain timing program, built by default, never run by ctest (speed targets live in
// benchmarks that print figures, never in timed tests).
//
//   dsv4-cache-planner-bench                  the CLI calls below (parse + compute + the screen,
//                                             the JSON and the SVG curves), then every row of the
//                                             replay grid (tests/replay_grid.hpp); per call the
//                                             wall time, the slowest call and the total
//   dsv4-cache-planner-bench --cli            the CLI calls only
//   dsv4-cache-planner-bench --write-expectations FILE
//                                             writes the grid's answers as the table
//                                             tests/data/replay_expectations.tsv (the test
//                                             compares with the checked-in file)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dsv4/tools/planner_cli.hpp"
#include "replay_grid.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
namespace cli = dsv4::cache::cli;
namespace t = dsv4::cache::testing;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// The calls and neighbours, as an operator types them.
const std::vector<std::vector<std::string>> kCliCalls = {
    {"--preset", "v4-pro", "--engine", "vllm", "--requests", "256", "--context", "131072", "--overlap", "--memory-gib",
     "205.009"},
    {"--preset", "v4-pro", "--engine", "vllm", "--memory-gib", "120", "--context", "32768"},
    {"--preset", "v4-flash", "--engine", "vllm", "--memory-gib", "64", "--context", "8192", "--indexer", "mxfp4"},
    {"--preset", "v4-flash", "--engine", "tokenspeed", "--memory-gib", "64", "--context", "32768",
     "--max-running-requests", "256"},
    {"--preset", "v4-flash", "--engine", "vllm", "--memory-gib", "1024", "--context", "8192"},
    {"--preset", "v4-pro", "--engine", "vllm", "--memory-gib", "1024", "--context", "1048576", "--requests", "4096"},
    {"--preset", "v4-flash", "--engine", "sglang", "--memory-gib", "1024", "--context", "8192"},
    {"--preset", "v4-flash", "--engine", "tokenspeed-default", "--memory-gib", "512", "--context", "8192"},
    {"--preset", "v4.1-flash", "--engine", "vllm", "--memory-gib", "80", "--context", "65536", "--overlap"},
};

struct timing {
  std::string what;
  double seconds = 0;
};

int write_expectations(const std::string& path) {
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp);
  if (!out) {
    std::cerr << "dsv4-cache-planner-bench: cannot write " << tmp << "\n";
    return 3;
  }
  out << "# The replays' answers (issue 41); written by: build/examples/dsv4-cache-planner-bench "
         "--write-expectations tests/data/replay_expectations.tsv\n";
  out << "# Columns: see tests/replay_grid.hpp. Every input explicit (no CLI default).\n";
  out << t::kReplayInputHeader << "\t" << t::kReplayAnswerHeader << "\n";
  int rows = 0;
  for (const t::replay_case& c : t::replay_grid()) {
    const auto start = clock_type::now();
    try {
      const t::replay_answers a = t::replay_answer(c);
      out << t::replay_inputs_tsv(c) << "\t" << t::replay_answers_tsv(a) << "\n" << std::flush;
      ++rows;
      std::cerr << fmt::format("{:7.3f} s  {}\n", seconds_since(start), t::replay_inputs_tsv(c));
    } catch (const std::invalid_argument& e) {
      std::cerr << fmt::format("skipped ({}): {}\n", e.what(), t::replay_inputs_tsv(c));
    }
  }
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::cerr << "dsv4-cache-planner-bench: cannot write " << path << "\n";
    return 3;
  }
  std::cerr << rows << " rows written to " << path << "\n";
  return 0;
}

void report(const char* title, std::vector<timing>& ts) {
  double total = 0;
  for (const timing& x : ts) total += x.seconds;
  std::sort(ts.begin(), ts.end(), [](const timing& a, const timing& b) { return a.seconds > b.seconds; });
  fmt::print("{}: {} calls, total {:.3f} s, slowest {:.3f} s: {}\n", title, ts.size(), total,
             ts.empty() ? 0.0 : ts.front().seconds, ts.empty() ? "" : ts.front().what);
  for (std::size_t k = 0; k < std::min<std::size_t>(ts.size(), 10); ++k)
    fmt::print("  {:8.3f} s  {}\n", ts[k].seconds, ts[k].what);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "--write-expectations") return write_expectations(args[1]);
  const bool cli_only = args.size() == 1 && args[0] == "--cli";
  if (!args.empty() && !cli_only) {
    std::cerr << "usage: dsv4-cache-planner-bench [--cli | --write-expectations FILE]\n";
    return 2;
  }
  std::vector<timing> calls;
  for (const std::vector<std::string>& call : kCliCalls) {
    std::string line = "dsv4-cache-plan";
    for (const std::string& s : call) line += " " + s;
    const auto start = clock_type::now();
    try {
      const cli::planner_args a = cli::parse_planner_args(call);
      cli::planner_result r = cli::compute(a);
      std::string out = cli::render(a, r);
      cli::planner_args j = a;
      j.json = true;
      out += cli::render(j, r);
      r.curves = cli::capacity_curves(a, r.model);
      out += cli::plan_svg(r);
      calls.push_back({line, seconds_since(start)});
      fmt::print("{:8.3f} s  {} ({} bytes of output)\n", calls.back().seconds, line, out.size());
    } catch (const std::invalid_argument& e) {
      fmt::print("refused: {}: {}\n", line, e.what());
    }
  }
  std::fflush(stdout);
  report("CLI calls (screen, JSON, SVG)", calls);
  if (cli_only) return 0;
  std::vector<timing> rows;
  for (const t::replay_case& c : t::replay_grid()) {
    const auto start = clock_type::now();
    try {
      (void)t::replay_answer(c);
    } catch (const std::invalid_argument&) {
      continue;
    }
    rows.push_back({t::replay_inputs_tsv(c), seconds_since(start)});
  }
  report("replay grid (engine report + the worst case at N)", rows);
  return 0;
}
