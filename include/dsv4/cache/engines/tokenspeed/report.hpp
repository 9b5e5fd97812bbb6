// dsv4-cache: tokenspeed's own report of a plan (engines/report.hpp): its parent arena's groups,
// what its recipe computes and logs at startup (`tokenspeed_startup`, engines/tokenspeed/engine.hpp,
// with its sources) and, with a budget, what really fits its parents (its scheduler replayed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/report.hpp"
#include "dsv4/cache/engines/spec.hpp"
#include "dsv4/cache/engines/tokenspeed/engine.hpp"
#include "dsv4/cache/engines/tokenspeed/plan.hpp"
#include "dsv4/cache/plan_types.hpp"
#include "dsv4/cache/text.hpp"

namespace dsv4::cache {

/// tokenspeed's startup figures (`engine_startup::details`) and the budget they are for (bytes).
struct tokenspeed_engine_report {
  tokenspeed_startup_report startup{};
  std::uint64_t budget = 0;  ///< The budget given, or the plan's bytes.
  bool budget_is_plan = false;
};

namespace detail {

/// The stage whose arena tokenspeed's figures are of: with pipeline stages the widest parent's
/// (each stage builds its own arena from its layers: every layer has an SWA page, its MTP layers
/// the draft's), else the whole plan's with the recipe's `layers` and `draft` layers.
struct tokenspeed_stage {
  const memory_plan* plan = nullptr;
  std::int64_t stage = 0;
  int layers = 0;
  int draft = 0;
};
inline tokenspeed_stage tokenspeed_stage_of(const engine_report_inputs& in, int layers, int draft) {
  tokenspeed_stage st{in.plan, 0, layers, draft};
  for (const stage_plan& s : in.stages)
    if (st.plan == in.plan || s.plan->pools.bytes_per_block > st.plan->pools.bytes_per_block) {
      st.plan = s.plan;
      st.stage = s.stage;
    }
  if (st.plan == in.plan) return st;
  layer_mask all;
  for (const engine_group& g : st.plan->pools)
    for (int k = 0; k < g.num_members; ++k)
      for (std::size_t w = 0; w < all.bits.size(); ++w)
        all.bits[w] |= g.members[static_cast<std::size_t>(k)].layers.bits[w];
  st.layers = all.count();
  st.draft = all.count() - all.within(0, in.model->num_hidden_layers).count();
  return st;
}

}  // namespace detail

/// tokenspeed's report of the plan `in.plan` (its parent arena; with pipeline stages, the stage
/// of the widest parent, each stage building its own arena) under preset `e`: its recipe's
/// limits, groups and packing, the parents it needs to start, and for the budget (without one,
/// the plan's bytes) the parents it allocates, its token capacity and log line or refusal
/// (`tokenspeed_startup`); with a budget, what fits those parents (`replay_fit`). Units:
/// parents, pages, bytes, tokens. Throws std::invalid_argument as `tokenspeed_startup`.
inline engine_startup tokenspeed_engine_startup(const engine_spec& /*e*/, const engine_report_inputs& in) {
  const memory_plan& plan = *in.plan;
  const plan_options& o = plan.options;
  const model_config& m = *in.model;
  // Its recipe's layers: the draft model's MTP layers when cached.
  const int layers = m.num_hidden_layers + (o.cache_mtp ? m.num_nextn_predict_layers : 0);
  const int draft = o.cache_mtp ? m.num_nextn_predict_layers : 0;
  const tokenspeed_limits lim = detail::tokenspeed_limits_of(o);
  const detail::tokenspeed_stage st = detail::tokenspeed_stage_of(in, layers, draft);
  const memory_plan* sp = st.plan;
  const std::int64_t stage = st.stage;
  const bool per_stage = sp != &plan;
  const bool budget_is_plan = !in.budget;
  const std::uint64_t budget = in.budget ? *in.budget : sp->total_bytes;
  const tokenspeed_startup_report t =
      tokenspeed_startup(sp->pools, lim, budget, st.layers, st.draft, o.tokenspeed_pools);
  const memory_plan& tplan = *sp;

  engine_startup r;
  r.starts = t.starts && t.admits_context;
  r.max_request_tokens = t.starts && !t.admits_context ? t.max_request_tokens : 0;
  r.refusal = t.starts ? std::string() : t.refusal;
  r.log_lines.push_back(t.starts ? t.log_line : "ValueError: " + t.refusal);
  if (!t.starts) {
    r.screen_figure = "refuses to start: " + t.refusal;
  } else {
    r.screen_figure = "logs Cache profile: parent_bytes=" + std::to_string(t.parent_bytes) +
                      ", parents=" + std::to_string(t.parents) + ", token_capacity=" + std::to_string(t.token_capacity);
    if (!t.admits_context)
      r.screen_figure += "; admits at most " + thousands(t.max_request_tokens) + " tokens a request";
  }

  // JSON: the recipe's limits, the groups' packing and pages, the startup figures.
  report_value& j = r.fields;
  if (per_stage) j.set("pipeline_stage", stage);
  j.set("overlap_scheduling_default", true);
  j.set("max_num_seqs", lim.max_num_seqs);
  j.set("chunked_prefill_tokens", lim.chunk_tokens);
  j.set("decode_input_tokens", lim.decode_tokens);
  j.set("overlap_schedule_depth", lim.overlap_depth);
  j.set("parent_bytes", t.parent_bytes);
  j.set("prefix_granularity", t.prefix_tokens);
  report_value packing = report_value::object();
  report_value groups = report_value::array();
  for (int g = 0; g < tplan.pools.num_groups; ++g) {
    const engine_group& eg = tplan.pools[g];
    const engine_group_plan& ep = tplan.engine_groups[static_cast<std::size_t>(g)];
    packing.set(tokenspeed_group_id(eg), eg.pages_per_block);
    groups.push(
        report_value::object({{"group", tokenspeed_group_id(eg)},
                              {"table", to_string(eg.rule.kind)},
                              {"page_tokens", eg.rule.page_tokens},
                              {"window_tokens", eg.rule.sliding() ? report_value(ep.window_tokens) : report_value()},
                              {"packing", eg.pages_per_block},
                              {"page_bytes", eg.bytes()},
                              {"planned_pages", ep.blocks},
                              {"planned_parents", ep.parents}}));
  }
  j.set("packing", std::move(packing));
  j.set("groups", std::move(groups));
  j.set("min_parents_to_start", t.min_parents_to_start);
  j.set("budget_bytes", budget);
  j.set("budget_is_plan", budget_is_plan);
  j.set("starts", t.starts);
  if (t.starts) {
    j.set("budgeted_parents", t.budgeted_parents);
    j.set("parents", t.parents);
    j.set("token_capacity", t.token_capacity);
    j.set("max_request_tokens", t.max_request_tokens);
    j.set("arena_bytes", t.arena_bytes);
  } else {
    j.set("refusal", t.refusal);
  }
  j.set("log_lines", report_value::array({r.log_lines.front()}));

  // Text: the arena, its groups, what the recipe needs and allocates.
  std::vector<std::string>& x = r.text;
  x.push_back(
      "  one parent arena" +
      (per_stage ? " per pipeline stage (stage " + std::to_string(stage) + ", the widest, below)" : std::string()) +
      ": " + std::to_string(tplan.pools.num_groups) + " cache groups in parents of " + thousands(t.parent_bytes) +
      " B (P = " + std::to_string(t.prefix_tokens) + " tokens); a parent holds K pages of one group at a time");
  const auto row = [](const std::string& a, const std::string& b, const std::string& c, const std::string& d,
                      const std::string& k, const std::string& f, const std::string& g, const std::string& h) {
    return "  " + padded(a, 32, true) + " " + padded(b, 14, true) + " " + padded(c, 6, false) + " " +
           padded(d, 6, false) + " " + padded(k, 3, false) + " " + padded(f, 11, false) + " " + padded(g, 9, false) +
           " " + padded(h, 9, false);
  };
  x.push_back(row("group", "table", "page", "window", "K", "page B", "pages", "parents"));
  for (int g = 0; g < tplan.pools.num_groups; ++g) {
    const engine_group& eg = tplan.pools[g];
    const engine_group_plan& ep = tplan.engine_groups[static_cast<std::size_t>(g)];
    x.push_back(row(
        std::string(tokenspeed_group_id(eg)), std::string(to_string(eg.rule.kind)), std::to_string(eg.rule.page_tokens),
        eg.rule.sliding() ? std::to_string(ep.window_tokens) : std::string("-"), std::to_string(eg.pages_per_block),
        thousands(eg.bytes()), thousands(ep.blocks), thousands(ep.parents)));
  }
  x.push_back(
      "  (page, window: tokens; page B: one page of the group over its layers; pages, parents: the plan's for " +
      thousands(tplan.options.requests) + " request(s), ceil(pages / K) parents)");
  x.push_back("  the recipe sizes for max_num_seqs " + std::to_string(lim.max_num_seqs) + ", chunked prefill " +
              thousands(lim.chunk_tokens) + ", " + std::to_string(lim.decode_tokens) +
              " decode token(s), overlap scheduling " + (lim.overlap_depth > 0 ? "on" : "off") +
              (lim.overlap_depth > 0 ? std::string() : " (tokenspeed's default is on: --no-overlap turned it off)") +
              "; it needs " + thousands(t.min_parents_to_start) + " parents to start and " +
              thousands(tplan.admission_blocks - 1) + " for one request of " + thousands(o.context_tokens) +
              " tokens alone");
  x.push_back("  with " + thousands(static_cast<std::int64_t>(budget)) + " B of KV cache" +
              (budget_is_plan ? " (the plan's bytes)" : " per GPU") + ": " +
              thousands(t.budgeted_parents < 0 ? 0 : t.budgeted_parents) + " parents budgeted (budget // parent - 1)");
  if (t.starts) {
    x.push_back("  tokenspeed logs: " + t.log_line);
    x.push_back(
        "  it allocates " + thousands(t.parents) + " parents (" + thousands(static_cast<std::int64_t>(t.arena_bytes)) +
        " B with the null parent); the longest request it admits: " + thousands(t.max_request_tokens) + " tokens" +
        (t.admits_context ? std::string()
                          : " (below " + thousands(o.context_tokens) + ": longer requests are refused at submission)"));
  } else {
    x.push_back("  tokenspeed refuses to start: ValueError: " + t.refusal);
  }

  r.details = tokenspeed_engine_report{t, budget, budget_is_plan};
  // What really fits its parents; a request longer than it admits is refused at submission.
  if (!in.budget) return r;
  replay_setup rs;
  rs.cap.budget_bytes = *in.budget;
  rs.cap.usable_blocks = t.starts && t.admits_context ? t.parents : -1;
  rs.ctx_cap = rs.cap;
  rs.ctx_cap.usable_blocks = t.parents;
  rs.starts = rs.cap.usable_blocks >= 0;
  rs.starts_at = [&in, lim, layers, draft](std::int64_t len) {
    tokenspeed_limits l = lim;
    l.context_tokens = len;
    const tokenspeed_startup_report s = tokenspeed_startup(in.pools, l, *in.budget, layers, draft);
    return s.starts && s.admits_context;
  };
  r.fit = replay_fit(in, rs);
  return r;
}

}  // namespace dsv4::cache
