// dsv4-cache: SGLang's own report of a plan (engines/report.hpp): what its DeepSeek V4 pool
// configurator computes and logs for the budget (engines/sglang/engine.hpp, with its sources), what its
// pools then allocate, what its ratio sizing leaves unused, and, with a budget, what really fits
// its pools (its occupancy replayed, engines/sglang/replay.hpp) with the SWA share that would fit more.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "dsv4/cache/engines/report.hpp"
#include "dsv4/cache/engines/sglang/engine.hpp"
#include "dsv4/cache/engines/sglang/plan.hpp"
#include "dsv4/cache/engines/sglang/replay.hpp"
#include "dsv4/cache/engines/spec.hpp"
#include "dsv4/cache/plan_types.hpp"
#include "dsv4/cache/text.hpp"

namespace dsv4::cache {

/// SGLang (ratio pools): what its configurator computes and logs for the budget (or, without
/// one, the plan's bytes), what its pools then really allocate, and what its own sizing leaves
/// unused by design. Units: bytes, tokens.
struct sglang_engine_report {
  sglang_options options{};  ///< As SGLang runs: --max-running-requests per worker as given.
  sglang_geometry geometry{};
  bool budget_is_plan = false;
  sglang_pool_sizes sizes{};
  sglang_pool_bytes allocated{};  ///< For `sizes` (when SGLang starts).
  /// CSA compressor-state rows sized per 128 SWA tokens but addressed per 256-token page: the
  /// half never addressed, bytes (sglang #30371, #40337).
  std::uint64_t unaddressed_state_bytes = 0;
  std::vector<std::string> log_lines;
  /// With a budget, at the replayed capacity (max_requests of L): the SWA pool's peak tokens in
  /// use, and the bytes SGLang charged for SWA tokens never used (their 584 B x L rows and
  /// their CSA state rows): what its ratio sizing holds idle.
  std::int64_t peak_swa_tokens = 0;
  std::uint64_t idle_swa_bytes = 0;
  /// A smaller --swa-full-tokens-ratio that fits more requests of L in the same budget (0: none).
  double better_ratio = 0;
  std::int64_t better_ratio_requests = 0;
};

namespace detail {
/// `v` as Python's f"{v:.2f}".
inline std::string two_decimals(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}
}  // namespace detail

/// SGLang's figures for `budget` bytes of KV cache (its `available_bytes`) with options `so`,
/// and its startup log lines (`sglang_configure`'s, in its words). Errors as `sglang_configure`.
inline sglang_engine_report sglang_report(const sglang_geometry& g, const sglang_options& so, std::uint64_t budget,
                                          bool budget_is_plan) {
  sglang_engine_report r;
  r.options = so;
  r.geometry = g;
  r.budget_is_plan = budget_is_plan;
  r.sizes = sglang_configure(g, so, budget);
  const sglang_pool_sizes& s = r.sizes;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  r.log_lines.push_back(
      "DSV4 memory calculation: bytes_per_full_token=" + detail::two_decimals(s.bytes_per_full_token) +
      ", available_bytes=" + detail::two_decimals(static_cast<double>(budget) / kGiB) +
      " GB, c128_state_fixed=" + detail::two_decimals(static_cast<double>(s.c128_state_fixed_bytes) / kGiB) +
      " GB, full_token=" + std::to_string(s.full));
  r.log_lines.push_back("DSV4 pool sizes: full=" + std::to_string(s.full) + ", swa=" + std::to_string(s.swa) +
                        ", c4=" + std::to_string(s.c4) + ", c128=" + std::to_string(s.c128) +
                        ", c4_state=" + std::to_string(s.c4_state) + ", c128_state=0");
  if (!s.starts) {
    r.log_lines.push_back("RuntimeError: " + std::string(s.refusal));
    return r;
  }
  r.log_lines.push_back("max_total_num_tokens=" + std::to_string(s.full) +
                        ", chunked_prefill_size=" + std::to_string(so.chunked_prefill_size) +
                        ", max_prefill_tokens=" + std::to_string(sglang_sim_config{}.max_prefill_tokens) +
                        ", max_running_requests=" + std::to_string(s.max_running_requests) +
                        ", context_len=" + std::to_string(so.context_len));
  r.allocated = sglang_allocated_bytes(g, so, s);
  const auto rows = static_cast<std::uint64_t>(sglang_state_rows(s.c4_state, g.c4_ring, 4));
  // A CSA state row: KV and score, 2 x (head_dim + index_head_dim) fp32 values each.
  const std::uint64_t row_bytes = std::uint64_t{16} * static_cast<std::uint64_t>(g.head_dim + g.index_head_dim);
  r.unaddressed_state_bytes = rows / 2 * row_bytes * static_cast<std::uint64_t>(g.csa_layers);
  return r;
}

/// What really fits SGLang's pools `r.sizes`: the largest N of L (at most its
/// max_running_requests and the replay's 2^20) and the longest context for n requests with which
/// the replay (engines/sglang/replay.hpp, worst case over prompt lengths) fits, of at most
/// `max_context` tokens. Assumes both monotone. The replays together make at most `max_visits`
/// visits (about 10^8 a second here); past it a probe counts as not fitting and the answers are
/// lower bounds. `hint`: the plan's answer, checked, not trusted.
inline engine_fit sglang_fit(const sglang_engine_report& r, std::int64_t max_context, std::int64_t n, std::int64_t L,
                             std::int64_t max_visits, std::int64_t hint = 1) {
  engine_fit fit;
  if (!r.sizes.starts) {
    fit.simulated = true;  // SGLang does not start: nothing runs
    return fit;
  }
  if (L < 2) {
    fit.why_not = "the simulator needs a context of at least 2 tokens";
    return fit;
  }
  if (r.options.speculative()) {
    fit.why_not = "SGLang's occupancy under speculative decoding is not modelled";
    return fit;
  }
  sglang_sim_config c = sglang_sim_config_of(r.sizes, r.options);
  bool exhausted = false;
  const auto fits = [&](std::int64_t N, std::int64_t ctx) {
    c.max_visits = max_visits - fit.work;
    if (c.max_visits <= 0) {
      exhausted = true;
      return false;
    }
    const sglang_sim_result s = sglang_simulate_worst_case(c, N, ctx);
    fit.work += s.visits;
    exhausted = exhausted || s.incomplete;
    return s.fits;
  };
  constexpr std::int64_t kMaxReplayed = std::int64_t{1} << 20;  // one entry per request
  const std::int64_t top = std::min(r.sizes.max_running_requests, kMaxReplayed);
  // From the plan's answer: up by doubling steps while it fits, else down.
  const std::int64_t start = std::clamp<std::int64_t>(hint, 1, top);
  std::int64_t lo = 0;
  std::int64_t hi = start - 1;
  if (fits(start, L)) {
    lo = start;
    hi = top;
    for (std::int64_t step = 1; lo < top; step *= 2) {
      const std::int64_t next = step > top - lo ? top : lo + step;
      if (!fits(next, L)) {
        hi = next - 1;
        break;
      }
      lo = next;
    }
  }
  fit.max_requests =
      lo < hi ? detail::largest_fitting(lo, hi, [&](std::int64_t N) { return N == 0 || fits(N, L); }) : lo;
  // Past the work limit below the plan's answer: the plan's answer (it runs in the replay,
  // SglangPlan tests).
  if (exhausted && fit.max_requests < start && hint > 0) {
    fit.max_requests = start;
    fit.requests_by_plan = true;
  }
  fit.lower_bound = exhausted || (fit.max_requests == kMaxReplayed && r.sizes.max_running_requests > kMaxReplayed);
  exhausted = false;
  if (n > kMaxReplayed) {
    fit.context_lower_bound = true;  // not replayed
  } else {
    fit.max_context_tokens =
        fits(n, 2) ? detail::largest_fitting(2, max_context, [&](std::int64_t ctx) { return fits(n, ctx); }) : 0;
    fit.context_lower_bound = exhausted;
  }
  fit.simulated = true;
  return fit;
}

namespace detail {

/// With a budget, what really fits SGLang's pools `g` (`sglang_fit`, from the plan's answer) and,
/// at that capacity, its SWA pool's peak and idle bytes and a smaller --swa-full-tokens-ratio that
/// fits more (0.05, 0.02, 0.01), written into `g`; nothing without a budget.
inline std::optional<engine_fit> sglang_fit_and_idle(const engine_report_inputs& in, const sglang_options& so,
                                                     sglang_engine_report& g) {
  const plan_options& o = in.plan->options;
  std::optional<engine_fit> fit;
  if (!in.budget) return fit;
  {
    const std::int64_t n = std::max<std::int64_t>(in.engine_requests, 1);
    const std::int64_t planned = std::min(in.plan_max_requests, g.sizes.max_running_requests);
    fit = sglang_fit(g, in.model->max_position_embeddings, n, o.context_tokens, in.max_sim_visits / 10, planned);
    if (fit->simulated && fit->max_requests > 0) {
      sglang_sim_config cap = sglang_sim_config_of(g.sizes, so);
      cap.max_visits = in.max_sim_visits / 100;
      const sglang_sim_result at = sglang_simulate_worst_case(cap, fit->max_requests, o.context_tokens);
      if (!at.incomplete) {  // else too large to replay again: no idle figure, no hint
        g.peak_swa_tokens = at.peak_swa_pages * so.page_size;
        const sglang_geometry& geo = g.geometry;
        const std::uint64_t per_token =
            static_cast<std::uint64_t>(geo.kv_bytes) * static_cast<std::uint64_t>(geo.layers) +
            static_cast<std::uint64_t>(geo.c4_ring * 2 * 2 * (geo.head_dim + geo.index_head_dim) * 4 /
                                       geo.c4_state_divisor) *
                static_cast<std::uint64_t>(geo.csa_layers);
        g.idle_swa_bytes = static_cast<std::uint64_t>(g.sizes.swa - g.peak_swa_tokens) * per_token;
        // The operator's lever: a smaller SWA share leaves more full tokens in the same budget.
        for (const double ratio : {0.05, 0.02, 0.01}) {
          if (ratio >= so.swa_full_tokens_ratio) continue;
          sglang_options q = so;
          q.swa_full_tokens_ratio = ratio;
          const engine_fit f =
              sglang_fit(sglang_report(in.pools.sglang, q, *in.budget, false), in.model->max_position_embeddings, n,
                         o.context_tokens, in.max_sim_visits / 100, fit->max_requests);
          if (f.simulated && f.max_requests > std::max(fit->max_requests, g.better_ratio_requests)) {
            g.better_ratio = ratio;
            g.better_ratio_requests = f.max_requests;
          }
        }
      }
    }
  }
  return fit;
}

/// SGLang's JSON fields (`engine_startup::fields`): its options and geometry, what the plan needs,
/// the configurator's figures `g`.
inline report_value sglang_fields(const engine_report_inputs& in, const sglang_engine_report& g) {
  report_value j = report_value::object();
  const sglang_pool_sizes& z = g.sizes;
  const memory_plan& plan = *in.plan;
  j.set("overlap_scheduling_default", true);
  j.set("swa_full_tokens_ratio", g.options.swa_full_tokens_ratio);
  j.set("page_size", g.options.page_size);
  j.set("layers", report_value::object(
                      {{"main", g.geometry.layers}, {"csa", g.geometry.csa_layers}, {"hca", g.geometry.hca_layers}}));
  j.set("state_rings", report_value::object({{"c4", g.geometry.c4_ring}, {"c128", g.geometry.c128_ring}}));
  j.set("plan_needs", report_value::object({{"full_tokens", plan.sglang_need.full_tokens},
                                            {"swa_tokens", plan.sglang_need.swa_tokens}}));
  j.set("available_bytes", z.available_bytes);
  j.set("budget_is_plan", g.budget_is_plan);
  j.set("bytes_per_full_token", z.bytes_per_full_token);
  j.set("fixed_bytes", z.c128_state_fixed_bytes);
  j.set("starts", z.starts);
  j.set("max_total_num_tokens", z.full);
  j.set("max_running_requests", z.starts ? report_value(z.max_running_requests) : report_value());
  j.set("pool_sizes", report_value::object({{"full", z.full},
                                            {"swa", z.swa},
                                            {"c4", z.c4},
                                            {"c128", z.c128},
                                            {"c4_state", z.c4_state},
                                            {"c128_state", z.c128_state}}));
  if (z.starts) {
    const sglang_pool_bytes& a = g.allocated;
    j.set("allocated_bytes", report_value::object({{"swa_kv", a.swa_kv},
                                                   {"csa_kv", a.csa_kv},
                                                   {"hca_kv", a.hca_kv},
                                                   {"index_keys", a.index_keys},
                                                   {"csa_state", a.csa_state},
                                                   {"csa_index_state", a.csa_index_state},
                                                   {"hca_state", a.hca_state},
                                                   {"pools", a.pools()},
                                                   {"index_space", a.index_space}}));
    j.set("allocated_beyond_budget", a.pools() > z.available_bytes ? a.pools() - z.available_bytes : std::uint64_t{0});
    j.set("unaddressed_state_bytes", g.unaddressed_state_bytes);
    if (!g.budget_is_plan) {
      j.set("simulated_peak_swa_tokens", g.peak_swa_tokens);
      j.set("idle_swa_bytes", g.idle_swa_bytes);
      j.set("better_swa_full_tokens_ratio",
            g.better_ratio > 0 ? report_value::object({{"ratio", g.better_ratio},
                                                       {"simulated_max_requests", g.better_ratio_requests * in.dp}})
                               : report_value());
    }
  } else {
    j.set("refusal", std::string(z.refusal));
  }
  report_value lines = report_value::array();
  for (const std::string& line : g.log_lines) lines.push(line);
  j.set("log_lines", std::move(lines));
  return j;
}

/// SGLang's own words for what fits `fit` on pools of sizes `z`: its occupancy replay, its running cap.
inline std::vector<std::string> sglang_fit_text(const engine_report_inputs& in, const sglang_pool_sizes& z,
                                                const engine_fit& fit) {
  const plan_options& o = in.plan->options;
  std::vector<std::string> lines;
  {
    if (!z.starts)
      lines.emplace_back("  what really fits: nothing (SGLang refuses to start with this budget)");
    else if (in.engine_requests > z.max_running_requests)
      lines.push_back("  SGLang runs at most " + std::to_string(z.max_running_requests) +
                      " request(s) at once per worker (max_running_requests): the plan's " +
                      std::to_string(in.engine_requests) + " need --max-running-requests " +
                      std::to_string(in.engine_requests * in.dp) + " or more");
    if (z.starts)
      lines.push_back(
          "  what really fits (SGLang's occupancy replayed on these pools: prefill first, overlap, lazy SWA eviction, "
          "its admission gates; nothing held back or retracted): " +
          std::string(fit.lower_bound ? "at least " : "") + std::to_string(fit.max_requests * in.dp) +
          " request(s) of " + thousands(o.context_tokens) + " tokens" +
          (fit.requests_by_plan ? " (the plan's answer: it runs in the replay)" : "") + "; " +
          fit_context_text(fit, in.engine_requests));
  }
  return lines;
}

}  // namespace detail

/// SGLang's report of the plan `in.plan` (its ratio pools) under preset `e`: its configurator's
/// figures and log lines for the budget (without one, the plan's bytes; --max-running-requests
/// per attention-DP worker, as SGLang divides it), what its pools allocate and leave unaddressed;
/// with a budget, what fits them (`sglang_fit`), the SWA pool's idle bytes at that capacity and a
/// smaller --swa-full-tokens-ratio that fits more (0.05, 0.02, 0.01). Units: bytes, tokens.
/// Errors as `sglang_configure`.
inline engine_startup sglang_engine_startup(const engine_spec& /*e*/, const engine_report_inputs& in) {
  const memory_plan& plan = *in.plan;
  const plan_options& o = plan.options;
  sglang_options so = detail::sglang_options_of(o);
  // As SGLang runs: max_running_requests // attention DP (0: dp) per worker.
  so.max_running_requests =
      in.max_running > 0 ? in.max_running / (in.attention_dp > 0 ? in.attention_dp : in.dp) : so.max_running_requests;
  sglang_engine_report g = sglang_report(in.pools.sglang, so, in.budget ? *in.budget : plan.total_bytes, !in.budget);
  engine_startup r;
  const std::optional<engine_fit> fit = detail::sglang_fit_and_idle(in, so, g);
  const sglang_pool_sizes& z = g.sizes;
  r.starts = z.starts;
  r.running_cap = z.max_running_requests;
  r.refusal = z.starts ? std::string() : std::string(z.refusal);
  r.log_lines = g.log_lines;
  if (!z.starts) {
    r.screen_figure = "refuses to start: " + std::string(z.refusal);
  } else {
    std::string pools;  // its own "DSV4 pool sizes" line
    for (const std::string& line : g.log_lines)
      if (line.starts_with("DSV4 pool sizes")) pools = line + "; ";
    r.screen_figure = "logs " + pools + "max_total_num_tokens=" + std::to_string(z.full) +
                      ", max_running_requests=" + std::to_string(z.max_running_requests) + " (per worker)";
  }
  if (g.better_ratio > 0 && g.better_ratio_requests > 0)
    r.hint = engine_hint{"--swa-full-tokens-ratio " + shortest(g.better_ratio), g.better_ratio_requests * in.dp,
                         "SGLang's SWA pool is a share of its full tokens, not what N requests' windows need"};

  r.fields = detail::sglang_fields(in, g);

  // Text: the ratio pools, what the plan needs, what SGLang logs and allocates.
  std::vector<std::string>& t = r.text;
  t.push_back(
      "  ratio pools: one \"full token\" count from the budget, SWA = " + shortest(g.options.swa_full_tokens_ratio) +
      " x full, CSA / HCA = full / 4 and / 128, state rings " + std::to_string(g.geometry.c4_ring) + " / " +
      std::to_string(g.geometry.c128_ring) + "; pages of " + std::to_string(g.options.page_size) + " tokens");
  t.push_back("  the plan needs " + thousands(plan.sglang_need.full_tokens) + " full tokens and " +
              thousands(plan.sglang_need.swa_tokens) + " SWA tokens for " + thousands(o.requests) + " request(s) of " +
              thousands(o.context_tokens) + " tokens");
  t.push_back("  with " + thousands(static_cast<std::int64_t>(z.available_bytes)) + " B of KV cache" +
              (g.budget_is_plan ? " (the plan's bytes)" : " per GPU") + " SGLang logs:");
  for (const std::string& line : g.log_lines) t.push_back("    " + line);
  if (z.starts) {
    const std::uint64_t pools = g.allocated.pools();
    t.push_back("  its pools then allocate " + thousands(static_cast<std::int64_t>(pools)) + " B (" +
                thousands(static_cast<std::int64_t>(pools > z.available_bytes ? pools - z.available_bytes
                                                                              : z.available_bytes - pools)) +
                " B " + (pools > z.available_bytes ? "beyond" : "within") +
                " the budget: 576-B page padding, padding pages, state rows); outside them, uncharged: " +
                thousands(static_cast<std::int64_t>(g.allocated.index_space)) + " B of index space");
    t.push_back("  unused by design: " + thousands(static_cast<std::int64_t>(g.unaddressed_state_bytes)) +
                " B of CSA compressor state (sized per 128 SWA tokens, addressed per 256-token page; sglang #30371, "
                "#40337)");
    if (!g.budget_is_plan && g.peak_swa_tokens > 0)
      t.push_back("  idle by its ratio sizing: the SWA pool peaks at " + thousands(g.peak_swa_tokens) + " of its " +
                  thousands(z.swa) + " tokens at " + thousands(fit->max_requests) + " request(s) of " +
                  thousands(o.context_tokens) + ": " + thousands(static_cast<std::int64_t>(g.idle_swa_bytes)) +
                  " B of SWA KV and state charged for tokens never used (most of the unaddressed state above among "
                  "them)" +
                  (g.better_ratio > 0
                       ? "; --swa-full-tokens-ratio " + shortest(g.better_ratio) + " fits " +
                             std::to_string(g.better_ratio_requests * in.dp) + " request(s) in the same budget"
                       : std::string()));
  }

  if (fit && fit->simulated) r.fit_text = detail::sglang_fit_text(in, z, *fit);
  r.fit = fit;
  r.details = std::move(g);
  return r;
}

}  // namespace dsv4::cache
