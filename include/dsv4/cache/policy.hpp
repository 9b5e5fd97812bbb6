// dsv4-cache: how an engine allocates cache pages, as a value (`allocation_policy`): the rules
// that decide how many pages a request holds at once (scheduler order, expiry, extents,
// lookahead, state windows, overlap). Each engine's preset lives with the engine
// (engines/vllm/engine.hpp `vllm_policy`, engines/tokenspeed/engine.hpp `tokenspeed_policy`, ...); the rules
// as read from each engine's code, with their sources: docs/engines/policies.md. Notation: per
// group R = tokens per page, W = window; N requests of context L, B = the step's token budget,
// s = tokens per decode step (1 verified + s - 1 drafts), c = a request's computed tokens.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string_view>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/platform.hpp"

namespace dsv4::cache {

/// Who gets a step's token budget.
enum class scheduler_kind : std::uint8_t {
  running_first,  ///< vLLM v1, tokenspeed --enable-mixed-batch: running requests, then waiting FCFS until B is spent.
  prefill_first,  ///< tokenspeed default: prefill-only steps while a prompt is queued, else a decode-only step.
};

/// When a sliding group's pages that left the window go back to the pool.
enum class expiry_timing : std::uint8_t {
  every_allocation,  ///< vLLM: before each allocation, blocks [0, (c - W + 1) / R) at c computed tokens.
  own_admission,     ///< tokenspeed: at the request's admission; a decode admits at c - (s - 1).
};

/// Rule sets a preset bounds (bit masks): the plan covers every rule in the set, the simulator
/// replays each one (`concrete_variants`).
enum class window_rule : std::uint8_t {
  fixed = 1,            ///< The group's own window (CSA states: 8).
  grows_with_step = 2,  ///< max(W, base + s) for groups with a step-window base (CSA states: max(8, 4 + s)).
};
enum class first_chunk_lookahead : std::uint8_t {
  none = 1,  ///< 0 lookahead tokens on a new request's first chunk (older vLLM).
  spec = 2,  ///< s - 1 lookahead tokens on it too (newer vLLM).
};

/// How an engine sizes the V4.1 ratio-2 compressor-state ring of a request (groups with
/// `engine_state_ring`; see the top of this file).
enum class state_ring_rule : std::uint8_t {
  window,     ///< The group's window, pages as any sliding group (tokenspeed).
  vllm_pow2,  ///< At least max(8, next power of two >= s + 1) rows (vLLM `CompressorStateCache`).
};

/// How an engine allocates pages: the inputs of both the plan formula and the simulator.
struct allocation_policy {
  /// The registry name of the engine whose rules these are (engines/registry.hpp `find_engine`):
  /// the plan asks that engine value for its pool structure, titles and refusals.
  std::string_view engine = "vllm";
  scheduler_kind scheduler = scheduler_kind::running_first;
  expiry_timing expiry = expiry_timing::every_allocation;
  std::uint8_t window_rules = static_cast<std::uint8_t>(window_rule::fixed);  ///< Set of `window_rule`.
  std::uint8_t first_chunk_lookaheads = 0;  ///< Set of `first_chunk_lookahead` (lookahead engines only).
  bool running_lookahead = false;           ///< Running requests allocate s - 1 lookahead tokens (vLLM).
  bool extent_capped = true;                ///< Tables never cover more than L tokens (vLLM's max_model_len cap).
  bool last_chunk_reserves_step = false;    ///< A prompt's last chunk reserves s more tokens (tokenspeed).
  bool decode_needs_whole_step = false;     ///< A decode runs only with s tokens of budget left (tokenspeed).
  bool overlap = false;                     ///< One more step in flight: frees come back a step late.
  state_ring_rule state_ring = state_ring_rule::window;  ///< V4.1 ratio-2 compressor-state ring.

  [[nodiscard]] constexpr bool has(window_rule r) const { return (window_rules & static_cast<std::uint8_t>(r)) != 0; }
  [[nodiscard]] constexpr bool has(first_chunk_lookahead r) const {
    return (first_chunk_lookaheads & static_cast<std::uint8_t>(r)) != 0;
  }
  /// Tokens in flight per request beyond those computed: s, or 2s with overlap.
  /// (Saturated at INT64_MAX: the plan then reports an overflow, never a wrapped number.)
  [[nodiscard]] constexpr std::int64_t in_flight_tokens(std::int64_t s) const {
    if (!overlap) return s;
    return saturating_mul(s, std::int64_t{2});
  }
};

/// The concrete policies a preset stands for: one per combination of its rule sets (each with
/// a single window rule and, for lookahead engines, a single first-chunk rule). At most 4.
struct policy_variants {
  int count = 0;
  std::array<allocation_policy, 4> items{};
  [[nodiscard]] constexpr const allocation_policy* begin() const { return items.data(); }
  [[nodiscard]] constexpr const allocation_policy* end() const { return items.data() + count; }
};

/// Expands `p`'s rule sets. Throws std::invalid_argument if `p` has no window rule, or has
/// running lookahead without a first-chunk rule.
constexpr policy_variants concrete_variants(const allocation_policy& p) {
  require(p.window_rules != 0 && p.window_rules <= 3, "an allocation policy needs one or two window rules",
          {"window_rules", p.window_rules});
  require(p.first_chunk_lookaheads <= 3, "unknown first-chunk lookahead rule",
          {"first_chunk_lookaheads", p.first_chunk_lookaheads});
  require(!p.running_lookahead || p.first_chunk_lookaheads != 0,
          "an engine with running lookahead needs a first-chunk lookahead rule");
  policy_variants v;
  for (const std::uint8_t w : {std::uint8_t{1}, std::uint8_t{2}}) {
    if ((p.window_rules & w) == 0) continue;
    for (const std::uint8_t f : {std::uint8_t{0}, std::uint8_t{1}, std::uint8_t{2}}) {
      if (f == 0 ? p.first_chunk_lookaheads != 0 : (p.first_chunk_lookaheads & f) == 0) continue;
      allocation_policy q = p;
      q.window_rules = w;
      q.first_chunk_lookaheads = f;
      v.items[static_cast<std::size_t>(v.count++)] = q;
    }
  }
  return v;
}

/// Rows of vLLM's V4.1 ratio-2 compressor-state ring at s tokens per step: max(8, next power of
/// two >= s + 1) (`CompressorStateCache`: max(8, next_pow2(num_spec + 2)), num_spec = s - 1).
/// Saturates at INT64_MAX for s >= 2^62 (the plan then reports an overflow).
constexpr std::int64_t vllm_state_ring_rows(std::int64_t s) {
  constexpr std::int64_t kTop = std::int64_t{1} << 62;
  if (s >= kTop) return std::numeric_limits<std::int64_t>::max();
  std::int64_t ring = 8;
  while (ring < s + 1) ring *= 2;
  return ring;
}

/// The window W in tokens a sliding group keeps under policy `p` at s tokens per step: the
/// group's own window `window_tokens`, or, where `p` has `grows_with_step` and the group has a
/// step-window base (CSA states: 4), the largest of the two: max(W, base + s). A group with an
/// engine state ring (`engine_state_ring`: V4.1 ratio-2 compressor state) under vLLM's rule keeps
/// max(W, `vllm_state_ring_rows(s)`) rows of one token.
constexpr std::int64_t effective_window(std::int64_t window_tokens, std::int64_t step_window_base_tokens,
                                        const allocation_policy& p, std::int64_t s, bool engine_state_ring = false) {
  if (engine_state_ring && p.state_ring == state_ring_rule::vllm_pow2) {
    const std::int64_t ring = vllm_state_ring_rows(s);
    return ring > window_tokens ? ring : window_tokens;
  }
  if (step_window_base_tokens <= 0 || !p.has(window_rule::grows_with_step) ||
      s <= window_tokens - step_window_base_tokens)
    return window_tokens;
  // Saturates for a huge s: the plan then reports an overflow.
  return saturating_add(step_window_base_tokens, s);
}

}  // namespace dsv4::cache
