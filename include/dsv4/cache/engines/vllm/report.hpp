// dsv4-cache: vLLM's own report of a plan (engines/report.hpp): its shared block pool's groups,
// what it computes and logs at startup (`vllm_startup`, engines/vllm/engine.hpp, with its sources) and,
// with a budget, what really fits its num_blocks blocks (its scheduler replayed).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/report.hpp"
#include "dsv4/cache/engines/spec.hpp"
#include "dsv4/cache/engines/vllm/engine.hpp"
#include "dsv4/cache/plan_types.hpp"
#include "dsv4/cache/text.hpp"

namespace dsv4::cache {

namespace detail {
/// One pipeline stage's worker as vLLM sizes it: its block (bytes) and, with a budget, its blocks.
struct vllm_worker {
  std::int64_t stage = 0, bytes_per_block = 0, num_blocks = 0;
};
/// vLLM's JSON fields (`engine_startup::fields`) for `plan` under preset `e`: its pool's groups,
/// one request's charge `v`, every worker's block, its startup figures and log lines.
inline report_value vllm_fields(const engine_spec& e, const memory_plan& plan, const vllm_startup_report& v,
                                const std::vector<vllm_worker>& workers, const std::vector<std::string>& log_lines) {
  report_value j = report_value::object();
  j.set("async_scheduling_default", e.vllm.async_scheduling_default);
  j.set("max_in_flight_tokens", v.in_flight_tokens);
  j.set("bytes_per_block", v.bytes_per_block);
  report_value groups = report_value::array();
  for (int g = 0; g < plan.pools.num_groups; ++g) {
    const engine_group& eg = plan.pools[g];
    report_value tensors = report_value::array();
    for (int k = 0; k < eg.num_members; ++k) {
      const engine_member& mb = eg.members[static_cast<std::size_t>(k)];
      report_value layers = report_value::array();
      for (int l = 0; l < kMaxLayers; ++l)
        if (mb.layers.test(l)) layers.push(l);
      tensors.push(report_value::object({{"group", to_string(mb.group)},
                                         {"pool", mb.pool},
                                         {"rows_per_page", mb.rows_per_page},
                                         {"page_bytes", mb.page_bytes},
                                         {"layers", std::move(layers)}}));
    }
    const engine_group_plan& ep = plan.engine_groups[static_cast<std::size_t>(g)];
    groups.push(report_value::object(
        {{"index", g},
         {"table", to_string(eg.rule.kind)},
         {"block_tokens", eg.rule.page_tokens},
         {"window_tokens", eg.rule.sliding() ? report_value(eg.rule.window_tokens) : report_value()},
         {"tensors", std::move(tensors)},
         {"bytes", eg.bytes()},
         {"charge_blocks", v.charge_blocks[static_cast<std::size_t>(g)]},
         {"planned_blocks", ep.blocks}}));
  }
  j.set("groups", std::move(groups));
  j.set("request_blocks", v.request_blocks);
  j.set("min_bytes_to_start", v.min_bytes_to_start);
  report_value wj = report_value::array();
  for (const vllm_worker& w : workers) {
    report_value x = report_value::object({{"stage", w.stage}, {"bytes_per_block", w.bytes_per_block}});
    if (v.available_bytes) x.set("num_blocks", w.num_blocks);
    wj.push(std::move(x));
  }
  j.set("workers", std::move(wj));
  if (v.available_bytes) {
    j.set("available_bytes", *v.available_bytes);
    j.set("num_blocks", v.num_blocks);
    j.set("starts", v.starts);
    if (v.starts) {
      j.set("reported_tokens", v.reported_tokens);
      j.set("reported_concurrency", v.max_concurrency);
    } else {
      j.set("refusal", v.refusal);
      j.set("estimated_max_model_len", v.estimated_max_model_len);
    }
    report_value lines = report_value::array();
    for (const std::string& line : log_lines) lines.push(line);
    j.set("log_lines", std::move(lines));
  }
  return j;
}

/// vLLM's text lines (`engine_startup::text`) for `plan` under preset `e`.
inline std::vector<std::string> vllm_text(const engine_spec& e, const memory_plan& plan, const vllm_startup_report& v,
                                          const std::vector<vllm_worker>& workers) {
  const plan_options& o = plan.options;
  std::vector<std::string> t;
  t.push_back("  one shared block pool: " + std::to_string(plan.pools.num_groups) + " block tables (groups) over " +
              thousands(v.bytes_per_block) + " B per block (the widest group)");
  const auto row = [](const std::string& a, const std::string& b, const std::string& c, const std::string& d,
                      const std::string& x, const std::string& f, const std::string& g, const std::string& h) {
    return "  " + padded(a, 5, false) + " " + padded(b, 14, true) + " " + padded(c, 6, false) + " " +
           padded(d, 6, false) + " " + padded(x, 11, false) + " " + padded(f, 10, false) + " " + padded(g, 10, false) +
           "  " + h;
  };
  t.push_back(row("group", "table", "block", "window", "bytes", "per req", "planned", "tensors"));
  for (int g = 0; g < plan.pools.num_groups; ++g) {
    const engine_group& eg = plan.pools[g];
    std::string tensors;
    for (int k = 0; k < eg.num_members; ++k) {
      const engine_member& mb = eg.members[static_cast<std::size_t>(k)];
      const paged_cache_group_spec* lib = nullptr;
      for (const group_plan& gp : plan)
        if (gp.spec.id == mb.group) lib = &gp.spec;
      // Appended piece by piece (GCC 12's -Wrestrict misfires on "[" + std::string here).
      if (k > 0) tensors += ", ";
      tensors += std::to_string(mb.layers.count());
      tensors += " x ";
      tensors += to_string(mb.group);
      if (lib != nullptr && lib->num_pools > 1) {
        tensors += '[';
        tensors += std::to_string(mb.pool);
        tensors += ']';
      }
      tensors += " (";
      tensors += thousands(mb.page_bytes);
      tensors += " B)";
    }
    t.push_back(row(std::to_string(g), std::string(to_string(eg.rule.kind)), std::to_string(eg.rule.page_tokens),
                    eg.rule.sliding() ? std::to_string(eg.rule.window_tokens) : std::string("-"), thousands(eg.bytes()),
                    thousands(v.charge_blocks[static_cast<std::size_t>(g)]),
                    thousands(plan.engine_groups[static_cast<std::size_t>(g)].blocks), tensors));
  }
  t.push_back(std::string("  (block, window: tokens; bytes: one block of the group, its tensors' padded pages") +
              (workers.size() > 1 ? " over the whole model (each stage's block: below)" : "") +
              "; per req: the blocks vLLM charges one request of " + thousands(o.context_tokens) +
              " tokens at startup; planned: the plan's blocks for " + thousands(o.requests) +
              " request(s) on one engine)");
  if (workers.size() > 1) {
    std::string line = "  workers (pipeline stages):";
    for (const vllm_worker& w : workers)
      line += " stage " + std::to_string(w.stage) + " " + thousands(w.bytes_per_block) + " B/block;";
    t.push_back(line + " every worker holds the scheduler's num_blocks blocks of its own width");
  }
  t.push_back("  one request of " + thousands(o.context_tokens) + " tokens: " + thousands(v.request_blocks) +
              " blocks (" + thousands(static_cast<std::int64_t>(v.request_bytes)) + " B); vLLM starts with at least " +
              thousands(static_cast<std::int64_t>(v.min_bytes_to_start)) + " B of KV cache (" +
              thousands(v.request_blocks + 1) + " blocks with the null block)");
  t.push_back(std::string("  async scheduling ") + (v.async_scheduling ? "on" : "off") + " (max_in_flight_tokens " +
              thousands(v.in_flight_tokens) + ")" +
              (e.defaults.overlap && !v.async_scheduling
                   ? "; vLLM " + std::string(e.preset) + " turns it on by default: --no-overlap turned it off"
                   : std::string()));
  if (v.available_bytes) {
    t.push_back("  with " + thousands(static_cast<std::int64_t>(*v.available_bytes)) +
                " B of KV cache per GPU: " + thousands(v.num_blocks) + " blocks");
    t.push_back(v.starts ? "  vLLM logs: " + v.log_line : "  vLLM refuses to start: ValueError: " + v.refusal);
  }
  return t;
}

}  // namespace detail

/// vLLM's report of the plan `in.plan` (its shared block pool) under preset `e`: each pipeline
/// stage's worker block (bytes; with a budget, budget // block blocks), its startup figures and
/// log line or refusal (`vllm_startup`), the pool's groups as JSON and text, and with a budget
/// what fits `num_blocks - 1` usable blocks (`replay_fit`). Units: blocks, bytes, tokens.
/// Throws std::invalid_argument as `vllm_startup`.
inline engine_startup vllm_engine_startup(const engine_spec& e, const engine_report_inputs& in) {
  const memory_plan& plan = *in.plan;
  const plan_options& o = plan.options;
  using worker = detail::vllm_worker;
  std::vector<worker> workers;
  if (in.stages.empty()) {
    workers.push_back({0, plan.pools.bytes_per_block, 0});
  } else {
    for (const stage_plan& sp : in.stages)
      if (std::none_of(workers.begin(), workers.end(), [&](const worker& w) { return w.stage == sp.stage; }))
        workers.push_back({sp.stage, sp.plan->pools.bytes_per_block, 0});
  }
  std::vector<std::int64_t> bpb;
  for (worker& w : workers) {
    if (in.budget && w.bytes_per_block > 0)
      w.num_blocks = static_cast<std::int64_t>(*in.budget / static_cast<std::uint64_t>(w.bytes_per_block));
    bpb.push_back(w.bytes_per_block);
  }
  const vllm_startup_report v =
      vllm_startup(in.pools, bpb, o.context_tokens, o.prefill_chunk_tokens, o.policy.overlap, in.dcp, in.budget);

  engine_startup r;
  r.starts = !v.available_bytes || v.starts;
  if (v.available_bytes) {
    r.refusal = v.starts ? std::string() : v.refusal;
    r.log_lines.push_back(v.starts ? v.log_line : "ValueError: " + v.refusal);
    r.screen_figure = v.starts ? "logs " + v.log_line : "refuses to start: " + v.refusal;
  }

  r.fields = detail::vllm_fields(e, plan, v, workers, r.log_lines);
  r.text = detail::vllm_text(e, plan, v, workers);

  // What really fits num_blocks - 1 usable blocks (the null block apart); a shorter
  // max_model_len may start where L does not (num_blocks does not depend on it).
  r.details = v;
  if (!in.budget) return r;
  replay_setup rs;
  rs.cap.budget_bytes = *in.budget;
  rs.cap.usable_blocks = v.starts ? v.num_blocks - 1 : -1;
  rs.ctx_cap = rs.cap;
  rs.ctx_cap.usable_blocks = v.num_blocks - 1;
  rs.starts = v.starts;
  rs.starts_at = [&in, bpb, o](std::int64_t len) {
    return vllm_startup(in.pools, bpb, len, o.prefill_chunk_tokens, o.policy.overlap, in.dcp, in.budget).starts;
  };
  r.fit = replay_fit(in, rs);
  return r;
}

}  // namespace dsv4::cache
