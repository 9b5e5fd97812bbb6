// GPU tests of the insert/gather kernels and the device arena (ctest label `gpu`).
// Every case skips, saying why, when the CUDA runtime sees no device. The host-validation
// tests need no device: they only check what the launch helpers refuse before launching.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include "dsv4/cache/cuda/device_arena.cuh"
#include "dsv4/cache/cuda/kernels.cuh"
#include "gpu_cases.cuh"

namespace dsv4::cache::cuda {
namespace {

#define DSV4_REQUIRE_DEVICE()                                                                       \
  do {                                                                                              \
    if (!sample::device_present()) GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount found none"; \
  } while (0)

TEST(GpuKernels, Fp8DsMlaMatchesHostCodec) {
  DSV4_REQUIRE_DEVICE();
  EXPECT_EQ(gpu_test::case_fp8_ds_mla(), "");
}
TEST(GpuKernels, IndexerFp8MatchesHostCodec) {
  DSV4_REQUIRE_DEVICE();
  EXPECT_EQ(gpu_test::case_indexer_fp8(), "");
}
TEST(GpuKernels, IndexerMxfp4MatchesHostCodec) {
  DSV4_REQUIRE_DEVICE();
  EXPECT_EQ(gpu_test::case_indexer_mxfp4(), "");
}
TEST(GpuKernels, EveryRegionOfTheArena) {
  DSV4_REQUIRE_DEVICE();
  EXPECT_EQ(gpu_test::case_every_region(), "");
}
TEST(GpuKernels, EveryRegionOfAV41Arena) {
  DSV4_REQUIRE_DEVICE();
  EXPECT_EQ(gpu_test::case_every_region_v41(), "");
}
TEST(GpuKernels, EveryRegionOfAV32Arena) {
  DSV4_REQUIRE_DEVICE();
  EXPECT_EQ(gpu_test::case_every_region_v32(), "");
}
TEST(GpuKernels, EveryRegionOfEngineArenasThroughBlockTables) {
  DSV4_REQUIRE_DEVICE();
  EXPECT_EQ(gpu_test::case_every_region_engines(), "");
}
TEST(GpuKernels, SpecializedAndGenericKernelsWriteTheSameBytesForEveryWriter) {
  DSV4_REQUIRE_DEVICE();
  EXPECT_EQ(gpu_test::case_fast_equals_generic(), "");
}

TEST(GpuKernels, ArenaIsZeroFilledAndMoveOnly) {
  DSV4_REQUIRE_DEVICE();
  const arena_layout a = gpu_test::small_layout(deepseek_v4_flash, indexer_format::fp8);
  device_arena first(a);
  device_arena arena(std::move(first));
  EXPECT_EQ(first.data(), nullptr);
  EXPECT_EQ(arena.read_error_count(), 0u);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(a.total_bytes));
  ASSERT_EQ(cudaMemcpy(bytes.data(), arena.data(), bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  for (std::size_t i = 0; i < bytes.size(); ++i) ASSERT_EQ(bytes[i], 0) << "byte " << i;
}

// ---- host-side validation: no device needed, nothing is launched ----

fp8_ds_mla_pool_view fake_fp8_view() {
  fp8_ds_mla_pool_view v;
  v.base = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 20);  // never dereferenced
  v.layout = make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(512, 64), 64);
  v.page_bytes = v.layout.page_bytes();
  v.num_pages = 4;
  v.rows_per_page = 64;
  return v;
}

TEST(KernelLaunchValidation, RefusesBadShapesBeforeLaunching) {
  const fp8_ds_mla_pool_view v = fake_fp8_view();
  const auto* in = reinterpret_cast<const bf16*>(std::uintptr_t{1} << 21);
  const auto* slots = reinterpret_cast<const std::int64_t*>(std::uintptr_t{1} << 22);
  // Zero tokens: nothing to launch, nothing to refuse.
  EXPECT_NO_THROW(insert_rows(v, in, 512, slots, 0, nullptr, nullptr));
  EXPECT_THROW(insert_rows(v, in, 500, slots, 1, nullptr, nullptr), std::invalid_argument);      // stride < 512
  EXPECT_THROW(insert_rows(v, in, 516, slots, 1, nullptr, nullptr), std::invalid_argument);      // stride % 8
  EXPECT_THROW(insert_rows(v, in + 1, 512, slots, 1, nullptr, nullptr), std::invalid_argument);  // misaligned
  EXPECT_THROW(insert_rows(v, in, 512, nullptr, 1, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(insert_rows(v, in, 512, slots, -1, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(gather_rows(v, slots, 1, nullptr, nullptr, 512, nullptr, nullptr), std::invalid_argument);
  fp8_ds_mla_pool_view bad = v;
  bad.page_bytes = 37'376;  // not the padded page
  EXPECT_THROW(insert_rows(bad, in, 512, slots, 1, nullptr, nullptr), std::invalid_argument);
  bad = v;
  bad.rows_per_page = 32;
  EXPECT_THROW(insert_rows(bad, in, 512, slots, 1, nullptr, nullptr), std::invalid_argument);
  bad = v;
  bad.base = nullptr;
  EXPECT_THROW(insert_rows(bad, in, 512, slots, 1, nullptr, nullptr), std::invalid_argument);
}

TEST(KernelLaunchValidation, RefusesAPolicyTheSpecializedKernelsDoNotImplement) {
  const fp8_ds_mla_pool_view v = fake_fp8_view();
  const auto* in = reinterpret_cast<const bf16*>(std::uintptr_t{1} << 21);
  const auto* slots = reinterpret_cast<const std::int64_t*>(std::uintptr_t{1} << 22);
  format_policy trtllm = formats::v4_fp8_ds_mla_footer::default_policy;  // float log2: the generic path's
  ASSERT_EQ(trtllm.fp8_exp, fp8_exponent::float_log2_ceil);
  EXPECT_THROW(insert_rows(v, in, 512, slots, 1, nullptr, nullptr, trtllm), std::invalid_argument);
  EXPECT_NO_THROW(insert_rows(v, in, 512, slots, 0, nullptr, nullptr, formats::v4_fp8_ds_mla::writers[1].policy));
}

TEST(KernelLaunchValidation, IndexerViewMustHaveItsFormat) {
  indexer_mxfp4_pool_view v;
  v.base = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 20);
  v.layout = make_indexer_page_layout(make_indexer_row_format(indexer_format::fp8, 128), 64);  // FP8 layout
  v.page_bytes = v.layout.page_bytes();
  v.num_pages = 4;
  v.rows_per_page = 64;
  const auto* slots = reinterpret_cast<const std::int64_t*>(std::uintptr_t{1} << 22);
  auto* out = reinterpret_cast<float*>(std::uintptr_t{1} << 21);
  EXPECT_THROW(gather_rows(v, slots, 1, nullptr, out, 128, nullptr, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace dsv4::cache::cuda
