// Scalar codecs: golden values from the formats (facts section 4, OCP MX v1.0) and from
// independent oracles (std::ldexp, std::nextafter), fault classes 2, 3 and 5 of facts section 5.
// The exhaustive comparison with NVIDIA's implementation is tests/codec_sweep/.
#include "dsv4/cache/scalar_codec.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

namespace dsv4::cache {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

std::uint32_t bits(float x) { return detail::float_bits(x); }

/// E4M3 (fn) value of a code straight from the format definition (facts section 4):
/// subnormal m x 2^-9, normal (8 + m) x 2^(e - 10), NaN 0x7F / 0xFF.
double e4m3_oracle(unsigned code) {
  const unsigned e = (code >> 3) & 0xF, m = code & 7;
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), -9);
  return sign * std::ldexp(static_cast<double>(8 + m), static_cast<int>(e) - 10);
}

/// The smallest e with 2^e >= |x| (x finite, != 0), by search with std::ldexp.
int ceil_log2_oracle(float x) {
  const double a = std::fabs(static_cast<double>(x));
  int e = -160;
  while (std::ldexp(1.0, e) < a) ++e;
  return e;
}

// ---- compile-time: the codecs are usable in constant expressions ----
static_assert(float_to_e4m3(448.0f) == 0x7E);
static_assert(float_to_e4m3(500.0f) == 0x7E);
static_assert(e4m3_to_float(0x01) == 0.001953125f);  // 2^-9
static_assert(float_to_ue8m0_ceil(1.0f) == 127);
static_assert(e8m0_to_float(127) == 1.0f);
static_assert(float_to_e2m1(0.75f) == 2);
static_assert(e2m1_to_float(0x7) == 6.0f);
static_assert(bf16_to_float(float_to_bf16(1.0f)) == 1.0f);
static_assert(scale_exponent_for_amax(0.0f, 448.0f, 1e-4f) == -22);

// ---------------------------------------------------------------- BF16

TEST(Bf16, GoldenConversions) {
  EXPECT_EQ(float_to_bf16(1.0f).bits, 0x3F80);
  EXPECT_EQ(float_to_bf16(-2.0f).bits, 0xC000);
  EXPECT_EQ(float_to_bf16(detail::bits_float(0x3F808000U)).bits, 0x3F80);  // tie, even stays
  EXPECT_EQ(float_to_bf16(detail::bits_float(0x3F818000U)).bits, 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bf16(detail::bits_float(0x3F808001U)).bits, 0x3F81);  // above the tie
  EXPECT_EQ(float_to_bf16(kInf).bits, 0x7F80);
  EXPECT_EQ(float_to_bf16(-kInf).bits, 0xFF80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()).bits, 0x7F80);  // rounds past the top
  EXPECT_EQ(float_to_bf16(kNan).bits, 0x7FFF);
  EXPECT_EQ(float_to_bf16(detail::bits_float(0xFF800001U)).bits, 0x7FFF);  // signalling, negative NaN
  EXPECT_EQ(float_to_bf16(-0.0f).bits, 0x8000);
  EXPECT_EQ(bf16_to_float(bf16{0x3F80}), 1.0f);
  EXPECT_EQ(bits(bf16_to_float(bf16{0x0001})), 0x00010000U);  // BF16 subnormal, exact
  EXPECT_TRUE(std::isnan(bf16_to_float(bf16{0xFFC1})));
}

TEST(Bf16, EveryBf16RoundTrips) {
  for (unsigned b = 0; b < 0x10000; ++b) {
    const bf16 v{static_cast<std::uint16_t>(b)};
    const float f = bf16_to_float(v);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_bf16(f).bits, b);
  }
}

// ---------------------------------------------------------------- E4M3

TEST(E4m3, DecodesAll256CodesAsTheFormatSays) {
  for (unsigned c = 0; c < 256; ++c) {
    const float got = e4m3_to_float(static_cast<std::uint8_t>(c));
    const double want = e4m3_oracle(c);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << c;
      EXPECT_EQ(std::signbit(got), (c & 0x80) != 0) << c;
    }
  }
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_float(0x08), 0.015625f);  // min normal 2^-6
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));
}

TEST(E4m3, EncodesEveryFiniteCodeBack) {
  for (unsigned c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;
    EXPECT_EQ(float_to_e4m3(static_cast<float>(e4m3_oracle(c))), c) << c;
  }
}

TEST(E4m3, RoundsToNearestEvenBetweenEveryPairOfCodes) {
  for (unsigned c = 0; c < 0x7E; ++c) {
    const double lo = e4m3_oracle(c), hi = e4m3_oracle(c + 1);
    const auto mid = static_cast<float>((lo + hi) / 2);  // exact in float
    const unsigned even = (c % 2 == 0) ? c : c + 1;
    EXPECT_EQ(float_to_e4m3(mid), even) << "tie after code " << c;
    EXPECT_EQ(float_to_e4m3(std::nextafter(mid, 0.0f)), c) << c;
    EXPECT_EQ(float_to_e4m3(std::nextafter(mid, kInf)), c + 1) << c;
    EXPECT_EQ(float_to_e4m3(-mid), even | 0x80U) << c;
  }
}

TEST(E4m3, Fault2OverflowSaturatesToMaxNeverNan) {
  // Facts 5.2: 500 must become 0x7E (448) when saturating, never 0x7F; 464 -> 0x7E.
  EXPECT_EQ(float_to_e4m3(500.0f), 0x7E);
  EXPECT_EQ(float_to_e4m3(464.0f), 0x7E);  // the tie 448 | 480 goes to even 448
  EXPECT_EQ(float_to_e4m3(std::nextafter(464.0f, kInf)), 0x7E);
  EXPECT_EQ(float_to_e4m3(-500.0f), 0xFE);
  EXPECT_EQ(float_to_e4m3(1e30f), 0x7E);
  EXPECT_EQ(float_to_e4m3(kInf), 0x7E);
  EXPECT_EQ(float_to_e4m3(-kInf), 0xFE);
  EXPECT_EQ(float_to_e4m3(kNan), 0x7F);
  EXPECT_EQ(float_to_e4m3(-kNan), 0x7F);
  // Non-saturating (__NV_NOSAT): out of range is NaN, sign kept; 464 still rounds to 448.
  EXPECT_EQ(float_to_e4m3(464.0f, fp8_saturation::none), 0x7E);
  EXPECT_EQ(float_to_e4m3(std::nextafter(464.0f, kInf), fp8_saturation::none), 0x7F);
  EXPECT_EQ(float_to_e4m3(-500.0f, fp8_saturation::none), 0xFF);
  EXPECT_EQ(float_to_e4m3(kInf, fp8_saturation::none), 0x7F);
  EXPECT_EQ(float_to_e4m3(-kInf, fp8_saturation::none), 0xFF);
}

TEST(E4m3, SubnormalsAndUnderflow) {
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -9)), 0x01);
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);                        // tie 0 | 2^-9 -> 0
  EXPECT_EQ(float_to_e4m3(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01);  // just above
  EXPECT_EQ(float_to_e4m3(std::ldexp(3.0f, -10)), 0x02);                        // 1.5 x 2^-9: tie -> 2
  EXPECT_EQ(float_to_e4m3(std::ldexp(15.0f, -10)), 0x08);                       // 7.5 x 2^-9 -> 8 = min normal
  EXPECT_EQ(float_to_e4m3(-std::ldexp(1.0f, -9)), 0x81);
  EXPECT_EQ(float_to_e4m3(0.0f), 0x00);
  EXPECT_EQ(float_to_e4m3(-0.0f), 0x80);
  EXPECT_EQ(float_to_e4m3(-1e-30f), 0x80);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::denorm_min()), 0x00);
}

// ---------------------------------------------------------------- powers of two, E8M0

TEST(Exp2i, ExactOverTheWholeRange) {
  for (int e = -149; e <= 127; ++e) EXPECT_EQ(exp2i(e), std::ldexp(1.0f, e)) << e;
  EXPECT_EQ(exp2i(-150), 0.0f);
  EXPECT_EQ(exp2i(128), kInf);
}

TEST(CeilLog2, ExactFromTheBits) {
  for (int e = -149; e <= 127; ++e) {
    const float p = std::ldexp(1.0f, e);
    EXPECT_EQ(ceil_log2(p), e) << e;
    EXPECT_EQ(ceil_log2(std::nextafter(p, kInf)), e + 1) << e;
    EXPECT_EQ(floor_log2(p), e) << e;
    if (e > -148) {  // the neighbours of 2^-149 and 2^-148 are powers of two themselves
      EXPECT_EQ(ceil_log2(std::nextafter(p, 0.0f)), e) << e;
      EXPECT_EQ(floor_log2(std::nextafter(p, kInf)), e) << e;
    }
  }
  // ceil(log2f(v)) is wrong one ulp above a power of two (facts section 4): log2f(4 + 1 ulp)
  // rounds to exactly 2. The exact ceiling is 3.
  EXPECT_EQ(ceil_log2(std::nextafter(4.0f, kInf)), 3);
  EXPECT_EQ(ceil_log2(std::nextafter(1024.0f, kInf)), 11);
  EXPECT_EQ(ceil_log2(std::numeric_limits<float>::max()), 128);
  EXPECT_EQ(ceil_log2(std::ldexp(3.0f, -149)), -147);  // subnormal 3 x 2^-149
  EXPECT_EQ(ceil_log2(-8.0f), 3);                      // sign ignored
  EXPECT_EQ(ceil_log2(0.0f), -150);
  EXPECT_EQ(ceil_log2(kInf), 128);
  EXPECT_EQ(ceil_log2(kNan), 128);
  std::mt19937 rng(42);
  for (int i = 0; i < 100000; ++i) {
    const std::uint32_t u = rng() & 0x7F7FFFFFU;
    const float x = detail::bits_float(u);
    if (x == 0.0f) continue;
    ASSERT_EQ(ceil_log2(x), ceil_log2_oracle(x)) << std::hex << u;
  }
}

TEST(E8m0, Fault5DecodeIsNotAShift) {
  // Facts 5.5: byte 0x00 is 2^-127 (a float32 subnormal), not 0; 0xFF is NaN.
  EXPECT_EQ(e8m0_to_float(0x00), std::ldexp(1.0f, -127));
  EXPECT_NE(e8m0_to_float(0x00), 0.0f);
  EXPECT_TRUE(std::isnan(e8m0_to_float(0xFF)));
  for (int b = 0; b < 255; ++b) EXPECT_EQ(e8m0_to_float(static_cast<std::uint8_t>(b)), std::ldexp(1.0f, b - 127)) << b;
}

TEST(E8m0, CeilingEncodeSaturates) {
  for (int e = -127; e <= 127; ++e) {
    const float p = std::ldexp(1.0f, e);
    EXPECT_EQ(float_to_ue8m0_ceil(p), e + 127) << e;
    if (e < 127) {
      EXPECT_EQ(float_to_ue8m0_ceil(std::nextafter(p, kInf)), e + 128) << e;
    }
  }
  EXPECT_EQ(float_to_ue8m0_ceil(0.0f), 0x00);
  EXPECT_EQ(float_to_ue8m0_ceil(std::numeric_limits<float>::denorm_min()), 0x00);
  EXPECT_EQ(float_to_ue8m0_ceil(std::ldexp(1.5f, -127)), 0x01);  // ceil -> 2^-126
  EXPECT_EQ(float_to_ue8m0_ceil(std::numeric_limits<float>::max()), 0xFE);
  EXPECT_EQ(float_to_ue8m0_ceil(kInf), 0xFE);
  EXPECT_EQ(float_to_ue8m0_ceil(-kInf), 0xFE);
  EXPECT_EQ(float_to_ue8m0_ceil(kNan), 0xFF);
  EXPECT_EQ(float_to_ue8m0_ceil(-3.0f), 129);  // |x|
}

// ---------------------------------------------------------------- E2M1

TEST(E2m1, DecodeTable) {
  const float magnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};  // facts section 4
  for (unsigned c = 0; c < 16; ++c) {
    const float want = (c & 8) ? -magnitudes[c & 7] : magnitudes[c & 7];
    EXPECT_EQ(e2m1_to_float(static_cast<std::uint8_t>(c)), want) << c;
    EXPECT_EQ(std::signbit(e2m1_to_float(static_cast<std::uint8_t>(c))), (c & 8) != 0) << c;
    EXPECT_EQ(e2m1_to_float(static_cast<std::uint8_t>(c | 0xA0)), want) << "high nibble ignored";
    EXPECT_EQ(float_to_e2m1(want), c) << c;
  }
}

TEST(E2m1, Fault3TiesRoundToEven) {
  // Facts 5.3: with scale 1, 0.75, 1.75, 3.5 round to 1.0, 2.0, 4.0 (codes 2, 4, 6).
  EXPECT_EQ(float_to_e2m1(0.75f), 2);
  EXPECT_EQ(float_to_e2m1(1.75f), 4);
  EXPECT_EQ(float_to_e2m1(3.5f), 6);
  EXPECT_EQ(float_to_e2m1(0.25f), 0);  // tie 0 | 0.5 -> 0
  EXPECT_EQ(float_to_e2m1(1.25f), 2);  // tie 1 | 1.5 -> 1
  EXPECT_EQ(float_to_e2m1(2.5f), 4);   // tie 2 | 3 -> 2
  EXPECT_EQ(float_to_e2m1(5.0f), 6);   // tie 4 | 6 -> 4
  EXPECT_EQ(float_to_e2m1(-3.5f), 0xE);
  EXPECT_EQ(float_to_e2m1(std::nextafter(0.25f, 1.0f)), 1);
  EXPECT_EQ(float_to_e2m1(std::nextafter(5.0f, kInf)), 7);
}

TEST(E2m1, SaturatesAtSix) {
  EXPECT_EQ(float_to_e2m1(6.5f), 0x7);
  EXPECT_EQ(float_to_e2m1(1e20f), 0x7);
  EXPECT_EQ(float_to_e2m1(-7.0f), 0xF);
  EXPECT_EQ(float_to_e2m1(kInf), 0x7);
  EXPECT_EQ(float_to_e2m1(-kInf), 0xF);
  EXPECT_EQ(float_to_e2m1(kNan), 0x7);  // no NaN in E2M1: +6, as cvt.rn.satfinite.e2m1x2
  EXPECT_EQ(float_to_e2m1(-0.0f), 0x8);
  EXPECT_EQ(float_to_e2m1(-0.1f), 0x8);
}

// ---------------------------------------------------------------- block scale

TEST(ScaleExponent, FollowsTheRecipe) {
  // Facts 5.1: an all-zero block with the 1e-4 floor: 1e-4 / 448 = 2.23e-7 -> e = -22 (byte 105).
  EXPECT_EQ(scale_exponent_for_amax(0.0f, 448.0f, 1e-4f), -22);
  EXPECT_EQ(scale_exponent_for_amax(448.0f, 448.0f, 1e-4f), 0);
  EXPECT_EQ(scale_exponent_for_amax(449.0f, 448.0f, 1e-4f), 1);
  EXPECT_EQ(scale_exponent_for_amax(1.0f, 448.0f, 1e-4f), -8);  // 1/448 = 2^-8.8
  EXPECT_EQ(scale_exponent_for_amax(5.5f, 6.0f, 0.0f), 0);
  EXPECT_EQ(scale_exponent_for_amax(6.0f, 6.0f, 0.0f), 0);
  EXPECT_EQ(scale_exponent_for_amax(7.0f, 6.0f, 0.0f), 1);
  EXPECT_EQ(scale_exponent_for_amax(0.0f, 448.0f, 1e-10f), -42);  // 1e-10 / 448 = 2^-42.03
  // Clamping to [-127, 127]: a finite E8M0 byte for every input.
  EXPECT_EQ(scale_exponent_for_amax(0.0f, 6.0f, 0.0f), -127);
  EXPECT_EQ(scale_exponent_for_amax(kInf, 448.0f, 1e-4f), 127);
  EXPECT_EQ(scale_exponent_for_amax(kNan, 448.0f, 1e-4f), -22);  // NaN amax: the floor
}

}  // namespace
}  // namespace dsv4::cache
