// dsv4-cache: the per-unit work of the indexer key formats (d = 128 values per key).
//
// FP8 keys (132 B): [N x 128 e4m3][N x 4 fp32 scale], one block of 128 values, one unit. The
// scale is 2^e with e = ceil(log2(max(amax, 1e-4) / 448)) (all-zero key 2^-22), stored as a
// little-endian fp32; `fp32_scale_rule::legacy_amax` stores max(amax, 1e-4) / 448 as is (vLLM's
// `indexer_k_quant_and_cache` with use_ue8m0 off). Codes E4M3(x / scale), RNE, saturating.
// MXFP4 keys: 4 blocks of 32 values, one unit each: 16 B of packed e2m1 (value 2i in the low
// nibble) at data + 16u, one e8m0 byte at scales + u; rule, floor and rounding from the policy.
// +-inf: an FP8 key's scale comes from amax = inf (fp32 +inf, inf elements the NaN code, finite
// ones +-0; docs/engines/writers.md 2); an MXFP4 block clamps its exponent to 127 and saturates.
#pragma once

#include "dsv4/cache/formats/format_traits.hpp"

namespace dsv4::cache::formats::detail {

inline constexpr int kIndexerDim = 128;

/// 132-B FP8 indexer keys in a split page.
struct indexer_fp8_row {
  DSV4_HOST_DEVICE static constexpr int units(const format_layout& /*layout*/) { return 1; }
  DSV4_HOST_DEVICE static constexpr void quantize_unit(const format_layout& l, std::uint8_t* page, std::int64_t rows,
                                                       std::int64_t r, const bf16* in, const format_policy& p,
                                                       int /*unit*/) {
    std::uint8_t* codes = page + l.data_offset(rows, r);
    std::uint8_t* scale = page + l.scale_offset(rows, r);
    if (p.fp32_scale == fp32_scale_rule::power_of_two) {
      cache::detail::fp8_pow2_block_f32<kIndexerDim>(in, codes, scale, p);  // 2^e, NaN or +inf
      return;
    }
    const bf16_amax m = amax_bf16(in, kIndexerDim);
    if (m.has_nan && p.nan == nan_policy::propagate) {
      for (int i = 0; i < kIndexerDim; ++i) codes[i] = kE4m3NanCode;
      cache::detail::store_f32(scale, cache::detail::bits_float(cache::detail::kF32QuietNan));
      return;
    }
    const float s = (m.amax > p.fp8_amax_floor ? m.amax : p.fp8_amax_floor) / kE4m3Max;
    cache::detail::e4m3_tensor_scaled(in, kIndexerDim, s, codes);
    cache::detail::store_f32(scale, s);
  }
  template <class Out>
  DSV4_HOST_DEVICE static constexpr void dequantize_unit(const format_layout& l, const std::uint8_t* page,
                                                         std::int64_t rows, std::int64_t r, Out* out,
                                                         const format_policy& /*policy*/, int /*unit*/) {
    const float scale = cache::detail::load_f32(page + l.scale_offset(rows, r));
    cache::detail::dequantize_e4m3_block<kIndexerDim>(page + l.data_offset(rows, r), scale, out);
  }
};

/// 68-B MXFP4 indexer keys (values and scales split; the page may be larger, see the slot format).
struct indexer_mxfp4_row {
  static constexpr int kBlocks = 4;
  static constexpr int kBlock = 32;
  DSV4_HOST_DEVICE static constexpr int units(const format_layout& /*layout*/) { return kBlocks; }
  DSV4_HOST_DEVICE static constexpr void quantize_unit(const format_layout& l, std::uint8_t* page, std::int64_t rows,
                                                       std::int64_t r, const bf16* in, const format_policy& p,
                                                       int unit) {
    if (p.mxfp4_rounding == e2m1_rounding::ties_toward_zero) {
      page[l.scale_offset(rows, r) + unit] = block_ties_toward_zero(
          in + std::int64_t{unit} * kBlock, page + l.data_offset(rows, r) + std::int64_t{unit} * kBlock / 2, p);
      return;
    }
    page[l.scale_offset(rows, r) + unit] = quantize_mxfp4_block(
        in + std::int64_t{unit} * kBlock, kBlock, page + l.data_offset(rows, r) + std::int64_t{unit} * kBlock / 2,
        p.mxfp4_amax_floor, p.mxfp4_scale, p.nan);
  }
  /// One block of 32 under `e2m1_rounding::ties_toward_zero` (tokenspeed): the exponent as
  /// `quantize_mxfp4_block` picks it, codes `float_to_e2m1_ties_toward_zero(x x 2^-e)` (x x 2^-e
  /// is exact: a power-of-two scale), packed value 2i in the low nibble; a NaN block under
  /// propagate: byte 0xFF, codes 0. Returns the E8M0 byte.
  DSV4_HOST_DEVICE static constexpr std::uint8_t block_ties_toward_zero(const bf16* x, std::uint8_t* packed,
                                                                        const format_policy& p) noexcept {
    const bf16_amax m = amax_bf16(x, kBlock);
    if (m.has_nan && p.nan == nan_policy::propagate) {
      for (int i = 0; i < kBlock / 2; ++i) packed[i] = 0;
      return kE8m0NanCode;
    }
    const int e = mxfp4_scale_exponent(m.amax, p.mxfp4_amax_floor, p.mxfp4_scale);
    const float inv_scale = exp2i(-e);
    for (std::int64_t i = 0; i < kBlock / 2; ++i) {
      const std::uint8_t lo = float_to_e2m1_ties_toward_zero(bf16_to_float(x[2 * i]) * inv_scale);
      const std::uint8_t hi = float_to_e2m1_ties_toward_zero(bf16_to_float(x[2 * i + 1]) * inv_scale);
      packed[i] = static_cast<std::uint8_t>(lo | (hi << 4));
    }
    return static_cast<std::uint8_t>(e + 127);
  }
  template <class Out>
  DSV4_HOST_DEVICE static constexpr void dequantize_unit(const format_layout& l, const std::uint8_t* page,
                                                         std::int64_t rows, std::int64_t r, Out* out,
                                                         const format_policy& /*policy*/, int unit) {
    cache::detail::e2m1_dequant_scale_byte<element_type::ue8m0>(
        page + l.data_offset(rows, r) + std::int64_t{unit} * kBlock / 2, kBlock, page[l.scale_offset(rows, r) + unit],
        out + std::int64_t{unit} * kBlock);
  }
};

}  // namespace dsv4::cache::formats::detail
