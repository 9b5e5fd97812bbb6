// dsv4-cache: an engine preset as a value (`engine_spec`): its policy, pool structure, traits,
// sizing, report and version data. engines/registry.hpp lists them.
#pragma once

#include <string_view>

#include "dsv4/cache/engines/defaults.hpp"
#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/report.hpp"
#include "dsv4/cache/engines/sglang/engine.hpp"
#include "dsv4/cache/engines/tokenspeed/engine.hpp"
#include "dsv4/cache/engines/traits.hpp"
#include "dsv4/cache/engines/vllm/engine.hpp"
#include "dsv4/cache/model.hpp"
#include "dsv4/cache/plan_types.hpp"
#include "dsv4/cache/policy.hpp"

namespace dsv4::cache {

/// An engine and one version preset of it.
struct engine_spec {
  std::string_view name{};           ///< `--engine` name: "vllm", "tokenspeed", "tokenspeed-default", "sglang".
  std::string_view preset{};         ///< Version preset ("2026.11"); `--engine name@preset`. Empty: one version.
  std::string_view source{};         ///< Where its rules were read (repository, files, date).
  std::string_view source_commit{};  ///< The commit of the engine's core sizing file the preset pins.
  allocation_policy policy{};
  pool_structure structure = &own_pools_structure;
  engine_traits traits{};  ///< Its name in a sentence, budget chain and refusals (engines/traits.hpp).
  engine_sizing sizing{};  ///< How a plan prices its own structure (plan_types.hpp; engines/<engine>/plan.hpp).
  /// Its own report of a plan in its structure (engines/report.hpp; engines/<engine>/report.hpp).
  engine_startup (*startup)(const engine_spec& e, const engine_report_inputs& in) = nullptr;
  vllm_pool_rules vllm{};  ///< shared_block_pool: vLLM's pool rules of this preset.
  /// What the engine does with every input left out, each with its source (engines/defaults.hpp):
  /// async / overlap scheduling, the draft layer, the running cap (vLLM max_num_seqs 1024 for
  /// `vllm serve` on a GPU of 70 GiB or more other than an A100; tokenspeed 160, 80 with
  /// speculative decoding; SGLang max_running_requests 256), the step's token budget, ...
  engine_defaults defaults{};
  sglang_pool_rules sglang{};          ///< ratio_pools: SGLang's rules of this preset (default: 0.5.23).
  tokenspeed_pool_rules tokenspeed{};  ///< parent_arena: tokenspeed's rules of this preset (default: 0.1.1).
  /// Whether its own pools are modelled with pipeline stages (--pp), and what to say when not.
  bool stages_modelled = true;
  std::string_view stages_note{};
  /// Refuses a model its pools are not modelled for, naming the preset's release (SGLang: V4 only);
  /// nullptr: every model.
  void (*check_model)(const model_config& m) = nullptr;
  /// The engine this name is a scheduler variant of ("tokenspeed" for tokenspeed-default): a
  /// comparison of engines (the planner's capacity curves) draws the engine, not its variants.
  std::string_view variant_of{};
};

}  // namespace dsv4::cache
