// dsv4-cache tests: the replay expectation grid (issue 41). A few hundred planner questions with a
// budget, every option given explicitly at the library level (plan_options, the engine's policy
// with `overlap` set, the running cap, the budget in bytes), and the answers of the engine
// replays for each: what really fits (compute_engine_report's engine_fit), SGLang's replayed SWA
// peak and ratio hint, and the worst case of the allocation simulator at the row's N (what
// --simulate prints). The table tests/data/replay_expectations.tsv was written by the code before
// the fast replays (issue 41) with
//     build/examples/dsv4-cache-planner-bench --write-expectations tests/data/replay_expectations.tsv
// and replay_expectations_test's ReplayExpectations.RowsOfTheCheckedInTable0-3 compare every row with it.
// No CLI default enters a row: the table stays valid when the planner's defaults change.
#pragma once

#include <any>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dsv4/cache.hpp"
#include "dsv4/tools/engine_report.hpp"

namespace dsv4::cache::testing {

/// One planner question, every input explicit.
struct replay_case {
  std::string preset;    ///< v4-flash, v4-pro, v4.1-flash.
  std::string engine;    ///< vllm, tokenspeed@f4d8ec6e, tokenspeed-default@f4d8ec6e, sglang@cce0a124 (the table's
                         ///< tokenspeed and SGLang rows: the pins they were written under).
  bool overlap = false;  ///< vLLM async scheduling (the policy's overlap); the others as their policy says.
  std::int64_t context = 0;
  std::int64_t requests = 1;
  std::uint64_t budget_bytes = 0;
  std::string indexer = "fp8";   ///< fp8 / mxfp4 (V4); V4.1 takes its family's formats.
  std::int64_t max_running = 0;  ///< The engine's running cap (vLLM max_num_seqs, tokenspeed, SGLang).
  std::int64_t tokens_per_step = 1;
  std::int64_t prefill_chunk = 8192;
  bool cache_mtp = true;
};

inline const model_config& replay_model(const std::string& preset) {
  if (preset == "v4-flash") return deepseek_v4_flash;
  if (preset == "v4-pro") return deepseek_v4_pro;
  if (preset == "v4.1-flash") return deepseek_v4_1_flash;
  throw std::invalid_argument("replay grid: unknown preset '" + preset + "'");
}

/// The plan options of `c` (no CLI default involved).
inline plan_options replay_options(const replay_case& c) {
  const engine_spec* e = find_engine(c.engine);
  if (e == nullptr) throw std::invalid_argument("replay grid: unknown engine '" + c.engine + "'");
  plan_options o;
  o.indexer = c.indexer == "mxfp4" ? indexer_format::mxfp4 : indexer_format::fp8;
  o.context_tokens = c.context;
  o.requests = c.requests;
  o.tokens_per_step = c.tokens_per_step;
  o.prefill_chunk_tokens = c.prefill_chunk;
  o.cache_mtp = c.cache_mtp;
  o.policy = e->policy;
  o.policy.overlap = c.overlap;
  o.vllm_pools = e->vllm;
  o.sglang_pools = e->sglang;
  o.tokenspeed_pools = e->tokenspeed;
  o.max_running_requests = c.max_running;
  o.swa_full_tokens_ratio = 0.1;
  return o;
}

/// The answers, as tab-separated text (see `replay_header`).
struct replay_answers {
  // engine_fit
  int simulated = 0;
  std::int64_t max_requests = 0;
  int lower_bound = 0;
  int requests_by_plan = 0;
  std::int64_t max_context = 0;
  int context_lower_bound = 0;
  // SGLang's replayed SWA peak at max_requests and the ratio hint
  std::int64_t peak_swa_tokens = 0;
  double better_ratio = 0;
  std::int64_t better_ratio_requests = 0;
  // The worst case of the replay at the row's N: vLLM / tokenspeed (simulate_worst_case: -1 when
  // not run, i.e. above --simulate's limits), SGLang (sglang_simulate_worst_case).
  int sim_run = 0;  ///< 1: run and complete; 0: not run; 2: stopped at its work limit.
  std::int64_t peak_blocks = 0;
  std::int64_t peak_admission_blocks = 0;
  std::uint64_t peak_bytes = 0;
  std::string peak_pages;  ///< Per table, comma-separated (SGLang: full,swa pages; fits flag first).
};

inline constexpr const char* kReplayInputHeader =
    "preset\tengine\toverlap\tcontext\trequests\tbudget_bytes\tindexer\tmax_running\ttokens_per_step\tprefill_"
    "chunk\tcache_mtp";
inline constexpr const char* kReplayAnswerHeader =
    "simulated\tmax_requests\tlower_bound\trequests_by_plan\tmax_context\tcontext_lower_bound\tpeak_swa_tokens\t"
    "better_ratio\tbetter_ratio_requests\tsim_run\tpeak_blocks\tpeak_admission_blocks\tpeak_bytes\tpeak_pages";

/// The work limit of the replays (the planner's: kSimulateMaxVisits request visits).
inline constexpr std::int64_t kReplayMaxVisits = kSimulateMaxVisits;

/// Computes the answers of `c` with the library as it is.
inline replay_answers replay_answer(const replay_case& c) {
  const model_config& m = replay_model(c.preset);
  const plan_options o = replay_options(c);
  const engine_spec& e = *find_engine(c.engine);
  const memory_plan plan = build_memory_plan(m, o);
  const cli::engine_report r =
      cli::compute_engine_report(m, plan, {}, 1, e, c.budget_bytes, c.max_running, kReplayMaxVisits, 1);
  replay_answers a;
  if (r.fit) {
    a.simulated = r.fit->simulated ? 1 : 0;
    a.max_requests = r.fit->max_requests;
    a.lower_bound = r.fit->lower_bound ? 1 : 0;
    a.requests_by_plan = r.fit->requests_by_plan ? 1 : 0;
    a.max_context = r.fit->max_context_tokens;
    a.context_lower_bound = r.fit->context_lower_bound ? 1 : 0;
  }
  const std::int64_t n = c.requests;
  const std::int64_t L = plan.options.context_tokens;
  if (const auto* sg = std::any_cast<sglang_engine_report>(&r.startup.details)) {
    a.peak_swa_tokens = sg->peak_swa_tokens;
    a.better_ratio = sg->better_ratio;
    a.better_ratio_requests = sg->better_ratio_requests;
    if (sg->sizes.starts && L >= 2) {
      sglang_sim_config sc = sglang_sim_config_of(sg->sizes, sg->options);
      sc.max_visits = kReplayMaxVisits;
      const sglang_sim_result s = sglang_simulate_worst_case(sc, n, L);
      a.sim_run = s.incomplete ? 2 : 1;
      a.peak_pages = fmt::format("{}:{},{}", s.fits ? 1 : 0, s.peak_full_pages, s.peak_swa_pages);
    }
  } else if (L >= 2 && n <= 4096) {
    sim_search search;
    search.max_running = c.max_running;
    search.sim.max_visits = kReplayMaxVisits;
    const double work =
        sim_work_estimate(plan.pools, o.policy, n, L, o.tokens_per_step, o.prefill_chunk_tokens, search);
    if (work <= kSimulateMaxWork) {
      const sim_result s =
          simulate_worst_case(plan.pools, o.policy, n, L, o.tokens_per_step, o.prefill_chunk_tokens, search);
      a.sim_run = s.incomplete ? 2 : 1;
      a.peak_blocks = s.peak_blocks;
      a.peak_admission_blocks = s.peak_admission_blocks;
      a.peak_bytes = s.peak_bytes;
      for (int g = 0; g < s.num_groups; ++g)
        a.peak_pages += (g ? "," : "") + std::to_string(s.peak_pages[static_cast<std::size_t>(g)]);
    }
  }
  if (a.peak_pages.empty()) a.peak_pages = "-";
  return a;
}

inline std::string replay_inputs_tsv(const replay_case& c) {
  return fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}", c.preset, c.engine, c.overlap ? 1 : 0, c.context,
                     c.requests, c.budget_bytes, c.indexer, c.max_running, c.tokens_per_step, c.prefill_chunk,
                     c.cache_mtp ? 1 : 0);
}

inline std::string replay_answers_tsv(const replay_answers& a) {
  return fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:g}\t{}\t{}\t{}\t{}\t{}\t{}", a.simulated, a.max_requests,
                     a.lower_bound, a.requests_by_plan, a.max_context, a.context_lower_bound, a.peak_swa_tokens,
                     a.better_ratio, a.better_ratio_requests, a.sim_run, a.peak_blocks, a.peak_admission_blocks,
                     a.peak_bytes, a.peak_pages);
}

/// Parses one row of the table (inputs then answers).
inline void parse_replay_row(const std::string& line, replay_case& c, replay_answers& a) {
  std::istringstream in(line);
  std::string indexer;
  int overlap = 0;
  int mtp = 0;
  in >> c.preset >> c.engine >> overlap >> c.context >> c.requests >> c.budget_bytes >> c.indexer >> c.max_running >>
      c.tokens_per_step >> c.prefill_chunk >> mtp;
  c.overlap = overlap != 0;
  c.cache_mtp = mtp != 0;
  in >> a.simulated >> a.max_requests >> a.lower_bound >> a.requests_by_plan >> a.max_context >>
      a.context_lower_bound >> a.peak_swa_tokens >> a.better_ratio >> a.better_ratio_requests >> a.sim_run >>
      a.peak_blocks >> a.peak_admission_blocks >> a.peak_bytes >> a.peak_pages;
  if (!in) throw std::invalid_argument("replay table: bad row: " + line);
}

/// The budget of `gib` GiB as the planner's --memory-gib reads it (gib x 2^30, truncated).
inline std::uint64_t replay_gib(double gib) { return static_cast<std::uint64_t>(gib * 1073741824.0); }

/// The grid: the slow calls (with today's CLI defaults written out), then a seeded
/// sample of presets x engines x budgets 8-1024 GiB x contexts 8,192-1,048,576 x N 1-4,096 x
/// indexers x running caps x s x B.
inline std::vector<replay_case> replay_grid() {
  std::vector<replay_case> g;
  // The calls (issue 41), their flags as today's planner fills them in.
  g.push_back({"v4-pro", "vllm", true, 131072, 256, replay_gib(205.009), "fp8", 1024, 1, 8192, true});
  g.push_back({"v4-pro", "vllm", false, 32768, 1, replay_gib(120), "fp8", 1024, 1, 8192, true});
  g.push_back({"v4-flash", "vllm", false, 8192, 1, replay_gib(64), "mxfp4", 1024, 1, 8192, true});
  g.push_back({"v4-flash", "tokenspeed@f4d8ec6e", false, 32768, 1, replay_gib(64), "fp8", 256, 1, 8192, true});
  // Async scheduling and no MTP layer (the planner's coming defaults, issue 35) for the same.
  g.push_back({"v4-pro", "vllm", true, 32768, 1, replay_gib(120), "fp8", 1024, 1, 8192, false});
  g.push_back({"v4-flash", "vllm", true, 8192, 1, replay_gib(64), "mxfp4", 1024, 1, 8192, false});
  const std::vector<std::string> presets = {"v4-flash", "v4-pro", "v4.1-flash"};
  struct eng {
    const char* name;
    bool overlap;
  };
  const std::vector<eng> engines = {{"vllm", false},
                                    {"vllm", true},
                                    {"sglang@cce0a124", false},
                                    {"tokenspeed@f4d8ec6e", false},
                                    {"tokenspeed-default@f4d8ec6e", false}};
  const std::vector<double> gibs = {8, 16, 24, 40, 64, 80, 120, 205.009, 320, 512, 1024};
  const std::vector<std::int64_t> contexts = {8192, 16384, 32768, 65536, 131072, 262144, 1048576};
  const std::vector<std::int64_t> ns = {1, 1, 4, 16, 64, 256, 1024, 4096};
  std::uint64_t x = 0x41c0ffee12345ULL;
  const auto pick = [&](std::size_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>((x >> 33) % n);
  };
  for (int k = 0; k < 260; ++k) {
    replay_case c;
    c.preset = presets[pick(presets.size())];
    const eng& e = engines[pick(engines.size())];
    c.engine = e.name;
    c.overlap = e.overlap;
    c.budget_bytes = replay_gib(gibs[pick(gibs.size())]);
    c.context = contexts[pick(contexts.size())];
    c.requests = ns[pick(ns.size())];
    c.indexer = c.preset != "v4.1-flash" && pick(3) == 0 ? "mxfp4" : "fp8";
    const bool tokenspeed = c.engine.rfind("tokenspeed", 0) == 0;
    c.tokens_per_step = c.engine.starts_with("sglang") ? 1 : (pick(4) == 0 ? 2 : 1);
    const std::vector<std::int64_t> caps =
        c.engine == "vllm"               ? std::vector<std::int64_t>{1024, 1024, 256, 64}
        : c.engine.starts_with("sglang") ? std::vector<std::int64_t>{256, 256, 64, 1024}
        : tokenspeed                     ? std::vector<std::int64_t>{c.tokens_per_step > 1 ? 80 : 160, 256, 64}
                                         : std::vector<std::int64_t>{0};
    c.max_running = caps[pick(caps.size())];
    c.prefill_chunk = pick(4) == 0 ? 2048 : 8192;
    c.cache_mtp = pick(3) != 0;
    g.push_back(c);
  }
  return g;
}

}  // namespace dsv4::cache::testing
