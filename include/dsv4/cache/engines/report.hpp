// dsv4-cache: an engine's own report of a plan, as a value every engine fills the same way
// (`engine_startup`, by `engine_spec::startup`): what it computes, logs and refuses at startup,
// its fields as JSON has them, its lines as text has them, and, with a budget, what really fits
// on its pools (its allocator replayed). The planner renders it and reads its verdict from it,
// naming no engine (tools/engine_report.hpp).
#pragma once

#include <algorithm>
#include <any>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dsv4/cache/alloc_sim.hpp"
#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/model.hpp"
#include "dsv4/cache/plan_types.hpp"
#include "dsv4/cache/text.hpp"

namespace dsv4::cache {

/// A value of an engine's report as JSON has it: null, a boolean, a signed or unsigned 64-bit
/// integer, a double, a string, an array, or an object whose keys keep the order they were set in.
class report_value {
 public:
  enum class kind : std::uint8_t { null, boolean, integer, unsigned_integer, number, string, array, object };

  report_value() = default;
  report_value(std::nullptr_t) {}
  report_value(bool v) : kind_(kind::boolean), b_(v) {}
  report_value(int v) : kind_(kind::integer), i_(v) {}
  report_value(std::int64_t v) : kind_(kind::integer), i_(v) {}
  report_value(std::uint64_t v) : kind_(kind::unsigned_integer), u_(v) {}
  report_value(double v) : kind_(kind::number), d_(v) {}
  report_value(std::string v) : kind_(kind::string), s_(std::move(v)) {}
  report_value(std::string_view v) : kind_(kind::string), s_(v) {}
  report_value(const char* v) : kind_(kind::string), s_(v) {}

  /// An empty array, or one of `items`.
  static report_value array(std::vector<report_value> items = {}) {
    report_value v;
    v.kind_ = kind::array;
    v.items_ = std::move(items);
    return v;
  }
  /// An empty object, or one of `fields` in that order (a later duplicate key replaces the first).
  static report_value object(std::vector<std::pair<std::string, report_value>>&& fields = {}) {
    report_value v;
    v.kind_ = kind::object;
    for (auto& [k, x] : fields) v.set(k, std::move(x));
    return v;
  }

  /// Sets `key` of an object: in place where it is set already, else last. Throws
  /// std::invalid_argument (via `fail`) if this is not an object.
  report_value& set(std::string_view key, report_value v) {
    require(kind_ == kind::object, "report_value::set needs an object");
    for (auto& [k, x] : fields_)
      if (k == key) {
        x = std::move(v);
        return *this;
      }
    fields_.emplace_back(std::string(key), std::move(v));
    return *this;
  }
  /// Appends `v` to an array. Throws std::invalid_argument (via `fail`) if this is not an array.
  report_value& push(report_value v) {
    require(kind_ == kind::array, "report_value::push needs an array");
    items_.push_back(std::move(v));
    return *this;
  }
  /// The value of `key` of an object, or nullptr.
  [[nodiscard]] const report_value* find(std::string_view key) const {
    for (const auto& [k, x] : fields_)
      if (k == key) return &x;
    return nullptr;
  }

  [[nodiscard]] kind type() const { return kind_; }
  [[nodiscard]] bool as_bool() const { return b_; }
  [[nodiscard]] std::int64_t as_int() const { return i_; }
  [[nodiscard]] std::uint64_t as_uint() const { return u_; }
  [[nodiscard]] double as_double() const { return d_; }
  [[nodiscard]] const std::string& as_string() const { return s_; }
  [[nodiscard]] const std::vector<report_value>& items() const { return items_; }
  [[nodiscard]] const std::vector<std::pair<std::string, report_value>>& fields() const { return fields_; }

 private:
  kind kind_ = kind::null;
  bool b_ = false;
  std::int64_t i_ = 0;
  std::uint64_t u_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<report_value> items_;
  std::vector<std::pair<std::string, report_value>> fields_;
};

/// Above this estimated work (`sim_work_estimate`) `--simulate` refuses at once: about 10 s on a
/// 2-core machine by that (upper) estimate.
inline constexpr double kSimulateMaxWork = 4.0e10;
/// The simulations of one planner run stop after this many request visits (`sim_result::visits`,
/// about 3 x 10^7 a second here): about 10 s, whatever the estimate said.
inline constexpr std::int64_t kSimulateMaxVisits = 300'000'000;

/// What really fits, the engine's allocator replayed on its pools (with a budget).
struct engine_fit {
  bool simulated = false;
  std::string why_not;                  ///< Why it was not simulated.
  std::int64_t max_requests = 0;        ///< Per engine (one DP rank): requests of L with no preemption.
  std::int64_t max_context_tokens = 0;  ///< For the plan's requests (per engine).
  bool lower_bound = false;             ///< The request search stopped at its work limit: at least max_requests.
  bool context_lower_bound = false;     ///< The context search stopped at its work limit: at least max_context_tokens.
  /// max_requests is the plan's answer, not a replayed one: the plan's pages bound the replayed
  /// peak (the grid tests), so it fits; the search did not go past it (the running cap) or stopped
  /// at its work limit below it.
  bool requests_by_plan = false;
  std::int64_t work = 0;  ///< Request visits the replays made.
};

/// One flag change with which the engine fits more requests in the same budget (its own lever).
struct engine_hint {
  std::string flag;           ///< As typed: "--swa-full-tokens-ratio 0.05".
  std::int64_t requests = 0;  ///< Requests of L it fits then, over every engine (DP rank).
  std::string why;            ///< Why the flag matters, in a line.
};

/// One pipeline stage's plan (`rank_plan_result`'s), for an engine whose workers differ by stage.
struct stage_plan {
  std::int64_t stage = 0;
  const memory_plan* plan = nullptr;
};

/// What an engine's report reads: the plan, the deployment and the budget. Units: requests,
/// tokens, bytes.
struct engine_report_inputs {
  const model_config* model = nullptr;
  const memory_plan* plan = nullptr;    ///< The whole model's plan on one GPU.
  std::vector<stage_plan> stages;       ///< With pipeline stages: every rank's plan, by stage; else empty.
  engine_pools pools{};                 ///< The whole model's structure (`plan_pools`): the scheduler's one pool.
  std::optional<std::uint64_t> budget;  ///< KV bytes per GPU, if given.
  std::int64_t plan_max_requests = 0;   ///< The plan's answer for the budget (`max_requests_for_budget`).
  std::int64_t engine_requests = 1;     ///< The plan's requests on the busiest engine (DP rank).
  std::int64_t dp = 1;                  ///< Engines (DP ranks) the requests are split over.
  std::int64_t dcp = 1;                 ///< Decode context parallel size.
  std::int64_t attention_dp = 0;        ///< Attention-DP workers per server (0: dp).
  std::int64_t max_running = 0;         ///< The running cap the replay applies (0: none).
  std::int64_t max_sim_visits = kSimulateMaxVisits;  ///< The replays' work limit, request visits.
};

/// An engine's own report of a plan (see the top of this file).
struct engine_startup {
  bool starts = true;  ///< It starts with the budget (without one, with the plan's bytes).
  /// It starts but admits no request longer than this (its single-request limit); 0: none.
  std::int64_t max_request_tokens = 0;
  /// Its own cap on one engine's running requests where it derives one (SGLang's
  /// max_running_requests per worker); 0: the cap as given.
  std::int64_t running_cap = 0;
  std::string screen_figure;           ///< The screen's words: "logs ...", "refuses to start: ...".
  std::vector<std::string> log_lines;  ///< What it logs at startup.
  std::string refusal;                 ///< Its startup error ("" when it starts).
  /// Its JSON fields (`engine_report`), after the common ones, in order.
  report_value fields = report_value::object();
  std::vector<std::string> text;  ///< Its text lines after the report's header line.
  std::optional<engine_fit> fit;  ///< With a budget: what really fits.
  /// Its own words for the fit (text lines); empty: the planner's (`fit_text`).
  std::vector<std::string> fit_text;
  std::optional<engine_hint> hint;
  /// The engine's own typed figures (its `*_startup_report`), for callers that know the engine
  /// (tests, fuzzers); the planner reads only the fields above.
  std::any details;
};

/// The context search of `f` in words: "N request(s) up to [at least ]L tokens", or that it was
/// not replayed (its work limit).
inline std::string fit_context_text(const engine_fit& f, std::int64_t engine_requests) {
  if (f.context_lower_bound && f.max_context_tokens == 0) return "the longest context not simulated (its work limit)";
  return thousands(std::max<std::int64_t>(engine_requests, 1)) + " request(s) up to " +
         (f.context_lower_bound ? "at least " : "") + thousands(f.max_context_tokens) + " tokens";
}

/// How `replay_fit` replays an engine's pools.
struct replay_setup {
  sim_capacity cap{};      ///< What the request search's replays may hold.
  sim_capacity ctx_cap{};  ///< What the context search's replays may hold (a shorter max_model_len may start).
  bool starts = true;      ///< The engine starts at the plan's context (else nothing of it runs).
  /// Whether it starts at max_model_len `len` (the context search); empty: always.
  std::function<bool(std::int64_t)> starts_at;
};

/// What really fits `in.pools` with the budget: the engine's allocation policy replayed
/// (alloc_sim.hpp) for the largest N of the plan's L (from the plan's answer, which it never
/// goes below where the search stops at its work limit) and the longest context for the plan's
/// requests. Not replayed (`why_not`): a context below 2 tokens, a prefill or decode instance,
/// pipeline stages of a structure with one pool per stage, DCP, or steps or contexts above 2^40
/// tokens. Needs `in.budget`.
inline engine_fit replay_fit(const engine_report_inputs& in, const replay_setup& rs) {
  engine_fit fit;
  const plan_options& o = in.plan->options;
  sim_search search;
  search.max_running = in.max_running;
  const std::int64_t L = o.context_tokens;
  const std::int64_t n = std::max<std::int64_t>(in.engine_requests, 1);
  if (L < 2) {
    fit.why_not = "the simulator needs a context of at least 2 tokens";
    return fit;
  }
  if (o.role != deployment_role::colocated) {
    fit.why_not = "the simulator replays colocated engines only";
    return fit;
  }
  // The search's top: the simulator's 2^20 requests, or the running cap.
  const std::int64_t top = search.max_running > 0 ? std::min<std::int64_t>(search.max_running, std::int64_t{1} << 20)
                                                  : std::int64_t{1} << 20;
  const std::int64_t hint = std::min<std::int64_t>(in.plan_max_requests, top);
  // Half of the work limit for each search (requests at L, the context for n).
  sim_work_budget work{in.max_sim_visits / 2, 0, false};
  sim_work_budget ctx_work{in.max_sim_visits - in.max_sim_visits / 2, 0, false};
  constexpr std::int64_t kSimMax = std::int64_t{1} << 40;  // the simulator's bound on tokens
  const model_config& m = *in.model;
  if (!in.stages.empty() && !traits_of(in.pools.structure).one_block_pool) {
    fit.why_not = "each rank's own pools are not replayed (one shared pool per engine only)";
  } else if (in.dcp > 1) {
    fit.why_not = "the simulator does not shard a request over decode-context-parallel ranks";
  } else if (o.prefill_chunk_tokens > kSimMax || m.max_position_embeddings > kSimMax) {
    fit.why_not = "the simulator replays step budgets and contexts of at most 2^40 tokens";
  } else {
    // The plan's answer fits (its pages bound the replayed peak): at the running cap there is
    // nothing above it to search; below it, the replay searches upward from it and never
    // answers less than it (a search cut at its work limit).
    if (!rs.starts) {
      fit.max_requests = 0;
    } else if (hint >= top) {
      fit.max_requests = hint;
      fit.requests_by_plan = true;
      // Capped by the simulator's 2^20 requests, not the running cap: at least that many.
      fit.lower_bound = in.plan_max_requests > top && !(search.max_running > 0 && search.max_running <= top);
    } else {
      fit.max_requests = max_requests_simulated(in.pools, o.policy, L, o.tokens_per_step, o.prefill_chunk_tokens,
                                                rs.cap, search, std::max<std::int64_t>(hint, 1), top, &work);
      if (work.exhausted && fit.max_requests < hint) {
        fit.max_requests = hint;
        fit.requests_by_plan = true;
      }
    }
    const auto starts_at = [&](std::int64_t len) { return !rs.starts_at || rs.starts_at(len); };
    fit.max_context_tokens = max_context_simulated(in.pools, o.policy, n, m.max_position_embeddings, o.tokens_per_step,
                                                   o.prefill_chunk_tokens, rs.ctx_cap, search, starts_at, &ctx_work);
    fit.simulated = true;
    fit.lower_bound = fit.lower_bound || work.exhausted;
    fit.context_lower_bound = ctx_work.exhausted;
  }
  fit.work = work.spent + ctx_work.spent;
  return fit;
}

/// The report of a plan in the library's own pools (every group in a pool of its own: the
/// engine's own structure is not modelled for it, or --pools own): `scope` says where the
/// engine's own is modelled. With a budget, what fits them, replayed (`replay_fit`).
inline engine_startup own_pools_startup(const engine_report_inputs& in, std::string_view scope) {
  engine_startup r;
  r.text.push_back("  own pools: every group's pages in a pool of its own" +
                   (scope.empty() ? std::string() : " (" + std::string(scope) + ")"));
  if (!in.budget) return r;
  replay_setup rs;
  rs.cap.budget_bytes = *in.budget;
  rs.ctx_cap = rs.cap;
  r.fit = replay_fit(in, rs);
  return r;
}

}  // namespace dsv4::cache
