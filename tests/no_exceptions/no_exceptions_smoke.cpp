// The core built without exceptions (-fno-exceptions, as many engines build): it compiles, a
// valid plan works, and a bad input traps after printing its message (ctest runs the "bad"
// mode through expect_trap.cmake). Checks with plain exit codes: no GoogleTest (it needs exceptions here).
#include <cstdio>
#include <cstring>

#include "dsv4/cache.hpp"
#include "dsv4/cache/arena_layout.hpp"

namespace dc = dsv4::cache;

int main(int argc, char** argv) {
  // vLLM's shared pool: 7,451 blocks of 1,002,240 B (tests/oracle/vllm_pool_oracle.py); own pools: 6,755,043,136 B.
  static_assert(dc::build_memory_plan(dc::deepseek_v4_flash).total_bytes == 7'467'690'240ULL);
  static_assert(dc::build_memory_plan(dc::deepseek_v4_flash, {.pools = dc::pools_choice::own}).total_bytes ==
                6'755'043'136ULL);
  dc::plan_options o;
  o.pools = dc::pools_choice::own;  // the arena lays out own pools
  o.context_tokens = 65'536;
  o.requests = argc > 1 && std::strcmp(argv[1], "bad") == 0 ? 0 : 4;  // "bad": requests = 0 must trap
  const dc::memory_plan p = dc::build_memory_plan(dc::deepseek_v4_flash, o);
  const dc::arena_layout a = dc::build_arena_layout(dc::deepseek_v4_flash, p);
  if (a.payload_bytes != p.total_bytes) return 1;
  const dc::sim_result r =
      dc::simulate_worst_case(dc::build_cache_specs(dc::deepseek_v4_flash), dc::vllm_policy, 2, 100, 1, 64);
  if (r.peak_bytes == 0 || r.peak_bytes > dc::build_memory_plan(dc::deepseek_v4_flash, {.context_tokens = 100,
                                                                                        .requests = 2,
                                                                                        .prefill_chunk_tokens = 64,
                                                                                        .pools = dc::pools_choice::own})
                                              .total_bytes)
    return 1;
  std::printf("ok: %llu B\n", static_cast<unsigned long long>(p.total_bytes));
  return 0;
}
