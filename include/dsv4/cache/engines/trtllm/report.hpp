// dsv4-cache: TensorRT-LLM's own report of a plan (engines/report.hpp): its pool groups, what its
// StorageManager makes of the budget (quota, granularity, minimum and typical slots, slots,
// bytes) and logs, and with a budget what really fits: its GUARANTEED_NO_EVICT admission (each
// request reserves its bytes to completion within the quota, engines/trtllm/policy.hpp) on the
// slots of its pool groups. Sources: docs/engines/trtllm.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "dsv4/cache/engines/report.hpp"
#include "dsv4/cache/engines/spec.hpp"
#include "dsv4/cache/engines/trtllm/engine.hpp"
#include "dsv4/cache/engines/trtllm/plan.hpp"
#include "dsv4/cache/engines/trtllm/policy.hpp"
#include "dsv4/cache/engines/trtllm/sizing.hpp"
#include "dsv4/cache/engines/trtllm/startup.hpp"
#include "dsv4/cache/group_spec.hpp"
#include "dsv4/cache/text.hpp"

namespace dsv4::cache {

namespace detail {

/// Requests of `ctx` tokens TensorRT-LLM runs at once on sizing `s` of layout `L` (options `t`):
/// GUARANTEED_NO_EVICT admits a request while its bytes to completion fit the quota left by those
/// running (`trtllm_admits`): n run at once when n - 1 of them in their generation phase (ctx
/// tokens in all) and the last admitted in its context phase (a prompt of ctx - 1) fit, each
/// holding `trtllm_request_blocks` in every pool group, at most max_batch_size.
constexpr std::int64_t trtllm_requests_fit(const trtllm_layout& L, const trtllm_options& t, const trtllm_sizing& s,
                                           std::int64_t ctx) {
  const std::uint64_t max_bytes = trtllm_max_resource_bytes(s);
  const std::uint64_t context = trtllm_needed_bytes(L, t.swa_scratch_reuse, trtllm_request_phase::context, ctx - 1);
  const std::uint64_t generation =
      trtllm_needed_bytes(L, t.swa_scratch_reuse, trtllm_request_phase::generation, ctx - 1, 1);
  std::int64_t n = t.max_batch_size;
  if (!trtllm_admits(0, context, max_bytes)) return 0;
  if (generation > 0)
    n = std::min<std::int64_t>(n, static_cast<std::int64_t>(std::min<std::uint64_t>(
                                      (max_bytes - context) / generation + 1, std::uint64_t{1} << 62)));
  const trtllm_slots need = trtllm_request_blocks(L, ctx, t.swa_scratch_reuse);
  for (int g = 0; g < L.num_groups; ++g)
    if (need[static_cast<std::size_t>(g)] > 0)
      n = std::min(n, s.slots[static_cast<std::size_t>(g)] / need[static_cast<std::size_t>(g)]);
  return n;
}

/// The names of the roles pool `p` holds: "SWA", "COMPRESSOR_KV+COMPRESSOR_SCORE", ...
inline std::string trtllm_roles_text(const trtllm_pool& p) {
  std::string s;
  for (int t = 0; t < kTrtllmAttentionTypes; ++t)
    if (p.holds(static_cast<trtllm_attention_type>(t))) {
      if (!s.empty()) s += '+';
      s += trtllm_type_name(static_cast<trtllm_attention_type>(t));
    }
  return s;
}

}  // namespace detail

/// TensorRT-LLM's report of the plan `in.plan` (its pool groups) under preset `e`: its options,
/// pool groups and what its StorageManager makes of the budget (without one, of the plan's bytes)
/// with its log lines (`trtllm_startup_report`); with a budget, what its admission fits
/// (`detail::trtllm_requests_fit`) and the longest context for the plan's requests. It "does not
/// start" where its minimum slots need more than the budget: it allocates them anyway, and the
/// GPU allocation then fails unless that much is free. Units: bytes, slots, tokens. Errors as
/// `trtllm_build_layout`.
inline engine_startup trtllm_engine_startup(const engine_spec& /*e*/, const engine_report_inputs& in) {
  const model_config& c = *in.model;
  const memory_plan& plan = *in.plan;
  const plan_options& o = plan.options;
  const group_spec_list specs = build_cache_specs(c, resolve_formats(c.family, o.indexer, o.formats), o.cache_mtp);
  const trtllm_layout L = detail::trtllm_layout_of(c, specs);
  const trtllm_options t = detail::trtllm_options_of(o);
  const bool budget_is_plan = !in.budget;
  const std::uint64_t budget = in.budget ? *in.budget : plan.total_bytes;
  const trtllm_startup st = trtllm_startup_report(c, specs, t, budget);
  const trtllm_sizing& s = st.sizing;
  const bool starts = s.min_quota <= round_up(budget, s.granularity);

  engine_startup r;
  r.starts = starts;
  r.log_lines = st.lines;
  if (!starts)
    r.refusal = "its minimum slots (max_batch_size " + std::to_string(t.max_batch_size) + ", max_seq_len " +
                std::to_string(t.max_seq_len) + ") need " + thousands(static_cast<std::int64_t>(s.min_quota)) +
                " B, above the budget: lower max_batch_size (--max-running-requests) or max_seq_len (--context); "
                "its StorageManager allocates them anyway and the GPU allocation fails (CuError / "
                "OutOfMemoryError) unless that much is free";
  r.screen_figure = starts ? "logs KV cache manager v2 device quota set to " + trtllm_gib(st.quota) + "; allocates " +
                                 thousands(static_cast<std::int64_t>(s.allocated_bytes)) + " B"
                           : "does not start: " + r.refusal;

  // JSON: its options, the StorageManager's figures, its pool groups.
  report_value& j = r.fields;
  j.set("overlap_scheduler_default", true);
  j.set("tokens_per_block", L.tokens_per_block);
  j.set("max_batch_size", t.max_batch_size);
  j.set("max_seq_len", t.max_seq_len);
  j.set("max_num_tokens", t.max_num_tokens);
  j.set("swa_scratch_reuse", t.swa_scratch_reuse);
  j.set("budget_bytes", budget);
  j.set("budget_is_plan", budget_is_plan);
  j.set("quota", st.quota);
  j.set("granularity", s.granularity);
  j.set("min_quota", s.min_quota);
  j.set("effective_quota", s.effective_quota);
  report_value groups = report_value::array();
  for (int g = 0; g < L.num_groups; ++g) {
    const trtllm_pool_group& pg = L[g];
    report_value pools = report_value::array();
    for (int p = 0; p < pg.num_pools; ++p)
      pools.push(report_value::object({{"roles", detail::trtllm_roles_text(pg[p])},
                                       {"buffers", pg[p].num_buffers},
                                       {"buffer_bytes", pg[p].buffer_bytes},
                                       {"slot_bytes", pg[p].slot_bytes()}}));
    const auto gi = static_cast<std::size_t>(g);
    groups.push(
        report_value::object({{"window_tokens", pg.window_tokens > 0 ? report_value(pg.window_tokens) : report_value()},
                              {"life_cycle_id", pg.life_cycle_id},
                              {"slot_bytes", pg.slot_bytes()},
                              {"pools", std::move(pools)},
                              {"min_slots", s.min_slots[gi]},
                              {"typical_slots", s.typical_slots[gi]},
                              {"slots", s.slots[gi]},
                              {"planned_slots", plan.engine_groups[gi].blocks}}));
  }
  j.set("pool_groups", std::move(groups));
  j.set("allocated_bytes", s.allocated_bytes);
  j.set("allocated_beyond_budget", s.allocated_bytes > budget ? s.allocated_bytes - budget : std::uint64_t{0});
  j.set("starts", starts);
  if (!starts) j.set("refusal", r.refusal);
  report_value lines = report_value::array();
  for (const std::string& line : st.lines) lines.push(line);
  j.set("log_lines", std::move(lines));

  // Text: its pool groups, the quota split, its log lines.
  std::vector<std::string>& x = r.text;
  x.push_back("  pool groups by life cycle (KVCacheManagerV2): " + std::to_string(L.num_groups) + " groups, " +
              std::to_string(L.num_pools()) + " pools, blocks of " + std::to_string(L.tokens_per_block) +
              " tokens; a block is allocated in every pool of its group");
  const auto row = [](const std::string& a, const std::string& b, const std::string& cc, const std::string& d,
                      const std::string& f, const std::string& g, const std::string& h, const std::string& k) {
    return "  " + padded(a, 5, false) + " " + padded(b, 6, false) + " " + padded(cc, 13, false) + " " +
           padded(d, 9, false) + " " + padded(f, 9, false) + " " + padded(g, 9, false) + " " + padded(h, 9, false) +
           "  " + k;
  };
  x.push_back(row("group", "window", "slot B", "min", "typical", "slots", "planned", "pools"));
  for (int g = 0; g < L.num_groups; ++g) {
    const trtllm_pool_group& pg = L[g];
    const auto gi = static_cast<std::size_t>(g);
    std::string pools;
    for (int p = 0; p < pg.num_pools; ++p)
      pools += (p > 0 ? ", " : "") + std::to_string(pg[p].num_buffers) + " x " + detail::trtllm_roles_text(pg[p]) +
               " (" + thousands(pg[p].buffer_bytes) + " B)";
    x.push_back(row(std::to_string(g), pg.window_tokens > 0 ? std::to_string(pg.window_tokens) : std::string("-"),
                    thousands(pg.slot_bytes()), thousands(s.min_slots[gi]), thousands(s.typical_slots[gi]),
                    thousands(s.slots[gi]), thousands(plan.engine_groups[gi].blocks), pools));
  }
  x.push_back(
      "  (window: tokens; slot B: one block over the group's pools; min: the slots its constraints need at "
      "max_batch_size " +
      thousands(t.max_batch_size) + " and max_seq_len " + thousands(t.max_seq_len) +
      "; typical: its typical step's, which set the split; slots: what the quota gives; planned: the plan's "
      "for " +
      thousands(o.requests) + " request(s))");
  x.push_back("  with " + thousands(static_cast<std::int64_t>(budget)) + " B of KV cache" +
              (budget_is_plan ? " (the plan's bytes)" : " per GPU") + ": quota " +
              thousands(static_cast<std::int64_t>(st.quota)) + " B in granules of " +
              thousands(static_cast<std::int64_t>(s.granularity)) + " B; its minimum slots need " +
              thousands(static_cast<std::int64_t>(s.min_quota)) + " B; it allocates " +
              thousands(static_cast<std::int64_t>(s.allocated_bytes)) + " B" +
              (s.allocated_bytes > budget
                   ? " (" + thousands(static_cast<std::int64_t>(s.allocated_bytes - budget)) + " B beyond the budget)"
                   : std::string()));
  x.emplace_back("  TensorRT-LLM logs:");
  for (const std::string& line : st.lines) x.push_back("    " + line);
  if (!starts) x.push_back("  it does not start with this budget: " + r.refusal);

  // What really fits: its admission on these slots; the context search resizes for each max_seq_len.
  if (!in.budget) return r;
  engine_fit fit;
  fit.simulated = true;
  const std::int64_t n = std::max<std::int64_t>(in.engine_requests, 1);
  const std::int64_t L_ctx = o.context_tokens;
  fit.max_requests = starts && L_ctx >= 2 ? detail::trtllm_requests_fit(L, t, s, L_ctx) : 0;
  const auto fits_at = [&](std::int64_t len) {
    trtllm_options u = t;
    u.max_seq_len = len;
    const trtllm_sizing z = trtllm_size(L, budget, u);
    return z.min_quota <= round_up(budget, z.granularity) && detail::trtllm_requests_fit(L, u, z, len) >= n;
  };
  fit.max_context_tokens =
      fits_at(2) ? detail::largest_fitting(std::int64_t{2}, c.max_position_embeddings, fits_at) : 0;
  r.fit_text.push_back(
      "  what really fits (TensorRT-LLM's GUARANTEED_NO_EVICT admission on these pool groups: each "
      "request reserves its bytes to completion within the quota and its blocks in every group, at "
      "most max_batch_size " +
      thousands(t.max_batch_size) + " running): " + std::to_string(fit.max_requests * in.dp) + " request(s) of " +
      thousands(L_ctx) + " tokens; " + fit_context_text(fit, n));
  r.fit = fit;
  r.details = st;
  return r;
}

}  // namespace dsv4::cache
