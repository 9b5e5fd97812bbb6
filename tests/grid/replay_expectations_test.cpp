// The planner's replay answers (the fit searches over vLLM's, SGLang's and tokenspeed's
// allocators) against the checked-in table of issue 41, one grid point a row. Label "grid": the
// slow stage runs it (g++ Release) and the clang++ stage; the ASan stage leaves the simulator to
// alloc_sim_test's property tests (the same code on random workloads), as it leaves the plan-safety
// grid.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "../replay_grid.hpp"

namespace dsv4::cache {
namespace {

// The planner's replay answers against the table the code before the fast replays wrote
// (tests/data/replay_expectations.tsv, tests/replay_grid.hpp; regenerate only on purpose with
// dsv4-cache-planner-bench --write-expectations). Exact answers must stay exact and equal; an
// answer the old code gave as a lower bound (its work limit) may only grow or become exact.
// Four shards (rows k mod 4), for ctest -j.
void check_replay_rows(int shard) {
  std::ifstream in(std::string(DSV4_TEST_DATA_DIR) + "/replay_expectations.tsv");
  ASSERT_TRUE(in) << "tests/data/replay_expectations.tsv";
  std::string line;
  int rows = 0;
  int seen = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("preset\t", 0) == 0) continue;
    if (seen++ % 4 != shard) continue;
    testing::replay_case c;
    testing::replay_answers want;
    testing::parse_replay_row(line, c, want);
    const testing::replay_answers got = testing::replay_answer(c);
    const std::string row = testing::replay_inputs_tsv(c);
    ++rows;
    EXPECT_EQ(got.simulated, want.simulated) << row;
    if (want.lower_bound != 0) {
      EXPECT_GE(got.max_requests, want.max_requests) << row;
    } else {
      EXPECT_EQ(got.max_requests, want.max_requests) << row;
      EXPECT_EQ(got.lower_bound, 0) << row;
      EXPECT_EQ(got.requests_by_plan, want.requests_by_plan) << row;
    }
    if (want.context_lower_bound != 0) {
      EXPECT_GE(got.max_context, want.max_context) << row;
    } else {
      EXPECT_EQ(got.max_context, want.max_context) << row;
      EXPECT_EQ(got.context_lower_bound, 0) << row;
    }
    if (want.lower_bound == 0) {  // SGLang's figures at max_requests, and its ratio search
      EXPECT_EQ(got.peak_swa_tokens, want.peak_swa_tokens) << row;
      EXPECT_EQ(got.better_ratio, want.better_ratio) << row;
      EXPECT_EQ(got.better_ratio_requests, want.better_ratio_requests) << row;
    }
    if (want.sim_run == 1) {  // the worst case at N, complete before: the same peaks
      EXPECT_EQ(got.sim_run, 1) << row;
      EXPECT_EQ(got.peak_blocks, want.peak_blocks) << row;
      EXPECT_EQ(got.peak_admission_blocks, want.peak_admission_blocks) << row;
      EXPECT_EQ(got.peak_bytes, want.peak_bytes) << row;
      EXPECT_EQ(got.peak_pages, want.peak_pages) << row;
    } else {
      EXPECT_EQ(got.sim_run != 0, want.sim_run != 0) << row;
    }
  }
  EXPECT_GE(rows, 50);
}

TEST(ReplayExpectations, RowsOfTheCheckedInTable0) { check_replay_rows(0); }
TEST(ReplayExpectations, RowsOfTheCheckedInTable1) { check_replay_rows(1); }
TEST(ReplayExpectations, RowsOfTheCheckedInTable2) { check_replay_rows(2); }
TEST(ReplayExpectations, RowsOfTheCheckedInTable3) { check_replay_rows(3); }

}  // namespace
}  // namespace dsv4::cache
