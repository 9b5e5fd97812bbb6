// dsv4-cache-plan: prints the KV-cache layout and memory plan of a DeepSeek V4 model.
//
// The CLI lives in this header (not in main) so that tests and the fuzzer drive the same code
// with an argument list and two streams. Exit codes: 0 success (or --help), 2 bad input,
// 1 the output could not be written, or an internal error (a bug: please report it).
// Nothing is written to `out` unless the whole plan was built: a bad input leaves one line
// on `err` and nothing on `out` that parses as a plan.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "dsv4/cache.hpp"
#include "dsv4/cache/alloc_sim.hpp"
#include "dsv4/cache/config_json.hpp"
#include "dsv4/cache/format.hpp"
#include "dsv4/cache/parallel.hpp"
#include "dsv4/tools/engine_report.hpp"

namespace dsv4::cache::cli {

/// The planner's inputs, as parsed from the command line.
struct planner_args {
  std::string preset = "flash";
  bool preset_given = true;  // false: --preset left at its default (errors then name the model, not a flag)
  std::string config_path;
  std::optional<std::int64_t> context;  // none: the model's max_position_embeddings
  std::int64_t requests = 1;
  std::optional<double> memory_gib;
  std::optional<std::string> indexer;      // --indexer fp8|mxfp4 (V4; none: fp8)
  std::string format_set;                  // --format-set v41|v4 (V4.1; empty: v41)
  std::string kv_format;                   // --kv-format NAME: every main-KV pool
  std::vector<std::string> group_formats;  // --format GROUP=NAME, repeatable
  std::string indexer_format;              // --indexer-format NAME
  std::int64_t tokens_per_step = 1;
  std::int64_t prefill_chunk = 8192;
  bool no_mtp = false;
  bool json = false;
  bool require_fit = false;  // --require-fit: exit 1 when the verdict is "does not fit"
  std::string engine = "vllm";
  std::string pools = "engine";             // --pools engine|own
  std::optional<std::int64_t> max_running;  // --max-running-requests (default: the engine's)
  std::optional<double> swa_ratio;          // --swa-full-tokens-ratio (SGLang only; default 0.1)
  bool overlap = false;
  bool simulate = false;
  std::int64_t max_sim_visits = kSimulateMaxVisits;  // not a flag: the fuzz target lowers it (inputs end in seconds)
  // Parallelism and roles (per-rank plans)
  std::int64_t tp = 1;
  std::int64_t dp = 1;
  std::int64_t pp = 1;
  std::string pp_layers;  // "22,21": main layers per stage; empty = vLLM's even split
  std::int64_t dcp = 1;
  std::int64_t dcp_interleave = 1;
  std::string role = "colocated";
  std::int64_t handover = 0;
  std::optional<double> gpu_memory_gib;
  std::optional<double> reserved_gib;
};

/// --simulate refuses more requests than this (each simulated step visits the running ones);
/// beyond that it refuses an estimated work above kSimulateMaxWork (engine_report.hpp).
inline constexpr std::int64_t kSimulateMaxRequests = 4096;

/// A GiB count as bytes; fails unless 1 byte <= gib x 2^30 < 2^64 (a budget is never
/// silently rounded to 0 bytes).
inline std::uint64_t gib_to_bytes(double gib, const char* what = "--memory-gib") {
  constexpr double kMaxBytes = 18446744073709551616.0;  // 2^64
  const double bytes = gib * 1073741824.0;
  if (!std::isfinite(gib) || !(bytes >= 1.0) || !(bytes < kMaxBytes))
    throw std::invalid_argument(
        fmt::format("{} must be at least 1 byte (2^-30 GiB) and below 2^34 GiB (2^64 bytes), got {}", what, gib));
  return static_cast<std::uint64_t>(bytes);
}

/// CLI11 validators: the flags take plain decimal numbers only. CLI11 alone would read "0x10"
/// as 16, clamp 2^64 to INT64_MAX and take an empty string as "not given".
inline const CLI::Validator kDecimalInt(
    [](std::string& s) -> std::string {
      std::int64_t v = 0;
      const char* end = s.data() + s.size();
      const auto [ptr, ec] = std::from_chars(s.data(), end, v);  // base 10: no "0x", "+", blanks
      if (s.empty()) return "must not be empty";
      if (ec == std::errc::result_out_of_range) return "'" + s + "' does not fit in 64 bits";
      if (ec != std::errc() || ptr != end) return "'" + s + "' is not a decimal integer";
      s = std::to_string(v);  // CLI11 would read a leading 0 as octal ("0100" = 64): pass it plain decimal
      return {};
    },
    "INT");
inline const CLI::Validator kDecimalNumber(
    [](std::string& s) -> std::string {
      double v = 0;
      const char* end = s.data() + s.size();
      if (s.empty()) return "must not be empty";
      if (s.find_first_not_of("0123456789.eE+-") != std::string::npos) return "'" + s + "' is not a decimal number";
      const auto [ptr, ec] = std::from_chars(s.data(), end, v);  // no hex, nan or inf (filtered above)
      if (ec != std::errc() || ptr != end) return "'" + s + "' is not a decimal number";
      return {};
    },
    "NUMBER");
/// Memory sizes: a decimal number of GiB, or one with a unit: GB (10^9 B), GiB (2^30 B), MB, MiB,
/// TB, TiB (e.g. "141GB"). Rewrites the value as GiB (exact: every unit is an integer number of
/// bytes and 2^30 a power of two, so GiB x 2^30 gives the bytes back).
inline const CLI::Validator kMemorySize(
    [](std::string& s) -> std::string {
      static constexpr std::array<std::pair<std::string_view, double>, 6> kUnits = {
          {{"GiB", 1.0}, {"MiB", 1.0 / 1024}, {"TiB", 1024.0}, {"GB", 1e9}, {"MB", 1e6}, {"TB", 1e12}}};
      const std::string what =
          "'" + s + "' is not a memory size: a decimal number of GiB, or with a unit GB, GiB, MB, MiB, TB or TiB";
      std::string_view number = s;
      double scale = 1.0;
      bool bytes = false;  // a decimal unit: scale is bytes per unit
      for (const auto& [unit, factor] : kUnits)
        if (number.size() > unit.size() && number.ends_with(unit)) {
          number.remove_suffix(unit.size());
          scale = factor;
          bytes = unit[1] != 'i';
          break;
        }
      if (number.empty() || number.find_first_not_of("0123456789.eE+-") != std::string_view::npos) return what;
      double v = 0;
      const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
      if (ec != std::errc() || ptr != number.data() + number.size()) return what;
      s = fmt::format("{:.17g}", bytes ? v * scale / 1073741824.0 : v * scale);
      return {};
    },
    "SIZE");
inline const CLI::Validator kNonEmpty([](std::string& s) { return s.empty() ? std::string("must not be empty") : ""; },
                                      "PATH");

/// `msg` as one printable line: control characters as \xNN, at most 500 bytes.
inline std::string one_line(std::string_view msg) {
  std::string out;
  for (const char ch : msg.substr(0, 500)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F)
      out += fmt::format("\\x{:02X}", c);
    else
      out += ch;
  }
  if (msg.size() > 500) out += "...";
  return out;
}

/// Bytes per token of context each layer adds: over the plan's full-history groups that cover
/// it, row bytes (all pools) / tokens per row. 0 for a layer with sliding groups only.
inline std::vector<double> bytes_per_context_token(const memory_plan& p, int num_layers) {
  std::vector<double> per(static_cast<std::size_t>(num_layers), 0.0);
  for (const group_plan& g : p) {
    if (g.spec.has_sliding_window()) continue;
    for (int i = 0; i < g.spec.num_layers; ++i)
      per[static_cast<std::size_t>(g.spec.layers[static_cast<std::size_t>(i)])] +=
          static_cast<double>(g.spec.row_bytes()) / static_cast<double>(g.spec.entry_stride_tokens);
  }
  return per;
}

/// The sum of `bytes_per_context_token` over the main layers: the global KV bytes a token of
/// context adds (V4.1-Flash with the v41 formats: 3 x (288 + 68) / 2 + (288 + 68) = 890, the
/// figure of the V4.1 paper and the vLLM blog; layout-variants 1.8).
inline double main_layer_bytes_per_context_token(const memory_plan& p, const model_config& m) {
  const std::vector<double> per = bytes_per_context_token(p, m.num_layers());
  double sum = 0;
  for (int i = 0; i < m.num_hidden_layers; ++i) sum += per[static_cast<std::size_t>(i)];
  return sum;
}

/// "fp8" or "mxfp4": the indexer keys the plan's groups store (the format set decides for V4.1).
inline std::string_view plan_indexer(const memory_plan& p) {
  for (const group_plan& g : p)
    for (int i = 0; i < g.spec.num_pools; ++i)
      if (g.spec.pools[static_cast<std::size_t>(i)].format.role == format_role::indexer_k)
        return g.spec.pools[static_cast<std::size_t>(i)].format.data.type == element_type::e2m1 ? "mxfp4" : "fp8";
  return to_string(p.options.indexer);
}

/// Bytes a request keeps in each layer whatever its context: the rows of every sliding group
/// (SWA window, compressor states) the layer belongs to, min(L, W) x row bytes, from the plan.
inline std::vector<std::uint64_t> fixed_bytes_per_request(const memory_plan& p, int num_layers) {
  std::vector<std::uint64_t> fixed(static_cast<std::size_t>(num_layers), 0);
  for (const group_plan& g : p) {
    if (!g.spec.has_sliding_window()) continue;
    const std::int64_t rows = std::min(g.window_tokens, p.options.context_tokens);
    for (int i = 0; i < g.spec.num_layers; ++i)
      fixed[static_cast<std::size_t>(g.spec.layers[static_cast<std::size_t>(i)])] +=
          static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(g.spec.row_bytes());
  }
  return fixed;
}

/// Everything the planner prints, computed before anything is printed.
struct planner_result {
  model_config model;
  model_cache_schema schema;
  memory_plan plan;
  const engine_spec* engine = nullptr;  ///< The engine planned for (--engine).
  std::optional<engine_report> report;  ///< Its pool, startup figures and (with a budget) what really fits.
  std::optional<std::uint64_t> budget_bytes;
  std::optional<request_capacity> requests_fit;
  /// The engine's cap on requests running at once (--max-running-requests, or the engine's own:
  /// vLLM's max_num_seqs); 0 = none. The budget answers never exceed it (`max_requests_by_memory`
  /// keeps memory's own answer).
  std::int64_t max_running = 0;
  std::optional<context_capacity> context_fit;
  std::optional<sim_result> simulated;  ///< With --simulate: the worst case of the allocation simulator.
  // With parallel flags: every rank's plan, the worst rank, and with a budget what the cluster fits.
  std::optional<parallel_config> parallel;
  std::vector<rank_plan_result> ranks;
  cluster_worst worst{};
  std::optional<cluster_capacity> cluster_fit;
};

/// Parses --pp-layers "22,21" into `p` (decimal entries, comma-separated).
inline void parse_pp_layers(const std::string& text, parallel_config& p) {
  std::size_t start = 0;
  p.num_stage_layers = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    int v = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
      throw std::invalid_argument("--pp-layers must be comma-separated decimal layer counts, got '" + text + "'");
    if (p.num_stage_layers >= kMaxLayers) throw std::invalid_argument("--pp-layers has more than 256 entries");
    p.stage_layers[static_cast<std::size_t>(p.num_stage_layers++)] = v;
    start = end + 1;
  }
}

/// The KV budget per GPU from --memory-gib, or --gpu-memory-gib minus --reserved-gib.
inline std::optional<std::uint64_t> budget_from(const planner_args& a) {
  if (a.reserved_gib && !a.gpu_memory_gib) throw std::invalid_argument("--reserved-gib needs --gpu-memory-gib");
  if (!a.gpu_memory_gib)
    return a.memory_gib ? std::optional(gib_to_bytes(*a.memory_gib, "--memory-gib")) : std::nullopt;
  if (a.memory_gib)
    throw std::invalid_argument("give --memory-gib or --gpu-memory-gib (with --reserved-gib), not both");
  (void)gib_to_bytes(*a.gpu_memory_gib, "--gpu-memory-gib");  // a valid size of its own first
  if (!a.reserved_gib)
    throw std::invalid_argument(
        "--gpu-memory-gib needs --reserved-gib (the GPU memory the weights and activations take before the KV "
        "cache; --reserved-gib 0 reserves nothing)");
  const double reserved = *a.reserved_gib;
  if (!(reserved >= 0.0) || !std::isfinite(reserved))
    throw std::invalid_argument(fmt::format("--reserved-gib must be >= 0, got {}", reserved));
  if (!(reserved < *a.gpu_memory_gib))
    throw std::invalid_argument(fmt::format(
        "--reserved-gib ({}) must be below --gpu-memory-gib ({}): no KV budget left", reserved, *a.gpu_memory_gib));
  return gib_to_bytes(*a.gpu_memory_gib - reserved, "--gpu-memory-gib minus --reserved-gib");
}

/// The flags SGLang's modelled pools refuse or ignore under --engine sglang (its own pools):
/// pipeline stages, decode context parallelism and PD roles are not modelled, --overlap is its
/// default already, and --simulate replays block tables SGLang does not have (its occupancy is
/// replayed in the engine report with a budget).
inline void check_sglang_flags(const planner_args& a) {
  const auto refuse = [](const std::string& what) {
    throw std::invalid_argument("--engine sglang: " + what + "; plan it with --pools own (or another engine)");
  };
  if (a.pp != 1 || !a.pp_layers.empty()) refuse(fmt::format("--pp {} (pipeline stages) is not modelled", a.pp));
  if (a.dcp != 1) refuse(fmt::format("--dcp {} (decode context parallelism) is not modelled", a.dcp));
  if (a.role != "colocated") refuse("--role " + a.role + " (PD disaggregation) is not modelled");
  if (a.overlap)
    throw std::invalid_argument(
        "--engine sglang: --overlap has no effect: SGLang's overlap scheduler is its default and always modelled");
  if (a.simulate)
    throw std::invalid_argument(
        "--engine sglang: --simulate replays vLLM's and tokenspeed's block tables; SGLang's occupancy is replayed "
        "in the engine report when a budget is given (--memory-gib)");
}

/// The engine named by --engine ("vllm", "vllm@2026.11", "tokenspeed", "sglang", ...).
inline const engine_spec& engine_from(const std::string& name) {
  const engine_spec* e = find_engine(name);
  if (e == nullptr) throw std::invalid_argument("--engine must be one of " + engine_names() + ", got '" + name + "'");
  return *e;
}

/// A built-in model: its preset name, an older alias ("" if none) and the config.
struct preset {
  std::string_view name;
  std::string_view alias;
  const model_config* model;
};

/// The presets, in one list: --preset, --help and the errors take their names from it.
inline constexpr std::array<preset, 4> kPresets = {{
    {"v4-flash", "flash", &deepseek_v4_flash},
    {"v4-pro", "pro", &deepseek_v4_pro},
    {"v4.1-flash", "", &deepseek_v4_1_flash},
    {"v3.2", "", &deepseek_v3_2},
}};

/// Every preset name and alias ("v4-flash, flash, v4-pro, pro, v4.1-flash, v3.2").
inline std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const preset& p : kPresets) {
    names.emplace_back(p.name);
    if (!p.alias.empty()) names.emplace_back(p.alias);
  }
  return names;
}

/// The registry index of format `name` for flag `flag`; throws naming the flag, the value and
/// the registered names.
inline int format_flag(const std::string& flag, const std::string& name) {
  const int i = format_index(name);
  if (i < 0)
    throw std::invalid_argument(flag + ": unknown row format '" + name + "' (registered: " + format_names() + ")");
  return i;
}

/// The groups whose main-KV format --format GROUP=NAME sets, per family, and the field it sets.
struct format_group_flag {
  model_family family;
  std::string_view group;
  int format_overrides::*field;
};
inline constexpr std::array<format_group_flag, 8> kFormatGroupFlags = {{
    {model_family::v4, "v4.swa_kv", &format_overrides::swa_kv},
    {model_family::v4, "v4.c4a.compressed_kv", &format_overrides::csa_kv},
    {model_family::v4, "v4.c128a.compressed_kv", &format_overrides::hca_kv},
    {model_family::v4_1, "v4.1.swa", &format_overrides::swa_kv},
    {model_family::v4_1, "v4.1.global_r2", &format_overrides::global_r2},
    {model_family::v4_1, "v4.1.global_r1", &format_overrides::global_r1},
    {model_family::v3_2, "v3.2.mla_kv", &format_overrides::mla_kv},
    {model_family::v3_2, "v3.2.indexer_k", &format_overrides::indexer},
}};

/// Applies --format-set, --kv-format, --format GROUP=NAME and --indexer-format to `o`, then
/// checks every chosen format against the model (`check_formats`: a format that does not fit
/// names both).
inline void apply_format_flags(const planner_args& a, const model_config& m, plan_options& o) {
  if (!a.format_set.empty()) {
    if (m.family != model_family::v4_1)
      throw std::invalid_argument("--format-set " + a.format_set + ": format sets are for DeepSeek V4.1 models, not " +
                                  std::string(to_string(m.family)) + " (use --kv-format / --format)");
    if (a.format_set == "v41")
      o.formats.set = format_set::v41;
    else if (a.format_set == "v4")
      o.formats.set = format_set::v4;
    else
      throw std::invalid_argument("--format-set must be v41 or v4, got '" + a.format_set + "'");
  }
  if (!a.kv_format.empty()) o.formats.kv = format_flag("--kv-format", a.kv_format);
  if (!a.indexer_format.empty()) o.formats.indexer = format_flag("--indexer-format", a.indexer_format);
  if (a.indexer && !a.indexer_format.empty())
    throw std::invalid_argument("--indexer " + *a.indexer + " has no effect with --indexer-format " + a.indexer_format +
                                " (which chooses the index-key format): give one of them");
  std::vector<std::pair<std::string, std::string>> seen;  // group, format: each group once
  for (const std::string& item : a.group_formats) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument("--format must be GROUP=NAME (e.g. v4.swa_kv=v4.fp8_ds_mla.footer), got '" + item +
                                  "'");
    const std::string group = item.substr(0, eq);
    for (const auto& [g, name] : seen)
      if (g == group)
        throw std::invalid_argument("--format " + group + " given twice (" + name + ", " + item.substr(eq + 1) +
                                    "): give each group once");
    seen.emplace_back(group, item.substr(eq + 1));
    const int f = format_flag("--format " + group, item.substr(eq + 1));
    std::vector<std::string_view> groups;
    bool found = false;
    for (const format_group_flag& g : kFormatGroupFlags) {
      if (g.family != m.family) continue;
      groups.push_back(g.group);
      if (g.group == group) {
        o.formats.*g.field = f;
        found = true;
      }
    }
    if (!found)
      throw std::invalid_argument("--format: group '" + group + "' has no format to choose for a " +
                                  std::string(to_string(m.family)) + " model (" +
                                  fmt::format("{}", fmt::join(groups, ", ")) +
                                  "; compressor states are always fp32_state; use --indexer-format for " +
                                  (m.family == model_family::v3_2 ? "the" : "V4 / V4.1") + " indexer keys)");
  }
  check_formats(m, resolve_formats(m.family, o.indexer, o.formats));
}

inline planner_result compute(const planner_args& a) {
  planner_result r;
  if (!a.config_path.empty()) {
    r.model = load_model_config(a.config_path);
  } else {
    const auto it = std::find_if(kPresets.begin(), kPresets.end(),
                                 [&](const preset& p) { return a.preset == p.name || a.preset == p.alias; });
    if (it == kPresets.end())
      throw std::invalid_argument("--preset must be one of " + fmt::format("{}", fmt::join(preset_names(), ", ")) +
                                  ", got '" + a.preset + "'");
    r.model = *it->model;
  }
  plan_options o;
  const std::string indexer = a.indexer.value_or("fp8");
  if (a.indexer && r.model.family == model_family::v4_1)
    throw std::invalid_argument("--indexer " + indexer +
                                ": a DeepSeek V4.1 model takes its index-key format from --format-set (v41: "
                                "v4.indexer_mxfp4, v4: v4.indexer_fp8) or --indexer-format NAME");
  if (indexer == "fp8") {
    o.indexer = indexer_format::fp8;
  } else if (indexer == "mxfp4") {
    if (r.model.family == model_family::v3_2)
      throw std::invalid_argument("--indexer mxfp4: DeepSeek V3.2 indexer keys are FP8 only (v3.2.indexer_fp8)");
    o.indexer = indexer_format::mxfp4;
  } else {
    throw std::invalid_argument("--indexer must be fp8 or mxfp4, got '" + indexer + "'");
  }
  apply_format_flags(a, r.model, o);
  o.context_tokens = a.context.value_or(0);  // 0: the model's max_position_embeddings
  o.requests = a.requests;
  o.tokens_per_step = a.tokens_per_step;
  o.prefill_chunk_tokens = a.prefill_chunk;
  o.cache_mtp = !a.no_mtp;
  r.engine = &engine_from(a.engine);
  o.policy = r.engine->policy;
  o.policy.overlap = a.overlap;
  o.vllm_pools = r.engine->vllm;
  if (a.pools == "own")
    o.pools = pools_choice::own;
  else if (a.pools != "engine")
    throw std::invalid_argument("--pools must be engine or own, got '" + a.pools + "'");
  if (a.max_running && *a.max_running < 1)
    throw std::invalid_argument(fmt::format("--max-running-requests must be >= 1, got {}", *a.max_running));
  r.budget_bytes = budget_from(a);
  if (a.role == "prefill") {
    o.role = deployment_role::prefill;
  } else if (a.role == "decode") {
    o.role = deployment_role::decode;
  } else if (a.role != "colocated") {
    throw std::invalid_argument("--role must be colocated, prefill or decode, got '" + a.role + "'");
  }
  o.handover_requests = a.handover;
  if (o.policy.decode_needs_whole_step && a.prefill_chunk >= 1 && a.tokens_per_step > a.prefill_chunk)
    throw std::invalid_argument(fmt::format(
        "--prefill-chunk {} must be >= --tokens-per-step {}: {} decodes only with a whole step of tokens in the "
        "step's budget",
        a.prefill_chunk, a.tokens_per_step, engine_label(*r.engine)));
  if (a.handover != 0 && o.role != deployment_role::decode)
    throw std::invalid_argument(fmt::format("--handover {} is for --role decode only", a.handover));
  if (a.handover < 0) throw std::invalid_argument(fmt::format("--handover must be >= 0, got {}", a.handover));
  if (a.context && *a.context < 1)
    throw std::invalid_argument(
        fmt::format("--context must be >= 1, got {} (omit it for the model's max_position_embeddings)", *a.context));
  if (a.simulate && o.role != deployment_role::colocated)
    throw std::invalid_argument(
        "--simulate replays colocated engines only: a --role prefill or decode instance is not simulated");
  if (a.dcp_interleave != 1 && a.dcp == 1)
    throw std::invalid_argument(fmt::format(
        "--dcp-interleave {} has no effect without --dcp (decode context parallelism over more than 1 rank)",
        a.dcp_interleave));
  if (a.tp != 1 || a.dp != 1 || a.pp != 1 || a.dcp != 1 || a.dcp_interleave != 1 || !a.pp_layers.empty()) {
    parallel_config pc;
    pc.tp = a.tp;
    pc.dp = a.dp;
    pc.pp = a.pp;
    pc.dcp = a.dcp;
    pc.dcp_interleave_rows = a.dcp_interleave;
    if (!a.pp_layers.empty()) parse_pp_layers(a.pp_layers, pc);
    r.parallel = pc;
  }
  const bool tokenspeed =
      o.policy.engine == engine_kind::tokenspeed || o.policy.engine == engine_kind::tokenspeed_default;
  r.max_running = a.max_running.value_or(tokenspeed ? tokenspeed_default_max_num_seqs(o.tokens_per_step)
                                                    : r.engine->default_max_running_requests);
  o.max_running_requests = r.max_running;  // tokenspeed sizes its arena's windows for max_num_seqs
  if (a.swa_ratio && !(o.policy.engine == engine_kind::sglang && o.pools == pools_choice::engine))
    throw std::invalid_argument(
        "--swa-full-tokens-ratio has no effect without --engine sglang (and its own pools, --pools engine)");
  if (a.swa_ratio) {
    if (!(*a.swa_ratio > 0 && *a.swa_ratio <= 1))
      throw std::invalid_argument(fmt::format("--swa-full-tokens-ratio must be in (0, 1], got {}", *a.swa_ratio));
    // SGLang's V4 override turns its class default 0.8 into 0.1, an explicit 0.8 too
    // (arg_groups/overrides.py:1139-1167, server_args.py:931-943).
    o.swa_full_tokens_ratio = *a.swa_ratio == 0.8 ? 0.1 : *a.swa_ratio;
  }
  if (o.policy.engine == engine_kind::sglang && o.pools == pools_choice::engine) {
    check_sglang_flags(a);
    // SGLang's HCA-state reservation is per attention-DP worker: max_running_requests // dp.
    o.max_running_requests = r.max_running / a.dp;
    if (o.max_running_requests < 1)
      throw std::invalid_argument(fmt::format(
          "--engine sglang: --max-running-requests {} // --dp {} is 0, which SGLang refuses (\"max_running_request is "
          "zero\", tp_worker.py:410)",
          r.max_running, a.dp));
  }
  try {  // errors from here on depend on the model: say which one
    r.schema = build_model_schema(r.model, r.model.family == model_family::v3_2 ? indexer_format::fp8 : o.indexer);
    const pool_structure structure = plan_structure(o, r.model.family);
    if (structure == pool_structure::ratio_pools) (void)sglang_geometry_of(r.model, false);  // V4 only
    if (structure != pool_structure::own_pools)
      for (const paged_cache_group_spec& g : plan_cache_specs(r.model, o))
        for (int k = 0; k < g.num_pools; ++k)
          if (const char* why = structure == pool_structure::shared_block_pool ? vllm_format_mismatch(g, k)
                                : structure == pool_structure::ratio_pools     ? sglang_format_mismatch(g, k)
                                                                               : tokenspeed_format_mismatch(g, k))
            throw std::invalid_argument(
                fmt::format("--engine {}: row format '{}' of {}{}: {}; plan it with --pools own (or another engine)",
                            engine_label(*r.engine), g.pools[static_cast<std::size_t>(k)].format.name, to_string(g.id),
                            g.num_pools > 1 ? fmt::format("[{}]", k) : "", why));
    r.plan = build_memory_plan(r.model, o);
    if (r.budget_bytes) {
      r.requests_fit = max_requests_for_budget(r.model, o, *r.budget_bytes);
      r.context_fit = max_context_for_budget(r.model, o, *r.budget_bytes);
    }
    if (r.parallel) {
      validate(*r.parallel, r.model);
      if (r.parallel->world_size() > 4096)
        throw std::invalid_argument(fmt::format("the planner prints every rank: dp x pp x tp must be <= 4096, got {}",
                                                r.parallel->world_size()));
      for (std::int64_t rank = 0; rank < r.parallel->world_size(); ++rank) {
        r.ranks.push_back(rank_plan(r.model, o, *r.parallel, rank));
        const std::uint64_t b = r.ranks.back().plan.total_bytes;
        if (rank == 0 || b > r.worst.worst_bytes) r.worst = {rank, b};
      }
      if (r.budget_bytes) r.cluster_fit = cluster_capacity_for_budget(r.model, o, *r.parallel, *r.budget_bytes);
    }
    const std::int64_t max_running = r.max_running;
    if (a.simulate) {
      const memory_plan& p = r.plan;
      const std::int64_t n = p.options.requests;
      const std::int64_t ctx = p.options.context_tokens;
      if (ctx < 2) throw std::invalid_argument("--simulate needs --context >= 2 (a prompt and a generated token)");
      if (n > kSimulateMaxRequests)
        throw std::invalid_argument(
            fmt::format("--simulate replays at most {} requests (each step visits the running ones), got {}",
                        kSimulateMaxRequests, n));
      sim_search search;
      search.max_running = a.max_running.value_or(0);  // the plan's N run at once unless capped on purpose
      search.sim.max_visits = a.max_sim_visits;
      const double work = sim_work_estimate(p.pools, o.policy, n, ctx, p.options.tokens_per_step,
                                            p.options.prefill_chunk_tokens, search);
      if (work > kSimulateMaxWork)
        throw std::invalid_argument(fmt::format(
            "--simulate: the estimated work of {} requests x {} tokens is {:.2g} request steps, above the limit {:.2g} "
            "(about 10 s on 2 cores); simulate fewer requests",
            n, ctx, work, kSimulateMaxWork));
      r.simulated = simulate_worst_case(p.pools, o.policy, n, ctx, p.options.tokens_per_step,
                                        p.options.prefill_chunk_tokens, search);
      if (r.simulated->incomplete)
        throw std::invalid_argument(fmt::format(
            "--simulate stopped at its work limit ({} request visits, about 10 s on 2 cores) after {} workload(s): "
            "simulate fewer requests or a smaller --tokens-per-step",
            a.max_sim_visits, r.simulated->simulations));
    }
    r.report = compute_engine_report(r.model, r.plan, r.ranks, r.parallel ? r.parallel->dp : 1, *r.engine,
                                     r.budget_bytes, max_running, a.max_sim_visits, r.parallel ? r.parallel->dcp : 1);
  } catch (const std::invalid_argument& e) {
    const std::string source = !a.config_path.empty() ? a.config_path
                               : a.preset_given       ? "--preset " + a.preset
                                                      : std::string(r.model.name.view()) + " (the default model)";
    throw std::invalid_argument(source + ": " + e.what());
  }
  return r;
}

/// `n` requests (of `engines` engines together) capped at what the engines run at once.
inline std::int64_t capped_requests(const planner_result& r, std::int64_t n, std::int64_t engines) {
  if (r.max_running <= 0) return n;
  const std::int64_t cap = r.max_running > std::numeric_limits<std::int64_t>::max() / engines
                               ? std::numeric_limits<std::int64_t>::max()
                               : r.max_running * engines;
  return std::min(n, cap);
}

/// The simulator's peak pages of library group `gi` in the units of its `pages_per_layer`: own
/// pools, its peak + its null page; a shared pool (a parent arena), the peak blocks (pages) of its
/// engine group's table (the pool's one null block, the arena's null parent apart).
inline std::int64_t simulated_group_pages(const memory_plan& p, const sim_result& sim, int gi) {
  if (p.pools.structure == pool_structure::own_pools) return sim.peak_pages[static_cast<std::size_t>(gi)] + 1;
  const group_id id = p.groups[static_cast<std::size_t>(gi)].spec.id;
  for (int e = 0; e < p.pools.num_groups; ++e)
    for (int m = 0; m < p.pools[e].num_members; ++m)
      if (p.pools[e].members[static_cast<std::size_t>(m)].group == id)
        return sim.peak_pages[static_cast<std::size_t>(sim.table_of_group[static_cast<std::size_t>(e)])];
  return 0;
}

/// Bytes of one page of library group `gi` in one layer, all pools, as the engine lays it out
/// (a shared pool pads them; own pools: the group's page bytes).
inline std::int64_t engine_page_bytes(const memory_plan& p, int gi) {
  const paged_cache_group_spec& spec = p.groups[static_cast<std::size_t>(gi)].spec;
  if (p.pools.structure != pool_structure::shared_block_pool) return spec.page_bytes();
  std::int64_t b = 0;
  for (int k = 0; k < spec.num_pools; ++k) {
    bool found = false;
    for (int e = 0; e < p.pools.num_groups && !found; ++e)
      for (int m = 0; m < p.pools[e].num_members && !found; ++m) {
        const engine_member& mb = p.pools[e].members[static_cast<std::size_t>(m)];
        if (mb.group == spec.id && mb.pool == k) {
          b += mb.page_bytes;
          found = true;
        }
      }
  }
  return b;
}

/// The "groups" array of a plan (the top-level one, or a rank's), with the simulator's peaks if given.
inline nlohmann::ordered_json groups_json(const memory_plan& p, const sim_result* simulated) {
  using json = nlohmann::ordered_json;
  json groups = json::array();
  for (int gi = 0; gi < p.num_groups; ++gi) {
    const group_plan& g = p.groups[static_cast<std::size_t>(gi)];
    const paged_cache_group_spec& s = g.spec;
    json pools = json::array();
    for (int i = 0; i < s.num_pools; ++i) {
      const pool_spec& ps = s.pools[static_cast<std::size_t>(i)];
      pools.push_back({{"format", std::string(ps.format.name)},
                       {"row_bytes", ps.row_bytes},
                       {"page_bytes", ps.page_bytes},
                       {"pages_per_layer", g.pool_pages[static_cast<std::size_t>(i)]}});
    }
    groups.push_back({{"id", to_string(s.id)},
                      {"family", std::string(to_string(s.family))},
                      {"retention", std::string(to_string(s.retention))},
                      {"prefix_cache", std::string(to_string(s.prefix))},
                      {"rows_per_page", s.rows_per_page},
                      {"entry_stride_tokens", s.entry_stride_tokens},
                      {"page_size_tokens", s.page_size_tokens()},
                      {"sliding_window_tokens", s.has_sliding_window() ? json(g.window_tokens) : json(nullptr)},
                      {"num_layers", s.num_layers},
                      {"row_bytes", s.row_bytes()},
                      {"page_bytes", s.page_bytes()},
                      {"pools", pools},
                      {"pages_per_request", g.pages_per_request},
                      {"shared_pages", g.shared_pages},
                      {"pages", g.total_pages()},
                      {"bytes", g.bytes},
                      {"ideal_bytes", g.ideal_bytes}});
    if (p.pools.structure == pool_structure::shared_block_pool)
      groups.back()["engine_page_bytes"] = engine_page_bytes(p, gi);
    if (simulated) groups.back()["simulated_peak_pages"] = simulated_group_pages(p, *simulated, gi);
  }
  return groups;
}

/// Does N x L fit the budget per GPU: the plan's bytes (every rank's: the cluster's answer with
/// parallel flags), the engine's startup check, and what really fits (the simulated capacity,
/// when simulated). Computed from the report, never recomputed.
struct plan_verdict {
  bool has_budget = false;
  bool fits = false;
  std::int64_t requests = 0;        ///< N (the whole deployment).
  std::int64_t context_tokens = 0;  ///< L.
  std::int64_t plan_max_requests =
      0;  ///< The plan's answer (the cluster's with parallel flags), capped at the engine's running cap.
  bool engine_starts = true;
  std::optional<std::int64_t>
      simulated_max_requests;  ///< The engine's own occupancy replayed (a lower bound when marked).
  bool simulated_lower_bound = false;
  std::int64_t max_requests = 0;  ///< The largest N that fits by all three (0 when the engine does not start).
  std::string why;                ///< The first check that fails ("" when it fits).
};

inline plan_verdict verdict_of(const planner_result& r) {
  plan_verdict v;
  v.requests = r.plan.options.requests;
  v.context_tokens = r.plan.options.context_tokens;
  if (!r.budget_bytes || !r.requests_fit) return v;
  v.has_budget = true;
  v.plan_max_requests = r.parallel && r.cluster_fit ? capped_requests(r, r.cluster_fit->max_requests, r.parallel->dp)
                                                    : capped_requests(r, r.requests_fit->max_requests, 1);
  if (r.report) {
    if (r.report->vllm) v.engine_starts = r.report->vllm->starts;
    if (r.report->tokenspeed) v.engine_starts = r.report->tokenspeed->starts && r.report->tokenspeed->admits_context;
    if (r.report->sglang) v.engine_starts = r.report->sglang->sizes.starts;
    if (r.report->fit && r.report->fit->simulated) {
      v.simulated_max_requests = r.report->fit->max_requests * r.report->dp;
      v.simulated_lower_bound = r.report->fit->lower_bound;
    }
  }
  v.max_requests = v.engine_starts ? v.plan_max_requests : 0;
  // A simulated answer bounds what fits unless it is only a lower bound at or above the plan's.
  if (v.simulated_max_requests && !(v.simulated_lower_bound && *v.simulated_max_requests >= v.max_requests))
    v.max_requests = std::min(v.max_requests, *v.simulated_max_requests);
  if (v.plan_max_requests < v.requests)
    v.why =
        fmt::format("the plan fits {} request(s) of {} tokens per the budget", v.plan_max_requests, v.context_tokens);
  else if (!v.engine_starts)
    v.why =
        fmt::format("{} does not start with this budget", r.engine != nullptr ? engine_label(*r.engine) : "the engine");
  else if (v.max_requests < v.requests)
    v.why = fmt::format("what really fits (the engine's occupancy replayed) is {} request(s)", v.max_requests);
  v.fits = v.why.empty();
  return v;
}

/// The verdict's one line: "1 x 1048576 tokens FITS ..." / "DOES NOT FIT ..." / no budget.
inline std::string verdict_line(const plan_verdict& v) {
  if (!v.has_budget)
    return fmt::format("verdict: {} x {} tokens: no budget given (--memory-gib or --gpu-memory-gib): the plan only",
                       v.requests, v.context_tokens);
  if (v.fits)
    return fmt::format("verdict: {} x {} tokens FITS (at most {} request(s) of {} tokens)", v.requests,
                       v.context_tokens, v.max_requests, v.context_tokens);
  return fmt::format("verdict: {} x {} tokens DOES NOT FIT: {}; {} request(s) fit", v.requests, v.context_tokens, v.why,
                     v.max_requests);
}

inline nlohmann::ordered_json to_json(const planner_result& r) {
  using json = nlohmann::ordered_json;  // keys in the documented order
  const memory_plan& p = r.plan;
  json j;
  j["model"] = {{"name", std::string(r.model.name.view())},
                {"num_hidden_layers", r.model.num_hidden_layers},
                {"num_nextn_predict_layers", r.model.num_nextn_predict_layers},
                {"head_dim", r.model.head_dim},
                {"qk_rope_head_dim", r.model.qk_rope_head_dim},
                {"index_head_dim", r.model.index_head_dim},
                {"sliding_window", r.model.sliding_window},
                {"max_position_embeddings", r.model.max_position_embeddings},
                {"family", std::string(to_string(r.model.family))}};
  if (r.model.family == model_family::v4_1) {
    j["model"]["kv_source_layer_ids"] =
        std::vector<int>(r.model.kv_source_layer_ids.begin(), r.model.kv_source_layer_ids.end());
    j["model"]["index_source_layer_ids"] =
        std::vector<int>(r.model.index_source_layer_ids.begin(), r.model.index_source_layer_ids.end());
    j["model"]["dspark_block_size"] = r.model.dspark_block_size;
  }
  j["layers"] = json::array();
  const std::vector<std::uint64_t> fixed = fixed_bytes_per_request(p, r.schema.num_layers);
  const std::vector<double> per_token = bytes_per_context_token(p, r.schema.num_layers);
  const bool v41 = r.model.family == model_family::v4_1;
  for (const layer_cache_schema& l : r.schema) {
    json layer = {{"index", l.layer_idx}, {"attention", std::string(to_string(l.attn_type))}};
    // V4.1: the config's ratio (0 for SWA layers), the role and the owner whose caches it reads.
    layer["compress_ratio"] = v41 && l.attn_type == attention_kind::swa ? 0 : l.compress_ratio;
    if (v41) {
      layer["role"] = std::string(to_string(l.role));
      layer["kv_owner"] = l.kv_owner >= 0 ? json(l.kv_owner) : json(nullptr);
    }
    layer["mtp"] = l.mtp;
    layer["cached"] = !l.mtp || p.options.cache_mtp;
    layer["bytes_per_context_token"] = per_token[static_cast<std::size_t>(l.layer_idx)];
    layer["fixed_bytes_per_request"] = fixed[static_cast<std::size_t>(l.layer_idx)];
    j["layers"].push_back(layer);
  }
  j["groups"] = groups_json(p, r.simulated ? &*r.simulated : nullptr);
  json plan = {{"requests", p.options.requests},
               {"context_tokens", p.options.context_tokens},
               {"tokens_per_step", p.options.tokens_per_step},
               {"prefill_chunk_tokens", p.options.prefill_chunk_tokens},
               {"indexer", std::string(plan_indexer(p))},
               {"cache_mtp", p.options.cache_mtp},
               {"engine", std::string(to_string(p.options.policy.engine))},
               {"engine_preset",
                r.engine != nullptr && !r.engine->preset.empty() ? json(std::string(r.engine->preset)) : json(nullptr)},
               {"pools", std::string(to_string(p.options.pools))},
               {"pool_structure", std::string(to_string(p.pools.structure))},
               {"overlap", p.options.policy.overlap},
               {"holding_requests", p.holding_requests},
               {"total_bytes", p.total_bytes},
               {"ideal_bytes", p.ideal_bytes},
               {"overhead", p.overhead()},
               {"main_layer_bytes_per_context_token", main_layer_bytes_per_context_token(p, r.model)}};
  if (r.model.family == model_family::v4_1)
    plan["format_set"] =
        std::string(to_string(p.options.formats.set == format_set::v4 ? format_set::v4 : format_set::v41));
  if (r.budget_bytes) {
    plan["budget_bytes"] = *r.budget_bytes;
    plan["max_requests"] = capped_requests(r, r.requests_fit->max_requests, 1);
    if (r.max_running > 0 && r.requests_fit->max_requests > r.max_running) {
      plan["max_requests_by_memory"] = r.requests_fit->max_requests;
      plan["max_running_requests"] = r.max_running;
    }
    plan["max_requests_total_bytes"] = r.requests_fit->total_bytes;
    plan["max_requests_bytes_left"] = r.requests_fit->bytes_left;
    plan["max_context_tokens"] = r.context_fit->max_context_tokens;
  }
  if (p.pools.structure == pool_structure::shared_block_pool) {
    plan["bytes_per_block"] = p.pools.bytes_per_block;
    plan["num_blocks"] = p.num_blocks;
    plan["planned_blocks"] = p.planned_blocks;
    plan["startup_blocks"] = p.startup_blocks;
  }
  if (p.pools.structure == pool_structure::parent_arena) {  // the null parent included in each
    plan["parent_bytes"] = p.pools.bytes_per_block;
    plan["num_parents"] = p.num_blocks;
    plan["planned_parents"] = p.planned_blocks;
    plan["startup_parents"] = p.startup_blocks;
    plan["request_parents"] = p.admission_blocks;
  }
  if (r.simulated) {
    plan["simulated_peak_bytes"] = r.simulated->peak_bytes;
    plan["simulations"] = r.simulated->simulations;
    if (p.pools.structure == pool_structure::shared_block_pool) {
      plan["simulated_peak_blocks"] = r.simulated->peak_blocks + 1;  // the null block included, as num_blocks
      plan["simulated_peak_admission_blocks"] = r.simulated->peak_admission_blocks + 1;
    }
    if (p.pools.structure == pool_structure::parent_arena)
      plan["simulated_peak_parents"] = sim_peak_parents(p.pools, *r.simulated) + 1;  // the null parent included
  }
  if (p.options.role != deployment_role::colocated) {
    plan["role"] = std::string(to_string(p.options.role));
    plan["handover_requests"] = p.options.handover_requests;
  }
  j["plan"] = plan;
  if (r.report) j["engine_report"] = engine_report_json(*r.report, p);
  if (r.parallel) {
    const parallel_config& pc = *r.parallel;
    j["parallel"] = {{"tp", pc.tp},
                     {"dp", pc.dp},
                     {"pp", pc.pp},
                     {"dcp", pc.dcp},
                     {"dcp_interleave_rows", pc.dcp_interleave_rows},
                     {"world_size", pc.world_size()}};
    j["ranks"] = json::array();
    for (const rank_plan_result& rp : r.ranks) {
      json layers = json::array();
      for (int l = rp.main_layers.first; l < rp.main_layers.end; ++l) layers.push_back(l);
      if (rp.mtp_layers && p.options.cache_mtp)
        for (int l = r.model.num_hidden_layers; l < r.model.num_layers(); ++l) layers.push_back(l);
      j["ranks"].push_back({{"rank", rp.coords.rank},
                            {"tp_rank", rp.coords.tp_rank},
                            {"dp_rank", rp.coords.dp_rank},
                            {"dcp_rank", rp.coords.dcp_rank},
                            {"stage", rp.coords.stage},
                            {"layers", layers},
                            {"requests", rp.requests},
                            {"groups", groups_json(rp.plan, nullptr)},
                            {"total_bytes", rp.plan.total_bytes}});
    }
    json cluster = {{"worst_rank", r.worst.worst_rank}, {"worst_rank_bytes", r.worst.worst_bytes}};
    if (r.cluster_fit) {
      cluster["budget_bytes_per_gpu"] = *r.budget_bytes;
      cluster["max_requests"] = capped_requests(r, r.cluster_fit->max_requests, r.parallel->dp);
      if (capped_requests(r, r.cluster_fit->max_requests, r.parallel->dp) != r.cluster_fit->max_requests)
        cluster["max_requests_by_memory"] = r.cluster_fit->max_requests;
      cluster["max_context_tokens"] = r.cluster_fit->max_context_tokens;
    }
    j["cluster"] = cluster;
  }
  const plan_verdict v = verdict_of(r);
  j["fits"] = v.has_budget ? json(v.fits) : json(nullptr);
  json vj = {{"has_budget", v.has_budget}, {"requests", v.requests}, {"context_tokens", v.context_tokens}};
  if (v.has_budget) {
    vj["fits"] = v.fits;
    vj["plan_max_requests"] = v.plan_max_requests;
    vj["engine_starts"] = v.engine_starts;
    vj["simulated_max_requests"] = v.simulated_max_requests ? json(*v.simulated_max_requests) : json(nullptr);
    vj["simulated_lower_bound"] = v.simulated_lower_bound;
    vj["max_requests"] = v.max_requests;
    vj["why"] = v.why.empty() ? json(nullptr) : json(v.why);
  }
  vj["line"] = verdict_line(v);
  j["verdict"] = vj;
  return j;
}

inline std::string to_text(const planner_result& r) {
  const model_config& m = r.model;
  const memory_plan& p = r.plan;
  const layer_schedule sched = build_layer_schedule(m);
  std::string s = verdict_line(verdict_of(r)) + "\n";  // the answer first
  auto out = std::back_inserter(s);
  fmt::format_to(out, "{}: {} layers + {} MTP, head_dim {} ({} NoPE + {} RoPE), index_head_dim {}, ", m.name.view(),
                 m.num_hidden_layers, m.num_nextn_predict_layers, m.head_dim, m.head_dim - m.qk_rope_head_dim,
                 m.qk_rope_head_dim, m.index_head_dim);
  fmt::format_to(out, "sliding_window {}, max_position_embeddings {}\n",
                 m.sliding_window > 0 ? std::to_string(m.sliding_window) : std::string("none"),
                 m.max_position_embeddings);
  if (m.family == model_family::v3_2) {
    fmt::format_to(out, "main layers: {} MLA; MTP layers: {} MLA (each a latent row and an indexer key per token)\n",
                   sched.count(attention_kind::mla, false),
                   sched.count(attention_kind::mla) - sched.count(attention_kind::mla, false));
  } else if (m.family == model_family::v4_1) {
    fmt::format_to(out,
                   "main layers: {} SWA + {} CSA2 + {} CSA1, owners (kv_source_layer_ids) {}; {} DSpark draft layers "
                   "(SWA only, dspark_block_size {}); format set {}\n",
                   sched.count(attention_kind::swa, false), sched.count(attention_kind::csa2, false),
                   sched.count(attention_kind::csa1, false), fmt::join(m.kv_source_layer_ids, ", "),
                   m.num_nextn_predict_layers, m.dspark_block_size,
                   to_string(p.options.formats.set == format_set::v4 ? format_set::v4 : format_set::v41));
    if (m.dspark_block_size > 0 && p.options.tokens_per_step == 1)
      fmt::format_to(out, "(with DSpark each decode step verifies 1 + {} tokens: plan it with --tokens-per-step {})\n",
                     m.dspark_block_size, m.dspark_block_size + 1);
  } else {
    fmt::format_to(out, "main layers: {} SWA + {} CSA + {} HCA; MTP layers: {} SWA + {} CSA + {} HCA\n",
                   sched.count(attention_kind::swa, false), sched.count(attention_kind::csa, false),
                   sched.count(attention_kind::hca, false),
                   sched.count(attention_kind::swa) - sched.count(attention_kind::swa, false),
                   sched.count(attention_kind::csa) - sched.count(attention_kind::csa, false),
                   sched.count(attention_kind::hca) - sched.count(attention_kind::hca, false));
  }
  fmt::format_to(out, "row formats:");
  for (const group_plan& g : p)
    for (int i = 0; i < g.spec.num_pools; ++i) {
      const pool_spec& ps = g.spec.pools[static_cast<std::size_t>(i)];
      fmt::format_to(out, " {}{} {} ({} B);", to_string(g.spec.id), g.spec.num_pools > 1 ? fmt::format("[{}]", i) : "",
                     ps.format.name, ps.row_bytes);
    }
  fmt::format_to(out, "\n\n");

  const std::vector<std::uint64_t> fixed = fixed_bytes_per_request(p, r.schema.num_layers);
  const std::vector<double> per_token = bytes_per_context_token(p, r.schema.num_layers);
  fmt::format_to(out, "{:>5}  {:<9}  {:>5}  {:<3}  {:>16}  {:>16}\n", "layer", "attention", "ratio", "mtp",
                 "B/context token", "fixed B/request");
  const bool v41 = m.family == model_family::v4_1;
  for (const layer_cache_schema& l : r.schema) {
    std::string role;  // V4.1: who owns the global caches it reads
    if (v41 && l.role != layer_role::none)
      role = l.role == layer_role::owner || l.kv_owner < 0 ? fmt::format("  {}", to_string(l.role))
                                                           : fmt::format("  {} of {}", to_string(l.role), l.kv_owner);
    fmt::format_to(out, "{:>5}  {:<9}  {:>5}  {:<3}  {:>16.4f}  {:>16}{}{}\n", l.layer_idx, l.attn_type,
                   v41 && l.attn_type == attention_kind::swa ? 0 : l.compress_ratio, l.mtp ? "yes" : "no",
                   per_token[static_cast<std::size_t>(l.layer_idx)], fixed[static_cast<std::size_t>(l.layer_idx)], role,
                   l.mtp && !p.options.cache_mtp ? "  (not cached)" : "");
  }
  fmt::format_to(out,
                 "(B/context token: compressed rows (KV + indexer key) per token of context; fixed B/request: the "
                 "sliding windows and compressor states a request keeps in the layer, min(L, window) rows)\n");
  fmt::format_to(out, "global KV per token of context over the {} main layers: {:.2f} B\n", m.num_hidden_layers,
                 main_layer_bytes_per_context_token(p, m));

  fmt::format_to(out, "\n{:<32} {:<7} {:<14} {:>4} {:>6} {:>8} {:>6} {:>10} {:>9} {:>12} {:>16}", "group", "family",
                 "retention", "rows", "tokens", "window", "layers", "page B", "pages/L", "pages", "bytes");
  if (r.simulated) fmt::format_to(out, " {:>9} {:>6}", "sim/L", "slack");
  fmt::format_to(out, "\n");
  for (int gi = 0; gi < p.num_groups; ++gi) {
    const group_plan& g = p.groups[static_cast<std::size_t>(gi)];
    const paged_cache_group_spec& gs = g.spec;
    fmt::format_to(out, "{:<32} {:<7} {:<14} {:>4} {:>6} {:>8} {:>6} {:>10} {:>9} {:>12} {:>16}", to_string(gs.id),
                   gs.family, gs.retention, gs.rows_per_page, gs.page_size_tokens(),
                   gs.has_sliding_window() ? std::to_string(g.window_tokens) : std::string("-"), gs.num_layers,
                   engine_page_bytes(p, gi), g.pages_per_layer, g.total_pages(), g.bytes);
    if (r.simulated) {
      const std::int64_t sim = simulated_group_pages(p, *r.simulated, gi);
      fmt::format_to(out, " {:>9} {:>+6}{}", sim, g.pages_per_layer - sim, g.pages_per_layer < sim ? "  BELOW" : "");
    }
    fmt::format_to(out, "\n");
  }
  const bool shared = p.pools.structure == pool_structure::shared_block_pool;
  const bool arena = p.pools.structure == pool_structure::parent_arena;
  if (p.pools.structure == pool_structure::ratio_pools)
    fmt::format_to(out,
                   "(rows, tokens, page B: per page of the library's layout; pages/L, pages: none, SGLang sizes pools "
                   "in tokens, not pages per request (its pool sizes: the engine section); bytes: what SGLang's "
                   "configurator charges the group's pool at the plan's budget; the total is that budget)\n");
  else if (arena)
    fmt::format_to(out,
                   "(rows, tokens: per page of the library's layout; window: tokens a sliding group keeps per request; "
                   "page B: one page of one layer, all pools; pages/L: the group's pages (each over all its layers), "
                   "H x per request + prompt pages; bytes: the parents its pages bind{})\n",
                   r.simulated ? "; sim/L: the simulator's peak pages of the group; slack: pages/L - sim/L" : "");
  else if (shared)
    fmt::format_to(out,
                   "(rows, tokens: per page of the library's layout; window: tokens a sliding group keeps per request; "
                   "page B: one page of one layer, all pools, as {} pads it; pages/L: blocks of its engine group "
                   "(table), H x per request + prompt blocks, the pool's null block apart; bytes: what its pages take "
                   "of those blocks{})\n",
                   to_string(p.options.policy.engine),
                   r.simulated ? "; sim/L: the simulator's peak blocks of that table; slack: pages/L - sim/L" : "");
  else
    fmt::format_to(out,
                   "(rows, tokens: per page; window: tokens a sliding group keeps per request; page B: one page of "
                   "one layer, all pools; pages/L: pages per layer, H x per request + prompt pages + 1 null page; "
                   "pages: all layers{})\n",
                   r.simulated ? "; sim/L: the simulator's peak pages per layer, null page included; slack: pages/L - "
                                 "sim/L"
                               : "");
  fmt::format_to(out,
                 "\nplan: {} request(s) x {} tokens (indexer {}, {} token(s)/step, prefill chunk {}, MTP {}), "
                 "engine {}{}{}; {} request(s) hold pages at once\n",
                 p.options.requests, p.options.context_tokens, plan_indexer(p), p.options.tokens_per_step,
                 p.options.prefill_chunk_tokens, p.options.cache_mtp ? "cached" : "not cached",
                 to_string(p.options.policy.engine), p.options.policy.overlap ? " with overlap" : "",
                 p.options.role == deployment_role::prefill ? ", prefill role (prompts held until transferred)"
                 : p.options.role == deployment_role::decode
                     ? fmt::format(", decode role with {} request(s) being received", p.options.handover_requests)
                     : std::string(),
                 p.holding_requests);
  fmt::format_to(out, "  total {} B ({}), ideal {} B ({}), overhead {:.3f}x\n", p.total_bytes,
                 human_bytes(p.total_bytes), p.ideal_bytes, human_bytes(p.ideal_bytes), p.overhead());
  if (shared)
    fmt::format_to(out,
                   "  = {} blocks x {} B: the tables' {} blocks + 1 null block{} (one shared block pool, --pools own "
                   "for one pool per group)\n",
                   p.num_blocks, p.pools.bytes_per_block, p.planned_blocks - 1,
                   p.startup_blocks > p.planned_blocks
                       ? fmt::format(", raised to vLLM's startup need of {} blocks", p.startup_blocks)
                       : std::string());
  if (arena)
    fmt::format_to(
        out,
        "  = {} parents x {} B: the groups' {} parents + 1 null parent{} (tokenspeed's parent arena, --pools "
        "own for one pool per group)\n",
        p.num_blocks, p.pools.bytes_per_block, p.planned_blocks - 1,
        p.num_blocks > p.planned_blocks
            ? fmt::format(", raised to what tokenspeed needs to start ({}) and to admit one request of {} "
                          "tokens ({}), as it allocates them",
                          p.startup_blocks - 1, p.options.context_tokens, p.admission_blocks - 1)
            : std::string());
  if (r.simulated && arena) {  // pages bind parents: the peak in parents, the plan's groups' parents beside it
    const std::int64_t peak = sim_peak_parents(p.pools, *r.simulated) + 1;
    fmt::format_to(out,
                   "  simulated peak {} parents ({} B, sum of ceil(peak pages / K), the null parent included) over {} "
                   "workloads; the groups' parents / peak {:.3f}\n",
                   peak, static_cast<std::uint64_t>(peak) * static_cast<std::uint64_t>(p.pools.bytes_per_block),
                   r.simulated->simulations, static_cast<double>(p.planned_blocks) / static_cast<double>(peak));
  } else if (r.simulated) {
    fmt::format_to(out, "  simulated peak {} B ({}) over {} workloads; plan / peak {:.3f}\n", r.simulated->peak_bytes,
                   human_bytes(r.simulated->peak_bytes), r.simulated->simulations,
                   static_cast<double>(p.total_bytes) / static_cast<double>(r.simulated->peak_bytes));
    if (shared)
      fmt::format_to(out,
                     "  simulated peak {} blocks in use, {} at an admission (vLLM's gate), the null block included\n",
                     r.simulated->peak_blocks + 1, r.simulated->peak_admission_blocks + 1);
  }
  fmt::format_to(out, "  (ideal: the requests' exact rows, without page rounding, prefill chunk or null pages)\n");
  if (r.budget_bytes) {
    const request_capacity& rq = *r.requests_fit;
    fmt::format_to(out, "budget {} B ({}):\n", *r.budget_bytes, human_bytes(*r.budget_bytes));
    if (r.max_running > 0 && rq.max_requests > r.max_running)
      fmt::format_to(out,
                     "  max requests at {} tokens: {} (the engine runs at most {} at once: --max-running-requests, "
                     "{}; memory alone fits {})\n",
                     p.options.context_tokens, r.max_running, r.max_running,
                     p.options.policy.engine == engine_kind::vllm     ? "vLLM's max_num_seqs"
                     : p.options.policy.engine == engine_kind::sglang ? "SGLang's max_running_requests"
                                                                      : "tokenspeed's max_num_seqs",
                     rq.max_requests == std::numeric_limits<std::int64_t>::max() ? std::string("any number")
                                                                                 : std::to_string(rq.max_requests));
    else if (rq.max_requests == std::numeric_limits<std::int64_t>::max())
      fmt::format_to(out,
                     "  max requests at {} tokens: any number (at most {} hold pages at once: the step budget, not "
                     "memory, bounds them; {} B used, {} B left)\n",
                     p.options.context_tokens, p.options.prefill_chunk_tokens, rq.total_bytes, rq.bytes_left);
    else if (rq.max_requests > 0 && (shared || arena))
      fmt::format_to(out,
                     "  max requests at {} tokens: {} ({} B used, {} B left; {} needs {} B to start{}; a request "
                     "holds at most {} B, with a prompt chunk in flight, {} B on average)\n",
                     p.options.context_tokens, rq.max_requests, rq.total_bytes, rq.bytes_left,
                     shared ? "vLLM" : "tokenspeed", rq.fixed_bytes,
                     shared ? "" : fmt::format(" and admit one request of {} tokens", p.options.context_tokens),
                     rq.bytes_per_request, rq.total_bytes / static_cast<std::uint64_t>(rq.max_requests));
    else if (rq.max_requests > 0)
      fmt::format_to(
          out, "  max requests at {} tokens: {} ({} B used, {} B left; {} B fixed, the first request adds {} B)\n",
          p.options.context_tokens, rq.max_requests, rq.total_bytes, rq.bytes_left, rq.fixed_bytes,
          rq.bytes_per_request);
    else if (shared)
      fmt::format_to(out, "  max requests at {} tokens: 0 (vLLM needs {} B to start: {} blocks of {} B)\n",
                     p.options.context_tokens, rq.fixed_bytes, p.startup_blocks, p.pools.bytes_per_block);
    else
      fmt::format_to(out, "  max requests at {} tokens: 0 (one request needs {} B fixed + {} B)\n",
                     p.options.context_tokens, rq.fixed_bytes, rq.bytes_per_request);
    fmt::format_to(out, "  max context for {} request(s): {} tokens{}\n", p.options.requests,
                   r.context_fit->max_context_tokens,
                   r.context_fit->limited_by_model ? " (the model's whole context fits)" : "");
  }
  if (r.parallel) {
    const parallel_config& pc = *r.parallel;
    fmt::format_to(out, "\nranks: tp {} x dp {} x pp {} = {} GPUs, dcp {} (interleave {} rows)\n", pc.tp, pc.dp, pc.pp,
                   pc.world_size(), pc.dcp, pc.dcp_interleave_rows);
    fmt::format_to(out, "{:>6} {:>4} {:>4} {:>4} {:>5} {:>13} {:>9} {:>16}\n", "rank", "tp", "dp", "dcp", "stage",
                   "layers", "requests", "bytes");
    for (const rank_plan_result& rp : r.ranks)
      fmt::format_to(out, "{:>6} {:>4} {:>4} {:>4} {:>5} {:>13} {:>9} {:>16}\n", rp.coords.rank, rp.coords.tp_rank,
                     rp.coords.dp_rank, rp.coords.dcp_rank, rp.coords.stage,
                     fmt::format("{}-{}{}", rp.main_layers.first, rp.main_layers.end - 1,
                                 rp.mtp_layers && p.options.cache_mtp ? "+MTP" : ""),
                     rp.requests, rp.plan.total_bytes);
    fmt::format_to(out, "worst rank {}: {} B ({})\n", r.worst.worst_rank, r.worst.worst_bytes,
                   human_bytes(r.worst.worst_bytes));
    if (r.cluster_fit)
      fmt::format_to(out,
                     "cluster, {} B per GPU: max requests at {} tokens: {}; max context for {} request(s): {} tokens\n",
                     *r.budget_bytes, p.options.context_tokens,
                     capped_requests(r, r.cluster_fit->max_requests, pc.dp) == std::numeric_limits<std::int64_t>::max()
                         ? std::string("any number")
                         : std::to_string(capped_requests(r, r.cluster_fit->max_requests, pc.dp)),
                     p.options.requests, r.cluster_fit->max_context_tokens);
  }
  if (r.report) s += engine_report_text(*r.report, p);
  return s;
}

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
  app.add_option("--requests", a.requests, "Concurrent requests N")->transform(kDecimalInt)->capture_default_str();
  app.add_option("--memory-gib", a.memory_gib, memory_gib_help)->transform(kMemorySize);
  app.add_option("--indexer", a.indexer,
                 "V4 indexer key format: fp8 (132 B/row, the default) or mxfp4 (68 B/row); V4.1 models take "
                 "theirs from --format-set")
      ->check(CLI::IsMember({"fp8", "mxfp4"}));
  app.add_option("--format-set", a.format_set,
                 "V4.1 default formats: v41 (default: SWA v4.1.fp8, global v4.1.fp4, index v4.indexer_mxfp4) or "
                 "v4 (the Hopper fallback: v4.fp8_ds_mla rows, v4.indexer_fp8 keys)")
      ->check(CLI::IsMember({"v41", "v4"}));
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
  app.add_option("--tp", a.tp, "Tensor parallel size: replicates the cache")
      ->transform(kDecimalInt)
      ->capture_default_str();
  app.add_option("--dp", a.dp, "Data parallel (attention) size: splits the requests")
      ->transform(kDecimalInt)
      ->capture_default_str();
  app.add_option("--pp", a.pp, "Pipeline stages: split the main layers (vLLM's get_pp_indices)")
      ->transform(kDecimalInt)
      ->capture_default_str();
  app.add_option("--pp-layers", a.pp_layers, "Explicit main layers per stage, e.g. 22,21 (needs --pp)")
      ->check(kNonEmpty);
  app.add_option("--dcp", a.dcp, "Decode context parallel size (divides --tp): shards the compressed KV")
      ->transform(kDecimalInt)
      ->capture_default_str();
  app.add_option("--dcp-interleave", a.dcp_interleave, "Rows dealt to one DCP rank in turn")
      ->transform(kDecimalInt)
      ->capture_default_str();
}

/// Runs the planner on `args` (without the program name). Returns the exit code.
/// `max_sim_visits` bounds the simulations' work (request visits; the fuzz target lowers it).
inline int run_planner(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                       std::int64_t max_sim_visits = kSimulateMaxVisits) {
  planner_args a;
  a.max_sim_visits = max_sim_visits;
  CLI::App app{"dsv4-cache-plan: KV-cache layout and memory plan of a DeepSeek V4 model", "dsv4-cache-plan"};
  add_model_options(app, a, "A memory budget in GiB: also print the largest N and L that fit");
  app.add_option("--tokens-per-step", a.tokens_per_step, "Tokens per decode step s (1 + speculative tokens)")
      ->transform(kDecimalInt)
      ->capture_default_str();
  app.add_option("--prefill-chunk", a.prefill_chunk, "Prefill chunk tokens B: the token budget of one scheduler step")
      ->transform(kDecimalInt)
      ->capture_default_str();
  app.add_option("--engine", a.engine,
                 "Engine to plan for: vllm (vLLM v1's shared block pool, the newest preset; vllm@2026.11), "
                 "tokenspeed (mixed batches), tokenspeed-default or sglang (SGLang's DeepSeek V4 ratio pools, "
                 "cce0a124: DeepSeek V4 only)")
      ->check(kNonEmpty)
      ->capture_default_str();
  app.add_option("--pools", a.pools,
                 "engine: price pages as the engine allocates them (vLLM: one shared block pool); own: one pool per "
                 "group, to show what the engine's structure costs")
      ->check(CLI::IsMember({"engine", "own"}))
      ->capture_default_str();
  app.add_option("--swa-full-tokens-ratio", a.swa_ratio,
                 "SGLang's --swa-full-tokens-ratio: its SWA pool as a share of its full tokens (DeepSeek V4 default "
                 "0.1; 0.8, its class default, becomes 0.1 as SGLang does); --engine sglang only")
      ->check(kDecimalNumber);
  app.add_option("--max-running-requests", a.max_running,
                 "The engine's cap on requests running at once (vLLM max_num_seqs; SGLang --max-running-requests, "
                 "which sizes its HCA-state reservation; default the engine's: vLLM 1024, tokenspeed 160, SGLang 256), "
                 "applied to what really fits")
      ->transform(kDecimalInt);
  app.add_flag("--overlap", a.overlap,
               "Async scheduling: one more step in flight (2s in place of s; vLLM: max_in_flight_tokens = 2 x B; "
               "SGLang: its default, always modelled)");
  add_parallel_options(app, a);
  app.add_option("--role", a.role,
                 "colocated; prefill (N prompts held whole until transferred) or decode (N decoding + --handover)")
      ->check(CLI::IsMember({"colocated", "prefill", "decode"}))
      ->capture_default_str();
  app.add_option("--handover", a.handover, "Decode role: requests being received at once")
      ->transform(kDecimalInt)
      ->capture_default_str();
  app.add_option("--gpu-memory-gib", a.gpu_memory_gib,
                 "GPU memory (GiB, or with a unit: 141GB, 144GiB); the KV budget is this minus --reserved-gib, "
                 "which it needs")
      ->transform(kMemorySize);
  app.add_option("--reserved-gib", a.reserved_gib,
                 "Memory of each GPU for weights and activations (GiB, or with a unit), with --gpu-memory-gib")
      ->transform(kMemorySize);
  app.add_flag("--simulate", a.simulate,
               "Also replay the engine's allocator (every concrete rule, prompt lengths, arrivals) on its pool and "
               "print its peak pages beside the plan's; refused above 4096 requests or an estimated 4e10 request "
               "steps (about 10 s)");
  app.add_flag("--no-mtp", a.no_mtp, "Do not cache the MTP layers");
  app.add_flag("--json", a.json, "Print one JSON object instead of tables");
  app.add_flag("--require-fit", a.require_fit,
               "Exit 1 when N x L does not fit the budget (the verdict); needs --memory-gib or --gpu-memory-gib");
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
    app.parse(reversed);
    a.preset_given = app.count("--preset") > 0;
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    err << "dsv4-cache-plan: error: " << one_line(e.what()) << " (see --help)\n";
    return 2;
  }
  try {
    if (a.require_fit && !a.memory_gib && !a.gpu_memory_gib)
      throw std::invalid_argument("--require-fit needs a budget: --memory-gib or --gpu-memory-gib with --reserved-gib");
    const planner_result r = compute(a);
    // replace: a model name from a file name need not be valid UTF-8
    const std::string text =
        a.json ? to_json(r).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n" : to_text(r);
    out << text << std::flush;
    if (!out) {
      err << "dsv4-cache-plan: error: writing the output failed\n";
      return 3;
    }
    return a.require_fit && !verdict_of(r).fits ? 1 : 0;
  } catch (const std::invalid_argument& e) {  // bad input: the library's errors, config_error included
    err << "dsv4-cache-plan: error: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {  // anything else is a bug, not the user's input
    err << "dsv4-cache-plan: internal error: " << one_line(e.what()) << "\n";
    return 3;
  }
}

}  // namespace dsv4::cache::cli
