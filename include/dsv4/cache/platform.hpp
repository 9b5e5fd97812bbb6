// dsv4-cache: host/device portability and the one failure helper.
//
// Every builder in this library reports misuse through `fail()`. On the host it
// throws `std::invalid_argument` whose message names the rule and the offending
// values (built without exceptions, -fno-exceptions, it prints the message and
// traps); inside a constant expression (a `static_assert`) the call is not a
// constant expression, so a bad compile-time input is a compile error. In device
// code it traps, since CUDA kernels cannot throw.
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>

#ifndef DSV4_HOST_DEVICE
#if defined(__CUDACC__)
#define DSV4_HOST_DEVICE __host__ __device__
#else
#define DSV4_HOST_DEVICE
#endif
#endif

namespace dsv4::cache {

/// One named integer value quoted in an error message, e.g. `{"layer", 5}`.
/// Holds signed and unsigned values up to 64 bits without loss.
struct named_value {
  const char* name = nullptr;
  std::uint64_t bits = 0;
  bool is_signed = false;

  constexpr named_value() = default;
  template <class T>
  requires std::is_integral_v<T> DSV4_HOST_DEVICE constexpr named_value(const char* n, T v)
      : name(n), bits(static_cast<std::uint64_t>(v)), is_signed(std::is_signed_v<T>) {}
};

namespace detail {
/// Throws std::invalid_argument(msg). In a translation unit built without exceptions
/// (-fno-exceptions) it writes msg and a newline to stderr and traps instead. Host only.
[[noreturn]] inline void raise_invalid_argument(const std::string& msg) {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
  throw std::invalid_argument(msg);
#else
  std::fputs(msg.c_str(), stderr);
  std::fputc('\n', stderr);
  __builtin_trap();
#endif
}

/// Builds "dsv4::cache: <rule> (a=1, b=2)" and raises it (`raise_invalid_argument`). Host only.
[[noreturn]] inline void throw_invalid_argument(const char* rule, named_value a, named_value b, named_value c) {
  std::string msg = "dsv4::cache: ";
  msg += rule;
  bool first = true;
  for (const named_value& v : {a, b, c}) {
    if (v.name == nullptr) continue;
    msg += first ? " (" : ", ";
    first = false;
    msg += v.name;
    msg += '=';
    msg += v.is_signed ? std::to_string(static_cast<std::int64_t>(v.bits)) : std::to_string(v.bits);
  }
  if (!first) msg += ')';
  raise_invalid_argument(msg);
}
}  // namespace detail

/// Reports a broken rule: throws `std::invalid_argument("dsv4::cache: <rule> (name=value, ...)")`
/// on the host, `__trap()`s on the device. Not `constexpr` on purpose: reaching it during
/// constant evaluation makes the enclosing `static_assert` ill-formed, naming this call.
[[noreturn]] DSV4_HOST_DEVICE inline void fail(const char* rule, named_value a = {}, named_value b = {},
                                               named_value c = {}) {
#if defined(__CUDA_ARCH__)
  (void)rule;
  (void)a;
  (void)b;
  (void)c;
  __trap();
  __builtin_unreachable();
#else
  detail::throw_invalid_argument(rule, a, b, c);
#endif
}

/// `fail(rule, ...)` unless `ok`. The single check used by every constexpr builder.
DSV4_HOST_DEVICE constexpr void require(bool ok, const char* rule, named_value a = {}, named_value b = {},
                                        named_value c = {}) {
  if (!ok) fail(rule, a, b, c);
}

}  // namespace dsv4::cache
