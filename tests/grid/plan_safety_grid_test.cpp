// Plan safety over the grid: for DeepSeek-V4-Flash and V4.1-Flash, every engine policy, N in {1, 2, 7, 64}, L
// in {5, 63, 64, 65, 127, 128, 129, 1000, 8192, 8193, 131072}, s in 1..4 and B in {1, 64, 512, 8192}, the plan's pages
// per layer are at least the allocation simulator's worst peak + the null page in every group, and the plan / peak
// bytes ratio is printed (its median must stay <= 1.15); under vLLM's shared block pool the same in blocks (every
// table, and the pool against the peak in use and at an admission). ctest label "grid": Release builds only (about a
// minute on two cores, too slow under sanitizers). Under tokenspeed's parent arena the same in pages and parents.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "dsv4/cache/alloc_sim.hpp"
#include "dsv4/cache/memory_plan.hpp"

namespace dsv4::cache {
namespace {

struct cell {
  std::int64_t n, l, s, b;
};

// pools: own checks every group's pages per layer against its simulated peak; engine (vLLM's
// shared block pool) checks every engine group's blocks against its table's peak, and the pool's
// blocks against the peak blocks in use and at an admission (vLLM's gate), the null block apart.
void check_grid(const model_config& model, const allocation_policy& policy, pools_choice pools = pools_choice::own) {
  const group_spec_list specs = build_cache_specs(model);
  std::vector<cell> cells;
  int skipped = 0;
  for (const std::int64_t n : {1, 2, 7, 64})
    for (const std::int64_t l : {5, 63, 64, 65, 127, 128, 129, 1000, 8192, 8193, 131'072})
      for (const std::int64_t s : {1, 2, 3, 4})
        for (const std::int64_t b : {1, 64, 512, 8192}) {
          if (policy.decode_needs_whole_step && b < s) {
            ++skipped;  // this engine never decodes with a step budget below s
            continue;
          }
          cells.push_back({n, l, s, b});
        }
  std::vector<double> ratios(cells.size());
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::vector<std::string> failures;
  const auto worker = [&] {
    for (std::size_t i = next++; i < cells.size(); i = next++) {
      const cell c = cells[i];
      plan_options o;
      o.context_tokens = c.l;
      o.requests = c.n;
      o.tokens_per_step = c.s;
      o.prefill_chunk_tokens = c.b;
      o.policy = policy;
      o.pools = pools;
      const memory_plan p = build_memory_plan(model, o);
      if (p.pools.structure == &tokenspeed_parent_arena) {
        // tokenspeed's parent arena: every group's pages against its peak, the groups' parents
        // against the peak parents (sum of ceil(peak pages / K)), the null parent apart; the
        // ratio is of the groups' parents (the budget adds tokenspeed's startup floor on top).
        const sim_result r = simulate_worst_case(p.pools, policy, c.n, c.l, c.s, c.b);
        const std::int64_t peak = sim_peak_parents(p.pools, r);
        ratios[i] = static_cast<double>(p.planned_blocks) / static_cast<double>(peak + 1);
        std::vector<std::int64_t> bad;
        if (p.planned_blocks - 1 < peak || p.num_blocks < p.planned_blocks) bad = {-1, p.planned_blocks - 1, peak};
        for (int e = 0; e < p.pools.num_groups && bad.empty(); ++e) {
          const auto ei = static_cast<std::size_t>(e);
          const std::int64_t t = r.peak_pages[static_cast<std::size_t>(r.table_of_group[ei])];
          if (p.engine_groups[ei].blocks < t) bad = {e, p.engine_groups[ei].blocks, t};
        }
        if (!bad.empty()) {
          const std::lock_guard lock(mu);
          failures.push_back(
              ::testing::PrintToString(std::vector<std::int64_t>{c.n, c.l, c.s, c.b, bad[0], bad[1], bad[2]}));
        }
        continue;
      }
      if (pools == pools_choice::engine) {
        const sim_result r = simulate_worst_case(p.pools, policy, c.n, c.l, c.s, c.b);
        const std::int64_t peak = std::max(r.peak_blocks, r.peak_admission_blocks);
        ratios[i] = static_cast<double>(p.num_blocks) / static_cast<double>(peak + 1);
        std::vector<std::int64_t> bad;
        if (p.num_blocks - 1 < peak) bad = {-1, p.num_blocks - 1, peak};
        for (int e = 0; e < p.pools.num_groups && bad.empty(); ++e) {
          const auto ei = static_cast<std::size_t>(e);
          const std::int64_t t = r.peak_pages[static_cast<std::size_t>(r.table_of_group[ei])];
          if (p.engine_groups[ei].blocks < t) bad = {e, p.engine_groups[ei].blocks, t};
        }
        if (!bad.empty()) {
          const std::lock_guard lock(mu);
          failures.push_back(
              ::testing::PrintToString(std::vector<std::int64_t>{c.n, c.l, c.s, c.b, bad[0], bad[1], bad[2]}));
        }
        continue;
      }
      const sim_result r = simulate_worst_case(specs, policy, c.n, c.l, c.s, c.b);
      ratios[i] = static_cast<double>(p.total_bytes) / static_cast<double>(r.peak_bytes);
      for (int g = 0; g < p.num_groups; ++g) {
        const auto gi = static_cast<std::size_t>(g);
        if (p.groups[gi].pages_per_layer < r.peak_pages[gi] + 1) {
          const std::lock_guard lock(mu);
          failures.push_back(::testing::PrintToString(
              std::vector<std::int64_t>{c.n, c.l, c.s, c.b, g, p.groups[gi].pages_per_layer, r.peak_pages[gi] + 1}));
        }
      }
    }
  };
  std::thread t1(worker);
  std::thread t2(worker);
  t1.join();
  t2.join();
  EXPECT_TRUE(failures.empty())
      << "plan below the simulated peak, {N, L, s, B, group (-1: the pool), plan pages, peak pages}: "
      << ::testing::PrintToString(failures);
  std::vector<double> sorted = ratios;
  std::sort(sorted.begin(), sorted.end());
  const auto at = [&](double q) {
    return sorted[static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1))];
  };
  std::printf(
      "%s, %s%s, %s pools: %zu cells (%d skipped: B < s never decodes), plan / simulated peak %s: min %.3f, p10 "
      "%.3f, median %.3f, p90 %.3f, max %.3f\n",
      std::string(model.name.view()).c_str(), std::string(policy.engine).c_str(), policy.overlap ? " with overlap" : "",
      std::string(to_string(pools)).c_str(), cells.size(), skipped,
      pools == pools_choice::engine ? "blocks (parents)" : "bytes", sorted.front(), at(0.1), at(0.5), at(0.9),
      sorted.back());
  EXPECT_GE(sorted.front(), 1.0);
  // The 1.15 bound holds without overlap; with async scheduling the plan is safe but looser (the
  // issue asks for the figure, printed above).
  if (!policy.overlap) {
    EXPECT_LE(at(0.5), 1.15);
  }
}

TEST(PlanSafetyGrid, Vllm) { check_grid(deepseek_v4_flash, vllm_policy); }
// vLLM's own structure: one shared block pool (engines/vllm/engine.hpp), in blocks, with and without async scheduling.
TEST(PlanSafetyGrid, VllmSharedPool) { check_grid(deepseek_v4_flash, vllm_policy, pools_choice::engine); }
TEST(PlanSafetyGrid, VllmSharedPoolAsync) {
  check_grid(deepseek_v4_flash, policy_for("vllm", true), pools_choice::engine);
}
TEST(PlanSafetyGrid, Tokenspeed) { check_grid(deepseek_v4_flash, tokenspeed_policy); }
TEST(PlanSafetyGrid, TokenspeedDefault) { check_grid(deepseek_v4_flash, tokenspeed_default_policy); }
// tokenspeed's own structure: its parent arena (engines/tokenspeed/engine.hpp), in parents.
TEST(PlanSafetyGrid, TokenspeedParentArena) { check_grid(deepseek_v4_flash, tokenspeed_policy, pools_choice::engine); }
TEST(PlanSafetyGrid, TokenspeedDefaultParentArena) {
  check_grid(deepseek_v4_flash, tokenspeed_default_policy, pools_choice::engine);
}
// V4.1: the KV-sharing groups, ratio-2 (2 tokens per row) and ratio-1 global pages, and vLLM's
// fixed state ring.
TEST(PlanSafetyGrid, V41Vllm) { check_grid(deepseek_v4_1_flash, vllm_policy); }
TEST(PlanSafetyGrid, V41VllmSharedPool) { check_grid(deepseek_v4_1_flash, vllm_policy, pools_choice::engine); }
TEST(PlanSafetyGrid, V41Tokenspeed) { check_grid(deepseek_v4_1_flash, tokenspeed_policy); }
TEST(PlanSafetyGrid, V41TokenspeedDefault) { check_grid(deepseek_v4_1_flash, tokenspeed_default_policy); }

}  // namespace
}  // namespace dsv4::cache
