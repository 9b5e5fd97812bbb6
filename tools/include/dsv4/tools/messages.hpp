// One-line error messages of the CLIs: whatever a path or a value holds, a message is one
// printable line of valid UTF-8 (control characters and bytes that are not valid UTF-8 escaped).
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace dsv4::tools {

/// The length of the valid UTF-8 sequence at the start of `s` (1 to 4 bytes), or 0 when it is
/// not one (a stray continuation byte, an overlong form, a surrogate, above U+10FFFF, cut short).
inline std::size_t utf8_sequence_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // <= U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (b(i) < 0x80 || b(i) > 0xBF) return 0;
  return n;
}

/// `msg` with control characters and bytes that are not valid UTF-8 as \xNN (valid UTF-8, a
/// non-ASCII path included, is kept): printable, valid UTF-8 text of any length (the Python
/// package's exception messages, which must decode).
inline std::string printable(std::string_view msg) {
  std::string out;
  for (std::size_t i = 0; i < msg.size();) {
    const auto c = static_cast<unsigned char>(msg[i]);
    const std::size_t n = utf8_sequence_length(msg.substr(i));
    if (n == 0 || c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
      ++i;
    } else {
      out += msg.substr(i, n);
      i += n;
    }
  }
  return out;
}

/// `msg` as one printable line (`printable`), at most 500 bytes of `msg`.
inline std::string one_line(std::string_view msg) {
  return printable(msg.substr(0, 500)) + (msg.size() > 500 ? "..." : "");
}

/// A library error as the CLIs print it: `one_line(what)` without the core's "dsv4::cache: "
/// prefix (platform.hpp), which names a C++ namespace, not anything the user typed.
inline std::string error_text(std::string_view what) {
  std::string out;
  static constexpr std::string_view kPrefix = "dsv4::cache: ";
  for (std::size_t at = 0;;) {
    const std::size_t hit = what.find(kPrefix, at);
    out += what.substr(at, hit - at);
    if (hit == std::string_view::npos) break;
    at = hit + kPrefix.size();
  }
  return one_line(out);
}

/// "writing the output failed: No space left on device (errno 28)": why a write failed, from
/// `errnum` (the errno the failing write left; 0: "the system gave no reason").
inline std::string write_failure(int errnum) {
  if (errnum == 0) return "writing the output failed (the system gave no reason)";
  return fmt::format("writing the output failed: {} (errno {})", one_line(std::strerror(errnum)), errnum);
}

}  // namespace dsv4::tools
