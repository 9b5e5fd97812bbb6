// dsv4-cache: `v3.2.bf16`, DeepSeek V3.2's 1,152-B BF16 latent row (576 bf16, RoPE at byte 1,024).
//
// Page: N x 1,152 row-major (N = 64: row 1 at 1,152, RoPE at 2,176; page 73,728).
// Source: vLLM / FlashInfer MLA backends (bf16 KV cache).
#pragma once

#include "dsv4/cache/formats/plain_rows.hpp"

namespace dsv4::cache::formats {

/// `v3.2.bf16`: see the top of this file.
struct v32_bf16 : detail::plain_bf16_row {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v3.2.bf16",
      .model = model_family::v3_2,
      .role = format_role::main_kv,
      .source = "vllm-project/vllm and flashinfer MLA backends (bf16 KV cache)",
      .rule = page_rule::interleaved,
      .alignment = 0,
      .row_bytes = 1152,
      .data_bytes = 1152,
      .scale_bytes = 0,
      .rope_offset_in_data = 1024,
      .values = 576,
      .data = {element_type::bf16, 512, 0},
      .scales = {},
      .rope = {element_type::bf16, 64, 0},
  };
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 1> writers{{
      format_writer{writer_id::vllm, format_policy{}, "vllm-project/vllm MLA backends (bf16 KV, a copy)", false},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
};

}  // namespace dsv4::cache::formats
