// dsv4-cache-plan --json: the report as one JSON object (exact integer bytes; keys in the
// documented order; `fits` and `verdict` at the end).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "dsv4/tools/planner_report.hpp"

namespace dsv4::cache::cli {

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
    if (traits_of(p.pools.structure).pads_pages) groups.back()["engine_page_bytes"] = engine_page_bytes(p, gi);
    if (simulated) groups.back()["simulated_peak_pages"] = simulated_group_pages(p, *simulated, gi);
  }
  return groups;
}

/// JSON `budget`: how the KV budget per GPU was obtained. "given" (--memory-gib, or
/// --gpu-memory-gib minus --reserved-gib), "derived" from --gpu (the chain, bytes, each figure's
/// source), "not derived" (why), or null (no budget and no --gpu).
inline nlohmann::ordered_json budget_json(const planner_result& r) {
  using json = nlohmann::ordered_json;
  if (!r.budget) return r.budget_bytes ? json({{"how", "given"}, {"kv_budget_bytes", *r.budget_bytes}}) : json(nullptr);
  const budget_derivation& b = *r.budget;
  if (!b.derived) return json({{"how", "not derived"}, {"why", b.why_not}, {"gpu", b.gpu->name}});
  const kv_budget& c = b.chain;
  json reserve = nullptr;
  if (!b.fixed)
    reserve = json({{"bytes", c.reserve_bytes},
                    {"persistent_buffers_bytes", b.reserve.persistent_buffers},
                    {"activation_peak_bytes", b.reserve.activation_peak},
                    {"logits_bytes", b.reserve.logits},
                    {"non_torch_bytes", b.reserve.non_torch},
                    {"source",
                     "estimate (kv_budget.hpp estimate_runtime_reserve): the engines measure theirs in a "
                     "profiling run"}});
  return json({{"how", "derived"},
               {"gpu", b.gpu->name},
               {"gpu_bytes", b.gpu->bytes},
               {"gpu_source", std::string(to_string(b.gpu->basis)) + ": " + std::string(b.gpu->source)},
               {"fraction_flag", b.fraction_flag},
               {"fraction", b.fixed ? json(nullptr) : json(c.fraction)},
               {"fraction_source", b.fraction_source},
               {"fraction_reference", b.fraction_reference.empty() ? json(nullptr) : json(b.fraction_reference)},
               {"usable_bytes", c.usable_bytes},
               {"weights_bytes_per_rank", c.weights_bytes},
               {"weights_source",
                "weights.hpp: every parameter tensor from config.json, the fullest GPU as the "
                "engine splits them (" +
                    b.weights_split + ")"},
               {"reserve_bytes", b.fixed ? json(nullptr) : json(c.reserve_bytes)},
               {"reserve", reserve},
               {"kv_budget_bytes", c.kv_bytes},
               {"weights_fit", c.weights_fit()},
               {"fits", c.fits()}});
}

inline nlohmann::ordered_json to_json(const planner_result& r) {
  using json = nlohmann::ordered_json;  // keys in the documented order
  const memory_plan& p = r.plan;
  json j;
  // Every input as planned: {"value", "source": "flag" | "engine default" | "planner default",
  // "reference": the engine code that sets the default ("repo path@commit symbol"), null when given}.
  json assumed = json::object();
  for (const assumption& a : r.assumptions) {
    json value;
    std::visit([&](const auto& x) { value = x; }, a.value);
    assumed[a.input] = {
        {"value", value}, {"source", a.source}, {"reference", a.reference.empty() ? json(nullptr) : json(a.reference)}};
  }
  j["assumptions"] = assumed;
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
               {"engine", std::string(p.options.policy.engine)},
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
  const pool_structure_traits& t = traits_of(p.pools.structure);
  // The block figures under the structure's own names (blocks, parents), the null unit included in each.
  for (const auto& [key, v] :
       {std::pair{t.key_unit_bytes, p.pools.bytes_per_block}, std::pair{t.key_units, p.num_blocks},
        std::pair{t.key_planned, p.planned_blocks}, std::pair{t.key_startup, p.startup_blocks},
        std::pair{t.key_admission, p.admission_blocks}})
    if (!key.empty()) plan[std::string(key)] = v;
  if (r.simulated) {
    plan["simulated_peak_bytes"] = r.simulated->peak_bytes;
    plan["simulations"] = r.simulated->simulations;
    if (!t.key_sim_peak.empty()) plan[std::string(t.key_sim_peak)] = simulated_peak_units(p, *r.simulated) + 1;
    if (!t.key_sim_peak_admission.empty())  // the null block included, as num_blocks
      plan[std::string(t.key_sim_peak_admission)] = r.simulated->peak_admission_blocks + 1;
  }
  if (p.options.role != deployment_role::colocated) {
    plan["role"] = std::string(to_string(p.options.role));
    plan["handover_requests"] = p.options.handover_requests;
  }
  j["plan"] = plan;
  if (r.report) j["engine_report"] = engine_report_json(*r.report, p);
  if (r.parallel) {
    const parallel_config& pc = *r.parallel;
    // SGLang's DP attention: its dp workers inside the TP group (tp as given; each worker's
    // attention TP is tp / dp, the ranks' own TP), tp x pp GPUs.
    j["parallel"] = {{"tp", r.dp_attention ? pc.tp * pc.dp : pc.tp},
                     {"dp", pc.dp},
                     {"pp", pc.pp},
                     {"dcp", pc.dcp},
                     {"dcp_interleave_rows", pc.dcp_interleave_rows},
                     {"dp_attention", r.dp_attention},
                     {"attention_tp", pc.tp},
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
  const plan_breakdown b = breakdown_of(screen_plan(r));  // the worst GPU's, as the screen
  j["breakdown"] = {{"rank", r.ranks.empty() ? json(nullptr) : json(r.worst.worst_rank)},
                    {"total_bytes", b.total},
                    {"context_rows_bytes", b.context_rows},
                    {"window_bytes", b.windows},
                    {"page_rounding_bytes", b.rounding},
                    {"in_flight_bytes", b.in_flight},
                    {"null_page_bytes", b.null_pages},
                    {"engine_structure_bytes", b.engine}};
  j["hint"] = r.hint ? json({{"flag", r.hint->flag},
                             {"requests_now", r.hint->requests_now},
                             {"requests_then", r.hint->requests_then},
                             {"why", r.hint->why}})
                     : json(nullptr);
  j["budget"] = budget_json(r);
  const plan_verdict v = verdict_of(r);
  j["fits"] = v.has_budget ? json(v.fits) : json(nullptr);
  json vj = {{"has_budget", v.has_budget}, {"requests", v.requests}, {"context_tokens", v.context_tokens}};
  if (v.has_budget) {
    vj["fits"] = v.fits;
    vj["plan_max_requests"] = v.plan_max_requests;
    vj["engine_starts"] = v.engine_starts;
    vj["simulated_max_requests"] = v.simulated_max_requests ? json(*v.simulated_max_requests) : json(nullptr);
    vj["simulated_lower_bound"] = v.simulated_lower_bound;
    vj["max_requests"] = v.max_requests;  // what really fits: the headline
    vj["max_requests_lower_bound"] = v.max_requests_lower_bound;
    vj["max_requests_by_plan"] = v.by_plan;
    vj["by_plan_why"] = v.by_plan ? json(v.by_plan_why) : json(nullptr);
    vj["limit"] = v.limit;
    vj["limit_text"] = v.limit_text;
    vj["bound"] = bound_text(v);
    vj["why"] = v.why.empty() ? json(nullptr) : json(v.why);
  }
  vj["line"] = verdict_line(v);
  j["verdict"] = vj;
  return j;
}

}  // namespace dsv4::cache::cli
