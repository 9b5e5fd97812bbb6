// SGLang's DeepSeek V4 pool configurator (engines/sglang.hpp, pinned at sgl-project/sglang
// cce0a124). Expected values are hand sums (shown) and figures of the independent Python oracle
// tests/oracle/sglang_pool_oracle.py (written from SGLang's source apart from the C++; its own
// hand-derived self-test is ctest oracle.sglang_pool_self_test).
#include <gtest/gtest.h>

#include <cstdint>

#include "dsv4/cache/engines/sglang.hpp"
#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

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

TEST(SglangEngine, V4FlashAt64GiBByHand) {
  const sglang_geometry g = sglang_geometry_of(deepseek_v4_flash, false);
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
  const sglang_pool_sizes f = sglang_configure(sglang_geometry_of(deepseek_v4_flash, true), spec, 64 * kGiB);
  EXPECT_NEAR(f.bytes_per_full_token, 9049.45 * 44 / 43, 1e-9);
  EXPECT_EQ(f.c128_state_fixed_bytes, 5'421'137'920U);
  EXPECT_EQ(f.full, 6'835'712);
  // Pro (tests/oracle/sglang_pool_oracle.py --config deepseek-v4-pro --available-gib 64 --speculative).
  const sglang_pool_sizes p = sglang_configure(sglang_geometry_of(deepseek_v4_pro, true), spec, 64 * kGiB);
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
  const sglang_pool_sizes q = sglang_configure(sglang_geometry_of(deepseek_v4_pro, false), m64, 40 * kGiB);
  EXPECT_NEAR(q.bytes_per_full_token, 10993.8375, 1e-9);
  EXPECT_EQ(q.c128_state_fixed_bytes, 1'088'946'176U);
  EXPECT_EQ(q.full, 3'807'488);
  EXPECT_EQ(q.swa, 380'672);
  EXPECT_EQ(q.c4_state, 23'792);
  EXPECT_EQ(q.c128_state, 8'320);  // 65 x 128
  EXPECT_EQ(q.max_running_requests, 64);
}

TEST(SglangEngine, RefusalsAndTheRequestCap) {
  const sglang_geometry g = sglang_geometry_of(deepseek_v4_flash, false);
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
  expect_invalid([&] { (void)sglang_configure(sglang_geometry_of(deepseek_v4_flash, true), o, 64 * kGiB); },
                 {"CSA compress-state ring"});
  // A budget of 2^64 - 1 B neither wraps nor overflows.
  const sglang_pool_sizes top = sglang_configure(g, {}, ~std::uint64_t{0});
  EXPECT_TRUE(top.starts);
  EXPECT_GT(top.full, 0);
}

TEST(SglangEngine, WhatThePoolsReallyAllocateAtV4Flash64GiB) {
  const sglang_geometry g = sglang_geometry_of(deepseek_v4_flash, false);
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

// The configurator is constexpr: a deployment can pin SGLang's figures in a static_assert.
static_assert(sglang_configure(sglang_geometry_of(deepseek_v4_flash, false), {}, 64 * kGiB).full == 8'565'760);

}  // namespace
}  // namespace dsv4::cache
