// dsv4-cache: `v4.mxfp4_kv`, the 368-B MXFP4 main-KV row of V4 (SGLang proposal).
//
// Row, interleaved (N x 368, no padding):
//   [0, 224)    448 e2m1 NoPE, value 2i in the low nibble of byte i
//   [224, 238)  14 e8m0, one per 32 NoPE values
//   [238, 240)  2 pad bytes, never written
//   [240, 368)  64 bf16 RoPE
// N = 64, row 1: data 368, scales 592, RoPE 608; page 23,552.
// Scale: the NEAREST power of two, not the ceiling: e = round(log2(amax) - log2(6)) with amax
// floored at 1e-40, byte e + 127 clamped to [0, 255]; so values can clip at +-6. The rounding is
// decided exactly: with amax = m x 2^k (1 <= m < 2), log2(amax / 6) rounds to k - 2 when
// m^2 >= 9/8 and to k - 3 below (m^2 is exact in double). The half-way point m = sqrt(9/8) is
// irrational, so no float amax is a tie: the Triton writer's ties-up and the CPU reference's
// ties-to-even (layout-variants section 7) give the same byte whenever their log2 is exact.
// Codes: E2M1(x x 2^-e), RNE, saturating. A NaN or an infinity in a block under
// nan_policy::propagate gives scale byte 0xFF and zero codes (the source is silent; our rule).
// Source: sgl-project/sglang PR #37138 (open), python/sglang/srt/layers/attention/dsv4/mxfp4_k_cache.py.
#pragma once

#include "dsv4/cache/formats/format_traits.hpp"

namespace dsv4::cache::formats {

namespace detail {
/// The nearest-exponent E8M0 byte of a NaN-free amax (see the top of the file); 0xFF for +inf.
DSV4_HOST_DEVICE constexpr std::uint8_t mxfp4_nearest_scale_byte(float amax) noexcept {
  const float a = amax > 1e-40f ? amax : 1e-40f;
  if ((cache::detail::float_bits(a) & cache::detail::kF32AbsMask) >= cache::detail::kF32Inf) return 0xFF;
  const int k = floor_log2(a);
  // m = a / 2^k in [1, 2), exact: a times the double 2^-k (k in [-133, 127]).
  const double m = static_cast<double>(a) * cache::detail::bit_cast<double>(static_cast<std::uint64_t>(1023 - k) << 52);
  const int e = k - 2 - (m * m >= 1.125 ? 0 : 1);
  const int byte = e + 127;
  return static_cast<std::uint8_t>(byte < 0 ? 0 : (byte > 255 ? 255 : byte));
}
}  // namespace detail

/// `v4.mxfp4_kv`: see the top of this file.
struct v4_mxfp4_kv {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v4.mxfp4_kv",
      .model = model_family::v4,
      .role = format_role::main_kv,
      .source = "sgl-project/sglang PR #37138, python/sglang/srt/layers/attention/dsv4/mxfp4_k_cache.py",
      .rule = page_rule::interleaved,
      .alignment = 0,
      .row_bytes = 368,
      .data_bytes = 224,
      .scale_bytes = 16,
      .rope_offset_in_data = 240,
      .values = 512,
      .data = {element_type::e2m1, 448, 0},
      .scales = {element_type::ue8m0, 14, 32},
      .rope = {element_type::bf16, 64, 0},
  };
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 1> writers{{
      format_writer{writer_id::sglang, format_policy{},
                    "sgl-project/sglang python/sglang/srt/layers/attention/dsv4/mxfp4_k_cache.py (PR #37138)", false},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
  static constexpr int kBlocks = 14;
  static constexpr int kBlock = 32;

  DSV4_HOST_DEVICE static constexpr int units(const format_layout& /*layout*/) { return kBlocks + 1; }
  DSV4_HOST_DEVICE static constexpr void quantize_unit(const format_layout& l, std::uint8_t* page, std::int64_t rows,
                                                       std::int64_t r, const bf16* in, const format_policy& p,
                                                       int unit) {
    std::uint8_t* data = page + l.data_offset(rows, r);
    if (unit == kBlocks) {
      cache::detail::copy_bf16_out(data + l.rope_offset_in_data, in + 448, 64);
      return;
    }
    const bf16* x = in + std::int64_t{unit} * kBlock;
    std::uint8_t* codes = data + std::int64_t{unit} * kBlock / 2;
    const bf16_amax m = amax_bf16(x, kBlock);
    std::uint8_t byte = detail::mxfp4_nearest_scale_byte(m.amax);
    if ((m.has_nan && p.nan == nan_policy::propagate) || byte == 0xFF) {
      byte = 0xFF;
      for (int i = 0; i < kBlock / 2; ++i) codes[i] = 0;
    } else {
      // E2M1(x x 2^-e) packed: `e2m1_code_branchless` is `float_to_e2m1` for every float.
      cache::detail::e2m1_block_packed<kBlock>(x, exp2i(127 - byte), codes);
    }
    page[l.scale_offset(rows, r) + unit] = byte;
  }
  template <class Out>
  DSV4_HOST_DEVICE static constexpr void dequantize_unit(const format_layout& l, const std::uint8_t* page,
                                                         std::int64_t rows, std::int64_t r, Out* out,
                                                         const format_policy& /*policy*/, int unit) {
    const std::uint8_t* data = page + l.data_offset(rows, r);
    if (unit == kBlocks) {
      cache::detail::copy_bf16_in(data + l.rope_offset_in_data, out + 448, 64);
      return;
    }
    cache::detail::e2m1_dequant_scale_byte<element_type::ue8m0>(data + std::int64_t{unit} * kBlock / 2, kBlock,
                                                                page[l.scale_offset(rows, r) + unit],
                                                                out + std::int64_t{unit} * kBlock);
  }
};

}  // namespace dsv4::cache::formats
