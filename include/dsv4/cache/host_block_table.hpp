// dsv4-cache: the host slot calls (host_codec.hpp) through a request's block table
// (block_table.hpp): rows of one request mapped to slots by the engine's slot mapping, then
// written or read as `host_insert_rows` / `host_gather_rows` do, with their checks and errors.
#pragma once

#include <cstdint>
#include <vector>

#include "dsv4/cache/block_table.hpp"
#include "dsv4/cache/host_codec.hpp"

namespace dsv4::cache {

namespace detail {
/// The slots of `count` rows of request `request` through block table `t` of `pool` (`map_slots`),
/// after the checks both directions share: the table (`validate_block_table`), its rows per block
/// and block count against the pool's, and rows given for count > 0. Throws std::invalid_argument.
inline std::vector<std::int64_t> slots_through_table(const pool_pages& pool, const block_table_view& t,
                                                     std::int64_t request, const std::int64_t* rows,
                                                     std::int64_t count) {
  validate_block_table(t);
  require(t.rows_per_block == pool.rows_per_page && t.num_blocks == pool.num_pages,
          "the block table's rows per block and block count must be the pool's", {"rows_per_block", t.rows_per_block},
          {"num_blocks", t.num_blocks});
  require(count >= 0 && (count == 0 || rows != nullptr), "rows must be given for count >= 0 rows", {"count", count});
  std::vector<std::int64_t> slots(static_cast<std::size_t>(count));
  map_slots(t, request, rows, count, slots.data());
  return slots;
}
}  // namespace detail

/// Quantizes `count` rows of request `request` into `pool` through its block table `t`: row k
/// (rows[k], -1 padding) goes to slot t.slot(request, rows[k]) (block_table.hpp), then as
/// `host_insert_rows<F>(l, pool, slots, count, in, p, threads)`.
/// - pool: the region's page view (`region_pages`); t: its engine group's tables (rows per block
///   = pool.rows_per_page, num_blocks = pool.num_pages).
/// - in: count x `l.values` values of F::input_type, row-major.
/// Errors (std::invalid_argument, before any byte is written): a bad table (`validate_block_table`),
/// a table whose rows per block or block count differ from the pool's, count < 0, null rows with
/// count > 0, and `host_insert_rows`'s errors, among them a row whose slot is refused (a null
/// block 0, an id outside [-1, num_blocks), a row past the request's table), naming the token and
/// its slot (kRefusedSlot = -2 where no slot exists).
template <row_format F>
void host_insert_through_table(const format_layout& l, const pool_pages& pool, const block_table_view& t,
                               std::int64_t request, const std::int64_t* rows, std::int64_t count,
                               const typename F::input_type* in, const format_policy& p = F::default_policy,
                               int threads = 1) {
  const std::vector<std::int64_t> slots = detail::slots_through_table(pool, t, request, rows, count);
  host_insert_rows<F>(l, pool, slots.data(), count, in, p, threads);
}

/// Dequantizes `count` rows of request `request` from `pool` through its block table `t` into
/// count x `l.values` floats or BF16 (`Out`): as `host_gather_rows` of the mapped slots (a
/// padding row or entry reads zeros). Errors as `host_insert_through_table`.
template <row_format F, class Out>
requires std::same_as<Out, float> || std::same_as<Out, bf16>
void host_gather_through_table(const format_layout& l, const pool_pages& pool, const block_table_view& t,
                               std::int64_t request, const std::int64_t* rows, std::int64_t count, Out* out,
                               const format_policy& p = F::default_policy, int threads = 1) {
  const std::vector<std::int64_t> slots = detail::slots_through_table(pool, t, request, rows, count);
  host_gather_rows<F, Out>(l, pool, slots.data(), count, out, p, host_store::cached, threads);
}

}  // namespace dsv4::cache
