// dsv4-cache: the per-unit work of the indexer key formats (d = 128 values per key).
//
// FP8 keys (132 B): [N x 128 e4m3][N x 4 fp32 scale], one block of 128 values, one unit. The
// scale is 2^e with e = ceil(log2(max(amax, 1e-4) / 448)) (all-zero key 2^-22), stored as a
// little-endian fp32; `fp32_scale_rule::legacy_amax` stores max(amax, 1e-4) / 448 as is (vLLM's
// `indexer_k_quant_and_cache` with use_ue8m0 off). Codes E4M3(x / scale), RNE, saturating.
// MXFP4 keys: 4 blocks of 32 values, one unit each: 16 B of packed e2m1 (value 2i in the low
// nibble) at data + 16u, one e8m0 byte at scales + u; rule and floor from the policy.
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
      const std::uint8_t byte = cache::detail::fp8_pow2_block<kIndexerDim>(in, codes, p);
      cache::detail::store_f32(scale, e8m0_to_float(byte));  // 2^e, or NaN
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
    page[l.scale_offset(rows, r) + unit] = quantize_mxfp4_block(
        in + std::int64_t{unit} * kBlock, kBlock, page + l.data_offset(rows, r) + std::int64_t{unit} * kBlock / 2,
        p.mxfp4_amax_floor, p.mxfp4_scale, p.nan);
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
