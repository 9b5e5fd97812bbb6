// dsv4-cache: what a row format is. One `row_format` concept, its `constexpr` value form
// (`format_layout`: name, fields, page rule, byte offsets of row r in a page of N rows, page
// bytes), the quantization options writers really differ on (`format_policy`), and the generic
// whole-row codecs every format gets from its per-unit work.
//
// A format is a type with
//   static constexpr format_layout layout;          the value form (fp32_state: row bytes 0, bound per group)
//   static constexpr std::array<format_writer, K> writers;  its producers' writers, the default first
//   static constexpr format_policy default_policy;  writers[0].policy, what its default writer does
//   using input_type = bf16 (or float for fp32_state)
//   static int units(const format_layout&);         independent work units of one row
//   static void quantize_unit(L, page, rows, r, in, policy, unit);
//   static void dequantize_unit<Out>(L, page, rows, r, out, policy, unit);   Out = float or bf16
// all `DSV4_HOST_DEVICE constexpr`. A unit is what one GPU lane does (a scale block, or the
// RoPE copy): the generic kernels run unit u of row r on one thread, the host codecs run every
// unit in order, and a host test runs them in any order ("emulated lanes"), so each format's
// device byte placement is checked where there is no GPU. Units of one row write disjoint
// bytes. Every multi-byte field (BF16, fp32) is little-endian, written byte by byte. A writer
// never writes page padding or bytes its format leaves unused (a fresh page is zero).
// Near the top of the BF16 range a power-of-two rounded-up scale can reach 2^128, so a finite
// input may decode to +-inf (e.g. |x| >= 3.2965e38 in an E4M3 block): a property of the
// engines' scale rules, kept bit for bit.
//
// Page rules (layout-variants.md notation; N rows per page, row r 0-based, offsets in bytes):
//   split_padded  [N x data_bytes][N x scale_bytes], page padded to a multiple of `alignment`
//   split         the same, no padding
//   interleaved   [row_bytes] x N, each row [data | scales], no padding
// Sources per format in its header; the facts are in docs/layout-variants.md.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/model.hpp"
#include "dsv4/cache/row_codec.hpp"
#include "dsv4/cache/scalar_codec.hpp"

namespace dsv4::cache {

/// How the rows of one page are placed (see the table at the top).
enum class page_rule : std::uint8_t { split_padded, split, interleaved };

/// "split_padded", "split" or "interleaved".
constexpr std::string_view to_string(page_rule r) {
  switch (r) {
    case page_rule::split_padded: return "split_padded";
    case page_rule::split: return "split";
    case page_rule::interleaved: return "interleaved";
  }
  return "?";
}

/// What a pool of this format stores: main (latent) KV rows, indexer keys, or compressor state.
enum class format_role : std::uint8_t { main_kv, indexer_k, state };

/// "main_kv", "indexer_k" or "state".
constexpr std::string_view to_string(format_role r) {
  switch (r) {
    case format_role::main_kv: return "main_kv";
    case format_role::indexer_k: return "indexer_k";
    case format_role::state: return "state";
  }
  return "?";
}

/// Element type of a field.
enum class element_type : std::uint8_t { none, e4m3, e2m1, bf16, ue8m0, fp32 };

/// "none", "e4m3", "e2m1", "bf16", "ue8m0" or "fp32".
constexpr std::string_view to_string(element_type t) {
  switch (t) {
    case element_type::none: return "none";
    case element_type::e4m3: return "e4m3";
    case element_type::e2m1: return "e2m1";
    case element_type::bf16: return "bf16";
    case element_type::ue8m0: return "ue8m0";
    case element_type::fp32: return "fp32";
  }
  return "?";
}

/// One field of a row: `count` elements of `type`; for scales, `block` values share one.
struct field_spec {
  element_type type = element_type::none;
  std::int64_t count = 0;  ///< elements
  std::int64_t block = 0;  ///< values per scale (scales only), else 0
  friend constexpr bool operator==(const field_spec&, const field_spec&) = default;
};

/// The value form of a row format: everything that decides where its bytes go.
struct format_layout {
  std::string_view name;  ///< Registry name, e.g. "v4.fp8_ds_mla".
  model_family model = model_family::any;
  format_role role = format_role::main_kv;
  std::string_view source;  ///< Repository and path (or PR) of the producer it follows.
  page_rule rule = page_rule::split;
  std::int64_t alignment = 0;             ///< split_padded: page bytes are a multiple of it; else 0.
  std::int64_t row_bytes = 0;             ///< Bytes one row takes in the page (a slot: may exceed data + scales).
  std::int64_t data_bytes = 0;            ///< Bytes of a row's data part (values, and RoPE where stored with them).
  std::int64_t scale_bytes = 0;           ///< Bytes of a row's scale part, pad included; 0 for no scales.
  std::int64_t rope_offset_in_data = -1;  ///< RoPE bytes from the start of the row's data; -1 if none.
  std::int64_t values = 0;  ///< Input / output values per row (BF16 in, float or BF16 out; fp32 for state).
  field_spec data;          ///< The values before RoPE (NoPE), or every value where the codes cover all dims.
  field_spec scales;        ///< Block scales; type none if the format has none.
  field_spec rope;          ///< The RoPE values as stored (at rope_offset); type none if the row has none.

  friend constexpr bool operator==(const format_layout&, const format_layout&) = default;

  [[nodiscard]] DSV4_HOST_DEVICE constexpr bool has_scales() const { return scale_bytes > 0; }
  [[nodiscard]] DSV4_HOST_DEVICE constexpr bool has_rope() const { return rope_offset_in_data >= 0; }

  /// Offset of row r's data from the page start, bytes. Precondition 0 <= r < rows (unchecked, a
  /// hot path; the codecs check it). split*: r x data_bytes; interleaved: r x row_bytes.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t data_offset(std::int64_t rows, std::int64_t r) const {
    (void)rows;
    return rule == page_rule::interleaved ? r * row_bytes : r * data_bytes;
  }
  /// Offset of row r's scales, bytes: split* rows x data_bytes + r x scale_bytes; interleaved
  /// r x row_bytes + data_bytes. -1 for a format without scales. Precondition as data_offset.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t scale_offset(std::int64_t rows, std::int64_t r) const {
    if (!has_scales()) return -1;
    return rule == page_rule::interleaved ? r * row_bytes + data_bytes : rows * data_bytes + r * scale_bytes;
  }
  /// Offset of row r's RoPE, bytes: data_offset + rope_offset_in_data; -1 if none.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t rope_offset(std::int64_t rows, std::int64_t r) const {
    return has_rope() ? data_offset(rows, r) + rope_offset_in_data : -1;
  }
  /// Bytes of a page of `rows` rows before padding: rows x row_bytes. Fails on overflow.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t used_bytes(std::int64_t rows) const {
    return checked_mul(rows, row_bytes, "page bytes (rows x row_bytes) overflow 64 bits");
  }
  /// Page bytes, also the minimum page stride: used_bytes, padded up to a multiple of
  /// `alignment` for split_padded. Fails unless rows > 0, or on overflow.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t page_bytes(std::int64_t rows) const {
    require(rows > 0, "rows per page must be > 0", {"rows", rows});
    const std::int64_t used = used_bytes(rows);
    return rule == page_rule::split_padded ? round_up(used, alignment) : used;
  }
};

/// How an FP8 (E4M3) block with a power-of-two scale picks its exponent.
enum class fp8_exponent : std::uint8_t {
  exact_ceil,      ///< e = ceil(log2(max(amax, floor) / 448)), the ceiling computed exactly.
  float_log2_ceil  ///< e = ceil(log2f(max(amax, floor) / 448)): log2 rounded to float first (TensorRT-LLM).
};

/// How a V3.2 FP8 block stores its fp32 scale.
enum class fp32_scale_rule : std::uint8_t {
  power_of_two,  ///< 2^ceil(log2(max(amax / 448, floor))): FlashMLA, vLLM after PR #49435.
  /// The unrounded fp32 scale: max(amax / 448, FLT_MIN) for the V3.2 latent row (vLLM
  /// `concat_and_cache_ds_mla` before #49435), max(amax, 1e-4) / 448 for the V3.2 indexer key
  /// (`indexer_k_quant_and_cache` with use_ue8m0 off).
  legacy_amax
};

/// How an MXFP4 block rounds x / 2^e to an E2M1 code.
enum class e2m1_rounding : std::uint8_t {
  /// Round to nearest, ties to the even code, saturating at +-6, sign kept (a negative value that
  /// rounds to zero is 0x8): PTX `cvt.rn.satfinite.e2m1x2.f32`, vLLM's and FlashMLA's writers.
  nearest_even,
  /// tokenspeed's comparisons: |v| <= 0.25 -> 0, <= 0.75 -> 0.5, <= 1.25 -> 1, <= 1.75 -> 1.5,
  /// <= 2.5 -> 2, <= 3.5 -> 3, <= 5 -> 4, else 6: every tie toward zero (0.75, 1.75 and 3.5
  /// differ from nearest-even), and a zero code is written +0 (0x0) whatever the sign
  /// (`float_to_e2m1_ties_toward_zero`).
  ties_toward_zero
};

/// The quantization choices writers differ on. Each format's `default_policy` is its default
/// writer's (`writers[0]`); fields a format does not read are ignored by it.
struct format_policy {
  nan_policy nan = nan_policy::propagate;
  /// FP8 power-of-two blocks: the amax floor. 1e-4 gives an all-zero block byte 105 (vLLM V4
  /// writer, facts section 4); 0.0448 (= 448 x 1e-4, FlashMLA's floor on amax / 448) byte 114;
  /// 1e-8 with `float_log2_ceil` byte 92 (TensorRT-LLM footer).
  float fp8_amax_floor = 1e-4f;
  fp8_exponent fp8_exp = fp8_exponent::exact_ceil;
  /// MXFP4 (E8M0) blocks: the amax floor (0: none, an all-zero block gets byte 0).
  float mxfp4_amax_floor = 0.0f;
  mxfp4_scale_rule mxfp4_scale = mxfp4_scale_rule::deepseek_ceil;
  /// MXFP4 (E8M0) blocks: the rounding of x / 2^e to E2M1.
  e2m1_rounding mxfp4_rounding = e2m1_rounding::nearest_even;
  /// V3.2 fp32 scales.
  fp32_scale_rule fp32_scale = fp32_scale_rule::power_of_two;
  /// Per-tensor scale of an unscaled FP8 format (v4.fp8_uniform, v3.2.fp8_flat): stored code =
  /// E4M3(x / tensor_scale), read back as code x tensor_scale. 1.0 in SGLang and vLLM.
  float tensor_scale = 1.0f;
};

/// The producers whose writers a format models (see `format_writer`).
enum class writer_id : std::uint8_t { flashmla, vllm, sglang, tokenspeed, trtllm, flashinfer };

/// "flashmla", "vllm", "sglang", "tokenspeed", "trtllm" or "flashinfer" (the `--writer` names).
constexpr std::string_view to_string(writer_id w) {
  switch (w) {
    case writer_id::flashmla: return "flashmla";
    case writer_id::vllm: return "vllm";
    case writer_id::sglang: return "sglang";
    case writer_id::tokenspeed: return "tokenspeed";
    case writer_id::trtllm: return "trtllm";
    case writer_id::flashinfer: return "flashinfer";
  }
  return "?";
}

/// One producer's writer of a format, as a value: the policy that reproduces its bytes and
/// where that writer is. A format lists its writers in `F::writers`, the default first
/// (`F::default_policy` is `F::writers[0].policy`); `writers` in `dsv4-cache-layout` prints the
/// pairs that differ with a witness block.
struct format_writer {
  writer_id producer = writer_id::vllm;
  format_policy policy{};
  /// Repository, path and commit of the producer's writer the policy follows.
  std::string_view source;
  /// Whether this writer's bytes were compared, byte for byte, with the producer's own writer
  /// run on the golden inputs and the hard cases (`docs/engines/writers.md`, 2026-12-01);
  /// false: read from its code (or named from the format's source) but not yet run against it.
  bool compared = false;
};

namespace detail {

/// ceil(RN_float(log2(x))) for a finite x > 0: log2 rounded to float before the ceiling, as
/// `ceilf(log2f(x))` with a correctly rounded log2f. Differs from the exact ceiling only just
/// above a power of two 2^k (k != 0), where log2(x) - k is below half the float spacing at k and
/// log2f returns k. Exact: log2(m) of the mantissa m is compared with that half spacing through
/// its series (log2 of a rational m != 1 is irrational, so there are no ties).
DSV4_HOST_DEVICE constexpr int ceil_float_log2(float x) noexcept {
  const int k = floor_log2(x);
  const std::uint32_t a = float_bits(x) & kF32AbsMask;
  if (a >> 23 == 0) return ceil_log2(x);  // subnormal x: |k| >= 127, log2 spacing 2^-17 far below any gap
  const std::uint32_t man = a & 0x7FFFFFU;
  if (man == 0 || k == 0) return man == 0 ? k : k + 1;
  // Half the float spacing of log2 values just below or at |k|: 2^(floor(log2 |k|) - 24), and
  // one binade less below |k| when k < 0 and |k| is a power of two (the values are k + L, L > 0).
  const int ak = k < 0 ? -k : k;
  int p = floor_log2(static_cast<float>(ak)) - 24;
  if (k < 0 && (ak & (ak - 1)) == 0) --p;
  const double t = static_cast<double>(man) * 0x1p-23;  // m - 1, exact
  if (t > 0x1p-10) return k + 1;                        // log2(m) > 2^-10.5 > any half spacing (<= 2^-17)
  // log2(1 + t) = (t - t^2/2 + t^3/3 - t^4/4) / ln 2, error < t^5 < 2^-50 relative to t: exact enough.
  const double l = (t - t * t / 2 + t * t * t / 3 - t * t * t * t / 4) * 1.4426950408889634;
  double half = 1.0;
  for (int i = 0; i > p; --i) half /= 2;
  return l < half ? k : k + 1;
}

/// The exponent of an FP8 power-of-two block with NaN-free amax under `p`, clamped to [-127, 127].
DSV4_HOST_DEVICE constexpr int fp8_block_exponent(float amax, const format_policy& p) noexcept {
  if (p.fp8_exp == fp8_exponent::exact_ceil) return scale_exponent_for_amax(amax, kE4m3Max, p.fp8_amax_floor);
  const float m = amax > p.fp8_amax_floor ? amax : p.fp8_amax_floor;
  const float x = m / kE4m3Max;
  if (!(x > 0.0f)) return -127;
  const int e = (float_bits(x) & kF32AbsMask) >= kF32Inf ? 127 : ceil_float_log2(x);
  return e < -127 ? -127 : (e > 127 ? 127 : e);
}

/// Quantizes N BF16 values to E4M3 with a power-of-two scale chosen under `p`; returns the E8M0
/// byte e + 127, or 0xFF with every code 0x7F for a NaN block under nan_policy::propagate, or
/// 0xFF for a block whose amax is +-inf (the references' scale inf: inf elements 0x7F, finite
/// ones +-0; `e4m3_inf_block`, docs/engines/writers.md 2).
template <int N>
DSV4_HOST_DEVICE constexpr std::uint8_t fp8_pow2_block(const bf16* in, std::uint8_t* out,
                                                       const format_policy& p) noexcept;

/// As `fp8_pow2_block`, storing the block's scale as a little-endian fp32 at `scale` (V3.2 and
/// indexer FP8 rows): 2^e, the canonical NaN for a NaN block under propagate, +inf for an amax
/// of +-inf (`fp8_block_fp32_scale`).
template <int N>
DSV4_HOST_DEVICE constexpr void fp8_pow2_block_f32(const bf16* in, std::uint8_t* out, std::uint8_t* scale,
                                                   const format_policy& p) noexcept;
template <int N>
DSV4_HOST_DEVICE constexpr std::uint8_t fp8_pow2_block(const bf16* in, std::uint8_t* out,
                                                       const format_policy& p) noexcept {
  if (p.fp8_exp == fp8_exponent::exact_ceil) return quantize_fp8_block_fixed<N>(in, out, p.fp8_amax_floor, p.nan);
  const bf16_block_stats st = block_stats<N>(in);
  const bool has_nan = st.max_all > 0x7F80U;
  if (has_nan && p.nan == nan_policy::propagate) {
    for (int i = 0; i < N; ++i) out[i] = kE4m3NanCode;
    return kE8m0NanCode;
  }
  const float amax = has_nan ? amax_bf16(in, N).amax : bf16_to_float(bf16{static_cast<std::uint16_t>(st.max_all)});
  if ((float_bits(amax) & kF32AbsMask) == kF32Inf) return e4m3_inf_block(in, N, out);
  const int e = fp8_block_exponent(amax, p);
  // log2 rounded to float lowers e only where amax / 448 is within 2^-17 above 2^e: the scaled
  // values stay below 448.01, which rounds to 448, so the normal-range kernel still applies.
  if (e4m3_block_is_normal(st, e)) {
    e4m3_block_normal<N>(in, e, out);
  } else {
    e4m3_block_any<N>(in, exp2i(-e), out);
  }
  return static_cast<std::uint8_t>(e + 127);
}

/// `Rule::scale_byte(amax)`: the scale byte of a block from its amax, which must be a BF16 value
/// widened to float (as `amax_bf16` returns; a NaN-free maximum). On the host kernels a lookup
/// in a table of the rule over every BF16 value (`simd::bf16_byte_table`): the same byte.
template <class Rule>
DSV4_HOST_DEVICE constexpr std::uint8_t scale_byte_of_amax(float amax) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(true)) return simd::bf16_byte_table<Rule>()[(float_bits(amax) >> 16) & 0x7FFFU];
#endif
  return Rule::scale_byte(amax);
}

/// Stores a BF16 value little-endian at p[0..1].
DSV4_HOST_DEVICE constexpr void store_bf16(std::uint8_t* p, bf16 v) noexcept {
  p[0] = static_cast<std::uint8_t>(v.bits & 0xFFU);
  p[1] = static_cast<std::uint8_t>(v.bits >> 8);
}
/// Loads a little-endian BF16 value from p[0..1].
DSV4_HOST_DEVICE constexpr bf16 load_bf16(const std::uint8_t* p) noexcept {
  return bf16{static_cast<std::uint16_t>(p[0] | (p[1] << 8))};
}
/// Stores a float32 little-endian at p[0..3].
DSV4_HOST_DEVICE constexpr void store_f32(std::uint8_t* p, float v) noexcept {
  const std::uint32_t b = float_bits(v);
  for (int k = 0; k < 4; ++k) p[k] = static_cast<std::uint8_t>(b >> (8 * k));
}
/// Loads a little-endian float32 from p[0..3].
DSV4_HOST_DEVICE constexpr float load_f32(const std::uint8_t* p) noexcept {
  return bits_float(static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
                    (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24));
}

template <int N>
DSV4_HOST_DEVICE constexpr void fp8_pow2_block_f32(const bf16* in, std::uint8_t* out, std::uint8_t* scale,
                                                   const format_policy& p) noexcept {
  const std::uint8_t byte = fp8_pow2_block<N>(in, out, p);
  const bool nan_scale = byte == kE8m0NanCode && p.nan == nan_policy::propagate && amax_bf16(in, N).has_nan;
  store_f32(scale, fp8_block_fp32_scale(byte, nan_scale));
}

/// Copies n BF16 values to the page, little-endian.
DSV4_HOST_DEVICE constexpr void copy_bf16_out(std::uint8_t* dst, const bf16* in, std::int64_t n) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(true)) {
    std::memcpy(dst, in, static_cast<std::size_t>(n) * 2);  // little-endian host
    return;
  }
#endif
  for (std::int64_t j = 0; j < n; ++j) store_bf16(dst + 2 * j, in[j]);
}
/// Reads n little-endian BF16 values from the page into float (exact) or BF16 (bits copied).
template <class Out>
DSV4_HOST_DEVICE constexpr void copy_bf16_in(const std::uint8_t* src, Out* out, std::int64_t n) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(n % simd::kLanes == 0)) return simd::bf16_in(src, out, n);
#endif
  for (std::int64_t j = 0; j < n; ++j) {
    const bf16 v = load_bf16(src + 2 * j);
    if constexpr (std::is_same_v<Out, bf16>) {
      out[j] = v;
    } else {
      out[j] = bf16_to_float(v);
    }
  }
}

/// Copies n float32 values to the page, little-endian (bits kept, NaN payloads too).
DSV4_HOST_DEVICE constexpr void copy_f32_out(std::uint8_t* dst, const float* in, std::int64_t n) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(true)) {
    std::memcpy(dst, in, static_cast<std::size_t>(n) * 4);  // little-endian host
    return;
  }
#endif
  for (std::int64_t i = 0; i < n; ++i) store_f32(dst + 4 * i, in[i]);
}
/// Reads n little-endian float32 values from the page into float (bits kept) or BF16
/// (`float_to_bf16`: round to nearest even, NaN 0x7FFF).
template <class Out>
DSV4_HOST_DEVICE constexpr void copy_f32_in(const std::uint8_t* src, Out* out, std::int64_t n) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(n % simd::kLanes == 0)) return simd::f32_in(src, out, n);
#endif
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = load_f32(src + 4 * i);
    if constexpr (std::is_same_v<Out, bf16>) {
      out[i] = float_to_bf16(v);
    } else {
      out[i] = v;
    }
  }
}

/// E4M3 codes of x / tensor_scale for n values (per-tensor FP8, saturating at +-448).
DSV4_HOST_DEVICE constexpr void e4m3_tensor_scaled(const bf16* in, std::int64_t n, float tensor_scale,
                                                   std::uint8_t* out) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(n % simd::kLanes == 0)) return simd::e4m3_divided(in, static_cast<int>(n), tensor_scale, out);
#endif
  for (std::int64_t i = 0; i < n; ++i) out[i] = float_to_e4m3(bf16_to_float(in[i]) / tensor_scale);
}
/// out[i] = E4M3(code[i]) x scale for n codes.
template <class Out>
DSV4_HOST_DEVICE constexpr void e4m3_dequant(const std::uint8_t* codes, std::int64_t n, float scale,
                                             Out* out) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(n % simd::kLanes == 0)) return simd::e4m3_dequant(codes, static_cast<int>(n), scale, out);
#endif
  for (std::int64_t i = 0; i < n; ++i) out[i] = from_float<Out>(e4m3_to_float(codes[i]) * scale);
}
/// Packed E2M1 (value 2i in the low nibble of byte i) x scale for n values (n even).
template <class Out>
DSV4_HOST_DEVICE constexpr void e2m1_dequant(const std::uint8_t* packed, std::int64_t n, float scale,
                                             Out* out) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(n % simd::kLanes == 0)) return simd::e2m1_dequant(packed, static_cast<int>(n), scale, out);
#endif
  for (std::int64_t i = 0; i < n / 2; ++i) {
    out[2 * i] = from_float<Out>(e2m1_to_float(packed[i]) * scale);
    out[2 * i + 1] = from_float<Out>(e2m1_to_float(static_cast<std::uint8_t>(packed[i] >> 4)) * scale);
  }
}
/// Packed E2M1 x a block scale stored as one byte, `ScaleType` e4m3 (NVFP4) or ue8m0 (MXFP4):
/// `e2m1_dequant(packed, n, decoded scale, out)`, n even. On the host kernels a table lookup
/// per value (`simd::e2m1_table_dequant`).
template <element_type ScaleType, class Out>
DSV4_HOST_DEVICE constexpr void e2m1_dequant_scale_byte(const std::uint8_t* packed, std::int64_t n,
                                                        std::uint8_t scale_byte, Out* out) noexcept {
  static_assert(ScaleType == element_type::e4m3 || ScaleType == element_type::ue8m0);
#if DSV4_HOST_SIMD
  if (host_simd_path(n % 2 == 0))
    return simd::e2m1_table_dequant<ScaleType == element_type::e4m3>(packed, static_cast<int>(n), scale_byte, out);
#endif
  e2m1_dequant(packed, n, ScaleType == element_type::e4m3 ? e4m3_to_float(scale_byte) : e8m0_to_float(scale_byte), out);
}
/// Packs E2M1 codes of x / scale for n values (n even; value 2i in the low nibble); a zero
/// scale gives zero codes.
DSV4_HOST_DEVICE constexpr void e2m1_pack_divided(const bf16* in, std::int64_t n, float scale,
                                                  std::uint8_t* out) noexcept {
#if DSV4_HOST_SIMD
  if (host_simd_path(n % simd::kLanes == 0)) {
    if (scale == 0.0f) {
      std::memset(out, 0, static_cast<std::size_t>(n / 2));
    } else {
      simd::e2m1_divided(in, static_cast<int>(n), scale, out);
    }
    return;
  }
#endif
  for (std::int64_t i = 0; i < n / 2; ++i) {
    const std::uint8_t lo = scale == 0.0f ? 0 : float_to_e2m1(bf16_to_float(in[2 * i]) / scale);
    const std::uint8_t hi = scale == 0.0f ? 0 : float_to_e2m1(bf16_to_float(in[2 * i + 1]) / scale);
    out[i] = static_cast<std::uint8_t>((lo & 0xFU) | ((hi & 0xFU) << 4));
  }
}

/// Packs the E2M1 codes of x / E4M3(scale_byte) for n values (n even): `e2m1_pack_divided(in,
/// n, e4m3_to_float(scale_byte), out)`. On the SSE2 and AVX2 kernels a positive finite nonzero
/// scale byte selects the divisor's operands from a table (`simd::kE4m3Divisors`, `e2m1_count`).
DSV4_HOST_DEVICE constexpr void e2m1_pack_e4m3_divided(const bf16* in, std::int64_t n, std::uint8_t scale_byte,
                                                       std::uint8_t* out) noexcept {
#if DSV4_HOST_SSE2
  if (host_simd_path(n % simd::kLanes == 0) && simd::e2m1_count_path() &&
      static_cast<unsigned>(scale_byte) - 1U < 0x7EU) {
    const auto* shift = reinterpret_cast<const __m128i*>(simd::kE4m3Divisors.shift[scale_byte]);
    return simd::e2m1_count(in, static_cast<int>(n), _mm_load_si128(shift), simd::kE4m3Divisors.j[scale_byte], out);
  }
#endif
  e2m1_pack_divided(in, n, e4m3_to_float(scale_byte), out);
}

}  // namespace detail

/// A row format type (see the top of this file).
template <class F>
concept row_format = requires(const format_layout& l, std::uint8_t* page, const std::uint8_t* cpage, std::int64_t rows,
                              std::int64_t r, const typename F::input_type* in, float* outf, bf16* outb,
                              const format_policy& p, int unit) {
  { F::layout } -> std::convertible_to<format_layout>;
  { F::default_policy } -> std::convertible_to<format_policy>;
  { F::writers[0] } -> std::convertible_to<format_writer>;
  { F::writers.size() } -> std::convertible_to<std::size_t>;
  { F::units(l) } -> std::same_as<int>;
  F::quantize_unit(l, page, rows, r, in, p, unit);
  F::dequantize_unit(l, cpage, rows, r, outf, p, unit);
  F::dequantize_unit(l, cpage, rows, r, outb, p, unit);
};

namespace detail {
DSV4_HOST_DEVICE constexpr void require_format_row(const format_layout& l, std::int64_t rows, std::int64_t r) {
  require(rows > 0 && l.row_bytes > 0, "a page needs rows > 0 and a bound row size", {"rows", rows},
          {"row_bytes", l.row_bytes});
  require(r >= 0 && r < rows, "row must be in [0, rows_per_page)", {"row", r}, {"rows_per_page", rows});
}
}  // namespace detail

/// Quantizes one row of format F into row `r` of a page of `rows` rows (every unit, in order).
/// - l: F::layout, or for fp32_state the layout bound to the group's row bytes.
/// - page: the page start, at least `l.page_bytes(rows)` bytes; only row r's data and scale
///   bytes are written (never padding, never another row).
/// - in: `l.values` values of F::input_type (BF16; float for fp32_state).
/// Errors: r outside [0, rows) (the padding slot -1 included) fails before a byte is written.
template <row_format F>
DSV4_HOST_DEVICE constexpr void quantize_row(const format_layout& l, std::uint8_t* page, std::int64_t rows,
                                             std::int64_t r, const typename F::input_type* in,
                                             const format_policy& p = F::default_policy) {
  detail::require_format_row(l, rows, r);
  const int n = F::units(l);
  for (int u = 0; u < n; ++u) F::quantize_unit(l, page, rows, r, in, p, u);
}

/// Dequantizes row `r` of a page of format F into `l.values` floats or BF16 (`Out`); reads only
/// the row's bytes. Errors as `quantize_row`.
template <row_format F, class Out>
requires std::same_as<Out, float> || std::same_as<Out, bf16> DSV4_HOST_DEVICE constexpr void dequantize_row(
    const format_layout& l, const std::uint8_t* page, std::int64_t rows, std::int64_t r, Out* out,
    const format_policy& p = F::default_policy) {
  detail::require_format_row(l, rows, r);
  const int n = F::units(l);
  for (int u = 0; u < n; ++u) F::dequantize_unit(l, page, rows, r, out, p, u);
}

}  // namespace dsv4::cache
