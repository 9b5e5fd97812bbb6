// dsv4-cache tools: the engine report of a plan: the engine's own report (engines/report.hpp
// `engine_startup`, filled by the engine's `engine_spec::startup`, or the library's own pools'),
// with the fields every engine shares. Computed once (`compute_engine_report`), rendered as JSON
// (`engine_report_json`) or text (`engine_report_text`) by the planner; no engine is named here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dsv4/cache.hpp"

namespace dsv4::cache::cli {

/// The engine report of a plan.
struct engine_report {
  const engine_spec* engine = nullptr;
  pool_structure structure = engine_pools{}.structure;  ///< The library's own pools unless the engine's.
  bool async_scheduling = false;                        ///< As planned (--overlap).
  std::int64_t max_running = 0;                         ///< The cap on running requests the replay applies (0: none).
  std::int64_t dp = 1;                                  ///< Engines (data-parallel ranks) the requests are split over.
  std::int64_t engine_requests = 0;                     ///< The plan's requests on the busiest engine.
  engine_startup startup;                               ///< The engine's own report (its fit moved to `fit`).
  std::optional<engine_fit> fit;                        ///< With a budget: what really fits, replayed.
};

/// The report of `plan` (the whole model on one GPU, or, with `ranks`, one per pipeline stage)
/// under engine `e`, with the KV budget per GPU if given: the engine's own report where the plan
/// is in its pool structure (`engine_spec::startup`), else the library's own pools'
/// (`own_pools_startup`). `max_running` caps the requests the replay runs at once;
/// `max_sim_visits` bounds the replays' work (`sim_work_budget`); `dcp` is the deployment's decode
/// context parallel size; `attention_dp`: attention-DP workers per server, which divide SGLang's
/// running cap (0: `dp`; 1: without DP attention every DP replica has its own).
/// Throws std::invalid_argument as the library.
inline engine_report compute_engine_report(const model_config& m, const memory_plan& plan,
                                           const std::vector<rank_plan_result>& ranks, std::int64_t dp,
                                           const engine_spec& e, std::optional<std::uint64_t> budget,
                                           std::int64_t max_running, std::int64_t max_sim_visits = kSimulateMaxVisits,
                                           std::int64_t dcp = 1, std::int64_t attention_dp = 0) {
  engine_report r;
  r.engine = &e;
  // The ranks' structure where there are ranks: under DCP tokenspeed's ranks are priced as own
  // pools (its arena under DCP is not modelled, `plan_structure`) while the whole model's plan,
  // without DCP, is an arena: no arena startup is reported for ranks that have none.
  r.structure = ranks.empty() ? plan.pools.structure : ranks.front().plan.pools.structure;
  const plan_options& o = plan.options;
  r.async_scheduling = o.policy.overlap;
  r.max_running = max_running;
  r.dp = dp;
  r.engine_requests = ranks.empty() ? o.requests : 0;
  for (const rank_plan_result& rp : ranks) r.engine_requests = std::max(r.engine_requests, rp.requests);
  engine_report_inputs in;
  in.model = &m;
  in.plan = &plan;
  for (const rank_plan_result& rp : ranks) in.stages.push_back({rp.coords.stage, &rp.plan});
  in.pools = plan_pools(m, plan_cache_specs(m, o), o);  // the whole model's: the scheduler's one pool
  in.budget = budget;
  if (budget) in.plan_max_requests = max_requests_for_budget(m, o, *budget).max_requests;
  in.engine_requests = r.engine_requests;
  in.dp = dp;
  in.dcp = dcp;
  in.attention_dp = attention_dp;
  in.max_running = max_running;
  in.max_sim_visits = max_sim_visits;
  engine_pools ranks_pools;
  ranks_pools.structure = r.structure;
  if (is_own_pools(ranks_pools) || e.startup == nullptr) {
    const bool scoped = !e.traits.own_structure_scope.empty() && o.pools == pools_choice::engine;
    r.startup = own_pools_startup(in, scoped ? e.traits.own_structure_scope : std::string_view());
  } else {
    r.startup = e.startup(e, in);
  }
  r.fit = std::move(r.startup.fit);
  r.startup.fit.reset();
  return r;
}

/// `v` as JSON (its keys in order).
inline nlohmann::ordered_json to_json(const report_value& v) {
  using json = nlohmann::ordered_json;
  switch (v.type()) {
    case report_value::kind::null: return nullptr;
    case report_value::kind::boolean: return v.as_bool();
    case report_value::kind::integer: return v.as_int();
    case report_value::kind::unsigned_integer: return v.as_uint();
    case report_value::kind::number: return v.as_double();
    case report_value::kind::string: return v.as_string();
    case report_value::kind::array: {
      json a = json::array();
      for (const report_value& x : v.items()) a.push_back(to_json(x));
      return a;
    }
    case report_value::kind::object: {
      json o = json::object();
      for (const auto& [k, x] : v.fields()) o[k] = to_json(x);
      return o;
    }
  }
  return nullptr;
}

/// The "engine_report" JSON object (see the README's JSON schema): the fields every engine
/// shares, the engine's own (`engine_startup::fields`), and what really fits.
inline nlohmann::ordered_json engine_report_json(const engine_report& r, const memory_plan& /*plan*/) {
  using json = nlohmann::ordered_json;
  const engine_spec& e = *r.engine;
  json j = {{"engine", std::string(e.name)},
            {"preset", e.preset.empty() ? json(nullptr) : json(std::string(e.preset))},
            {"source", std::string(e.source)},
            {"source_commit", std::string(e.source_commit)},
            {"structure", std::string(to_string(r.structure))},
            {"async_scheduling", r.async_scheduling},
            {"max_running_requests", r.max_running > 0 ? json(r.max_running) : json(nullptr)}};
  for (const auto& [k, x] : r.startup.fields.fields()) j[k] = to_json(x);
  if (r.fit) {
    if (r.fit->simulated) {
      j["simulated_max_requests"] = r.fit->max_requests * r.dp;
      if (r.dp > 1) j["simulated_max_requests_per_engine"] = r.fit->max_requests;
      j["simulated_max_context_tokens"] = r.fit->max_context_tokens;
      j["simulated_lower_bound"] = r.fit->lower_bound;
      j["max_requests_by_plan"] = r.fit->requests_by_plan;
      j["simulated_context_lower_bound"] = r.fit->context_lower_bound;
    } else {
      j["simulated_max_requests"] = nullptr;
      j["not_simulated"] = r.fit->why_not;
    }
  }
  return j;
}

/// The engine report as text (the planner's last section): the engine's own lines, then what
/// really fits (in the engine's own words where it has them).
inline std::string engine_report_text(const engine_report& r, const memory_plan& plan) {
  std::string s;
  auto out = std::back_inserter(s);
  const engine_spec& e = *r.engine;
  const plan_options& o = plan.options;
  fmt::format_to(out, "\nengine {} ({})\n", engine_label(e), e.source);
  for (const std::string& line : r.startup.text) fmt::format_to(out, "{}\n", line);
  if (r.fit) {
    if (!r.fit->simulated) {
      fmt::format_to(out, "  what really fits: not simulated ({})\n", r.fit->why_not);
    } else {
      if (!r.startup.fit_text.empty()) {
        for (const std::string& line : r.startup.fit_text) fmt::format_to(out, "{}\n", line);
      } else {
        const std::string per_engine =
            r.dp > 1 ? fmt::format(" ({} per engine x dp {})", r.fit->max_requests, r.dp) : "";
        fmt::format_to(out,
                       "  what really fits (simulated on this pool{}: no preemption, no admission held back): {}{} "
                       "request(s) of {} tokens{}{}; {}\n",
                       r.max_running > 0 ? fmt::format(", at most {} running", r.max_running) : std::string(),
                       r.fit->lower_bound ? "at least " : "", r.fit->max_requests * r.dp, thousands(o.context_tokens),
                       per_engine, r.fit->requests_by_plan ? " (the plan's answer: its pages bound the peak)" : "",
                       fit_context_text(*r.fit, r.engine_requests));
      }
      if (r.fit->lower_bound || r.fit->context_lower_bound)
        fmt::format_to(out, "  (the simulation stopped at its work limit, about 10 s: \"at least\")\n");
    }
  }
  return s;
}

}  // namespace dsv4::cache::cli
