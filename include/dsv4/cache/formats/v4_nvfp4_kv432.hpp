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
struct v4_nvfp4_kv432 : detail::nvfp4_rope_units<32> {
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
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 1> writers{{
      format_writer{writer_id::vllm, format_policy{}, "local-inference-lab/vllm PR #632 nvfp4_ds_mla.py (a vLLM fork)",
                    false},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
};

}  // namespace dsv4::cache::formats
