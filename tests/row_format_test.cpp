// Row and page formats: every value of facts section 2 and every error the seed raises.
#include "dsv4/cache/row_format.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

TEST(RowFormat, Fp8DsMlaRowOfV4) {
  EXPECT_EQ(nope_dim(512, 64), 448);
  EXPECT_EQ(swa_token_stride(512, 64), 576);
  EXPECT_EQ(swa_scale_dim(512, 64), 8);
  EXPECT_EQ(swa_row_bytes(512, 64), 584);
  // Each member against the byte sum of facts section 2, worked by hand:
  // 584 = 448 e4m3 NoPE + 2 x 64 bf16 RoPE + 448 / 64 = 7 ue8m0 scales + 1 pad.
  const fp8_ds_mla_format f = make_fp8_ds_mla_format(512, 64);
  EXPECT_EQ(f.nope_values(), 448);   // 512 - 64
  EXPECT_EQ(f.nope_bytes(), 448);    // 1 B per e4m3 value
  EXPECT_EQ(f.rope_bytes(), 128);    // 2 x 64
  EXPECT_EQ(f.token_stride(), 576);  // 448 + 128
  EXPECT_EQ(f.num_scales(), 7);      // 448 / 64
  EXPECT_EQ(f.scale_bytes(), 8);     // 7 + 1 pad
  EXPECT_EQ(f.row_bytes(), 584);     // 448 + 2 x 64 + 7 + 1
  // Page of 64 rows (facts 2): 64 x 584 = 37,376 B used = 64.89 x 576, padded to 65 x 576 = 37,440;
  // row 1's data at 1 x 576, its scales after all 64 rows' data: 64 x 576 + 1 x 8 = 36,872.
  const fp8_ds_mla_page_layout p64 = make_fp8_ds_mla_page_layout(f, 64);
  EXPECT_EQ(p64.used_bytes(), 37'376);
  EXPECT_EQ(p64.page_bytes(), 37'440);
  EXPECT_EQ(p64.data_offset(1), 576);
  EXPECT_EQ(p64.scale_offset(0), 36'864);
  EXPECT_EQ(p64.scale_offset(1), 36'872);
  // Another shape, so that no constant of the V4 row can stand in for the rule: D = 256, R = 64:
  // NoPE 192 (3 blocks), stride 192 + 2 x 64 = 320, scales 3 + 1 = 4, row 324. Page of 3 rows:
  // 3 x 324 = 972 B = 3.04 x 320, padded to 4 x 320 = 1,280; row 2's data at 2 x 320 = 640, its
  // scales at 3 x 320 + 2 x 4 = 968.
  EXPECT_EQ(swa_token_stride(256, 64), 320);
  EXPECT_EQ(swa_scale_dim(256, 64), 4);
  EXPECT_EQ(swa_row_bytes(256, 64), 324);
  const fp8_ds_mla_format g = make_fp8_ds_mla_format(256, 64);
  EXPECT_EQ(g.num_scales(), 3);
  EXPECT_EQ(g.scale_bytes(), 4);
  EXPECT_EQ(g.row_bytes(), 324);
  const fp8_ds_mla_page_layout p3 = make_fp8_ds_mla_page_layout(g, 3);
  EXPECT_EQ(p3.page_bytes(), 1'280);
  EXPECT_EQ(p3.data_offset(2), 640);
  EXPECT_EQ(p3.scale_offset(2), 968);
  // No RoPE (R = 0): D = 128: stride 128, scales 2 + 1 = 3, row 131; 2 rows: 262 B padded to 3 x 128 = 384.
  EXPECT_EQ(swa_row_bytes(128, 0), 131);
  EXPECT_EQ(make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(128, 0), 2).page_bytes(), 384);
}

TEST(RowFormat, SeedErrors) {
  expect_invalid([] { (void)nope_dim(64, 64); },
                 {"head_dim must be larger than rope_dim", "head_dim=64", "rope_dim=64"});
  expect_invalid([] { (void)swa_row_bytes(60, 64); }, {"head_dim must be larger than rope_dim", "head_dim=60"});
  expect_invalid([] { (void)swa_scale_dim(512 + 32, 64); }, {"divisible by 64", "nope_dim=480"});
  expect_invalid([] { (void)nope_dim(512, -1); }, {"rope_dim must be >= 0", "rope_dim=-1"});
  expect_invalid([] { (void)indexer_mxfp4_value_bytes(127); }, {"must be even", "index_head_dim=127"});
  expect_invalid([] { (void)indexer_mxfp4_scale_dim(48); }, {"divisible by 32", "index_head_dim=48"});
  expect_invalid([] { (void)indexer_fp8_scale_bytes(64); }, {"divisible by 128", "index_head_dim=64"});
  expect_invalid([] { (void)indexer_fp8_row_bytes(0); }, {"index_head_dim must be > 0", "index_head_dim=0"});
}

TEST(RowFormat, SplitPageLayoutFault6) {
  // Facts 5.6: with 64 rows, row 1's data is at 576 and its scales at 64 * 576 + 8 = 36,872.
  const fp8_ds_mla_page_layout p = make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(512, 64), 64);
  EXPECT_EQ(p.data_offset(1), 576);
  EXPECT_EQ(p.scale_offset(1), 36'872);
  EXPECT_NE(p.scale_offset(1), 584 + 576);  // the interleaved reading
  EXPECT_EQ(p.scale_offset(63) + 8, 64 * 584);
  EXPECT_EQ(p.page_bytes(), 37'440);
  EXPECT_EQ(p.page_bytes() % 576, 0);
  EXPECT_EQ(make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(512, 64), 2).page_bytes(), 1'728);
  expect_invalid([] { (void)make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(512, 64), 0); },
                 {"rows_per_page must be > 0", "rows_per_page=0"});
}

TEST(RowFormat, IndexerRows) {
  EXPECT_EQ(indexer_fp8_row_bytes(128), 132);
  EXPECT_EQ(indexer_mxfp4_value_bytes(128), 64);
  EXPECT_EQ(indexer_mxfp4_scale_dim(128), 4);
  EXPECT_EQ(indexer_mxfp4_row_bytes(128), 68);
  const indexer_page_layout mx = make_indexer_page_layout(make_indexer_row_format(indexer_format::mxfp4, 128), 64);
  EXPECT_EQ(mx.page_bytes(), 4'352);
  EXPECT_EQ(mx.data_offset(1), 64);
  EXPECT_EQ(mx.scale_offset(1), 64 * 64 + 4);
  const indexer_page_layout f8 = make_indexer_page_layout(make_indexer_row_format(indexer_format::fp8, 128), 64);
  EXPECT_EQ(f8.page_bytes(), 8'448);
  EXPECT_EQ(f8.scale_offset(2), 64 * 128 + 8);
}

TEST(RowFormat, IndexerInverse) {
  EXPECT_EQ(indexer_mxfp4_layout_from_row_bytes(68), (indexer_mxfp4_layout{128, 64, 4}));
  EXPECT_EQ(indexer_mxfp4_layout_from_row_bytes(17), (indexer_mxfp4_layout{32, 16, 1}));
  EXPECT_EQ(indexer_fp8_layout_from_row_bytes(132), (indexer_fp8_layout{128, 4}));
  EXPECT_EQ(indexer_fp8_layout_from_row_bytes(264), (indexer_fp8_layout{256, 8}));
  for (std::int64_t d = 32; d <= 1024; d += 32) {
    const indexer_mxfp4_layout l = indexer_mxfp4_layout_from_row_bytes(indexer_mxfp4_row_bytes(d));
    EXPECT_EQ(l.index_head_dim, d);
  }
  expect_invalid([] { (void)indexer_mxfp4_layout_from_row_bytes(69); }, {"value+scale aligned", "row_bytes=69"});
  expect_invalid([] { (void)indexer_fp8_layout_from_row_bytes(133); }, {"value+scale aligned", "row_bytes=133"});
  expect_invalid([] { (void)indexer_fp8_layout_from_row_bytes(0); }, {"must be > 0", "row_bytes=0"});
  expect_invalid([] { (void)indexer_mxfp4_layout_from_row_bytes(-17); }, {"must be > 0", "row_bytes=-17"});
}

TEST(RowFormat, CompressorState) {
  EXPECT_EQ(compressor_state_row_floats(4, 512), 2048);
  EXPECT_EQ(compressor_state_row_bytes(4, 512), 8'192);
  EXPECT_EQ(compressor_state_row_bytes(128, 512), 4'096);
  EXPECT_EQ(compressor_state_row_bytes(4, 128), 2'048);
  EXPECT_EQ(compressor_state_window_tokens(4), 8);
  EXPECT_EQ(compressor_state_window_tokens(128), 128);
  expect_invalid([] { (void)compressor_state_row_bytes(1, 512); }, {"ratio must be > 1", "ratio=1"});
}

TEST(RowFormat, OverflowIsAnError) {
  constexpr std::int64_t big = std::int64_t{1} << 62;
  expect_invalid([] { (void)swa_token_stride(std::numeric_limits<std::int64_t>::max(), big); }, {"overflows"});
  expect_invalid([] { (void)compressor_state_row_bytes(4, big); }, {"overflows"});
}

}  // namespace
}  // namespace dsv4::cache
