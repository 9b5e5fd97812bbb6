// dsv4-cache-layout transfer: the prefill -> decode transfer manifest of one request between
// two descriptors (`describe --engine vllm` or `--engine tokenspeed`, schema /2), checked against
// the layout contract first, as a table, JSON, NIXL descriptor lists or Mooncake batch requests.
//
//   dsv4-cache-layout transfer PREFILL.json DECODE.json --prompt-len N [--prefix N]
//       [--blocks FILE] [--prefill-dp-rank R] [--decode-dp-rank R] [--json | --nixl | --mooncake]
//
// The manifest is the engine connector's (engines/vllm/transfer.hpp: vLLM's NIXL connector;
// engines/tokenspeed/transfer.hpp: tokenspeed's PD transfer); the core is transfer.hpp. Exit codes: 0 a manifest; 1 the
// layouts cannot exchange pages (the diff's first breaking difference, or a parallel layout the connector does not
// pair); 2 bad input (a descriptor, a block id outside the pool, a block table shorter than the prompt); 3 a write
// error.
//
// Wire shapes (documented with the fields each library takes):
// - --nixl: {"pairs":[{"src_rank","dst_rank","src":[{"addr","len","dev_id"}],"dst":[...]}]}: NIXL's
//   transfer descriptor lists (`nixlBasicDesc{addr, len, devId}`, ai-dynamo/nixl
//   src/api/cpp/nixl_descriptors.h @ 8770b655), paired index by index as `make_prepped_xfer`
//   pairs its local and remote index lists; `addr` is an offset into the rank's registered KV
//   region (add the region's base address), `dev_id` the rank's CUDA device, numbered here as
//   its rank within its TP group (one GPU per rank, ranks of a node in order).
// - --mooncake: {"batches":[{"src_rank","dst_rank","requests":[{"opcode","source","target_id",
//   "target_offset","length"}]}]}: the Mooncake transfer engine's `TransferRequest` (kvcache-ai/
//   Mooncake mooncake-transfer-engine/include/transfer_engine.h @ 3b5a5941: opcode READ/WRITE,
//   `source` a local address, `target_id` the remote segment, `target_offset` the remote
//   address, `length`), as the prefill side submits them (WRITE); `source` and `target_offset`
//   are offsets into each side's registered region, `target_id` the decode rank.
#pragma once

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dsv4/cache/engines/tokenspeed/arena.hpp"
#include "dsv4/cache/engines/tokenspeed/transfer.hpp"
#include "dsv4/cache/engines/vllm/transfer.hpp"
#include "dsv4/cache/transfer.hpp"
#include "dsv4/tools/contract.hpp"

namespace dsv4::tools {

/// `transfer`'s inputs.
struct transfer_args {
  std::vector<std::string> descriptors;  ///< PREFILL.json DECODE.json.
  std::int64_t prompt_len = 0;           ///< Tokens of the request's prompt (required).
  std::int64_t prefix = 0;               ///< Tokens of it the decode side holds already (a prefix-cache hit).
  std::string blocks;                    ///< A JSON file of both sides' block tables; empty: a dry run.
  std::int64_t prefill_dp_rank = 0;      ///< The prefill DP rank that ran the request.
  std::int64_t decode_dp_rank = 0;       ///< The decode DP rank the request goes to.
  bool json = false;
  bool nixl = false;
  bool mooncake = false;
};

/// One side's parallel layout, from the descriptor's `info.parallel` (describe writes it with
/// parallel flags; absent: one GPU).
struct transfer_parallel {
  std::int64_t tp = 1;
  std::int64_t dp = 1;
  std::int64_t pp = 1;
  std::int64_t dcp = 1;
  std::int64_t stage = 0;  ///< The pipeline stage the descriptor's rank is on.
};

/// One (prefill rank, decode rank) pair and its manifest.
struct transfer_pair {
  std::int64_t src_rank = 0;
  std::int64_t dst_rank = 0;
  std::int64_t src_tp_rank = 0;  ///< Its device (`dev_id`): the rank within its TP group.
  std::int64_t dst_tp_rank = 0;
};

/// One side's engine and its pool as a transfer sees them.
struct transfer_side {
  std::string engine;                      ///< "vllm" or "tokenspeed" (layout.engine.name).
  cache::transfer_pool pool;               ///< vLLM: its block pool.
  cache::tokenspeed_transfer_side fields;  ///< tokenspeed: per group its fields' pages.
  std::vector<std::int64_t> packing;       ///< tokenspeed: per group its pages per parent.
};

/// The longest prompt `compute_transfer` takes when neither descriptor records its context
/// (info.context_tokens): 2^24 tokens, 16 x the longest V4 context.
inline constexpr std::int64_t kMaxTransferPromptTokens = std::int64_t{1} << 24;

/// What `transfer` computed.
struct transfer_report {
  std::string model;
  std::string prefill_engine;
  std::string decode_engine;
  std::string verdict;  ///< The diff's verdict line.
  std::vector<cache::transfer_table> tables;
  cache::transfer_pool prefill_pool;
  cache::transfer_pool decode_pool;
  transfer_side prefill_side;
  transfer_side decode_side;
  transfer_parallel prefill_parallel;
  transfer_parallel decode_parallel;
  bool dry_run = true;
  std::vector<std::string> assumed;  ///< What was assumed for flags left out, said on screen.
  std::vector<transfer_pair> pairs;  ///< Every pair moves the same manifest (a replicated cache).
  cache::transfer_manifest manifest;
};

/// The layouts cannot exchange pages: exit 1, `what` names the first difference.
struct transfer_refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace transfer_detail {

using contract_detail::ojson;

inline transfer_parallel parallel_of(const ojson& d, const std::string& path) {
  transfer_parallel p;
  if (!d.contains("info") || !d["info"].contains("parallel")) return p;
  const ojson& q = d["info"]["parallel"];
  const std::string where = path + ": info.parallel";
  p.tp = contract_detail::int_at(q, "tp", where);
  p.dp = contract_detail::int_at(q, "dp", where);
  p.pp = contract_detail::int_at(q, "pp", where);
  p.dcp = contract_detail::int_at(q, "dcp", where);
  p.stage = contract_detail::int_at(q, "stage", where);
  if (p.tp < 1 || p.dp < 1 || p.pp < 1 || p.dcp < 1 || p.stage < 0 || p.stage >= p.pp)
    throw contract_detail::bad_descriptor(
        fmt::format("{}: tp {}, dp {}, pp {}, dcp {} must be >= 1 and the stage {} in [0, pp)", where, p.tp, p.dp, p.pp,
                    p.dcp, p.stage));
  return p;
}

/// tokenspeed's fields of every group of its /2 engine part `e` (planes, packing, each tensor's
/// plane per layer) in an arena of `parents` parents (the null parent included): page p of a
/// field on plane i at plane_offset(i) + bytes(i) - stride + p x stride, stride = bytes(i) / K,
/// plane_offset(i) the planes before it (in the descriptor's order) x parents
/// (engines/tokenspeed/arena.hpp). Throws bad_descriptor naming the path.
inline void tokenspeed_fields(const ojson& e, const std::string& path, std::int64_t parents, transfer_side& side) {
  const ojson& planes = contract_detail::array_at(e, "planes", path + ": layout.engine");
  // Planes are listed in tokenspeed's (string) order of their ids "unit.<i>"; a tensor names
  // plane i by its number.
  std::vector<std::uint64_t> plane_offset(planes.size());
  std::vector<std::int64_t> plane_bytes(planes.size());
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < planes.size(); ++i) {
    const std::string id =
        contract_detail::str_at(planes[i], "id", fmt::format("{}: layout.engine.planes[{}]", path, i));
    std::size_t num = planes.size();
    if (id.rfind("unit.", 0) == 0) {
      const std::string digits = id.substr(5);
      std::size_t v = 0;
      const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
      if (ec == std::errc() && ptr == digits.data() + digits.size() && !digits.empty()) num = v;
    }
    if (num >= planes.size() || plane_bytes[num] != 0)
      throw contract_detail::bad_descriptor(fmt::format(
          "{}: layout.engine.planes[{}].id {} must be unit.<i>, each i in [0, {}) once", path, i, id, planes.size()));
    const std::int64_t b =
        contract_detail::int_at(planes[i], "bytes", fmt::format("{}: layout.engine.planes[{}]", path, i));
    if (b < 1)
      throw contract_detail::bad_descriptor(
          fmt::format("{}: layout.engine.planes[{}].bytes {} must be >= 1", path, i, b));
    plane_offset[num] = at;
    plane_bytes[num] = b;
    at = cache::checked_add(at, cache::checked_mul(static_cast<std::uint64_t>(parents), static_cast<std::uint64_t>(b)));
  }
  const ojson& groups = contract_detail::array_at(e, "groups", path + ": layout.engine");
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const std::string gp = fmt::format("{}: layout.engine.groups[{}]", path, i);
    const std::int64_t k = contract_detail::int_at(groups[i], "packing", gp);
    if (k < 1) throw contract_detail::bad_descriptor(fmt::format("{}.packing {} must be >= 1", gp, k));
    std::vector<cache::transfer_field> fields;
    for (const ojson& t : contract_detail::array_at(groups[i], "tensors", gp)) {
      const std::int64_t payload = contract_detail::int_at(t, "page_bytes", gp + ".tensors[]");
      for (const ojson& q : contract_detail::array_at(t, "planes", gp + ".tensors[]")) {
        if (!q.is_number_integer() || q.get<std::int64_t>() < 0 ||
            q.get<std::int64_t>() >= static_cast<std::int64_t>(planes.size()))
          throw contract_detail::bad_descriptor(
              fmt::format("{}.tensors[].planes: {} is not a plane index", gp, q.dump()));
        const auto pi = static_cast<std::size_t>(q.get<std::int64_t>());
        if (plane_bytes[pi] < k)
          throw contract_detail::bad_descriptor(
              fmt::format("{}: plane {}'s {} B cannot hold {} pages (packing)", gp, pi, plane_bytes[pi], k));
        const cache::tokenspeed_field_pages f =
            cache::tokenspeed_field_on_plane(plane_offset[pi], plane_bytes[pi], k, parents);
        if (payload < 1 || payload > f.page_stride)
          throw contract_detail::bad_descriptor(
              fmt::format("{}: a page of {} B does not fit plane {}'s {} B pages", gp, payload, pi, f.page_stride));
        fields.push_back(
            {f.page0_offset, static_cast<std::uint64_t>(f.page_stride), static_cast<std::uint64_t>(payload)});
      }
    }
    side.fields.fields.push_back(std::move(fields));
    side.fields.num_pages.push_back(cache::tokenspeed_field_on_plane(0, k, k, parents).pages);
    side.packing.push_back(k);
  }
}

/// The engine groups of a /2 descriptor as block tables (windows from `info.windows`), and its
/// pool: `info.num_blocks` (the rank's blocks or parents, the null one included), or
/// info.plan_bytes / block_bytes; tokenspeed's fields (`tokenspeed_fields`). Throws
/// bad_descriptor naming the path.
inline void tables_of(const ojson& d, const std::string& path, std::vector<cache::transfer_table>& tables,
                      transfer_side& side) {
  cache::transfer_pool& pool = side.pool;
  if (d["schema"] != std::string(cache::kLayoutSchemaEngine) || !d["layout"].contains("engine"))
    throw contract_detail::bad_descriptor(
        path +
        ": no engine placement (schema dsv4-cache-layout/1): a transfer moves the engine's blocks; write the "
        "descriptor with describe --engine vllm or --engine tokenspeed");
  const ojson& e = d["layout"]["engine"];
  const std::string name = contract_detail::str_at(e, "name", path + ": layout.engine");
  if (name != "vllm" && name != "tokenspeed")
    throw contract_detail::bad_descriptor(
        fmt::format("{}: engine {}: transfers are modelled for vLLM's NIXL connector and tokenspeed's PD transfer only",
                    path, name));
  side.engine = name;
  const std::int64_t block_bytes = contract_detail::int_at(e, "block_bytes", path + ": layout.engine");
  const ojson info = d.contains("info") ? d["info"] : ojson::object();
  pool.block_bytes = static_cast<std::uint64_t>(block_bytes);
  if (block_bytes < 1)
    throw contract_detail::bad_descriptor(
        fmt::format("{}: layout.engine.block_bytes {} must be >= 1", path, block_bytes));
  if (info.contains("num_blocks")) {  // the described rank's pool (describe writes it)
    pool.num_blocks = contract_detail::int_at(info, "num_blocks", path + ": info");
  } else {  // a one-GPU descriptor: the plan is the pool
    const std::int64_t plan_bytes = contract_detail::int_at(info, "plan_bytes", path + ": info");
    if (plan_bytes % block_bytes != 0)
      throw contract_detail::bad_descriptor(
          fmt::format("{}: info.plan_bytes {} must be a whole number of blocks of layout.engine.block_bytes {}", path,
                      plan_bytes, block_bytes));
    pool.num_blocks = plan_bytes / block_bytes;
  }
  if (pool.num_blocks < 2)
    throw contract_detail::bad_descriptor(
        fmt::format("{}: the pool has {} blocks; it needs the null block and one more", path, pool.num_blocks));
  if (pool.num_blocks > INT64_MAX / block_bytes)  // offsets are signed 64-bit (NIXL's addr, Mooncake's offsets)
    throw contract_detail::bad_descriptor(
        fmt::format("{}: info.num_blocks {} x layout.engine.block_bytes {} is past 2^63 - 1 bytes", path,
                    pool.num_blocks, block_bytes));
  if (name == "tokenspeed") tokenspeed_fields(e, path, pool.num_blocks, side);
  tables.clear();
  const auto windows = contract_detail::windows_of(d, path);
  const ojson& groups = contract_detail::array_at(e, "groups", path + ": layout.engine");
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const std::string gp = fmt::format("{}: layout.engine.groups[{}]", path, i);
    cache::transfer_table t;
    const std::string kind = contract_detail::str_at(groups[i], "table", gp);
    t.sliding = kind == "sliding_window";
    t.ring = kind == "request_ring";
    if (!t.sliding && !t.ring && kind != "full_history")
      throw contract_detail::bad_descriptor(fmt::format("{}.table: {} is not a table kind", gp, kind));
    t.block_tokens = contract_detail::int_at(groups[i], "block_tokens", gp);
    const ojson& tensors = contract_detail::array_at(groups[i], "tensors", gp);
    std::vector<std::string> ids;
    for (const ojson& x : tensors) {
      const std::string id = contract_detail::str_at(x, "group", gp + ".tensors[]");
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    if (ids.empty()) throw contract_detail::bad_descriptor(gp + ".tensors: empty");
    t.name = fmt::format("{}[{}]", kind, fmt::join(ids, ", "));
    if (t.sliding) {
      for (const auto& [group, w] : windows)
        if (group == ids.front()) t.window_tokens = w;
      if (t.window_tokens == 0)
        throw contract_detail::bad_descriptor(fmt::format(
            "{}: info.windows.{}: missing; the sliding group's window (tokens >= 1) is needed", path, ids.front()));
    }
    tables.push_back(std::move(t));
  }
}

/// `tables_of` of a vLLM descriptor, its pool alone.
inline void tables_of(const ojson& d, const std::string& path, std::vector<cache::transfer_table>& tables,
                      cache::transfer_pool& pool) {
  transfer_side side;
  tables_of(d, path, tables, side);
  pool = side.pool;
}

/// Both sides' block tables from a --blocks file: {"prefill": [[ids] per engine group],
/// "decode": [...]} (`compute_transfer` checks them against the layout). Throws
/// std::invalid_argument naming the file, the path and the value (an id that is not a 64-bit
/// signed integer among them).
inline cache::transfer_blocks read_blocks(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw std::invalid_argument("--blocks " + path + ": no such file");
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::invalid_argument("--blocks " + path +
                                ": not a regular file (a directory, a device or a FIFO): not a block-table file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("--blocks " + path + ": cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  ojson j;
  try {
    j = ojson::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("--blocks " + path + ": not JSON: " + e.what());
  }
  cache::transfer_blocks b;
  for (const char* side : {"prefill", "decode"}) {
    if (!j.is_object() || !j.contains(side) || !j[side].is_array())
      throw std::invalid_argument(fmt::format(
          "--blocks {}: \"{}\" must be an array of block tables (one per engine group of the layout)", path, side));
    auto& out = side[0] == 'p' ? b.prefill : b.decode;
    for (std::size_t g = 0; g < j[side].size(); ++g) {
      const ojson& ids = j[side][g];
      if (!ids.is_array())
        throw std::invalid_argument(fmt::format("--blocks {}: {}[{}] must be an array of block ids", path, side, g));
      std::vector<std::int64_t> v;
      for (const ojson& id : ids) {
        // (an unsigned id above 2^63 - 1 would wrap in get<int64_t>)
        if (!id.is_number_integer() ||
            (id.is_number_unsigned() &&
             id.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())))
          throw std::invalid_argument(
              fmt::format("--blocks {}: {}[{}]: block id {} is not an integer in [0, 2^63)", path, side, g, id.dump()));
        v.push_back(id.get<std::int64_t>());
      }
      out.push_back(std::move(v));
    }
  }
  return b;
}

/// The pairs of ranks that move the request (engines/vllm/transfer.hpp T: a replicated cache,
/// one reader per decode TP rank).
inline std::vector<transfer_pair> pairs_of(const transfer_report& r, const transfer_args& a) {
  const transfer_parallel& p = r.prefill_parallel;
  const transfer_parallel& d = r.decode_parallel;
  if (a.prefill_dp_rank < 0 || a.prefill_dp_rank >= p.dp)
    throw std::invalid_argument(
        fmt::format("--prefill-dp-rank {} must be in [0, {}) (the prefill side's dp)", a.prefill_dp_rank, p.dp));
  if (a.decode_dp_rank < 0 || a.decode_dp_rank >= d.dp)
    throw std::invalid_argument(
        fmt::format("--decode-dp-rank {} must be in [0, {}) (the decode side's dp)", a.decode_dp_rank, d.dp));
  if ((p.dcp > 1 || d.dcp > 1) && (p.dcp != d.dcp || p.tp != d.tp))
    throw transfer_refused(fmt::format(
        "DCP shards differ (prefill tp {} dcp {}, decode tp {} dcp {}): a page moves whole, so each decode rank "
        "needs the prefill rank holding its own shard of rows (equal TP and DCP)",
        p.tp, p.dcp, d.tp, d.dcp));
  std::vector<transfer_pair> out;
  for (std::int64_t t = 0; t < d.tp; ++t) {
    transfer_pair x;
    x.dst_tp_rank = t;
    x.src_tp_rank = p.dcp > 1 ? t : cache::vllm_replicated_source_rank(p.tp, d.tp, t);
    x.src_rank = (a.prefill_dp_rank * p.pp + p.stage) * p.tp + x.src_tp_rank;
    x.dst_rank = (a.decode_dp_rank * d.pp + d.stage) * d.tp + t;
    out.push_back(x);
  }
  return out;
}

}  // namespace transfer_detail

/// The manifest of one request between descriptors `p` (prefill) and `d` (decode), named
/// `pp` and `dp` in messages: both checked (`check`) and compared (`diff`: a difference a page
/// transfer breaks, or one of the layer sets or the rank part, refuses), then vLLM's connector
/// rule applied to the block tables `given` ([tables][entries] per side), or a dry run's without
/// them; `a` gives the prompt, the prefix and the DP ranks (its descriptors and --blocks are not
/// read). Throws transfer_refused (exit 1) when the layouts cannot exchange pages,
/// std::invalid_argument (exit 2) for bad input.
inline transfer_report compute_transfer(const contract_detail::ojson& p, const contract_detail::ojson& d,
                                        const std::string& pp, const std::string& dp, const transfer_args& a,
                                        const std::optional<cache::transfer_blocks>& given = std::nullopt) {
  using namespace transfer_detail;  // NOLINT(google-build-using-namespace)
  if (a.prompt_len < 1) throw std::invalid_argument(fmt::format("--prompt-len {} must be >= 1", a.prompt_len));
  // The prompt fits the context both deployments were planned for (max_model_len); a descriptor
  // that records none bounds it by kMaxTransferPromptTokens (its tables are held in memory here).
  std::int64_t context = kMaxTransferPromptTokens;
  std::string context_from = fmt::format("the longest prompt a transfer takes without info.context_tokens");
  for (const auto& [doc, name] : {std::pair{&p, &pp}, std::pair{&d, &dp}})
    if (doc->contains("info") && (*doc)["info"].contains("context_tokens")) {
      const std::int64_t c = contract_detail::int_at((*doc)["info"], "context_tokens", *name + ": info");
      if (c < context) context = c, context_from = fmt::format("info.context_tokens of {}", *name);
    }
  if (a.prompt_len > context)
    throw std::invalid_argument(
        fmt::format("--prompt-len {} is longer than the context, {} tokens ({})", a.prompt_len, context, context_from));
  transfer_report r;
  // The engine placement first (a /1 descriptor has no blocks to move), then the contract.
  std::vector<cache::transfer_table> decode_tables;
  tables_of(p, pp, r.tables, r.prefill_side);
  tables_of(d, dp, decode_tables, r.decode_side);
  r.prefill_pool = r.prefill_side.pool;
  r.decode_pool = r.decode_side.pool;
  if (r.prefill_side.engine != r.decode_side.engine)
    throw transfer_refused(fmt::format("prefill runs {}, decode {}: a transfer is one engine's connector on both sides",
                                       r.prefill_side.engine, r.decode_side.engine));
  const diff_result diff = diff_descriptors(p, d, pp, dp);
  r.verdict = diff.text.substr(0, diff.text.find('\n'));
  if (diff.code == kContractDifferent) throw transfer_refused("the layouts cannot exchange pages: " + r.verdict);
  for (const contract_detail::difference& x : diff.differences)
    if (x.text.find("engine name") == std::string::npos && x.text.find("engine preset") == std::string::npos)
      throw transfer_refused("the two ranks hold different layers or shards (" + x.text +
                             "): the connector moves a group's pages of every layer it holds, one to one");
  r.model =
      p.contains("info") && p["info"].contains("model") ? p["info"].value("model", "") : p["layout"].value("model", "");
  r.prefill_engine = p.contains("info") ? p["info"].value("engine", "vllm") : "vllm";
  r.decode_engine = d.contains("info") ? d["info"].value("engine", "vllm") : "vllm";
  r.prefill_parallel = parallel_of(p, pp);
  r.decode_parallel = parallel_of(d, dp);
  if (!p.contains("info") || !p["info"].contains("parallel"))
    r.assumed.emplace_back(pp + " records no parallel layout (info.parallel): one GPU assumed");
  if (!d.contains("info") || !d["info"].contains("parallel"))
    r.assumed.emplace_back(dp + " records no parallel layout (info.parallel): one GPU assumed");
  r.pairs = pairs_of(r, a);
  cache::transfer_blocks blocks;
  r.dry_run = !given.has_value();
  const bool tokenspeed = r.prefill_side.engine == "tokenspeed";
  if (r.dry_run) {
    blocks.prefill = tokenspeed ? cache::tokenspeed_dry_run_pages(r.tables, r.prefill_side.packing, a.prompt_len)
                                : cache::vllm_dry_run_blocks(r.tables, a.prompt_len);
    blocks.decode =
        tokenspeed ? cache::tokenspeed_dry_run_pages(r.tables, r.decode_side.packing, a.prompt_len) : blocks.prefill;
    // A fresh pool that cannot hold the request's blocks: say so, rather than blame a table.
    for (const auto& [side, ids, name] :
         {std::tuple{&r.prefill_side, &blocks.prefill, &pp}, std::tuple{&r.decode_side, &blocks.decode, &dp}}) {
      for (std::size_t k = 0; k < ids->size(); ++k) {
        const std::int64_t top = (*ids)[k].empty() ? 0 : *std::max_element((*ids)[k].begin(), (*ids)[k].end());
        const std::int64_t limit = tokenspeed ? side->fields.num_pages[k] : side->pool.num_blocks;
        if (top >= limit)
          throw std::invalid_argument(fmt::format(
              "--prompt-len {}: a fresh {} cannot hold the request: {} needs {} id {}, {} holds [0, {}) ({})",
              a.prompt_len, tokenspeed ? "arena" : "pool", r.tables[k].name, tokenspeed ? "page" : "block", top, *name,
              limit, tokenspeed ? "its parents' pages" : "info.num_blocks, the null block included"));
      }
    }
    r.assumed.emplace_back(tokenspeed ? "page ids: a dry run (no --blocks): each side's arena fresh, the request's "
                                        "groups given parents in group order from parent 1"
                                      : "block ids: a dry run (no --blocks): each side's pool fresh, the request's "
                                        "blocks handed out in group order from block 1");
  } else {
    blocks = *given;
    if (blocks.prefill.size() != r.tables.size() || blocks.decode.size() != r.tables.size())
      throw std::invalid_argument(
          fmt::format("block tables: {} prefill and {} decode tables given, the layout has {} "
                      "engine groups",
                      blocks.prefill.size(), blocks.decode.size(), r.tables.size()));
  }
  r.manifest = tokenspeed ? cache::tokenspeed_transfer_manifest(r.tables, r.prefill_side.fields, r.decode_side.fields,
                                                                blocks, a.prompt_len, a.prefix)
                          : cache::vllm_transfer_manifest(r.tables, r.prefill_pool, r.decode_pool, blocks, a.prompt_len,
                                                          a.prefix);
  return r;
}

/// `compute_transfer` of `a`'s two descriptor files and its --blocks file (when given). Throws
/// as there; a file that cannot be read is bad input naming it.
inline transfer_report compute_transfer(const transfer_args& a) {
  if (a.descriptors.size() != 2)
    throw std::invalid_argument("transfer takes two descriptors: PREFILL.json DECODE.json");
  const contract_detail::ojson p = contract_detail::read_descriptor(a.descriptors[0]);
  const contract_detail::ojson d = contract_detail::read_descriptor(a.descriptors[1]);
  std::optional<cache::transfer_blocks> given;
  if (!a.blocks.empty()) given = transfer_detail::read_blocks(a.blocks);
  try {
    return compute_transfer(p, d, a.descriptors[0], a.descriptors[1], a, given);
  } catch (const std::invalid_argument& e) {
    if (a.blocks.empty()) throw;
    throw std::invalid_argument(std::string(e.what()) + " (--blocks " + a.blocks + ")");
  }
}

/// The manifest as JSON: inputs, pairs, per group the entries, blocks, bytes and merged ranges,
/// and the totals (`bytes_moved`, `bytes_held`, `ranges`, `ranges_before_merge`).
inline nlohmann::ordered_json transfer_json(const transfer_report& r, const transfer_args& a) {
  using ojson = nlohmann::ordered_json;
  const auto ranges = [](const std::vector<cache::transfer_range>& v) {
    ojson out = ojson::array();
    for (const cache::transfer_range& x : v)
      out.push_back({{"src_offset", x.src_offset}, {"dst_offset", x.dst_offset}, {"length", x.length}});
    return out;
  };
  ojson j;
  j["model"] = r.model;
  j["connector"] = r.prefill_side.engine == "tokenspeed" ? "tokenspeed-mooncake" : "vllm-nixl";
  j["prefill"] = {{"descriptor", a.descriptors.empty() ? std::string() : a.descriptors[0]},
                  {"engine", r.prefill_engine},
                  {"block_bytes", r.prefill_pool.block_bytes},
                  {"num_blocks", r.prefill_pool.num_blocks}};
  j["decode"] = {{"descriptor", a.descriptors.size() < 2 ? std::string() : a.descriptors[1]},
                 {"engine", r.decode_engine},
                 {"block_bytes", r.decode_pool.block_bytes},
                 {"num_blocks", r.decode_pool.num_blocks}};
  j["verdict"] = r.verdict;
  j["prompt_len"] = a.prompt_len;
  j["prefix"] = a.prefix;
  j["block_ids"] = r.dry_run ? "dry_run" : "given";
  j["assumed"] = r.assumed;
  ojson pairs = ojson::array();
  for (const transfer_pair& x : r.pairs) pairs.push_back({{"src_rank", x.src_rank}, {"dst_rank", x.dst_rank}});
  j["pairs"] = pairs;
  ojson groups = ojson::array();
  for (std::size_t i = 0; i < r.manifest.groups.size(); ++i) {
    const cache::transfer_group& g = r.manifest.groups[i];
    const cache::transfer_table& t = r.tables[i];
    groups.push_back({{"group", g.name},
                      {"table", t.ring      ? "request_ring"
                                : t.sliding ? "sliding_window"
                                            : "full_history"},
                      {"block_tokens", t.block_tokens},
                      {"window", t.window_tokens},
                      {"first_entry", g.first_entry},
                      {"end_entry", g.end_entry},
                      {"blocks_moved", g.blocks_moved},
                      {"blocks_held", g.blocks_held},
                      {"bytes_moved", g.bytes_moved},
                      {"bytes_held", g.bytes_held},
                      {"ranges_before_merge", g.ranges_before_merge},
                      {"ranges", ranges(g.ranges)}});
  }
  j["groups"] = groups;
  j["bytes_moved"] = r.manifest.bytes_moved;
  j["bytes_held"] = r.manifest.bytes_held;
  j["ranges_before_merge"] = r.manifest.ranges_before_merge;
  j["ranges"] = ranges(r.manifest.ranges);
  return j;
}

/// NIXL's descriptor lists per rank pair (see the top of this file).
inline nlohmann::ordered_json transfer_nixl(const transfer_report& r) {
  using ojson = nlohmann::ordered_json;
  ojson pairs = ojson::array();
  for (const transfer_pair& x : r.pairs) {
    ojson src = ojson::array();
    ojson dst = ojson::array();
    for (const cache::transfer_range& g : r.manifest.ranges) {
      src.push_back({{"addr", g.src_offset}, {"len", g.length}, {"dev_id", x.src_tp_rank}});
      dst.push_back({{"addr", g.dst_offset}, {"len", g.length}, {"dev_id", x.dst_tp_rank}});
    }
    pairs.push_back({{"src_rank", x.src_rank}, {"dst_rank", x.dst_rank}, {"src", src}, {"dst", dst}});
  }
  return ojson{{"pairs", pairs}};
}

/// Mooncake's batch transfer requests per rank pair (see the top of this file).
inline nlohmann::ordered_json transfer_mooncake(const transfer_report& r) {
  using ojson = nlohmann::ordered_json;
  ojson batches = ojson::array();
  for (const transfer_pair& x : r.pairs) {
    ojson reqs = ojson::array();
    for (const cache::transfer_range& g : r.manifest.ranges)
      reqs.push_back({{"opcode", "WRITE"},
                      {"source", g.src_offset},
                      {"target_id", x.dst_rank},
                      {"target_offset", g.dst_offset},
                      {"length", g.length}});
    batches.push_back({{"src_rank", x.src_rank}, {"dst_rank", x.dst_rank}, {"requests", reqs}});
  }
  return ojson{{"batches", batches}};
}

/// The manifest as text: the verdict, what was assumed, the rank pairs, one line per group and
/// the totals.
inline std::string transfer_text(const transfer_report& r, const transfer_args& a) {
  std::string s = fmt::format("transfer of one request: {}, prompt {} tokens, {} cached on the decode side\n", r.model,
                              contract_detail::grouped(a.prompt_len), contract_detail::grouped(a.prefix));
  if (r.prefill_side.engine == "tokenspeed")
    s += fmt::format(
        "connector: tokenspeed PD (Mooncake), one range per field and page, unmerged by tokenspeed ({} -> {})\n",
        r.prefill_engine, r.decode_engine);
  else
    s += fmt::format("connector: vLLM NIXL, whole blocks of {} B ({} -> {})\n",
                     contract_detail::grouped(static_cast<std::int64_t>(r.prefill_pool.block_bytes)), r.prefill_engine,
                     r.decode_engine);
  s += "layouts: " + r.verdict + "\n";
  for (const std::string& x : r.assumed) s += "assumed: " + x + "\n";
  s += fmt::format(
      "rank pairs (prefill tp {} dp {} pp {} -> decode tp {} dp {} pp {}; the cache is replicated, read "
      "once per decode rank):",
      r.prefill_parallel.tp, r.prefill_parallel.dp, r.prefill_parallel.pp, r.decode_parallel.tp, r.decode_parallel.dp,
      r.decode_parallel.pp);
  for (const transfer_pair& x : r.pairs) s += fmt::format(" {}->{}", x.src_rank, x.dst_rank);
  s += "\n\n";
  std::size_t w = 5;
  for (const cache::transfer_group& g : r.manifest.groups) w = std::max(w, g.name.size());
  // (the engine group's index first: vLLM splits one kind over several groups, e.g. V4's SWA layers)
  s += fmt::format("{:>2} {:<{}} {:>17} {:>7} {:>15} {:>15} {:>9}\n", "#", "group", w, "entries moved", "blocks",
                   "bytes moved", "bytes held", "ranges");
  for (std::size_t k = 0; k < r.manifest.groups.size(); ++k) {
    const cache::transfer_group& g = r.manifest.groups[k];
    s += fmt::format("{:>2} {:<{}} {:>17} {:>7} {:>15} {:>15} {:>9}\n", k, g.name, w,
                     fmt::format("[{}, {})", g.first_entry, g.end_entry), g.blocks_moved,
                     contract_detail::grouped(static_cast<std::int64_t>(g.bytes_moved)),
                     contract_detail::grouped(static_cast<std::int64_t>(g.bytes_held)),
                     fmt::format("{}/{}", g.ranges.size(), g.ranges_before_merge));
  }
  s += fmt::format("\ntotal: {} B moved of {} B held; {} ranges after merging ({} before), per rank pair\n",
                   contract_detail::grouped(static_cast<std::int64_t>(r.manifest.bytes_moved)),
                   contract_detail::grouped(static_cast<std::int64_t>(r.manifest.bytes_held)), r.manifest.ranges.size(),
                   r.manifest.ranges_before_merge);
  return s;
}

/// `dsv4-cache-layout transfer`: the manifest in the chosen shape; exit 0, 1 refused, 2 bad
/// input, 3 write error.
inline int run_transfer(const transfer_args& a, std::ostream& out, std::ostream& err) {
  std::string text;
  try {
    const transfer_report r = compute_transfer(a);
    if (a.json) {
      text = transfer_json(r, a).dump(2) + "\n";
    } else if (a.nixl) {
      text = transfer_nixl(r).dump(2) + "\n";
    } else if (a.mooncake) {
      text = transfer_mooncake(r).dump(2) + "\n";
    } else {
      text = transfer_text(r, a);
    }
  } catch (const transfer_refused& e) {
    out << "refused: " << e.what() << "\n" << std::flush;
    return out ? kContractDifferent : kContractInternal;
  } catch (const std::invalid_argument& e) {
    err << "dsv4-cache-layout: error: " << dsv4::tools::error_text(e.what()) << "\n";
    return kContractBadInput;
  }
  errno = 0;
  out << text << std::flush;
  if (!out) {
    err << "dsv4-cache-layout: error: " << write_failure(errno) << "\n";
    return kContractInternal;
  }
  return kContractEqual;
}

}  // namespace dsv4::tools
