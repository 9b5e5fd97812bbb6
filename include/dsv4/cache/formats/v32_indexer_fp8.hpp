// dsv4-cache: `v3.2.indexer_fp8`, DeepSeek V3.2's 132-B FP8 indexer key, split page.
//
// Page of N = 64 rows: [N x 128 e4m3][N x 4 fp32]; row 1: values 128, scale 8,196; page 8,448.
// Scale max(amax, 1e-4) / 448, rounded up to a power of two (ue8m0; all-zero key 2^-22), or
// stored as is with `fp32_scale_rule::legacy_amax` (use_ue8m0 off). Same bytes as
// `v4.indexer_fp8` under the default policy; a separate name because the model family differs.
// Source: vllm-project/vllm `indexer_k_quant_and_cache` (csrc/cache_kernels.cu).
#pragma once

#include "dsv4/cache/formats/indexer_rows.hpp"

namespace dsv4::cache::formats {

/// `v3.2.indexer_fp8`: see the top of this file.
struct v32_indexer_fp8 : detail::indexer_fp8_row {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v3.2.indexer_fp8",
      .model = model_family::v3_2,
      .role = format_role::indexer_k,
      .source = "vllm-project/vllm indexer_k_quant_and_cache (csrc/cache_kernels.cu)",
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
  static constexpr format_policy default_policy{};
};

}  // namespace dsv4::cache::formats
