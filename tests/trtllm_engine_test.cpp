// TensorRT-LLM as an engine (engines/trtllm/): DeepseekV4CacheManager's pools on KVCacheManagerV2,
// the StorageManager's sizing, the DeepSeek-V4 max_tokens <-> quota rule, the startup lines and
// refusals. Expected values are hand sums (shown) and the independent Python oracle
// tests/oracle/trtllm_oracle.py (written from TensorRT-LLM's source apart from the C++); each
// oracle figure names the command that prints it, run from the repository root as
//   python3 tests/oracle/trtllm_oracle.py CONFIG --sm 90 --kv-dtype fp8_ds_mla ARGS
// with F = tests/data/deepseek-v4-flash.config.json, P = tests/data/deepseek-v4-pro.config.json.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "dsv4/cache/engines/registry.hpp"
#include "dsv4/cache/engines/trtllm/policy.hpp"
#include "dsv4/cache/engines/trtllm/pools.hpp"
#include "dsv4/cache/engines/trtllm/sizing.hpp"
#include "dsv4/cache/engines/trtllm/startup.hpp"
#include "dsv4/tools/engine_report.hpp"
#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
using testing::kGiB;

constexpr trtllm_options opts(std::int64_t max_seq_len, std::int64_t max_batch_size) {
  trtllm_options o;
  o.max_seq_len = max_seq_len;
  o.max_batch_size = max_batch_size;
  return o;
}

// Usable in constant expressions: the layout and a whole sizing.
static_assert(trtllm_build_layout(deepseek_v4_flash).num_pools() == 7);
static_assert(trtllm_build_layout(deepseek_v4_pro).num_groups == 3);
static_assert(trtllm_granularity(16 * kGiB) == 32 * kMiB);
static_assert(trtllm_size(trtllm_build_layout(deepseek_v4_flash), 60 * kGiB, opts(131072, 64)).slots[0] == 120042);
static_assert(trtllm_min_quota_for(trtllm_build_layout(deepseek_v4_flash), opts(131072, 64), 64, 131072) ==
              35133587456U);

TEST(TrtllmEngine, EntryBytesByHand) {
  using T = trtllm_attention_type;
  const auto fp8 = trtllm_kv_dtype::fp8_ds_mla;
  const auto i8 = trtllm_indexer_dtype::fp8;
  // fp8_ds_mla: 448 e4m3 + 64 x 2 bf16 RoPE + 7 ue8m0 + 1 pad = 584.
  EXPECT_EQ(trtllm_entry_bytes(T::swa, 1, 512, 128, fp8, i8), 584);
  EXPECT_EQ(trtllm_entry_bytes(T::compress, 128, 512, 128, fp8, i8), 584);
  EXPECT_EQ(trtllm_entry_bytes(T::swa, 4, 512, 128, trtllm_kv_dtype::bf16, i8), 1024);  // 512 x 2
  EXPECT_EQ(trtllm_entry_bytes(T::indexer_compress, 4, 512, 128, fp8, i8), 132);        // 128 + 128/128 x 4
  EXPECT_EQ(trtllm_entry_bytes(T::indexer_compress, 4, 512, 128, fp8, trtllm_indexer_dtype::fp4), 68);  // 64 + 4
  EXPECT_EQ(trtllm_entry_bytes(T::compressor_kv, 4, 512, 128, fp8, i8), 4096);                          // 2 x 512 x 4
  EXPECT_EQ(trtllm_entry_bytes(T::compressor_score, 128, 512, 128, fp8, i8), 2048);                     // 1 x 512 x 4
  EXPECT_EQ(trtllm_entry_bytes(T::indexer_compressor_kv, 4, 512, 128, fp8, i8), 1024);                  // 2 x 128 x 4
  EXPECT_EQ(trtllm_entries_per_block(T::compress, 4, 128), 32);
  EXPECT_EQ(trtllm_entries_per_block(T::compress, 128, 128), 1);
  EXPECT_EQ(trtllm_entries_per_block(T::compressor_kv, 4, 128), 128);
  EXPECT_EQ(trtllm_window_tokens(T::compressor_kv, 4, 128), 8);
  EXPECT_EQ(trtllm_window_tokens(T::compressor_kv, 128, 128), 128);
  EXPECT_EQ(trtllm_window_tokens(T::compress, 4, 128), 0);
  expect_invalid([] { (void)trtllm_entry_bytes(T::indexer_compress, 128, 512, 128, fp8, i8); },
                 {"does not have attention type", "compress_ratio=128"});
  expect_invalid([] { (void)trtllm_entry_bytes(T::swa, 1, 576, 128, fp8, i8); },
                 {"footer-scale KV layout requires head_dim 512", "head_dim=576"});
  expect_invalid([] { (void)trtllm_entry_bytes(T::indexer_compress, 4, 512, 64, fp8, trtllm_indexer_dtype::fp4); },
                 {"FP4 indexer K cache requires index_head_dim=128", "index_head_dim=64"});
}

TEST(TrtllmEngine, FlashPoolGroupsByHand) {
  // V4-Flash: 43 layers, 2 of ratio 1 (checkpoint 0), 21 of ratio 4, 20 of ratio 128.
  // Oracle: F --budget-bytes 64424509440 --max-batch-size 64 --max-seq-len 131072 (pool group lines).
  const trtllm_layout L = trtllm_build_layout(deepseek_v4_flash);
  ASSERT_EQ(L.num_groups, 3);
  EXPECT_EQ(L.num_pools(), 7);
  EXPECT_EQ(L.num_layers, 43);
  EXPECT_EQ(L.num_manager_layers, 2 + 3 * 21 + 2 * 20);  // 105
  // C++ order: slot-size lists ascending, [392448, ...] < [10485760, ...] < [22020096, ...].
  EXPECT_EQ(L[0].window_tokens, 0);
  EXPECT_EQ(L[1].window_tokens, 128);
  EXPECT_EQ(L[2].window_tokens, 8);
  // Life cycles by first use: layer 0 (ratio 1) SWA -> 128 is 0; then none 1, 8 is 2.
  EXPECT_EQ(L[0].life_cycle_id, 1);
  EXPECT_EQ(L[1].life_cycle_id, 0);
  EXPECT_EQ(L[2].life_cycle_id, 2);
  ASSERT_EQ(L[0].num_pools, 3);
  EXPECT_EQ(L[0][0].slot_bytes(), 21 * 32 * 584);  // COMPRESS r4: 21 x 18688 = 392448
  EXPECT_EQ(L[0][1].slot_bytes(), 21 * 32 * 132);  // INDEXER_COMPRESS: 21 x 4224 = 88704
  EXPECT_EQ(L[0][2].slot_bytes(), 20 * 584);       // COMPRESS r128: 20 x 584 = 11680
  EXPECT_EQ(L[0].slot_bytes(), 492832);
  ASSERT_EQ(L[1].num_pools, 2);
  EXPECT_EQ(L[1][0].buffer_bytes, 262144);  // COMPRESSOR_KV / _SCORE r128: 128 x 2048
  EXPECT_EQ(L[1][0].num_buffers, 40);
  EXPECT_TRUE(L[1][0].holds(trtllm_attention_type::compressor_kv) &&
              L[1][0].holds(trtllm_attention_type::compressor_score));
  EXPECT_EQ(L[1][1].slot_bytes(), 43 * 128 * 584);  // SWA: 43 x 74752 = 3214336
  EXPECT_EQ(L[1].slot_bytes(), 13700096);
  ASSERT_EQ(L[2].num_pools, 2);
  EXPECT_EQ(L[2][0].slot_bytes(), 42 * 524288);  // COMPRESSOR KV+SCORE r4: 42 x 128 x 4096
  EXPECT_EQ(L[2][1].slot_bytes(), 42 * 131072);  // INDEXER COMPRESSOR KV+SCORE: 42 x 128 x 1024
  EXPECT_EQ(L[2].slot_bytes(), 27525120);
  // slotUtilFracMax: a ratio-128 manager layer holds 2 of the 40 state buffers; a ratio-4 one 2 of 42.
  EXPECT_EQ(L[1].util_num * 40, 2 * L[1].util_den);
  EXPECT_EQ(L[2].util_num * 42, 2 * L[2].util_den);
  // DeepSeek-V4 per-token costs (oracle "cache_size_per_token: (3839, 2638413824)" at B = 64):
  // non-sliding 21 x (584/4 + 132/4) + 20 x (584/128) = 21 x 179 + 20 x 4 = 3839;
  // per request 43 x 128 x 584 + 21 x 2 x 128 x (4096 + 1024) + 20 x 2 x 128 x 2048 = 41225216 = 2638413824 / 64.
  EXPECT_EQ(L.costs.non_sliding_per_token, 3839);
  EXPECT_EQ(L.costs.generation_swa_per_request, 41225216);
  // Context, scratch on: one of each (type, ratio): 3 x 584 + 2 x 4096 + 2 x 1024 + 2 x 2048 = 16088.
  EXPECT_EQ(L.costs.context_swa_per_token, 16088);
  // Scratch off: every layer: 43 x 584 + 21 x (8192 + 2048) + 20 x 4096 = 322072.
  EXPECT_EQ(L.costs.context_swa_per_token_no_scratch, 322072);
}

TEST(TrtllmEngine, ProPoolGroupsByHand) {
  // V4-Pro: 61 layers, 30 of ratio 4, 31 of ratio 128, none of ratio 1.
  const trtllm_layout L = trtllm_build_layout(deepseek_v4_pro);
  ASSERT_EQ(L.num_groups, 3);
  EXPECT_EQ(L.num_pools(), 7);
  EXPECT_EQ(L.num_manager_layers, 3 * 30 + 2 * 31);
  EXPECT_EQ(L[0][0].slot_bytes(), 30 * 18688);
  EXPECT_EQ(L[0][1].slot_bytes(), 30 * 4224);
  EXPECT_EQ(L[0][2].slot_bytes(), 31 * 584);
  EXPECT_EQ(L[1][0].slot_bytes(), 62 * 262144);
  EXPECT_EQ(L[1][1].slot_bytes(), 61 * 74752);
  EXPECT_EQ(L[2][0].slot_bytes(), 60 * 524288);
  EXPECT_EQ(L[2][1].slot_bytes(), 60 * 131072);
  // Oracle P ... --budget-bytes 64424509440 --max-batch-size 64 --max-seq-len 131072:
  // "cache_size_per_token: (5494, 3848601600)"; 30 x 179 + 31 x 4 = 5494; 3848601600 / 64 = 60134400.
  EXPECT_EQ(L.costs.non_sliding_per_token, 5494);
  EXPECT_EQ(L.costs.generation_swa_per_request, 60134400);
}

TEST(TrtllmEngine, BlockTablesOverTheLibraryGroups) {
  const trtllm_layout L = trtllm_build_layout(deepseek_v4_flash);
  const engine_pools& e = L.tables;
  EXPECT_EQ(e.structure, &own_pools_structure);  // left at its default for the integrator
  ASSERT_EQ(e.num_groups, 3);
  EXPECT_EQ(e[0].rule.kind, table_kind::full_history);
  EXPECT_EQ(e[1].rule.kind, table_kind::sliding_window);
  EXPECT_EQ(e[1].rule.window_tokens, 128);
  EXPECT_EQ(e[2].rule.window_tokens, 8);
  for (int g = 0; g < 3; ++g) {
    EXPECT_EQ(e[g].rule.page_tokens, 128);
    EXPECT_EQ(e[g].bytes(), L[g].slot_bytes()) << g;  // one block of the table = one slot of the pool group
  }
  // Full history: c4a compressed KV (32 rows x 584), its index keys (32 x 132), c128a (1 x 584).
  ASSERT_EQ(e[0].num_members, 3);
  EXPECT_EQ(e[0].members[0].group, parse_group_id("v4.c4a.compressed_kv"));
  EXPECT_EQ(e[0].members[0].rows_per_page, 32);
  EXPECT_EQ(e[0].members[0].page_bytes, 18688);
  EXPECT_EQ(e[0].members[0].layers.count(), 21);
  EXPECT_EQ(e[0].members[1].pool, 1);
  EXPECT_EQ(e[0].members[1].page_bytes, 4224);
  EXPECT_EQ(e[0].members[2].group, parse_group_id("v4.c128a.compressed_kv"));
  EXPECT_EQ(e[0].members[2].rows_per_page, 1);
  EXPECT_EQ(e[0].members[2].page_bytes, 584);
  // Window 128: SWA (128 x 584) and the ratio-128 states (128 rows x [kv | score] 4096).
  ASSERT_EQ(e[1].num_members, 2);
  EXPECT_EQ(e[1].members[0].group, parse_group_id("v4.swa_kv"));
  EXPECT_EQ(e[1].members[0].page_bytes, 74752);
  EXPECT_EQ(e[1].members[1].group, parse_group_id("v4.c128a.compressor_state"));
  EXPECT_EQ(e[1].members[1].rows_per_page, 128);
  EXPECT_EQ(e[1].members[1].page_bytes, 128 * 4096);
  // Window 8: the ratio-4 states (128 x 8192) and the indexer states (128 x 2048).
  ASSERT_EQ(e[2].num_members, 2);
  EXPECT_EQ(e[2].members[0].page_bytes, 128 * 8192);
  EXPECT_EQ(e[2].members[1].group, parse_group_id("v4.c4a.indexer_compressor_state"));
  EXPECT_EQ(e[2].members[1].page_bytes, 128 * 2048);
}

TEST(TrtllmEngine, TokensPerBlock256AndFp4Indexer) {
  const trtllm_layout L = trtllm_build_layout(deepseek_v4_flash, 256, indexer_format::mxfp4);
  EXPECT_EQ(L.tables[0].members[0].rows_per_page, 64);
  EXPECT_EQ(L.tables[0].members[2].rows_per_page, 2);
  EXPECT_EQ(L[0][0].slot_bytes(), 21 * 64 * 584);
  EXPECT_EQ(L[0][1].slot_bytes(), 21 * 64 * 68);  // fp4 index keys: 68 B
  EXPECT_EQ(L[1][1].slot_bytes(), 43 * 256 * 584);
  // ratio-128 state window 128 rounds up to one 256-token block; per request 43 x 256 x 584 + ...
  EXPECT_EQ(L.costs.non_sliding_per_token, 21 * (146 + 17) + 20 * 4);
}

TEST(TrtllmEngine, GranularitySteps) {
  // 2 MiB << min(4, max(0, int(log2(quota / 1 GiB)))) with an integer quota / 1 GiB.
  EXPECT_EQ(trtllm_granularity(0), 2 * kMiB);
  EXPECT_EQ(trtllm_granularity(kGiB - 1), 2 * kMiB);
  EXPECT_EQ(trtllm_granularity(kGiB), 2 * kMiB);
  EXPECT_EQ(trtllm_granularity(2 * kGiB - 1), 2 * kMiB);
  EXPECT_EQ(trtllm_granularity(2 * kGiB), 4 * kMiB);
  EXPECT_EQ(trtllm_granularity(4 * kGiB), 8 * kMiB);
  EXPECT_EQ(trtllm_granularity(8 * kGiB), 16 * kMiB);
  EXPECT_EQ(trtllm_granularity(16 * kGiB - 1), 16 * kMiB);
  EXPECT_EQ(trtllm_granularity(16 * kGiB), 32 * kMiB);
  EXPECT_EQ(trtllm_granularity(60 * kGiB), 32 * kMiB);
  EXPECT_EQ(trtllm_granularity(kGiB << 10), 32 * kMiB);
}

TEST(TrtllmEngine, StaleAndScratchBlocks) {
  // getStaleRange: (history + 1 - window) / tpb; computeScratchRange at capacity vs new blocks.
  EXPECT_EQ(trtllm_stale_blocks(0, 1000000, 128), 0);
  EXPECT_EQ(trtllm_stale_blocks(128, 131071, 128), 1023);  // (131072 - 128) / 128
  EXPECT_EQ(trtllm_stale_blocks(128, 0, 128), 0);
  EXPECT_EQ(trtllm_stale_blocks(8, 8184, 128), 63);  // 8177 / 128
  // One 8192-token chunk: stale at capacity (8193 - 128) / 128 = 63 blocks, all new: 63 scratch.
  EXPECT_EQ(trtllm_scratch_blocks(128, 0, 8192, 128), 63);
  EXPECT_EQ(trtllm_scratch_blocks(8, 0, 8192, 128), 63);
  EXPECT_EQ(trtllm_scratch_blocks(0, 0, 8192, 128), 0);
  EXPECT_EQ(trtllm_scratch_blocks(128, 131071, 131072, 128), 0);
}

struct trtllm_oracle_case {
  const char* name;
  const model_config* model;
  std::uint64_t quota;
  std::int64_t max_seq_len, max_batch_size;
  bool scratch;
  std::uint64_t granularity, min_quota, effective_quota;
  trtllm_slots min_slots, typical_slots, blocks;
};

// Each row: python3 tests/oracle/trtllm_oracle.py CONFIG --sm 90 --kv-dtype fp8_ds_mla
//   --budget-bytes QUOTA --max-seq-len S --max-batch-size B [--no-scratch]
// lines granularity, min_quota, effective_quota, min_slots, typical_slots, blocks.
const trtllm_oracle_case kOracleCases[] = {
    // F --budget-bytes 1073741824 --max-seq-len 131072 --max-batch-size 64: below the minimum, pinned.
    {"flash_1GiB",
     &deepseek_v4_flash,
     kGiB,
     131072,
     64,
     true,
     2 * kMiB,
     3179282432,
     3179282432,
     {1087, 64, 64},
     {64576, 68, 67},
     {1087, 64, 64}},
    // F --budget-bytes 8589934592 --max-seq-len 131072 --max-batch-size 64
    {"flash_8GiB",
     &deepseek_v4_flash,
     8 * kGiB,
     131072,
     64,
     true,
     16 * kMiB,
     3204448256,
     8 * kGiB,
     {1087, 64, 64},
     {64576, 68, 67},
     {12012, 64, 64}},
    // F --budget-bytes 64424509440 --max-seq-len 131072 --max-batch-size 64
    {"flash_60GiB",
     &deepseek_v4_flash,
     60 * kGiB,
     131072,
     64,
     true,
     32 * kMiB,
     3254779904,
     60 * kGiB,
     {1087, 64, 64},
     {64576, 68, 67},
     {120042, 131, 123}},
    // F --budget-bytes 64424509440 --max-seq-len 1048576 --max-batch-size 2048: the defaults' minimum
    // (83.4 GiB) is allocated above the 60 GiB quota.
    {"flash_60GiB_defaults",
     &deepseek_v4_flash,
     60 * kGiB,
     1048576,
     2048,
     true,
     32 * kMiB,
     89556779008,
     89556779008,
     {10239, 2048, 2048},
     {16769088, 2052, 2051},
     {10260, 2048, 2048}},
    // F --budget-bytes 1099511627776 --max-seq-len 1048576 --max-batch-size 2048
    {"flash_1TiB",
     &deepseek_v4_flash,
     kGiB << 10,
     1048576,
     2048,
     true,
     32 * kMiB,
     89556779008,
     kGiB << 10,
     {10239, 2048, 2048},
     {16769088, 2052, 2051},
     {2059617, 2048, 2048}},
    // F --budget-bytes 3221225472 --max-seq-len 32768 --max-batch-size 16 --no-scratch
    {"flash_3GiB_no_scratch",
     &deepseek_v4_flash,
     3 * kGiB,
     32768,
     16,
     false,
     4 * kMiB,
     2780823552,
     3 * kGiB,
     {271, 64, 64},
     {3904, 79, 79},
     {1164, 64, 64}},
    // F --budget-bytes 18253611008 --max-seq-len 262144 --max-batch-size 128 (17 GiB: 32 MiB granules)
    {"flash_17GiB",
     &deepseek_v4_flash,
     17 * kGiB,
     262144,
     128,
     true,
     32 * kMiB,
     6408896512,
     17 * kGiB,
     {2175, 128, 128},
     {260160, 132, 131},
     {26163, 128, 128}},
    // P --budget-bytes 1073741824 --max-seq-len 131072 --max-batch-size 64: pinned to the minimum, the
    // full-history group raised to 1088 by the last step (one more slot fits the same grains).
    {"pro_1GiB",
     &deepseek_v4_pro,
     kGiB,
     131072,
     64,
     true,
     2 * kMiB,
     4620025856,
     4620025856,
     {1087, 64, 64},
     {64576, 67, 67},
     {1088, 64, 64}},
    // P --budget-bytes 8589934592 --max-seq-len 65536 --max-batch-size 32
    {"pro_8GiB",
     &deepseek_v4_pro,
     8 * kGiB,
     65536,
     32,
     true,
     16 * kMiB,
     2348810240,
     8 * kGiB,
     {543, 32, 32},
     {15936, 35, 35},
     {9400, 32, 32}},
    // P --budget-bytes 64424509440 --max-seq-len 131072 --max-batch-size 64
    {"pro_60GiB",
     &deepseek_v4_pro,
     60 * kGiB,
     131072,
     64,
     true,
     32 * kMiB,
     4697620480,
     60 * kGiB,
     {1087, 64, 64},
     {64576, 67, 67},
     {83730, 88, 87}},
    // P --budget-bytes 1099511627776 --max-seq-len 1048576 --max-batch-size 2048
    {"pro_1TiB",
     &deepseek_v4_pro,
     kGiB << 10,
     1048576,
     2048,
     true,
     32 * kMiB,
     130459631616,
     kGiB << 10,
     {10239, 2048, 2048},
     {16769088, 2051, 2051},
     {1383916, 2048, 2048}},
};

TEST(TrtllmEngine, SizingAgreesWithTheOracle) {
  for (const trtllm_oracle_case& c : kOracleCases) {
    SCOPED_TRACE(c.name);
    trtllm_options o = opts(c.max_seq_len, c.max_batch_size);
    o.swa_scratch_reuse = c.scratch;
    const trtllm_layout L = trtllm_build_layout(*c.model);
    const trtllm_sizing s = trtllm_size(L, c.quota, o);
    EXPECT_EQ(s.granularity, c.granularity);
    EXPECT_EQ(s.min_quota, c.min_quota);
    EXPECT_EQ(s.effective_quota, c.effective_quota);
    EXPECT_EQ(s.min_slots, c.min_slots);
    EXPECT_EQ(s.typical_slots, c.typical_slots);
    EXPECT_EQ(s.slots, c.blocks);
    // Every pool is backed by whole granules and the split never exceeds the effective quota.
    EXPECT_LE(s.allocated_bytes, s.effective_quota);
    EXPECT_EQ(s.allocated_bytes % s.granularity, 0U);
    EXPECT_EQ(s.over_quota(), s.effective_quota > c.quota ? s.allocated_bytes - c.quota : 0);
  }
}

TEST(TrtllmEngine, MinSlotsByHand) {
  // Flash, B = 64, S = 131072, 8192-token chunks, scratch on:
  // full history: 1024 blocks of the longest request + 63 x 1 = 1087 (the chunk constraint: 64);
  // window 128: the longest request 1 block + 63 x 1 = 64 (the chunk: 1 + ceil(63 / 20) = 5);
  // window 8: 64 (the chunk: 1 + ceil(63 / 21) = 4).
  const trtllm_layout L = trtllm_build_layout(deepseek_v4_flash);
  const trtllm_options o = opts(131072, 64);
  EXPECT_EQ(trtllm_min_slots(L, o), (trtllm_slots{1087, 64, 64}));
  const trtllm_kv_desc chunk[] = {{8192, 0, 1}};
  EXPECT_EQ(trtllm_batch_slots(L, chunk, 1, true), (trtllm_slots{64, 5, 4}));
  EXPECT_EQ(trtllm_batch_slots(L, chunk, 1, false), (trtllm_slots{64, 64, 64}));
  // Typical step: 64 + 63 x 1024 = 64576; 5 + 63 = 68; 4 + 63 = 67.
  EXPECT_EQ(trtllm_typical_slots(L, o), (trtllm_slots{64576, 68, 67}));
  // 60 GiB: the oracle's ratio line "ratio: [0.9187620889748549, 0.02804642166344294, 0.05319148936170213]".
  const trtllm_ratio_list r = trtllm_ratio_from_slots(L, trtllm_typical_slots(L, o), 32 * kMiB);
  EXPECT_NEAR(r[0], 0.9187620889748549, 1e-7);
  EXPECT_NEAR(r[1], 0.02804642166344294, 1e-7);
  EXPECT_NEAR(r[2], 0.05319148936170213, 1e-7);
}

TEST(TrtllmEngine, NearbyintRoundsHalfToEven) {
  // CORE uses std::nearbyint (default rounding mode: ties to even), not std::round (ties away).
  EXPECT_EQ(detail::nearbyint_even(0.5), 0U);
  EXPECT_EQ(detail::nearbyint_even(1.5), 2U);
  EXPECT_EQ(detail::nearbyint_even(2.5), 2U);
  EXPECT_EQ(detail::nearbyint_even(2.5000001), 3U);
  EXPECT_EQ(detail::nearbyint_even(1023.49), 1023U);
  EXPECT_EQ(detail::ceil_u64(4.0), 4U);
  EXPECT_EQ(detail::ceil_u64(4.000001), 5U);
}

TEST(TrtllmEngine, RatioToSlotCountPinsAndRaises) {
  const trtllm_layout L = trtllm_build_layout(deepseek_v4_flash);
  // Equal ratios, 1 GiB at 2 MiB: no group below its minimum of 1.
  const trtllm_ratio_list even{1.0F / 3, 1.0F / 3, 1.0F / 3, 0};
  const trtllm_slots ones{1, 1, 1, 0};
  const trtllm_slots s = trtllm_ratio_to_slot_count_list(L, kGiB, even, 2 * kMiB, ones);
  for (int g = 0; g < 3; ++g) {
    // Each group fits its third of 512 grains, and one more slot would need more grains than it got.
    EXPECT_LE(detail::grains_for_slots(L[g], s[static_cast<std::size_t>(g)], 2 * kMiB), 512U / 3 + 1) << g;
  }
  // A minimum above the share pins that group and gives the rest to the others.
  const trtllm_slots mins{1, 60, 1, 0};
  const trtllm_slots p = trtllm_ratio_to_slot_count_list(L, kGiB, even, 2 * kMiB, mins);
  EXPECT_GE(p[1], 60);
  expect_invalid([&] { (void)trtllm_ratio_to_slot_count_list(L, kGiB + 1, even, 2 * kMiB, ones); },
                 {"multiple of the granularity"});
  // Nothing left after pinning: the C++ runtime_error, as an error here.
  const trtllm_slots huge{100000, 1, 1, 0};
  expect_invalid([&] { (void)trtllm_ratio_to_slot_count_list(L, kGiB, even, 2 * kMiB, huge); },
                 {"Insufficient quota to satisfy min_slots constraints"});
}

TEST(TrtllmEngine, QuotaFromMaxTokens) {
  const trtllm_layout L = trtllm_build_layout(deepseek_v4_flash);
  trtllm_options o = opts(131072, 64);
  // 1e6 x 3839 + 64 x 41225216 + 8192 x 16088 + 7 x 2 MiB
  //   = 3839000000 + 2638413824 + 131792896 + 14680064 = 6623886784.
  EXPECT_EQ(trtllm_quota_from_max_tokens(L, o, 1000000), 6623886784U);
  // Fewer tokens than a chunk: ctx = max_tokens.
  EXPECT_EQ(trtllm_quota_from_max_tokens(L, o, 1000), 1000U * (3839 + 16088) + 2638413824U + 14680064U);
  // Oracle F --budget-bytes 8589934592 --max-seq-len 131072 --max-batch-size 64 --max-tokens 500000:
  // "quota: 4951986089" = ceil((500000 x 3839 + 2638413824 + 8192 x 16088 + 14680064) / 0.95).
  o.max_tokens = 500000;
  EXPECT_EQ(trtllm_device_quota(L, o, 8 * kGiB), 4951986089U);
  EXPECT_EQ(trtllm_size(L, 4951986089U, o).slots, (trtllm_slots{4681, 64, 64}));  // oracle "blocks: [4681, 64, 64]"
  EXPECT_EQ(trtllm_device_quota(L, o, 0), 4951986089U);  // no budget: the max_tokens quota alone
  o.max_tokens.reset();
  EXPECT_EQ(trtllm_device_quota(L, o, 8 * kGiB), 8 * kGiB);
  expect_invalid([&] { (void)trtllm_device_quota(L, o, 0); }, {"Quota not set"});
  // Oracle F --budget-bytes 64424509440 ... "dsv4_max_tokens_from_quota: 16056166.35998958".
  EXPECT_NEAR(trtllm_max_tokens_from_quota(L, o, 60 * kGiB), 16056166.35998958, 1e-6);
  // Oracle P --budget-bytes 64424509440 ... "dsv4_max_tokens_from_quota: 11000039.863123408".
  EXPECT_NEAR(trtllm_max_tokens_from_quota(trtllm_build_layout(deepseek_v4_pro), o, 60 * kGiB), 11000039.863123408,
              1e-6);
  EXPECT_EQ(trtllm_max_tokens_from_quota(L, o, 1000), 0.0);
  // Inverse within the context limit: the quota of 5000 tokens gives 5000 tokens back.
  EXPECT_NEAR(trtllm_max_tokens_from_quota(L, o, trtllm_quota_from_max_tokens(L, o, 5000)), 5000.0, 1e-9);
  EXPECT_EQ(trtllm_budget_from_free(100 * kGiB, 0.9), 96636764160U);  // int(0.9 x 107374182400)
}

TEST(TrtllmEngine, SmallestQuotaForRequests) {
  const trtllm_layout L = trtllm_build_layout(deepseek_v4_flash);
  const trtllm_options o = opts(131072, 64);
  // A request of L tokens holds ceil(L / 128) full-history blocks and the window's blocks.
  EXPECT_EQ(trtllm_request_blocks(L, 131072), (trtllm_slots{1024, 1, 1}));
  EXPECT_EQ(trtllm_request_blocks(L, 1000), (trtllm_slots{8, 2, 1}));  // window [872, 1000) spans blocks 6, 7
  EXPECT_EQ(trtllm_request_blocks(L, 129), (trtllm_slots{2, 2, 2}));   // windows [1, 129) and [121, 129): blocks 0, 1
  for (const std::int64_t n : {1, 16, 64}) {
    SCOPED_TRACE(n);
    const std::uint64_t q = trtllm_min_quota_for(L, o, n, 131072);
    EXPECT_EQ(q % (2 * kMiB), 0U);
    EXPECT_TRUE(trtllm_quota_holds(L, q, o, n, 131072));
    if (q > 2 * kMiB) {
      EXPECT_FALSE(trtllm_quota_holds(L, q - 2 * kMiB, o, n, 131072));
    }
    const trtllm_sizing s = trtllm_size(L, q, o);
    EXPECT_GE(s.slots[0], n * 1024);
  }
  // 64 requests of 128K: 65536 full-history blocks. Oracle F --max-seq-len 131072 --max-batch-size 64:
  // --budget-bytes 35133587456 -> "blocks: [65578, 70, 67]"; --budget-bytes 35131490304 (2 MiB less) ->
  // "blocks: [65493, 70, 67]". One request fits the minimum allocation (1087 blocks): 2 MiB asked.
  EXPECT_EQ(trtllm_min_quota_for(L, o, 64, 131072), 35133587456U);
  EXPECT_EQ(trtllm_size(L, 35131490304U, o).slots[0], 65493);
  EXPECT_EQ(trtllm_min_quota_for(L, o, 1, 131072), 2 * kMiB);
  // Oracle ... --budget-bytes 10739515392 -> "blocks: [16416, 64, 64]" (16 requests: 16384 needed).
  EXPECT_EQ(trtllm_min_quota_for(L, o, 16, 131072), 10739515392U);
  EXPECT_GT(trtllm_min_quota_for(L, o, 64, 131072), 65536U * 492832U);
  expect_invalid([&] { (void)trtllm_min_quota_for(L, o, 0, 1000); }, {"requests must be > 0"});
}

TEST(TrtllmEngine, StartupLines) {
  // Oracle F --budget-bytes 64424509440 --max-batch-size 64 --max-seq-len 131072 (log lines), with the
  // role lines as TensorRT-LLM's later cache_manager.py writes them (lifecycle_id; see the docs).
  const trtllm_options o = opts(131072, 64);
  const trtllm_startup s =
      trtllm_startup_report(deepseek_v4_flash, trtllm_cache_specs(deepseek_v4_flash), o, 60 * kGiB);
  const std::vector<std::string> want = {
      "max_gpu_total_bytes is provided. New quota is 60.0GiB",
      "KV cache manager v2 device quota set to 60.0GiB",
      "DeepseekV4CacheManager role-to-pool/lifecycle mapping:",
      "deepseek_role=SWA, compress_ratio=1, role=deepseek_v4_swa, pool_group_id=1, lifecycle_id=0",
      "deepseek_role=SWA, compress_ratio=4, role=deepseek_v4_swa, pool_group_id=1, lifecycle_id=0",
      "deepseek_role=COMPRESS, compress_ratio=4, role=deepseek_v4_compress, pool_group_id=0, lifecycle_id=1",
      "deepseek_role=INDEXER_COMPRESS, compress_ratio=4, role=deepseek_v4_indexer_compress, pool_group_id=0, "
      "lifecycle_id=1",
      "deepseek_role=COMPRESSOR_KV, compress_ratio=4, role=deepseek_v4_compressor_kv, pool_group_id=2, lifecycle_id=2",
      "deepseek_role=COMPRESSOR_SCORE, compress_ratio=4, role=deepseek_v4_compressor_score, pool_group_id=2, "
      "lifecycle_id=2",
      "deepseek_role=INDEXER_COMPRESSOR_KV, compress_ratio=4, role=deepseek_v4_indexer_compressor_kv, "
      "pool_group_id=2, lifecycle_id=2",
      "deepseek_role=INDEXER_COMPRESSOR_SCORE, compress_ratio=4, role=deepseek_v4_indexer_compressor_score, "
      "pool_group_id=2, lifecycle_id=2",
      "deepseek_role=SWA, compress_ratio=128, role=deepseek_v4_swa, pool_group_id=1, lifecycle_id=0",
      "deepseek_role=COMPRESSOR_KV, compress_ratio=128, role=deepseek_v4_compressor_kv, pool_group_id=1, "
      "lifecycle_id=0",
      "deepseek_role=COMPRESSOR_SCORE, compress_ratio=128, role=deepseek_v4_compressor_score, pool_group_id=1, "
      "lifecycle_id=0",
      "deepseek_role=COMPRESS, compress_ratio=128, role=deepseek_v4_compress, pool_group_id=0, lifecycle_id=1",
  };
  EXPECT_EQ(s.lines, want);
  EXPECT_EQ(s.sizing.slots, (trtllm_slots{120042, 131, 123}));
  // max_tokens: oracle F --budget-bytes 8589934592 ... --max-tokens 500000:
  // "max_tokens 500000 is provided. Allowed quota from max_tokens is 4.611896433867514GiB. New quota is ..."
  trtllm_options t = o;
  t.max_tokens = 500000;
  const trtllm_startup m =
      trtllm_startup_report(deepseek_v4_flash, trtllm_cache_specs(deepseek_v4_flash), t, 8 * kGiB, 16 * kGiB);
  EXPECT_EQ(m.lines[0], "max_gpu_total_bytes is provided. New quota is 8.0GiB");
  EXPECT_EQ(m.lines[1],
            "max_tokens 500000 is provided. Allowed quota from max_tokens is 4.611896433867514GiB. New quota is "
            "4.611896433867514GiB");
  EXPECT_EQ(m.lines[2], "KV cache manager v2 device quota set to 4.611896433867514GiB");
  EXPECT_EQ(m.lines[3], "KV cache manager v2 host cache quota set to 16.0GiB");
  // Below the minimum is no refusal: 1 GiB allocates the 3179282432-byte minimum.
  const trtllm_startup low = trtllm_startup_report(deepseek_v4_flash, trtllm_cache_specs(deepseek_v4_flash), o, kGiB);
  EXPECT_EQ(low.sizing.allocated_bytes, 3179282432U);
  EXPECT_EQ(low.sizing.over_quota(), 3179282432U - kGiB);
  // Pro's first layer has ratio 128: its SWA line comes first.
  const trtllm_startup pro = trtllm_startup_report(deepseek_v4_pro, trtllm_cache_specs(deepseek_v4_pro), o, 60 * kGiB);
  EXPECT_EQ(pro.lines[3],
            "deepseek_role=SWA, compress_ratio=128, role=deepseek_v4_swa, pool_group_id=1, lifecycle_id=0");
  EXPECT_EQ(pro.lines.size(), 3U + 11U);
}

TEST(TrtllmEngine, PythonFloatRepr) {
  EXPECT_EQ(trtllm_py_float(60.0), "60.0");
  EXPECT_EQ(trtllm_py_float(1.5), "1.5");
  EXPECT_EQ(trtllm_py_float(0.1), "0.1");
  EXPECT_EQ(trtllm_gib(3179282432U), "2.9609375GiB");
  EXPECT_EQ(trtllm_gib(kGiB << 10), "1024.0GiB");
}

TEST(TrtllmEngine, Refusals) {
  // tokens_per_block outside {128, 256}.
  expect_invalid([] { (void)trtllm_build_layout(deepseek_v4_flash, 64); },
                 {"DeepseekV4CacheManager requires tokens_per_block in [128, 256]", "tokens_per_block=64"});
  // A ratio outside {1, 4, 128}.
  model_config bad_ratio = deepseek_v4_flash;
  bad_ratio.compress_ratios[2] = 16;
  expect_invalid([&] { (void)trtllm_build_layout(bad_ratio, trtllm_cache_specs(deepseek_v4_flash)); },
                 {"Unsupported DeepSeek-V4 compress ratio", "compress_ratio=16"});
  // Window other than 128.
  model_config bad_window = deepseek_v4_flash;
  bad_window.sliding_window = 64;
  expect_invalid([&] { (void)trtllm_build_layout(bad_window, trtllm_cache_specs(deepseek_v4_flash)); },
                 {"requires window_size == 128", "window_size=64"});
  // V4.1 and V3.2 are not modelled.
  expect_invalid([] { (void)trtllm_build_layout(deepseek_v4_1_flash, group_spec_list{}); },
                 {"DeepSeek V4.1 is not modelled", "family="});
  expect_invalid([] { (void)trtllm_build_layout(deepseek_v3_2, group_spec_list{}); },
                 {"V3.2 is not modelled", "DSACacheManager"});
  // MTP layers in the specs.
  expect_invalid([] { (void)trtllm_build_layout(deepseek_v4_flash, build_cache_specs(deepseek_v4_flash)); },
                 {"MTP layers are not modelled", "layer=43", "num_hidden_layers=43"});
  // A library format TensorRT-LLM does not store.
  format_overrides fo;
  fo.kv = format_index("v4.fp8_uniform");
  const group_spec_list uniform =
      build_cache_specs(deepseek_v4_flash, resolve_formats(model_family::v4, indexer_format::fp8, fo), false);
  expect_invalid([&] { (void)trtllm_build_layout(deepseek_v4_flash, uniform); },
                 {"TensorRT-LLM stores DeepSeek V4 KV rows as fp8_ds_mla (584 B) or BF16", "row_bytes=512"});
  EXPECT_EQ(trtllm_format_mismatch(uniform[0], 0) != nullptr, true);
  EXPECT_EQ(trtllm_format_mismatch(trtllm_cache_specs(deepseek_v4_flash)[0], 0), nullptr);
  // A library row whose bytes differ from TensorRT-LLM's entry, and groups whose layers differ from its roles.
  group_spec_list wide = trtllm_cache_specs(deepseek_v4_flash);
  wide.groups[0].pools[0].row_bytes = 600;
  expect_invalid(
      [&] { (void)trtllm_build_layout(deepseek_v4_flash, wide); },
      {"library row bytes differ from TensorRT-LLM's entry bytes", "row_bytes=600", "trtllm_entry_bytes=584"});
  group_spec_list missing = trtllm_cache_specs(deepseek_v4_flash);
  for (paged_cache_group_spec& g : missing.groups)
    if (g.id == parse_group_id("v4.c128a.compressed_kv")) --g.num_layers;  // drops its last layer (41)
  expect_invalid([&] { (void)trtllm_build_layout(deepseek_v4_flash, missing); },
                 {"the library group lacks a layer TensorRT-LLM gives this role", "layer=41", "compress_ratio=128"});
  model_config swapped = deepseek_v4_flash;  // layer 2 (ratio 4 in the specs) read as ratio 128
  swapped.compress_ratios[2] = 128;
  expect_invalid([&] { (void)trtllm_build_layout(swapped, trtllm_cache_specs(deepseek_v4_flash)); },
                 {"the library group lacks a layer TensorRT-LLM gives this role", "layer=2"});
  // The library's BF16 rows are TensorRT-LLM's BF16 (1024 B), refused on Hopper.
  format_overrides bf;
  bf.kv = format_index("v4.bf16");
  const group_spec_list bf16 =
      build_cache_specs(deepseek_v4_flash, resolve_formats(model_family::v4, indexer_format::fp8, bf), false);
  EXPECT_EQ(trtllm_build_layout(deepseek_v4_flash, bf16)[1][1].slot_bytes(), 43 * 128 * 1024);
  const trtllm_options o = opts(131072, 64);
  expect_invalid([&] { (void)trtllm_startup_report(deepseek_v4_flash, bf16, o, 60 * kGiB); },
                 {"DeepSeek-V4 on Hopper requires kv_cache_config.dtype='fp8_ds_mla'", "sm=90"});
  // fp4 index keys need SM >= 100; fp8_ds_mla off SM90 needs 256 tokens per block.
  expect_invalid(
      [&] {
        (void)trtllm_startup_report(deepseek_v4_flash, trtllm_cache_specs(deepseek_v4_flash, indexer_format::mxfp4), o,
                                    60 * kGiB);
      },
      {"indexer_k_dtype='fp4' requires SM>=100", "sm=90"});
  trtllm_options b200 = o;
  b200.sm = 100;
  expect_invalid(
      [&] { (void)trtllm_startup_report(deepseek_v4_flash, trtllm_cache_specs(deepseek_v4_flash), b200, 60 * kGiB); },
      {"requires tokens_per_block=256 off SM90", "sm=100", "tokens_per_block=128"});
  b200.tokens_per_block = 256;
  EXPECT_NO_THROW(
      (void)trtllm_startup_report(deepseek_v4_flash, trtllm_cache_specs(deepseek_v4_flash), b200, 60 * kGiB));
  // Options.
  const trtllm_layout L = trtllm_build_layout(deepseek_v4_flash);
  expect_invalid([&] { (void)trtllm_size(L, 60 * kGiB, trtllm_options{}); },
                 {"max_seq_len must be > 0", "max_seq_len=0"});
  trtllm_options avg = o;
  avg.avg_seq_len = 200000;
  expect_invalid([&] { (void)trtllm_size(L, 60 * kGiB, avg); },
                 {"avg_seq_len must be less than or equal to max_seq_len", "avg_seq_len=200000"});
  expect_invalid([&] { (void)trtllm_size(L, 0, o); }, {"Quota not set"});
}

TEST(TrtllmEngine, AdmissionReservesBytesToCompletion) {
  EXPECT_EQ(trtllm_default_capacity_policy, trtllm_capacity_policy::guaranteed_no_evict);
  const trtllm_layout L = trtllm_build_layout(deepseek_v4_flash);
  // Context SWA per request, scratch on: every (type, ratio) after its first layer, window x bytes:
  // SWA 40 x 128 x 584 + CKV/CS r4 2 x 20 x 128 x 4096 + ICKV/ICS 2 x 20 x 128 x 1024 + CKV/CS r128
  // 2 x 19 x 128 x 2048 = 2990080 + 20971520 + 5242880 + 9961472 = 39165952.
  EXPECT_EQ(L.costs.context_swa_per_request, 39165952);
  // A context request of 8000 tokens: 8000 x (3839 + 16088) + 39165952.
  EXPECT_EQ(trtllm_needed_bytes(L, true, trtllm_request_phase::context, 8000), 8000U * 19927U + 39165952U);
  EXPECT_EQ(trtllm_needed_bytes(L, false, trtllm_request_phase::context, 8000), 8000U * (3839U + 322072U));
  // A generation request to completion: (prompt + max_new) x 3839 + 41225216.
  EXPECT_EQ(trtllm_needed_bytes(L, true, trtllm_request_phase::generation, 8000, 2000), 10000U * 3839U + 41225216U);
  const trtllm_sizing s = trtllm_size(L, 60 * kGiB, opts(131072, 64));
  EXPECT_EQ(trtllm_max_resource_bytes(s), 60 * kGiB);
  EXPECT_TRUE(trtllm_admits(0, 60 * kGiB, 60 * kGiB));
  EXPECT_FALSE(trtllm_admits(1, 60 * kGiB, 60 * kGiB));
  EXPECT_FALSE(trtllm_admits(61 * kGiB, 0 + 1, 60 * kGiB));
  expect_invalid([&] { (void)trtllm_needed_bytes(L, true, trtllm_request_phase::context, -1); },
                 {"prompt_len and max_new_tokens must be >= 0", "prompt_len=-1"});
}

}  // namespace
}  // namespace dsv4::cache

// ---- TensorRT-LLM as a registered engine: the plan, the report and its admission ----------------

namespace dsv4::cache {
namespace {

plan_options trtllm_plan_options(std::int64_t requests, std::int64_t context, std::int64_t max_batch_size) {
  plan_options o;
  o.policy = policy_for("trtllm");
  o.requests = requests;
  o.context_tokens = context;
  o.max_running_requests = max_batch_size;
  o.cache_mtp = false;  // its default: no draft model
  return o;
}

TEST(TrtllmEngine, RegisteredAsOneEntryWithItsOwnStructure) {
  const engine_spec* e = find_engine("trtllm");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->structure, &trtllm_life_cycle_pools);
  EXPECT_EQ(std::string(to_string(e->structure)), "life_cycle_pools");
  EXPECT_EQ(find_engine("trtllm@00043967"), e);
  EXPECT_EQ(engine_of("trtllm").traits.title, "TensorRT-LLM");
  const std::vector<std::string_view> names = engine_family_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "trtllm"), names.end());
  EXPECT_NE(engine_names().find("trtllm@00043967"), std::string::npos);
}

// The plan of N requests of L is what the StorageManager allocates at the smallest quota whose slots
// hold them: the quota `trtllm_min_quota_for` finds (its own search), its slots per pool group.
TEST(TrtllmEngine, PlanIsWhatTheSmallestHoldingQuotaAllocates) {
  const plan_options o = trtllm_plan_options(16, 131072, 64);
  const memory_plan p = build_memory_plan(deepseek_v4_flash, o);
  EXPECT_EQ(p.pools.structure, &trtllm_life_cycle_pools);
  const trtllm_layout L = trtllm_build_layout(deepseek_v4_flash);
  const std::uint64_t q = trtllm_min_quota_for(L, opts(131072, 64), 16, 131072);
  EXPECT_EQ(q, 10739515392U);  // as the sizing tests: the oracle's quota for 16 requests of 128K at B = 64
  const trtllm_sizing s = trtllm_size(L, q, opts(131072, 64));
  EXPECT_EQ(p.total_bytes, s.allocated_bytes);
  std::uint64_t groups = 0;
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(p.engine_groups[static_cast<std::size_t>(e)].blocks, s.slots[static_cast<std::size_t>(e)]) << e;
    EXPECT_GE(p.engine_groups[static_cast<std::size_t>(e)].blocks,
              16 * p.engine_groups[static_cast<std::size_t>(e)].pages_per_request);
  }
  EXPECT_EQ(p.engine_groups[0].pages_per_request, 1024);  // 131,072 / 128 compressed-history blocks
  for (const group_plan& g : p) groups += g.bytes;
  EXPECT_LE(groups, p.total_bytes);  // the groups' pages of the slots; the granules' rounding apart
}

TEST(TrtllmEngine, RequestsForABudgetAreTheLargestWhosePlanFits) {
  plan_options o = trtllm_plan_options(1, 131072, 256);
  const request_capacity c = max_requests_for_budget(deepseek_v4_flash, o, 60 * kGiB);
  ASSERT_GT(c.max_requests, 0);
  o.requests = c.max_requests;
  EXPECT_LE(build_memory_plan(deepseek_v4_flash, o).total_bytes, 60 * kGiB);
  o.requests = c.max_requests + 1;
  EXPECT_GT(build_memory_plan(deepseek_v4_flash, o).total_bytes, 60 * kGiB);
}

// What really fits 60 GiB at max_batch_size 256, 128K tokens (V4-Flash): its slots [109183, 256, 256]
// (oracle: --budget-bytes 64424509440 --max-batch-size 256 --max-seq-len 131072), 1,024 history
// blocks a request: 106 by slots; by its admission (bytes to completion within the quota, hand sums
// of the per-token figures above): a context request 131,071 x (3,839 + 16,088) + 39,165,952 =
// 2,651,017,769 B, a generation one 131,072 x 3,839 + 41,225,216 = 544,410,624 B:
// (64,424,509,440 - 2,651,017,769) / 544,410,624 + 1 = 114. So 106.
TEST(TrtllmEngine, ReportAndAdmissionOnItsPoolGroups) {
  const plan_options o = trtllm_plan_options(1, 131072, 256);
  const memory_plan p = build_memory_plan(deepseek_v4_flash, o);
  const cli::engine_report r =
      cli::compute_engine_report(deepseek_v4_flash, p, {}, 1, engine_of("trtllm"), 60 * kGiB, 256);
  EXPECT_TRUE(r.startup.starts);
  ASSERT_TRUE(r.fit.has_value());
  EXPECT_TRUE(r.fit->simulated);
  EXPECT_EQ(r.fit->max_requests, 106);
  const report_value* groups = r.startup.fields.find("pool_groups");
  ASSERT_NE(groups, nullptr);
  std::vector<std::int64_t> slots;
  for (const report_value& g : groups->items()) slots.push_back(g.find("slots")->as_int());
  EXPECT_EQ(slots, (std::vector<std::int64_t>{109183, 256, 256}));
  EXPECT_NE(std::find(r.startup.log_lines.begin(), r.startup.log_lines.end(),
                      "KV cache manager v2 device quota set to 60.0GiB"),
            r.startup.log_lines.end());
  // With its default max_batch_size 2,048 the minimum slots alone pass 60 GiB: it does not start.
  const plan_options d = trtllm_plan_options(1, 131072, 0);
  const cli::engine_report big = cli::compute_engine_report(deepseek_v4_flash, build_memory_plan(deepseek_v4_flash, d),
                                                            {}, 1, engine_of("trtllm"), 60 * kGiB, 0);
  EXPECT_FALSE(big.startup.starts);
  EXPECT_NE(big.startup.refusal.find("max_batch_size 2048"), std::string::npos) << big.startup.refusal;
}

TEST(TrtllmEngine, RefusesWhatItDoesNotModel) {
  expect_invalid([] { engine_of("trtllm").check_model(deepseek_v4_1_flash); }, {"DeepSeek V4 only"});
  plan_options s = trtllm_plan_options(1, 32768, 64);
  s.tokens_per_step = 2;
  expect_invalid([&] { (void)build_memory_plan(deepseek_v4_flash, s); }, {"speculative decoding is not modelled"});
  plan_options f = trtllm_plan_options(1, 32768, 64);
  f.indexer = indexer_format::mxfp4;
  expect_invalid([&] { (void)build_memory_plan(deepseek_v4_flash, f); }, {"FP4 index keys on SM100"});
  plan_options r = trtllm_plan_options(1, 32768, 64);
  r.role = deployment_role::decode;
  expect_invalid([&] { (void)build_memory_plan(deepseek_v4_flash, r); }, {"disaggregated serving"});
}

}  // namespace
}  // namespace dsv4::cache
