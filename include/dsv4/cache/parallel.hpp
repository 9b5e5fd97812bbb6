// dsv4-cache: per-GPU-rank plans under tensor, data, pipeline and decode-context parallelism.
//
// Ranks are counted as vLLM counts them (`vllm/distributed/parallel_state.py`,
// `initialize_model_parallel`: "ExternalDP x DP x PP x TP", TP fastest):
//
//   world = dp x pp x tp;   rank = (dp_rank x pp + stage) x tp + tp_rank
//   DCP is carved out of each TP group (no extra GPUs): tp % dcp == 0, dcp_rank = tp_rank % dcp
//
// What each rank caches (each rule computed by the plan builder on the rank's own layers,
// requests and DCP divisor, never by scaling a total):
// - TP replicates: MLA keeps one latent KV head, so every TP rank holds the whole cache of its
//   layers;
// - DP splits requests: dp_rank gets ceil(N / dp) if dp_rank < N mod dp, else floor(N / dp)
//   (a balanced router; vLLM's internal load balancer sends each request to the least-loaded
//   engine, `DPLBAsyncMPClient`, so ceil(N / dp) is the worst rank's share, not a guarantee);
// - PP splits the main layers into contiguous stages by vLLM's `get_pp_indices`
//   (`vllm/distributed/utils.py`): every stage gets floor(L / pp), and the remainder goes one
//   layer each to the stages before the last, the second-to-last first (43 layers on 4 stages:
//   11, 11, 11, 10; 61 on 3: 20, 21, 20); or an explicit split (vLLM's VLLM_PP_LAYER_PARTITION,
//   the planner's --pp-layers). MTP / draft layers live on the last stage;
// - DCP shards the main-KV pool of every full-history group: a request's rows are dealt to the
//   dcp ranks `dcp_interleave_rows` at a time, and every rank allocates every virtual block of
//   dcp pages (vLLM `BlockTable.compute_slot_mapping`, `SingleTypeKVCacheManager`: block size x
//   dcp), so a rank holds ceil(pages / dcp) pages of a request, or, when the interleave exceeds
//   a page, the first rank's (largest) share, planned for every rank; the indexer keys (the indexer scores every key),
//   the sliding windows and the compressor states stay whole on every rank (tokenspeed PR #1498,
//   `DeepseekV4Recipe._declare_groups`). vLLM itself rejects DCP for DeepSeek V4 today.
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include "dsv4/cache/memory_plan.hpp"

namespace dsv4::cache {

/// How many GPUs share the work, and how (vLLM's counts).
struct parallel_config {
  std::int64_t tp = 1;                   ///< Tensor parallel size.
  std::int64_t dp = 1;                   ///< Data parallel (attention) size: requests are split.
  std::int64_t pp = 1;                   ///< Pipeline stages: main layers are split.
  std::int64_t dcp = 1;                  ///< Decode context parallel size, within TP (tp % dcp == 0).
  std::int64_t dcp_interleave_rows = 1;  ///< Rows dealt to one DCP rank in turn.
  /// Main layers per stage, stage 0 first (vLLM's VLLM_PP_LAYER_PARTITION); empty (num_stages
  /// 0) = vLLM's even split.
  int num_stage_layers = 0;
  std::array<int, kMaxLayers> stage_layers{};

  /// GPUs: dp x pp x tp (throws if that overflows).
  [[nodiscard]] constexpr std::int64_t world_size() const { return checked_mul(checked_mul(dp, pp), tp); }
};

/// Main layers [first, end) of pipeline stage `stage`: the explicit split, or vLLM's
/// `get_pp_indices` (floor(L / pp) each, the remainder to the stages before the last, the
/// second-to-last first). Needs a validated config.
struct layer_range {
  int first = 0;
  int end = 0;
};
constexpr layer_range stage_layers(const parallel_config& p, int num_main_layers, std::int64_t stage) {
  const auto pp = static_cast<int>(p.pp);
  std::array<int, kMaxLayers> parts{};
  for (int s = 0; s < pp; ++s) {
    if (p.num_stage_layers > 0) {
      parts[static_cast<std::size_t>(s)] = p.stage_layers[static_cast<std::size_t>(s)];
    } else {
      parts[static_cast<std::size_t>(s)] = num_main_layers / pp;
    }
  }
  if (p.num_stage_layers == 0)
    for (int i = 2; i <= num_main_layers % pp + 1; ++i) ++parts[static_cast<std::size_t>(pp - i)];
  layer_range r;
  for (int s = 0; s < stage; ++s) r.first += parts[static_cast<std::size_t>(s)];
  r.end = r.first + parts[static_cast<std::size_t>(stage)];
  return r;
}

namespace detail {
/// V4.1: a reuse or reindex layer reads its owner's global caches, which live on the owner's
/// pipeline stage; fails if a stage boundary separates the two (no engine moves them across).
constexpr void check_owner_stages(const parallel_config& p, const model_config& c) {
  if (c.family != model_family::v4_1 || p.pp == 1) return;
  const layer_schedule s = build_layer_schedule(c);
  for (std::int64_t stage = 0; stage < p.pp; ++stage) {
    const layer_range r = stage_layers(p, c.num_hidden_layers, stage);
    for (int l = r.first; l < r.end; ++l) {
      const int owner = s[l].kv_owner;
      require(owner < 0 || owner >= r.first,
              "a V4.1 layer must be on the pipeline stage of the owner whose caches it reads (move the split)",
              {"layer", l}, {"kv_owner", owner}, {"stage_first_layer", r.first});
    }
  }
}
}  // namespace detail

/// Checks `p` against model `c`: sizes >= 1, tp % dcp == 0, num_attention_heads % tp == 0, pp <= main layers, an
/// explicit split of pp positive entries summing to num_hidden_layers. Throws std::invalid_argument.
constexpr void validate(const parallel_config& p, const model_config& c) {
  require(p.tp >= 1, "tp must be >= 1", {"tp", p.tp});
  require(p.dp >= 1, "dp must be >= 1", {"dp", p.dp});
  require(p.pp >= 1, "pp must be >= 1", {"pp", p.pp});
  require(p.dcp >= 1, "dcp must be >= 1", {"dcp", p.dcp});
  require(p.dcp_interleave_rows >= 1, "dcp_interleave_rows must be >= 1",
          {"dcp_interleave_rows", p.dcp_interleave_rows});
  require(p.tp % p.dcp == 0, "dcp must divide tp: DCP ranks are carved out of the TP group", {"tp", p.tp},
          {"dcp", p.dcp});
  // Every engine shards attention by whole heads (vllm-project/vllm vllm/config/model.py@0052a5b8
  // ModelConfig.verify_with_parallel_config: "Total number of attention heads (...) must be
  // divisible by tensor parallel size (...)").
  require(p.tp > 0 && c.arch.num_attention_heads % p.tp == 0,
          "tp must divide num_attention_heads: every TP rank holds whole attention heads (vLLM refuses it at startup)",
          {"num_attention_heads", c.arch.num_attention_heads}, {"tp", p.tp});
  require(p.dp <= (std::int64_t{1} << 20) && p.tp <= (std::int64_t{1} << 20), "tp and dp must be <= 2^20", {"tp", p.tp},
          {"dp", p.dp});
  require(p.pp <= c.num_hidden_layers, "pp must be <= num_hidden_layers (every stage needs a layer)", {"pp", p.pp},
          {"num_hidden_layers", c.num_hidden_layers});
  if (p.num_stage_layers == 0) {
    detail::check_owner_stages(p, c);
    return;
  }
  require(p.num_stage_layers == p.pp, "an explicit layer split needs one entry per pipeline stage",
          {"entries", p.num_stage_layers}, {"pp", p.pp});
  std::int64_t sum = 0;
  for (int s = 0; s < p.num_stage_layers; ++s) {
    const int n = p.stage_layers[static_cast<std::size_t>(s)];
    require(n >= 1, "every pipeline stage needs at least one layer", {"stage", s}, {"layers", n});
    sum += n;
  }
  require(sum == c.num_hidden_layers, "the explicit layer split must sum to num_hidden_layers", {"sum", sum},
          {"num_hidden_layers", c.num_hidden_layers});
  detail::check_owner_stages(p, c);
}

/// A rank's place in the grid.
struct rank_coords {
  std::int64_t rank = 0;
  std::int64_t tp_rank = 0;
  std::int64_t dp_rank = 0;
  std::int64_t stage = 0;     ///< Pipeline stage.
  std::int64_t dcp_rank = 0;  ///< tp_rank % dcp.
};

/// The coordinates of `rank` in [0, world_size). Throws std::invalid_argument out of range.
constexpr rank_coords rank_of(const parallel_config& p, std::int64_t rank) {
  require(rank >= 0 && rank < p.world_size(), "rank must be in [0, dp x pp x tp)", {"rank", rank},
          {"world_size", p.world_size()});
  rank_coords r;
  r.rank = rank;
  r.tp_rank = rank % p.tp;
  r.stage = rank / p.tp % p.pp;
  r.dp_rank = rank / p.tp / p.pp;
  r.dcp_rank = r.tp_rank % p.dcp;
  return r;
}

/// Requests data-parallel rank `dp_rank` serves out of N: ceil(N / dp) for the first N mod dp
/// ranks, floor(N / dp) for the others.
constexpr std::int64_t dp_share(std::int64_t n, std::int64_t dp, std::int64_t dp_rank) {
  return n / dp + (dp_rank < n % dp ? 1 : 0);
}

/// One rank's plan.
struct rank_plan_result {
  rank_coords coords{};
  layer_range main_layers{};  ///< Main layers [first, end) of its stage.
  bool mtp_layers = false;    ///< Whether it also holds the MTP / draft layers (the last stage).
  std::int64_t requests = 0;  ///< Its data-parallel share of N (may be 0: then only null pages).
  memory_plan plan{};
};

namespace detail {
/// The group specs of the layers of `c` on stage `stage` (groups without a layer dropped).
constexpr group_spec_list stage_specs(const group_spec_list& all, layer_range r, bool with_mtp, int num_main) {
  group_spec_list out;
  for (const paged_cache_group_spec& g : all) {
    paged_cache_group_spec k = g;
    k.num_layers = 0;
    k.layers = {};
    for (int i = 0; i < g.num_layers; ++i) {
      const int l = g.layers[static_cast<std::size_t>(i)];
      const bool mine = l < num_main ? (l >= r.first && l < r.end) : with_mtp;
      if (mine) k.layers[static_cast<std::size_t>(k.num_layers++)] = l;
    }
    if (k.num_layers > 0) out.groups[static_cast<std::size_t>(out.num_groups++)] = k;
  }
  return out;
}
}  // namespace detail

namespace detail {
/// rank_plan on a validated config and resolved options; false if the plan overflows 64 bits.
constexpr bool try_rank_plan(const model_config& c, plan_options o, const parallel_config& p, std::int64_t rank,
                             rank_plan_result& r) {
  r.coords = rank_of(p, rank);
  r.main_layers = stage_layers(p, c.num_hidden_layers, r.coords.stage);
  r.mtp_layers = r.coords.stage == p.pp - 1;
  r.requests = dp_share(o.requests, p.dp, r.coords.dp_rank);
  if (o.role == deployment_role::decode) o.handover_requests = dp_share(o.handover_requests, p.dp, r.coords.dp_rank);
  o.requests = r.requests;
  o.dcp = p.dcp;
  o.dcp_interleave_rows = p.dcp_interleave_rows;
  o = resolve(c, o, 0);
  const group_spec_list all = plan_cache_specs(c, o);
  const group_spec_list specs = stage_specs(all, r.main_layers, r.mtp_layers, c.num_hidden_layers);
  // The engine groups of the whole model, projected onto the stage (vLLM forms them for the
  // whole model; a stage's block is its widest group, and every group's blocks come from the
  // one pool the scheduler shares over all stages). tokenspeed builds each stage's recipe from
  // the stage's own layers: its own arena (packing, planes, parent bytes).
  layer_mask mine;
  for (int l = r.main_layers.first; l < r.main_layers.end; ++l) mine.set(l);
  if (r.mtp_layers)
    for (int l = c.num_hidden_layers; l < c.num_layers(); ++l) mine.set(l);
  if (traits_of(plan_structure(o, c.family)).stage_builds_own)
    return size_plan(c, specs, o, plan_pools(c, specs, o), r.plan);
  return size_plan(c, specs, o, project_pools(plan_pools(c, all, o), mine), r.plan);
}
}  // namespace detail

/// The plan of GPU `rank` for `o.requests` requests over the whole deployment `p`: its stage's
/// layers (MTP layers on the last stage), its data-parallel share of the requests and, on the
/// main-KV pools of full-history groups, the DCP divisor. Options as `build_memory_plan`
/// (o.dcp and o.dcp_interleave_rows are taken from `p`). Throws std::invalid_argument for a bad
/// config (`validate`), a rank out of range, bad options, or a plan that overflows 64 bits.
constexpr rank_plan_result rank_plan(const model_config& c, const plan_options& o, const parallel_config& p,
                                     std::int64_t rank) {
  validate(p, c);
  rank_plan_result r;
  if (!detail::try_rank_plan(c, detail::resolve(c, o, 1), p, rank, r))
    fail("rank plan overflows 64 bits", {"rank", rank}, {"requests", o.requests});
  return r;
}

/// The cluster: the rank that needs the most bytes.
struct cluster_worst {
  std::int64_t worst_rank = 0;
  std::uint64_t worst_bytes = 0;
};

/// The worst rank of `p` for options `o` (the first of equals). Throws as `rank_plan`.
constexpr cluster_worst worst_rank(const model_config& c, const plan_options& o, const parallel_config& p) {
  cluster_worst w;
  for (std::int64_t rank = 0; rank < p.world_size(); ++rank) {
    const std::uint64_t b = rank_plan(c, o, p, rank).plan.total_bytes;
    if (rank == 0 || b > w.worst_bytes) w = {rank, b};
  }
  return w;
}

/// What a cluster fits under a per-GPU KV budget.
struct cluster_capacity {
  std::int64_t max_requests = 0;        ///< Largest N (all ranks together) whose worst rank fits; 0 if N = 1 does not;
                                        ///< INT64_MAX where the step budget, not memory, bounds the holders.
  std::int64_t max_context_tokens = 0;  ///< Largest L for o.requests whose worst rank fits; 0 if none.
};

/// The largest N and L for which every rank of `p` fits in `budget_bytes` (per GPU): binary
/// searches (every rank's plan grows with N and L); the ranks of one (dp_rank, stage) pair are
/// alike but for the DCP interleave, so each search step checks one rank per (dp, stage, dcp).
/// Throws as `rank_plan` for bad options or config.
constexpr cluster_capacity cluster_capacity_for_budget(const model_config& c, plan_options o, const parallel_config& p,
                                                       std::uint64_t budget_bytes) {
  validate(p, c);
  o = detail::resolve(c, o, 1);
  const auto fits = [&](const plan_options& q) {
    rank_plan_result rp;
    for (std::int64_t dp_rank = 0; dp_rank < p.dp; ++dp_rank)
      for (std::int64_t stage = 0; stage < p.pp; ++stage)
        for (std::int64_t tp_rank = 0; tp_rank < p.dcp; ++tp_rank) {  // dcp_rank = tp_rank for tp_rank < dcp
          // A plan that overflows 64 bits does not fit.
          if (!detail::try_rank_plan(c, q, p, (dp_rank * p.pp + stage) * p.tp + tp_rank, rp) ||
              rp.plan.total_bytes > budget_bytes)
            return false;
        }
    return true;
  };
  cluster_capacity r;
  const auto fits_requests = [&](std::int64_t n) {
    plan_options q = o;
    q.requests = n;
    return fits(q);
  };
  const auto fits_context = [&](std::int64_t l) {
    plan_options q = o;
    q.context_tokens = l;
    return fits(q);
  };
  if (fits_requests(1))
    r.max_requests = detail::largest_fitting(1, std::numeric_limits<std::int64_t>::max(), fits_requests);
  if (fits_context(o.tokens_per_step))
    r.max_context_tokens = detail::largest_fitting(o.tokens_per_step, c.max_position_embeddings, fits_context);
  return r;
}

}  // namespace dsv4::cache
