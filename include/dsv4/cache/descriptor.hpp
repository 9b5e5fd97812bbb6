// dsv4-cache: the layout contract of a deployment's cache: a canonical description of where
// every byte goes, and its 64-bit fingerprint, both `constexpr`.
//
// Canonical layout bytes (what the fingerprint hashes): compact JSON, no whitespace, keys in the
// order below, integers in decimal, strings as is (ASCII, nothing to escape); no floats,
// booleans or nulls (a key without a value is omitted); no trailing newline.
//
//   {"schema":"dsv4-cache-layout/1","model":"v4"|"v4.1"|"v3.2",
//    "layers":[{"index":0,"attention":"swa","ratio":0,"role":"owner","owner":0},...],
//    "groups":[{"id":"v4.swa_kv","retention":"sliding_window","tokens_per_row":1,
//               "rows_per_page":64,"layers":[0,1,...],
//               "pools":[{"format":"v4.fp8_ds_mla","row_bytes":584,"page_rule":"split_padded",
//                         "alignment":576,"page_bytes":37440,"page_stride":37440,
//                         "row1":{"data":576,"scales":36872,"rope":1024}}]},...],
//    "rank":{"pp_layers":[0,22],"draft_layers":[43,44],"dcp_rank":0,"dcp_size":2,"dcp_interleave":1}}
//
// - layers: every layer of the model (main, then MTP / draft), with its attention kind, its
//   compress ratio (0 for SWA and MLA layers: no compression), its role (`owner`: keeps its
//   own caches; `draft`: an MTP layer; V4.1 `reuse` / `reindex`: reads the global caches of
//   another layer) and the layer whose caches it reads (itself in V4/V3.2 and for V4.1 owners,
//   SWA-only and draft layers).
// - groups: the cached groups in the library's order, with the layers that keep a pool of the
//   group; pools with their registry format and the numbers that decide where bytes go
//   (`alignment` only for split_padded pages; `row1` the first byte of row 1's data, scales
//   and RoPE in a page, a part omitted when the row has none).
// - rank: only for a per-rank layout: the stage's main layers [first, end), the draft layers it
//   also holds (omitted if none), and its DCP shard (dcp_rank of dcp_size, rows dealt in turns
//   of dcp_interleave); TP and DP ranks hold identical layouts and are not part of it.
// Windows, the engine policy, the model name and plan sizes do not decide where bytes go: they
// are the descriptor's `info` (tools), not fingerprinted, so a preset and its config.json give
// one fingerprint.
//
// Schema "dsv4-cache-layout/2" (`describe_layout(c, o, engine)`, the CLI's `describe --engine
// vllm`): where the engine's placement moves bytes, the layout also records it after "rank":
//
//   "engine":{"name":"vllm","preset":"2026.11","structure":"shared_block_pool","block_bytes":1002240,
//             "groups":[{"table":"sliding_window","block_tokens":64,
//                        "tensors":[{"group":"v4.swa_kv","pool":0,"rows_per_page":64,"alignment":576,
//                                    "page_bytes":37440,"offset":0,"layers":[0,2,...]}]},...]}
//
// vLLM's block-outermost slab: block b of every engine group starts at b x block_bytes; in it a
// group's tensor sets follow one another (`offset`), each one page per layer, layers adjacent
// (page `page_bytes` = the format's page of `rows_per_page` rows rounded up to `alignment`). Two
// peers whose /2 fingerprints agree can move blocks as they are.
//
// tokenspeed's parent arena (`describe --engine tokenspeed`) records its parent's planes and
// each group's packing instead of offsets:
//
//   "engine":{"name":"tokenspeed","preset":"0.1.1","structure":"parent_arena","block_bytes":2780928,
//             "planes":[{"id":"unit.0","bytes":92160},{"id":"unit.1","bytes":92160},...],
//             "groups":[{"table":"sliding_window","block_tokens":64,"packing":1,
//                        "tensors":[{"group":"v4.swa_kv","pool":0,"rows_per_page":64,
//                                    "page_bytes":37440,"layers":[0,1,...],"planes":[0,1,...]}]},...]}
//
// `planes` in arena order (ids sorted as strings), `bytes` one parent's share of the plane; a
// tensor's k-th layer on plane "unit.<planes[k]>". tokenspeed lays the arena out plane by plane
// (engines/tokenspeed/arena.hpp): with N parents (the null one included) a plane takes N x its
// bytes after the planes listed before it, and page p of a group of packing K lies at
// plane_offset + bytes - bytes / K + p x bytes / K. An engine that keeps the library's own pools
// adds nothing: schema /1.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dsv4/cache/engines/registry.hpp"
#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/cache/group_spec.hpp"
#include "dsv4/cache/memory_plan.hpp"
#include "dsv4/cache/parallel.hpp"
#include "dsv4/cache/xxh64.hpp"

namespace dsv4::cache {

/// The schema string of canonical layouts and descriptors.
inline constexpr std::string_view kLayoutSchema = "dsv4-cache-layout/1";
/// The schema of a layout that also records an engine's placement (see the top of this file).
inline constexpr std::string_view kLayoutSchemaEngine = "dsv4-cache-layout/2";

/// One layer of a layout.
struct layout_layer {
  int index = 0;
  attention_kind attention = attention_kind::swa;
  int ratio = 0;                       ///< 0 (SWA, MLA), 4 (CSA), 128 (HCA), 2 (CSA2) or 1 (CSA1).
  layer_role role = layer_role::none;  ///< `none` prints "owner": the layer keeps its own caches.
  int owner = 0;                       ///< The layer whose caches it reads: itself in V4 and V3.2.

  /// The canonical role: "owner", "reuse", "reindex" or "draft".
  [[nodiscard]] constexpr std::string_view role_name() const {
    return role == layer_role::none ? to_string(layer_role::owner) : to_string(role);
  }
};

/// The rank part of a per-rank layout (`present` false for a whole-model layout).
struct layout_rank {
  bool present = false;
  layer_range pp_layers{};     ///< Main layers [first, end) of the rank's stage.
  layer_range draft_layers{};  ///< Draft (MTP) layers it also holds; empty if none.
  std::int64_t dcp_rank = 0;
  std::int64_t dcp_size = 1;
  std::int64_t dcp_interleave = 1;
};

/// The engine part of a layout (schema /2): the engine's block tables over one shared pool.
struct layout_engine {
  bool present = false;
  std::string_view name;    ///< "vllm"
  std::string_view preset;  ///< "2026.11"
  engine_pools pools{};     ///< The model's (or the rank's stage's) engine groups.
};

/// What decides where a deployment's cache bytes go (see the top of this file).
struct cache_layout {
  model_family family = model_family::v4;
  int num_layers = 0;
  std::array<layout_layer, kMaxLayers> layers{};
  group_spec_list groups{};
  layout_rank rank{};
  layout_engine engine{};
};

namespace detail {
constexpr cache_layout layout_skeleton(const model_config& c) {
  const layer_schedule s = build_layer_schedule(c);
  cache_layout l;
  l.family = c.family;
  l.num_layers = s.num_layers;
  for (int i = 0; i < s.num_layers; ++i) {
    const layer_spec& ls = s[i];
    const int ratio = ls.kind == attention_kind::swa || ls.kind == attention_kind::mla ? 0 : ls.compress_ratio;
    const layer_role role = ls.mtp ? layer_role::draft : ls.role;
    l.layers[static_cast<std::size_t>(i)] = {i, ls.kind, ratio, role, ls.kv_owner >= 0 ? ls.kv_owner : i};
  }
  return l;
}
}  // namespace detail

/// The layout of model `c` planned with options `o` (its formats, indexer, MTP caching): every
/// layer and `plan_cache_specs(c, o)`. Errors as `plan_cache_specs`.
constexpr cache_layout describe_layout(const model_config& c, const plan_options& o = {}) {
  cache_layout l = detail::layout_skeleton(c);
  l.groups = plan_cache_specs(c, o);
  return l;
}

/// The layout rank `rank` of `p` holds: its stage's groups (`rank_plan`) and its PP / DCP part
/// (none with TP / DP only: the whole model's layout).
/// Errors as `rank_plan`.
constexpr cache_layout describe_rank_layout(const model_config& c, plan_options o, const parallel_config& p,
                                            std::int64_t rank) {
  o.pools = pools_choice::own;  // the library's groups on the rank's stage (no engine placement)
  const rank_plan_result r = rank_plan(c, o, p, rank);
  cache_layout l = detail::layout_skeleton(c);
  for (int g = 0; g < r.plan.num_groups; ++g)
    l.groups.groups[static_cast<std::size_t>(g)] = r.plan.groups[static_cast<std::size_t>(g)].spec;
  l.groups.num_groups = r.plan.num_groups;
  // TP and DP alone replicate the whole model's cache: the same pages, no rank part, the same
  // fingerprint as the whole-model layout. Stages (PP) and DCP shards are parts of it.
  l.rank.present = p.pp > 1 || p.dcp > 1;
  l.rank.pp_layers = r.main_layers;
  if (r.mtp_layers && o.cache_mtp) l.rank.draft_layers = {c.num_hidden_layers, c.num_layers()};
  l.rank.dcp_rank = r.coords.dcp_rank;
  l.rank.dcp_size = p.dcp;
  l.rank.dcp_interleave = p.dcp_interleave_rows;
  return l;
}

/// The layout of model `c` planned with options `o` for engine `e`: `describe_layout(c, o)` and,
/// where the engine moves bytes (a shared block pool: `plan_structure(o)` with `o`'s policy and
/// pools set from `e`), its placement (schema /2). Errors as `plan_cache_specs` and `plan_pools`.
constexpr cache_layout describe_layout(const model_config& c, plan_options o, const engine_spec& e) {
  const bool overlap = o.policy.overlap;
  o.policy = e.policy;
  o.policy.overlap = overlap;
  o.vllm_pools = e.vllm;
  o.sglang_pools = e.sglang;
  o.tokenspeed_pools = e.tokenspeed;
  cache_layout l = describe_layout(c, o);
  if (traits_of(plan_structure(o, c.family)).placed)
    l.engine = {true, e.name, e.preset, plan_pools(c, l.groups, detail::resolve(c, o, 1))};
  return l;
}

/// The layout rank `rank` of `p` holds for engine `e`: `describe_rank_layout(c, o, p, rank)` and
/// the engine's placement projected onto the rank's stage (its own block bytes). Errors as
/// `rank_plan`.
constexpr cache_layout describe_rank_layout(const model_config& c, plan_options o, const parallel_config& p,
                                            std::int64_t rank, const engine_spec& e) {
  const bool overlap = o.policy.overlap;
  o.policy = e.policy;
  o.policy.overlap = overlap;
  o.vllm_pools = e.vllm;
  o.sglang_pools = e.sglang;
  o.tokenspeed_pools = e.tokenspeed;
  cache_layout l = describe_rank_layout(c, o, p, rank);
  if (traits_of(plan_structure(o, c.family)).placed)
    l.engine = {true, e.name, e.preset, rank_plan(c, o, p, rank).plan.pools};
  return l;
}

/// Capacity of the canonical layout text: V4-Pro takes about 6 KiB.
inline constexpr std::size_t kCanonicalLayoutCapacity = 32768;

/// Fixed-capacity text built in constant expressions; appending past the capacity fails.
template <std::size_t N>
struct fixed_text {
  std::array<char, N> chars{};
  std::size_t size = 0;

  constexpr void append(std::string_view s) {
    require(s.size() <= N - size, "canonical layout text exceeds its capacity", {"capacity", N});
    for (const char ch : s) chars[size++] = ch;
  }
  constexpr void append_int(std::int64_t v) {
    char digits[20] = {};
    int n = 0;
    std::uint64_t u = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (v < 0) append("-");
    while (n > 0) {
      const char ch = digits[--n];
      append(std::string_view(&ch, 1));
    }
  }
  [[nodiscard]] constexpr std::string_view view() const { return {chars.data(), size}; }
};

namespace detail {
template <std::size_t N>
constexpr void key(fixed_text<N>& t, std::string_view k, bool first = false) {
  if (!first) t.append(",");
  t.append("\"");
  t.append(k);
  t.append("\":");
}
template <std::size_t N>
constexpr void key_string(fixed_text<N>& t, std::string_view k, std::string_view v, bool first = false) {
  key(t, k, first);
  t.append("\"");
  t.append(v);
  t.append("\"");
}
template <std::size_t N>
constexpr void key_int(fixed_text<N>& t, std::string_view k, std::int64_t v, bool first = false) {
  key(t, k, first);
  t.append_int(v);
}
template <std::size_t N>
constexpr void pool_json(fixed_text<N>& t, const pool_spec& p) {
  const format_layout& f = p.format;
  t.append("{");
  key_string(t, "format", f.name, true);
  key_int(t, "row_bytes", p.row_bytes);
  key_string(t, "page_rule", to_string(f.rule));
  if (f.rule == page_rule::split_padded) key_int(t, "alignment", f.alignment);
  key_int(t, "page_bytes", p.page_bytes);
  key_int(t, "page_stride", p.page_bytes);
  if (p.rows_per_page > 1) {
    key(t, "row1");
    t.append("{");
    key_int(t, "data", f.data_offset(p.rows_per_page, 1), true);
    if (f.has_scales()) key_int(t, "scales", f.scale_offset(p.rows_per_page, 1));
    if (f.has_rope()) key_int(t, "rope", f.rope_offset(p.rows_per_page, 1));
    t.append("}");
  }
  t.append("}");
}
template <std::size_t N>
constexpr void append_group_id(fixed_text<N>& t, group_id id) {
  t.append("\"");
  switch (id.kind) {  // to_string(group_id) builds a std::string: spelled out for constant evaluation
    case group_kind::swa_kv: t.append("v4.swa_kv"); break;
    case group_kind::compressor_state:
      t.append("v4.c");
      t.append_int(id.ratio);
      t.append("a.compressor_state");
      break;
    case group_kind::compressed_kv:
      t.append("v4.c");
      t.append_int(id.ratio);
      t.append("a.compressed_kv");
      break;
    case group_kind::indexer_compressor_state: t.append("v4.c4a.indexer_compressor_state"); break;
    case group_kind::mla_kv: t.append("v3.2.mla_kv"); break;
    case group_kind::indexer_k: t.append("v3.2.indexer_k"); break;
    case group_kind::v41_swa: t.append("v4.1.swa"); break;
    case group_kind::v41_global:
      t.append("v4.1.global_r");
      t.append_int(id.ratio);
      break;
    case group_kind::v41_compressor_state:
      t.append("v4.1.compressor_state_r");
      t.append_int(id.ratio);
      break;
  }
  t.append("\"");
}
/// The planes of a parent arena's engine part, in arena order (see the top of this file).
template <std::size_t N>
constexpr void planes_json(fixed_text<N>& t, const tokenspeed_planes& planes) {
  key(t, "planes");
  t.append("[");
  bool first = true;
  tokenspeed_planes_in_order(planes.num_planes, [&](int q) {
    const std::int64_t bytes = planes.bytes[static_cast<std::size_t>(q)];
    if (bytes == 0) return;
    t.append(first ? "{" : ",{");
    first = false;
    key(t, "id", true);
    t.append("\"unit.");
    t.append_int(q);
    t.append("\"");
    key_int(t, "bytes", bytes);
    t.append("}");
  });
  t.append("]");
}
/// The engine part of a schema /2 layout (see the top of this file).
template <std::size_t N>
constexpr void engine_json(fixed_text<N>& t, const layout_engine& e) {
  t.append("{");
  key_string(t, "name", e.name, true);
  key_string(t, "preset", e.preset);
  key_string(t, "structure", to_string(e.pools.structure));
  key_int(t, "block_bytes", e.pools.bytes_per_block);
  const bool planes = e.pools.tokenspeed.num_planes > 0;  // a parent arena of planes
  if (planes) planes_json(t, e.pools.tokenspeed);
  key(t, "groups");
  t.append("[");
  for (int gi = 0; gi < e.pools.num_groups; ++gi) {
    const engine_group& g = e.pools[gi];
    t.append(gi == 0 ? "{" : ",{");
    key_string(t, "table", to_string(g.rule.kind), true);
    key_int(t, "block_tokens", g.rule.page_tokens);
    if (planes) key_int(t, "packing", g.pages_per_block);
    key(t, "tensors");
    t.append("[");
    for (int m = 0; m < g.num_members; ++m) {
      const engine_member& mb = g.members[static_cast<std::size_t>(m)];
      t.append(m == 0 ? "{" : ",{");
      key(t, "group", true);
      append_group_id(t, mb.group);
      key_int(t, "pool", mb.pool);
      key_int(t, "rows_per_page", mb.rows_per_page);
      if (!planes) key_int(t, "alignment", mb.alignment);
      key_int(t, "page_bytes", mb.page_bytes);
      if (!planes) key_int(t, "offset", g.member_offset(m));
      key(t, "layers");
      t.append("[");
      bool first = true;
      for (int l = 0; l < kMaxLayers; ++l) {
        if (!mb.layers.test(l)) continue;
        if (!first) t.append(",");
        first = false;
        t.append_int(l);
      }
      t.append("]");
      if (planes) {  // the plane of each layer (tokenspeed: its slot, f4d8ec6e's index keys after the CSA KV's)
        key(t, "planes");
        t.append("[");
        const int count = mb.layers.count();
        for (int slot = 0; slot < count; ++slot) {
          if (slot > 0) t.append(",");
          t.append_int(tokenspeed_plane_of(mb.pool, slot, g.num_members == 1, count));
        }
        t.append("]");
      }
      t.append("}");
    }
    t.append("]}");
  }
  t.append("]}");
}
}  // namespace detail

/// The canonical layout bytes of `l` (see the top of this file). Fails if they exceed
/// kCanonicalLayoutCapacity.
constexpr fixed_text<kCanonicalLayoutCapacity> canonical_layout(const cache_layout& l) {
  using detail::key;
  using detail::key_int;
  using detail::key_string;
  fixed_text<kCanonicalLayoutCapacity> t;
  t.append("{");
  key_string(t, "schema", l.engine.present ? kLayoutSchemaEngine : kLayoutSchema, true);
  key_string(t, "model", to_string(l.family));
  key(t, "layers");
  t.append("[");
  for (int i = 0; i < l.num_layers; ++i) {
    const layout_layer& y = l.layers[static_cast<std::size_t>(i)];
    t.append(i == 0 ? "{" : ",{");
    key_int(t, "index", y.index, true);
    key_string(t, "attention", to_string(y.attention));
    key_int(t, "ratio", y.ratio);
    key_string(t, "role", y.role_name());
    key_int(t, "owner", y.owner);
    t.append("}");
  }
  t.append("]");
  key(t, "groups");
  t.append("[");
  for (int gi = 0; gi < l.groups.num_groups; ++gi) {
    const paged_cache_group_spec& g = l.groups[gi];
    t.append(gi == 0 ? "{" : ",{");
    key(t, "id", true);
    detail::append_group_id(t, g.id);
    key_string(t, "retention", to_string(g.retention));
    key_int(t, "tokens_per_row", g.entry_stride_tokens);
    key_int(t, "rows_per_page", g.rows_per_page);
    key(t, "layers");
    t.append("[");
    for (int i = 0; i < g.num_layers; ++i) {
      if (i > 0) t.append(",");
      t.append_int(g.layers[static_cast<std::size_t>(i)]);
    }
    t.append("]");
    key(t, "pools");
    t.append("[");
    for (int p = 0; p < g.num_pools; ++p) {
      if (p > 0) t.append(",");
      detail::pool_json(t, g.pools[static_cast<std::size_t>(p)]);
    }
    t.append("]}");
  }
  t.append("]");
  if (l.rank.present) {
    key(t, "rank");
    t.append("{");
    key(t, "pp_layers", true);
    t.append("[");
    t.append_int(l.rank.pp_layers.first);
    t.append(",");
    t.append_int(l.rank.pp_layers.end);
    t.append("]");
    if (l.rank.draft_layers.end > l.rank.draft_layers.first) {
      key(t, "draft_layers");
      t.append("[");
      t.append_int(l.rank.draft_layers.first);
      t.append(",");
      t.append_int(l.rank.draft_layers.end);
      t.append("]");
    }
    key_int(t, "dcp_rank", l.rank.dcp_rank);
    key_int(t, "dcp_size", l.rank.dcp_size);
    key_int(t, "dcp_interleave", l.rank.dcp_interleave);
    t.append("}");
  }
  if (l.engine.present) {
    key(t, "engine");
    detail::engine_json(t, l.engine);
  }
  t.append("}");
  return t;
}

/// XXH64 (seed 0) of the canonical layout bytes of `l`: the layout's fingerprint. Two peers
/// with equal fingerprints place every byte of every pool the same way.
constexpr std::uint64_t fingerprint(const cache_layout& l) { return xxh64(canonical_layout(l).view()); }

}  // namespace dsv4::cache
