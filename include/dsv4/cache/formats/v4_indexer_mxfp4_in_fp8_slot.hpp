// dsv4-cache: `v4.indexer_mxfp4_in_fp8_slot`, vLLM's MXFP4 indexer key in a 132-B FP8 slot.
//
// Before vLLM PR #48993 (merged 2026-07-17) the MXFP4 indexer page was allocated at the FP8 size
// N x 132 while the writer placed 64 B of values at r x 64 and 4 e8m0 bytes at N x 64 + r x 4;
// bytes [68N, 132N) are never used. N = 64, row 1: values 64, scales 4,100; page 8,448 (4,352
// used). Scale 2^ceil(log2(amax / 6)), e clamped to [-127, 127], amax floored at 6 x 2^-126 (an
// all-zero key gets byte 1). For reading caches of those versions (decode), and for sizing them.
// Source: vllm-project/vllm fused_compress_quant_cache.py
// (_fused_kv_compress_norm_rope_insert_indexer_mxfp4_attn) before PR #48993.
#pragma once

#include "dsv4/cache/formats/indexer_rows.hpp"

namespace dsv4::cache::formats {

/// `v4.indexer_mxfp4_in_fp8_slot`: see the top of this file.
struct v4_indexer_mxfp4_in_fp8_slot : detail::indexer_mxfp4_row {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v4.indexer_mxfp4_in_fp8_slot",
      .model = model_family::v4,
      .role = format_role::indexer_k,
      .source = "vllm-project/vllm fused_compress_quant_cache.py before PR #48993",
      .rule = page_rule::split,
      .alignment = 0,
      .row_bytes = 132,
      .data_bytes = 64,
      .scale_bytes = 4,
      .rope_offset_in_data = -1,
      .values = 128,
      .data = {element_type::e2m1, 128, 0},
      .scales = {element_type::ue8m0, 4, 32},
      .rope = {},
  };
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 1> writers{{
      format_writer{writer_id::vllm, format_policy{.mxfp4_amax_floor = 6.0f * 0x1p-126f},
                    "vllm-project/vllm fused_compress_quant_cache.py before PR #48993", false},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
};

}  // namespace dsv4::cache::formats
