// vLLM as an engine (engines/vllm/engine.hpp): its packed groups and shared block pool, its startup
// figures, the plan in its blocks, and the simulator on its pool. Expected values are hand sums
// (shown), the independent Python oracle tests/oracle/vllm_pool_oracle.py (written from vLLM's
// source apart from the C++; `vllm_oracle_agrees` runs it live), a second independent reading of
// vLLM's DeepSeek V4.1 code, and the numbers of vLLM's own tests and pull requests (cited).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>

#include "dsv4/cache/alloc_sim.hpp"
#include "dsv4/cache/engines/registry.hpp"
#include "dsv4/cache/memory_plan.hpp"
#include "dsv4/cache/parallel.hpp"
#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

using testing::kGiB;

engine_pools vllm_pools(const model_config& m, plan_options o) { return plan_pools(m, plan_cache_specs(m, o), o); }

std::int64_t tensors_of(const engine_group& g, const char* group, int pool) {
  for (int i = 0; i < g.num_members; ++i)
    if (g.members[static_cast<std::size_t>(i)].group == parse_group_id(group) &&
        g.members[static_cast<std::size_t>(i)].pool == pool)
      return g.members[static_cast<std::size_t>(i)].layers.count();
  return 0;
}

TEST(VllmEngine, ApproximateGcdPicksTheLeastPadding) {
  // V4-Flash: balanced buckets SWA 43, 4-token states 21, 8-token states 20; the 2-size state
  // bucket bounds d below at 21. pad(21) = 20 + 0 + 1 = 21, pad(22) = 1 + 1 + 2 = 4,
  // pad(23) = 3 + 2 + 3 = 8, ..., pad(43) = 0 + 22 + 23 = 45: d = 22.
  const std::int64_t flash[] = {43, 21, 20};
  EXPECT_EQ(vllm_approximate_gcd(flash, 3, 21), 22);
  const std::int64_t flash_mtp[] = {44, 21, 20};  // pad(22) = 0 + 1 + 2 = 3
  EXPECT_EQ(vllm_approximate_gcd(flash_mtp, 3, 21), 22);
  // V4-Pro: SWA 61, states 30 and 31, bound 30: pad(30) = 29 + 0 + 29, pad(31) = 1 + 1 + 0 = 2.
  const std::int64_t pro[] = {61, 30, 31};
  EXPECT_EQ(vllm_approximate_gcd(pro, 3, 30), 31);
  // Ties go to the larger d; a bound above every value is returned as is.
  const std::int64_t tie[] = {4, 6};  // d = 2: 0 + 0; d = 6: 2 + 0; d = 3: 2 + 0 ... d = 2 is the only 0
  EXPECT_EQ(vllm_approximate_gcd(tie, 2, 1), 2);
  const std::int64_t same[] = {6, 6};  // every divisor of 6 pads 0: the largest, 6
  EXPECT_EQ(vllm_approximate_gcd(same, 2, 1), 6);
  EXPECT_EQ(vllm_approximate_gcd(same, 2, 9), 9);
  const std::int64_t bad[] = {3, 0};
  expect_invalid([&] { (void)vllm_approximate_gcd(bad, 2, 1); }, {"_approximate_gcd needs positive values", "value=0"});
}

TEST(VllmEngine, FlashGroupsAndBlockByHand) {
  // vLLM pads every V4 page to a multiple of 576 B (fp8_ds_mla layout): SWA 64 x 584 = 37,376 ->
  // 37,440; HCA 2 x 584 = 1,168 -> 1,728; index keys 64 x 132 = 8,448 -> 8,640 (MXFP4 64 x 68 =
  // 4,352 -> 4,608); states 4 x 8,192 or 8 x 4,096 = 32,768 -> 32,832, 4 x 2,048 = 8,192 -> 8,640.
  const engine_pools e = vllm_pools(deepseek_v4_flash, {.cache_mtp = false});
  ASSERT_EQ(e.structure, &vllm_shared_block_pool);
  ASSERT_EQ(e.num_groups, 5);
  // SWA, split by d = 22 into 22 + 21 layers (even layers, then odd ones).
  EXPECT_EQ(e[0].rule, (table_rule{table_kind::sliding_window, 64, 128, 0, false}));
  EXPECT_EQ(e[0].num_tensors(), 22);
  EXPECT_EQ(e[1].num_tensors(), 21);
  EXPECT_TRUE(e[0].members[0].layers.test(0) && e[0].members[0].layers.test(2) && !e[0].members[0].layers.test(1));
  EXPECT_EQ(e[0].bytes(), 22 * 37'440);
  // Full history: 21 CSA KV + 20 HCA KV + 21 index keys, 256-token blocks, one group (21/20/21 unbalanced).
  EXPECT_EQ(e[2].rule.kind, table_kind::full_history);
  EXPECT_EQ(e[2].rule.page_tokens, 256);
  EXPECT_EQ(tensors_of(e[2], "v4.c4a.compressed_kv", 0), 21);
  EXPECT_EQ(tensors_of(e[2], "v4.c128a.compressed_kv", 0), 20);
  EXPECT_EQ(tensors_of(e[2], "v4.c4a.compressed_kv", 1), 21);
  EXPECT_EQ(e[2].bytes(), 21 * 37'440 + 20 * 1'728 + 21 * 8'640);  // 1,002,240
  // The 4-token states of the CSA compressor and the indexer (window 8), the 8-token HCA states (window 128).
  EXPECT_EQ(e[3].rule, (table_rule{table_kind::sliding_window, 4, 8, 0, false}));
  EXPECT_EQ(e[3].bytes(), 21 * 32'832 + 21 * 8'640);  // 870,912
  EXPECT_EQ(e[4].rule, (table_rule{table_kind::sliding_window, 8, 128, 0, false}));
  EXPECT_EQ(e[4].bytes(), 20 * 32'832);  // 656,640
  EXPECT_EQ(e.bytes_per_block, 1'002'240);
  EXPECT_EQ(vllm_pools(deepseek_v4_flash, {.indexer = indexer_format::mxfp4}).bytes_per_block,
            21 * 37'440 + 20 * 1'728 + 21 * 4'608);  // 917,568
  // With the MTP layer (speculative decoding): its SWA cache joins the bucket, 22 + 22.
  const engine_pools mtp = vllm_pools(deepseek_v4_flash, {});
  EXPECT_EQ(mtp[1].num_tensors(), 22);
  EXPECT_EQ(mtp.bytes_per_block, 1'002'240);
}

TEST(VllmEngine, ProBlockMatchesVllmPr48993) {
  // vLLM PR #48993 (merged 2026-07-17) measured V4-Pro with MXFP4 index keys on FlashMLA: "block
  // stride ... 1,315,008 bytes" = 30 x 37,440 + 31 x 1,728 + 30 x 4,608.
  EXPECT_EQ(vllm_pools(deepseek_v4_pro, {.indexer = indexer_format::mxfp4}).bytes_per_block, 1'315'008);
  const engine_pools fp8 = vllm_pools(deepseek_v4_pro, {.cache_mtp = false});
  EXPECT_EQ(fp8.bytes_per_block, 30 * 37'440 + 31 * 1'728 + 30 * 8'640);  // 1,435,968
  EXPECT_EQ(fp8[0].num_tensors(), 31);                                    // SWA 61 = 31 + 30 (d = 31)
  EXPECT_EQ(fp8[1].num_tensors(), 30);
}

TEST(VllmEngine, V41GroupsSm100AndSm90) {
  // DeepSeek-V4.1-Flash under vLLM (vllm/models/deepseek_v41/attention.py; a second reading of
  // vLLM's code gives the same table): SWA 32-token blocks; the owners' global KV and index keys
  // in cache_config.block_size blocks (128 tokens on SM100 with the V4.1 records, 64 on SM90 with
  // V4 rows); the ratio-2 owners' ring one block of 8 rows x 4,096 B each (CircularBufferSpec).
  // SM100, v41 formats (528-B SWA rows, 288-B global rows, 68-B keys, 512-B alignment):
  //   SWA 32 x 528 = 16,896; r2: 64 x 288 = 18,432 + 64 x 68 = 4,352 -> 4,608; r1: 128 x 288 =
  //   36,864 + 128 x 68 = 8,704; main group 3 x 23,040 + 45,568 = 114,688 = bytes_per_block;
  //   43 SWA caches capped at 114,688 // 16,896 = 6 a group: 8 groups (3 x 6 + 5 x 5).
  const engine_pools sm100 = vllm_pools(deepseek_v4_1_flash, {});
  EXPECT_EQ(sm100.bytes_per_block, 114'688);
  EXPECT_EQ(sm100.num_groups, 8 + 1 + 1);
  EXPECT_EQ(sm100[0].bytes(), 6 * 16'896);
  EXPECT_EQ(sm100[8].rule, (table_rule{table_kind::full_history, 128, 0, 0, false}));
  EXPECT_EQ(sm100[9].rule.kind, table_kind::request_ring);
  EXPECT_EQ(sm100[9].bytes(), 3 * 8 * 4'096);
  // SM90, v4 formats (584-B rows, 132-B keys, 576-B alignment): SWA 32 x 584 = 18,688 -> 19,008;
  //   r2: 32 x 584 -> 19,008 + 32 x 132 = 4,224 -> 4,608; r1: 64 x 584 -> 37,440 + 8,448 -> 8,640;
  //   main 3 x 23,616 + 46,080 = 116,928; SWA 116,928 // 19,008 = 6 a group: 40 -> 7 groups.
  const engine_pools sm90 = vllm_pools(deepseek_v4_1_flash, {.formats = {.set = format_set::v4}, .cache_mtp = false});
  EXPECT_EQ(sm90.bytes_per_block, 116'928);
  EXPECT_EQ(sm90.num_groups, 7 + 1 + 1);
  // One request of 1M tokens: 1,048,576 / 64 = 16,384 main blocks, 7 x (ceil(127 + 8,192, 32) + 1
  // = 261) SWA blocks, 1 ring block: 18,212 (async off); 7 x 517 + 16,385 = 20,004 (async on).
  EXPECT_EQ(vllm_request_blocks(sm90, 1'048'576, 8'192), 18'212);
  EXPECT_EQ(vllm_request_blocks(sm90, 1'048'576, 16'384), 20'004);
}

TEST(VllmEngine, V32IsOneGroupAndCostsWhatOwnPoolsCost) {
  // V3.2: latent rows (656 B) and indexer keys (132 B) of all 62 layers share one 64-token table,
  // no alignment (a DeepSeek V4 field): one group, and the plan equals the own-pools plan (one
  // null block = every pool's null page).
  const engine_pools e = vllm_pools(deepseek_v3_2, {});
  ASSERT_EQ(e.num_groups, 1);
  EXPECT_EQ(e.bytes_per_block, 62 * (64 * 656 + 64 * 132));
  const plan_options o{.context_tokens = 65'536, .requests = 3};
  EXPECT_EQ(build_memory_plan(deepseek_v3_2, o).total_bytes, testing::build_own(deepseek_v3_2, o).total_bytes);
}

TEST(VllmEngine, StartupChargeByHand) {
  // Flash, L = 1,048,576, B = 8,192: full history cdiv(L, 256) = 4,096; SWA cdiv(127 + 8,192, 64)
  // + 1 = 131 (x 2 groups); 4-token states cdiv(7 + 8,192, 4) + 1 = 2,051; 8-token states
  // cdiv(127 + 8,192, 8) + 1 = 1,041: 7,450 blocks. Async scheduling (2 x 8,192 in flight): 4,096
  // + 2 x 259 + 4,099 + 2,065 = 10,778 (vLLM PR #52495 quotes 4,099 and 2,065).
  const engine_pools e = vllm_pools(deepseek_v4_flash, {});
  EXPECT_EQ(vllm_request_blocks(e, 1'048'576, 8'192), 7'450);
  EXPECT_EQ(vllm_request_blocks(e, 1'048'576, vllm_in_flight_tokens(8'192, true)), 10'778);
  // A context shorter than the window: min(W - 1 + M, L) = L.
  EXPECT_EQ(vllm_charge_blocks(e[0].rule, 100, 8'192), 2 + 1);
  // Found by plan_fuzz: M just below L = INT64_MAX made W - 1 + M overflow. By hand: the window
  // (128 tokens) reaches past L, so tokens = L = 2^63 - 1 and cdiv(2^63 - 1, 256) + 1 = 2^55 + 1.
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const table_rule swa128{table_kind::sliding_window, 256, 128, 0, false};
  EXPECT_EQ(vllm_charge_blocks(swa128, kMax, kMax - 6), (std::int64_t{1} << 55) + 1);
  // M = L - 1,000: W - 1 + M = 2^63 - 874 = 256 (2^55 - 4) + 150 < L, so cdiv = 2^55 - 3, + 1.
  EXPECT_EQ(vllm_charge_blocks(swa128, kMax, kMax - 1'000), (std::int64_t{1} << 55) - 2);
}

TEST(VllmEngine, VllmOwnTestCasesOfTheAdmissionCapAndConcurrency) {
  // tests/v1/core/test_kv_cache_utils.py (vllm-project/vllm @ 002f10e0):
  // test_get_max_concurrency_for_kv_cache_config, max_model_len 16,384, max_num_batched_tokens 1,024:
  // SlidingWindowSpec(block 16, window 1,024) charges cdiv(1,023 + 1,024, 16) + 1 = 129 blocks;
  // test_swa_admission_cap_accounts_for_overlapping_batches: 193 with 2 concurrent batches.
  const table_rule swa{table_kind::sliding_window, 16, 1'024, 0, false};
  EXPECT_EQ(vllm_charge_blocks(swa, 16'384, 1'024), 129);
  EXPECT_EQ(vllm_charge_blocks(swa, 16'384, vllm_in_flight_tokens(1'024, true)), 193);
  // Full attention (block 16) charges cdiv(16,384, 16) = 1,024; num_blocks int(1,024 x 1.5) gives
  // max_concurrency 1.5; the hybrid (full + SWA groups) with (1,024 + 129) x 3 blocks gives 3, and
  // get_kv_cache_capacity's tokens are 3 x 16,384 = 49,152.
  const table_rule full{table_kind::full_history, 16, 0, 0, false};
  engine_pools one;
  one.structure = &vllm_shared_block_pool;
  one.num_groups = 1;
  one.groups[0].rule = full;
  one.bytes_per_block = 1;
  const std::int64_t w1[] = {1};
  const vllm_startup_report a = vllm_startup(one, w1, 16'384, 1'024, false, 1, std::uint64_t{1'536} + 1);
  EXPECT_TRUE(a.starts);
  EXPECT_EQ(a.num_blocks, 1'537);  // num_blocks includes the null block: 1,537 / 1,024
  engine_pools hybrid = one;
  hybrid.num_groups = 2;
  hybrid.groups[1].rule = swa;
  const vllm_startup_report b = vllm_startup(hybrid, w1, 16'384, 1'024, false, 1, std::uint64_t{1'153} * 3);
  EXPECT_EQ(b.request_blocks, 1'024 + 129);
  EXPECT_DOUBLE_EQ(b.max_concurrency, 3.0);
  EXPECT_EQ(b.reported_tokens, 49'152);
  EXPECT_EQ(b.log_line, "GPU KV cache size: 49,152 tokens, Maximum concurrency for 16,384 tokens per request: 3.00x");
}

// The Python oracle's figures (python3 tests/oracle/vllm_pool_oracle.py --config ... --kv-gib G
// --max-model-len 1048576 --max-num-batched-tokens 8192 [--async] --indexer I).
struct oracle_row {
  const model_config* model;
  indexer_format indexer;
  bool async_scheduling;
  std::uint64_t gib;
  std::int64_t bytes_per_block, num_blocks, request_blocks;
  std::uint64_t min_bytes_to_start;
  const char* log_line;
};
const oracle_row kOracle[] = {
    {&deepseek_v4_flash, indexer_format::fp8, false, 64, 1'002'240, 68'565, 7'450, 7'467'690'240,
     "GPU KV cache size: 9,650,417 tokens, Maximum concurrency for 1,048,576 tokens per request: 9.20x"},
    {&deepseek_v4_flash, indexer_format::fp8, true, 64, 1'002'240, 68'565, 10'778, 10'803'144'960,
     "GPU KV cache size: 6,670,589 tokens, Maximum concurrency for 1,048,576 tokens per request: 6.36x"},
    {&deepseek_v4_flash, indexer_format::mxfp4, false, 64, 917'568, 74'893, 7'450, 6'836'799'168,
     "GPU KV cache size: 10,541,074 tokens, Maximum concurrency for 1,048,576 tokens per request: 10.05x"},
    {&deepseek_v4_flash, indexer_format::mxfp4, true, 16, 917'568, 18'723, 10'778, 9'890'465'472,
     "GPU KV cache size: 1,821,533 tokens, Maximum concurrency for 1,048,576 tokens per request: 1.74x"},
    {&deepseek_v4_flash, indexer_format::fp8, false, 16, 1'002'240, 17'141, 7'450, 7'467'690'240,
     "GPU KV cache size: 2,412,569 tokens, Maximum concurrency for 1,048,576 tokens per request: 2.30x"},
    {&deepseek_v4_pro, indexer_format::fp8, false, 64, 1'435'968, 47'855, 7'450, 10'699'397'568,
     "GPU KV cache size: 6,735,517 tokens, Maximum concurrency for 1,048,576 tokens per request: 6.42x"},
    {&deepseek_v4_pro, indexer_format::fp8, true, 64, 1'435'968, 47'855, 10'778, 15'478'299'072,
     "GPU KV cache size: 4,655,743 tokens, Maximum concurrency for 1,048,576 tokens per request: 4.44x"},
    {&deepseek_v4_pro, indexer_format::mxfp4, true, 64, 1'315'008, 52'257, 10'778, 14'174'471'232,
     "GPU KV cache size: 5,084,007 tokens, Maximum concurrency for 1,048,576 tokens per request: 4.85x"},
    {&deepseek_v4_pro, indexer_format::mxfp4, false, 16, 1'315'008, 13'064, 7'450, 9'798'124'608,
     "GPU KV cache size: 1,838,737 tokens, Maximum concurrency for 1,048,576 tokens per request: 1.75x"},
    {&deepseek_v4_pro, indexer_format::fp8, true, 16, 1'435'968, 11'963, 10'778, 15'478'299'072,
     "GPU KV cache size: 1,163,862 tokens, Maximum concurrency for 1,048,576 tokens per request: 1.11x"},
};

TEST(VllmEngine, StartupReportAgreesWithThePythonOracle) {
  for (const oracle_row& row : kOracle) {
    SCOPED_TRACE(std::string(row.model->name.view()) + (row.async_scheduling ? " async " : " sync ") +
                 std::to_string(row.gib) + " GiB");
    const engine_pools e = vllm_pools(*row.model, {.indexer = row.indexer, .cache_mtp = false});
    const std::int64_t w[] = {e.bytes_per_block};
    const vllm_startup_report r = vllm_startup(e, w, 1'048'576, 8'192, row.async_scheduling, 1, row.gib * kGiB);
    EXPECT_EQ(r.bytes_per_block, row.bytes_per_block);
    EXPECT_EQ(r.num_blocks, row.num_blocks);
    EXPECT_EQ(r.request_blocks, row.request_blocks);
    EXPECT_EQ(r.min_bytes_to_start, row.min_bytes_to_start);
    EXPECT_TRUE(r.starts);
    EXPECT_EQ(r.log_line, row.log_line);
    // The 1 x 1M plan is at least what vLLM needs to start (the issue's done-when): without async
    // scheduling exactly that (one block less and it refuses); with it the plan's own blocks are more.
    plan_options o{.indexer = row.indexer, .cache_mtp = false};
    o.policy.overlap = row.async_scheduling;
    const memory_plan p = build_memory_plan(*row.model, o);
    EXPECT_GE(p.total_bytes, row.min_bytes_to_start);
    EXPECT_TRUE(vllm_startup(e, w, 1'048'576, 8'192, row.async_scheduling, 1, p.total_bytes).starts);
    if (!row.async_scheduling) {
      EXPECT_EQ(p.total_bytes, row.min_bytes_to_start);
      EXPECT_FALSE(vllm_startup(e, w, 1'048'576, 8'192, row.async_scheduling, 1, p.total_bytes - 1).starts);
    }
  }
}

TEST(VllmEngine, RefusalsInVllmsOwnText) {
  const engine_pools e = vllm_pools(deepseek_v4_flash, {.cache_mtp = false});
  const std::int64_t w[] = {e.bytes_per_block};
  // 1 GiB: 6.95 GiB needed (7,450 x 1,002,240 B), 1.0 GiB available after the null block; vLLM's
  // binary search estimates 2,592 tokens (the oracle gives the same text).
  const vllm_startup_report r = vllm_startup(e, w, 1'048'576, 8'192, false, 1, kGiB);
  EXPECT_FALSE(r.starts);
  EXPECT_EQ(r.estimated_max_model_len, 2'592);
  EXPECT_EQ(r.refusal,
            "To serve at least one request with the model's max seq len (1048576), (6.95 GiB KV cache is needed, "
            "which is larger than the available KV cache memory (1.0 GiB). Based on the available memory, the "
            "estimated maximum model length is 2592. Try increasing `gpu_memory_utilization` (which also controls "
            "CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the engine. See "
            "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.");
  const vllm_startup_report none = vllm_startup(e, w, 1'048'576, 8'192, false, 1, std::uint64_t{1'002'240});
  EXPECT_FALSE(none.starts);
  EXPECT_EQ(none.refusal.rfind("No available memory for the cache blocks.", 0), 0U);
  EXPECT_EQ(vllm_format_gib(std::uint64_t{6} * kGiB + kGiB / 8), "6.12");  // round half to even, as Python's round
  EXPECT_EQ(vllm_format_gib(std::uint64_t{12} * kGiB + kGiB / 2), "12.5");
  EXPECT_EQ(thousands(1'048'576), "1,048,576");
  EXPECT_EQ(thousands(-1'000), "-1,000");
}

TEST(VllmEngine, PipelineStagesHaveTheirOwnBlock) {
  // V4-Pro, pp = 2 (layers 0-30 | 31-60 + MTP 61), FP8 keys; every stage projects the model's groups:
  // stage 0 full history 15 CSA x 37,440 + 16 HCA x 1,728 + 15 x 8,640 = 718,848 (its widest);
  // stage 1 15 x 37,440 + 15 x 1,728 + 15 x 8,640 = 717,120. Every stage holds the scheduler's one
  // count of blocks, each of its own width.
  parallel_config p;
  p.pp = 2;
  const plan_options o{.context_tokens = 131'072, .requests = 2};
  const rank_plan_result s0 = rank_plan(deepseek_v4_pro, o, p, 0);
  const rank_plan_result s1 = rank_plan(deepseek_v4_pro, o, p, 1);
  EXPECT_EQ(s0.plan.pools.bytes_per_block, 718'848);
  EXPECT_EQ(s1.plan.pools.bytes_per_block, 717'120);
  EXPECT_EQ(s0.plan.num_blocks, s1.plan.num_blocks);
  EXPECT_EQ(s0.plan.num_blocks, build_memory_plan(deepseek_v4_pro, o).num_blocks);
  EXPECT_EQ(s0.plan.total_bytes, static_cast<std::uint64_t>(s0.plan.num_blocks) * 718'848U);
  // vLLM's startup: the smallest num_blocks over the workers (K get_kv_cache_configs).
  const engine_pools whole = vllm_pools(deepseek_v4_pro, o);
  const std::int64_t w[] = {718'848, 717'120};
  const vllm_startup_report r = vllm_startup(whole, w, 131'072, 8'192, false, 1, std::uint64_t{64} * kGiB);
  EXPECT_EQ(r.num_blocks, static_cast<std::int64_t>(std::uint64_t{64} * kGiB / 718'848U));
}

TEST(VllmEngine, DecodeContextParallelism) {
  // vLLM's sliding-window specs assert decode_context_parallel_size == 1: DeepSeek V4 and V4.1 with
  // DCP are refused under its pool; own pools plan tokenspeed's rule; V3.2 (no sliding table) runs.
  expect_invalid([] { (void)build_memory_plan(deepseek_v4_flash, {.dcp = 2}); },
                 {"vLLM rejects decode context parallelism for DeepSeek V4", "dcp=2"});
  EXPECT_NO_THROW((void)testing::build_own(deepseek_v4_flash, {.dcp = 2}));
  // V3.2 with DCP 4: each rank holds ceil(cdiv(L, 64) / 4) blocks of a request.
  const memory_plan v = build_memory_plan(deepseek_v3_2, {.context_tokens = 65'536, .dcp = 4});
  EXPECT_EQ(v.engine_groups[0].pages_per_request, 1'024 / 4);
  EXPECT_EQ(v.engine_groups[0].charge_blocks, 65'536 / 4 / 64);
}

TEST(VllmEngine, FormatsVllmDoesNotStoreAreRefused) {
  plan_options o;
  o.formats.kv = format_index("v4.fp8_ds_mla.footer");
  expect_invalid([&] { (void)build_memory_plan(deepseek_v4_flash, o); }, {"fp8_ds_mla layout"});
  o.pools = pools_choice::own;
  EXPECT_NO_THROW((void)build_memory_plan(deepseek_v4_flash, o));
}

TEST(VllmEngine, PlanCoversTheSimulatedPoolAndTheAdmissionGate) {
  // V4.1-Flash, 3 requests of 1,000 tokens, B = 256: vLLM's admission gate asks more than the
  // blocks ever in use (a new request must find its whole prompt's blocks free: 267 blocks at the
  // third admission against a peak of 211 in use); the plan holds both.
  const plan_options o{.context_tokens = 1'000, .requests = 3, .prefill_chunk_tokens = 256};
  const memory_plan p = build_memory_plan(deepseek_v4_1_flash, o);
  const sim_result r = simulate_worst_case(p.pools, vllm_policy, 3, 1'000, 1, 256);
  EXPECT_GT(r.peak_admission_blocks, r.peak_blocks);
  EXPECT_GE(p.num_blocks - 1, r.peak_admission_blocks);
  EXPECT_GE(p.admission_blocks, p.planned_blocks);
  // With exactly those blocks every request runs at once; with one block less vLLM holds one back.
  const sim_capacity fits{p.num_blocks - 1, 0};
  EXPECT_TRUE(simulated_fit(p.pools, vllm_policy, 3, 1'000, 1, 256, fits));
  const sim_capacity short_by_one{r.peak_admission_blocks - 1, 0};
  EXPECT_FALSE(simulated_fit(p.pools, vllm_policy, 3, 1'000, 1, 256, short_by_one));
}

TEST(VllmEngine, FastForwardKeepsThePoolPeaks) {
  for (const model_config* m : {&deepseek_v4_flash, &deepseek_v4_1_flash}) {
    const plan_options o{.context_tokens = 20'000, .requests = 4, .prefill_chunk_tokens = 2'048};
    const engine_pools e = build_memory_plan(*m, o).pools;
    for (const std::int64_t prompt : {1, 255, 4'097, 19'999}) {
      const sim_workload w{.requests = 4,
                           .context_tokens = 20'000,
                           .tokens_per_step = 2,
                           .step_budget_tokens = 2'048,
                           .prompt_tokens = prompt,
                           .accepted_tokens = 2,
                           .arrivals = arrival_pattern::staggered,
                           .arrival_gap_steps = 3};
      const allocation_policy v = concrete_variants(vllm_policy).items[0];
      const sim_result fast = simulate(e, v, w);
      const sim_result slow = simulate(e, v, w, {.fast_forward = false});
      EXPECT_LT(fast.replayed_steps, slow.replayed_steps);
      EXPECT_EQ(fast.peak_blocks, slow.peak_blocks) << prompt;
      EXPECT_EQ(fast.peak_admission_blocks, slow.peak_admission_blocks) << prompt;
      EXPECT_EQ(fast.peak_bytes, slow.peak_bytes) << prompt;
      EXPECT_EQ(fast.peak_pages, slow.peak_pages) << prompt;
    }
  }
}

TEST(VllmEngine, WhatReallyFits) {
  // V4-Flash, 64 GiB (68,565 blocks), 1M-token requests: the plan's answer fits on the simulated
  // pool, one more does not (the search's own definition), and vLLM's log figure (9.20x) is below it.
  const plan_options o{.cache_mtp = false};
  const memory_plan p = build_memory_plan(deepseek_v4_flash, o);
  const sim_capacity cap{68'565 - 1, 0};
  sim_search search;
  search.max_running = 1'024;
  const std::int64_t n = max_requests_simulated(p.pools, vllm_policy, 1'048'576, 1, 8'192, cap, search, 1);
  EXPECT_GE(n, max_requests_for_budget(deepseek_v4_flash, o, 64 * kGiB).max_requests);
  EXPECT_TRUE(simulated_fit(p.pools, vllm_policy, n, 1'048'576, 1, 8'192, cap, search));
  EXPECT_FALSE(simulated_fit(p.pools, vllm_policy, n + 1, 1'048'576, 1, 8'192, cap, search));
  EXPECT_GT(n, 9);
  // max_num_seqs caps it.
  search.max_running = 4;
  EXPECT_EQ(max_requests_simulated(p.pools, vllm_policy, 1'048'576, 1, 8'192, cap, search, 1), 4);
}

TEST(VllmEngine, RegistryNamesAndPresets) {
  ASSERT_NE(find_engine("vllm"), nullptr);
  EXPECT_EQ(find_engine("vllm"), find_engine("vllm@2026.11"));
  EXPECT_EQ(find_engine("vllm")->structure, &vllm_shared_block_pool);
  EXPECT_EQ(find_engine("tokenspeed")->structure, &tokenspeed_parent_arena);
  EXPECT_EQ(find_engine("vllm@"), nullptr);
  EXPECT_EQ(find_engine("vllm@2020.01"), nullptr);
  ASSERT_NE(find_engine("sglang"), nullptr);
  EXPECT_EQ(find_engine("sglang")->structure, &sglang_ratio_pools);
  EXPECT_EQ(find_engine("sglang")->defaults.max_running, 256);
  EXPECT_EQ(find_engine("sglang@2026.11"), nullptr);               // no such version
  EXPECT_EQ(find_engine("sglang"), find_engine("sglang@0.5.23"));  // the released version is the default
  ASSERT_NE(find_engine("sglang@cce0a124"), nullptr);
  // vLLM 0.33.0: the rules of vllm@2026.11 under its release's name (issue 38: 336 of 336 figures equal).
  ASSERT_NE(find_engine("vllm@0.33.0"), nullptr);
  {
    const vllm_pool_rules& a = find_engine("vllm@0.33.0")->vllm;
    const vllm_pool_rules& b = find_engine("vllm@2026.11")->vllm;
    EXPECT_EQ(a.v4_page_alignment, b.v4_page_alignment);
    EXPECT_EQ(a.v41_swa_block_tokens, b.v41_swa_block_tokens);
    EXPECT_EQ(a.v41_block_tokens_records, b.v41_block_tokens_records);
    EXPECT_EQ(a.v41_block_tokens_v4_rows, b.v41_block_tokens_v4_rows);
    EXPECT_EQ(a.v41_record_alignment, b.v41_record_alignment);
    EXPECT_EQ(a.cap_state_buckets, b.cap_state_buckets);
    EXPECT_EQ(a.async_scheduling_default, b.async_scheduling_default);
  }
  EXPECT_EQ(find_engine("vllm@0.33.0")->structure, &vllm_shared_block_pool);
  // tokenspeed: the released 0.1.1 is the default; the pin answers by name.
  EXPECT_EQ(find_engine("tokenspeed"), find_engine("tokenspeed@0.1.1"));
  EXPECT_EQ(find_engine("tokenspeed-default"), find_engine("tokenspeed-default@0.1.1"));
  ASSERT_NE(find_engine("tokenspeed@f4d8ec6e"), nullptr);
  EXPECT_EQ(find_engine("tokenspeed@f4d8ec6e")->tokenspeed, tokenspeed_rules_f4d8ec6e);
  EXPECT_EQ(find_engine("tokenspeed-default@f4d8ec6e")->tokenspeed, tokenspeed_rules_f4d8ec6e);
  EXPECT_EQ(find_engine("tokenspeed")->tokenspeed, tokenspeed_rules_0_1_1);
  EXPECT_EQ(engine_names(),
            "vllm, vllm@2026.11, vllm@0.33.0, tokenspeed, tokenspeed@0.1.1, tokenspeed@f4d8ec6e, tokenspeed-default, "
            "tokenspeed-default@0.1.1, tokenspeed-default@f4d8ec6e, sglang, sglang@0.5.23, sglang@cce0a124, trtllm, "
            "trtllm@00043967");
  EXPECT_EQ(engine_label(*find_engine("vllm")), "vllm@2026.11");
}

}  // namespace
}  // namespace dsv4::cache
