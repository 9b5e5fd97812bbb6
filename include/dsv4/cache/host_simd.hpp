// dsv4-cache: the host kernels of the shared codec primitives (E4M3 / E2M1 blocks, block
// exponents, BF16 and fp32 copies, E2M1 dequantization tables), in up to three forms: SSE2
// intrinsics (<emmintrin.h>, x86-64 baseline), taken by the baseline copy of the bulk codecs
// (`host_sse2_path`); plain loops over restrict-qualified buffers shaped so that GCC and clang
// vectorize them (16-bit integer lanes where the float work can be replaced exactly), taken by
// the AVX2 / AVX-512 copies and on other CPUs; and, for the E2M1 midpoint count and the E2M1
// dequantizer, AVX2 intrinsics (`target("avx2")` functions, <immintrin.h>), taken by the AVX2 /
// AVX-512 copies on x86-64 (`host_avx2_path`). No third-party headers. Host only,
// little-endian; empty in CUDA translation units and for other compilers (DSV4_HOST_SIMD 0: the
// scalar code runs).
//
// Each kernel gives the scalar code's result for every input: either the same operations
// (`e4m3_code_branchless`, ...) or integer work proved equal in its comment (power-of-two
// scales as exponent shifts of the BF16 / code bits, E2M1 rounding by comparison with exactly
// scaled midpoints, the block exponent from the amax bits). tests/host_codec_test.cpp checks
// the formats on every ISA and the kernels exhaustively, in every form. The loops' vector width
// is the caller's: host_codec.hpp inlines them into one copy of the row loops per ISA.
//
// The primitives of row_codec.hpp and format_traits.hpp take these kernels only inside a bulk
// call of host_codec.hpp (`host_simd_scope`), never in constant evaluation: `quantize_row<F>`
// and the other per-row codecs stay the scalar reference, and the bulk calls clear FTZ / DAZ
// first (the kernels need gradual underflow, as the scalar code does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include "dsv4/cache/scalar_codec.hpp"

#ifndef DSV4_HOST_SIMD
#if !defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define DSV4_HOST_SIMD 1
#else
#define DSV4_HOST_SIMD 0
#endif
#endif

#if DSV4_HOST_SIMD && defined(__SSE2__)
#include <emmintrin.h>
#define DSV4_HOST_SSE2 1
#else
#define DSV4_HOST_SSE2 0
#endif

// AVX2 kernels (`target("avx2")` functions, taken only inside the AVX2 / AVX-512 copies of the
// bulk codecs, `host_avx2_path`): x86-64 only.
#if DSV4_HOST_SSE2 && defined(__x86_64__)
#include <immintrin.h>
#define DSV4_HOST_AVX2 1
#else
#define DSV4_HOST_AVX2 0
#endif

#if DSV4_HOST_SIMD
namespace dsv4::cache::detail {

/// Whether the calling thread is inside a host bulk call (host_codec.hpp) whose primitives take
/// the vector kernels, and whether that call runs a copy for a wide ISA (AVX2, AVX-512).
inline thread_local bool g_host_simd_on = false;
inline thread_local bool g_host_simd_wide = false;
/// Whether the call's copy may run the AVX2 kernels (an AVX2 or AVX-512 copy on a CPU with AVX2).
inline thread_local bool g_host_simd_avx2 = false;
inline bool host_simd_on() noexcept { return g_host_simd_on; }

/// Whether a kernel takes its SSE2 form: on x86 inside a bulk call of the baseline ISA. The
/// copies for AVX2 and AVX-512 run a kernel's AVX2 form where it has one (`host_avx2_path`),
/// else its plain loops, which the compiler vectorizes 256 or 512 bits wide (measured faster
/// there than the 128-bit SSE2 forms).
inline bool host_sse2_path() noexcept { return DSV4_HOST_SSE2 != 0 && !g_host_simd_wide; }
/// Whether a kernel takes its AVX2 form (where it has one): on x86-64 inside a bulk call of the
/// AVX2 or AVX-512 copy. Kernels without one run their plain loops there.
inline bool host_avx2_path() noexcept { return DSV4_HOST_AVX2 != 0 && g_host_simd_wide && g_host_simd_avx2; }

/// Whether a primitive takes its vector kernel: never in constant evaluation, only inside a bulk
/// call, and only when `shape_ok` (a block of whole 16-value steps).
constexpr bool host_simd_path(bool shape_ok) noexcept {
  if (std::is_constant_evaluated()) return false;
  return shape_ok && host_simd_on();
}

/// Enables the vector kernels on this thread for its lifetime (nests); `wide`: the bulk call
/// runs an AVX2 or AVX-512 copy; `avx2` (with `wide`): the AVX2 kernels may run (the bulk calls
/// always set it with `wide`; the tests clear it to run the plain loops, which CPUs without the
/// SSE2 and AVX2 forms run).
class host_simd_scope {
 public:
  explicit host_simd_scope(bool wide = false, bool avx2 = false) noexcept
      : prev_(g_host_simd_on), prev_wide_(g_host_simd_wide), prev_avx2_(g_host_simd_avx2) {
    g_host_simd_on = true;
    g_host_simd_wide = wide;
    g_host_simd_avx2 = wide && avx2;
  }
  ~host_simd_scope() {
    g_host_simd_on = prev_;
    g_host_simd_wide = prev_wide_;
    g_host_simd_avx2 = prev_avx2_;
  }
  host_simd_scope(const host_simd_scope&) = delete;
  host_simd_scope& operator=(const host_simd_scope&) = delete;
  host_simd_scope(host_simd_scope&&) = delete;
  host_simd_scope& operator=(host_simd_scope&&) = delete;

 private:
  bool prev_;
  bool prev_wide_;
  bool prev_avx2_;
};

namespace simd {

inline constexpr int kLanes = 16;  ///< Block sizes the kernels take: multiples of this.

#if DSV4_HOST_SSE2
/// SSE2 building blocks (x86-64 baseline): unaligned 16-byte loads / stores and horizontal
/// signed 16-bit max / min. Used by the kernels below on x86; other targets run their loops.
namespace x86 {
inline __m128i load(const void* p) noexcept { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
inline void store(void* p, __m128i v) noexcept { _mm_storeu_si128(static_cast<__m128i*>(p), v); }
inline std::int16_t hmax16(__m128i v) noexcept {
  v = _mm_max_epi16(v, _mm_shuffle_epi32(v, 0x4E));
  v = _mm_max_epi16(v, _mm_shuffle_epi32(v, 0xB1));
  v = _mm_max_epi16(v, _mm_shufflelo_epi16(v, 0xB1));
  return static_cast<std::int16_t>(_mm_cvtsi128_si32(v));
}
inline std::int16_t hmin16(__m128i v) noexcept {
  v = _mm_min_epi16(v, _mm_shuffle_epi32(v, 0x4E));
  v = _mm_min_epi16(v, _mm_shuffle_epi32(v, 0xB1));
  v = _mm_min_epi16(v, _mm_shufflelo_epi16(v, 0xB1));
  return static_cast<std::int16_t>(_mm_cvtsi128_si32(v));
}
}  // namespace x86
#endif

#if DSV4_HOST_SSE2
/// The max of the sign-less bits a = bits & 0x7FFF over n values (n % 8 == 0) and min(a - 1) as
/// uint16 (0xFFFF iff every value is a zero): `block_stats` of row_codec.hpp on SSE2 (its loop
/// is the other form). a + 0x7FFF as int16 maps 0 to the largest value and keeps the order of
/// the others, so pminsw finds the smallest nonzero a.
inline void block_stats_sse2(const bf16* __restrict in, int n, std::uint16_t& max_all,
                             std::uint16_t& min_nonzero_minus_one) noexcept {
  const __m128i abs = _mm_set1_epi16(0x7FFF);
  __m128i mx = _mm_setzero_si128();
  __m128i mn = abs;
  for (int i = 0; i < n; i += 8) {
    const __m128i a = _mm_and_si128(x86::load(in + i), abs);
    mx = _mm_max_epi16(mx, a);
    mn = _mm_min_epi16(mn, _mm_add_epi16(a, abs));
  }
  max_all = static_cast<std::uint16_t>(x86::hmax16(mx));
  const auto m = static_cast<std::uint16_t>(x86::hmin16(mn));
  min_nonzero_minus_one = m == 0x7FFFU ? std::uint16_t{0xFFFFU} : static_cast<std::uint16_t>(m - 0x7FFFU - 1U);
}
#endif

/// `amax_bf16` (all and finite maxima of the sign-less bits), signed 16-bit lanes (SSE2 pmaxsw).
struct amax_bits {
  std::uint16_t all;     ///< max sign-less bits over every value (> 0x7F80 iff a NaN)
  std::uint16_t finite;  ///< max over the non-NaN values
};
inline amax_bits block_amax(const bf16* __restrict in, int n) noexcept {
#if DSV4_HOST_SSE2
  // The finite max only needs a second pass when a NaN is present (rare). Every ISA: the
  // blocks are 16 or 32 values, too short for the wider loops to gain (measured slower).
  {
    const __m128i abs = _mm_set1_epi16(0x7FFF);
    __m128i mx = _mm_setzero_si128();
    for (int i = 0; i < n; i += 8) mx = _mm_max_epi16(mx, _mm_and_si128(x86::load(in + i), abs));
    const auto all = static_cast<std::uint16_t>(x86::hmax16(mx));
    if (all <= 0x7F80U) return {all, all};
  }
#endif
  std::int16_t all = 0;
  std::int16_t fin = 0;
  for (int i = 0; i < n; ++i) {
    const auto a = static_cast<std::int16_t>(in[i].bits & 0x7FFF);
    all = a > all ? a : all;
    const std::int16_t f = a <= 0x7F80 ? a : std::int16_t{0};
    fin = f > fin ? f : fin;
  }
  return {static_cast<std::uint16_t>(all), static_cast<std::uint16_t>(fin)};
}

/// `scale_exponent_for_amax(amax, format_max, floor)` for format_max 448 (E4M3) or 6 (E2M1)
/// without the float division: when max(amax, floor) is a float normal with at most 8
/// significant bits (a BF16 amax), m / format_max is never within 2^-24 (relative) of a power of
/// two without being one, so the float quotient has the exact quotient's ceiling:
/// m = 2^E x 1.f and format_max = 2^k x 1.g give E - k, plus one if 1.f > 1.g. Any other m
/// (the floor itself, a subnormal, inf) or format_max: the scalar function.
inline int block_scale_exponent(float amax, float format_max, float floor) noexcept {
  const float m = amax > floor ? amax : floor;
  const std::uint32_t u = float_bits(m);
  const std::uint32_t biased = u >> 23;  // m >= 0
  int k = 0;
  std::uint32_t g = 0;
  if (format_max == kE4m3Max) {
    k = 8;
    g = 0x600000U;  // 448 = 1.75 x 2^8
  } else if (format_max == kE2m1Max) {
    k = 2;
    g = 0x400000U;  // 6 = 1.5 x 2^2
  } else {
    return scale_exponent_for_amax(amax, format_max, floor);
  }
  if ((u & 0xFFFFU) != 0 || biased == 0 || biased >= 255) return scale_exponent_for_amax(amax, format_max, floor);
  const int e = static_cast<int>(biased) - 127 - k + ((u & 0x7FFFFFU) > g ? 1 : 0);
  return e < -127 ? -127 : (e > 127 ? 127 : e);
}

/// The exponent s of a scale 2^s with |s| <= limit (so that the codes times it stay normal);
/// 1000 for any other scale.
inline int pow2_scale_exponent(float scale, int limit) noexcept {
  const std::uint32_t u = float_bits(scale);
  if ((u & 0x807FFFFFU) != 0) return 1000;
  const int s = static_cast<int>(u >> 23) - 127;
  return s >= -limit && s <= limit ? s : 1000;
}
/// The E4M3 rounding midpoints below 2^-6, (k + 1/2) x 2^-9 for k = 0..7, as BF16 bits.
inline constexpr std::int16_t kE4m3SubMid[8] = {0x3A80, 0x3B40, 0x3BA0, 0x3BE0, 0x3C10, 0x3C30, 0x3C50, 0x3C70};

/// E4M3 codes (satfinite) of in[i] x 2^-e on the 16-bit sign-less BF16 bits, for a block
/// without BF16 subnormals when e < 0. x x 2^-e is exact in BF16 unless it underflows (code 0)
/// or overflows (saturates, as the float path): its bits are the input's with the exponent
/// lowered by e, saturating at 0 and 0x7F80, and a zero's stay 0 (rescaled, its bits would
/// read as 2^(-e - 127): code 1 or more for e <= -117). From 2^-6 the code is a round-to-nearest-even shift
/// of 4 mantissa bits clamped to 0x7E (448); below, the number of midpoints (k + 1/2) 2^-9 below
/// the value, a midpoint rounding to the even code (> for even k, >= for odd k). NaN gives 0x7F,
/// +-inf +-448.
inline void e4m3_pow2_codes(const bf16* __restrict in, int n, int e, std::uint8_t* __restrict out) noexcept {
  const auto down = static_cast<std::uint16_t>(e > 0 ? e << 7 : 0);
  const auto up = static_cast<std::uint16_t>(e < 0 ? (-e) << 7 : 0);
#if DSV4_HOST_SSE2
  // The same lanes on SSE2 (n % 16 == 0): the clamps are unsigned saturating arithmetic
  // (min(d + up, 0x7F80) = sat(d + up + 0x807F) - 0x807F), the midpoint count only runs for
  // 8 values holding one below 2^-6, the sign bytes are packed from the high bytes.
  // Only while up < 2^-10's bits (e > -117): then a zero, whose bits become `up`, stays below
  // the first midpoint; a larger up takes the loop below, which keeps zeros at zero.
  if (n % 16 == 0 && up < kE4m3SubMid[0] && host_sse2_path()) {
    const __m128i vdown = _mm_set1_epi16(static_cast<std::int16_t>(down));
    const __m128i vup = _mm_set1_epi16(static_cast<std::int16_t>(up + 0x807FU));
    const __m128i bias = _mm_set1_epi16(static_cast<std::int16_t>(0x807F));
    const __m128i abs = _mm_set1_epi16(0x7FFF);
    const __m128i inf = _mm_set1_epi16(0x7F80);
    const __m128i min_normal = _mm_set1_epi16(0x3C7F);  // s > 0x3C7F: s >= 2^-6
    const __m128i rebias = _mm_set1_epi16(0x3C00 - 7);
    const __m128i one = _mm_set1_epi16(1);
    const __m128i max_code = _mm_set1_epi16(0x7E);
    const __m128i sign = _mm_set1_epi8(static_cast<char>(0x80));
    for (int i = 0; i < n; i += 16) {
      __m128i c[2];
      __m128i b[2];
      for (std::ptrdiff_t h = 0; h < 2; ++h) {
        b[h] = x86::load(in + i + 8 * h);
        const __m128i a = _mm_and_si128(b[h], abs);
        const __m128i sv = _mm_subs_epu16(_mm_adds_epu16(_mm_subs_epu16(a, vdown), vup), bias);
        const __m128i t = _mm_sub_epi16(sv, rebias);  // s - 0x3C00 + 7
        const __m128i r = _mm_srli_epi16(_mm_add_epi16(t, _mm_and_si128(_mm_srli_epi16(sv, 4), one)), 4);
        __m128i code = _mm_min_epi16(r, max_code);
        const __m128i small = _mm_cmpgt_epi16(min_normal, sv);
        if (_mm_movemask_epi8(small) != 0) {
          __m128i sub = _mm_setzero_si128();
          for (int k = 0; k < 8; ++k) {
            const auto mid = static_cast<std::int16_t>(kE4m3SubMid[k] - ((k & 1) != 0 ? 1 : 0));  // >= for odd k
            sub = _mm_sub_epi16(sub, _mm_cmpgt_epi16(sv, _mm_set1_epi16(mid)));
          }
          code = _mm_or_si128(_mm_andnot_si128(small, code), _mm_and_si128(small, sub));
        }
        const __m128i is_inf = _mm_cmpeq_epi16(a, inf);
        code = _mm_or_si128(_mm_andnot_si128(is_inf, code), _mm_and_si128(is_inf, max_code));
        const __m128i is_nan = _mm_cmpgt_epi16(a, inf);
        c[h] = _mm_or_si128(code, _mm_and_si128(is_nan, _mm_set1_epi16(0x7F)));
      }
      const __m128i nan_bytes = _mm_packs_epi16(_mm_cmpgt_epi16(_mm_and_si128(b[0], abs), inf),
                                                _mm_cmpgt_epi16(_mm_and_si128(b[1], abs), inf));
      const __m128i signs = _mm_andnot_si128(
          nan_bytes, _mm_and_si128(_mm_packus_epi16(_mm_srli_epi16(b[0], 8), _mm_srli_epi16(b[1], 8)), sign));
      x86::store(out + i, _mm_or_si128(_mm_packus_epi16(c[0], c[1]), signs));
    }
    return;
  }
#endif
  for (int i = 0; i < n; ++i) {
    const std::uint16_t b = in[i].bits;
    const auto a = static_cast<std::uint16_t>(b & 0x7FFFU);
    const auto d = static_cast<std::uint16_t>(a > down ? a - down : 0U);
    const auto u = static_cast<std::uint16_t>(d == 0 ? 0U : d + up);  // a zero times 2^-e stays zero
    const auto s = static_cast<std::int16_t>(u < 0x7F80U ? u : 0x7F80U);
    const auto sub = static_cast<std::uint16_t>(
        static_cast<std::uint16_t>(s > kE4m3SubMid[0]) + static_cast<std::uint16_t>(s >= kE4m3SubMid[1]) +
        static_cast<std::uint16_t>(s > kE4m3SubMid[2]) + static_cast<std::uint16_t>(s >= kE4m3SubMid[3]) +
        static_cast<std::uint16_t>(s > kE4m3SubMid[4]) + static_cast<std::uint16_t>(s >= kE4m3SubMid[5]) +
        static_cast<std::uint16_t>(s > kE4m3SubMid[6]) + static_cast<std::uint16_t>(s >= kE4m3SubMid[7]));
    const auto t = static_cast<std::uint16_t>(s - 0x3C00);                  // (120 << 7): rebias 127 -> 7
    const auto sum = static_cast<std::uint16_t>(t + 7U + ((t >> 4) & 1U));  // t < 0x4380: no wrap
    const auto r = static_cast<std::uint16_t>(sum >> 4);
    const std::uint16_t normal = r < 0x7EU ? r : std::uint16_t{0x7EU};
    const std::uint16_t code = s >= 0x3C80 ? normal : sub;  // 0x3C80 = 2^-6
    const auto sign = static_cast<std::uint16_t>((b >> 8) & 0x80U);
    // An infinity stays one whatever e (saturates to 448); its bits cannot be rescaled.
    const auto finite_or_inf = static_cast<std::uint16_t>((a == 0x7F80U ? 0x7EU : code) | sign);
    out[i] = static_cast<std::uint8_t>(a > 0x7F80U ? 0x7FU : finite_or_inf);
  }
}

/// codes[i] = E4M3 code of in[i] x inv_scale (`e4m3_block_any`); a power-of-two inv_scale takes
/// the 16-bit path where it is exact (`e4m3_pow2_codes`), else the float path.
inline void e4m3_scaled(const bf16* __restrict in, int n, float inv_scale, std::uint8_t* __restrict out) noexcept {
  const int k = pow2_scale_exponent(inv_scale, 127);  // inv_scale = 2^k, e = -k
  if (k != 1000) {
    bool subnormal = false;
    if (k > 0) {
      std::uint16_t any = 0;
      for (int i = 0; i < n; ++i) {
        const auto a = static_cast<std::int16_t>(in[i].bits & 0x7FFF);
        any |= static_cast<std::uint16_t>(a != 0 && a < 0x80 ? 1U : 0U);
      }
      subnormal = any != 0;
    }
    if (!subnormal) return e4m3_pow2_codes(in, n, -k, out);
  }
  for (int i = 0; i < n; ++i)
    out[i] = static_cast<std::uint8_t>(e4m3_code_branchless(bf16_to_float(in[i]) * inv_scale));
}
/// codes[i] = E4M3 code of in[i] / divisor (IEEE division, `e4m3_tensor_scaled`).
inline void e4m3_divided(const bf16* __restrict in, int n, float divisor, std::uint8_t* __restrict out) noexcept {
  // x / 2^k and x x 2^-k are the same correctly rounded value when 2^-k is a float normal.
  if (pow2_scale_exponent(divisor, 126) != 1000) return e4m3_scaled(in, n, 1.0f / divisor, out);
  for (int i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(e4m3_code_branchless(bf16_to_float(in[i]) / divisor));
}
/// `e4m3_block_normal` (its precondition holds): `e4m3_normal_code` in 16-bit lanes. SSE2: the
/// max with 0 is packuswb's unsigned saturation (the codes are at most 0x7E), the sign bytes are
/// packed from the high bytes.
inline void e4m3_normal(const bf16* __restrict in, int n, int e, std::uint8_t* __restrict out) noexcept {
  const auto bias = static_cast<std::uint16_t>(7 - ((e + 120) << 7));
#if DSV4_HOST_SSE2
  if (host_sse2_path()) {
    const __m128i vb = _mm_set1_epi16(static_cast<std::int16_t>(bias));
    const __m128i abs = _mm_set1_epi16(0x7FFF);
    const __m128i one = _mm_set1_epi16(1);
    const __m128i sign = _mm_set1_epi8(static_cast<char>(0x80));
    for (int i = 0; i < n; i += 16) {
      const __m128i b0 = x86::load(in + i);
      const __m128i b1 = x86::load(in + i + 8);
      const __m128i a0 = _mm_and_si128(b0, abs);
      const __m128i a1 = _mm_and_si128(b1, abs);
      const __m128i t0 = _mm_add_epi16(_mm_add_epi16(a0, vb), _mm_and_si128(_mm_srli_epi16(a0, 4), one));
      const __m128i t1 = _mm_add_epi16(_mm_add_epi16(a1, vb), _mm_and_si128(_mm_srli_epi16(a1, 4), one));
      const __m128i codes = _mm_packus_epi16(_mm_srai_epi16(t0, 4), _mm_srai_epi16(t1, 4));
      const __m128i signs = _mm_and_si128(_mm_packus_epi16(_mm_srli_epi16(b0, 8), _mm_srli_epi16(b1, 8)), sign);
      x86::store(out + i, _mm_or_si128(codes, signs));
    }
    return;
  }
#endif
  for (int i = 0; i < n; ++i) {
    out[i] = e4m3_normal_code(in[i].bits, bias);
  }
}
#if DSV4_HOST_SSE2
/// The power-of-two case of `e4m3_dequant` on SSE2, n % 16 == 0, scale 2^s: false (nothing
/// written) if a code is NaN, or a code is an E4M3 subnormal and s < -117. A normal code's BF16
/// bits are ((c & 0x7F) << 4) + (120 + s) << 7 (0 for a zero); a subnormal code m x 2^-9 is
/// the float product m x 2^(s - 9) (exact, a float normal for s >= -117, at most 3 significant
/// bits: its high half is its BF16); the sign moves to bit 15; the float's bits are those << 16.
template <class Out>
inline bool e4m3_pow2_dequant_sse2(const std::uint8_t* __restrict codes, int n, int s, Out* __restrict out) noexcept {
  const __m128i zero = _mm_setzero_si128();
  const __m128i m7f = _mm_set1_epi8(0x7F);
  const __m128i eight = _mm_set1_epi8(8);
  __m128i nan = zero;
  __m128i sub = zero;
  for (int i = 0; i < n; i += 16) {
    const __m128i a = _mm_and_si128(x86::load(codes + i), m7f);
    sub = _mm_or_si128(sub, _mm_and_si128(_mm_cmpgt_epi8(a, zero), _mm_cmpgt_epi8(eight, a)));
    nan = _mm_or_si128(nan, _mm_cmpeq_epi8(a, m7f));
  }
  const bool any_sub = _mm_movemask_epi8(sub) != 0;
  if (_mm_movemask_epi8(nan) != 0 || (any_sub && s < -117)) return false;
  const __m128i off = _mm_set1_epi16(static_cast<std::int16_t>((120 + s) << 7));
  const __m128i low7 = _mm_set1_epi16(0x7F);
  const __m128i sbit = _mm_set1_epi16(0x80);
  const __m128i eight16 = _mm_set1_epi16(8);
  const __m128 sub_scale = _mm_set1_ps(any_sub ? bits_float(static_cast<std::uint32_t>(127 + s - 9) << 23) : 0.0f);
  for (int i = 0; i < n; i += 16) {
    const __m128i c = x86::load(codes + i);
    const __m128i w[2] = {_mm_unpacklo_epi8(c, zero), _mm_unpackhi_epi8(c, zero)};
    for (std::ptrdiff_t h = 0; h < 2; ++h) {
      const __m128i a = _mm_and_si128(w[h], low7);
      __m128i v = _mm_andnot_si128(_mm_cmpeq_epi16(a, zero), _mm_add_epi16(_mm_slli_epi16(a, 4), off));
      if (any_sub) {
        const __m128i m = _mm_andnot_si128(_mm_cmpeq_epi16(a, zero), _mm_cmpgt_epi16(eight16, a));
        if (_mm_movemask_epi8(m) != 0) {
          const __m128 lo = _mm_mul_ps(_mm_cvtepi32_ps(_mm_unpacklo_epi16(a, zero)), sub_scale);
          const __m128 hi = _mm_mul_ps(_mm_cvtepi32_ps(_mm_unpackhi_epi16(a, zero)), sub_scale);
          const __m128i sv =
              _mm_packs_epi32(_mm_srli_epi32(_mm_castps_si128(lo), 16), _mm_srli_epi32(_mm_castps_si128(hi), 16));
          v = _mm_or_si128(_mm_andnot_si128(m, v), _mm_and_si128(m, sv));
        }
      }
      v = _mm_or_si128(v, _mm_slli_epi16(_mm_and_si128(w[h], sbit), 8));
      Out* o = out + i + 8 * h;
      if constexpr (std::is_same_v<Out, bf16>) {
        x86::store(o, v);
      } else {
        x86::store(o, _mm_unpacklo_epi16(zero, v));
        x86::store(o + 4, _mm_unpackhi_epi16(zero, v));
      }
    }
  }
  return true;
}
#endif

/// out[i] = E4M3(codes[i]) x scale, as `from_float<Out>`. A power-of-two scale and a block of
/// normal codes and zeros (the common case) is an exponent shift of the code bits: exact, so the
/// same bits; otherwise the float product.
template <class Out>
inline void e4m3_dequant(const std::uint8_t* __restrict codes, int n, float scale, Out* __restrict out) noexcept {
  const int s = pow2_scale_exponent(scale, 119);
#if DSV4_HOST_SSE2
  if (s != 1000 && host_sse2_path() && e4m3_pow2_dequant_sse2(codes, n, s, out)) return;
#endif
  if (s != 1000) {
    std::uint8_t odd = 0;
    for (int i = 0; i < n; ++i) {
      const auto a = static_cast<std::uint8_t>(codes[i] & 0x7FU);
      odd |= static_cast<std::uint8_t>((static_cast<std::uint8_t>(a - 1U) < 7U) | (a == 0x7FU));
    }
    if (odd == 0) {
      if constexpr (std::is_same_v<Out, bf16>) {
        const auto off = static_cast<std::uint16_t>((120 + s) << 7);
        for (int i = 0; i < n; ++i) {
          const std::uint16_t c = codes[i];
          const auto a = static_cast<std::uint16_t>(c & 0x7FU);
          const auto v = static_cast<std::uint16_t>(a == 0 ? 0U : static_cast<unsigned>((a << 4) + off));
          out[i] = bf16{static_cast<std::uint16_t>(v | ((c & 0x80U) << 8))};
        }
      } else {
        const auto off = static_cast<std::uint32_t>(120 + s) << 23;
        for (int i = 0; i < n; ++i) {
          const std::uint32_t c = codes[i];
          const std::uint32_t a = c & 0x7FU;
          const std::uint32_t v = a == 0 ? 0U : (a << 20) + off;
          out[i] = bits_float(v | ((c & 0x80U) << 24));
        }
      }
      return;
    }
  }
  for (int i = 0; i < n; ++i) {
    const float v = e4m3_to_float_branchless(codes[i]) * scale;
    if constexpr (std::is_same_v<Out, bf16>) {
      out[i] = bf16{float_to_bf16_bits_branchless(v)};
    } else {
      out[i] = canonical_nan(v);
    }
  }
}
inline constexpr int kChunk = 64;  ///< Values per step of the E2M1 kernels (a local code buffer).

/// Packs n <= kChunk codes (one per byte, n even; `codes` holds kChunk bytes) into n / 2 bytes, value 2i in the low
/// nibble: the codes are read as little-endian 16-bit pairs (one copy), so that the loop vectorizes without shuffles.
inline void pack_nibbles(const std::uint8_t* __restrict codes, int n, std::uint8_t* __restrict out) noexcept {
  std::uint16_t w[kChunk / 2];
  std::memcpy(w, codes, sizeof(w));  // the whole buffer: a fixed-size copy, no library call
  for (int i = 0; i < n / 2; ++i) out[i] = static_cast<std::uint8_t>((w[i] & 0xFU) | ((w[i] >> 4) & 0xF0U));
}
/// Spreads n / 2 packed bytes (n <= kChunk) into n nibbles (`nib` holds kChunk bytes), one per byte (the inverse of
/// `pack_nibbles`).
inline void unpack_nibbles(const std::uint8_t* __restrict packed, int n, std::uint8_t* __restrict nib) noexcept {
  std::uint16_t w[kChunk / 2] = {};
  for (int i = 0; i < n / 2; ++i) w[i] = static_cast<std::uint16_t>((packed[i] & 0xFU) | ((packed[i] & 0xF0U) << 4));
  std::memcpy(nib, w, sizeof(w));  // nib holds kChunk bytes: a fixed-size copy
}

/// E2M1 codes of in[i] x 2^-e on the 16-bit sign-less BF16 bits, for a block without NaN or
/// infinity and, when e < 0, without BF16 subnormals. Then x x 2^-e is exact in BF16 unless it
/// underflows (its code is then 0) or overflows (saturated to 6 as the float path does): its bits
/// are the input's with the exponent lowered by e, saturating at 0 and at 0x7F80 (inf), and a
/// zero's stay 0 (rescaled, they would read as 0.5 or 1.0 for e = -126, -127). The code
/// is the nearest-even E2M1 value: below 1.0 by comparison with 0.25 (tie to 0) and 0.75 (tie to
/// 1.0); from 1.0 a round-to-nearest-even shift of 6 mantissa bits, clamped to 7 (6.0).
inline void e2m1_pow2_codes(const bf16* __restrict in, int n, int e, std::uint8_t* __restrict codes) noexcept {
  const auto down = static_cast<std::uint16_t>(e > 0 ? e << 7 : 0);
  const auto up = static_cast<std::uint16_t>(e < 0 ? (-e) << 7 : 0);
  for (int i = 0; i < n; ++i) {
    const std::uint16_t b = in[i].bits;
    const auto a = static_cast<std::uint16_t>(b & 0x7FFFU);
    const auto d = static_cast<std::uint16_t>(a > down ? a - down : 0U);
    const auto u = static_cast<std::uint16_t>(d == 0 ? 0U : d + up);  // a zero times 2^-e stays zero
    const std::uint16_t s = u < 0x7F80U ? u : std::uint16_t{0x7F80U};
    const auto sub =
        static_cast<std::uint16_t>(static_cast<std::uint16_t>(s > 0x3E80U) + static_cast<std::uint16_t>(s >= 0x3F40U));
    const auto t = static_cast<std::uint16_t>(s - 0x3F00U);
    const auto sum = static_cast<std::uint16_t>(t + 0x1FU + ((t >> 6) & 1U));  // t < 0x4100: no wrap
    const auto r = static_cast<std::uint16_t>(sum >> 6);
    const std::uint16_t normal = r < 7U ? r : std::uint16_t{7U};
    const std::uint16_t code = s >= 0x3F80U ? normal : sub;
    codes[i] = static_cast<std::uint8_t>(code | ((b >> 12) & 0x8U));
  }
}
#if DSV4_HOST_SSE2
/// The E2M1 rounding midpoints T = 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5 times 1 + j/8 (j = 0..7,
/// the significand of an E4M3 scale) as BF16 bits (exact: at most 7 significant bits), minus
/// one for the midpoints that round up on a tie (a >= t is a > t - 1), each in 8 lanes.
struct alignas(16) e2m1_midpoint_table {
  std::int16_t v[8][7][8];
};
inline constexpr e2m1_midpoint_table kE2m1Midpoints = [] {
  constexpr float kMid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  e2m1_midpoint_table t{};
  for (int j = 0; j < 8; ++j)
    for (int i = 0; i < 7; ++i) {
      const auto bits = static_cast<std::int16_t>((float_bits(kMid[i] * (1.0f + static_cast<float>(j) / 8)) >> 16) -
                                                  ((i & 1) != 0 ? 1U : 0U));
      for (int l = 0; l < 8; ++l) t.v[j][i][l] = bits;
    }
  return t;
}();

/// The E2M1 codes of |x| / (2^k x (1 + j/8)) on SSE2, n % 16 == 0, `shift` = k << 7 in 8 lanes
/// (|k| <= 100): the midpoints T x d of `e2m1_divided` are T x (1 + j/8) (kE2m1Midpoints)
/// scaled by 2^k, so the count compares x' = a - (k << 7) (signed saturating), the bits of
/// |x| x 2^-k, with them: exact where x' is a BF16 normal; below one, |x| / d < 2^-26 and x' is
/// below every midpoint (code 0, as the division's); saturated high (inf, overflow), above every
/// midpoint (code 7). NaN: 7, no sign.
inline void e2m1_count_sse2(const bf16* __restrict in, int n, __m128i shift, unsigned j,
                            std::uint8_t* __restrict out) noexcept {
  // The seven midpoints stay in registers (written out: GCC left a loop over them in memory).
  const auto* thr = reinterpret_cast<const __m128i*>(kE2m1Midpoints.v[j]);
  const __m128i t0 = _mm_load_si128(thr);
  const __m128i t1 = _mm_load_si128(thr + 1);
  const __m128i t2 = _mm_load_si128(thr + 2);
  const __m128i t3 = _mm_load_si128(thr + 3);
  const __m128i t4 = _mm_load_si128(thr + 4);
  const __m128i t5 = _mm_load_si128(thr + 5);
  const __m128i t6 = _mm_load_si128(thr + 6);
  const __m128i abs = _mm_set1_epi16(0x7FFF);
  const __m128i inf = _mm_set1_epi16(0x7F80);
  const __m128i eight = _mm_set1_epi16(8);
  const __m128i low8 = _mm_set1_epi32(0xFF);
  for (int i = 0; i < n; i += 16) {
    __m128i c[2];
    for (std::ptrdiff_t h = 0; h < 2; ++h) {
      const __m128i b = x86::load(in + i + 8 * h);
      const __m128i a = _mm_and_si128(b, abs);
      const __m128i x = _mm_subs_epi16(a, shift);
      // Minus the sum of the seven all-ones masks: the count, as two independent chains.
      const __m128i s0 = _mm_add_epi16(_mm_add_epi16(_mm_cmpgt_epi16(x, t0), _mm_cmpgt_epi16(x, t1)),
                                       _mm_add_epi16(_mm_cmpgt_epi16(x, t2), _mm_cmpgt_epi16(x, t3)));
      const __m128i s1 =
          _mm_add_epi16(_mm_add_epi16(_mm_cmpgt_epi16(x, t4), _mm_cmpgt_epi16(x, t5)), _mm_cmpgt_epi16(x, t6));
      const __m128i acc = _mm_sub_epi16(_mm_setzero_si128(), _mm_add_epi16(s0, s1));
      const __m128i sign = _mm_andnot_si128(_mm_cmpgt_epi16(a, inf), _mm_and_si128(_mm_srli_epi16(b, 12), eight));
      c[h] = _mm_or_si128(acc, sign);
    }
    // Value 2i in the low half of 32-bit lane i, 2i + 1 in the high half: byte = lo | hi << 4.
    const __m128i p0 = _mm_and_si128(_mm_or_si128(c[0], _mm_srli_epi32(c[0], 12)), low8);
    const __m128i p1 = _mm_and_si128(_mm_or_si128(c[1], _mm_srli_epi32(c[1], 12)), low8);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i / 2),
                     _mm_packus_epi16(_mm_packs_epi32(p0, p1), _mm_setzero_si128()));
  }
}
#if DSV4_HOST_AVX2
/// `e2m1_count_sse2` in 256-bit lanes (16 values per step; the same operations, so the same
/// codes), for the AVX2 and AVX-512 copies (`host_avx2_path`). n % 16 == 0.
[[gnu::target("avx2")]] inline void e2m1_count_avx2(const bf16* __restrict in, int n, __m128i shift, unsigned j,
                                                    std::uint8_t* __restrict out) noexcept {
  const auto* thr = reinterpret_cast<const __m128i*>(kE2m1Midpoints.v[j]);
  const __m256i t0 = _mm256_broadcastsi128_si256(_mm_load_si128(thr));
  const __m256i t1 = _mm256_broadcastsi128_si256(_mm_load_si128(thr + 1));
  const __m256i t2 = _mm256_broadcastsi128_si256(_mm_load_si128(thr + 2));
  const __m256i t3 = _mm256_broadcastsi128_si256(_mm_load_si128(thr + 3));
  const __m256i t4 = _mm256_broadcastsi128_si256(_mm_load_si128(thr + 4));
  const __m256i t5 = _mm256_broadcastsi128_si256(_mm_load_si128(thr + 5));
  const __m256i t6 = _mm256_broadcastsi128_si256(_mm_load_si128(thr + 6));
  const __m256i k = _mm256_broadcastsi128_si256(shift);
  const __m256i abs = _mm256_set1_epi16(0x7FFF);
  const __m256i inf = _mm256_set1_epi16(0x7F80);
  const __m256i eight = _mm256_set1_epi16(8);
  const __m256i low8 = _mm256_set1_epi32(0xFF);
  for (int i = 0; i < n; i += 16) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    const __m256i a = _mm256_and_si256(b, abs);
    const __m256i x = _mm256_subs_epi16(a, k);
    const __m256i s0 = _mm256_add_epi16(_mm256_add_epi16(_mm256_cmpgt_epi16(x, t0), _mm256_cmpgt_epi16(x, t1)),
                                        _mm256_add_epi16(_mm256_cmpgt_epi16(x, t2), _mm256_cmpgt_epi16(x, t3)));
    const __m256i s1 = _mm256_add_epi16(_mm256_add_epi16(_mm256_cmpgt_epi16(x, t4), _mm256_cmpgt_epi16(x, t5)),
                                        _mm256_cmpgt_epi16(x, t6));
    const __m256i acc = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_add_epi16(s0, s1));
    const __m256i sign =
        _mm256_andnot_si256(_mm256_cmpgt_epi16(a, inf), _mm256_and_si256(_mm256_srli_epi16(b, 12), eight));
    const __m256i c = _mm256_or_si256(acc, sign);
    // One byte per 32-bit lane (value 2i low, 2i + 1 high); the packs work per 128-bit half, so
    // bytes 0..3 end in the low half, 4..7 in the high half.
    const __m256i p = _mm256_and_si256(_mm256_or_si256(c, _mm256_srli_epi32(c, 12)), low8);
    const __m256i q = _mm256_packus_epi16(_mm256_packs_epi32(p, p), _mm256_setzero_si256());
    const __m128i bytes = _mm_unpacklo_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i / 2), bytes);
  }
}
#endif
/// Whether the E2M1 comparison kernel has a form here: SSE2 in the baseline copy, AVX2 in the
/// wide copies (else the plain loops run: other CPUs, or a test's wide scope without AVX2).
inline bool e2m1_count_path() noexcept { return host_sse2_path() || host_avx2_path(); }
/// The E2M1 codes of |x| / (2^k x (1 + j/8)) (`e2m1_count_sse2`), in the AVX2 form inside the
/// AVX2 / AVX-512 copies, else in the SSE2 form.
inline void e2m1_count(const bf16* __restrict in, int n, __m128i shift, unsigned j,
                       std::uint8_t* __restrict out) noexcept {
#if DSV4_HOST_AVX2
  if (host_avx2_path()) return e2m1_count_avx2(in, n, shift, j, out);
#endif
  e2m1_count_sse2(in, n, shift, j, out);
}
/// `e2m1_divided` on the comparison kernel (`e2m1_count`: SSE2, or AVX2 in the wide copies):
/// in, n BF16 values (n % 16 == 0); out, n / 2 bytes of packed E2M1 codes (value 2i in the low
/// nibble), for a divisor d = 2^k x (1 + j/8) (3 significand bits: every E4M3 scale), |k| <=
/// 100. Returns false (nothing written) for any other divisor.
inline bool e2m1_divided_count(const bf16* __restrict in, int n, float divisor, std::uint8_t* __restrict out) noexcept {
  const std::uint32_t u = float_bits(divisor);
  const int k = static_cast<int>(u >> 23) - 127;
  if ((u & 0x800FFFFFU) != 0 || k < -100 || k > 100) return false;  // 3 significand bits: 22..20
  e2m1_count(in, n, _mm_set1_epi16(static_cast<std::int16_t>(k * 128)), (u >> 20) & 7U, out);
  return true;
}
/// For each E4M3 byte b of a positive nonzero finite value 2^k x (1 + j/8): k << 7 in 8 lanes
/// and j (other bytes: zeros, unused), so that an E4M3 scale byte selects its divisor's
/// `e2m1_count` operands with one load.
struct alignas(16) e4m3_divisor_table {
  std::int16_t shift[256][8];
  std::uint8_t j[256];
};
inline constexpr e4m3_divisor_table kE4m3Divisors = [] {
  e4m3_divisor_table t{};
  for (int b = 1; b < 0x7F; ++b) {
    const std::uint32_t u = float_bits(e4m3_to_float(static_cast<std::uint8_t>(b)));
    const auto k = static_cast<std::int16_t>(static_cast<int>(u >> 23) - 127);
    for (int l = 0; l < 8; ++l) t.shift[b][l] = static_cast<std::int16_t>(k * 128);
    t.j[b] = static_cast<std::uint8_t>((u >> 20) & 7U);
  }
  return t;
}();
#endif

/// Packed E2M1 codes of in[i] x inv_scale (n / 2 bytes). A power-of-two inv_scale takes the
/// 16-bit path where it is exact (see `e2m1_pow2_codes`), else the float path.
inline void e2m1_scaled(const bf16* __restrict in, int n, float inv_scale, std::uint8_t* __restrict out) noexcept {
  const int k = pow2_scale_exponent(inv_scale, 127);  // inv_scale = 2^k, e = -k
#if DSV4_HOST_SSE2
  // x x 2^k and x / 2^-k are the same float (exact, or the same underflow / overflow).
  if (e2m1_count_path() && k >= -100 && k <= 100 && e2m1_divided_count(in, n, exp2i(-k), out)) return;
#endif
  for (int c = 0; c < n; c += kChunk) {
    const int m = n - c < kChunk ? n - c : kChunk;
    std::uint8_t codes[kChunk];
    bool fast = k != 1000;
    if (fast) {
      std::int16_t mx = 0;
      std::uint16_t sub = 0;
      for (int i = 0; i < m; ++i) {
        const auto a = static_cast<std::int16_t>(in[c + i].bits & 0x7FFF);
        mx = a > mx ? a : mx;
        sub |= static_cast<std::uint16_t>(a != 0 && a < 0x80 ? 1U : 0U);
      }
      fast = mx < 0x7F80 && (k <= 0 || sub == 0);
    }
    if (fast) {
      e2m1_pow2_codes(in + c, m, -k, codes);
    } else {
      for (int i = 0; i < m; ++i)
        codes[i] = static_cast<std::uint8_t>(e2m1_code_branchless(bf16_to_float(in[c + i]) * inv_scale));
    }
    pack_nibbles(codes, m, out + c / 2);
  }
}
/// Packed E2M1 codes of in[i] / divisor (IEEE division), n / 2 bytes.
///
/// For a divisor d > 0 whose products with the E2M1 rounding midpoints T = 0.25, 0.75, 1.25,
/// 1.75, 2.5, 3.5, 5 are exact BF16 values (an E4M3 scale: 4 significant bits times at most 3),
/// the code is counted on the 16-bit sign-less BF16 bits a of x: the number of midpoints below
/// |x| / d, a midpoint itself rounding to the even code ( > for 0.25, 1.25, 2.5, 5; >= for 0.75,
/// 1.75, 3.5). The same code as E2M1(RN(x / d)): x has 8 significant bits and T d at most 7, so
/// x != T d differ by at least 2^-9 of x, far more than the 2^-24 of the float rounding of x / d,
/// which therefore never crosses a midpoint it did not cross exactly. NaN gives 0x7 (no sign),
/// as `float_to_e2m1`. Any other divisor: the float division.
inline void e2m1_divided(const bf16* __restrict in, int n, float divisor, std::uint8_t* __restrict out) noexcept {
#if DSV4_HOST_SSE2
  if (e2m1_count_path() && e2m1_divided_count(in, n, divisor, out)) return;
#endif
  constexpr float kMid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  std::int16_t t[7] = {};
  bool exact = divisor > 0.0f && (float_bits(divisor) & kF32AbsMask) < kF32Inf;
  for (int k = 0; k < 7 && exact; ++k) {
    const std::uint32_t p = float_bits(kMid[k] * divisor);
    exact = (p & 0xFFFFU) == 0 && p < 0x7F800000U && p >= 0x00800000U;
    t[k] = static_cast<std::int16_t>(p >> 16);
  }
  for (int c = 0; c < n; c += kChunk) {
    const int m = n - c < kChunk ? n - c : kChunk;
    std::uint8_t codes[kChunk];
    if (exact) {
      for (int i = 0; i < m; ++i) {
        const std::uint16_t b = in[c + i].bits;
        const auto a = static_cast<std::int16_t>(b & 0x7FFF);
        const auto code = static_cast<std::uint8_t>(static_cast<int>(a > t[0]) + static_cast<int>(a >= t[1]) +
                                                    static_cast<int>(a > t[2]) + static_cast<int>(a >= t[3]) +
                                                    static_cast<int>(a > t[4]) + static_cast<int>(a >= t[5]) +
                                                    static_cast<int>(a > t[6]));
        const auto sign = static_cast<std::uint8_t>((b >> 12) & 0x8U);
        codes[i] = a > 0x7F80 ? std::uint8_t{7} : static_cast<std::uint8_t>(code | sign);
      }
    } else {
      for (int i = 0; i < m; ++i)
        codes[i] = static_cast<std::uint8_t>(e2m1_code_branchless(bf16_to_float(in[c + i]) / divisor));
    }
    pack_nibbles(codes, m, out + c / 2);
  }
}
/// `Rule::scale_byte(x)` for every non-negative BF16 value x (bits 0..0x7FFF, NaN patterns
/// included), indexed by the BF16 bits: 32 KiB per rule, built on first use from the rule
/// itself, so the same bytes. For the E4M3 scale of an E2M1 tile from its BF16 amax, which
/// otherwise costs a float division and an E4M3 rounding per 16 values.
template <class Rule>
inline const std::uint8_t* bf16_byte_table() {
  static const std::unique_ptr<std::uint8_t[]> table = [] {
    auto t = std::make_unique<std::uint8_t[]>(0x8000);
    for (std::uint32_t b = 0; b < 0x8000U; ++b) t[b] = Rule::scale_byte(bits_float(b << 16));
    return t;
  }();
  return table.get();
}
/// E2M1 nibble c times 2^s as float bits (s in [-125, 125]: every product is a float normal).
DSV4_HOST_DEVICE constexpr std::uint32_t e2m1_pow2_bits(std::uint32_t c, std::uint32_t off) noexcept {
  const std::uint32_t exp = (c >> 1) & 0x3U;
  const std::uint32_t man = c & 0x1U;
  const std::uint32_t normal = ((exp << 23) + off) | (man << 22);
  const std::uint32_t sub = man != 0 ? off : 0U;
  return (exp == 0 ? sub : normal) | ((c & 0x8U) << 28);
}
/// The output of every (scale byte, nibble): entry (s << 4) | c is `from_float<Out>(e2m1_to_float(c)
/// x scale)`, the scale decoded from s (E4M3 if `E4m3Scale`, else E8M0): the scalar codec's own
/// arithmetic, so the same bits. 8 KiB (BF16 bits) or 16 KiB (float bits), built on first use.
template <class Out, bool E4m3Scale>
inline const auto* e2m1_value_table() {
  using T = std::conditional_t<std::is_same_v<Out, bf16>, std::uint16_t, std::uint32_t>;
  static const std::unique_ptr<T[]> table = [] {
    auto t = std::make_unique<T[]>(4096);
    for (unsigned sb = 0; sb < 256; ++sb) {
      const auto byte = static_cast<std::uint8_t>(sb);
      const float scale = E4m3Scale ? e4m3_to_float(byte) : e8m0_to_float(byte);
      for (unsigned c = 0; c < 16; ++c) {
        const float x = e2m1_to_float(static_cast<std::uint8_t>(c)) * scale;
        if constexpr (std::is_same_v<Out, bf16>) {
          t[(sb << 4) | c] = float_to_bf16_bits_branchless(x);
        } else {
          t[(sb << 4) | c] = float_bits(canonical_nan(x));
        }
      }
    }
    return t;
  }();
  return static_cast<const T*>(table.get());
}

#if DSV4_HOST_AVX2
/// The BF16 outputs of `e2m1_value_table<bf16, E4m3Scale>` split into bytes for byte shuffles:
/// entry s is 16 low bytes then 16 high bytes, nibble c at c. 8 KiB, built on first use from
/// that table, so the same bits.
template <bool E4m3Scale>
inline const std::uint8_t* e2m1_byte_tables() {
  static const std::unique_ptr<std::uint8_t[]> table = [] {
    const auto* v = e2m1_value_table<bf16, E4m3Scale>();
    auto t = std::make_unique<std::uint8_t[]>(std::size_t{256} * 32);
    for (unsigned i = 0; i < 4096; ++i) {
      t[(i >> 4) * 32 + (i & 0xFU)] = static_cast<std::uint8_t>(v[i] & 0xFFU);
      t[(i >> 4) * 32 + 16 + (i & 0xFU)] = static_cast<std::uint8_t>(v[i] >> 8);
    }
    return t;
  }();
  return table.get();
}
/// `e2m1_table_dequant` as byte shuffles (pshufb) of the scale's 16 BF16 outputs, n % 16 == 0:
/// 8 packed bytes -> 16 nibble indices in value order -> low and high bytes -> 16 BF16 values.
/// A float output is the BF16 bits << 16: every E2M1 value times a non-NaN E4M3 or E8M0 scale
/// has at most 6 significant bits and, when nonzero, is at least 2^-128 (a float subnormal there
/// keeps its bits in the high 16), so it is a BF16 value exactly, infinities included (tested
/// for every entry); a NaN scale is left to the caller (the BF16 table holds NaN as 0x7FFF, the
/// float table as 0x7FC00000).
template <bool E4m3Scale, class Out>
[[gnu::target("avx2")]] inline void e2m1_shuffle_dequant_avx2(const std::uint8_t* __restrict packed, int n,
                                                              std::uint8_t scale_byte, Out* __restrict out) noexcept {
  const std::uint8_t* t = e2m1_byte_tables<E4m3Scale>() + static_cast<std::size_t>(scale_byte) * 32;
  const __m128i lo_bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t));
  const __m128i hi_bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t + 16));
  const __m128i nib = _mm_set1_epi8(0x0F);
  for (int i = 0; i < n; i += 16) {
    const __m128i p = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed + i / 2));
    const __m128i idx = _mm_unpacklo_epi8(_mm_and_si128(p, nib), _mm_and_si128(_mm_srli_epi16(p, 4), nib));
    const __m128i lo = _mm_shuffle_epi8(lo_bytes, idx);
    const __m128i hi = _mm_shuffle_epi8(hi_bytes, idx);
    const __m128i v0 = _mm_unpacklo_epi8(lo, hi);  // values i .. i + 7 as BF16
    const __m128i v1 = _mm_unpackhi_epi8(lo, hi);  // values i + 8 .. i + 15
    if constexpr (std::is_same_v<Out, bf16>) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), v0);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i + 8), v1);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_slli_epi32(_mm256_cvtepu16_epi32(v0), 16));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i + 8), _mm256_slli_epi32(_mm256_cvtepu16_epi32(v1), 16));
    }
  }
}
#endif
/// out[i] = E2M1(nibble i) x the scale stored as byte `scale_byte` (E4M3 if `E4m3Scale`, else
/// E8M0), as `from_float<Out>`, n even: two lookups in `e2m1_value_table` (in L1) per packed
/// byte, one store of both values; in the AVX2 form (n % 16 == 0) byte shuffles of the same
/// values (`e2m1_shuffle_dequant_avx2`).
template <bool E4m3Scale, class Out>
inline void e2m1_table_dequant(const std::uint8_t* __restrict packed, int n, std::uint8_t scale_byte,
                               Out* __restrict out) noexcept {
#if DSV4_HOST_AVX2
  // A NaN scale (E4M3 0x7F / 0xFF, E8M0 0xFF) takes the table loop for a float output.
  const bool nan_scale = E4m3Scale ? (scale_byte & 0x7FU) == 0x7FU : scale_byte == 0xFFU;
  if (n % 16 == 0 && host_avx2_path() && (std::is_same_v<Out, bf16> || !nan_scale)) {
    return e2m1_shuffle_dequant_avx2<E4m3Scale>(packed, n, scale_byte, out);
  }
#endif
  const auto* t = e2m1_value_table<Out, E4m3Scale>() + (static_cast<unsigned>(scale_byte) << 4);
  using T = std::remove_cv_t<std::remove_reference_t<decltype(*t)>>;
  using Pair = std::conditional_t<sizeof(T) == 2, std::uint32_t, std::uint64_t>;
  auto* o = reinterpret_cast<std::uint8_t*>(out);
  for (int i = 0; i < n / 2; ++i) {
    const unsigned b = packed[i];
    Pair v = static_cast<Pair>(t[b & 0xFU]) | (static_cast<Pair>(t[b >> 4]) << (8 * sizeof(T)));
    __asm__("" : "+r"(v));  // keeps GCC from an emulated gather (vector inserts), several times slower
    std::memcpy(o + i * sizeof(v), &v, sizeof(v));
  }
}

/// out[i] = E2M1(nibble i) x scale, as `from_float<Out>`; a power-of-two scale is an exponent
/// shift (exact: the same bits), any other the float product.
template <class Out>
inline void e2m1_dequant(const std::uint8_t* __restrict packed, int n, float scale, Out* __restrict out) noexcept {
  const int s = pow2_scale_exponent(scale, 125);
  const auto off = static_cast<std::uint32_t>(126 + s) << 23;
  for (int c = 0; c < n; c += kChunk) {
    const int m = n - c < kChunk ? n - c : kChunk;
    std::uint8_t nib[kChunk];
    unpack_nibbles(packed + c / 2, m, nib);
    Out* o = out + c;
    if (s != 1000) {
      for (int i = 0; i < m; ++i) {
        const std::uint32_t v = e2m1_pow2_bits(nib[i], off);
        if constexpr (std::is_same_v<Out, bf16>) {
          o[i] = bf16{static_cast<std::uint16_t>(v >> 16)};
        } else {
          o[i] = bits_float(v);
        }
      }
    } else {
      for (int i = 0; i < m; ++i) {
        const float v = e2m1_to_float_branchless(nib[i]) * scale;
        if constexpr (std::is_same_v<Out, bf16>) {
          o[i] = bf16{float_to_bf16_bits_branchless(v)};
        } else {
          o[i] = canonical_nan(v);
        }
      }
    }
  }
}
/// BF16 values from little-endian page bytes into float (exact) or BF16 (bits).
template <class Out>
inline void bf16_in(const std::uint8_t* __restrict src, Out* __restrict out, std::int64_t n) noexcept {
  if constexpr (std::is_same_v<Out, bf16>) {
    std::memcpy(out, src, static_cast<std::size_t>(n) * 2);
  } else {
    for (std::int64_t i = 0; i < n; ++i) {
      std::uint16_t h = 0;
      std::memcpy(&h, src + 2 * i, 2);
      out[i] = bits_float(static_cast<std::uint32_t>(h) << 16);
    }
  }
}
/// fp32 values from little-endian page bytes into float (bits) or BF16 (`float_to_bf16`).
template <class Out>
inline void f32_in(const std::uint8_t* __restrict src, Out* __restrict out, std::int64_t n) noexcept {
  if constexpr (std::is_same_v<Out, bf16>) {
#if DSV4_HOST_SSE2
    // float_to_bf16_bits_branchless on 4 lanes; >> 16 arithmetic so that packssdw keeps the bits
    // (a NaN, where the sum could wrap, is replaced by 0x7FFF).
    if (host_sse2_path()) {
      const __m128i abs = _mm_set1_epi32(0x7FFFFFFF);
      const __m128i inf = _mm_set1_epi32(0x7F800000);
      const __m128i half = _mm_set1_epi32(0x7FFF);
      const __m128i one = _mm_set1_epi32(1);
      for (std::int64_t i = 0; i < n; i += 8) {
        __m128i r[2];
        for (std::ptrdiff_t h = 0; h < 2; ++h) {
          const __m128i u = x86::load(src + 4 * (i + 4 * h));
          const __m128i nan = _mm_cmpgt_epi32(_mm_and_si128(u, abs), inf);
          const __m128i t =
              _mm_srai_epi32(_mm_add_epi32(_mm_add_epi32(u, half), _mm_and_si128(_mm_srli_epi32(u, 16), one)), 16);
          r[h] = _mm_or_si128(_mm_andnot_si128(nan, t), _mm_and_si128(nan, half));
        }
        x86::store(out + i, _mm_packs_epi32(r[0], r[1]));
      }
      return;
    }
#endif
    for (std::int64_t i = 0; i < n; ++i) {
      float v = 0;
      std::memcpy(&v, src + 4 * i, 4);
      out[i] = bf16{float_to_bf16_bits_branchless(v)};
    }
  } else {
    std::memcpy(out, src, static_cast<std::size_t>(n) * 4);
  }
}

}  // namespace simd
}  // namespace dsv4::cache::detail
#else
namespace dsv4::cache::detail {
DSV4_HOST_DEVICE constexpr bool host_simd_path(bool /*shape_ok*/) noexcept { return false; }
}  // namespace dsv4::cache::detail
#endif  // DSV4_HOST_SIMD
