// dsv4-cache: the 288-B DeepSeek V4.1 FP4 row (FlashMLA `V41_FP4` / `V41_FP4Sparse`), shared by
// its three page rules (`v4.1.fp4`, `v4.1.fp4.align256`, `v4.1.fp4.interleaved`).
//
// Row (every dim in FP4, RoPE included; no per-tensor scale):
//   [0, 256)    512 x e2m1, dim i in byte i / 2, even i in the LOW nibble (RoPE dims 448..511
//               in bytes 224..255); tile t = dims 16t..16t+15 (28 NoPE + 4 RoPE tiles)
//   [256, 288)  32 x e4m3, the scale of tile t at byte 256 + t of the row (in a split page, at
//               byte t of the row's scales)
// Scale of a tile (per 16 values), with x the BF16 input widened to float:
//   amax  = max |x| over the tile
//   scale = E4M3_RNE(clamp(amax / 6, 2^-9, 448))   (amax / 6 one IEEE float division)
//   codes = E2M1_RNE_satfinite(x / scale)          (x / scale one IEEE float division, not
//           x x (1 / scale); ties to the even code, |x / scale| > 6 saturates to +-6, sign kept,
//           so -0 and small negatives give 0x8)
// An all-zero tile gets 2^-9 (byte 0x01) and zero codes. Only a NaN poisons a tile: scale byte
// 0x7F (E4M3 NaN) and every code 0x0 (nan_policy::propagate, the default). An infinity does not:
// `nan_to_num` maps it to FLT_MAX, so amax / 6 clamps to 448 (byte 0x7E), the inf codes +-6
// (0x7 / 0xF) and the others E2M1(x / 448) (+-0 for |x| <= 112).
// Dequant: E2M1 value x E4M3 scale, exact in float and in BF16 (at most 2 + 4 significant bits,
// 2^-10 <= |product| <= 2,688); a NaN scale byte (0x7F / 0xFF) gives NaN for its 16 values.
//
// Confirmed from deepseek-ai/FlashMLA tests/quant.py @9a7d253a (V41_FP4Sparse) and
// vllm-project/FlashMLA tests/quant.py @02137a43 (V41_FP4), which agree on every rule above:
// * amax in float32 after `nan_to_num(|x|, nan=inf)`: a NaN element makes amax inf (and the tile
//   NaN), while `nan_to_num` also maps +-inf to +-FLT_MAX, so an inf element makes amax FLT_MAX,
//   a finite amax (docs/engines/writers.md 1: run on the references, scale 0x7E and codes +-6 / +-0);
// * `clamp(amax / 6.0, 2**-9, 448.0).to(float8_e4m3fn)`: a float32 division, then torch's RNE
//   cast (the clamp keeps it from overflowing to NaN);
// * a tile holding a NaN (amax inf after `nan_to_num`) gets `float("nan")` cast to float8_e4m3fn, i.e. byte 0x7F
// (positive NaN;
//   the Ascend path writes 0x7F explicitly);
// * codes of `x / scale.float()` by `_quantize_to_e2m1`, documented there as the semantics of PTX
//   `cvt.rn.satfinite.e2m1x2.f32` (ties to even, saturating to +-6, NaN magnitude -> 0, sign
//   from signbit), packed `codes[0::2] | codes[1::2] << 4`;
// * dequant `e2m1 value x scale`, "exact in bf16".
// Poisoned-tile codes: quant.py's magnitude is 0, its sign bit is signbit(x / NaN), which IEEE
// leaves unspecified: on CUDA the quotient is the canonical NaN 0x7FFFFFFF (code 0x0); on x86
// host PyTorch a NaN input x propagates its own sign, so a negative-NaN element may give 0x8
// (layout-variants 7). This library writes 0x0 for every code of a poisoned tile (the device
// result); readers must not rely on those sign bits: the NaN scale makes the tile NaN anyway.
// Under nan_policy::ignore (not a producer's rule) nothing is poisoned: NaN is left out of amax
// and becomes +6 x scale (0x7, `cvt.rn.satfinite`); an infinity is treated as under propagate.
// Facts: docs/layout-variants.md 1.5, 1.6 and 7.
#pragma once

#include "dsv4/cache/formats/format_traits.hpp"

namespace dsv4::cache::formats::detail {

inline constexpr int kV41Fp4Tile = 16;             ///< Values per E4M3 scale.
inline constexpr int kV41Fp4Tiles = 32;            ///< Tiles per row: 28 NoPE + 4 RoPE.
inline constexpr float kV41Fp4ScaleMin = 0x1p-9f;  ///< The clamp's floor: E4M3 0x01, its smallest subnormal.

/// The scale byte of a tile: E4M3_RNE(clamp(amax / 6, 2^-9, 448)) (amax a BF16 value, not NaN).
struct v41_fp4_scale_rule {
  DSV4_HOST_DEVICE static constexpr std::uint8_t scale_byte(float amax) noexcept {
    const float q = amax / kE2m1Max;
    return float_to_e4m3(q < kV41Fp4ScaleMin ? kV41Fp4ScaleMin : (q > kE4m3Max ? kE4m3Max : q));
  }
};

/// Quantizes one tile: 16 BF16 values `x` to 8 packed E2M1 bytes at `packed` (value 2i in the
/// low nibble of byte i); returns the E4M3 scale byte (rule at the top of this file; a NaN in
/// the tile under nan_policy::propagate: 0x7F and zero codes; an inf: scale 0x7E, inf codes
/// +-6). No errors.
DSV4_HOST_DEVICE constexpr std::uint8_t v41_fp4_tile(const bf16* x, std::uint8_t* packed,
                                                     const format_policy& p) noexcept {
  const bf16_amax m = amax_bf16(x, kV41Fp4Tile);  // amax over the non-NaN values, infinities included
  // An inf amax gives the scale of FLT_MAX (clamp to 448) through the rule itself.
  if (m.has_nan && p.nan == nan_policy::propagate) {
    for (int i = 0; i < kV41Fp4Tile / 2; ++i) packed[i] = 0;
    return kE4m3NanCode;
  }
  const std::uint8_t byte = cache::detail::scale_byte_of_amax<v41_fp4_scale_rule>(m.amax);
  cache::detail::e2m1_pack_e4m3_divided(x, kV41Fp4Tile, byte, packed);
  return byte;
}

/// The per-unit work of the 288-B V4.1 FP4 row, for any of its page rules: unit t (0..31)
/// quantizes / dequantizes tile t. A format type derives from it and adds its `layout`; the
/// byte places come from the layout passed in (`data_offset`, `scale_offset`).
struct v41_fp4_units {
  using input_type = bf16;
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 1> writers{{
      format_writer{writer_id::flashmla, format_policy{},
                    "deepseek-ai/FlashMLA tests/quant.py @9a7d253a; vllm-project/FlashMLA tests/quant.py @02137a43 "
                    "(V41_FP4: only a NaN poisons a tile)",
                    true},
  }};
  static constexpr format_policy default_policy = writers[0].policy;

  /// 32: one unit per tile.
  DSV4_HOST_DEVICE static constexpr int units(const format_layout& /*layout*/) { return kV41Fp4Tiles; }
  /// Writes tile `unit` of row r: 8 code bytes at data_offset + 8 x unit, 1 scale byte at
  /// scale_offset + unit. `in`: the row's 512 BF16 values. Preconditions (unchecked: the
  /// row codecs check them): 0 <= r < rows, 0 <= unit < 32, the page holds l.page_bytes(rows).
  DSV4_HOST_DEVICE static constexpr void quantize_unit(const format_layout& l, std::uint8_t* page, std::int64_t rows,
                                                       std::int64_t r, const bf16* in, const format_policy& p,
                                                       int unit) {
    const std::int64_t t = unit;
    page[l.scale_offset(rows, r) + t] =
        v41_fp4_tile(in + t * kV41Fp4Tile, page + l.data_offset(rows, r) + t * (kV41Fp4Tile / 2), p);
  }
  /// Reads tile `unit` of row r into out[16 x unit, 16 x unit + 16) (float, or BF16: exact).
  /// Preconditions as quantize_unit.
  template <class Out>
  DSV4_HOST_DEVICE static constexpr void dequantize_unit(const format_layout& l, const std::uint8_t* page,
                                                         std::int64_t rows, std::int64_t r, Out* out,
                                                         const format_policy& /*policy*/, int unit) {
    const std::int64_t t = unit;
    cache::detail::e2m1_dequant_scale_byte<element_type::e4m3>(page + l.data_offset(rows, r) + t * (kV41Fp4Tile / 2),
                                                               kV41Fp4Tile, page[l.scale_offset(rows, r) + t],
                                                               out + t * kV41Fp4Tile);
  }
};

/// The layout of a V4.1 FP4 format: the row fields every page rule shares (data: all 512 dims in
/// E2M1, RoPE included; 32 E4M3 scales, one per 16; RoPE dims 448..511 in E2M1 at byte 224 of
/// the data) with the format's name, source, page rule and alignment (split_padded only, else 0).
constexpr format_layout v41_fp4_layout(std::string_view name, std::string_view source, page_rule rule,
                                       std::int64_t alignment) {
  return format_layout{
      .name = name,
      .model = model_family::v4_1,
      .role = format_role::main_kv,
      .source = source,
      .rule = rule,
      .alignment = alignment,
      .row_bytes = 288,
      .data_bytes = 256,
      .scale_bytes = 32,
      .rope_offset_in_data = 224,
      .values = 512,
      .data = {element_type::e2m1, 512, 0},
      .scales = {element_type::e4m3, 32, 16},
      .rope = {element_type::e2m1, 64, 0},
  };
}

}  // namespace dsv4::cache::formats::detail
