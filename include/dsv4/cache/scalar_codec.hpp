// dsv4-cache: bit-exact scalar codecs of the KV-cache number formats, host and device.
//
// Formats (facts section 4; OCP "OCP Microscaling Formats (MX) v1.0" for E2M1/E8M0; NVIDIA
// `cuda_fp8.h`, `cuda_fp4.h`, `cuda_bf16.h` for the rounding and saturation behaviour):
//   BF16      1 sign, 8 exponent (bias 127), 7 mantissa bits: the top half of a float32.
//   E4M3 (fn) 1 sign, 4 exponent (bias 7), 3 mantissa bits; max 448 (0x7E), min normal 2^-6,
//             min subnormal 2^-9; NaN only 0x7F / 0xFF; no infinity.
//   E8M0      8 exponent bits, no sign or mantissa: 2^(byte - 127); 0x00 = 2^-127, 0xFF = NaN.
//   E2M1      1 sign (bit 3), 2 exponent (bias 1), 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6.
//
// Every conversion is integer arithmetic on the float's bits, except that the subnormal
// rounding of E4M3 / E2M1 is one float addition of a power of two; this needs the default
// round-to-nearest-even mode (what C++ constant evaluation, CUDA `+` (add.rn) and every host
// default use) and is unaffected by flush-to-zero (inputs it would flush round to 0 anyway).
// Results are identical on the host, on the device and in constant evaluation. Each function agrees bit for bit
// with NVIDIA's host implementation over all 2^32 inputs (tests/codec_sweep/).
//
// Standard library only; usable from plain C++20 and from CUDA kernels (`DSV4_HOST_DEVICE`).
#pragma once

#include <cstdint>
#include <type_traits>

#include "dsv4/cache/platform.hpp"

namespace dsv4::cache {

namespace detail {

/// `std::bit_cast` that is also callable from device code: g++, clang++ and nvcc all provide
/// `__builtin_bit_cast` (which `std::bit_cast` is built on) and allow it in constant evaluation.
template <class To, class From>
DSV4_HOST_DEVICE constexpr To bit_cast(const From& from) noexcept {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs types of the same size");
  static_assert(std::is_trivially_copyable_v<To> && std::is_trivially_copyable_v<From>,
                "bit_cast needs trivially copyable types");
  return __builtin_bit_cast(To, from);
}

DSV4_HOST_DEVICE constexpr std::uint32_t float_bits(float x) noexcept { return bit_cast<std::uint32_t>(x); }
DSV4_HOST_DEVICE constexpr float bits_float(std::uint32_t u) noexcept { return bit_cast<float>(u); }

/// v / 2^s rounded to nearest, ties to even, for s in [1, 31] and v < 2^31. Branch-free so that
/// loops over it vectorize.
DSV4_HOST_DEVICE constexpr std::uint32_t rne_shift_right(std::uint32_t v, std::uint32_t s) noexcept {
  const std::uint32_t half_minus_one = (std::uint32_t{1} << (s - 1)) - 1;
  return (v + half_minus_one + ((v >> s) & 1U)) >> s;
}

/// Number of bits needed to hold v (0 for 0): std::bit_width, callable from device code.
DSV4_HOST_DEVICE constexpr int bit_width(std::uint32_t v) noexcept {
  int n = 0;
  while (v != 0) {
    v >>= 1;
    ++n;
  }
  return n;
}

inline constexpr std::uint32_t kF32AbsMask = 0x7FFFFFFFU;
inline constexpr std::uint32_t kF32Inf = 0x7F800000U;
inline constexpr std::uint32_t kF32QuietNan = 0x7FC00000U;

}  // namespace detail

// ---------------------------------------------------------------- BF16

/// A BF16 value as its 16 raw bits; same size, alignment and bit layout as CUDA's
/// `__nv_bfloat16` / `__nv_bfloat16_raw`, so device buffers of either can be reinterpreted.
struct bf16 {
  std::uint16_t bits;
  friend constexpr bool operator==(bf16, bf16) = default;
};
static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2 && std::is_trivially_copyable_v<bf16>);

/// BF16 -> float32, exact (every BF16 is a float32; NaN payloads are kept).
DSV4_HOST_DEVICE constexpr float bf16_to_float(bf16 x) noexcept {
  return detail::bits_float(static_cast<std::uint32_t>(x.bits) << 16);
}

/// float32 -> BF16, round to nearest even; values past the BF16 range round to +-inf as IEEE
/// says. Every NaN becomes the canonical 0x7FFF, as `__float2bfloat16_rn` (cuda_bf16.h) and
/// `cvt.rn.bf16.f32` do.
DSV4_HOST_DEVICE constexpr bf16 float_to_bf16(float x) noexcept {
  const std::uint32_t u = detail::float_bits(x);
  if ((u & detail::kF32AbsMask) > detail::kF32Inf) return bf16{0x7FFFU};
  // No overflow of u: the largest finite input, 0x7F7FFFFF, gives 0x7F80.. (+inf) as it must.
  return bf16{static_cast<std::uint16_t>((u + 0x7FFFU + ((u >> 16) & 1U)) >> 16)};
}

// ---------------------------------------------------------------- E4M3

/// What `float_to_e4m3` does with finite values above 448 and with +-inf.
enum class fp8_saturation : std::uint8_t {
  satfinite,  ///< clamp to +-448 (0x7E / 0xFE): `__NV_SATFINITE`, PTX `cvt.rn.satfinite`. Default.
  none,       ///< encode as NaN (0x7F / 0xFF, sign kept): `__NV_NOSAT`.
};

inline constexpr float kE4m3Max = 448.0f;           ///< Largest finite E4M3 (fn) magnitude, code 0x7E.
inline constexpr std::uint8_t kE4m3MaxCode = 0x7E;  ///< +448.
inline constexpr std::uint8_t kE4m3NanCode = 0x7F;  ///< The NaN every NaN input becomes.

/// float32 -> E4M3 (fn) code, round to nearest even (facts section 4).
/// |x| <= 2^-10 (half the smallest subnormal) gives a signed zero (0x00 / 0x80); values in
/// (448, 464] round to 448; beyond 464 and +-inf: +-448 with `satfinite` (default), NaN
/// 0x7F / 0xFF with `none`. Any NaN input gives 0x7F. Bit-exact with
/// `__nv_cvt_float_to_fp8(x, sat, __NV_E4M3)`.
DSV4_HOST_DEVICE constexpr std::uint8_t float_to_e4m3(float x,
                                                      fp8_saturation sat = fp8_saturation::satfinite) noexcept {
  const std::uint32_t u = detail::float_bits(x);
  const std::uint32_t a = u & detail::kF32AbsMask;
  const std::uint32_t sign = (u >> 24) & 0x80U;
  // Normal range [2^-6, 464]: rebias the exponent (127 -> 7) and round 23 -> 3 mantissa bits;
  // a mantissa carry moves into the exponent, which is what rounding up must do.
  // Compares on int32 (a < 2^31): SSE2 has no unsigned 32-bit compare.
  const auto ai = static_cast<std::int32_t>(a);
  const bool small = ai < 0x3C800000;  // below 2^-6, the smallest normal
  const std::uint32_t normal = detail::rne_shift_right(a - (120U << 23), 20);
  // Subnormal range (< 2^-6): code = |x| / 2^-9 rounded to nearest even, 0..8 (8 is the min
  // normal 0x08). Adding 2^14, whose ulp is 2^-9, makes the FPU do that rounding; the code is
  // the low bits of the sum. No variable shift, so the loop vectorizes on plain SSE2.
  const std::uint32_t subnormal = detail::float_bits(detail::bits_float(small ? a : 0U) + 16384.0f) - 0x46800000U;
  const std::uint32_t overflow = sat == fp8_saturation::satfinite ? kE4m3MaxCode : kE4m3NanCode;
  std::uint32_t code = small ? subnormal : normal;
  code = ai > 0x43E80000 ? overflow : code;  // 0x43E80000 = 464 (448 + half ulp)
  code |= sign;
  code = ai > 0x7F800000 ? kE4m3NanCode : code;
  return static_cast<std::uint8_t>(code);
}

/// E4M3 (fn) code -> float32, exact for all 256 codes: 0x7F / 0xFF are NaN (sign kept),
/// 0x00 / 0x80 are +-0, 0x01 is 2^-9, 0x7E is 448.
DSV4_HOST_DEVICE constexpr float e4m3_to_float(std::uint8_t code) noexcept {
  const std::uint32_t sign = (static_cast<std::uint32_t>(code) & 0x80U) << 24;
  const std::uint32_t exp = (code >> 3) & 0xFU;
  const std::uint32_t man = code & 0x7U;
  std::uint32_t bits = 0;
  if (exp == 0xFU && man == 0x7U) {
    bits = detail::kF32QuietNan;
  } else if (exp != 0) {
    bits = ((exp + 120U) << 23) | (man << 20);
  } else if (man != 0) {
    // man x 2^-9: normalise the 3-bit subnormal mantissa into a float32 normal.
    const int width = detail::bit_width(man);                     // 1..3: man in [2^(w-1), 2^w)
    const auto e = static_cast<std::uint32_t>(127 - 10 + width);  // 2^(w-1-9)
    bits = (e << 23) | ((man << (24 - width)) & 0x7FFFFFU);
  }
  return detail::bits_float(bits | sign);
}

// ---------------------------------------------------------------- powers of two, E8M0

/// 2^e as a float32, exact for e in [-149, 127] (subnormals below -126). Outside that range:
/// +0 for e < -149, +inf for e > 127 (never undefined behaviour).
DSV4_HOST_DEVICE constexpr float exp2i(int e) noexcept {
  if (e > 127) return detail::bits_float(detail::kF32Inf);
  if (e >= -126) return detail::bits_float(static_cast<std::uint32_t>(e + 127) << 23);
  if (e >= -149) return detail::bits_float(std::uint32_t{1} << (e + 149));
  return 0.0f;
}

/// The exact ceil(log2(|x|)), from the float's exponent and mantissa bits (never
/// `ceil(log2f(x))`, which is wrong one ulp above most powers of two 2^k: log2f(2^-20 x (1 +
/// 2^-23)) rounds to -20, so its ceiling is -20, not -19; `detail::ceil_float_log2` models that
/// rounding where a writer does it on purpose). Defined for every finite x != 0, subnormals included: [-149, 128].
/// Sign ignored. Out of domain, still defined: +-0 -> -150, +-inf and NaN -> 128.
DSV4_HOST_DEVICE constexpr int ceil_log2(float x) noexcept {
  const std::uint32_t a = detail::float_bits(x) & detail::kF32AbsMask;
  if (a == 0) return -150;
  if (a >= detail::kF32Inf) return 128;
  const std::uint32_t biased = a >> 23;
  const std::uint32_t man = a & 0x7FFFFFU;
  if (biased == 0) return -149 + detail::bit_width(man - 1);  // man x 2^-149, man >= 1
  return static_cast<int>(biased) - 127 + (man != 0 ? 1 : 0);
}

/// The exact floor(log2(|x|)) for finite x != 0: [-149, 127]. Out of domain: +-0 -> -150,
/// +-inf and NaN -> 128. Used by the OCP MX scale rule.
DSV4_HOST_DEVICE constexpr int floor_log2(float x) noexcept {
  const std::uint32_t a = detail::float_bits(x) & detail::kF32AbsMask;
  if (a == 0) return -150;
  if (a >= detail::kF32Inf) return 128;
  const std::uint32_t biased = a >> 23;
  if (biased == 0) return -150 + detail::bit_width(a);
  return static_cast<int>(biased) - 127;
}

inline constexpr std::uint8_t kE8m0NanCode = 0xFF;  ///< The one E8M0 NaN.

/// float32 -> E8M0 (UE8M0) byte, rounding up: 2^ceil(log2|x|) as byte ceil + 127, clamped to
/// [0x00, 0xFE]. |x| <= 2^-127 (zero included) gives 0x00 (2^-127); |x| > 2^127 and +-inf give
/// 0xFE (2^127, saturating); NaN gives 0xFF. Sign ignored. Bit-exact with
/// `__nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundPosInf)` for all 2^32 inputs. Unchanged by
/// the references' inf rule (docs/engines/writers.md 2): an FP8 block writer whose amax is +-inf writes
/// 0xFF itself (`quantize_fp8_block`), it does not call this for it.
DSV4_HOST_DEVICE constexpr std::uint8_t float_to_ue8m0_ceil(float x) noexcept {
  const std::uint32_t a = detail::float_bits(x) & detail::kF32AbsMask;
  if (a > detail::kF32Inf) return kE8m0NanCode;
  const int byte = ceil_log2(x) + 127;
  return static_cast<std::uint8_t>(byte < 0 ? 0 : (byte > 254 ? 254 : byte));
}

/// E8M0 byte -> float32: 2^(byte - 127), exact. 0x00 is 2^-127 (a float32 subnormal, not 0:
/// the `byte << 23` shortcut gets it wrong, facts section 5.5); 0xFF is NaN.
DSV4_HOST_DEVICE constexpr float e8m0_to_float(std::uint8_t byte) noexcept {
  if (byte == kE8m0NanCode) return detail::bits_float(detail::kF32QuietNan);
  if (byte == 0) return detail::bits_float(0x00400000U);  // 2^-127
  return detail::bits_float(static_cast<std::uint32_t>(byte) << 23);
}

/// `v`, with any NaN replaced by the canonical quiet NaN 0x7FC00000; other values unchanged.
/// The dequantizers' float output goes through it: a NaN product keeps an operand's payload
/// on x86 (and in either operand order once vectorized) but is 0x7FFFFFFF on NVIDIA GPUs, so
/// without it host and device float rows would differ in NaN bits. Branch-free.
DSV4_HOST_DEVICE constexpr float canonical_nan(float v) noexcept {
  const std::uint32_t u = detail::float_bits(v);
  return detail::bits_float((u & 0x7FFFFFFFU) > 0x7F800000U ? detail::kF32QuietNan : u);
}

// ---------------------------------------------------------------- E2M1

inline constexpr float kE2m1Max = 6.0f;  ///< Largest E2M1 magnitude, code 0x7.

/// float32 -> E2M1 code in the low nibble (sign in bit 3), round to nearest even,
/// saturating: |x| <= 0.25 -> signed zero, |x| > 6 and +-inf -> +-6 (0x7 / 0xF), NaN -> +6
/// (0x7; E2M1 has no NaN). Bit-exact with `__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest)`.
/// Ties: 0.75 -> 1 (code 2), 1.75 -> 2 (code 4), 2.5 -> 2, 3.5 -> 4 (code 6), 5 -> 4.
DSV4_HOST_DEVICE constexpr std::uint8_t float_to_e2m1(float x) noexcept {
  const std::uint32_t u = detail::float_bits(x);
  const std::uint32_t a = u & detail::kF32AbsMask;
  const std::uint32_t sign = (u >> 28) & 0x8U;
  // Normal range [1, 6]: rebias (127 -> 1), round 23 -> 1 mantissa bit.
  const auto ai = static_cast<std::int32_t>(a);
  const bool small = ai < 0x3F800000;  // below 1.0, the smallest normal
  const std::uint32_t normal = detail::rne_shift_right(a - (126U << 23), 22);
  // Subnormal range (< 1): code = |x| / 0.5 rounded to nearest even, 0..2, by adding 2^22
  // (ulp 0.5) as for E4M3.
  const std::uint32_t subnormal = detail::float_bits(detail::bits_float(small ? a : 0U) + 4194304.0f) - 0x4A800000U;
  std::uint32_t code = small ? subnormal : normal;
  code = ai > 0x40C00000 ? 0x7U : code;  // 0x40C00000 = 6.0
  code |= sign;
  code = ai > 0x7F800000 ? 0x7U : code;
  return static_cast<std::uint8_t>(code);
}

/// float32 -> E2M1 code by tokenspeed's comparisons (`e2m1_rounding::ties_toward_zero`):
/// magnitude |x| <= 0.25 -> 0, <= 0.75 -> 0.5, <= 1.25 -> 1, <= 1.75 -> 1.5, <= 2.5 -> 2,
/// <= 3.5 -> 3, <= 5 -> 4, else 6 (+-inf too; NaN compares false everywhere: 6), sign bit 3
/// from the sign of x except that a zero magnitude is always +0 (0x0). Differs from
/// `float_to_e2m1` only at the ties 0.75, 1.75 and 3.5 (one code lower) and for negative values
/// that round to zero (0x0, not 0x8). Source: lightseekorg/tokenspeed deepseek_v4_ops.py
/// (docs/engines/writers.md 4).
DSV4_HOST_DEVICE constexpr std::uint8_t float_to_e2m1_ties_toward_zero(float x) noexcept {
  const float a = detail::bits_float(detail::float_bits(x) & detail::kF32AbsMask);
  const std::uint8_t mag = a <= 0.25f   ? 0
                           : a <= 0.75f ? 1
                           : a <= 1.25f ? 2
                           : a <= 1.75f ? 3
                           : a <= 2.5f  ? 4
                           : a <= 3.5f  ? 5
                           : a <= 5.0f  ? 6
                                        : 7;
  const auto sign = static_cast<std::uint8_t>((detail::float_bits(x) >> 28) & 0x8U);
  return mag == 0 ? std::uint8_t{0} : static_cast<std::uint8_t>(mag | sign);
}

/// E2M1 code (low nibble; the high nibble is ignored) -> float32, exact:
/// 0x0..0x7 = 0, 0.5, 1, 1.5, 2, 3, 4, 6; 0x8..0xF the same negated (0x8 is -0).
DSV4_HOST_DEVICE constexpr float e2m1_to_float(std::uint8_t code) noexcept {
  const std::uint32_t c = code & 0xFU;
  const std::uint32_t exp = (c >> 1) & 0x3U;
  const std::uint32_t man = c & 0x1U;
  std::uint32_t bits = 0;
  if (exp != 0) {
    bits = ((exp + 126U) << 23) | (man << 22);  // (1 + man/2) x 2^(exp-1)
  } else if (man != 0) {
    bits = 126U << 23;  // 0.5
  }
  return detail::bits_float(bits | ((c & 0x8U) << 28));
}

// ---------------------------------------------------------------- block scales

/// The power-of-two block scale exponent shared by every row quantizer and the GPU kernels:
///   e = ceil(log2(max(amax, amax_floor) / format_max))
/// with the division done in float32 (as the reference kernels do) and the ceiling exact
/// (`ceil_log2`). The block is then stored as format(x * 2^-e) and decodes as q * 2^e, so no
/// element of the block exceeds format_max after scaling.
/// - `amax`: max |x| of the block (>= 0); `format_max`: 448 (E4M3) or 6 (E2M1), > 0;
///   `amax_floor`: >= 0, keeps an all-zero block finite (1e-4 gives e = -22 for E4M3,
///   scale byte 105, facts section 5.1).
/// - Clamped to [-127, 127] so that e + 127 is a finite E8M0 byte and 2^e, 2^-e are normal or
///   2^-127: amax = 0 with a zero floor gives -127; amax = +inf gives 127 (the MXFP4 writers'
///   clamp; the FP8 block writers handle an inf amax before, as the references do: scale inf,
///   row_codec.hpp). A NaN amax is replaced by the floor (`max` ignores it); NaN policy is the
///   caller's (see row_codec.hpp).
DSV4_HOST_DEVICE constexpr int scale_exponent_for_amax(float amax, float format_max, float amax_floor) noexcept {
  const float m = amax > amax_floor ? amax : amax_floor;
  const int e = ceil_log2(m / format_max);
  return e < -127 ? -127 : (e > 127 ? 127 : e);
}

// ---------------------------------------------------------------- branch-free element kernels
//
// The block loops of the row codecs (row_codec.hpp) run these instead of the reference
// functions above and give the same result for every input (tests/row_codec_test.cpp,
// VectorBlocks: every BF16 input at every scale exponent, every code at every E8M0 scale), but
// are straight-line code with no selects that a compiler turns into branches, so that GCC 12
// and clang 14 vectorize loops over them at the baseline x86-64 target (SSE2): one float
// addition in round-to-nearest-even, integer min / max / add / shift / and, and int -> float
// conversion.

namespace detail {

/// The E4M3 code of a BF16 value with bits `b` times 2^-e, where the result is 0 or a normal E4M3
/// value (the precondition of `e4m3_block_normal`, row_codec.hpp), from `bias` = 7 - ((e + 120)
/// << 7): rne((a - ((120 + e) << 7)) / 16) on the sign-less bits a, max 0, the sign bit kept.
/// 16-bit integer work only, so the loops that call it vectorize in 16-bit lanes.
DSV4_HOST_DEVICE constexpr std::uint8_t e4m3_normal_code(std::uint16_t b, std::uint16_t bias) noexcept {
  const auto a = static_cast<std::uint16_t>(b & 0x7FFFU);
  const auto t = static_cast<std::int16_t>(static_cast<std::uint16_t>(a + bias + ((a >> 4) & 1U)));
  const auto q = static_cast<std::int16_t>(t >> 4);
  const std::int16_t code = q > 0 ? q : std::int16_t{0};
  return static_cast<std::uint8_t>(code | ((b >> 8) & 0x80));
}

/// E4M3 (fn) code of x, saturating: the same result as `float_to_e4m3(x)` (satfinite) for
/// every float x, NaN and infinities included.
///
/// c = min(|x|, 448) (NaN -> 448) is rounded to the E4M3 grid by adding C = 2^(E + 20), where
/// E = max(exponent(c), -6): the ulp of C is 2^(E - 3), the E4M3 ulp of c's binade (2^-9, the
/// subnormal ulp, for c < 2^-6), so the float addition rounds c to nearest even on the E4M3 grid
/// and k = bits(c + C) - bits(C) is c / ulp, in [8, 16] for a normal c and [0, 8] below 2^-6.
/// The code is k + 8 (E + 6): a carry of k into 16 moves into the next exponent by itself.
/// Values in (448, 464] round to 448 as the reference does; larger ones and inf are clamped to
/// 448 before rounding. Exact with flush-to-zero / denormals-are-zero (subnormal c gives 0).
DSV4_HOST_DEVICE constexpr std::uint32_t e4m3_code_branchless(float x) noexcept {
  const std::uint32_t u = float_bits(x);
  // Clamps as integer min / max of the sign-less bits (ordered as the values, NaN above inf):
  // float ternaries would be turned into branches by GCC's jump threading.
  const auto a = static_cast<std::int32_t>(u & kF32AbsMask);
  const std::int32_t c = a < 0x43E00000 ? a : 0x43E00000;                            // min(|x|, 448); NaN -> 448
  const std::int32_t q = c > 0x3C800000 ? c : 0x3C800000;                            // max(c, 2^-6)
  const std::uint32_t cb = (static_cast<std::uint32_t>(q) & kF32Inf) + (20U << 23);  // 2^(E + 20), E in [-6, 8]
  const std::uint32_t sum = float_bits(bits_float(static_cast<std::uint32_t>(c)) + bits_float(cb));
  std::uint32_t code = sum - cb + (cb >> 20) - 0x468U;  // 0x468 = (127 + 20 - 6) x 8
  code |= (u >> 24) & 0x80U;
  const std::uint32_t nan_mask =
      0U - static_cast<std::uint32_t>(static_cast<std::int32_t>(u & kF32AbsMask) > 0x7F800000);
  return (code & ~nan_mask) | (kE4m3NanCode & nan_mask);
}

/// E2M1 code of x (low nibble): the same result as `float_to_e2m1(x)` for every float x.
/// As `e4m3_code_branchless` with C = 2^(E + 22), E = max(exponent(min(|x|, 6)), 0), whose ulp
/// 2^(E - 1) is the E2M1 ulp of the binade (0.5 below 1); code = k + 2E.
DSV4_HOST_DEVICE constexpr std::uint32_t e2m1_code_branchless(float x) noexcept {
  const std::uint32_t u = float_bits(x);
  const auto a = static_cast<std::int32_t>(u & kF32AbsMask);
  const std::int32_t c = a < 0x40C00000 ? a : 0x40C00000;                            // min(|x|, 6); NaN -> 6
  const std::int32_t q = c > 0x3F800000 ? c : 0x3F800000;                            // max(c, 1)
  const std::uint32_t cb = (static_cast<std::uint32_t>(q) & kF32Inf) + (22U << 23);  // 2^(E + 22), E in [0, 2]
  const std::uint32_t sum = float_bits(bits_float(static_cast<std::uint32_t>(c)) + bits_float(cb));
  std::uint32_t code = sum - cb + (cb >> 22) - 298U;  // 298 = 2 x (127 + 22)
  code |= (u >> 28) & 0x8U;
  const std::uint32_t nan_mask =
      0U - static_cast<std::uint32_t>(static_cast<std::int32_t>(u & kF32AbsMask) > 0x7F800000);
  return (code & ~nan_mask) | (0x7U & nan_mask);
}

/// `e4m3_to_float(code)` for every code, straight-line: normal codes rebias to float bits,
/// subnormal ones are m x 2^-9 by an int -> float conversion, 0x7F / 0xFF the quiet NaN.
DSV4_HOST_DEVICE constexpr float e4m3_to_float_branchless(std::uint32_t code) noexcept {
  const std::uint32_t m = code & 0x7FU;
  const std::uint32_t normal = (m << 20) + (120U << 23);
  const std::uint32_t sub = float_bits(static_cast<float>(static_cast<std::int32_t>(m & 0x7U)) * 0x1p-9f);
  const std::uint32_t is_sub = 0U - static_cast<std::uint32_t>(static_cast<std::int32_t>(m) < 8);
  const std::uint32_t is_nan = 0U - static_cast<std::uint32_t>(static_cast<std::int32_t>(m) == 0x7F);
  std::uint32_t bits = (sub & is_sub) | (normal & ~is_sub);
  bits = (kF32QuietNan & is_nan) | (bits & ~is_nan);
  return bits_float(bits | ((code & 0x80U) << 24));
}

/// `e2m1_to_float(code)` for every low nibble, straight-line.
DSV4_HOST_DEVICE constexpr float e2m1_to_float_branchless(std::uint32_t code) noexcept {
  const std::uint32_t c = code & 0xFU;
  const std::uint32_t exp = (c >> 1) & 0x3U;
  const std::uint32_t man = c & 0x1U;
  const std::uint32_t normal = ((exp + 126U) << 23) | (man << 22);
  const std::uint32_t sub = man * (126U << 23);  // 0.5 or 0
  const std::uint32_t is_sub = 0U - static_cast<std::uint32_t>(static_cast<std::int32_t>(exp) == 0);
  return bits_float(((sub & is_sub) | (normal & ~is_sub)) | ((c & 0x8U) << 28));
}

/// `float_to_bf16(x).bits` for every x, straight-line (NaN -> 0x7FFF by a mask).
DSV4_HOST_DEVICE constexpr std::uint16_t float_to_bf16_bits_branchless(float x) noexcept {
  const std::uint32_t u = float_bits(x);
  const std::uint32_t r = (u + 0x7FFFU + ((u >> 16) & 1U)) >> 16;
  const std::uint32_t is_nan = 0U - static_cast<std::uint32_t>(static_cast<std::int32_t>(u & kF32AbsMask) > 0x7F800000);
  return static_cast<std::uint16_t>((r & ~is_nan) | (0x7FFFU & is_nan));
}

}  // namespace detail

}  // namespace dsv4::cache
