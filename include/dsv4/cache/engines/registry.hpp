// dsv4-cache: the registry of engines, as formats/registry.hpp is of formats. An engine is a
// value (engines/engine.hpp): its allocation policy, its pool structure and its version
// preset, each rule citing its source in the engine's header. Adding an engine (or a version
// preset of one) is one header and one line here.
//
//   vllm@2026.11        vLLM v1 main as read 2026-11: one shared block pool (engines/vllm/engine.hpp);
//                       `vllm` names it (the newest preset)
//   vllm@0.33.0         vLLM 0.33.0 as released: the same rules (its wheel run unchanged gives
//                       the planner's figures, 336 of 336; issue 38)
//   tokenspeed          tokenspeed 0.1.1 as released with --enable-mixed-batch, its parent arena
//                       (engines/tokenspeed/engine.hpp, `tokenspeed_rules_0_1_1`); @f4d8ec6e: the pin
//   tokenspeed-default  tokenspeed's default scheduler, its parent arena (0.1.1; @f4d8ec6e)
//   sglang              SGLang 0.5.23 as released; @cce0a124 the pin: its DeepSeek V4 pool
//                       configurator and ratio pools (engines/sglang/engine.hpp), its occupancy
//                       replayed by engines/sglang/replay.hpp
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/sglang/engine.hpp"
#include "dsv4/cache/engines/sglang/plan.hpp"
#include "dsv4/cache/engines/sglang/report.hpp"
#include "dsv4/cache/engines/spec.hpp"
#include "dsv4/cache/engines/tokenspeed/engine.hpp"
#include "dsv4/cache/engines/tokenspeed/plan.hpp"
#include "dsv4/cache/engines/tokenspeed/report.hpp"
#include "dsv4/cache/engines/trtllm/trtllm.hpp"
#include "dsv4/cache/engines/vllm/engine.hpp"
#include "dsv4/cache/engines/vllm/plan.hpp"
#include "dsv4/cache/engines/vllm/report.hpp"
#include "dsv4/cache/policy.hpp"

namespace dsv4::cache {

/// Every engine preset, the newest preset of an engine first among its presets: the first entry
/// of a name is its default.
inline constexpr std::array<engine_spec, 9> kEngines = {{
    {"vllm", "2026.11", "vllm-project/vllm main as read 2026-11, files and commits in engines/vllm/engine.hpp",
     "4253bd44243c89bb62c1898399f69236b2b5c721", vllm_policy, &vllm_shared_block_pool, vllm_traits, vllm_sizing,
     vllm_engine_startup, vllm_pool_rules{}, vllm_defaults},
    {"vllm", "0.33.0",
     "vLLM 0.33.0 as released (wheel vllm-0.33.0, 2026-11): the rules of vllm@2026.11 (engines/vllm/engine.hpp); its "
     "own "
     "sizing code run unchanged gives the planner's figures, 336 of 336 (issue 38)",
     "", vllm_policy, &vllm_shared_block_pool, vllm_traits, vllm_sizing, vllm_engine_startup, vllm_pool_rules{},
     vllm_defaults},
    // The released tokenspeed is the default `--engine tokenspeed` (and tokenspeed-default).
    {"tokenspeed", "0.1.1",
     "tokenspeed 0.1.1 as released (wheel tokenspeed-0.1.1, 2026-10), files in engines/tokenspeed/engine.hpp: the CSA "
     "index keys a cache group of their own; its token capacity (the compiled tokenspeed-scheduler wheel's "
     "CapacityModel, >=0.1.25) is not run: the planner's capacity model of f4d8ec6e (recipes/spec.py) is assumed",
     "", tokenspeed_policy, &tokenspeed_parent_arena, tokenspeed_traits, tokenspeed_sizing, tokenspeed_engine_startup,
     vllm_pool_rules{}, tokenspeed_defaults, sglang_pool_rules{}, tokenspeed_rules_0_1_1, false,
     " for tokenspeed 0.1.1, whose stages keep the whole model's parent geometry (recipes/plan.py "
     "CacheMemoryPlan.narrow_to_layers); plan the pin's per-stage arenas with --engine tokenspeed@f4d8ec6e"},
    {"tokenspeed", "f4d8ec6e",
     "lightseekorg/tokenspeed main as read 2026-08-22, files and commits in engines/tokenspeed/engine.hpp",
     "f4d8ec6e039c028c7ee71317ccfb84e56ae2b45c", tokenspeed_policy, &tokenspeed_parent_arena, tokenspeed_traits,
     tokenspeed_sizing, tokenspeed_engine_startup, vllm_pool_rules{}, tokenspeed_defaults, sglang_pool_rules{},
     tokenspeed_rules_f4d8ec6e},
    {"tokenspeed-default", "0.1.1",
     "tokenspeed 0.1.1 as released (wheel tokenspeed-0.1.1, 2026-10), files in engines/tokenspeed/engine.hpp: the CSA "
     "index keys a cache group of their own; its token capacity (the compiled tokenspeed-scheduler wheel's "
     "CapacityModel, >=0.1.25) is not run: the planner's capacity model of f4d8ec6e (recipes/spec.py) is assumed",
     "", tokenspeed_default_policy, &tokenspeed_parent_arena, tokenspeed_traits, tokenspeed_sizing,
     tokenspeed_engine_startup, vllm_pool_rules{}, tokenspeed_defaults, sglang_pool_rules{}, tokenspeed_rules_0_1_1,
     false,
     " for tokenspeed 0.1.1, whose stages keep the whole model's parent geometry (recipes/plan.py "
     "CacheMemoryPlan.narrow_to_layers); plan the pin's per-stage arenas with --engine tokenspeed@f4d8ec6e",
     nullptr, "tokenspeed"},
    {"tokenspeed-default",
     "f4d8ec6e",
     "lightseekorg/tokenspeed main as read 2026-08-22, files and commits in engines/tokenspeed/engine.hpp",
     "f4d8ec6e039c028c7ee71317ccfb84e56ae2b45c",
     tokenspeed_default_policy,
     &tokenspeed_parent_arena,
     tokenspeed_traits,
     tokenspeed_sizing,
     tokenspeed_engine_startup,
     vllm_pool_rules{},
     tokenspeed_defaults,
     sglang_pool_rules{},
     tokenspeed_rules_f4d8ec6e,
     true,
     {},
     nullptr,
     "tokenspeed"},
    // The released SGLang is the default `--engine sglang`.
    {"sglang",
     "0.5.23",
     "SGLang 0.5.23 as released (wheel sglang-0.5.23, 2026-10), files in engines/sglang/engine.hpp; its SWA pool sized "
     "by "
     "--swa-full-tokens-ratio (its cap sizing, used when the flag is left out, is not modelled)",
     "",
     sglang_policy,
     &sglang_ratio_pools,
     sglang_traits,
     sglang_sizing,
     sglang_engine_startup,
     vllm_pool_rules{},
     sglang_defaults,
     sglang_rules_0_5_23,
     tokenspeed_pool_rules{},
     false,
     {},
     [](const model_config& m) { (void)sglang_geometry_of(m, false, 0, -1, sglang_rules_0_5_23); }},
    {"sglang",
     "cce0a124",
     "sgl-project/sglang cce0a124 (2026-08-23), files and lines in engines/sglang/engine.hpp",
     "cce0a1244b5a3ee60411fb403f65f856a1d012f0",
     sglang_policy,
     &sglang_ratio_pools,
     sglang_traits,
     sglang_sizing,
     sglang_engine_startup,
     vllm_pool_rules{},
     sglang_defaults,
     sglang_rules_cce0a124,
     tokenspeed_pool_rules{},
     false,
     {},
     [](const model_config& m) { (void)sglang_geometry_of(m, false, 0, -1, sglang_rules_cce0a124); }},
    {"trtllm", "00043967",
     "NVIDIA/TensorRT-LLM 0004396 (DeepseekV4CacheManager on KVCacheManagerV2), files in docs/engines/trtllm.md",
     "0004396720054fd8e205cbf616f21f0b57c6b412", trtllm_policy, &trtllm_life_cycle_pools, trtllm_traits,
     trtllm_engine_sizing, trtllm_engine_startup, vllm_pool_rules{}, trtllm_defaults, sglang_pool_rules{},
     tokenspeed_pool_rules{}, false, " for TensorRT-LLM (its per-stage KV cache sizing was not read)",
     trtllm_check_model},
}};

/// The engine named `name` ("vllm", the newest preset) or `name@preset` ("vllm@2026.11");
/// nullptr if there is none.
constexpr const engine_spec* find_engine(std::string_view name) {
  const std::size_t at = name.find('@');
  const std::string_view base = name.substr(0, at);
  const std::string_view preset = at == std::string_view::npos ? std::string_view() : name.substr(at + 1);
  if (at != std::string_view::npos && preset.empty()) return nullptr;
  for (const engine_spec& e : kEngines)
    if (e.name == base && (preset.empty() || e.preset == preset)) return &e;
  return nullptr;
}

/// The engine whose policy names `name` (`allocation_policy::engine`; its newest preset). Throws
/// std::invalid_argument if none is registered under that name.
constexpr const engine_spec& engine_of(std::string_view name) {
  for (const engine_spec& e : kEngines)
    if (e.policy.engine == name) return e;
  fail("no engine of this name is registered (engines/registry.hpp)");
}

/// The engine whose own pool structure is `s` (its newest preset; `engine_sizing` sizes it).
/// Throws std::invalid_argument if no engine builds that structure (own pools: none does).
constexpr const engine_spec& engine_of_structure(pool_structure s) {
  for (const engine_spec& e : kEngines)
    if (e.structure == s) return e;
  fail("no registered engine builds this pool structure (engines/registry.hpp)");
}

/// The engines' names, each once in registry order, without scheduler variants of another
/// (`engine_spec::variant_of`): the engines a comparison draws ("vllm", "tokenspeed", "sglang").
inline std::vector<std::string_view> engine_family_names() {
  std::vector<std::string_view> names;
  for (const engine_spec& e : kEngines)
    if (e.variant_of.empty() && std::find(names.begin(), names.end(), e.name) == names.end()) names.push_back(e.name);
  return names;
}

/// "name@preset" (or the name alone for an engine of one version).
inline std::string engine_label(const engine_spec& e) {
  return e.preset.empty() ? std::string(e.name) : std::string(e.name) + "@" + std::string(e.preset);
}

/// Every accepted `--engine` value: "vllm, vllm@2026.11, vllm@0.33.0, tokenspeed, tokenspeed@0.1.1, ...".
inline std::string engine_names() {
  std::string s;
  std::string_view last;
  for (const engine_spec& e : kEngines) {
    if (e.name != last) s += (s.empty() ? "" : ", ") + std::string(e.name);
    if (!e.preset.empty()) s += ", " + engine_label(e);
    last = e.name;
  }
  return s;
}

/// The allocation policy of engine `e`'s newest preset, with `overlap` set as given. Throws as `engine_of`.
constexpr allocation_policy policy_for(std::string_view e, bool overlap = false) {
  allocation_policy p = engine_of(e).policy;
  p.overlap = overlap;
  return p;
}

}  // namespace dsv4::cache
