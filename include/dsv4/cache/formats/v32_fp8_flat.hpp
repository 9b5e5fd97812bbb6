// dsv4-cache: `v3.2.fp8_flat`, DeepSeek V3.2's 576-B per-tensor FP8 latent row.
//
// Row: [512 e4m3 latent | 64 e4m3 RoPE], one per-tensor scale (default 1.0), no block scales.
// Page: N x 576 row-major (N = 64: row 1 at 576, RoPE at 1,088; page 36,864).
// Source: vLLM / FlashInfer dense MLA backends (trtllm-gen, cute-dsl).
#pragma once

#include "dsv4/cache/formats/plain_rows.hpp"

namespace dsv4::cache::formats {

/// `v3.2.fp8_flat`: see the top of this file.
struct v32_fp8_flat : detail::plain_e4m3_row {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v3.2.fp8_flat",
      .model = model_family::v3_2,
      .role = format_role::main_kv,
      .source = "vllm-project/vllm and flashinfer dense MLA backends (trtllm-gen, cute-dsl) FP8 KV",
      .rule = page_rule::interleaved,
      .alignment = 0,
      .row_bytes = 576,
      .data_bytes = 576,
      .scale_bytes = 0,
      .rope_offset_in_data = 512,
      .values = 576,
      .data = {element_type::e4m3, 512, 0},
      .scales = {},
      .rope = {element_type::e4m3, 64, 0},
  };
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 1> writers{{
      format_writer{writer_id::vllm, format_policy{}, "vllm-project/vllm dense MLA FP8 KV (per-tensor scale 1.0)",
                    false},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
};

}  // namespace dsv4::cache::formats
