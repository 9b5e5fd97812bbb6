// dsv4-cache: what TensorRT-LLM logs and refuses at startup for a DeepSeek V4 KV cache
// (KVCacheManagerV2 + DeepseekV4CacheManager).
//
// Format strings, with their sources, and the lines not reproduced: docs/engines/trtllm.md.
//   V2  tensorrt_llm/_torch/pyexecutor/kv_cache/kv_cache_manager_v2.py (KVCacheManagerV2.__init__;
//       stored copies index ids 56579920106 and 56023105518)
//   CM  tensorrt_llm/_torch/attention/backends/sparse/deepseek_v4/cache_manager.py (index id 70181721244,
//       `_format_kv_cache_pool_lifecycle_entry`; base `_log_kv_cache_pool_lifecycle_mapping` in V2)
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "dsv4/cache/engines/trtllm/pools.hpp"
#include "dsv4/cache/engines/trtllm/sizing.hpp"

namespace dsv4::cache {

/// Python's repr of a float `x` in [1e-4, 1e16) (the f-string `{x}`): the shortest digits that
/// read back as `x`, in fixed notation, ".0" added to a whole number ("60.0", "1.5", "0.123").
inline std::string trtllm_py_float(double x) {
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed);
  require(r.ec == std::errc{}, "float does not fit 64 characters");
  std::string s(buf, r.ptr);
  if (s.find('.') == std::string::npos) s += ".0";
  return s;
}

/// `{bytes / (1 << 30)}GiB` as the V2 lines print it: "60.0GiB".
inline std::string trtllm_gib(std::uint64_t bytes) {
  return trtllm_py_float(static_cast<double>(bytes) / static_cast<double>(kTrtllmGiB)) + "GiB";
}

/// One role-to-pool line (CM `_format_kv_cache_pool_lifecycle_entry`, V4 path), without its last
/// field: "deepseek_role=SWA, compress_ratio=1, role=deepseek_v4_swa, pool_group_id=1, lifecycle_id=0".
/// TensorRT-LLM continues the line with ", lifecycle=" and the repr of the C++ life-cycle object,
/// which was not read: not reproduced. (An older stored copy, index id 55130276301, omits "role=".)
inline std::string trtllm_role_mapping_entry(trtllm_attention_type t, int ratio, int pool_group, int life_cycle_id) {
  return "deepseek_role=" + std::string(trtllm_type_name(t)) + ", compress_ratio=" + std::to_string(ratio) +
         ", role=" + std::string(trtllm_data_role(t)) + ", pool_group_id=" + std::to_string(pool_group) +
         ", lifecycle_id=" + std::to_string(life_cycle_id);
}

/// The role-to-pool lines of `L` for model `c` (V2 `_log_kv_cache_pool_lifecycle_mapping`): the
/// header "DeepseekV4CacheManager role-to-pool/lifecycle mapping:" then one entry per distinct
/// (type, ratio), in the order of the manager layers (model layer ascending, CM `_add_v4_cache_layers`
/// order within a layer) and of their buffers (entries deduplicated as an OrderedDict).
inline std::vector<std::string> trtllm_role_mapping_lines(const model_config& c, const trtllm_layout& L) {
  std::vector<std::string> out{"DeepseekV4CacheManager role-to-pool/lifecycle mapping:"};
  std::array<bool, detail::kTrtllmRoleKeys> seen{};
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const int r = trtllm_ratio(c.compress_ratios[static_cast<std::size_t>(l)]);
    std::array<detail::trtllm_manager_layer, 3> m{};
    const int k = detail::trtllm_manager_layers_of(l, r, c.sliding_window, m);
    for (int j = 0; j < k; ++j) {
      const detail::trtllm_manager_layer& ml = m[static_cast<std::size_t>(j)];
      const int pg = L.group_of_window(ml.window);
      for (int b = 0; b < ml.num_types; ++b) {
        const trtllm_attention_type t = ml.types[static_cast<std::size_t>(b)];
        const std::size_t key = detail::trtllm_role_key(static_cast<int>(t), r);
        if (seen[key]) continue;
        seen[key] = true;
        out.push_back(trtllm_role_mapping_entry(t, r, pg, L[pg].life_cycle_id));
      }
    }
  }
  return out;
}

/// What TensorRT-LLM logs and allocates at startup for a KV budget.
struct trtllm_startup {
  std::uint64_t quota = 0;  ///< The device quota (bytes).
  trtllm_sizing sizing{};
  std::vector<std::string> lines;  ///< The log lines, in order (without TensorRT-LLM's "[TRT-LLM] [I]" prefix).
};

/// The startup of `c` with `budget` bytes for the KV cache (`max_gpu_total_bytes` after the
/// profiling run; 0: none, then `o.max_tokens` must be set):
///   "max_gpu_total_bytes is provided. New quota is {q}GiB"                 (V2, budget > 0)
///   "max_tokens {N} is provided. Allowed quota from max_tokens is {a}GiB. New quota is {q}GiB"
///                                                                          (V2, max_tokens set)
///   "KV cache manager v2 device quota set to {q}GiB"                       (V2)
///   "KV cache manager v2 host cache quota set to {h}GiB"                   (V2, host_bytes > 0)
///   the role-to-pool lines (`trtllm_role_mapping_lines`).
/// Refusals (thrown, naming the value): every `trtllm_build_layout` refusal; `trtllm_check_gpu` for
/// `o.sm`; options (`trtllm_size`); no quota ("Quota not set ..."). A quota below the minimum slots'
/// is NOT refused: the StorageManager allocates the minimum (`trtllm_sizing::over_quota`); only a
/// failing GPU allocation stops it (CuError / OutOfMemoryError, not modelled).
inline trtllm_startup trtllm_startup_report(const model_config& c, const group_spec_list& specs,
                                            const trtllm_options& o, std::uint64_t budget,
                                            std::uint64_t host_bytes = 0) {
  const trtllm_layout L = trtllm_build_layout(c, specs, o.tokens_per_block);
  trtllm_kv_dtype kv = trtllm_kv_dtype::fp8_ds_mla;
  trtllm_indexer_dtype idx = trtllm_indexer_dtype::fp8;
  for (const paged_cache_group_spec& g : specs)
    for (int p = 0; p < g.num_pools; ++p) {
      const std::string_view n = g.pools[p].format.name;
      if (n == "v4.bf16") kv = trtllm_kv_dtype::bf16;
      if (n == "v4.indexer_mxfp4") idx = trtllm_indexer_dtype::fp4;
    }
  trtllm_check_gpu(o.sm, kv, idx, o.tokens_per_block);
  trtllm_startup s;
  if (budget > 0) s.lines.push_back("max_gpu_total_bytes is provided. New quota is " + trtllm_gib(budget));
  s.quota = trtllm_device_quota(L, o, budget);
  if (o.max_tokens) {
    const std::uint64_t allowed = detail::ceil_u64(
        static_cast<double>(trtllm_quota_from_max_tokens(L, o, *o.max_tokens)) / o.max_util_for_resume);
    s.lines.push_back("max_tokens " + std::to_string(*o.max_tokens) +
                      " is provided. Allowed quota from max_tokens is " + trtllm_gib(allowed) + ". New quota is " +
                      trtllm_gib(s.quota));
  }
  s.lines.push_back("KV cache manager v2 device quota set to " + trtllm_gib(s.quota));
  if (host_bytes > 0) s.lines.push_back("KV cache manager v2 host cache quota set to " + trtllm_gib(host_bytes));
  s.sizing = trtllm_size(L, s.quota, o);
  for (std::string& line : trtllm_role_mapping_lines(c, L)) s.lines.push_back(std::move(line));
  return s;
}

}  // namespace dsv4::cache
