// dsv4-cache: `v4.fp8_ds_mla`, DeepSeek V4's 584-B row in FlashMLA's split page padded to 576 B.
//
// Row (D = 512, R = 64): [448 e4m3 NoPE | 64 bf16 RoPE] = 576 B of data, then 8 B of scales
// [7 ue8m0, one per 64 NoPE values | 1 pad byte written 0x00]. Page of N rows: [N x 576][N x 8],
// padded to a multiple of 576 (the writer never touches the padding; a fresh page is zero) (N = 64: row 1 data 576,
// RoPE 1,024, scales 36,872; page 37,440). Writers (docs/engines/writers.md 3): flashmla (default) e =
// ceil(log2(max(amax / 448, 1e-4))), byte e + 127 (all-zero block 114; `fp8_amax_floor = 0.0448f`, the same exponent);
// vllm e = ceil(log2(max(amax, 1e-4) / 448)) (byte 105; vllm fused_compress_quant_cache.py @0de10a27 and
// fused_deepseek_v4_qnorm_rope_kv_insert_kernel.cu @057dcc0c). A block whose amax is +-inf: byte 0xFF, inf codes
// 0x7F, finite ones +-0 (the references; vLLM's CUDA SWA writer clamps the inf code to 0xFE, derived from its code,
// not run). Sources: deepseek-ai/FlashMLA README and tests/quant.py @9241ae3 (MODEL1 fp8_ds_mla); docs/facts.md 2, 4.
#pragma once

#include "dsv4/cache/formats/format_traits.hpp"

namespace dsv4::cache::formats {

namespace detail {
/// The V4 584-B row's units, shared by FlashMLA's and TensorRT-LLM's pages: units 0..6 quantize
/// one 64-value NoPE block each (codes at data + 64u, scale byte at scales + u); unit 7 copies
/// the RoPE and, when `WritePad`, writes the pad byte 0x00.
template <bool WritePad>
struct v4_fp8_row {
  static constexpr int kBlocks = 7;
  static constexpr int kBlock = 64;
  static constexpr std::int64_t kNope = 448;
  static constexpr std::int64_t kRope = 64;

  DSV4_HOST_DEVICE static constexpr int units(const format_layout& /*layout*/) { return kBlocks + 1; }
  DSV4_HOST_DEVICE static constexpr void quantize_unit(const format_layout& l, std::uint8_t* page, std::int64_t rows,
                                                       std::int64_t r, const bf16* in, const format_policy& p,
                                                       int unit) {
    std::uint8_t* data = page + l.data_offset(rows, r);
    std::uint8_t* scales = page + l.scale_offset(rows, r);
    if (unit < kBlocks) {
      scales[unit] = cache::detail::fp8_pow2_block<kBlock>(in + std::int64_t{unit} * kBlock,
                                                           data + std::int64_t{unit} * kBlock, p);
      return;
    }
    cache::detail::copy_bf16_out(data + kNope, in + kNope, kRope);
    if constexpr (WritePad) scales[kBlocks] = 0;
  }
  template <class Out>
  DSV4_HOST_DEVICE static constexpr void dequantize_unit(const format_layout& l, const std::uint8_t* page,
                                                         std::int64_t rows, std::int64_t r, Out* out,
                                                         const format_policy& /*policy*/, int unit) {
    const std::uint8_t* data = page + l.data_offset(rows, r);
    if (unit < kBlocks) {
      const float scale = e8m0_to_float(page[l.scale_offset(rows, r) + unit]);
      cache::detail::dequantize_e4m3_block<kBlock>(data + std::int64_t{unit} * kBlock, scale,
                                                   out + std::int64_t{unit} * kBlock);
      return;
    }
    cache::detail::copy_bf16_in(data + kNope, out + kNope, kRope);
  }
};
}  // namespace detail

/// `v4.fp8_ds_mla`: see the top of this file.
struct v4_fp8_ds_mla : detail::v4_fp8_row<true> {
  using input_type = bf16;
  static constexpr format_layout layout{
      .name = "v4.fp8_ds_mla",
      .model = model_family::v4,
      .role = format_role::main_kv,
      .source = "deepseek-ai/FlashMLA tests/quant.py, README (fp8_ds_mla); vllm-project/vllm V4 writer",
      .rule = page_rule::split_padded,
      .alignment = 576,
      .row_bytes = 584,
      .data_bytes = 576,
      .scale_bytes = 8,
      .rope_offset_in_data = 448,
      .values = 512,
      .data = {element_type::e4m3, 448, 0},
      .scales = {element_type::ue8m0, 7, 64},
      .rope = {element_type::bf16, 64, 0},
  };
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 2> writers{{
      format_writer{writer_id::flashmla, format_policy{.fp8_amax_floor = 0.0448f},
                    "deepseek-ai/FlashMLA tests/quant.py @9a7d253a; vllm-project/FlashMLA tests/quant.py @02137a43 "
                    "(floor on amax / 448 at 1e-4: zero block byte 114)",
                    true},
      format_writer{writer_id::vllm, format_policy{.fp8_amax_floor = 1e-4f},
                    "vllm-project/vllm V4 fp8_ds_mla cache writer (floor on amax at 1e-4: zero block byte 105)", true},
  }};
  static constexpr format_policy default_policy = writers[0].policy;
};

}  // namespace dsv4::cache::formats
