// dsv4-cache: `v4.1.fp4.align256`, the 288-B DeepSeek V4.1 FP4 row of `v4.1.fp4` in a split page
// padded to a multiple of 256 instead of 512 (SGLang `kv_layout.py`: page_align 256 for
// V41_FP4; vLLM `vllm/models/deepseek_v4_1/attention.py` @0a58229d pads the 288-B compressed
// pool to 256).
//
// Row and scale rule: v41_fp4_rows.hpp. Page of N rows: [N x 256 data][N x 32 scales], padded
// to a multiple of 256 (never written). N x 288 = 32 N x 9 is a multiple of 256 iff N is a
// multiple of 8, and a multiple of 512 iff N is a multiple of 16: the two paddings differ only
// when N is 8 mod 16 (N = 8: 2,304 here, 2,560 in `v4.1.fp4`; N = 24: 6,912 vs 7,168). Worked
// offsets: N = 64, row 1: data 256, RoPE 480, scales 16,416, page 18,432 (as `v4.1.fp4`);
// N = 1: 288 -> 512; N = 2: 576 -> 768.
// Sources: sgl-project/sglang python/sglang/srt/mem_cache/kv_layout.py (page_align 256 for
// V41_FP4) and vllm-project/vllm vllm/models/deepseek_v4_1/attention.py @0a58229d, as recorded
// in docs/layout-variants.md 1.6 (a) and 7 (not re-read here).
#pragma once

#include "dsv4/cache/formats/v41_fp4_rows.hpp"

namespace dsv4::cache::formats {

/// `v4.1.fp4.align256`: see the top of this file; unit work in detail::v41_fp4_units.
struct v41_fp4_align256 : detail::v41_fp4_units {
  static constexpr format_layout layout = detail::v41_fp4_layout(
      "v4.1.fp4.align256", "sgl-project/sglang kv_layout.py (V41_FP4 page_align 256); vllm deepseek_v4_1 @0a58229d",
      page_rule::split_padded, 256);
};

}  // namespace dsv4::cache::formats
