// dsv4-cache: pages addressed the engine's way: a region's page view (page p at base + p x
// page_stride), the requests' block tables of one engine group (FlashInfer `paged_kv_t`-style
// indptr / indices), and the engine's slot mapping through them, on the host and the device.
//
// An engine addresses a request's pages through one block table per engine group (vLLM: one
// `BlockTable` per KV cache group, vllm-project/vllm vllm/v1/worker/block_table.py as read
// 2026-11, commit not pinned): entry i of request r's table is the block id holding its rows
// [i x R, (i + 1) x R), R the group's rows per block. The slot of row j of request r is the
// engine's slot mapping
//
//   slot = table_r[j / R] x R + j % R        (`BlockTable.compute_slot_mapping`: block number x
//                                             block_size + position % block_size, PAD_SLOT_ID -1
//                                             for padding; here in rows)
//
// which is the kernels' slot (slot_work.hpp: page x rows_per_page + row) in a region whose page p
// is block p (arena_layout.hpp: vLLM's page stride is bytes_per_block). So insert and gather take
// block tables by mapping rows to slots (`block_table_view::slot`), then writing the slots as
// today, with today's refusals:
//
//   row -1, or a table entry -1          padding (-1): nothing written, gather reads zeros
//   table entry 0 (the null block)       a slot in page 0: refused (the lanes count it)
//   entry outside [-1, num_blocks), a row past the request's table, a row below -1, a request
//   outside the batch                    kRefusedSlot (-2): refused
//
// Standard library only; every function here is `constexpr` and callable on the device
// (DSV4_HOST_DEVICE), except the host checks that throw.
#pragma once

#include <cstdint>

#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/platform.hpp"
#include "dsv4/cache/slot_work.hpp"

namespace dsv4::cache {

/// The slot of a padding token: nothing written, gather reads the null page (slot_work.hpp).
inline constexpr std::int64_t kPaddingSlot = -1;
/// The slot `block_table_view::slot` gives a row it cannot map: every slot rule refuses it.
inline constexpr std::int64_t kRefusedSlot = -2;

/// The page view of region `r` of an arena whose first byte is at `arena_base` (host or
/// device address): `r.num_pages` pages of `r.rows_per_page` rows, page p at
/// `arena_base + r.offset_bytes + p x r.page_stride` (vLLM: page p is block p). What the slot
/// calls take (host_codec.hpp, cuda/kernels.cuh). No check: `r` comes from a built arena.
constexpr pool_pages region_pages(std::uint8_t* arena_base, const pool_region& r) {
  return {arena_base + r.offset_bytes, r.page_stride, r.num_pages, r.rows_per_page};
}

/// Address of page `page` of `pool` (0 <= page < num_pages; unchecked): base + page x page stride.
DSV4_HOST_DEVICE constexpr std::uint8_t* page_address(const pool_pages& pool, std::int64_t page) noexcept {
  return pool.base + page * pool.page_bytes;
}

/// The block tables of one engine group for a batch of requests, FlashInfer `paged_kv_t`-style:
/// request r's block ids are indices[indptr[r] .. indptr[r + 1]), in row order; an entry -1 is
/// a padding entry (vLLM pads its tables with the null block 0: both are accepted). Trivially
/// copyable: passed by value to a kernel. Pointers are host or device addresses of int32 ids.
struct block_table_view {
  const std::int32_t* indices = nullptr;  ///< Block ids of all requests, concatenated.
  const std::int32_t* indptr = nullptr;   ///< num_requests + 1 offsets into indices, indptr[0] = 0.
  std::int64_t num_requests = 0;
  std::int64_t num_blocks = 0;      ///< Blocks of the pool (ids [0, num_blocks); 0 the null block).
  std::int64_t rows_per_block = 0;  ///< R: rows of one block of this group (= the region's rows_per_page).

  /// Entries of request r's table (0 for a request outside the batch).
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t num_entries(std::int64_t r) const noexcept {
    return r < 0 || r >= num_requests ? 0 : std::int64_t{indptr[r + 1]} - std::int64_t{indptr[r]};
  }

  /// The engine's slot mapping of row `row` of request `r`: table_r[row / R] x R + row % R (see
  /// the top of this file for padding and refusals). Never fails and never wraps: a row or a
  /// block id it cannot map gives kRefusedSlot.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t slot(std::int64_t r, std::int64_t row) const noexcept {
    if (row == kPaddingSlot) return kPaddingSlot;
    if (row < 0 || rows_per_block <= 0 || r < 0 || r >= num_requests) return kRefusedSlot;
    const std::int64_t entry = row / rows_per_block;
    if (entry >= num_entries(r)) return kRefusedSlot;
    const std::int64_t id = indices[std::int64_t{indptr[r]} + entry];
    if (id == -1) return kPaddingSlot;
    if (id < 0 || id >= num_blocks) return kRefusedSlot;
    // id < num_blocks and the pool's slots fit in 64 bits (checked on the host): no overflow.
    return id * rows_per_block + row % rows_per_block;
  }
};

/// Host check of a block table view's sizes, without reading its arrays (a device view before a
/// launch): rows_per_block > 0, num_blocks >= 1 with num_blocks x rows_per_block in 64 bits,
/// num_requests >= 0, indptr non-null. Throws std::invalid_argument naming the value.
inline void validate_block_table_shape(const block_table_view& t) {
  require(t.rows_per_block > 0, "a block table needs rows per block > 0", {"rows_per_block", t.rows_per_block});
  require(t.num_blocks >= 1, "a block table's pool needs at least its null block", {"num_blocks", t.num_blocks});
  (void)checked_mul(t.num_blocks, t.rows_per_block, "block table slots (num_blocks x rows_per_block) overflow 64 bits");
  require(t.num_requests >= 0, "a block table needs num_requests >= 0", {"num_requests", t.num_requests});
  require(t.indptr != nullptr, "a block table needs its indptr (num_requests + 1 offsets)");
}

/// Host check of a host block table view before a host call: `validate_block_table_shape`, and
/// indptr[0] = 0, indptr non-decreasing, indices non-null if any entry. Throws
/// std::invalid_argument naming the value. (Block ids are not checked: a bad id is refused per
/// row, as today's slots.)
inline void validate_block_table(const block_table_view& t) {
  validate_block_table_shape(t);
  require(t.indptr[0] == 0, "a block table's indptr must start at 0", {"indptr0", t.indptr[0]});
  for (std::int64_t r = 0; r < t.num_requests; ++r)
    require(t.indptr[r + 1] >= t.indptr[r], "a block table's indptr must not decrease", {"request", r},
            {"indptr", t.indptr[r + 1]});
  require(t.indptr[t.num_requests] == 0 || t.indices != nullptr, "a block table with entries needs its indices",
          {"entries", t.indptr[t.num_requests]});
}

/// The block table view of region `r`'s engine group over a batch: `indices` / `indptr` as in
/// `block_table_view`, `num_requests` requests, num_blocks and rows per block from the region.
/// Throws as `validate_block_table`.
inline block_table_view region_block_table(const pool_region& r, const std::int32_t* indices,
                                           const std::int32_t* indptr, std::int64_t num_requests) {
  const block_table_view t{indices, indptr, num_requests, r.num_pages, r.rows_per_page};
  validate_block_table(t);
  return t;
}

/// Writes the slots of `count` rows of request `request` through table `t`: slots[k] =
/// t.slot(request, rows[k]) (rows[k] -1: padding). Host or device. No check (see
/// `validate_block_table`).
DSV4_HOST_DEVICE constexpr void map_slots(const block_table_view& t, std::int64_t request, const std::int64_t* rows,
                                          std::int64_t count, std::int64_t* slots) noexcept {
  for (std::int64_t k = 0; k < count; ++k) slots[k] = t.slot(request, rows[k]);
}

}  // namespace dsv4::cache
