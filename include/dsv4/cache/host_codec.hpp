// dsv4-cache: the host bulk codecs, many rows of any registered row format per call, with the
// widest vector ISA the CPU offers chosen at run time. Host only (not for CUDA device code).
//
// `quantize_rows<F>` / `dequantize_rows<F, Out>` give, byte for byte and bit for bit, what
// `quantize_row<F>` / `dequantize_row<F, Out>` (format_traits.hpp, the scalar codec) give for
// each row in turn without flush-to-zero. They are that same code: the generic row loop and every
// per-unit function of F, inlined ([[gnu::flatten]]) into one function per instruction set
// (`__attribute__((target(...)))`), where the shared primitives take the kernels of
// host_simd.hpp: SSE2 intrinsics in the baseline x86 copy, plain loops the compiler vectorizes
// in the AVX2 / AVX-512 copies (and on other CPUs). No third-party headers; a format added to
// the registry is fast without per-format work. The per-unit functions stay `constexpr` and
// shared with the CUDA kernels. Dequantized values can stream to memory (`host_store`).
//
// Instruction sets (`host_isa`):
//   baseline  what the translation unit is compiled for (x86-64: SSE2; aarch64: NEON)
//   avx2      x86-64 with AVX2 (Haswell, Zen 1 and later)
//   avx512    x86-64 with AVX-512 F, BW, DQ and VL (Skylake-SP, Zen 4 and later)
// The active one is the best the CPU supports (`__builtin_cpu_supports`), unless forced by
// `force_host_isa` or by the environment variable DSV4_CACHE_HOST_ISA=baseline|avx2|avx512
// (read on first use), e.g. to measure or test the baseline path on an AVX-512 machine.
// FMA is never enabled in these copies (a fused multiply-add could round differently).
//
// Floating-point environment: the codecs need round-to-nearest-even and gradual underflow
// (E8M0 0x00 is 2^-127, a float32 subnormal; E4M3 subnormals decode to them with small
// scales). A caller may run with flush-to-zero / denormals-are-zero or another rounding mode
// (PyTorch processes often set FTZ / DAZ): each bulk call saves the control register (x86 MXCSR,
// aarch64 FPCR), clears FTZ / DAZ and sets round-to-nearest for the call, and restores it on
// return, so the results do not depend on the caller's mode.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "dsv4/cache/formats/format_traits.hpp"
#include "dsv4/cache/host_simd.hpp"
#include "dsv4/cache/platform.hpp"

#if defined(__x86_64__) || defined(__i386__)
#define DSV4_HOST_CODEC_X86 1
#else
#define DSV4_HOST_CODEC_X86 0
#endif

namespace dsv4::cache {

/// The instruction sets the host bulk codecs are compiled for (see the top of the file).
enum class host_isa : std::uint8_t { baseline, avx2, avx512 };

/// How `dequantize_rows` stores its output values.
/// - cached: ordinary stores; the values are in the caches afterwards (read soon after the call).
/// - streaming: non-temporal stores (x86 movntdq) through an L1 staging buffer of up to
///   `kHostStreamStageBytes` (rows larger than it are stored cached): no read-for-ownership of the
///   destination lines and no cache pollution, for bulk conversion of more data than the
///   last-level cache holds (offload, cold tiers, layout conversion), as memcpy does for large
///   copies. The values are the same; the call ends with a store fence. On other CPUs: cached.
enum class host_store : std::uint8_t { cached, streaming };

/// "cached" or "streaming".
constexpr std::string_view to_string(host_store s) { return s == host_store::cached ? "cached" : "streaming"; }

/// Bytes of one streaming chunk of output rows (`host_store::streaming`).
inline constexpr std::int64_t kHostStreamStageBytes = 16384;

/// Every `host_isa`, narrowest first.
inline constexpr host_isa kHostIsas[] = {host_isa::baseline, host_isa::avx2, host_isa::avx512};

/// "baseline", "avx2" or "avx512".
constexpr std::string_view to_string(host_isa isa) {
  switch (isa) {
    case host_isa::baseline: return "baseline";
    case host_isa::avx2: return "avx2";
    case host_isa::avx512: return "avx512";
  }
  return "?";
}

/// The `host_isa` named `name` ("baseline", "avx2", "avx512"), or nullopt.
constexpr std::optional<host_isa> host_isa_from_string(std::string_view name) {
  for (host_isa isa : kHostIsas)
    if (to_string(isa) == name) return isa;
  return std::nullopt;
}

/// Empty if this process can run `isa`; otherwise why not (not an x86-64 build, or the CPU
/// lacks a feature), for test skips and error messages.
inline std::string host_isa_unsupported_reason(host_isa isa) {
  if (isa == host_isa::baseline) return {};
#if DSV4_HOST_CODEC_X86
  if (isa == host_isa::avx2) return __builtin_cpu_supports("avx2") ? std::string{} : "the CPU has no AVX2";
  const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return ok ? std::string{} : "the CPU lacks one of AVX-512 F, BW, DQ, VL";
#else
  return std::string(to_string(isa)) + " is an x86-64 instruction set; this build is not x86-64";
#endif
}

/// Whether this process can run `isa` (`host_isa_unsupported_reason(isa)` is empty).
inline bool host_isa_supported(host_isa isa) { return host_isa_unsupported_reason(isa).empty(); }

/// The widest `host_isa` this CPU supports.
inline host_isa best_host_isa() {
  if (host_isa_supported(host_isa::avx512)) return host_isa::avx512;
  if (host_isa_supported(host_isa::avx2)) return host_isa::avx2;
  return host_isa::baseline;
}

namespace detail {
/// -1: not forced (the environment or the best ISA applies); else a host_isa value.
inline std::atomic<int> g_forced_host_isa{-1};

/// The ISA named by DSV4_CACHE_HOST_ISA, or the best one if it is unset or empty. Throws
/// std::invalid_argument for an unknown name or one this CPU cannot run.
inline host_isa host_isa_from_environment() {
  const char* env = std::getenv("DSV4_CACHE_HOST_ISA");  // NOLINT(concurrency-mt-unsafe): read once
  if (env == nullptr || *env == '\0') return best_host_isa();
  const std::optional<host_isa> isa = host_isa_from_string(env);
  if (!isa)
    raise_invalid_argument("dsv4::cache: DSV4_CACHE_HOST_ISA='" + std::string(env) +
                           "' is not one of baseline, avx2, avx512");
  const std::string why = host_isa_unsupported_reason(*isa);
  if (!why.empty()) raise_invalid_argument("dsv4::cache: DSV4_CACHE_HOST_ISA=" + std::string(env) + ": " + why);
  return *isa;
}
}  // namespace detail

/// The ISA the bulk codecs use now: the forced one (`force_host_isa`), else the one named by
/// DSV4_CACHE_HOST_ISA (read once), else `best_host_isa()`. Throws std::invalid_argument if the
/// environment variable names an unknown ISA or one this CPU cannot run.
inline host_isa active_host_isa() {
  const int forced = detail::g_forced_host_isa.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<host_isa>(forced);
  static const host_isa from_env = detail::host_isa_from_environment();
  return from_env;
}

/// Forces the bulk codecs of this process onto `isa` (nullopt: back to the environment / best
/// choice). Throws std::invalid_argument, changing nothing, if this CPU cannot run `isa`.
inline void force_host_isa(std::optional<host_isa> isa) {
  if (isa) {
    const std::string why = host_isa_unsupported_reason(*isa);
    if (!why.empty())
      detail::raise_invalid_argument("dsv4::cache: cannot force " + std::string(to_string(*isa)) + ": " + why);
  }
  detail::g_forced_host_isa.store(isa ? static_cast<int>(*isa) : -1, std::memory_order_relaxed);
}

namespace detail {

/// Sets round-to-nearest-even and gradual underflow (no FTZ / DAZ) for its lifetime and puts the
/// caller's floating-point control register back when destroyed.
class fp_env_guard {
 public:
#if DSV4_HOST_CODEC_X86
  // MXCSR: DAZ bit 6, rounding control bits 13-14, FTZ bit 15.
  static constexpr unsigned kMask = 0x40U | 0x6000U | 0x8000U;
  fp_env_guard() : saved_(__builtin_ia32_stmxcsr()) {
    if ((saved_ & kMask) != 0) __builtin_ia32_ldmxcsr(saved_ & ~kMask);
  }
  ~fp_env_guard() {
    if ((saved_ & kMask) != 0) __builtin_ia32_ldmxcsr(saved_);
  }

 private:
  unsigned saved_;
#elif defined(__aarch64__)
  // FPCR: FZ16 bit 19, rounding mode bits 22-23, FZ bit 24.
  static constexpr std::uint64_t kMask = (1ULL << 19) | (3ULL << 22) | (1ULL << 24);
  fp_env_guard() {
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(saved_));
    if ((saved_ & kMask) != 0) {
      const std::uint64_t v = saved_ & ~kMask;
      __asm__ __volatile__("msr fpcr, %0" : : "r"(v));
    }
  }
  ~fp_env_guard() {
    if ((saved_ & kMask) != 0) __asm__ __volatile__("msr fpcr, %0" : : "r"(saved_));
  }

 private:
  std::uint64_t saved_ = 0;
#else
  fp_env_guard() = default;
  ~fp_env_guard() = default;
#endif

 public:
  fp_env_guard(const fp_env_guard&) = delete;
  fp_env_guard& operator=(const fp_env_guard&) = delete;
  fp_env_guard(fp_env_guard&&) = delete;
  fp_env_guard& operator=(fp_env_guard&&) = delete;
};

/// Rows ahead whose bytes the row loops prefetch (input rows, or the page rows read): the loops
/// stream from memory and a row is too short for the hardware prefetcher to get ahead.
inline constexpr std::int64_t kPrefetchRows = 4;

/// The row loops. Copies of the layout and policy: stores through the page's byte pointer could
/// alias the caller's objects as far as the compiler knows.
template <row_format F>
inline void quantize_rows_loop(const format_layout& l, std::uint8_t* page, std::int64_t rows, std::int64_t first,
                               std::int64_t count, const typename F::input_type* in, const format_policy& policy) {
  const format_policy p = policy;
  const std::int64_t values = l.values;
  const int n = F::units(l);
  const auto row_in_bytes = static_cast<std::int64_t>(sizeof(typename F::input_type)) * values;
  for (std::int64_t k = 0; k < count; ++k) {
    if (k + kPrefetchRows < count) {
      const auto* next = reinterpret_cast<const char*>(in + (k + kPrefetchRows) * values);
      for (std::int64_t b = 0; b < row_in_bytes; b += 64) __builtin_prefetch(next + b);
    }
    for (int u = 0; u < n; ++u) F::quantize_unit(l, page, rows, first + k, in + k * values, p, u);
  }
}
/// Prefetches the data and scale bytes of page row r (for the dequantizers' reads).
inline void prefetch_page_row(const format_layout& l, const std::uint8_t* page, std::int64_t rows, std::int64_t r) {
  const std::uint8_t* data = page + l.data_offset(rows, r);
  for (std::int64_t b = 0; b < l.data_bytes; b += 64) __builtin_prefetch(data + b);
  if (l.has_scales()) __builtin_prefetch(page + l.scale_offset(rows, r));
}

/// Copies n bytes to dst with non-temporal stores where dst is 16-byte aligned (the unaligned
/// head and tail with ordinary stores); the caller fences (`_mm_sfence`) before returning.
inline void stream_copy(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) noexcept {
#if DSV4_HOST_SSE2
  std::size_t head = (16U - (reinterpret_cast<std::uintptr_t>(dst) & 15U)) & 15U;
  head = head < n ? head : n;
  std::memcpy(dst, src, head);
  std::size_t i = head;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = simd::x86::load(src + i);
    const __m128i b = simd::x86::load(src + i + 16);
    const __m128i c = simd::x86::load(src + i + 32);
    const __m128i d = simd::x86::load(src + i + 48);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  for (; i + 16 <= n; i += 16) _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), simd::x86::load(src + i));
  std::memcpy(dst + i, src + i, n - i);
#else
  std::memcpy(dst, src, n);
#endif
}

template <row_format F, class Out>
inline void dequantize_rows_loop(const format_layout& l, const std::uint8_t* page, std::int64_t rows,
                                 std::int64_t first, std::int64_t count, Out* out, const format_policy& policy,
                                 host_store store) {
  if (store == host_store::streaming && DSV4_HOST_SSE2 &&
      l.values * static_cast<std::int64_t>(sizeof(Out)) <= kHostStreamStageBytes) {
    const format_policy p = policy;
    const std::int64_t values = l.values;
    const int n = F::units(l);
    const std::int64_t chunk = kHostStreamStageBytes / (values * static_cast<std::int64_t>(sizeof(Out)));
    alignas(64) Out stage[static_cast<std::size_t>(kHostStreamStageBytes) / sizeof(Out)];
    for (std::int64_t k0 = 0; k0 < count; k0 += chunk) {
      const std::int64_t m = count - k0 < chunk ? count - k0 : chunk;
      for (std::int64_t k = k0; k < k0 + m; ++k) {
        if (k + kPrefetchRows < count) prefetch_page_row(l, page, rows, first + k + kPrefetchRows);
        for (int u = 0; u < n; ++u) F::dequantize_unit(l, page, rows, first + k, stage + (k - k0) * values, p, u);
      }
      stream_copy(reinterpret_cast<std::uint8_t*>(out + k0 * values), reinterpret_cast<const std::uint8_t*>(stage),
                  static_cast<std::size_t>(m * values) * sizeof(Out));
    }
#if DSV4_HOST_SSE2
    _mm_sfence();
#endif
    return;
  }
  const format_policy p = policy;
  const std::int64_t values = l.values;
  const int n = F::units(l);
  for (std::int64_t k = 0; k < count; ++k) {
    if (k + kPrefetchRows < count) prefetch_page_row(l, page, rows, first + k + kPrefetchRows);
    for (int u = 0; u < n; ++u) F::dequantize_unit(l, page, rows, first + k, out + k * values, p, u);
  }
}

/// The loops on a local copy of the layout (F::layout itself as a compile-time constant would
/// be folded into the unit loops, which GCC 12 then leaves unvectorized).
template <row_format F>
inline void quantize_rows_any(const format_layout& l, std::uint8_t* page, std::int64_t rows, std::int64_t first,
                              std::int64_t count, const typename F::input_type* in, const format_policy& p) {
  const format_layout local = l;
  quantize_rows_loop<F>(local, page, rows, first, count, in, p);
}
template <row_format F, class Out>
inline void dequantize_rows_any(const format_layout& l, const std::uint8_t* page, std::int64_t rows, std::int64_t first,
                                std::int64_t count, Out* out, const format_policy& p, host_store store) {
  const format_layout local = l;
  dequantize_rows_loop<F>(local, page, rows, first, count, out, p, store);
}

// One copy of the loops per ISA: everything they call is inlined into them (flatten) and
// vectorized for the function's target. `attrs` is an attribute list, which cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define DSV4_HOST_CODEC_COPY(suffix, attrs)                                                                        \
  template <row_format F>                                                                                          \
  [[gnu::flatten, gnu::noinline]] attrs void quantize_rows_##suffix(                                               \
      const format_layout& l, std::uint8_t* page, std::int64_t rows, std::int64_t first, std::int64_t count,       \
      const typename F::input_type* in, const format_policy& p) {                                                  \
    quantize_rows_any<F>(l, page, rows, first, count, in, p);                                                      \
  }                                                                                                                \
  template <row_format F, class Out>                                                                               \
  [[gnu::flatten, gnu::noinline]] attrs void dequantize_rows_##suffix(                                             \
      const format_layout& l, const std::uint8_t* page, std::int64_t rows, std::int64_t first, std::int64_t count, \
      Out* out, const format_policy& p, host_store store) {                                                        \
    dequantize_rows_any<F, Out>(l, page, rows, first, count, out, p, store);                                       \
  }

DSV4_HOST_CODEC_COPY(baseline, )
#if DSV4_HOST_CODEC_X86
DSV4_HOST_CODEC_COPY(avx2, __attribute__((target("avx2"))))
DSV4_HOST_CODEC_COPY(avx512, __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl"))))
#endif
#undef DSV4_HOST_CODEC_COPY
// NOLINTEND(bugprone-macro-parentheses)

template <row_format F>
void require_bulk_rows(const format_layout& l, std::int64_t rows, std::int64_t first, std::int64_t count) {
  require(rows > 0 && l.row_bytes > 0, "a page needs rows > 0 and a bound row size", {"rows", rows},
          {"row_bytes", l.row_bytes});
  require(count >= 0 && first >= 0 && first <= rows - count, "rows [first, first + count) must lie in [0, rows)",
          {"first", first}, {"count", count}, {"rows_per_page", rows});
  require(l.name == F::layout.name && F::units(l) > 0,
          "the layout is not one of this format (bind fp32_state with bind_state_row_bytes)");
}

}  // namespace detail

/// Quantizes rows [first, first + count) of a page of format F, row k from in[k x l.values ..],
/// with the active ISA (`active_host_isa`). Host only.
/// - l: F::layout, or for fp32_state the layout bound to the group's row bytes.
/// - page: the page start, at least `l.page_bytes(rows)` bytes; writes exactly the bytes
///   `quantize_row<F>` writes for each of those rows (never padding, never another row).
/// - in: count x `l.values` values of F::input_type (BF16; float for fp32_state), row-major.
/// - The same bytes as `quantize_row<F>(l, page, rows, first + k, in + k x l.values, p)` for
///   k = 0 .. count - 1 under round-to-nearest without FTZ / DAZ, whatever the caller's mode.
/// Errors (std::invalid_argument, before any byte is written): rows <= 0, an unbound layout
/// (row bytes 0), a layout of another format, or rows outside [0, rows).
template <row_format F>
void quantize_rows(const format_layout& l, std::uint8_t* page, std::int64_t rows, std::int64_t first,
                   std::int64_t count, const typename F::input_type* in, const format_policy& p = F::default_policy) {
  detail::require_bulk_rows<F>(l, rows, first, count);
  const detail::fp_env_guard env;
  const host_isa isa = active_host_isa();
#if DSV4_HOST_SIMD
  const detail::host_simd_scope simd_on(isa != host_isa::baseline);
#endif
  switch (isa) {
#if DSV4_HOST_CODEC_X86
    case host_isa::avx512: detail::quantize_rows_avx512<F>(l, page, rows, first, count, in, p); return;
    case host_isa::avx2: detail::quantize_rows_avx2<F>(l, page, rows, first, count, in, p); return;
#endif
    default: detail::quantize_rows_baseline<F>(l, page, rows, first, count, in, p); return;
  }
}

/// Dequantizes rows [first, first + count) of a page of format F into count x `l.values`
/// floats or BF16 (`Out`), row-major, with the active ISA. Host only. Reads only those rows'
/// bytes. The same values, bit for bit, as `dequantize_row<F, Out>` row by row under
/// round-to-nearest without FTZ / DAZ, whatever the caller's mode, whatever `store` (how the
/// values are stored: `host_store`). Errors as `quantize_rows`.
template <row_format F, class Out>
requires std::same_as<Out, float> || std::same_as<Out, bf16>
void dequantize_rows(const format_layout& l, const std::uint8_t* page, std::int64_t rows, std::int64_t first,
                     std::int64_t count, Out* out, const format_policy& p = F::default_policy,
                     host_store store = host_store::cached) {
  detail::require_bulk_rows<F>(l, rows, first, count);
  const detail::fp_env_guard env;
  const host_isa isa = active_host_isa();
#if DSV4_HOST_SIMD
  const detail::host_simd_scope simd_on(isa != host_isa::baseline);
#endif
  switch (isa) {
#if DSV4_HOST_CODEC_X86
    case host_isa::avx512: detail::dequantize_rows_avx512<F, Out>(l, page, rows, first, count, out, p, store); return;
    case host_isa::avx2: detail::dequantize_rows_avx2<F, Out>(l, page, rows, first, count, out, p, store); return;
#endif
    default: detail::dequantize_rows_baseline<F, Out>(l, page, rows, first, count, out, p, store); return;
  }
}

}  // namespace dsv4::cache
