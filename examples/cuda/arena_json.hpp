// dsv4-cache-cuda-demo: the arena the sample allocates, as text and JSON (host only, no CUDA
// header), printed with or without a GPU.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/group_spec.hpp"

namespace dsv4::cache::cuda_demo {

/// Bytes of the error counter the device arena keeps after the regions (cuda/device_arena.cuh).
inline constexpr std::uint64_t kCounterBytes = 8;

/// The arena of `a` as one JSON object: `total_bytes` (the plan's bytes), `arena_bytes` (plus own
/// pools' alignment padding), `allocated_bytes` (plus the 8-B error counter), `alignment`,
/// `structure` (the pool structure laid out), and `regions`, one per (group, layer, pool) in arena
/// order: group id, layer, pool, format, `offset` (page 0's byte from the arena base),
/// `page_stride`, `page_bytes` and `pages` (the null page included).
inline nlohmann::ordered_json arena_json(const arena_layout& a) {
  nlohmann::ordered_json j;
  j["total_bytes"] = a.plan.total_bytes;
  j["arena_bytes"] = a.total_bytes;
  j["allocated_bytes"] = a.total_bytes + kCounterBytes;
  j["counter_bytes"] = kCounterBytes;
  j["alignment"] = a.alignment;
  j["padding_bytes"] = a.padding_bytes;
  j["structure"] = std::string(to_string(a.engine_placed() ? a.plan.pools.structure : &own_pools_structure));
  nlohmann::ordered_json regions = nlohmann::ordered_json::array();
  for (int i = 0; i < a.num_regions; ++i) {
    const pool_region r = a.region(i);
    nlohmann::ordered_json o;
    o["group"] = to_string(a.plan.groups[static_cast<std::size_t>(r.group)].spec.id);
    o["layer"] = r.layer;
    o["pool"] = r.pool;
    o["format"] = std::string(r.format.name);
    o["offset"] = r.offset_bytes;
    o["page_stride"] = r.page_stride;
    o["page_bytes"] = r.page_bytes;
    o["pages"] = r.num_pages;
    regions.push_back(std::move(o));
  }
  j["regions"] = std::move(regions);
  return j;
}

/// One line stating the arena: its bytes (the plan's, + alignment padding for own pools), the
/// structure it is laid out as, and the error counter the allocation adds.
inline std::string arena_line(const arena_layout& a) {
  std::string s = "arena: ";
  s += std::to_string(a.total_bytes);
  s += " B = the plan's ";
  s += std::to_string(a.plan.total_bytes);
  s += " B";
  if (a.padding_bytes != 0) {
    s += " + ";
    s += std::to_string(a.padding_bytes);
    s += " B alignment padding";
  }
  s += ", laid out as ";
  s += a.engine_placed() ? std::string(traits_of(a.plan.pools.structure).title) : std::string("own pools");
  s += " (";
  s += std::to_string(a.num_regions);
  s += " regions, base aligned to ";
  s += std::to_string(a.alignment);
  s += " B); allocated with an 8 B error counter: ";
  s += std::to_string(a.total_bytes + kCounterBytes);
  s += " B\n";
  return s;
}

}  // namespace dsv4::cache::cuda_demo
