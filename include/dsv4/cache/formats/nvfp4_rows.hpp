// dsv4-cache: the NVFP4-style block of the V4 FP4 main-KV rows: 16 values, one E4M3 scale.
//
// scale byte = E4M3(amax / 6), RNE, saturating at 448, no global scale; a block whose amax / 6
// rounds to E4M3 zero (amax / 6 <= 2^-10, the all-zero block included) gets byte 0x00 and zero
// codes; codes = E2M1(x / E4M3(byte)) with an IEEE float division, RNE, saturating at +-6.
// A NaN in a block under nan_policy::propagate: scale byte 0x7F (E4M3 NaN) and zero codes.
// Source: flashinfer-ai/flashinfer PR #4955 (FlashInfer main's NVFP4 KV writer).
#pragma once

#include "dsv4/cache/formats/format_traits.hpp"

namespace dsv4::cache::formats::detail {

inline constexpr int kNvfp4Block = 16;

/// The scale byte of a block: E4M3(amax / 6), RNE, saturating (amax a BF16 value, not NaN).
struct nvfp4_scale_rule {
  DSV4_HOST_DEVICE static constexpr std::uint8_t scale_byte(float amax) noexcept {
    return float_to_e4m3(amax / kE2m1Max);
  }
};

/// Quantizes 16 BF16 values to 8 packed E2M1 bytes; returns the E4M3 scale byte.
DSV4_HOST_DEVICE constexpr std::uint8_t nvfp4_block(const bf16* x, std::uint8_t* codes,
                                                    const format_policy& p) noexcept {
  const bf16_amax m = amax_bf16(x, kNvfp4Block);
  if (m.has_nan && p.nan == nan_policy::propagate) {
    for (int i = 0; i < kNvfp4Block / 2; ++i) codes[i] = 0;
    return kE4m3NanCode;
  }
  const std::uint8_t byte = cache::detail::scale_byte_of_amax<nvfp4_scale_rule>(m.amax);
  cache::detail::e2m1_pack_e4m3_divided(x, kNvfp4Block, byte, codes);
  return byte;
}

/// The per-unit work of the V4 NVFP4 main-KV rows (`v4.nvfp4_kv`: 28 blocks, `v4.nvfp4_kv432`:
/// 32). Units 0..Blocks-1: block u of 16 values into its 8 code bytes at data + 8u and its scale
/// byte at scales + u. Unit Blocks: the 64 RoPE values (448..511) as BF16 at the layout's
/// `rope_offset_in_data`, and zeros in the scale bytes Blocks..scale_bytes-1. Dequantize: values
/// 0..447 from the codes of the 28 NoPE blocks, 448..511 from the exact BF16 copy (FP4 codes of
/// the RoPE dims, where a row has them, are not read). A format derives from it and adds `layout`.
template <int Blocks>
struct nvfp4_rope_units {
  using input_type = bf16;
  static constexpr int kBlocks = Blocks;
  static constexpr int kNopeBlocks = 448 / kNvfp4Block;

  DSV4_HOST_DEVICE static constexpr int units(const format_layout& /*layout*/) { return kBlocks + 1; }
  DSV4_HOST_DEVICE static constexpr void quantize_unit(const format_layout& l, std::uint8_t* page, std::int64_t rows,
                                                       std::int64_t r, const bf16* in, const format_policy& p,
                                                       int unit) {
    std::uint8_t* data = page + l.data_offset(rows, r);
    std::uint8_t* scales = page + l.scale_offset(rows, r);
    if (unit == kBlocks) {
      cache::detail::copy_bf16_out(data + l.rope_offset_in_data, in + 448, 64);
      for (std::int64_t i = kBlocks; i < l.scale_bytes; ++i) scales[i] = 0;
      return;
    }
    scales[unit] = nvfp4_block(in + std::int64_t{unit} * kNvfp4Block, data + std::int64_t{unit} * kNvfp4Block / 2, p);
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
    if (unit >= kNopeBlocks) return;
    cache::detail::e2m1_dequant_scale_byte<element_type::e4m3>(data + std::int64_t{unit} * kNvfp4Block / 2, kNvfp4Block,
                                                               page[l.scale_offset(rows, r) + unit],
                                                               out + std::int64_t{unit} * kNvfp4Block);
  }
};

}  // namespace dsv4::cache::formats::detail
