// Group specs (seed build_v4_cache_specs): facts section 3, group ids, order, layers.
#include "dsv4/cache/group_spec.hpp"

#include <gtest/gtest.h>

#include <string>

#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

TEST(GroupId, PrintsAndParsesSeedIds) {
  for (const char* s : {"v4.swa_kv", "v4.c4a.compressor_state", "v4.c4a.compressed_kv", "v4.c128a.compressor_state",
                        "v4.c128a.compressed_kv", "v4.c4a.indexer_compressor_state"})
    EXPECT_EQ(to_string(parse_group_id(s)), s);
  EXPECT_EQ(parse_group_id("v4.c128a.compressed_kv"), (group_id{group_kind::compressed_kv, 128}));
}

TEST(GroupId, RejectsMalformedIds) {
  for (const char* s : {"", "v4", "v4.swa", "v4.c8a.compressed_kv", "v4.c04a.compressed_kv", "v4.c+4a.compressed_kv",
                        "v4.ca.compressed_kv", "v4.c4a.compressed", "v4.c4a.compressed_kvx", "V4.c4a.compressed_kv",
                        "v4.c128a.indexer_compressor_state", "v4.c4 a.compressed_kv", "v4.c99999a.compressed_kv"})
    expect_invalid([&] { (void)parse_group_id(s); }, {"group id"});
  expect_invalid([] { (void)parse_group_id("v4.c8a.compressed_kv"); }, {"ratio must be 4 or 128", "ratio=8"});
}

TEST(GroupSpecs, FlashInSeedOrderWithFactsPageBytes) {
  const group_spec_list g = build_cache_specs(deepseek_v4_flash, indexer_format::mxfp4);
  ASSERT_EQ(g.num_groups, 6);
  const char* ids[] = {"v4.swa_kv",
                       "v4.c4a.compressor_state",
                       "v4.c4a.compressed_kv",
                       "v4.c128a.compressor_state",
                       "v4.c128a.compressed_kv",
                       "v4.c4a.indexer_compressor_state"};
  const std::int64_t page_bytes[] = {37'440, 32'768, 37'440 + 4'352, 32'768, 1'728, 8'192};
  const std::int64_t rows[] = {64, 4, 64, 8, 2, 4};
  const std::int64_t stride[] = {1, 1, 4, 1, 128, 1};
  const std::int64_t window[] = {128, 8, 0, 128, 0, 8};
  const int layers[] = {44, 21, 21, 20, 20, 21};
  for (int i = 0; i < 6; ++i) {
    SCOPED_TRACE(ids[i]);
    EXPECT_EQ(to_string(g[i].id), ids[i]);
    EXPECT_EQ(g[i].page_bytes(), page_bytes[i]);
    EXPECT_EQ(g[i].rows_per_page, rows[i]);
    EXPECT_EQ(g[i].entry_stride_tokens, stride[i]);
    EXPECT_EQ(g[i].sliding_window_tokens, window[i]);
    EXPECT_EQ(g[i].num_layers, layers[i]);
    EXPECT_EQ(g[i].has_sliding_window(), window[i] != 0);
    EXPECT_EQ(g[i].family, window[i] != 0 ? cache_family::state : cache_family::history);
  }
  EXPECT_EQ(g[2].page_size_tokens(), 256);
  EXPECT_EQ(g[4].page_size_tokens(), 256);
  EXPECT_EQ(g[2].num_pools, 2);
  EXPECT_EQ(g[2].pools[1].format.name, "v4.indexer_mxfp4");
  EXPECT_EQ(g[2].pools[1].page_bytes, 4'352);
  EXPECT_EQ(g[2].layers[0], 2);
  EXPECT_EQ(g[4].layers[19], 41);
  EXPECT_EQ(g[0].layers[43], 43);  // the MTP layer keeps an SWA window
  EXPECT_EQ(build_cache_specs(deepseek_v4_flash, indexer_format::fp8)[2].page_bytes(), 37'440 + 8'448);
}

TEST(GroupSpecs, SlidingGroupsUseKernelPagesNotRingBlocksFault8) {
  // Facts 5.8: the SWA group is paged in 64-row kernel pages (not one 128-row ring block), the
  // compressor states in 4- and 8-row pages; a compressed page holds 64 rows = 256 tokens.
  const group_spec_list g = build_cache_specs(deepseek_v4_flash);
  EXPECT_EQ(g.at(parse_group_id("v4.swa_kv")).rows_per_page, 64);
  EXPECT_NE(g.at(parse_group_id("v4.swa_kv")).rows_per_page, g.at(parse_group_id("v4.swa_kv")).sliding_window_tokens);
  EXPECT_EQ(g.at(parse_group_id("v4.c4a.compressor_state")).rows_per_page, 4);
  EXPECT_EQ(g.at(parse_group_id("v4.c128a.compressor_state")).rows_per_page, 8);
  const paged_cache_group_spec& kv = g.at(parse_group_id("v4.c4a.compressed_kv"));
  EXPECT_EQ(kv.rows_per_page, 64);
  EXPECT_EQ(kv.page_size_tokens(), 256);
}

TEST(GroupSpecs, ProAndMtpExclusion) {
  const group_spec_list g = build_cache_specs(deepseek_v4_pro);
  ASSERT_EQ(g.num_groups, 6);
  EXPECT_EQ(g[0].num_layers, 62);
  EXPECT_EQ(g[2].num_layers, 30);
  EXPECT_EQ(g[4].num_layers, 31);
  EXPECT_EQ(g[4].layers[0], 0);
  EXPECT_EQ(build_cache_specs(deepseek_v4_pro, indexer_format::fp8, false)[0].num_layers, 61);
}

TEST(GroupSpecs, OnlyTheRatiosPresent) {
  model_config c = deepseek_v4_flash;
  for (int i = 0; i < c.num_layers(); ++i) c.compress_ratios[static_cast<std::size_t>(i)] = i % 2 ? 128 : 0;
  const group_spec_list g = build_cache_specs(c);
  ASSERT_EQ(g.num_groups, 3);  // swa, c128a state, c128a kv; no indexer state without CSA
  EXPECT_EQ(to_string(g[2].id), "v4.c128a.compressed_kv");
  expect_invalid([&] { (void)g.at(parse_group_id("v4.c4a.compressed_kv")); }, {"no such cache group"});
}

TEST(GroupSpecs, NeedsTheLogicalBlockSchema) {
  expect_invalid([] { (void)build_cache_specs(build_model_schema(deepseek_v4_flash)); },
                 {"256-token logical block", "block_size_tokens=128"});
}

}  // namespace
}  // namespace dsv4::cache
