// dsv4-cache: tokenspeed as an engine value: its allocation policies (policy.hpp, with their
// sources) in the library's own per-group pools.
//
// tokenspeed (lightseekorg/tokenspeed) sizes one arena of parent (LCM) blocks and packs each
// group's pages into them; that arena is not modelled yet, so its plans use `own_pools`: every
// group's pages priced at the group's own page bytes.
#pragma once

#include <cstdint>

#include "dsv4/cache/policy.hpp"

namespace dsv4::cache {

/// tokenspeed with --enable-mixed-batch: expiry at the request's own admission
/// (`CacheCoordinator::Admit`), extents past the context, a decode needs all s tokens of the
/// step's budget; bounds both CSA-state window rules (max(8, 4 + s), and 8 since PR #1612).
inline constexpr allocation_policy tokenspeed_policy{
    .engine = engine_kind::tokenspeed,
    .scheduler = scheduler_kind::running_first,
    .expiry = expiry_timing::own_admission,
    .window_rules =
        static_cast<std::uint8_t>(window_rule::fixed) | static_cast<std::uint8_t>(window_rule::grows_with_step),
    .first_chunk_lookaheads = 0,
    .running_lookahead = false,
    .extent_capped = false,
    .last_chunk_reserves_step = true,
    .decode_needs_whole_step = true,
};

/// tokenspeed's default scheduler (no mixed batches): as `tokenspeed_policy`, prefill first.
inline constexpr allocation_policy tokenspeed_default_policy = [] {
  allocation_policy p = tokenspeed_policy;
  p.engine = engine_kind::tokenspeed_default;
  p.scheduler = scheduler_kind::prefill_first;
  return p;
}();

}  // namespace dsv4::cache
