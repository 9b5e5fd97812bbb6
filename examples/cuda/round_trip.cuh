// dsv4-cache sample support: insert random rows into one pool of a device arena, gather them
// back, and check every byte against the host codec of the writer used. Shared by the CUDA
// sample (dsv4-cache-cuda-demo), the benchmark and the GPU tests. CUDA only; no fmt.
//
// A round trip of pool region R, whose registry format is F, picks (dispatch.hpp) the writer
// (the format's default, or the one asked for where F lists it) and the device path (the
// specialized kernels where F has them and they implement that writer's policy, the generic
// kernels otherwise), then checks:
//   1. a window [R.offset - 4 KiB, R.end + 4 KiB) of the arena (clipped to the arena) is read
//      before and after the insert: every byte must equal the host image, i.e. the window
//      before with the host codec (`quantize_row<F>` under the writer's policy) applied at each
//      accepted slot. So the written rows are bit-identical, rows not addressed are untouched,
//      the null page and the bytes on both sides of the pool (its canaries) are unchanged;
//   2. the refused slots are counted as the kernels' contract says (cuda/kernels.cuh: once per
//      token and launch; the insert refuses every slot outside [rows_per_page, num_slots) but
//      -1; the specialized gather only those outside [0, num_slots), the generic gather, run
//      once per output type, the insert's);
//   3. the gathered BF16 and float rows equal, bit for bit, the host codec's reading of the
//      host image (`dequantize_row<F>`; -1 and refused slots: zero rows on the specialized
//      path, the null page's row 0 on the generic one, `gather_unit`), and the output row
//      padding is untouched.
// A region of an engine's structure (vLLM's block pool, tokenspeed's planes: pages strided
// through the whole arena, interleaved with other tensors' pages) is filled through one
// request's block table as the engine's scheduler assigns blocks (ids 1 .. P from its free
// queue, in a shuffled order: a queue after churn), its rows mapped to slots by the engine's
// slot mapping on the host and on the device (`map_slots`, checked equal); P is bounded so
// that the window of check 1 stays within 16 MiB.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "dispatch.hpp"
#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/block_table.hpp"
#include "dsv4/cache/cuda/device_arena.cuh"
#include "dsv4/cache/cuda/error.cuh"
#include "dsv4/cache/cuda/kernels.cuh"
#include "dsv4/cache/fast_rows.hpp"
#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/cache/scalar_codec.hpp"
#include "dsv4/cache/slot_work.hpp"

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

/// How the rows of a round trip are drawn, and with which writer and path.
struct round_trip_options {
  std::int64_t max_tokens = 4096;  ///< Rows inserted (at most half the pool's usable slots).
  int streams = 1;                 ///< Split the insert over this many streams (same bytes expected).
  bool bad_slots = true;           ///< Add -1 and refused slots to the slot list.
  std::uint32_t seed = 1;
  std::optional<writer_id> writer;  ///< The writer, where the format lists it; else its default writer.
  bool force_generic = false;       ///< Run the generic kernels even where specialized ones exist.
};

/// What a round trip did and measured. `error` is empty when every check passed.
struct round_trip_result {
  std::string error;
  std::string format;                       ///< The region's registry format.
  std::string writer;                       ///< The writer whose bytes were written and checked.
  device_path path = device_path::generic;  ///< The kernels that ran.
  std::int64_t tokens = 0;                  ///< Rows written.
  std::int64_t refused = 0;                 ///< Slots the insert refused (counted).
  float insert_ms = 0;                      ///< cudaEvent time of the insert (streams == 1 only).
  float gather_ms = 0;                      ///< cudaEvent time of the gather (BF16 + float outputs).
  std::uint64_t insert_bytes = 0;           ///< Bytes the insert moved: rows and slots read, rows written.
  std::uint64_t gather_bytes = 0;           ///< Bytes the gather moved: slots and rows read, outputs written.
};

/// Random BF16 rows: mostly N(0, 1) scaled by 2^k per row (k in [-20, 20]); every 16th row
/// raw random bit patterns (NaN, inf and subnormals included) so that the NaN policy is
/// exercised too. The last 8 values of each row (callers use stride = values + 8) are NaN
/// markers the kernels must not read.
inline std::vector<bf16> random_rows(std::int64_t rows, std::int64_t stride, std::mt19937& rng) {
  std::vector<bf16> v(static_cast<std::size_t>(rows * stride), bf16{0x7FFF});  // padding columns: NaN marker
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-20, 20);
  std::uniform_int_distribution<int> bits(0, 0xFFFF);
  for (std::int64_t r = 0; r < rows; ++r) {
    const bool raw = r % 16 == 15;
    const float scale = exp2i(expo(rng));
    for (std::int64_t i = 0; i < stride - 8; ++i)
      v[static_cast<std::size_t>(r * stride + i)] =
          raw ? bf16{static_cast<std::uint16_t>(bits(rng))} : float_to_bf16(gauss(rng) * scale);
  }
  return v;
}

/// Random fp32 rows (compressor states), drawn as `random_rows`: N(0, 1) x 2^k, every 16th row
/// raw 32-bit patterns (NaN payloads, inf, subnormals), NaN markers in the last 8 values.
inline std::vector<float> random_f32_rows(std::int64_t rows, std::int64_t stride, std::mt19937& rng) {
  const float marker = cache::detail::bits_float(0x7FC01234U);
  std::vector<float> v(static_cast<std::size_t>(rows * stride), marker);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-20, 20);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (std::int64_t r = 0; r < rows; ++r) {
    const bool raw = r % 16 == 15;
    const float scale = exp2i(expo(rng));
    for (std::int64_t i = 0; i < stride - 8; ++i)
      v[static_cast<std::size_t>(r * stride + i)] = raw ? cache::detail::bits_float(bits(rng)) : gauss(rng) * scale;
  }
  return v;
}

namespace detail {

inline std::uint32_t bits_of(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline std::string where(const arena_layout& a, const pool_region& r, std::uint64_t arena_offset) {
  std::ostringstream s;
  s << "arena byte " << arena_offset;
  if (arena_offset >= r.offset_bytes && arena_offset < r.end_offset()) {
    const std::uint64_t in = arena_offset - r.offset_bytes;
    s << " (region of layer " << r.layer << ", pool " << r.pool << ": page "
      << in / static_cast<std::uint64_t>(r.page_stride) << ", byte " << in % static_cast<std::uint64_t>(r.page_stride)
      << " of the page stride)";
  } else {
    s << " (outside the region [" << r.offset_bytes << ", " << r.end_offset() << ") of " << a.total_bytes << ")";
  }
  return s.str();
}

/// Destroys the streams and events of a round trip on scope exit.
struct launch_resources {
  std::vector<cudaStream_t> streams;
  cudaEvent_t e0 = nullptr;
  cudaEvent_t e1 = nullptr;
  explicit launch_resources(int n) : streams(static_cast<std::size_t>(std::max(n, 1)), nullptr) {
    for (cudaStream_t& s : streams) DSV4_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    DSV4_CUDA_CHECK(cudaEventCreate(&e0));
    DSV4_CUDA_CHECK(cudaEventCreate(&e1));
  }
  launch_resources(const launch_resources&) = delete;
  launch_resources& operator=(const launch_resources&) = delete;
  ~launch_resources() {
    if (e0 != nullptr) (void)cudaEventDestroy(e0);
    if (e1 != nullptr) (void)cudaEventDestroy(e1);
    for (cudaStream_t s : streams)
      if (s != nullptr) (void)cudaStreamDestroy(s);
  }
};

/// `round_trip_any` for registry format F (the region's), with dispatch `d`.
template <row_format F>
round_trip_result round_trip_format(const device_arena& arena, const pool_region& r, const round_trip_options& opt,
                                    const region_dispatch& d) {
  using In = typename F::input_type;
  constexpr pool_format kFast = fast_format(F::layout);
  round_trip_result res;
  res.format = std::string(r.format.name);
  res.writer = std::string(to_string(d.writer->producer));
  res.path = d.path;
  const format_policy policy = d.writer->policy;
  const format_layout& l = r.format;  // bound for fp32_state
  const arena_layout& a = arena.layout();
  const raw_pool_view rv = arena.raw_view(r);
  const std::int64_t rpp = r.rows_per_page;
  const std::int64_t n_slots = r.num_slots();
  const std::int64_t values = l.values;
  const std::int64_t stride = values + 8;  // padded rows: the kernels must honour the stride
  const bool fast = d.path == device_path::fast;
  require(!fast || kFast != pool_format::other, "round_trip: the fast path needs a specialized format");
  std::mt19937 rng(opt.seed);

  // An engine's region: the pages of one request's block table, P of them (see the top).
  const bool engine = r.engine_group >= 0;
  constexpr std::int64_t kEngineWindowBytes = std::int64_t{16} << 20;
  const std::int64_t pages_used =
      engine ? std::min<std::int64_t>(r.num_pages, 1 + std::max<std::int64_t>(1, kEngineWindowBytes / r.page_stride))
             : r.num_pages;
  // Slots: half of the usable slots at most, random and distinct, plus padding and bad ones.
  // Own pools: slots of the pool; an engine's: rows of the request, mapped through its table.
  const std::int64_t usable = pages_used * rpp - r.first_usable_slot();
  std::vector<std::int64_t> slots;
  {
    const std::int64_t k = std::min<std::int64_t>(opt.max_tokens, (usable + 1) / 2);
    std::vector<std::int64_t> all(static_cast<std::size_t>(usable));
    for (std::int64_t i = 0; i < usable; ++i)
      all[static_cast<std::size_t>(i)] = (engine ? 0 : r.first_usable_slot()) + i;
    for (std::int64_t i = 0; i < k; ++i) {  // partial Fisher-Yates
      std::uniform_int_distribution<std::int64_t> pick(i, usable - 1);
      std::swap(all[static_cast<std::size_t>(i)], all[static_cast<std::size_t>(pick(rng))]);
    }
    slots.assign(all.begin(), all.begin() + k);
  }
  if (engine) {
    // The scheduler's blocks 1 .. P - 1 (block 0 is the null block), shuffled; one request.
    std::vector<std::int32_t> ids(static_cast<std::size_t>(pages_used - 1));
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int32_t>(i + 1);
    std::shuffle(ids.begin(), ids.end(), rng);
    const std::vector<std::int32_t> indptr = {0, static_cast<std::int32_t>(ids.size())};
    const block_table_view table = region_block_table(r, ids.data(), indptr.data(), 1);
    const std::vector<std::int64_t> request_rows = slots;  // rows of request 0
    const std::vector<std::int64_t> request_of(request_rows.size(), 0);
    for (std::size_t i = 0; i < slots.size(); ++i) slots[i] = table.slot(0, request_rows[i]);
    // The same mapping on the device.
    device_buffer<std::int32_t> d_ids(ids.size());
    device_buffer<std::int32_t> d_indptr(indptr.size());
    device_buffer<std::int64_t> d_req(request_of.size());
    device_buffer<std::int64_t> d_req_rows(request_rows.size());
    device_buffer<std::int64_t> d_mapped(request_rows.size());
    d_ids.upload(ids);
    d_indptr.upload(indptr);
    d_req.upload(request_of);
    d_req_rows.upload(request_rows);
    map_slots({d_ids.get(), d_indptr.get(), 1, r.num_pages, rpp}, d_req.get(), d_req_rows.get(),
              static_cast<std::int64_t>(request_rows.size()), d_mapped.get(), nullptr);
    DSV4_CUDA_CHECK(cudaDeviceSynchronize());
    if (d_mapped.download() != slots) {
      res.error = res.format + ": the device's slot mapping (map_slots) differs from the host's";
      return res;
    }
  }
  res.tokens = static_cast<std::int64_t>(slots.size());
  if (opt.bad_slots) {
    for (const std::int64_t s : {std::int64_t{0}, rpp - 1}) slots.push_back(s);  // the null page
    for (const std::int64_t s : {n_slots, n_slots + 1, n_slots + 1000, std::int64_t{-2},
                                 std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()})
      slots.push_back(s);  // outside the pool
    for (int i = 0; i < 5; ++i) slots.push_back(-1);
    std::shuffle(slots.begin(), slots.end(), rng);
  }
  const auto tokens = static_cast<std::int64_t>(slots.size());
  // The counts the kernels' contract gives (cuda/kernels.cuh), per launch: the insert and the
  // generic gather refuse every slot outside [rows_per_page, num_slots) but -1; the specialized
  // gather reads the null page and refuses only slots outside [0, num_slots) but -1.
  std::int64_t insert_refused = 0;
  std::int64_t fast_gather_refused = 0;
  for (const std::int64_t s : slots) {
    if (s == -1) continue;
    insert_refused += s < rpp || s >= n_slots ? 1 : 0;
    fast_gather_refused += s < 0 || s >= n_slots ? 1 : 0;
  }
  res.refused = insert_refused;
  const std::int64_t gather_refused = fast ? fast_gather_refused : 2 * insert_refused;  // generic: 2 launches

  std::vector<In> rows;
  if constexpr (std::is_same_v<In, float>)
    rows = random_f32_rows(tokens, stride, rng);
  else
    rows = random_rows(tokens, stride, rng);
  device_buffer<In> d_rows(rows.size());
  device_buffer<std::int64_t> d_slots(slots.size());
  d_rows.upload(rows);
  d_slots.upload(slots);

  // The window around the region, before.
  const std::uint64_t lo = r.offset_bytes >= 4096 ? r.offset_bytes - 4096 : 0;
  const std::uint64_t span =
      engine ? static_cast<std::uint64_t>((pages_used - 1) * r.page_stride + r.page_bytes) : r.padded_bytes;
  const std::uint64_t hi = std::min<std::uint64_t>(a.total_bytes, r.offset_bytes + span + 4096);
  std::vector<std::uint8_t> image(static_cast<std::size_t>(hi - lo));
  DSV4_CUDA_CHECK(cudaDeviceSynchronize());
  DSV4_CUDA_CHECK(cudaMemcpy(image.data(), arena.data() + lo, image.size(), cudaMemcpyDeviceToHost));
  const std::uint64_t errors_before = arena.read_error_count();
  std::uint8_t* const image_region = image.data() + (r.offset_bytes - lo);
  // Pages of the image by the region's page stride; only pages below pages_used lie in it.
  const pool_pages host_pool{image_region, r.page_stride, pages_used, rpp};

  // Insert, on one stream (timed) or split over several.
  launch_resources lr(opt.streams);
  const auto n_streams = static_cast<std::int64_t>(lr.streams.size());
  DSV4_CUDA_CHECK(cudaEventRecord(lr.e0, lr.streams[0]));
  for (std::int64_t s = 0; s < n_streams; ++s) {
    const std::int64_t first = tokens * s / n_streams;
    const std::int64_t count = tokens * (s + 1) / n_streams - first;
    cudaStream_t st = lr.streams[static_cast<std::size_t>(s)];
    if constexpr (kFast != pool_format::other) {
      if (fast) {
        insert_rows<kFast>(arena.view<kFast>(r), d_rows.get() + first * stride, stride, d_slots.get() + first, count,
                           arena.error_counter(), st, policy);
        continue;
      }
    }
    insert_rows<F>(rv, d_rows.get() + first * stride, stride, d_slots.get() + first, count, arena.error_counter(), st,
                   policy);
  }
  DSV4_CUDA_CHECK(cudaEventRecord(lr.e1, lr.streams[0]));
  DSV4_CUDA_CHECK(cudaDeviceSynchronize());
  if (n_streams == 1) DSV4_CUDA_CHECK(cudaEventElapsedTime(&res.insert_ms, lr.e0, lr.e1));
  const auto row_bytes = static_cast<std::uint64_t>(l.row_bytes);
  const auto in_bytes = static_cast<std::uint64_t>(values) * sizeof(In);
  res.insert_bytes = static_cast<std::uint64_t>(res.tokens) * (in_bytes + 8 + row_bytes);

  // Host image of the insert: the writer's codec at every accepted slot.
  for (std::int64_t k = 0; k < tokens; ++k) {
    const std::int64_t s = slots[static_cast<std::size_t>(k)];
    if (s < rpp || s >= n_slots) continue;
    quantize_row<F>(l, image_region + (s / rpp) * r.page_stride, rpp, s % rpp, rows.data() + k * stride, policy);
  }
  std::vector<std::uint8_t> after(image.size());
  DSV4_CUDA_CHECK(cudaMemcpy(after.data(), arena.data() + lo, after.size(), cudaMemcpyDeviceToHost));
  const auto mismatch = std::mismatch(after.begin(), after.end(), image.begin());
  if (mismatch.first != after.end()) {
    const auto at = static_cast<std::uint64_t>(mismatch.first - after.begin());
    std::ostringstream m;
    m << res.format << " (" << res.writer << ", " << to_string(d.path) << ") insert: " << where(a, r, lo + at)
      << " is 0x" << std::hex << static_cast<int>(*mismatch.first) << ", the host codec says 0x"
      << static_cast<int>(*mismatch.second);
    res.error = m.str();
  }
  const std::uint64_t inserted_errors = arena.read_error_count() - errors_before;
  if (res.error.empty() && inserted_errors != static_cast<std::uint64_t>(insert_refused))
    res.error = res.format + " (" + to_string(d.path).data() + ") insert: error counter is " +
                std::to_string(inserted_errors) + ", expected " + std::to_string(insert_refused);

  // Gather everything back (same slot list), both outputs, padded rows.
  const std::vector<float> f_fill(static_cast<std::size_t>(tokens * stride), -7.0f);
  const std::vector<bf16> b_fill(static_cast<std::size_t>(tokens * stride), bf16{0x1234});
  device_buffer<float> d_f(f_fill.size());
  device_buffer<bf16> d_b(b_fill.size());
  d_f.upload(f_fill);
  d_b.upload(b_fill);
  cudaStream_t s0 = lr.streams[0];
  DSV4_CUDA_CHECK(cudaEventRecord(lr.e0, s0));
  if constexpr (kFast != pool_format::other) {
    if (fast)
      gather_rows<kFast>(arena.view<kFast>(r), d_slots.get(), tokens, d_b.get(), d_f.get(), stride,
                         arena.error_counter(), s0);
  }
  if (!fast) {
    gather_rows<F, float>(rv, d_slots.get(), tokens, d_f.get(), stride, arena.error_counter(), s0, policy);
    gather_rows<F, bf16>(rv, d_slots.get(), tokens, d_b.get(), stride, arena.error_counter(), s0, policy);
  }
  DSV4_CUDA_CHECK(cudaEventRecord(lr.e1, s0));
  DSV4_CUDA_CHECK(cudaStreamSynchronize(s0));
  DSV4_CUDA_CHECK(cudaEventElapsedTime(&res.gather_ms, lr.e0, lr.e1));
  const auto n = static_cast<std::uint64_t>(tokens);
  const auto out_bytes = static_cast<std::uint64_t>(values) * (sizeof(float) + sizeof(bf16));
  res.gather_bytes = n * ((fast ? 1 : 2) * (8 + row_bytes) + out_bytes);
  const std::vector<float> got_f = d_f.download();
  const std::vector<bf16> got_b = d_b.download();
  std::vector<float> want_f(static_cast<std::size_t>(values));
  std::vector<bf16> want_b(static_cast<std::size_t>(values));
  for (std::int64_t k = 0; k < tokens && res.error.empty(); ++k) {
    const std::int64_t s = slots[static_cast<std::size_t>(k)];
    if (!fast) {  // the generic lanes' reading: the slot's row, or the null page's row 0
      for (int u = 0; u < F::units(l); ++u) {
        (void)gather_unit<F>(l, policy, host_pool, s, want_f.data(), u);
        (void)gather_unit<F>(l, policy, host_pool, s, want_b.data(), u);
      }
    } else if (s >= 0 && s < n_slots) {
      const std::uint8_t* page = image_region + (s / rpp) * r.page_stride;
      dequantize_row<F>(l, page, rpp, s % rpp, want_f.data(), policy);
      dequantize_row<F>(l, page, rpp, s % rpp, want_b.data(), policy);
    } else {
      std::fill(want_f.begin(), want_f.end(), 0.0f);
      std::fill(want_b.begin(), want_b.end(), bf16{0});
    }
    for (std::int64_t i = 0; i < stride; ++i) {
      const auto at = static_cast<std::size_t>(k * stride + i);
      const bool pad = i >= values;
      const std::uint32_t wf = pad ? bits_of(-7.0f) : bits_of(want_f[static_cast<std::size_t>(i)]);
      const std::uint16_t wb = pad ? std::uint16_t{0x1234} : want_b[static_cast<std::size_t>(i)].bits;
      if (bits_of(got_f[at]) != wf || got_b[at].bits != wb) {
        std::ostringstream m;
        m << res.format << " (" << res.writer << ", " << to_string(d.path) << ") gather: token " << k << " (slot " << s
          << ") value " << i << ": float bits 0x" << std::hex << bits_of(got_f[at]) << " / bf16 0x" << got_b[at].bits
          << ", expected 0x" << wf << " / 0x" << wb;
        res.error = m.str();
        break;
      }
    }
  }
  const std::uint64_t gathered_errors = arena.read_error_count() - errors_before - inserted_errors;
  if (res.error.empty() && gathered_errors != static_cast<std::uint64_t>(gather_refused))
    res.error = res.format + " (" + to_string(d.path).data() + ") gather: error counter is " +
                std::to_string(gathered_errors) + ", expected " + std::to_string(gather_refused);
  return res;
}

}  // namespace detail

/// Inserts random rows into region `r` of `arena` at random distinct usable slots, gathers them
/// back and checks everything listed at the top of this file, through the kernels and with the
/// writer `dispatch_region(r, opt.writer, opt.force_generic)` picks (any registry format,
/// compressor states included). Synchronizes the device. Throws `cuda_error` on a CUDA failure,
/// std::invalid_argument for a region of no registry format; a wrong byte or count is reported
/// in `error`.
inline round_trip_result round_trip_any(const device_arena& arena, const pool_region& r,
                                        const round_trip_options& opt) {
  const region_dispatch d = dispatch_region(r, opt.writer, opt.force_generic);
  round_trip_result res;
  visit_format(d.format_index, [&]<row_format F>() { res = detail::round_trip_format<F>(arena, r, opt, d); });
  return res;
}

}  // namespace dsv4::cache::cuda::sample
