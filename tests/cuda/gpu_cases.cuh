// dsv4-cache GPU checks, shared by the GoogleTest binary (cuda_kernels_test.cu) and the
// dependency-free self test (kernel_selftest.cu). Each case returns "" when it passes, else
// what went wrong. CUDA only.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <string_view>
#include <vector>

#include "../../examples/cuda/round_trip.cuh"
#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/cuda/device_arena.cuh"
#include "dsv4/cache/cuda/kernels.cuh"
#include "dsv4/cache/engines/registry.hpp"

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

/// Round trips (64 rows, one stream) over every region of `layout`, compressor states included:
/// the offsets of every layer, every format on its path with its default writer.
inline std::string every_region(const arena_layout& layout) {
  device_arena arena(layout);
  std::string errors;
  for (int i = 0; i < layout.num_regions; ++i) {
    const pool_region r = layout.region(i);
    sample::round_trip_options o;
    o.max_tokens = 64;
    o.seed = static_cast<std::uint32_t>(100 + i);
    const sample::round_trip_result res = sample::round_trip_any(arena, r, o);
    if (!res.error.empty()) errors += res.error + "\n";
    if (res.tokens == 0) errors += "no token was inserted in region " + std::to_string(i) + "\n";
  }
  return errors;
}

/// Every region of a Flash arena with MXFP4 indexer keys.
inline std::string case_every_region() { return every_region(small_layout(deepseek_v4_flash, indexer_format::mxfp4)); }

/// Every region of a V4.1-Flash arena (v4.1.fp8 windows, v4.1.fp4 compressed KV: generic;
/// v4.indexer_mxfp4 keys: specialized; fp32 compressor states: generic).
inline std::string case_every_region_v41() {
  return every_region(small_layout(deepseek_v4_1_flash, indexer_format::fp8));
}

/// Every region of a V3.2 arena (v3.2.fp8_ds_mla: generic; v3.2.indexer_fp8: specialized).
inline std::string case_every_region_v32() { return every_region(small_layout(deepseek_v3_2, indexer_format::fp8)); }

/// A small plan in engine `engine`'s pool structure (issue 45): 2 requests of 1,024 tokens,
/// 64-token prefill chunks, laid out as the engine lays it (vLLM's block pool, tokenspeed's
/// parent arena of planes).
inline arena_layout small_engine_layout(const model_config& m, const char* engine) {
  const engine_spec& e = *find_engine(engine);
  plan_options o;
  o.context_tokens = 1024;
  o.requests = 2;
  o.prefill_chunk_tokens = 64;
  o.policy = e.policy;
  o.vllm_pools = e.vllm;
  o.sglang_pools = e.sglang;
  o.tokenspeed_pools = e.tokenspeed;
  o.pools = pools_choice::engine;
  return build_arena_layout(m, build_memory_plan(m, o));
}

/// Every region of engine arenas, each filled through one request's block table (round_trip.cuh:
/// the engine's slot mapping on the host and the device, the pages at the engine's offsets and
/// page strides): vLLM for V4-Flash, V4.1-Flash and V3.2, tokenspeed for V4-Flash.
inline std::string case_every_region_engines() {
  std::string errors;
  errors += every_region(small_engine_layout(deepseek_v4_flash, "vllm"));
  errors += every_region(small_engine_layout(deepseek_v4_1_flash, "vllm"));
  errors += every_region(small_engine_layout(deepseek_v3_2, "vllm"));
  errors += every_region(small_engine_layout(deepseek_v4_flash, "tokenspeed"));
  return errors;
}

/// One region on both paths, for every writer of its format: the specialized kernels (where
/// they implement the writer's policy) and the generic ones, each into its own canary-filled
/// arena with the same seed, so the same rows at the same slots; each is checked against the
/// host codec of that writer, and the two regions' bytes must be equal.
inline std::string fast_equals_generic(const arena_layout& layout, const pool_region& r) {
  const int fi = format_index(r.format.name);
  std::string errors;
  std::uint32_t seed = 300;
  for (const format_writer& w : kFormatWriters[static_cast<std::size_t>(fi)]) {
    std::vector<std::uint8_t> bytes[2];
    device_path paths[2] = {};
    for (int generic = 0; generic < 2; ++generic) {
      device_arena arena(layout);
      DSV4_CUDA_CHECK(cudaMemset(arena.data(), kCanary, static_cast<std::size_t>(layout.total_bytes)));
      arena.reset_error_count();
      DSV4_CUDA_CHECK(cudaDeviceSynchronize());
      sample::round_trip_options o;
      o.max_tokens = 2048;
      o.seed = seed;
      o.writer = w.producer;
      o.force_generic = generic == 1;
      const sample::round_trip_result res = sample::round_trip_any(arena, r, o);
      if (!res.error.empty()) errors += res.error + "\n";
      if (res.writer != to_string(w.producer))
        errors += res.format + ": writer " + res.writer + " ran, not the one asked\n";
      paths[generic] = res.path;
      bytes[generic].resize(static_cast<std::size_t>(r.bytes));
      DSV4_CUDA_CHECK(cudaMemcpy(bytes[generic].data(), arena.data() + r.offset_bytes, bytes[generic].size(),
                                 cudaMemcpyDeviceToHost));
    }
    ++seed;
    const bool fast_expected = fast_kernels_support(fast_format(r.format), w.policy);
    if (paths[0] != (fast_expected ? device_path::fast : device_path::generic) || paths[1] != device_path::generic)
      errors += std::string(r.format.name) + " / " + std::string(to_string(w.producer)) + ": unexpected paths\n";
    if (bytes[0] != bytes[1])
      errors += std::string(r.format.name) + " / " + std::string(to_string(w.producer)) +
                ": the specialized and generic kernels wrote different pages\n";
  }
  return errors;
}

/// The first region of `layout` whose format is `name`. Throws std::invalid_argument if none is.
inline pool_region first_region_of(const arena_layout& layout, std::string_view name) {
  for (int i = 0; i < layout.num_regions; ++i)
    if (layout.region(i).format.name == name) return layout.region(i);
  fail("the arena has no region of this format");
}

/// `fast_equals_generic` for every specialized format: Flash's fp8_ds_mla (SWA) and FP8 indexer
/// keys, Flash's MXFP4 keys, V3.2's FP8 keys.
inline std::string case_fast_equals_generic() {
  const arena_layout fp8 = small_layout(deepseek_v4_flash, indexer_format::fp8);
  const arena_layout mx = small_layout(deepseek_v4_flash, indexer_format::mxfp4);
  const arena_layout v32 = small_layout(deepseek_v3_2, indexer_format::fp8);
  return fast_equals_generic(fp8, fp8.find(kSwa, 0)) + fast_equals_generic(fp8, fp8.find(kC4Kv, 2, 1)) +
         fast_equals_generic(mx, mx.find(kC4Kv, 2, 1)) +
         fast_equals_generic(v32, first_region_of(v32, "v3.2.indexer_fp8"));
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
          {"every_region", case_every_region},
          {"every_region_v41", case_every_region_v41},
          {"every_region_v32", case_every_region_v32},
          {"every_region_engines", case_every_region_engines},
          {"fast_equals_generic", case_fast_equals_generic}};
}

}  // namespace dsv4::cache::cuda::gpu_test
