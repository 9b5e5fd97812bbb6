// dsv4-cache: `v4.fp8_ds_mla.footer`, TensorRT-LLM's footer-scale page of V4 584-B rows.
//
// Row as `v4.fp8_ds_mla`: [448 e4m3 NoPE | 64 bf16 RoPE] + [7 ue8m0 | 1 pad], but the page is
// NOT padded: [N x 576][N x 8] = N x 584 (N = 64: scales of row 1 at 36,872, page 37,376, where
// FlashMLA's is 37,440). The pad byte is never written (the writer leaves whatever the page
// held; a fresh page is zero). Scale: amax floor 1e-8 and e = ceil(log2f(amax / 448)) in float
// math (all-zero block byte 92); values saturate at +-448.
// Source: NVIDIA/TensorRT-LLM tensorrt_llm/_torch/attention_backend/sparse/deepseek_v4/
// footer_scale_kv.py @2535fa5f.
#pragma once

#include "dsv4/cache/formats/v4_fp8_ds_mla.hpp"

namespace dsv4::cache::formats {

/// `v4.fp8_ds_mla.footer`: see the top of this file.
struct v4_fp8_ds_mla_footer : detail::v4_fp8_row<false> {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v4.fp8_ds_mla.footer",
      .model = model_family::v4,
      .role = format_role::main_kv,
      .source = "NVIDIA/TensorRT-LLM _torch/attention_backend/sparse/deepseek_v4/footer_scale_kv.py @2535fa5f",
      .rule = page_rule::split,
      .alignment = 0,
      .row_bytes = 584,
      .data_bytes = 576,
      .scale_bytes = 8,
      .rope_offset_in_data = 448,
      .values = 512,
      .data = {element_type::e4m3, 448, 0},
      .scales = {element_type::ue8m0, 7, 64},
      .rope = {element_type::bf16, 64, 0},
  };
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 1> writers{{
      format_writer{writer_id::trtllm, format_policy{.fp8_amax_floor = 1e-8f, .fp8_exp = fp8_exponent::float_log2_ceil},
                    "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/attention_backend/sparse/deepseek_v4/footer_scale_kv.py "
                    "@2535fa5f (zero block byte 92)",
                    true},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
};

}  // namespace dsv4::cache::formats
