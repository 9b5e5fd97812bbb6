// dsv4-cache-plan's computed report: `compute` turns the arguments into every figure the
// renderers print (the plan, the budget answers, the per-rank plans, the engine report, the
// simulation), and `verdict_of` / `breakdown_of` / `hint_of` / `capacity_curves` derive the
// operator screen's answers from it. Renderers (render_*.hpp) only format this report.
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
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsv4/tools/planner_args.hpp"

namespace dsv4::cache::cli {

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

/// A memory fraction as typed: at most three decimals, no trailing zeros (0.92, 0.897, 1).
inline std::string fraction_text(double f) {
  std::string s = fmt::format("{:.3f}", f);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

/// A size for the screen: GiB with two decimals from 1 GiB, MiB with one from 1 MiB, else KiB or
/// bytes; thousands separators in the integer part ("1,234.56 GiB").
inline std::string size_text(std::uint64_t bytes) {
  constexpr double kGiB = 1073741824.0;
  constexpr double kMiB = 1048576.0;
  const auto b = static_cast<double>(bytes);
  const auto with_commas = [](double v, int decimals, std::string_view unit) {
    std::string digits = fmt::format("{:.{}f}", v, decimals);
    const std::size_t dot = digits.find('.');
    const std::size_t n = dot == std::string::npos ? digits.size() : dot;
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {  // a comma before every group of three digits
      if (i > 0 && (n - i) % 3 == 0) out += ',';
      out += digits[i];
    }
    return out + digits.substr(n) + " " + std::string(unit);
  };
  if (b >= kGiB) return with_commas(b / kGiB, 2, "GiB");
  if (b >= kMiB) return with_commas(b / kMiB, 1, "MiB");
  if (bytes >= 1024) return with_commas(b / 1024.0, 1, "KiB");
  return fmt::format("{} B", bytes);
}

/// A request count, or "any number" when memory does not bound it.
inline std::string requests_text(std::int64_t n) {
  return n == std::numeric_limits<std::int64_t>::max() ? std::string("any number") : thousands(n);
}

/// A change of one flag that plans more requests of L in the same budget (the screen's hint).
struct plan_hint {
  std::string flag;                ///< As the user types it: "--prefill-chunk 2048".
  std::int64_t requests_now = 0;   ///< The plan's answer now (the cluster's with parallel flags).
  std::int64_t requests_then = 0;  ///< With the change.
  std::string why;                 ///< What the change trades.
  /// Both figures are the plan's bound (the formula's), not the replayed answer the verdict gives.
  bool plan_bound = false;
};

/// Max requests of each context under one engine, for the budget (the SVG's capacity curve).
struct capacity_curve {
  std::string engine;                                         ///< --engine name.
  std::vector<std::pair<std::int64_t, std::int64_t>> points;  ///< (context tokens, max requests), capped.
  std::string why_not;  ///< Why the engine has no curve for this model / these flags ("" when drawn).
  std::string label;    ///< engine_label ("vllm@2026.11"); empty when refused.
  /// What it assumes, as its report's assumptions say it: the scheduling and the running cap.
  std::vector<std::string> assumes;
  allocation_policy policy{};  ///< Its allocation policy (the scheduler: mixed batches or prefill first).
};

/// The value of an input the plan assumed.
using assumption_value = std::variant<bool, std::int64_t, double, std::string>;

/// One input of the plan and where its value came from (the screen's "assumes" line, JSON
/// `assumptions`): `source` "flag" (given), "engine default" (left out: the engine's, with the
/// engine code that sets it in `reference`, "owner/repo path@commit symbol") or "planner default"
/// (the GPU: an H200 when --gpu is left out).
struct assumption {
  std::string input;  ///< JSON key: "async_scheduling", "draft_layer", "max_running_requests", ...
  assumption_value value;
  std::string source;
  std::string reference;
  std::string text;  ///< For the screen: "async scheduling (vLLM's default)".
};

/// What the engine a plan's policy names calls itself in a sentence ("vLLM", "tokenspeed", "SGLang").
inline std::string engine_title_of(const allocation_policy& p) { return std::string(engine_of(p.engine).traits.title); }

/// The KV budget per GPU as the engine derives it from the GPU it runs on (issue 42; the chain
/// and each default's source: docs/engines/budget.md): the GPU's memory as the runtime reports it
/// (gpu_catalog.hpp) x the engine's memory fraction (vLLM --gpu-memory-utilization, SGLang
/// --mem-fraction-static, tokenspeed --gpu-memory-utilization; each engine's default when left
/// out) - the weights on the fullest GPU (weights.hpp, split as the engine splits them under
/// tp / dp / ep / pp) - a runtime reserve (kv_budget.hpp, an estimate: the engines measure theirs
/// in a profiling run). vLLM's --kv-cache-memory-bytes gives the KV budget itself. Bytes.
struct budget_derivation {
  bool derived = false;  ///< false: no chain (`why_not`); the plan has no budget
  std::string why_not;
  const gpu_entry* gpu = nullptr;
  kv_budget chain{};
  bool fixed = false;           ///< vLLM --kv-cache-memory-bytes: the KV budget as given
  std::string fraction_flag;    ///< "--gpu-memory-utilization", "--mem-fraction-static"
  std::string fraction_source;  ///< "flag" or "engine default"
  std::string fraction_reference;
  runtime_reserve reserve{};  ///< the estimate's terms (not used with --kv-cache-memory-bytes)
  std::string weights_split;  ///< "tp 8 (vLLM: attention, dense and experts split 8 ways)" ...
};

/// Everything the planner prints, computed before anything is printed.
struct planner_result {
  model_config model;
  model_cache_schema schema;
  memory_plan plan;
  const engine_spec* engine = nullptr;  ///< The engine planned for (--engine).
  std::optional<engine_report> report;  ///< Its pool, startup figures and (with a budget) what really fits.
  std::optional<std::uint64_t> budget_bytes;
  /// Without --memory-gib / --gpu-memory-gib: the budget derived from --gpu (`budget_derivation`).
  std::optional<budget_derivation> budget;
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
  /// With a budget: one change of a flag that plans more requests of L (see `hint_of`).
  std::optional<plan_hint> hint;
  /// With --svg: max requests against context under each modelled engine (`capacity_curves`).
  std::vector<capacity_curve> curves;
  /// Every input the plan assumed, in the order the screen says them.
  std::vector<assumption> assumptions;
  /// The GPUs the deployment takes (with parallel flags): tp x dp x pp, or with SGLang's data-parallel
  /// attention tp x pp (its DP workers share the TP group's GPUs).
  std::int64_t gpus = 1;
  bool dp_attention = false;
};

/// `n` requests (of `engines` engines together) capped at what the engines run at once.
inline std::int64_t capped_requests(const planner_result& r, std::int64_t n, std::int64_t engines) {
  if (r.max_running <= 0) return n;
  const std::int64_t cap = r.max_running > std::numeric_limits<std::int64_t>::max() / engines
                               ? std::numeric_limits<std::int64_t>::max()
                               : r.max_running * engines;
  return std::min(n, cap);
}

/// The plan's answer for the budget: the largest N of L (the cluster's with parallel flags), capped
/// at what the engines run at once; from the report's own searches. Needs a budget.
inline std::int64_t plan_max_requests(const planner_result& r) {
  return r.parallel && r.cluster_fit ? capped_requests(r, r.cluster_fit->max_requests, r.parallel->dp)
                                     : capped_requests(r, r.requests_fit->max_requests, 1);
}

/// The largest N of L the budget fits under options `o` (the cluster's with parallel flags),
/// capped at what the engines run at once; throws std::invalid_argument as the library.
inline std::int64_t plan_capacity(const planner_result& r, const plan_options& o) {
  if (r.parallel)
    return capped_requests(r, cluster_capacity_for_budget(r.model, o, *r.parallel, *r.budget_bytes).max_requests,
                           r.parallel->dp);
  return capped_requests(r, max_requests_for_budget(r.model, o, *r.budget_bytes).max_requests, 1);
}

/// The prefill chunk the screen's hint tries: a quarter of the planner's default 8192. A smaller
/// chunk holds fewer prompt pages in flight per step; it costs a longer time to first token.
inline constexpr std::int64_t kHintPrefillChunk = 2048;

/// One flag change that plans more requests of L in the same budget, or none: SGLang, a smaller
/// --swa-full-tokens-ratio (its report's search); the others, --prefill-chunk 2048 when the
/// chunk is larger (prompt pages in flight are bounded by the chunk). Needs a budget.
inline std::optional<plan_hint> hint_of(const planner_result& r) {
  if (!r.budget_bytes || !r.requests_fit) return std::nullopt;
  const plan_options& o = r.plan.options;
  try {
    const std::int64_t now = plan_max_requests(r);
    // The engine's own lever where its report has one (SGLang's SWA share).
    if (r.report && r.report->startup.hint) {
      const engine_hint& h = *r.report->startup.hint;
      return plan_hint{h.flag, now, h.requests, h.why};
    }
    // An engine whose lever is its SWA ratio (SGLang) has no step-budget hint, in its pools or own pools.
    if (engine_of(o.policy.engine).traits.takes_swa_ratio) return std::nullopt;
    if (o.prefill_chunk_tokens <= kHintPrefillChunk || o.tokens_per_step > kHintPrefillChunk) return std::nullopt;
    plan_options smaller = o;
    smaller.prefill_chunk_tokens = kHintPrefillChunk;
    const std::int64_t then = plan_capacity(r, smaller);
    if (then <= now) return std::nullopt;
    return plan_hint{fmt::format("--prefill-chunk {}", kHintPrefillChunk), now, then,
                     "fewer prompt pages in flight, later first token", true};
  } catch (const std::invalid_argument&) {  // the change is not valid for these options: no hint
    return std::nullopt;
  }
}

/// Where the model of `a` came from, for its errors: the config path, "--preset NAME", or
/// "DeepSeek-V4-Flash (the default model)".
inline std::string model_source(const planner_args& a, const model_config& m) {
  return !a.config_path.empty() ? a.config_path
         : a.preset_given       ? "--preset " + a.preset
                                : std::string(m.name.view()) + " (the default model)";
}

/// The budget flags that derive the budget from --gpu (given: the chain is asked for).
inline bool chain_flags_given(const planner_args& a) {
  return a.gpu_memory_utilization || a.mem_fraction_static || a.kv_cache_memory_bytes || a.ep != 1;
}

/// The engines whose pools are sized with --swa-full-tokens-ratio (`engine_traits::takes_swa_ratio`).
inline std::vector<std::string_view> engines_taking_swa_ratio() {
  std::vector<std::string_view> names;
  for (const std::string_view n : engine_family_names())
    if (find_engine(n)->traits.takes_swa_ratio) names.push_back(n);
  return names;
}

/// The KV budget per GPU derived as `e` derives it on `gpu` (see `budget_derivation`), for the
/// model `m` with the planner's parallel flags, draft layers (`mtp_loaded`), step budget T and
/// running cap S (the reserve estimate's terms). A model whose weights are not modelled (V4.1,
/// V3.2, a config without weight fields) gets no chain and says why; with a fraction flag given
/// that is an error. Throws std::invalid_argument naming the flag: a fraction outside (0, 1], a
/// flag the engine does not have, --ep that does not divide as the engine needs.
inline budget_derivation derive_budget(const planner_args& a, const model_config& m, const engine_spec& e,
                                       const gpu_entry& gpu, bool mtp_loaded, std::int64_t max_batched_tokens,
                                       std::int64_t max_seqs) {
  const engine_traits& t = e.traits;
  const std::string title(t.title);
  // A memory-fraction or budget flag of another engine is refused, naming the engine's own.
  for (const auto& [flag, given] :
       {std::pair{std::string_view("--gpu-memory-utilization"), a.gpu_memory_utilization.has_value()},
        std::pair{std::string_view("--mem-fraction-static"), a.mem_fraction_static.has_value()}})
    if (given && flag != t.fraction_flag) {
      const std::string_view other = flag;  // a named copy: clang 14 cannot capture a structured binding
      const auto owner = std::find_if(kEngines.begin(), kEngines.end(),
                                      [&](const engine_spec& x) { return x.traits.fraction_flag == other; });
      throw std::invalid_argument(fmt::format("{} is {}'s flag; {}'s memory fraction is {}", flag,
                                              owner != kEngines.end() ? owner->traits.title : "another engine", title,
                                              t.fraction_flag));
    }
  if (a.kv_cache_memory_bytes && !t.fixed_kv_bytes)
    throw std::invalid_argument(
        fmt::format("--kv-cache-memory-bytes is vLLM's flag; give {}'s budget with --memory-gib", title));
  if (a.ep < 1) throw std::invalid_argument(fmt::format("--ep must be >= 1, got {}", a.ep));
  for (const auto& [flag, v] : {std::pair{"--gpu-memory-utilization", a.gpu_memory_utilization},
                                std::pair{"--mem-fraction-static", a.mem_fraction_static}})
    if (v && !(*v > 0.0 && *v <= 1.0))
      throw std::invalid_argument(fmt::format("{} must be in (0, 1] (a fraction of the GPU's memory), got {}", flag,
                                              one_line(fmt::format("{}", *v))));
  budget_derivation b;
  b.gpu = &gpu;
  if (!m.arch.known) {
    b.why_not = m.arch.gap == arch_gap::v41_unmodelled ? "DeepSeek V4.1's weights (vision tower, Engram, DSpark draft) "
                                                         "are not modelled"
                : m.arch.gap == arch_gap::v32_unmodelled ? "DeepSeek V3.2's weights are not modelled"
                                                         : "the config has no weight fields (hidden_size, ...)";
    if (a.gpu_memory_utilization || a.mem_fraction_static || a.ep != 1)
      throw std::invalid_argument("the budget cannot be derived from --gpu: " + b.why_not +
                                  "; give it with --memory-gib");
    if (!a.kv_cache_memory_bytes) return b;
  }
  const weight_engine we = t.weights;
  const auto narrow = [](std::int64_t v, const char* flag) {
    if (v < 1 || v > 1'000'000) throw std::invalid_argument(fmt::format("{} must be in [1, 1000000], got {}", flag, v));
    return static_cast<int>(v);
  };
  engine_parallel par;
  par.tp = narrow(a.tp, "--tp");
  par.dp = narrow(a.dp, "--dp");
  par.ep = narrow(a.ep, "--ep");
  par.pp = narrow(a.pp, "--pp");
  par.dp_attention = a.dp_attention;
  par.mtp_loaded = mtp_loaded;
  const std::int64_t weights = m.arch.known ? max_rank_weight_bytes(m, weight_sharding_for(we, par)) : std::int64_t{0};
  b.weights_split =
      fmt::format("tp {}{}{}{}", par.tp, par.dp > 1 ? fmt::format(" x dp {}", par.dp) : "",
                  par.ep > 1 ? fmt::format(", ep {}", par.ep) : "", par.pp > 1 ? fmt::format(", pp {}", par.pp) : "");
  if (a.kv_cache_memory_bytes) {
    b.derived = true;
    b.fixed = true;
    b.fraction_flag = "--kv-cache-memory-bytes";
    b.fraction_source = "flag";
    b.chain = vllm_fixed_kv_budget(*a.kv_cache_memory_bytes, gpu.bytes, weights);
    return b;
  }
  b.reserve = estimate_runtime_reserve(m, max_batched_tokens, max_seqs);
  const std::int64_t reserve = b.reserve.total();
  b.derived = true;
  const std::optional<double>& given =
      t.fraction_flag == "--mem-fraction-static" ? a.mem_fraction_static : a.gpu_memory_utilization;
  b.fraction_flag = std::string(t.fraction_flag);
  b.fraction_source = given ? "flag" : "engine default";
  b.fraction_reference = std::string(t.fraction_reference);
  budget_inputs in;
  in.gpu_mib = static_cast<double>(gpu.bytes) / 1048576.0;
  in.tp = par.tp;
  in.pp = par.pp;
  in.world = static_cast<int>(std::min<std::int64_t>(a.tp * a.dp * a.pp, 1 << 30));
  in.prefill_chunk = static_cast<int>(std::min<std::int64_t>(a.prefill_chunk.value_or(0), 1 << 30));
  in.dp_attention = a.dp_attention;
  const double f = given ? *given : t.default_fraction(in);
  b.chain = t.fraction_of_total ? vllm_kv_budget(gpu.bytes, f, weights, reserve)
                                : free_fraction_kv_budget(gpu.bytes, f, weights, reserve);
  return b;
}

/// Computes the report of `a`: the model, schema, plan, budget answers, per-rank plans, the
/// simulation (--simulate) and, unless `with_engine_report` is false (the capacity curves), the
/// engine report and the hint. Throws std::invalid_argument naming the flag or the model for bad
/// input; nothing is printed.
inline planner_result compute(const planner_args& a, bool with_engine_report = true) {
  check_values(a);  // the flags' rules, for callers that fill `a` without parsing text
  planner_result r;
  if (!a.config_text.empty()) {
    r.model = parse_model_config(a.config_text, a.config_name.empty() ? "DeepSeek V4" : a.config_name);
  } else if (!a.config_path.empty()) {
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
  r.engine = &engine_from(a.engine);
  const engine_defaults& d = r.engine->defaults;
  const gpu_entry& gpu = gpu_from(a.gpu);
  const std::string title(r.engine->traits.title);
  const auto said = [&](std::string key, assumption_value v, bool given, std::string_view ref, std::string text) {
    r.assumptions.push_back({std::move(key), std::move(v), given ? "flag" : "engine default",
                             given ? std::string() : std::string(ref), std::move(text)});
  };
  // Every input left out takes the engine's default (engines/defaults.hpp), said on the screen.
  const std::optional<bool> overlap_flag = flag_pair(a.overlap, a.no_overlap, "--overlap", "--no-overlap");
  const std::optional<bool> mtp_flag = flag_pair(a.mtp, a.no_mtp, "--mtp", "--no-mtp");
  const bool overlap = overlap_flag.value_or(d.overlap);
  const bool cache_mtp = mtp_flag.value_or(a.library_defaults || d.draft_layer);
  const std::int64_t tokens_per_step = a.tokens_per_step.value_or(d.tokens_per_step);
  const std::int64_t prefill_chunk = a.prefill_chunk.value_or(d.prefill_chunk);
  // Checked before any text is made of them (the flags' kCount check; the struct path skips it).
  if (tokens_per_step < 1)
    throw std::invalid_argument(fmt::format("--tokens-per-step: '{}' must be at least 1", tokens_per_step));
  if (prefill_chunk < 1)
    throw std::invalid_argument(fmt::format("--prefill-chunk: '{}' must be at least 1", prefill_chunk));
  const bool v4_1 = r.model.family == model_family::v4_1;
  const bool below_mxfp4_sm =
      !a.library_defaults && d.mxfp4_indexer_min_sm > 0 && gpu.sm_major < d.mxfp4_indexer_min_sm;
  const std::string indexer = a.indexer.value_or(d.indexer_mxfp4 ? "mxfp4" : "fp8");
  if (a.indexer && v4_1)
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
  // V4.1 under vLLM: the V4.1 records (MXFP4 index keys) on Blackwell, the V4 rows on Hopper
  // (vllm.hpp `vllm_pool_rules::v41_block_tokens_*`: the kernel block 128 on SM100, 64 on SM90).
  const bool v41_hopper_rows =
      v4_1 && d.v41_formats_follow_gpu && a.format_set.empty() && below_mxfp4_sm && a.indexer_format.empty();
  if (v41_hopper_rows) o.formats.set = format_set::v4;
  apply_format_flags(a, r.model, o);
  o.context_tokens = a.context.value_or(0);  // 0: the model's max_position_embeddings
  o.requests = a.requests;
  o.tokens_per_step = tokens_per_step;
  o.prefill_chunk_tokens = prefill_chunk;
  o.cache_mtp = cache_mtp;
  o.policy = r.engine->policy;
  o.policy.overlap = overlap;
  if (a.dp_attention && !d.has_dp_attention)
    throw std::invalid_argument(fmt::format(
        "--enable-dp-attention: --engine {} has no such flag (SGLang's data-parallel attention inside the TP group; "
        "use --engine sglang)",
        engine_label(*r.engine)));
  said("async_scheduling", overlap, overlap_flag.has_value(), d.overlap_ref,
       fmt::format("{}{} ({})", overlap ? "" : "no ", d.overlap_name,
                   overlap_flag ? (overlap ? "--overlap" : "--no-overlap") : title + "'s default"));
  said("draft_layer", cache_mtp, mtp_flag.has_value(), d.draft_layer_ref,
       // The draft is the speculative-decoding setting: V4's MTP layer, V4.1's DSpark draft layers.
       cache_mtp ? fmt::format("{} cached{}", v4_1 ? "DSpark draft" : "MTP draft", mtp_flag ? " (--mtp)" : "")
       : tokens_per_step > 1 ? fmt::format("{} not cached", v4_1 ? "DSpark draft" : "MTP draft")  // it drafts
                             : fmt::format("no {}", v4_1 ? "DSpark draft" : "MTP draft"));
  said("tokens_per_step", tokens_per_step, a.tokens_per_step.has_value(), d.tokens_per_step_ref,
       tokens_per_step == 1 ? (a.tokens_per_step ? std::string("1 token/step") : std::string())  // "no MTP draft"
                            : fmt::format("{} tokens/step (1 + {} drafted)", tokens_per_step, tokens_per_step - 1));
  said("prefill_chunk", prefill_chunk, a.prefill_chunk.has_value(), d.prefill_chunk_ref,
       fmt::format("chunk {}", thousands(prefill_chunk)));
  if (r.model.family == model_family::v4)
    said("indexer", indexer, a.indexer.has_value() || !a.indexer_format.empty(), d.indexer_ref,
         std::string());  // the screen's model line names the index keys
  if (v4_1)
    said("format_set", a.format_set.empty() ? (o.formats.set == format_set::v4 ? "v4" : "v41") : a.format_set,
         !a.format_set.empty(), v41_hopper_rows ? d.v41_formats_ref : std::string_view(),
         fmt::format("format set {}",
                     a.format_set.empty() ? (o.formats.set == format_set::v4 ? "v4" : "v41") : a.format_set));
  r.assumptions.push_back({"gpu", std::string(gpu.name), a.gpu.empty() ? "planner default" : "flag", "",
                           a.gpu.empty() ? std::string(gpu.arch) : fmt::format("{} ({})", gpu.name, gpu.arch)});
  if (d.has_dp_attention)
    said("dp_attention", a.dp_attention, a.dp_attention, d.dp_attention_ref,
         a.dp_attention ? "DP attention" : "no DP attention");
  o.vllm_pools = r.engine->vllm;
  o.sglang_pools = r.engine->sglang;
  o.tokenspeed_pools = r.engine->tokenspeed;
  if (a.pools == "own")
    o.pools = pools_choice::own;
  else if (a.pools != "engine")
    throw std::invalid_argument("--pools must be engine or own, got '" + a.pools + "'");
  if (a.max_running && *a.max_running < 1)
    throw std::invalid_argument(fmt::format("--max-running-requests must be >= 1, got {}", *a.max_running));
  if (a.memory_gib || a.gpu_memory_gib) {
    if (chain_flags_given(a))
      throw std::invalid_argument(
          "--gpu-memory-utilization, --mem-fraction-static, --kv-cache-memory-bytes and --ep derive the budget from "
          "--gpu: give them without --memory-gib / --gpu-memory-gib");
    r.budget_bytes = budget_from(a);
    // A GPU named on the command line holds its budget: neither flag may give it more memory.
    const bool gpu_flag = a.gpu_memory_gib.has_value();
    const double gib = gpu_flag ? *a.gpu_memory_gib : *a.memory_gib;
    if (!a.gpu.empty() &&
        gib_to_bytes(gib, gpu_flag ? "--gpu-memory-gib" : "--memory-gib") > static_cast<std::uint64_t>(gpu.bytes))
      throw std::invalid_argument(fmt::format("{} {} is more than the {}'s {} of memory (--gpu {}){}",
                                              gpu_flag ? "--gpu-memory-gib" : "--memory-gib", memory_text(gib),
                                              gpu.name, size_text(static_cast<std::uint64_t>(gpu.bytes)),
                                              one_line(a.gpu), gpu_flag ? "" : ": the KV budget is per GPU"));
  } else {
    (void)budget_from(a);  // --reserved-gib alone: refused naming --gpu-memory-gib
  }
  if (a.role == "prefill") {
    o.role = deployment_role::prefill;
  } else if (a.role == "decode") {
    o.role = deployment_role::decode;
  } else if (a.role != "colocated") {
    throw std::invalid_argument("--role must be colocated, prefill or decode, got '" + a.role + "'");
  }
  o.handover_requests = a.handover;
  if (o.policy.decode_needs_whole_step && prefill_chunk >= 1 && tokens_per_step > prefill_chunk)
    throw std::invalid_argument(fmt::format(
        "--prefill-chunk {} must be >= --tokens-per-step {}: {} decodes only with a whole step of tokens in the "
        "step's budget",
        prefill_chunk, tokens_per_step, engine_label(*r.engine)));
  if (a.handover != 0 && o.role != deployment_role::decode)
    throw std::invalid_argument(fmt::format("--handover {} is for --role decode only", a.handover));
  if (a.handover < 0) throw std::invalid_argument(fmt::format("--handover must be >= 0, got {}", a.handover));
  if (a.context && *a.context < 1)
    throw std::invalid_argument(
        fmt::format("--context must be >= 1, got {} (omit it for the model's max_position_embeddings)", *a.context));
  const std::int64_t context = a.context.value_or(r.model.max_position_embeddings);
  if (context > r.model.max_position_embeddings)
    throw std::invalid_argument(fmt::format("{}: --context {} is more than the model's max_position_embeddings {}",
                                            model_source(a, r.model), thousands(context),
                                            thousands(r.model.max_position_embeddings)));
  if (tokens_per_step > context)
    throw std::invalid_argument(fmt::format("--tokens-per-step {} is more than the context of {} tokens{}",
                                            thousands(tokens_per_step), thousands(context),
                                            a.context ? " (--context)" : " (the model's max_position_embeddings)"));
  if (a.simulate && o.role != deployment_role::colocated)
    throw std::invalid_argument(
        "--simulate replays colocated engines only: a --role prefill or decode instance is not simulated");
  if (a.dcp_interleave != 1 && a.dcp == 1)
    throw std::invalid_argument(fmt::format(
        "--dcp-interleave {} has no effect without --dcp (decode context parallelism over more than 1 rank)",
        a.dcp_interleave));
  r.dp_attention = a.dp_attention;
  if (a.dp_attention && (a.dp < 1 || a.tp < 1 || a.tp % a.dp != 0))
    throw std::invalid_argument(
        fmt::format("--enable-dp-attention: --dp {} must divide --tp {} (SGLang's DP attention workers split the TP "
                    "group: attention TP = tp / dp)",
                    a.dp, a.tp));
  if (a.tp != 1 || a.dp != 1 || a.pp != 1 || a.dcp != 1 || a.dcp_interleave != 1 || !a.pp_layers.empty()) {
    parallel_config pc;
    // SGLang's DP attention: dp workers inside the TP group, each on tp / dp GPUs (its attention TP).
    pc.tp = a.dp_attention ? a.tp / a.dp : a.tp;
    pc.dp = a.dp;
    pc.pp = a.pp;
    pc.dcp = a.dcp;
    pc.dcp_interleave_rows = a.dcp_interleave;
    if (!a.pp_layers.empty()) parse_pp_layers(a.pp_layers, pc);
    r.parallel = pc;
    r.gpus = pc.world_size();
  }
  r.max_running = a.max_running.value_or(d.max_running_at(o.tokens_per_step));
  if (!r.budget_bytes && a.budget_chain && (!a.gpu.empty() || chain_flags_given(a))) {
    r.budget = derive_budget(a, r.model, *r.engine, gpu, cache_mtp, std::max<std::int64_t>(prefill_chunk, 1),
                             std::max<std::int64_t>(r.max_running, 1));
    if (r.budget->derived && r.budget->chain.fits())
      r.budget_bytes = static_cast<std::uint64_t>(r.budget->chain.kv_bytes);
  }
  said("max_running_requests", r.max_running, a.max_running.has_value(), d.max_running_ref,
       fmt::format("{} {}", d.max_running_name, thousands(r.max_running)));
  // The screen's order: scheduling, draft, step, running cap, chunk, formats, SGLang's own, the GPU last.
  static constexpr std::array<std::string_view, 10> kOrder = {
      "async_scheduling", "draft_layer", "tokens_per_step",       "max_running_requests", "prefill_chunk",
      "indexer",          "format_set",  "swa_full_tokens_ratio", "dp_attention",         "gpu"};
  const auto rank_of = [&](const assumption& x) {
    return std::find(kOrder.begin(), kOrder.end(), x.input) - kOrder.begin();
  };
  if (d.swa_full_tokens_ratio > 0)
    said("swa_full_tokens_ratio", a.swa_ratio.value_or(d.swa_full_tokens_ratio), a.swa_ratio.has_value(),
         d.swa_ratio_ref, fmt::format("SWA ratio {:g}", a.swa_ratio.value_or(d.swa_full_tokens_ratio)));
  std::stable_sort(r.assumptions.begin(), r.assumptions.end(),
                   [&](const assumption& x, const assumption& y) { return rank_of(x) < rank_of(y); });
  o.max_running_requests = r.max_running;  // tokenspeed sizes its arena's windows for max_num_seqs
  // The engine's own pools as planned (tokenspeed's arena: DeepSeek V4 without DCP; else own pools).
  const bool engine_structure =
      o.pools == pools_choice::engine && r.engine->traits.own_structure_models(r.model.family, a.dcp);
  if (a.swa_ratio && !(r.engine->traits.takes_swa_ratio && o.pools == pools_choice::engine))
    throw std::invalid_argument(
        fmt::format("--swa-full-tokens-ratio has no effect without --engine {} (and its own pools, --pools engine)",
                    fmt::join(engines_taking_swa_ratio(), " or --engine ")));
  if (a.swa_ratio) {
    if (!(*a.swa_ratio > 0 && *a.swa_ratio <= 1))
      throw std::invalid_argument(fmt::format("--swa-full-tokens-ratio must be in (0, 1], got {}", *a.swa_ratio));
    // SGLang's V4 override turns its class default 0.8 into 0.1, an explicit 0.8 too
    // (arg_groups/overrides.py:1139-1167, server_args.py:931-943).
    o.swa_full_tokens_ratio = *a.swa_ratio == 0.8 ? 0.1 : *a.swa_ratio;
  }
  if (engine_structure) check_engine_flags(a, *r.engine);
  if (engine_structure && r.engine->traits.running_cap_per_attention_dp) {
    // SGLang's HCA-state reservation is per attention-DP worker: max_running_requests // dp with DP
    // attention; without it every --dp replica is a whole server with its own max_running_requests.
    const std::int64_t attn_dp = a.dp_attention ? a.dp : 1;
    o.max_running_requests = r.max_running / attn_dp;
    if (o.max_running_requests < 1)
      throw std::invalid_argument(fmt::format(
          "--engine {}: --max-running-requests {} // --dp {} is 0, which SGLang refuses (\"max_running_request is "
          "zero\", tp_worker.py:410)",
          engine_label(*r.engine), r.max_running, a.dp));
  }
  try {  // errors from here on depend on the model: say which one
    r.schema = build_model_schema(r.model, r.model.family == model_family::v3_2 ? indexer_format::fp8 : o.indexer);
    // The engine's own refusal (vLLM: MXFP4 index keys on SM 10.x only), for the GPU named or assumed.
    if (below_mxfp4_sm)
      for (const paged_cache_group_spec& g : plan_cache_specs(r.model, o))
        for (int k = 0; k < g.num_pools; ++k) {
          const format_layout& f = g.pools[static_cast<std::size_t>(k)].format;
          if (f.role == format_role::indexer_k && f.data.type == element_type::e2m1)
            throw std::invalid_argument(fmt::format(
                "--engine {} refuses MXFP4 index keys ({}) on {} {} (SM {}.{}): \"{}\" ({}); give --gpu b200 (or "
                "another Blackwell GPU) or FP8 index keys",
                engine_label(*r.engine), f.name, a.gpu.empty() ? "the assumed" : "--gpu", gpu.name, gpu.sm_major,
                gpu.sm_minor, d.mxfp4_indexer_rule, d.mxfp4_indexer_ref));
        }
    if (engine_structure) {
      if (r.engine->check_model != nullptr) r.engine->check_model(r.model);  // SGLang: V4 only
      for (const paged_cache_group_spec& g : plan_cache_specs(r.model, o))
        for (int k = 0; k < g.num_pools; ++k)
          if (const char* why = r.engine->traits.format_mismatch(g, k))
            throw std::invalid_argument(
                fmt::format("--engine {}: row format '{}' of {}{}: {}; plan it with --pools own (or another engine)",
                            engine_label(*r.engine), g.pools[static_cast<std::size_t>(k)].format.name, to_string(g.id),
                            g.num_pools > 1 ? fmt::format("[{}]", k) : "", why));
    }
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
    if (with_engine_report) {
      r.report = compute_engine_report(r.model, r.plan, r.ranks, r.parallel ? r.parallel->dp : 1, *r.engine,
                                       r.budget_bytes, max_running, a.max_sim_visits, r.parallel ? r.parallel->dcp : 1,
                                       a.dp_attention ? a.dp : 1);
      r.hint = hint_of(r);
    }
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(model_source(a, r.model) + ": " + e.what());
  }
  return r;
}

/// The simulator's peak pages of library group `gi` in the units of its `pages_per_layer`: own
/// pools, its peak + its null page; a shared pool (a parent arena), the peak blocks (pages) of its
/// engine group's table (the pool's one null block, the arena's null parent apart).
inline std::int64_t simulated_group_pages(const memory_plan& p, const sim_result& sim, int gi) {
  if (traits_of(p.pools.structure).one_table_per_group) return sim.peak_pages[static_cast<std::size_t>(gi)] + 1;
  const group_id id = p.groups[static_cast<std::size_t>(gi)].spec.id;
  for (int e = 0; e < p.pools.num_groups; ++e)
    for (int m = 0; m < p.pools[e].num_members; ++m)
      if (p.pools[e].members[static_cast<std::size_t>(m)].group == id)
        return sim.peak_pages[static_cast<std::size_t>(sim.table_of_group[static_cast<std::size_t>(e)])];
  return 0;
}

/// The simulator's peak units of a pool priced in whole blocks (`pool_structure_traits::whole_blocks`),
/// the null unit apart: a shared pool's peak blocks, a parent arena's peak parents (`sim_peak_parents`).
inline std::int64_t simulated_peak_units(const memory_plan& p, const sim_result& sim) {
  return traits_of(p.pools.structure).one_block_pool ? sim.peak_blocks : sim_peak_parents(p.pools, sim);
}

/// Bytes of one page of library group `gi` in one layer, all pools, as the engine lays it out
/// (a shared pool pads them; own pools: the group's page bytes).
inline std::int64_t engine_page_bytes(const memory_plan& p, int gi) {
  const paged_cache_group_spec& spec = p.groups[static_cast<std::size_t>(gi)].spec;
  if (!traits_of(p.pools.structure).pads_pages) return spec.page_bytes();
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

/// Does N x L fit the budget per GPU: one headline number, what really fits = the requests of L
/// the engine's allocator, replayed on its pools, holds at once (the cluster's with parallel
/// flags; the plan's bound where the replay is not run or cut short below it, said so). FITS when
/// N <= it. The plan's own bound (what its bytes guarantee) is kept apart, labelled. Computed from
/// the report, never recomputed.
struct plan_verdict {
  bool has_budget = false;
  bool fits = false;
  std::int64_t requests = 0;        ///< N (the whole deployment).
  std::int64_t context_tokens = 0;  ///< L.
  /// The plan's bound: the largest N of L its bytes guarantee (the cluster's with parallel flags),
  /// capped at the engine's running cap. Lower than what really fits where the plan charges every
  /// request its worst case at once.
  std::int64_t plan_max_requests = 0;
  bool engine_starts = true;
  std::optional<std::int64_t> simulated_max_requests;  ///< The replay's answer (a lower bound when marked).
  bool simulated_lower_bound = false;
  std::int64_t max_requests = 0;          ///< What really fits: the headline (0 when the engine does not start).
  bool max_requests_lower_bound = false;  ///< "at least": the replay stopped at its work limit above the plan.
  /// The headline is the plan's bound, and why: the replay did not run (`why_not`) or was cut short.
  bool by_plan = false;
  std::string by_plan_why;
  /// The limit that binds what really fits: "budget", "running cap", "startup check" or
  /// "single-request limit", and the sentence that names it.
  std::string limit;
  std::string limit_text;
  std::string why;  ///< Why N does not fit ("" when it fits).
};

inline plan_verdict verdict_of(const planner_result& r) {
  plan_verdict v;
  v.requests = r.plan.options.requests;
  v.context_tokens = r.plan.options.context_tokens;
  if (r.budget && r.budget->derived && !r.budget->chain.fits()) {  // the weights leave no KV cache
    const kv_budget& c = r.budget->chain;
    const std::string engine = r.engine != nullptr ? std::string(r.engine->traits.title) : "the engine";
    v.has_budget = true;
    v.engine_starts = false;
    v.limit = "weights";
    const auto sz = [](std::int64_t b) { return size_text(static_cast<std::uint64_t>(std::max<std::int64_t>(b, 0))); };
    const std::string gpu = fmt::format("the {}'s {}", r.budget->gpu->name, sz(c.gpu_bytes));
    v.limit_text =
        r.budget->fixed  // vLLM --kv-cache-memory-bytes beside the weights on the GPU
            ? (!c.weights_fit() ? fmt::format("the weights need {} per GPU, more than {}", sz(c.weights_bytes), gpu)
               : c.weights_bytes == 0  // (weights not modelled)
                   ? fmt::format("--kv-cache-memory-bytes ({}) is more than {}", sz(c.kv_bytes), gpu)
                   : fmt::format("the weights ({}) and --kv-cache-memory-bytes ({}) need {} per GPU, more than {}",
                                 sz(c.weights_bytes), sz(c.kv_bytes),
                                 size_text(saturating_add(static_cast<std::uint64_t>(c.weights_bytes),
                                                          static_cast<std::uint64_t>(c.kv_bytes))),
                                 gpu))
            : !c.weights_fit()
                  ? fmt::format("the weights need {} per GPU, more than the {} {} may use ({} x {})",
                                size_text(static_cast<std::uint64_t>(c.weights_bytes)),
                                size_text(static_cast<std::uint64_t>(c.usable_bytes)), engine, r.budget->gpu->name,
                                fraction_text(c.fraction))
                  : fmt::format(
                        "the weights ({}) and the runtime reserve ({}, estimate) leave no KV cache in the {} {} may "
                        "use",
                        size_text(static_cast<std::uint64_t>(c.weights_bytes)),
                        size_text(static_cast<std::uint64_t>(c.reserve_bytes)),
                        size_text(static_cast<std::uint64_t>(c.usable_bytes)), engine);
    v.why = v.limit_text;
    return v;
  }
  if (!r.budget_bytes || !r.requests_fit) {
    if (r.budget && !r.budget->derived) v.limit = "not derived";  // --gpu given, the model's weights unmodelled
    return v;
  }
  v.has_budget = true;
  v.plan_max_requests = plan_max_requests(r);
  const std::string engine = r.engine != nullptr ? engine_label(*r.engine) : std::string("the engine");
  bool single_request = false;
  if (r.report) {
    v.engine_starts = r.report->startup.starts;
    single_request = r.report->startup.max_request_tokens > 0;
  }
  const std::int64_t engines = r.report ? r.report->dp : 1;
  const engine_fit* fit = r.report && r.report->fit ? &*r.report->fit : nullptr;
  if (fit != nullptr && fit->simulated) {
    v.simulated_max_requests = capped_requests(r, fit->max_requests * engines, engines);
    v.simulated_lower_bound = fit->lower_bound;
  }
  // The cap on one engine's running requests: SGLang's per worker (max_running_requests // its
  // attention DP), the others' as given.
  const std::int64_t per_engine_cap =
      r.report && r.report->startup.running_cap > 0 ? r.report->startup.running_cap : r.max_running;
  if (!v.engine_starts) {
    v.max_requests = 0;
  } else if (v.simulated_max_requests && !fit->requests_by_plan) {
    v.max_requests = *v.simulated_max_requests;
    v.max_requests_lower_bound = fit->lower_bound;
  } else {
    v.max_requests = v.plan_max_requests;
    v.by_plan = true;
    v.by_plan_why = fit == nullptr     ? std::string("the allocator is not replayed here")
                    : !fit->simulated  ? "not replayed: " + fit->why_not
                    : fit->lower_bound ? std::string("the replay stopped at its work limit below it")
                    : per_engine_cap > 0 && v.plan_max_requests >= per_engine_cap * engines
                        ? std::string("the running cap: nothing above it to replay")
                        : std::string("the replay stopped at its work limit below it");
  }
  const std::string cap_name = r.engine != nullptr && !r.engine->defaults.max_running_name.empty()
                                   ? std::string(r.engine->defaults.max_running_name)
                                   : std::string("running cap");
  if (!v.engine_starts && single_request) {
    v.limit = "single-request limit";
    v.limit_text = fmt::format("{} admits at most {} tokens a request (its single-request limit)", engine,
                               thousands(r.report->startup.max_request_tokens));
  } else if (!v.engine_starts) {
    v.limit = "startup check";
    v.limit_text = fmt::format("{} does not start with this budget (its startup check)", engine);
  } else if (per_engine_cap > 0 && v.max_requests >= per_engine_cap * engines && !v.max_requests_lower_bound) {
    v.limit = "running cap";
    v.limit_text = fmt::format("{}'s running cap, {} {}{}", engine_title_of(r.plan.options.policy), cap_name,
                               thousands(r.max_running),
                               per_engine_cap != r.max_running || engines > 1
                                   ? fmt::format(" ({} per engine x {})", thousands(per_engine_cap), engines)
                                   : std::string());
  } else {
    v.limit = "budget";
    v.limit_text = fmt::format("the {} budget", size_text(*r.budget_bytes));
  }
  v.fits = v.requests <= v.max_requests;
  if (!v.fits) v.why = v.limit_text;
  return v;
}

/// The verdict's one line, the headline number first: "1 x 1,048,576 tokens FITS: 16 fit at once
/// (...)" / "DOES NOT FIT: ..." / no budget.
inline std::string verdict_line(const plan_verdict& v) {
  if (v.limit == "weights")
    return fmt::format("verdict: {} x {} tokens DOES NOT FIT: {}", thousands(v.requests), thousands(v.context_tokens),
                       v.limit_text);
  if (!v.has_budget)
    return v.limit == "not derived"  // --gpu given, the model's weights not modelled: the budget line says why
               ? fmt::format("verdict: {} x {} tokens: no budget (give --memory-gib; see budget): the plan only",
                             thousands(v.requests), thousands(v.context_tokens))
               : fmt::format(
                     "verdict: {} x {} tokens: no budget given (--memory-gib or --gpu): "
                     "the plan only",
                     thousands(v.requests), thousands(v.context_tokens));
  const std::string n = (v.max_requests_lower_bound ? "at least " : "") + requests_text(v.max_requests);
  const std::string how = v.by_plan ? "plan bound" : "replayed";
  return fmt::format("verdict: {} x {} tokens {}: {} fit at once ({}; limit: {})", thousands(v.requests),
                     thousands(v.context_tokens), v.fits ? "FITS" : "DOES NOT FIT", n, how, v.limit_text);
}

/// The plan's bound, once, labelled (the screen's "bound" line): what its bytes guarantee and why
/// it is lower than (or, as the headline, stands for) what really fits.
inline std::string bound_text(const plan_verdict& v) {
  if (!v.has_budget || v.limit == "weights") return {};
  const std::string b = requests_text(v.plan_max_requests);
  if (v.by_plan) return fmt::format("the plan's bytes guarantee {}, the headline: {}", b, v.by_plan_why);
  if (!v.engine_starts) return fmt::format("the plan's bytes guarantee {}, but the engine does not run them", b);
  if (v.plan_max_requests < v.max_requests)
    return fmt::format("the plan's bytes guarantee {}: lower, as it charges each request its worst case at once", b);
  if (v.plan_max_requests > v.max_requests)
    return fmt::format("the plan's bytes guarantee {}: the replayed allocator holds fewer (its own rules bind first)",
                       b);
  return fmt::format("the plan's bytes guarantee {}, as many as the replay holds", b);
}

/// Where one GPU's plan bytes go (the screen's "why"); the parts sum to `total` exactly.
/// Rows and windows are the exact rows of the requests holding pages (the plan's ideal bytes);
/// rounding is what whole pages add to them; in flight, the pages of the prompts a step admits
/// beyond their windows (the prefill chunk / step budget); null pages, one page per pool and
/// layer (own pools); the engine's share is the rest: a shared pool's padding to its widest block
/// and its null block, a parent arena's parent rounding and null parent, the startup or admission
/// raise, SGLang's ratio sizing. Bytes throughout.
struct plan_breakdown {
  std::uint64_t total = 0;         ///< The plan's bytes.
  std::uint64_t context_rows = 0;  ///< Full-history rows (compressed KV, indexer keys, V3.2 latents).
  std::uint64_t windows = 0;       ///< Sliding windows and compressor-state rings.
  std::uint64_t rounding = 0;      ///< Page rounding of the requests' pages.
  std::uint64_t in_flight = 0;     ///< Prompt pages in flight (the prefill chunk's pages beyond the rings).
  std::uint64_t null_pages = 0;    ///< Own pools: the null page of every pool and layer.
  std::uint64_t engine = 0;        ///< The engine's pool structure: the rest.
};

/// Pages one request's `rows` exact rows of a table of `kind` span at most, `rows_per_page` rows a
/// page: full history from its first row, cdiv(rows, R); a window at any offset, cdiv(rows - 1,
/// R) + 1; a ring, its one page.
inline std::int64_t span_pages(table_kind kind, std::int64_t rows, std::int64_t rows_per_page) {
  if (rows <= 0 || rows_per_page <= 0) return 0;
  if (kind == table_kind::request_ring) return 1;
  if (kind == table_kind::full_history) return ceil_div(rows, rows_per_page);
  return ceil_div(rows - 1, rows_per_page) + 1;
}

/// The breakdown of plan `p` (one GPU's). Per library group and pool, in the pages the engine
/// allocates (own pools: the group's; a shared block pool or a parent arena: each engine table's
/// pages of the pool, unpadded): rows = the H holding requests' exact rows (the plan's ideal
/// bytes: full history -> context, sliding and rings -> windows); rounding = the pages those rows
/// span minus the rows; in flight = the pages held beyond that span (decode and prompt tokens in
/// flight: the step's lookahead, a prefilled request's last chunk) and the prompt pages a step
/// admits (`shared_pages`); null pages (own pools); the engine's share is the rest (page
/// alignment, a shared pool's padding to its widest block and its null block, a parent arena's
/// parent rounding and null parent, the startup or admission raise, SGLang's ratio sizing). Never
/// throws: every part is cut to what is left of the plan's bytes (the engine's share is then 0).
/// With `only_group` >= 0: that group's parts only (its rows, rounding, in flight and null pages;
/// the engine's share 0), the parts the SVG's bar of the group splits into.
inline plan_breakdown breakdown_of(const memory_plan& p, int only_group = -1) {
  __extension__ typedef unsigned __int128 u128;  // products of three plan quantities (pedantic: an extension)
  plan_breakdown b;
  b.total = p.total_bytes;
  u128 sum = 0;
  const auto take = [&](std::uint64_t& part, u128 bytes) {
    const u128 room = static_cast<u128>(b.total) - std::min<u128>(sum, b.total);
    const u128 got = std::min(bytes, room);
    part += static_cast<std::uint64_t>(got);
    sum += got;
  };
  const bool ratio = traits_of(p.pools.structure).token_ratios;
  const bool own = traits_of(p.pools.structure).one_table_per_group;
  const auto h = static_cast<std::int64_t>(p.holding_requests);
  // One table's pages of one pool: `per_request` pages a request, `shared` prompt pages, over
  // `layers` layers of `page` bytes (unpadded), rows a request `rpr` of `row_bytes`.
  const auto table = [&](std::uint64_t& rows_part, table_kind kind, std::int64_t per_request, std::int64_t shared,
                         std::int64_t rpr, std::int64_t rows_per_page, std::int64_t page, std::int64_t row_bytes,
                         std::int64_t layers) {
    const std::int64_t spanned = std::min(per_request, span_pages(kind, rpr, rows_per_page));
    const u128 l = static_cast<u128>(layers);
    const u128 hh = static_cast<u128>(std::max<std::int64_t>(h, 0));
    const u128 rows = hh * static_cast<u128>(std::max<std::int64_t>(rpr, 0)) * static_cast<u128>(row_bytes) * l;
    const u128 span = hh * static_cast<u128>(std::max<std::int64_t>(spanned, 0)) * static_cast<u128>(page) * l;
    const u128 rows_in = std::min(rows, span);
    take(rows_part, rows_in);
    take(b.rounding, span - rows_in);
    const u128 beyond = hh * static_cast<u128>(std::max<std::int64_t>(per_request - spanned, 0)) +
                        static_cast<u128>(std::max<std::int64_t>(shared, 0));
    take(b.in_flight, beyond * static_cast<u128>(page) * l);
  };
  int gi = -1;
  for (const group_plan& g : p) {
    if (++gi != only_group && only_group >= 0) continue;
    const paged_cache_group_spec& spec = g.spec;
    std::uint64_t& rows_part = spec.has_sliding_window() ? b.windows : b.context_rows;
    if (ratio) {  // SGLang sizes pools in tokens: the rows, and the rest is its ratio sizing
      take(rows_part, g.ideal_bytes);
      continue;
    }
    // Rows a request holds in one layer (the plan's ideal bytes: H x layers x rows x row bytes).
    const u128 denom = static_cast<u128>(std::max<std::int64_t>(h, 1)) * static_cast<u128>(spec.num_layers) *
                       static_cast<u128>(spec.row_bytes());
    const auto rows_per_request = static_cast<std::int64_t>(static_cast<u128>(g.ideal_bytes) / denom);
    for (int k = 0; k < spec.num_pools; ++k) {
      const pool_spec& ps = spec.pools[static_cast<std::size_t>(k)];
      const bool sharded = dcp_sharded(spec, k) && p.options.dcp > 1;
      const std::int64_t rpr = sharded ? ceil_div(rows_per_request, p.options.dcp) : rows_per_request;
      if (own) {
        const std::int64_t shared = sharded ? ceil_div(g.shared_pages, p.options.dcp) : g.shared_pages;
        const std::int64_t pages = g.pool_pages[static_cast<std::size_t>(k)];
        const std::int64_t held = std::max<std::int64_t>(0, pages - 1 - shared);
        const std::int64_t per_request = h > 0 ? held / h : 0;
        const table_kind kind = table_rule_of(spec).kind;
        table(rows_part, kind, per_request, shared + (held - per_request * h), rpr, ps.rows_per_page, ps.page_bytes,
              ps.row_bytes, spec.num_layers);
        take(b.null_pages, static_cast<u128>(ps.page_bytes) * static_cast<u128>(spec.num_layers));
        continue;
      }
      // A shared block pool or a parent arena: every engine table holding this pool, in its own pages.
      for (int e = 0; e < p.pools.num_groups; ++e) {
        const engine_group& eg = p.pools[e];
        const engine_group_plan& ep = p.engine_groups[static_cast<std::size_t>(e)];
        for (int m = 0; m < eg.num_members; ++m) {
          const engine_member& mb = eg.members[static_cast<std::size_t>(m)];
          if (!(mb.group == spec.id) || mb.pool != k) continue;
          // The engine's rows per page may differ from the library's (vLLM's V4.1 blocks).
          const std::int64_t rpr_engine =
              eg.rule.kind == table_kind::request_ring ? std::min(rpr, mb.rows_per_page) : rpr;
          table(rows_part, eg.rule.kind, ep.pages_per_request, ep.shared_pages, rpr_engine, mb.rows_per_page,
                ps.format.page_bytes(mb.rows_per_page), ps.row_bytes, mb.layers.count());
        }
      }
    }
  }
  b.engine = only_group >= 0 ? 0 : b.total - static_cast<std::uint64_t>(sum);
  return b;
}

/// The plan the screen shows: the worst rank's with parallel flags (the GPU that runs out first),
/// else the plan.
inline const memory_plan& screen_plan(const planner_result& r) {
  if (!r.ranks.empty()) return r.ranks[static_cast<std::size_t>(r.worst.worst_rank)].plan;
  return r.plan;
}

/// The contexts of the capacity curve: 4,096 x 2^k up to the model's max_position_embeddings,
/// and that maximum.
inline std::vector<std::int64_t> curve_contexts(const model_config& m) {
  std::vector<std::int64_t> c;
  for (std::int64_t l = 4096; l < m.max_position_embeddings && l <= std::numeric_limits<std::int64_t>::max() / 2;
       l *= 2)
    c.push_back(l);
  c.push_back(m.max_position_embeddings);
  return c;
}

/// Max requests against context for the budget under each registered engine (`engine_family_names`), every other
/// flag as given (the plan's answer, capped at the engine's running cap; the cluster's with
/// parallel flags). An engine that refuses the flags or the model has no points and says why.
/// Needs a budget (else no curves). Units: tokens, requests.
inline std::vector<capacity_curve> capacity_curves(const planner_args& a, const model_config& m) {
  std::vector<capacity_curve> curves;
  if (!a.memory_gib && !a.gpu_memory_gib) return curves;
  for (const std::string_view engine : engine_family_names()) {
    capacity_curve c;
    c.engine = std::string(engine);
    for (const std::int64_t l : curve_contexts(m)) {
      planner_args b = a;
      b.engine = c.engine;
      b.context = l;
      b.requests = 1;
      b.simulate = false;
      try {
        const planner_result r = compute(b, false);
        c.points.emplace_back(l, plan_max_requests(r));
        if (c.label.empty()) {
          c.label = engine_label(*r.engine);
          for (const assumption& x : r.assumptions)
            if (x.input == "async_scheduling" || x.input == "max_running_requests") c.assumes.push_back(x.text);
          c.policy = r.plan.options.policy;
        }
      } catch (const std::invalid_argument& e) {
        c.points.clear();
        c.label.clear();
        c.assumes.clear();
        c.why_not = dsv4::tools::error_text(e.what());
        break;
      }
    }
    curves.push_back(std::move(c));
  }
  return curves;
}

}  // namespace dsv4::cache::cli
