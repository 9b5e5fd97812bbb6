// dsv4-cache: TensorRT-LLM's admission rule for DeepSeek V4 on KVCacheManagerV2: the capacity
// scheduler's default policy and what one request reserves (in bytes, not blocks per pool group).
//
// Sources and what is not confirmed: docs/engines/trtllm.md ("Admission"). Files (NVIDIA/TensorRT-LLM):
//   ARGS tensorrt_llm/llmapi/llm_args.py (`SchedulerConfig.capacity_scheduler_policy`)
//   CM   tensorrt_llm/_torch/attention/backends/sparse/deepseek_v4/cache_manager.py (index id 70181721244:
//        `get_max_resource_count`, `get_needed_resource_to_completion`, `_get_cache_bytes_for_tokens`)
//   GNE  the PyTorch GuaranteedNoEvict capacity scheduler (index id 53336218421): reserved += needed.
#pragma once

#include <cstdint>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/engines/trtllm/pools.hpp"
#include "dsv4/cache/engines/trtllm/sizing.hpp"

namespace dsv4::cache {

/// `CapacitySchedulerPolicy`: GUARANTEED_NO_EVICT (the default, ARGS `SchedulerConfig`) reserves
/// each request's bytes to completion; MAX_UTILIZATION packs and may evict (not modelled here).
enum class trtllm_capacity_policy : std::uint8_t { guaranteed_no_evict, max_utilization };
inline constexpr trtllm_capacity_policy trtllm_default_capacity_policy = trtllm_capacity_policy::guaranteed_no_evict;

/// The request's state as DeepseekV4CacheManager charges it (CM `_is_context_request`,
/// `_is_generation_request`).
enum class trtllm_request_phase : std::uint8_t { context, generation };

/// Bytes request reserves to completion (CM `get_needed_resource_to_completion` ->
/// `_get_cache_bytes_for_tokens`, no draft tokens): a context request prompt_len x (non-sliding +
/// context SWA per token) + context SWA per request; a generation request (prompt_len +
/// max_new_tokens) x non-sliding + generation SWA per request (its windows, each rounded up to a
/// block). Scratch reuse picks the context figures (`_estimate_swa_cache_size(scratch=...)`).
/// Fails for negative lengths.
constexpr std::uint64_t trtllm_needed_bytes(const trtllm_layout& L, bool scratch_reuse, trtllm_request_phase phase,
                                            std::int64_t prompt_len, std::int64_t max_new_tokens = 0) {
  require(prompt_len >= 0 && max_new_tokens >= 0, "prompt_len and max_new_tokens must be >= 0",
          {"prompt_len", prompt_len}, {"max_new_tokens", max_new_tokens});
  const trtllm_token_costs& c = L.costs;
  if (phase == trtllm_request_phase::context) {
    const std::int64_t per_token =
        c.non_sliding_per_token + (scratch_reuse ? c.context_swa_per_token : c.context_swa_per_token_no_scratch);
    return static_cast<std::uint64_t>(
        checked_add(checked_mul(prompt_len, per_token), scratch_reuse ? c.context_swa_per_request : std::int64_t{0}));
  }
  const std::int64_t total = checked_add(prompt_len, max_new_tokens);
  return static_cast<std::uint64_t>(
      checked_add(checked_mul(total, c.non_sliding_per_token), c.generation_swa_per_request));
}

/// The scheduler's capacity (CM `get_max_resource_count`: `impl.get_quota(GPU_LEVEL)`), bytes: taken
/// here as the StorageManager's effective quota (whether get_quota reports the quota asked or the one
/// raised to the minimum slots was not read).
constexpr std::uint64_t trtllm_max_resource_bytes(const trtllm_sizing& s) { return s.effective_quota; }

/// GUARANTEED_NO_EVICT admission of a context request (GNE `schedule_request`): running generation
/// requests first reserve their bytes unconditionally (the loop stops once reserved >= max); then
/// context requests, first come first served, each admitted while needed <= max - reserved, the
/// first that does not fit ending the step's admissions.
constexpr bool trtllm_admits(std::uint64_t reserved_bytes, std::uint64_t needed_bytes, std::uint64_t max_bytes) {
  return needed_bytes <= max_bytes && reserved_bytes <= max_bytes - needed_bytes;
}

}  // namespace dsv4::cache
