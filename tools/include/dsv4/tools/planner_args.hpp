// dsv4-cache-plan's arguments: the flags as parsed (`planner_args`), their validators (decimal
// integers, memory sizes with units), the presets, the format flags and the option groups the
// planner, dsv4-cache-layout and the CUDA sample share. Nothing here computes a plan.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "dsv4/cache.hpp"
#include "dsv4/cache/alloc_sim.hpp"
#include "dsv4/cache/config_json.hpp"
#include "dsv4/cache/format.hpp"
#include "dsv4/cache/parallel.hpp"
#include "dsv4/tools/engine_report.hpp"
#include "dsv4/tools/messages.hpp"

namespace dsv4::cache::cli {

/// The planner's inputs, as parsed from the command line.
struct planner_args {
  std::string preset = "flash";
  bool preset_given = true;  // false: --preset left at its default (errors then name the model, not a flag)
  std::string config_path;
  /// Not a flag: a config.json's text given inline (the Python package's `Model.from_config(dict)`),
  /// read in place of --config / --preset when not empty; `config_name` names the model.
  std::string config_text;
  std::string config_name;
  std::optional<std::int64_t> context;  // none: the model's max_position_embeddings
  std::int64_t requests = 1;
  std::optional<double> memory_gib;
  std::optional<std::string> indexer;           // --indexer fp8|mxfp4 (V4; none: fp8)
  std::string format_set;                       // --format-set v41|v4 (V4.1; empty: v41)
  std::string kv_format;                        // --kv-format NAME: every main-KV pool
  std::vector<std::string> group_formats;       // --format GROUP=NAME, repeatable
  std::string indexer_format;                   // --indexer-format NAME
  std::optional<std::int64_t> tokens_per_step;  // none: the engine's (1: no speculative decoding)
  std::optional<std::int64_t> prefill_chunk;    // none: the engine's step budget (8,192 for all three)
  bool mtp = false;           // --mtp: cache the MTP layers (a draft model; the engines' default: none)
  bool no_mtp = false;        // --no-mtp
  std::string gpu;            // --gpu NAME (none: an H200, Hopper): the defaults and refusals that depend on it
  bool dp_attention = false;  // --enable-dp-attention (SGLang: data-parallel attention inside the TP group)
  bool json = false;
  bool verbose = false;  // --verbose: every table
  bool layers = false;   // --layers / --groups / --ranks: a table after the screen
  bool groups = false;
  bool ranks = false;
  bool summary = false;                       // --summary: one line
  std::string svg_path;                       // --svg FILE
  bool require_fit = false;                   // --require-fit: exit 1 when the verdict is "does not fit"
  std::string engine{kEngines.front().name};  // the registry's first: vLLM
  std::string pools = "engine";               // --pools engine|own
  std::optional<std::int64_t> max_running;    // --max-running-requests (default: the engine's)
  std::optional<double> swa_ratio;            // --swa-full-tokens-ratio (SGLang only; default 0.1)
  bool overlap = false;                       // --overlap (the engines' default: on)
  bool no_overlap = false;                    // --no-overlap
  bool simulate = false;
  std::int64_t max_sim_visits = kSimulateMaxVisits;  // not a flag: the fuzz target lowers it (inputs end in seconds)
  /// Not a flag: the library's pages alone, no engine's defaults or refusals (dsv4-cache-layout
  /// without --engine): every cache the model has (the MTP layers' too unless --no-mtp), the
  /// family's default formats whatever the GPU.
  bool library_defaults = false;
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
  // The KV budget as the engine derives it from --gpu (issue 42): the engine's memory fraction,
  // vLLM's fixed KV budget, expert parallelism for the weights per rank.
  std::optional<double> gpu_memory_utilization;       // --gpu-memory-utilization (vLLM, tokenspeed)
  std::optional<double> mem_fraction_static;          // --mem-fraction-static (SGLang)
  std::optional<std::int64_t> kv_cache_memory_bytes;  // --kv-cache-memory-bytes (vLLM)
  std::int64_t ep = 1;                                // --ep: GPUs the routed experts are spread over
  /// Not a flag: derive the budget from --gpu when no budget is given (dsv4-cache-layout: false,
  /// its pages do not depend on a budget).
  bool budget_chain = true;
};

/// The exit codes of dsv4-cache-plan and dsv4-cache-layout, one table (both --help footers and
/// the README print it).
inline constexpr std::string_view kExitCodesHelp =
    "Exit codes (dsv4-cache-plan and dsv4-cache-layout):\n"
    "  0  success\n"
    "  1  the answer is no: --require-fit and N x L does not fit; diff: incompatible; check: wrong\n"
    "  2  bad input: one line on stderr, nothing on stdout (--require-fit without a budget too); an output\n"
    "     path (--svg FILE, golden's DIR and its files) that is not a new file, a regular file you may write\n"
    "     or a symlink to one (a device, FIFO, socket, directory, dangling or looping symlink), or --svg\n"
    "     without .svg: nothing written\n"
    "  3  a write error (stdout, --svg, golden's DIR: the system's reason; nothing left half-written) or an\n"
    "     internal error\n"
    "  4  diff: different, but compatible for page transfer";

/// --simulate refuses more requests than this (each simulated step visits the running ones);
/// beyond that it refuses an estimated work above kSimulateMaxWork (engine_report.hpp).
inline constexpr std::int64_t kSimulateMaxRequests = 4096;

/// A memory size the user typed (held as GiB after `kMemorySize`), echoed in their unit: "155 GB
/// (144.35 GiB)" when it is a whole number of GB, MB or TB, else "131.3 GiB" (at most 4 decimals,
/// no float noise); below 1 MB in bytes, from 10^6 GiB up in 6 significant digits.
inline std::string memory_text(double gib) {
  const double bytes = gib * 1073741824.0;
  const auto plain = [](double v) {  // up to 4 decimals, trailing zeros dropped
    std::string t = fmt::format("{:.4f}", v);
    while (t.back() == '0') t.pop_back();
    if (t.back() == '.') t.pop_back();
    return t;
  };
  if (std::isfinite(bytes) && bytes >= 1e6 && std::abs(gib - std::round(gib)) > 1e-9) {
    for (const auto& [unit, scale] : {std::pair{"TB", 1e12}, std::pair{"GB", 1e9}, std::pair{"MB", 1e6}}) {
      const double n = bytes / scale;
      if (n >= 1.0 && std::abs(n - std::round(n)) <= 1e-9 * n)
        return fmt::format("{} {} ({:.2f} GiB)", static_cast<std::int64_t>(std::round(n)), unit, gib);
    }
  }
  if (!std::isfinite(gib) || std::abs(gib) >= 1e6) return fmt::format("{:.6g} GiB", gib);
  if (gib != 0.0 && std::abs(bytes) < 1e6) return fmt::format("{:.3g} B", bytes);  // below 1 MB: bytes
  return plain(gib) + " GiB";
}

/// A GiB count as bytes; fails unless 1 byte <= gib x 2^30 < 2^64 (a budget is never
/// silently rounded to 0 bytes).
inline std::uint64_t gib_to_bytes(double gib, const char* what = "--memory-gib") {
  constexpr double kMaxBytes = 18446744073709551616.0;  // 2^64
  const double bytes = gib * 1073741824.0;
  if (!std::isfinite(gib) || !(bytes >= 1.0) || !(bytes < kMaxBytes))
    throw std::invalid_argument(fmt::format(
        "{} must be at least 1 byte (2^-30 GiB) and below 2^34 GiB (2^64 bytes), got {}", what, memory_text(gib)));
  return static_cast<std::uint64_t>(bytes);
}

/// The flags' value rules as plain functions: the CLI11 validators (planner_flags.hpp) wrap them
/// and `check_values` applies them to typed values (the Python package's), so one value gets one
/// message whichever way it came. Each returns "" when `s` is valid, rewriting it in plain decimal
/// (a memory size: as GiB), else the rule it breaks with the value as typed.
///
/// A decimal integer of 64 bits: no "0x", "+" or blanks (CLI11 alone would read "0x10" as 16,
/// clamp 2^64 to INT64_MAX, read "0100" as octal and take an empty string as "not given").
inline std::string decimal_int_rule(std::string& s) {
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);  // base 10: no "0x", "+", blanks
  if (s.empty()) return "must not be empty";
  if (ec == std::errc::result_out_of_range) return "'" + s + "' does not fit in 64 bits";
  if (ec != std::errc() || ptr != end) return "'" + s + "' is not a decimal integer";
  s = std::to_string(v);
  return {};
}
/// A count (requests, ranks, rows): a decimal integer of at least 1 ("'0' must be at least 1").
inline std::string count_rule(std::string& s) {
  std::string error = decimal_int_rule(s);
  if (!error.empty()) return error;
  if (std::stoll(s) < 1) return "'" + s + "' must be at least 1";
  return {};
}
/// A decimal number: digits, '.', an exponent; no hex, nan or inf.
inline std::string decimal_number_rule(const std::string& s) {
  double v = 0;
  const char* end = s.data() + s.size();
  if (s.empty()) return "must not be empty";
  if (s.find_first_not_of("0123456789.eE+-") != std::string::npos) return "'" + s + "' is not a decimal number";
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end) return "'" + s + "' is not a decimal number";
  return {};
}
/// A memory size: a decimal number of GiB, or one with a unit: GB (10^9 B), GiB (2^30 B), MB, MiB,
/// TB, TiB (e.g. "141GB"). Rewrites `s` as GiB (exact: every unit is an integer number of bytes
/// and 2^30 a power of two, so GiB x 2^30 gives the bytes back).
inline std::string memory_size_rule(std::string& s) {
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
}

/// `text` (a memory size as typed, "141GB") in GiB for flag `flag`; throws std::invalid_argument
/// "--memory-gib: '12 parsecs' is not a memory size: ..." (the CLI's message).
inline double memory_size_gib(const std::string& flag, std::string text) {
  const std::string error = memory_size_rule(text);
  if (!error.empty()) throw std::invalid_argument(flag + ": " + error);
  return std::stod(text);
}

using dsv4::tools::one_line;  // messages.hpp: one printable line of valid UTF-8

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
    throw std::invalid_argument("--reserved-gib must be >= 0, got " + memory_text(reserved));
  if (!(reserved < *a.gpu_memory_gib))
    throw std::invalid_argument("--reserved-gib " + memory_text(reserved) + " must be below --gpu-memory-gib " +
                                memory_text(*a.gpu_memory_gib) + ": no KV budget left");
  return gib_to_bytes(*a.gpu_memory_gib - reserved, "--gpu-memory-gib minus --reserved-gib");
}

/// Refuses the flags engine `e`'s own pools are not modelled with (engines/engine.hpp
/// `engine_traits`, `engine_spec::stages_modelled`), naming the flag, the engine and the reason.
inline void check_engine_flags(const planner_args& a, const engine_spec& e) {
  const engine_traits& t = e.traits;
  const std::string label = a.engine.empty() ? std::string(e.name) : a.engine;  // as the user gave it
  const auto refuse = [&](const std::string& what) {
    throw std::invalid_argument("--engine " + label + ": " + what + "; plan it with --pools own (or another engine)");
  };
  if (!e.stages_modelled && (a.pp != 1 || !a.pp_layers.empty()))
    refuse(fmt::format("--pp {} (pipeline stages) is not modelled{}", a.pp, e.stages_note));
  if (!t.models_dcp && a.dcp != 1) refuse(fmt::format("--dcp {} (decode context parallelism) is not modelled", a.dcp));
  if (!t.models_pd && a.role != "colocated") refuse("--role " + a.role + " (PD disaggregation) is not modelled");
  if (!e.defaults.overlap_off_modelled && a.no_overlap)
    throw std::invalid_argument(
        fmt::format("--engine {}: --no-overlap ({}) is not modelled: its {}, its default, always is", label,
                    t.overlap_off_flag, e.defaults.overlap_name));
  if (a.prefill_chunk && *a.prefill_chunk < t.min_prefill_chunk)
    throw std::invalid_argument(fmt::format(
        "--engine {}: --prefill-chunk {} is below {}'s page of {} tokens: {}; give "
        "at least {}",
        label, *a.prefill_chunk, t.title, t.min_prefill_chunk, t.min_prefill_chunk_reason, t.min_prefill_chunk));
  if (!t.simulates && a.simulate)
    throw std::invalid_argument("--engine " + label + ": " + std::string(t.simulate_refusal));
}

/// The GPU --gpu names (gpu_catalog.hpp: its memory and compute capability; case, spaces and '-'
/// ignored), or the H200 when `name` is empty (the planner's assumption, said so). Throws naming
/// the value: a name the catalog lacks (listing its names), or a GPU whose engine defaults are not
/// modelled (the engines' GPU-dependent defaults are read for Hopper and Blackwell, SM 9.x / 10.x).
inline const gpu_entry& gpu_from(const std::string& name) {
  if (name.empty()) return find_gpu("H200");
  const gpu_entry* g = lookup_gpu(name);
  if (g == nullptr) {  // the GPUs the planner takes first, then the ones it knows but refuses
    std::string planned, refused;
    for (const gpu_entry& e : gpu_catalog) (e.sm_major >= 9 ? planned : refused) += fmt::format(", {}", e.name);
    throw std::invalid_argument(
        fmt::format("--gpu must be one of {}{}, got '{}'", planned.substr(2),
                    refused.empty() ? std::string() : fmt::format(" ({}: known, not modelled)", refused.substr(2)),
                    one_line(name)));
  }
  if (g->sm_major < 9)
    throw std::invalid_argument(fmt::format(
        "--gpu {}: {} {} GPU; the engines' GPU-dependent defaults (running cap, MXFP4 index keys, V4.1 formats) are "
        "modelled for Hopper and Blackwell GPUs (SM 9.x, 10.x) only",
        g->name, g->arch.starts_with('A') ? "an" : "a", g->arch));
  return *g;
}

/// A default turned on by `on_flag` or off by `off_flag`: none when neither is given; throws
/// naming both when both are.
inline std::optional<bool> flag_pair(bool on, bool off, std::string_view on_flag, std::string_view off_flag) {
  if (on && off)
    throw std::invalid_argument(fmt::format("{} and {} contradict each other: give one of them", on_flag, off_flag));
  if (on) return true;
  if (off) return false;
  return std::nullopt;
}

/// The names --indexer, --format-set, --pools and --role take (the CLI's lists and `check_values`').
inline const std::vector<std::string> kIndexerNames = {"fp8", "mxfp4"};
inline const std::vector<std::string> kFormatSetNames = {"v41", "v4"};
inline const std::vector<std::string> kPoolsNames = {"engine", "own"};
inline const std::vector<std::string> kRoleNames = {"colocated", "prefill", "decode"};

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

/// The flags' value rules applied to typed values, for the callers that fill `planner_args`
/// without parsing text (the Python package; CLI11's validators checked the CLI's as text): counts
/// at least 1, names from their lists, finite fractions, no empty name. Throws
/// std::invalid_argument with the CLI's message for the flag ("--tp: '0' must be at least 1",
/// "--pools: shared not in {engine,own}").
inline void check_values(const planner_args& a) {
  const auto count = [](std::string_view flag, std::int64_t v) {
    if (v < 1) throw std::invalid_argument(fmt::format("{}: '{}' must be at least 1", flag, v));
  };
  count("--requests", a.requests);
  count("--tp", a.tp);
  count("--dp", a.dp);
  count("--pp", a.pp);
  count("--dcp", a.dcp);
  count("--dcp-interleave", a.dcp_interleave);
  if (a.tokens_per_step) count("--tokens-per-step", *a.tokens_per_step);
  if (a.prefill_chunk) count("--prefill-chunk", *a.prefill_chunk);
  const auto member = [](std::string_view flag, const std::string& v, const std::vector<std::string>& names) {
    if (std::find(names.begin(), names.end(), v) == names.end())
      throw std::invalid_argument(fmt::format("{}: {} not in {{{}}}", flag, one_line(v), fmt::join(names, ",")));
  };
  if (a.config_path.empty() && a.config_text.empty()) member("--preset", a.preset, preset_names());
  if (a.indexer) member("--indexer", *a.indexer, kIndexerNames);
  if (!a.format_set.empty()) member("--format-set", a.format_set, kFormatSetNames);
  member("--pools", a.pools, kPoolsNames);
  member("--role", a.role, kRoleNames);
  const auto number = [](std::string_view flag, const std::optional<double>& v) {
    if (v && !std::isfinite(*v)) throw std::invalid_argument(fmt::format("{}: '{}' is not a decimal number", flag, *v));
  };
  number("--gpu-memory-utilization", a.gpu_memory_utilization);
  number("--mem-fraction-static", a.mem_fraction_static);
  number("--swa-full-tokens-ratio", a.swa_ratio);
  if (a.engine.empty()) throw std::invalid_argument("--engine: must not be empty");
  // A NUL would end the message that names the value (the text flags cannot hold one).
  for (const auto& [flag, v] :
       std::initializer_list<std::pair<std::string_view, const std::string*>>{{"--preset", &a.preset},
                                                                              {"--config", &a.config_path},
                                                                              {"--engine", &a.engine},
                                                                              {"--gpu", &a.gpu},
                                                                              {"--kv-format", &a.kv_format},
                                                                              {"--indexer-format", &a.indexer_format},
                                                                              {"--format-set", &a.format_set},
                                                                              {"--pp-layers", &a.pp_layers},
                                                                              {"--pools", &a.pools},
                                                                              {"--role", &a.role},
                                                                              {"--svg", &a.svg_path}})
    if (v->find('\0') != std::string::npos)
      throw std::invalid_argument(fmt::format("{}: must not hold a NUL byte, got '{}'", flag, one_line(*v)));
  for (const std::string& f : a.group_formats)
    if (f.find('\0') != std::string::npos)
      throw std::invalid_argument(fmt::format("--format: must not hold a NUL byte, got '{}'", one_line(f)));
  for (const std::string& f : a.group_formats)
    if (f.empty()) throw std::invalid_argument("--format: must not be empty");
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

}  // namespace dsv4::cache::cli
