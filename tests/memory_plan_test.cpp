// The memory plan and its inverses. Expected values are hand sums of the documented model.
#include "dsv4/cache/memory_plan.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

TEST(MemoryPlan, FlashDefaultHandSum) {
  const memory_plan p = build_memory_plan(deepseek_v4_flash);
  EXPECT_EQ(p.options.context_tokens, 1'048'576);
  ASSERT_EQ(p.num_groups, 6);
  const std::int64_t ppr[] = {3, 3, 4096, 17, 4096, 3};
  const std::int64_t shared[] = {128, 2048, 0, 1024, 0, 2048};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(p.groups[i].pages_per_request, ppr[i]) << i;
    EXPECT_EQ(p.groups[i].shared_pages, shared[i]) << i;
    EXPECT_EQ(p.groups[i].pages_per_layer, ppr[i] + shared[i] + 1) << i;
  }
  EXPECT_EQ(p.groups[0].bytes, 37'440ULL * 44 * 132);
  EXPECT_EQ(p.total_bytes, 6'755'043'136ULL);
  // ideal: 44 x 128 x 584 + 21 x 8 x 8192 + 21 x 262144 x 716 + 20 x 128 x 4096 + 20 x 8192 x 584 + 21 x 8 x 2048
  EXPECT_EQ(p.ideal_bytes, 44ULL * 128 * 584 + 21ULL * 8 * 8192 + 21ULL * 262'144 * 716 + 20ULL * 128 * 4096 +
                               20ULL * 8192 * 584 + 21ULL * 8 * 2048);
  EXPECT_GT(p.overhead(), 1.0);
}

TEST(MemoryPlan, ShortContextTwoRequestsHandSum) {
  plan_options o;
  o.context_tokens = 1000;
  o.requests = 2;
  const memory_plan p = build_memory_plan(deepseek_v4_flash, o);
  // swa: min(ceil(1000/64), 3) = 3 pages; c4a kv: ceil(1000/256) = 4 pages (facts 5.7: ceiling)
  EXPECT_EQ(p.groups[0].pages_per_request, 3);
  EXPECT_EQ(p.groups[2].pages_per_request, 4);
  EXPECT_EQ(p.groups[4].pages_per_request, 4);
  // The prefill chunk is capped at L = 1000: shared pages ceil(1000 / R) = 16, 250, 125, 250.
  const std::int64_t shared[] = {16, 250, 0, 125, 0, 250};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p.groups[i].shared_pages, shared[i]) << i;
  // 37,440 x 44 x (2 x 3 + 16 + 1) + 32,768 x 21 x (2 x 3 + 250 + 1) + 45,888 x 21 x (2 x 4 + 1)
  // + 32,768 x 20 x (2 x 17 + 125 + 1) + 1,728 x 20 x (2 x 4 + 1) + 8,192 x 21 x (2 x 3 + 250 + 1)
  EXPECT_EQ(p.total_bytes, 372'791'872ULL);
  EXPECT_EQ(p.ideal_bytes, 38'671'856ULL);
  o.context_tokens = 100;  // shorter than the SWA window: ceil(100/64) = 2 pages
  EXPECT_EQ(build_memory_plan(deepseek_v4_flash, o).groups[0].pages_per_request, 2);
}

TEST(MemoryPlan, SpeculativeStepsGrowTheCsaStateWindow) {
  plan_options o;
  o.tokens_per_step = 6;  // W = max(8, 4 + 6) = 10: ceil((10 + 6 - 2) / 4) + 1 = 5 pages
  const memory_plan p = build_memory_plan(deepseek_v4_flash, o);
  EXPECT_EQ(p.groups[1].window_tokens, 10);
  EXPECT_EQ(p.groups[1].pages_per_request, 5);
  EXPECT_EQ(p.groups[5].pages_per_request, 5);
  EXPECT_EQ(p.groups[3].window_tokens, 128);     // HCA state keeps 128
  EXPECT_EQ(p.groups[3].pages_per_request, 18);  // ceil((128 + 6 - 2) / 8) + 1
  EXPECT_EQ(p.groups[0].pages_per_request, 4);   // ceil(132 / 64) + 1
}

TEST(MemoryPlan, SlidingWindowsAreAFixedCostPerRequestFault9) {
  // Facts 5.9: a planner charging every token the full cost reports far too few tokens.
  plan_options o;
  o.context_tokens = 1 << 19;
  const memory_plan half = build_memory_plan(deepseek_v4_flash, o);
  const memory_plan full = build_memory_plan(deepseek_v4_flash);
  for (int i : {0, 1, 3, 5}) EXPECT_EQ(half.groups[i].bytes, full.groups[i].bytes) << i;
  EXPECT_LT(half.groups[2].bytes, full.groups[2].bytes);
  // 80 GiB, 64 requests: the naive full-cost-per-token planner (plan bytes / L per token) gets
  // far less than the real answer.
  const std::uint64_t budget = 80ULL << 30;
  const context_capacity c = max_context_for_budget(deepseek_v4_flash, {.requests = 64}, budget);
  const double naive_tokens = static_cast<double>(budget) / (static_cast<double>(full.total_bytes) / (1 << 20)) / 64;
  EXPECT_GT(static_cast<double>(c.max_context_tokens), 1.5 * naive_tokens);
}

TEST(MemoryPlan, MtpExclusionAndIndexerFormat) {
  const memory_plan with = build_memory_plan(deepseek_v4_flash);
  const memory_plan without = build_memory_plan(deepseek_v4_flash, {.cache_mtp = false});
  EXPECT_EQ(with.total_bytes - without.total_bytes, 37'440ULL * 132);  // one SWA layer
  const memory_plan mx = build_memory_plan(deepseek_v4_flash, {.indexer = indexer_format::mxfp4});
  EXPECT_EQ(with.total_bytes - mx.total_bytes, (8'448ULL - 4'352) * 21 * 4097);
}

TEST(MemoryPlan, MaxRequestsIsExact) {
  const std::uint64_t budget = 80ULL << 30;
  const request_capacity r = max_requests_for_budget(deepseek_v4_flash, {}, budget);
  EXPECT_EQ(r.fixed_bytes, 2'647'719'488ULL);
  EXPECT_EQ(r.bytes_per_request, 4'107'323'648ULL);
  EXPECT_EQ(r.max_requests, 20);
  EXPECT_EQ(build_memory_plan(deepseek_v4_flash, {.requests = 20}).total_bytes, r.total_bytes);
  EXPECT_GT(build_memory_plan(deepseek_v4_flash, {.requests = 21}).total_bytes, budget);
  EXPECT_EQ(r.bytes_left, budget - r.total_bytes);
  const request_capacity none = max_requests_for_budget(deepseek_v4_flash, {}, 1ULL << 30);
  EXPECT_EQ(none.max_requests, 0);
  EXPECT_EQ(none.total_bytes, 0U);  // nothing is planned: never more than the budget
  EXPECT_EQ(none.bytes_left, 0U);
  EXPECT_EQ(none.fixed_bytes, 2'647'719'488ULL);
}

TEST(MemoryPlan, MaxContextIsExact) {
  const std::uint64_t budget = 80ULL << 30;
  const context_capacity c = max_context_for_budget(deepseek_v4_flash, {.requests = 64}, budget);
  ASSERT_GT(c.max_context_tokens, 0);
  EXPECT_FALSE(c.limited_by_model);
  EXPECT_LE(build_memory_plan(deepseek_v4_flash, {.context_tokens = c.max_context_tokens, .requests = 64}).total_bytes,
            budget);
  EXPECT_GT(
      build_memory_plan(deepseek_v4_flash, {.context_tokens = c.max_context_tokens + 1, .requests = 64}).total_bytes,
      budget);
  const context_capacity all = max_context_for_budget(deepseek_v4_flash, {}, 1ULL << 40);
  EXPECT_TRUE(all.limited_by_model);
  EXPECT_EQ(all.max_context_tokens, 1'048'576);
  EXPECT_EQ(max_context_for_budget(deepseek_v4_flash, {}, 1000).max_context_tokens, 0);
}

TEST(MemoryPlan, HugeBudgetSaturatesCorrectly) {
  const std::uint64_t budget = std::numeric_limits<std::uint64_t>::max();
  const request_capacity r = max_requests_for_budget(deepseek_v4_flash, {}, budget);
  EXPECT_EQ(r.max_requests, 4'491'183'469);  // floor((2^64 - 1 - fixed) / per request)
  EXPECT_EQ(build_memory_plan(deepseek_v4_flash, {.requests = r.max_requests}).total_bytes, r.total_bytes);
  EXPECT_LT(r.bytes_left, r.bytes_per_request);
  expect_invalid([&] { (void)build_memory_plan(deepseek_v4_flash, {.requests = r.max_requests + 1}); },
                 {"overflows 64 bits"});
}

TEST(MemoryPlan, OverflowIsAnErrorNeverAWrappedNumber) {
  expect_invalid(
      [] { (void)build_memory_plan(deepseek_v4_flash, {.context_tokens = 1LL << 40, .requests = 1LL << 30}); },
      {"context_tokens must be <= max_position_embeddings", "context_tokens=1099511627776"});
  model_config c = deepseek_v4_flash;
  c.max_position_embeddings = 1LL << 62;
  expect_invalid([&] { (void)build_memory_plan(c, {.context_tokens = 1LL << 40, .requests = 1LL << 30}); },
                 {"memory plan overflows 64 bits", "requests=1073741824"});
  expect_invalid(
      [] { (void)build_memory_plan(deepseek_v4_flash, {.requests = std::numeric_limits<std::int64_t>::max()}); },
      {"overflows"});
}

TEST(MemoryPlan, OptionErrors) {
  expect_invalid([] { (void)build_memory_plan(deepseek_v4_flash, {.requests = 0}); },
                 {"requests must be >= 1", "requests=0"});
  expect_invalid([] { (void)build_memory_plan(deepseek_v4_flash, {.context_tokens = -5}); },
                 {"context_tokens must be >= 1", "context_tokens=-5"});
  expect_invalid([] { (void)build_memory_plan(deepseek_v4_flash, {.tokens_per_step = 0}); },
                 {"tokens_per_step must be >= 1", "tokens_per_step=0"});
  expect_invalid([] { (void)build_memory_plan(deepseek_v4_flash, {.context_tokens = 4, .tokens_per_step = 5}); },
                 {"tokens_per_step must be <= context_tokens"});
  expect_invalid([] { (void)build_memory_plan(deepseek_v4_flash, {.prefill_chunk_tokens = -1}); },
                 {"prefill_chunk_tokens must be >= 1", "prefill_chunk_tokens=-1"});
}

}  // namespace
}  // namespace dsv4::cache
