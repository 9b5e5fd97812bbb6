// dsv4-cache: `v4.nvfp4_kv`, the 384-B NVFP4 main-KV row of V4 in FlashInfer's split page.
//
// Page of N rows:
//   [0, N x 352)          data, row r at r x 352: [224 B e2m1 NoPE (448 values) | 128 B bf16 RoPE]
//   [N x 352, N x 384)    scales, row r at N x 352 + r x 32: [28 e4m3 (one per 16 NoPE values) | 4 zero]
// page stride >= N x 384 and a multiple of 16 (N = 64, row 1: data 352, RoPE 576, scales 22,560;
// page 24,576). Scale rule in nvfp4_rows.hpp: layout-variants section 2.5 left its clamp and
// zero block unconfirmed; section 7 found them in FlashInfer main (PR #4955's code), which this
// follows. The 4 trailing scale bytes are written as zero.
// Sources: flashinfer-ai/flashinfer PR #4955 (merged 2026-09-04); sgl-project/sglang PR #38646.
#pragma once

#include "dsv4/cache/formats/nvfp4_rows.hpp"

namespace dsv4::cache::formats {

/// `v4.nvfp4_kv`: see the top of this file.
struct v4_nvfp4_kv : detail::nvfp4_rope_units<28> {
  static constexpr format_layout layout{
      .name = "v4.nvfp4_kv",
      .model = model_family::v4,
      .role = format_role::main_kv,
      .source = "flashinfer-ai/flashinfer PR #4955 (NVFP4 KV, split page); sgl-project/sglang PR #38646",
      .rule = page_rule::split_padded,
      .alignment = 16,
      .row_bytes = 384,
      .data_bytes = 352,
      .scale_bytes = 32,
      .rope_offset_in_data = 224,
      .values = 512,
      .data = {element_type::e2m1, 448, 0},
      .scales = {element_type::e4m3, 28, 16},
      .rope = {element_type::bf16, 64, 0},
  };
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 1> writers{{
      format_writer{writer_id::flashinfer, format_policy{}, "flashinfer-ai/flashinfer PR #4955 (NVFP4 KV writer)",
                    false},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
};

}  // namespace dsv4::cache::formats
