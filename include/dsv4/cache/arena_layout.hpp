// dsv4-cache: where every pool of a memory plan lives inside one device allocation.
//
// Own pools (`pools_choice::own`): the arena is one contiguous allocation holding, in this order,
//
//   for each group g of the plan (the seed's group order),
//     for each layer of g (ascending layer index),
//       for each pool of g (c4a.compressed_kv: [fp8_ds_mla KV, indexer keys]; else one pool),
//         one region of pages_per_layer(g) pages x page_bytes(pool), then zero padding up to
//         the arena alignment (256 B by default).
//
// so a region is `[num_pages, page_bytes]` and a page is the row format's split layout
// (row_format.hpp). Page 0 of every region is the reserved null page: block tables point
// padding entries at it, so the kernels never write it (a slot in page 0 is refused and
// counted like an out-of-range slot) and an arena is zero-filled when allocated.
//
// Bytes: the regions' unpadded bytes sum to exactly `memory_plan::total_bytes`; the arena
// adds `padding_bytes` (at most alignment - 1 per region) on top:
//
//   total_bytes = plan.total_bytes + padding_bytes,  padding_bytes < num_regions x alignment
//
// e.g. a Flash v4.swa_kv region of 5 pages is 5 x 37,440 = 187,200 B, padded by 64 B to
// 187,264 = 731.5 x 256.
//
// An engine's pool structure (the plan's default, `pools_choice::engine`) is laid out as the
// engine lays it: the structure's placement (`pool_structure_traits::place`, in the engine's
// folder: vLLM's shared block pool in engines/vllm/arena.hpp) says where page p of each tensor
// lies, `offset_bytes + p x page_stride`; the arena is exactly the plan's bytes (vLLM: num_blocks
// x bytes_per_block, no padding), its regions interleaved (vLLM: page p of every tensor is in
// block p) and, across engine groups, overlaid (a block belongs to one group at a time). Its
// offsets are the layout contract's placement (descriptor.hpp, schema /2). Page 0 is the null
// page (vLLM's null block) there too.
//
// Everything here is host arithmetic on the plan (standard library only, `constexpr`, no CUDA
// header), so the CUDA arena (cuda/device_arena.cuh) and the host tests share one source of
// truth for every offset. All arithmetic is 64-bit and overflow-checked.
#pragma once

#include <array>
#include <cstdint>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/memory_plan.hpp"
#include "dsv4/cache/model.hpp"
#include "dsv4/cache/row_format.hpp"

namespace dsv4::cache {

/// Default alignment of every pool region, bytes: a multiple of the 16 B vector accesses of the
/// kernels and of the 128 B cache line, as the usual CUDA allocators round to 256 B.
inline constexpr std::uint64_t kArenaAlignment = 256;

/// The page of every pool that is never handed out (block tables' padding entries point at it).
inline constexpr std::int64_t kNullPage = 0;

/// Most pools one group keeps per layer (c4a.compressed_kv: KV + indexer keys).
inline constexpr int kMaxPoolsPerGroup = 2;

/// One pool of one layer of one group: `num_pages` pages of `page_bytes`, page p at
/// `offset_bytes + p x page_stride` from the arena base (own pools: page_stride = page_bytes, one
/// contiguous region). Slot s (the kernels' `page * rows_per_page + row`) lies in page
/// s / rows_per_page.
struct pool_region {
  int group = 0;           ///< Index into memory_plan::groups (the seed's group order).
  int layer_slot = 0;      ///< Index into the group's layer list.
  int layer = 0;           ///< Model layer index (MTP layers follow the main ones).
  int pool = 0;            ///< Index into the group's pools: 0 = KV/state, 1 = indexer keys.
  format_layout format{};  ///< The pool's registry format (fp32_state bound to its row bytes).
  /// Page 0's first byte from the arena base: own pools a multiple of the arena alignment; an
  /// engine's structure its placement (a multiple of 16 B).
  std::uint64_t offset_bytes = 0;
  std::int64_t page_bytes = 0;     ///< Bytes of one page (fp8_ds_mla pages padded to 576 B multiples).
  std::int64_t page_stride = 0;    ///< Bytes from one page to the next: page_bytes, or vLLM's bytes_per_block.
  std::int64_t num_pages = 0;      ///< Own pools: group_plan::pool_pages[pool]; vLLM: num_blocks. Null page included.
  std::int64_t rows_per_page = 0;  ///< Rows of one page (64, 4, 8 or 2; vLLM's rows where it differs).
  std::int64_t row_bytes = 0;      ///< Unpadded bytes of one row: 584, 132, 68, 8,192, 4,096 or 2,048.
  std::uint64_t bytes = 0;         ///< num_pages x page_bytes (own pools: the plan's bytes for this pool).
  /// Own pools: `bytes` rounded up to the arena alignment; an engine's structure: the region's
  /// span, (num_pages - 1) x page_stride + page_bytes.
  std::uint64_t padded_bytes = 0;
  int engine_group = -1;  ///< The engine group (block table) holding the pool; -1 for own pools.

  /// Slots of the region: num_pages x rows_per_page (the null page's rows included).
  [[nodiscard]] constexpr std::int64_t num_slots() const { return num_pages * rows_per_page; }
  /// First slot a writer may use: the first row after the null page.
  [[nodiscard]] constexpr std::int64_t first_usable_slot() const { return (kNullPage + 1) * rows_per_page; }
  /// Bytes from the region's first byte to its last page's end: (num_pages - 1) x page_stride +
  /// page_bytes (own pools: `bytes`).
  [[nodiscard]] constexpr std::uint64_t span_bytes() const {
    if (num_pages < 1) return 0;
    return checked_add(checked_mul(to_unsigned(num_pages - 1, "num_pages"), to_unsigned(page_stride, "page_stride")),
                       to_unsigned(page_bytes, "page_bytes"));
  }
  /// One past the region's last page's last byte (before its padding), from the arena base.
  [[nodiscard]] constexpr std::uint64_t end_offset() const { return checked_add(offset_bytes, span_bytes()); }
  /// Byte offset of page `page` (a block id) from the arena base. Throws std::invalid_argument
  /// for a page outside [0, num_pages).
  [[nodiscard]] constexpr std::uint64_t page_offset(std::int64_t page) const {
    require(page >= 0 && page < num_pages, "page outside the region", {"page", page}, {"num_pages", num_pages});
    return checked_add(offset_bytes,
                       checked_mul(static_cast<std::uint64_t>(page), to_unsigned(page_stride, "page_stride")));
  }
};

/// Where a group's regions are (own pools): layer block l (the group's l-th layer) starts at
/// `offset_bytes + l x layer_stride_bytes`, and its pool p at `pool_offset_bytes[p]` inside.
struct arena_group_layout {
  std::uint64_t offset_bytes = 0;        ///< First byte of the group's first region.
  std::uint64_t layer_stride_bytes = 0;  ///< Padded bytes of all pools of one layer.
  std::uint64_t bytes = 0;               ///< Padded bytes of the whole group.
  int num_layers = 0;
  int num_pools = 0;
  std::array<std::uint64_t, kMaxPoolsPerGroup> pool_offset_bytes{};  ///< Inside one layer block.
  std::array<std::uint64_t, kMaxPoolsPerGroup> pool_padded_bytes{};  ///< Padded bytes of each pool.
};

/// The arena of a memory plan: every pool region's offset, and the typed page layouts the
/// kernels need (the plan knows row bytes; the row formats come from the model).
struct arena_layout {
  memory_plan plan{};  ///< The plan this arena holds.
  /// The engine structure's placement (`pool_structure_traits::place`); nullptr: own pools, laid
  /// out by `groups` below.
  place_fn place = nullptr;
  fp8_ds_mla_format kv_format{};    ///< V4: the model's fp8_ds_mla row, for `fp8_ds_mla_layout`.
  indexer_row_format indexer{};     ///< The model's FP8 indexer row (index_head_dim), for `indexer_layout`.
  std::uint64_t alignment = 0;      ///< Region alignment, a power of two.
  std::uint64_t total_bytes = 0;    ///< Bytes to allocate: payload + padding.
  std::uint64_t payload_bytes = 0;  ///< Unpadded region bytes; equals plan.total_bytes.
  std::uint64_t padding_bytes = 0;  ///< total_bytes - payload_bytes (0 for an engine's structure).
  int num_regions = 0;              ///< Pools over all groups and layers.
  /// Own pools: every group's regions; an engine's structure: its layer and pool counts only.
  std::array<arena_group_layout, kMaxGroups> groups{};

  /// Whether the regions are an engine's placement (strided pages, overlaid groups), not own pools.
  [[nodiscard]] constexpr bool engine_placed() const { return place != nullptr; }

  /// Region of pool `pool` of the `layer_slot`-th layer of group `group`. Throws
  /// std::invalid_argument for an index out of range.
  [[nodiscard]] constexpr pool_region region(int group, int layer_slot, int pool) const {
    require(group >= 0 && group < plan.num_groups, "arena group index out of range", {"group", group},
            {"num_groups", plan.num_groups});
    const arena_group_layout& ga = groups[static_cast<std::size_t>(group)];
    const group_plan& gp = plan.groups[static_cast<std::size_t>(group)];
    require(layer_slot >= 0 && layer_slot < ga.num_layers, "arena layer slot out of range", {"layer_slot", layer_slot},
            {"num_layers", ga.num_layers});
    require(pool >= 0 && pool < ga.num_pools, "arena pool index out of range", {"pool", pool},
            {"num_pools", ga.num_pools});
    const pool_spec& ps = gp.spec.pools[static_cast<std::size_t>(pool)];
    pool_region r;
    r.group = group;
    r.layer_slot = layer_slot;
    r.layer = gp.spec.layers[static_cast<std::size_t>(layer_slot)];
    r.pool = pool;
    r.format = ps.format;
    r.row_bytes = ps.row_bytes;
    if (place != nullptr) {  // the engine's placement
      const page_placement pp = place(plan.pools, plan.arena_units, gp.spec.id, r.layer, pool);
      r.offset_bytes = pp.offset_bytes;
      r.page_bytes = pp.page_bytes;
      r.page_stride = pp.page_stride;
      r.num_pages = pp.num_pages;
      r.rows_per_page = pp.rows_per_page;
      r.engine_group = pp.engine_group;
      r.bytes = checked_mul(to_unsigned(r.page_bytes, "page_bytes"), to_unsigned(r.num_pages, "num_pages"));
      r.padded_bytes = r.span_bytes();
      return r;
    }
    // Cannot overflow: every term was checked when the layout was built.
    r.offset_bytes = ga.offset_bytes + static_cast<std::uint64_t>(layer_slot) * ga.layer_stride_bytes +
                     ga.pool_offset_bytes[static_cast<std::size_t>(pool)];
    r.page_bytes = ps.page_bytes;
    r.page_stride = ps.page_bytes;
    r.num_pages = gp.pool_pages[static_cast<std::size_t>(pool)];
    r.rows_per_page = ps.rows_per_page;
    r.bytes = static_cast<std::uint64_t>(ps.page_bytes) * static_cast<std::uint64_t>(r.num_pages);
    r.padded_bytes = ga.pool_padded_bytes[static_cast<std::size_t>(pool)];
    return r;
  }

  /// The i-th region in arena order (0 <= i < num_regions): groups, layers, pools; in own pools the
  /// offsets increase with i.
  /// Throws std::invalid_argument for i out of range.
  [[nodiscard]] constexpr pool_region region(int i) const {
    require(i >= 0 && i < num_regions, "arena region index out of range", {"region", i}, {"num_regions", num_regions});
    for (int g = 0; g < plan.num_groups; ++g) {
      const arena_group_layout& ga = groups[static_cast<std::size_t>(g)];
      const int n = ga.num_layers * ga.num_pools;
      if (i < n) return region(g, i / ga.num_pools, i % ga.num_pools);
      i -= n;
    }
    fail("arena region index out of range", {"region", i});
  }

  /// Index of the group with id `id`; throws std::invalid_argument if the plan has none.
  [[nodiscard]] constexpr int group_index(group_id id) const {
    for (int g = 0; g < plan.num_groups; ++g)
      if (plan.groups[static_cast<std::size_t>(g)].spec.id == id) return g;
    fail("the plan has no such cache group", {"kind", static_cast<int>(id.kind)}, {"ratio", id.ratio});
  }

  /// Region of pool `pool` of model layer `layer` in group `id`. Throws std::invalid_argument
  /// if the plan has no such group, the group does not cover that layer, or no such pool.
  [[nodiscard]] constexpr pool_region find(group_id id, int layer, int pool = 0) const {
    const int g = group_index(id);
    const paged_cache_group_spec& s = plan.groups[static_cast<std::size_t>(g)].spec;
    for (int slot = 0; slot < s.num_layers; ++slot)
      if (s.layers[static_cast<std::size_t>(slot)] == layer) return region(g, slot, pool);
    fail("the cache group does not cover this layer", {"layer", layer}, {"kind", static_cast<int>(id.kind)},
         {"ratio", id.ratio});
  }

  /// The typed page layout of a `v4.fp8_ds_mla` region, for the V4 fast-path codecs and kernels
  /// (row_codec.hpp, cuda/kernels.cuh). Throws std::invalid_argument for any other format
  /// (other formats go through the generic codecs: `quantize_row<F>(r.format, ...)`).
  [[nodiscard]] constexpr fp8_ds_mla_page_layout fp8_ds_mla_layout(const pool_region& r) const {
    require(r.format.name == formats::v4_fp8_ds_mla::layout.name, "region is not a v4.fp8_ds_mla pool",
            {"format_index", format_index(r.format.name)});
    return make_fp8_ds_mla_page_layout(kv_format, r.rows_per_page);
  }

  /// The typed page layout of an FP8 (`v4.indexer_fp8`, `v3.2.indexer_fp8`: the same bytes) or
  /// `v4.indexer_mxfp4` region, for the fast-path codecs and kernels. Throws
  /// std::invalid_argument for any other format.
  [[nodiscard]] constexpr indexer_page_layout indexer_layout(const pool_region& r) const {
    const bool fp8 =
        r.format.name == formats::v4_indexer_fp8::layout.name || r.format.name == formats::v32_indexer_fp8::layout.name;
    require(fp8 || r.format.name == formats::v4_indexer_mxfp4::layout.name,
            "region is not a v4.indexer_fp8, v3.2.indexer_fp8 or v4.indexer_mxfp4 pool",
            {"format_index", format_index(r.format.name)});
    return make_indexer_page_layout(
        make_indexer_row_format(fp8 ? indexer_format::fp8 : indexer_format::mxfp4, indexer.index_head_dim),
        r.rows_per_page);
  }
};

namespace detail {

/// Checks that pool `p` of group `g` of a plan of model `c` is a registered format holding the
/// model's rows (head_dim, qk_rope_head_dim, index_head_dim) at the plan's row bytes. Throws
/// std::invalid_argument naming the group and pool.
constexpr void check_arena_pool_format(const model_config& c, const pool_spec& ps, int g, int p) {
  require(ps.page_bytes > 0 && ps.rows_per_page > 0 && ps.row_bytes > 0, "pool spec has an empty page", {"group", g},
          {"pool", p});
  const int fi = format_index(ps.format.name);
  require(fi >= 0, "plan's pool format is not in the registry", {"group", g}, {"pool", p});
  require(ps.format.row_bytes == ps.row_bytes && (ps.format.role == format_role::state ||
                                                  kFormats[static_cast<std::size_t>(fi)].row_bytes == ps.row_bytes),
          "plan's pool bytes differ from its format's", {"group", g}, {"row_bytes", ps.row_bytes});
  if (ps.format.role != format_role::state) {
    const bool keys = ps.format.role == format_role::indexer_k;
    require(format_mismatch(ps.format, ps.format.role, c.family, keys ? c.index_head_dim : c.head_dim,
                            keys ? 0 : c.qk_rope_head_dim) == nullptr,
            "plan's pool format does not hold the model's rows (head_dim, qk_rope_head_dim or index_head_dim)",
            {"group", g}, {"pool", p}, {"row_bytes", ps.row_bytes});
  }
}

/// Own pools: every group's layer blocks one after another, each pool region padded to
/// `a.alignment` (see the top of this file). Fills a.groups, a.num_regions and the byte counts.
constexpr void lay_out_own_pools(const model_config& c, const memory_plan& plan, arena_layout& a) {
  const std::uint64_t alignment = a.alignment;
  std::uint64_t offset = 0;
  std::uint64_t payload = 0;
  for (int g = 0; g < plan.num_groups; ++g) {
    const group_plan& gp = plan.groups[static_cast<std::size_t>(g)];
    const paged_cache_group_spec& s = gp.spec;
    arena_group_layout& ga = a.groups[static_cast<std::size_t>(g)];
    ga.offset_bytes = offset;
    std::uint64_t group_payload_per_layer = 0;
    for (int p = 0; p < s.num_pools; ++p) {
      const pool_spec& ps = s.pools[static_cast<std::size_t>(p)];
      check_arena_pool_format(c, ps, g, p);
      require(ps.format.page_bytes(ps.rows_per_page) == ps.page_bytes, "plan's pool bytes differ from its format's",
              {"group", g}, {"page_bytes", ps.page_bytes});
      const std::int64_t pool_pages = gp.pool_pages[static_cast<std::size_t>(p)];
      require(pool_pages >= 1, "a pool needs at least its null page", {"group", g}, {"pool", p});
      const std::uint64_t bytes =
          checked_mul(to_unsigned(ps.page_bytes, "page_bytes"), to_unsigned(pool_pages, "pool_pages"),
                      "arena pool bytes overflow 64 bits");
      // alignment is a power of two; (bytes + alignment - 1) is checked, the mask cannot overflow.
      const std::uint64_t padded = checked_add(bytes, alignment - 1, "arena size overflows 64 bits") & ~(alignment - 1);
      ga.pool_offset_bytes[static_cast<std::size_t>(p)] = ga.layer_stride_bytes;
      ga.pool_padded_bytes[static_cast<std::size_t>(p)] = padded;
      ga.layer_stride_bytes = checked_add(ga.layer_stride_bytes, padded, "arena size overflows 64 bits");
      group_payload_per_layer = checked_add(group_payload_per_layer, bytes, "arena size overflows 64 bits");
    }
    const auto layers = static_cast<std::uint64_t>(s.num_layers);
    ga.bytes = checked_mul(ga.layer_stride_bytes, layers, "arena size overflows 64 bits");
    const std::uint64_t group_payload = checked_mul(group_payload_per_layer, layers, "arena size overflows 64 bits");
    require(group_payload == gp.bytes, "arena group bytes differ from the plan's", {"group", g},
            {"arena_bytes", group_payload}, {"plan_bytes", gp.bytes});
    payload = checked_add(payload, group_payload, "arena size overflows 64 bits");
    offset = checked_add(offset, ga.bytes, "arena size overflows 64 bits");
    a.num_regions += s.num_layers * s.num_pools;
  }
  require(payload == plan.total_bytes, "arena payload differs from the plan's total bytes", {"arena_bytes", payload},
          {"plan_bytes", plan.total_bytes});
  a.payload_bytes = payload;
  a.total_bytes = offset;
  a.padding_bytes = offset - payload;
}

/// An engine's structure: the plan's bytes exactly, every region where `a.place` puts it. Checks
/// each region against the plan and the kernels: the format's page of the engine's rows fits the
/// page, pages do not overlap (page_bytes <= page_stride), offsets and strides are multiples of
/// 16 B, and the last page ends inside the plan's bytes. Fills a.groups' counts, a.num_regions
/// and the byte counts.
constexpr void lay_out_engine_pools(const model_config& c, const memory_plan& plan, arena_layout& a) {
  a.total_bytes = plan.total_bytes;
  a.payload_bytes = plan.total_bytes;
  a.padding_bytes = 0;
  for (int g = 0; g < plan.num_groups; ++g) {
    const paged_cache_group_spec& s = plan.groups[static_cast<std::size_t>(g)].spec;
    for (int p = 0; p < s.num_pools; ++p) check_arena_pool_format(c, s.pools[static_cast<std::size_t>(p)], g, p);
    a.num_regions += s.num_layers * s.num_pools;
  }
  for (int i = 0; i < a.num_regions; ++i) {
    const pool_region r = a.region(i);
    require(r.num_pages >= 2 && r.rows_per_page > 0, "an engine's region needs its null page and one more",
            {"region", i}, {"num_pages", r.num_pages});
    require(r.format.page_bytes(r.rows_per_page) <= r.page_bytes && r.page_bytes <= r.page_stride,
            "an engine's page must hold the format's page and stay below its page stride", {"region", i},
            {"page_bytes", r.page_bytes}, {"page_stride", r.page_stride});
    require(r.offset_bytes % 16 == 0 && r.page_stride % 16 == 0,
            "an engine's page offsets must be multiples of 16 bytes (the kernels' vector accesses)", {"region", i},
            {"offset", r.offset_bytes}, {"page_stride", r.page_stride});
    require(r.end_offset() <= plan.total_bytes, "an engine's region ends past the plan's bytes", {"region", i},
            {"end", r.end_offset()}, {"plan_bytes", plan.total_bytes});
  }
}

}  // namespace detail

/// Lays out the arena of `plan`, a plan of model `c` (`build_memory_plan(c, o)`). Own pools
/// (`pools_choice::own`): every region aligned to `alignment` bytes (a power of two, >= 16 for
/// the kernels' 16 B accesses), total = plan bytes + padding. An engine's structure whose
/// placement is modelled (`pool_structure_traits::place`: vLLM's shared block pool,
/// engines/vllm/engine.hpp; tokenspeed's parent arena, engines/tokenspeed/arena.hpp): the
/// engine's placement, total = plan.total_bytes exactly (`alignment` is then only the base's).
/// Cross-checks the plan against the model: each pool's format must hold the model's rows
/// (head_dim, qk_rope_head_dim, index_head_dim), own pools' page bytes must equal the format's
/// page, and the regions' unpadded bytes must sum to plan.total_bytes.
/// Throws std::invalid_argument for a bad alignment, a plan of another model, an empty plan, a
/// structure whose placement is not modelled (SGLang's ratio pools: plan them with own pools),
/// or an arena whose size overflows 64 bits.
constexpr arena_layout build_arena_layout(const model_config& c, const memory_plan& plan,
                                          std::uint64_t alignment = kArenaAlignment) {
  require(alignment >= 16 && (alignment & (alignment - 1)) == 0,
          "arena alignment must be a power of two and >= 16 bytes", {"alignment", alignment});
  require(plan.num_groups > 0 && plan.num_groups <= kMaxGroups, "memory plan has no groups",
          {"num_groups", plan.num_groups});
  const pool_structure_traits& t = traits_of(plan.pools.structure);
  require(t.laid_out || t.place != nullptr,
          "the arena lays out own pools and the engine structures whose placement is modelled "
          "(pool_structure_traits::place): "
          "plan with pools = pools_choice::own");
  validate(c);
  arena_layout a;
  a.plan = plan;
  a.alignment = alignment;
  a.place = t.laid_out ? nullptr : t.place;
  // V4's latent row: V4 models, and V4.1 planned with the V4 format set (vLLM on Hopper).
  if (c.family != model_family::v3_2) a.kv_format = make_fp8_ds_mla_format(c.head_dim, c.qk_rope_head_dim);
  a.indexer = make_indexer_row_format(indexer_format::fp8, c.index_head_dim);
  for (int g = 0; g < plan.num_groups; ++g) {
    const group_plan& gp = plan.groups[static_cast<std::size_t>(g)];
    const paged_cache_group_spec& s = gp.spec;
    require(s.num_pools >= 1 && s.num_pools <= kMaxPoolsPerGroup, "cache group must have 1 or 2 pools", {"group", g},
            {"num_pools", s.num_pools});
    require(s.num_layers >= 1 && s.num_layers <= kMaxLayers, "cache group must cover 1..256 layers", {"group", g},
            {"num_layers", s.num_layers});
    require(gp.pages_per_layer >= 1, "a pool needs at least its null page", {"group", g},
            {"pages_per_layer", gp.pages_per_layer});
    a.groups[static_cast<std::size_t>(g)].num_layers = s.num_layers;
    a.groups[static_cast<std::size_t>(g)].num_pools = s.num_pools;
  }
  if (a.engine_placed())
    detail::lay_out_engine_pools(c, plan, a);
  else
    detail::lay_out_own_pools(c, plan, a);
  return a;
}

/// The arena of `build_memory_plan(c, o)` in own pools (`o.pools` is set to `pools_choice::own`);
/// errors as `build_memory_plan` and the overload above.
constexpr arena_layout build_arena_layout(const model_config& c, plan_options o,
                                          std::uint64_t alignment = kArenaAlignment) {
  o.pools = pools_choice::own;
  return build_arena_layout(c, build_memory_plan(c, o), alignment);
}

}  // namespace dsv4::cache
