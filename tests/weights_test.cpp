// weights.hpp: the checkpoint's tensors against the published safetensors index totals, per-tensor
// hand sums, the weight fields read from config.json, and the per-rank split.
#include "dsv4/cache/weights.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "dsv4/cache/config_json.hpp"
#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

const std::filesystem::path kData = DSV4_TEST_DATA_DIR;

// The published checkpoints' model.safetensors.index.json `metadata.total_size` and entry counts:
// DeepSeek-V4-Flash 159,609,485,896 B in 69,187 tensors (1,575 of them mtp.0), DeepSeek-V4-Pro
// 864,704,792,696 B in 145,116 tensors (as pinned by fxp19950422/rtp-llm
// rtp_llm/model_loader/test/ @ 0cc3ab0b and by the DeepSeek-V4-Pro artifact pins found in public
// code; https://huggingface.co/deepseek-ai/DeepSeek-V4-Flash and -Pro).
constexpr std::int64_t kFlashIndexBytes = 159'609'485'896;
constexpr std::int64_t kProIndexBytes = 864'704'792'696;

TEST(Weights, FlashMatchesThePublishedIndexToTheByte) {
  const checkpoint_totals t = checkpoint_weight_totals(deepseek_v4_flash);
  EXPECT_EQ(t.bytes, kFlashIndexBytes);
  EXPECT_EQ(t.tensors, 69'187);
  std::int64_t mtp = 0;
  for_each_weight(deepseek_v4_flash, [&](const weight_tensor& w) {
    if (w.layer >= deepseek_v4_flash.num_hidden_layers) mtp += w.count;
  });
  EXPECT_EQ(mtp, 1'575);
}

TEST(Weights, ProMatchesThePublishedIndexToTheByte) {
  const checkpoint_totals t = checkpoint_weight_totals(deepseek_v4_pro);
  EXPECT_EQ(t.bytes, kProIndexBytes);
  EXPECT_EQ(t.tensors, 145'116);
}

TEST(Weights, ConfigJsonGivesThePresetsWeights) {
  for (const auto& [file, preset] : {std::pair{"deepseek-v4-flash.config.json", deepseek_v4_flash},
                                     std::pair{"deepseek-v4-pro.config.json", deepseek_v4_pro}}) {
    const model_config c = load_model_config(kData / file);
    ASSERT_TRUE(c.arch.known) << file;
    EXPECT_EQ(checkpoint_weight_bytes(c), checkpoint_weight_bytes(preset)) << file;
    EXPECT_EQ(c.arch.hidden_size, preset.arch.hidden_size);
    EXPECT_EQ(c.arch.o_groups, preset.arch.o_groups);
    EXPECT_EQ(c.arch.experts, expert_storage::fp4);
    EXPECT_EQ(c.arch.scales, block_scale_dtype::ue8m0);
  }
}

// Hand sums from the config (hidden 4,096, 64 heads x 512, q_lora 1,024, o_groups 8 x o_lora
// 1,024, 256 experts of 2,048, index 64 x 128, hc_mult 4), layer 2 of V4-Flash (ratio 4).
TEST(Weights, FlashLayerTwoTensorsByHand) {
  std::map<std::string, std::int64_t> bytes;
  std::map<std::string, std::int64_t> count;
  for_each_weight(deepseek_v4_flash, [&](const weight_tensor& w) {
    if (w.layer != 2) return;
    bytes[std::string(w.pattern)] += w.bytes();
    count[std::string(w.pattern)] += w.count;
  });
  EXPECT_EQ(bytes["layers.{L}.attn.wq_b.weight"], 64 * 512 * 1024);              // FP8 [32768, 1024]
  EXPECT_EQ(bytes["layers.{L}.attn.wq_b.scale"], (32768 / 128) * (1024 / 128));  // UE8M0 [256, 8]
  EXPECT_EQ(bytes["layers.{L}.attn.wo_a.weight"], 8 * 1024 * (64 * 512 / 8));    // [8192, 4096]
  EXPECT_EQ(bytes["layers.{L}.attn.wo_b.scale"], (4096 / 128) * (8192 / 128));
  EXPECT_EQ(bytes["layers.{L}.attn.attn_sink"], 64 * 4);
  // Routed experts w1: 256 x [2048, 4096 / 2] packed FP4 + 256 x [2048, 4096 / 32] UE8M0.
  EXPECT_EQ(count["layers.{L}.ffn.experts.{E}.w1.weight"], 256);
  EXPECT_EQ(bytes["layers.{L}.ffn.experts.{E}.w1.weight"], std::int64_t{256} * 2048 * 2048);
  EXPECT_EQ(bytes["layers.{L}.ffn.experts.{E}.w1.scale"], std::int64_t{256} * 2048 * 128);
  EXPECT_EQ(bytes["layers.{L}.ffn.experts.{E}.w2.weight"], std::int64_t{256} * 4096 * 1024);
  // Compressor of a ratio-4 layer (overlap: 2 x 512 wide), indexer compressor (2 x 128).
  EXPECT_EQ(bytes["layers.{L}.attn.compressor.wkv.weight"], 1024 * 4096 * 2);
  EXPECT_EQ(bytes["layers.{L}.attn.compressor.ape"], 4 * 1024 * 4);
  EXPECT_EQ(bytes["layers.{L}.attn.indexer.compressor.wgate.weight"], 256 * 4096 * 2);
  EXPECT_EQ(bytes["layers.{L}.attn.indexer.weights_proj.weight"], 64 * 4096 * 2);
  // Hyper-connections: fn [(2+4)*4, 4*4096] F32.
  EXPECT_EQ(bytes["layers.{L}.hc_attn_fn"], 24 * 16384 * 4);
  // Layer 2 is a hash-routed layer (num_hash_layers 3): tid2eid [129280, 6] I64, no bias.
  EXPECT_EQ(bytes["layers.{L}.ffn.gate.tid2eid"], std::int64_t{129280} * 6 * 8);
  EXPECT_EQ(count.count("layers.{L}.ffn.gate.bias"), 0U);
  // Layer 2: 23 + 6 shared + 1536 routed + 4 compressor + 3 indexer + 4 indexer compressor.
  std::int64_t tensors = 0;
  for (const auto& [name, n] : count) tensors += n;
  EXPECT_EQ(tensors, 1576);
}

TEST(Weights, ModelsWithoutWeightFieldsAreRefusedSayingWhy) {
  expect_invalid([] { (void)checkpoint_weight_bytes(deepseek_v4_1_flash); }, {"V4.1", "Engram", "--memory-gib"});
  expect_invalid([] { (void)checkpoint_weight_bytes(deepseek_v3_2); }, {"V3.2", "not modelled"});
  const model_config tiny = load_model_config(kData / "tiny-v4.config.json");
  EXPECT_FALSE(tiny.arch.known);
  expect_invalid([&] { (void)checkpoint_weight_bytes(tiny); }, {"no weight fields", "hidden_size"});
  const model_config v41 = load_model_config(kData / "deepseek-v4.1-flash.config.json");
  expect_invalid([&] { (void)checkpoint_weight_bytes(v41); }, {"V4.1"});
}

TEST(Weights, PipelineStagesSplitLayersAsVllm) {
  // vLLM get_pp_indices: 43 // 4 = 10, remainder 3 to stages 2, 1, 0 (never the last).
  EXPECT_EQ((pp_layer_range(43, 4, 0)), (std::array<int, 2>{0, 11}));
  EXPECT_EQ((pp_layer_range(43, 4, 2)), (std::array<int, 2>{22, 33}));
  EXPECT_EQ((pp_layer_range(43, 4, 3)), (std::array<int, 2>{33, 43}));
  EXPECT_EQ((pp_layer_range(61, 2, 0)), (std::array<int, 2>{0, 31}));
  expect_invalid([] { (void)pp_layer_range(2, 3, 0); }, {"--pp", "num_hidden_layers"});
}

// One GPU holds everything but the MTP layer (not loaded without speculative decoding).
TEST(Weights, OneRankHoldsTheCheckpointLessMtp) {
  const weight_sharding one = weight_sharding_for(weight_engine::vllm, {});
  const checkpoint_totals t = checkpoint_weight_totals(deepseek_v4_flash);
  EXPECT_EQ(max_rank_weight_bytes(deepseek_v4_flash, one), t.bytes - t.mtp_bytes);
  engine_parallel with_mtp;
  with_mtp.mtp_loaded = true;
  EXPECT_EQ(max_rank_weight_bytes(deepseek_v4_flash, weight_sharding_for(weight_engine::vllm, with_mtp)), t.bytes);
}

// Splitting conserves bytes: over the tp ranks of one replica, split parts add up to the whole and
// replicated parts appear tp times (V4-Flash: every split dim divisible by 8).
TEST(Weights, SplitsConserveBytesAcrossRanks) {
  engine_parallel p;
  p.tp = 8;
  const weight_sharding s = weight_sharding_for(weight_engine::vllm, p);
  std::int64_t replicated = 0, split = 0;
  for_each_weight(deepseek_v4_flash, [&](const weight_tensor& w) {
    if (w.layer >= deepseek_v4_flash.num_hidden_layers) return;
    const bool is_split = rank_tensor_bytes(w, s) != w.bytes();
    (is_split ? split : replicated) += w.bytes();
  });
  EXPECT_EQ(rank_weight_bytes(deepseek_v4_flash, s) * 8, replicated * 8 + split);
  // EP over 8: experts 256 / 8 each, whole; the same routed bytes per rank as TP's slices.
  p.ep = 8;
  const weight_sharding e = weight_sharding_for(weight_engine::vllm, p);
  EXPECT_EQ(e.expert_ranks, 8);
  EXPECT_EQ(e.moe_tp, 1);
  EXPECT_EQ(rank_weight_bytes(deepseek_v4_flash, e), rank_weight_bytes(deepseek_v4_flash, s));
}

TEST(Weights, DpAttentionReplicatesAttentionInSglang) {
  engine_parallel p;
  p.tp = 8;
  p.dp = 8;
  p.ep = 8;
  p.dp_attention = true;
  const weight_sharding s = weight_sharding_for(weight_engine::sglang, p);
  EXPECT_EQ(s.attention_tp, 1);
  EXPECT_EQ(s.embed_tp, 1);
  EXPECT_EQ(s.gpus, 8);
  p.dp_attention = false;
  p.dp = 1;
  const weight_sharding t = weight_sharding_for(weight_engine::sglang, p);
  EXPECT_GT(rank_weight_bytes(deepseek_v4_pro, s), rank_weight_bytes(deepseek_v4_pro, t));
  // The difference is exactly the attention parts and embedding held whole instead of 1/8.
  std::int64_t attn = 0;
  for_each_weight(deepseek_v4_pro, [&](const weight_tensor& w) {
    if (w.layer >= deepseek_v4_pro.num_hidden_layers) return;
    if (w.part == weight_part::attn_heads || w.part == weight_part::attn_row || w.part == weight_part::embedding)
      attn += w.bytes() - rank_tensor_bytes(w, t);
  });
  EXPECT_EQ(rank_weight_bytes(deepseek_v4_pro, s) - rank_weight_bytes(deepseek_v4_pro, t), attn);
}

TEST(Weights, BadLayoutsAreRefusedNamingTheFlag) {
  engine_parallel p;
  p.tp = 0;
  expect_invalid([&] { (void)weight_sharding_for(weight_engine::vllm, p); }, {"--tp"});
  p.tp = 8;
  p.ep = 4;
  expect_invalid([&] { (void)weight_sharding_for(weight_engine::vllm, p); }, {"--ep", "tp x dp"});
  p.ep = 3;
  expect_invalid([&] { (void)weight_sharding_for(weight_engine::sglang, p); }, {"--ep", "divide"});
  p.ep = 1;
  p.dp_attention = true;
  expect_invalid([&] { (void)weight_sharding_for(weight_engine::vllm, p); }, {"vLLM", "dp-attention"});
}

TEST(Weights, TheFlashWeightsNeedMoreThanOneH200) {
  // 159.6 GB on one rank without MTP: more than the 150,109,880,320 B an H200 reports.
  const std::int64_t one = max_rank_weight_bytes(deepseek_v4_flash, weight_sharding_for(weight_engine::vllm, {}));
  EXPECT_GT(one, std::int64_t{150'109'880'320});
}

}  // namespace
}  // namespace dsv4::cache
