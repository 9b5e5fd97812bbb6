// dsv4-cache: vLLM's NIXL connector as a transfer rule: which entries of a request's block
// tables move from a prefill instance to a decode instance, and the bytes each moves.
//
// Sources (vllm-project/vllm, files of the NIXL connector package
// vllm/distributed/kv_transfer/kv_connector/v1/nixl/, read one by one; each file's commit):
//   B  nixl/base_scheduler.py @ 0050936b22adda2ef0197fa3bb2551fe6c5437dc: `get_exchange_clipped_blocks`
//      keeps, per KV-cache group, every block of a full-attention group and the last
//      `blocks_per_sw = cdiv(sliding_window, block_size) + 1` blocks of a sliding-window group
//      (the "+ 1" for a window that does not start at a block boundary); the prefill side
//      sends them in `kv_transfer_params["remote_block_ids"]`, one list per group.
//   W  nixl/base_worker.py @ 00bd51312724dc9984e7eaa16fa741863db25c97: `_register_packed_kv_cache`
//      (DeepSeek V4's per-block packing, PR #44577): one NIXL region over the whole pool,
//      `block_len = block_stride = storage bytes / num_blocks`, so one block id moves one whole
//      block of the shared pool (every layer of the group that owns the block, and the rest of
//      the bytes_per_block slab); `_apply_prefix_caching`: the decode side trims the remote list
//      to its own not-prefix-cached blocks, pairing the two lists from the tail;
//      `_validate_remote_agent_handshake`: a replicated (MLA) region needs the same block length
//      on both sides.
//   T  nixl/transfer_plan.py @ 0016029bf8307dcb1d7d74381a8654f21a1eaa50: `_compute_tp_mapping`:
//      an MLA (replicated) cache is read whole from one prefill rank; the other prefill ranks
//      of the request get a notification only.
//   F  vllm/v1/core/single_type_kv_cache_manager.py `SlidingWindowManager.remove_skipped_blocks`:
//      a sliding group's entries [0, (c - W + 1) / block_size) hold the null block once c tokens
//      are computed (docs/engines/policies.md).
// What this does not model: a clipped entry that is the null block (freed before the window,
// possible when W is a multiple of the block) is skipped here, not read; V4.1's SWA bounded
// replay (PR #56227: V4.1 only, its effect on the connector not confirmed in code).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/transfer.hpp"

namespace dsv4::cache {

/// Table entries of a request of `prompt` tokens in `t`: ceil(prompt / block_tokens), or one for
/// a ring (its block holds the latest state whatever the length). Throws
/// std::invalid_argument for prompt < 1 or block_tokens < 1.
inline std::int64_t vllm_transfer_entries(const transfer_table& t, std::int64_t prompt) {
  require(prompt >= 1, "the prompt must hold at least one token", named_value("prompt_len", prompt));
  require(t.block_tokens >= 1, "a block table's blocks hold at least one token",
          named_value("block_tokens", t.block_tokens));
  return t.ring ? 1 : ceil_div(prompt, t.block_tokens);
}

/// Entries of table `t` that hold the null block once the prefill computed `prompt` tokens
/// (F): [0, (prompt - W + 1) / block_tokens) of a sliding table, none of a full one.
inline std::int64_t vllm_freed_entries(const transfer_table& t, std::int64_t prompt) {
  if (!t.sliding) return 0;
  const std::int64_t first_kept = prompt - t.window_tokens + 1;
  return first_kept <= 0 ? 0 : first_kept / t.block_tokens;
}

/// The entries of table `t` the connector moves for a prompt of `prompt` tokens of which the
/// decode side already holds `prefix` (a prefix-cache hit): [first, end) with end = the
/// table's entries; a full table from prefix / block_tokens (W `_apply_prefix_caching`), a
/// sliding one also from end - (cdiv(W, block_tokens) + 1) (B). Throws as
/// `vllm_transfer_entries`.
inline std::pair<std::int64_t, std::int64_t> vllm_moved_entries(const transfer_table& t, std::int64_t prompt,
                                                                std::int64_t prefix) {
  const std::int64_t end = vllm_transfer_entries(t, prompt);
  if (t.ring) return {0, end};
  std::int64_t first = prefix / t.block_tokens;
  if (t.sliding) first = std::max(first, end - (ceil_div(t.window_tokens, t.block_tokens) + 1));
  return {std::max<std::int64_t>(first, 0), end};
}

/// A dry run's block tables: each side's pool fresh, the request's tables allocated in table
/// order, each entry it holds (not freed, `vllm_freed_entries`) the next block id from 1 (vLLM
/// hands out the free queue's head first; block 0 is the null block), freed entries 0.
/// Shapes: [tables][entries]. Throws as `vllm_transfer_entries`.
inline std::vector<std::vector<std::int64_t>> vllm_dry_run_blocks(std::span<const transfer_table> tables,
                                                                  std::int64_t prompt) {
  std::vector<std::vector<std::int64_t>> out;
  std::int64_t next = 1;
  for (const transfer_table& t : tables) {
    const std::int64_t n = vllm_transfer_entries(t, prompt);
    const std::int64_t freed = vllm_freed_entries(t, prompt);
    std::vector<std::int64_t> ids(static_cast<std::size_t>(n), 0);
    for (std::int64_t i = freed; i < n; ++i) ids[static_cast<std::size_t>(i)] = next++;
    out.push_back(std::move(ids));
  }
  return out;
}

/// How vLLM's block tables are named in refusals (`check_request_table`).
inline constexpr table_terms kVllmTableTerms{
    "block", "the pool", "the request holds that block (inside the window, or a full-history table)"};

/// vLLM's NIXL transfer of one request of `prompt` tokens, `prefix` of them already cached on
/// the decode side, from a prefill pool to a decode pool (both vLLM shared block pools of one
/// layout: the same tables, the same block bytes), the request's block tables `blocks`
/// ([tables][entries] per side, e.g. `vllm_dry_run_blocks`): per table the moved entries
/// (`vllm_moved_entries`), one copy of `block_bytes` per entry not null on the prefill side
/// (W), merged (transfer.hpp). `bytes_held`: the prefill side's non-null entries x block bytes.
/// Throws std::invalid_argument naming the value for: prompt < 1; prefix outside [0, prompt)
/// or not a multiple of every table's block_tokens (a prefix hit is whole blocks); different
/// block bytes (W: a replicated region needs the same block length); a table count or a block
/// table length that does not match; a block id outside [0, num_blocks), a null entry the
/// request holds, or a block id in two entries of one side's tables (`check_distinct_ids`).
inline transfer_manifest vllm_transfer_manifest(std::span<const transfer_table> tables, const transfer_pool& prefill,
                                                const transfer_pool& decode, const transfer_blocks& blocks,
                                                std::int64_t prompt, std::int64_t prefix = 0) {
  require(prompt >= 1, "the prompt must hold at least one token", named_value("prompt_len", prompt));
  require(prefix >= 0 && prefix < prompt, "the decode side's cached prefix must be in [0, prompt_len)",
          named_value("prefix", prefix), named_value("prompt_len", prompt));
  require(prefill.block_bytes == decode.block_bytes && prefill.block_bytes > 0,
          "vLLM's NIXL connector needs the same block bytes on both sides (a replicated region's block length)",
          named_value("prefill_block_bytes", prefill.block_bytes),
          named_value("decode_block_bytes", decode.block_bytes));
  require(blocks.prefill.size() == tables.size() && blocks.decode.size() == tables.size(),
          "one block table per engine group on each side", named_value("groups", tables.size()),
          named_value("prefill_tables", blocks.prefill.size()), named_value("decode_tables", blocks.decode.size()));
  transfer_manifest m;
  for (std::size_t k = 0; k < tables.size(); ++k) {
    const transfer_table& t = tables[k];
    require(t.ring || prefix % t.block_tokens == 0, "a prefix-cache hit is whole blocks of every group",
            named_value("prefix", prefix), named_value("block_tokens", t.block_tokens));
    const std::int64_t entries = vllm_transfer_entries(t, prompt);
    const std::int64_t freed = vllm_freed_entries(t, prompt);
    check_request_table(blocks.prefill[k], t, entries, freed, prefill.num_blocks, "prefill", kVllmTableTerms);
    // The decode side's own freed entries lie before the window as well; its prefix entries
    // hold its cached blocks.
    check_request_table(blocks.decode[k], t, entries, freed, decode.num_blocks, "decode", kVllmTableTerms);
    transfer_group g;
    g.name = t.name;
    const auto [first, end] = vllm_moved_entries(t, prompt, prefix);
    g.first_entry = first;
    g.end_entry = end;
    g.blocks_held = entries - freed;
    g.bytes_held = checked_mul(static_cast<std::uint64_t>(g.blocks_held), prefill.block_bytes);
    std::vector<transfer_range> copies;
    for (std::int64_t i = first; i < end; ++i) {
      const std::int64_t src = blocks.prefill[k][static_cast<std::size_t>(i)];
      const std::int64_t dst = blocks.decode[k][static_cast<std::size_t>(i)];
      if (src == 0 || dst == 0) continue;  // a freed entry: nothing decode reads
      copies.push_back({checked_mul(static_cast<std::uint64_t>(src), prefill.block_bytes),
                        checked_mul(static_cast<std::uint64_t>(dst), decode.block_bytes), prefill.block_bytes});
    }
    g.blocks_moved = static_cast<std::int64_t>(copies.size());
    g.bytes_moved = checked_mul(static_cast<std::uint64_t>(g.blocks_moved), prefill.block_bytes);
    g.ranges_before_merge = g.blocks_moved;
    g.ranges = merge_ranges(copies);
    m.groups.push_back(std::move(g));
  }
  check_distinct_ids(blocks.prefill, tables, true, "prefill", kVllmTableTerms);
  check_distinct_ids(blocks.decode, tables, true, "decode", kVllmTableTerms);
  total_manifest(m);
  return m;
}

/// The prefill rank a decode rank reads a replicated (MLA) cache from (T): with prefill TP size
/// `prefill_tp` and decode TP size `decode_tp`, decode TP rank `decode_tp_rank` reads from
/// prefill TP rank decode_tp_rank x prefill_tp / decode_tp (one reader per prefill rank when
/// decode_tp <= prefill_tp). Throws std::invalid_argument for sizes < 1 or a rank outside
/// [0, decode_tp).
inline std::int64_t vllm_replicated_source_rank(std::int64_t prefill_tp, std::int64_t decode_tp,
                                                std::int64_t decode_tp_rank) {
  require(prefill_tp >= 1 && decode_tp >= 1, "TP sizes must be >= 1", named_value("prefill_tp", prefill_tp),
          named_value("decode_tp", decode_tp));
  require(decode_tp_rank >= 0 && decode_tp_rank < decode_tp, "the decode TP rank must be in [0, decode_tp)",
          named_value("decode_tp_rank", decode_tp_rank), named_value("decode_tp", decode_tp));
  return checked_mul(decode_tp_rank, prefill_tp) / decode_tp;
}

}  // namespace dsv4::cache
