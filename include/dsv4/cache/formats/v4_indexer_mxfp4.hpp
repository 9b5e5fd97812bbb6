// dsv4-cache: `v4.indexer_mxfp4`, the 68-B MXFP4 indexer key of V4 (and V4.1), split page.
//
// Page of N rows: [N x 64 packed e2m1][N x 4 e8m0]; N = 64, row 1: values 64, scales 4,100;
// page 4,352. Scale 2^ceil(log2(amax / 6)), e clamped to [-127, 127], no amax floor (an
// all-zero key gets byte 0); codes E2M1 RNE, saturating. vLLM's page since PR #48993.
// Sources: tokenspeed deepseek_v4_cache_spec.py; vllm-project/vllm PR #48993; SGLang
// deepseek_v4_memory_pool.py.
#pragma once

#include "dsv4/cache/formats/indexer_rows.hpp"

namespace dsv4::cache::formats {

/// `v4.indexer_mxfp4`: see the top of this file.
struct v4_indexer_mxfp4 : detail::indexer_mxfp4_row {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v4.indexer_mxfp4",
      .model = model_family::v4,
      .role = format_role::indexer_k,
      .source = "lightseekorg/tokenspeed deepseek_v4_cache_spec.py; vllm-project/vllm PR #48993",
      .rule = page_rule::split,
      .alignment = 0,
      .row_bytes = 68,
      .data_bytes = 64,
      .scale_bytes = 4,
      .rope_offset_in_data = -1,
      .values = 128,
      .data = {element_type::e2m1, 128, 0},
      .scales = {element_type::ue8m0, 4, 32},
      .rope = {},
  };
  static constexpr format_policy default_policy{};
};

}  // namespace dsv4::cache::formats
