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
// `host_insert_rows<F>` / `host_gather_rows<F, Out>` run the same loops over the slots of a pool
// (the host counterparts of the CUDA `insert_rows` / `gather_rows`), split over threads.
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
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "dsv4/cache/formats/format_traits.hpp"
#include "dsv4/cache/host_simd.hpp"
#include "dsv4/cache/platform.hpp"
#include "dsv4/cache/slot_work.hpp"

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

/// Where row k of a bulk call lies: its page's start and its row in that page (page nullptr: a
/// padding token, skipped by the quantizers).
template <class Byte>
struct page_row {
  Byte* page;
  std::int64_t row;
};

/// The row loops over `count` rows, row k at `row_at(k)` (a `page_row`) in pages of `rows` rows.
/// Copies of the layout and policy: stores through the page's byte pointer could alias the
/// caller's objects as far as the compiler knows.
template <row_format F, class RowAt>
inline void quantize_rows_loop(const format_layout& l, std::int64_t rows, RowAt row_at, std::int64_t count,
                               const typename F::input_type* in, const format_policy& policy) {
  const format_policy p = policy;
  const std::int64_t values = l.values;
  const int n = F::units(l);
  const auto row_in_bytes = static_cast<std::int64_t>(sizeof(typename F::input_type)) * values;
  for (std::int64_t k = 0; k < count; ++k) {
    if (k + kPrefetchRows < count) {
      const auto* next = reinterpret_cast<const char*>(in + (k + kPrefetchRows) * values);
      for (std::int64_t b = 0; b < row_in_bytes; b += 64) __builtin_prefetch(next + b);
    }
    const page_row<std::uint8_t> at = row_at(k);
    if (at.page == nullptr) continue;
    for (int u = 0; u < n; ++u) F::quantize_unit(l, at.page, rows, at.row, in + k * values, p, u);
  }
}
/// Prefetches the data and scale bytes of page row `at` (for the dequantizers' reads).
inline void prefetch_page_row(const format_layout& l, std::int64_t rows, page_row<const std::uint8_t> at) {
  const std::uint8_t* page = at.page;
  const std::int64_t r = at.row;
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

template <row_format F, class Out, class RowAt>
inline void dequantize_rows_loop(const format_layout& l, std::int64_t rows, RowAt row_at, std::int64_t count, Out* out,
                                 const format_policy& policy, host_store store) {
  const format_policy p = policy;
  const std::int64_t values = l.values;
  const int n = F::units(l);
  auto row = [&](std::int64_t k, Out* dst) {
    if (k + kPrefetchRows < count) prefetch_page_row(l, rows, row_at(k + kPrefetchRows));
    const page_row<const std::uint8_t> at = row_at(k);
    for (int u = 0; u < n; ++u) F::dequantize_unit(l, at.page, rows, at.row, dst, p, u);
  };
  if (store == host_store::streaming && DSV4_HOST_SSE2 &&
      l.values * static_cast<std::int64_t>(sizeof(Out)) <= kHostStreamStageBytes) {
    const std::int64_t chunk = kHostStreamStageBytes / (values * static_cast<std::int64_t>(sizeof(Out)));
    alignas(64) Out stage[static_cast<std::size_t>(kHostStreamStageBytes) / sizeof(Out)];
    for (std::int64_t k0 = 0; k0 < count; k0 += chunk) {
      const std::int64_t m = count - k0 < chunk ? count - k0 : chunk;
      for (std::int64_t k = k0; k < k0 + m; ++k) row(k, stage + (k - k0) * values);
      stream_copy(reinterpret_cast<std::uint8_t*>(out + k0 * values), reinterpret_cast<const std::uint8_t*>(stage),
                  static_cast<std::size_t>(m * values) * sizeof(Out));
    }
#if DSV4_HOST_SSE2
    _mm_sfence();
#endif
    return;
  }
  for (std::int64_t k = 0; k < count; ++k) row(k, out + k * values);
}

/// The loops on a local copy of the layout (F::layout itself as a compile-time constant would
/// be folded into the unit loops, which GCC 12 then leaves unvectorized).
template <row_format F, class RowAt>
inline void quantize_rows_any(const format_layout& l, std::int64_t rows, RowAt row_at, std::int64_t count,
                              const typename F::input_type* in, const format_policy& p) {
  const format_layout local = l;
  quantize_rows_loop<F>(local, rows, row_at, count, in, p);
}
template <row_format F, class Out, class RowAt>
inline void dequantize_rows_any(const format_layout& l, std::int64_t rows, RowAt row_at, std::int64_t count, Out* out,
                                const format_policy& p, host_store store) {
  const format_layout local = l;
  dequantize_rows_loop<F>(local, rows, row_at, count, out, p, store);
}

// One copy of a bulk call per ISA: `work` and everything it calls is inlined into it (flatten)
// and vectorized for the function's target. `attrs` is an attribute list, which cannot be
// parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define DSV4_HOST_CODEC_COPY(suffix, attrs)                            \
  template <class Work>                                                \
  [[gnu::flatten, gnu::noinline]] attrs void run_##suffix(Work work) { \
    work();                                                            \
  }

DSV4_HOST_CODEC_COPY(baseline, )
#if DSV4_HOST_CODEC_X86
DSV4_HOST_CODEC_COPY(avx2, __attribute__((target("avx2"))))
DSV4_HOST_CODEC_COPY(avx512, __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl"))))
#endif
#undef DSV4_HOST_CODEC_COPY
// NOLINTEND(bugprone-macro-parentheses)

/// Runs `work` (the row loops of one bulk call) on this thread: the caller's floating-point mode
/// saved and cleared, the active ISA's copy, the host kernels on.
template <class Work>
void run_on_active_isa(Work work) {
  const fp_env_guard env;
  const host_isa isa = active_host_isa();
#if DSV4_HOST_SIMD
  const host_simd_scope simd_on(isa != host_isa::baseline, isa != host_isa::baseline);
#endif
  switch (isa) {
#if DSV4_HOST_CODEC_X86
    case host_isa::avx512: return run_avx512(work);
    case host_isa::avx2: return run_avx2(work);
#endif
    default: return run_baseline(work);
  }
}
template <row_format F, class RowAt>
void quantize_rows_on_thread(const format_layout& l, std::int64_t rows, RowAt row_at, std::int64_t count,
                             const typename F::input_type* in, const format_policy& p) {
  run_on_active_isa([&] { quantize_rows_any<F>(l, rows, row_at, count, in, p); });
}
template <row_format F, class Out, class RowAt>
void dequantize_rows_on_thread(const format_layout& l, std::int64_t rows, RowAt row_at, std::int64_t count, Out* out,
                               const format_policy& p, host_store store) {
  run_on_active_isa([&] { dequantize_rows_any<F, Out>(l, rows, row_at, count, out, p, store); });
}

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
  const auto row_at = [page, first](std::int64_t k) { return detail::page_row<std::uint8_t>{page, first + k}; };
  detail::quantize_rows_on_thread<F>(l, rows, row_at, count, in, p);
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
  const auto row_at = [page, first](std::int64_t k) { return detail::page_row<const std::uint8_t>{page, first + k}; };
  detail::dequantize_rows_on_thread<F, Out>(l, rows, row_at, count, out, p, store);
}

/// Most threads one bulk slot call (`host_insert_rows`, `host_gather_rows`) may use.
inline constexpr int kHostMaxThreads = 256;
/// Fewest tokens a thread of a bulk slot call takes: smaller batches use fewer threads (a
/// thread start costs about as much as converting tens of rows).
inline constexpr std::int64_t kHostRowsPerThread = 64;

namespace detail {

/// The checks `host_insert_rows` / `host_gather_rows` share, before any byte is touched: the
/// pool (`validate_pool_pages`), num_tokens >= 0, the pointers, threads in [1, kHostMaxThreads],
/// and every slot -1 or in [rows_per_page, num_slots) (std::invalid_argument naming the token
/// and the slot). `distinct`: also no slot twice (the insert on more than one thread, whose
/// threads would race on a repeated slot), with a num_slots-bit map allocated per call.
template <row_format F>
void require_slot_call(const format_layout& l, const pool_pages& pool, const std::int64_t* slots,
                       std::int64_t num_tokens, const void* values, int threads, bool distinct) {
  validate_pool_pages<F>(l, pool);
  require(pool.base != nullptr, "the pool has no pages (base is null)");
  (void)checked_mul(pool.num_pages, pool.page_bytes, "pool bytes (num_pages x page_bytes) overflow 64 bits");
  (void)checked_mul(pool.num_pages, pool.rows_per_page, "pool slots (num_pages x rows_per_page) overflow 64 bits");
  require(num_tokens >= 0, "num_tokens must be >= 0", {"num_tokens", num_tokens});
  require(num_tokens == 0 || (slots != nullptr && values != nullptr), "slots and the value rows must not be null",
          {"num_tokens", num_tokens});
  require(threads >= 1 && threads <= kHostMaxThreads, "threads must be in [1, kHostMaxThreads = 256]",
          {"threads", threads});
  (void)active_host_isa();  // a bad DSV4_CACHE_HOST_ISA throws here, not on a worker thread
  std::vector<std::uint64_t> seen;
  if (distinct) seen.assign(static_cast<std::size_t>(pool.num_slots() / 64 + 1), 0);
  for (std::int64_t k = 0; k < num_tokens; ++k) {
    const std::int64_t s = slots[k];
    require(classify_slot(pool, s) != slot_status::refused,
            "a slot must be -1 (padding) or in [rows_per_page, num_slots) (page 0 is the null page)", {"token", k},
            {"slot", s}, {"num_slots", pool.num_slots()});
    if (!distinct || s == -1) continue;
    std::uint64_t& word = seen[static_cast<std::size_t>(s / 64)];
    const std::uint64_t bit = std::uint64_t{1} << (s % 64);
    require((word & bit) == 0, "a slot appears twice in a multi-threaded insert (threads would race on it)",
            {"token", k}, {"slot", s});
    word |= bit;
  }
}

/// Runs fn(begin, end) over [0, count) split into contiguous chunks, one per thread: at most
/// `threads`, at least kHostRowsPerThread tokens each; chunk 0 on the calling thread. A thread
/// that cannot be started runs its chunk on the calling thread instead (same result).
template <class Fn>
void for_token_chunks(std::int64_t count, int threads, Fn fn) {
  const auto by_size = ceil_div<std::int64_t>(count, kHostRowsPerThread);
  const std::int64_t t = by_size < threads ? (by_size > 0 ? by_size : 1) : threads;
  const std::int64_t per = ceil_div(count, t);
  struct joiner {  // joins the started threads however this function is left
    std::vector<std::thread> threads;
    joiner() = default;
    joiner(const joiner&) = delete;
    joiner& operator=(const joiner&) = delete;
    joiner(joiner&&) = delete;
    joiner& operator=(joiner&&) = delete;
    ~joiner() {
      for (std::thread& w : threads) w.join();
    }
  } started;
  std::vector<std::thread>& workers = started.threads;
  std::vector<std::int64_t> inline_chunks;
  for (std::int64_t c = 1; c < t; ++c) {
    const std::int64_t b = c * per;
    const std::int64_t e = b + per < count ? b + per : count;
    if (b >= e) break;
#if defined(__cpp_exceptions)
    try {
      workers.emplace_back(fn, b, e);
    } catch (const std::system_error&) {
      inline_chunks.push_back(c);
    }
#else
    workers.emplace_back(fn, b, e);
#endif
  }
  fn(std::int64_t{0}, per < count ? per : count);
  for (const std::int64_t c : inline_chunks) fn(c * per, (c + 1) * per < count ? (c + 1) * per : count);
}

}  // namespace detail

/// Quantizes `num_tokens` rows into their slots of a pool on the host, split over up to
/// `threads` threads: the host counterpart of the generic CUDA `insert_rows` (cuda/kernels.cuh)
/// and of `insert_unit` (slot_work.hpp), for offload and cold tiers, layout conversion and
/// golden pages. Each thread runs the active ISA's bulk loops (`quantize_rows`).
/// - l: F::layout (fp32_state: bound to its row bytes); pool: its pages (page 0 the null page).
/// - slots[k]: token k's slot, page x rows_per_page + row; -1 is padding (nothing written).
/// - in: num_tokens x `l.values` values of F::input_type, row-major (row k for slots[k]).
/// - threads: 1 (the calling thread only) to kHostMaxThreads; each thread takes at least
///   kHostRowsPerThread tokens. The bytes are those of `quantize_row<F>` for each token, whatever
///   the thread count; on one thread a repeated slot gets its last token's row.
/// Errors (std::invalid_argument, before any byte is written): an invalid pool
/// (`validate_pool_pages`), num_tokens < 0, null pointers, threads outside [1, 256], a slot that
/// is neither -1 nor in [rows_per_page, num_slots), or with threads > 1 a slot given twice
/// (checked with a num_slots-bit map, num_slots / 8 bytes allocated per call).
/// Example, two threads: `host_insert_rows<formats::v4_fp8_ds_mla>(formats::v4_fp8_ds_mla::layout,
/// pool, slots, n, rows, formats::v4_fp8_ds_mla::default_policy, 2)`.
template <row_format F>
void host_insert_rows(const format_layout& l, const pool_pages& pool, const std::int64_t* slots,
                      std::int64_t num_tokens, const typename F::input_type* in,
                      const format_policy& p = F::default_policy, int threads = 1) {
  detail::require_slot_call<F>(l, pool, slots, num_tokens, in, threads, threads > 1);
  const pool_pages pl = pool;
  detail::for_token_chunks(num_tokens, threads, [&l, pl, slots, in, &p](std::int64_t b, std::int64_t e) {
    const std::int64_t* s = slots + b;
    const auto row_at = [pl, s](std::int64_t k) {
      const std::int64_t slot = s[k];
      if (slot < 0) return detail::page_row<std::uint8_t>{nullptr, 0};
      return detail::page_row<std::uint8_t>{pl.base + (slot / pl.rows_per_page) * pl.page_bytes,
                                            slot % pl.rows_per_page};
    };
    detail::quantize_rows_on_thread<F>(l, pl.rows_per_page, row_at, e - b, in + b * l.values, p);
  });
}

/// Dequantizes the rows of `num_tokens` slots of a pool into num_tokens x `l.values` floats or
/// BF16 (`Out`), row-major, on the host over up to `threads` threads: the host counterpart of the
/// generic CUDA `gather_rows` and of `gather_unit`. A padding slot (-1) reads row 0 of the null
/// page, as the kernel does: zeros when page 0 is zero-filled, as in an arena (a caller's own
/// buffer must keep it so). Values bit for bit those of
/// `dequantize_row<F, Out>`, whatever the thread count and `store` (`host_store`). Reads only
/// the slots' rows. Errors as `host_insert_rows` (repeated slots are allowed).
template <row_format F, class Out>
requires std::same_as<Out, float> || std::same_as<Out, bf16>
void host_gather_rows(const format_layout& l, const pool_pages& pool, const std::int64_t* slots,
                      std::int64_t num_tokens, Out* out, const format_policy& p = F::default_policy,
                      host_store store = host_store::cached, int threads = 1) {
  detail::require_slot_call<F>(l, pool, slots, num_tokens, out, threads, false);
  const pool_pages pl = pool;
  detail::for_token_chunks(num_tokens, threads, [&l, pl, slots, out, &p, store](std::int64_t b, std::int64_t e) {
    const std::int64_t* s = slots + b;
    const auto row_at = [pl, s](std::int64_t k) {
      const std::int64_t slot = s[k] < 0 ? 0 : s[k];
      return detail::page_row<const std::uint8_t>{pl.base + (slot / pl.rows_per_page) * pl.page_bytes,
                                                  slot % pl.rows_per_page};
    };
    detail::dequantize_rows_on_thread<F, Out>(l, pl.rows_per_page, row_at, e - b, out + b * l.values, p, store);
  });
}

}  // namespace dsv4::cache
