// dsv4-cache: where tokenspeed's parent arena puts every cache tensor's pages in its allocation
// (the arena's placement, arena_layout.hpp; its structure in engines/tokenspeed/engine.hpp).
//
// tokenspeed lays its arena out plane by plane (lightseekorg/tokenspeed recipes/plan.py @ 6083537e,
// as read at f4d8ec6e and in the 0.1.1 wheel: `CacheLayout.with_num_lcm_blocks`,
// `CacheMemoryPlan.field_page_byte_offset`; paths under
// python/tokenspeed/runtime/layers/attention/kv_cache/): for n parents plus the null parent,
// plane "unit.<i>" (planes in string order of their ids: unit.0, unit.1, unit.10, ...) takes
// (n + 1) x plane_bytes(i) bytes after the planes before it, and in it a group of packing K
// (K pages per parent) puts page p of its field at
//
//   plane_offset(i) + plane_bytes(i) - stride + p x stride,   stride = plane_bytes(i) / K
//
// (plus the field's offset in the plane: 0, DeepSeek V4 puts one field of a group on a plane),
// p in [0, 1 + n x K); page 0, the null page, is the null parent's last page. So a tensor's pages
// are evenly strided, one region per (group, pool, layer), and groups sharing a plane overlay it
// (a parent is bound to one group at a time).
#pragma once

#include <cstdint>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/tokenspeed/planes.hpp"
#include "dsv4/cache/group_spec.hpp"

namespace dsv4::cache {

/// Where a field of a group of packing `packing` (K pages per parent) puts its pages on a plane of
/// `plane_bytes` bytes a parent that starts `plane_offset` bytes into tokenspeed's arena of
/// `num_parents` parents (the null parent included; see the top of this file): page 0's offset
/// (the null parent's last page), the page stride plane_bytes / K (bytes) and the pages
/// 1 + (num_parents - 1) x K. The one rule the arena (`tokenspeed_page_placement`) and the transfer
/// CLI (which reads planes from a descriptor) place pages by. Throws std::invalid_argument for
/// packing < 1, plane_bytes < packing, num_parents < 2, or a 64-bit overflow.
struct tokenspeed_field_pages {
  std::uint64_t page0_offset = 0;  ///< Bytes from the arena's base.
  std::int64_t page_stride = 0;    ///< Bytes.
  std::int64_t pages = 0;          ///< Page ids [0, pages); 0 is the null page.
};
constexpr tokenspeed_field_pages tokenspeed_field_on_plane(std::uint64_t plane_offset, std::int64_t plane_bytes,
                                                           std::int64_t packing, std::int64_t num_parents) {
  require(packing >= 1 && plane_bytes >= packing, "a tokenspeed plane holds K pages of at least a byte each",
          {"packing", packing}, {"plane_bytes", plane_bytes});
  require(num_parents >= 2, "tokenspeed's arena holds a null parent and at least one more",
          {"num_parents", num_parents});
  const std::int64_t stride = plane_bytes / packing;
  return {checked_add(plane_offset, to_unsigned(plane_bytes - stride, "plane bytes"),
                      "tokenspeed's arena offsets overflow 64 bits"),
          stride, checked_add(std::int64_t{1}, checked_mul(num_parents - 1, packing, "tokenspeed page ids overflow"))};
}

/// Where tokenspeed's parent arena `pools` of `num_parents` parents (the null parent included:
/// its allocated parents + 1) puts pool `pool` of model layer `layer` of the library group `id`
/// (see the top of this file): the field's page 0 offset, its page stride, page bytes (the
/// field's payload, the library's page), 1 + (num_parents - 1) x K pages, rows per page. Throws
/// std::invalid_argument if no engine group holds that tensor, its plane is empty, or for
/// num_parents < 2 or an arena whose offsets overflow 64 bits.
constexpr page_placement tokenspeed_page_placement(const engine_pools& pools, std::int64_t num_parents, group_id id,
                                                   int layer, int pool) {
  require(num_parents >= 2, "tokenspeed's arena holds a null parent and at least one more",
          {"num_parents", num_parents});
  const tokenspeed_planes& planes = pools.tokenspeed;
  for (int e = 0; e < pools.num_groups; ++e) {
    const engine_group& g = pools[e];
    for (int m = 0; m < g.num_members; ++m) {
      const engine_member& mb = g.members[static_cast<std::size_t>(m)];
      if (!(mb.group == id) || mb.pool != pool || !mb.layers.test(layer)) continue;
      // One member: the index keys in a group of their own (0.1.1), or a group of one pool.
      const int plane = tokenspeed_plane_of(pool, mb.layer_rank(layer), g.num_members == 1, mb.layers.count());
      require(plane >= 0 && plane < planes.num_planes && planes.bytes[static_cast<std::size_t>(plane)] > 0,
              "tokenspeed's parent has no such plane", {"plane", plane}, {"num_planes", planes.num_planes});
      std::uint64_t plane_offset = 0;
      for (int q = 0; q < planes.num_planes; ++q)
        if (planes.bytes[static_cast<std::size_t>(q)] > 0 && tokenspeed_plane_before(q, plane))
          plane_offset = checked_add(plane_offset,
                                     checked_mul(to_unsigned(num_parents, "num_parents"),
                                                 to_unsigned(planes.bytes[static_cast<std::size_t>(q)], "plane bytes")),
                                     "tokenspeed's arena offsets overflow 64 bits");
      const tokenspeed_field_pages f = tokenspeed_field_on_plane(
          plane_offset, planes.bytes[static_cast<std::size_t>(plane)], g.pages_per_block, num_parents);
      return {f.page0_offset, f.page_stride, mb.page_bytes, f.pages, mb.rows_per_page, e};
    }
  }
  fail("no tokenspeed cache group holds this cache tensor", {"layer", layer}, {"pool", pool},
       {"kind", static_cast<int>(id.kind)});
}

}  // namespace dsv4::cache
