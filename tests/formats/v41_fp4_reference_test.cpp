// The V4.1 FP4 row (`v4.1.fp4`, include/dsv4/cache/formats/v41_fp4_rows.hpp) against two
// references that do not come from the library:
//
//   Nvidia     scale bytes, codes and dequantized values of many random tiles (ties, subnormal
//              scales, both clamp edges, saturation, zeros) against NVIDIA's host conversions
//              from the CUDA toolkit headers: scale byte = __nv_cvt_float_to_fp8(clamp(amax / 6,
//              2^-9, 448), __NV_SATFINITE, __NV_E4M3) and code = __nv_cvt_float_to_fp4(x / scale,
//              __NV_E2M1, cudaRoundNearest), the rule of FlashMLA tests/quant.py @9a7d253a
//              (V41_FP4Sparse) and vllm-project/FlashMLA @02137a43 (V41_FP4), whose e2m1 cast is
//              written as PTX cvt.rn.satfinite.e2m1x2.f32. Skips, saying why, without the headers.
//   Golden     one row whose bytes are written out by hand below, the arithmetic in comments.
//
// Offsets are typed from docs/layout-variants.md 1.5 / 1.6: in a page of N = 1 row the codes of
// tile t are bytes 8t..8t+7 (dim i in byte i / 2, even i in the low nibble), its scale byte 256 + t.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "dsv4/cache/formats/registry.hpp"

#if DSV4_HAVE_CUDA_HEADERS
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#endif

namespace dc = dsv4::cache;
using fp4 = dc::formats::v41_fp4;

namespace {

constexpr std::uint8_t kSentinel = 0xA5;

float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }
std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }
/// BF16 bits of a float that is exactly representable (the inputs below are chosen so).
std::uint16_t bf16_exact(float f) { return static_cast<std::uint16_t>(bits_of(f) >> 16); }

/// Writes one row through the library into a fresh N = 1 page (512 B, every byte kSentinel).
std::vector<std::uint8_t> write_row(const std::vector<std::uint16_t>& bits) {
  std::vector<dc::bf16> in(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) in[i] = dc::bf16{bits[i]};
  std::vector<std::uint8_t> page(512, kSentinel);
  dc::quantize_row<fp4>(fp4::layout, page.data(), 1, 0, in.data());
  return page;
}

// =============================================================================================
// NVIDIA's host conversions as the oracle
// =============================================================================================

#if DSV4_HAVE_CUDA_HEADERS

std::uint8_t nv_e4m3(float x) { return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)); }
float nv_e4m3_value(std::uint8_t c) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(c, __NV_E4M3))); }
std::uint8_t nv_e2m1(float x) {
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest) & 0xF);
}
float nv_e2m1_value(std::uint8_t nibble) {
  return __half2float(__half(__nv_cvt_fp4_to_halfraw(static_cast<__nv_fp4_storage_t>(nibble & 0xF), __NV_E2M1)));
}
std::uint16_t nv_bf16(float x) { return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(x)).x; }

struct splitmix64 {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  double unit() { return static_cast<double>(next() >> 11) * 0x1p-53; }
};

/// The E2M1 midpoints (ties of the RNE cast): 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.
constexpr float kMid[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};

/// One tile of 16 BF16 values. Kinds: 0 random magnitudes over 2^-40..2^20; 1 ties (amax 6 x S
/// for an E4M3 value S, the others midpoints x S); 2 subnormal scales (amax / 6 in [2^-9, 2^-6));
/// 3 the lower clamp (amax near 6 x 2^-9, and far below it); 4 the upper clamp (amax near
/// 6 x 448 = 2,688, and far above); 5 scale rounded down (amax / 6 just above an E4M3 value:
/// the largest values saturate); 6 zeros of both signs with a few small values.
std::vector<std::uint16_t> make_tile(splitmix64& g, int kind) {
  std::vector<std::uint16_t> t(16, 0);
  const auto sign = [&] { return g.below(2) == 1 ? -1.0f : 1.0f; };
  const auto bf = [&](double v) { return nv_bf16(static_cast<float>(v)); };
  const auto fill_fractions = [&](double amax) {
    for (auto& b : t) b = bf(sign() * amax * g.unit());
    t[static_cast<std::size_t>(g.below(16))] = bf(sign() * amax);
  };
  switch (kind) {
    case 0: {
      const int e = g.below(61) - 40;
      for (auto& b : t) b = bf(sign() * std::ldexp(1.0 + g.unit(), e - g.below(10)));
      break;
    }
    case 1: {
      const auto s = static_cast<std::uint8_t>(1 + g.below(0x7E));  // E4M3 codes 0x01..0x7E
      const float sv = nv_e4m3_value(s);
      for (auto& b : t) b = bf(sign() * kMid[g.below(7)] * sv);
      t[static_cast<std::size_t>(g.below(16))] = bf(sign() * 6.0f * sv);  // amax / 6 = S exactly
      break;
    }
    case 2: fill_fractions(std::ldexp(6.0, -9) * (1.0 + 7.0 * g.unit())); break;
    case 3: {
      const std::uint16_t edge = bf16_exact(6.0f * 0x1p-9f);  // 0.01171875 = 3 x 2^-8
      if (g.below(4) == 0) {
        fill_fractions(std::ldexp(1.0, -20 - g.below(100)));  // far below: clamp to 2^-9
      } else {
        const auto a = static_cast<std::uint16_t>(edge - 3 + g.below(7));
        fill_fractions(static_cast<double>(from_bits(static_cast<std::uint32_t>(a) << 16)));
        t[static_cast<std::size_t>(g.below(16))] = static_cast<std::uint16_t>(a | (g.below(2) << 15));
      }
      break;
    }
    case 4: {
      const std::uint16_t edge = bf16_exact(2688.0f);
      if (g.below(4) == 0) {
        fill_fractions(std::ldexp(1.0, 12 + g.below(115)));  // far above: clamp to 448
      } else {
        const auto a = static_cast<std::uint16_t>(edge - 3 + g.below(7));
        fill_fractions(static_cast<double>(from_bits(static_cast<std::uint32_t>(a) << 16)));
        t[static_cast<std::size_t>(g.below(16))] = static_cast<std::uint16_t>(a | (g.below(2) << 15));
      }
      break;
    }
    case 5: {
      const auto s = static_cast<std::uint8_t>(8 + g.below(0x7E - 8));  // a normal E4M3 value S
      const double sv = nv_e4m3_value(s);
      // amax / 6 in (S, S + ulp / 2): rounds down to S, so amax / S > 6 saturates.
      const double ulp = std::ldexp(1.0, std::ilogb(sv) - 3);
      fill_fractions(6.0 * (sv + ulp * (0.05 + 0.4 * g.unit())));
      break;
    }
    default:
      for (auto& b : t) b = g.below(2) == 1 ? 0x8000 : 0x0000;
      if (g.below(2) == 1) t[static_cast<std::size_t>(g.below(16))] = bf(sign() * std::ldexp(1.0, -g.below(30)));
      break;
  }
  return t;
}

TEST(V41Fp4Nvidia, ScaleBytesCodesAndValuesMatchNvidiaHostConversions) {
  constexpr int kRows = 20000;
  splitmix64 g{20260910};
  long ties = 0, subnormal_scales = 0, low_clamps = 0, high_clamps = 0, saturated = 0, bad = 0;
  for (int r = 0; r < kRows && bad < 8; ++r) {
    std::vector<std::uint16_t> row;
    for (int t = 0; t < 32; ++t) {
      const std::vector<std::uint16_t> tile = make_tile(g, g.below(7));
      row.insert(row.end(), tile.begin(), tile.end());
    }
    const std::vector<std::uint8_t> page = write_row(row);
    std::vector<float> out(512);
    dc::dequantize_row<fp4>(fp4::layout, page.data(), 1, 0, out.data());
    for (int t = 0; t < 32; ++t) {
      float amax = 0.0f;
      for (int i = 0; i < 16; ++i)
        amax = std::max(amax, std::fabs(from_bits(static_cast<std::uint32_t>(row[16 * t + i]) << 16)));
      const float q = std::clamp(amax / 6.0f, 0x1p-9f, 448.0f);
      low_clamps += amax / 6.0f < 0x1p-9f;
      high_clamps += amax / 6.0f > 448.0f;
      const std::uint8_t sb = nv_e4m3(q);
      const float sv = nv_e4m3_value(sb);
      subnormal_scales += sb < 0x08;
      if (page[256 + t] != sb && ++bad <= 8)
        ADD_FAILURE() << "row " << r << " tile " << t << " amax " << amax << ": scale byte " << int{page[256 + t]}
                      << ", NVIDIA " << int{sb};
      for (int i = 0; i < 16; ++i) {
        const float x = from_bits(static_cast<std::uint32_t>(row[16 * t + i]) << 16);
        const float y = x / sv;
        const std::uint8_t want = nv_e2m1(y);
        for (const float m : kMid) ties += std::fabs(y) == m;
        saturated += std::fabs(y) > 6.0f;
        const int byte = 8 * t + i / 2;
        const auto got = static_cast<std::uint8_t>((page[static_cast<std::size_t>(byte)] >> (4 * (i % 2))) & 0xF);
        if (got != want && ++bad <= 8)
          ADD_FAILURE() << "row " << r << " tile " << t << " value " << i << ": x = " << x << ", x / scale = " << y
                        << ": code " << int{got} << ", NVIDIA " << int{want};
        const float v = nv_e2m1_value(want) * sv;  // exact: <= 2 + 4 significant bits
        if (bits_of(out[static_cast<std::size_t>(16 * t + i)]) != bits_of(v) && ++bad <= 8)
          ADD_FAILURE() << "row " << r << " tile " << t << " value " << i << ": dequant "
                        << out[static_cast<std::size_t>(16 * t + i)] << ", NVIDIA code x scale " << v;
      }
    }
  }
  std::printf("[ info     ] %d rows: %ld ties, %ld subnormal scales, %ld lower / %ld upper clamps, %ld saturated\n",
              kRows, ties, subnormal_scales, low_clamps, high_clamps, saturated);
  EXPECT_EQ(bad, 0);
  // The sweep must reach every case it is for.
  EXPECT_GT(ties, 100000);
  EXPECT_GT(subnormal_scales, 50000);
  EXPECT_GT(low_clamps, 10000);
  EXPECT_GT(high_clamps, 10000);
  EXPECT_GT(saturated, 10000);
}

#else

TEST(V41Fp4Nvidia, ScaleBytesCodesAndValuesMatchNvidiaHostConversions) {
  GTEST_SKIP() << "no CUDA toolkit headers (cuda_fp8.h / cuda_fp4.h): NVIDIA's host conversions are the oracle";
}

#endif

// =============================================================================================
// A golden row, computed by hand
// =============================================================================================

/// E4M3 (bias 7): byte = sign | exponent field << 3 | mantissa; 2^-9 x m below 2^-6.
/// E2M1 codes: 0 0, 1 0.5, 2 1, 3 1.5, 4 2, 5 3, 6 4, 7 6; bit 3 the sign; ties to the even code.
TEST(V41Fp4Golden, HandComputedRow) {
  std::vector<std::uint16_t> in(512, 0);  // +0 everywhere else
  const auto set = [&](int i, float v) { in[static_cast<std::size_t>(i)] = bf16_exact(v); };
  // Tile 0, dims 0..15: amax 12, 12 / 6 = 2 = 2^1 x 1.0 -> byte (1 + 7) << 3 = 0x40, scale 2.
  //   x:     3    -1.5   0.75  0.25  12  -12  0  -0   5    7    2.25   -0.25  9    10   1    0.5
  //   x / 2: 1.5  -0.75  0.375 0.125 6   -6   0  -0   2.5  3.5  1.125  -0.125 4.5  5    0.5  0.25
  //   code:  3    0xA    1     0     7   0xF  0  0x8  4    6    2      0x8    6    6    1    0
  //   (-0.75: tie 0.5 | 1 -> even code 2; 2.5: tie 2 | 3 -> 4; 3.5: tie 3 | 4 -> 6; 5: tie 4 | 6 -> 6;
  //    0.25: tie 0 | 0.5 -> 0; -0 and -0.125 keep the sign: 0x8)
  //   bytes (even dim low): 0xA3 0x01 0xF7 0x80 0x64 0x82 0x66 0x01
  const float t0[16] = {3, -1.5f, 0.75f, 0.25f, 12, -12, 0, -0.0f, 5, 7, 2.25f, -0.25f, 9, 10, 1, 0.5f};
  for (int i = 0; i < 16; ++i) set(i, t0[i]);
  // Tile 1, dims 16..31: amax 7, 7 / 6 = 1.1667 -> E4M3 1.125 (1 + 1/8; 1.25 is further) =
  //   byte 7 << 3 | 1 = 0x39. 7 / 1.125 = 6.22 -> saturates to 6 (7); -6.75 / 1.125 = -6 (0xF);
  //   2.8125 / 1.125 = 2.5 -> tie 2 | 3 -> 2 (4); 0.5625 / 1.125 = 0.5 (1). Bytes 0xF7 0x14.
  set(16, 7);
  set(17, -6.75f);
  set(18, 2.8125f);
  set(19, 0.5625f);
  // Tile 2, dims 32..47: amax 2^-5, 2^-5 / 6 = 0.0052 = 2.67 x 2^-9 (subnormal) -> 3 x 2^-9, byte
  //   0x03. 2^-5 / (3 x 2^-9) = 5.33 -> 6 (7); -2^-7 / (3 x 2^-9) = -1.33 -> -1.5 (0xB). Byte 0xB7.
  set(32, 0x1p-5f);
  set(33, -0x1p-7f);
  // Tile 3, dims 48..63: amax 3 x 2^-10, / 6 = 2^-11 < 2^-9 -> clamped to 2^-9, byte 0x01.
  //   2^-12 / 2^-9 = 0.125 -> 0; -3 x 2^-10 / 2^-9 = -1.5 (0xB). Byte 0xB0.
  set(48, 0x1p-12f);
  set(49, -3 * 0x1p-10f);
  // Tile 4, dims 64..79: amax 3,072, / 6 = 512 > 448 -> clamped to 448 = 2^8 x 1.75, byte
  //   (8 + 7) << 3 | 6 = 0x7E. 3072 / 448 = 6.86 -> 6 (7); -1024 / 448 = -2.29 -> -2 (0xC). Byte 0xC7.
  set(64, 3072);
  set(65, -1024);
  // Tile 5 (dims 80..95) all zero: 2^-9, byte 0x01, codes 0. Tile 6: a NaN -> poisoned (0x7F,
  // codes 0); tile 7: -inf does not poison (docs/engines/writers.md 1: nan_to_num maps it to -FLT_MAX):
  //   FLT_MAX / 6 clamps to 448 (0x7E); -inf / 448 -> -6 (0xF), 2 / 448 -> +0: byte 0x0F.
  //   Tiles 8..30 zero.
  in[96] = 0x7FC0;
  set(97, 1);
  in[112] = 0xFF80;
  set(113, 2);
  // Tile 31 (RoPE dims 496..511): dim 511 = -0.5; 0.5 / 6 = 0.0833 = 2^-4 x 1.333 -> 2^-4 x 1.375
  //   (1.25 is further) = 0.0859375, byte (-4 + 7) << 3 | 3 = 0x1B. -0.5 / 0.0859375 = -5.82 ->
  //   -6 (0xF), the high nibble of byte 255: 0xF0.
  set(511, -0.5f);

  std::vector<std::uint8_t> want(512, kSentinel);  // [288, 512) is padding: never written
  std::fill(want.begin(), want.begin() + 288, 0x00);
  const std::uint8_t tile0[8] = {0xA3, 0x01, 0xF7, 0x80, 0x64, 0x82, 0x66, 0x01};
  std::copy(tile0, tile0 + 8, want.begin());
  want[8] = 0xF7;
  want[9] = 0x14;
  want[16] = 0xB7;
  want[24] = 0xB0;
  want[32] = 0xC7;
  want[56] = 0x0F;
  want[255] = 0xF0;
  std::fill(want.begin() + 256, want.begin() + 288, 0x01);
  const std::uint8_t scales[8] = {0x40, 0x39, 0x03, 0x01, 0x7E, 0x01, 0x7F, 0x7E};
  std::copy(scales, scales + 8, want.begin() + 256);
  want[256 + 31] = 0x1B;

  const std::vector<std::uint8_t> page = write_row(in);
  for (std::size_t k = 0; k < want.size(); ++k) EXPECT_EQ(int{page[k]}, int{want[k]}) << "byte " << k;

  // The same 288 bytes at row 1 of an interleaved page of 2 (LV 1.6 (b): row 1 at 288), row 0 untouched.
  using inter = dc::formats::v41_fp4_interleaved;
  std::vector<dc::bf16> bf(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) bf[i] = dc::bf16{in[i]};
  std::vector<std::uint8_t> ipage(576, kSentinel);
  dc::quantize_row<inter>(inter::layout, ipage.data(), 2, 1, bf.data());
  for (std::size_t k = 0; k < 288; ++k) {
    EXPECT_EQ(int{ipage[k]}, int{kSentinel}) << "interleaved row 0 byte " << k;
    EXPECT_EQ(int{ipage[288 + k]}, int{want[k]}) << "interleaved row 1 byte " << k;
  }

  // Dequant: code value x scale.
  std::vector<float> out(512);
  dc::dequantize_row<fp4>(fp4::layout, page.data(), 1, 0, out.data());
  const float t0_out[16] = {3, -2, 1, 0, 12, -12, 0, -0.0f, 4, 8, 2, -0.0f, 8, 8, 1, 0};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(bits_of(out[static_cast<std::size_t>(i)]), bits_of(t0_out[i])) << i;
  EXPECT_EQ(out[16], 6.75f);  // 6 x 1.125
  EXPECT_EQ(out[17], -6.75f);
  EXPECT_EQ(out[18], 2.25f);  // 2 x 1.125
  EXPECT_EQ(out[19], 0.5625f);
  EXPECT_EQ(out[32], 18 * 0x1p-9f);     // 6 x 3 x 2^-9
  EXPECT_EQ(out[33], -4.5f * 0x1p-9f);  // -1.5 x 3 x 2^-9
  EXPECT_EQ(out[49], -1.5f * 0x1p-9f);
  EXPECT_EQ(out[64], 2688.0f);                                                                    // 6 x 448
  EXPECT_EQ(out[65], -896.0f);                                                                    // -2 x 448
  for (int i = 96; i < 112; ++i) EXPECT_TRUE(std::isnan(out[static_cast<std::size_t>(i)])) << i;  // tile 6
  EXPECT_EQ(out[112], -2688.0f);  // tile 7: -6 x 448 (the -inf saturated)
  for (int i = 113; i < 128; ++i) EXPECT_EQ(out[static_cast<std::size_t>(i)], 0.0f) << i;
  EXPECT_EQ(out[511], -0.515625f);  // -6 x 0.0859375
  EXPECT_EQ(bits_of(out[510]), 0U);
}

}  // namespace
