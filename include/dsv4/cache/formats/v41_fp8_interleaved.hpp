// dsv4-cache: `v4.1.fp8.interleaved`, DeepSeek V4.1's 528-B FP8 row in FlashMLA's per-token
// interleaved page (release 2026.09.30, deepseek-ai/FlashMLA commit 2e5429fc and later).
//
// Row: the same bytes as `v4.1.fp8` (v41_fp8.hpp): 512 e4m3 (NoPE dims 0..447, then RoPE dims
// 448..511, tiles 0..15 of 32 values) followed by 16 ue8m0, the scale of tile t at byte 512 + t
// of the row. Page of N rows: row r at r x 528 = [512 data][16 scales], no padding, page N x 528
// (N = 64, row 1: data 528, RoPE 976, scales 1,040, page 33,792; N = 1: scales 512, page 528).
// Scale rule and default policy: those of `v4.1.fp8` (2^ceil(log2(max(amax / 448, 1e-4))),
// all-zero tile byte 114, codes E4M3(x x 2^-e), RNE, saturating); the unit code is v41_fp8's,
// called with this layout, so only the page rule differs. For N = 64 both pages are 33,792 B
// with different bytes: a split reader on this page reads garbage (layout-variants 4, item 1).
// Sources: deepseek-ai/FlashMLA README @2e5429fc ("Breaking change ... changed the FP8/FP4 KV
// cache format"), csrc/cuda_kernels/kv_cache_format.h @2e5429fc (BYTES_PER_TOKEN = 528, scales
// after the token's data) and tests/quant.py @9a7d253a (V41_FP8Sparse: "Token layout: [512 B fp8
// data, 16 B ue8m0 scales]", read); docs/layout-variants.md 1.4, 1.6 (b).
#pragma once

#include "dsv4/cache/formats/v41_fp8.hpp"

namespace dsv4::cache::formats {

/// `v4.1.fp8.interleaved`: see the top of this file. `input_type`, `default_policy`, `units`,
/// `quantize_unit` and `dequantize_unit` are v41_fp8's (they place bytes through the layout they
/// are given); only `layout` differs.
struct v41_fp8_interleaved : v41_fp8 {
  static constexpr format_layout layout = [] {
    format_layout l = v41_fp8::layout;  // the same row fields; only the page rule differs
    l.name = "v4.1.fp8.interleaved";
    l.source = "deepseek-ai/FlashMLA kv_cache_format.h @2e5429fc, tests/quant.py @9a7d253a (V41, interleaved)";
    l.rule = page_rule::interleaved;
    l.alignment = 0;
    return l;
  }();
};

}  // namespace dsv4::cache::formats
