// Host emulation of both device paths' lanes (fast_rows.hpp, slot_work.hpp), for the host tests
// of the device paths (fast_rows_test.cpp) and of the CUDA sample's dispatch
// (sample_dispatch_test.cpp). What the CUDA kernels of cuda/kernels.cuh run per lane, run here
// in shuffled orders: rows, lanes, and the combination of a scale block's amax partials (the
// kernels' xor-shuffle tree combines them in an order of its own).
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "dsv4/cache/chunk_codec.hpp"
#include "dsv4/cache/fast_rows.hpp"
#include "dsv4/cache/slot_work.hpp"

namespace dsv4::cache::testing {

/// The register image of the 16 B load of values [8c, 8c + 8) of a row (value 2i in the low half
/// of word i).
inline bf16x8 load_chunk(const bf16* row, int c) {
  bf16x8 x{};
  for (int i = 0; i < 4; ++i)
    x.w[i] = static_cast<std::uint32_t>(row[c * 8 + 2 * i].bits) |
             (static_cast<std::uint32_t>(row[c * 8 + 2 * i + 1].bits) << 16);
  return x;
}

/// 0, 1, .., n - 1 in a random order.
inline std::vector<int> shuffled(int n, std::mt19937& rng) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

/// The specialized insert of one row, lane by lane: every chunk's partial amax, each scale
/// block's amax combined in a random order, then every lane's `fast::insert_chunk` in a random
/// order and lane 0's `fast::insert_row_tail`.
template <pool_format F>
void fast_insert_row(const page_layout_t<F>& l, std::uint8_t* page, std::int64_t row, const bf16* in,
                     const format_policy& p, std::mt19937& rng) {
  using T = fast::row_traits<F>;
  const int chunks = fast::row_chunks<F>(l);
  std::vector<amax_bits> block(static_cast<std::size_t>(chunks));  // per chunk: its block's amax
  for (int first = 0; first < chunks; first += T::kBlockLanes) {
    amax_bits m;
    for (const int j : shuffled(T::kBlockLanes, rng)) {
      const int c = first + j;
      if (c < chunks && fast::chunk_in_block<F>(l, c)) m = combine(m, chunk_amax(load_chunk(in, c)));
    }
    for (int c = first; c < first + T::kBlockLanes && c < chunks; ++c)
      block[static_cast<std::size_t>(c)] = fast::chunk_in_block<F>(l, c) ? m : amax_bits{};
  }
  for (const int c : shuffled(chunks, rng))
    fast::insert_chunk<F>(l, page, row, c, load_chunk(in, c), block[static_cast<std::size_t>(c)], p);
  fast::insert_row_tail<F>(l, page, row);
}

/// The specialized gather of one row into `l`'s row values of float and BF16, chunk by chunk in
/// a random order (as the kernel's lanes store them: BF16 as stored for raw chunks, else
/// `pack_bf16x8` of the floats).
template <pool_format F>
void fast_gather_row(const page_layout_t<F>& l, const std::uint8_t* page, std::int64_t row, float* out_f, bf16* out_b,
                     std::mt19937& rng) {
  for (const int c : shuffled(fast::row_chunks<F>(l), rng)) {
    const fast::gathered_chunk g = fast::gather_chunk<F>(l, page, row, c);
    const bf16x8 b = g.is_raw ? g.raw : pack_bf16x8(g.v);
    for (int i = 0; i < kChunkValues; ++i) {
      out_f[c * kChunkValues + i] = g.v[i];
      out_b[c * kChunkValues + i] = b.at(i);
    }
  }
}

/// The specialized insert of `slots.size()` rows (row k at in + k * stride) into `pool`, rows in a
/// random order; slots as the kernel takes them (-1 and slots outside [rows_per_page,
/// num_slots) write nothing). Returns the refused count the kernel would add.
template <pool_format F>
std::int64_t fast_insert(const page_layout_t<F>& l, const pool_pages& pool, const std::vector<std::int64_t>& slots,
                         const bf16* in, std::int64_t stride, const format_policy& p, std::mt19937& rng) {
  std::int64_t refused = 0;
  for (const int k : shuffled(static_cast<int>(slots.size()), rng)) {
    const std::int64_t s = slots[static_cast<std::size_t>(k)];
    if (s == -1) continue;
    if (s < pool.rows_per_page || s >= pool.num_slots()) {
      ++refused;
      continue;
    }
    fast_insert_row<F>(l, pool.base + (s / pool.rows_per_page) * pool.page_bytes, s % pool.rows_per_page,
                       in + std::int64_t{k} * stride, p, rng);
  }
  return refused;
}

/// The generic insert of the same rows: every (token, unit) lane's `insert_unit<Fmt>` in a
/// random order. Returns the refused count the kernel would add (once per refused token).
template <row_format Fmt>
std::int64_t generic_insert(const format_layout& l, const pool_pages& pool, const std::vector<std::int64_t>& slots,
                            const typename Fmt::input_type* in, std::int64_t stride, const format_policy& p,
                            std::mt19937& rng) {
  std::vector<std::pair<std::int64_t, int>> lanes;
  for (std::size_t k = 0; k < slots.size(); ++k)
    for (int u = 0; u < Fmt::units(l); ++u) lanes.emplace_back(static_cast<std::int64_t>(k), u);
  std::shuffle(lanes.begin(), lanes.end(), rng);
  std::int64_t refused = 0;
  for (const auto& [k, u] : lanes) {
    const slot_status st = insert_unit<Fmt>(l, p, pool, slots[static_cast<std::size_t>(k)], in + k * stride, u);
    if (st == slot_status::refused && u == 0) ++refused;
  }
  return refused;
}

}  // namespace dsv4::cache::testing
