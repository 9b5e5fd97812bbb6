// dsv4-cache: insert (quantize BF16 rows into paged pools) and gather (dequantize them back)
// kernels. CUDA only. Two kinds, both taking the writer's `format_policy` (the format's default
// writer unless one is asked for), so that the bytes depend on the writer, never on the kernel:
//   generic (end of file): `insert_rows<F>` / `gather_rows<F>` for every registered format F
//     and every policy, one lane per (token, unit of work), running slot_work.hpp's
//     `insert_unit` / `gather_unit` (the functions the host tests run with emulated lanes);
//   specialized (below): warp-per-row kernels with 16 B vector accesses for v4.fp8_ds_mla and
//     the indexer keys, the V4 hot path, for the policies `fast_kernels_support` accepts; their
//     lane work is fast_rows.hpp's `insert_chunk` / `gather_chunk` (host-tested the same way).
// `device_path_for(format, policy)` (fast_rows.hpp) says which one a pool takes.
//
// Slots: token k goes to slot s = slots[k] = page * rows_per_page + row of the pool.
//   s == -1                          padding: skipped (insert writes nothing; gather writes zeros
//                                    (specialized) or reads the null page's row 0 (generic))
//   s in [rows_per_page, num_slots)  written / read (page 0, the null page, is never written)
//   anything else                    refused: nothing written and, when an error counter is
//                                    given, counted with one atomicAdd per token and launch;
//                                    the generic gather reads the null page's row 0 for it
// The specialized gather also reads the null page's rows (s in [0, rows_per_page)): block tables
// point padding at it and it holds zeros; it counts only s outside [0, num_slots) (and not -1),
// and writes zeros for them.
//
// Work split (memory-bound, so the goal is full-width coalesced 16 B accesses):
//   fp8_ds_mla (D = 512):   one warp per row; lane l owns chunks l and l + 32 of 8 values (16 B
//                           of BF16 in, 8 B of E4M3 out; the 8 RoPE chunks are copied as is);
//                           a 64-value scale block is 8 lanes: amax by 3 xor-shuffles.
//   indexer FP8 (d = 128):  16 lanes per row (two rows per warp), one chunk each; the 128-value
//                           block is the 16 lanes: 4 xor-shuffles.
//   indexer MXFP4 (d = 128): 16 lanes per row; a 32-value block is 4 lanes: 2 xor-shuffles;
//                           each lane stores 4 packed bytes.
// Every element goes through the shared scalar codec (chunk_codec.hpp -> scalar_codec.hpp);
// the block amax is an integer max of BF16 bits, order-independent, so the results are
// bit-identical to the registry formats' codecs for every input, NaN included (float output
// NaNs are made canonical on both sides, see canonical_nan).
//
// Launch helpers validate the shapes once on the host (std::invalid_argument), enqueue on the
// given stream and never synchronize; launch errors throw `cuda_error`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "dsv4/cache/block_table.hpp"
#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/chunk_codec.hpp"
#include "dsv4/cache/cuda/device_arena.cuh"
#include "dsv4/cache/cuda/error.cuh"
#include "dsv4/cache/fast_rows.hpp"

namespace dsv4::cache::cuda {

/// Threads per block of every kernel here.
inline constexpr int kThreadsPerBlock = 256;

/// Static shape of a specialized format in the kernels (fast_rows.hpp).
template <pool_format F>
using row_kernel_traits = fast::row_traits<F>;

/// Values of one row of the pool (the BF16 input / output width): head_dim (512) for
/// fp8_ds_mla, index_head_dim (128) for indexer keys.
template <pool_format F>
[[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t row_values(const pool_view<F>& p) {
  return fast::row_values<F>(p.layout);
}

namespace detail {

static_assert(sizeof(bf16x8) == sizeof(uint4) && alignof(uint4) == 16);

__device__ __forceinline__ bf16x8 to_chunk(uint4 v) { return bf16x8{{v.x, v.y, v.z, v.w}}; }
__device__ __forceinline__ uint4 to_uint4(const bf16x8& c) { return make_uint4(c.w[0], c.w[1], c.w[2], c.w[3]); }

/// Max of `m` over aligned groups of `Width` lanes (a power of two) among the lanes of `mask`.
template <int Width>
__device__ __forceinline__ amax_bits group_max(amax_bits m, unsigned mask) {
#pragma unroll
  for (int o = Width / 2; o > 0; o /= 2) {
    const amax_bits other{__shfl_xor_sync(mask, m.all, o), __shfl_xor_sync(mask, m.finite, o)};
    m = combine(m, other);
  }
  return m;
}

/// The lanes of this thread's row group (kLanesPerRow consecutive lanes of the warp).
template <int Lanes>
__device__ __forceinline__ unsigned row_group_mask() {
  if constexpr (Lanes == 32) {
    return 0xFFFFFFFFU;
  } else {
    const unsigned first = threadIdx.x & 31U & ~static_cast<unsigned>(Lanes - 1);
    return ((1U << Lanes) - 1U) << first;
  }
}

/// Whether `slot` may be written (in [rows_per_page, num_slots)) / read (in [0, num_slots)).
template <pool_format F>
__device__ __forceinline__ bool writable_slot(const pool_view<F>& p, std::int64_t slot) {
  return slot >= p.rows_per_page && slot < p.num_slots();
}
template <pool_format F>
__device__ __forceinline__ bool readable_slot(const pool_view<F>& p, std::int64_t slot) {
  return slot >= 0 && slot < p.num_slots();
}

/// Writes 8 floats and/or 8 BF16 values of chunk c of an output row.
__device__ __forceinline__ void store_chunk(const float (&v)[8], bf16* out_bf16, float* out_f32, int c) {
  if (out_f32 != nullptr) {
    float4* o = reinterpret_cast<float4*>(out_f32 + c * kChunkValues);
    o[0] = make_float4(v[0], v[1], v[2], v[3]);
    o[1] = make_float4(v[4], v[5], v[6], v[7]);
  }
  if (out_bf16 != nullptr) *reinterpret_cast<uint4*>(out_bf16 + c * kChunkValues) = to_uint4(pack_bf16x8(v));
}

/// Zeroes this lane's chunks of a skipped or refused output row.
template <int Lanes>
__device__ __forceinline__ void zero_row(bf16* out_bf16, float* out_f32, int chunks, int lane) {
  const float z[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int c = lane; c < chunks; c += Lanes) store_chunk(z, out_bf16, out_f32, c);
}

// ---- kernels: thread t serves token t / kLanesPerRow as lane t % kLanesPerRow ----

template <pool_format F>
__global__ void __launch_bounds__(kThreadsPerBlock)
    insert_kernel(pool_view<F> pool, const bf16* __restrict__ in, std::int64_t in_row_stride,
                  const std::int64_t* __restrict__ slots, std::int64_t num_tokens,
                  unsigned long long* __restrict__ error_counter, format_policy policy) {
  using T = row_kernel_traits<F>;
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t token = t / T::kLanesPerRow;
  const int lane = static_cast<int>(threadIdx.x % T::kLanesPerRow);
  if (token >= num_tokens) return;  // whole row groups leave together
  const std::int64_t slot = __ldg(slots + token);
  if (slot == -1) return;
  if (!writable_slot(pool, slot)) {
    if (lane == 0 && error_counter != nullptr) atomicAdd(error_counter, 1ULL);
    return;
  }
  std::uint8_t* page = pool.page(slot / pool.rows_per_page);
  const std::int64_t row = slot % pool.rows_per_page;
  const uint4* src = reinterpret_cast<const uint4*>(in + token * in_row_stride);
  const unsigned mask = row_group_mask<T::kLanesPerRow>();
  const int chunks = fast::row_chunks<F>(pool.layout);
  uint4 raw[T::kMaxIters];
#pragma unroll
  for (int it = 0; it < T::kMaxIters; ++it) {  // all loads first: memory-level parallelism
    const int c = it * T::kLanesPerRow + lane;
    raw[it] = c < chunks ? __ldg(src + c) : make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (int it = 0; it < T::kMaxIters; ++it) {
    if (it * T::kLanesPerRow >= chunks) break;  // uniform over the row group
    const int c = it * T::kLanesPerRow + lane;
    const bf16x8 x = to_chunk(raw[it]);
    // Whole blocks per lane group: fp8_ds_mla's NoPE is a multiple of 64 values, an indexer
    // key's d of its block (the formats' rules), so every lane of a block takes part.
    const bool in_block = fast::chunk_in_block<F>(pool.layout, c);
    const amax_bits block = group_max<T::kBlockLanes>(in_block ? chunk_amax(x) : amax_bits{}, mask);
    if (c < chunks) fast::insert_chunk<F>(pool.layout, page, row, c, x, block, policy);
  }
  if (lane == 0) fast::insert_row_tail<F>(pool.layout, page, row);
}

template <pool_format F>
__global__ void __launch_bounds__(kThreadsPerBlock)
    gather_kernel(pool_view<F> pool, const std::int64_t* __restrict__ slots, std::int64_t num_tokens,
                  bf16* __restrict__ out_bf16, float* __restrict__ out_f32, std::int64_t out_row_stride,
                  unsigned long long* __restrict__ error_counter) {
  using T = row_kernel_traits<F>;
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t token = t / T::kLanesPerRow;
  const int lane = static_cast<int>(threadIdx.x % T::kLanesPerRow);
  if (token >= num_tokens) return;
  const std::int64_t slot = __ldg(slots + token);
  bf16* ob = out_bf16 != nullptr ? out_bf16 + token * out_row_stride : nullptr;
  float* of = out_f32 != nullptr ? out_f32 + token * out_row_stride : nullptr;
  const int chunks = fast::row_chunks<F>(pool.layout);
  if (!readable_slot(pool, slot)) {
    if (slot != -1 && lane == 0 && error_counter != nullptr) atomicAdd(error_counter, 1ULL);
    zero_row<T::kLanesPerRow>(ob, of, chunks, lane);
    return;
  }
  const std::uint8_t* page = pool.page(slot / pool.rows_per_page);
  const std::int64_t row = slot % pool.rows_per_page;
#pragma unroll
  for (int it = 0; it < T::kMaxIters; ++it) {
    const int c = it * T::kLanesPerRow + lane;
    if (c >= chunks) break;
    const fast::gathered_chunk g = fast::gather_chunk<F>(pool.layout, page, row, c);
    if (g.is_raw) {  // stored as BF16: those bits out, floats exact
      if (of != nullptr) store_chunk(g.v, nullptr, of, c);
      if (ob != nullptr) *reinterpret_cast<uint4*>(ob + c * kChunkValues) = to_uint4(g.raw);
    } else {
      store_chunk(g.v, ob, of, c);
    }
  }
}

// ---- host-side validation ----

inline void require_aligned(const void* p, std::uintptr_t alignment, const char* rule) {
  require(reinterpret_cast<std::uintptr_t>(p) % alignment == 0, rule,
          {"address_mod", static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p) % alignment)},
          {"alignment", static_cast<std::uint64_t>(alignment)});
}

/// Checks a view once on the host: everything the kernels assume without checking.
template <pool_format F>
void validate_view(const pool_view<F>& p) {
  using T = row_kernel_traits<F>;
  require(p.base != nullptr, "pool view has a null base pointer");
  require_aligned(p.base, 16, "pool base must be 16-byte aligned");
  require(p.num_pages >= 1 && p.rows_per_page >= 1, "pool view needs pages and rows", {"num_pages", p.num_pages},
          {"rows_per_page", p.rows_per_page});
  require(p.layout.rows_per_page == p.rows_per_page, "pool view rows_per_page differs from its layout's",
          {"rows_per_page", p.rows_per_page}, {"layout_rows_per_page", p.layout.rows_per_page});
  require(p.page_bytes % 16 == 0 && p.page_bytes >= p.layout.page_bytes(),
          "pool page_bytes must be a multiple of 16 and hold the layout's page", {"page_bytes", p.page_bytes},
          {"layout_page_bytes", p.layout.page_bytes()});
  (void)checked_mul(p.num_pages, p.page_bytes, "pool bytes overflow 64 bits");
  if constexpr (F == pool_format::fp8_ds_mla) {
    const fp8_ds_mla_format f = make_fp8_ds_mla_format(p.layout.format.head_dim, p.layout.format.rope_dim);
    // 16 B RoPE chunks and 16 B-aligned rows: rope_dim % 8 == 0 (NoPE % 64 is the format's rule).
    require(f.rope_dim % 8 == 0, "fp8_ds_mla kernels need qk_rope_head_dim % 8 == 0", {"rope_dim", f.rope_dim});
    require(f.head_dim <= T::kMaxIters * T::kLanesPerRow * kChunkValues, "fp8_ds_mla kernels need head_dim <= 1024",
            {"head_dim", f.head_dim});
  } else {
    const indexer_format want = F == pool_format::indexer_fp8 ? indexer_format::fp8 : indexer_format::mxfp4;
    require(p.layout.format.format == want, "indexer pool view layout has the other key format");
    const indexer_row_format f = make_indexer_row_format(want, p.layout.format.index_head_dim);
    require(f.value_bytes == p.layout.format.value_bytes && f.scale_bytes == p.layout.format.scale_bytes,
            "indexer pool view layout is not a valid indexer format");
    // Whole scale blocks per lane group iteration: FP8 d % 128 == 0 and MXFP4 d % 32 == 0 are
    // the formats' rules; both make d % 8 == 0 (16 B chunks) and row starts 16/8/4 B aligned.
    require(f.index_head_dim <= T::kMaxIters * T::kLanesPerRow * kChunkValues,
            "indexer kernels need index_head_dim <= 512", {"index_head_dim", f.index_head_dim});
  }
}

inline unsigned grid_for(std::int64_t num_tokens, int lanes_per_row) {
  const std::int64_t rows_per_block = kThreadsPerBlock / lanes_per_row;
  const std::int64_t blocks = num_tokens / rows_per_block + (num_tokens % rows_per_block != 0 ? 1 : 0);
  require(blocks <= 0x7FFFFFFF, "too many tokens for one launch", {"num_tokens", num_tokens});
  return static_cast<unsigned>(blocks);
}

/// The host checks insert_rows and gather_rows share: a valid view, num_tokens >= 0, device
/// slots (8 B aligned), a BF16/float row stride (values) >= the row's values and a multiple of
/// 8, and a token extent that fits 64 bits. Returns false when num_tokens == 0 (nothing to
/// launch). Throws std::invalid_argument naming the value.
template <pool_format F>
bool validate_launch(const pool_view<F>& pool, const std::int64_t* slots, std::int64_t num_tokens,
                     std::int64_t row_stride) {
  validate_view(pool);
  require(num_tokens >= 0, "num_tokens must be >= 0", {"num_tokens", num_tokens});
  if (num_tokens == 0) return false;
  require(slots != nullptr, "slots must not be null");
  require_aligned(slots, 8, "slots must be 8-byte aligned");
  require(row_stride >= row_values(pool) && row_stride % kChunkValues == 0,
          "row stride must be >= the row's values and a multiple of 8", {"row_stride", row_stride},
          {"row_values", row_values(pool)});
  (void)checked_mul(num_tokens, row_stride, "row extent overflows 64 bits");
  return true;
}
}  // namespace detail

/// Quantizes `num_tokens` BF16 rows into pool `pool` with the specialized kernel of F: token k's
/// row (`row_values(pool)` values: 512 for fp8_ds_mla, 128 for indexer keys) at
/// `in + k * in_row_stride` is written to slot `slots[k]`, byte for byte as the registry
/// format's `quantize_row` under `policy` (a writer's `format_policy`; default: the format's
/// default writer, `fast_default_policy(F)`).
/// - in: device, 16 B aligned, in_row_stride >= row_values and a multiple of 8 (values).
/// - slots: device, num_tokens int64; -1 skips the token; a slot outside [rows_per_page,
///   num_slots) (the null page, negative or past the pool) is not written and, if
///   `error_counter` (device, may be null) is given, adds 1 to it.
/// - policy: one `fast_kernels_support(F, policy)` accepts; other writers' policies take the
///   generic `insert_rows<Format>` (`device_path_for` says which).
/// - Enqueued on `stream`, no synchronization; num_tokens == 0 launches nothing.
/// Throws std::invalid_argument for a bad view, shape or policy (before anything is enqueued),
/// and `cuda_error` if the launch fails.
template <pool_format F>
void insert_rows(const pool_view<F>& pool, const bf16* in, std::int64_t in_row_stride, const std::int64_t* slots,
                 std::int64_t num_tokens, unsigned long long* error_counter, cudaStream_t stream,
                 const format_policy& policy = fast_default_policy(F)) {
  using T = row_kernel_traits<F>;
  require(fast_kernels_support(F, policy),
          "insert_rows: the specialized kernels do not implement this writer policy (use the generic "
          "insert_rows<Format> of the registry format)",
          {"pool_format", static_cast<int>(F)});
  if (!detail::validate_launch(pool, slots, num_tokens, in_row_stride)) return;
  require(in != nullptr, "insert_rows needs input rows");
  detail::require_aligned(in, 16, "insert_rows input must be 16-byte aligned");
  detail::insert_kernel<F><<<detail::grid_for(num_tokens, T::kLanesPerRow), kThreadsPerBlock, 0, stream>>>(
      pool, in, in_row_stride, slots, num_tokens, error_counter, policy);
  check_last_launch("insert_kernel<<<>>>", __FILE__, __LINE__);
}

/// Dequantizes the rows at `slots` of pool `pool` into `out_bf16` and/or `out_f32` (either may
/// be null, not both) with the specialized kernel of F: token k's `row_values(pool)` values go
/// to `out + k * out_row_stride`, exactly as the registry format's `dequantize_row` (float, and
/// BF16 rounded to nearest even). Reading needs no policy: the rows hold their scales.
/// - slots: device, num_tokens int64; a slot in [0, num_slots) is read (page 0 included);
///   -1 gives a zero row; any other slot gives a zero row and, if `error_counter` (device,
///   may be null) is given, adds 1 to it.
/// - outputs: device, 16 B aligned; out_row_stride >= row_values and a multiple of 8 (values).
/// - Enqueued on `stream`, no synchronization; num_tokens == 0 launches nothing.
/// Throws std::invalid_argument for a bad view or shape, `cuda_error` if the launch fails.
template <pool_format F>
void gather_rows(const pool_view<F>& pool, const std::int64_t* slots, std::int64_t num_tokens, bf16* out_bf16,
                 float* out_f32, std::int64_t out_row_stride, unsigned long long* error_counter, cudaStream_t stream) {
  using T = row_kernel_traits<F>;
  if (!detail::validate_launch(pool, slots, num_tokens, out_row_stride)) return;
  require(out_bf16 != nullptr || out_f32 != nullptr, "gather_rows needs a BF16 or a float output");
  if (out_bf16 != nullptr) detail::require_aligned(out_bf16, 16, "gather_rows BF16 output must be 16-byte aligned");
  if (out_f32 != nullptr) detail::require_aligned(out_f32, 16, "gather_rows float output must be 16-byte aligned");
  detail::gather_kernel<F><<<detail::grid_for(num_tokens, T::kLanesPerRow), kThreadsPerBlock, 0, stream>>>(
      pool, slots, num_tokens, out_bf16, out_f32, out_row_stride, error_counter);
  check_last_launch("gather_kernel<<<>>>", __FILE__, __LINE__);
}

/// Bytes an insert of `num_tokens` rows moves: BF16 rows and slots read, quantized rows
/// (data + scales) written. What the benchmark divides by the time for "effective GB/s".
template <pool_format F>
[[nodiscard]] constexpr std::uint64_t insert_bytes_moved(const pool_view<F>& pool, std::int64_t num_tokens) {
  const auto n = static_cast<std::uint64_t>(num_tokens);
  const auto row_bytes = static_cast<std::uint64_t>(pool.layout.format.row_bytes());
  return n * (static_cast<std::uint64_t>(row_values(pool)) * 2 + 8 + row_bytes);
}

/// Bytes a gather of `num_tokens` rows moves: slots and quantized rows read, BF16 and/or float
/// rows written (`out_bf16`, `out_f32` say which outputs are written).
template <pool_format F>
[[nodiscard]] constexpr std::uint64_t gather_bytes_moved(const pool_view<F>& pool, std::int64_t num_tokens,
                                                         bool out_bf16, bool out_f32) {
  const auto n = static_cast<std::uint64_t>(num_tokens);
  const auto values = static_cast<std::uint64_t>(row_values(pool));
  const auto row_bytes = static_cast<std::uint64_t>(pool.layout.format.row_bytes());
  return n * (8 + row_bytes + (out_bf16 ? values * 2 : 0) + (out_f32 ? values * 4 : 0));
}

// ---------------------------------------------------------------- generic kernels (every format)

namespace detail {

/// One lane per (token k, unit u): `insert_unit<F>` (slot_work.hpp), the same function the host
/// tests run with emulated lanes. Counts refused slots once per token (unit 0's lane).
template <row_format F>
__global__ void __launch_bounds__(kThreadsPerBlock)
    generic_insert_kernel(format_layout layout, format_policy policy, pool_pages pool, const typename F::input_type* in,
                          std::int64_t in_row_stride, const std::int64_t* slots, std::int64_t num_tokens, int units,
                          unsigned long long* error_counter) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= num_tokens * units) return;
  const std::int64_t k = t / units;
  const int u = static_cast<int>(t % units);
  const slot_status st = insert_unit<F>(layout, policy, pool, slots[k], in + k * in_row_stride, u);
  if (st == slot_status::refused && u == 0 && error_counter != nullptr) atomicAdd(error_counter, 1ULL);
}

/// One lane per (token k, unit u): `gather_unit<F>` into float or BF16 rows.
template <row_format F, class Out>
__global__ void __launch_bounds__(kThreadsPerBlock)
    generic_gather_kernel(format_layout layout, format_policy policy, pool_pages pool, const std::int64_t* slots,
                          std::int64_t num_tokens, int units, Out* out, std::int64_t out_row_stride,
                          unsigned long long* error_counter) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= num_tokens * units) return;
  const std::int64_t k = t / units;
  const int u = static_cast<int>(t % units);
  const slot_status st = gather_unit<F>(layout, policy, pool, slots[k], out + k * out_row_stride, u);
  if (st == slot_status::refused && u == 0 && error_counter != nullptr) atomicAdd(error_counter, 1ULL);
}

template <row_format F>
inline unsigned generic_grid(const format_layout& layout, std::int64_t num_tokens) {
  const std::int64_t lanes = checked_mul<std::int64_t>(num_tokens, F::units(layout));
  const std::int64_t blocks = ceil_div<std::int64_t>(lanes, kThreadsPerBlock);
  require(blocks <= 0x7FFFFFFF, "too many tokens for one launch", {"num_tokens", num_tokens});
  return static_cast<unsigned>(blocks);
}

}  // namespace detail

/// Quantizes `num_tokens` rows of format F into the slots of `pool` (any registered format:
/// the generic kernel, one lane per token and unit of work). `pool.format` is F's layout (bound
/// for fp32_state); row k is `in + k * in_row_stride` (`layout.values` values of
/// F::input_type, device memory); slots as in slot_work.hpp (refused ones counted in
/// `error_counter` when not null). Enqueued on `stream`; num_tokens == 0 launches nothing.
/// Throws std::invalid_argument for a view of another format or a bad shape (before anything is
/// enqueued), `cuda_error` if the launch fails.
template <row_format F>
void insert_rows(const raw_pool_view& pool, const typename F::input_type* in, std::int64_t in_row_stride,
                 const std::int64_t* slots, std::int64_t num_tokens, unsigned long long* error_counter,
                 cudaStream_t stream, const format_policy& policy = F::default_policy) {
  require(num_tokens >= 0, "num_tokens must be >= 0", {"num_tokens", num_tokens});
  validate_pool_pages<F>(pool.format, pool.pages());
  if (num_tokens == 0) return;
  require(in != nullptr && slots != nullptr, "insert_rows needs input rows and slots");
  require(in_row_stride >= pool.format.values, "in_row_stride must be >= the format's values per row",
          {"in_row_stride", in_row_stride}, {"values", pool.format.values});
  detail::generic_insert_kernel<F><<<detail::generic_grid<F>(pool.format, num_tokens), kThreadsPerBlock, 0, stream>>>(
      pool.format, policy, pool.pages(), in, in_row_stride, slots, num_tokens, F::units(pool.format), error_counter);
  check_last_launch("generic_insert_kernel<<<>>>", __FILE__, __LINE__);
}

/// Dequantizes the rows at `slots` of `pool` (format F) into `out` (float or BF16, device):
/// row k at `out + k * out_row_stride`, `layout.values` values; padding and refused slots give
/// zero rows (refused ones counted). Errors as `insert_rows<F>`.
template <row_format F, class Out>
requires std::is_same_v<Out, float> || std::is_same_v<Out, bf16>
void gather_rows(const raw_pool_view& pool, const std::int64_t* slots, std::int64_t num_tokens, Out* out,
                 std::int64_t out_row_stride, unsigned long long* error_counter, cudaStream_t stream,
                 const format_policy& policy = F::default_policy) {
  require(num_tokens >= 0, "num_tokens must be >= 0", {"num_tokens", num_tokens});
  validate_pool_pages<F>(pool.format, pool.pages());
  if (num_tokens == 0) return;
  require(out != nullptr && slots != nullptr, "gather_rows needs an output and slots");
  require(out_row_stride >= pool.format.values, "out_row_stride must be >= the format's values per row",
          {"out_row_stride", out_row_stride}, {"values", pool.format.values});
  detail::generic_gather_kernel<F, Out>
      <<<detail::generic_grid<F>(pool.format, num_tokens), kThreadsPerBlock, 0, stream>>>(
          pool.format, policy, pool.pages(), slots, num_tokens, F::units(pool.format), out, out_row_stride,
          error_counter);
  check_last_launch("generic_gather_kernel<<<>>>", __FILE__, __LINE__);
}

// ---- block tables: the engine's slot mapping on the device ----

namespace detail {
template <class Table>  // block_table_view (a template: defined in a header, no duplicate symbol)
__global__ void __launch_bounds__(kThreadsPerBlock)
    map_slots_kernel(Table table, const std::int64_t* requests, const std::int64_t* rows, std::int64_t num_tokens,
                     std::int64_t* slots) {
  const std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * kThreadsPerBlock + threadIdx.x;
  if (k < num_tokens) slots[k] = table.slot(requests[k], rows[k]);
}
}  // namespace detail

/// The engine's slot mapping on the device (block_table.hpp, vLLM `BlockTable.compute_slot_mapping`):
/// slots[k] = table.slot(requests[k], rows[k]) for k < num_tokens: token k's row of its request
/// through the request's block table; -1 for padding (row -1 or a table entry -1), a slot in the
/// null page for the null block 0, kRefusedSlot (-2) for a row it cannot map. The slots then go
/// to `insert_rows` / `gather_rows` (any kind), which write and count them as today's slots.
/// - table: device indices / indptr (indptr valid: non-decreasing from 0, as
///   `validate_block_table` checks on a host copy); rows_per_block and num_blocks of the pool.
/// - requests, rows, slots: device, num_tokens int64 each, 8 B aligned.
/// Enqueued on `stream`, no synchronization; num_tokens == 0 launches nothing. Throws
/// std::invalid_argument for a bad shape (`validate_block_table_shape`) or pointer, and
/// `cuda_error` if the launch fails.
inline void map_slots(const block_table_view& table, const std::int64_t* requests, const std::int64_t* rows,
                      std::int64_t num_tokens, std::int64_t* slots, cudaStream_t stream) {
  validate_block_table_shape(table);
  require(num_tokens >= 0, "num_tokens must be >= 0", {"num_tokens", num_tokens});
  if (num_tokens == 0) return;
  require(requests != nullptr && rows != nullptr && slots != nullptr, "map_slots needs requests, rows and slots");
  detail::require_aligned(slots, 8, "slots must be 8-byte aligned");
  detail::map_slots_kernel<block_table_view>
      <<<detail::grid_for(num_tokens, 1), kThreadsPerBlock, 0, stream>>>(table, requests, rows, num_tokens, slots);
  check_last_launch("map_slots_kernel<<<>>>", __FILE__, __LINE__);
}

}  // namespace dsv4::cache::cuda
