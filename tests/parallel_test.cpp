// Per-rank plans: TP replication, DP request split, PP layer split (vLLM's get_pp_indices),
// DCP sharding of the main-KV pools of full-history groups, prefill/decode roles. Expected
// values are hand sums of the documented per-layer pages (memory_plan.hpp, vLLM rules).
#include "dsv4/cache/parallel.hpp"

#include <gtest/gtest.h>

#include <set>

#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::build_own;
using testing::expect_invalid;
using testing::own;

parallel_config make(std::int64_t tp, std::int64_t dp, std::int64_t pp, std::int64_t dcp = 1) {
  parallel_config p;
  p.tp = tp;
  p.dp = dp;
  p.pp = pp;
  p.dcp = dcp;
  return p;
}

TEST(Parallel, RankCoordinatesAsVllmCountsThem) {
  // world = dp x pp x tp, rank = (dp_rank x pp + stage) x tp + tp_rank, dcp_rank = tp_rank % dcp
  const parallel_config p = make(8, 2, 2, 4);
  EXPECT_EQ(p.world_size(), 32);
  const rank_coords r = rank_of(p, 27);  // (1 x 2 + 1) x 8 + 3
  EXPECT_EQ(r.dp_rank, 1);
  EXPECT_EQ(r.stage, 1);
  EXPECT_EQ(r.tp_rank, 3);
  EXPECT_EQ(r.dcp_rank, 3);
  EXPECT_EQ(rank_of(p, 12).dcp_rank, 0);  // tp_rank 4
  expect_invalid([&] { (void)rank_of(p, 32); }, {"rank must be in [0, dp x pp x tp)", "rank=32", "world_size=32"});
}

TEST(Parallel, TensorParallelReplicatesTheWholeCache) {
  const plan_options o{.context_tokens = 131'072, .requests = 16};
  const memory_plan single = build_own(deepseek_v4_flash, o);
  const parallel_config p = make(8, 1, 1);
  for (std::int64_t rank = 0; rank < 8; ++rank) {
    const rank_plan_result r = rank_plan(deepseek_v4_flash, own(o), p, rank);
    EXPECT_EQ(r.plan.total_bytes, single.total_bytes) << rank;
    ASSERT_EQ(r.plan.num_groups, single.num_groups);
    for (int g = 0; g < single.num_groups; ++g)
      EXPECT_EQ(r.plan.groups[static_cast<std::size_t>(g)].pages_per_layer,
                single.groups[static_cast<std::size_t>(g)].pages_per_layer);
  }
}

TEST(Parallel, DataParallelSplitsRequests) {
  const parallel_config p = make(1, 4, 1);
  const std::int64_t expected[] = {3, 3, 2, 2};  // 10 requests over 4 ranks
  for (std::int64_t rank = 0; rank < 4; ++rank) {
    const rank_plan_result r = rank_plan(deepseek_v4_flash, own({.context_tokens = 8192, .requests = 10}), p, rank);
    EXPECT_EQ(r.requests, expected[rank]);
    EXPECT_EQ(r.plan.total_bytes,
              build_own(deepseek_v4_flash, {.context_tokens = 8192, .requests = expected[rank]}).total_bytes);
  }
  // Fewer requests than ranks: the idle rank keeps only its null pages.
  const rank_plan_result idle = rank_plan(deepseek_v4_flash, own({.context_tokens = 8192, .requests = 3}), p, 3);
  EXPECT_EQ(idle.requests, 0);
  EXPECT_EQ(idle.plan.total_bytes,
            max_requests_for_budget(deepseek_v4_flash, own({.context_tokens = 8192}), 1).fixed_bytes);
}

TEST(Parallel, PipelineStagesFollowVllmGetPpIndices) {
  // 43 layers on 4 stages: 11, 11, 11, 10; 61 on 3: 20, 21, 20; 62 on 2: 31, 31.
  const auto sizes = [](int layers, std::int64_t pp) {
    std::vector<int> v;
    for (std::int64_t s = 0; s < pp; ++s) {
      const layer_range r = stage_layers(make(1, 1, pp), layers, s);
      v.push_back(r.end - r.first);
    }
    return v;
  };
  EXPECT_EQ(sizes(43, 4), (std::vector<int>{11, 11, 11, 10}));
  EXPECT_EQ(sizes(61, 3), (std::vector<int>{20, 21, 20}));
  EXPECT_EQ(sizes(62, 2), (std::vector<int>{31, 31}));
  EXPECT_EQ(sizes(61, 2), (std::vector<int>{31, 30}));

  // Flash on 4 stages: every layer exactly once (MTP on the last), bytes sum to the single plan.
  const plan_options o{.context_tokens = 65'536, .requests = 8};
  const parallel_config p = make(1, 1, 4);
  std::multiset<int> seen;
  std::uint64_t sum = 0;
  for (std::int64_t rank = 0; rank < 4; ++rank) {
    const rank_plan_result r = rank_plan(deepseek_v4_flash, own(o), p, rank);
    EXPECT_EQ(r.mtp_layers, rank == 3);
    std::set<int> layers;
    for (const group_plan& g : r.plan)
      for (int i = 0; i < g.spec.num_layers; ++i) layers.insert(g.spec.layers[static_cast<std::size_t>(i)]);
    seen.insert(layers.begin(), layers.end());
    sum += r.plan.total_bytes;
  }
  EXPECT_EQ(seen.size(), 44U);
  for (int l = 0; l < 44; ++l) EXPECT_EQ(seen.count(l), 1U) << l;
  EXPECT_EQ(sum, build_own(deepseek_v4_flash, o).total_bytes);
}

// Pro, N = 1, L = 1,048,576, pp = 3 (20, 21, 20 layers; MTP on the last). Per layer (vLLM, B = 8,192):
//   every layer, SWA:  (3 + 128 + 1) x 37,440                                       =   4,942,080
//   CSA: state (3 + 2,048 + 1) x 32,768 + KV 4,097 x 45,888 + indexer state 2,052 x 8,192 = 272,053,056
//   HCA: state (17 + 1,024 + 1) x 32,768 + KV 4,097 x 1,728                         =  41,223,872
// Stage 0, layers 0-19: 9 CSA (2..18 even), 11 HCA (0, 1, 3..19 odd)  -> 3,000,781,696
// Stage 1, layers 20-40: 11 CSA, 10 HCA                                 -> 3,508,606,016 (the worst)
// Stage 2, layers 41-60 + MTP (SWA): 10 CSA, 10 HCA, 21 SWA             -> 3,236,552,960
// Sum: 9,745,940,672 = the single-GPU plan.
TEST(Parallel, ProThreeStagesHandSum) {
  const parallel_config p = make(1, 1, 3);
  const std::uint64_t expected[] = {3'000'781'696ULL, 3'508'606'016ULL, 3'236'552'960ULL};
  for (std::int64_t rank = 0; rank < 3; ++rank)
    EXPECT_EQ(rank_plan(deepseek_v4_pro, own({}), p, rank).plan.total_bytes, expected[rank]) << rank;
  const cluster_worst w = worst_rank(deepseek_v4_pro, own({}), p);
  EXPECT_EQ(w.worst_rank, 1);
  EXPECT_EQ(w.worst_bytes, 3'508'606'016ULL);
}

// Pro, tp = 8, dcp = 4, N = 3, L = 1,000 (B = 8,192: all three prompts in one step).
//   SWA (62 layers):  3 x 3 + min(3 x 13, 3 + 8,189 / 64) + 1 = 49 pages x 37,440
//   CSA state (30):   3 x 3 + min(3 x 247, 2,050) + 1 = 751 pages x 32,768; indexer state 751 x 8,192
//   HCA state (31):   3 x 17 + min(3 x 108, 1,026) + 1 = 376 pages x 32,768
//   CSA KV (30): KV pool sharded, 3 x ceil(4 / 4) + 1 = 4 pages x 37,440; indexer keys whole 3 x 4 + 1 = 13 x 8,448
//   HCA KV (31): sharded, 4 pages x 1,728
// Total 1,426,517,120 B on every rank.
TEST(Parallel, ProDcpHandSum) {
  const parallel_config p = make(8, 1, 1, 4);
  const plan_options o{.context_tokens = 1000, .requests = 3};
  for (std::int64_t rank = 0; rank < 8; ++rank) {
    const rank_plan_result r = rank_plan(deepseek_v4_pro, own(o), p, rank);
    EXPECT_EQ(r.plan.total_bytes, 1'426'517'120ULL) << rank;
  }
  const rank_plan_result r = rank_plan(deepseek_v4_pro, own(o), p, 0);
  const group_plan& c4kv = r.plan.groups[2];
  EXPECT_EQ(c4kv.pool_pages[0], 4);   // KV: a quarter of each request's 4 pages, + null
  EXPECT_EQ(c4kv.pool_pages[1], 13);  // indexer keys: whole
}

TEST(Parallel, DcpShrinksOnlyTheMainKvPoolsOfFullHistoryGroups) {
  const plan_options o{.context_tokens = 131'072, .requests = 4};
  const memory_plan single = build_own(deepseek_v4_flash, o);
  const rank_plan_result r = rank_plan(deepseek_v4_flash, own(o), make(2, 1, 1, 2), 1);
  for (int g = 0; g < single.num_groups; ++g) {
    const group_plan& a = single.groups[static_cast<std::size_t>(g)];
    const group_plan& b = r.plan.groups[static_cast<std::size_t>(g)];
    for (int k = 0; k < a.spec.num_pools; ++k) {
      const auto ki = static_cast<std::size_t>(k);
      if (dcp_sharded(a.spec, k))  // 4 x ceil(512 / 2) + 1
        EXPECT_EQ(b.pool_pages[ki], 4 * 256 + 1) << g;
      else
        EXPECT_EQ(b.pool_pages[ki], a.pool_pages[ki]) << g << " pool " << k;
    }
  }
  EXPECT_LT(r.plan.total_bytes, single.total_bytes);
}

TEST(Parallel, DcpInterleaveAboveAPageLoadsTheFirstRank) {
  // L = 1,000: 4 compressed pages (256 rows of 64 per page) per request. Rows dealt 128 at a
  // time to 4 ranks: rank 0 gets rows 0-127 = 2 pages, not ceil(4 / 4) = 1.
  parallel_config p = make(4, 1, 1, 4);
  p.dcp_interleave_rows = 128;
  const rank_plan_result r = rank_plan(deepseek_v4_flash, own({.context_tokens = 1000}), p, 0);
  EXPECT_EQ(r.plan.groups[2].pool_pages[0], 2 + 1);
}

TEST(Parallel, RolesForDisaggregation) {
  const plan_options base{.context_tokens = 8192, .requests = 4};
  plan_options decode = base;
  decode.role = deployment_role::decode;
  decode.handover_requests = 2;
  const memory_plan d = build_own(deepseek_v4_flash, decode);
  EXPECT_EQ(d.holding_requests, 6);
  EXPECT_EQ(d.groups[0].shared_pages, 0);              // no prefill on a decode instance
  EXPECT_EQ(d.groups[0].pages_per_layer, 6 * 3 + 1);   // rings
  EXPECT_EQ(d.groups[2].pages_per_layer, 6 * 32 + 1);  // whole histories
  plan_options prefill = base;
  prefill.role = deployment_role::prefill;
  const memory_plan pf = build_own(deepseek_v4_flash, prefill);
  // Each prompt held whole: its window and last chunk (8,191 tokens) stay: min(cap, ...) = all 128 SWA pages.
  EXPECT_EQ(pf.groups[0].pages_per_layer, 4 * 128 + 1);
  plan_options bad = base;
  bad.handover_requests = 1;
  expect_invalid([&] { (void)build_own(deepseek_v4_flash, bad); }, {"handover_requests are for the decode role only"});
}

TEST(Parallel, ClusterCapacity) {
  const parallel_config p = make(8, 2, 2, 4);
  const std::uint64_t budget = 80ULL << 30;
  const cluster_capacity c = cluster_capacity_for_budget(deepseek_v4_pro, own({.requests = 64}), p, budget);
  ASSERT_GT(c.max_requests, 0);
  EXPECT_LE(worst_rank(deepseek_v4_pro, own({.requests = c.max_requests}), p).worst_bytes, budget);
  EXPECT_GT(worst_rank(deepseek_v4_pro, own({.requests = c.max_requests + 1}), p).worst_bytes, budget);
  EXPECT_EQ(c.max_context_tokens, 1'048'576);  // 64 requests fit whole
}

TEST(Parallel, BadConfigs) {
  expect_invalid([] { (void)rank_plan(deepseek_v4_flash, own({}), make(3, 1, 1, 2), 0); },
                 {"dcp must divide tp", "tp=3", "dcp=2"});
  expect_invalid([] { (void)rank_plan(deepseek_v4_flash, own({}), make(0, 1, 1), 0); }, {"tp must be >= 1", "tp=0"});
  // V4-Pro's 128 heads (config.json num_attention_heads) split over 3 or 256 ranks: not whole heads.
  expect_invalid([] { (void)rank_plan(deepseek_v4_pro, own({}), make(3, 1, 1), 0); },
                 {"tp must divide num_attention_heads", "num_attention_heads=128", "tp=3"});
  expect_invalid([] { (void)rank_plan(deepseek_v4_pro, own({}), make(256, 1, 1), 0); },
                 {"tp must divide num_attention_heads", "tp=256"});
  EXPECT_NO_THROW((void)rank_plan(deepseek_v4_pro, own({}), make(128, 1, 1), 0));
  expect_invalid([] { (void)rank_plan(deepseek_v4_flash, own({}), make(1, 1, 44), 0); },
                 {"pp must be <= num_hidden_layers", "pp=44"});
  parallel_config p = make(1, 1, 2);
  p.num_stage_layers = 2;
  p.stage_layers[0] = 22;
  p.stage_layers[1] = 20;
  expect_invalid([&] { (void)rank_plan(deepseek_v4_flash, own({}), p, 0); },
                 {"explicit layer split must sum to num_hidden_layers", "sum=42", "num_hidden_layers=43"});
  p.stage_layers[1] = 21;  // 22 + 21 = 43
  EXPECT_EQ(stage_layers(p, 43, 1).first, 22);
  EXPECT_NO_THROW((void)rank_plan(deepseek_v4_flash, own({}), p, 1));
}

}  // namespace
}  // namespace dsv4::cache
