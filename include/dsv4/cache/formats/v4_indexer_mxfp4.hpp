// dsv4-cache: `v4.indexer_mxfp4`, the 68-B MXFP4 indexer key of V4 (and V4.1), split page.
//
// Page of N rows: [N x 64 packed e2m1][N x 4 e8m0]; N = 64, row 1: values 64, scales 4,100;
// page 4,352. Scale 2^ceil(log2(max(amax, floor) / 6)), e clamped to [-127, 127]; codes E2M1 of
// x / 2^e, saturating. vLLM's page since PR #48993. Writers (docs/engines/writers.md 4):
// - vllm (default): floor 6 x 2^-126 (an all-zero key gets byte 0x01), hardware E2M1 RNE with
//   the sign kept (fused_compress_quant_cache.py @0de10a27, read, not run);
// - tokenspeed: floor 1e-4 (byte 0x70), thresholds `<=` (ties 0.75, 1.75, 3.5 round down), a
//   zero code written +0 (tokenspeed-kernel .../triton/deepseek_v4.py @f4d8ec6, run).
// Before 2026-12-02 this format had no floor (byte 0x00): no producer writes that.
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
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 2> writers{{
      format_writer{writer_id::vllm, format_policy{.mxfp4_amax_floor = 6.0f * 0x1p-126f},
                    "vllm-project/vllm fused_compress_quant_cache.py @0de10a27 (floor 6 x 2^-126: zero block byte "
                    "0x01; hardware E2M1 RNE)",
                    false},
      format_writer{writer_id::tokenspeed,
                    format_policy{.mxfp4_amax_floor = 1e-4f, .mxfp4_rounding = e2m1_rounding::ties_toward_zero},
                    "lightseekorg/tokenspeed deepseek_v4_ops.py @f4d8ec6 (floor 1e-4: zero block byte 0x70; ties "
                    "toward zero, +0)",
                    true},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
};

}  // namespace dsv4::cache::formats
