// tokenspeed as an engine (engines/tokenspeed/engine.hpp): its parent arena (packing, planes, parent
// bytes), its startup figures (`Cache profile`), the plan in its parents, and the simulator on
// its arena. Expected values are hand sums (shown), tokenspeed's own memory-plan tests (their
// inputs and expected values, cited), and the independent Python oracle
// tests/oracle/tokenspeed_oracle.py (written from tokenspeed's source apart from the C++; ctest
// oracle.tokenspeed_plan_agrees runs it live on 42 cases).
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "dsv4/cache/alloc_sim.hpp"
#include "dsv4/cache/engines/registry.hpp"
#include "dsv4/cache/engines/tokenspeed/arena.hpp"
#include "dsv4/cache/memory_plan.hpp"
#include "dsv4/cache/parallel.hpp"
#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

using testing::kGiB;

// The hand sums below, unless a test says otherwise, are the pin's (tokenspeed@f4d8ec6e); those of
// the release (tokenspeed 0.1.1, the default) are in the tests named Release011.
plan_options ts_options(bool mtp = false, bool overlap = false,
                        const tokenspeed_pool_rules& rules = tokenspeed_rules_f4d8ec6e) {
  plan_options o;
  o.policy = policy_for("tokenspeed", overlap);
  o.tokenspeed_pools = rules;
  o.cache_mtp = mtp;
  o.context_tokens = 1'048'576;
  return o;
}

engine_pools ts_pools(const model_config& m, const plan_options& o) { return plan_pools(m, plan_cache_specs(m, o), o); }

const engine_group& group_of(const engine_pools& p, const char* id) {
  for (const engine_group& g : p)
    if (g.members[0].group == parse_group_id(id)) return g;
  ADD_FAILURE() << "no group " << id;
  return p[0];
}

tokenspeed_limits limits(bool overlap, std::int64_t seqs = 160) {
  tokenspeed_limits lim;
  lim.max_num_seqs = seqs;
  lim.chunk_tokens = 8192;
  lim.context_tokens = 1'048'576;
  lim.decode_tokens = 1;
  lim.overlap_depth = overlap ? 1 : 0;
  return lim;
}

TEST(TokenspeedEngine, PackingAndParentBytesByHand) {
  // V4-Flash without the draft layer: raw bytes of one page of each group over its layers:
  //   swa     43 x 37,440          = 1,609,920   K = floor2(1,609,920 / 1,609,920) = 1
  //   c4kv    21 x (37,440 + 8,448) =  963,648   K = floor2(1.67) = 1
  //   c4st    21 x 32,768          =   688,128   K = floor2(2.34) = 2
  //   idxst   21 x 8,192           =   172,032   K = floor2(9.36) = 8
  //   c128kv  20 x 1,728           =    34,560   K = floor2(46.6) = 32
  //   c128st  20 x 32,768          =   655,360   K = floor2(2.46) = 2
  // (tokenspeed logs swa 1, c4kv 1, c4st 2, idxst 8, c128kv 32, c128st 2 for V4-Flash.)
  const engine_pools p = ts_pools(deepseek_v4_flash, ts_options());
  EXPECT_EQ(p.structure, &tokenspeed_parent_arena);
  EXPECT_EQ(group_of(p, "v4.swa_kv").pages_per_block, 1);
  EXPECT_EQ(group_of(p, "v4.c4a.compressed_kv").pages_per_block, 1);
  EXPECT_EQ(group_of(p, "v4.c4a.compressor_state").pages_per_block, 2);
  EXPECT_EQ(group_of(p, "v4.c4a.indexer_compressor_state").pages_per_block, 8);
  EXPECT_EQ(group_of(p, "v4.c128a.compressed_kv").pages_per_block, 32);
  EXPECT_EQ(group_of(p, "v4.c128a.compressor_state").pages_per_block, 2);
  // Planes unit.0..19 hold c128kv (32 x 1,728 = 55,296, alignment lcm(256, 32 x 576) = 18,432)
  // and three 65,536-B state packings: round_up(65,536, 18,432) = 73,728 each; unit.20 (no
  // c128 layer): 65,536 rounded to lcm(256, 576) = 2,304 is 66,816; unit.21..41 (index keys
  // 8,448 beside SWA 37,440) and unit.42 (SWA alone): 37,440 -> 39,168.
  // 20 x 73,728 + 66,816 + 22 x 39,168 = 1,474,560 + 66,816 + 861,696 = 2,403,072 (a multiple
  // of lcm(256, 32) = 256).
  EXPECT_EQ(p.bytes_per_block, 2'403'072);
  // The draft (MTP) layer adds an SWA-only plane: unit.43, 39,168 B.
  EXPECT_EQ(ts_pools(deepseek_v4_flash, ts_options(true)).bytes_per_block, 2'403'072 + 39'168);
}

// tokenspeed 0.1.1 (recipes/deepseek_v4.py `DeepseekV4Recipe.groups`, wheel tokenspeed-0.1.1): the
// CSA index keys are a group of their own, v4.c4a.indexer_kv, each layer's keys on plane
// unit.<its slot in that group>, beside the other groups' fields of the same slot.
TEST(TokenspeedEngine, Release011PackingAndParentBytesByHand) {
  // V4-Flash without the draft layer: raw bytes of one page of each group over its layers:
  //   swa     43 x 37,440 = 1,609,920   K = floor2(1,609,920 / 1,609,920) = 1
  //   c4kv    21 x 37,440 =   786,240   K = floor2(2.05) = 2
  //   idxkv   21 x  8,448 =   177,408   K = floor2(9.07) = 8   (64 rows x 132 B)
  //   c4st    21 x 32,768 =   688,128   K = floor2(2.34) = 2
  //   idxst   21 x  8,192 =   172,032   K = floor2(9.36) = 8
  //   c128kv  20 x  1,728 =    34,560   K = floor2(46.6) = 32
  //   c128st  20 x 32,768 =   655,360   K = floor2(2.46) = 2
  const engine_pools p = ts_pools(deepseek_v4_flash, ts_options(false, false, tokenspeed_rules_0_1_1));
  EXPECT_EQ(p.num_groups, 7);
  EXPECT_EQ(group_of(p, "v4.swa_kv").pages_per_block, 1);
  EXPECT_EQ(group_of(p, "v4.c4a.compressed_kv").pages_per_block, 2);
  EXPECT_EQ(group_of(p, "v4.c4a.compressor_state").pages_per_block, 2);
  EXPECT_EQ(group_of(p, "v4.c4a.indexer_compressor_state").pages_per_block, 8);
  EXPECT_EQ(group_of(p, "v4.c128a.compressed_kv").pages_per_block, 32);
  EXPECT_EQ(group_of(p, "v4.c128a.compressor_state").pages_per_block, 2);
  int index_groups = 0;
  for (const engine_group& g : p) {
    if (!tokenspeed_is_indexer_group(g)) continue;
    ++index_groups;
    EXPECT_EQ(tokenspeed_group_id(g), "v4.c4a.indexer_kv");
    EXPECT_EQ(g.pages_per_block, 8);
    ASSERT_EQ(g.num_members, 1);
    EXPECT_EQ(g.members[0].page_bytes, 64 * 132);
    EXPECT_EQ(g.members[0].layers.count(), 21);
    EXPECT_EQ(g.rule.kind, table_kind::full_history);
    EXPECT_EQ(g.rule.page_tokens, 256);  // 64 rows of 4 tokens
  }
  EXPECT_EQ(index_groups, 1);
  EXPECT_EQ(group_of(p, "v4.c4a.compressed_kv").num_members, 1);  // the KV alone
  // Planes unit.0..19: c4kv 2 x 37,440 = 74,880 (the largest: idxkv 8 x 8,448 = 67,584, states
  // 65,536, c128kv 55,296, swa 37,440), alignment lcm(256, 2 x 576, 32 x 576 = 18,432) = 18,432:
  // 5 x 18,432 = 92,160 each. unit.20 (no c128 layer): 74,880 rounded to lcm(256, 1,152) = 2,304
  // is 33 x 2,304 = 76,032. unit.21..42 (SWA alone): 37,440 -> 17 x 2,304 = 39,168.
  // 20 x 92,160 + 76,032 + 22 x 39,168 = 1,843,200 + 76,032 + 861,696 = 2,780,928 (a multiple of
  // lcm(256, 32) = 256); the figure for tokenspeed 0.1.1.
  EXPECT_EQ(p.bytes_per_block, 20 * 92'160 + 76'032 + 22 * 39'168);
  EXPECT_EQ(p.bytes_per_block, 2'780'928);
  // The draft (MTP) layer: swa 44 x 37,440 = 1,647,360 leaves every K as it is; it adds an
  // SWA-only plane unit.43 of 39,168 B.
  EXPECT_EQ(ts_pools(deepseek_v4_flash, ts_options(true, false, tokenspeed_rules_0_1_1)).bytes_per_block,
            2'780'928 + 39'168);
  // The pin: 2,403,072 (PackingAndParentBytesByHand).
  EXPECT_EQ(ts_pools(deepseek_v4_flash, ts_options(false, false, tokenspeed_rules_f4d8ec6e)).bytes_per_block,
            2'403'072);
}

TEST(TokenspeedEngine, Release011ProParentBytesByHand) {
  // V4-Pro: 61 layers, 30 CSA (ratio 4) and 31 HCA (ratio 128):
  //   swa     61 x 37,440 = 2,283,840   K = 1
  //   c4kv    30 x 37,440 = 1,123,200   K = floor2(2.03) = 2
  //   idxkv   30 x  8,448 =   253,440   K = floor2(9.01) = 8
  //   c4st    30 x 32,768 =   983,040   K = floor2(2.32) = 2
  //   idxst   30 x  8,192 =   245,760   K = floor2(9.29) = 8
  //   c128kv  31 x  1,728 =    53,568   K = floor2(42.6) = 32
  //   c128st  31 x 32,768 = 1,015,808   K = floor2(2.25) = 2
  const engine_pools p = ts_pools(deepseek_v4_pro, ts_options(false, false, tokenspeed_rules_0_1_1));
  EXPECT_EQ(group_of(p, "v4.c4a.compressed_kv").pages_per_block, 2);
  EXPECT_EQ(group_of(p, "v4.c128a.compressed_kv").pages_per_block, 32);
  EXPECT_EQ(group_of(p, "v4.c128a.compressor_state").pages_per_block, 2);
  // Planes unit.0..29: c4kv 74,880 with c128kv's alignment 18,432 -> 92,160; unit.30 (c128
  // layers only, no CSA): states 65,536 the largest, alignment 18,432 -> 4 x 18,432 = 73,728;
  // unit.31..60 (SWA alone): 39,168.
  // 30 x 92,160 + 73,728 + 30 x 39,168 = 2,764,800 + 73,728 + 1,175,040 = 4,013,568.
  EXPECT_EQ(p.bytes_per_block, 30 * 92'160 + 73'728 + 30 * 39'168);
  EXPECT_EQ(p.bytes_per_block, 4'013'568);
  // The pin (c4kv K = 1, its index keys on unit.30..59): unit.0..30 hold a 65,536-B state packing
  // with c128kv's alignment: 73,728; unit.31..60 SWA (and index keys) 39,168:
  // 31 x 73,728 + 30 x 39,168 = 2,285,568 + 1,175,040 = 3,460,608.
  EXPECT_EQ(ts_pools(deepseek_v4_pro, ts_options(false, false, tokenspeed_rules_f4d8ec6e)).bytes_per_block,
            31 * 73'728 + 30 * 39'168);
  EXPECT_EQ(ts_pools(deepseek_v4_pro, ts_options()).bytes_per_block, 3'460'608);
}

TEST(TokenspeedEngine, Release011StartupByHand) {
  const engine_pools p = ts_pools(deepseek_v4_flash, ts_options(false, true, tokenspeed_rules_0_1_1));
  // 64 GiB, overlap on: budgeted = 68,719,476,736 // 2,780,928 - 1 = 24,710 - 1 = 24,709. The
  // sliding groups need 4,400 parents at T > 8,192 (as the pin: swa 768, c4st 1,344, idxst 336,
  // c128st 1,952); the three history groups x = ceil(T / 256) + 320 pages each: ceil(x / 2) +
  // ceil(x / 8) + ceil(x / 32) parents. x = 30,944: 15,472 + 3,868 + 967 = 20,307, 24,707 in all;
  // x = 30,945: 15,473 + 3,869 + 968 = 20,310, 24,710 > 24,709. So ceil(T / 256) <= 30,624,
  // T = 7,839,744, and tokenspeed allocates 24,707 parents.
  const tokenspeed_startup_report on = tokenspeed_startup(p, limits(true), 64 * kGiB, 43, 0);
  ASSERT_TRUE(on.starts) << on.refusal;
  EXPECT_EQ(on.budgeted_parents, 24'709);
  EXPECT_EQ(on.parents, 24'707);
  EXPECT_EQ(on.token_capacity, 30'624 * 256);
  EXPECT_EQ(on.arena_bytes, 24'708ULL * 2'780'928);
  EXPECT_EQ(on.log_line,
            "Cache profile: parent_bytes=2780928, P=256, parents=24707, token_capacity=7839744, layers=43 (draft 0), "
            "groups={'v4.c128a.compressed_kv': 32, 'v4.c128a.compressor_state': 2, 'v4.c4a.compressed_kv': 2, "
            "'v4.c4a.compressor_state': 2, 'v4.c4a.indexer_compressor_state': 8, 'v4.c4a.indexer_kv': 8, "
            "'v4.swa_kv': 1}");
  // The recipe's floor at N = 160, no overlap, T = 1: the sliding groups 481 (swa), 481 / 2 -> 241
  // (c4st), 481 / 8 -> 61 (idxst), 2,721 / 2 -> 1,361 (c128st); the history groups 161 pages
  // each: 81 (c4kv) + 21 (idxkv) + 6 (c128kv): 2,252 parents (the pin: 2,311, c4kv 161).
  EXPECT_EQ(tokenspeed_parents_needed(p, limits(false), 1), 481U + 241 + 61 + 1'361 + 81 + 21 + 6);
}

TEST(TokenspeedEngine, Release011PlanAndWindows) {
  // One request of 1,048,576 tokens, no overlap: 131 SWA, 1,026 CSA-state, 257 indexer-state,
  // 521 HCA-state parents (as the pin), and the 4,096 compressed pages of each history group:
  // 4,096 / 2 = 2,048 (c4kv) + 4,096 / 8 = 512 (idxkv) + 4,096 / 32 = 128 (c128kv): 4,623
  // parents + the null parent.
  const memory_plan p = build_memory_plan(deepseek_v4_flash, ts_options(false, false, tokenspeed_rules_0_1_1));
  EXPECT_EQ(p.pools.bytes_per_block, 2'780'928);
  EXPECT_EQ(p.planned_blocks, 131 + 1'026 + 257 + 521 + 2'048 + 512 + 128 + 1);
  EXPECT_EQ(p.admission_blocks, 4'624);  // tokenspeed's own count for the request alone + null
  EXPECT_GE(p.num_blocks, p.planned_blocks);
  // The library's CSA compressed-KV group holds both tokenspeed groups' parents.
  for (const group_plan& gp : p)
    if (gp.spec.id == parse_group_id("v4.c4a.compressed_kv")) {
      EXPECT_EQ(gp.bytes, (2'048ULL + 512) * 2'780'928);
      EXPECT_EQ(gp.pool_pages[0], 4'096);
      EXPECT_EQ(gp.pool_pages[1], 4'096);
    }
  // 0.1.1's CSA-state windows stay 8 at six decode tokens (V4_COMPRESSOR_STATE_WINDOW_TOKENS[4];
  // the pin: max(8, 4 + 6) = 10, TokenspeedsOwnPageCountTests).
  plan_options o = ts_options(false, false, tokenspeed_rules_0_1_1);
  o.tokens_per_step = 6;
  const memory_plan wide = build_memory_plan(deepseek_v4_flash, o);
  for (int e = 0; e < wide.pools.num_groups; ++e) {
    const group_id id = wide.pools[e].members[0].group;
    if (id == parse_group_id("v4.c4a.compressor_state") || id == parse_group_id("v4.c4a.indexer_compressor_state")) {
      EXPECT_EQ(wide.engine_groups[static_cast<std::size_t>(e)].window_tokens, 8);
    }
  }
  // The registry: `tokenspeed` is 0.1.1, `tokenspeed@f4d8ec6e` the pin.
  plan_options r = ts_options();
  r.tokenspeed_pools = find_engine("tokenspeed")->tokenspeed;
  EXPECT_EQ(ts_pools(deepseek_v4_flash, r).bytes_per_block, 2'780'928);
  r.tokenspeed_pools = find_engine("tokenspeed@f4d8ec6e")->tokenspeed;
  EXPECT_EQ(ts_pools(deepseek_v4_flash, r).bytes_per_block, 2'403'072);
  r.tokenspeed_pools = find_engine("tokenspeed-default@f4d8ec6e")->tokenspeed;
  EXPECT_EQ(ts_pools(deepseek_v4_pro, r).bytes_per_block, 3'460'608);
  r.tokenspeed_pools = find_engine("tokenspeed-default")->tokenspeed;
  EXPECT_EQ(ts_pools(deepseek_v4_pro, r).bytes_per_block, 4'013'568);
}

TEST(TokenspeedEngine, StartupFiguresByHand) {
  const engine_pools p = ts_pools(deepseek_v4_flash, ts_options());
  // 64 GiB, overlap on: budgeted = 68,719,476,736 // 2,403,072 - 1 = 28,595. Demand at T >
  // 8,192 (N = 160, protected = 160 pages per group), pages - 1 over K: swa 160 x 2 + 128 + 160 +
  // 160 = 768 parents; c4st 160 x 2 + 2,048 + 320 = 2,688 -> 1,344; idxst 2,688 -> 336; c128st
  // 160 x 16 + 1,024 + 320 = 3,904 -> 1,952: 4,400 in all; the history groups x = ceil(T / 256) +
  // 320 pages: x + ceil(x / 32) parents. 4,400 + x + ceil(x / 32) <= 28,595: x = 23,461, so
  // ceil(T / 256) <= 23,141, T = 5,924,096; parents_needed = 28,595.
  const tokenspeed_startup_report on = tokenspeed_startup(p, limits(true), 64 * kGiB, 43, 0);
  ASSERT_TRUE(on.starts) << on.refusal;
  EXPECT_EQ(on.budgeted_parents, 28'595);
  EXPECT_EQ(on.parents, 28'595);
  EXPECT_EQ(on.token_capacity, 5'924'096);
  EXPECT_EQ(on.arena_bytes, 28'596ULL * 2'403'072);
  EXPECT_EQ(on.log_line,
            "Cache profile: parent_bytes=2403072, P=256, parents=28595, token_capacity=5924096, layers=43 (draft 0), "
            "groups={'v4.c128a.compressed_kv': 32, 'v4.c128a.compressor_state': 2, 'v4.c4a.compressed_kv': 1, "
            "'v4.c4a.compressor_state': 2, 'v4.c4a.indexer_compressor_state': 8, 'v4.swa_kv': 1}");
  // The longest request alone: sliding groups 131 + 1,026 + 257 + 521 = 1,935 parents, the
  // history groups x + ceil(x / 32) <= 26,660: x = 25,852 pages, L + 1 <= 25,852 x 256.
  EXPECT_EQ(on.max_request_tokens, 25'852 * 256 - 1);
  EXPECT_TRUE(on.admits_context);
  // 8 GiB, overlap on: 3,573 budgeted; at T = 3,192 the demand is 690 + 719 + 180 + 1,640 + 333 +
  // 11 = 3,573, at 3,193 c4st needs 720 parents: token_capacity 3,192.
  const tokenspeed_startup_report small = tokenspeed_startup(p, limits(true), 8 * kGiB, 43, 0);
  EXPECT_EQ(small.parents, 3'573);
  EXPECT_EQ(small.token_capacity, 3'192);
  EXPECT_EQ(small.max_request_tokens, 1'588 * 256 - 1);  // x + ceil(x / 32) <= 1,638: x = 1,588
  EXPECT_FALSE(small.admits_context);                    // a 1M-token request is refused at submission
  // Overlap off: the demand jumps past 3,573 (from 3,572), so tokenspeed allocates 3,572 parents,
  // one fewer than the budget holds.
  const tokenspeed_startup_report off = tokenspeed_startup(p, limits(false), 8 * kGiB, 43, 0);
  EXPECT_EQ(off.budgeted_parents, 3'573);
  EXPECT_EQ(off.parents, 3'572);
  EXPECT_EQ(off.token_capacity, 5'312);
}

TEST(TokenspeedEngine, RefusalsAsTokenspeedWords) {
  const engine_pools p = ts_pools(deepseek_v4_flash, ts_options());
  // One token needs 641 + 321 + 81 + 1,441 + 321 + 11 = 2,816 parents (overlap on, N = 160).
  EXPECT_EQ(tokenspeed_parents_needed(p, limits(true), 1), 2'816U);
  EXPECT_TRUE(tokenspeed_startup(p, limits(true), 2'817ULL * 2'403'072, 43, 0).starts);
  const tokenspeed_startup_report below = tokenspeed_startup(p, limits(true), 2'817ULL * 2'403'072 - 1, 43, 0);
  EXPECT_FALSE(below.starts);
  EXPECT_EQ(below.refusal,
            "num_lcm_blocks=2815 cannot admit one token with the configured deepseek_v4 cache scheduler limits");
  EXPECT_EQ(tokenspeed_startup(p, limits(true), 2 * 2'403'072 - 1, 43, 0, tokenspeed_rules_f4d8ec6e).refusal,
            "DeepSeek V4 cache budget must hold a null parent and one usable parent");
  // tokenspeed 0.1.1's words (recipes/base.py `CacheRecipe._budgeted_parents`, family deepseek_v4).
  EXPECT_EQ(tokenspeed_startup(p, limits(true), 2 * 2'403'072 - 1, 43, 0, tokenspeed_rules_0_1_1).refusal,
            "deepseek_v4 cache budget must hold a null parent and one usable LCM parent");
  // V4-Pro at 8 GiB with overlap: 8,589,934,592 // 3,460,608 - 1 = 2,481 budgeted, too few.
  const engine_pools pro = ts_pools(deepseek_v4_pro, ts_options());
  EXPECT_EQ(pro.bytes_per_block, 3'460'608);
  EXPECT_EQ(tokenspeed_startup(pro, limits(true), 8 * kGiB, 61, 0).refusal,
            "num_lcm_blocks=2481 cannot admit one token with the configured deepseek_v4 cache scheduler limits");
  expect_invalid([&] { (void)tokenspeed_startup(p, limits(true, 0), 8 * kGiB, 43, 0); },
                 {"max_num_seqs and chunk must be >= 1", "max_num_seqs=0"});
}

// test/runtime/test_v4_sliding_window_groups_smoke.py @ c731cb88 (lightseekorg/tokenspeed), its
// inputs and expected values re-derived on this library's group rules.
TEST(TokenspeedEngine, TokenspeedsOwnPageCountTests) {
  // test_sliding_window_scheduled_tokens_are_global_and_capped: a sliding group of 4 rows x 1
  // token, window 8, 10 live requests, 100 scheduled tokens, T = 20: 10 x 2 + 5 + 10 + 1 = 36.
  engine_group sl;
  sl.rule = {table_kind::sliding_window, 4, 8, 0, false};
  tokenspeed_limits lim;
  lim.max_num_seqs = 10;
  lim.chunk_tokens = 100;
  lim.context_tokens = 4096;
  lim.decode_tokens = 1;
  EXPECT_EQ(tokenspeed_group_pages(sl, lim, 20), 36U);
  // test_overlap_page_budget_is_parameterized_by_verify_width_and_depth: overlap adds 3 x
  // ceil(depth x width / b) pages to both a full and a sliding group (3 live requests).
  constexpr std::int64_t kShapes[][2] = {{4, 1}, {4, 2}, {16, 4}, {2, 128}};  // rows x tokens per row
  for (const auto& shape : kShapes) {
    const std::int64_t rows = shape[0];
    const std::int64_t stride = shape[1];
    const std::int64_t b = rows * stride;
    engine_group full;
    full.rule = {table_kind::full_history, b, 0, 0, false};
    engine_group slide;
    slide.rule = {table_kind::sliding_window, b, 3 * b + 1, 0, false};
    for (const std::int64_t width : {1, 2, 4, 8}) {
      tokenspeed_limits l;
      l.max_num_seqs = 3;
      l.chunk_tokens = 1024;
      l.context_tokens = 4096;
      l.decode_tokens = width;
      l.overlap_depth = 0;
      const std::uint64_t f0 = tokenspeed_group_pages(full, l, 4096);
      const std::uint64_t s0 = tokenspeed_group_pages(slide, l, 4096);
      l.overlap_depth = 1;
      const auto prot = static_cast<std::uint64_t>(3 * ((width + b - 1) / b));
      EXPECT_EQ(tokenspeed_group_pages(full, l, 4096), f0 + prot) << rows << "x" << stride << " w" << width;
      EXPECT_EQ(tokenspeed_group_pages(slide, l, 4096), s0 + prot) << rows << "x" << stride << " w" << width;
    }
  }
  // test_c4_state_window_covers_wide_verify_blocks: the CSA state windows are 8 at one decode
  // token and 10 at six (max(8, 4 + t)).
  plan_options o = ts_options();
  o.tokens_per_step = 6;
  const memory_plan wide = build_memory_plan(deepseek_v4_flash, o);
  for (int e = 0; e < wide.pools.num_groups; ++e) {
    const group_id id = wide.pools[e].members[0].group;
    if (id == parse_group_id("v4.c4a.compressor_state") || id == parse_group_id("v4.c4a.indexer_compressor_state")) {
      EXPECT_EQ(wide.engine_groups[static_cast<std::size_t>(e)].window_tokens, 10);
    }
  }
  // test_lcm_capacity_is_the_inverse_of_parent_demand: with the test's packing (swa 1, c4st 4,
  // c4kv 2, c128st 1, c128kv 8, idxst 4), one live request, 256 scheduled tokens, 100 parents.
  engine_pools p = ts_pools(deepseek_v4_flash, ts_options());
  for (int e = 0; e < p.num_groups; ++e) {
    const std::string id = to_string(p.groups[static_cast<std::size_t>(e)].members[0].group);
    p.groups[static_cast<std::size_t>(e)].pages_per_block = id == "v4.swa_kv"                   ? 1
                                                            : id == "v4.c4a.compressor_state"   ? 4
                                                            : id == "v4.c4a.compressed_kv"      ? 2
                                                            : id == "v4.c128a.compressor_state" ? 1
                                                            : id == "v4.c128a.compressed_kv"    ? 8
                                                                                                : 4;
  }
  tokenspeed_limits one;
  one.max_num_seqs = 1;
  one.chunk_tokens = 256;
  one.context_tokens = 4096;
  const std::int64_t cap = tokenspeed_capacity(p, one, 100);
  ASSERT_GT(cap, 0);
  EXPECT_LE(tokenspeed_parents_needed(p, one, static_cast<std::uint64_t>(cap)), 100U);
  EXPECT_GT(tokenspeed_parents_needed(p, one, static_cast<std::uint64_t>(cap) + 1), 100U);
}

TEST(TokenspeedEngine, PlanInParents) {
  // One request of 1,048,576 tokens, no overlap: its pages (131 SWA, 2,051 + 2,051 CSA and
  // indexer states, 1,041 HCA states, 4,096 + 4,096 compressed) bind 131 + 1,026 + 257 + 521 +
  // 4,096 + 128 = 6,159 parents, also what tokenspeed's scheduler says the request needs alone;
  // + the null parent: 6,160 x 2,403,072 B.
  const memory_plan p = build_memory_plan(deepseek_v4_flash, ts_options());
  EXPECT_EQ(p.pools.structure, &tokenspeed_parent_arena);
  EXPECT_EQ(p.planned_blocks, 6'160);
  EXPECT_EQ(p.admission_blocks, 6'160);  // one request alone (tokenspeed's own count) + null
  EXPECT_EQ(p.startup_blocks, 2'312);    // the recipe's floor at N = 160, no overlap, + null
  EXPECT_EQ(p.num_blocks, 6'160);
  EXPECT_EQ(p.total_bytes, 6'160ULL * 2'403'072);
  std::int64_t parents = 0;
  for (int e = 0; e < p.pools.num_groups; ++e) {
    const engine_group_plan& ep = p.engine_groups[static_cast<std::size_t>(e)];
    const std::int64_t k = p.pools[e].pages_per_block;
    EXPECT_EQ(ep.parents, (ep.blocks + k - 1) / k);
    parents += ep.parents;
  }
  EXPECT_EQ(parents, 6'159);
  // tokenspeed given the plan's bytes allocates at least the plan's parents and admits L.
  const tokenspeed_startup_report t =
      tokenspeed_startup(p.pools, detail::tokenspeed_limits_of(p.options), p.total_bytes, 43, 0);
  EXPECT_GE(t.parents, p.planned_blocks - 1);
  EXPECT_TRUE(t.admits_context);
  // Small requests: tokenspeed's startup floor (2,311 parents at N = 160) is the plan.
  plan_options small = ts_options();
  small.context_tokens = 4096;
  EXPECT_EQ(build_memory_plan(deepseek_v4_flash, small).num_blocks, 2'312);
  small.max_running_requests = 8;  // fewer windows to size for
  EXPECT_LT(build_memory_plan(deepseek_v4_flash, small).num_blocks, 2'312);
  // Own pools keep the library's per-group pricing.
  EXPECT_EQ(build_memory_plan(deepseek_v4_flash, testing::own(ts_options())).pools.structure, &own_pools_structure);
}

TEST(TokenspeedEngine, PlanNeverBelowTheSimulatedParents) {
  for (const bool overlap : {false, true}) {
    plan_options o = ts_options(false, overlap);
    o.requests = 8;
    o.context_tokens = 65'536;
    const memory_plan p = build_memory_plan(deepseek_v4_flash, o);
    const sim_result r = simulate_worst_case(p.pools, o.policy, o.requests, o.context_tokens, 1, 8192);
    const std::int64_t peak = sim_peak_parents(p.pools, r);
    EXPECT_GE(p.planned_blocks - 1, peak) << overlap;
    EXPECT_LE(p.planned_blocks - 1, peak + peak / 10) << overlap;  // and not far above it
    // On the arena the plan's budget gives, the plan's requests fit.
    const tokenspeed_startup_report t =
        tokenspeed_startup(p.pools, detail::tokenspeed_limits_of(p.options), p.total_bytes, 43, 0);
    sim_capacity cap;
    cap.usable_blocks = t.parents;
    EXPECT_TRUE(simulated_fit(p.pools, o.policy, o.requests, o.context_tokens, 1, 8192, cap)) << overlap;
  }
}

// Each pipeline stage builds its recipe from its own layers: its own packing, planes and parents
// (the pin's reading; tokenspeed 0.1.1's plan.py `CacheMemoryPlan.narrow_to_layers` keeps the
// whole model's parent geometry on every stage and drops the other stages' planes: not modelled).
TEST(TokenspeedEngine, PipelineStagesHaveTheirOwnArena) {
  parallel_config pc;
  pc.pp = 2;
  const plan_options o = ts_options();
  const memory_plan whole = build_memory_plan(deepseek_v4_flash, o);
  for (std::int64_t rank = 0; rank < 2; ++rank) {
    const rank_plan_result r = rank_plan(deepseek_v4_flash, o, pc, rank);
    EXPECT_EQ(r.plan.pools.structure, &tokenspeed_parent_arena);
    // The stage's own arena, as tokenspeed builds it from the stage's groups.
    group_spec_list specs;
    specs.num_groups = r.plan.num_groups;
    for (int g = 0; g < r.plan.num_groups; ++g)
      specs.groups[static_cast<std::size_t>(g)] = r.plan.groups[static_cast<std::size_t>(g)].spec;
    EXPECT_EQ(r.plan.pools.bytes_per_block, tokenspeed_engine_pools(specs, o.tokenspeed_pools).bytes_per_block) << rank;
    EXPECT_LT(r.plan.pools.bytes_per_block, whole.pools.bytes_per_block) << rank;
    EXPECT_LT(r.plan.total_bytes, whole.total_bytes) << rank;
  }
}

TEST(TokenspeedEngine, OtherFamiliesAndDcpKeepOwnPools) {
  plan_options o = ts_options();
  o.context_tokens = 65'536;
  EXPECT_EQ(build_memory_plan(deepseek_v4_1_flash, o).pools.structure, &own_pools_structure);
  o.dcp = 2;
  EXPECT_EQ(plan_structure(o, model_family::v4), &own_pools_structure);
  EXPECT_EQ(plan_structure(ts_options(), model_family::v4), &tokenspeed_parent_arena);
}

}  // namespace
}  // namespace dsv4::cache

namespace dsv4::cache {
namespace {

// One plane's field pages by hand (tokenspeed recipes/plan.py field_page_byte_offset, see
// engines/tokenspeed/arena.hpp): a 4,096-B plane at 1,000 B, K = 4, 3 parents (the null one
// included): stride 1,024 B, page 0 (the null parent's last page) at 1,000 + 4,096 - 1,024 =
// 4,072 B, pages 1 + 2 x 4 = 9; page 5 at 4,072 + 5 x 1,024 = 9,192 B, the second real parent's
// first page (1,000 + 2 x 4,096).
TEST(TokenspeedEngine, FieldOnAPlaneByHand) {
  constexpr tokenspeed_field_pages f = tokenspeed_field_on_plane(1000, 4096, 4, 3);
  static_assert(f.page0_offset == 4072 && f.page_stride == 1024 && f.pages == 9);
  EXPECT_EQ(f.page0_offset + 5 * static_cast<std::uint64_t>(f.page_stride), 1000U + 2U * 4096U);
  EXPECT_THROW((void)tokenspeed_field_on_plane(0, 3, 4, 3), std::invalid_argument);     // a page under a byte
  EXPECT_THROW((void)tokenspeed_field_on_plane(0, 4096, 4, 1), std::invalid_argument);  // no real parent
  EXPECT_THROW((void)tokenspeed_field_on_plane(~std::uint64_t{0} - 10, 4096, 4, 3), std::invalid_argument);
}

}  // namespace
}  // namespace dsv4::cache
