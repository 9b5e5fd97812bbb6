// SGLang's DeepSeek V4 pool configurator (engines/sglang/engine.hpp, pinned at sgl-project/sglang
// cce0a124), its occupancy replay (engines/sglang/replay.hpp) and the plan under --engine sglang.
// Expected values are hand sums (shown), replays worked by hand from SGLang's rules
// (docs/engines/sglang-pools.md 6) and figures of the independent Python oracle
// tests/oracle/sglang_pool_oracle.py (written from SGLang's source apart from the C++; its own
// hand-derived self-test is ctest oracle.sglang_pool_self_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "dsv4/cache/engines/sglang/engine.hpp"
#include "dsv4/cache/engines/sglang/replay.hpp"
#include "dsv4/cache/memory_plan.hpp"
#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

using testing::kGiB;

TEST(SglangEngine, GeometryOfV4FlashAndPro) {
  const sglang_geometry f = sglang_geometry_of(deepseek_v4_flash, false);
  // 43 main layers (the 44th compress_ratios entry, the MTP layer, is not counted): 2 SWA-only,
  // 21 CSA (layers 2, 4, ..., 42), 20 HCA (3, 5, ..., 41).
  EXPECT_EQ(f.layers, 43);
  EXPECT_EQ(f.csa_layers, 21);
  EXPECT_EQ(f.hca_layers, 20);
  EXPECT_EQ(f.kv_bytes, 584);     // 448 + 2 x 64 + 8
  EXPECT_EQ(f.index_bytes, 132);  // 128 + 128 / 128 x 4
  EXPECT_EQ(f.head_dim, 512);
  EXPECT_EQ(f.c4_ring, 8);
  EXPECT_EQ(f.c128_ring, 128);
  const sglang_geometry p = sglang_geometry_of(deepseek_v4_pro, true);
  EXPECT_EQ(p.layers, 61);
  EXPECT_EQ(p.csa_layers, 30);
  EXPECT_EQ(p.hca_layers, 31);
  EXPECT_EQ(p.c4_ring, 16);
  EXPECT_EQ(p.c128_ring, 256);
  expect_invalid([] { (void)sglang_geometry_of(deepseek_v4_1_flash, false); }, {"V4 models only"});
  expect_invalid([] { (void)sglang_geometry_of(deepseek_v3_2, false); }, {"V4 models only"});
}

// SGLang 0.5.23 (the released default): rows priced as the pools allocate them and the c4 state
// sized ring / page (model_executor/pool_configurator.py of the sglang-0.5.23 wheel,
// `_get_paged_kv_bytes_per_token`, `_get_bytes_per_swa_token`, `_compute_dsv4_sizes`).
TEST(SglangEngine, Release0523V4FlashAt64GiBByHand) {
  const sglang_geometry g = sglang_geometry_of(deepseek_v4_flash, false, 0, -1, sglang_rules_0_5_23);
  // A 256-row SWA page: 256 x 584 = 149,504 -> 149,760 (260 x 576) = 585 B per token; a 64-row CSA
  // page 37,376 -> 37,440 = 585 B; a 2-row HCA page 1,168 -> 1,728 (3 x 576) = 864 B.
  EXPECT_EQ(g.swa_row_bytes, 585.0);
  EXPECT_EQ(g.c4_row_bytes, 585.0);
  EXPECT_EQ(g.c128_row_bytes, 864.0);
  EXPECT_EQ(g.c4_state_divisor, 256);
  const sglang_pool_sizes s = sglang_configure(g, {}, 64 * kGiB);
  // bpft = 0.1 x (585 x 43 + 8 / 256 x (8,192 + 2,048) x 21) (3,187.5) + (585 / 4 + 132 / 4) x 21
  //        (3,764.25) + 864 / 128 x 20 (135) = 7,086.75
  EXPECT_NEAR(s.bytes_per_full_token, 7086.75, 1e-9);
  EXPECT_EQ(s.c128_state_fixed_bytes, 2'715'811'840U);  // unchanged: 33,152 rows x 4,096 B x 20
  // (68,719,476,736 - 2,715,811,840) / 7,086.75 = 9,313,606.3 -> 9,313,536 (36,381 pages of 256).
  EXPECT_EQ(s.full, 9'313'536);
  EXPECT_EQ(s.swa, 931'328);      // int(931,353.6) -> 3,638 pages
  EXPECT_EQ(s.c4, 2'328'384);     // full / 4
  EXPECT_EQ(s.c128, 72'762);      // full / 128
  EXPECT_EQ(s.c4_state, 29'104);  // 931,328 / 256 (the page, not the window) x 8
  // V4-Pro (61 layers: 30 CSA, 31 HCA): 0.1 x (585 x 61 + 320 x 30) + 179.25 x 30 + 6.75 x 31.
  const sglang_pool_sizes p =
      sglang_configure(sglang_geometry_of(deepseek_v4_pro, false, 0, -1, sglang_rules_0_5_23), {}, 64 * kGiB);
  EXPECT_NEAR(p.bytes_per_full_token, 0.1 * (585.0 * 61 + 320.0 * 30) + 179.25 * 30 + 6.75 * 31, 1e-9);
  EXPECT_EQ(p.bytes_per_full_token, 10115.25);
  // The pin's rules on the same budget: 584 B rows, ring / window.
  const sglang_pool_sizes pin =
      sglang_configure(sglang_geometry_of(deepseek_v4_flash, false, 0, -1, sglang_rules_cce0a124), {}, 64 * kGiB);
  EXPECT_EQ(pin.full, 8'565'760);
  EXPECT_EQ(pin.c4_state, 53'536);
  // The refusal of a model the release's modelled pools do not cover names the release.
  expect_invalid([] { (void)sglang_geometry_of(deepseek_v4_1_flash, false, 0, -1, sglang_rules_0_5_23); },
                 {"SGLang 0.5.23", "V4 models only"});
}

TEST(SglangEngine, V4FlashAt64GiBByHand) {
  const sglang_geometry g = sglang_geometry_of(deepseek_v4_flash, false, 0, -1, sglang_rules_cce0a124);
  const sglang_pool_sizes s = sglang_configure(g, {}, 64 * kGiB);
  // bpft = 0.1 x 584 x 43 (2,511.2) + 584 / 4 x 21 (3,066) + 584 / 128 x 20 (91.25) + 132 / 4 x 21
  //        (693) + 0.1 x 8 / 128 x 8,192 x 21 (1,075.2) + 0.1 x 8 / 128 x 2,048 x 21 (268.8) = 7,705.45
  EXPECT_NEAR(s.bytes_per_full_token, 7705.45, 1e-9);
  // HCA state: 257 slots x 128 + 128 + 1 = 33,025 rows -> 33,152 (x 128) x 4,096 B x 20 layers.
  EXPECT_EQ(s.c128_state_fixed_bytes, 2'715'811'840U);
  // (68,719,476,736 - 2,715,811,840) / 7,705.45 = 8,565,853.6 -> 8,565,760 (33,460 pages of 256).
  EXPECT_EQ(s.full, 8'565'760);
  EXPECT_EQ(s.swa, 856'576);        // int(856,576.0) = 3,346 pages
  EXPECT_EQ(s.c4, 2'141'440);       // full / 4
  EXPECT_EQ(s.c128, 66'920);        // full / 128
  EXPECT_EQ(s.c4_state, 53'536);    // 856,576 / 128 x 8
  EXPECT_EQ(s.c128_state, 32'896);  // 257 x 128
  EXPECT_EQ(s.max_running_requests, 256);
  EXPECT_TRUE(s.starts);
}

TEST(SglangEngine, SpeculationAndMaxRunningRequestsAgreeWithTheOracle) {
  // Flash, EAGLE with 4 draft tokens: rings 16 / 256; bpft (7,705.45 + 1,075.2 + 268.8) x 44 / 43;
  // HCA state 257 x 256 + 257 = 66,049 -> 66,176 rows x 4,096 x 20.
  sglang_options spec;
  spec.tokens_per_step = 4;
  const sglang_pool_sizes f =
      sglang_configure(sglang_geometry_of(deepseek_v4_flash, true, 0, -1, sglang_rules_cce0a124), spec, 64 * kGiB);
  EXPECT_NEAR(f.bytes_per_full_token, 9049.45 * 44 / 43, 1e-9);
  EXPECT_EQ(f.c128_state_fixed_bytes, 5'421'137'920U);
  EXPECT_EQ(f.full, 6'835'712);
  // Pro (tests/oracle/sglang_pool_oracle.py --config deepseek-v4-pro --available-gib 64 --speculative).
  const sglang_pool_sizes p =
      sglang_configure(sglang_geometry_of(deepseek_v4_pro, true, 0, -1, sglang_rules_cce0a124), spec, 64 * kGiB);
  EXPECT_NEAR(p.bytes_per_full_token, 13125.539754098363, 1e-9);
  EXPECT_EQ(p.c128_state_fixed_bytes, 8'402'763'776U);
  EXPECT_EQ(p.full, 4'595'200);
  EXPECT_EQ(p.swa, 459'520);
  EXPECT_EQ(p.c4, 1'148'800);
  EXPECT_EQ(p.c128, 35'900);
  EXPECT_EQ(p.c4_state, 57'440);
  EXPECT_EQ(p.c128_state, 65'792);
  // Pro, --max-running-requests 64, 40 GiB (the oracle's figures).
  sglang_options m64;
  m64.max_running_requests = 64;
  const sglang_pool_sizes q =
      sglang_configure(sglang_geometry_of(deepseek_v4_pro, false, 0, -1, sglang_rules_cce0a124), m64, 40 * kGiB);
  EXPECT_NEAR(q.bytes_per_full_token, 10993.8375, 1e-9);
  EXPECT_EQ(q.c128_state_fixed_bytes, 1'088'946'176U);
  EXPECT_EQ(q.full, 3'807'488);
  EXPECT_EQ(q.swa, 380'672);
  EXPECT_EQ(q.c4_state, 23'792);
  EXPECT_EQ(q.c128_state, 8'320);  // 65 x 128
  EXPECT_EQ(q.max_running_requests, 64);
}

TEST(SglangEngine, RefusalsAndTheRequestCap) {
  const sglang_geometry g = sglang_geometry_of(deepseek_v4_flash, false, 0, -1, sglang_rules_cce0a124);
  // Less than one page of full tokens after the HCA state: SGLang raises at startup.
  const sglang_pool_sizes none = sglang_configure(g, {}, 2'715'811'840U + 1'000'000U);
  EXPECT_FALSE(none.starts);
  EXPECT_EQ(none.full, 0);
  EXPECT_STREQ(none.refusal, "Not enough memory. Please try to increase --mem-fraction-static.");
  EXPECT_FALSE(sglang_configure(g, {}, 0).starts);
  // One page: 256 full tokens need 256 x 7,705.45 = 1,972,595.2 B beyond the state; then the
  // request cap is min(256, 256 / 2) = 128 and the HCA state pool (128 + 1) x 128 rows.
  const sglang_pool_sizes one = sglang_configure(g, {}, 2'715'811'840U + 1'972'596U);
  EXPECT_TRUE(one.starts);
  EXPECT_EQ(one.full, 256);
  EXPECT_EQ(one.max_running_requests, 128);
  EXPECT_EQ(one.c128_state, 129 * 128);
  EXPECT_FALSE(sglang_configure(g, {}, 2'715'811'840U + 1'972'595U).starts);
  // Options SGLang refuses before it sizes.
  sglang_options o;
  o.page_size = 128;
  expect_invalid([&] { (void)sglang_configure(g, o, 64 * kGiB); }, {"page_size must be 256"});
  o = {};
  o.max_running_requests = 3;
  o.attn_dp = 4;
  expect_invalid([&] { (void)sglang_configure(g, o, 64 * kGiB); }, {"max_running_request is zero"});
  o = {};
  o.tokens_per_step = 11;  // the CSA ring of 16 keeps at most 10 drafts
  expect_invalid(
      [&] {
        (void)sglang_configure(sglang_geometry_of(deepseek_v4_flash, true, 0, -1, sglang_rules_cce0a124), o, 64 * kGiB);
      },
      {"CSA compress-state ring"});
  // A budget of 2^64 - 1 B neither wraps nor overflows.
  const sglang_pool_sizes top = sglang_configure(g, {}, ~std::uint64_t{0});
  EXPECT_TRUE(top.starts);
  EXPECT_GT(top.full, 0);
}

TEST(SglangEngine, WhatThePoolsReallyAllocateAtV4Flash64GiB) {
  const sglang_geometry g = sglang_geometry_of(deepseek_v4_flash, false, 0, -1, sglang_rules_cce0a124);
  sglang_options o;
  o.context_len = 1'048'576;
  const sglang_pool_sizes s = sglang_configure(g, o, 64 * kGiB);
  const sglang_pool_bytes b = sglang_allocated_bytes(g, o, s);
  // docs/engines/sglang-pools.md 7, by hand: F / 256 = 33,460 pages, S / 256 = 3,346, N = 257 slots.
  EXPECT_EQ(b.swa_kv, 43ULL * 3'347 * 149'760);     // 21,553,608,960
  EXPECT_EQ(b.csa_kv, 21ULL * 33'461 * 37'440);     // 26,308,376,640
  EXPECT_EQ(b.hca_kv, 20ULL * 33'461 * 1'728);      // 1,156,412,160
  EXPECT_EQ(b.index_keys, 21ULL * 33'461 * 8'448);  // 5,936,249,088
  EXPECT_EQ(b.csa_state, 21ULL * 53'548 * 8'192);   // 9,211,969,536
  EXPECT_EQ(b.csa_index_state, 21ULL * 53'548 * 2'048);
  EXPECT_EQ(b.hca_state, s.c128_state_fixed_bytes);  // 20 x 33,152 x 4,096: what was reserved
  EXPECT_EQ(b.index_space, 257ULL * 1'048'580 * 4 + (8'565'760ULL + 257) * 8 + (33'460ULL + 3'346) * 8);
  // The pools take 465,943,872 B (444 MiB) more than the 64 GiB budget they were sized for: the
  // 576-B page padding (585 / 864 B per row where the configurator charges 584) and the extra pages.
  EXPECT_EQ(b.pools(), 69'185'420'608ULL);
  EXPECT_EQ(b.pools() - 64 * kGiB, 465'943'872ULL);
  sglang_options unresolved;  // context_len 0: req_to_token's width unknown
  expect_invalid([&] { (void)sglang_allocated_bytes(g, unresolved, s); }, {"context_len"});
}

// --- the occupancy replay, worked by hand -------------------------------------------------------

sglang_sim_config pools_of(std::int64_t full_pages, std::int64_t swa_pages, std::int64_t chunk = 8192) {
  sglang_sim_config c;
  c.full_tokens = full_pages * 256;
  c.swa_tokens = swa_pages * 256;
  c.max_running_requests = 256;
  c.chunked_prefill_size = chunk;
  return c;
}

TEST(SglangSim, LazyEvictionHoldsThreePagesAtAPageBoundaryUnderOverlap) {
  // One request, prompt 1, 599 tokens out (L = 600). Its SWA table grows a page at KV 256 and 512;
  // eviction needs seqlen - 1 - 128 >= evicted + 128 and frees below floor((seqlen - 1 - 256) /
  // 256) x 256, seqlen lagging the KV by one under overlap: at KV 512, seqlen 512 frees below
  // floor(255 / 256) x 256 = 0, so page 2 is allocated with pages 0 and 1 still held (3 pages);
  // at KV 513 page 0 goes (2 pages). Without the lag it would free page 0 first (2 pages).
  const sglang_sim_result fits = sglang_simulate(pools_of(64, 3), {1, 600, 1});
  EXPECT_TRUE(fits.fits) << fits.why;
  EXPECT_EQ(fits.peak_swa_pages, 3);
  EXPECT_EQ(fits.peak_full_pages, 3);  // ceil(599 / 256)
  // Two SWA pages: the SWA gate, on the prompt rounded up to the page, asks
  // max(256 - 128, 0) + min(256 + 599, 128) + 256 = 512 >= 512: never admitted.
  const sglang_sim_result two = sglang_simulate(pools_of(64, 2), {1, 600, 1});
  EXPECT_FALSE(two.fits);
  EXPECT_STREQ(two.why, "admission");
  // Eight requests, prompt 1,500 in chunks of 512, L = 3,000: decoding, each keeps its own 3
  // pages before a boundary and the prompt's last page, which the radix tree keeps locked
  // (cache_protected_len = 1,280): 8 x 4 = 32 pages at the boundary; with 31, check_decode_mem
  // finds 7 free pages for 8 requests at KV 1,792 and retracts.
  const sglang_sim_result eight = sglang_simulate(pools_of(4096, 32, 512), {8, 3000, 1500});
  EXPECT_TRUE(eight.fits) << eight.why;
  EXPECT_EQ(eight.peak_swa_pages, 32);
  EXPECT_STREQ(sglang_simulate(pools_of(4096, 31, 512), {8, 3000, 1500}).why, "decode retraction");
}

TEST(SglangSim, AdmissionGatesByHand) {
  // Prompt 4,000 of L = 4,096 (96 out). Full gate: 4,000 + min(96, 4096) + 256 = 4,352 must be
  // below the free tokens: 17 pages (4,352) refuse, 18 admit. SWA gate on the prompt rounded up
  // to 4,096: (4,096 - 128) + min(4,096 + 96, 128) + 256 = 4,352 below the SWA tokens: 17 pages
  // refuse (the chunk would be capped), 18 admit.
  EXPECT_TRUE(sglang_simulate(pools_of(18, 18), {1, 4096, 4000}).fits);
  const sglang_sim_result full = sglang_simulate(pools_of(17, 18), {1, 4096, 4000});
  EXPECT_FALSE(full.fits);
  EXPECT_STREQ(full.why, "admission");
  EXPECT_FALSE(sglang_simulate(pools_of(18, 17), {1, 4096, 4000}).fits);
}

TEST(SglangSim, ChunkedPrefillKeepsTheLast512SlotsByHand) {
  // Prompt 18,000 in chunks of 8,192: chunk 1 takes SWA pages 0-31; before chunk 2 the radix tree
  // keeps [8,192 - 512, 8,192) (pages 30, 31) and frees the rest; chunk 2 takes pages 32-63: 34
  // pages held, the peak. A continuing chunk is capped to the free and evictable SWA tokens
  // less 256 (one of the two kept pages is evictable): 8,192 <= (S - 2 + 1) x 256 - 256 needs
  // S >= 34 pages; at 33 the chunk would be capped (held back).
  const sglang_sim_result r = sglang_simulate(pools_of(1024, 35), {1, 20000, 18000});
  EXPECT_TRUE(r.fits) << r.why;
  EXPECT_EQ(r.peak_swa_pages, 34);
  EXPECT_TRUE(sglang_simulate(pools_of(1024, 34), {1, 20000, 18000}).fits);
  const sglang_sim_result capped = sglang_simulate(pools_of(1024, 33), {1, 20000, 18000});
  EXPECT_FALSE(capped.fits);
  EXPECT_STREQ(capped.why, "admission");
  // Above the running cap the workload does not run at once.
  sglang_sim_config few = pools_of(1024, 64);
  few.max_running_requests = 2;
  EXPECT_STREQ(sglang_simulate(few, {3, 600, 1}).why, "max_running_requests");
  expect_invalid([] { (void)sglang_simulate(pools_of(4, 4), {1, 1, 1}); }, {"context_tokens must be >= 2"});
  expect_invalid([] { (void)sglang_simulate(pools_of(4, 4), {1, 10, 10}); }, {"prompt_tokens"});
}

TEST(SglangSim, AgreesWithTheIndependentOccupancyOracle) {
  // tests/oracle/sglang_occupancy_oracle.py (written from SGLang's source at cce0a124, apart from
  // the C++; its hand-derived self-test is ctest oracle.sglang_occupancy_self_test): whether each
  // workload runs with nothing held back or retracted. Its peaks count evictable tree pages still
  // allocated as in use, so they are compared where none are (rows without chunked prompts).
  struct row {
    std::int64_t full_pages, swa_pages, chunk, n, L, P;
    bool fits;
    std::int64_t peak_full, peak_swa;  // -1: not compared
  };
  const row rows[] = {
      {64, 3, 8192, 1, 600, 1, true, 3, 3},
      {64, 2, 8192, 1, 600, 1, false, -1, -1},
      {18, 17, 8192, 1, 4096, 4000, false, -1, -1},
      {17, 17, 8192, 1, 4096, 4000, false, -1, -1},
      {18, 16, 8192, 1, 4096, 4000, false, -1, -1},
      {1024, 35, 8192, 1, 20000, 18000, true, 79, 34},
      {1024, 34, 8192, 1, 20000, 18000, true, 79, -1},
      {4096, 64, 8192, 8, 2000, 1, true, 64, 24},
      {4096, 64, 8192, 8, 2000, 1000, true, 64, 32},
      {4096, 40, 512, 8, 3000, 1500, true, 96, -1},
      {200, 200, 8192, 4, 12000, 11000, true, 188, -1},
      {2000, 30, 8192, 10, 700, 300, false, -1, -1},
  };
  for (const row& w : rows) {
    const sglang_sim_result r = sglang_simulate(pools_of(w.full_pages, w.swa_pages, w.chunk), {w.n, w.L, w.P});
    EXPECT_EQ(r.fits, w.fits) << "F=" << w.full_pages << " S=" << w.swa_pages << " N=" << w.n << " L=" << w.L
                              << " P=" << w.P << ": " << r.why;
    if (w.peak_full >= 0) {
      EXPECT_EQ(r.peak_full_pages, w.peak_full) << "L=" << w.L << " P=" << w.P;
    }
    if (w.peak_swa >= 0) {
      EXPECT_EQ(r.peak_swa_pages, w.peak_swa) << "L=" << w.L << " P=" << w.P;
    }
  }
}

// --- the plan under --engine sglang ------------------------------------------------------------

plan_options sglang_plan(std::int64_t n, std::int64_t L, std::int64_t chunk = 8192) {
  plan_options o;
  o.policy = sglang_policy;
  o.requests = n;
  o.context_tokens = L;
  o.prefill_chunk_tokens = chunk;
  return o;
}

TEST(SglangPlan, DemandAndTheSmallestBudgetByHand) {
  // N = 256, L = 4,096, C = 8,192: full = 255 x (4,096 + 512) + 4,096 + 257 = 1,179,393 -> 1,179,648;
  // SWA: A = max(min(4,096, 8,960), (4,096 - 128) + 128 + 256 = 4,352) = 4,352;
  // min(256 x 4,352, 256 x 1,024 + 16,384 + 1,280 = 279,808) + 256 = 280,064.
  sglang_demand d;
  ASSERT_TRUE(sglang_plan_demand(256, 4096, 8192, 256, d));
  EXPECT_EQ(d.full_tokens, 1'179'648);
  EXPECT_EQ(d.swa_tokens, 280'064);
  // N = 1, L = 1,048,576: full = 1,048,576 + 257 -> 1,049,088; SWA min(8,960, 18,432) + 256 = 9,216.
  ASSERT_TRUE(sglang_plan_demand(1, 1'048'576, 8192, 256, d));
  EXPECT_EQ(d.full_tokens, 1'049'088);
  EXPECT_EQ(d.swa_tokens, 9'216);
  // The plan is the smallest budget the configurator turns into those pools: one byte less does not.
  const memory_plan p = build_memory_plan(deepseek_v4_flash, sglang_plan(256, 4096));
  EXPECT_EQ(p.pools.structure, &sglang_ratio_pools);
  const sglang_options so = detail::sglang_options_of(p.options);
  const sglang_pool_sizes at = sglang_configure(p.pools.sglang, so, p.total_bytes);
  const sglang_pool_sizes below = sglang_configure(p.pools.sglang, so, p.total_bytes - 1);
  EXPECT_GE(at.swa, 280'064);  // the SWA pool decides at 4k: full >> 1,179,648
  EXPECT_GE(at.full, 1'179'648);
  EXPECT_TRUE(below.swa < 280'064 || below.full < 1'179'648);
  // The group bytes are the configurator's charges: SWA swa x 585 x 43 layers (0.5.23 prices a
  // row as its page allocates it: 149,760 B / 256 tokens), 584 with the pin's rules.
  EXPECT_EQ(p.groups[0].bytes, static_cast<std::uint64_t>(at.swa) * 585 * 43);
  plan_options pinned = sglang_plan(256, 4096);
  pinned.sglang_pools = sglang_rules_cce0a124;
  const memory_plan pp = build_memory_plan(deepseek_v4_flash, pinned);
  const sglang_pool_sizes pat = sglang_configure(pp.pools.sglang, so, pp.total_bytes);
  EXPECT_EQ(pp.groups[0].bytes, static_cast<std::uint64_t>(pat.swa) * 584 * 43);
  // More requests than SGLang's 256 running: the plan sizes the HCA-state reservation for N.
  const memory_plan big = build_memory_plan(deepseek_v4_flash, sglang_plan(300, 4096));
  EXPECT_EQ(big.sglang.max_running_requests, 300);
  // Capacity is monotone and capped by nothing but memory: the plan's answer at 64 GiB.
  const request_capacity rc = max_requests_for_budget(deepseek_v4_flash, sglang_plan(1, 1'048'576), 64 * kGiB);
  EXPECT_EQ(rc.max_requests, 8);  // 8 x 4,096 pages + gates <= 8,565,760 full tokens; 9 do not fit
}

TEST(SglangPlan, ThePlanRunsInTheReplayAndIsNotFarAboveItsSmallestBudget) {
  // For every case: SGLang configured with the plan's bytes runs N x L in the replay (worst case
  // over prompt lengths), and the plan is at most 40% above the smallest budget whose pools do
  // (the most at 256 requests of 300 tokens, where the SWA gates dominate; within 1.18 from 4k).
  double worst = 0;
  std::vector<double> ratios;
  for (const model_config* m : {&deepseek_v4_flash, &deepseek_v4_pro})
    for (const std::int64_t chunk : {512, 8192})
      for (const std::int64_t n : {1, 7, 64, 256})
        for (const std::int64_t L : {2, 300, 4096, 8193, 131072}) {
          const memory_plan p = build_memory_plan(*m, sglang_plan(n, L, chunk));
          const sglang_options so = detail::sglang_options_of(p.options);
          const auto runs = [&](std::uint64_t budget) {
            const sglang_pool_sizes s = sglang_configure(p.pools.sglang, so, budget);
            return s.starts && sglang_simulate_worst_case(sglang_sim_config_of(s, so), n, L).fits;
          };
          ASSERT_TRUE(runs(p.total_bytes)) << m->name.view() << " N=" << n << " L=" << L << " C=" << chunk;
          std::uint64_t lo = 0;
          std::uint64_t hi = p.total_bytes;
          while (hi - lo > 1) {
            const std::uint64_t mid = lo + (hi - lo) / 2;
            (runs(mid) ? hi : lo) = mid;
          }
          const double ratio = static_cast<double>(p.total_bytes) / static_cast<double>(hi);
          EXPECT_LE(ratio, L >= 4096 ? 1.20 : 1.40) << m->name.view() << " N=" << n << " L=" << L << " C=" << chunk;
          worst = std::max(worst, ratio);
          ratios.push_back(ratio);
        }
  std::sort(ratios.begin(), ratios.end());
  std::printf("SGLang plan / smallest replayed budget over %zu cases: median %.4f, worst %.4f\n", ratios.size(),
              ratios[ratios.size() / 2], worst);
}

// The configurator is constexpr: a deployment can pin SGLang's figures in a static_assert.
static_assert(
    sglang_configure(sglang_geometry_of(deepseek_v4_flash, false, 0, -1, sglang_rules_cce0a124), {}, 64 * kGiB).full ==
    8'565'760);

}  // namespace
}  // namespace dsv4::cache
