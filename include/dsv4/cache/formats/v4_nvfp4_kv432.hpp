// dsv4-cache: `v4.nvfp4_kv432`, the 432-B NVFP4 row of V4 (a vLLM fork), interleaved.
//
// Row (N x 432, no padding):
//   [0, 256)    512 e2m1, ALL dims including RoPE (value 2i in the low nibble of byte i)
//   [256, 288)  32 e4m3 scales, one per 16 values
//   [288, 304)  16 zero bytes
//   [304, 432)  64 bf16 RoPE (the RoPE dims again, unquantized)
// N = 64, row 1: data 432, scales 688, RoPE 736; page 27,648.
// Scale: E4M3(max(amax / 6, FLT_MIN)), RNE, saturating; a block whose scale rounds to E4M3 zero
// gets zero codes (the producer divides by the scale; its zero case is not shown, so this is the
// same rule as v4.nvfp4_kv, nvfp4_rows.hpp). FLT_MIN only keeps amax / 6 nonzero, which E4M3
// rounds to zero anyway, so the two V4 NVFP4 scale rules give the same bytes.
// Source: local-inference-lab/vllm PR #632 (open), producer nvfp4_ds_mla.py.
#pragma once

#include "dsv4/cache/formats/nvfp4_rows.hpp"

namespace dsv4::cache::formats {

/// `v4.nvfp4_kv432`: see the top of this file.
struct v4_nvfp4_kv432 {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v4.nvfp4_kv432",
      .model = model_family::v4,
      .role = format_role::main_kv,
      .source = "local-inference-lab/vllm PR #632, nvfp4_ds_mla.py",
      .rule = page_rule::interleaved,
      .alignment = 0,
      .row_bytes = 432,
      .data_bytes = 256,
      .scale_bytes = 48,
      .rope_offset_in_data = 304,
      .values = 512,
      .data = {element_type::e2m1, 512, 0},
      .scales = {element_type::e4m3, 32, 16},
      .rope = {element_type::bf16, 64, 0},
  };
  static constexpr format_policy default_policy{};
  static constexpr int kBlocks = 32;

  DSV4_HOST_DEVICE static constexpr int units(const format_layout& /*layout*/) { return kBlocks + 1; }
  DSV4_HOST_DEVICE static constexpr void quantize_unit(const format_layout& l, std::uint8_t* page, std::int64_t rows,
                                                       std::int64_t r, const bf16* in, const format_policy& p,
                                                       int unit) {
    std::uint8_t* data = page + l.data_offset(rows, r);
    std::uint8_t* scales = page + l.scale_offset(rows, r);
    if (unit == kBlocks) {
      for (int i = kBlocks; i < 48; ++i) scales[i] = 0;
      cache::detail::copy_bf16_out(data + l.rope_offset_in_data, in + 448, 64);
      return;
    }
    scales[unit] = detail::nvfp4_block(in + std::int64_t{unit} * detail::kNvfp4Block,
                                       data + std::int64_t{unit} * detail::kNvfp4Block / 2, p);
  }
  /// Values 0..447 from their e2m1 codes, values 448..511 from the exact bf16 RoPE copy (the
  /// FP4 codes of the RoPE dims, units 28..31, are not read).
  template <class Out>
  DSV4_HOST_DEVICE static constexpr void dequantize_unit(const format_layout& l, const std::uint8_t* page,
                                                         std::int64_t rows, std::int64_t r, Out* out,
                                                         const format_policy& /*policy*/, int unit) {
    const std::uint8_t* data = page + l.data_offset(rows, r);
    if (unit == kBlocks) {
      cache::detail::copy_bf16_in(data + l.rope_offset_in_data, out + 448, 64);
      return;
    }
    if (unit >= 28) return;
    const float scale = e4m3_to_float(page[l.scale_offset(rows, r) + unit]);
    cache::detail::e2m1_dequant(data + std::int64_t{unit} * detail::kNvfp4Block / 2, detail::kNvfp4Block, scale,
                                out + std::int64_t{unit} * detail::kNvfp4Block);
  }
};

}  // namespace dsv4::cache::formats
