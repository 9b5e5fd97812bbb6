// dsv4-cache sample support: insert random BF16 rows into one pool of a device arena, gather
// them back, and check every byte against the host codecs. Shared by the CUDA sample
// (dsv4-cache-cuda-demo), the benchmark and the GPU tests. CUDA only; no fmt.
//
// What one round trip checks, for a pool region R of format F:
//   1. a window [R.offset - 4 KiB, R.end + 4 KiB) of the arena (clipped to the arena) is read
//      before and after the insert: every byte must equal the host image, i.e. the window
//      before, with the host row codec (row_codec.hpp) applied at each accepted slot. So the
//      written rows are bit-identical, rows not addressed are untouched, the null page and the
//      bytes on both sides of the pool (its canaries) are unchanged;
//   2. the refused slots (null page, negative other than -1, past the pool) are counted once
//      each by the insert and (except null-page slots, which gather may read) by the gather;
//   3. the gathered BF16 and float rows equal the host dequantizers' output bit for bit (zero
//      rows for -1 and refused slots), and the output row padding is untouched.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/cuda/device_arena.cuh"
#include "dsv4/cache/cuda/error.cuh"
#include "dsv4/cache/cuda/kernels.cuh"
#include "dsv4/cache/row_codec.hpp"
#include "dsv4/cache/scalar_codec.hpp"

namespace dsv4::cache::cuda::sample {

/// A device buffer of `n` T (at least one element allocated), freed on destruction.
template <class T>
class device_buffer {
 public:
  explicit device_buffer(std::size_t n) : n_(n) {
    void* p = nullptr;
    DSV4_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)));
    p_ = static_cast<T*>(p);
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() { (void)cudaFree(p_); }
  [[nodiscard]] T* get() const { return p_; }
  [[nodiscard]] std::size_t size() const { return n_; }
  /// Host -> device, synchronous.
  void upload(const std::vector<T>& v) {
    DSV4_CUDA_CHECK(cudaMemcpy(p_, v.data(), std::min(v.size(), n_) * sizeof(T), cudaMemcpyHostToDevice));
    // From pageable memory cudaMemcpy may return before the DMA lands, and the kernels run on
    // non-blocking streams that do not wait for it: finish the copy here.
    DSV4_CUDA_CHECK(cudaDeviceSynchronize());
  }
  /// Device -> host, synchronous.
  [[nodiscard]] std::vector<T> download() const {
    std::vector<T> v(n_);
    DSV4_CUDA_CHECK(cudaMemcpy(v.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

/// True when the CUDA runtime sees at least one device. Never throws; clears the runtime error.
inline bool device_present() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  (void)cudaGetLastError();
  return e == cudaSuccess && n > 0;
}

/// How the rows of a round trip are drawn.
struct round_trip_options {
  std::int64_t max_tokens = 4096;  ///< Rows inserted (at most half the pool's usable slots).
  int streams = 1;                 ///< Split the insert over this many streams (same bytes expected).
  bool bad_slots = true;           ///< Add -1 and refused slots to the slot list.
  std::uint32_t seed = 1;
  quant_policy policy{};
};

/// What a round trip did and measured. `error` is empty when every check passed.
struct round_trip_result {
  std::string error;
  std::int64_t tokens = 0;         ///< Rows written.
  std::int64_t refused = 0;        ///< Slots the insert refused (counted).
  float insert_ms = 0;             ///< cudaEvent time of the insert (streams == 1 only).
  float gather_ms = 0;             ///< cudaEvent time of the gather (BF16 + float outputs).
  std::uint64_t insert_bytes = 0;  ///< Bytes the insert moved (see insert_bytes_moved).
  std::uint64_t gather_bytes = 0;  ///< Bytes the gather moved.
};

/// Random BF16 rows: mostly N(0, 1) scaled by 2^k per row (k in [-20, 20]); every 16th row
/// raw random bit patterns (NaN, inf and subnormals included) so that the NaN policy is
/// exercised too.
inline std::vector<bf16> random_rows(std::int64_t rows, std::int64_t stride, std::mt19937& rng) {
  std::vector<bf16> v(static_cast<std::size_t>(rows * stride), bf16{0x7FFF});  // padding columns: NaN marker
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-20, 20);
  std::uniform_int_distribution<int> bits(0, 0xFFFF);
  for (std::int64_t r = 0; r < rows; ++r) {
    const bool raw = r % 16 == 15;
    const float scale = exp2i(expo(rng));
    for (std::int64_t i = 0; i < stride - 8; ++i)  // callers use stride = values + 8
      v[static_cast<std::size_t>(r * stride + i)] =
          raw ? bf16{static_cast<std::uint16_t>(bits(rng))} : float_to_bf16(gauss(rng) * scale);
  }
  return v;
}

namespace detail {

inline std::uint32_t bits_of(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

template <pool_format F>
void host_quantize(const page_layout_t<F>& L, std::uint8_t* page, std::int64_t row, const bf16* in,
                   const quant_policy& pol) {
  if constexpr (F == pool_format::fp8_ds_mla)
    quantize_fp8_ds_mla_row(L, page, row, in, pol);
  else
    quantize_indexer_row(L, page, row, in, pol);
}

template <pool_format F, class Out>
void host_dequantize(const page_layout_t<F>& L, const std::uint8_t* page, std::int64_t row, Out* out) {
  if constexpr (F == pool_format::fp8_ds_mla)
    dequantize_fp8_ds_mla_row(L, page, row, out);
  else
    dequantize_indexer_row(L, page, row, out);
}

inline std::string where(const arena_layout& a, const pool_region& r, std::uint64_t arena_offset) {
  std::ostringstream s;
  s << "arena byte " << arena_offset;
  if (arena_offset >= r.offset_bytes && arena_offset < r.end_offset()) {
    const std::uint64_t in = arena_offset - r.offset_bytes;
    s << " (region of layer " << r.layer << ", pool " << r.pool << ": page "
      << in / static_cast<std::uint64_t>(r.page_bytes) << ", byte " << in % static_cast<std::uint64_t>(r.page_bytes)
      << " of the page)";
  } else {
    s << " (outside the region [" << r.offset_bytes << ", " << r.end_offset() << ") of " << a.total_bytes << ")";
  }
  return s.str();
}

}  // namespace detail

/// Inserts random rows into region `r` of `arena` (format F) at random distinct usable slots,
/// gathers them back and checks everything listed at the top of this file. Synchronizes the
/// device. Throws `cuda_error` on a CUDA failure; a wrong byte is reported in `error`.
template <pool_format F>
round_trip_result round_trip(const device_arena& arena, const pool_region& r, const round_trip_options& opt) {
  round_trip_result res;
  const arena_layout& a = arena.layout();
  const pool_view<F> v = arena.view<F>(r);
  const std::int64_t values = row_values(v);
  const std::int64_t stride = values + 8;  // padded rows: the kernels must honour the stride
  std::mt19937 rng(opt.seed);

  // Slots: half of the usable slots at most, random and distinct, plus padding and bad ones.
  const std::int64_t usable = v.num_slots() - v.first_usable_slot();
  std::vector<std::int64_t> slots;
  {
    const std::int64_t k = std::min<std::int64_t>(opt.max_tokens, (usable + 1) / 2);
    std::vector<std::int64_t> all(static_cast<std::size_t>(usable));
    for (std::int64_t i = 0; i < usable; ++i) all[static_cast<std::size_t>(i)] = v.first_usable_slot() + i;
    for (std::int64_t i = 0; i < k; ++i) {  // partial Fisher-Yates
      std::uniform_int_distribution<std::int64_t> pick(i, usable - 1);
      std::swap(all[static_cast<std::size_t>(i)], all[static_cast<std::size_t>(pick(rng))]);
    }
    slots.assign(all.begin(), all.begin() + k);
  }
  res.tokens = static_cast<std::int64_t>(slots.size());
  std::int64_t gather_refused = 0;
  if (opt.bad_slots) {
    const std::int64_t n = v.num_slots();
    const std::int64_t null_page[] = {0, v.rows_per_page - 1};  // refused by insert only
    const std::int64_t outside[] = {n,
                                    n + 1,
                                    n + 1000,
                                    -2,
                                    std::numeric_limits<std::int64_t>::min(),
                                    std::numeric_limits<std::int64_t>::max()};  // refused by both
    for (std::int64_t s : null_page) slots.push_back(s);
    for (std::int64_t s : outside) slots.push_back(s);
    for (int i = 0; i < 5; ++i) slots.push_back(-1);
    res.refused = 2 + 6;
    gather_refused = 6;
    std::shuffle(slots.begin(), slots.end(), rng);
  }
  const auto tokens = static_cast<std::int64_t>(slots.size());
  const std::vector<bf16> rows = random_rows(tokens, stride, rng);

  device_buffer<bf16> d_rows(rows.size());
  device_buffer<std::int64_t> d_slots(slots.size());
  d_rows.upload(rows);
  d_slots.upload(slots);

  // The window around the region, before.
  const std::uint64_t lo = r.offset_bytes >= 4096 ? r.offset_bytes - 4096 : 0;
  const std::uint64_t hi = std::min<std::uint64_t>(a.total_bytes, r.offset_bytes + r.padded_bytes + 4096);
  std::vector<std::uint8_t> image(static_cast<std::size_t>(hi - lo));
  DSV4_CUDA_CHECK(cudaDeviceSynchronize());
  DSV4_CUDA_CHECK(cudaMemcpy(image.data(), arena.data() + lo, image.size(), cudaMemcpyDeviceToHost));
  const std::uint64_t errors_before = arena.read_error_count();

  // Insert, on one stream (timed) or split over several.
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(std::max(opt.streams, 1)));
  for (cudaStream_t& s : streams) DSV4_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  DSV4_CUDA_CHECK(cudaEventCreate(&e0));
  DSV4_CUDA_CHECK(cudaEventCreate(&e1));
  try {
    const auto n_streams = static_cast<std::int64_t>(streams.size());
    DSV4_CUDA_CHECK(cudaEventRecord(e0, streams[0]));
    for (std::int64_t s = 0; s < n_streams; ++s) {
      const std::int64_t first = tokens * s / n_streams;
      const std::int64_t last = tokens * (s + 1) / n_streams;
      insert_rows<F>(v, d_rows.get() + first * stride, stride, d_slots.get() + first, last - first,
                     arena.error_counter(), streams[static_cast<std::size_t>(s)], opt.policy);
    }
    DSV4_CUDA_CHECK(cudaEventRecord(e1, streams[0]));
    DSV4_CUDA_CHECK(cudaDeviceSynchronize());
    if (n_streams == 1) DSV4_CUDA_CHECK(cudaEventElapsedTime(&res.insert_ms, e0, e1));
    res.insert_bytes = insert_bytes_moved(v, res.tokens);

    // Host image of the insert.
    for (std::int64_t k = 0; k < tokens; ++k) {
      const std::int64_t s = slots[static_cast<std::size_t>(k)];
      if (s < v.first_usable_slot() || s >= v.num_slots()) continue;
      std::uint8_t* page = image.data() + (r.offset_bytes - lo) +
                           static_cast<std::uint64_t>(s / v.rows_per_page) * static_cast<std::uint64_t>(v.page_bytes);
      detail::host_quantize<F>(v.layout, page, s % v.rows_per_page, rows.data() + k * stride, opt.policy);
    }
    std::vector<std::uint8_t> after(image.size());
    DSV4_CUDA_CHECK(cudaMemcpy(after.data(), arena.data() + lo, after.size(), cudaMemcpyDeviceToHost));
    const auto mismatch = std::mismatch(after.begin(), after.end(), image.begin());
    if (mismatch.first != after.end()) {
      const auto at = static_cast<std::uint64_t>(mismatch.first - after.begin());
      std::ostringstream s;
      s << to_string(F) << " insert: " << detail::where(a, r, lo + at) << " is 0x" << std::hex
        << static_cast<int>(*mismatch.first) << ", the host codec says 0x" << static_cast<int>(*mismatch.second);
      res.error = s.str();
    }
    const std::uint64_t inserted_errors = arena.read_error_count() - errors_before;
    if (res.error.empty() && inserted_errors != static_cast<std::uint64_t>(res.refused))
      res.error = std::string(to_string(F)) + " insert: error counter is " + std::to_string(inserted_errors) +
                  ", expected " + std::to_string(res.refused);

    // Gather everything back (same slot list), both outputs, padded rows.
    const std::vector<float> f_fill(static_cast<std::size_t>(tokens * stride), -7.0f);
    const std::vector<bf16> b_fill(static_cast<std::size_t>(tokens * stride), bf16{0x1234});
    device_buffer<float> d_f(f_fill.size());
    device_buffer<bf16> d_b(b_fill.size());
    d_f.upload(f_fill);
    d_b.upload(b_fill);
    DSV4_CUDA_CHECK(cudaEventRecord(e0, streams[0]));
    gather_rows<F>(v, d_slots.get(), tokens, d_b.get(), d_f.get(), stride, arena.error_counter(), streams[0]);
    DSV4_CUDA_CHECK(cudaEventRecord(e1, streams[0]));
    DSV4_CUDA_CHECK(cudaStreamSynchronize(streams[0]));
    DSV4_CUDA_CHECK(cudaEventElapsedTime(&res.gather_ms, e0, e1));
    res.gather_bytes = gather_bytes_moved(v, tokens, true, true);
    const std::vector<float> got_f = d_f.download();
    const std::vector<bf16> got_b = d_b.download();
    std::vector<float> want_f(static_cast<std::size_t>(values));
    std::vector<bf16> want_b(static_cast<std::size_t>(values));
    for (std::int64_t k = 0; k < tokens && res.error.empty(); ++k) {
      const std::int64_t s = slots[static_cast<std::size_t>(k)];
      if (s >= 0 && s < v.num_slots()) {
        const std::uint8_t* page =
            image.data() + (r.offset_bytes - lo) +
            static_cast<std::uint64_t>(s / v.rows_per_page) * static_cast<std::uint64_t>(v.page_bytes);
        detail::host_dequantize<F>(v.layout, page, s % v.rows_per_page, want_f.data());
        detail::host_dequantize<F>(v.layout, page, s % v.rows_per_page, want_b.data());
      } else {
        std::fill(want_f.begin(), want_f.end(), 0.0f);
        std::fill(want_b.begin(), want_b.end(), bf16{0});
      }
      for (std::int64_t i = 0; i < stride; ++i) {
        const auto at = static_cast<std::size_t>(k * stride + i);
        const bool pad = i >= values;
        const std::uint32_t wf = pad ? detail::bits_of(-7.0f) : detail::bits_of(want_f[static_cast<std::size_t>(i)]);
        const std::uint16_t wb = pad ? std::uint16_t{0x1234} : want_b[static_cast<std::size_t>(i)].bits;
        if (detail::bits_of(got_f[at]) != wf || got_b[at].bits != wb) {
          std::ostringstream m;
          m << to_string(F) << " gather: token " << k << " (slot " << s << ") value " << i << ": float bits 0x"
            << std::hex << detail::bits_of(got_f[at]) << " / bf16 0x" << got_b[at].bits << ", expected 0x" << wf
            << " / 0x" << wb;
          res.error = m.str();
          break;
        }
      }
    }
    const std::uint64_t gathered_errors = arena.read_error_count() - errors_before - inserted_errors;
    if (res.error.empty() && gathered_errors != static_cast<std::uint64_t>(gather_refused))
      res.error = std::string(to_string(F)) + " gather: error counter is " + std::to_string(gathered_errors) +
                  ", expected " + std::to_string(gather_refused);
  } catch (...) {
    (void)cudaEventDestroy(e0);
    (void)cudaEventDestroy(e1);
    for (cudaStream_t s : streams) (void)cudaStreamDestroy(s);
    throw;
  }
  (void)cudaEventDestroy(e0);
  (void)cudaEventDestroy(e1);
  for (cudaStream_t s : streams) (void)cudaStreamDestroy(s);
  return res;
}

/// `round_trip<F>` with the specialized kernels of r.format (v4.fp8_ds_mla, the FP8 indexers,
/// v4.indexer_mxfp4). Throws std::invalid_argument for any other format.
inline round_trip_result round_trip_any(const device_arena& arena, const pool_region& r,
                                        const round_trip_options& opt) {
  switch (fast_format(r.format)) {
    case pool_format::fp8_ds_mla: return round_trip<pool_format::fp8_ds_mla>(arena, r, opt);
    case pool_format::indexer_fp8: return round_trip<pool_format::indexer_fp8>(arena, r, opt);
    case pool_format::indexer_mxfp4: return round_trip<pool_format::indexer_mxfp4>(arena, r, opt);
    default: break;
  }
  fail("round_trip: the region's format has no specialized kernels (use insert_rows<F> / gather_rows<F>)");
}

}  // namespace dsv4::cache::cuda::sample
