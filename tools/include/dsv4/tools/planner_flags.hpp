// dsv4-cache-plan's flags as CLI11 options: the validators (wrapping planner_args.hpp's value
// rules) and the option groups the planner, dsv4-cache-layout and the CUDA sample share. The
// Python package does not include this header: it fills `planner_args` with typed values.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "dsv4/tools/planner_args.hpp"

namespace dsv4::cache::cli {

/// CLI11 validators over the value rules of planner_args.hpp (`decimal_int_rule`, ...).
inline const CLI::Validator kDecimalInt([](std::string& s) { return decimal_int_rule(s); }, "INT");
inline const CLI::Validator kCount([](std::string& s) { return count_rule(s); }, "INT>=1");
inline const CLI::Validator kDecimalNumber([](std::string& s) { return decimal_number_rule(s); }, "NUMBER");
inline const CLI::Validator kMemorySize([](std::string& s) { return memory_size_rule(s); }, "SIZE");
inline const CLI::Validator kNonEmpty([](std::string& s) { return s.empty() ? std::string("must not be empty") : ""; },
                                      "PATH");

/// Registers the model and plan flags shared by the planner and the CUDA sample: --preset,
/// --config, --context, --requests, --memory-gib (described by `memory_gib_help`), --indexer.
/// The defaults shown by --help are the values `a` holds now (context 0 = the model's max).
inline void add_model_options(CLI::App& app, planner_args& a, const std::string& memory_gib_help) {
  app.add_option("--preset", a.preset,
                 "Built-in model: v4-flash or flash (DeepSeek-V4-Flash), v4-pro or pro (DeepSeek-V4-Pro), "
                 "v4.1-flash (DeepSeek-V4.1-Flash), v3.2 (DeepSeek-V3.2)")
      ->check(CLI::IsMember(preset_names()))
      ->capture_default_str();
  app.add_option("--config", a.config_path,
                 "A V4, V4.1 or V3.2 config.json, or a model directory holding one (overrides --preset)")
      ->check(kNonEmpty);
  app.add_option("--context", a.context,
                 "Max context tokens per request L (default: the model's max_position_embeddings)")
      ->transform(kDecimalInt);
  app.add_option("--requests", a.requests, "Concurrent requests N")->transform(kCount)->capture_default_str();
  app.add_option("--memory-gib", a.memory_gib, memory_gib_help)->transform(kMemorySize);
  app.add_option("--indexer", a.indexer,
                 "V4 indexer key format: fp8 (132 B/row, the default) or mxfp4 (68 B/row); V4.1 models take "
                 "theirs from --format-set")
      ->check(CLI::IsMember(kIndexerNames));
  app.add_option("--format-set", a.format_set,
                 "V4.1 default formats: v41 (default: SWA v4.1.fp8, global v4.1.fp4, index v4.indexer_mxfp4) or "
                 "v4 (the Hopper fallback: v4.fp8_ds_mla rows, v4.indexer_fp8 keys)")
      ->check(CLI::IsMember(kFormatSetNames));
  app.add_option("--kv-format", a.kv_format,
                 "Row format of every main-KV pool (registry name, e.g. v4.fp8_ds_mla.footer; see "
                 "dsv4-cache-layout formats)")
      ->check(kNonEmpty);
  app.add_option("--format", a.group_formats,
                 "GROUP=NAME: the row format of one group's main-KV pool (repeatable; overrides --kv-format), "
                 "e.g. v4.swa_kv=v4.fp8_uniform")
      ->check(kNonEmpty);
  app.add_option("--indexer-format", a.indexer_format,
                 "Row format of the indexer keys (registry name; overrides --indexer), e.g. "
                 "v4.indexer_mxfp4_in_fp8_slot")
      ->check(kNonEmpty);
}

/// Registers the parallel flags shared by the planner and dsv4-cache-layout: --tp, --dp, --pp,
/// --pp-layers, --dcp, --dcp-interleave.
inline void add_parallel_options(CLI::App& app, planner_args& a) {
  app.add_option("--tp", a.tp, "Tensor parallel size: replicates the cache")->transform(kCount)->capture_default_str();
  app.add_option("--dp", a.dp, "Data parallel (attention) size: splits the requests")
      ->transform(kCount)
      ->capture_default_str();
  app.add_option("--pp", a.pp, "Pipeline stages: split the main layers (vLLM's get_pp_indices)")
      ->transform(kCount)
      ->capture_default_str();
  app.add_option("--pp-layers", a.pp_layers, "Explicit main layers per stage, e.g. 22,21 (needs --pp)")
      ->check(kNonEmpty);
  app.add_option("--dcp", a.dcp, "Decode context parallel size (divides --tp): shards the compressed KV")
      ->transform(kCount)
      ->capture_default_str();
  app.add_option("--dcp-interleave", a.dcp_interleave, "Rows dealt to one DCP rank in turn")
      ->transform(kCount)
      ->capture_default_str();
}

}  // namespace dsv4::cache::cli
