// dsv4-cache: the row codecs cut into 8-value chunks, the unit of work of one GPU lane.
//
// The CUDA kernels (cuda/kernels.cuh) give each lane 8 consecutive BF16 values (one 16 B
// load) and combine the lanes of a scale block with warp shuffles. This header is that
// per-lane arithmetic, host and device, so that the decomposition can be tested on the host
// against the row codecs (tests/chunk_codec_test.cpp) and the kernels stay bit-identical to
// them:
//
//   row codec (row_codec.hpp)                    chunked (here)
//   amax_bf16(block)                             max over the block's chunks of chunk_amax(chunk)
//   quantize_fp8_block(block) -> byte, codes     quantize_e4m3_chunk(chunk, block amax) per chunk
//   quantize_mxfp4_block(block) -> byte, codes   quantize_e2m1_chunk(chunk, block amax) per chunk
//   e4m3_to_float(q) x scale                     dequantize_e4m3_chunk(codes, scale)
//
// It is bit-exact by construction: the block amax is an integer max of the values' sign-less
// BF16 bits (order-independent, so a shuffle tree gives the row codec's value), and every
// element goes through the same scalar functions (scalar_codec.hpp) and the same exponent
// helpers (`scale_exponent_for_amax`, `mxfp4_scale_exponent`) with the same NaN policy.
// Standard library only.
#pragma once

#include <cstdint>

#include "dsv4/cache/platform.hpp"
#include "dsv4/cache/row_codec.hpp"
#include "dsv4/cache/scalar_codec.hpp"

namespace dsv4::cache {

/// Values per chunk: one 16 B load of BF16.
inline constexpr int kChunkValues = 8;

/// Eight BF16 values as four little-endian 32-bit words (value 2i in the low half of word i):
/// the register image of a 16 B (`uint4`) load.
struct bf16x8 {
  std::uint32_t w[4];
  /// Value i (0..7).
  [[nodiscard]] DSV4_HOST_DEVICE constexpr bf16 at(int i) const {
    return bf16{static_cast<std::uint16_t>(w[i / 2] >> (16 * (i % 2)))};
  }
};

/// Partial amax of a block as `amax_bf16` keeps it: the max of the sign-less BF16 bits over
/// all values (`all`, above 0x7F80 iff a NaN was seen) and over the non-NaN ones (`finite`).
/// Integer maxima: combine partials in any order and the result is the row codec's.
struct amax_bits {
  std::uint32_t all = 0;
  std::uint32_t finite = 0;

  /// The block's amax without NaN, as a float (what `amax_bf16` returns in `amax`).
  [[nodiscard]] DSV4_HOST_DEVICE constexpr float amax() const {
    return bf16_to_float(bf16{static_cast<std::uint16_t>(finite)});
  }
  /// Whether the block holds a NaN.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr bool has_nan() const { return all > 0x7F80U; }
};

/// The max of two partials (commutative and associative).
DSV4_HOST_DEVICE constexpr amax_bits combine(amax_bits a, amax_bits b) {
  return {a.all > b.all ? a.all : b.all, a.finite > b.finite ? a.finite : b.finite};
}

/// Partial amax of one chunk, as `amax_bf16` computes it per value.
DSV4_HOST_DEVICE constexpr amax_bits chunk_amax(const bf16x8& x) {
  amax_bits m;
  for (int i = 0; i < kChunkValues; ++i) {
    const std::uint32_t a = x.at(i).bits & 0x7FFFU;
    m.all = a > m.all ? a : m.all;
    const std::uint32_t f = a <= 0x7F80U ? a : 0U;
    m.finite = f > m.finite ? f : m.finite;
  }
  return m;
}

/// One chunk of an E4M3 block (fp8_ds_mla: 64 values = 8 chunks; indexer FP8: 128 = 16 chunks),
/// given the whole block's amax. Writes the 8 codes to `codes` (little-endian: code i in byte
/// i % 4 of word i / 4) and returns the block's E8M0 scale byte, exactly as
/// `quantize_fp8_block(block, n, out, amax_floor, nan)` does for these 8 values.
DSV4_HOST_DEVICE constexpr std::uint8_t quantize_e4m3_chunk(const bf16x8& x, amax_bits block, float amax_floor,
                                                            nan_policy nan, std::uint32_t (&codes)[2]) {
  if (block.has_nan() && nan == nan_policy::propagate) {
    codes[0] = codes[1] = 0x7F7F7F7FU;  // kE4m3NanCode in every byte
    return kE8m0NanCode;
  }
  codes[0] = codes[1] = 0;
  if (block.finite == 0x7F80U) {  // amax +-inf: scale inf, inf and NaN elements 0x7F, finite ones +-0
    for (int i = 0; i < kChunkValues; ++i) {
      const std::uint32_t b = x.at(i).bits;
      const std::uint32_t q = (b & 0x7FFFU) >= 0x7F80U ? kE4m3NanCode : (b >> 8) & 0x80U;
      codes[i / 4] |= q << (8 * (i % 4));
    }
    return kE8m0NanCode;
  }
  const int e = scale_exponent_for_amax(block.amax(), kE4m3Max, amax_floor);
  const float inv_scale = exp2i(-e);
  for (int i = 0; i < kChunkValues; ++i) {
    const std::uint32_t q = float_to_e4m3(bf16_to_float(x.at(i)) * inv_scale);
    codes[i / 4] |= q << (8 * (i % 4));
  }
  return static_cast<std::uint8_t>(e + 127);
}

/// One chunk of an MXFP4 block (32 values = 4 chunks), given the whole block's amax. Returns
/// the 4 packed bytes (value 2i in the low nibble of byte i, byte i in bits 8i..8i+7) in
/// `packed` and the block's E8M0 byte, exactly as `quantize_mxfp4_block(block, 32, out,
/// amax_floor, rule, nan)` does for these 8 values.
DSV4_HOST_DEVICE constexpr std::uint8_t quantize_e2m1_chunk(const bf16x8& x, amax_bits block, float amax_floor,
                                                            mxfp4_scale_rule rule, nan_policy nan,
                                                            std::uint32_t& packed) {
  packed = 0;
  if (block.has_nan() && nan == nan_policy::propagate) return kE8m0NanCode;  // codes 0
  const int e = mxfp4_scale_exponent(block.amax(), amax_floor, rule);
  const float inv_scale = exp2i(-e);
  for (int i = 0; i < kChunkValues; ++i) {
    const std::uint32_t q = float_to_e2m1(bf16_to_float(x.at(i)) * inv_scale);
    packed |= q << (4 * i);  // byte i / 2, low nibble for even i
  }
  return static_cast<std::uint8_t>(e + 127);
}

/// Dequantizes 8 E4M3 codes (code i in byte i % 4 of word i / 4) with the block's fp32 scale:
/// out[i] = canonical_nan(e4m3_to_float(code i) x scale), as the row dequantizers do (a GPU
/// returns 0x7FFFFFFF for any NaN product, x86 an operand's payload: both become 0x7FC00000).
DSV4_HOST_DEVICE constexpr void dequantize_e4m3_chunk(const std::uint32_t (&codes)[2], float scale, float (&out)[8]) {
  for (int i = 0; i < kChunkValues; ++i)
    out[i] = canonical_nan(e4m3_to_float(static_cast<std::uint8_t>(codes[i / 4] >> (8 * (i % 4)))) * scale);
}

/// Dequantizes 4 packed E2M1 bytes (8 values) with the block's fp32 scale:
/// out[i] = canonical_nan(e2m1_to_float(nibble i) x scale), as `dequantize_indexer_row` does.
DSV4_HOST_DEVICE constexpr void dequantize_e2m1_chunk(std::uint32_t packed, float scale, float (&out)[8]) {
  for (int i = 0; i < kChunkValues; ++i)
    out[i] = canonical_nan(e2m1_to_float(static_cast<std::uint8_t>((packed >> (4 * i)) & 0xFU)) * scale);
}

/// The fp32 scale bits stored by an FP8 indexer key for E8M0 byte `byte` of a block `block`
/// under `nan`: `fp8_block_fp32_scale` (2^(byte - 127); for 0xFF NaN if the block held a NaN
/// under propagate, else +inf).
DSV4_HOST_DEVICE constexpr std::uint32_t indexer_fp8_scale_bits(std::uint8_t byte, amax_bits block, nan_policy nan) {
  return detail::float_bits(fp8_block_fp32_scale(byte, block.has_nan() && nan == nan_policy::propagate));
}

/// Packs 8 floats as BF16 (round to nearest even, as the row dequantizers' BF16 output) into
/// four words, value 2i in the low half of word i.
DSV4_HOST_DEVICE constexpr bf16x8 pack_bf16x8(const float (&v)[8]) {
  bf16x8 r{};
  for (int i = 0, j = 0; i < 4; ++i, j += 2)
    r.w[i] = static_cast<std::uint32_t>(float_to_bf16(v[j]).bits) |
             (static_cast<std::uint32_t>(float_to_bf16(v[j + 1]).bits) << 16);
  return r;
}

/// Unpacks 8 BF16 values to floats (exact).
DSV4_HOST_DEVICE constexpr void unpack_bf16x8(const bf16x8& x, float (&out)[8]) {
  for (int i = 0; i < kChunkValues; ++i) out[i] = bf16_to_float(x.at(i));
}

}  // namespace dsv4::cache
