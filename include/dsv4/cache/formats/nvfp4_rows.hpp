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

/// Quantizes 16 BF16 values to 8 packed E2M1 bytes; returns the E4M3 scale byte.
DSV4_HOST_DEVICE constexpr std::uint8_t nvfp4_block(const bf16* x, std::uint8_t* codes,
                                                    const format_policy& p) noexcept {
  const bf16_amax m = amax_bf16(x, kNvfp4Block);
  if (m.has_nan && p.nan == nan_policy::propagate) {
    for (int i = 0; i < kNvfp4Block / 2; ++i) codes[i] = 0;
    return kE4m3NanCode;
  }
  const std::uint8_t byte = float_to_e4m3(m.amax / kE2m1Max);
  cache::detail::e2m1_pack_divided(x, kNvfp4Block, e4m3_to_float(byte), codes);
  return byte;
}

}  // namespace dsv4::cache::formats::detail
