// The allocation simulator: the issue's regression values, agreement with an independent
// Python replay of vLLM's rules (tests/oracle/alloc_oracle.py, a plain step loop written apart
// from the C++), its fast-forward against plain runs, and its input errors.
#include "dsv4/cache/alloc_sim.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dsv4/cache/memory_plan.hpp"
#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

const group_spec_list kFlash = build_cache_specs(deepseek_v4_flash);

allocation_policy variant(const allocation_policy& preset, int i) {
  return concrete_variants(preset).items[static_cast<std::size_t>(i)];
}

/// Worst case of all-at-once workloads over `prompts` and acceptances {1, s}, one variant.
sim_result all_at_once(const allocation_policy& v, std::int64_t n, std::int64_t l, std::int64_t b, std::int64_t s,
                       const std::vector<std::int64_t>& prompts, sim_options o = {}) {
  sim_result worst;
  for (const std::int64_t a : std::set<std::int64_t>{1, s})
    for (const std::int64_t p : prompts) {
      const sim_result r = simulate(kFlash, v,
                                    {.requests = n,
                                     .context_tokens = l,
                                     .tokens_per_step = s,
                                     .step_budget_tokens = b,
                                     .prompt_tokens = p,
                                     .accepted_tokens = a},
                                    o);
      for (std::size_t g = 0; g < kMaxSimTables; ++g)
        worst.peak_pages[g] = std::max(worst.peak_pages[g], r.peak_pages[g]);
      worst.peak_bytes = std::max(worst.peak_bytes, r.peak_bytes);
    }
  return worst;
}

std::vector<std::int64_t> every_prompt(std::int64_t l) {
  std::vector<std::int64_t> p;
  for (std::int64_t v = 1; v < l; ++v) p.push_back(v);
  return p;
}

// The three cases of the plan-safety issue (vLLM, FP8 indexer), values from the issue.
TEST(AllocSim, IssueRegressionValues) {
  // N = 2, L = 63, B = 512: the CSA compressor and indexer states hold 33 pages (null included).
  const sim_result a = simulate_worst_case(kFlash, vllm_policy, 2, 63, 1, 512);
  EXPECT_EQ(a.peak_pages[1] + 1, 33);
  EXPECT_EQ(a.peak_pages[5] + 1, 33);
  // N = 7, L = 1,000, B = 8,192: the peak is 2,295,335,232 B.
  EXPECT_EQ(simulate_worst_case(kFlash, vllm_policy, 7, 1000, 1, 8192).peak_bytes, 2'295'335'232ULL);
  // N = 64, L = 8,192, s = 2, B = 512: SWA holds 257 pages (64 rings of 4 pages in lockstep).
  EXPECT_EQ(all_at_once(variant(vllm_policy, 0), 64, 8192, 512, 2, {8}).peak_pages[0] + 1, 257);
}

// tests/oracle/alloc_oracle.py: all N at once, one prompt length per run, acceptances {1, s}.
struct oracle_case {
  std::int64_t n, l, b, s, lookahead;
  std::array<std::int64_t, 6> pages;  // per layer, null page included
  std::uint64_t bytes;
};
constexpr oracle_case kSimOracle[] = {
    {2, 63, 512, 1, 0, {3, 33, 3, 17, 3, 33}, 47'463'104},
    {7, 1000, 8192, 1, 0, {113, 1751, 29, 876, 29, 1751}, 2'295'335'232},
    {64, 8192, 512, 2, 0, {257, 325, 2049, 1161, 2049, 325}, 3'445'390'912},
    {64, 8192, 512, 2, 1, {257, 325, 2049, 1161, 2049, 325}, 3'445'390'912},
    {1, 5, 1, 1, 0, {2, 2, 2, 2, 2, 2}, 8'322'176},
    {2, 65, 64, 2, 0, {5, 21, 3, 19, 3, 21}, 39'443'904},
    {2, 65, 64, 2, 1, {5, 21, 3, 19, 3, 21}, 39'443'904},
    {7, 129, 64, 3, 0, {22, 40, 8, 120, 8, 40}, 147'815'424},
    {7, 129, 64, 3, 2, {22, 40, 8, 120, 8, 40}, 147'815'424},
    {7, 128, 512, 4, 0, {15, 134, 8, 113, 8, 134}, 200'509'184},
    {7, 128, 512, 4, 3, {15, 139, 8, 113, 8, 139}, 200'509'184},
    {64, 129, 8192, 2, 0, {193, 2049, 65, 1089, 65, 2049}, 2'711'604'800},
    {64, 129, 8192, 2, 1, {193, 2113, 65, 1089, 65, 2113}, 2'914'029'120},
    {2, 1000, 64, 4, 0, {9, 25, 9, 44, 9, 25}, 74'149'952},
    {2, 1000, 64, 4, 3, {9, 25, 9, 44, 9, 25}, 74'149'952},
    {1, 8193, 8192, 3, 0, {129, 2049, 34, 1025, 34, 2049}, 2'679'662'144},
    {1, 8193, 8192, 3, 2, {130, 2050, 34, 1026, 34, 2050}, 2'683'823'232},
    {7, 8193, 512, 2, 0, {32, 153, 232, 189, 232, 153}, 529'478'912},
    {7, 8193, 512, 2, 1, {32, 153, 232, 189, 232, 153}, 529'478'912},
};

/// The oracle's prompt lengths: every one up to L = 1,000, else 1..16, m x 64 + {-1, 0, 1}, L - 2, L - 1
/// (for N = 64, L = 8,192 its reduced set: m in 1..8, 16, 32, 64, 96, 120, 127, 128).
std::vector<std::int64_t> oracle_prompts(const oracle_case& c) {
  if (c.l <= 1000) return every_prompt(c.l);
  std::set<std::int64_t> p;
  for (std::int64_t v = 1; v <= 16; ++v) p.insert(v);
  std::vector<std::int64_t> ms;
  if (c.n == 64 && c.l == 8192)
    ms = {1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 96, 120, 127, 128};
  else
    for (std::int64_t m = 1; m <= c.l / 64; ++m) ms.push_back(m);
  for (const std::int64_t m : ms) p.insert({m * 64 - 1, m * 64, m * 64 + 1});
  p.insert({c.l - 1, c.l - 2});
  std::vector<std::int64_t> out;
  for (const std::int64_t v : p)
    if (v >= 1 && v <= c.l - 1) out.push_back(v);
  return out;
}

TEST(AllocSim, AgreesWithPythonOracle) {
  for (const oracle_case& c : kSimOracle) {
    SCOPED_TRACE(::testing::Message() << "N=" << c.n << " L=" << c.l << " B=" << c.b << " s=" << c.s
                                      << " first-chunk lookahead " << c.lookahead);
    allocation_policy v = vllm_policy;
    v.first_chunk_lookaheads =
        static_cast<std::uint8_t>(c.lookahead > 0 ? first_chunk_lookahead::spec : first_chunk_lookahead::none);
    const sim_result r = all_at_once(v, c.n, c.l, c.b, c.s, oracle_prompts(c));
    for (std::size_t g = 0; g < 6; ++g) EXPECT_EQ(r.peak_pages[g] + 1, c.pages[g]) << "group " << g;
    EXPECT_EQ(r.peak_bytes, c.bytes);
  }
}

// Fast-forward must change nothing but the number of replayed steps: every policy variant,
// overlap on and off, every arrival pattern, budgets from 1 token to whole prompts.
TEST(AllocSim, FastForwardEqualsPlainRun) {
  std::int64_t skipped = 0;
  int runs = 0;
  for (const allocation_policy& preset : {vllm_policy, tokenspeed_policy, tokenspeed_default_policy})
    for (const bool overlap : {false, true})
      for (allocation_policy v : concrete_variants(preset)) {
        v.overlap = overlap;
        for (const std::int64_t n : {1, 7})
          for (const std::int64_t l : {300, 2049})
            for (const std::int64_t s : {1, 3})
              for (const std::int64_t b : {3, 64, 4096})
                for (const std::int64_t p : {std::int64_t{1}, std::int64_t{130}, l - 1})
                  for (const arrival_pattern arr :
                       {arrival_pattern::all_at_once, arrival_pattern::staggered, arrival_pattern::closed_loop}) {
                    const sim_workload w{.requests = n,
                                         .context_tokens = l,
                                         .tokens_per_step = s,
                                         .step_budget_tokens = b,
                                         .prompt_tokens = p,
                                         .accepted_tokens = s,
                                         .arrivals = arr,
                                         .arrival_gap_steps = 5};
                    const sim_result fast = simulate(kFlash, v, w);
                    const sim_result plain = simulate(kFlash, v, w, {.fast_forward = false});
                    ASSERT_EQ(fast.peak_pages, plain.peak_pages)
                        << "n=" << n << " l=" << l << " s=" << s << " b=" << b << " p=" << p;
                    ASSERT_EQ(fast.peak_bytes, plain.peak_bytes);
                    ASSERT_EQ(fast.steps, plain.steps);
                    ASSERT_EQ(fast.finished, plain.finished);
                    EXPECT_EQ(plain.replayed_steps, plain.steps);
                    skipped += fast.steps - fast.replayed_steps;
                    ++runs;
                  }
      }
  EXPECT_GT(skipped, 0) << "the fast-forward never skipped a step in " << runs << " runs";
}

TEST(AllocSim, OverlapHoldsFreedPagesOneStepLonger) {
  // One 127-token prompt, B = 64: the second chunk's step still holds the first chunk's
  // CSA-state pages with overlap (16 + 16), without it only the window's.
  const sim_workload w{.requests = 1, .context_tokens = 128, .step_budget_tokens = 64, .prompt_tokens = 127};
  allocation_policy v = variant(vllm_policy, 0);
  const sim_result plain = simulate(kFlash, v, w);
  v.overlap = true;
  const sim_result overlap = simulate(kFlash, v, w);
  EXPECT_EQ(plain.peak_pages[1], 18);  // pages 14..31 after expiry at c = 64: [57, 128) -> 14..31
  EXPECT_EQ(overlap.peak_pages[1], 32);
}

TEST(AllocSim, BadInput) {
  const allocation_policy v = variant(vllm_policy, 0);
  const sim_workload ok{.requests = 2,
                        .context_tokens = 100,
                        .tokens_per_step = 2,
                        .step_budget_tokens = 8,
                        .prompt_tokens = 10,
                        .accepted_tokens = 1};
  expect_invalid([&] { (void)simulate(kFlash, vllm_policy, ok); }, {"needs a concrete policy", "variants=2"});
  sim_workload w = ok;
  w.prompt_tokens = 100;
  expect_invalid([&] { (void)simulate(kFlash, v, w); },
                 {"prompt_tokens must be in [1, context_tokens - 1]", "prompt_tokens=100"});
  w = ok;
  w.accepted_tokens = 3;
  expect_invalid([&] { (void)simulate(kFlash, v, w); }, {"accepted_tokens must be in [1, tokens_per_step]"});
  w = ok;
  w.step_budget_tokens = 1;
  expect_invalid([&] { (void)simulate(kFlash, variant(tokenspeed_policy, 0), w); },
                 {"B must be >= s", "step_budget_tokens=1", "tokens_per_step=2"});
  w = ok;
  w.requests = 0;
  expect_invalid([&] { (void)simulate(kFlash, v, w); }, {"requests must be >= 1", "requests=0"});
  w = ok;
  w.context_tokens = 1;
  w.prompt_tokens = 1;
  expect_invalid([&] { (void)simulate(kFlash, v, w); }, {"context_tokens must be >= 2"});
  w = ok;
  w.arrival_gap_steps = 0;
  expect_invalid([&] { (void)simulate(kFlash, v, w); }, {"arrival_gap_steps must be >= 1"});
}

TEST(AllocSim, CandidatePrompts) {
  // Small contexts: every prompt length.
  EXPECT_EQ(candidate_prompts(kFlash, 65, 512, 1), every_prompt(65));
  // Long ones: aligned lengths only, within [1, L - 1], ascending, no repeats.
  const std::vector<std::int64_t> p = candidate_prompts(kFlash, 131'072, 8192, 2);
  EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
  EXPECT_EQ(std::adjacent_find(p.begin(), p.end()), p.end());
  for (const std::int64_t v : {1, 8, 63, 64, 65, 255, 256, 257, 8191, 8192, 8193, 131'071, 131'070})
    EXPECT_TRUE(std::binary_search(p.begin(), p.end(), v)) << v;
  EXPECT_LT(p.size(), 100U);
}

}  // namespace
}  // namespace dsv4::cache

namespace dsv4::cache {
namespace {

/// The random deployments of the replay's property tests: a 64-bit LCG (the same sequence on
/// every platform and standard library), uniform in [lo, hi]; a model of V4-Flash, V4-Pro and
/// V4.1-Flash; an allocation preset of vLLM and tokenspeed's two.
struct seeded_pick {
  std::uint64_t x;
  std::int64_t operator()(std::int64_t lo, std::int64_t hi) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + static_cast<std::int64_t>((x >> 33) % static_cast<std::uint64_t>(hi - lo + 1));
  }
  const model_config& model() {
    static constexpr std::array<const model_config*, 3> kModels = {&deepseek_v4_flash, &deepseek_v4_pro,
                                                                   &deepseek_v4_1_flash};
    return *kModels[static_cast<std::size_t>((*this)(0, 2))];
  }
  allocation_policy preset() {
    const std::array<allocation_policy, 3> presets = {vllm_policy, tokenspeed_policy, tokenspeed_default_policy};
    return presets[static_cast<std::size_t>((*this)(0, 2))];
  }
};

// The fast replay (memoized page-boundary crossings, fast-forward, released-prefix flags) against
// the exact step-by-step replay (`fast_forward = false`, what --simulate's reference is) on the
// engines' own pool structures: seeded random workloads, every peak equal.
TEST(AllocSimFast, RandomWorkloadsHaveTheReferencePeaks) {
  seeded_pick pick{0x5eed41ULL};
  std::int64_t skipped = 0;
  int compared = 0;
  int refused = 0;
  for (int k = 0; k < 400; ++k) {
    const model_config& m = pick.model();
    plan_options o;
    o.policy = pick.preset();
    o.policy.overlap = pick(0, 1) == 1;
    o.pools = pick(0, 3) == 0 ? pools_choice::own : pools_choice::engine;
    o.tokens_per_step = pick(1, 4);
    o.context_tokens = pick(0, 3) == 0 ? pick(2, 300) : pick(300, 6000);
    o.context_tokens = std::max(o.context_tokens, o.tokens_per_step);
    o.prefill_chunk_tokens = std::max(o.tokens_per_step, pick(0, 1) == 0 ? pick(1, 600) : pick(600, 9000));
    o.max_running_requests = 160;
    const memory_plan plan = build_memory_plan(m, o);
    const policy_variants vs = concrete_variants(o.policy);
    allocation_policy v = vs.items[static_cast<std::size_t>(pick(0, vs.count - 1))];
    v.overlap = o.policy.overlap;
    const std::int64_t n = pick(1, 48);
    sim_workload w{.requests = n,
                   .context_tokens = o.context_tokens,
                   .tokens_per_step = o.tokens_per_step,
                   .step_budget_tokens = o.prefill_chunk_tokens,
                   .prompt_tokens = pick(1, o.context_tokens - 1),
                   .accepted_tokens = pick(1, o.tokens_per_step),
                   .arrivals = static_cast<arrival_pattern>(pick(0, 2)),
                   .arrival_gap_steps = pick(1, 7),
                   .completions = 0,
                   .max_running = pick(0, 2) == 0 ? pick(1, n) : 0};
    const std::string what =
        fmt::format("case {}: {} {} overlap={} pools={} N={} L={} s={} B={} P={} a={} arr={} cap={}", k, m.name.view(),
                    v.engine, v.overlap, static_cast<int>(o.pools), n, w.context_tokens, w.tokens_per_step,
                    w.step_budget_tokens, w.prompt_tokens, w.accepted_tokens, to_string(w.arrivals), w.max_running);
    sim_result exact;
    try {
      exact = simulate(plan.pools, v, w, {.fast_forward = false});
    } catch (const std::invalid_argument&) {
      ++refused;  // a workload the reference refuses (no progress): not a case
      continue;
    }
    const sim_result fast = simulate(plan.pools, v, w);
    ++compared;
    ASSERT_EQ(fast.peak_pages, exact.peak_pages) << what;
    ASSERT_EQ(fast.peak_bytes, exact.peak_bytes) << what;
    ASSERT_EQ(fast.peak_blocks, exact.peak_blocks) << what;
    ASSERT_EQ(fast.peak_admission_blocks, exact.peak_admission_blocks) << what;
    ASSERT_EQ(fast.steps, exact.steps) << what;
    ASSERT_EQ(fast.finished, exact.finished) << what;
    ASSERT_FALSE(fast.exceeded);
    skipped += fast.steps - fast.replayed_steps;
  }
  EXPECT_GE(compared, 300) << refused << " refused";
  EXPECT_GT(skipped, 0);
}

// Steady decoders in bulk (sim_options::steady_decoders, one sum per phase of the tables' page
// period) against the same replay one request at a time: seeded random workloads with up to 400
// requests (the bulk path's histogram runs from period / 2 steady decoders on), every field of the
// result equal, the visits and replayed steps included (the fit searches' work limit counts them).
TEST(AllocSimFast, SteadyDecodersInBulkAreTheSameRun) {
  seeded_pick pick{0x57eadd0ULL};
  int compared = 0;
  std::int64_t bulk_visits = 0;
  for (int k = 0; k < 160; ++k) {
    const model_config& m = pick.model();
    plan_options o;
    o.policy = pick.preset();
    o.policy.overlap = pick(0, 1) == 1;
    o.pools = pick(0, 3) == 0 ? pools_choice::own : pools_choice::engine;
    o.tokens_per_step = pick(1, 3);
    o.context_tokens = pick(300, 5000);
    o.prefill_chunk_tokens = std::max(o.tokens_per_step, pick(0, 1) == 0 ? pick(1, 600) : pick(600, 9000));
    o.max_running_requests = 512;
    const memory_plan plan = build_memory_plan(m, o);
    const policy_variants vs = concrete_variants(o.policy);
    allocation_policy v = vs.items[static_cast<std::size_t>(pick(0, vs.count - 1))];
    v.overlap = o.policy.overlap;
    const std::int64_t n = pick(0, 1) == 0 ? pick(1, 40) : pick(40, 400);
    sim_workload w{.requests = n,
                   .context_tokens = o.context_tokens,
                   .tokens_per_step = o.tokens_per_step,
                   .step_budget_tokens = o.prefill_chunk_tokens,
                   .prompt_tokens = pick(1, o.context_tokens - 1),
                   .accepted_tokens = pick(1, o.tokens_per_step),
                   .arrivals = static_cast<arrival_pattern>(pick(0, 2)),
                   .arrival_gap_steps = pick(1, 3),
                   .completions = 0,
                   .max_running = pick(0, 3) == 0 ? pick(1, n) : 0};
    sim_options bulk;
    bulk.stop_when_settled = pick(0, 2) == 0;
    sim_options one = bulk;
    one.steady_decoders = false;
    const std::string what =
        fmt::format("case {}: {} {} overlap={} N={} L={} s={} B={} P={} a={} arr={} settle={}", k, m.name.view(),
                    v.engine, v.overlap, n, w.context_tokens, w.tokens_per_step, w.step_budget_tokens, w.prompt_tokens,
                    w.accepted_tokens, to_string(w.arrivals), bulk.stop_when_settled);
    sim_result ref;
    try {
      ref = simulate(plan.pools, v, w, one);
    } catch (const std::invalid_argument&) {
      continue;  // a workload the replay refuses (no progress)
    }
    const sim_result got = simulate(plan.pools, v, w, bulk);
    ++compared;
    ASSERT_EQ(got.peak_pages, ref.peak_pages) << what;
    ASSERT_EQ(got.peak_bytes, ref.peak_bytes) << what;
    ASSERT_EQ(got.peak_blocks, ref.peak_blocks) << what;
    ASSERT_EQ(got.peak_admission_blocks, ref.peak_admission_blocks) << what;
    ASSERT_EQ(got.steps, ref.steps) << what;
    ASSERT_EQ(got.replayed_steps, ref.replayed_steps) << what;
    ASSERT_EQ(got.visits, ref.visits) << what;
    ASSERT_EQ(got.finished, ref.finished) << what;
    ASSERT_EQ(got.staggered_twin_gap, ref.staggered_twin_gap) << what;
    ASSERT_EQ(got.settled, ref.settled) << what;
    ASSERT_EQ(got.exceeded, ref.exceeded) << what;
    if (n >= 40) bulk_visits += got.visits;
  }
  EXPECT_GE(compared, 120);
  EXPECT_GT(bulk_visits, 0);
}

// The staggered twin of an all-at-once run (`sim_result::staggered_twin_gap`, which the fit
// searches use to skip a staggered workload): every request i admitted at step i x g or later
// makes the staggered run with gap g (and any smaller one) the same run, with the same peaks, the
// step-by-step reference's; seeded random workloads under the running-first schedulers.
TEST(AllocSimFast, StaggeredTwinHasTheAllAtOncePeaks) {
  seeded_pick pick{0x7a1541ULL};
  int twins = 0;
  int others = 0;
  for (int k = 0; k < 300; ++k) {
    const model_config& m = pick.model();
    plan_options o;
    o.policy = pick.preset();
    o.policy.overlap = pick(0, 1) == 1;
    o.pools = pick(0, 3) == 0 ? pools_choice::own : pools_choice::engine;
    o.tokens_per_step = pick(1, 4);
    o.context_tokens = std::max(o.tokens_per_step, pick(0, 3) == 0 ? pick(2, 300) : pick(300, 4000));
    o.prefill_chunk_tokens = std::max(o.tokens_per_step, pick(0, 1) == 0 ? pick(1, 600) : pick(600, 9000));
    o.max_running_requests = 160;
    const memory_plan plan = build_memory_plan(m, o);
    const policy_variants vs = concrete_variants(o.policy);
    allocation_policy v = vs.items[static_cast<std::size_t>(pick(0, vs.count - 1))];
    v.overlap = o.policy.overlap;
    const std::int64_t n = pick(2, 40);
    sim_workload w{.requests = n,
                   .context_tokens = o.context_tokens,
                   .tokens_per_step = o.tokens_per_step,
                   .step_budget_tokens = o.prefill_chunk_tokens,
                   .prompt_tokens = pick(1, o.context_tokens - 1),
                   .accepted_tokens = pick(1, o.tokens_per_step),
                   .max_running = pick(0, 2) == 0 ? pick(1, n) : 0};
    const std::string what = fmt::format("case {}: {} {} overlap={} N={} L={} s={} B={} P={} a={} cap={}", k,
                                         m.name.view(), v.engine, v.overlap, n, w.context_tokens, w.tokens_per_step,
                                         w.step_budget_tokens, w.prompt_tokens, w.accepted_tokens, w.max_running);
    sim_result exact;
    try {
      exact = simulate(plan.pools, v, w, {.fast_forward = false});
    } catch (const std::invalid_argument&) {
      continue;  // a workload the reference refuses (no progress): not a case
    }
    const sim_result fast = simulate(plan.pools, v, w);
    ASSERT_EQ(fast.staggered_twin_gap, exact.staggered_twin_gap) << what;
    if (v.scheduler != scheduler_kind::running_first) {
      EXPECT_EQ(exact.staggered_twin_gap, 0) << what;
      continue;
    }
    if (exact.staggered_twin_gap < 1) {
      ++others;
      continue;
    }
    ++twins;
    w.arrivals = arrival_pattern::staggered;
    w.arrival_gap_steps = std::min<std::int64_t>(exact.staggered_twin_gap, pick(1, 3));
    for (const bool ff : {false, true}) {
      const sim_result twin = simulate(plan.pools, v, w, {.fast_forward = ff});
      ASSERT_EQ(twin.peak_pages, exact.peak_pages) << what << " gap " << w.arrival_gap_steps << " ff " << ff;
      ASSERT_EQ(twin.peak_bytes, exact.peak_bytes) << what;
      ASSERT_EQ(twin.peak_blocks, exact.peak_blocks) << what;
      ASSERT_EQ(twin.peak_admission_blocks, exact.peak_admission_blocks) << what;
      ASSERT_EQ(twin.steps, exact.steps) << what;
      ASSERT_EQ(twin.finished, exact.finished) << what;
      if (!ff) {
        EXPECT_EQ(twin.visits, exact.visits) << what;  // step for step
      }
    }
  }
  EXPECT_GE(twins, 40);
  EXPECT_GE(others, 10);
}

// simulate_worst_case takes a staggered workload's peaks and steps from its all-at-once twin
// (detail::worst_case) instead of replaying it: the same answer as replaying every workload of
// detail::for_each_workload one by one; seeded random deployments.
TEST(AllocSimFast, WorstCaseTakesStaggeredTwinsFromTheirAllAtOnceRuns) {
  seeded_pick pick{0x5eed7417ULL};
  int reused = 0;
  for (int k = 0; k < 60; ++k) {
    const model_config& m = pick.model();
    plan_options o;
    o.policy = pick.preset();
    o.policy.overlap = pick(0, 1) == 1;
    o.pools = pick(0, 3) == 0 ? pools_choice::own : pools_choice::engine;
    o.tokens_per_step = pick(1, 3);
    o.context_tokens = std::max(o.tokens_per_step + 1, pick(0, 3) == 0 ? pick(2, 200) : pick(200, 3000));
    o.prefill_chunk_tokens = std::max(o.tokens_per_step, pick(0, 1) == 0 ? pick(1, 600) : pick(600, 6000));
    const memory_plan plan = build_memory_plan(m, o);
    const std::int64_t n = pick(2, 24);
    sim_search search;
    search.max_running = pick(0, 2) == 0 ? pick(1, n) : 0;
    search.every_prompt_up_to = 16;
    const std::int64_t L = o.context_tokens;
    const std::int64_t s = o.tokens_per_step;
    const std::int64_t B = o.prefill_chunk_tokens;
    const std::string what = fmt::format("case {}: {} {} overlap={} N={} L={} s={} B={} cap={}", k, m.name.view(),
                                         o.policy.engine, o.policy.overlap, n, L, s, B, search.max_running);
    sim_result want;
    bool refused = false;
    detail::for_each_workload(
        plan.pools, o.policy, n, L, s, B, search, [&](const allocation_policy& v, const sim_workload& w) {
          if (refused) return;
          sim_result r;
          try {
            r = simulate(plan.pools, v, w);
          } catch (const std::invalid_argument&) {
            refused = true;
            return;
          }
          for (std::size_t g = 0; g < kMaxSimTables; ++g)
            want.peak_pages[g] = std::max(want.peak_pages[g], r.peak_pages[g]);
          want.peak_bytes = std::max(want.peak_bytes, r.peak_bytes);
          want.peak_blocks = std::max(want.peak_blocks, r.peak_blocks);
          want.peak_admission_blocks = std::max(want.peak_admission_blocks, r.peak_admission_blocks);
          want.steps += r.steps;
          want.finished += r.finished;
          want.visits += r.visits;
          ++want.simulations;
        });
    if (refused) continue;  // a workload the simulator refuses: not a case
    const sim_result got = simulate_worst_case(plan.pools, o.policy, n, L, s, B, search);
    ASSERT_EQ(got.peak_pages, want.peak_pages) << what;
    ASSERT_EQ(got.peak_bytes, want.peak_bytes) << what;
    ASSERT_EQ(got.peak_blocks, want.peak_blocks) << what;
    ASSERT_EQ(got.peak_admission_blocks, want.peak_admission_blocks) << what;
    ASSERT_EQ(got.steps, want.steps) << what;
    ASSERT_EQ(got.finished, want.finished) << what;
    ASSERT_EQ(got.simulations, want.simulations) << what;
    ASSERT_LE(got.visits, want.visits) << what;
    reused += got.visits < want.visits ? 1 : 0;
  }
  EXPECT_GE(reused, 10);  // the twins are taken, not only allowed
}

// A run resumed from the fork of a run with fewer requests (detail::simulator::keep_fork /
// resumed, the request search's probes) is the run from step 0: every peak, step and replayed
// step the same; seeded random workloads, every arrival pattern, both replays.
TEST(AllocSimFast, ResumedForkIsTheRunFromStepZero) {
  seeded_pick pick{0xf04c41ULL};
  std::array<int, 3> resumed{};
  for (int k = 0; k < 300; ++k) {
    const model_config& m = pick.model();
    plan_options o;
    o.policy = pick.preset();
    o.policy.overlap = pick(0, 1) == 1;
    o.pools = pick(0, 3) == 0 ? pools_choice::own : pools_choice::engine;
    o.tokens_per_step = pick(1, 4);
    o.context_tokens = std::max(o.tokens_per_step, pick(0, 3) == 0 ? pick(2, 300) : pick(300, 4000));
    o.prefill_chunk_tokens = std::max(o.tokens_per_step, pick(0, 1) == 0 ? pick(1, 600) : pick(600, 9000));
    o.max_running_requests = 160;
    const memory_plan plan = build_memory_plan(m, o);
    const policy_variants vs = concrete_variants(o.policy);
    allocation_policy v = vs.items[static_cast<std::size_t>(pick(0, vs.count - 1))];
    v.overlap = o.policy.overlap;
    const std::int64_t n = pick(1, 40);
    sim_workload w{.requests = n,
                   .context_tokens = o.context_tokens,
                   .tokens_per_step = o.tokens_per_step,
                   .step_budget_tokens = o.prefill_chunk_tokens,
                   .prompt_tokens = pick(1, o.context_tokens - 1),
                   .accepted_tokens = pick(1, o.tokens_per_step),
                   .arrivals = static_cast<arrival_pattern>(pick(0, 2)),
                   .arrival_gap_steps = pick(1, 7),
                   .completions = 0,
                   .max_running = pick(0, 2) == 0 ? pick(1, 60) : 0};
    const std::int64_t more = n + pick(0, 12);
    const std::string what = fmt::format(
        "case {}: {} {} overlap={} N={} -> {} L={} s={} B={} P={} a={} arr={} gap={} cap={}", k, m.name.view(),
        v.engine, v.overlap, n, more, w.context_tokens, w.tokens_per_step, w.step_budget_tokens, w.prompt_tokens,
        w.accepted_tokens, to_string(w.arrivals), w.arrival_gap_steps, w.max_running);
    for (const bool ff : {false, true}) {
      std::optional<detail::simulator> fork;
      sim_workload wm = w;
      wm.requests = more;
      sim_result want;
      try {
        detail::simulator first(plan.pools, v, w, {.fast_forward = ff});
        first.keep_fork(&fork);
        (void)first.run();
        want = simulate(plan.pools, v, wm, {.fast_forward = ff});
      } catch (const std::invalid_argument&) {
        break;  // a workload the simulator refuses (no progress): not a case
      }
      if (!fork) continue;
      ++resumed[static_cast<std::size_t>(w.arrivals)];
      const sim_result got = fork->resumed(more, {.fast_forward = ff}).run();
      ASSERT_EQ(got.peak_pages, want.peak_pages) << what << " ff " << ff;
      ASSERT_EQ(got.peak_bytes, want.peak_bytes) << what << " ff " << ff;
      ASSERT_EQ(got.peak_blocks, want.peak_blocks) << what << " ff " << ff;
      ASSERT_EQ(got.peak_admission_blocks, want.peak_admission_blocks) << what << " ff " << ff;
      ASSERT_EQ(got.steps, want.steps) << what << " ff " << ff;
      ASSERT_EQ(got.replayed_steps, want.replayed_steps) << what << " ff " << ff;
      ASSERT_EQ(got.finished, want.finished) << what << " ff " << ff;
      ASSERT_EQ(got.staggered_twin_gap, want.staggered_twin_gap) << what << " ff " << ff;
      ASSERT_LE(got.visits, want.visits) << what << " ff " << ff;
    }
  }
  for (const int c : resumed) EXPECT_GE(c, 40);
}

// A run resumed from the fork of a run with a shorter context (detail::simulator::keep_fork with
// fork_kind::context, resumed_context: the context search's probes) has the peaks and steps of
// the run from step 0; seeded random workloads, every arrival pattern, both replays.
TEST(AllocSimFast, ResumedContextForkHasThePeaksOfTheRunFromStepZero) {
  seeded_pick pick{0xc0e741ULL};
  std::array<int, 3> resumed{};
  int refused = 0;
  for (int k = 0; k < 400; ++k) {
    const model_config& m = pick.model();
    plan_options o;
    o.policy = pick.preset();
    o.policy.overlap = pick(0, 1) == 1;
    o.pools = pick(0, 3) == 0 ? pools_choice::own : pools_choice::engine;
    o.tokens_per_step = pick(1, 4);
    o.context_tokens = std::max(o.tokens_per_step, pick(0, 3) == 0 ? pick(2, 600) : pick(600, 5000));
    o.prefill_chunk_tokens = std::max(o.tokens_per_step, pick(0, 1) == 0 ? pick(1, 300) : pick(300, 2000));
    o.max_running_requests = 160;
    const memory_plan plan = build_memory_plan(m, o);
    const policy_variants vs = concrete_variants(o.policy);
    allocation_policy v = vs.items[static_cast<std::size_t>(pick(0, vs.count - 1))];
    v.overlap = o.policy.overlap;
    const std::int64_t n = pick(1, 40);
    sim_workload w{.requests = n,
                   .context_tokens = o.context_tokens,
                   .tokens_per_step = o.tokens_per_step,
                   .step_budget_tokens = o.prefill_chunk_tokens,
                   .prompt_tokens = pick(1, std::min<std::int64_t>(o.context_tokens - 1, 700)),
                   .accepted_tokens = pick(1, o.tokens_per_step),
                   .arrivals = static_cast<arrival_pattern>(pick(0, 2)),
                   .arrival_gap_steps = pick(1, 7),
                   .completions = 0,
                   .max_running = pick(0, 2) == 0 ? pick(1, 60) : 0};
    const std::int64_t longer = w.context_tokens + pick(0, 3000);
    const std::string what =
        fmt::format("case {}: {} {} overlap={} pools={} N={} L={} -> {} s={} B={} P={} a={} arr={} gap={} cap={}", k,
                    m.name.view(), v.engine, v.overlap, static_cast<int>(o.pools), n, w.context_tokens, longer,
                    w.tokens_per_step, w.step_budget_tokens, w.prompt_tokens, w.accepted_tokens, to_string(w.arrivals),
                    w.arrival_gap_steps, w.max_running);
    for (const bool ff : {false, true}) {
      std::optional<detail::simulator> fork;
      sim_workload wl = w;
      wl.context_tokens = longer;
      sim_result want;
      try {
        detail::simulator first(plan.pools, v, w, {.fast_forward = ff});
        first.keep_fork(&fork, detail::fork_kind::context);
        (void)first.run();
        want = simulate(plan.pools, v, wl, {.fast_forward = ff});
      } catch (const std::invalid_argument&) {
        ++refused;
        break;  // a workload the simulator refuses (no progress): not a case
      }
      if (!fork) continue;
      std::optional<detail::simulator> next = fork->resumed_context(longer, plan.pools, {.fast_forward = ff});
      if (!next) continue;  // the longer context changes a table's rules
      ++resumed[static_cast<std::size_t>(w.arrivals)];
      const sim_result got = next->run();
      ASSERT_EQ(got.peak_pages, want.peak_pages) << what << " ff " << ff;
      ASSERT_EQ(got.peak_bytes, want.peak_bytes) << what << " ff " << ff;
      ASSERT_EQ(got.peak_blocks, want.peak_blocks) << what << " ff " << ff;
      ASSERT_EQ(got.peak_admission_blocks, want.peak_admission_blocks) << what << " ff " << ff;
      ASSERT_EQ(got.steps, want.steps) << what << " ff " << ff;
      ASSERT_EQ(got.finished, want.finished) << what << " ff " << ff;
      if (!ff) {
        ASSERT_EQ(got.replayed_steps, want.replayed_steps) << what;  // step for step
      }
    }
  }
  for (const int c : resumed) EXPECT_GE(c, 40) << refused << " refused";
}

// The context search's probes stop once settled (sim_options::stop_when_settled) and resume the
// next, longer context from their fork: the resumed run, stopped once settled too, has the bound
// peak of the whole run of the longer context from step 0 (a shared pool's blocks and admission
// blocks, a parent arena's pages of every table, own pools' bytes). The settle bounds are the
// longer context's, not the fork's (a table grows to cover at most L - 2 + s + lookahead).
TEST(AllocSimFast, ResumedContextForkOfASettledRunHasTheBoundPeak) {
  seeded_pick pick{0x5e7c0eULL};
  int resumed = 0;
  for (int k = 0; k < 500; ++k) {
    const model_config& m = pick.model();
    plan_options o;
    o.policy = pick.preset();
    o.policy.overlap = pick(0, 1) == 1;
    o.pools = pick(0, 3) == 0 ? pools_choice::own : pools_choice::engine;
    o.tokens_per_step = pick(1, 4);
    o.context_tokens = std::max(o.tokens_per_step, pick(0, 3) == 0 ? pick(2, 600) : pick(600, 5000));
    o.prefill_chunk_tokens = std::max(o.tokens_per_step, pick(0, 1) == 0 ? pick(1, 300) : pick(300, 2000));
    o.max_running_requests = 160;
    const memory_plan plan = build_memory_plan(m, o);
    const policy_variants vs = concrete_variants(o.policy);
    allocation_policy v = vs.items[static_cast<std::size_t>(pick(0, vs.count - 1))];
    v.overlap = o.policy.overlap;
    const std::int64_t n = pick(1, 40);
    sim_workload w{.requests = n,
                   .context_tokens = o.context_tokens,
                   .tokens_per_step = o.tokens_per_step,
                   .step_budget_tokens = o.prefill_chunk_tokens,
                   .prompt_tokens = pick(1, std::min<std::int64_t>(o.context_tokens - 1, 700)),
                   .accepted_tokens = pick(1, o.tokens_per_step),
                   .arrivals = static_cast<arrival_pattern>(pick(0, 2)),
                   .arrival_gap_steps = pick(1, 7),
                   .completions = 0,
                   .max_running = pick(0, 2) == 0 ? pick(1, 60) : 0};
    const std::int64_t longer = w.context_tokens + pick(0, 3) * pick(0, 3000);
    const std::string what =
        fmt::format("case {}: {} {} overlap={} pools={} N={} L={} -> {} s={} B={} P={} a={} arr={} gap={} cap={}", k,
                    m.name.view(), v.engine, v.overlap, to_string(plan.pools.structure), n, w.context_tokens, longer,
                    w.tokens_per_step, w.step_budget_tokens, w.prompt_tokens, w.accepted_tokens, to_string(w.arrivals),
                    w.arrival_gap_steps, w.max_running);
    for (const bool ff : {false, true}) {
      const sim_options settle{.fast_forward = ff, .stop_when_settled = true};
      std::optional<detail::simulator> fork;
      sim_workload wl = w;
      wl.context_tokens = longer;
      sim_result whole;
      try {
        detail::simulator first(plan.pools, v, w, settle);
        first.keep_fork(&fork, detail::fork_kind::context);
        (void)first.run();
        whole = simulate(plan.pools, v, wl, {.fast_forward = ff});
      } catch (const std::invalid_argument&) {
        break;  // a workload the simulator refuses (no progress): not a case
      }
      if (!fork) continue;
      std::optional<detail::simulator> next = fork->resumed_context(longer, plan.pools, settle);
      if (!next) continue;  // the longer context changes a table's rules
      ++resumed;
      const sim_result r = next->run();
      ASSERT_FALSE(r.exceeded || r.incomplete) << what;
      ASSERT_EQ(r.peak_admission_blocks, whole.peak_admission_blocks) << what << " ff " << ff;
      if (plan.pools.structure == &vllm_shared_block_pool) {
        ASSERT_EQ(r.peak_blocks, whole.peak_blocks) << what << " ff " << ff;
      } else if (plan.pools.structure == &tokenspeed_parent_arena) {
        ASSERT_EQ(r.peak_pages, whole.peak_pages) << what << " ff " << ff;
      } else {
        ASSERT_EQ(r.peak_bytes, whole.peak_bytes) << what << " ff " << ff;
      }
    }
  }
  EXPECT_GE(resumed, 200);
}

// A run stopped once settled (sim_options::stop_when_settled: no later step can raise the peak a
// capacity bounds) has that peak of the whole run: a shared pool's blocks (and admission blocks),
// a parent arena's pages of every table, own pools' bytes; seeded random workloads, every arrival
// pattern, both replays.
TEST(AllocSimFast, SettledRunHasTheWholeRunsBoundPeak) {
  seeded_pick pick{0x5e7741ULL};
  std::array<int, 3> settled{};
  std::int64_t saved = 0;
  for (int k = 0; k < 500; ++k) {
    const model_config& m = pick.model();
    plan_options o;
    o.policy = pick.preset();
    o.policy.overlap = pick(0, 1) == 1;
    o.pools = pick(0, 3) == 0 ? pools_choice::own : pools_choice::engine;
    o.tokens_per_step = pick(1, 4);
    o.context_tokens = std::max(o.tokens_per_step, pick(0, 3) == 0 ? pick(2, 600) : pick(600, 6000));
    o.prefill_chunk_tokens = std::max(o.tokens_per_step, pick(0, 1) == 0 ? pick(1, 600) : pick(600, 9000));
    o.max_running_requests = 160;
    const memory_plan plan = build_memory_plan(m, o);
    const policy_variants vs = concrete_variants(o.policy);
    allocation_policy v = vs.items[static_cast<std::size_t>(pick(0, vs.count - 1))];
    v.overlap = o.policy.overlap;
    const std::int64_t n = pick(1, 60);
    sim_workload w{.requests = n,
                   .context_tokens = o.context_tokens,
                   .tokens_per_step = o.tokens_per_step,
                   .step_budget_tokens = o.prefill_chunk_tokens,
                   .prompt_tokens = pick(1, o.context_tokens - 1),
                   .accepted_tokens = pick(1, o.tokens_per_step),
                   .arrivals = static_cast<arrival_pattern>(pick(0, 2)),
                   .arrival_gap_steps = pick(1, 7),
                   .completions = 0,
                   .max_running = pick(0, 2) == 0 ? pick(1, n) : 0};
    const std::string what =
        fmt::format("case {}: {} {} overlap={} pools={} N={} L={} s={} B={} P={} a={} arr={} gap={} cap={}", k,
                    m.name.view(), v.engine, v.overlap, to_string(plan.pools.structure), n, w.context_tokens,
                    w.tokens_per_step, w.step_budget_tokens, w.prompt_tokens, w.accepted_tokens, to_string(w.arrivals),
                    w.arrival_gap_steps, w.max_running);
    for (const bool ff : {false, true}) {
      sim_result whole;
      try {
        whole = simulate(plan.pools, v, w, {.fast_forward = ff});
      } catch (const std::invalid_argument&) {
        break;  // a workload the simulator refuses (no progress): not a case
      }
      const sim_result r = simulate(plan.pools, v, w, {.fast_forward = ff, .stop_when_settled = true});
      ASSERT_FALSE(r.exceeded || r.incomplete) << what;
      if (!r.settled) {
        ASSERT_EQ(r.visits, whole.visits) << what;
        continue;
      }
      ++settled[static_cast<std::size_t>(w.arrivals)];
      saved += whole.visits - r.visits;
      ASSERT_EQ(r.peak_admission_blocks, whole.peak_admission_blocks) << what << " ff " << ff;
      if (plan.pools.structure == &vllm_shared_block_pool) {
        ASSERT_EQ(r.peak_blocks, whole.peak_blocks) << what << " ff " << ff;
      } else if (plan.pools.structure == &tokenspeed_parent_arena) {
        ASSERT_EQ(r.peak_pages, whole.peak_pages) << what << " ff " << ff;
      } else {
        ASSERT_EQ(r.peak_bytes, whole.peak_bytes) << what << " ff " << ff;
      }
    }
  }
  EXPECT_GE(settled[0], 40);
  EXPECT_GE(settled[1], 40);
  EXPECT_GT(saved, 0);
}

// A probe past the capacity stops at its first failing workload, with the same verdict.
TEST(AllocSimFast, StopAboveCapacityKeepsTheVerdict) {
  plan_options o;
  o.context_tokens = 4096;
  o.requests = 8;
  const memory_plan plan = build_memory_plan(deepseek_v4_flash, o);
  const sim_result all = simulate_worst_case(plan.pools, o.policy, 8, 4096, 1, 8192);
  const std::int64_t need = std::max(all.peak_blocks, all.peak_admission_blocks);
  for (const std::int64_t usable : {need - 1, need, need + 1}) {
    sim_search stop;
    stop.sim.stop_above_blocks = usable;
    const sim_result r = simulate_worst_case(plan.pools, o.policy, 8, 4096, 1, 8192, stop);
    EXPECT_EQ(r.exceeded, need > usable) << usable;
    if (need > usable) {
      EXPECT_LT(r.simulations, all.simulations);
    }
    EXPECT_EQ(simulated_fit(plan.pools, o.policy, 8, 4096, 1, 8192, {usable, 0}), need <= usable);
  }
}

}  // namespace
}  // namespace dsv4::cache

namespace dsv4::cache {
namespace {

// The fit searches (critical workloads first, early stops) against the same searches made of
// whole worst cases (simulate_worst_case without any stop, its peaks compared with the capacity):
// every pool structure, capacities around the answers, the same N and the same L.
TEST(AllocSimFast, FitSearchesAnswerAsWholeWorstCases) {
  const auto reference_fit = [](const engine_pools& pools, const allocation_policy& p, std::int64_t n, std::int64_t l,
                                std::int64_t s, std::int64_t b, const sim_capacity& cap, const sim_search& search) {
    if (search.max_running > 0 && n > search.max_running) return false;
    const sim_result r = simulate_worst_case(pools, p, n, l, s, b, search);
    if (pools.structure == &vllm_shared_block_pool)
      return std::max(r.peak_blocks, r.peak_admission_blocks) <= cap.usable_blocks;
    if (pools.structure == &tokenspeed_parent_arena) return sim_peak_parents(pools, r) <= cap.usable_blocks;
    return r.peak_bytes <= cap.budget_bytes;
  };
  int cases = 0;
  for (const allocation_policy& policy : {vllm_policy, tokenspeed_policy, tokenspeed_default_policy})
    for (const bool own : {false, true})
      for (const std::int64_t l : {600, 3000}) {
        plan_options o;
        o.policy = policy;
        o.pools = own ? pools_choice::own : pools_choice::engine;
        o.context_tokens = l;
        o.prefill_chunk_tokens = 512;
        o.max_running_requests = 160;
        const memory_plan plan = build_memory_plan(deepseek_v4_flash, o);
        const sim_result at8 = simulate_worst_case(plan.pools, policy, 8, l, 1, 512);
        for (const double scale : {0.5, 1.0, 2.3}) {
          sim_capacity cap;
          const bool shared = plan.pools.structure == &vllm_shared_block_pool;
          cap.usable_blocks = static_cast<std::int64_t>(
              scale * static_cast<double>(shared ? std::max(at8.peak_blocks, at8.peak_admission_blocks)
                                                 : sim_peak_parents(plan.pools, at8)));
          cap.budget_bytes = static_cast<std::uint64_t>(scale * static_cast<double>(at8.peak_bytes));
          const sim_search search;
          const auto fits = [&](std::int64_t n) {
            return reference_fit(plan.pools, policy, n, l, 1, 512, cap, search);
          };
          // The reference request search: doubling up from the hint, then bisecting.
          const std::int64_t hint = 5;
          const std::int64_t top = 64;
          std::int64_t lo = 0;
          std::int64_t hi = hint - 1;
          if (fits(hint)) {
            lo = hint;
            hi = top;
            for (std::int64_t step = 1; lo < top; step *= 2) {
              const std::int64_t next = std::min(top, lo + step);
              if (!fits(next)) {
                hi = next - 1;
                break;
              }
              lo = next;
            }
          }
          const std::int64_t want_n = lo < hi ? detail::largest_fitting(lo, hi, fits) : lo;
          EXPECT_EQ(max_requests_simulated(plan.pools, policy, l, 1, 512, cap, search, hint, top), want_n)
              << policy.engine << " own=" << own << " L=" << l << " scale=" << scale;
          const auto fits_l = [&](std::int64_t x) {
            return reference_fit(plan.pools, policy, 8, x, 1, 512, cap, search);
          };
          const std::int64_t want_l = fits_l(2) ? detail::largest_fitting(2, 2 * l, fits_l) : 0;
          EXPECT_EQ(max_context_simulated(plan.pools, policy, 8, 2 * l, 1, 512, cap, search), want_l)
              << policy.engine << " own=" << own << " L=" << l << " scale=" << scale;
          ++cases;
        }
      }
  EXPECT_EQ(cases, 36);
}

// The request search's bracketing (`detail::largest_fitting_bracketed`: cheap probes of the
// critical workloads bracket the answer, one whole probe confirms it) against the doubling and
// bisection of whole probes it replaces, on seeded random monotone fits: the answer is the
// same (the monotone fit's largest N), with whole probes at the hint, at the answer and at most one
// per N the critical workloads wrongly passed. The cheap probe is a necessary condition that a
// failing whole probe tightens (its failing workload becomes critical), as in `fit_prober`.
TEST(AllocSimFast, BracketedSearchHasTheAnswerOfTheWholeProbes) {
  seeded_pick pick{0xb7ac4e7ULL};
  for (int k = 0; k < 2000; ++k) {
    const std::int64_t top = pick(1, k % 2 == 0 ? 40 : 5000);
    const std::int64_t answer = pick(0, top);    // the largest N that fits (0: none)
    std::int64_t cheap_top = pick(answer, top);  // the critical workloads pass up to here
    const std::int64_t cheap_top0 = cheap_top;
    const std::int64_t hint = pick(1, top);
    int whole = 0;
    const auto fits = [&](std::int64_t n) {
      if (n > cheap_top) return false;  // the critical workloads fail first
      ++whole;
      if (n <= answer) return true;
      cheap_top = pick(answer, n - 1);  // the failing workload joins the critical ones
      return false;
    };
    const auto cheap = [&](std::int64_t n) { return n <= cheap_top; };
    const bool at_hint = fits(hint);
    const std::int64_t got = at_hint ? detail::largest_fitting_bracketed(hint, top, true, cheap, fits)
                                     : detail::largest_fitting_bracketed(0, hint - 1, false, cheap, fits);
    EXPECT_EQ(got, answer) << "top=" << top << " hint=" << hint;
    EXPECT_LE(whole, 2 + (cheap_top0 - answer)) << "top=" << top << " hint=" << hint;  // the hint's and the answer's
  }
}

}  // namespace
}  // namespace dsv4::cache
