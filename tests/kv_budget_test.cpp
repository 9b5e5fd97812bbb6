// gpu_catalog.hpp and kv_budget.hpp: the GPU's memory by name, each engine's fraction default, the
// chain to the KV budget, and the runtime reserve estimate, against hand sums.
#include "dsv4/cache/kv_budget.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "dsv4/cache/gpu_catalog.hpp"
#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

TEST(GpuCatalog, NamesAsTypedFindTheEntry) {
  EXPECT_EQ(find_gpu("h200").bytes, 150'109'880'320);  // measured: torch.cuda.mem_get_info total
  EXPECT_EQ(find_gpu("H200").basis, gpu_memory_basis::runtime_total);
  EXPECT_EQ(&find_gpu("H100 80GB"), &find_gpu("h100-80gb"));
  EXPECT_EQ(find_gpu("h100_sxm").bytes, 85'029'158'912);
  EXPECT_EQ(find_gpu("MI300X").bytes, 205'822'885'888);
  EXPECT_EQ(find_gpu("b200").basis, gpu_memory_basis::nominal);
  EXPECT_EQ(find_gpu("GB200").basis, gpu_memory_basis::nvidia_smi);
  EXPECT_EQ(lookup_gpu("h2000"), nullptr);
}

TEST(GpuCatalog, UnknownNamesAreRefusedWithTheList) {
  expect_invalid([] { (void)find_gpu("rtx9090"); }, {"unknown GPU 'rtx9090'", "H200", "MI300X", "--gpu-memory-gib"});
  expect_invalid([] { (void)find_gpu(""); }, {"unknown GPU ''"});
}

TEST(KvBudget, EngineFractionDefaults) {
  EXPECT_DOUBLE_EQ(kVllmDefaultGpuMemoryUtilization, 0.92);
  EXPECT_DOUBLE_EQ(tokenspeed_default_gpu_memory_utilization(1), 0.88);
  EXPECT_DOUBLE_EQ(tokenspeed_default_gpu_memory_utilization(2), 0.87);
  EXPECT_DOUBLE_EQ(tokenspeed_default_gpu_memory_utilization(4), 0.95);
  EXPECT_DOUBLE_EQ(tokenspeed_default_gpu_memory_utilization(8), 0.81);
  EXPECT_DOUBLE_EQ(tokenspeed_default_gpu_memory_utilization(16), 0.79);
  expect_invalid([] { (void)tokenspeed_default_gpu_memory_utilization(0); }, {"world size"});
  // SGLang, H200 (nvidia-smi 143,771 MiB), tp 8: reserved 512 + 8192 x 1.5 + 8 / 8 x 1024 + 512 x 2
  // = 14,848 MB; (143,771 - 14,848) / 143,771 = 0.89672... -> 0.897.
  EXPECT_DOUBLE_EQ(sglang_default_mem_fraction_static(143771, 8, 1), 0.897);
  // tp 1: 512 + 12,288 + 128 + 512 = 13,440; (143,771 - 13,440) / 143,771 = 0.90651... -> 0.907.
  EXPECT_DOUBLE_EQ(sglang_default_mem_fraction_static(143771, 1, 1), 0.907);
  // H100 (81,559 MiB), tp 8: 14,848 -> (81,559 - 14,848) / 81,559 = 0.81794... -> 0.818.
  EXPECT_DOUBLE_EQ(sglang_default_mem_fraction_static(81559, 8, 1), 0.818);
  expect_invalid([] { (void)sglang_default_mem_fraction_static(143771, 8, 1, 0, true); },
                 {"dp-attention", "--mem-fraction-static"});
}

TEST(KvBudget, VllmChainByHand) {
  // H200 x 0.92 = 138,101,089,894.4 -> 138,101,089,894 B; less 20 GB of weights and 3 GB reserve.
  const kv_budget b = vllm_kv_budget(150'109'880'320, 0.92, 20'000'000'000, 3'000'000'000);
  EXPECT_EQ(b.usable_bytes, 138'101'089'894);
  EXPECT_EQ(b.kv_bytes, 115'101'089'894);
  EXPECT_TRUE(b.fits());
  expect_invalid([] { (void)vllm_kv_budget(150'109'880'320, 0.0, 0, 0); }, {"--gpu-memory-utilization"});
  expect_invalid([] { (void)vllm_kv_budget(150'109'880'320, 1.5, 0, 0); }, {"(0, 1]"});
  expect_invalid([] { (void)vllm_kv_budget(0, 0.9, 0, 0); }, {"GPU memory"});
}

TEST(KvBudget, FixedKvBytesIgnoreTheUtilization) {
  const kv_budget b = vllm_fixed_kv_budget(64LL << 30);
  EXPECT_EQ(b.kv_bytes, 64LL << 30);
  expect_invalid([] { (void)vllm_fixed_kv_budget(0); }, {"--kv-cache-memory-bytes"});
}

// A fixed budget (vLLM --kv-cache-memory-bytes) is allocated beside the weights: 20 GB + 64 GiB =
// 88,719,476,736 B <= 150,109,880,320 fits; 20 GB + 140 GB = 160 GB does not; 156 GB of weights
// do not fit at all; without a GPU (0 bytes) only the budget is checked.
TEST(KvBudget, FixedKvBytesMustFitBesideTheWeights) {
  const std::int64_t h200 = 150'109'880'320;
  EXPECT_TRUE(vllm_fixed_kv_budget(64LL << 30, h200, 20'000'000'000).fits());
  const kv_budget over = vllm_fixed_kv_budget(140'000'000'000, h200, 20'000'000'000);
  EXPECT_TRUE(over.weights_fit());
  EXPECT_FALSE(over.fits());
  const kv_budget heavy = vllm_fixed_kv_budget(1, h200, 156'000'000'000);
  EXPECT_FALSE(heavy.weights_fit());
  EXPECT_FALSE(heavy.fits());
  EXPECT_FALSE(vllm_fixed_kv_budget(std::numeric_limits<std::int64_t>::max(), h200, 0).fits());
  EXPECT_TRUE(vllm_fixed_kv_budget(std::numeric_limits<std::int64_t>::max()).fits());
  EXPECT_TRUE(vllm_fixed_kv_budget(h200 - 20'000'000'000, h200, 20'000'000'000).fits());  // to the byte
  EXPECT_FALSE(vllm_fixed_kv_budget(h200 - 20'000'000'000 + 1, h200, 20'000'000'000).fits());
}

TEST(KvBudget, FlashOnOneH200DoesNotFit) {
  const std::int64_t w = max_rank_weight_bytes(deepseek_v4_flash, weight_sharding_for(weight_engine::vllm, {}));
  const kv_budget b = vllm_kv_budget(find_gpu("h200").bytes, kVllmDefaultGpuMemoryUtilization, w, 0);
  EXPECT_FALSE(b.weights_fit());
  EXPECT_FALSE(b.fits());
}

TEST(KvBudget, ProOnEightH200sFits) {
  engine_parallel p;
  p.tp = 8;
  const std::int64_t w = max_rank_weight_bytes(deepseek_v4_pro, weight_sharding_for(weight_engine::vllm, p));
  const runtime_reserve r = estimate_runtime_reserve(deepseek_v4_pro, 8192, 256);
  const kv_budget b = vllm_kv_budget(find_gpu("h200").bytes, 0.92, w, r.total());
  EXPECT_TRUE(b.weights_fit());
  EXPECT_TRUE(b.fits());
  EXPECT_EQ(b.kv_bytes, b.usable_bytes - w - r.total());
}

TEST(KvBudget, ReserveEstimateByHand) {
  // V4-Flash, T = 8,192, S = 256: topk buffer 8,192 x 512 x 4 = 16,777,216; MTP hidden buffer
  // 8,192 x 4 x 4,096 x 2 = 268,435,456; residual copies 8,192 x 16,384 x 2 x 4 = 1,073,741,824;
  // MoE dispatch 8,192 x 6 x 4,096 x 2 x 2 = 805,306,368; logits 256 x 129,280 x 4 = 132,382,720.
  const runtime_reserve r = estimate_runtime_reserve(deepseek_v4_flash, 8192, 256);
  EXPECT_EQ(r.persistent_buffers, 16'777'216 + 268'435'456);
  EXPECT_EQ(r.activation_peak, 1'073'741'824 + 805'306'368);
  EXPECT_EQ(r.logits, 132'382'720);
  EXPECT_EQ(r.non_torch, 1LL << 30);
  EXPECT_EQ(r.total(), 3'370'385'408);
  expect_invalid([] { (void)estimate_runtime_reserve(deepseek_v4_flash, 0, 256); }, {"max batched tokens"});
  expect_invalid([] { (void)estimate_runtime_reserve(deepseek_v4_1_flash, 8192, 256); }, {"V4.1"});
}

}  // namespace
}  // namespace dsv4::cache
