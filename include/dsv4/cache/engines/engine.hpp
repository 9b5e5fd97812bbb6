// dsv4-cache: the vocabulary every engine is written in: a pool structure (how an engine turns
// pages into bytes: its traits, `pool_structure_traits`), the block tables it forms from the
// library's group specs (`engine_pools`, `engine_group`, `table_rule`), and the library's own
// pools (`own_pools_structure`, `own_pools_of`). Each engine defines its own structure beside its
// rules (vLLM's shared block pool in engines/vllm/engine.hpp, tokenspeed's parent arena, SGLang's ratio
// pools, ...); engines/registry.hpp lists the engines. The memory plan and the allocation
// simulator price and replay a plan in the structure's units, reading only these traits.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <string_view>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/engines/defaults.hpp"
#include "dsv4/cache/engines/sglang/engine.hpp"
#include "dsv4/cache/engines/tokenspeed/planes.hpp"
#include "dsv4/cache/engines/traits.hpp"
#include "dsv4/cache/group_spec.hpp"
#include "dsv4/cache/policy.hpp"

namespace dsv4::cache {

/// What a pool structure's capacity bounds, as the allocation simulator (alloc_sim.hpp) counts a
/// replay's peak against it.
enum class peak_measure : std::uint8_t {
  bytes,    ///< Every group's pages at their page bytes, summed (pools sized per group).
  blocks,   ///< Blocks of one pool every table draws from: the peak over all tables at once.
  parents,  ///< Each table's pages packed `pages_per_block` to a parent, the tables' parents summed.
};

struct engine_pools;

/// Where an engine's pool structure puts the pages of one cache tensor (pool `pool` of one layer
/// of a library group) inside the arena that holds the plan (arena_layout.hpp): page p (a block
/// id, p in [0, num_pages); 0 is the null page / block) starts `offset_bytes + p x page_stride`
/// bytes from the arena base and takes `page_bytes` bytes, the format's page of `rows_per_page`
/// rows plus the engine's padding.
struct page_placement {
  std::uint64_t offset_bytes = 0;  ///< Page 0's first byte, from the arena base.
  std::int64_t page_stride = 0;    ///< Bytes from one page to the next (vLLM: bytes_per_block).
  std::int64_t page_bytes = 0;     ///< Bytes of one page, the engine's padding included.
  std::int64_t num_pages = 0;      ///< Pages (block ids), the null page included.
  std::int64_t rows_per_page = 0;  ///< Rows of one page as the engine stores them.
  int engine_group = -1;           ///< The engine group (block table) that holds the tensor.
};

/// A structure's arena placement (arena_layout.hpp): where pool `pool` of layer `layer` of the
/// library group `id` lies when the structure `pools` holds `num_units` units (vLLM: blocks).
/// Throws std::invalid_argument if no engine group holds that tensor.
using place_fn = page_placement (*)(const engine_pools& pools, std::int64_t num_units, group_id id, int layer,
                                    int pool);

/// What reports say of a pool structure and which figures it has: the planner's renderers and
/// reports read these, never the enumerator. The figures' keys name the JSON fields of the plan's
/// block counts (empty: the structure has no blocks).
struct pool_structure_traits {
  std::string_view name{};      ///< JSON `plan.pools`: "shared_block_pool".
  std::string_view title{};     ///< In a sentence: "the shared pool".
  std::string_view overhead{};  ///< What the engine's share of a plan is made of (screen, SVG).
  /// The screen's engine line after the engine's label; fmt named arguments {block_bytes} (B per
  /// block or parent) and {swa_ratio} (the SWA share of ratio pools).
  std::string_view summary{};
  /// The per-group table's column legend; fmt named arguments {engine} (its --engine name) and
  /// {sim} (the simulator's columns, empty without --simulate).
  std::string_view legend{};
  std::string_view sim_legend{};  ///< What the simulator's columns are in this structure.
  /// The plan is priced in whole blocks of `engine_pools::bytes_per_block` (a shared block pool, a
  /// parent arena): a request adds at most its own blocks.
  bool whole_blocks = false;
  bool pads_pages = false;  ///< A group's page takes the block's padded bytes (vLLM's packing).
  /// Every group draws its blocks from one pool: a peak is counted in blocks over all groups at
  /// once (else, with whole blocks, each group's pages packed `pages_per_block` to a block).
  bool one_block_pool = false;
  bool one_table_per_group = false;  ///< Each library group is its own table (own pools): its null page its own.
  bool token_ratios = false;         ///< Pools sized as shares of one token count, not pages per request.
  peak_measure measure = peak_measure::bytes;  ///< What its capacity bounds in a replay.
  bool laid_out = false;                       ///< The library's arena lays it out (arena_layout.hpp).
  /// Where the structure puts each tensor's pages in one arena of the plan's bytes (its own
  /// placement, engines/<engine>/); nullptr for own pools (laid out by arena_layout.hpp itself)
  /// and for a structure whose placement is not modelled.
  place_fn place = nullptr;
  /// A pipeline stage builds its own pools from its own layers (tokenspeed's per-stage recipe);
  /// else the whole model's groups are projected onto the stage (vLLM, `project_pools`).
  bool stage_builds_own = false;
  bool placed = false;  ///< The contract describes its placement (descriptor.hpp, schema /2).
  /// Why the layout contract does not record its pages (not `placed`), in a clause.
  std::string_view unplaced_why{};
  /// JSON keys of the plan's block figures: bytes of one unit, units allocated, planned, needed to
  /// start, one request's (admission); the simulator's peak units and peak at admission.
  std::string_view key_unit_bytes{}, key_units{}, key_planned{}, key_startup{}, key_admission{}, key_sim_peak{},
      key_sim_peak_admission{};
};

/// A pool structure: the traits of one engine's way of turning pages into bytes, defined beside
/// the engine that builds it (vLLM's `vllm_shared_block_pool`, tokenspeed's
/// `tokenspeed_parent_arena`, ...) or here (`own_pools_structure`); compared by address.
using pool_structure = const pool_structure_traits*;

/// Every group's pages in a pool of its own, one page per layer: the library's own model.
inline constexpr pool_structure_traits own_pools_structure{
    .name = "own_pools",
    .title = "the engine's pool structure",
    .overhead = "the engine's pool structure",
    .summary = "",
    .legend =
        "(rows, tokens: per page; window: tokens a sliding group keeps per request; page B: one page of one "
        "layer, all pools; pages/L: pages per layer, H x per request + prompt pages + 1 null page; pages: all "
        "layers{sim})\n",
    .sim_legend = "; sim/L: the simulator's peak pages per layer, null page included; slack: pages/L - sim/L",
    .one_table_per_group = true,
    .laid_out = true};

/// "own_pools", "shared_block_pool", ... (JSON `plan.pools`, `engine_report.structure`).
constexpr std::string_view to_string(pool_structure s) { return s->name; }

/// The traits of structure `s`.
constexpr const pool_structure_traits& traits_of(pool_structure s) { return *s; }

/// Which pool structure a plan prices: the engine's (default) or one pool per group (the planner's
/// `--pools own`, to show what the engine's structure costs).
enum class pools_choice : std::uint8_t { engine, own };

constexpr std::string_view to_string(pools_choice c) { return c == pools_choice::engine ? "engine" : "own"; }

/// What a block table keeps of a request.
enum class table_kind : std::uint8_t {
  full_history,    ///< Every page of the context (cdiv(tokens, R) pages).
  sliding_window,  ///< The pages of the last W tokens; earlier pages go back to the pool.
  request_ring,    ///< One page for the request's whole life (vLLM `CircularBufferSpec`).
};

constexpr std::string_view to_string(table_kind k) {
  switch (k) {
    case table_kind::full_history: return "full_history";
    case table_kind::sliding_window: return "sliding_window";
    case table_kind::request_ring: return "request_ring";
  }
  return "?";
}

/// What decides the pages one request holds in one block table: the input of both the plan's
/// formula (memory_plan.hpp) and the simulator (alloc_sim.hpp).
struct table_rule {
  table_kind kind = table_kind::full_history;
  std::int64_t page_tokens = 0;              ///< R: tokens per page (block).
  std::int64_t window_tokens = 0;            ///< W: the group's own window (sliding tables).
  std::int64_t step_window_base_tokens = 0;  ///< As `paged_cache_group_spec` (tokenspeed's step-grown windows).
  bool engine_state_ring = false;            ///< As `paged_cache_group_spec` (V4.1 ratio-2 state, own pools).

  [[nodiscard]] constexpr bool sliding() const { return kind == table_kind::sliding_window; }
  friend constexpr bool operator==(const table_rule&, const table_rule&) = default;
};

/// The table rule of a library group in its own pool.
constexpr table_rule table_rule_of(const paged_cache_group_spec& g) {
  return {g.has_sliding_window() ? table_kind::sliding_window : table_kind::full_history, g.page_size_tokens(),
          g.sliding_window_tokens, g.step_window_base_tokens, g.engine_state_ring};
}

/// A set of model layers (indices below kMaxLayers), as a bit mask.
struct layer_mask {
  std::array<std::uint64_t, 4> bits{};

  constexpr void set(int layer) {
    require(layer >= 0 && layer < kMaxLayers, "layer index outside [0, 256)", {"layer", layer});
    bits[static_cast<std::size_t>(layer) / 64] |= std::uint64_t{1} << (static_cast<unsigned>(layer) % 64);
  }
  [[nodiscard]] constexpr bool test(int layer) const {
    return layer >= 0 && layer < kMaxLayers &&
           (bits[static_cast<std::size_t>(layer) / 64] >> (static_cast<unsigned>(layer) % 64) & 1U) != 0;
  }
  [[nodiscard]] constexpr int count() const {
    int n = 0;
    for (const std::uint64_t w : bits) n += std::popcount(w);
    return n;
  }
  /// The layers of this set in [first, end).
  [[nodiscard]] constexpr layer_mask within(int first, int end) const {
    layer_mask m;
    for (int i = first < 0 ? 0 : first; i < end && i < kMaxLayers; ++i)
      if (test(i)) m.set(i);
    return m;
  }
  friend constexpr bool operator==(const layer_mask&, const layer_mask&) = default;
};

/// At most this many engine groups (block tables) and members per group.
inline constexpr int kMaxEngineGroups = 32;
inline constexpr int kMaxGroupMembers = 8;

/// One cache tensor set inside an engine group: pool `pool` of the library group `group` in the
/// layers of `layers`, each page `page_bytes` bytes (the engine's rows per page and alignment
/// padding included).
struct engine_member {
  group_id group{};
  int pool = 0;
  layer_mask layers{};
  std::int64_t rows_per_page = 0;
  std::int64_t page_bytes = 0;  ///< The format's page of rows_per_page rows, rounded up to `alignment`.
  std::int64_t alignment = 1;   ///< The engine's page alignment (1: none).

  [[nodiscard]] constexpr std::int64_t bytes() const { return page_bytes * layers.count(); }
  /// Rank of model layer `layer` among this member's layers (its pages follow one another in
  /// ascending layer order). Throws std::invalid_argument if the member does not hold `layer`.
  [[nodiscard]] constexpr int layer_rank(int layer) const {
    require(layers.test(layer), "the engine group's tensor set does not hold this layer", {"layer", layer});
    return layers.within(0, layer).count();
  }
};

/// One block table of the engine: its rule and the tensors it holds a page of per block.
struct engine_group {
  table_rule rule{};
  /// Pages of this group one block holds: 1 (vLLM, own pools), K (tokenspeed's packing).
  std::int64_t pages_per_block = 1;
  int num_members = 0;
  std::array<engine_member, kMaxGroupMembers> members{};

  /// Bytes of one block of this group: the sum of its tensors' pages (vLLM: its packing).
  [[nodiscard]] constexpr std::int64_t bytes() const {
    std::int64_t b = 0;
    for (int i = 0; i < num_members; ++i) b = checked_add(b, members[static_cast<std::size_t>(i)].bytes());
    return b;
  }
  /// Bytes before member `m` (0 <= m <= num_members) in one block of this group: its members'
  /// pages follow one another from the block's first byte, each `bytes()` (one page per layer).
  /// Throws std::invalid_argument for m out of range.
  [[nodiscard]] constexpr std::int64_t member_offset(int m) const {
    require(m >= 0 && m <= num_members, "engine group member index out of range", {"member", m},
            {"num_members", num_members});
    std::int64_t b = 0;
    for (int i = 0; i < m; ++i) b = checked_add(b, members[static_cast<std::size_t>(i)].bytes());
    return b;
  }
  /// Cache tensors (layer x pool) of this group.
  [[nodiscard]] constexpr int num_tensors() const {
    int n = 0;
    for (int i = 0; i < num_members; ++i) n += members[static_cast<std::size_t>(i)].layers.count();
    return n;
  }
};

/// An engine's pool structure for one model (or one pipeline stage of it).
struct engine_pools {
  pool_structure structure = &own_pools_structure;
  int num_groups = 0;
  std::array<engine_group, kMaxEngineGroups> groups{};
  /// shared_block_pool: bytes of one block (the widest group's packing); parent_arena: bytes of
  /// one parent; own_pools: 0.
  std::int64_t bytes_per_block = 0;
  /// ratio_pools: what SGLang's configurator reads of the model (its main layers).
  sglang_geometry sglang{};
  /// parent_arena: the bytes of each plane of a parent (tokenspeed's `pack`), for its placement.
  tokenspeed_planes tokenspeed{};

  [[nodiscard]] constexpr const engine_group* begin() const { return groups.data(); }
  [[nodiscard]] constexpr const engine_group* end() const { return groups.data() + num_groups; }
  [[nodiscard]] constexpr const engine_group& operator[](int i) const { return groups[static_cast<std::size_t>(i)]; }
};

/// Whether `e` is the library's own pools (every group a table of its own), which the plan sizes
/// itself; else the engine that builds the structure sizes it (`engine_sizing`).
constexpr bool is_own_pools(const engine_pools& e) { return e.structure == &own_pools_structure; }

/// The own-pools structure of `specs`: one engine group per library group, its pages as the
/// library lays them out.
constexpr engine_pools own_pools_of(const group_spec_list& specs) {
  engine_pools e;
  e.structure = &own_pools_structure;
  for (int gi = 0; gi < specs.num_groups; ++gi) {
    const paged_cache_group_spec& g = specs[gi];
    engine_group& eg = e.groups[static_cast<std::size_t>(e.num_groups++)];
    eg.rule = table_rule_of(g);
    for (int p = 0; p < g.num_pools; ++p) {
      engine_member& m = eg.members[static_cast<std::size_t>(eg.num_members++)];
      m.group = g.id;
      m.pool = p;
      for (int i = 0; i < g.num_layers; ++i) m.layers.set(g.layers[static_cast<std::size_t>(i)]);
      m.rows_per_page = g.pools[static_cast<std::size_t>(p)].rows_per_page;
      m.page_bytes = g.pools[static_cast<std::size_t>(p)].page_bytes;
    }
  }
  return e;
}

/// `e` restricted to the layers of `keep` (a pipeline stage: vLLM forms groups for the whole
/// model and projects them onto each worker, `_project_kv_cache_groups_to_worker`): members
/// without a layer left are dropped, groups are kept (a group without a layer on this stage still
/// draws block ids from the one pool the scheduler shares over all stages), and
/// `bytes_per_block` is recomputed over what is left: the stage's widest group.
constexpr engine_pools project_pools(const engine_pools& e, const layer_mask& keep) {
  engine_pools out;
  out.structure = e.structure;
  for (const engine_group& g : e) {
    engine_group ng;
    ng.rule = g.rule;
    ng.pages_per_block = g.pages_per_block;
    for (int i = 0; i < g.num_members; ++i) {
      engine_member m = g.members[static_cast<std::size_t>(i)];
      for (std::size_t w = 0; w < m.layers.bits.size(); ++w) m.layers.bits[w] &= keep.bits[w];
      if (m.layers.count() > 0) ng.members[static_cast<std::size_t>(ng.num_members++)] = m;
    }
    out.groups[static_cast<std::size_t>(out.num_groups++)] = ng;
  }
  if (traits_of(out.structure).one_block_pool) {  // the stage's widest group
    for (const engine_group& g : out)
      if (g.bytes() > out.bytes_per_block) out.bytes_per_block = g.bytes();
  } else {
    out.bytes_per_block = e.bytes_per_block;  // one arena (a parent arena), or none
  }
  out.sglang = e.sglang;          // ratio_pools: one stage only (the planner refuses pipeline stages)
  out.tokenspeed = e.tokenspeed;  // parent_arena: one parent geometry (stages build their own, or keep it)
  return out;
}

}  // namespace dsv4::cache
