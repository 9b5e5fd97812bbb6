// dsv4-cache: `v4.1.fp4`, DeepSeek V4.1's 288-B FP4 row (every dim, RoPE included, in E2M1 with
// one E4M3 scale per 16) in the split page padded to a multiple of 512 (FlashMLA release
// 2026.09.10, vllm-project/FlashMLA @02137a43; vLLM `deepseek_v41/attention.py`).
//
// Row and scale rule: v41_fp4_rows.hpp. Page of N rows:
//   [0, N x 256)            data, row r at r x 256 (RoPE dims 448..511 at r x 256 + 224)
//   [N x 256, N x 288)      scales, row r at N x 256 + r x 32 (tile t at + t)
//   [N x 288, page)         padding up to a multiple of 512, never written
// Worked offsets: N = 64, row 1: data 256, RoPE 480, scales 16,384 + 32 = 16,416, page 18,432
// (= 36 x 512, no padding); N = 1: scales 256, page 288 -> 512; N = 8: page 2,304 -> 2,560.
// The page rule is in the name: `v4.1.fp4.align256` pads to 256 (SGLang, newer vLLM) and
// `v4.1.fp4.interleaved` is FlashMLA 2026.09.30's per-token page.
// Sources: vllm-project/FlashMLA tests/quant.py @02137a43 (V41_FP4: "[block_size x 256 B fp4
// rows][block_size x 32 B e4m3 scale rows]", size_per_block_padded to a multiple of 512; read)
// and csrc/kernels/kv_cache_format.h; deepseek-ai/FlashMLA before 2e5429fc; docs/layout-variants.md
// 1.5, 1.6 (a) and 7.
#pragma once

#include "dsv4/cache/formats/v41_fp4_rows.hpp"

namespace dsv4::cache::formats {

/// `v4.1.fp4`: see the top of this file; unit work in detail::v41_fp4_units.
struct v41_fp4 : detail::v41_fp4_units {
  static constexpr format_layout layout = detail::v41_fp4_layout(
      "v4.1.fp4", "vllm-project/FlashMLA kv_cache_format.h, tests/quant.py @02137a43 (V41_FP4, split page)",
      page_rule::split_padded, 512);
};

}  // namespace dsv4::cache::formats
