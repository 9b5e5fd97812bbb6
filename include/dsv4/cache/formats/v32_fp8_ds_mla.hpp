// dsv4-cache: `v3.2.fp8_ds_mla`, DeepSeek V3.2's 656-B sparse-MLA row, interleaved.
//
// Row (N x 656, no page padding; any 16-B aligned block stride works):
//   [0, 512)     512 e4m3 latent (NoPE)
//   [512, 528)   4 fp32 scales, little-endian, one per 128 values (scale k at 512 + 4k)
//   [528, 656)   64 bf16 RoPE
// N = 64, row 1: data 656, scales 1,168, RoPE 1,184; page 41,984.
// Scale: FlashMLA's power of two 2^ceil(log2(max(amax / 448, 1e-4))) (all-zero block 2^-13;
// the floor on amax / 448 is `fp8_amax_floor = 0.0448f` on amax). `fp32_scale_rule::legacy_amax`:
// the arbitrary fp32 max(amax / 448, FLT_MIN) that vLLM `concat_and_cache_ds_mla` stored before
// PR #49435 (old V3.2 caches hold such scales; they decode with the same reader).
// Codes E4M3(x / scale), RNE, saturating. NaN block (propagate): codes 0x7F, scale NaN.
// Sources: deepseek-ai/FlashMLA README and tests/quant.py (V32_FP8Sparse) before 2026.09.30;
// flashinfer sparse_mla_sm120 kv_cache_traits.cuh (DSV3_2); vllm-project/vllm PR #49435.
#pragma once

#include "dsv4/cache/formats/format_traits.hpp"

namespace dsv4::cache::formats {

/// `v3.2.fp8_ds_mla`: see the top of this file.
struct v32_fp8_ds_mla {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v3.2.fp8_ds_mla",
      .model = model_family::v3_2,
      .role = format_role::main_kv,
      .source = "deepseek-ai/FlashMLA tests/quant.py (V32_FP8Sparse), README; flashinfer kv_cache_traits.cuh (DSV3_2)",
      .rule = page_rule::interleaved,
      .alignment = 0,
      .row_bytes = 656,
      .data_bytes = 512,
      .scale_bytes = 16,
      .rope_offset_in_data = 528,
      .values = 576,
      .data = {element_type::e4m3, 512, 0},
      .scales = {element_type::fp32, 4, 128},
      .rope = {element_type::bf16, 64, 0},
  };
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 1> writers{{
      format_writer{writer_id::flashmla, format_policy{.fp8_amax_floor = 0.0448f},
                    "deepseek-ai/FlashMLA tests/quant.py @9241ae3 (V32_FP8Sparse)", true},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
  static constexpr int kBlocks = 4;
  static constexpr int kBlock = 128;

  DSV4_HOST_DEVICE static constexpr int units(const format_layout& /*layout*/) { return kBlocks + 1; }
  DSV4_HOST_DEVICE static constexpr void quantize_unit(const format_layout& l, std::uint8_t* page, std::int64_t rows,
                                                       std::int64_t r, const bf16* in, const format_policy& p,
                                                       int unit) {
    std::uint8_t* data = page + l.data_offset(rows, r);
    if (unit == kBlocks) {
      cache::detail::copy_bf16_out(data + l.rope_offset_in_data, in + 512, 64);
      return;
    }
    const bf16* x = in + std::int64_t{unit} * kBlock;
    std::uint8_t* codes = data + std::int64_t{unit} * kBlock;
    std::uint8_t* scale = page + l.scale_offset(rows, r) + std::int64_t{4} * unit;
    if (p.fp32_scale == fp32_scale_rule::power_of_two) {
      cache::detail::fp8_pow2_block_f32<kBlock>(x, codes, scale, p);
      return;
    }
    const bf16_amax m = amax_bf16(x, kBlock);
    if (m.has_nan && p.nan == nan_policy::propagate) {
      for (int i = 0; i < kBlock; ++i) codes[i] = kE4m3NanCode;
      cache::detail::store_f32(scale, cache::detail::bits_float(cache::detail::kF32QuietNan));
      return;
    }
    constexpr float kFltMin = 0x1p-126f;
    const float q = m.amax / kE4m3Max;
    const float s = q > kFltMin ? q : kFltMin;
    cache::detail::e4m3_tensor_scaled(x, kBlock, s, codes);
    cache::detail::store_f32(scale, s);
  }
  template <class Out>
  DSV4_HOST_DEVICE static constexpr void dequantize_unit(const format_layout& l, const std::uint8_t* page,
                                                         std::int64_t rows, std::int64_t r, Out* out,
                                                         const format_policy& /*policy*/, int unit) {
    const std::uint8_t* data = page + l.data_offset(rows, r);
    if (unit == kBlocks) {
      cache::detail::copy_bf16_in(data + l.rope_offset_in_data, out + 512, 64);
      return;
    }
    const float scale = cache::detail::load_f32(page + l.scale_offset(rows, r) + std::int64_t{4} * unit);
    cache::detail::dequantize_e4m3_block<kBlock>(data + std::int64_t{unit} * kBlock, scale,
                                                 out + std::int64_t{unit} * kBlock);
  }
};

}  // namespace dsv4::cache::formats
