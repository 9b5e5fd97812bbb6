// dsv4-cache: XXH64, the 64-bit xxHash, as a constexpr function, for layout fingerprints.
//
// Written from the public algorithm description, "xxHash fast digest algorithm" (XXH64
// section), https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md, and checked
// bit for bit against libxxhash's XXH64() by tests/xxh64_test.cpp. It needs no memcpy and
// no reinterpret_cast: every 64-bit (or 32-bit) lane is put together from its bytes,
// least significant first (the spec reads input little-endian on every platform), so the
// same hash comes out at compile time, on the host and on either byte order.
//
// Cost in a constant expression: per 8 input bytes one lane read and one round, each a single
// return statement. Measured with the default limits on a string-literal input: clang 14
// (-fconstexpr-steps 1,048,576) hashes up to about 1,150,000 chars in a static_assert (~0.9
// steps per byte), g++ 12 (-fconstexpr-ops-limit 2^25) up to about 1,430,000 (~23 ops per
// byte); tests/xxh64_test.cpp static_asserts a 20,000-byte input with both compilers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

// A hash wraps its unsigned arithmetic on purpose; the fuzzers build with clang's
// -fsanitize=unsigned-integer-overflow, which would otherwise report every multiply.
#ifndef DSV4_WRAPPING_ARITHMETIC
#if defined(__clang__)
#define DSV4_WRAPPING_ARITHMETIC __attribute__((no_sanitize("unsigned-integer-overflow")))
#else
#define DSV4_WRAPPING_ARITHMETIC
#endif
#endif

namespace dsv4::cache {

namespace xxh64_detail {

// The five 64-bit primes of the spec (PRIME64_1 .. PRIME64_5).
inline constexpr std::uint64_t prime1 = 0x9E3779B185EBCA87ULL;
inline constexpr std::uint64_t prime2 = 0xC2B2AE3D27D4EB4FULL;
inline constexpr std::uint64_t prime3 = 0x165667B19E3779F9ULL;
inline constexpr std::uint64_t prime4 = 0x85EBCA77C2B2AE63ULL;
inline constexpr std::uint64_t prime5 = 0x27D4EB2F165667C5ULL;

/// The input, read as little-endian lanes: byte i + k is bits 8k .. 8k+7 of the lane at i.
/// Member functions on one local reader, not free functions taking a pointer: g++ memoizes
/// constexpr calls and hashes a pointer into a string literal by the literal's whole text,
/// which made a static_assert over n chars cost O(n^2) (10 s instead of 1.5 s at 160,000).
/// Each lane is one expression, no per-byte call: clang counts a step per statement.
struct le_reader {
  const char* p;

  /// The 8 bytes at p[i .. i+7] as one 64-bit lane.
  [[nodiscard]] constexpr std::uint64_t lane64(std::size_t i) const noexcept {
    return std::uint64_t{static_cast<unsigned char>(p[i])} |
           (std::uint64_t{static_cast<unsigned char>(p[i + 1])} << 8U) |
           (std::uint64_t{static_cast<unsigned char>(p[i + 2])} << 16U) |
           (std::uint64_t{static_cast<unsigned char>(p[i + 3])} << 24U) |
           (std::uint64_t{static_cast<unsigned char>(p[i + 4])} << 32U) |
           (std::uint64_t{static_cast<unsigned char>(p[i + 5])} << 40U) |
           (std::uint64_t{static_cast<unsigned char>(p[i + 6])} << 48U) |
           (std::uint64_t{static_cast<unsigned char>(p[i + 7])} << 56U);
  }
  /// The 4 bytes at p[i .. i+3] as one 32-bit lane, widened to 64 bits.
  [[nodiscard]] constexpr std::uint64_t lane32(std::size_t i) const noexcept {
    return std::uint64_t{static_cast<unsigned char>(p[i])} |
           (std::uint64_t{static_cast<unsigned char>(p[i + 1])} << 8U) |
           (std::uint64_t{static_cast<unsigned char>(p[i + 2])} << 16U) |
           (std::uint64_t{static_cast<unsigned char>(p[i + 3])} << 24U);
  }
  /// Byte p[i] as its value 0..255 (a char of either signedness).
  [[nodiscard]] constexpr std::uint64_t byte(std::size_t i) const noexcept {
    return std::uint64_t{static_cast<unsigned char>(p[i])};
  }
};

/// x rotated left by r bits, 0 < r < 64.
constexpr std::uint64_t rotl(std::uint64_t x, unsigned r) noexcept { return (x << r) | (x >> (64U - r)); }

/// The spec's round: acc + lane * PRIME64_2, rotated left 31, times PRIME64_1 (wraps mod 2^64).
DSV4_WRAPPING_ARITHMETIC constexpr std::uint64_t lane_round(std::uint64_t acc, std::uint64_t lane) noexcept {
  return rotl(acc + lane * prime2, 31U) * prime1;
}

/// The spec's merge of one stripe accumulator into acc after the stripe loop.
DSV4_WRAPPING_ARITHMETIC constexpr std::uint64_t merge(std::uint64_t acc, std::uint64_t lane_acc) noexcept {
  return (acc ^ lane_round(0, lane_acc)) * prime1 + prime4;
}

}  // namespace xxh64_detail

/// XXH64 of the bytes of `data` (each char taken as its unsigned byte value) with `seed`.
///
/// Shapes and units: `data.size()` bytes in, one 64-bit hash out; any length, including 0
/// (XXH64("", 0) == 0xEF46DB3751D8E999). The result equals libxxhash's
/// `XXH64(data.data(), data.size(), seed)` on every platform (the input is read little-endian
/// byte by byte). Source: the xxHash specification (doc/xxhash_spec.md, XXH64). Errors: none;
/// all arithmetic wraps modulo 2^64 by design. Usable in constant expressions.
DSV4_WRAPPING_ARITHMETIC constexpr std::uint64_t xxh64(std::string_view data, std::uint64_t seed = 0) noexcept {
  namespace d = xxh64_detail;
  const d::le_reader in{data.data()};
  const std::size_t n = data.size();
  std::size_t i = 0;
  std::uint64_t acc = 0;

  if (n >= 32) {
    // Four lane accumulators; each 32-byte stripe feeds one 8-byte lane to each.
    std::uint64_t v1 = seed + d::prime1 + d::prime2;
    std::uint64_t v2 = seed + d::prime2;
    std::uint64_t v3 = seed;
    std::uint64_t v4 = seed - d::prime1;
    for (; n - i >= 32; i += 32) {
      v1 = d::lane_round(v1, in.lane64(i));
      v2 = d::lane_round(v2, in.lane64(i + 8));
      v3 = d::lane_round(v3, in.lane64(i + 16));
      v4 = d::lane_round(v4, in.lane64(i + 24));
    }
    acc = d::rotl(v1, 1U) + d::rotl(v2, 7U) + d::rotl(v3, 12U) + d::rotl(v4, 18U);
    acc = d::merge(d::merge(d::merge(d::merge(acc, v1), v2), v3), v4);
  } else {
    acc = seed + d::prime5;
  }
  acc += static_cast<std::uint64_t>(n);

  // The tail (fewer than 32 bytes): 8-byte lanes, at most one 4-byte lane, then single bytes.
  for (; n - i >= 8; i += 8) acc = d::rotl(acc ^ d::lane_round(0, in.lane64(i)), 27U) * d::prime1 + d::prime4;
  if (n - i >= 4) {
    acc = d::rotl(acc ^ (in.lane32(i) * d::prime1), 23U) * d::prime2 + d::prime3;
    i += 4;
  }
  for (; i < n; ++i) acc = d::rotl(acc ^ (in.byte(i) * d::prime5), 11U) * d::prime1;

  // Avalanche: spread every input bit over the whole hash.
  acc ^= acc >> 33U;
  acc *= d::prime2;
  acc ^= acc >> 29U;
  acc *= d::prime3;
  acc ^= acc >> 32U;
  return acc;
}

/// `h` as text: "0x" then 16 lowercase hex digits, most significant first, zero-padded
/// (fingerprint_hex(0xEF46DB3751D8E999) spells "0xef46db3751d8e999"). Exactly 18 chars and
/// no trailing NUL: use `std::string_view(r.data(), r.size())`. Errors: none.
constexpr std::array<char, 18> fingerprint_hex(std::uint64_t h) noexcept {
  constexpr std::string_view digits = "0123456789abcdef";
  std::array<char, 18> out{'0', 'x'};
  for (std::size_t k = 0; k < 16; ++k) out[17 - k] = digits[static_cast<std::size_t>((h >> (4U * k)) & 0xFU)];
  return out;
}

}  // namespace dsv4::cache
