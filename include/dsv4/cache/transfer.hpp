// dsv4-cache: prefill -> decode transfer manifests: the byte ranges one request's caches move
// between two deployments' registered KV regions, and their merge.
//
// A manifest is engine-neutral: per block table (an engine's KV-cache group), the (source
// offset, destination offset, length) copies that move what decode reads of one request, each
// offset from the base of that side's registered KV region (the region NIXL registers, the
// buffer Mooncake's segment exposes). Which entries of a request's block table move, and how
// many bytes one entry addresses, is the engine connector's rule: engines/<engine>/transfer.hpp
// (vLLM's NIXL connector: engines/vllm/transfer.hpp).
//
// Merging: copies are kept in the connector's order; a copy joins the one before it when it
// continues it on both sides (source and destination contiguous), so a run of blocks adjacent
// in both pools is one range. Byte totals do not change by merging.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/platform.hpp"

namespace dsv4::cache {

/// One copy: `length` bytes from `src_offset` in the prefill side's registered KV region to
/// `dst_offset` in the decode side's (both from the region's base, bytes).
struct transfer_range {
  std::uint64_t src_offset = 0;
  std::uint64_t dst_offset = 0;
  std::uint64_t length = 0;
  friend bool operator==(const transfer_range&, const transfer_range&) = default;
};

/// One block table (one KV-cache group of the engine) as a transfer sees it.
struct transfer_table {
  std::string name;                ///< What the output calls it, e.g. "sliding_window[v4.swa_kv]".
  bool sliding = false;            ///< Sliding-window table: entries before the window are freed.
  bool ring = false;               ///< One block for the request's life (vLLM `CircularBufferSpec`): its latest state.
  std::int64_t block_tokens = 0;   ///< Tokens one entry covers (vLLM: the group's block_size).
  std::int64_t window_tokens = 0;  ///< Sliding tables: the window W in tokens; 0 otherwise.
};

/// The pool one side's block ids index: block b is `block_bytes` bytes at b x block_bytes from
/// the region's base; block 0 is the null block (freed or padding entries point at it).
struct transfer_pool {
  std::uint64_t block_bytes = 0;  ///< Bytes one block id addresses (vLLM: one slab block of every layer).
  std::int64_t num_blocks = 0;    ///< Blocks of the pool, the null block included.
};

/// One field of a block table on one side (tokenspeed: one tensor of one layer): page p of it
/// at `page0_offset + p x page_stride` from the region's base, `payload` bytes moved per page.
struct transfer_field {
  std::uint64_t page0_offset = 0;
  std::uint64_t page_stride = 0;
  std::uint64_t payload = 0;
};

/// Per table, one request's block table on each side (entry i: block id; 0 for a freed entry).
struct transfer_blocks {
  std::vector<std::vector<std::int64_t>> prefill;
  std::vector<std::vector<std::int64_t>> decode;
};

/// What one table moves for one request.
struct transfer_group {
  std::string name;              ///< `transfer_table::name`.
  std::int64_t first_entry = 0;  ///< Table entries [first_entry, end_entry) move (null ones skipped).
  std::int64_t end_entry = 0;
  std::int64_t blocks_moved = 0;  ///< Entries that move (non-null on the prefill side).
  std::int64_t blocks_held = 0;   ///< Non-null entries the request holds on the prefill side.
  std::uint64_t bytes_moved = 0;
  std::uint64_t bytes_held = 0;
  std::int64_t ranges_before_merge = 0;  ///< One per moved entry (the connector's copies).
  std::vector<transfer_range> ranges;    ///< Merged.
};

/// One request's transfer between two layouts, per table and in total.
struct transfer_manifest {
  std::vector<transfer_group> groups;  ///< In table order.
  std::uint64_t bytes_moved = 0;       ///< Sum over groups.
  std::uint64_t bytes_held = 0;        ///< What the request holds on the prefill side (its non-null blocks).
  std::int64_t ranges_before_merge = 0;
  std::vector<transfer_range> ranges;  ///< Every group's copies in table order, merged across groups too.
};

/// Appends `r` to `out`, joining it to the last range when it continues that one on both sides
/// (src and dst contiguous). Throws std::invalid_argument (checked.hpp) if an end overflows 64
/// bits.
inline void append_merged(std::vector<transfer_range>& out, const transfer_range& r) {
  if (r.length == 0) return;
  if (!out.empty()) {
    transfer_range& last = out.back();
    if (checked_add(last.src_offset, last.length) == r.src_offset &&
        checked_add(last.dst_offset, last.length) == r.dst_offset) {
      last.length = checked_add(last.length, r.length);
      return;
    }
  }
  out.push_back(r);
}

/// `ranges` merged in order: one range per run contiguous on both sides (`append_merged`);
/// zero-length ranges dropped. The bytes they cover do not change.
inline std::vector<transfer_range> merge_ranges(std::span<const transfer_range> ranges) {
  std::vector<transfer_range> out;
  for (const transfer_range& r : ranges) append_merged(out, r);
  return out;
}

/// How an engine's connector names one request's table entries, for `check_request_table`'s
/// messages: vLLM's block ids ("block", "the pool"), tokenspeed's page ids ("page", "the pages").
struct table_terms {
  const char* entry = "block";    ///< What one id names: "block" or "page".
  const char* pool = "the pool";  ///< What the ids index.
  const char* held_null = "";     ///< Why a null id is refused from `held_from` on.
};

namespace detail {

/// Raises std::invalid_argument (platform.hpp's one helper): "dsv4::cache: <side> <entry> table
/// of <table>: <what>".
[[noreturn]] inline void bad_request_table(const char* side, const table_terms& terms, const transfer_table& t,
                                           const std::string& what) {
  std::string m = "dsv4::cache: ";
  m += side;
  m += " ";
  m += terms.entry;
  m += " table of ";
  m += t.name;
  m += ": ";
  m += what;
  raise_invalid_argument(m);
}

}  // namespace detail

/// Checks one side's table of one request for table `t` (`side`: "prefill" or "decode"): `entries`
/// ids (ceil(prompt_len / block_tokens)), every id in [0, `ids_in_pool`), and no null id (0) at an
/// entry from `held_from` on (an entry the request holds, or that the connector sends).
/// Throws std::invalid_argument naming the side, the table, the entry and the id.
inline void check_request_table(std::span<const std::int64_t> ids, const transfer_table& t, std::int64_t entries,
                                std::int64_t held_from, std::int64_t ids_in_pool, const char* side,
                                const table_terms& terms) {
  if (static_cast<std::int64_t>(ids.size()) != entries) {
    std::string w = std::to_string(ids.size());
    w += " entries, but a prompt of this length needs ";
    w += std::to_string(entries);
    w += " (ceil(prompt_len / ";
    w += std::to_string(t.block_tokens);
    w += "))";
    detail::bad_request_table(side, terms, t, w);
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= ids_in_pool) {
      std::string w = terms.entry;
      w += " id ";
      w += std::to_string(ids[i]);
      w += " at entry ";
      w += std::to_string(i);
      w += " is outside ";
      w += terms.pool;
      w += " [0, ";
      w += std::to_string(ids_in_pool);
      w += ")";
      detail::bad_request_table(side, terms, t, w);
    }
    if (ids[i] == 0 && static_cast<std::int64_t>(i) >= held_from) {
      std::string w = "entry ";
      w += std::to_string(i);
      w += " is the null ";
      w += terms.entry;
      w += " 0, but ";
      w += terms.held_null;
      detail::bad_request_table(side, terms, t, w);
    }
  }
}

/// Checks that no id other than the null one (0) appears twice among one side's tables of one
/// request (`ids[k]`: table k's; `across_tables`: in all of them together, as vLLM's pool hands a
/// block to one table of one request; else within each table, as tokenspeed's page ids).
/// Throws std::invalid_argument naming the side, the id and both entries.
inline void check_distinct_ids(std::span<const std::vector<std::int64_t>> ids, std::span<const transfer_table> tables,
                               bool across_tables, const char* side, const table_terms& terms) {
  struct at {
    std::int64_t id;
    std::size_t table;
    std::size_t entry;
  };
  std::vector<at> all;
  const auto check = [&] {
    std::sort(all.begin(), all.end(), [](const at& x, const at& y) {
      return x.id != y.id ? x.id < y.id : (x.table != y.table ? x.table < y.table : x.entry < y.entry);
    });
    for (std::size_t i = 1; i < all.size(); ++i) {
      if (all[i].id != all[i - 1].id) continue;
      std::string w = terms.entry;
      w += " id ";
      w += std::to_string(all[i].id);
      w += " is at entry ";
      w += std::to_string(all[i - 1].entry);
      w += " of ";
      w += tables[all[i - 1].table].name;
      w += " and at entry ";
      w += std::to_string(all[i].entry);
      w += " of ";
      w += tables[all[i].table].name;
      w += ": one id holds one page of one request";
      std::string m = "dsv4::cache: ";
      m += side;
      m += " ";
      m += terms.entry;
      m += " tables: ";
      m += w;
      detail::raise_invalid_argument(m);
    }
    all.clear();
  };
  for (std::size_t k = 0; k < ids.size(); ++k) {
    for (std::size_t e = 0; e < ids[k].size(); ++e)
      if (ids[k][e] != 0) all.push_back({ids[k][e], k, e});
    if (!across_tables) check();
  }
  check();
}

/// Totals of `m` from its groups: bytes moved and held, ranges before merging, and every
/// group's ranges merged into `m.ranges`. Throws std::invalid_argument on a 64-bit overflow.
inline void total_manifest(transfer_manifest& m) {
  m.bytes_moved = 0;
  m.bytes_held = 0;
  m.ranges_before_merge = 0;
  m.ranges.clear();
  for (const transfer_group& g : m.groups) {
    m.bytes_moved = checked_add(m.bytes_moved, g.bytes_moved);
    m.bytes_held = checked_add(m.bytes_held, g.bytes_held);
    m.ranges_before_merge = checked_add(m.ranges_before_merge, g.ranges_before_merge);
    for (const transfer_range& r : g.ranges) append_merged(m.ranges, r);
  }
}

}  // namespace dsv4::cache
