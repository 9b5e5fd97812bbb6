// dsv4-cache: `v4.1.fp8`, DeepSeek V4.1's 528-B FP8 row (RoPE in FP8) in the split page padded to
// a multiple of 512 (FlashMLA release 2026.09.10, vLLM PR #56893, SGLang `kv_layout.py`).
//
// Row: 512 e4m3 (NoPE dims 0..447, then RoPE dims 448..511, tiles 0..15 of 32 values) and
// 16 ue8m0, the scale of tile t at byte t of the row's scales. Page of N rows:
// [N x 512 data][N x 16 scales], padded to a multiple of 512 (N = 64, row 1: data 512, RoPE 960,
// scales 32,784; page 33,792; N = 32: scales 16,400, page 16,896; N = 1: 528 -> 1,024).
// Scale: 2^ceil(log2(max(amax / 448, 1e-4))) (FlashMLA `_cast_scale_inv_to_ue8m0`), so an
// all-zero tile gets byte 114; here the floor on amax / 448 is `fp8_amax_floor = 0.0448f` on amax
// (the same exponent: 2^-14 < 1e-4 < 2^-13). The vLLM / rtp-llm floor on amax (byte 105) is
// `fp8_amax_floor = 1e-4f`. Codes E4M3(x x 2^-e), RNE, saturating. The page rule is in the name:
// FlashMLA 2026.09.30 and later write the same rows interleaved (a different format).
// Sources: vllm-project/FlashMLA csrc/kernels/kv_cache_format.h and tests/quant.py @02137a43;
// deepseek-ai/FlashMLA tests/quant.py @9a7d253a (V41_FP8Sparse); docs/layout-variants.md 1.4, 1.6.
#pragma once

#include "dsv4/cache/formats/format_traits.hpp"

namespace dsv4::cache::formats {

/// `v4.1.fp8`: see the top of this file.
struct v41_fp8 {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v4.1.fp8",
      .model = model_family::v4_1,
      .role = format_role::main_kv,
      .source = "vllm-project/FlashMLA kv_cache_format.h, tests/quant.py @02137a43 (V41, split page)",
      .rule = page_rule::split_padded,
      .alignment = 512,
      .row_bytes = 528,
      .data_bytes = 512,
      .scale_bytes = 16,
      .rope_offset_in_data = 448,
      .values = 512,
      .data = {element_type::e4m3, 448, 0},
      .scales = {element_type::ue8m0, 16, 32},
      .rope = {element_type::e4m3, 64, 0},
  };
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 2> writers{{
      format_writer{writer_id::flashmla, format_policy{.fp8_amax_floor = 0.0448f},
                    "deepseek-ai/FlashMLA tests/quant.py @9a7d253a; vllm-project/FlashMLA tests/quant.py @02137a43 "
                    "(V41: floor on amax / 448 at 1e-4, zero tile byte 114)",
                    true},
      format_writer{writer_id::sglang, format_policy{.fp8_amax_floor = 1e-4f},
                    "sgl-project/sglang python/sglang/srt/layers/attention/dsv4/torch_quant.py quant_fp8_act @0e43c224 "
                    "(floor on amax at 1e-4: byte 105)",
                    true},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
  static constexpr int kTiles = 16;
  static constexpr int kTile = 32;

  DSV4_HOST_DEVICE static constexpr int units(const format_layout& /*layout*/) { return kTiles; }
  DSV4_HOST_DEVICE static constexpr void quantize_unit(const format_layout& l, std::uint8_t* page, std::int64_t rows,
                                                       std::int64_t r, const bf16* in, const format_policy& p,
                                                       int unit) {
    const std::int64_t at = std::int64_t{unit} * kTile;
    page[l.scale_offset(rows, r) + unit] =
        cache::detail::fp8_pow2_block<kTile>(in + at, page + l.data_offset(rows, r) + at, p);
  }
  template <class Out>
  DSV4_HOST_DEVICE static constexpr void dequantize_unit(const format_layout& l, const std::uint8_t* page,
                                                         std::int64_t rows, std::int64_t r, Out* out,
                                                         const format_policy& /*policy*/, int unit) {
    const std::int64_t at = std::int64_t{unit} * kTile;
    cache::detail::dequantize_e4m3_block<kTile>(page + l.data_offset(rows, r) + at,
                                                e8m0_to_float(page[l.scale_offset(rows, r) + unit]), out + at);
  }
};

}  // namespace dsv4::cache::formats
