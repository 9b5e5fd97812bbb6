// dsv4-cache: the device arena of a memory plan, and the kernel views of its pools.
//
// One `cudaMalloc` holds every pool region of `arena_layout` (arena_layout.hpp: own pools, groups
// in the seed's order, layers ascending, pools in spec order, each region 256 B aligned; or an
// engine's structure as the engine lays it, vLLM's num_blocks x bytes_per_block block pool),
// followed by one 8-byte error counter that the insert/gather kernels increment for every
// refused slot:
//
//   [ region 0 | pad | region 1 | pad | ... | region n-1 | pad ][ u64 error counter ]
//   ^ base                                                     ^ base + layout.total_bytes
//
// A kernel sees a pool through a `pool_view<F>`: a trivially copyable value (base pointer,
// page bytes, page count, rows per page, the row format's page layout) passed by value as a
// kernel parameter, FlashInfer's `paged_kv_t` pattern. CUDA only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/cuda/error.cuh"
#include "dsv4/cache/fast_rows.hpp"
#include "dsv4/cache/row_format.hpp"
#include "dsv4/cache/slot_work.hpp"

namespace dsv4::cache::cuda {

// The specialized-kernel formats and their page layouts live in fast_rows.hpp (host and device).
using cache::fast_format;
using cache::is_kernel_format_v;
using cache::page_layout_t;
using cache::pool_format;

/// One pool of one layer as a kernel sees it: `[num_pages, page_bytes]` bytes at `base`, each
/// page holding `rows_per_page` rows in the split layout of `layout`. Slot s is row
/// s % rows_per_page of page s / rows_per_page; page 0 is the null page (never written).
template <pool_format F>
struct pool_view {
  static_assert(is_kernel_format_v<F>, "pool_view is for fp8_ds_mla and indexer-key pools");
  using layout_type = page_layout_t<F>;
  static constexpr pool_format format = F;

  std::uint8_t* base = nullptr;    ///< Device address of page 0.
  std::int64_t page_bytes = 0;     ///< Bytes from one page to the next.
  std::int64_t num_pages = 0;      ///< Pages, the null page included.
  std::int64_t rows_per_page = 0;  ///< = layout.rows_per_page.
  layout_type layout{};            ///< Where row r's data and scales are inside a page.

  /// Slots of the pool: num_pages x rows_per_page (the null page's included).
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t num_slots() const { return num_pages * rows_per_page; }
  /// First slot a writer may use (the first row of page 1).
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t first_usable_slot() const { return rows_per_page; }
  /// Device address of page `p` (0 <= p < num_pages; unchecked).
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::uint8_t* page(std::int64_t p) const { return base + p * page_bytes; }
};

using fp8_ds_mla_pool_view = pool_view<pool_format::fp8_ds_mla>;
using indexer_fp8_pool_view = pool_view<pool_format::indexer_fp8>;
using indexer_mxfp4_pool_view = pool_view<pool_format::indexer_mxfp4>;
static_assert(std::is_trivially_copyable_v<fp8_ds_mla_pool_view>);
static_assert(std::is_trivially_copyable_v<indexer_fp8_pool_view>);
static_assert(std::is_trivially_copyable_v<indexer_mxfp4_pool_view>);

/// Any pool (compressor states included) with its registry format: what the generic kernels
/// take (`pages()` is their `pool_pages`).
struct raw_pool_view {
  std::uint8_t* base = nullptr;
  std::int64_t page_bytes = 0;  ///< Bytes from one page to the next (the region's page stride).
  std::int64_t num_pages = 0;
  std::int64_t rows_per_page = 0;
  std::int64_t row_bytes = 0;
  format_layout format{};  ///< Bound (fp32_state with the pool's row bytes).
  [[nodiscard]] constexpr pool_pages pages() const { return {base, page_bytes, num_pages, rows_per_page}; }
};
static_assert(std::is_trivially_copyable_v<raw_pool_view>);

/// The device memory of a whole memory plan: one allocation, zero-filled, move-only.
class device_arena {
 public:
  /// Bytes of the error counter after the last region.
  static constexpr std::uint64_t kCounterBytes = sizeof(unsigned long long);

  /// Allocates `layout.total_bytes` + 8 bytes on the current device with one `cudaMalloc` and
  /// zero-fills them on `stream`, then synchronizes `stream` once (so that any stream may use
  /// the arena afterwards; the kernels never synchronize). Throws `cuda_error` if the
  /// allocation or the fill fails (cudaErrorMemoryAllocation when the plan does not fit).
  explicit device_arena(const arena_layout& layout, cudaStream_t stream = nullptr) : layout_(layout) {
    const std::uint64_t bytes = checked_add(layout_.total_bytes, kCounterBytes, "arena size overflows 64 bits");
    void* p = nullptr;
    DSV4_CUDA_CHECK(cudaMalloc(&p, static_cast<std::size_t>(bytes)));
    data_ = static_cast<std::uint8_t*>(p);
    try {
      DSV4_CUDA_CHECK(cudaMemsetAsync(data_, 0, static_cast<std::size_t>(bytes), stream));
      DSV4_CUDA_CHECK(cudaStreamSynchronize(stream));
    } catch (...) {
      cudaFree(data_);
      throw;
    }
  }

  device_arena(const device_arena&) = delete;
  device_arena& operator=(const device_arena&) = delete;
  /// Takes `other`'s allocation; `other` is left empty (data() == nullptr).
  device_arena(device_arena&& other) noexcept : layout_(other.layout_), data_(std::exchange(other.data_, nullptr)) {}
  /// Frees this arena's allocation and takes `other`'s.
  device_arena& operator=(device_arena&& other) noexcept {
    if (this != &other) {
      release();
      layout_ = other.layout_;
      data_ = std::exchange(other.data_, nullptr);
    }
    return *this;
  }
  /// Frees the allocation (`cudaFree` errors are ignored: a destructor must not throw).
  ~device_arena() { release(); }

  /// The layout this arena was built from.
  [[nodiscard]] const arena_layout& layout() const noexcept { return layout_; }
  /// Device address of the arena's first byte (nullptr after a move).
  [[nodiscard]] std::uint8_t* data() const noexcept { return data_; }
  /// Bytes allocated: layout().total_bytes + kCounterBytes.
  [[nodiscard]] std::uint64_t allocated_bytes() const noexcept { return layout_.total_bytes + kCounterBytes; }

  /// Device address of the kernels' refused-slot counter (after the last region); nullptr
  /// after a move.
  [[nodiscard]] unsigned long long* error_counter() const noexcept {
    return data_ == nullptr ? nullptr : reinterpret_cast<unsigned long long*>(data_ + layout_.total_bytes);
  }
  /// Copies the counter to the host. Synchronizes `stream` (this is the one call that does):
  /// the count covers every kernel enqueued on `stream` before it. Throws `cuda_error`.
  [[nodiscard]] std::uint64_t read_error_count(cudaStream_t stream = nullptr) const {
    unsigned long long v = 0;
    DSV4_CUDA_CHECK(cudaMemcpyAsync(&v, error_counter(), sizeof v, cudaMemcpyDeviceToHost, stream));
    DSV4_CUDA_CHECK(cudaStreamSynchronize(stream));
    return v;
  }
  /// Zeroes the counter on `stream` (asynchronous). Throws `cuda_error`.
  void reset_error_count(cudaStream_t stream = nullptr) const {
    DSV4_CUDA_CHECK(cudaMemsetAsync(error_counter(), 0, sizeof(unsigned long long), stream));
  }

  /// Device address of region `r`'s page 0. Throws std::invalid_argument if `r` does not lie
  /// inside this arena (a region of another layout).
  [[nodiscard]] std::uint8_t* region_data(const pool_region& r) const {
    require(data_ != nullptr, "device_arena was moved from");
    // The views index page p at offset + p x page_stride (own pools: page_stride = page_bytes;
    // an engine's block pool: bytes_per_block): the last page must end inside the arena.
    require(r.num_pages >= 0 && r.page_bytes >= 0 && r.page_bytes <= r.page_stride,
            "pool region's pages overlap (page_bytes above page_stride)", {"num_pages", r.num_pages},
            {"page_bytes", r.page_bytes}, {"page_stride", r.page_stride});
    require(r.offset_bytes <= layout_.total_bytes && r.span_bytes() <= layout_.total_bytes - r.offset_bytes,
            "pool region lies outside the arena", {"offset_bytes", r.offset_bytes}, {"span_bytes", r.span_bytes()},
            {"arena_bytes", layout_.total_bytes});
    return data_ + r.offset_bytes;
  }

  /// Raw view of any region (compressor-state pools included). Errors as `region_data`.
  [[nodiscard]] raw_pool_view raw_view(const pool_region& r) const {
    return {region_data(r), r.page_stride, r.num_pages, r.rows_per_page, r.row_bytes, r.format};
  }

  /// Typed kernel view of region `r`, whose format must be F. Throws std::invalid_argument for
  /// another format, or as `region_data`.
  template <pool_format F>
  [[nodiscard]] pool_view<F> view(const pool_region& r) const {
    require(fast_format(r.format) == F, "pool region has another row format",
            {"region_format", format_index(r.format.name)}, {"view_format", static_cast<int>(F)});
    pool_view<F> v;
    v.base = region_data(r);
    v.page_bytes = r.page_stride;  // bytes from one page to the next (vLLM: bytes_per_block)
    v.num_pages = r.num_pages;
    v.rows_per_page = r.rows_per_page;
    if constexpr (F == pool_format::fp8_ds_mla)
      v.layout = layout_.fp8_ds_mla_layout(r);
    else
      v.layout = layout_.indexer_layout(r);
    return v;
  }

  /// Typed view of pool `pool` of model layer `layer` in group `id` (see arena_layout::find).
  template <pool_format F>
  [[nodiscard]] pool_view<F> view(group_id id, int layer, int pool = 0) const {
    return view<F>(layout_.find(id, layer, pool));
  }

 private:
  void release() noexcept {
    if (data_ != nullptr) (void)cudaFree(data_);
    data_ = nullptr;
  }

  arena_layout layout_;
  std::uint8_t* data_ = nullptr;
};

}  // namespace dsv4::cache::cuda
