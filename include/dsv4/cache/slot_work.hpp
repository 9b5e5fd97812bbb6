// dsv4-cache: the per-lane work of the generic insert and gather kernels, for any registered
// row format, as plain host/device functions.
//
// The CUDA kernels (cuda/kernels.cuh: `insert_rows`, `gather_rows`) run one lane per (token k,
// unit u): lane work = `insert_unit<F>` / `gather_unit<F>` below, nothing else. A host test runs
// the same functions for every (k, u) in any order, emulating the lanes, so each format's device
// byte placement is checked in CI, which has no GPU.
//
// Slots: token k goes to slot s = slots[k] = page x rows_per_page + row of the pool.
//   s == -1                          padding: insert writes nothing; gather reads the null page
//   s in [rows_per_page, num_slots)  written / read (page 0, the null page, is never written)
//   anything else                    refused: insert writes nothing, gather reads the null page;
//                                    reported as `slot_status::refused` (the kernels count it)
// The null page holds zeros (arenas are zero-filled and it is never written), and every format
// decodes an all-zero row as zeros, so gather gives zero rows for padding and refused slots.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dsv4/cache/formats/registry.hpp"

namespace dsv4::cache {

/// The pages of one pool of one layer: `num_pages` pages of `page_bytes` (>= the format's page
/// bytes for `rows_per_page` rows) from `base`; page 0 is the null page.
struct pool_pages {
  std::uint8_t* base = nullptr;
  std::int64_t page_bytes = 0;
  std::int64_t num_pages = 0;
  std::int64_t rows_per_page = 0;
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t num_slots() const { return num_pages * rows_per_page; }
};

/// What a lane did with its slot.
enum class slot_status : std::uint8_t { written, padding, refused };

/// The status of slot `s` in `pool` (see the table at the top).
DSV4_HOST_DEVICE constexpr slot_status classify_slot(const pool_pages& pool, std::int64_t s) noexcept {
  if (s == -1) return slot_status::padding;
  return s >= pool.rows_per_page && s < pool.num_slots() ? slot_status::written : slot_status::refused;
}

/// Lane (k, u) of the generic insert kernel: unit `unit` of format F for input row `row_in`
/// (`l.values` values of F::input_type) into slot `slot` of `pool`. Writes only that unit's
/// bytes of the slot's row; nothing for a padding or refused slot. Never fails: the launcher
/// validates the pool, layout and unit count once on the host.
template <row_format F>
DSV4_HOST_DEVICE constexpr slot_status insert_unit(const format_layout& l, const format_policy& p,
                                                   const pool_pages& pool, std::int64_t slot,
                                                   const typename F::input_type* row_in, int unit) {
  const slot_status st = classify_slot(pool, slot);
  if (st != slot_status::written) return st;
  const std::int64_t page = slot / pool.rows_per_page;
  F::quantize_unit(l, pool.base + page * pool.page_bytes, pool.rows_per_page, slot % pool.rows_per_page, row_in, p,
                   unit);
  return st;
}

/// Lane (k, u) of the generic gather kernel: unit `unit` of slot `slot` of `pool` dequantized
/// into output row `row_out` (`l.values` floats or BF16). A padding or refused slot reads row 0
/// of the null page (zeros). Reads only that unit's bytes.
template <row_format F, class Out>
DSV4_HOST_DEVICE constexpr slot_status gather_unit(const format_layout& l, const format_policy& p,
                                                   const pool_pages& pool, std::int64_t slot, Out* row_out, int unit) {
  const slot_status st = classify_slot(pool, slot);
  const std::int64_t s = st == slot_status::written ? slot : 0;
  const std::int64_t page = s / pool.rows_per_page;
  F::dequantize_unit(l, pool.base + page * pool.page_bytes, pool.rows_per_page, s % pool.rows_per_page, row_out, p,
                     unit);
  return st;
}

namespace detail {
/// Raises std::invalid_argument naming the layout passed and the format called. Host only.
[[noreturn]] inline void raise_format_mismatch(std::string_view passed, std::string_view called) {
  raise_invalid_argument("dsv4::cache: the layout passed is '" + std::string(passed) + "', not the called format '" +
                         std::string(called) + "'");
}
}  // namespace detail

/// Host check of what the generic launchers and the host slot calls need: a layout of F (else
/// an error naming both formats), bound, a page stride of at least its page bytes, rows and
/// pages > 0. Throws std::invalid_argument naming the value.
template <row_format F>
constexpr void validate_pool_pages(const format_layout& l, const pool_pages& pool) {
  if (l.name != F::layout.name) detail::raise_format_mismatch(l.name, F::layout.name);
  require(pool.rows_per_page > 0 && pool.num_pages > 0, "a pool needs pages and rows",
          {"rows_per_page", pool.rows_per_page}, {"num_pages", pool.num_pages});
  require(pool.page_bytes >= l.page_bytes(pool.rows_per_page), "page stride below the format's page bytes",
          {"page_bytes", pool.page_bytes}, {"format_page_bytes", l.page_bytes(pool.rows_per_page)});
  require(F::units(l) > 0, "the format's row has no work units (fp32_state needs bound row bytes)",
          {"row_bytes", l.row_bytes});
}

}  // namespace dsv4::cache
