// dsv4-cache-transfer-bench: transfer manifests per second (issue 46) for one request of a
// 1,048,576-token prompt between two V4-Flash (and V4-Pro) vLLM deployments, and the range
// counts: merged, before merging (one per block id, vLLM's NIXL descriptors), and the same pages
// split as tokenspeed's `_cache_transfer_blocks` splits them (one range per field, i.e. tensor
// and layer, per page, never merged: lightseekorg/tokenspeed python/tokenspeed/runtime/pd/
// mooncake/prefill.py @ f4d8ec6e). Two block assignments: a dry run (fresh pools: consecutive
// ids on both sides) and a fragmented decode pool (ids shuffled). A plain timing program that
// prints figures, built by default, never run by ctest.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dsv4/tools/contract.hpp"
#include "dsv4/tools/transfer.hpp"

namespace {

using namespace dsv4::cache;  // NOLINT(google-build-using-namespace)

void bench(const std::string& preset, std::int64_t prompt) {
  dsv4::tools::contract_args a;
  a.plan.preset = preset;
  a.plan.engine = "vllm";
  a.engine_given = true;
  const nlohmann::ordered_json d = dsv4::tools::describe_descriptor(a);
  std::vector<transfer_table> tables;
  transfer_pool pool;
  dsv4::tools::transfer_detail::tables_of(d, preset, tables, pool);
  pool.num_blocks = std::max<std::int64_t>(pool.num_blocks, 1 << 22);  // room for the request at any context
  // Fields per engine group: its tensors x their layers (tokenspeed moves each per page).
  std::vector<std::int64_t> fields;
  for (const auto& g : d["layout"]["engine"]["groups"]) {
    std::int64_t f = 0;
    for (const auto& t : g["tensors"]) f += static_cast<std::int64_t>(t["layers"].size());
    fields.push_back(f);
  }
  const auto dry = vllm_dry_run_blocks(tables, prompt);
  auto shuffled = dry;
  std::mt19937_64 rng(7);
  std::vector<std::int64_t> all;
  for (const auto& v : dry)
    for (const std::int64_t x : v)
      if (x != 0) all.push_back(x);
  std::vector<std::int64_t> perm = all;
  std::shuffle(perm.begin(), perm.end(), rng);
  std::size_t k = 0;
  for (auto& v : shuffled)
    for (std::int64_t& x : v)
      if (x != 0) x = perm[k++];
  for (const auto& [what, decode] :
       {std::pair{"dry run", &dry},
        std::pair{"fragmented decode pool", static_cast<const std::vector<std::vector<std::int64_t>>*>(&shuffled)}}) {
    const transfer_blocks ids{dry, *decode};
    transfer_manifest m;
    int n = 0;
    const auto start = std::chrono::steady_clock::now();
    double seconds = 0;
    while (seconds < 0.5) {
      m = vllm_transfer_manifest(tables, pool, pool, ids, prompt);
      ++n;
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    std::int64_t tokenspeed = 0;
    for (std::size_t g = 0; g < m.groups.size(); ++g) tokenspeed += m.groups[g].blocks_moved * fields[g];
    std::printf(
        "%-9s prompt %s, %-23s %9.0f manifests/s  %s B moved  ranges: %zu merged, %lld before (vLLM NIXL), "
        "%lld tokenspeed form\n",
        preset.c_str(), thousands(prompt).c_str(), what, n / seconds,
        thousands(static_cast<std::int64_t>(m.bytes_moved)).c_str(), m.ranges.size(),
        static_cast<long long>(m.ranges_before_merge), static_cast<long long>(tokenspeed));
  }
}

}  // namespace

int main() {
  try {
    for (const char* preset : {"v4-flash", "v4-pro"})
      for (const std::int64_t prompt : {131'072, 1'048'576}) bench(preset, prompt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dsv4-cache-transfer-bench: %s\n", e.what());
    return 3;
  }
  return 0;
}
