// dsv4-cache: the registry of row formats. The type list `registered_formats` is the one list;
// the runtime table, name lookup and type dispatch are generated from it. Adding a format is
// its header under formats/, its tests, and one line in the list below.
//
// Formats (layout-variants notation; page bytes for N = 64 rows):
//   v4.fp8_ds_mla                 584 B  split, padded to 576   37,440   FlashMLA
//   v4.fp8_ds_mla.footer          584 B  split                 37,376   TensorRT-LLM
//   v4.fp8_uniform                512 B  interleaved           32,768   SGLang trtllm, vLLM FlashInfer
//   v4.bf16                     1,024 B  interleaved           65,536
//   v4.mxfp4_kv                   368 B  interleaved           23,552   SGLang PR #37138
//   v4.nvfp4_kv                   384 B  split, padded to 16   24,576   FlashInfer PR #4955
//   v4.nvfp4_kv432                432 B  interleaved           27,648   vLLM fork PR #632
//   v4.indexer_fp8                132 B  split                  8,448
//   v4.indexer_mxfp4               68 B  split                  4,352
//   v4.indexer_mxfp4_in_fp8_slot  132 B  split (68 used)        8,448   vLLM before PR #48993
//   v3.2.fp8_ds_mla               656 B  interleaved           41,984   FlashMLA V32_FP8Sparse
//   v3.2.indexer_fp8              132 B  split                  8,448
//   v3.2.fp8_flat                 576 B  interleaved           36,864
//   v3.2.bf16                   1,152 B  interleaved           73,728
//   fp32_state               group's row interleaved                    compressor state
//   v4.1.fp8                      528 B  split, padded to 512  33,792   FlashMLA 2026.09.10 (V4.1)
//   v4.1.fp8.interleaved          528 B  interleaved           33,792   FlashMLA 2026.09.30
//   v4.1.fp4                      288 B  split, padded to 512  18,432   FlashMLA 2026.09.10, vLLM
//   v4.1.fp4.align256             288 B  split, padded to 256  18,432   SGLang, vLLM deepseek_v4_1
//   v4.1.fp4.interleaved          288 B  interleaved           18,432   FlashMLA 2026.09.30
// Left out: SGLang ROCm's unified two-pool FP8 layout (row-addressed pools, not pages).
// Each format lists its producers' writers, the default first (`F::writers`, `kFormatWriters`;
// `dsv4-cache-layout writers` prints them and where they differ).
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "dsv4/cache/formats/fp32_state.hpp"
#include "dsv4/cache/formats/v32_bf16.hpp"
#include "dsv4/cache/formats/v32_fp8_ds_mla.hpp"
#include "dsv4/cache/formats/v32_fp8_flat.hpp"
#include "dsv4/cache/formats/v32_indexer_fp8.hpp"
#include "dsv4/cache/formats/v41_fp4.hpp"
#include "dsv4/cache/formats/v41_fp4_align256.hpp"
#include "dsv4/cache/formats/v41_fp4_interleaved.hpp"
#include "dsv4/cache/formats/v41_fp8.hpp"
#include "dsv4/cache/formats/v41_fp8_interleaved.hpp"
#include "dsv4/cache/formats/v4_bf16.hpp"
#include "dsv4/cache/formats/v4_fp8_ds_mla.hpp"
#include "dsv4/cache/formats/v4_fp8_ds_mla_footer.hpp"
#include "dsv4/cache/formats/v4_fp8_uniform.hpp"
#include "dsv4/cache/formats/v4_indexer_fp8.hpp"
#include "dsv4/cache/formats/v4_indexer_mxfp4.hpp"
#include "dsv4/cache/formats/v4_indexer_mxfp4_in_fp8_slot.hpp"
#include "dsv4/cache/formats/v4_mxfp4_kv.hpp"
#include "dsv4/cache/formats/v4_nvfp4_kv.hpp"
#include "dsv4/cache/formats/v4_nvfp4_kv432.hpp"

namespace dsv4::cache {

/// A list of row-format types.
template <row_format... F>
struct format_list {
  static constexpr std::size_t size = sizeof...(F);
};

/// Every registered format, in the order of the table above.
using registered_formats =
    format_list<formats::v4_fp8_ds_mla, formats::v4_fp8_ds_mla_footer, formats::v4_fp8_uniform, formats::v4_bf16,
                formats::v4_mxfp4_kv, formats::v4_nvfp4_kv, formats::v4_nvfp4_kv432, formats::v4_indexer_fp8,
                formats::v4_indexer_mxfp4, formats::v4_indexer_mxfp4_in_fp8_slot, formats::v32_fp8_ds_mla,
                formats::v32_indexer_fp8, formats::v32_fp8_flat, formats::v32_bf16, formats::fp32_state,
                formats::v41_fp8, formats::v41_fp8_interleaved, formats::v41_fp4, formats::v41_fp4_align256,
                formats::v41_fp4_interleaved>;

namespace detail {
template <class... F>
constexpr std::array<format_layout, sizeof...(F)> format_table(format_list<F...> /*list*/) {
  return {F::layout...};
}
template <class... F>
constexpr std::array<format_policy, sizeof...(F)> policy_table(format_list<F...> /*list*/) {
  return {F::default_policy...};
}
template <class... F>
constexpr std::array<std::span<const format_writer>, sizeof...(F)> writer_table(format_list<F...> /*list*/) {
  return {std::span<const format_writer>(F::writers)...};
}
}  // namespace detail

/// The layouts of every registered format, in registry order (fp32_state with row bytes 0).
inline constexpr auto kFormats = detail::format_table(registered_formats{});
/// Their default (producer) policies, index for index.
inline constexpr auto kFormatPolicies = detail::policy_table(registered_formats{});

/// Their writers (`F::writers`, the default first), index for index.
inline constexpr auto kFormatWriters = detail::writer_table(registered_formats{});

/// The writer `producer` of the format at registry index `index`, or nullptr if the format does
/// not model that producer's writer (or the index is outside the registry).
constexpr const format_writer* find_writer(int index, writer_id producer) {
  if (index < 0 || static_cast<std::size_t>(index) >= kFormatWriters.size()) return nullptr;
  for (const format_writer& w : kFormatWriters[static_cast<std::size_t>(index)])
    if (w.producer == producer) return &w;
  return nullptr;
}

/// The writer id named `name` ("flashmla", "vllm", ...), or false if none is.
constexpr bool writer_from_name(std::string_view name, writer_id& out) {
  for (const writer_id w : {writer_id::flashmla, writer_id::vllm, writer_id::sglang, writer_id::tokenspeed,
                            writer_id::trtllm, writer_id::flashinfer})
    if (to_string(w) == name) {
      out = w;
      return true;
    }
  return false;
}

/// Registry index of the format named `name`, or -1 if none is.
constexpr int format_index(std::string_view name) {
  for (std::size_t i = 0; i < kFormats.size(); ++i)
    if (kFormats[i].name == name) return static_cast<int>(i);
  return -1;
}

/// Registry index of format type F.
template <row_format F>
constexpr int format_index_of() {
  return format_index(F::layout.name);
}

/// Every registered name, comma-separated (for error messages and help texts).
inline std::string format_names() {
  std::string s;
  for (const format_layout& f : kFormats) s += (s.empty() ? "" : ", ") + std::string(f.name);
  return s;
}

/// The layout of the format named `name`. Host only. Throws std::invalid_argument naming the
/// value and the registered names if no format has that name.
inline const format_layout& format_by_name(std::string_view name) {
  const int i = format_index(name);
  if (i < 0)
    detail::raise_invalid_argument("dsv4::cache: unknown row format '" + std::string(name) +
                                   "' (registered: " + format_names() + ")");
  return kFormats[static_cast<std::size_t>(i)];
}

namespace detail {
template <class Fn, class... F>
constexpr bool visit_format_impl(int index, Fn& fn, format_list<F...> /*list*/) {
  int i = 0;
  return ((i++ == index ? (fn.template operator()<F>(), true) : false) || ...);
}
}  // namespace detail

/// Calls `fn.template operator()<F>()` with F the format type at registry index `index`, e.g.
/// `visit_format(i, [&]<row_format F>() { quantize_row<F>(...); })`. Fails for an index outside
/// the registry.
template <class Fn>
constexpr void visit_format(int index, Fn&& fn) {
  require(detail::visit_format_impl(index, fn, registered_formats{}), "format index outside the registry",
          {"index", index}, {"formats", static_cast<int>(registered_formats::size)});
}

}  // namespace dsv4::cache
