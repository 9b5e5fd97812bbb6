// dsv4-cache: the KV-cache budget per GPU as each engine derives it from the GPU's memory, its
// memory fraction, the weights on the GPU and the runtime's own use.
//
//   vLLM        kv = gpu x gpu_memory_utilization - (weights + activation peak + non-torch)
//               (the worker's requested_memory = total x utilization, less the profiled non-KV
//               memory); --kv-cache-memory-bytes replaces the whole chain ("ignores
//               gpu_memory_utilization": vllm-project/vllm vllm/config/cache.py @ 002f10e0).
//   SGLang      kv = free_after_weights - free_before_weights x (1 - mem_fraction_static)
//               = free_before x fraction - weights - runtime (kv_cache_configurator.py
//               `_profile_available_bytes`, docs/engines/sglang-pools.md section 2)
//   tokenspeed  the same with gpu_memory_utilization (lightseekorg/tokenspeed @ f4d8ec6e
//               runtime/layers/attention/utils.py `profile_available_cache_memory_bytes`)
// free_before_weights is the GPU's free memory after the CUDA context is made; this library takes
// the GPU's total for it and counts the context in the runtime reserve. Plain C++20, constexpr.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/platform.hpp"
#include "dsv4/cache/weights.hpp"

namespace dsv4::cache {

/// vLLM's default --gpu-memory-utilization: 0.92 (vllm-project/vllm vllm/config/cache.py @
/// 002f10e0: `gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)`; 0.9 in older
/// releases).
inline constexpr double kVllmDefaultGpuMemoryUtilization = 0.92;

/// tokenspeed's default gpu_memory_utilization by world size (tp x dp x pp GPUs of the mapping):
/// >= 16: 0.79, >= 8: 0.81, >= 4: 0.95, >= 2: 0.87, else 0.88 (lightseekorg/tokenspeed @
/// f4d8ec6e python/tokenspeed/runtime/utils/server_args.py lines 461-474). Throws
/// std::invalid_argument for a world size < 1.
constexpr double tokenspeed_default_gpu_memory_utilization(int world_size) {
  require(world_size >= 1, "the world size (GPUs) must be >= 1", {"world_size", world_size});
  if (world_size >= 16) return 0.79;
  if (world_size >= 8) return 0.81;
  if (world_size >= 4) return 0.95;
  if (world_size >= 2) return 0.87;
  return 0.88;
}

/// SGLang's default --mem-fraction-static on NVIDIA GPUs: round((gpu_mem - reserved) / gpu_mem, 3)
/// with reserved = 512 + max(chunked_prefill, 2048) x 1.5 + tp x pp / 8 x 1024 + cuda-graph
/// max_bs x 2 MB, raised to at least 10,240 MB when gpu_mem > 60 GiB (server_args.py lines
/// 5006-5041 at sgl-project/sglang cce0a124, read in docs/engines/sglang-pools.md section 2-3).
/// chunked_prefill 0 = SGLang's default from the GPU memory (< 20 GiB, < 35: 2048; < 60: 4096;
/// < 160: 8192; else 16,384); max_bs 256 if tp < 4 else 512 (from 60 GiB up; 160 below).
/// `gpu_mem_mib` is what SGLang reads: nvidia-smi's total in MiB (a few hundred MiB above CUDA's
/// total; the third decimal may differ by one if CUDA's is given). Throws std::invalid_argument
/// for DP attention (its extra graph reserve is not modelled: give --mem-fraction-static), a
/// size < 1, or a reserve that leaves nothing.
constexpr double sglang_default_mem_fraction_static(double gpu_mem_mib, int tp, int pp, int chunked_prefill = 0,
                                                    bool dp_attention = false) {
  require(tp >= 1 && pp >= 1, "--tp and --pp must be >= 1", {"tp", tp}, {"pp", pp});
  require(!dp_attention,
          "SGLang's default --mem-fraction-static under --enable-dp-attention adds a CUDA-graph reserve "
          "not modelled here: give --mem-fraction-static");
  require(gpu_mem_mib > 0, "the GPU memory must be > 0");
  const double gib = gpu_mem_mib / 1024.0;
  if (chunked_prefill == 0) chunked_prefill = gib < 35 ? 2048 : gib < 60 ? 4096 : gib < 160 ? 8192 : 16384;
  require(chunked_prefill > 0, "--chunked-prefill-size must be > 0", {"chunked_prefill", chunked_prefill});
  const int max_bs = gib < 60 ? 160 : (tp < 4 ? 256 : 512);
  double reserved =
      512.0 + (chunked_prefill > 2048 ? chunked_prefill : 2048) * 1.5 + tp * pp / 8.0 * 1024.0 + max_bs * 2.0;
  if (gib > 60 && reserved < 10240.0) reserved = 10240.0;
  require(reserved < gpu_mem_mib, "the GPU is smaller than SGLang's static reserve");
  const double f = (gpu_mem_mib - reserved) / gpu_mem_mib;
  // round(f, 3) as Python rounds a positive value; std::round is not constexpr before C++23
  const double scaled = f * 1000.0;
  auto whole = static_cast<std::int64_t>(scaled);
  if (scaled - static_cast<double>(whole) >= 0.5) ++whole;
  return static_cast<double>(whole) / 1000.0;
}

/// An estimate of what an engine's runtime holds on one GPU besides the weights and the KV cache.
/// Terms (bytes): persistent buffers the V4 model allocates (vLLM deepseek_v4.py @ 023da1fc:
/// `topk_indices_buffer` T x index_topk x 4, `_mtp_hidden_buffer` T x hc_mult x hidden x 2),
/// the activation peak of a T-token forward (four live copies of the hc_mult-stream residual,
/// T x hc_mult x hidden x 2 x 4, plus the MoE's dispatched tokens T x top-k x hidden x 2 x 2),
/// the sampler's logits (S x vocab x 4), and a non-torch allowance of 1 GiB (CUDA context, NCCL
/// and cuBLAS workspaces: assumed, not measured). T = max batched tokens (chunked prefill), S =
/// max sequences. An estimate: the engines measure theirs in a profiling run.
struct runtime_reserve {
  std::int64_t persistent_buffers = 0;
  std::int64_t activation_peak = 0;
  std::int64_t logits = 0;
  std::int64_t non_torch = 0;
  [[nodiscard]] constexpr std::int64_t total() const {
    return checked_add(checked_add(persistent_buffers, activation_peak), checked_add(logits, non_torch));
  }
};

/// The non-torch allowance of `estimate_runtime_reserve`: 1 GiB (assumed).
inline constexpr std::int64_t kNonTorchAllowanceBytes = std::int64_t{1} << 30;

/// `runtime_reserve` for `c` (its `arch.index_topk`) with `max_batched_tokens` T and `max_seqs` S.
/// Throws std::invalid_argument naming the value for T or S < 1, or naming why for a model without
/// weight fields.
constexpr runtime_reserve estimate_runtime_reserve(const model_config& c, std::int64_t max_batched_tokens,
                                                   std::int64_t max_seqs) {
  detail::require_arch(c);
  require(max_batched_tokens >= 1, "max batched tokens must be >= 1", {"max_batched_tokens", max_batched_tokens});
  require(max_seqs >= 1, "max sequences must be >= 1", {"max_seqs", max_seqs});
  const model_arch& a = c.arch;
  const int index_topk = a.index_topk;
  const std::int64_t t = max_batched_tokens;
  const std::int64_t stream = checked_mul(std::int64_t{a.hc_mult}, std::int64_t{a.hidden_size});
  runtime_reserve r;
  r.persistent_buffers = checked_add(checked_mul(checked_mul(t, std::int64_t{index_topk}), std::int64_t{4}),
                                     checked_mul(checked_mul(t, stream), std::int64_t{2}));
  r.activation_peak = checked_add(
      checked_mul(checked_mul(t, stream), std::int64_t{8}),
      checked_mul(checked_mul(checked_mul(t, std::int64_t{a.num_experts_per_tok}), std::int64_t{a.hidden_size}),
                  std::int64_t{4}));
  r.logits = checked_mul(checked_mul(max_seqs, std::int64_t{a.vocab_size}), std::int64_t{4});
  r.non_torch = kNonTorchAllowanceBytes;
  return r;
}

/// The chain from a GPU to its KV budget. `kv_bytes` may be <= 0: the weights and reserve do not
/// leave room (the verdict: does not fit).
struct kv_budget {
  std::int64_t gpu_bytes = 0;      ///< the GPU's memory as the runtime reports it
  double fraction = 0;             ///< the engine's memory fraction
  std::int64_t usable_bytes = 0;   ///< floor(gpu_bytes x fraction)
  std::int64_t weights_bytes = 0;  ///< weights on the fullest GPU
  std::int64_t reserve_bytes = 0;  ///< runtime reserve (estimate or given)
  std::int64_t kv_bytes = 0;       ///< usable - weights - reserve (a fixed budget: as given)
  [[nodiscard]] constexpr bool weights_fit() const { return weights_bytes <= usable_bytes; }
  /// A KV budget > 0 that fits beside the weights and reserve in the usable bytes (always so for a
  /// derived budget; a fixed one, `vllm_fixed_kv_budget`, may ask for more than the GPU holds: vLLM
  /// then fails to allocate it at startup). A chain without a GPU (0 bytes) checks the budget only.
  [[nodiscard]] constexpr bool fits() const {
    return kv_bytes > 0 && (gpu_bytes == 0 || kv_bytes <= usable_bytes - weights_bytes - reserve_bytes);
  }
};

namespace detail {
constexpr kv_budget fraction_chain(std::int64_t gpu_bytes, double fraction, std::int64_t weights, std::int64_t reserve,
                                   const char* flag) {
  require(gpu_bytes > 0, "the GPU memory must be > 0 bytes", {"gpu_bytes", gpu_bytes});
  if (!(fraction > 0.0 && fraction <= 1.0)) fail(flag);
  require(weights >= 0 && reserve >= 0, "weights and reserve must be >= 0 bytes", {"weights", weights},
          {"reserve", reserve});
  kv_budget b;
  b.gpu_bytes = gpu_bytes;
  b.fraction = fraction;
  b.usable_bytes = static_cast<std::int64_t>(static_cast<double>(gpu_bytes) * fraction);
  b.weights_bytes = weights;
  b.reserve_bytes = reserve;
  b.kv_bytes = b.usable_bytes - weights - reserve;  // all < 2^62: no overflow
  return b;
}
}  // namespace detail

/// vLLM: gpu_bytes x gpu_memory_utilization - weights - reserve. Throws std::invalid_argument for
/// a utilization outside (0, 1] (as vLLM's `gt=0, le=1`), a GPU of 0 bytes, negative weights.
constexpr kv_budget vllm_kv_budget(std::int64_t gpu_bytes, double gpu_memory_utilization, std::int64_t weights,
                                   std::int64_t reserve) {
  return detail::fraction_chain(gpu_bytes, gpu_memory_utilization, weights, reserve,
                                "--gpu-memory-utilization must be in (0, 1] (vLLM: gt=0, le=1)");
}

/// SGLang (mem_fraction_static) and tokenspeed (gpu_memory_utilization): free_before x fraction -
/// weights - reserve, free_before taken as `gpu_bytes`. Errors as `vllm_kv_budget`.
constexpr kv_budget free_fraction_kv_budget(std::int64_t gpu_bytes, double fraction, std::int64_t weights,
                                            std::int64_t reserve) {
  return detail::fraction_chain(gpu_bytes, fraction, weights, reserve, "the memory fraction must be in (0, 1]");
}

/// vLLM --kv-cache-memory-bytes: the KV budget as given, whatever the utilization (vLLM: "ignores
/// gpu_memory_utilization"); with `gpu_bytes` > 0 it `fits()` only beside the weights on that GPU.
/// Throws std::invalid_argument for a value < 1.
constexpr kv_budget vllm_fixed_kv_budget(std::int64_t kv_cache_memory_bytes, std::int64_t gpu_bytes = 0,
                                         std::int64_t weights = 0) {
  require(kv_cache_memory_bytes >= 1, "--kv-cache-memory-bytes must be >= 1",
          {"kv_cache_memory_bytes", kv_cache_memory_bytes});
  kv_budget b;
  b.gpu_bytes = gpu_bytes;
  b.fraction = 0;
  b.usable_bytes = gpu_bytes;
  b.weights_bytes = weights;
  b.kv_bytes = kv_cache_memory_bytes;
  return b;
}

}  // namespace dsv4::cache
