// dsv4-cache: TensorRT-LLM (its PyTorch backend, DeepseekV4CacheManager on KVCacheManagerV2) as
// an engine value: its pool structure (pool groups by life cycle), its defaults, what the planner
// calls it and what it does not model of it. Sources and what is not confirmed:
// docs/engines/trtllm.md; each value cites its file (NVIDIA/TensorRT-LLM).
#pragma once

#include <cstdint>
#include <string_view>

#include "dsv4/cache/engines/defaults.hpp"
#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/traits.hpp"
#include "dsv4/cache/engines/trtllm/pools.hpp"
#include "dsv4/cache/model.hpp"
#include "dsv4/cache/policy.hpp"

namespace dsv4::cache {

/// TensorRT-LLM's pool structure: one pool group per life cycle (window 128: SWA and the HCA
/// compressor state; window 8: the CSA states; none: compressed KV and index keys), each with its
/// own block count sized from one quota by the typical step's ratio; a block (slot) is allocated
/// in every pool of its group at once (engines/trtllm/pools.hpp, sizing.hpp).
inline constexpr pool_structure_traits trtllm_life_cycle_pools{
    .name = "life_cycle_pools",
    .title = "TensorRT-LLM's pool groups",
    .overhead = "TensorRT-LLM's pool groups: slots split by its typical step, its minimum slots, 2-32 MiB granules",
    .summary = "pool groups by life cycle, blocks of 128 tokens",
    .legend =
        "(rows, tokens: per page of the library's layout; window: tokens a sliding group keeps per request; page B: "
        "one page of one layer, all pools; pages/L: the slots of its pool group (TensorRT-LLM's quota split); bytes: "
        "what its pages take of those slots{sim})\n",
    .sim_legend = "",
    .unplaced_why =
        "its pool groups coalesce every layer's buffers of one size into one pool, "
        "include/dsv4/cache/engines/trtllm/pools.hpp",
};

/// TensorRT-LLM's allocation rules as the planner's vocabulary has them. Its plan is its
/// StorageManager's (the smallest quota whose slots hold N requests of L), not the page formula;
/// the step-by-step replay (--simulate) does not model it (`trtllm_traits`).
inline constexpr allocation_policy trtllm_policy{
    .engine = "trtllm",
    .scheduler = scheduler_kind::running_first,
    .expiry = expiry_timing::every_allocation,
    .window_rules = static_cast<std::uint8_t>(window_rule::fixed),
    .first_chunk_lookaheads = 0,
    .running_lookahead = false,
    .extent_capped = true,
    .last_chunk_reserves_step = false,
    .decode_needs_whole_step = false,
    .overlap = true,
};

/// What TensorRT-LLM does with an input left out (files of NVIDIA/TensorRT-LLM; llm_args.py read
/// at 0004396720054fd8e205cbf616f21f0b57c6b412, BaseLlmArgs' limits in the stored version index id
/// 55143598664, the model defaults in modeling_deepseekv4.py @ 02586bf0b0f59d29967bf4aa27d5714a0b4788f6).
inline constexpr engine_defaults trtllm_defaults{
    .overlap = true,
    .overlap_off_modelled = true,
    .overlap_name = "overlap scheduling",
    .overlap_ref =
        "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py@0004396 TorchLlmArgs.disable_overlap_scheduler "
        "(default False)",
    .draft_layer = false,
    .draft_layer_ref = "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py@0004396 speculative_config (default None)",
    .tokens_per_step = 1,
    .tokens_per_step_ref =
        "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py@0004396 speculative_config (default None)",
    .max_running = 2048,
    .max_running_speculative = 0,
    .max_running_name = "max_batch_size",
    .max_running_ref =
        "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py BaseLlmArgs.max_batch_size (index id "
        "55143598664)",
    .prefill_chunk = 8192,
    .prefill_chunk_name = "max_num_tokens",
    .prefill_chunk_ref =
        "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py BaseLlmArgs.max_num_tokens (index id "
        "55143598664)",
    .block_tokens = 128,
    .block_tokens_ref =
        "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/models/modeling_deepseekv4.py@02586bf0 "
        "get_model_defaults (tokens_per_block 128)",
    .indexer_mxfp4 = false,
    .indexer_ref =
        "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py@0004396 "
        "DeepSeekV4SparseAttentionConfig.indexer_k_dtype (fp8 below SM100)",
    .mxfp4_indexer_min_sm = 10,
    .mxfp4_indexer_rule = "indexer_k_dtype='fp4' requires SM>=100 (Blackwell)",
    .mxfp4_indexer_ref = "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py@0004396 DeepSeekV4SparseAttentionConfig",
    .v41_formats_follow_gpu = false,
    .v41_formats_ref = "",
    .swa_full_tokens_ratio = 0,
    .swa_ratio_ref = "",
    .has_dp_attention = false,
    .dp_attention_ref = "",
};

/// TensorRT-LLM as the planner names it, derives its budget and refuses (engines/traits.hpp).
inline constexpr engine_traits trtllm_traits{
    .title = "TensorRT-LLM",
    .running_cap = "TensorRT-LLM's max_batch_size",
    .weights = weight_engine::vllm,  // its weight split over TP / EP ranks is not read: vLLM's is assumed
    .fraction_flag = "--free-gpu-memory-fraction",
    .fraction_reference =
        "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py@0004396 "
        "KvCacheConfig.free_gpu_memory_fraction",
    .fraction_of_total = false,
    .fixed_kv_bytes = false,
    .default_fraction = [](const budget_inputs&) { return 0.9; },
    .takes_swa_ratio = false,
    .running_cap_per_attention_dp = false,
    .models_dcp = false,
    .models_pd = false,
    .simulates = false,
    .overlap_off_flag = "disable_overlap_scheduler",
    .min_prefill_chunk = 1,
    .min_prefill_chunk_reason = "",
    .simulate_refusal =
        "--simulate replays vLLM's and tokenspeed's allocators step by step; TensorRT-LLM's KVCacheManagerV2 is "
        "not replayed so: its engine report gives its GUARANTEED_NO_EVICT admission on its pool groups",
    // Its pool groups or nothing: a model they are not modelled for is refused (`trtllm_check_model`).
    .own_structure_models = [](model_family, std::int64_t) { return true; },
    .own_structure_scope = "",
    .refusal = [](model_family, std::int64_t, bool colocated) -> const char* {
      if (!colocated)
        return "TensorRT-LLM's disaggregated serving (its KV transceiver) is not modelled: plan it colocated";
      return nullptr;
    },
    .format_mismatch = trtllm_format_mismatch};

/// Refuses a model TensorRT-LLM's V4 manager is not modelled for (V4.1: its _add_v41_cache_layers
/// path; V3.2: the V1 DSACacheManager), as `trtllm_build_layout` does.
constexpr void trtllm_check_model(const model_config& m) {
  require(m.family == model_family::v4,
          "TensorRT-LLM is modelled for DeepSeek V4 only (DeepseekV4CacheManager on KVCacheManagerV2; its V4.1 path "
          "and V3.2's DSACacheManager are not)",
          {"family", static_cast<int>(m.family)});
}

}  // namespace dsv4::cache
