// Model presets and the layer schedule: facts section 1 and every schedule error.
#include "dsv4/cache/layer_schedule.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

TEST(Presets, PublishedValues) {
  for (const model_config* c : {&deepseek_v4_flash, &deepseek_v4_pro}) {
    EXPECT_EQ(c->num_nextn_predict_layers, 1);
    EXPECT_EQ(c->head_dim, 512);
    EXPECT_EQ(c->qk_rope_head_dim, 64);
    EXPECT_EQ(c->index_head_dim, 128);
    EXPECT_EQ(c->sliding_window, 128);
    EXPECT_EQ(c->max_position_embeddings, 1'048'576);
  }
  EXPECT_EQ(deepseek_v4_flash.num_hidden_layers, 43);
  EXPECT_EQ(deepseek_v4_pro.num_hidden_layers, 61);
  EXPECT_EQ(deepseek_v4_flash.name.view(), "DeepSeek-V4-Flash");
}

TEST(Schedule, Flash) {
  const layer_schedule s = build_layer_schedule(deepseek_v4_flash);
  ASSERT_EQ(s.num_layers, 44);
  EXPECT_EQ(s.count(attention_kind::swa, false), 2);
  EXPECT_EQ(s.count(attention_kind::csa, false), 21);
  EXPECT_EQ(s.count(attention_kind::hca, false), 20);
  for (int i = 2; i <= 42; i += 2) EXPECT_EQ(s[i].kind, attention_kind::csa) << i;
  for (int i = 3; i <= 41; i += 2) EXPECT_EQ(s[i].kind, attention_kind::hca) << i;
  EXPECT_TRUE(s[43].mtp);
  EXPECT_EQ(s[43].kind, attention_kind::swa);
  EXPECT_FALSE(s[42].mtp);
}

TEST(Schedule, Pro) {
  const layer_schedule s = build_layer_schedule(deepseek_v4_pro);
  ASSERT_EQ(s.num_layers, 62);
  EXPECT_EQ(s.count(attention_kind::csa, false), 30);
  EXPECT_EQ(s.count(attention_kind::hca, false), 31);
  EXPECT_EQ(s.count(attention_kind::swa, false), 0);
  EXPECT_EQ(s[0].kind, attention_kind::hca);
  EXPECT_EQ(s[1].kind, attention_kind::hca);
  EXPECT_EQ(s[60].kind, attention_kind::csa);
  EXPECT_TRUE(s[61].mtp);
  EXPECT_EQ(s[61].kind, attention_kind::swa);
}

TEST(Schedule, RatioOneIsSwa) {
  model_config c = deepseek_v4_flash;
  c.compress_ratios[0] = 1;
  EXPECT_EQ(build_layer_schedule(c)[0].kind, attention_kind::swa);
  EXPECT_EQ(build_layer_schedule(c)[0].compress_ratio, 1);
}

TEST(Schedule, UnsupportedRatioNamesLayerAndValue) {
  model_config c = deepseek_v4_flash;
  c.compress_ratios[5] = 8;
  expect_invalid([&] { (void)build_layer_schedule(c); }, {"compress ratio must be", "layer=5", "compress_ratio=8"});
  c.compress_ratios[5] = -4;
  expect_invalid([&] { (void)build_layer_schedule(c); }, {"layer=5", "compress_ratio=-4"});
}

TEST(Schedule, InvalidConfigFields) {
  model_config c = deepseek_v4_flash;
  c.num_hidden_layers = 0;
  expect_invalid([&] { (void)build_layer_schedule(c); }, {"num_hidden_layers must be > 0", "num_hidden_layers=0"});
  c = deepseek_v4_flash;
  c.num_hidden_layers = 300;
  expect_invalid([&] { (void)build_layer_schedule(c); }, {"<= 256", "num_hidden_layers=300"});
  c = deepseek_v4_flash;
  c.head_dim = -512;
  expect_invalid([&] { (void)build_layer_schedule(c); }, {"head_dim must be > 0", "head_dim=-512"});
  c = deepseek_v4_flash;
  c.qk_rope_head_dim = 512;
  expect_invalid([&] { (void)build_layer_schedule(c); }, {"larger than qk_rope_head_dim", "qk_rope_head_dim=512"});
  c = deepseek_v4_flash;
  c.sliding_window = 0;
  expect_invalid([&] { (void)build_layer_schedule(c); }, {"sliding_window must be > 0", "sliding_window=0"});
  c = deepseek_v4_flash;
  c.max_position_embeddings = -1;
  expect_invalid([&] { (void)build_layer_schedule(c); }, {"max_position_embeddings must be > 0"});
  c = deepseek_v4_flash;
  c.num_nextn_predict_layers = -1;
  expect_invalid([&] { (void)build_layer_schedule(c); }, {"num_nextn_predict_layers must be >= 0"});
}

}  // namespace
}  // namespace dsv4::cache
