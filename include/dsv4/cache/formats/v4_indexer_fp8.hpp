// dsv4-cache: `v4.indexer_fp8`, V4's 132-B FP8 indexer key (CSA layers), split page.
//
// Page of N rows: [N x 128 e4m3][N x 4 fp32 scale]; N = 64, row 1: values 128, scale 8,196;
// page 8,448. Scale rule in indexer_rows.hpp (power of two). Writers (docs/engines/writers.md 3): vllm
// (default) floors amax at 1e-4 (an all-zero key 2^-22); tokenspeed floors amax / 448 at 1e-10
// (2^-33, `fp8_amax_floor = 4.48e-8f`: the same exponent; deepseek_v4_ops.py @f4d8ec6).
// Sources: tokenspeed deepseek_v4_cache_spec.py (the seed); DeepSeek V4 reference indexer; docs/facts.md.
#pragma once

#include "dsv4/cache/formats/indexer_rows.hpp"

namespace dsv4::cache::formats {

/// `v4.indexer_fp8`: see the top of this file.
struct v4_indexer_fp8 : detail::indexer_fp8_row {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v4.indexer_fp8",
      .model = model_family::v4,
      .role = format_role::indexer_k,
      .source = "lightseekorg/tokenspeed deepseek_v4_cache_spec.py; DeepSeek V4 reference indexer",
      .rule = page_rule::split,
      .alignment = 0,
      .row_bytes = 132,
      .data_bytes = 128,
      .scale_bytes = 4,
      .rope_offset_in_data = -1,
      .values = 128,
      .data = {element_type::e4m3, 128, 0},
      .scales = {element_type::fp32, 1, 128},
      .rope = {},
  };
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 2> writers{{
      format_writer{writer_id::vllm, format_policy{.fp8_amax_floor = 1e-4f},
                    "vllm-project/vllm csrc/cache_kernels.cu indexer_k_quant_and_cache @9d7beab9 (zero key 2^-22)",
                    true},
      format_writer{
          writer_id::tokenspeed, format_policy{.fp8_amax_floor = 4.48e-8f},
          "lightseekorg/tokenspeed deepseek_v4_ops.py @f4d8ec6 (floor on amax / 448 at 1e-10: zero key 2^-33)", true},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
};

}  // namespace dsv4::cache::formats
