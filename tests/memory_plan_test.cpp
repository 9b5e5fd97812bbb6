// The memory plan and its inverses. Expected values are hand sums of the documented model.
#include "dsv4/cache/memory_plan.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::build_own;
using testing::expect_invalid;
using testing::own;

TEST(MemoryPlan, FlashDefaultHandSum) {
  const memory_plan p = build_own(deepseek_v4_flash);
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
  const memory_plan p = build_own(deepseek_v4_flash, o);
  // swa: min(ceil(1000/64) = 16, ring ceil(127/64) + 1 = 3) = 3 pages; c4a kv: ceil(1000/256) = 4 pages (facts 5.7)
  EXPECT_EQ(p.groups[0].pages_per_request, 3);
  EXPECT_EQ(p.groups[2].pages_per_request, 4);
  EXPECT_EQ(p.groups[4].pages_per_request, 4);
  EXPECT_EQ(p.holding_requests, 2);
  // B = 8,192 admits both prompts (up to 999 tokens each) in one step: each holds its whole
  // context, so shared = min(2 x (cap - per), 2 + floor(8,190 / R)) = 2 x (cap - per):
  // swa 2 x 13, c4a state 2 x 247, c128a state 2 x 108 (ring ceil(127/8) + 1 = 17).
  const std::int64_t shared[] = {26, 494, 0, 216, 0, 494};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p.groups[i].shared_pages, shared[i]) << i;
  // 37,440 x 44 x 33 + 32,768 x 21 x 501 + 45,888 x 21 x 9 + 32,768 x 20 x 251 + 1,728 x 20 x 9
  // + 8,192 x 21 x 501
  EXPECT_EQ(p.total_bytes, 658'782'272ULL);
  EXPECT_EQ(p.ideal_bytes, 38'671'856ULL);
  o.context_tokens = 100;  // shorter than the SWA window: ceil(100/64) = 2 pages
  EXPECT_EQ(build_own(deepseek_v4_flash, o).groups[0].pages_per_request, 2);
}

// Issue regression (plan safety): N = 7, L = 1,000, B = 8,192, s = 1 under vLLM. All seven
// prompts are prefilled in one step; the engine then holds 2,295,335,232 B (the allocation
// simulator's peak, and an independent Python replay of vLLM's rules: tests/oracle). The old
// plan, a ring per request plus one min(B, L) chunk, gave 486,074,432 B.
TEST(MemoryPlan, SevenShortPromptsInOneStepRegression) {
  const memory_plan p = build_own(deepseek_v4_flash, {.context_tokens = 1000, .requests = 7});
  // swa 7 x 16 + 1, c4a state 7 x 250 + 1, c4a kv 7 x 4 + 1, c128a state 7 x 125 + 1, ...
  const std::int64_t pages[] = {113, 1751, 29, 876, 29, 1751};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p.groups[i].pages_per_layer, pages[i]) << i;
  EXPECT_EQ(p.total_bytes, 2'295'335'232ULL);
}

// Issue regression: N = 2, L = 63, B = 512, s = 1: both 62-token prompts in one step hold
// ceil(62 / 4) = 16 CSA-state pages each: 33 per layer with the null page (the old plan: 23).
TEST(MemoryPlan, TwoPromptsOneStepCsaStateRegression) {
  const memory_plan p =
      build_own(deepseek_v4_flash, {.context_tokens = 63, .requests = 2, .prefill_chunk_tokens = 512});
  EXPECT_EQ(p.groups[1].pages_per_layer, 33);
  EXPECT_EQ(p.groups[5].pages_per_layer, 33);
}

// Issue regression: N = 64, L = 8,192, s = 2, B = 512: a decode ring spans W - 1 + s + (s - 1)
// tokens: ceil((128 + 4 - 3) / 64) + 1 = 4 SWA pages per request, 64 x 4 + 1 = 257 per layer
// (the old ring ceil((W + s - 2) / 64) + 1 = 3 gave 201).
TEST(MemoryPlan, DecodeRingSpansLookaheadRegression) {
  const memory_plan p = build_own(
      deepseek_v4_flash, {.context_tokens = 8192, .requests = 64, .tokens_per_step = 2, .prefill_chunk_tokens = 512});
  EXPECT_EQ(p.groups[0].pages_per_request, 4);
  EXPECT_GE(p.groups[0].pages_per_layer, 257);
}

TEST(MemoryPlan, SpeculativeStepsGrowTheCsaStateWindow) {
  plan_options o;
  o.tokens_per_step = 6;
  o.policy = tokenspeed_policy;  // bounds tokenspeed's older rule: W = max(8, 4 + 6) = 10
  const memory_plan p = build_own(deepseek_v4_flash, o);
  EXPECT_EQ(p.groups[1].window_tokens, 10);
  EXPECT_EQ(p.groups[1].pages_per_request, 6);  // ceil((10 + 12 - 3) / 4) + 1
  EXPECT_EQ(p.groups[5].pages_per_request, 6);
  EXPECT_EQ(p.groups[3].window_tokens, 128);     // HCA state keeps 128
  EXPECT_EQ(p.groups[3].pages_per_request, 19);  // ceil((128 + 12 - 3) / 8) + 1
  EXPECT_EQ(p.groups[0].pages_per_request, 4);   // ceil(137 / 64) + 1
  o.policy = vllm_policy;                        // vLLM keeps 8 for any verify width
  const memory_plan v = build_own(deepseek_v4_flash, o);
  EXPECT_EQ(v.groups[1].window_tokens, 8);
  EXPECT_EQ(v.groups[1].pages_per_request, 6);  // ceil((8 + 12 - 3) / 4) + 1
}

TEST(MemoryPlan, TokenspeedExtentRunsPastTheContext) {
  // tokenspeed: a prompt of L - 1 tokens reserves s more: ceil((8,192 + 2 - 1) / 256) = 33
  // compressed pages per request, 34 with the null page (vLLM caps at L: 32 + 1).
  const plan_options o{.context_tokens = 8192, .tokens_per_step = 2};
  plan_options t = o;
  t.policy = tokenspeed_policy;
  EXPECT_EQ(build_own(deepseek_v4_flash, o).groups[2].pages_per_layer, 33);
  EXPECT_EQ(build_own(deepseek_v4_flash, t).groups[2].pages_per_layer, 34);
  t.prefill_chunk_tokens = 1;  // tokenspeed never decodes with a budget below s
  expect_invalid([&] { (void)build_own(deepseek_v4_flash, t); },
                 {"prefill_chunk_tokens must be >= tokens_per_step", "prefill_chunk_tokens=1", "tokens_per_step=2"});
}

TEST(MemoryPlan, SlidingWindowsAreAFixedCostPerRequestFault9) {
  // Facts 5.9: a planner charging every token the full cost reports far too few tokens.
  plan_options o;
  o.context_tokens = 1 << 19;
  const memory_plan half = build_own(deepseek_v4_flash, o);
  const memory_plan full = build_own(deepseek_v4_flash);
  for (int i : {0, 1, 3, 5}) EXPECT_EQ(half.groups[i].bytes, full.groups[i].bytes) << i;
  EXPECT_LT(half.groups[2].bytes, full.groups[2].bytes);
  // 80 GiB, 64 requests: the naive full-cost-per-token planner (plan bytes / L per token) gets
  // far less than the real answer.
  const std::uint64_t budget = 80ULL << 30;
  const context_capacity c = max_context_for_budget(deepseek_v4_flash, own({.requests = 64}), budget);
  const double naive_tokens = static_cast<double>(budget) / (static_cast<double>(full.total_bytes) / (1 << 20)) / 64;
  EXPECT_GT(static_cast<double>(c.max_context_tokens), 1.5 * naive_tokens);
}

TEST(MemoryPlan, MtpExclusionAndIndexerFormat) {
  const memory_plan with = build_own(deepseek_v4_flash);
  const memory_plan without = build_own(deepseek_v4_flash, {.cache_mtp = false});
  EXPECT_EQ(with.total_bytes - without.total_bytes, 37'440ULL * 132);  // one SWA layer
  const memory_plan mx = build_own(deepseek_v4_flash, {.indexer = indexer_format::mxfp4});
  EXPECT_EQ(with.total_bytes - mx.total_bytes, (8'448ULL - 4'352) * 21 * 4097);
}

TEST(MemoryPlan, MaxRequestsIsExact) {
  // Flash at 1,048,576 tokens, 80 GiB: 20 requests take 84,849,535,808 B, 21 take
  // 88,959,162,176 B (hand sums of the vLLM formula); the null pages alone 4,161,088 B.
  const std::uint64_t budget = 80ULL << 30;
  const request_capacity r = max_requests_for_budget(deepseek_v4_flash, own({}), budget);
  EXPECT_EQ(r.fixed_bytes, 4'161'088ULL);
  EXPECT_EQ(r.bytes_per_request, 6'755'043'136ULL - 4'161'088ULL);
  EXPECT_EQ(r.max_requests, 20);
  EXPECT_EQ(r.total_bytes, 84'849'535'808ULL);
  EXPECT_EQ(build_own(deepseek_v4_flash, {.requests = 20}).total_bytes, r.total_bytes);
  EXPECT_EQ(build_own(deepseek_v4_flash, {.requests = 21}).total_bytes, 88'959'162'176ULL);
  EXPECT_EQ(r.bytes_left, budget - r.total_bytes);
  const request_capacity none = max_requests_for_budget(deepseek_v4_flash, own({}), 1ULL << 30);
  EXPECT_EQ(none.max_requests, 0);
  EXPECT_EQ(none.total_bytes, 0U);  // nothing is planned: never more than the budget
  EXPECT_EQ(none.bytes_left, 0U);
  EXPECT_EQ(none.fixed_bytes, 4'161'088ULL);
}

TEST(MemoryPlan, StepBudgetBoundsTheRequestsHoldingPages) {
  // vLLM admits a prompt only with budget left after every running request took a token, so
  // at most B requests hold pages: with B = 64, N = 1,000 plans as 64 holders.
  const plan_options o{.context_tokens = 8192, .requests = 1000, .prefill_chunk_tokens = 64};
  const memory_plan p = build_own(deepseek_v4_flash, o);
  EXPECT_EQ(p.holding_requests, 64);
  EXPECT_EQ(p.groups[2].pages_per_layer, 64 * 32 + 1);
  plan_options t = o;
  t.policy = tokenspeed_default_policy;  // prefill-only steps admit every queued prompt
  EXPECT_EQ(build_own(deepseek_v4_flash, t).holding_requests, 1000);
}

TEST(MemoryPlan, MaxContextIsExact) {
  const std::uint64_t budget = 80ULL << 30;
  const context_capacity c = max_context_for_budget(deepseek_v4_flash, own({.requests = 64}), budget);
  ASSERT_GT(c.max_context_tokens, 0);
  EXPECT_FALSE(c.limited_by_model);
  EXPECT_LE(build_own(deepseek_v4_flash, {.context_tokens = c.max_context_tokens, .requests = 64}).total_bytes, budget);
  EXPECT_GT(build_own(deepseek_v4_flash, {.context_tokens = c.max_context_tokens + 1, .requests = 64}).total_bytes,
            budget);
  const context_capacity all = max_context_for_budget(deepseek_v4_flash, own({}), 1ULL << 40);
  EXPECT_TRUE(all.limited_by_model);
  EXPECT_EQ(all.max_context_tokens, 1'048'576);
  EXPECT_EQ(max_context_for_budget(deepseek_v4_flash, own({}), 1000).max_context_tokens, 0);
}

TEST(MemoryPlan, HugeBudgetSaturatesCorrectly) {
  const std::uint64_t budget = std::numeric_limits<std::uint64_t>::max();
  // B = 8,192: at most 8,192 requests hold pages, whose plan fits in 2^64 - 1 bytes: any N fits.
  const request_capacity r = max_requests_for_budget(deepseek_v4_flash, own({}), budget);
  EXPECT_EQ(r.max_requests, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(build_own(deepseek_v4_flash, {.requests = 8192}).total_bytes, r.total_bytes);
  // With a budget that admits every prompt at once, memory is the limit again.
  const plan_options big{.prefill_chunk_tokens = std::int64_t{1} << 40};
  const request_capacity m = max_requests_for_budget(deepseek_v4_flash, own(big), budget);
  plan_options at = big;
  at.requests = m.max_requests;
  EXPECT_EQ(build_own(deepseek_v4_flash, at).total_bytes, m.total_bytes);
  at.requests = m.max_requests + 1;
  expect_invalid([&] { (void)build_own(deepseek_v4_flash, at); }, {"overflows 64 bits"});
}

TEST(MemoryPlan, OverflowIsAnErrorNeverAWrappedNumber) {
  expect_invalid([] { (void)build_own(deepseek_v4_flash, {.context_tokens = 1LL << 40, .requests = 1LL << 30}); },
                 {"context_tokens must be <= max_position_embeddings", "context_tokens=1099511627776"});
  model_config c = deepseek_v4_flash;
  c.max_position_embeddings = 1LL << 62;
  expect_invalid([&] { (void)build_own(c, {.context_tokens = 1LL << 40, .requests = 1LL << 30}); },
                 {"memory plan overflows 64 bits", "requests=1073741824"});
  // INT64_MAX requests with a step budget that lets every one hold pages: > 2^64 bytes.
  expect_invalid(
      [] {
        (void)build_own(deepseek_v4_flash, {.requests = std::numeric_limits<std::int64_t>::max(),
                                            .prefill_chunk_tokens = std::int64_t{1} << 40});
      },
      {"overflows"});
  // With vLLM's 8,192-token budget only 8,192 of them hold pages at once: a finite plan.
  EXPECT_EQ(build_own(deepseek_v4_flash, {.requests = std::numeric_limits<std::int64_t>::max()}).total_bytes,
            build_own(deepseek_v4_flash, {.requests = 8192}).total_bytes);
}

TEST(MemoryPlan, OptionErrors) {
  expect_invalid([] { (void)build_own(deepseek_v4_flash, {.requests = 0}); }, {"requests must be >= 1", "requests=0"});
  expect_invalid([] { (void)build_own(deepseek_v4_flash, {.context_tokens = -5}); },
                 {"context_tokens must be >= 1", "context_tokens=-5"});
  expect_invalid([] { (void)build_own(deepseek_v4_flash, {.tokens_per_step = 0}); },
                 {"tokens_per_step must be >= 1", "tokens_per_step=0"});
  expect_invalid([] { (void)build_own(deepseek_v4_flash, {.context_tokens = 4, .tokens_per_step = 5}); },
                 {"tokens_per_step must be <= context_tokens"});
  expect_invalid([] { (void)build_own(deepseek_v4_flash, {.prefill_chunk_tokens = -1}); },
                 {"prefill_chunk_tokens must be >= 1", "prefill_chunk_tokens=-1"});
}

// Mutation audit: ideal bytes that ignore contexts shorter than a window survived every test
// but the fuzzer. Flash, N = 1, L = 100 (below the 128-token SWA and HCA-state windows), by hand:
//   SWA 44 x min(100, 128) x 584 + CSA state 21 x min(100, 8) x 8,192 + CSA KV 21 x floor(100 / 4) x (584 + 132)
//   + HCA state 20 x min(100, 128) x 4,096 + HCA KV 20 x floor(100 / 128) x 584 + indexer state 21 x 8 x 2,048
TEST(MemoryPlan, IdealBytesOfAContextShorterThanTheWindows) {
  const memory_plan p = build_own(deepseek_v4_flash, {.context_tokens = 100});
  EXPECT_EQ(p.ideal_bytes,
            44ULL * 100 * 584 + 21ULL * 8 * 8192 + 21ULL * 25 * 716 + 20ULL * 100 * 4096 + 0 + 21ULL * 8 * 2048);
  EXPECT_EQ(p.ideal_bytes, 12'857'820ULL);
}

}  // namespace
}  // namespace dsv4::cache
