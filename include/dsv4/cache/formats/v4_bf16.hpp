// dsv4-cache: `v4.bf16`, the 1,024-B BF16 row of V4 (512 bf16, RoPE dims 448..511 at byte 896).
//
// Page: N x 1,024 row-major, no padding (N = 64: row 1 at 1,024, its RoPE at 1,920; page 65,536).
// Sources: TensorRT-LLM deepseek_v4.py get_token_bytes (bf16); vLLM FlashInfer; SGLang ROCm BF16.
#pragma once

#include "dsv4/cache/formats/plain_rows.hpp"

namespace dsv4::cache::formats {

/// `v4.bf16`: see the top of this file.
struct v4_bf16 : detail::plain_bf16_row {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v4.bf16",
      .model = model_family::v4,
      .role = format_role::main_kv,
      .source = "NVIDIA/TensorRT-LLM deepseek_v4.py get_token_bytes; vLLM FlashInfer BF16 KV",
      .rule = page_rule::interleaved,
      .alignment = 0,
      .row_bytes = 1024,
      .data_bytes = 1024,
      .scale_bytes = 0,
      .rope_offset_in_data = 896,
      .values = 512,
      .data = {element_type::bf16, 448, 0},
      .scales = {},
      .rope = {element_type::bf16, 64, 0},
  };
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 1> writers{{
      format_writer{writer_id::trtllm, format_policy{}, "NVIDIA/TensorRT-LLM deepseek_v4.py (bf16 KV, a copy)", false},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
};

}  // namespace dsv4::cache::formats
