// dsv4-cache tools: the engine report of a plan: the engine's pool structure, the figures the
// engine itself computes and logs at startup (vLLM: engines/vllm.hpp `vllm_startup`), and, with a
// budget, what really fits on that pool (the allocation simulator, alloc_sim.hpp). Computed
// once (`compute_engine_report`), rendered as JSON (`engine_report_json`) or text
// (`engine_report_text`) by the planner.
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

/// Above this estimated work (`sim_work_estimate`) `--simulate` refuses at once: about 10 s on a
/// 2-core machine by that (upper) estimate.
inline constexpr double kSimulateMaxWork = 4.0e10;
/// The simulations of one planner run stop after this many request visits (`sim_result::visits`,
/// about 3 x 10^7 a second here): about 10 s, whatever the estimate said.
inline constexpr std::int64_t kSimulateMaxVisits = 300'000'000;

/// One pipeline stage as vLLM sizes it (its worker's block).
struct engine_worker {
  std::int64_t stage = 0;
  std::int64_t bytes_per_block = 0;
  std::int64_t num_blocks = 0;  ///< With a budget: budget // bytes_per_block.
};

/// What really fits, simulated on the engine's pool (with a budget).
struct engine_fit {
  bool simulated = false;
  std::string why_not;                  ///< Why it was not simulated (the work estimate).
  std::int64_t max_requests = 0;        ///< Per engine (one DP rank): requests of L with no preemption.
  std::int64_t max_context_tokens = 0;  ///< For the plan's requests (per engine).
  bool lower_bound = false;             ///< The request search stopped at its work limit: at least max_requests.
  bool context_lower_bound = false;     ///< The context search stopped at its work limit: at least max_context_tokens.
  /// max_requests is the plan's answer, not a simulated one: the plan's pages bound the simulated
  /// peak (the grid tests), so it fits; the search did not go past it (the running cap) or stopped
  /// at its work limit below it.
  bool requests_by_plan = false;
  std::int64_t work = 0;  ///< Request visits the simulations made.
};

/// SGLang (ratio pools): what its configurator computes and logs for the budget (or, without
/// one, the plan's bytes), what its pools then really allocate, and what its own sizing leaves
/// unused by design.
struct sglang_engine_report {
  sglang_options options{};  ///< As SGLang runs: --max-running-requests per worker as given.
  sglang_geometry geometry{};
  bool budget_is_plan = false;
  sglang_pool_sizes sizes{};
  sglang_pool_bytes allocated{};  ///< For `sizes` (when SGLang starts).
  /// CSA compressor-state rows sized per 128 SWA tokens but addressed per 256-token page: the
  /// half never addressed, bytes (#30371, #40337).
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

/// SGLang's figures for `budget` bytes of KV cache (its `available_bytes`) with options `so`.
inline sglang_engine_report sglang_report(const sglang_geometry& g, const sglang_options& so, std::uint64_t budget,
                                          bool budget_is_plan) {
  sglang_engine_report r;
  r.options = so;
  r.geometry = g;
  r.budget_is_plan = budget_is_plan;
  r.sizes = sglang_configure(g, so, budget);
  const sglang_pool_sizes& s = r.sizes;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  r.log_lines.push_back(fmt::format(
      "DSV4 memory calculation: bytes_per_full_token={:.2f}, available_bytes={:.2f} GB, c128_state_fixed={:.2f} GB, "
      "full_token={}",
      s.bytes_per_full_token, static_cast<double>(budget) / kGiB, static_cast<double>(s.c128_state_fixed_bytes) / kGiB,
      s.full));
  r.log_lines.push_back(fmt::format("DSV4 pool sizes: full={}, swa={}, c4={}, c128={}, c4_state={}, c128_state=0",
                                    s.full, s.swa, s.c4, s.c128, s.c4_state));
  if (!s.starts) {
    r.log_lines.push_back(fmt::format("RuntimeError: {}", s.refusal));
    return r;
  }
  r.log_lines.push_back(fmt::format(
      "max_total_num_tokens={}, chunked_prefill_size={}, max_prefill_tokens={}, max_running_requests={}, "
      "context_len={}",
      s.full, so.chunked_prefill_size, sglang_sim_config{}.max_prefill_tokens, s.max_running_requests, so.context_len));
  r.allocated = sglang_allocated_bytes(g, so, s);
  const std::uint64_t rows = static_cast<std::uint64_t>(sglang_state_rows(s.c4_state, g.c4_ring, 4));
  const std::uint64_t row_bytes = static_cast<std::uint64_t>(2 * 2 * (g.head_dim + g.index_head_dim) * 4);
  r.unaddressed_state_bytes = rows / 2 * row_bytes * static_cast<std::uint64_t>(g.csa_layers);
  return r;
}

/// What really fits SGLang's pools `r.sizes`: the largest N of L (at most its
/// max_running_requests and the replay's 2^20) and the longest context for n requests with which
/// the replay (engines/sglang_sim.hpp, worst case over prompt lengths) fits. Assumes both
/// monotone. The replays together make at most `max_visits` visits (about 10^8 a second here);
/// past it a probe counts as not fitting and the answers are lower bounds.
inline engine_fit sglang_fit(const sglang_engine_report& r, const model_config& m, std::int64_t n, std::int64_t L,
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
  // From the plan's answer (checked, not trusted): up by doubling steps while it fits, else down.
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
    fit.max_context_tokens = fits(n, 2) ? detail::largest_fitting(2, m.max_position_embeddings,
                                                                  [&](std::int64_t ctx) { return fits(n, ctx); })
                                        : 0;
    fit.context_lower_bound = exhausted;
  }
  fit.simulated = true;
  return fit;
}

/// The engine report of a plan.
struct engine_report {
  const engine_spec* engine = nullptr;
  pool_structure structure = engine_pools{}.structure;  ///< The library's own pools unless the engine's.
  bool async_scheduling = false;                        ///< As planned (--overlap).
  std::int64_t max_running = 0;      ///< The cap on running requests the simulation applies (0: none).
  std::int64_t dp = 1;               ///< Engines (data-parallel ranks) the requests are split over.
  std::int64_t engine_requests = 0;  ///< The plan's requests on the busiest engine.
  std::vector<engine_worker> workers;
  std::optional<vllm_startup_report> vllm;
  /// tokenspeed (a parent arena): its startup figures for the budget, or without one for the
  /// plan's bytes as the budget (`tokenspeed_budget_is_plan`).
  std::optional<tokenspeed_startup_report> tokenspeed;
  tokenspeed_limits tokenspeed_lim{};
  /// With pipeline stages: the stage plan whose arena the figures are of (the widest parent; each
  /// stage builds its own arena from its layers); else none (the plan's own).
  std::optional<memory_plan> tokenspeed_stage_plan;
  std::int64_t tokenspeed_stage = 0;
  bool tokenspeed_budget_is_plan = false;
  std::uint64_t tokenspeed_budget = 0;
  std::optional<sglang_engine_report> sglang;
  std::optional<engine_fit> fit;
};

/// The report of `plan` (the whole model on one GPU, or, with `ranks`, one per pipeline stage)
/// under engine `e`, with the KV budget per GPU if given. `max_running` caps the requests the
/// simulation runs at once (vLLM's max_num_seqs); `max_sim_visits` bounds the simulations' work
/// (`sim_work_budget`); `dcp` is the deployment's decode context parallel size (vLLM's startup
/// divides the full-history charge by it; the simulator does not shard: not simulated then);
/// `sglang_attn_dp`: SGLang's attention-DP workers per server, which divide its running cap
/// (0: `dp`; 1: without DP attention every DP replica has its own).
/// Throws std::invalid_argument as the library.
inline engine_report compute_engine_report(const model_config& m, const memory_plan& plan,
                                           const std::vector<rank_plan_result>& ranks, std::int64_t dp,
                                           const engine_spec& e, std::optional<std::uint64_t> budget,
                                           std::int64_t max_running, std::int64_t max_sim_visits = kSimulateMaxVisits,
                                           std::int64_t dcp = 1, std::int64_t sglang_attn_dp = 0) {
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
  // The whole model's engine groups (the scheduler's one pool), and every stage's block.
  const group_spec_list specs = plan_cache_specs(m, o);
  const engine_pools pools = plan_pools(m, specs, o);
  if (ranks.empty()) {
    r.workers.push_back({0, plan.pools.bytes_per_block, 0});
  } else {
    for (const rank_plan_result& rp : ranks) {
      const bool seen = std::any_of(r.workers.begin(), r.workers.end(),
                                    [&](const engine_worker& w) { return w.stage == rp.coords.stage; });
      if (!seen) r.workers.push_back({rp.coords.stage, rp.plan.pools.bytes_per_block, 0});
    }
  }
  if (budget)
    for (engine_worker& w : r.workers)
      if (w.bytes_per_block > 0)
        w.num_blocks = static_cast<std::int64_t>(*budget / static_cast<std::uint64_t>(w.bytes_per_block));
  if (r.structure == pool_structure::shared_block_pool) {
    std::vector<std::int64_t> bpb;
    for (const engine_worker& w : r.workers) bpb.push_back(w.bytes_per_block);
    r.vllm = vllm_startup(pools, bpb, o.context_tokens, o.prefill_chunk_tokens, o.policy.overlap, dcp, budget);
  }
  // tokenspeed's recipe: its layers (the draft model's MTP layers when cached) and limits.
  const int layers = m.num_hidden_layers + (o.cache_mtp ? m.num_nextn_predict_layers : 0);
  const int draft = o.cache_mtp ? m.num_nextn_predict_layers : 0;
  if (r.structure == pool_structure::parent_arena) {
    r.tokenspeed_lim = detail::tokenspeed_limits_of(o);
    const memory_plan* sp = &plan;
    for (const rank_plan_result& rp : ranks)
      if (sp == &plan || rp.plan.pools.bytes_per_block > sp->pools.bytes_per_block) {
        sp = &rp.plan;
        r.tokenspeed_stage = rp.coords.stage;
      }
    int stage_layers = layers;
    int stage_draft = draft;
    if (sp != &plan) {  // the stage's own layers (every layer has an SWA page), its MTP layers the draft's
      r.tokenspeed_stage_plan = *sp;
      layer_mask all;
      for (const engine_group& g : sp->pools)
        for (int k = 0; k < g.num_members; ++k)
          for (std::size_t w = 0; w < all.bits.size(); ++w)
            all.bits[w] |= g.members[static_cast<std::size_t>(k)].layers.bits[w];
      stage_layers = all.count();
      stage_draft = all.count() - all.within(0, m.num_hidden_layers).count();
    }
    r.tokenspeed_budget_is_plan = !budget;
    r.tokenspeed_budget = budget ? *budget : sp->total_bytes;
    r.tokenspeed = tokenspeed_startup(sp->pools, r.tokenspeed_lim, r.tokenspeed_budget, stage_layers, stage_draft,
                                      o.tokenspeed_pools);
  }
  if (r.structure == pool_structure::ratio_pools) {
    sglang_options so = detail::sglang_options_of(o);
    // As SGLang runs: max_running_requests // attention DP (0: dp) per worker.
    so.max_running_requests =
        max_running > 0 ? max_running / (sglang_attn_dp > 0 ? sglang_attn_dp : dp) : so.max_running_requests;
    r.sglang = sglang_report(pools.sglang, so, budget ? *budget : plan.total_bytes, !budget);
    if (!budget) return r;
    const std::int64_t n = std::max<std::int64_t>(r.engine_requests, 1);
    const std::int64_t planned =
        std::min(max_requests_for_budget(m, o, *budget).max_requests, r.sglang->sizes.max_running_requests);
    r.fit = sglang_fit(*r.sglang, m, n, o.context_tokens, max_sim_visits / 10, planned);
    sglang_engine_report& g = *r.sglang;
    if (r.fit->simulated && r.fit->max_requests > 0) {
      sglang_sim_config cap = sglang_sim_config_of(g.sizes, so);
      cap.max_visits = max_sim_visits / 100;
      const sglang_sim_result at = sglang_simulate_worst_case(cap, r.fit->max_requests, o.context_tokens);
      if (at.incomplete) return r;  // too large to replay again: no idle figure, no hint
      g.peak_swa_tokens = at.peak_swa_pages * so.page_size;
      const std::uint64_t per_token =
          static_cast<std::uint64_t>(g.geometry.kv_bytes) * static_cast<std::uint64_t>(g.geometry.layers) +
          static_cast<std::uint64_t>(g.geometry.c4_ring * 2 * 2 * (g.geometry.head_dim + g.geometry.index_head_dim) *
                                     4 / g.geometry.c4_state_divisor) *
              static_cast<std::uint64_t>(g.geometry.csa_layers);
      g.idle_swa_bytes = static_cast<std::uint64_t>(g.sizes.swa - g.peak_swa_tokens) * per_token;
      // The operator's lever: a smaller SWA share leaves more full tokens in the same budget.
      for (const double ratio : {0.05, 0.02, 0.01}) {
        if (ratio >= so.swa_full_tokens_ratio) continue;
        sglang_options q = so;
        q.swa_full_tokens_ratio = ratio;
        const engine_fit f = sglang_fit(sglang_report(pools.sglang, q, *budget, false), m, n, o.context_tokens,
                                        max_sim_visits / 100, r.fit->max_requests);
        if (f.simulated && f.max_requests > std::max(r.fit->max_requests, g.better_ratio_requests)) {
          g.better_ratio = ratio;
          g.better_ratio_requests = f.max_requests;
        }
      }
    }
    return r;
  }
  if (!budget) return r;
  // What really fits: the engine's own scheduling replayed on one engine's pool.
  engine_fit fit;
  sim_search search;
  search.max_running = max_running;
  const std::int64_t L = o.context_tokens;
  const std::int64_t n = std::max<std::int64_t>(r.engine_requests, 1);
  if (L < 2) {
    fit.why_not = "the simulator needs a context of at least 2 tokens";
  } else if (o.role != deployment_role::colocated) {
    fit.why_not = "the simulator replays colocated engines only";
  } else {
    sim_capacity cap;
    cap.budget_bytes = *budget;
    if (r.vllm) cap.usable_blocks = r.vllm->starts ? r.vllm->num_blocks - 1 : -1;
    if (r.tokenspeed)
      cap.usable_blocks = r.tokenspeed->starts && r.tokenspeed->admits_context ? r.tokenspeed->parents : -1;
    // Start the search at the plan's own answer (the plan bounds the simulated peak); the whole
    // search runs within a work budget (its answers are lower bounds past it).
    const request_capacity planned = max_requests_for_budget(m, o, *budget);
    // The search's top: the simulator's 2^20 requests, or the running cap.
    const std::int64_t top = search.max_running > 0 ? std::min<std::int64_t>(search.max_running, std::int64_t{1} << 20)
                                                    : std::int64_t{1} << 20;
    const std::int64_t hint = std::min<std::int64_t>(planned.max_requests, top);
    // Half of the work limit for each search (requests at L, the context for n).
    sim_work_budget work{max_sim_visits / 2, 0, false};
    sim_work_budget ctx_work{max_sim_visits - max_sim_visits / 2, 0, false};
    constexpr std::int64_t kSimMax = std::int64_t{1} << 40;  // the simulator's bound on tokens
    if (!ranks.empty() && r.vllm == std::nullopt) {          // own pools or a parent arena per rank
      fit.why_not = "each rank's own pools are not replayed (one shared pool per engine only)";
    } else if (dcp > 1) {
      fit.why_not = "the simulator does not shard a request over decode-context-parallel ranks";
    } else if (o.prefill_chunk_tokens > kSimMax || m.max_position_embeddings > kSimMax) {
      fit.why_not = "the simulator replays step budgets and contexts of at most 2^40 tokens";
    } else {
      // vLLM that refuses to start at L runs nothing of L (but may start at a shorter max_model_len).
      // The plan's answer fits (its pages bound the simulated peak): at the running cap there is
      // nothing above it to search; below it, the simulation searches upward from it and never
      // answers less than it (a search cut at its work limit).
      if ((r.vllm && !r.vllm->starts) || (r.tokenspeed && cap.usable_blocks < 0)) {
        fit.max_requests = 0;
      } else if (hint >= top) {
        fit.max_requests = hint;
        fit.requests_by_plan = true;
        // Capped by the simulator's 2^20 requests, not the running cap: at least that many.
        fit.lower_bound = planned.max_requests > top && !(search.max_running > 0 && search.max_running <= top);
      } else {
        fit.max_requests = max_requests_simulated(pools, o.policy, L, o.tokens_per_step, o.prefill_chunk_tokens, cap,
                                                  search, std::max<std::int64_t>(hint, 1), top, &work);
        if (work.exhausted && fit.max_requests < hint) {
          fit.max_requests = hint;
          fit.requests_by_plan = true;
        }
      }
      // The largest max_model_len with which vLLM starts and n requests of it fit (its own cap on
      // the blocks: num_blocks does not depend on max_model_len).
      const auto starts = [&](std::int64_t len) {
        if (r.tokenspeed) {  // tokenspeed starts at any max_model_len; a request longer than it admits is refused
          tokenspeed_limits lim = r.tokenspeed_lim;
          lim.context_tokens = len;
          const tokenspeed_startup_report t = tokenspeed_startup(pools, lim, *budget, layers, draft);
          return t.starts && t.admits_context;
        }
        if (!r.vllm) return true;
        std::vector<std::int64_t> bpb;
        for (const engine_worker& w : r.workers) bpb.push_back(w.bytes_per_block);
        return vllm_startup(pools, bpb, len, o.prefill_chunk_tokens, o.policy.overlap, dcp, budget).starts;
      };
      sim_capacity ctx_cap = cap;
      if (r.vllm) ctx_cap.usable_blocks = r.vllm->num_blocks - 1;
      if (r.tokenspeed) ctx_cap.usable_blocks = r.tokenspeed->parents;
      fit.max_context_tokens = max_context_simulated(pools, o.policy, n, m.max_position_embeddings, o.tokens_per_step,
                                                     o.prefill_chunk_tokens, ctx_cap, search, starts, &ctx_work);
      fit.simulated = true;
      fit.lower_bound = fit.lower_bound || work.exhausted;
      fit.context_lower_bound = ctx_work.exhausted;
    }
    fit.work = work.spent + ctx_work.spent;
  }
  r.fit = fit;
  return r;
}

/// The "engine_report" JSON object (see the README's JSON schema).
inline nlohmann::ordered_json engine_report_json(const engine_report& r, const memory_plan& plan) {
  using json = nlohmann::ordered_json;
  const engine_spec& e = *r.engine;
  json j = {{"engine", std::string(e.name)},
            {"preset", e.preset.empty() ? json(nullptr) : json(std::string(e.preset))},
            {"source", std::string(e.source)},
            {"source_commit", std::string(e.source_commit)},
            {"structure", std::string(to_string(r.structure))},
            {"async_scheduling", r.async_scheduling},
            {"max_running_requests", r.max_running > 0 ? json(r.max_running) : json(nullptr)}};
  if (r.vllm) {
    const vllm_startup_report& v = *r.vllm;
    j["async_scheduling_default"] = e.vllm.async_scheduling_default;
    j["max_in_flight_tokens"] = v.in_flight_tokens;
    j["bytes_per_block"] = v.bytes_per_block;
    json groups = json::array();
    for (int g = 0; g < plan.pools.num_groups; ++g) {
      const engine_group& eg = plan.pools[g];
      json tensors = json::array();
      for (int k = 0; k < eg.num_members; ++k) {
        const engine_member& mb = eg.members[static_cast<std::size_t>(k)];
        json layers = json::array();
        for (int l = 0; l < kMaxLayers; ++l)
          if (mb.layers.test(l)) layers.push_back(l);
        tensors.push_back({{"group", to_string(mb.group)},
                           {"pool", mb.pool},
                           {"rows_per_page", mb.rows_per_page},
                           {"page_bytes", mb.page_bytes},
                           {"layers", layers}});
      }
      const engine_group_plan& ep = plan.engine_groups[static_cast<std::size_t>(g)];
      groups.push_back({{"index", g},
                        {"table", std::string(to_string(eg.rule.kind))},
                        {"block_tokens", eg.rule.page_tokens},
                        {"window_tokens", eg.rule.sliding() ? json(eg.rule.window_tokens) : json(nullptr)},
                        {"tensors", tensors},
                        {"bytes", eg.bytes()},
                        {"charge_blocks", v.charge_blocks[static_cast<std::size_t>(g)]},
                        {"planned_blocks", ep.blocks}});
    }
    j["groups"] = groups;
    j["request_blocks"] = v.request_blocks;
    j["min_bytes_to_start"] = v.min_bytes_to_start;
    json workers = json::array();
    for (const engine_worker& w : r.workers) {
      json wj = {{"stage", w.stage}, {"bytes_per_block", w.bytes_per_block}};
      if (v.available_bytes) wj["num_blocks"] = w.num_blocks;
      workers.push_back(wj);
    }
    j["workers"] = workers;
    if (v.available_bytes) {
      j["available_bytes"] = *v.available_bytes;
      j["num_blocks"] = v.num_blocks;
      j["starts"] = v.starts;
      if (v.starts) {
        j["reported_tokens"] = v.reported_tokens;
        j["reported_concurrency"] = v.max_concurrency;
        j["log_lines"] = json::array({v.log_line});
      } else {
        j["refusal"] = v.refusal;
        j["estimated_max_model_len"] = v.estimated_max_model_len;
        j["log_lines"] = json::array({"ValueError: " + v.refusal});
      }
    }
  }
  if (r.tokenspeed) {
    const tokenspeed_startup_report& t = *r.tokenspeed;
    const tokenspeed_limits& lim = r.tokenspeed_lim;
    const memory_plan& tplan = r.tokenspeed_stage_plan ? *r.tokenspeed_stage_plan : plan;
    if (r.tokenspeed_stage_plan) j["pipeline_stage"] = r.tokenspeed_stage;
    j["overlap_scheduling_default"] = true;
    j["max_num_seqs"] = lim.max_num_seqs;
    j["chunked_prefill_tokens"] = lim.chunk_tokens;
    j["decode_input_tokens"] = lim.decode_tokens;
    j["overlap_schedule_depth"] = lim.overlap_depth;
    j["parent_bytes"] = t.parent_bytes;
    j["prefix_granularity"] = t.prefix_tokens;
    json packing = json::object();
    json groups = json::array();
    for (int g = 0; g < tplan.pools.num_groups; ++g) {
      const engine_group& eg = tplan.pools[g];
      const engine_group_plan& ep = tplan.engine_groups[static_cast<std::size_t>(g)];
      packing[tokenspeed_group_id(eg)] = eg.pages_per_block;
      groups.push_back({{"group", tokenspeed_group_id(eg)},
                        {"table", std::string(to_string(eg.rule.kind))},
                        {"page_tokens", eg.rule.page_tokens},
                        {"window_tokens", eg.rule.sliding() ? json(ep.window_tokens) : json(nullptr)},
                        {"packing", eg.pages_per_block},
                        {"page_bytes", eg.bytes()},
                        {"planned_pages", ep.blocks},
                        {"planned_parents", ep.parents}});
    }
    j["packing"] = packing;
    j["groups"] = groups;
    j["min_parents_to_start"] = t.min_parents_to_start;
    j["budget_bytes"] = r.tokenspeed_budget;
    j["budget_is_plan"] = r.tokenspeed_budget_is_plan;
    j["starts"] = t.starts;
    if (t.starts) {
      j["budgeted_parents"] = t.budgeted_parents;
      j["parents"] = t.parents;
      j["token_capacity"] = t.token_capacity;
      j["max_request_tokens"] = t.max_request_tokens;
      j["arena_bytes"] = t.arena_bytes;
      j["log_lines"] = json::array({t.log_line});
    } else {
      j["refusal"] = t.refusal;
      j["log_lines"] = json::array({"ValueError: " + t.refusal});
    }
  }
  if (r.sglang) {
    const sglang_engine_report& g = *r.sglang;
    const sglang_pool_sizes& z = g.sizes;
    j["overlap_scheduling_default"] = true;
    j["swa_full_tokens_ratio"] = g.options.swa_full_tokens_ratio;
    j["page_size"] = g.options.page_size;
    j["layers"] = {{"main", g.geometry.layers}, {"csa", g.geometry.csa_layers}, {"hca", g.geometry.hca_layers}};
    j["state_rings"] = {{"c4", g.geometry.c4_ring}, {"c128", g.geometry.c128_ring}};
    j["plan_needs"] = {{"full_tokens", plan.sglang_need.full_tokens}, {"swa_tokens", plan.sglang_need.swa_tokens}};
    j["available_bytes"] = z.available_bytes;
    j["budget_is_plan"] = g.budget_is_plan;
    j["bytes_per_full_token"] = z.bytes_per_full_token;
    j["fixed_bytes"] = z.c128_state_fixed_bytes;
    j["starts"] = z.starts;
    j["max_total_num_tokens"] = z.full;
    j["max_running_requests"] = z.starts ? json(z.max_running_requests) : json(nullptr);
    j["pool_sizes"] = {{"full", z.full}, {"swa", z.swa},           {"c4", z.c4},
                       {"c128", z.c128}, {"c4_state", z.c4_state}, {"c128_state", z.c128_state}};
    if (z.starts) {
      const sglang_pool_bytes& a = g.allocated;
      j["allocated_bytes"] = {
          {"swa_kv", a.swa_kv},         {"csa_kv", a.csa_kv},       {"hca_kv", a.hca_kv},
          {"index_keys", a.index_keys}, {"csa_state", a.csa_state}, {"csa_index_state", a.csa_index_state},
          {"hca_state", a.hca_state},   {"pools", a.pools()},       {"index_space", a.index_space}};
      j["allocated_beyond_budget"] = a.pools() > z.available_bytes ? a.pools() - z.available_bytes : 0;
      j["unaddressed_state_bytes"] = g.unaddressed_state_bytes;
      if (!g.budget_is_plan) {
        j["simulated_peak_swa_tokens"] = g.peak_swa_tokens;
        j["idle_swa_bytes"] = g.idle_swa_bytes;
        j["better_swa_full_tokens_ratio"] =
            g.better_ratio > 0
                ? json({{"ratio", g.better_ratio}, {"simulated_max_requests", g.better_ratio_requests * r.dp}})
                : json(nullptr);
      }
    } else {
      j["refusal"] = z.refusal;
    }
    j["log_lines"] = g.log_lines;
  }
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

/// The engine report as text (the planner's last section).
inline std::string engine_report_text(const engine_report& r, const memory_plan& plan) {
  std::string s;
  auto out = std::back_inserter(s);
  const engine_spec& e = *r.engine;
  const plan_options& o = plan.options;
  fmt::format_to(out, "\nengine {} ({})\n", engine_label(e), e.source);
  if (r.sglang) {
    const sglang_engine_report& g = *r.sglang;
    const sglang_pool_sizes& z = g.sizes;
    fmt::format_to(out,
                   "  ratio pools: one \"full token\" count from the budget, SWA = {} x full, CSA / HCA = full / 4 and "
                   "/ 128, state rings {} / {}; pages of {} tokens\n",
                   g.options.swa_full_tokens_ratio, g.geometry.c4_ring, g.geometry.c128_ring, g.options.page_size);
    fmt::format_to(out, "  the plan needs {} full tokens and {} SWA tokens for {} request(s) of {} tokens\n",
                   vllm_thousands(plan.sglang_need.full_tokens), vllm_thousands(plan.sglang_need.swa_tokens),
                   vllm_thousands(o.requests), vllm_thousands(o.context_tokens));
    fmt::format_to(out, "  with {} B of KV cache{} SGLang logs:\n",
                   vllm_thousands(static_cast<std::int64_t>(z.available_bytes)),
                   g.budget_is_plan ? " (the plan's bytes)" : " per GPU");
    for (const std::string& line : g.log_lines) fmt::format_to(out, "    {}\n", line);
    if (z.starts) {
      const std::uint64_t pools = g.allocated.pools();
      fmt::format_to(out,
                     "  its pools then allocate {} B ({} B {} the budget: 576-B page padding, padding pages, state "
                     "rows); outside them, uncharged: {} B of index space\n",
                     vllm_thousands(static_cast<std::int64_t>(pools)),
                     vllm_thousands(static_cast<std::int64_t>(pools > z.available_bytes ? pools - z.available_bytes
                                                                                        : z.available_bytes - pools)),
                     pools > z.available_bytes ? "beyond" : "within",
                     vllm_thousands(static_cast<std::int64_t>(g.allocated.index_space)));
      fmt::format_to(out,
                     "  unused by design: {} B of CSA compressor state (sized per 128 SWA tokens, addressed per "
                     "256-token page; sglang #30371, #40337)\n",
                     vllm_thousands(static_cast<std::int64_t>(g.unaddressed_state_bytes)));
      if (!g.budget_is_plan && g.peak_swa_tokens > 0)
        fmt::format_to(out,
                       "  idle by its ratio sizing: the SWA pool peaks at {} of its {} tokens at {} request(s) of {}: "
                       "{} B of SWA KV and state charged for tokens never used (most of the unaddressed state above "
                       "among them){}\n",
                       vllm_thousands(g.peak_swa_tokens), vllm_thousands(z.swa), vllm_thousands(r.fit->max_requests),
                       vllm_thousands(o.context_tokens), vllm_thousands(static_cast<std::int64_t>(g.idle_swa_bytes)),
                       g.better_ratio > 0
                           ? fmt::format("; --swa-full-tokens-ratio {} fits {} request(s) in the same budget",
                                         g.better_ratio, g.better_ratio_requests * r.dp)
                           : std::string());
    }
  } else if (r.tokenspeed) {
    const tokenspeed_startup_report& t = *r.tokenspeed;
    const tokenspeed_limits& lim = r.tokenspeed_lim;
    const memory_plan& tplan = r.tokenspeed_stage_plan ? *r.tokenspeed_stage_plan : plan;
    fmt::format_to(
        out,
        "  one parent arena{}: {} cache groups in parents of {} B (P = {} tokens); a parent holds K pages of "
        "one group at a time\n",
        r.tokenspeed_stage_plan ? fmt::format(" per pipeline stage (stage {}, the widest, below)", r.tokenspeed_stage)
                                : std::string(),
        tplan.pools.num_groups, vllm_thousands(t.parent_bytes), t.prefix_tokens);
    fmt::format_to(out, "  {:<32} {:<14} {:>6} {:>6} {:>3} {:>11} {:>9} {:>9}\n", "group", "table", "page", "window",
                   "K", "page B", "pages", "parents");
    for (int g = 0; g < tplan.pools.num_groups; ++g) {
      const engine_group& eg = tplan.pools[g];
      const engine_group_plan& ep = tplan.engine_groups[static_cast<std::size_t>(g)];
      fmt::format_to(out, "  {:<32} {:<14} {:>6} {:>6} {:>3} {:>11} {:>9} {:>9}\n", tokenspeed_group_id(eg),
                     to_string(eg.rule.kind), eg.rule.page_tokens,
                     eg.rule.sliding() ? std::to_string(ep.window_tokens) : std::string("-"), eg.pages_per_block,
                     vllm_thousands(eg.bytes()), vllm_thousands(ep.blocks), vllm_thousands(ep.parents));
    }
    fmt::format_to(out,
                   "  (page, window: tokens; page B: one page of the group over its layers; pages, parents: the "
                   "plan's for {} request(s), ceil(pages / K) parents)\n",
                   vllm_thousands(tplan.options.requests));
    fmt::format_to(out,
                   "  the recipe sizes for max_num_seqs {}, chunked prefill {}, {} decode token(s), overlap "
                   "scheduling {}{}; it needs {} parents to start and {} for one request of {} tokens alone\n",
                   lim.max_num_seqs, vllm_thousands(lim.chunk_tokens), lim.decode_tokens,
                   lim.overlap_depth > 0 ? "on" : "off",
                   lim.overlap_depth > 0 ? std::string() : " (tokenspeed's default is on: --no-overlap turned it off)",
                   vllm_thousands(t.min_parents_to_start), vllm_thousands(tplan.admission_blocks - 1),
                   vllm_thousands(o.context_tokens));
    fmt::format_to(out, "  with {} B of KV cache{}: {} parents budgeted (budget // parent - 1)\n",
                   vllm_thousands(static_cast<std::int64_t>(r.tokenspeed_budget)),
                   r.tokenspeed_budget_is_plan ? " (the plan's bytes)" : " per GPU",
                   vllm_thousands(t.budgeted_parents < 0 ? 0 : t.budgeted_parents));
    if (t.starts) {
      fmt::format_to(out, "  tokenspeed logs: {}\n", t.log_line);
      fmt::format_to(
          out, "  it allocates {} parents ({} B with the null parent); the longest request it admits: {} tokens{}\n",
          vllm_thousands(t.parents), vllm_thousands(static_cast<std::int64_t>(t.arena_bytes)),
          vllm_thousands(t.max_request_tokens),
          t.admits_context ? std::string()
                           : fmt::format(" (below {}: longer requests are refused at submission)",
                                         vllm_thousands(o.context_tokens)));
    } else {
      fmt::format_to(out, "  tokenspeed refuses to start: ValueError: {}\n", t.refusal);
    }
  } else if (!r.vllm) {
    fmt::format_to(out, "  own pools: every group's pages in a pool of its own{}\n",
                   !e.traits.own_structure_scope.empty() && o.pools == pools_choice::engine
                       ? fmt::format(" ({})", e.traits.own_structure_scope)
                       : std::string());
  } else {
    const vllm_startup_report& v = *r.vllm;
    fmt::format_to(out, "  one shared block pool: {} block tables (groups) over {} B per block (the widest group)\n",
                   plan.pools.num_groups, vllm_thousands(v.bytes_per_block));
    fmt::format_to(out, "  {:>5} {:<14} {:>6} {:>6} {:>11} {:>10} {:>10}  {}\n", "group", "table", "block", "window",
                   "bytes", "per req", "planned", "tensors");
    for (int g = 0; g < plan.pools.num_groups; ++g) {
      const engine_group& eg = plan.pools[g];
      std::string tensors;
      for (int k = 0; k < eg.num_members; ++k) {
        const engine_member& mb = eg.members[static_cast<std::size_t>(k)];
        const paged_cache_group_spec* lib = nullptr;
        for (const group_plan& gp : plan)
          if (gp.spec.id == mb.group) lib = &gp.spec;
        tensors += fmt::format("{}{} x {}{} ({} B)", k > 0 ? ", " : "", mb.layers.count(), to_string(mb.group),
                               lib != nullptr && lib->num_pools > 1 ? fmt::format("[{}]", mb.pool) : "",
                               vllm_thousands(mb.page_bytes));
      }
      fmt::format_to(out, "  {:>5} {:<14} {:>6} {:>6} {:>11} {:>10} {:>10}  {}\n", g, to_string(eg.rule.kind),
                     eg.rule.page_tokens, eg.rule.sliding() ? std::to_string(eg.rule.window_tokens) : std::string("-"),
                     vllm_thousands(eg.bytes()), vllm_thousands(v.charge_blocks[static_cast<std::size_t>(g)]),
                     vllm_thousands(plan.engine_groups[static_cast<std::size_t>(g)].blocks), tensors);
    }
    fmt::format_to(out,
                   "  (block, window: tokens; bytes: one block of the group, its tensors' padded pages{}; per req: the "
                   "blocks vLLM charges one request of {} tokens at startup; planned: the plan's blocks for {} "
                   "request(s) on one engine)\n",
                   r.workers.size() > 1 ? " over the whole model (each stage's block: below)" : "",
                   vllm_thousands(o.context_tokens), vllm_thousands(o.requests));
    if (r.workers.size() > 1) {
      fmt::format_to(out, "  workers (pipeline stages):");
      for (const engine_worker& w : r.workers)
        fmt::format_to(out, " stage {} {} B/block;", w.stage, vllm_thousands(w.bytes_per_block));
      fmt::format_to(out, " every worker holds the scheduler's num_blocks blocks of its own width\n");
    }
    fmt::format_to(out,
                   "  one request of {} tokens: {} blocks ({} B); vLLM starts with at least {} B of KV cache "
                   "({} blocks with the null block)\n",
                   vllm_thousands(o.context_tokens), vllm_thousands(v.request_blocks),
                   vllm_thousands(static_cast<std::int64_t>(v.request_bytes)),
                   vllm_thousands(static_cast<std::int64_t>(v.min_bytes_to_start)),
                   vllm_thousands(v.request_blocks + 1));
    fmt::format_to(out, "  async scheduling {} (max_in_flight_tokens {}){}\n", v.async_scheduling ? "on" : "off",
                   vllm_thousands(v.in_flight_tokens),
                   e.defaults.overlap && !v.async_scheduling
                       ? fmt::format("; vLLM {} turns it on by default: --no-overlap turned it off", e.preset)
                       : std::string());
    if (v.available_bytes) {
      fmt::format_to(out, "  with {} B of KV cache per GPU: {} blocks\n",
                     vllm_thousands(static_cast<std::int64_t>(*v.available_bytes)), vllm_thousands(v.num_blocks));
      if (v.starts)
        fmt::format_to(out, "  vLLM logs: {}\n", v.log_line);
      else
        fmt::format_to(out, "  vLLM refuses to start: ValueError: {}\n", v.refusal);
    }
  }
  if (r.fit) {
    if (!r.fit->simulated) {
      fmt::format_to(out, "  what really fits: not simulated ({})\n", r.fit->why_not);
    } else {
      const std::string per_engine = r.dp > 1 ? fmt::format(" ({} per engine x dp {})", r.fit->max_requests, r.dp) : "";
      const std::string context =
          r.fit->context_lower_bound && r.fit->max_context_tokens == 0
              ? std::string("the longest context not simulated (its work limit)")
              : fmt::format("{} request(s) up to {}{} tokens",
                            vllm_thousands(std::max<std::int64_t>(r.engine_requests, 1)),
                            r.fit->context_lower_bound ? "at least " : "", vllm_thousands(r.fit->max_context_tokens));
      if (r.sglang && !r.sglang->sizes.starts)
        fmt::format_to(out, "  what really fits: nothing (SGLang refuses to start with this budget)\n");
      else if (r.sglang && r.engine_requests > r.sglang->sizes.max_running_requests)
        fmt::format_to(out,
                       "  SGLang runs at most {} request(s) at once per worker (max_running_requests): the plan's {} "
                       "need --max-running-requests {} or more\n",
                       r.sglang->sizes.max_running_requests, r.engine_requests, r.engine_requests * r.dp);
      if (r.sglang && r.sglang->sizes.starts)
        fmt::format_to(
            out,
            "  what really fits (SGLang's occupancy replayed on these pools: prefill first, overlap, lazy "
            "SWA eviction, its admission gates; nothing held back or retracted): {}{} request(s) of {} tokens{}; "
            "{}\n",
            r.fit->lower_bound ? "at least " : "", r.fit->max_requests * r.dp, vllm_thousands(o.context_tokens),
            r.fit->requests_by_plan ? " (the plan's answer: it runs in the replay)" : "", context);
      else if (!r.sglang)
        fmt::format_to(out,
                       "  what really fits (simulated on this pool{}: no preemption, no admission held back): {}{} "
                       "request(s) of {} tokens{}{}; {}\n",
                       r.max_running > 0 ? fmt::format(", at most {} running", r.max_running) : std::string(),
                       r.fit->lower_bound ? "at least " : "", r.fit->max_requests * r.dp,
                       vllm_thousands(o.context_tokens), per_engine,
                       r.fit->requests_by_plan ? " (the plan's answer: its pages bound the peak)" : "", context);
      if (r.fit->lower_bound || r.fit->context_lower_bound)
        fmt::format_to(out, "  (the simulation stopped at its work limit, about 10 s: \"at least\")\n");
    }
  }
  return s;
}

}  // namespace dsv4::cache::cli
