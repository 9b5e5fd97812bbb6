// dsv4-cache: `v3.2.indexer_fp8`, DeepSeek V3.2's 132-B FP8 indexer key, split page.
//
// Page of N = 64 rows: [N x 128 e4m3][N x 4 fp32]; row 1: values 128, scale 8,196; page 8,448.
// Scale max(amax, 1e-4) / 448, rounded up to a power of two (ue8m0; all-zero key 2^-22), or
// stored as is with `fp32_scale_rule::legacy_amax` (use_ue8m0 off). Same bytes as
// `v4.indexer_fp8` under the default policy; a separate name because the model family differs.
// Source: vllm-project/vllm `indexer_k_quant_and_cache` (csrc/cache_kernels.cu).
#pragma once

#include "dsv4/cache/formats/v4_indexer_fp8.hpp"

namespace dsv4::cache::formats {

/// `v3.2.indexer_fp8`: see the top of this file.
struct v32_indexer_fp8 : v4_indexer_fp8 {
  static constexpr format_layout layout = [] {
    format_layout l = v4_indexer_fp8::layout;  // the same row and page; another model family
    l.name = "v3.2.indexer_fp8";
    l.model = model_family::v3_2;
    l.source = "vllm-project/vllm indexer_k_quant_and_cache (csrc/cache_kernels.cu)";
    return l;
  }();
  /// Its writer (vLLM's; tokenspeed's V4 writer is not used for V3.2).
  static constexpr std::array<format_writer, 1> writers{{
      format_writer{writer_id::vllm, format_policy{.fp8_amax_floor = 1e-4f},
                    "vllm-project/vllm csrc/cache_kernels.cu indexer_k_quant_and_cache @9d7beab9 (zero key 2^-22)",
                    true},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
};

}  // namespace dsv4::cache::formats
