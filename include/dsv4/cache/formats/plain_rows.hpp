// dsv4-cache: the per-unit work of unscaled row formats (one value type for the whole row, no
// block scales): per-tensor FP8 rows and BF16 rows. Used by v4.fp8_uniform, v4.bf16,
// v3.2.fp8_flat and v3.2.bf16. A unit is 64 consecutive values (the row's values must be a
// multiple of 64). Per-tensor FP8: code = E4M3(x / tensor_scale), RNE, saturating at +-448
// (NaN -> 0x7F); read back as E4M3(code) x tensor_scale. BF16: the bits, little-endian.
#pragma once

#include "dsv4/cache/formats/format_traits.hpp"

namespace dsv4::cache::formats::detail {

inline constexpr int kPlainUnitValues = 64;

/// Rows of `l.values` E4M3 bytes with one per-tensor scale (`format_policy::tensor_scale`).
struct plain_e4m3_row {
  DSV4_HOST_DEVICE static constexpr int units(const format_layout& l) {
    return static_cast<int>(l.values / kPlainUnitValues);
  }
  DSV4_HOST_DEVICE static constexpr void quantize_unit(const format_layout& l, std::uint8_t* page, std::int64_t rows,
                                                       std::int64_t r, const bf16* in, const format_policy& p,
                                                       int unit) {
    const std::int64_t at = std::int64_t{unit} * kPlainUnitValues;
    cache::detail::e4m3_tensor_scaled(in + at, kPlainUnitValues, p.tensor_scale, page + l.data_offset(rows, r) + at);
  }
  template <class Out>
  DSV4_HOST_DEVICE static constexpr void dequantize_unit(const format_layout& l, const std::uint8_t* page,
                                                         std::int64_t rows, std::int64_t r, Out* out,
                                                         const format_policy& p, int unit) {
    const std::int64_t at = std::int64_t{unit} * kPlainUnitValues;
    cache::detail::e4m3_dequant(page + l.data_offset(rows, r) + at, kPlainUnitValues, p.tensor_scale, out + at);
  }
};

/// Rows of `l.values` BF16 values (2 bytes each, little-endian).
struct plain_bf16_row {
  DSV4_HOST_DEVICE static constexpr int units(const format_layout& l) {
    return static_cast<int>(l.values / kPlainUnitValues);
  }
  DSV4_HOST_DEVICE static constexpr void quantize_unit(const format_layout& l, std::uint8_t* page, std::int64_t rows,
                                                       std::int64_t r, const bf16* in, const format_policy& /*policy*/,
                                                       int unit) {
    const std::int64_t at = std::int64_t{unit} * kPlainUnitValues;
    cache::detail::copy_bf16_out(page + l.data_offset(rows, r) + 2 * at, in + at, kPlainUnitValues);
  }
  template <class Out>
  DSV4_HOST_DEVICE static constexpr void dequantize_unit(const format_layout& l, const std::uint8_t* page,
                                                         std::int64_t rows, std::int64_t r, Out* out,
                                                         const format_policy& /*policy*/, int unit) {
    const std::int64_t at = std::int64_t{unit} * kPlainUnitValues;
    cache::detail::copy_bf16_in(page + l.data_offset(rows, r) + 2 * at, out + at, kPlainUnitValues);
  }
};

}  // namespace dsv4::cache::formats::detail
