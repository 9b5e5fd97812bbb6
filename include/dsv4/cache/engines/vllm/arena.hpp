// dsv4-cache: where vLLM's shared block pool puts every cache tensor's pages in one allocation,
// as the layout contract records it (descriptor.hpp, schema /2, `describe --engine vllm`).
//
// vLLM allocates one tensor of num_blocks x bytes_per_block bytes (K
// `get_kv_cache_config_from_groups` @ 4253bd44, the per-block slab of PR #44577; files in
// engines/vllm/engine.hpp). Block b is the slab [b x bytes_per_block, (b + 1) x bytes_per_block);
// a block id belongs to one engine group (block table) at a time, and every group overlays the
// slab from byte 0: in a block of group e, its tensor sets (members) follow one another, each one
// page per layer, layers adjacent in ascending order. So page p (the block id) of pool `pool` of
// layer l lies at
//
//   p x bytes_per_block + member_offset(e, m) + layer_rank(m, l) x page_bytes(m)
//
// e.g. V4-Flash, FP8 keys: 1,002,240-B blocks; the SWA group's layer-0 page at 0, its layer-2
// page at 37,440. Block 0 is the null block, never handed out (K, `BlockPool.null_block`).
#pragma once

#include <cstdint>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/group_spec.hpp"

namespace dsv4::cache {

/// Where vLLM's shared block pool `pools` of `num_blocks` blocks puts pool `pool` of model layer
/// `layer` of the library group `id` (see the top of this file): offset in the block (bytes),
/// page stride = bytes_per_block, page bytes as vLLM pads them, num_blocks pages (block 0 the
/// null block), the engine group's rows per page. Throws std::invalid_argument if no engine
/// group holds that tensor, or for num_blocks < 1.
constexpr page_placement vllm_page_placement(const engine_pools& pools, std::int64_t num_blocks, group_id id, int layer,
                                             int pool) {
  require(num_blocks >= 1, "vLLM's block pool needs at least its null block", {"num_blocks", num_blocks});
  for (int e = 0; e < pools.num_groups; ++e) {
    const engine_group& g = pools[e];
    for (int m = 0; m < g.num_members; ++m) {
      const engine_member& mb = g.members[static_cast<std::size_t>(m)];
      if (!(mb.group == id) || mb.pool != pool || !mb.layers.test(layer)) continue;
      const std::int64_t in_block =
          checked_add(g.member_offset(m), checked_mul(static_cast<std::int64_t>(mb.layer_rank(layer)), mb.page_bytes));
      return {to_unsigned(in_block, "vLLM offset in the block"),
              pools.bytes_per_block,
              mb.page_bytes,
              num_blocks,
              mb.rows_per_page,
              e};
    }
  }
  fail("no vLLM block table holds this cache tensor", {"layer", layer}, {"pool", pool},
       {"kind", static_cast<int>(id.kind)});
}

}  // namespace dsv4::cache
