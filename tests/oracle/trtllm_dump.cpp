// Prints engines/trtllm's figures for a config.json as one JSON object, for
// tests/oracle/compare_trtllm.py: the device quota, granularity, minimum and typical slots, blocks
// per pool group, bytes, the DeepSeek-V4 max tokens of the quota, and each pool's slot bytes.
// Usage: trtllm_dump CONFIG.json BUDGET_BYTES MAX_SEQ_LEN MAX_BATCH_SIZE [--no-scratch] [--max-tokens N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include <nlohmann/json.hpp>

#include "dsv4/cache/config_json.hpp"
#include "dsv4/cache/engines/trtllm/sizing.hpp"

int main(int argc, char** argv) {
  using namespace dsv4::cache;
  if (argc < 5) {
    std::fputs(
        "usage: trtllm_dump CONFIG.json BUDGET_BYTES MAX_SEQ_LEN MAX_BATCH_SIZE [--no-scratch] [--max-tokens N]\n",
        stderr);
    return 2;
  }
  try {
    const model_config c = load_model_config(argv[1]);
    trtllm_options o;
    o.max_seq_len = std::atoll(argv[3]);
    o.max_batch_size = std::atoll(argv[4]);
    for (int i = 5; i < argc; ++i) {
      if (std::strcmp(argv[i], "--no-scratch") == 0) o.swa_scratch_reuse = false;
      if (std::strcmp(argv[i], "--max-tokens") == 0 && i + 1 < argc) o.max_tokens = std::atoll(argv[++i]);
    }
    const trtllm_layout L = trtllm_build_layout(c, trtllm_cache_specs(c), o.tokens_per_block);
    const std::uint64_t quota = trtllm_device_quota(L, o, std::strtoull(argv[2], nullptr, 10));
    const trtllm_sizing s = trtllm_size(L, quota, o);
    const auto list = [&L](const trtllm_slots& v) {
      nlohmann::json a = nlohmann::json::array();
      for (int g = 0; g < L.num_groups; ++g) a.push_back(v[static_cast<std::size_t>(g)]);
      return a;
    };
    nlohmann::json pools = nlohmann::json::array();
    for (int g = 0; g < L.num_groups; ++g) {
      nlohmann::json p = nlohmann::json::array();
      for (int i = 0; i < L[g].num_pools; ++i) p.push_back(L[g][i].slot_bytes());
      pools.push_back(p);
    }
    const nlohmann::json out{{"quota", s.quota},
                             {"granularity", s.granularity},
                             {"min_quota", s.min_quota},
                             {"effective_quota", s.effective_quota},
                             {"min_slots", list(s.min_slots)},
                             {"typical_slots", list(s.typical_slots)},
                             {"blocks", list(s.slots)},
                             {"total_physical_bytes", s.allocated_bytes},
                             {"total_logical_bytes", s.logical_bytes},
                             {"dsv4_max_tokens_from_quota", trtllm_max_tokens_from_quota(L, o, s.quota)},
                             {"pool_bytes_per_block", pools}};
    std::puts(out.dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trtllm_dump: %s\n", e.what());
    return 1;
  }
  return 0;
}
