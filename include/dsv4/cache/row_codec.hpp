// dsv4-cache: quantize / dequantize one KV-cache row in place in its page, host and device.
//
// Row formats and page layouts are those of row_format.hpp; the codecs read every offset
// from the layout (`data_offset(r)`, `scale_offset(r)`) and never recompute one. Recipes are
// facts section 4 (the DeepSeek V4 reference and the engines that serve it):
//
// fp8_ds_mla row (SWA window, CSA/HCA compressed KV), D = 512, R = 64, input 512 BF16:
//   448 B e4m3 NoPE + 128 B bf16 RoPE + 7 B ue8m0 scales + 1 B pad = 584 B
//   token data [448 e4m3 | 64 bf16] at data_offset(r) (r x 576), scales [7 ue8m0 | 0x00] at
//   scale_offset(r) (rows_per_page x 576 + r x 8: 36,872 for row 1 of a 64-row page).
//   Per 64 NoPE values: e = ceil(log2(max(amax, 1e-4) / 448)), byte = e + 127,
//   q = E4M3(x x 2^-e) round to nearest even, saturating at +-448. RoPE is copied bit for bit.
// Indexer FP8 key (CSA), d = 128, input 128 BF16:
//   128 B e4m3 + 1 x 4 B fp32 scale = 132 B; values at data_offset(r) (r x 128), the fp32
//   scale 2^e (little-endian) at scale_offset(r) (rows_per_page x 128 + r x 4).
//   Per 128 values: e = ceil(log2(max(amax, 1e-4) / 448)), q = E4M3(x x 2^-e).
// Indexer MXFP4 key (CSA), d = 128, input 128 BF16:
//   64 B packed e2m1 (value 2i in the low nibble of byte i) + 4 B e8m0 = 68 B; values at
//   data_offset(r) (r x 64), scales at scale_offset(r) (rows_per_page x 64 + r x 4).
//   Per 32 values: e = ceil(log2(amax / 6)) clamped to [-127, 127], byte = e + 127,
//   q = E2M1(x x 2^-e) round to nearest even, saturating at +-6.
//
// Errors: a row outside [0, rows_per_page) (the padding slot -1 included, facts section 5.10)
// or an indexer layout of the other format fails through `require` (std::invalid_argument on
// the host, __trap() on the device) before any byte is written. Pointers must be valid for the
// documented extents; the layout must come from the `make_*_page_layout` builders.
// No function allocates; none reads or writes a byte outside its row's data and scale slots.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "dsv4/cache/host_simd.hpp"
#include "dsv4/cache/platform.hpp"
#include "dsv4/cache/row_format.hpp"
#include "dsv4/cache/scalar_codec.hpp"

namespace dsv4::cache {

// ---------------------------------------------------------------- policies

/// What a quantizer does with a NaN inside a block (engines differ; none is undefined).
enum class nan_policy : std::uint8_t {
  /// Default; as the PyTorch reference (`amax` and the division propagate NaN): the whole block
  /// is NaN. E4M3 blocks: every code 0x7F and scale byte 0xFF (fp8_ds_mla) / fp32 NaN scale
  /// (indexer FP8). MXFP4 blocks: scale byte 0xFF (E8M0 NaN), codes 0. Dequant gives NaN for
  /// every value of the block; other blocks are unaffected.
  propagate,
  /// As GPU reductions built on fmaxf: NaN is left out of amax, the other values are quantized
  /// normally and the NaN value alone becomes E4M3 0x7F (NaN). E2M1 has no NaN, so in an MXFP4
  /// block it becomes +6 x scale (code 0x7, NVIDIA's `cvt.rn.satfinite.e2m1x2`): silent.
  ignore,
};

/// How an MXFP4 block picks its exponent.
enum class mxfp4_scale_rule : std::uint8_t {
  deepseek_ceil,  ///< Default, DeepSeek V4: e = ceil(log2(amax / 6)); never clips.
  ocp_floor,      ///< OCP MX v1.0: e = floor(log2(amax)) - 2; values above 6 x 2^e saturate.
};

/// The choices the engines disagree on, with the DeepSeek V4 behaviour as default.
/// Infinities need no policy; every reference writer does the same (docs/engines/writers.md 2):
/// - an E4M3 block with a power-of-two scale whose amax is +-inf takes its scale from amax = inf:
///   UE8M0 byte 0xFF (an fp32 scale +inf), every +-inf element the NaN code 0x7F (inf / inf)
///   and every finite element +-0 (0x00 / 0x80, x / inf) (`quantize_fp8_block`);
/// - an MXFP4 block: the exponent clamps to 127, the inf saturates to +-6 and the finite values
///   of its block underflow to +-0.
/// The scalar helpers keep their saturating rules (`float_to_ue8m0_ceil`: 0xFE for inf, as
/// `__nv_cvt_float_to_e8m0(.., __NV_SATFINITE, ..)`; `scale_exponent_for_amax`: 127): only the
/// FP8 block writers take the references' inf rule.
struct quant_policy {
  nan_policy nan = nan_policy::propagate;
  /// amax floor of an fp8_ds_mla block (facts section 4): an all-zero block gets e = -22, byte 105.
  float fp8_ds_mla_amax_floor = 1e-4f;
  /// amax floor of an indexer FP8 block; DeepSeek V4 uses 1e-4, some engines 1e-10.
  float indexer_fp8_amax_floor = 1e-4f;
  /// amax floor of an MXFP4 block; the recipe has none, so an all-zero block gets e = -127 (byte 0).
  float mxfp4_amax_floor = 0.0f;
  mxfp4_scale_rule mxfp4_scale = mxfp4_scale_rule::deepseek_ceil;
};
static_assert(std::is_trivially_copyable_v<quant_policy>);

/// The DeepSeek V4 policy (the default of every quantizer).
inline constexpr quant_policy kDeepseekV4Policy{};

// ---------------------------------------------------------------- blocks (GPU building blocks)

/// max |x| over `n` BF16 values, with NaN detection. `amax` leaves NaN out (0 for n = 0);
/// `has_nan` says whether a NaN was seen. Integer max of the sign-less bits: exact, branch-free.
struct bf16_amax {
  float amax = 0.0f;
  bool has_nan = false;
};
DSV4_HOST_DEVICE constexpr bf16_amax amax_bf16(const bf16* in, int n) noexcept {
#if DSV4_HOST_SIMD
  if (detail::host_simd_path(n % detail::simd::kLanes == 0)) {
    const detail::simd::amax_bits b = detail::simd::block_amax(in, n);
    return {bf16_to_float(bf16{b.finite}), b.all > 0x7F80U};
  }
#endif
  std::int32_t all = 0;     // max over every value: > 0x7F80 iff a NaN was seen
  std::int32_t finite = 0;  // max over the non-NaN values (signed: vectorizes on SSE2)
  for (int i = 0; i < n; ++i) {
    const std::int32_t a = in[i].bits & 0x7FFF;
    all = a > all ? a : all;
    const std::int32_t f = a <= 0x7F80 ? a : 0;
    finite = f > finite ? f : finite;
  }
  return {bf16_to_float(bf16{static_cast<std::uint16_t>(finite)}), all > 0x7F80};
}

namespace detail {

/// What the fixed-size E4M3 block path needs to know about a block, from one vectorizable pass
/// over the sign-less BF16 bits: the max over all values (> 0x7F80 iff a NaN is present, 0x7F80
/// for an infinity) and min(bits - 1) over all values as uint16 (0xFFFF iff every value is 0).
struct bf16_block_stats {
  std::uint32_t max_all = 0;
  std::uint32_t min_nonzero_minus_one = 0xFFFFU;
};

template <int N>
DSV4_HOST_DEVICE constexpr bf16_block_stats block_stats(const bf16* in) noexcept {
#if DSV4_HOST_SSE2
  if (host_simd_path(N % simd::kLanes == 0) && host_sse2_path()) {
    std::uint16_t mx = 0;
    std::uint16_t mn = 0xFFFFU;
    simd::block_stats_sse2(in, N, mx, mn);
    return {mx, mn};
  }
#endif
  std::uint16_t mx = 0;
  std::uint16_t mn = 0xFFFFU;
  for (int i = 0; i < N; ++i) {
    const auto a = static_cast<std::uint16_t>(in[i].bits & 0x7FFFU);
    mx = a > mx ? a : mx;
    const auto k = static_cast<std::uint16_t>(a - 1U);  // 0 -> 0xFFFF
    mn = k < mn ? k : mn;
  }
  return {mx, mn};
}

/// E4M3 codes of in[i] x 2^-e for a block in which every value is finite and either 0 or of
/// scaled magnitude in [2^-6, 464] (the E4M3 normal range): then x x 2^-e is exact and its BF16
/// bits are the input's with the exponent lowered by e, so the code is rne((a - (120 + e) << 7)
/// / 16) on the 16-bit sign-less bits a, in 16-bit lanes (8 values per SSE2 register). Zeros
/// (and anything that would round below 2^-6, excluded by the precondition) give a negative
/// value that the max with 0 turns into 0. Same codes as `float_to_e4m3(x * 2^-e)` under the
/// precondition (checked by the caller, `e4m3_block_is_normal`).
template <int N>
DSV4_HOST_DEVICE constexpr void e4m3_block_normal(const bf16* in, int e, std::uint8_t* out) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(N % simd::kLanes == 0)) return simd::e4m3_normal(in, N, e, out);
#endif
  const auto bias = static_cast<std::uint16_t>(7 - ((e + 120) << 7));
  for (int i = 0; i < N; ++i) {
    out[i] = e4m3_normal_code(in[i].bits, bias);
  }
}

/// Whether `e4m3_block_normal` is exact for a block of these stats and exponent e: no NaN or
/// infinity, e >= -120 (so 2^(e-6) is a BF16 normal) and every nonzero value >= 2^(e-6).
/// Values above 448 x 2^e cannot occur: e is the ceiling of the block's amax / 448.
DSV4_HOST_DEVICE constexpr bool e4m3_block_is_normal(const bf16_block_stats& st, int e) noexcept {
  return st.max_all <= 0x7F7FU && e >= -120 &&
         st.min_nonzero_minus_one + 1U >= static_cast<std::uint32_t>((e + 121) << 7);
}

/// The codes of an E4M3 block whose amax is +-inf, as the references write it (scale from amax
/// = inf, UE8M0 0xFF): NaN and +-inf elements the NaN code 0x7F, every finite element +-0 (x /
/// inf, sign kept: 0x00 or 0x80). Returns kE8m0NanCode. docs/engines/writers.md 2.
DSV4_HOST_DEVICE constexpr std::uint8_t e4m3_inf_block(const bf16* in, int n, std::uint8_t* out) noexcept {
  for (int i = 0; i < n; ++i)
    out[i] = (in[i].bits & 0x7FFFU) >= 0x7F80U ? kE4m3NanCode : static_cast<std::uint8_t>((in[i].bits >> 8) & 0x80U);
  return kE8m0NanCode;
}

/// E4M3 codes of in[i] x inv_scale for any block (NaN, inf, E4M3 subnormals): 32-bit lanes.
template <int N>
DSV4_HOST_DEVICE constexpr void e4m3_block_any(const bf16* in, float inv_scale, std::uint8_t* out) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(N % simd::kLanes == 0)) return simd::e4m3_scaled(in, N, inv_scale, out);
#endif
  for (int i = 0; i < N; ++i) {
    out[i] = static_cast<std::uint8_t>(e4m3_code_branchless(bf16_to_float(in[i]) * inv_scale));
  }
}

/// `quantize_fp8_block` for a compile-time block size (the row codecs' 64 and 128).
template <int N>
DSV4_HOST_DEVICE constexpr std::uint8_t quantize_fp8_block_fixed(const bf16* in, std::uint8_t* out_e4m3,
                                                                 float amax_floor, nan_policy nan) noexcept {
  const bf16_block_stats st = block_stats<N>(in);
  std::uint8_t codes[static_cast<std::size_t>(N)] = {};
  float amax = bf16_to_float(bf16{static_cast<std::uint16_t>(st.max_all)});
  if (st.max_all > 0x7F80U) {  // a NaN: rare, leave the fast path
    if (nan == nan_policy::propagate) {
      for (int i = 0; i < N; ++i) out_e4m3[i] = kE4m3NanCode;
      return kE8m0NanCode;
    }
    amax = amax_bf16(in, N).amax;
  }
  if ((float_bits(amax) & kF32AbsMask) == kF32Inf) return e4m3_inf_block(in, N, out_e4m3);
#if DSV4_HOST_SIMD
  const int e = host_simd_path(true) ? simd::block_scale_exponent(amax, kE4m3Max, amax_floor)
                                     : scale_exponent_for_amax(amax, kE4m3Max, amax_floor);
#else
  const int e = scale_exponent_for_amax(amax, kE4m3Max, amax_floor);
#endif
  if (e4m3_block_is_normal(st, e)) {
#if DSV4_HOST_SIMD
    if (host_simd_path(N % simd::kLanes == 0)) {  // restrict-qualified kernel: writes the codes in place
      simd::e4m3_normal(in, N, e, out_e4m3);
      return static_cast<std::uint8_t>(e + 127);
    }
#endif
    e4m3_block_normal<N>(in, e, codes);
  } else {
    e4m3_block_any<N>(in, exp2i(-e), codes);
  }
  for (int i = 0; i < N; ++i) out_e4m3[i] = codes[i];
  return static_cast<std::uint8_t>(e + 127);
}

}  // namespace detail

/// Quantizes one E4M3 block with a power-of-two scale: the building block of the fp8_ds_mla
/// row (n = 64) and of the indexer FP8 key (n = 128), on the host and in kernels.
/// - in: `n` BF16 values; out_e4m3: `n` bytes, code i = E4M3(in[i] x 2^-e), RNE, saturating.
/// - e = scale_exponent_for_amax(amax, 448, amax_floor), in [-127, 127].
/// - Returns the scale as an E8M0 byte e + 127, or 0xFF when the block holds a NaN and `nan` is
///   `propagate` (then every code is 0x7F), or 0xFF when its amax is +-inf (the references'
///   scale inf: inf elements 0x7F, finite ones +-0; `detail::e4m3_inf_block`).
///   `fp8_block_fp32_scale(byte, ..)` is the fp32 scale: 2^e, NaN or +inf.
/// n = 64 and n = 128 take vectorizable fixed-size paths (detail::quantize_fp8_block_fixed);
/// every n gives the codes of `float_to_e4m3(bf16_to_float(in[i]) * 2^-e)`.
DSV4_HOST_DEVICE constexpr std::uint8_t quantize_fp8_block(const bf16* in, int n, std::uint8_t* out_e4m3,
                                                           float amax_floor = 1e-4f,
                                                           nan_policy nan = nan_policy::propagate) noexcept {
  if (n == 64) return detail::quantize_fp8_block_fixed<64>(in, out_e4m3, amax_floor, nan);
  if (n == 128) return detail::quantize_fp8_block_fixed<128>(in, out_e4m3, amax_floor, nan);
  const bf16_amax m = amax_bf16(in, n);
  if (m.has_nan && nan == nan_policy::propagate) {
    for (int i = 0; i < n; ++i) out_e4m3[i] = kE4m3NanCode;
    return kE8m0NanCode;
  }
  if ((detail::float_bits(m.amax) & detail::kF32AbsMask) == detail::kF32Inf)
    return detail::e4m3_inf_block(in, n, out_e4m3);
  const int e = scale_exponent_for_amax(m.amax, kE4m3Max, amax_floor);
  const float inv_scale = exp2i(-e);  // exact: x x 2^-e loses nothing unless it underflows
  for (int i = 0; i < n; ++i) {
    out_e4m3[i] = static_cast<std::uint8_t>(detail::e4m3_code_branchless(bf16_to_float(in[i]) * inv_scale));
  }
  return static_cast<std::uint8_t>(e + 127);
}

/// The fp32 scale of an E4M3 power-of-two block from its E8M0 byte (what the V3.2 and indexer
/// FP8 rows store): 2^(byte - 127); for byte 0xFF the canonical NaN when `nan_scale` (the block
/// held a NaN under nan_policy::propagate), else +inf (an amax of +-inf: the references' fp32
/// scale, bytes 00 00 80 7F).
DSV4_HOST_DEVICE constexpr float fp8_block_fp32_scale(std::uint8_t byte, bool nan_scale) noexcept {
  if (byte == kE8m0NanCode && !nan_scale) return detail::bits_float(detail::kF32Inf);
  return e8m0_to_float(byte);
}

/// The MXFP4 block exponent of `rule` for a NaN-free amax, clamped to [-127, 127].
DSV4_HOST_DEVICE constexpr int mxfp4_scale_exponent(float amax, float amax_floor, mxfp4_scale_rule rule) noexcept {
  if (rule == mxfp4_scale_rule::deepseek_ceil) {
#if DSV4_HOST_SIMD
    if (detail::host_simd_path(true)) return detail::simd::block_scale_exponent(amax, kE2m1Max, amax_floor);
#endif
    return scale_exponent_for_amax(amax, kE2m1Max, amax_floor);
  }
  const float m = amax > amax_floor ? amax : amax_floor;
  const int e = floor_log2(m) - 2;  // 2 = emax of E2M1 (6 = 1.5 x 2^2)
  return e < -127 ? -127 : (e > 127 ? 127 : e);
}

namespace detail {
/// Packed E2M1 codes of in[i] x inv_scale (n values, n / 2 bytes, value 2i in the low nibble).
template <int N>
DSV4_HOST_DEVICE constexpr void e2m1_block_packed(const bf16* in, float inv_scale, std::uint8_t* out) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(N % simd::kLanes == 0)) return simd::e2m1_scaled(in, N, inv_scale, out);
#endif
  std::uint8_t codes[static_cast<std::size_t>(N)] = {};
  for (int i = 0; i < N; ++i) {
    codes[i] = static_cast<std::uint8_t>(e2m1_code_branchless(bf16_to_float(in[i]) * inv_scale));
  }
  for (int i = 0; i < N / 2; ++i) out[i] = static_cast<std::uint8_t>(codes[2 * i] | (codes[2 * i + 1] << 4));
}
}  // namespace detail

/// Quantizes one MXFP4 block: the building block of the MXFP4 indexer key (n = 32).
/// - in: `n` BF16 values, n even; out_packed: n / 2 bytes, value 2i in the low nibble of byte
///   i, value 2i+1 in the high nibble; code = E2M1(x x 2^-e), RNE, saturating at +-6.
/// - e from `mxfp4_scale_exponent(amax, amax_floor, rule)`.
/// - Returns the E8M0 scale byte e + 127, or 0xFF (codes 0) for a NaN block under `propagate`.
DSV4_HOST_DEVICE constexpr std::uint8_t quantize_mxfp4_block(const bf16* in, int n, std::uint8_t* out_packed,
                                                             float amax_floor = 0.0f,
                                                             mxfp4_scale_rule rule = mxfp4_scale_rule::deepseek_ceil,
                                                             nan_policy nan = nan_policy::propagate) noexcept {
  const bf16_amax m = amax_bf16(in, n);
  if (m.has_nan && nan == nan_policy::propagate) {
    for (int i = 0; i < n / 2; ++i) out_packed[i] = 0;
    return kE8m0NanCode;
  }
  const int e = mxfp4_scale_exponent(m.amax, amax_floor, rule);
  const float inv_scale = exp2i(-e);
  if (n == 32) {
    detail::e2m1_block_packed<32>(in, inv_scale, out_packed);
  } else {
    for (int i = 0, j = 0; i < n / 2; ++i, j += 2) {
      const std::uint32_t lo = detail::e2m1_code_branchless(bf16_to_float(in[j]) * inv_scale);
      const std::uint32_t hi = detail::e2m1_code_branchless(bf16_to_float(in[j + 1]) * inv_scale);
      out_packed[i] = static_cast<std::uint8_t>(lo | (hi << 4));
    }
  }
  return static_cast<std::uint8_t>(e + 127);
}

namespace detail {

DSV4_HOST_DEVICE constexpr void require_row(std::int64_t row, std::int64_t rows_per_page) {
  require(row >= 0 && row < rows_per_page, "row must be in [0, rows_per_page)", {"row", row},
          {"rows_per_page", rows_per_page});
}

/// Output conversion of the dequantizers: float with NaN made canonical (`canonical_nan`, so
/// that host and device agree bit for bit), BF16 rounded to nearest even (`float_to_bf16`, in
/// its straight-line form; every NaN is 0x7FFF there).
template <class Out>
DSV4_HOST_DEVICE constexpr Out from_float(float v) noexcept {
  if constexpr (std::is_same_v<Out, bf16>) {
    return bf16{float_to_bf16_bits_branchless(v)};
  } else {
    return canonical_nan(v);
  }
}

/// out[i] = e4m3_to_float(codes[i]) x scale for N codes (vectorizable: no table, no branch).
template <int N, class Out>
DSV4_HOST_DEVICE constexpr void dequantize_e4m3_block(const std::uint8_t* codes, float scale, Out* out) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(N % simd::kLanes == 0)) return simd::e4m3_dequant(codes, N, scale, out);
#endif
  Out tmp[static_cast<std::size_t>(N)] = {};
  for (int i = 0; i < N; ++i) tmp[i] = from_float<Out>(e4m3_to_float_branchless(codes[i]) * scale);
  for (int i = 0; i < N; ++i) out[i] = tmp[i];
}

/// out[2i], out[2i+1] = e2m1_to_float(low, high nibble of packed[i]) x scale, N values.
template <int N, class Out>
DSV4_HOST_DEVICE constexpr void dequantize_e2m1_block(const std::uint8_t* packed, float scale, Out* out) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(N % simd::kLanes == 0)) return simd::e2m1_dequant(packed, N, scale, out);
#endif
  Out tmp[static_cast<std::size_t>(N)] = {};
  float lo[static_cast<std::size_t>(N / 2)] = {};
  float hi[static_cast<std::size_t>(N / 2)] = {};
  for (int i = 0; i < N / 2; ++i) {
    lo[i] = e2m1_to_float_branchless(packed[i]) * scale;  // uses the low nibble
    hi[i] = e2m1_to_float_branchless(static_cast<std::uint32_t>(packed[i]) >> 4) * scale;
  }
  for (int i = 0; i < N / 2; ++i) {
    tmp[2 * i] = from_float<Out>(lo[i]);
    tmp[2 * i + 1] = from_float<Out>(hi[i]);
  }
  for (int i = 0; i < N; ++i) out[i] = tmp[i];
}

template <class Out>
DSV4_HOST_DEVICE constexpr void dequantize_fp8_ds_mla_row_impl(const fp8_ds_mla_page_layout& layout,
                                                               const std::uint8_t* page, std::int64_t row, Out* out) {
  require_row(row, layout.rows_per_page);
  const std::uint8_t* data = page + layout.data_offset(row);
  const std::uint8_t* scales = page + layout.scale_offset(row);
  // Locals, not layout fields: stores through `out` may alias the layout as far as the compiler knows.
  const std::int64_t nope = layout.format.nope_values();
  const std::int64_t blocks = layout.format.num_scales();
  const std::int64_t rope_dim = layout.format.rope_dim;
  const std::int64_t nope_bytes = layout.format.nope_bytes();
  for (std::int64_t b = 0; b < blocks; ++b) {
    dequantize_e4m3_block<static_cast<int>(kFp8QuantBlock)>(data + b * kFp8QuantBlock, e8m0_to_float(scales[b]),
                                                            out + b * kFp8QuantBlock);
  }
  const std::uint8_t* rope = data + nope_bytes;
  for (std::int64_t j = 0; j < rope_dim; ++j) {
    const bf16 v{static_cast<std::uint16_t>(rope[2 * j] | (rope[2 * j + 1] << 8))};  // little-endian
    if constexpr (std::is_same_v<Out, bf16>) {
      out[nope + j] = v;
    } else {
      out[nope + j] = bf16_to_float(v);
    }
  }
}

template <class Out>
DSV4_HOST_DEVICE constexpr void dequantize_indexer_row_impl(const indexer_page_layout& layout, const std::uint8_t* page,
                                                            std::int64_t row, Out* out) {
  require_row(row, layout.rows_per_page);
  const std::uint8_t* values = page + layout.data_offset(row);
  const std::uint8_t* scales = page + layout.scale_offset(row);
  const std::int64_t d = layout.format.index_head_dim;
  if (layout.format.format == indexer_format::fp8) {
    for (std::int64_t b = 0; b < d / kFp8IndexerBlock; ++b) {
      const std::uint8_t* s = scales + b * kFp8ScaleBytes;
      const float scale =
          bits_float(static_cast<std::uint32_t>(s[0]) | (static_cast<std::uint32_t>(s[1]) << 8) |
                     (static_cast<std::uint32_t>(s[2]) << 16) | (static_cast<std::uint32_t>(s[3]) << 24));
      dequantize_e4m3_block<static_cast<int>(kFp8IndexerBlock)>(values + b * kFp8IndexerBlock, scale,
                                                                out + b * kFp8IndexerBlock);
    }
  } else {
    for (std::int64_t b = 0; b < d / kMxfp4Block; ++b) {
      dequantize_e2m1_block<static_cast<int>(kMxfp4Block)>(values + b * kMxfp4Block / 2, e8m0_to_float(scales[b]),
                                                           out + b * kMxfp4Block);
    }
  }
}

}  // namespace detail

// ---------------------------------------------------------------- fp8_ds_mla rows

/// Quantizes one fp8_ds_mla row into row `row` of a page (recipe and byte sum at the top).
/// - page: the page start, `layout.page_bytes()` bytes ([rows, 576] then [rows, 8] for D = 512);
///   writes only bytes [data_offset(row), +576) and [scale_offset(row), +8).
/// - in: `head_dim` (512) BF16 values, NoPE (448) first, then RoPE (64).
/// - Scale byte per 64 NoPE values, then one 0x00 pad byte; RoPE copied bit for bit.
/// Errors: row outside [0, rows_per_page) fails before anything is written.
DSV4_HOST_DEVICE constexpr void quantize_fp8_ds_mla_row(const fp8_ds_mla_page_layout& layout, std::uint8_t* page,
                                                        std::int64_t row, const bf16* in,
                                                        const quant_policy& policy = quant_policy{}) {
  detail::require_row(row, layout.rows_per_page);
  std::uint8_t* data = page + layout.data_offset(row);
  std::uint8_t* scales = page + layout.scale_offset(row);
  // Locals, not layout fields: byte stores may alias the layout as far as the compiler knows.
  const std::int64_t blocks = layout.format.num_scales();
  const std::int64_t scale_bytes = layout.format.scale_bytes();
  const std::int64_t rope_dim = layout.format.rope_dim;
  const std::int64_t nope_bytes = layout.format.nope_bytes();
  const std::int64_t nope = layout.format.nope_values();
  const quant_policy pol = policy;
  for (std::int64_t b = 0; b < blocks; ++b) {
    scales[b] = detail::quantize_fp8_block_fixed<static_cast<int>(kFp8QuantBlock)>(
        in + b * kFp8QuantBlock, data + b * kFp8QuantBlock, pol.fp8_ds_mla_amax_floor, pol.nan);
  }
  for (std::int64_t b = blocks; b < scale_bytes; ++b) scales[b] = 0;  // pad
  std::uint8_t* rope = data + nope_bytes;
  const bf16* rope_in = in + nope;
  for (std::int64_t j = 0; j < rope_dim; ++j) {  // BF16 little-endian, as on the GPU
    rope[2 * j] = static_cast<std::uint8_t>(rope_in[j].bits & 0xFFU);
    rope[2 * j + 1] = static_cast<std::uint8_t>(rope_in[j].bits >> 8);
  }
}

/// Dequantizes row `row` of an fp8_ds_mla page into `head_dim` (512) floats: NoPE value i is
/// E4M3(q_i) x 2^(byte - 127) of its block (exact in float32; byte 0xFF gives NaN), RoPE the
/// stored BF16 values. Reads only the row's 576 data and 8 scale bytes. Errors as the quantizer.
DSV4_HOST_DEVICE constexpr void dequantize_fp8_ds_mla_row(const fp8_ds_mla_page_layout& layout,
                                                          const std::uint8_t* page, std::int64_t row, float* out) {
  detail::dequantize_fp8_ds_mla_row_impl(layout, page, row, out);
}

/// As the float overload, writing BF16 (NoPE values rounded to nearest even, which is exact
/// unless the value is below the normal range; RoPE bits copied).
DSV4_HOST_DEVICE constexpr void dequantize_fp8_ds_mla_row(const fp8_ds_mla_page_layout& layout,
                                                          const std::uint8_t* page, std::int64_t row, bf16* out) {
  detail::dequantize_fp8_ds_mla_row_impl(layout, page, row, out);
}

// ---------------------------------------------------------------- indexer key rows

/// Quantizes one FP8 indexer key into row `row` of an indexer page (format must be fp8).
/// - page: `layout.page_bytes()` bytes, [rows, d] E4M3 then [rows, d / 128 x 4] fp32 scales.
/// - in: `index_head_dim` (128) BF16 values. Per 128: E4M3 codes and the fp32 scale 2^e
///   (`policy.indexer_fp8_amax_floor`, default 1e-4), stored little-endian.
/// Errors: row out of range, or a MXFP4 layout; nothing is written then.
DSV4_HOST_DEVICE constexpr void quantize_indexer_fp8_row(const indexer_page_layout& layout, std::uint8_t* page,
                                                         std::int64_t row, const bf16* in,
                                                         const quant_policy& policy = quant_policy{}) {
  detail::require_row(row, layout.rows_per_page);
  require(layout.format.format == indexer_format::fp8, "quantize_indexer_fp8_row needs an FP8 indexer layout");
  std::uint8_t* values = page + layout.data_offset(row);
  std::uint8_t* scales = page + layout.scale_offset(row);
  const std::int64_t blocks = layout.format.index_head_dim / kFp8IndexerBlock;
  const quant_policy pol = policy;
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::uint8_t byte = detail::quantize_fp8_block_fixed<static_cast<int>(kFp8IndexerBlock)>(
        in + b * kFp8IndexerBlock, values + b * kFp8IndexerBlock, pol.indexer_fp8_amax_floor, pol.nan);
    const bool nan_scale = byte == kE8m0NanCode && pol.nan == nan_policy::propagate &&
                           amax_bf16(in + b * kFp8IndexerBlock, static_cast<int>(kFp8IndexerBlock)).has_nan;
    const std::uint32_t bits = detail::float_bits(fp8_block_fp32_scale(byte, nan_scale));  // 2^e, NaN or +inf
    for (int k = 0; k < 4; ++k) scales[b * kFp8ScaleBytes + k] = static_cast<std::uint8_t>(bits >> (8 * k));
  }
}

/// Quantizes one MXFP4 indexer key into row `row` of an indexer page (format must be mxfp4).
/// - page: `layout.page_bytes()` bytes, [rows, d / 2] packed E2M1 then [rows, d / 32] E8M0.
/// - in: `index_head_dim` (128) BF16 values; per 32 values one E8M0 byte (rule and floor from
///   `policy`, default DeepSeek ceil, no floor); value 2i in the low nibble of byte i.
/// Errors: row out of range, or an FP8 layout; nothing is written then.
DSV4_HOST_DEVICE constexpr void quantize_indexer_mxfp4_row(const indexer_page_layout& layout, std::uint8_t* page,
                                                           std::int64_t row, const bf16* in,
                                                           const quant_policy& policy = quant_policy{}) {
  detail::require_row(row, layout.rows_per_page);
  require(layout.format.format == indexer_format::mxfp4, "quantize_indexer_mxfp4_row needs an MXFP4 indexer layout");
  std::uint8_t* values = page + layout.data_offset(row);
  std::uint8_t* scales = page + layout.scale_offset(row);
  const std::int64_t blocks = layout.format.index_head_dim / kMxfp4Block;
  const quant_policy pol = policy;
  for (std::int64_t b = 0; b < blocks; ++b) {
    scales[b] = quantize_mxfp4_block(in + b * kMxfp4Block, static_cast<int>(kMxfp4Block), values + b * kMxfp4Block / 2,
                                     pol.mxfp4_amax_floor, pol.mxfp4_scale, pol.nan);
  }
}

/// Quantizes one indexer key with the layout's format (FP8 or MXFP4); see the two above.
DSV4_HOST_DEVICE constexpr void quantize_indexer_row(const indexer_page_layout& layout, std::uint8_t* page,
                                                     std::int64_t row, const bf16* in,
                                                     const quant_policy& policy = quant_policy{}) {
  if (layout.format.format == indexer_format::fp8) {
    quantize_indexer_fp8_row(layout, page, row, in, policy);
  } else {
    quantize_indexer_mxfp4_row(layout, page, row, in, policy);
  }
}

/// Dequantizes row `row` of an indexer page into `index_head_dim` (128) floats, with the
/// layout's format: FP8 q x fp32 scale, or MXFP4 E2M1(q) x 2^(byte - 127) (0xFF gives NaN).
/// Reads only the row's value and scale bytes. Errors: row out of range.
DSV4_HOST_DEVICE constexpr void dequantize_indexer_row(const indexer_page_layout& layout, const std::uint8_t* page,
                                                       std::int64_t row, float* out) {
  detail::dequantize_indexer_row_impl(layout, page, row, out);
}

/// As the float overload, writing BF16 (rounded to nearest even; exact for these formats
/// unless a value is below the normal range).
DSV4_HOST_DEVICE constexpr void dequantize_indexer_row(const indexer_page_layout& layout, const std::uint8_t* page,
                                                       std::int64_t row, bf16* out) {
  detail::dequantize_indexer_row_impl(layout, page, row, out);
}

// ---------------------------------------------------------------- host span overloads

namespace detail {
inline void require_page_span(std::size_t size, std::int64_t page_bytes) {
  require(static_cast<std::int64_t>(size) >= page_bytes, "page span is smaller than the page", {"page_size", size},
          {"page_bytes", page_bytes});
}
inline void require_values_span(std::size_t size, std::int64_t values) {
  require(static_cast<std::int64_t>(size) == values, "span must hold exactly the row's values", {"size", size},
          {"values", values});
}
}  // namespace detail

/// Host-only, size-checked forms of the row codecs: fail unless `page` holds at least
/// `layout.page_bytes()` bytes and `in` / `out` exactly the row's values (head_dim or
/// index_head_dim).
inline void quantize_fp8_ds_mla_row(const fp8_ds_mla_page_layout& layout, std::span<std::uint8_t> page,
                                    std::int64_t row, std::span<const bf16> in,
                                    const quant_policy& policy = quant_policy{}) {
  detail::require_page_span(page.size(), layout.page_bytes());
  detail::require_values_span(in.size(), layout.format.head_dim);
  quantize_fp8_ds_mla_row(layout, page.data(), row, in.data(), policy);
}

/// Host-only, size-checked `dequantize_fp8_ds_mla_row` to float or BF16 (`Out`).
template <class Out>
requires std::same_as<Out, float> || std::same_as<Out, bf16>
void dequantize_fp8_ds_mla_row(const fp8_ds_mla_page_layout& layout, std::span<const std::uint8_t> page,
                               std::int64_t row, std::span<Out> out) {
  detail::require_page_span(page.size(), layout.page_bytes());
  detail::require_values_span(out.size(), layout.format.head_dim);
  dequantize_fp8_ds_mla_row(layout, page.data(), row, out.data());
}

/// Host-only, size-checked `quantize_indexer_row`.
inline void quantize_indexer_row(const indexer_page_layout& layout, std::span<std::uint8_t> page, std::int64_t row,
                                 std::span<const bf16> in, const quant_policy& policy = quant_policy{}) {
  detail::require_page_span(page.size(), layout.page_bytes());
  detail::require_values_span(in.size(), layout.format.index_head_dim);
  quantize_indexer_row(layout, page.data(), row, in.data(), policy);
}

/// Host-only, size-checked `dequantize_indexer_row` to float or BF16 (`Out`).
template <class Out>
requires std::same_as<Out, float> || std::same_as<Out, bf16>
void dequantize_indexer_row(const indexer_page_layout& layout, std::span<const std::uint8_t> page, std::int64_t row,
                            std::span<Out> out) {
  detail::require_page_span(page.size(), layout.page_bytes());
  detail::require_values_span(out.size(), layout.format.index_head_dim);
  dequantize_indexer_row(layout, page.data(), row, out.data());
}

}  // namespace dsv4::cache
