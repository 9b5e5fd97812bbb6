// dsv4-cache: `fp32_state`, the compressor-state rows: fp32 [kv state | score state], row bytes
// set by the group (V4 CSA 8,192 B, HCA 4,096 B, CSA indexer 2,048 B; V4.1 ratio 2 4,096 B).
//
// Rows are whole (interleaved), N x row_bytes, no padding. Values are float32, little-endian,
// copied bit for bit (a NaN keeps its payload). The registry's layout has row bytes 0: bind it
// with `bind_state_row_bytes` before use. A unit is 256 floats (1 KiB); row bytes must be a
// positive multiple of 1,024.
// Sources: tokenspeed deepseek_v4_cache_spec.py (compressor state groups); vLLM
// CompressorStateCache; docs/facts.md section 3.
#pragma once

#include "dsv4/cache/formats/format_traits.hpp"

namespace dsv4::cache::formats {

/// `fp32_state`: see the top of this file.
struct fp32_state {
  using input_type = float;
  static constexpr int kUnitFloats = 256;
  static constexpr format_layout layout{
      .name = "fp32_state",
      .model = model_family::any,
      .role = format_role::state,
      .source = "lightseekorg/tokenspeed deepseek_v4_cache_spec.py; vllm-project/vllm CompressorStateCache",
      .rule = page_rule::interleaved,
      .alignment = 0,
      .row_bytes = 0,
      .data_bytes = 0,
      .scale_bytes = 0,
      .rope_offset_in_data = -1,
      .values = 0,
      .data = {element_type::fp32, 0, 0},
      .scales = {},
      .rope = {},
  };
  /// Its writers, the default first (format_writer; docs/engines/writers.md).
  static constexpr std::array<format_writer, 1> writers{{
      format_writer{writer_id::vllm, format_policy{}, "vllm-project/vllm CompressorStateCache (fp32 copy)", false},
  }};
  static constexpr format_policy default_policy = writers[0].policy;

  DSV4_HOST_DEVICE static constexpr int units(const format_layout& l) {
    return static_cast<int>(l.values / kUnitFloats);
  }
  DSV4_HOST_DEVICE static constexpr void quantize_unit(const format_layout& l, std::uint8_t* page, std::int64_t rows,
                                                       std::int64_t r, const float* in, const format_policy& /*policy*/,
                                                       int unit) {
    std::uint8_t* dst = page + l.data_offset(rows, r) + std::int64_t{unit} * kUnitFloats * 4;
    const float* src = in + std::int64_t{unit} * kUnitFloats;
    cache::detail::copy_f32_out(dst, src, kUnitFloats);
  }
  template <class Out>
  DSV4_HOST_DEVICE static constexpr void dequantize_unit(const format_layout& l, const std::uint8_t* page,
                                                         std::int64_t rows, std::int64_t r, Out* out,
                                                         const format_policy& /*policy*/, int unit) {
    const std::uint8_t* src = page + l.data_offset(rows, r) + std::int64_t{unit} * kUnitFloats * 4;
    Out* dst = out + std::int64_t{unit} * kUnitFloats;
    cache::detail::copy_f32_in(src, dst, kUnitFloats);
  }
};

}  // namespace dsv4::cache::formats

namespace dsv4::cache {

/// `fp32_state`'s layout for rows of `row_bytes` bytes (8,192 / 4,096 / 2,048 in V4). Fails
/// unless row_bytes is a positive multiple of 1,024 (whole 256-float units).
DSV4_HOST_DEVICE constexpr format_layout bind_state_row_bytes(std::int64_t row_bytes) {
  require(row_bytes > 0 && row_bytes % (std::int64_t{formats::fp32_state::kUnitFloats} * 4) == 0,
          "fp32_state row bytes must be a positive multiple of 1024", {"row_bytes", row_bytes});
  format_layout l = formats::fp32_state::layout;
  l.row_bytes = row_bytes;
  l.data_bytes = row_bytes;
  l.values = row_bytes / 4;
  l.data.count = l.values;
  return l;
}

}  // namespace dsv4::cache
