// dsv4-cache: an engine's defaults as a value: what each engine does with an input its operator
// leaves out (async / overlap scheduling, the draft model's MTP layers, speculative tokens, the
// running cap, the step's token budget, block size, index-key format, SGLang's SWA ratio), each
// with the engine code that sets it. Each engine's header defines its value (engines/vllm/engine.hpp
// `vllm_defaults`, engines/tokenspeed/engine.hpp `tokenspeed_defaults`, engines/sglang/engine.hpp
// `sglang_defaults`); engines/registry.hpp gives every version preset its own.
#pragma once

#include <cstdint>
#include <string_view>

namespace dsv4::cache {

/// What an engine does with an input its operator leaves out, each with where the engine sets it
/// ("owner/repo path@commit symbol"). One value per engine version preset (engines/registry.hpp
/// `engine_spec::defaults`); the planner (tools/include/dsv4/tools/planner_report.hpp) and the
/// Python package (through the planner's flags) take every absent input from here.
struct engine_defaults {
  /// Async (overlap) scheduling: one more step in flight. vLLM: `async_scheduling` (pipeline
  /// parallel 1); tokenspeed and SGLang: their overlap scheduler.
  bool overlap = false;
  /// Whether the planner models the engine with overlap off (SGLang: its overlap scheduler only).
  bool overlap_off_modelled = true;
  std::string_view overlap_name;  ///< "async scheduling", "overlap scheduling".
  std::string_view overlap_ref;
  /// A draft model whose MTP layers keep caches: only with speculative decoding, off by default.
  bool draft_layer = false;
  std::string_view draft_layer_ref;
  /// Tokens per decode step: 1 (no speculative tokens) unless speculative decoding is configured.
  std::int64_t tokens_per_step = 1;
  std::string_view tokens_per_step_ref;
  /// Cap on running requests (0: none modelled), and with speculative decoding (s > 1).
  std::int64_t max_running = 0;
  std::int64_t max_running_speculative = 0;
  std::string_view max_running_name;  ///< "max_num_seqs", "max_running_requests".
  std::string_view max_running_ref;
  /// A scheduler step's token budget (the prefill chunk).
  std::int64_t prefill_chunk = 8192;
  std::string_view prefill_chunk_name;  ///< "max_num_batched_tokens", "chunked_prefill_size".
  std::string_view prefill_chunk_ref;
  /// Tokens per block of the full-history (compressed) caches for DeepSeek V4.
  std::int64_t block_tokens = 256;
  std::string_view block_tokens_ref;
  /// DeepSeek V4 index keys: false FP8 (132 B), true MXFP4 (68 B).
  bool indexer_mxfp4 = false;
  std::string_view indexer_ref;
  /// The lowest SM major version the engine takes MXFP4 index keys on (0: any GPU).
  int mxfp4_indexer_min_sm = 0;
  std::string_view mxfp4_indexer_rule;  ///< The engine's refusal, quoted.
  std::string_view mxfp4_indexer_ref;
  /// DeepSeek V4.1: whether the default format set follows the GPU (the V4.1 records, MXFP4 index
  /// keys, from SM `mxfp4_indexer_min_sm` on; the V4 rows below), and where the engine decides.
  bool v41_formats_follow_gpu = false;
  std::string_view v41_formats_ref;
  /// SGLang's --swa-full-tokens-ratio for DeepSeek V4 (0: not the engine's input).
  double swa_full_tokens_ratio = 0;
  std::string_view swa_ratio_ref;
  /// Whether `--enable-dp-attention` (data-parallel attention inside the TP group) is an input.
  bool has_dp_attention = false;
  std::string_view dp_attention_ref;

  /// The running cap at s tokens per step.
  [[nodiscard]] constexpr std::int64_t max_running_at(std::int64_t s) const {
    return s > 1 && max_running_speculative > 0 ? max_running_speculative : max_running;
  }
};

}  // namespace dsv4::cache
