// dsv4-cache: fmt formatters for the library's enums and ids, and a byte-count printer.
//
// Separate from the core so that the layout headers need no third-party library; include it
// where you print with fmt (>= 9). Not for `.cu` files (fmt has had trouble under nvcc in C++20).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "dsv4/cache/group_spec.hpp"

namespace dsv4::cache {

/// Bytes in binary units with two decimals: 37440 -> "36.56 KiB", 6755043136 -> "6.29 GiB".
inline std::string human_bytes(std::uint64_t bytes) {
  constexpr std::array<std::string_view, 7> units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  auto v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", v, units[u]);
}

namespace detail {
/// Formats any type with a `to_string` overload in dsv4::cache as a string.
template <class T>
struct to_string_formatter : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const T& v, Ctx& ctx) const {
    const auto s = to_string(v);
    return fmt::formatter<std::string_view>::format(std::string_view(s), ctx);
  }
};
}  // namespace detail

}  // namespace dsv4::cache

template <>
struct fmt::formatter<dsv4::cache::attention_kind>
    : dsv4::cache::detail::to_string_formatter<dsv4::cache::attention_kind> {};
template <>
struct fmt::formatter<dsv4::cache::indexer_format>
    : dsv4::cache::detail::to_string_formatter<dsv4::cache::indexer_format> {};
template <>
struct fmt::formatter<dsv4::cache::group_id> : dsv4::cache::detail::to_string_formatter<dsv4::cache::group_id> {};
template <>
struct fmt::formatter<dsv4::cache::cache_family> : dsv4::cache::detail::to_string_formatter<dsv4::cache::cache_family> {
};
template <>
struct fmt::formatter<dsv4::cache::cache_retention>
    : dsv4::cache::detail::to_string_formatter<dsv4::cache::cache_retention> {};
template <>
struct fmt::formatter<dsv4::cache::model_family> : dsv4::cache::detail::to_string_formatter<dsv4::cache::model_family> {
};
template <>
struct fmt::formatter<dsv4::cache::page_rule> : dsv4::cache::detail::to_string_formatter<dsv4::cache::page_rule> {};
