// Row codecs: byte-exact golden rows worked out by hand from the recipes of facts section 4,
// fault classes 1-6 and 10 of facts section 5, round-trip error bounds, NaN/Inf policies and
// canary bytes proving that a row's quantize / dequantize touch only that row's bytes.
#include "dsv4/cache/row_codec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "test_util.hpp"

namespace dsv4::cache {
namespace {
using testing::expect_invalid;

const fp8_ds_mla_page_layout kMla64 = make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(512, 64), 64);
const fp8_ds_mla_page_layout kMla2 = make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(512, 64), 2);
const indexer_page_layout kIdxFp8 = make_indexer_page_layout(make_indexer_row_format(indexer_format::fp8, 128), 64);
const indexer_page_layout kIdxMx = make_indexer_page_layout(make_indexer_row_format(indexer_format::mxfp4, 128), 64);

/// A BF16 input value; the test values are all exact in BF16 (checked).
bf16 bf(float x) {
  const bf16 b = float_to_bf16(x);
  EXPECT_EQ(bf16_to_float(b), x) << x << " is not a BF16 value";
  return b;
}

std::vector<bf16> row_of(std::size_t n, float fill = 0.0f) { return std::vector<bf16>(n, bf(fill)); }

std::vector<std::uint8_t> quantize_mla(const std::vector<bf16>& in, std::int64_t row = 0,
                                       const quant_policy& p = quant_policy{}) {
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kMla2.page_bytes()), 0xA5);
  quantize_fp8_ds_mla_row(kMla2, page, row, in, p);
  return page;
}

/// Row r's NoPE codes, and its scale bytes, in a quantized kMla2 page.
const std::uint8_t* mla_codes(const std::vector<std::uint8_t>& page, std::int64_t r = 0) {
  return page.data() + kMla2.data_offset(r);
}
const std::uint8_t* mla_scales(const std::vector<std::uint8_t>& page, std::int64_t r = 0) {
  return page.data() + kMla2.scale_offset(r);
}

// ---------------------------------------------------------------- fp8_ds_mla golden rows

TEST(Fp8DsMlaRow, Fault1ZeroBlockHasFiniteScale105) {
  // Facts 5.1: amax = max(0, 1e-4); 1e-4 / 448 = 2^-22.09 -> e = -22 -> byte 105; codes 0.
  auto in = row_of(512);
  for (int j = 0; j < 64; ++j) in[448 + j] = bf(static_cast<float>(j) - 32.0f);  // RoPE
  const auto page = quantize_mla(in);
  for (int i = 0; i < 448; ++i) ASSERT_EQ(mla_codes(page)[i], 0x00) << i;
  for (int b = 0; b < 7; ++b) EXPECT_EQ(mla_scales(page)[b], 105) << b;
  EXPECT_EQ(mla_scales(page)[7], 0x00) << "pad byte";
  for (int j = 0; j < 64; ++j) {  // RoPE: BF16 little-endian, bit for bit
    EXPECT_EQ(mla_codes(page)[448 + 2 * j], in[448 + j].bits & 0xFF);
    EXPECT_EQ(mla_codes(page)[448 + 2 * j + 1], in[448 + j].bits >> 8);
  }
  std::array<float, 512> out{};
  dequantize_fp8_ds_mla_row(kMla2, page, 0, std::span<float>(out));
  for (int i = 0; i < 448; ++i) EXPECT_EQ(out[i], 0.0f);
  for (int j = 0; j < 64; ++j) EXPECT_EQ(out[448 + j], static_cast<float>(j) - 32.0f);
}

TEST(Fp8DsMlaRow, GoldenOneHugeValue) {
  // Block 0: one 1000 among zeros. 1000/448 = 2.23 -> e = ceil(1.16) = 2 -> byte 129.
  // 1000 / 4 = 250 = 1.953125 x 2^7 -> nearest E4M3 is 2.0 x 2^7 = 256 -> exponent 7+7 = 15, m 0
  // -> 0x78. Block 1: one 448 x 2^10 = 458752 -> e = 10, byte 137, code 0x7E.
  auto in = row_of(512);
  in[5] = bf(1000.0f);
  in[64 + 63] = bf(-458752.0f);
  const auto page = quantize_mla(in);
  EXPECT_EQ(mla_scales(page)[0], 129);
  EXPECT_EQ(mla_codes(page)[5], 0x78);
  EXPECT_EQ(mla_scales(page)[1], 137);
  EXPECT_EQ(mla_codes(page)[127], 0xFE);
  for (int i = 0; i < 128; ++i) {
    if (i != 5 && i != 127) {
      EXPECT_EQ(mla_codes(page)[i], 0x00) << i;
    }
  }
  for (int b = 2; b < 7; ++b) EXPECT_EQ(mla_scales(page)[b], 105);
  std::array<float, 512> out{};
  dequantize_fp8_ds_mla_row(kMla2, page.data(), 0, out.data());
  EXPECT_EQ(out[5], 1024.0f);
  EXPECT_EQ(out[127], -458752.0f);
}

TEST(Fp8DsMlaRow, GoldenMixedSigns) {
  // amax 2 -> 2/448 = 2^-7.8 -> e = -7, byte 120; x * 2^7: 1 -> 128 = 2^7 -> 0x70, 0.5 -> 0x68,
  // 2 -> 256 -> 0x78, 1.5 -> 192 = 1.5 x 2^7 -> 0x74; negatives set bit 7.
  auto in = row_of(512);
  const float vals[8] = {1.0f, -1.0f, 0.5f, -0.5f, 2.0f, -2.0f, 1.5f, -1.5f};
  const std::uint8_t codes[8] = {0x70, 0xF0, 0x68, 0xE8, 0x78, 0xF8, 0x74, 0xF4};
  for (int i = 0; i < 64; ++i) in[i] = bf(vals[i % 8]);
  const auto page = quantize_mla(in);
  EXPECT_EQ(mla_scales(page)[0], 120);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(mla_codes(page)[i], codes[i % 8]) << i;
}

TEST(Fp8DsMlaRow, GoldenBlockOf448s) {
  // amax 448 -> 448/448 = 1 -> e = 0 -> byte 127; every code 0x7E (+448) / 0xFE (-448).
  auto in = row_of(512);
  for (int i = 128; i < 192; ++i) in[i] = bf(i % 2 ? -448.0f : 448.0f);
  const auto page = quantize_mla(in);
  EXPECT_EQ(mla_scales(page)[2], 127);
  for (int i = 128; i < 192; ++i) EXPECT_EQ(mla_codes(page)[i], i % 2 ? 0xFE : 0x7E);
  std::array<float, 512> out{};
  dequantize_fp8_ds_mla_row(kMla2, page.data(), 0, out.data());
  for (int i = 128; i < 192; ++i) EXPECT_EQ(out[i], i % 2 ? -448.0f : 448.0f);
}

TEST(Fp8DsMlaRow, GoldenSubnormalRange) {
  // amax 1 -> e = ceil(log2(1/448)) = -8, byte 119; x * 2^8 lands in E4M3 subnormals
  // (m x 2^-9): 2^-16 -> 2^-8 = 2 x 2^-9 -> 0x02; 3 x 2^-18 -> 1.5 x 2^-9 -> tie -> 0x02;
  // 2^-18 -> 0.5 x 2^-9 -> tie -> 0x00; 7 x 2^-18 -> 3.5 -> tie -> 0x04; 2^-8 -> 1.0 -> 0x38.
  auto in = row_of(512);
  in[0] = bf(1.0f);
  in[1] = bf(std::ldexp(1.0f, -16));
  in[2] = bf(std::ldexp(3.0f, -18));
  in[3] = bf(std::ldexp(1.0f, -18));
  in[4] = bf(std::ldexp(7.0f, -18));
  in[5] = bf(-std::ldexp(1.0f, -16));
  in[6] = bf(std::ldexp(1.0f, -8));
  const auto page = quantize_mla(in);
  EXPECT_EQ(mla_scales(page)[0], 119);
  const std::uint8_t want[7] = {0x78, 0x02, 0x02, 0x00, 0x04, 0x82, 0x38};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(mla_codes(page)[i], want[i]) << i;
}

TEST(Fp8DsMlaRow, Fault2OverflowInsideABlockSaturates) {
  // 464 and 500 in a block whose scale is set by a larger value still never produce 0x7F:
  // amax 500 -> e = 1; 500/2 = 250 -> 256 (0x78); 448/2 = 224 = 1.75 x 2^7 -> (14 << 3) | 6 = 0x76.
  auto in = row_of(512);
  in[0] = bf(500.0f);
  in[1] = bf(448.0f);
  const auto page = quantize_mla(in);
  EXPECT_EQ(mla_scales(page)[0], 128);
  EXPECT_EQ(mla_codes(page)[0], 0x78);
  EXPECT_EQ(mla_codes(page)[1], 0x76);
  for (int i = 0; i < 448; ++i) EXPECT_NE(mla_codes(page)[i] & 0x7F, 0x7F) << i;
}

TEST(Fp8DsMlaRow, Fault6SplitPageRowOneScalesAt36872) {
  // Facts 5.6: in a 64-row page row 1's data is at 576 and its scales at 64 x 576 + 8 = 36,872
  // (never at 1 x 584). Everything else in the page stays as it was.
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kMla64.page_bytes()), 0xA5);
  ASSERT_EQ(page.size(), 37'440U);
  auto in = row_of(512, 3.0f);  // 3/448 -> e = -7, byte 120; 3 x 128 = 384 -> 0x7C
  quantize_fp8_ds_mla_row(kMla64, page, 1, in);
  for (std::size_t i = 0; i < page.size(); ++i) {
    if (i >= 576 && i < 576 + 576) {
      EXPECT_EQ(page[i], i < 576 + 448 ? 0x7C : 0x40) << i;  // RoPE 3.0 = BF16 0x4040
    } else if (i >= 36'872 && i < 36'872 + 8) {
      EXPECT_EQ(page[i], i < 36'872 + 7 ? 120 : 0) << i;
    } else {
      ASSERT_EQ(page[i], 0xA5) << "byte " << i << " outside row 1 was written";
    }
  }
}

TEST(Fp8DsMlaRow, Fault10RowOutOfRangeWritesNothing) {
  // Facts 5.10: the padding slot -1 and slots past the page are rejected before any write.
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kMla64.page_bytes()), 0xA5);
  const auto in = row_of(512, 1.0f);
  expect_invalid([&] { quantize_fp8_ds_mla_row(kMla64, page.data(), -1, in.data()); },
                 {"row must be in [0, rows_per_page)", "row=-1", "rows_per_page=64"});
  expect_invalid([&] { quantize_fp8_ds_mla_row(kMla64, page.data(), 64, in.data()); }, {"row=64"});
  for (std::uint8_t b : page) ASSERT_EQ(b, 0xA5);
  std::array<float, 512> out{};
  expect_invalid([&] { dequantize_fp8_ds_mla_row(kMla64, page.data(), 64, out.data()); }, {"row=64"});
  expect_invalid([&] { quantize_fp8_ds_mla_row(kMla64, std::span<std::uint8_t>(page).first(100), 0, in); },
                 {"page span is smaller than the page"});
  expect_invalid([&] { quantize_fp8_ds_mla_row(kMla64, page, 0, std::span<const bf16>(in).first(448)); },
                 {"span must hold exactly the row's values", "size=448", "values=512"});
}

// ---------------------------------------------------------------- indexer FP8 golden rows

std::uint32_t fp32_scale_at(const std::vector<std::uint8_t>& page, const indexer_page_layout& l, std::int64_t r) {
  const std::uint8_t* s = page.data() + l.scale_offset(r);
  return static_cast<std::uint32_t>(s[0] | (s[1] << 8) | (s[2] << 16)) | (static_cast<std::uint32_t>(s[3]) << 24);
}

TEST(IndexerFp8Row, Fault1ZeroRowAndGoldenScales) {
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kIdxFp8.page_bytes()), 0xA5);
  quantize_indexer_fp8_row(kIdxFp8, page.data(), 1, row_of(128).data());
  // 1e-4 floor: scale 2^-22 = fp32 0x34800000, little-endian 00 00 80 34, at 64 x 128 + 4.
  EXPECT_EQ(kIdxFp8.scale_offset(1), 8196);
  EXPECT_EQ(page[8196], 0x00);
  EXPECT_EQ(page[8197], 0x00);
  EXPECT_EQ(page[8198], 0x80);
  EXPECT_EQ(page[8199], 0x34);
  for (int i = 128; i < 256; ++i) EXPECT_EQ(page[i], 0);
  // 1e-10 floor (other engines): 1e-10 / 448 = 2^-42.03 -> 2^-42 = fp32 (85 << 23) = 0x2A800000.
  quant_policy p;
  p.indexer_fp8_amax_floor = 1e-10f;
  quantize_indexer_fp8_row(kIdxFp8, page.data(), 1, row_of(128).data(), p);
  EXPECT_EQ(fp32_scale_at(page, kIdxFp8, 1), 0x2A800000U);
  // amax 448 -> scale 1.0 (0x3F800000); amax 450 -> 2.0 (0x40000000), 450/2 = 225 -> 224 (0x76).
  auto in = row_of(128, 448.0f);
  quantize_indexer_fp8_row(kIdxFp8, page.data(), 2, in.data());
  EXPECT_EQ(fp32_scale_at(page, kIdxFp8, 2), 0x3F800000U);
  EXPECT_EQ(page[2 * 128], 0x7E);
  in[0] = bf(450.0f);
  quantize_indexer_fp8_row(kIdxFp8, page.data(), 2, in.data());
  EXPECT_EQ(fp32_scale_at(page, kIdxFp8, 2), 0x40000000U);
  EXPECT_EQ(page[2 * 128], 0x76);
}

// ---------------------------------------------------------------- indexer MXFP4 golden rows

TEST(IndexerMxfp4Row, Fault4CeilingNotFloor) {
  // Facts 5.4: amax 5.5 -> e = ceil(log2(5.5/6)) = 0 -> scale 1 (byte 127), 5.5 -> 6.0 (code 7);
  // the faulty floor gives scale 0.5 and clips 5.5 to 3.0.
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kIdxMx.page_bytes()), 0xA5);
  auto in = row_of(128);
  in[0] = bf(5.5f);
  quantize_indexer_mxfp4_row(kIdxMx, page.data(), 0, in.data());
  EXPECT_EQ(page[kIdxMx.scale_offset(0)], 127);
  EXPECT_EQ(page[0], 0x07);
  std::array<float, 128> out{};
  dequantize_indexer_row(kIdxMx, page.data(), 0, out.data());
  EXPECT_EQ(out[0], 6.0f);
}

TEST(IndexerMxfp4Row, Fault3TiesAndNibbleOrder) {
  // Block amax 6 -> e = 0, scale 1: 0.75, 1.75, 3.5 -> codes 2, 4, 6 (facts 5.3). Element 2i in
  // the low nibble: bytes (lo | hi << 4).
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kIdxMx.page_bytes()), 0xA5);
  auto in = row_of(128);
  const float v[6] = {0.75f, 1.75f, 3.5f, -6.0f, 0.5f, -0.25f};
  for (int i = 0; i < 6; ++i) in[i] = bf(v[i]);
  quantize_indexer_mxfp4_row(kIdxMx, page.data(), 0, in.data());
  EXPECT_EQ(page[kIdxMx.scale_offset(0)], 127);
  EXPECT_EQ(page[0], 0x42);  // 0.75 -> 2 (low), 1.75 -> 4 (high)
  EXPECT_EQ(page[1], 0xF6);  // 3.5 -> 6, -6 -> 0xF
  EXPECT_EQ(page[2], 0x81);  // 0.5 -> 1, -0.25 -> -0 (0x8)
}

TEST(IndexerMxfp4Row, Fault5ScaleByteZeroIs2ToTheMinus127) {
  // A zero block (no floor): amax 0 -> exponent clamps to -127, byte 0, codes 0 (finite).
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kIdxMx.page_bytes()), 0xA5);
  quantize_indexer_mxfp4_row(kIdxMx, page.data(), 3, row_of(128).data());
  for (int b = 0; b < 4; ++b) EXPECT_EQ(page[kIdxMx.scale_offset(3) + b], 0x00);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(page[3 * 64 + i], 0x00);
  // Facts 5.5: decoding byte 0 gives 2^-127, so code 1 (0.5) decodes to 2^-128, not 0.
  page[3 * 64] = 0x01;
  std::array<float, 128> out{};
  dequantize_indexer_row(kIdxMx, page.data(), 3, out.data());
  EXPECT_EQ(out[0], std::ldexp(1.0f, -128));
  EXPECT_NE(out[0], 0.0f);
  page[kIdxMx.scale_offset(3)] = 0xFF;  // E8M0 NaN
  dequantize_indexer_row(kIdxMx, page.data(), 3, out.data());
  for (int i = 0; i < 32; ++i) EXPECT_TRUE(std::isnan(out[i])) << i;
}

TEST(IndexerMxfp4Row, OcpFloorRuleIsAPolicy) {
  // amax 7: DeepSeek ceil(log2(7/6)) = 1 (byte 128), 7/2 = 3.5 -> 4 (code 6);
  // OCP floor(log2 7) - 2 = 0 (byte 127), 7 saturates to 6 (code 7).
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kIdxMx.page_bytes()), 0);
  auto in = row_of(128);
  in[0] = bf(7.0f);
  quantize_indexer_mxfp4_row(kIdxMx, page.data(), 0, in.data());
  EXPECT_EQ(page[kIdxMx.scale_offset(0)], 128);
  EXPECT_EQ(page[0] & 0xF, 6);
  quant_policy ocp;
  ocp.mxfp4_scale = mxfp4_scale_rule::ocp_floor;
  quantize_indexer_mxfp4_row(kIdxMx, page.data(), 0, in.data(), ocp);
  EXPECT_EQ(page[kIdxMx.scale_offset(0)], 127);
  EXPECT_EQ(page[0] & 0xF, 7);
}

TEST(IndexerRow, WrongFormatAndRowsAreErrors) {
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kIdxFp8.page_bytes()), 0xA5);
  const auto in = row_of(128);
  expect_invalid([&] { quantize_indexer_mxfp4_row(kIdxFp8, page.data(), 0, in.data()); }, {"MXFP4 indexer layout"});
  expect_invalid([&] { quantize_indexer_fp8_row(kIdxMx, page.data(), 0, in.data()); }, {"FP8 indexer layout"});
  expect_invalid([&] { quantize_indexer_row(kIdxFp8, page.data(), -1, in.data()); }, {"row=-1"});
  std::array<float, 128> out{};
  expect_invalid([&] { dequantize_indexer_row(kIdxFp8, page.data(), 64, out.data()); }, {"row=64"});
  for (std::uint8_t b : page) ASSERT_EQ(b, 0xA5);
}

// ---------------------------------------------------------------- NaN / Inf policies

TEST(NanPolicy, PropagateMakesTheBlockNanAndLeavesOthers) {
  auto in = row_of(512, 1.0f);
  in[70] = bf16{0x7FC0};  // NaN in block 1
  const auto page = quantize_mla(in);
  EXPECT_EQ(mla_scales(page)[1], 0xFF);
  for (int i = 64; i < 128; ++i) EXPECT_EQ(mla_codes(page)[i], 0x7F);
  EXPECT_EQ(mla_scales(page)[0], 119);  // 1/448 = 2^-8.8 -> e = -8
  EXPECT_EQ(mla_codes(page)[0], 0x78);  // 1 x 2^8 = 256
  std::array<float, 512> out{};
  dequantize_fp8_ds_mla_row(kMla2, page.data(), 0, out.data());
  for (int i = 0; i < 448; ++i) EXPECT_EQ(std::isnan(out[i]), i >= 64 && i < 128) << i;
  // MXFP4 and indexer FP8 blocks: NaN scale.
  std::vector<std::uint8_t> ip(static_cast<std::size_t>(kIdxMx.page_bytes()), 0);
  quantize_indexer_mxfp4_row(kIdxMx, ip.data(), 0, in.data() + 64);  // NaN at 6, block 0
  EXPECT_EQ(ip[kIdxMx.scale_offset(0)], 0xFF);
  EXPECT_EQ(ip[kIdxMx.scale_offset(0) + 1], 127 - 2);  // amax 1 -> ceil(log2(1/6)) = -2
  std::vector<std::uint8_t> fp(static_cast<std::size_t>(kIdxFp8.page_bytes()), 0);
  quantize_indexer_fp8_row(kIdxFp8, fp.data(), 0, in.data() + 64);
  EXPECT_TRUE(std::isnan(detail::bits_float(fp32_scale_at(fp, kIdxFp8, 0))));
}

TEST(NanPolicy, IgnoreKeepsTheNanLocal) {
  quant_policy p;
  p.nan = nan_policy::ignore;
  auto in = row_of(512, 1.0f);
  in[70] = bf16{0xFFC0};  // -NaN
  const auto page = quantize_mla(in, 0, p);
  EXPECT_EQ(mla_scales(page)[1], 119);
  EXPECT_EQ(mla_codes(page)[70], 0x7F);
  EXPECT_EQ(mla_codes(page)[71], 0x78);
  // MXFP4 has no NaN: the NaN element becomes +6 x scale (code 7), as NVIDIA's conversion.
  std::vector<std::uint8_t> ip(static_cast<std::size_t>(kIdxMx.page_bytes()), 0);
  quantize_indexer_mxfp4_row(kIdxMx, ip.data(), 0, in.data() + 64, p);
  EXPECT_EQ(ip[kIdxMx.scale_offset(0)], 125);
  EXPECT_EQ(ip[3] & 0xF, 0x7);  // element 6: low nibble of byte 3
}

// The references (FlashMLA tests/quant.py, vLLM's Triton writer, tokenspeed's batched writer;
// docs/engines/writers.md 2, run on such a block) take the scale from amax = inf: UE8M0 0xFF, and
// E4M3(x / inf) per element: inf / inf = NaN (0x7F), 1 / inf = +0.
TEST(InfPolicy, InfinityGivesTheScaleOfInfLikeTheReferences) {
  auto in = row_of(512, 1.0f);
  in[0] = bf16{0x7F80};  // +inf
  in[1] = bf16{0xFF80};  // -inf
  in[2] = bf16{0xC000};  // -2
  const auto page = quantize_mla(in);
  EXPECT_EQ(mla_scales(page)[0], 0xFF);
  EXPECT_EQ(mla_codes(page)[0], 0x7F);
  EXPECT_EQ(mla_codes(page)[1], 0x7F);
  EXPECT_EQ(mla_codes(page)[2], 0x80);  // -2 / inf = -0
  EXPECT_EQ(mla_codes(page)[3], 0x00);  // 1 / inf = +0
  EXPECT_EQ(mla_scales(page)[1], 119);  // other blocks unaffected: 1 / 448 -> 2^-8
}

// ---------------------------------------------------------------- round trips

std::vector<bf16> random_row(std::mt19937& rng, std::size_t n, int block) {
  // Per block a random magnitude 2^[-30, 20], so every scale range is exercised.
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> mag(-30, 20);
  std::vector<bf16> v(n);
  float m = 1.0f;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % static_cast<std::size_t>(block) == 0) m = std::ldexp(1.0f, mag(rng));
    v[i] = float_to_bf16(normal(rng) * m);
  }
  return v;
}

// The round-trip bounds below come from the INPUT block and the documented scale rules (facts
// section 4), computed here in double, never from the scale the code stored: a scale one binade
// too large would widen a bound read back from the page (and pass), but not these.
//
// E4M3 blocks (fp8_ds_mla per 64 NoPE values, indexer FP8 per 128): e = ceil(log2(max(amax,
// 1e-4) / 448)), so every |x| 2^-e <= 448 (no saturation). E4M3 has 3 mantissa bits: in the
// normal range (|x| 2^-e >= 2^-6) a value of binade 2^k has spacing 2^(k-3), and rounding to
// nearest is off by at most half of it, 2^(k-4) <= 2^-4 |x| 2^-e; below it the subnormal spacing
// is 2^-9, so the error is at most 2^-10. Scaled back: |x' - x| <= max(2^-4 |x|, 2^(e-10)).
//
// MXFP4 blocks (32 values): e = ceil(log2(amax / 6)) (clamped to [-127, 127]), so |x| 2^-e <= 6.
// E2M1 has 1 mantissa bit: spacing 0.5 in [1, 2), 1 in [2, 4), 2 in [4, 6]: half of it is at most
// a quarter of the value, 2^-2 |x| 2^-e; below 1 (codes 0, 0.5) the spacing is 0.5, error <= 0.25.
// Scaled back: |x' - x| <= max(2^-2 |x|, 2^(e-2)).

/// ceil(log2(max(amax, floor) / fmax)) in double, clamped to [-127, 127] (the scale exponent of
/// facts section 4, computed independently of scalar_codec.hpp).
int scale_exponent_from_input(const bf16* block, int n, double floor, double fmax) {
  double amax = 0.0;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(static_cast<double>(bf16_to_float(block[i]))));
  const double m = std::max(amax, floor);
  if (m == 0.0) return -127;
  const double e = std::ceil(std::log2(m / fmax));
  return static_cast<int>(std::clamp(e, -127.0, 127.0));
}

/// Adds to `bad` the values of one block whose round trip exceeds max(2^-rel |x|, 2^(e - abs)),
/// reporting the first few of the test.
void check_block(const bf16* in, const float* out, int first, int n, int e, int rel, int abs, int t, int& bad) {
  for (int i = first; i < first + n; ++i) {
    const double x = bf16_to_float(in[i]);
    const double bound = std::max(std::ldexp(std::fabs(x), -rel), std::ldexp(1.0, e - abs));
    const double err = std::fabs(static_cast<double>(out[i]) - x);
    if (err > bound && ++bad <= 3)
      ADD_FAILURE() << "t=" << t << " i=" << i << " x=" << x << " x'=" << out[i] << " error " << err << " > " << bound
                    << " (e=" << e << " from the input)";
  }
}

TEST(RoundTrip, Fp8DsMlaWithinTheE4m3Bound) {
  std::mt19937 rng(7);
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kMla64.page_bytes()));
  std::array<float, 512> out{};
  int bad = 0;
  int bad_scales = 0;
  for (int t = 0; t < 2000; ++t) {
    const auto in = random_row(rng, 512, 64);
    const std::int64_t r = t % 64;
    quantize_fp8_ds_mla_row(kMla64, page.data(), r, in.data());
    dequantize_fp8_ds_mla_row(kMla64, page.data(), r, out.data());
    for (int b = 0; b < 7; ++b) {
      const int e = scale_exponent_from_input(in.data() + b * 64, 64, 1e-4, 448.0);
      check_block(in.data(), out.data(), b * 64, 64, e, 4, 10, t, bad);
      // The stored scale byte is the documented one: e + 127.
      if (page[static_cast<std::size_t>(kMla64.scale_offset(r) + b)] != e + 127 && ++bad_scales <= 3)
        ADD_FAILURE() << "t=" << t << " block " << b << ": scale byte "
                      << int{page[static_cast<std::size_t>(kMla64.scale_offset(r) + b)]} << ", want " << e + 127;
    }
    for (int j = 448; j < 512; ++j) ASSERT_EQ(out[j], bf16_to_float(in[j]));  // RoPE is exact
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(bad_scales, 0);
}

TEST(RoundTrip, IndexerFp8WithinTheE4m3Bound) {
  std::mt19937 rng(8);
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kIdxFp8.page_bytes()));
  std::array<float, 128> out{};
  int bad = 0;
  int bad_scales = 0;
  for (int t = 0; t < 2000; ++t) {
    const auto in = random_row(rng, 128, 128);
    quantize_indexer_row(kIdxFp8, page.data(), t % 64, in.data());
    dequantize_indexer_row(kIdxFp8, page.data(), t % 64, out.data());
    const int e = scale_exponent_from_input(in.data(), 128, 1e-4, 448.0);
    check_block(in.data(), out.data(), 0, 128, e, 4, 10, t, bad);
    // The stored fp32 scale is 2^e exactly.
    const double scale = detail::bits_float(fp32_scale_at(page, kIdxFp8, t % 64));
    if (scale != std::ldexp(1.0, e) && ++bad_scales <= 3)
      ADD_FAILURE() << "t=" << t << ": scale " << scale << ", want 2^" << e;
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(bad_scales, 0);
}

TEST(RoundTrip, Mxfp4WithinTheE2m1Bound) {
  std::mt19937 rng(9);
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kIdxMx.page_bytes()));
  std::array<float, 128> out{};
  int bad = 0;
  int bad_scales = 0;
  for (int t = 0; t < 2000; ++t) {
    const auto in = random_row(rng, 128, 32);
    const std::int64_t r = t % 64;
    quantize_indexer_row(kIdxMx, page.data(), r, in.data());
    dequantize_indexer_row(kIdxMx, page.data(), r, out.data());
    for (int b = 0; b < 4; ++b) {
      const int e = scale_exponent_from_input(in.data() + b * 32, 32, 0.0, 6.0);  // no floor (facts 4)
      check_block(in.data(), out.data(), b * 32, 32, e, 2, 2, t, bad);
      if (page[static_cast<std::size_t>(kIdxMx.scale_offset(r) + b)] != e + 127 && ++bad_scales <= 3)
        ADD_FAILURE() << "t=" << t << " block " << b << ": scale byte "
                      << int{page[static_cast<std::size_t>(kIdxMx.scale_offset(r) + b)]} << ", want " << e + 127;
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(bad_scales, 0);
}

TEST(RoundTrip, Bf16OutputIsTheRoundedFloatOutput) {
  std::mt19937 rng(10);
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kMla2.page_bytes()));
  const auto in = random_row(rng, 512, 64);
  quantize_fp8_ds_mla_row(kMla2, page.data(), 1, in.data());
  std::array<float, 512> f{};
  std::array<bf16, 512> b{};
  dequantize_fp8_ds_mla_row(kMla2, page, 1, std::span<float>(f));
  dequantize_fp8_ds_mla_row(kMla2, page, 1, std::span<bf16>(b));
  for (int i = 0; i < 512; ++i) EXPECT_EQ(b[i], float_to_bf16(f[i])) << i;
  for (auto l : {kIdxFp8, kIdxMx}) {
    std::vector<std::uint8_t> ip(static_cast<std::size_t>(l.page_bytes()));
    quantize_indexer_row(l, ip, 5, std::span<const bf16>(in).first(128));
    std::array<float, 128> fi{};
    std::array<bf16, 128> bi{};
    dequantize_indexer_row(l, ip, 5, std::span<float>(fi));
    dequantize_indexer_row(l, ip, 5, std::span<bf16>(bi));
    for (int i = 0; i < 128; ++i) EXPECT_EQ(bi[i], float_to_bf16(fi[i])) << i;
  }
}

// ---------------------------------------------------------------- canaries

/// Quantizes every row of a page with guard bands around it; bytes outside row r must keep
/// their canary after quantize(r), and dequantize(r) must give the same values when every other
/// byte of the page (and the guards) is poison (E4M3 / E8M0 NaN codes).
template <class Layout, class Quantize, class Dequantize>
void check_row_isolation(const Layout& l, std::int64_t row_bytes_data, std::int64_t row_bytes_scale, std::size_t values,
                         Quantize quantize, Dequantize dequantize) {
  constexpr std::size_t kGuard = 64;
  std::mt19937 rng(11);
  const auto page_bytes = static_cast<std::size_t>(l.page_bytes());
  for (std::int64_t r = 0; r < l.rows_per_page; ++r) {
    const auto in = random_row(rng, values, 32);
    std::vector<std::uint8_t> buf(page_bytes + 2 * kGuard, 0xA5);
    std::uint8_t* page = buf.data() + kGuard;
    quantize(page, r, in.data());
    std::vector<bool> mine(buf.size(), false);
    for (std::int64_t i = 0; i < row_bytes_data; ++i)
      mine[kGuard + static_cast<std::size_t>(l.data_offset(r) + i)] = true;
    for (std::int64_t i = 0; i < row_bytes_scale; ++i)
      mine[kGuard + static_cast<std::size_t>(l.scale_offset(r) + i)] = true;
    for (std::size_t i = 0; i < buf.size(); ++i) {
      if (!mine[i]) {
        ASSERT_EQ(buf[i], 0xA5) << "row " << r << " wrote byte " << static_cast<std::int64_t>(i) - 64;
      }
    }
    std::vector<float> clean(values), poisoned(values);
    dequantize(page, r, clean.data());
    for (std::size_t i = 0; i < buf.size(); ++i) {
      if (!mine[i]) buf[i] = 0xFF;
    }
    dequantize(page, r, poisoned.data());
    for (std::size_t i = 0; i < values; ++i) {
      ASSERT_EQ(detail::float_bits(clean[i]), detail::float_bits(poisoned[i])) << "row " << r << " read outside";
      ASSERT_FALSE(std::isnan(clean[i]));
    }
  }
}

TEST(Canary, Fp8DsMlaRowTouchesOnlyItsBytes) {
  for (const auto& l : {kMla2, kMla64}) {
    check_row_isolation(
        l, 576, 8, 512, [&](std::uint8_t* p, std::int64_t r, const bf16* in) { quantize_fp8_ds_mla_row(l, p, r, in); },
        [&](const std::uint8_t* p, std::int64_t r, float* out) { dequantize_fp8_ds_mla_row(l, p, r, out); });
  }
}

TEST(Canary, IndexerRowsTouchOnlyTheirBytes) {
  for (const auto& l : {kIdxFp8, kIdxMx}) {
    check_row_isolation(
        l, l.format.value_bytes, l.format.scale_bytes, 128,
        [&](std::uint8_t* p, std::int64_t r, const bf16* in) { quantize_indexer_row(l, p, r, in); },
        [&](const std::uint8_t* p, std::int64_t r, float* out) { dequantize_indexer_row(l, p, r, out); });
  }
}

// ---------------------------------------------------------------- vectorized block paths
//
// The row codecs run fixed-size, branch-free block kernels (row_codec.hpp detail::, over the
// element kernels of scalar_codec.hpp). Each must give exactly the reference scalar functions'
// result: checked for every BF16 input at every scale exponent, and block by block against
// the reference recipe (amax_bf16, scale_exponent_for_amax, float_to_e4m3 / float_to_e2m1).

/// The reference E4M3 block quantizer (the scalar recipe, one value at a time).
std::uint8_t reference_fp8_block(const bf16* in, int n, std::uint8_t* out, float floor, nan_policy nan) {
  const bf16_amax m = amax_bf16(in, n);
  if (m.has_nan && nan == nan_policy::propagate) {
    for (int i = 0; i < n; ++i) out[i] = kE4m3NanCode;
    return kE8m0NanCode;
  }
  if (std::isinf(m.amax)) {  // the references' scale inf (docs/engines/writers.md 2): code E4M3(x / inf)
    for (int i = 0; i < n; ++i) {
      const float q = bf16_to_float(in[i]) / m.amax;                            // IEEE: NaN or +-0
      out[i] = std::isnan(q) ? kE4m3NanCode : (std::signbit(q) ? 0x80 : 0x00);  // canonical NaN code
    }
    return kE8m0NanCode;
  }
  const int e = scale_exponent_for_amax(m.amax, kE4m3Max, floor);
  for (int i = 0; i < n; ++i) out[i] = float_to_e4m3(bf16_to_float(in[i]) * exp2i(-e));
  return static_cast<std::uint8_t>(e + 127);
}

TEST(VectorBlocks, E4m3AnyEqualsScalarForEveryBf16AndExponent) {
  std::vector<bf16> all(65536);
  for (std::uint32_t b = 0; b < 65536; ++b) all[b] = bf16{static_cast<std::uint16_t>(b)};
  std::uint8_t out[64];
  std::int64_t mismatches = 0;
  for (int e = -127; e <= 127; ++e) {
    const float s = exp2i(-e);
    for (std::size_t k = 0; k < all.size(); k += 64) {
      detail::e4m3_block_any<64>(all.data() + k, s, out);
      for (int i = 0; i < 64; ++i) mismatches += out[i] != float_to_e4m3(bf16_to_float(all[k + i]) * s);
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(VectorBlocks, E4m3NormalEqualsScalarWhereItsPreconditionHolds) {
  std::int64_t mismatches = 0;
  std::int64_t checked = 0;
  for (int e = -120; e <= 127; ++e) {
    const float s = exp2i(-e);
    std::vector<bf16> ok;  // finite, and 0 or scaled magnitude in [2^-6, 448]
    for (std::uint32_t b = 0; b < 65536; ++b) {
      const float x = bf16_to_float(bf16{static_cast<std::uint16_t>(b)});
      const float a = std::fabs(x) * s;
      if (std::isfinite(x) && (x == 0.0f || (a >= 0x1p-6f && a <= 448.0f)))
        ok.push_back(bf16{static_cast<std::uint16_t>(b)});
    }
    while (ok.size() % 64 != 0) ok.push_back(bf16{0});
    std::uint8_t out[64];
    for (std::size_t k = 0; k < ok.size(); k += 64) {
      detail::e4m3_block_normal<64>(ok.data() + k, e, out);
      for (int i = 0; i < 64; ++i) mismatches += out[i] != float_to_e4m3(bf16_to_float(ok[k + i]) * s);
      checked += 64;
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(checked, 900000);  // 943,616: 248 exponents x the normal range
}

TEST(VectorBlocks, E2m1EqualsScalarForEveryBf16AndExponent) {
  std::vector<bf16> all(65536);
  for (std::uint32_t b = 0; b < 65536; ++b) all[b] = bf16{static_cast<std::uint16_t>(b)};
  std::uint8_t out[16];
  std::int64_t mismatches = 0;
  for (int e = -127; e <= 127; ++e) {
    const float s = exp2i(-e);
    for (std::size_t k = 0; k < all.size(); k += 32) {
      detail::e2m1_block_packed<32>(all.data() + k, s, out);
      for (int i = 0; i < 16; ++i) {
        const auto want = static_cast<std::uint8_t>(float_to_e2m1(bf16_to_float(all[k + 2 * i]) * s) |
                                                    (float_to_e2m1(bf16_to_float(all[k + 2 * i + 1]) * s) << 4));
        mismatches += out[i] != want;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(VectorBlocks, DequantBlocksEqualScalarForEveryCodeAndScale) {
  std::uint8_t codes[256];
  for (int c = 0; c < 256; ++c) codes[c] = static_cast<std::uint8_t>(c);
  std::int64_t mismatches = 0;
  for (int byte = 0; byte < 256; ++byte) {
    const float scale = e8m0_to_float(static_cast<std::uint8_t>(byte));
    for (int k = 0; k < 256; k += 64) {
      float f[64];
      bf16 h[64];
      detail::dequantize_e4m3_block<64>(codes + k, scale, f);
      detail::dequantize_e4m3_block<64>(codes + k, scale, h);
      for (int i = 0; i < 64; ++i) {
        const float want = canonical_nan(e4m3_to_float(codes[k + i]) * scale);  // the float output's NaN rule
        mismatches += detail::float_bits(f[i]) != detail::float_bits(want);
        mismatches += h[i] != float_to_bf16(want);
      }
    }
    for (int k = 0; k < 256; k += 16) {  // 16 bytes = 32 E2M1 values, every nibble pair
      float f[32];
      bf16 h[32];
      detail::dequantize_e2m1_block<32>(codes + k, scale, f);
      detail::dequantize_e2m1_block<32>(codes + k, scale, h);
      for (int i = 0; i < 32; ++i) {
        const auto nibble = static_cast<std::uint8_t>((codes[k + i / 2] >> (4 * (i % 2))) & 0xF);
        const float want = canonical_nan(e2m1_to_float(nibble) * scale);
        mismatches += detail::float_bits(f[i]) != detail::float_bits(want);
        mismatches += h[i] != float_to_bf16(want);
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(VectorBlocks, Fp8BlockEqualsReferenceOnRandomAndSpecialBlocks) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(0, 9);
  std::uniform_int_distribution<std::uint32_t> any_bits(0, 0xFFFF);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::array<std::uint16_t, 8> special = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x0080, 0x7F7F};
  std::int64_t mismatches = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int n = trial % 2 == 0 ? 64 : 128;
    const float spread = std::ldexp(1.0f, static_cast<int>(any_bits(rng) % 60) - 30);
    const float tiny = std::ldexp(1.0f, -static_cast<int>(any_bits(rng) % 40));
    std::vector<bf16> in(static_cast<std::size_t>(n));
    for (auto& v : in) {
      const int k = trial % 5 == 0 ? pick(rng) : 9;  // most blocks are plain, some are mixed
      if (k == 0)
        v = bf16{special[any_bits(rng) % special.size()]};
      else if (k == 1)
        v = bf16{static_cast<std::uint16_t>(any_bits(rng))};
      else if (k == 2)
        v = float_to_bf16(normal(rng) * spread * tiny * 1e-3f);  // E4M3 subnormal range
      else
        v = float_to_bf16(normal(rng) * spread);
    }
    for (const float floor : {1e-4f, 1e-10f, 0.0f}) {
      for (const nan_policy nan : {nan_policy::propagate, nan_policy::ignore}) {
        std::vector<std::uint8_t> got(static_cast<std::size_t>(n)), want(static_cast<std::size_t>(n));
        const std::uint8_t g = quantize_fp8_block(in.data(), n, got.data(), floor, nan);
        const std::uint8_t w = reference_fp8_block(in.data(), n, want.data(), floor, nan);
        mismatches += g != w || got != want;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace dsv4::cache

namespace dsv4::cache {
namespace {

// A NaN in the float output is always 0x7FC00000: x86 would keep an operand's payload (0xFFC00000
// for E4M3 code 0xFF), an NVIDIA GPU gives 0x7FFFFFFF; canonical on both sides, the rows agree.
TEST(RowCodec, NanFloatOutputIsCanonical) {
  std::vector<std::uint8_t> page(static_cast<std::size_t>(kMla2.page_bytes()), 0);
  std::uint8_t* scales = page.data() + kMla2.scale_offset(0);
  scales[0] = kE8m0NanCode;  // block 0: NaN scale, zero codes
  scales[1] = 127;           // block 1: scale 1, one negative-NaN code
  page[static_cast<std::size_t>(kMla2.data_offset(0)) + 64] = 0xFF;
  std::vector<float> out(512);
  dequantize_fp8_ds_mla_row(kMla2, page.data(), 0, out.data());
  for (int i = 0; i < 65; ++i) EXPECT_EQ(detail::float_bits(out[static_cast<std::size_t>(i)]), 0x7FC00000U) << i;
  EXPECT_EQ(detail::float_bits(out[65]), 0U);
  EXPECT_EQ(detail::float_bits(canonical_nan(detail::bits_float(0xFFFFFFFFU))), 0x7FC00000U);
  EXPECT_EQ(detail::float_bits(canonical_nan(detail::bits_float(0x7F800000U))), 0x7F800000U);  // inf stays
  EXPECT_EQ(detail::float_bits(canonical_nan(-0.0f)), 0x80000000U);
}

// Mutation audit: the MXFP4 path for blocks other than 32 values (n = 8, 16, 64) had no test, so
// a nibble swap there survived. Hand values: amax 6 gives e = ceil(log2(6 / 6)) = 0 (scale byte
// 127), codes are E2M1 of x: 0.5 -> 1, 1 -> 2, 1.5 -> 3, 2 -> 4, 3 -> 5, 4 -> 6, 6 -> 7, sign
// bit 8; value 2i in the low nibble of byte i.
TEST(Mxfp4Block, OtherBlockSizesPackEvenValuesLow) {
  const float pattern[16] = {0.5f, 1, 1.5f, 2, 3, 4, 6, 0, -0.5f, -1, -1.5f, -2, -3, -4, -6, 0};
  const std::uint8_t packed[8] = {0x21, 0x43, 0x65, 0x07, 0xA9, 0xCB, 0xED, 0x0F};
  for (const int n : {8, 16, 32, 64}) {
    SCOPED_TRACE(n);
    std::vector<bf16> in(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = bf(pattern[i % 16]);
    std::vector<std::uint8_t> out(static_cast<std::size_t>(n / 2), 0xEE);
    EXPECT_EQ(quantize_mxfp4_block(in.data(), n, out.data()), 127);
    for (int i = 0; i < n / 2; ++i) EXPECT_EQ(out[static_cast<std::size_t>(i)], packed[i % 8]) << "byte " << i;
  }
}

}  // namespace
}  // namespace dsv4::cache
