// dsv4-cache: how the library writes figures in text (engines' log lines, reports): thousands
// separators, padding to a column, the shortest decimal that reads back as the double.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace dsv4::cache {

/// `v` with thousands separators, as Python's f"{v:,}" ("1,234,567").
inline std::string thousands(std::int64_t v) {
  const std::uint64_t mag = v < 0 ? static_cast<std::uint64_t>(-(v + 1)) + 1 : static_cast<std::uint64_t>(v);
  const std::string digits = std::to_string(mag);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

/// `s` padded with spaces to `width` characters: on the right (`left_aligned`) or on the left.
inline std::string padded(std::string_view s, std::size_t width, bool left_aligned) {
  const std::string pad(s.size() < width ? width - s.size() : 0, ' ');
  return left_aligned ? std::string(s) + pad : pad + std::string(s);
}

/// `v` in the shortest form that reads back as `v` ("0.1", "1e-05"), as Python's repr and fmt's {}.
inline std::string shortest(double v) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    double back = 0;
    if (std::sscanf(buf, "%lf", &back) == 1 && back == v) break;
  }
  return buf;
}

}  // namespace dsv4::cache
