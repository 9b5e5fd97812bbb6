// The layout contract: describe, fingerprint, diff and check of descriptors (dsv4-cache-layout's
// contract commands; their flags are contract_cli.hpp's, the Python package fills contract_args).
//
// A descriptor is one JSON object:
//   {"schema": "dsv4-cache-layout/1",
//    "fingerprint": "0x<16 hex>",        XXH64 of the canonical layout bytes (descriptor.hpp)
//    "layout": {...},                     the canonical layout, exactly (compact it and hash it)
//    "info": {...}}                       model name, engine, windows, plan sizes: not fingerprinted
// `describe` prints it (2-space indented; compacting `layout` gives the canonical bytes back),
// `fingerprint` prints the fingerprint alone. Both take the planner's model, format and
// parallel flags; with parallel flags the layout is rank `--rank`'s (default 0).
// `diff A B`: a verdict first (`identical`, `compatible for page transfer`, or `incompatible:
// <the first thing a transfer would break>`), then one line per difference, most consequential
// first; exit 0 identical, 1 incompatible, 4 different but compatible for page transfer (only
// layer sets, the rank or the engine's name differ: every page has the same bytes), 2 bad input,
// 3 internal or write error. `check FILE`: recomputes every derived number of the
// layout from the format registry and the fingerprint, and names the first wrong one; exit 0 /
// 1 / 2 / 3 like diff.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <numeric>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dsv4/cache/descriptor.hpp"
#include "dsv4/tools/messages.hpp"
#include "dsv4/tools/planner_report.hpp"

namespace dsv4::tools {

/// Exit codes of diff and check (and of describe / fingerprint on a write error).
inline constexpr int kContractEqual = 0;
inline constexpr int kContractDifferent = 1;
inline constexpr int kContractBadInput = 2;
inline constexpr int kContractInternal = 3;
inline constexpr int kContractCompatible = 4;  ///< diff: different, but every page has the same bytes.
/// diff: differences of this rank or above (layer sets, the rank part, the engine's name) move no
/// byte of a page: a page transfer between the two stays byte-exact.
inline constexpr int kFirstCompatibleRank = 6;

/// Inputs of describe / fingerprint (planner flags plus --rank) and of diff / check.
struct contract_args {
  cache::cli::planner_args plan;
  bool engine_given = false;  ///< --engine: record the engine's placement (schema /2).
  std::optional<std::int64_t> rank;
  std::vector<std::string> files;  ///< diff: A, B; check: FILE
};

namespace contract_detail {
using ojson = nlohmann::ordered_json;

/// 37440 -> "37,440".
inline std::string grouped(std::int64_t v) { return cache::thousands(v); }

inline std::string hex(std::uint64_t h) {
  const auto a = cache::fingerprint_hex(h);
  return {a.data(), a.size()};
}

/// A bad descriptor: the message names the JSON path.
struct bad_descriptor : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
}  // namespace contract_detail

/// `layout_from_flags` without its checks and message rewording.
inline std::pair<cache::cache_layout, cache::cli::planner_result> layout_from_flags_unchecked(const contract_args& a) {
  cache::cli::planner_args pa = a.plan;
  if (!a.engine_given) {
    pa.pools = "own";  // the library's pages alone: no engine rule applies, nor its defaults
    pa.library_defaults = true;
  }
  pa.budget_chain = false;  // the pages do not depend on a budget
  cache::cli::planner_result r = cache::cli::compute(pa);
  const cache::plan_options& o = r.plan.options;
  if (a.rank && !r.parallel) throw std::invalid_argument("--rank needs parallel flags (--tp, --dp, --pp, --dcp)");
  if (r.parallel) {
    const std::int64_t rank = a.rank.value_or(0);
    return {a.engine_given ? cache::describe_rank_layout(r.model, o, *r.parallel, rank, *r.engine)
                           : cache::describe_rank_layout(r.model, o, *r.parallel, rank),
            std::move(r)};
  }
  return {a.engine_given ? cache::describe_layout(r.model, o, *r.engine) : cache::describe_layout(r.model, o),
          std::move(r)};
}

namespace contract_detail {
/// A planner message as the layout CLI's user reads it: the planner's "--pools own" (a flag the
/// layout CLI does not take) becomes what does the same here: leaving out --engine.
inline std::string layout_message(std::string m) {
  static constexpr std::string_view kPools = "(--pools own)";
  for (std::size_t at = m.find(kPools); at != std::string::npos; at = m.find(kPools, at))
    m.replace(at, kPools.size(), "(here: describe without --engine, the library's own pages)");
  return m;
}

/// Why `--engine NAME` cannot be described: an engine whose pool structure the layout contract
/// does not record (`pool_structure_traits::placed`, its `unplaced_why`). Empty for an engine it
/// records (vLLM's shared block pool) or keeps as the library's, and for an unknown name (the
/// planner refuses it).
inline std::string unrecorded_engine(const std::string& engine) {
  const cache::engine_spec* e = cache::find_engine(engine);
  if (e == nullptr) return {};
  const cache::pool_structure_traits& t = cache::traits_of(e->structure);
  if (t.placed || t.unplaced_why.empty()) return {};
  std::string recorded;  // the engines it does record
  for (const std::string_view n : cache::engine_family_names())
    if (cache::traits_of(cache::find_engine(n)->structure).placed) recorded += ", or --engine " + std::string(n);
  return fmt::format(
      "--engine {}: {}'s pages are not recorded by the layout contract ({}), and the library's pages (schema "
      "dsv4-cache-layout/1) would fingerprint like any generic descriptor although {}'s pages differ; describe "
      "without --engine for the library's pages{}",
      e->name, e->traits.title, t.unplaced_why, e->traits.title, recorded);
}
}  // namespace contract_detail

/// The layout the planner flags describe: the whole model's, or with parallel flags rank
/// `rank` (default 0). Also returns the planner's result for the descriptor's info. Throws
/// std::invalid_argument for a bad flag (the planner's message, its suggestions as flags this CLI
/// takes) and for --engine sglang, naming why (its pages are not recorded).
inline std::pair<cache::cache_layout, cache::cli::planner_result> layout_from_flags(const contract_args& a) {
  if (a.engine_given)
    if (const std::string why = contract_detail::unrecorded_engine(a.plan.engine); !why.empty())
      throw std::invalid_argument(why);
  std::pair<cache::cache_layout, cache::cli::planner_result> out;
  try {
    out = layout_from_flags_unchecked(a);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(contract_detail::layout_message(e.what()));
  }
  // An engine whose placement is recorded, but not for this model (the plan keeps one pool per
  // group, as the planner's screen says): its descriptor would be the library's pages under the
  // engine's name.
  const cache::cli::planner_result& r = out.second;
  if (a.engine_given && r.engine != nullptr && cache::traits_of(r.engine->structure).placed &&
      !out.first.engine.present)
    throw std::invalid_argument(
        fmt::format("--engine {}: {}'s own pools are not modelled for {} (the plan keeps one pool per group, as "
                    "dsv4-cache-plan says); describe without --engine for the library's pages",
                    a.plan.engine, cache::engine_label(*r.engine), std::string(r.model.name.view())));
  return out;
}

/// The descriptor of `l` (see the top of this file), `r` giving the info part.
inline nlohmann::ordered_json descriptor_json(const cache::cache_layout& l, const cache::cli::planner_result& r) {
  using contract_detail::ojson;
  const auto canonical = cache::canonical_layout(l);
  ojson d;
  d["schema"] = std::string(l.engine.present ? cache::kLayoutSchemaEngine : cache::kLayoutSchema);
  d["fingerprint"] = contract_detail::hex(cache::xxh64(canonical.view()));
  d["layout"] = ojson::parse(canonical.view());
  ojson windows = ojson::object();
  for (const cache::group_plan& g : r.plan)
    if (g.spec.has_sliding_window()) windows[cache::to_string(g.spec.id)] = g.window_tokens;
  d["info"] = {{"model", std::string(r.model.name.view())},
               // (schema /1, describe without --engine: the library's own pages under the library's
               // defaults, MTP layers cached; no engine's placement or defaults)
               {"engine", !l.engine.present     ? std::string("none (the library's own pages)")
                          : r.engine != nullptr ? cache::engine_label(*r.engine)
                                                : std::string(r.plan.options.policy.engine)},
               {"windows", windows},
               {"requests", r.plan.options.requests},
               {"context_tokens", r.plan.options.context_tokens},
               {"plan_bytes", r.plan.total_bytes}};
  return d;
}

namespace contract_detail {

/// Every object of descriptor `d` holds only the keys its schema defines (the canonical writer's,
/// descriptor.hpp, and the info part's); throws bad_descriptor naming the file, the path and
/// the key otherwise (a misspelt key is bad input, never silently ignored).
inline void check_keys(const ojson& d, const std::string& file) {
  using keys = std::initializer_list<std::string_view>;
  const auto only = [&](const ojson& o, const std::string& where, keys allowed) {
    if (!o.is_object()) return;
    for (const auto& [k, v] : o.items()) {
      bool known = false;
      for (const std::string_view a : allowed) known = known || k == a;
      if (!known)
        throw bad_descriptor(fmt::format("{}: {}.{}: not a key of a {} descriptor ({})", file, where, k,
                                         d["schema"].get<std::string>(), fmt::join(allowed, ", ")));
    }
  };
  const auto each = [](const ojson& o, std::string_view key, const auto& f) {
    if (o.is_object() && o.contains(key) && o[key].is_array())
      for (std::size_t i = 0; i < o[key].size(); ++i) f(o[key][i], i);
  };
  only(d, "descriptor", {"schema", "fingerprint", "layout", "info"});
  const ojson& l = d["layout"];
  only(l, "layout", {"schema", "model", "layers", "groups", "rank", "engine"});
  only(d.contains("info") ? d["info"] : ojson(), "info",
       {"model", "engine", "windows", "requests", "context_tokens", "plan_bytes", "rank", "parallel", "num_blocks"});
  if (d.contains("info") && d["info"].is_object() && d["info"].contains("parallel"))
    only(d["info"]["parallel"], "info.parallel", {"tp", "dp", "pp", "dcp", "dcp_interleave", "stage"});
  each(l, "layers", [&](const ojson& y, std::size_t i) {
    only(y, fmt::format("layout.layers[{}]", i), {"index", "attention", "ratio", "role", "owner"});
  });
  each(l, "groups", [&](const ojson& g, std::size_t i) {
    const std::string gp = fmt::format("layout.groups[{}]", i);
    only(g, gp, {"id", "retention", "tokens_per_row", "rows_per_page", "layers", "pools"});
    each(g, "pools", [&](const ojson& q, std::size_t k) {
      const std::string pp = fmt::format("{}.pools[{}]", gp, k);
      only(q, pp, {"format", "row_bytes", "page_rule", "alignment", "page_bytes", "page_stride", "row1"});
      if (q.is_object() && q.contains("row1")) only(q["row1"], pp + ".row1", {"data", "scales", "rope"});
    });
  });
  if (l.is_object() && l.contains("rank"))
    only(l["rank"], "layout.rank", {"pp_layers", "draft_layers", "dcp_rank", "dcp_size", "dcp_interleave"});
  if (l.is_object() && l.contains("engine")) {
    const ojson& e = l["engine"];
    // vLLM's block pool: tensors at offsets; tokenspeed's parent arena: planes and packings.
    const bool planes = e.is_object() && e.contains("planes");
    if (planes) {
      only(e, "layout.engine", {"name", "preset", "structure", "block_bytes", "planes", "groups"});
      each(e, "planes", [&](const ojson& q, std::size_t i) {
        only(q, fmt::format("layout.engine.planes[{}]", i), {"id", "bytes"});
      });
    } else {
      only(e, "layout.engine", {"name", "preset", "structure", "block_bytes", "groups"});
    }
    each(e, "groups", [&](const ojson& g, std::size_t i) {
      const std::string gp = fmt::format("layout.engine.groups[{}]", i);
      if (planes)
        only(g, gp, {"table", "block_tokens", "packing", "tensors"});
      else
        only(g, gp, {"table", "block_tokens", "tensors"});
      each(g, "tensors", [&](const ojson& t, std::size_t k) {
        if (planes)
          only(t, fmt::format("{}.tensors[{}]", gp, k),
               {"group", "pool", "rows_per_page", "page_bytes", "layers", "planes"});
        else
          only(t, fmt::format("{}.tensors[{}]", gp, k),
               {"group", "pool", "rows_per_page", "alignment", "page_bytes", "offset", "layers"});
      });
    });
  }
}

/// layout[key] as an integer, or throws bad_descriptor naming the path.
inline std::int64_t int_at(const ojson& o, const char* key, const std::string& path) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_number_integer())
    throw bad_descriptor(path + "." + key + ": missing or not an integer");
  if (o[key].is_number_unsigned() && o[key].get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    throw bad_descriptor(path + "." + key + ": " + o[key].dump() + " does not fit in a signed 64-bit integer");
  return o[key].get<std::int64_t>();
}
inline std::string str_at(const ojson& o, const char* key, const std::string& path) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_string())
    throw bad_descriptor(path + "." + key + ": missing or not a string");
  return o[key].get<std::string>();
}
/// A descriptor's sliding windows, `info.windows` (library group id -> W tokens, in its
/// order; empty when it records none). Throws bad_descriptor naming the file, the group and the
/// value for a window that is not an integer in [1, 2^63).
inline std::vector<std::pair<std::string, std::int64_t>> windows_of(const ojson& d, const std::string& path) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  if (!d.is_object() || !d.contains("info") || !d["info"].is_object() || !d["info"].contains("windows")) return out;
  const ojson& w = d["info"]["windows"];
  if (!w.is_object()) throw bad_descriptor(path + ": info.windows: " + w.dump() + " is not an object");
  for (const auto& [group, v] : w.items()) {
    const bool fits = v.is_number_integer() &&
                      !(v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX));
    if (!fits || v.get<std::int64_t>() < 1)
      throw bad_descriptor(
          fmt::format("{}: info.windows.{}: {} is not a window (tokens, an integer >= 1)", path, group, v.dump()));
    out.emplace_back(group, v.get<std::int64_t>());
  }
  return out;
}

/// The types and ranges of descriptor `d`'s `info` part (not fingerprinted, but read by diff and
/// transfer): model and engine strings; windows (`windows_of`); requests, context_tokens,
/// plan_bytes, num_blocks and rank integers >= 0; parallel tp, dp in [1, 2^20] (parallel.hpp's
/// bounds), pp in [1, 256], dcp in [1, tp], dcp_interleave >= 1, stage in [0, pp). Throws
/// bad_descriptor naming the file, the key and the value.
inline void check_info(const ojson& d, const std::string& file) {
  if (!d.contains("info")) return;
  const ojson& info = d["info"];
  if (!info.is_object()) throw bad_descriptor(file + ": info: " + info.dump() + " is not an object");
  for (const char* key : {"model", "engine"})
    if (info.contains(key) && !info[key].is_string())
      throw bad_descriptor(fmt::format("{}: info.{}: {} is not a string", file, key, info[key].dump()));
  (void)windows_of(d, file);
  const auto bounded = [&](const ojson& o, const char* key, const std::string& where, std::int64_t lo,
                           std::int64_t hi) {
    if (!o.contains(key)) return std::int64_t{0};
    const std::int64_t v = int_at(o, key, where);
    if (v < lo || v > hi) throw bad_descriptor(fmt::format("{}.{}: {} is outside [{}, {}]", where, key, v, lo, hi));
    return v;
  };
  for (const char* key : {"requests", "context_tokens", "plan_bytes", "num_blocks", "rank"})
    bounded(info, key, file + ": info", 0, INT64_MAX);
  if (!info.contains("parallel")) return;
  const std::string where = file + ": info.parallel";
  const ojson& q = info["parallel"];
  if (!q.is_object()) throw bad_descriptor(where + ": " + q.dump() + " is not an object");
  constexpr std::int64_t kMaxRanks = std::int64_t{1} << 20;
  const std::int64_t tp = bounded(q, "tp", where, 1, kMaxRanks);
  bounded(q, "dp", where, 1, kMaxRanks);
  const std::int64_t pp = bounded(q, "pp", where, 1, 256);
  bounded(q, "dcp", where, 1, std::max<std::int64_t>(tp, 1));
  bounded(q, "dcp_interleave", where, 1, INT64_MAX);
  bounded(q, "stage", where, 0, std::max<std::int64_t>(pp, 1) - 1);
}

/// Parses descriptor text `text` (read from `name`: a file's path, or what the caller calls it);
/// throws bad_descriptor naming `name` for text that is not JSON, not a descriptor, or holds a
/// key its schema does not define.
inline ojson parse_descriptor(std::string_view text, const std::string& name) {
  ojson d;
  try {
    d = ojson::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw bad_descriptor(name + ": not JSON: " + e.what());
  }
  if (!d.is_object() || !d.contains("schema") ||
      (d["schema"] != std::string(cache::kLayoutSchema) && d["schema"] != std::string(cache::kLayoutSchemaEngine)))
    throw bad_descriptor(name + ": not a dsv4-cache-layout descriptor (\"schema\" must be \"" +
                         std::string(cache::kLayoutSchema) + "\" or \"" + std::string(cache::kLayoutSchemaEngine) +
                         "\")");
  if (!d.contains("layout") || !d["layout"].is_object()) throw bad_descriptor(name + ": missing object \"layout\"");
  if (!d["layout"].contains("schema") || d["layout"]["schema"] != d["schema"])
    throw bad_descriptor(name + ": \"layout.schema\" must equal \"schema\"");
  check_keys(d, name);
  check_info(d, name);
  return d;
}

/// Reads and parses a descriptor file; throws bad_descriptor naming the file.
inline ojson read_descriptor(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw bad_descriptor(path + ": no such file");
  if (!std::filesystem::is_regular_file(path, ec))
    throw bad_descriptor(path + ": not a regular file (a directory, a device or a FIFO): not a descriptor");
  if (std::filesystem::file_size(path, ec) == 0 && !ec)
    throw bad_descriptor(path + ": the file is empty (0 bytes), not a descriptor");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_descriptor(path + ": cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_descriptor(ss.str(), path);
}

inline const ojson& array_at(const ojson& o, const char* key, const std::string& path) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_array())
    throw bad_descriptor(path + "." + key + ": missing or not an array");
  return o[key];
}

inline const ojson* find_group(const ojson& groups, const std::string& id) {
  for (const ojson& g : groups)
    if (g.contains("id") && g["id"] == id) return &g;
  return nullptr;
}

/// The format of a pool object, bound to its row bytes for fp32_state; throws naming the path.
inline cache::format_layout pool_format(const ojson& pool, const std::string& path) {
  const std::string name = str_at(pool, "format", path);
  const int i = cache::format_index(name);
  if (i < 0) throw bad_descriptor(path + ".format: unknown row format '" + name + "'");
  cache::format_layout f = cache::kFormats[static_cast<std::size_t>(i)];
  if (f.role == cache::format_role::state) {
    const std::int64_t rb = int_at(pool, "row_bytes", path);
    if (rb <= 0 || rb % 1024 != 0) throw bad_descriptor(path + ".row_bytes: fp32_state rows are a multiple of 1024");
    f = cache::bind_state_row_bytes(rb);
  }
  return f;
}

/// Empty when `placed` ("group[pool]#layer" -> times an engine placement put it) holds every
/// pool of every layer of the library `groups` exactly once; else what is wrong, under `ep`.
inline std::string placed_once(const ojson& groups, const std::map<std::string, std::int64_t>& placed,
                               const std::string& ep) {
  for (const ojson& g : groups) {
    const std::string gid = g["id"].get<std::string>();
    for (std::size_t k = 0; k < g["pools"].size(); ++k)
      for (const ojson& v : g["layers"]) {
        const auto it = placed.find(fmt::format("{}[{}]#{}", gid, k, v.get<std::int64_t>()));
        const std::int64_t times = it == placed.end() ? 0 : it->second;
        if (times != 1)
          return fmt::format("{}: {} pool {} of layer {} is placed {} time(s), not once", ep, gid, k,
                             v.get<std::int64_t>(), times);
      }
  }
  return {};
}

/// `first_wrong_engine` for a parent arena of planes (tokenspeed, descriptor.hpp): planes in
/// tokenspeed's order (ids "unit.<n>" sorted as strings), each of positive bytes; every tensor a
/// pool of a library group in ascending layers of it, each layer on a listed plane that holds the
/// group's packing of its pages (K x page_bytes <= the plane's bytes), every (group, pool, layer)
/// placed exactly once; pages the format's page of `rows_per_page` rows; `block_bytes` the planes'
/// sum rounded up to the lcm of 256 and every packing (recipes/plan.py `pack`). Checked 64-bit
/// arithmetic: an overflowing number is wrong, never wrapped.
inline std::string first_wrong_planes(const ojson& e, const ojson& groups, std::int64_t n, const std::string& ep) {
  std::map<std::string, std::int64_t> plane_bytes;
  std::int64_t sum = 0;
  std::string prev_id;
  const ojson& planes = array_at(e, "planes", ep);
  for (std::size_t i = 0; i < planes.size(); ++i) {
    const std::string pp = fmt::format("{}.planes[{}]", ep, i);
    const std::string id = str_at(planes[i], "id", pp);
    const std::int64_t bytes = int_at(planes[i], "bytes", pp);
    if (id.rfind("unit.", 0) != 0 || id.size() == 5 || id.find_first_not_of("0123456789", 5) != std::string::npos)
      return fmt::format("{}.id: '{}', but tokenspeed's DeepSeek planes are unit.<n>", pp, id);
    if (i > 0 && !(prev_id < id))
      return fmt::format("{}.id: '{}' does not follow '{}' in string order", pp, id, prev_id);
    if (bytes < 1) return fmt::format("{}.bytes: {}, but a plane holds at least one byte", pp, bytes);
    if (__builtin_add_overflow(sum, bytes, &sum)) return fmt::format("{}: the planes overflow 64 bits", pp);
    plane_bytes[id] = bytes;
    prev_id = id;
  }
  std::int64_t parent_align = 256;
  std::map<std::string, std::int64_t> placed;  // "group[pool]#layer" -> times placed
  const ojson& egroups = array_at(e, "groups", ep);
  for (std::size_t gi = 0; gi < egroups.size(); ++gi) {
    const std::string gp = fmt::format("{}.groups[{}]", ep, gi);
    const std::string table = str_at(egroups[gi], "table", gp);
    if (table != "full_history" && table != "sliding_window")
      return fmt::format("{}.table: '{}', not full_history or sliding_window", gp, table);
    const std::int64_t k = int_at(egroups[gi], "packing", gp);
    if (k < 1 || k > (std::int64_t{1} << 32)) return fmt::format("{}.packing: {}, not in [1, 2^32]", gp, k);
    parent_align = std::lcm(parent_align, k);
    if (parent_align > (std::int64_t{1} << 40))
      return fmt::format("{}.packing: {}, the parent's alignment overflows", gp, k);
    const ojson& tensors = array_at(egroups[gi], "tensors", gp);
    if (tensors.empty()) return fmt::format("{}.tensors: empty, but a cache group holds a field", gp);
    for (std::size_t ti = 0; ti < tensors.size(); ++ti) {
      const ojson& t = tensors[ti];
      const std::string tp = fmt::format("{}.tensors[{}]", gp, ti);
      const std::string gid = str_at(t, "group", tp);
      const ojson* lib = find_group(groups, gid);
      if (lib == nullptr) return fmt::format("{}.group: '{}' is no group of the layout", tp, gid);
      if ((table == "full_history") != (str_at(*lib, "retention", tp + ".group") == "full_history"))
        return fmt::format("{}: a {} group, but {} is {}", tp, table, gid, str_at(*lib, "retention", tp + ".group"));
      const std::int64_t pool = int_at(t, "pool", tp);
      const ojson& lib_pools = (*lib)["pools"];
      if (pool < 0 || pool >= static_cast<std::int64_t>(lib_pools.size()))
        return fmt::format("{}.pool: {}, but {} has {} pool(s)", tp, pool, gid, lib_pools.size());
      const cache::format_layout f = pool_format(lib_pools[static_cast<std::size_t>(pool)], tp);
      const std::int64_t rows = int_at(t, "rows_per_page", tp);
      if (rows < 1 || rows > (std::int64_t{1} << 32))
        return fmt::format("{}.rows_per_page: {}, not in [1, 2^32]", tp, rows);
      if (int_at(egroups[gi], "block_tokens", gp) != rows * int_at(*lib, "tokens_per_row", tp + ".group"))
        return fmt::format("{}.block_tokens: {}, but its tensors' {} rows hold {} tokens", gp,
                           int_at(egroups[gi], "block_tokens", gp), rows,
                           rows * int_at(*lib, "tokens_per_row", tp + ".group"));
      const std::int64_t page = f.page_bytes(rows);
      if (int_at(t, "page_bytes", tp) != page)
        return fmt::format("{}.page_bytes: {}, but {} pages of {} rows are {} B", tp,
                           grouped(int_at(t, "page_bytes", tp)), std::string(f.name), rows, grouped(page));
      const ojson& layers = array_at(t, "layers", tp);
      const ojson& on = array_at(t, "planes", tp);
      if (on.size() != layers.size())
        return fmt::format("{}.planes: {} planes for {} layers", tp, on.size(), layers.size());
      std::int64_t prev = -1;
      for (std::size_t li = 0; li < layers.size(); ++li) {
        const ojson& v = layers[li];
        if (!v.is_number_integer() || !on[li].is_number_integer())
          throw bad_descriptor(tp + ".layers / planes: not lists of integers");
        const std::int64_t layer = v.get<std::int64_t>();
        bool in_group = false;
        for (const ojson& x : (*lib)["layers"]) in_group = in_group || x == v;
        if (layer <= prev || layer >= n || !in_group)
          return fmt::format("{}.layers: {} is not an ascending layer of {} (below {})", tp, v.dump(), gid, n);
        prev = layer;
        const std::string id = fmt::format("unit.{}", on[li].get<std::int64_t>());
        const auto it = plane_bytes.find(id);
        if (it == plane_bytes.end()) return fmt::format("{}.planes[{}]: {} is not a plane of the parent", tp, li, id);
        std::int64_t need = 0;
        if (__builtin_mul_overflow(k, page, &need) || need > it->second)
          return fmt::format("{}.planes[{}]: {} holds {} B, less than packing {} x {} B pages", tp, li, id,
                             grouped(it->second), k, grouped(page));
        ++placed[fmt::format("{}[{}]#{}", gid, pool, layer)];
      }
    }
  }
  if (std::string wrong = placed_once(groups, placed, ep); !wrong.empty()) return wrong;
  std::int64_t parent = 0;
  if (__builtin_add_overflow(sum, parent_align - 1, &parent)) return fmt::format("{}.planes: overflow 64 bits", ep);
  parent = parent / parent_align * parent_align;
  if (int_at(e, "block_bytes", ep) != parent)
    return fmt::format("{}.block_bytes: {}, but the planes' {} B rounded up to {} are {} B", ep,
                       grouped(int_at(e, "block_bytes", ep)), grouped(sum), grouped(parent_align), grouped(parent));
  return {};
}

/// The first wrong number of the engine part of a /2 layout (its `groups` the layout's library
/// groups, `n` its layer count): the engine and preset registered, with a shared block pool;
/// every tensor set a pool of a library group in ascending layers of it, every (group, pool,
/// layer) placed exactly once; pages the format's page of `rows_per_page` rows rounded up to
/// `alignment`; offsets their predecessors' ends; `block_bytes` the widest group. 64-bit
/// arithmetic checked: an overflowing number is wrong, never wrapped.
inline std::string first_wrong_engine(const ojson& e, const ojson& groups, std::int64_t n, const std::string& ep) {
  const std::string name = str_at(e, "name", ep);
  const std::string preset = str_at(e, "preset", ep);
  const cache::engine_spec* spec = cache::find_engine(name + "@" + preset);
  if (spec == nullptr)
    return fmt::format("{}: engine '{}' preset '{}' is not registered ({})", ep, name, preset, cache::engine_names());
  if (!cache::traits_of(spec->structure).placed || str_at(e, "structure", ep) != cache::traits_of(spec->structure).name)
    return fmt::format("{}.structure: '{}', but {} places pages in {}", ep, str_at(e, "structure", ep),
                       cache::engine_label(*spec), cache::to_string(spec->structure));
  if (e.contains("planes") != (spec->structure == &cache::tokenspeed_parent_arena))
    return fmt::format("{}: {}, but {} records {}", ep, e.contains("planes") ? "planes" : "no planes",
                       cache::to_string(spec->structure), e.contains("planes") ? "none" : "its parent's planes");
  if (e.contains("planes")) return first_wrong_planes(e, groups, n, ep);
  // Unknown keys are refused before this (check_keys, as bad input).
  std::map<std::string, std::int64_t> placed;  // "group[pool]#layer" -> times placed
  std::int64_t widest = 0;
  const ojson& egroups = array_at(e, "groups", ep);
  for (std::size_t gi = 0; gi < egroups.size(); ++gi) {
    const std::string gp = fmt::format("{}.groups[{}]", ep, gi);
    const std::string table = str_at(egroups[gi], "table", gp);
    if (table != "full_history" && table != "sliding_window" && table != "request_ring")
      return fmt::format("{}.table: '{}', not full_history, sliding_window or request_ring", gp, table);
    if (int_at(egroups[gi], "block_tokens", gp) < 1)
      return fmt::format("{}.block_tokens: {}, but a block holds at least one token", gp,
                         int_at(egroups[gi], "block_tokens", gp));
    const ojson& tensors = array_at(egroups[gi], "tensors", gp);
    if (tensors.empty()) return fmt::format("{}.tensors: empty, but a block table holds a tensor", gp);
    std::int64_t offset = 0;
    for (std::size_t ti = 0; ti < tensors.size(); ++ti) {
      const ojson& t = tensors[ti];
      const std::string tp = fmt::format("{}.tensors[{}]", gp, ti);
      const std::string gid = str_at(t, "group", tp);
      const ojson* lib = find_group(groups, gid);
      if (lib == nullptr) return fmt::format("{}.group: '{}' is no group of the layout", tp, gid);
      // The table keeps what the library group keeps, in blocks of its rows.
      const std::string retention = str_at(*lib, "retention", tp + ".group");
      if ((table == "full_history") != (retention == "full_history"))
        return fmt::format("{}: a {} table, but {} is {}", tp, table, gid, retention);
      const std::int64_t pool = int_at(t, "pool", tp);
      const ojson& lib_pools = (*lib)["pools"];
      if (pool < 0 || pool >= static_cast<std::int64_t>(lib_pools.size()))
        return fmt::format("{}.pool: {}, but {} has {} pool(s)", tp, pool, gid, lib_pools.size());
      const cache::format_layout f = pool_format(lib_pools[static_cast<std::size_t>(pool)], tp);
      const std::int64_t rows = int_at(t, "rows_per_page", tp);
      const std::int64_t align = int_at(t, "alignment", tp);
      if (rows < 1 || rows > (std::int64_t{1} << 32) || align < 1 || align > (std::int64_t{1} << 32))
        return fmt::format("{}: rows_per_page {} and alignment {} must be in [1, 2^32]", tp, rows, align);
      if (align != 1 && align != 256 && align != 512 && align != 576)
        return fmt::format("{}.alignment: {}, but vLLM pads pages to 1, 256, 512 or 576 B", tp, align);
      const std::int64_t tokens = table == "request_ring" ? rows : rows * int_at(*lib, "tokens_per_row", tp + ".group");
      if (int_at(egroups[gi], "block_tokens", gp) != tokens)
        return fmt::format("{}.block_tokens: {}, but its tensors' {} rows hold {} tokens", gp,
                           int_at(egroups[gi], "block_tokens", gp), rows, tokens);
      const std::int64_t page = cache::round_up(f.page_bytes(rows), align);  // < 2^52 x row bytes: no overflow
      if (int_at(t, "page_bytes", tp) != page)
        return fmt::format("{}.page_bytes: {}, but {} pages of {} rows rounded up to {} are {} B", tp,
                           grouped(int_at(t, "page_bytes", tp)), std::string(f.name), rows, align, grouped(page));
      if (int_at(t, "offset", tp) != offset)
        return fmt::format("{}.offset: {}, but the tensors before it end at {}", tp, grouped(int_at(t, "offset", tp)),
                           grouped(offset));
      const ojson& layers = array_at(t, "layers", tp);
      std::int64_t prev = -1;
      for (const ojson& v : layers) {
        if (!v.is_number_integer()) throw bad_descriptor(tp + ".layers: not a list of integers");
        const std::int64_t li = v.get<std::int64_t>();
        bool in_group = false;
        for (const ojson& x : (*lib)["layers"]) in_group = in_group || x == v;
        if (li <= prev || li >= n || !in_group)
          return fmt::format("{}.layers: {} is not an ascending layer of {} (below {})", tp, v.dump(), gid, n);
        prev = li;
        ++placed[fmt::format("{}[{}]#{}", gid, pool, li)];
      }
      std::int64_t bytes = 0;
      if (__builtin_mul_overflow(page, static_cast<std::int64_t>(layers.size()), &bytes) ||
          __builtin_add_overflow(offset, bytes, &offset))
        return fmt::format("{}: its pages overflow 64 bits", tp);
    }
    widest = std::max(widest, offset);
  }
  if (std::string wrong = placed_once(groups, placed, ep); !wrong.empty()) return wrong;
  if (int_at(e, "block_bytes", ep) != widest)
    return fmt::format("{}.block_bytes: {}, but the widest group's tensors take {} B", ep,
                       grouped(int_at(e, "block_bytes", ep)), grouped(widest));
  return {};
}

/// The first wrong derived number of descriptor `d`, as "path: value, but <rule> gives <want>";
/// empty if every number is right. Throws bad_descriptor for a malformed descriptor.
inline std::string first_wrong(const ojson& d) {
  const ojson& l = d["layout"];
  const std::string lp = "layout";
  const std::string model = str_at(l, "model", lp);
  if (model != "v4" && model != "v4.1" && model != "v3.2") return lp + ".model: '" + model + "', not v4, v4.1 or v3.2";
  const bool v41 = model == "v4.1";
  const ojson& layers = array_at(l, "layers", lp);
  const auto n = static_cast<std::int64_t>(layers.size());
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string p = fmt::format("{}.layers[{}]", lp, i);
    const ojson& y = layers[static_cast<std::size_t>(i)];
    if (int_at(y, "index", p) != i)
      return fmt::format("{}.index: {}, but layers are listed in order: {}", p, int_at(y, "index", p), i);
    const std::string att = str_at(y, "attention", p);
    const std::int64_t ratio = int_at(y, "ratio", p);
    const bool known = v41 ? (att == "swa" || att == "csa2" || att == "csa1")
                           : (att == "swa" || att == "csa" || att == "hca" || att == "mla");
    if (!known)
      return fmt::format("{}.attention: '{}', not {}", p, att, v41 ? "swa, csa2 or csa1" : "swa, csa, hca or mla");
    const std::int64_t want = att == "csa" ? 4 : att == "hca" ? 128 : att == "csa2" ? 2 : att == "csa1" ? 1 : 0;
    if (ratio != want) return fmt::format("{}.ratio: {}, but {} layers have ratio {}", p, ratio, att, want);
    const std::string role = str_at(y, "role", p);
    const bool shares = role == "reuse" || role == "reindex";
    if (role != "owner" && role != "draft" && !(v41 && shares))
      return fmt::format("{}.role: '{}', not {}", p, role, v41 ? "owner, reuse, reindex or draft" : "owner or draft");
    const std::int64_t owner = int_at(y, "owner", p);
    if (!shares && owner != i)
      return fmt::format("{}.owner: {}, but a {} {} layer reads its own caches: {}", p, owner, model, role, i);
    if (shares) {  // V4.1: the owner is an earlier owner layer of the same ratio
      if (owner < 0 || owner >= i)
        return fmt::format("{}.owner: {}, but a {} layer reads an owner before it (below {})", p, owner, role, i);
      const ojson& o = layers[static_cast<std::size_t>(owner)];
      if (str_at(o, "role", p + ".owner") != "owner" || int_at(o, "ratio", p + ".owner") != ratio)
        return fmt::format("{}.owner: {}, but layer {} is not an owner layer of ratio {}", p, owner, owner, ratio);
    }
  }
  const ojson& groups = array_at(l, "groups", lp);
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const ojson& g = groups[gi];
    const std::string gp = fmt::format("{}.groups[{}]", lp, gi);
    (void)str_at(g, "id", gp);
    const std::int64_t rows = int_at(g, "rows_per_page", gp);
    if (rows < 1) return fmt::format("{}.rows_per_page: {}, but a page holds at least one row", gp, rows);
    std::int64_t prev = -1;
    for (const ojson& v : array_at(g, "layers", gp)) {
      if (!v.is_number_integer()) throw bad_descriptor(gp + ".layers: not a list of integers");
      const auto li = v.get<std::int64_t>();
      if (li <= prev || li >= n)
        return fmt::format("{}.layers: {} is not an ascending layer index below {}", gp, li, n);
      prev = li;
    }
    const ojson& pools = array_at(g, "pools", gp);
    for (std::size_t pi = 0; pi < pools.size(); ++pi) {
      const ojson& pool = pools[pi];
      const std::string pp = fmt::format("{}.pools[{}]", gp, pi);
      const cache::format_layout f = pool_format(pool, pp);
      const std::string fname(f.name);
      if (int_at(pool, "row_bytes", pp) != f.row_bytes)
        return fmt::format("{}.row_bytes: {}, but {} rows are {} B", pp, int_at(pool, "row_bytes", pp), fname,
                           f.row_bytes);
      const std::string rule = str_at(pool, "page_rule", pp);
      if (rule != cache::to_string(f.rule))
        return fmt::format("{}.page_rule: '{}', but {} pages are {}", pp, rule, fname, cache::to_string(f.rule));
      if (f.rule == cache::page_rule::split_padded) {
        if (int_at(pool, "alignment", pp) != f.alignment)
          return fmt::format("{}.alignment: {}, but {} pages are padded to a multiple of {}", pp,
                             int_at(pool, "alignment", pp), fname, f.alignment);
      } else if (pool.contains("alignment")) {
        return fmt::format("{}.alignment: present, but {} pages are not padded", pp, fname);
      }
      const std::int64_t page = f.page_bytes(rows);
      if (int_at(pool, "page_bytes", pp) != page)
        return fmt::format("{}.page_bytes: {}, but {} pages of {} rows are {} B", pp,
                           grouped(int_at(pool, "page_bytes", pp)), fname, rows, grouped(page));
      if (int_at(pool, "page_stride", pp) < page)
        return fmt::format("{}.page_stride: {}, below the page bytes {}", pp, int_at(pool, "page_stride", pp), page);
      if (rows > 1) {
        const ojson& r1 = pool.contains("row1") ? pool["row1"] : ojson();
        const std::string rp = pp + ".row1";
        if (int_at(r1, "data", rp) != f.data_offset(rows, 1))
          return fmt::format("{}.data: {}, but {} puts row 1's data at {}", rp, int_at(r1, "data", rp), fname,
                             f.data_offset(rows, 1));
        if (f.has_scales() && int_at(r1, "scales", rp) != f.scale_offset(rows, 1))
          return fmt::format("{}.scales: {}, but {} puts row 1's scales at {}", rp, grouped(int_at(r1, "scales", rp)),
                             fname, grouped(f.scale_offset(rows, 1)));
        if (f.has_rope() && int_at(r1, "rope", rp) != f.rope_offset(rows, 1))
          return fmt::format("{}.rope: {}, but {} puts row 1's RoPE at {}", rp, int_at(r1, "rope", rp), fname,
                             f.rope_offset(rows, 1));
      }
    }
  }
  const bool v2 = str_at(l, "schema", lp) == cache::kLayoutSchemaEngine;
  if (v2 != l.contains("engine"))
    return fmt::format("{}.engine: {}, but schema {} {} an engine placement", lp,
                       l.contains("engine") ? "present" : "missing", str_at(l, "schema", lp),
                       v2 ? "records" : "has no");
  if (v2) {
    const std::string wrong_engine = first_wrong_engine(l["engine"], groups, n, lp + ".engine");
    if (!wrong_engine.empty()) return wrong_engine;
  }
  const std::string canonical = l.dump();
  const std::string want = hex(cache::xxh64(canonical));
  const std::string got = d.contains("fingerprint") && d["fingerprint"].is_string()
                              ? d["fingerprint"].get<std::string>()
                              : std::string("(missing)");
  if (got != want) return fmt::format("fingerprint: {}, but XXH64 of the compact layout is {}", got, want);
  return {};
}

/// One difference between two layouts, with its rank (lower = more consequential).
struct difference {
  int rank;
  std::string text;
};

inline std::string value_text(const ojson& v) { return v.is_null() ? std::string("none") : v.dump(); }

/// Every difference between layouts a and b (both checked first), most consequential first:
/// missing or extra groups, format, row bytes, page bytes, row 1's scale offset, page rule and
/// rows, layers, the rank part.
inline std::vector<difference> differences(const ojson& a, const ojson& b) {
  std::vector<difference> out;
  const auto add = [&out](int rank, std::string text) { out.push_back({rank, std::move(text)}); };
  if (a["model"] != b["model"]) add(0, fmt::format("model {} vs {}", value_text(a["model"]), value_text(b["model"])));
  const ojson& ga = a["groups"];
  const ojson& gb = b["groups"];
  for (const ojson& g : ga)
    if (find_group(gb, g["id"]) == nullptr) add(0, fmt::format("group {}: only in A", g["id"].get<std::string>()));
  for (const ojson& g : gb)
    if (find_group(ga, g["id"]) == nullptr) add(0, fmt::format("group {}: only in B", g["id"].get<std::string>()));
  for (const ojson& x : ga) {
    const ojson* yp = find_group(gb, x["id"]);
    if (yp == nullptr) continue;
    const ojson& y = *yp;
    const std::string id = x["id"].get<std::string>();
    const ojson& px = x["pools"];
    const ojson& py = y["pools"];
    for (std::size_t i = 0; i < std::max(px.size(), py.size()); ++i) {
      if (i >= px.size() || i >= py.size()) {
        add(0, fmt::format("{} pool {}: only in {}", id, i, i >= px.size() ? "B" : "A"));
        continue;
      }
      const ojson& p = px[i];
      const ojson& q = py[i];
      const std::string where = fmt::format("{} pool {}", id, i);
      const std::int64_t rp = p["row_bytes"].get<std::int64_t>();
      const std::int64_t rq = q["row_bytes"].get<std::int64_t>();
      if (p["format"] != q["format"] && rp == rq)
        add(1, fmt::format("{}: format {} vs {} (rows of {} B each)", where, p["format"].get<std::string>(),
                           q["format"].get<std::string>(), grouped(rp)));
      else if (p["format"] != q["format"])
        add(1, fmt::format("{}: row {} B ({}) vs {} B ({})", where, grouped(rp), p["format"].get<std::string>(),
                           grouped(rq), q["format"].get<std::string>()));
      else if (rp != rq)
        add(2, fmt::format("{}: row {} B vs {} B", where, grouped(rp), grouped(rq)));
      if (p["page_bytes"] != q["page_bytes"])
        add(3, fmt::format("{}: page {} B vs {} B", where, grouped(p["page_bytes"].get<std::int64_t>()),
                           grouped(q["page_bytes"].get<std::int64_t>())));
      const ojson sp = p.contains("row1") && p["row1"].contains("scales") ? p["row1"]["scales"] : ojson();
      const ojson sq = q.contains("row1") && q["row1"].contains("scales") ? q["row1"]["scales"] : ojson();
      if (sp != sq)
        add(4,
            fmt::format("{}: row 1 scales at {} vs {}", where, sp.is_null() ? "none" : grouped(sp.get<std::int64_t>()),
                        sq.is_null() ? "none" : grouped(sq.get<std::int64_t>())));
      const ojson dp = p.contains("row1") ? p["row1"] : ojson();
      const ojson dq = q.contains("row1") ? q["row1"] : ojson();
      if (dp.contains("data") && dq.contains("data") && dp["data"] != dq["data"])
        add(4, fmt::format("{}: row 1 data at {} vs {}", where, value_text(dp["data"]), value_text(dq["data"])));
      if ((dp.contains("rope") ? dp["rope"] : ojson()) != (dq.contains("rope") ? dq["rope"] : ojson()))
        add(4, fmt::format("{}: row 1 RoPE at {} vs {}", where, dp.contains("rope") ? value_text(dp["rope"]) : "none",
                           dq.contains("rope") ? value_text(dq["rope"]) : "none"));
      if (p["page_rule"] != q["page_rule"] || p.value("alignment", 0) != q.value("alignment", 0))
        add(5,
            fmt::format("{}: page rule {}{} vs {}{}", where, p["page_rule"].get<std::string>(),
                        p.contains("alignment") ? "/" + p["alignment"].dump() : "", q["page_rule"].get<std::string>(),
                        q.contains("alignment") ? "/" + q["alignment"].dump() : ""));
      if (p["page_stride"] != q["page_stride"])
        add(5, fmt::format("{}: page stride {} B vs {} B", where, grouped(p["page_stride"].get<std::int64_t>()),
                           grouped(q["page_stride"].get<std::int64_t>())));
    }
    for (const char* k : {"retention", "tokens_per_row", "rows_per_page"})
      if (x[k] != y[k]) add(5, fmt::format("{}: {} {} vs {}", id, k, value_text(x[k]), value_text(y[k])));
    if (x["layers"] != y["layers"])
      add(6, fmt::format("{}: {} layers {} vs {} layers {}", id, x["layers"].size(), x["layers"].dump(),
                         y["layers"].size(), y["layers"].dump()));
  }
  const ojson& la = a["layers"];
  const ojson& lb = b["layers"];
  if (la.size() != lb.size()) add(6, fmt::format("{} layers vs {}", la.size(), lb.size()));
  for (std::size_t i = 0; i < std::min(la.size(), lb.size()); ++i)
    if (la[i] != lb[i]) add(6, fmt::format("layer {}: {} vs {}", i, la[i].dump(), lb[i].dump()));
  const ojson ra = a.contains("rank") ? a["rank"] : ojson();
  const ojson rb = b.contains("rank") ? b["rank"] : ojson();
  if (ra != rb) add(7, fmt::format("rank {} vs {}", value_text(ra), value_text(rb)));
  // The engine's placement (schema /2): the block, then each group's tensors.
  const ojson ea = a.contains("engine") ? a["engine"] : ojson();
  const ojson eb = b.contains("engine") ? b["engine"] : ojson();
  if (ea.is_null() != eb.is_null()) {
    add(1, fmt::format("engine placement: only in {} ({})", ea.is_null() ? "B" : "A",
                       (ea.is_null() ? eb : ea)["name"].get<std::string>()));
  } else if (!ea.is_null() && ea != eb) {
    // A key one structure records and the other does not reads as none (null).
    const auto at = [](const ojson& o, const char* key) { return o.contains(key) ? o[key] : ojson(); };
    if (ea["block_bytes"] != eb["block_bytes"])
      add(1, fmt::format("engine block {} B vs {} B", grouped(ea["block_bytes"].get<std::int64_t>()),
                         grouped(eb["block_bytes"].get<std::int64_t>())));
    if (at(ea, "planes") != at(eb, "planes"))  // a parent arena's planes (tokenspeed): where every page lies
      add(1, fmt::format("engine planes {} vs {}", at(ea, "planes").size(), at(eb, "planes").size()));
    const ojson& xa = ea["groups"];
    const ojson& xb = eb["groups"];
    if (xa.size() != xb.size()) add(1, fmt::format("engine groups {} vs {}", xa.size(), xb.size()));
    for (std::size_t i = 0; i < std::min(xa.size(), xb.size()); ++i) {
      const ojson& p = xa[i];
      const ojson& q = xb[i];
      if (p["table"] != q["table"] || p["block_tokens"] != q["block_tokens"])
        add(2, fmt::format("engine group {}: {} table of {}-token blocks vs {} of {}", i, p["table"].get<std::string>(),
                           p["block_tokens"].dump(), q["table"].get<std::string>(), q["block_tokens"].dump()));
      if (at(p, "packing") != at(q, "packing"))
        add(2, fmt::format("engine group {}: packing {} vs {}", i, value_text(at(p, "packing")),
                           value_text(at(q, "packing"))));
      const ojson& tp = p["tensors"];
      const ojson& tq = q["tensors"];
      if (tp.size() != tq.size()) add(2, fmt::format("engine group {}: {} tensor sets vs {}", i, tp.size(), tq.size()));
      for (std::size_t k = 0; k < std::min(tp.size(), tq.size()); ++k) {
        const ojson& u = tp[k];
        const ojson& v = tq[k];
        const std::string where =
            fmt::format("engine group {} tensors {}[{}]", i, u["group"].get<std::string>(), u["pool"].dump());
        if (u["group"] != v["group"] || u["pool"] != v["pool"])
          add(2, fmt::format("{}: vs {}[{}]", where, v["group"].get<std::string>(), v["pool"].dump()));
        if (u["page_bytes"] != v["page_bytes"])
          add(3, fmt::format("{}: page {} B vs {} B", where, grouped(u["page_bytes"].get<std::int64_t>()),
                             grouped(v["page_bytes"].get<std::int64_t>())));
        if (at(u, "offset") != at(v, "offset"))
          add(3, fmt::format("{}: at {} vs {} in the block", where, value_text(at(u, "offset")),
                             value_text(at(v, "offset"))));
        if (at(u, "planes") != at(v, "planes"))
          add(3, fmt::format("{}: planes {} vs {}", where, value_text(at(u, "planes")), value_text(at(v, "planes"))));
        for (const char* key : {"rows_per_page", "alignment"})
          if (at(u, key) != at(v, key))
            add(5, fmt::format("{}: {} {} vs {}", where, key, value_text(at(u, key)), value_text(at(v, key))));
        if (u["layers"] != v["layers"])
          add(6, fmt::format("{}: layers {} vs {}", where, u["layers"].dump(), v["layers"].dump()));
      }
    }
    for (const char* k : {"name", "preset", "structure"})
      if (ea[k] != eb[k]) add(7, fmt::format("engine {} {} vs {}", k, value_text(ea[k]), value_text(eb[k])));
  }
  std::stable_sort(out.begin(), out.end(), [](const difference& p, const difference& q) { return p.rank < q.rank; });
  return out;
}

}  // namespace contract_detail

/// What `diff` says of two descriptors: the exit code (kContractEqual, kContractCompatible or
/// kContractDifferent), the text it prints, and the differences, most consequential first.
struct diff_result {
  int code = kContractEqual;
  std::string text;
  std::vector<contract_detail::difference> differences;
};

/// Compares descriptors a and b (named a_name, b_name in errors). A descriptor that fails
/// `check` is bad input (bad_descriptor): diff compares what the descriptors say, so they must
/// be right first.
inline diff_result diff_descriptors(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b,
                                    const std::string& a_name, const std::string& b_name) {
  using namespace contract_detail;  // NOLINT(google-build-using-namespace)
  for (const auto& [name, d] : {std::pair{&a_name, &a}, std::pair{&b_name, &b}}) {
    const std::string wrong = first_wrong(*d);
    if (!wrong.empty()) throw bad_descriptor(*name + " fails check: " + wrong);
  }
  diff_result r;
  r.differences = differences(a["layout"], b["layout"]);
  // The sliding windows (info.windows, outside the fingerprint: the model's, not the pages'):
  // pages of equal bytes but different windows are not one cache (decode reads the tokens of
  // its own window, the other side keeps those of its own).
  std::vector<difference> windows;
  const auto wa = windows_of(a, a_name);
  const auto wb = windows_of(b, b_name);
  for (const auto& [group, w] : wa)
    for (const auto& [other, v] : wb)
      if (group == other && w != v)
        windows.push_back({0, fmt::format("sliding window of {}: {} vs {} tokens (info.windows)", group, w, v)});
  const auto first_compatible =
      std::find_if(r.differences.begin(), r.differences.end(), [](const difference& x) { return x.rank > 0; });
  r.differences.insert(first_compatible, windows.begin(), windows.end());
  const std::string fa = a["fingerprint"].get<std::string>();
  const std::string fb = b["fingerprint"].get<std::string>();
  if (r.differences.empty() && fa == fb) {
    r.text = fmt::format("identical (fingerprint {})\n", fa);
    return r;
  }
  const bool compatible = !r.differences.empty() && r.differences.front().rank >= kFirstCompatibleRank;
  r.code = compatible ? kContractCompatible : kContractDifferent;
  r.text = compatible ? std::string("compatible for page transfer: every page has the same bytes\n")
                      : fmt::format("incompatible: {}\n", r.differences.empty() ? "the canonical layouts differ"
                                                                                : r.differences.front().text);
  r.text += fmt::format("fingerprint {} vs {}\n", fa, fb);
  for (const contract_detail::difference& d : r.differences) r.text += d.text + "\n";
  return r;
}

/// `dsv4-cache-layout check FILE`: "ok <fingerprint>" (exit 0) or the first wrong number (exit 1).
inline int run_check(const std::string& path, std::ostream& out, std::ostream& err) {
  using namespace contract_detail;  // NOLINT(google-build-using-namespace)
  try {
    const ojson d = read_descriptor(path);
    const std::string wrong = first_wrong(d);
    if (!wrong.empty()) {
      out << path << ": " << wrong << "\n" << std::flush;
      return out ? kContractDifferent : kContractInternal;
    }
    out << path << ": ok, fingerprint " << d["fingerprint"].get<std::string>() << "\n" << std::flush;
    return out ? kContractEqual : kContractInternal;
  } catch (const std::invalid_argument& e) {
    err << "dsv4-cache-layout: error: " << dsv4::tools::error_text(e.what()) << "\n";
    return kContractBadInput;
  }
}

/// `dsv4-cache-layout diff A B`: the verdict line, then (when they differ) the two fingerprints
/// and one line per difference; exit 0 identical, 4 compatible for page transfer, 1 incompatible,
/// 2 bad input (`diff_descriptors`).
inline int run_diff(const std::string& a_path, const std::string& b_path, std::ostream& out, std::ostream& err) {
  using namespace contract_detail;  // NOLINT(google-build-using-namespace)
  try {
    const diff_result r = diff_descriptors(read_descriptor(a_path), read_descriptor(b_path), a_path, b_path);
    out << r.text << std::flush;
    return out ? r.code : kContractInternal;
  } catch (const std::invalid_argument& e) {
    err << "dsv4-cache-layout: error: " << dsv4::tools::error_text(e.what()) << "\n";
    return kContractBadInput;
  }
}

/// The descriptor `describe` prints for `a`: the layout's descriptor, with `info.rank` when a
/// rank or parallel flags were given, and then `info.parallel` (tp, dp, pp, dcp, dcp_interleave
/// and the rank's pipeline stage: outside the fingerprint, a replicated TP rank's layout is the
/// same; `transfer` pairs ranks from it), and with an engine placement `info.num_blocks` (the
/// described rank's pool blocks, or tokenspeed's parents, as the engine allocates them, the
/// null one included: `memory_plan::arena_units`). Throws std::invalid_argument as
/// `layout_from_flags`.
inline nlohmann::ordered_json describe_descriptor(const contract_args& a) {
  const auto [layout, plan] = layout_from_flags(a);
  nlohmann::ordered_json d = descriptor_json(layout, plan);
  if (a.rank || plan.parallel) d["info"]["rank"] = a.rank.value_or(0);
  // The described rank's pool, in blocks of the engine's placement (its stage's own block bytes).
  const cache::memory_plan* own = &plan.plan;
  for (const cache::rank_plan_result& rp : plan.ranks)
    if (rp.coords.rank == a.rank.value_or(0)) own = &rp.plan;
  if (layout.engine.present && own->arena_units > 0) d["info"]["num_blocks"] = own->arena_units;
  if (plan.parallel) {
    const cache::parallel_config& q = *plan.parallel;
    const cache::rank_coords rc = cache::rank_of(q, a.rank.value_or(0));
    d["info"]["parallel"] = {
        {"tp", q.tp},       {"dp", q.dp}, {"pp", q.pp}, {"dcp", q.dcp}, {"dcp_interleave", q.dcp_interleave_rows},
        {"stage", rc.stage}};
  }
  return d;
}

}  // namespace dsv4::tools
