// dsv4-cache: overflow-checked 64-bit arithmetic for sizes (bytes, tokens, rows, pages).
//
// Every size this library computes goes through these helpers, so an impossible plan is
// an error naming the operands, never a silently wrapped integer.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "dsv4/cache/platform.hpp"

namespace dsv4::cache {

/// a + b; fails with `what` and both operands if the sum does not fit in T.
template <class T>
DSV4_HOST_DEVICE constexpr T checked_add(T a, T b, const char* what = "size overflows 64 bits") {
  T r{};
#if defined(__CUDA_ARCH__)  // nvcc has no __builtin_*_overflow in device code: exact 128-bit result
  using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
  const W w = static_cast<W>(a) + static_cast<W>(b);
  r = static_cast<T>(w);
  if (static_cast<W>(r) != w) fail(what, named_value("a", a), named_value("b", b));
#else
  if (__builtin_add_overflow(a, b, &r)) fail(what, named_value("a", a), named_value("b", b));
#endif
  return r;
}

/// a * b; fails with `what` and both operands if the product does not fit in T.
template <class T>
DSV4_HOST_DEVICE constexpr T checked_mul(T a, T b, const char* what = "size overflows 64 bits") {
  T r{};
#if defined(__CUDA_ARCH__)  // as checked_add: |a x b| < 2^128 for 64-bit T
  using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
  const W w = static_cast<W>(a) * static_cast<W>(b);
  r = static_cast<T>(w);
  if (static_cast<W>(r) != w) fail(what, named_value("a", a), named_value("b", b));
#else
  if (__builtin_mul_overflow(a, b, &r)) fail(what, named_value("a", a), named_value("b", b));
#endif
  return r;
}

/// ceil(a / b) for a >= 0, b > 0, without the overflow of (a + b - 1) / b.
template <class T>
DSV4_HOST_DEVICE constexpr T ceil_div(T a, T b) {
  if constexpr (std::is_signed_v<T>)
    require(b > 0 && a >= 0, "ceil_div needs a >= 0 and b > 0", named_value("a", a), named_value("b", b));
  else
    require(b > 0, "ceil_div needs b > 0", named_value("a", a), named_value("b", b));
  return static_cast<T>(a / b + (a % b != 0 ? 1 : 0));
}

/// a + b, or the largest uint64 where the sum does not fit: for bounds that a search compares
/// against (pages an engine may hold, work limits), never for a size that is allocated (those
/// use `checked_add`, which fails instead).
DSV4_HOST_DEVICE constexpr std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  constexpr std::uint64_t kMax = ~std::uint64_t{0};  // (numeric_limits is host-only under nvcc)
  return a > kMax - b ? kMax : a + b;
}

/// a x b, or the largest uint64 where the product does not fit (as `saturating_add`).
DSV4_HOST_DEVICE constexpr std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  constexpr std::uint64_t kMax = ~std::uint64_t{0};
  return b != 0 && a > kMax / b ? kMax : a * b;
}

/// a + b for a, b >= 0 (token and block counts), or INT64_MAX where the sum does not fit.
DSV4_HOST_DEVICE constexpr std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  constexpr std::int64_t kMax = 0x7fffffffffffffff;
  return a > kMax - b ? kMax : a + b;
}

/// a x b for a, b >= 0 (token and block counts), or INT64_MAX where the product does not fit.
DSV4_HOST_DEVICE constexpr std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  constexpr std::int64_t kMax = 0x7fffffffffffffff;
  return b != 0 && a > kMax / b ? kMax : a * b;
}

/// `saturating_add` that also records whether the sum did not fit (`overflowed` set, never cleared).
DSV4_HOST_DEVICE constexpr std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b, bool& overflowed) {
  constexpr std::uint64_t kMax = ~std::uint64_t{0};
  if (a > kMax - b) {  // tested before adding: no wrapped sum, even one thrown away
    overflowed = true;
    return kMax;
  }
  return a + b;
}

/// `saturating_mul` that also records whether the product did not fit (`overflowed` set, never cleared).
DSV4_HOST_DEVICE constexpr std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b, bool& overflowed) {
  constexpr std::uint64_t kMax = ~std::uint64_t{0};
  if (b != 0 && a > kMax / b) {  // tested before multiplying: no wrapped product
    overflowed = true;
    return kMax;
  }
  return a * b;
}

/// The smallest multiple of `m` that is >= `a` (a >= 0, m > 0); fails on overflow.
template <class T>
DSV4_HOST_DEVICE constexpr T round_up(T a, T m) {
  return checked_mul(ceil_div(a, m), m);
}

/// Converts a non-negative signed size to uint64; fails on a negative value.
DSV4_HOST_DEVICE constexpr std::uint64_t to_unsigned(std::int64_t v, const char* what) {
  require(v >= 0, what, named_value("value", v));
  return static_cast<std::uint64_t>(v);
}

namespace detail {
/// The largest x in [lo, hi] with fits(x), given fits(lo) and that fits is monotone (true up to
/// some x, false after). A binary search that never computes hi - lo + 1 (hi may be INT64_MAX).
template <class Fits>
constexpr std::int64_t largest_fitting(std::int64_t lo, std::int64_t hi, Fits&& fits) {
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2 + (hi - lo) % 2;  // ceil((lo + hi) / 2), no overflow
    if (fits(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}
}  // namespace detail

}  // namespace dsv4::cache
