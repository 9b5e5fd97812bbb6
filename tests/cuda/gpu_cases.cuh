// dsv4-cache GPU checks, shared by the GoogleTest binary (cuda_kernels_test.cu) and the
// dependency-free self test (kernel_selftest.cu). Each case returns "" when it passes, else
// what went wrong. CUDA only.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "../../examples/cuda/round_trip.cuh"
#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/cuda/device_arena.cuh"
#include "dsv4/cache/cuda/kernels.cuh"

namespace dsv4::cache::cuda::gpu_test {

inline constexpr std::uint8_t kCanary = 0xA5;

/// A small plan (about 130 MiB for Flash): 2 requests of 1,024 tokens, 256-token prefill chunks.
inline arena_layout small_layout(const model_config& m, indexer_format f) {
  plan_options o;
  o.context_tokens = 1024;
  o.requests = 2;
  o.prefill_chunk_tokens = 256;
  o.indexer = f;
  return build_arena_layout(m, o);
}

/// Round trips over `regions` of a fresh arena filled with canary bytes, on 1 and 4 streams.
inline std::string run_regions(const arena_layout& layout, const std::vector<pool_region>& regions) {
  device_arena arena(layout);
  DSV4_CUDA_CHECK(cudaMemset(arena.data(), kCanary, static_cast<std::size_t>(layout.total_bytes)));
  arena.reset_error_count();
  DSV4_CUDA_CHECK(cudaDeviceSynchronize());
  std::string errors;
  std::uint32_t seed = 7;
  for (const pool_region& r : regions)
    for (int streams : {1, 4}) {
      sample::round_trip_options o;
      o.streams = streams;
      o.seed = seed++;
      const sample::round_trip_result res = sample::round_trip_any(arena, r, o);
      if (!res.error.empty()) errors += res.error + "\n";
      if (res.tokens == 0) errors += "no token was inserted in layer " + std::to_string(r.layer) + "\n";
    }
  return errors;
}

constexpr group_id kSwa{group_kind::swa_kv, 0};
constexpr group_id kC4Kv{group_kind::compressed_kv, 4};
constexpr group_id kC128Kv{group_kind::compressed_kv, 128};

/// fp8_ds_mla pools: SWA (64-row pages, first and last region of the group), CSA KV, and HCA
/// KV (2-row pages, 1,728 B) of Flash.
inline std::string case_fp8_ds_mla() {
  const arena_layout a = small_layout(deepseek_v4_flash, indexer_format::fp8);
  return run_regions(a, {a.find(kSwa, 0), a.find(kSwa, 43), a.find(kC4Kv, 2, 0), a.find(kC128Kv, 41, 0)});
}

/// Indexer FP8 keys of Flash (first and last CSA layer) and of Pro (last CSA layer).
inline std::string case_indexer_fp8() {
  const arena_layout a = small_layout(deepseek_v4_flash, indexer_format::fp8);
  std::string e = run_regions(a, {a.find(kC4Kv, 2, 1), a.find(kC4Kv, 42, 1)});
  const arena_layout p = small_layout(deepseek_v4_pro, indexer_format::fp8);
  return e + run_regions(p, {p.find(kC4Kv, 60, 1)});
}

/// Indexer MXFP4 keys of Flash (first and last CSA layer) and Pro's HCA KV of layer 0.
inline std::string case_indexer_mxfp4() {
  const arena_layout a = small_layout(deepseek_v4_flash, indexer_format::mxfp4);
  std::string e = run_regions(a, {a.find(kC4Kv, 2, 1), a.find(kC4Kv, 42, 1)});
  const arena_layout p = small_layout(deepseek_v4_pro, indexer_format::mxfp4);
  return e + run_regions(p, {p.find(kC4Kv, 2, 1), p.find(kC128Kv, 0, 0)});
}

/// Every fp8_ds_mla / indexer region of a Flash arena, one stream: offsets of every layer.
inline std::string case_every_region() {
  const arena_layout a = small_layout(deepseek_v4_flash, indexer_format::mxfp4);
  device_arena arena(a);
  std::string errors;
  for (int i = 0; i < a.num_regions; ++i) {
    const pool_region r = a.region(i);
    if (r.format.role == format_role::state) continue;
    sample::round_trip_options o;
    o.max_tokens = 64;
    o.seed = static_cast<std::uint32_t>(100 + i);
    const sample::round_trip_result res = sample::round_trip_any(arena, r, o);
    if (!res.error.empty()) errors += res.error + "\n";
  }
  return errors;
}

/// A named case.
struct gpu_case {
  const char* name;
  std::string (*run)();
};

inline std::vector<gpu_case> all_cases() {
  return {{"fp8_ds_mla", case_fp8_ds_mla},
          {"indexer_fp8", case_indexer_fp8},
          {"indexer_mxfp4", case_indexer_mxfp4},
          {"every_region", case_every_region}};
}

}  // namespace dsv4::cache::cuda::gpu_test
