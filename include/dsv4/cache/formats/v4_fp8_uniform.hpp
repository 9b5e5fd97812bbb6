// dsv4-cache: `v4.fp8_uniform`, the 512-B per-tensor FP8 row of V4 (no block scales).
//
// Row: the 512-dim post-RoPE latent cast to E4M3 with one per-tensor scale (1.0 in SGLang and
// vLLM): [448 e4m3 NoPE | 64 e4m3 RoPE]. No ue8m0 scales, no bf16 RoPE, no 576 padding: the
// page is N x 512 row-major (N = 64: row 1 at 512, its RoPE at 960; page 32,768). SGLang's
// handshake cannot tell these pages from 584-B ones; the library can.
// Sources: sgl-project/sglang DeepSeekV4UniformFP8KVPool (trtllm backend); vLLM FlashInfer
// plain-row path (`_flashinfer_fp8_kv_scale = 1.0`); TensorRT-LLM deepseek_v4.py get_token_bytes.
#pragma once

#include "dsv4/cache/formats/plain_rows.hpp"

namespace dsv4::cache::formats {

/// `v4.fp8_uniform`: see the top of this file.
struct v4_fp8_uniform : detail::plain_e4m3_row {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v4.fp8_uniform",
      .model = model_family::v4,
      .role = format_role::main_kv,
      .source = "sgl-project/sglang DeepSeekV4UniformFP8KVPool; vLLM FlashInfer plain-row FP8",
      .rule = page_rule::interleaved,
      .alignment = 0,
      .row_bytes = 512,
      .data_bytes = 512,
      .scale_bytes = 0,
      .rope_offset_in_data = 448,
      .values = 512,
      .data = {element_type::e4m3, 448, 0},
      .scales = {},
      .rope = {element_type::e4m3, 64, 0},
  };
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 1> writers{{
      format_writer{writer_id::sglang, format_policy{},
                    "sgl-project/sglang DeepSeekV4UniformFP8KVPool (per-tensor scale 1.0)", false},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
};

}  // namespace dsv4::cache::formats
