// dsv4-cache: `v4.1.fp4.interleaved`, the 288-B DeepSeek V4.1 FP4 row in FlashMLA's per-token
// interleaved page (release 2026.09.30, deepseek-ai/FlashMLA commit 2e5429fc and later).
//
// Row and scale rule: v41_fp4_rows.hpp. Page of N rows: row r at r x 288 = [256 data][32 scales],
// no padding, page N x 288 (N = 64, row 1: data 288, RoPE 512, scales 544, page 18,432; N = 1:
// scales 256, page 288). For N = 64 the split `v4.1.fp4` page has the same size and different
// bytes (layout-variants 4, item 1).
// Sources: deepseek-ai/FlashMLA tests/quant.py @9a7d253a (V41_FP4Sparse: "Token layout: [256 B
// fp4 data, 32 B e4m3 scales]", get_bytes_per_token d / 2 + num_tiles = 288, no block padding;
// read), csrc/cuda_kernels/kv_cache_format.h and README @2e5429fc; docs/layout-variants.md 1.5,
// 1.6 (b) and 7.
#pragma once

#include "dsv4/cache/formats/v41_fp4_rows.hpp"

namespace dsv4::cache::formats {

/// `v4.1.fp4.interleaved`: see the top of this file; unit work in detail::v41_fp4_units.
struct v41_fp4_interleaved : detail::v41_fp4_units {
  static constexpr format_layout layout = detail::v41_fp4_layout(
      "v4.1.fp4.interleaved", "deepseek-ai/FlashMLA kv_cache_format.h @2e5429fc, tests/quant.py @9a7d253a (V41_FP4)",
      page_rule::interleaved, 0);
};

}  // namespace dsv4::cache::formats
