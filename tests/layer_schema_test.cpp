// Per-layer schemas (seed schema.py) and the corrected block budget (facts 5.7).
#include "dsv4/cache/layer_schema.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

TEST(Schema, CsaLayerSeedFieldsAndAdditions) {
  const layer_schedule sched = build_layer_schedule(deepseek_v4_flash);
  const layer_cache_schema s = build_schema(deepseek_v4_flash, sched[2]);
  EXPECT_EQ(s.layer_idx, 2);
  EXPECT_EQ(s.attn_type, attention_kind::csa);
  EXPECT_EQ(s.entries_per_block, 32);  // 128 / 4
  EXPECT_EQ(s.entry_head_dim, 512);
  EXPECT_EQ(s.rope_dim, 64);
  EXPECT_EQ(s.indexer_entries_per_block, 32);
  EXPECT_EQ(s.indexer_head_dim, 128);
  EXPECT_EQ(s.swa_window_size, 128);
  EXPECT_EQ(s.tail_buffer_size, 3);
  EXPECT_TRUE(s.needs_inv_scale);
  EXPECT_EQ(s.kv_row_bytes(), 584);
  EXPECT_EQ(s.indexer_row_bytes(), 132);
  EXPECT_EQ(s.compressor_state_window_tokens, 8);
  EXPECT_EQ(s.compressor_state_row_bytes, 8'192);
  EXPECT_EQ(s.indexer_compressor_state_row_bytes, 2'048);
  EXPECT_EQ(s.compressed_entry_bytes(), 584 + 132);
  EXPECT_EQ(build_schema(deepseek_v4_flash, sched[2], indexer_format::mxfp4).indexer_row_bytes(), 68);
}

TEST(Schema, HcaAndSwaLayers) {
  const layer_schedule sched = build_layer_schedule(deepseek_v4_flash);
  const layer_cache_schema h = build_schema(deepseek_v4_flash, sched[3]);
  EXPECT_EQ(h.entries_per_block, 1);
  EXPECT_EQ(h.indexer_entries_per_block, 0);
  EXPECT_EQ(h.indexer_head_dim, 0);
  EXPECT_EQ(h.indexer_row_bytes(), 0);
  EXPECT_EQ(h.tail_buffer_size, 127);
  EXPECT_EQ(h.compressor_state_window_tokens, 128);
  EXPECT_EQ(h.compressor_state_row_bytes, 4'096);
  const layer_cache_schema w = build_schema(deepseek_v4_flash, sched[0]);
  EXPECT_EQ(w.entries_per_block, 0);
  EXPECT_EQ(w.tail_buffer_size, 0);
  EXPECT_EQ(w.swa_window_size, 128);
  EXPECT_EQ(w.kv_row_bytes(), 584);
  EXPECT_EQ(w.compressed_entry_bytes(), 0);
  EXPECT_TRUE(build_schema(deepseek_v4_flash, sched[43]).mtp);
}

TEST(Schema, LogicalBlock256GivesGroupRowsPerPage) {
  const model_cache_schema m = build_model_schema(deepseek_v4_pro, indexer_format::fp8, kCompressedLogicalBlockTokens);
  EXPECT_EQ(m.num_layers, 62);
  EXPECT_EQ(m[2].entries_per_block, 64);  // CSA
  EXPECT_EQ(m[1].entries_per_block, 2);   // HCA
}

TEST(Schema, BlockSizeErrors) {
  const layer_schedule sched = build_layer_schedule(deepseek_v4_flash);
  expect_invalid([&] { (void)build_schema(deepseek_v4_flash, sched[3], indexer_format::fp8, 64); },
                 {"multiple of the layer's compress ratio", "block_size_tokens=64", "compress_ratio=128", "layer=3"});
  expect_invalid([&] { (void)build_schema(deepseek_v4_flash, sched[0], indexer_format::fp8, 0); },
                 {"block_size_tokens must be > 0"});
  model_config c = deepseek_v4_flash;
  c.index_head_dim = 96;
  expect_invalid([&] { (void)build_model_schema(c, indexer_format::fp8); }, {"divisible by 128", "index_head_dim=96"});
  c.index_head_dim = 80;
  expect_invalid([&] { (void)build_model_schema(c, indexer_format::mxfp4); }, {"divisible by 32", "index_head_dim=80"});
}

TEST(BlockBudget, CeilingNotFloorFault7) {
  // Facts 5.7: the seed floors max_context / 128 and gives a 1,000-token context 7 blocks.
  const model_cache_schema m = build_model_schema(deepseek_v4_flash);
  const block_budget b = compute_block_budget(m, 1000, 1, 0);
  EXPECT_EQ(b.blocks_per_request, 8);
  EXPECT_EQ(b.csa_blocks, 8);
  EXPECT_EQ(b.hca_blocks, 8);
  EXPECT_EQ(compute_block_budget(m, 1024, 1, 0).blocks_per_request, 8);
  EXPECT_EQ(compute_block_budget(m, 1025, 1, 0).blocks_per_request, 9);
}

TEST(BlockBudget, HeadroomAndStateSlots) {
  const model_cache_schema m = build_model_schema(deepseek_v4_flash);
  const block_budget b = compute_block_budget(m, 1'048'576, 7);  // 10 % headroom
  EXPECT_EQ(b.blocks_per_request, 8192);
  EXPECT_EQ(b.csa_blocks, 63'079);  // ceil(7 x 8192 x 1.10) = ceil(63,078.4)

  EXPECT_EQ(b.state_slots, 7);
  EXPECT_EQ(b.swa_window_rows, 128);
  EXPECT_EQ(b.max_tail_rows, 127);
  const model_cache_schema pro = build_model_schema(deepseek_v4_pro);
  EXPECT_GT(compute_block_budget(pro, 4096, 1).hca_blocks, 0);
}

TEST(BlockBudget, Errors) {
  const model_cache_schema m = build_model_schema(deepseek_v4_flash);
  expect_invalid([&] { (void)compute_block_budget(m, 0, 1); }, {"max_context_tokens must be >= 1"});
  expect_invalid([&] { (void)compute_block_budget(m, 1, 0); }, {"max_concurrent_requests must be >= 1"});
  expect_invalid([&] { (void)compute_block_budget(m, 1, 1, -1); }, {"headroom_percent must be >= 0"});
  expect_invalid([&] { (void)compute_block_budget(m, std::int64_t{1} << 62, std::int64_t{1} << 40); }, {"overflows"});
}

}  // namespace
}  // namespace dsv4::cache
