// dsv4-cache-plan --verbose: the report as tables (the model, every layer, every group, the
// plan, the ranks, the engine's section), in raw bytes as the engines print them.
#pragma once

#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dsv4/tools/planner_report.hpp"

namespace dsv4::cache::cli {

/// The model's lines: its layers, attention kinds and the plan's row format of every pool.
inline std::string tables_model(const planner_result& r) {
  const model_config& m = r.model;
  const memory_plan& p = r.plan;
  std::string s;
  auto out = std::back_inserter(s);
  const layer_schedule sched = build_layer_schedule(m);
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
  fmt::format_to(out, "\n");
  return s;
}

/// --layers: every layer's attention kind, ratio, bytes per token of context and fixed bytes per request.
inline std::string tables_layers(const planner_result& r) {
  const model_config& m = r.model;
  const memory_plan& p = r.plan;
  std::string s;
  auto out = std::back_inserter(s);
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
  return s;
}

/// --groups: every group's pages and bytes, then the plan's totals and, with a budget, what fits.
inline std::string tables_groups(const planner_result& r) {
  const memory_plan& p = r.plan;
  std::string s;
  auto out = std::back_inserter(s);
  fmt::format_to(out, "{:<32} {:<7} {:<14} {:>4} {:>6} {:>8} {:>6} {:>10} {:>9} {:>12} {:>16}", "group", "family",
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
  // The structure's own terms: one shared block pool (blocks over every table) or a parent arena
  // (each group's pages packed into parents), and the engine that runs it.
  const pool_structure_traits& t = traits_of(p.pools.structure);
  const bool shared = t.one_block_pool;
  const bool arena = t.whole_blocks && !t.one_block_pool;
  const std::string engine = engine_title_of(p.options.policy);
  fmt::format_to(out, fmt::runtime(t.legend), fmt::arg("engine", p.options.policy.engine),
                 fmt::arg("sim", r.simulated ? t.sim_legend : std::string_view()));
  fmt::format_to(out,
                 "\nplan: {} request(s) x {} tokens (indexer {}, {} token(s)/step, prefill chunk {}, MTP {}), "
                 "engine {}{}{}; {} request(s) hold pages at once\n",
                 p.options.requests, p.options.context_tokens, plan_indexer(p), p.options.tokens_per_step,
                 p.options.prefill_chunk_tokens, p.options.cache_mtp ? "cached" : "not cached", p.options.policy.engine,
                 p.options.policy.overlap ? " with overlap" : "",
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
                   p.num_blocks == p.planned_blocks ? std::string()
                   : p.num_blocks == p.startup_blocks
                       ? fmt::format(", raised to {}'s startup need of {} blocks", engine, p.startup_blocks)
                       : fmt::format(", raised to {} blocks: {} - 1 requests' plan and a newcomer's admission "
                                     "gate ({} asks the free blocks for its whole prompt)",
                                     p.admission_blocks, p.options.requests, engine));
  if (arena)
    fmt::format_to(out,
                   "  = {} parents x {} B: the groups' {} parents + 1 null parent{} ({}'s parent arena, --pools "
                   "own for one pool per group)\n",
                   p.num_blocks, p.pools.bytes_per_block, p.planned_blocks - 1,
                   p.num_blocks > p.planned_blocks
                       ? fmt::format(", raised to what {} needs to start ({}) and to admit one request of {} "
                                     "tokens ({}), as it allocates them",
                                     engine, p.startup_blocks - 1, p.options.context_tokens, p.admission_blocks - 1)
                       : std::string(),
                   engine);
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
                     "  simulated peak {} blocks in use, {} at an admission ({}'s gate), the null block included\n",
                     r.simulated->peak_blocks + 1, r.simulated->peak_admission_blocks + 1, engine);
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
                     engine_of(p.options.policy.engine).traits.running_cap,
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
                     p.options.context_tokens, rq.max_requests, rq.total_bytes, rq.bytes_left, engine, rq.fixed_bytes,
                     shared ? "" : fmt::format(" and admit one request of {} tokens", p.options.context_tokens),
                     rq.bytes_per_request, rq.total_bytes / static_cast<std::uint64_t>(rq.max_requests));
    else if (rq.max_requests > 0)
      fmt::format_to(
          out, "  max requests at {} tokens: {} ({} B used, {} B left; {} B fixed, the first request adds {} B)\n",
          p.options.context_tokens, rq.max_requests, rq.total_bytes, rq.bytes_left, rq.fixed_bytes,
          rq.bytes_per_request);
    else if (shared)
      fmt::format_to(out, "  max requests at {} tokens: 0 ({} needs {} B to start: {} blocks of {} B)\n",
                     p.options.context_tokens, engine, rq.fixed_bytes, p.startup_blocks, p.pools.bytes_per_block);
    else
      fmt::format_to(out, "  max requests at {} tokens: 0 (one request needs {} B fixed + {} B)\n",
                     p.options.context_tokens, rq.fixed_bytes, rq.bytes_per_request);
    fmt::format_to(out, "  max context for {} request(s): {} tokens{}\n", p.options.requests,
                   r.context_fit->max_context_tokens,
                   r.context_fit->limited_by_model ? " (the model's whole context fits)" : "");
  }
  return s;
}

/// --ranks: every rank's layers, requests and bytes, the worst rank and the cluster's answer
/// ("" without parallel flags).
inline std::string tables_ranks(const planner_result& r) {
  const memory_plan& p = r.plan;
  std::string s;
  auto out = std::back_inserter(s);
  if (!r.parallel) return s;
  const parallel_config& pc = *r.parallel;
  fmt::format_to(out, "ranks: tp {} x dp {} x pp {} = {} GPUs, dcp {} (interleave {} rows)\n", pc.tp, pc.dp, pc.pp,
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
  return s;
}

/// --verbose: the verdict, then every table (model, layers, groups, plan, ranks, the engine's section).
inline std::string to_text(const planner_result& r) {
  std::string s = verdict_line(verdict_of(r)) + "\n";  // the answer first
  s += tables_model(r) + "\n" + tables_layers(r) + "\n" + tables_groups(r);
  if (r.parallel) s += "\n" + tables_ranks(r);
  if (r.report) s += engine_report_text(*r.report, r.plan);
  return s;
}

}  // namespace dsv4::cache::cli
