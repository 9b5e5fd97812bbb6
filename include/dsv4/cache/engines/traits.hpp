// dsv4-cache: what an engine is called, how it derives its KV budget and what the planner does
// not model of it: the vocabulary every engine header fills in (engines/registry.hpp lists them).
#pragma once

#include <cstdint>
#include <string_view>

#include "dsv4/cache/group_spec.hpp"
#include "dsv4/cache/model.hpp"
#include "dsv4/cache/weights.hpp"

namespace dsv4::cache {

/// What an engine's default memory fraction is derived from (kv_budget.hpp).
struct budget_inputs {
  double gpu_mib = 0;             ///< The GPU's memory as the engine reads it, MiB.
  int tp = 1, pp = 1, world = 1;  ///< Tensor and pipeline parallel sizes; GPUs of the mapping.
  int prefill_chunk = 0;          ///< The step budget given (0: the engine's default).
  bool dp_attention = false;
};

/// What an engine is called, how it derives its KV budget from the GPU and what the planner does
/// not model of it (refused with the reason). One value per engine, shared by its version presets.
struct engine_traits {
  std::string_view title{};                     ///< In a sentence: "vLLM", "tokenspeed", "SGLang".
  std::string_view running_cap{};               ///< Its running cap by name: "vLLM's max_num_seqs".
  weight_engine weights = weight_engine::vllm;  ///< How it splits the weights over ranks (weights.hpp).
  /// Its memory-fraction flag ("--gpu-memory-utilization"; its counterpart of the other engines is
  /// refused naming this one) and where its default is read.
  std::string_view fraction_flag{};
  std::string_view fraction_reference{};
  /// The fraction is of the GPU's total memory (vLLM, `vllm_kv_budget`); else of what is free
  /// after the weights (`free_fraction_kv_budget`).
  bool fraction_of_total = false;
  bool fixed_kv_bytes = false;  ///< Takes a fixed KV budget (vLLM's --kv-cache-memory-bytes).
  double (*default_fraction)(const budget_inputs&) = nullptr;  ///< Its default fraction.
  /// Its pools are planned with --swa-full-tokens-ratio (SGLang's ratio pools); elsewhere refused.
  bool takes_swa_ratio = false;
  /// Its running cap is per attention-DP worker with DP attention (SGLang: max_running_requests // dp).
  bool running_cap_per_attention_dp = false;
  /// What the planner does not model of its own pools (each refused, naming it): decode context
  /// parallelism, PD disaggregation, a step budget below `min_prefill_chunk` tokens, and --simulate
  /// (its occupancy replayed elsewhere). Pipeline stages: `engine_spec::stages_modelled`.
  bool models_dcp = true, models_pd = true, simulates = true;
  std::string_view overlap_off_flag{};  ///< Its own flag for --no-overlap, named when refused.
  std::int64_t min_prefill_chunk = 1;
  std::string_view min_prefill_chunk_reason{};
  std::string_view simulate_refusal{};
  /// Whether its own pool structure is modelled for a `family` model at decode context
  /// parallelism `dcp` (else the plan prices own pools and says so).
  bool (*own_structure_models)(model_family family, std::int64_t dcp) = nullptr;
  std::string_view own_structure_scope{};  ///< Where it is modelled, said with own pools ("" : everywhere).
  /// Why the engine's own pools refuse a plan of a `family` model at DCP `dcp`, as a prefill or
  /// decode instance (`colocated` false), or nullptr.
  const char* (*refusal)(model_family family, std::int64_t dcp, bool colocated) = nullptr;
  /// Why it does not store pool `pool` of group `g` as the library lays it out, or nullptr.
  const char* (*format_mismatch)(const paged_cache_group_spec& g, int pool) = nullptr;
};

}  // namespace dsv4::cache
