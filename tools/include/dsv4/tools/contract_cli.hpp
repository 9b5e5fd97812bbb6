// dsv4-cache-layout's contract commands as CLI11 options: describe / fingerprint's flags (the
// planner's model, format and parallel flags, --engine, --rank) parsed into `contract_args`; the
// commands themselves are contract.hpp's.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dsv4/tools/cli_parse.hpp"
#include "dsv4/tools/contract.hpp"
#include "dsv4/tools/planner_flags.hpp"

namespace dsv4::tools {

/// Registers the flags of describe / fingerprint on `cmd`, parsing into `c`: the planner's model,
/// format and parallel flags, --engine, --no-mtp, --tokens-per-step and --rank.
inline void add_contract_options(CLI::App& cmd, contract_args& c) {
  cache::cli::add_model_options(cmd, c.plan, "Not used by the layout (a plan's budget)");
  cache::cli::add_parallel_options(cmd, c.plan);
  cmd.add_option("--engine", c.plan.engine,
                 "Record the engine's placement where it moves bytes (schema dsv4-cache-layout/2: vllm, its "
                 "shared block pool; tokenspeed, its parent arena of planes); without it the library's pages "
                 "alone (schema /1); sglang is refused (its pages are not recorded), as is an engine whose "
                 "own pools are not modelled for the model")
      ->check(cache::cli::kNonEmpty)
      ->each([&c](const std::string&) { c.engine_given = true; });
  cmd.add_flag("--mtp", c.plan.mtp,
               "Cache the MTP layers (the default without --engine; with it, the engine's default: none)");
  cmd.add_flag("--no-mtp", c.plan.no_mtp, "Do not cache the MTP layers");
  cmd.add_option("--tokens-per-step", c.plan.tokens_per_step,
                 "Tokens per decode step s (default 1): with --engine vllm, V4.1's ratio-2 ring holds max(8, next "
                 "power of two >= s + 1) rows")
      ->transform(cache::cli::kDecimalInt);
  cmd.add_option("--gpu", c.plan.gpu,
                 "With --engine: the GPU its defaults and refusals follow (h200, b200, ...; default h200)")
      ->check(cache::cli::kNonEmpty);
  cmd.add_option("--rank", c.rank, "With parallel flags: the rank whose layout to describe (default 0)")
      ->transform(cache::cli::kDecimalInt);
}

/// `args` (describe's flags, without the subcommand) parsed as dsv4-cache-layout describe parses
/// them. Throws std::invalid_argument with CLI11's message for a flag it refuses.
inline contract_args parse_contract_args(const std::vector<std::string>& args) {
  contract_args c;
  CLI::App app{"dsv4-cache-layout describe", "describe"};
  add_contract_options(app, c);
  try {
    parse_args(app, args);
  } catch (const CLI::ParseError& e) {
    throw std::invalid_argument(cache::cli::one_line(e.what()));
  }
  return c;
}

}  // namespace dsv4::tools
