// dsv4-cache: tokenspeed's prefill -> decode transfer (its Mooncake PD path) as a transfer rule:
// which pages of a request's groups move, and one range per field and page.
//
// Sources (lightseekorg/tokenspeed @ f4d8ec6e039c028c7ee71317ccfb84e56ae2b45c,
// python/tokenspeed/runtime/pd/):
//   P  cache_protocol.py `_logical_slots`: policy `full_suffix` (every DeepSeek V4 group,
//      layers/attention/kv_cache/recipes/deepseek_v4.py) sends slots [prefix / G, ceil(P / G)),
//      a sliding group from max(that, max(0, P - W + 1) / G); G = the group's tokens per page
//      (rows_per_page x entry_stride_tokens). `validate_cache_manifest`: prefix < prompt, prefix
//      a multiple of the prefix granularity, every sent page id in (0, page_count): page 0, the
//      null page, is refused.
//   M  mooncake/prefill.py `MooncakeKVManager._cache_transfer_blocks`: for each group, each
//      field (sorted by id), each (source page, destination page) pair, one (src, dst, payload)
//      range, never merged (batches of 4,096 descriptors); addresses from each side's own plan
//      (`CacheMemoryPlan.field_page_byte_offset`: the peer may pack its arena differently).
//   T  transfer_plan.py `_replicated_source_tp_rank`: a replicated field comes whole from prefill
//      TP rank decode_rank x P_tp / D_tp.
// Fields here are the descriptor's tensors x layers, in the descriptor's order (tokenspeed sorts
// them by their field ids: the order of the ranges only, not which bytes move). The merge of
// transfer.hpp is this library's; `ranges_before_merge` is tokenspeed's count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/platform.hpp"
#include "dsv4/cache/transfer.hpp"

namespace dsv4::cache {

/// One side of a tokenspeed transfer: per table its fields (the pages' places in the side's
/// arena) and its page ids [0, num_pages) (page 0 the null page).
struct tokenspeed_transfer_side {
  std::vector<std::vector<transfer_field>> fields;  ///< [tables][fields]
  std::vector<std::int64_t> num_pages;              ///< [tables]
};

/// Pages of a request of `prompt` tokens in table `t`: ceil(prompt / block_tokens). Throws
/// std::invalid_argument for prompt < 1 or block_tokens < 1.
inline std::int64_t tokenspeed_transfer_entries(const transfer_table& t, std::int64_t prompt) {
  require(prompt >= 1, "the prompt must hold at least one token", named_value("prompt_len", prompt));
  require(t.block_tokens >= 1, "a group's pages hold at least one token", named_value("block_tokens", t.block_tokens));
  return ceil_div(prompt, t.block_tokens);
}

/// The pages of table `t` tokenspeed sends (P `_logical_slots`, policy full_suffix): [first, end).
inline std::pair<std::int64_t, std::int64_t> tokenspeed_moved_entries(const transfer_table& t, std::int64_t prompt,
                                                                      std::int64_t prefix) {
  const std::int64_t end = tokenspeed_transfer_entries(t, prompt);
  std::int64_t first = prefix / t.block_tokens;
  if (t.sliding) first = std::max(first, std::max<std::int64_t>(0, prompt - t.window_tokens + 1) / t.block_tokens);
  return {first, end};
}

/// A dry run's page tables: each side's arena fresh, the request's groups given parents in
/// table order (parent 1 first; the null parent 0 holds page 0), a group of packing K filling
/// each parent's K pages before the next (page p lives in parent (p + K - 1) / K); a sliding
/// group holds only the pages of its window (those before it 0: tokenspeed frees them at the
/// request's next admission, `CacheCoordinator::Admit`). Shapes:
/// [tables][entries]; `packing[k]` is table k's K. Throws as `tokenspeed_transfer_entries`, or for a
/// packing < 1.
inline std::vector<std::vector<std::int64_t>> tokenspeed_dry_run_pages(std::span<const transfer_table> tables,
                                                                       std::span<const std::int64_t> packing,
                                                                       std::int64_t prompt) {
  require(packing.size() == tables.size(), "one packing per table", named_value("tables", tables.size()),
          named_value("packings", packing.size()));
  std::vector<std::vector<std::int64_t>> out;
  std::int64_t parent = 1;
  for (std::size_t k = 0; k < tables.size(); ++k) {
    const std::int64_t K = packing[k];
    require(K >= 1, "a group's packing (pages per parent) must be >= 1", named_value("packing", K));
    const std::int64_t n = tokenspeed_transfer_entries(tables[k], prompt);
    const std::int64_t first = tables[k].sliding ? tokenspeed_moved_entries(tables[k], prompt, 0).first : 0;
    std::vector<std::int64_t> ids(static_cast<std::size_t>(n), 0);
    for (std::int64_t j = 0; j < n - first; ++j)
      ids[static_cast<std::size_t>(first + j)] = checked_add(checked_mul(parent + j / K - 1, K), 1 + j % K);
    parent = checked_add(parent, ceil_div(n - first, K));
    out.push_back(std::move(ids));
  }
  return out;
}

/// How tokenspeed's page tables are named in refusals (`check_request_table`).
inline constexpr table_terms kTokenspeedTableTerms{"page", "the pages", "tokenspeed sends that page"};

/// tokenspeed's transfer of one request of `prompt` tokens, `prefix` of them already on the
/// decode side, between two parent arenas of one contract (the same tables and fields; each
/// side's own placement), the request's page tables `pages` ([tables][entries] per side, e.g.
/// `tokenspeed_dry_run_pages`): per table the sent pages (`tokenspeed_moved_entries`), per field
/// and page one range of the field's payload (M), merged here (transfer.hpp);
/// `ranges_before_merge` is tokenspeed's own count. `bytes_held`: the prefill side's non-null
/// entries x the table's payload per page. Throws std::invalid_argument naming the value for:
/// prompt < 1; a prefix outside [0, prompt) or not whole pages of every table; tables, fields or
/// payloads that differ between the sides; a page table of the wrong length, an id outside the
/// pages, a null page sent, or a page id twice in one table (`check_distinct_ids`).
inline transfer_manifest tokenspeed_transfer_manifest(std::span<const transfer_table> tables,
                                                      const tokenspeed_transfer_side& prefill,
                                                      const tokenspeed_transfer_side& decode,
                                                      const transfer_blocks& pages, std::int64_t prompt,
                                                      std::int64_t prefix = 0) {
  require(prompt >= 1, "the prompt must hold at least one token", named_value("prompt_len", prompt));
  require(prefix >= 0 && prefix < prompt, "the decode side's cached prefix must be in [0, prompt_len)",
          named_value("prefix", prefix), named_value("prompt_len", prompt));
  const std::size_t n = tables.size();
  require(prefill.fields.size() == n && decode.fields.size() == n && prefill.num_pages.size() == n &&
              decode.num_pages.size() == n && pages.prefill.size() == n && pages.decode.size() == n,
          "one field list, page count and page table per group on each side", named_value("groups", n));
  transfer_manifest m;
  for (std::size_t k = 0; k < n; ++k) {
    const transfer_table& t = tables[k];
    require(prefix % t.block_tokens == 0, "a prefix is whole pages of every group (the prefix granularity)",
            named_value("prefix", prefix), named_value("block_tokens", t.block_tokens));
    const std::vector<transfer_field>& fs = prefill.fields[k];
    const std::vector<transfer_field>& fd = decode.fields[k];
    require(fs.size() == fd.size(), "both sides hold the same fields of a group",
            named_value("prefill_fields", fs.size()), named_value("decode_fields", fd.size()));
    std::uint64_t payload = 0;
    for (std::size_t f = 0; f < fs.size(); ++f) {
      require(fs[f].payload == fd[f].payload, "a field's payload is the same on both sides (the contract)",
              named_value("prefill_payload", fs[f].payload), named_value("decode_payload", fd[f].payload));
      payload = checked_add(payload, fs[f].payload);
    }
    const std::int64_t entries = tokenspeed_transfer_entries(t, prompt);
    const auto [first, end] = tokenspeed_moved_entries(t, prompt, prefix);
    check_request_table(pages.prefill[k], t, entries, first, prefill.num_pages[k], "prefill", kTokenspeedTableTerms);
    check_request_table(pages.decode[k], t, entries, first, decode.num_pages[k], "decode", kTokenspeedTableTerms);
    transfer_group g;
    g.name = t.name;
    g.first_entry = first;
    g.end_entry = end;
    for (const std::int64_t id : pages.prefill[k]) g.blocks_held += id != 0 ? 1 : 0;
    g.bytes_held = checked_mul(static_cast<std::uint64_t>(g.blocks_held), payload);
    g.blocks_moved = end - first;
    g.bytes_moved = checked_mul(static_cast<std::uint64_t>(g.blocks_moved), payload);
    for (std::size_t f = 0; f < fs.size(); ++f)
      for (std::int64_t e = first; e < end; ++e) {
        const auto src = static_cast<std::uint64_t>(pages.prefill[k][static_cast<std::size_t>(e)]);
        const auto dst = static_cast<std::uint64_t>(pages.decode[k][static_cast<std::size_t>(e)]);
        append_merged(g.ranges, {checked_add(fs[f].page0_offset, checked_mul(src, fs[f].page_stride)),
                                 checked_add(fd[f].page0_offset, checked_mul(dst, fd[f].page_stride)), fs[f].payload});
        ++g.ranges_before_merge;
      }
    m.groups.push_back(std::move(g));
  }
  check_distinct_ids(pages.prefill, tables, false, "prefill", kTokenspeedTableTerms);
  check_distinct_ids(pages.decode, tables, false, "decode", kTokenspeedTableTerms);
  total_manifest(m);
  return m;
}

}  // namespace dsv4::cache
