// dsv4-cache: vLLM v1 as an engine value: its allocation policy, its shared block pool, and the
// figures it logs at startup.
//
// Every rule with its source (repository, file, commit, function) and what is not modelled:
// docs/engines/vllm.md; each function below cites the rule it implements by the file's letter:
//
// Pinned version (preset "2026.11", the default `vllm`): vLLM main as read in 2026-11, file by
// file (the commit of each file read is cited; a rule read from a stored copy without a commit
// cites its pull request):
//   K  vllm/v1/core/kv_cache_planning.py          @ 4253bd44243c89bb62c1898399f69236b2b5c721
//   I  vllm/v1/kv_cache_interface.py              @ 0484480bc73081c4a5133b3cb53018323fce632d
//   A  vllm/models/deepseek_v4/attention.py       @ 0484480bc73081c4a5133b3cb53018323fce632d
//   C  vllm/models/deepseek_v4/compressor.py      @ 01cc1d3e7640a8ada37f99ca60cc3ee66490cf38
//   S  vllm/v1/attention/backends/mla/sparse_swa.py @ 03dc564956172b5b2835be7a84ddde5de1d5dba6
//   V  vllm/config/vllm.py                        @ 000fc94b754f66aeb60ef5acf1ea2e94cdc65164
//   M  vllm/v1/core/kv_cache_manager.py           @ 003df2961dd8830c317a61f9745ccd557da9fa06
//   U  vllm/v1/core/kv_cache_utils.py (`update_kv_cache_capacity`, @ 22df3a3 as quoted in
//      vLLM issue #54662; the per-group block sum is PR #48317)
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/traits.hpp"
#include "dsv4/cache/engines/vllm/arena.hpp"
#include "dsv4/cache/group_spec.hpp"
#include "dsv4/cache/kv_budget.hpp"
#include "dsv4/cache/policy.hpp"
#include "dsv4/cache/text.hpp"

namespace dsv4::cache {

/// vLLM v1's allocation rules (policy.hpp): running requests first, then waiting prompts FCFS
/// until the step's budget is spent; expiry before every allocation; extents capped at
/// max_model_len; lookahead s - 1 (both first-chunk rules bounded).
inline constexpr allocation_policy vllm_policy{
    .engine = "vllm",
    .scheduler = scheduler_kind::running_first,
    .expiry = expiry_timing::every_allocation,
    .window_rules = static_cast<std::uint8_t>(window_rule::fixed),
    .first_chunk_lookaheads =
        static_cast<std::uint8_t>(first_chunk_lookahead::none) | static_cast<std::uint8_t>(first_chunk_lookahead::spec),
    .running_lookahead = true,
    .extent_capped = true,
    .last_chunk_reserves_step = false,
    .decode_needs_whole_step = false,
    .state_ring = state_ring_rule::vllm_pow2,
};

/// The rules of vLLM's shared block pool that differ between versions (one value per preset).
struct vllm_pool_rules {
  std::int64_t v4_page_alignment = 576;  ///< Every DeepSeek V4 page (fp8_ds_mla layout).
  /// DeepSeek V4.1 (`vllm/models/deepseek_v41/attention.py` @ f5d3794f): SWA tokens per block on
  /// every GPU (`DeepseekV4SWACache(block_size=32)`).
  std::int64_t v41_swa_block_tokens = 32;
  /// DeepSeek V4.1 `cache_config.block_size`, the tokens of a global-KV and index-key block (rows =
  /// block / ratio): the attention backend's kernel block, 128 on SM100 (the V4.1 records, the
  /// `v41` format set) and 64 on SM90 (`v4` rows) (`sparse_mla.py` @ cf4bfd81
  /// `get_supported_kernel_block_sizes`; PR #56214 `DeepseekV41IndexerBackend`).
  std::int64_t v41_block_tokens_records = 128;
  std::int64_t v41_block_tokens_v4_rows = 64;
  /// DeepSeek V4.1 page alignment with the V4.1 records (528-B SWA, 288-B global rows): one
  /// alignment for every page of the block (`kv_page_alignment = 512 if kv_mxfp8`); 576 with V4 rows.
  std::int64_t v41_record_alignment = 512;
  /// Ring, Mamba and unsplit sliding buckets are split so that no group is wider than the widest
  /// other group (PR #56214, `_get_packed_kv_cache_groups` state buckets): on since V4.1 landed.
  bool cap_state_buckets = true;
  bool async_scheduling_default = true;  ///< `VllmConfig.__post_init__`: None -> True.
};

/// vLLM's defaults for `vllm serve` on a GPU of 70 GiB or more other than an A100 (the
/// planner's default GPU, an H200), each with where vLLM sets it.
inline constexpr engine_defaults vllm_defaults{
    .overlap = true,
    .overlap_off_modelled = true,
    .overlap_name = "async scheduling",
    // VllmConfig.__post_init__: async_scheduling None -> True (pipeline parallel 1).
    .overlap_ref = "vllm-project/vllm vllm/config/vllm.py@000fc94b VllmConfig.__post_init__",
    .draft_layer = false,
    // speculative_config None: no draft model, the MTP layer holds no cache.
    .draft_layer_ref = "vllm-project/vllm vllm/engine/arg_utils.py@99d7eb5d EngineArgs.speculative_config",
    .tokens_per_step = 1,
    .tokens_per_step_ref = "vllm-project/vllm vllm/engine/arg_utils.py@99d7eb5d EngineArgs.speculative_config",
    .max_running = 1024,
    .max_running_speculative = 1024,
    .max_running_name = "max_num_seqs",
    // get_batch_defaults: >= 70 GiB and not an A100, OPENAI_API_SERVER: max_num_seqs 1024.
    .max_running_ref = "vllm-project/vllm vllm/engine/arg_utils.py@99d7eb5d EngineArgs.get_batch_defaults",
    .prefill_chunk = 8192,
    .prefill_chunk_name = "max_num_batched_tokens",
    // get_batch_defaults: >= 70 GiB and not an A100, OPENAI_API_SERVER: max_num_batched_tokens 8192.
    .prefill_chunk_ref = "vllm-project/vllm vllm/engine/arg_utils.py@99d7eb5d EngineArgs.get_batch_defaults",
    .block_tokens = 256,
    .block_tokens_ref = "vllm-project/vllm vllm/models/deepseek_v4/attention.py@0484480b get_kv_cache_spec",
    .indexer_mxfp4 = false,
    // attention_config.use_fp4_indexer_cache defaults to False: 132-B FP8 index keys.
    .indexer_ref =
        "vllm-project/vllm vllm/v1/attention/backends/mla/indexer.py@07492607 "
        "DeepseekV32IndexerMetadataBuilder.__init__",
    .mxfp4_indexer_min_sm = 10,
    .mxfp4_indexer_rule = "use_fp4_indexer_cache requires Blackwell datacenter GPUs (sm_10x, e.g. B200/GB200)",
    .mxfp4_indexer_ref =
        "vllm-project/vllm vllm/v1/attention/backends/mla/indexer.py@07492607 "
        "DeepseekV32IndexerMetadataBuilder.__init__",
    .v41_formats_follow_gpu = true,
    // get_supported_kernel_block_sizes: the V4.1 records' kernel on SM100, the fp8_ds_mla rows on SM90.
    .v41_formats_ref =
        "vllm-project/vllm vllm/v1/attention/backends/mla/sparse_mla.py@cf4bfd81 "
        "get_supported_kernel_block_sizes",
    .swa_full_tokens_ratio = 0,
    .swa_ratio_ref = "",
    .has_dp_attention = false,
    .dp_attention_ref = "",
};

namespace detail {

/// vLLM's registration order of a library pool inside one layer (A `DeepseekV4Attention.__init__`:
/// indexer key cache, indexer compressor state, SWA cache, compressed KV, compressor state).
constexpr int vllm_registration_rank(const paged_cache_group_spec& g, int pool) {
  switch (g.id.kind) {
    case group_kind::compressed_kv:
    case group_kind::v41_global: return pool == 1 ? 0 : 3;
    case group_kind::indexer_k: return 0;
    case group_kind::indexer_compressor_state: return 1;
    case group_kind::swa_kv:
    case group_kind::v41_swa: return 2;
    case group_kind::mla_kv: return 3;
    case group_kind::compressor_state:
    case group_kind::v41_compressor_state: return 4;
  }
  return 5;
}

/// One vLLM cache tensor: pool `pool` of library group `group` in layer `layer`, with its spec.
struct vllm_tensor {
  group_id group{};
  int pool = 0;
  int layer = 0;
  table_rule rule{};
  std::int64_t rows_per_page = 0;
  std::int64_t page_bytes = 0;
  std::int64_t alignment = 1;
};

/// Largest number of cache tensors of a model: 5 per layer (V4 CSA: index keys, indexer state,
/// SWA, compressed KV, compressor state).
inline constexpr int kMaxVllmTensors = kMaxLayers * 5;

/// Whether two tensors' specs may share a bucket (K `UniformTypeKVCacheSpecs.is_uniform_type`:
/// one block size; full attention of any page size, or sliding windows of one window, or rings).
constexpr bool vllm_uniform_type(const table_rule& a, const table_rule& b) {
  if (a.kind != b.kind || a.page_tokens != b.page_tokens) return false;
  return a.kind != table_kind::sliding_window || a.window_tokens == b.window_tokens;
}

}  // namespace detail

/// vLLM's `_approximate_gcd` (K): the d in [max(1, lower_bound), max(values)] that minimises the
/// total upward padding sum((d - x mod d) mod d), ties to the larger d; lower_bound itself when it
/// exceeds every value. `values` must be positive (fails otherwise), at most 64 of them.
constexpr std::int64_t vllm_approximate_gcd(const std::int64_t* values, int n, std::int64_t lower_bound) {
  require(n >= 1, "_approximate_gcd needs at least one value", {"n", n});
  std::int64_t hi = 0;
  for (int i = 0; i < n; ++i) {
    require(values[i] > 0, "_approximate_gcd needs positive values", {"value", values[i]});
    hi = std::max(hi, values[i]);
  }
  const std::int64_t lo = std::max<std::int64_t>(1, lower_bound);
  if (lo > hi) return lo;
  std::int64_t best_d = lo;
  std::int64_t best_pad = -1;
  for (std::int64_t d = lo; d <= hi; ++d) {
    std::int64_t pad = 0;
    for (int i = 0; i < n; ++i) pad += (d - values[i] % d) % d;
    if (best_pad < 0 || pad <= best_pad) {  // <=: ties prefer the larger d
      best_pad = pad;
      best_d = d;
    }
  }
  return best_d;
}

/// Why vLLM does not store pool `pool` of group `g` in its format (nullptr if it does): DeepSeek
/// V4 KV only as fp8_ds_mla (A `_resolve_dsv4_kv_cache_dtype`), index keys as FP8 or MXFP4 (A
/// `DeepseekV4Indexer`: 132 or 68 B); V4.1 its records or the fp8_ds_mla fallback.
constexpr const char* vllm_format_mismatch(const paged_cache_group_spec& g, int pool) {
  const format_layout& f = g.pools[static_cast<std::size_t>(pool)].format;
  if (f.role == format_role::state) return nullptr;
  const std::string_view n = f.name;
  if (f.role == format_role::indexer_k)
    return n == "v4.indexer_fp8" || n == "v4.indexer_mxfp4" || n == "v3.2.indexer_fp8"
               ? nullptr
               : "vLLM stores DeepSeek index keys as 132-B FP8 or 68-B MXFP4 rows only (v4.indexer_fp8, "
                 "v4.indexer_mxfp4; V3.2 v3.2.indexer_fp8)";
  if (g.id.kind == group_kind::mla_kv) return nullptr;  // V3.2: fp8_ds_mla (656 B) or bf16 rows
  if (n == "v4.fp8_ds_mla") return nullptr;
  if (g.id.kind == group_kind::v41_swa && n == "v4.1.fp8") return nullptr;
  if (g.id.kind == group_kind::v41_global && (n == "v4.1.fp4" || n == "v4.1.fp8")) return nullptr;
  return g.id.kind == group_kind::v41_swa || g.id.kind == group_kind::v41_global
             ? "vLLM stores DeepSeek V4.1 KV as its V4.1 records (v4.1.fp8 SWA, v4.1.fp4 or v4.1.fp8 global rows) or "
               "as fp8_ds_mla (v4.fp8_ds_mla)"
             : "vLLM stores DeepSeek V4 KV only in its fp8_ds_mla layout (v4.fp8_ds_mla)";
}

namespace detail {

/// The vLLM spec of pool `pool` of group `g` (see the top of this file) at s tokens per step;
/// `v41_records`: a DeepSeek V4.1 model stored in the V4.1 records (SM100), else in V4 rows.
constexpr vllm_tensor vllm_tensor_of(const paged_cache_group_spec& g, int pool, int layer, model_family family,
                                     const vllm_pool_rules& r, std::int64_t s, bool v41_records) {
  vllm_tensor t;
  t.group = g.id;
  t.pool = pool;
  t.layer = layer;
  t.rule = table_rule_of(g);
  t.rule.step_window_base_tokens = 0;  // vLLM's windows do not grow with the step
  t.rule.engine_state_ring = false;
  const pool_spec& ps = g.pools[static_cast<std::size_t>(pool)];
  t.rows_per_page = ps.rows_per_page;
  std::int64_t alignment = 1;  // V3.2: no padding (the alignment fields are DeepSeek V4 only)
  if (family == model_family::v4) alignment = r.v4_page_alignment;
  if (family == model_family::v4_1) {
    alignment = v41_records ? r.v41_record_alignment : r.v4_page_alignment;
    if (g.id.kind == group_kind::v41_swa) {
      t.rule.page_tokens = r.v41_swa_block_tokens;  // one token per row
      t.rows_per_page = r.v41_swa_block_tokens;
    } else if (g.id.kind == group_kind::v41_global) {
      t.rule.page_tokens = v41_records ? r.v41_block_tokens_records : r.v41_block_tokens_v4_rows;
      t.rows_per_page = t.rule.page_tokens / g.entry_stride_tokens;
    } else if (g.engine_state_ring) {
      // `CircularBufferSpec(block_size = max(8, next power of two >= s + 1))`: one block of the
      // ring's rows per request for its whole life, not padded (compressor.py @ 59dbe471).
      t.rule.kind = table_kind::request_ring;
      t.rows_per_page = vllm_state_ring_rows(s);
      t.rule.page_tokens = t.rows_per_page;
      t.rule.window_tokens = 0;
      alignment = 1;
    }
  }
  t.alignment = alignment;
  t.page_bytes = round_up(ps.format.page_bytes(t.rows_per_page), alignment);
  return t;
}

}  // namespace detail

namespace detail {

/// One bucket of the grouping: tensors of one spec type, their page-size classes (in order of
/// first appearance), whether balanced, its largest class (`get_max_layers_per_page_size`) and
/// the number of groups it splits into.
struct vllm_bucket {
  table_rule rule{};
  int num_classes = 0;
  std::array<std::int64_t, 8> class_page{};
  std::array<std::int64_t, 8> class_count{};
  std::int64_t tensors = 0;
  std::int64_t first_page = 0;  ///< The page bytes of its first tensor (`first_spec`).
  bool balanced = true;
  std::int64_t max_per_page = 0;
  std::int64_t groups = 1;

  [[nodiscard]] constexpr int class_of(std::int64_t page) const {
    int c = 0;
    while (c < num_classes && class_page[static_cast<std::size_t>(c)] != page) ++c;
    return c;
  }
  constexpr void add(std::int64_t page) {
    if (tensors++ == 0) first_page = page;
    const int c = class_of(page);
    if (c == num_classes) {
      require(num_classes < 8,
              "a vLLM bucket of more than 8 page sizes is not modelled: plan it with own pools (--pools own)");
      class_page[static_cast<std::size_t>(num_classes++)] = page;
    }
    ++class_count[static_cast<std::size_t>(c)];
  }
  constexpr void finish() {
    for (int c = 0; c < num_classes; ++c) {
      balanced = balanced && class_count[static_cast<std::size_t>(c)] == class_count[0];
      max_per_page = std::max(max_per_page, class_count[static_cast<std::size_t>(c)]);
    }
  }
};

/// The working state of `vllm_engine_pools`: the tensors and their buckets.
struct vllm_grouping {
  std::array<vllm_tensor, kMaxVllmTensors> tensors{};
  std::array<int, kMaxVllmTensors> bucket_of{};
  int num_tensors = 0;
  std::array<vllm_bucket, kMaxEngineGroups> buckets{};
  int num_buckets = 0;
};

/// Step 1: every cache tensor of `specs`, in vLLM's registration order (by layer, then by module).
constexpr void collect_tensors(vllm_grouping& w, const group_spec_list& specs, model_family family,
                               const vllm_pool_rules& r, std::int64_t s) {
  bool v41_records = false;  // V4.1 in its own records (SM100), else in V4 rows (SM90)
  for (const paged_cache_group_spec& g : specs)
    if (g.id.kind == group_kind::v41_swa) v41_records = g.pools[0].format.name.starts_with("v4.1.");
  for (const paged_cache_group_spec& g : specs)  // one kv-cache dtype for every layer
    require(g.id.kind != group_kind::v41_global || g.pools[0].format.name.starts_with("v4.1.") == v41_records,
            "vLLM stores a DeepSeek V4.1 model in one kv-cache dtype: the V4.1 records throughout (SWA v4.1.fp8, "
            "global v4.1.fp4 or v4.1.fp8) or V4 rows throughout (v4.fp8_ds_mla)");
  // Each group's layers as a mask, and the layers' end: a few steps per (layer, rank, group), so
  // a constant-evaluated plan stays within clang's default constexpr step limit.
  std::array<layer_mask, kMaxGroups> masks{};
  int end = 0;
  for (int gi = 0; gi < specs.num_groups; ++gi)
    for (int i = 0; i < specs[gi].num_layers; ++i) {
      const int layer = specs[gi].layers[static_cast<std::size_t>(i)];
      masks[static_cast<std::size_t>(gi)].set(layer);
      end = layer + 1 > end ? layer + 1 : end;
    }
  for (int layer = 0; layer < end; ++layer)
    for (int rank = 0; rank <= 4; ++rank)
      for (int gi = 0; gi < specs.num_groups; ++gi) {
        const paged_cache_group_spec& g = specs[gi];
        const bool in = masks[static_cast<std::size_t>(gi)].test(layer);
        for (int p = 0; in && p < g.num_pools; ++p) {
          if (vllm_registration_rank(g, p) != rank) continue;
          if (const char* why = vllm_format_mismatch(g, p)) fail(why, {"pool", p});
          w.tensors[static_cast<std::size_t>(w.num_tensors++)] = vllm_tensor_of(g, p, layer, family, r, s, v41_records);
        }
      }
}

/// Step 2: buckets of one spec type, in order of first registration (K: greedy, the first bucket
/// `is_uniform_type` with the tensor).
constexpr void bucket_tensors(vllm_grouping& w) {
  for (int i = 0; i < w.num_tensors; ++i) {
    const vllm_tensor& t = w.tensors[static_cast<std::size_t>(i)];
    int b = 0;
    while (b < w.num_buckets && !vllm_uniform_type(w.buckets[static_cast<std::size_t>(b)].rule, t.rule)) ++b;
    if (b == w.num_buckets) {
      require(w.num_buckets < kMaxEngineGroups,
              "vLLM groups this model's caches in more block tables than the library models (kMaxEngineGroups = 32): "
              "plan it with own pools (--pools own)",
              {"buckets", w.num_buckets});
      w.buckets[static_cast<std::size_t>(w.num_buckets++)].rule = t.rule;
    }
    w.bucket_of[static_cast<std::size_t>(i)] = b;
    w.buckets[static_cast<std::size_t>(b)].add(t.page_bytes);
  }
  for (int b = 0; b < w.num_buckets; ++b) w.buckets[static_cast<std::size_t>(b)].finish();
}

/// Step 3: how many groups each bucket splits into. Balanced buckets: cdiv(max_per_page, d), d =
/// `_approximate_gcd` over the balanced buckets bounded below by the largest multi-size balanced
/// bucket (none such: no split). State buckets (a ring; or, when nothing splits, a sliding bucket)
/// are split further so that no group is wider than the anchor, the widest block any other bucket
/// needs however the state buckets end up split (K's newer form, PR #56214).
constexpr void split_buckets(vllm_grouping& w, const vllm_pool_rules& r) {
  std::int64_t min_repeats = 0;
  std::array<std::int64_t, kMaxEngineGroups> counts{};
  int num_balanced = 0;
  for (int b = 0; b < w.num_buckets; ++b) {
    const vllm_bucket& bk = w.buckets[static_cast<std::size_t>(b)];
    if (!bk.balanced) continue;
    counts[static_cast<std::size_t>(num_balanced++)] = bk.max_per_page;
    if (bk.num_classes > 1) min_repeats = std::max(min_repeats, bk.max_per_page);
  }
  const std::int64_t repeats = min_repeats > 0 ? vllm_approximate_gcd(counts.data(), num_balanced, min_repeats) : 0;
  const auto state_bucket = [&](const vllm_bucket& bk) {
    return r.cap_state_buckets &&
           (bk.rule.kind == table_kind::request_ring || (repeats == 0 && bk.rule.kind == table_kind::sliding_window));
  };
  std::int64_t anchor = 0;  // `anchor_bytes`: a state bucket counts one tensor of each page size
  for (int b = 0; b < w.num_buckets; ++b) {
    vllm_bucket& bk = w.buckets[static_cast<std::size_t>(b)];
    bk.groups = bk.balanced && repeats > 0 ? ceil_div(bk.max_per_page, repeats) : 1;
    std::int64_t widest = 0;
    for (int c = 0; c < bk.num_classes; ++c) {
      const std::int64_t per = state_bucket(bk) ? 1 : ceil_div(bk.class_count[static_cast<std::size_t>(c)], bk.groups);
      widest = checked_add(widest, checked_mul(per, bk.class_page[static_cast<std::size_t>(c)]));
    }
    anchor = std::max(anchor, widest);
  }
  for (int b = 0; b < w.num_buckets; ++b) {
    vllm_bucket& bk = w.buckets[static_cast<std::size_t>(b)];
    if (state_bucket(bk) && anchor > 0)
      bk.groups = std::max(bk.groups, ceil_div(bk.tensors, std::max<std::int64_t>(anchor / bk.first_page, 1)));
    // vLLM zips the page-size classes: an unbalanced bucket split in several groups would lose tensors.
    require(bk.groups == 1 || bk.balanced,
            "a split vLLM bucket of unequal page-size classes is not modelled: plan it with own pools (--pools own)",
            {"groups", bk.groups});
  }
}

/// Step 4: the groups. Group j of a bucket split in k takes the pattern repeats j, j + k, ...
/// (repeat i = the i-th tensor of every page-size class), its tensors as (group, pool) sets.
constexpr void emit_groups(const vllm_grouping& w, engine_pools& e) {
  for (int b = 0; b < w.num_buckets; ++b) {
    const vllm_bucket& bk = w.buckets[static_cast<std::size_t>(b)];
    for (std::int64_t j = 0; j < bk.groups; ++j) {
      require(e.num_groups < kMaxEngineGroups,
              "vLLM groups this model's caches in more block tables than the library models (kMaxEngineGroups = 32): "
              "plan it with own pools (--pools own)",
              {"groups", bk.groups}, {"tensors", bk.tensors});
      engine_group& g = e.groups[static_cast<std::size_t>(e.num_groups++)];
      g.rule = bk.rule;
      std::array<std::int64_t, 8> seen{};  // tensors of each class seen so far: the repeat index
      for (int i = 0; i < w.num_tensors; ++i) {
        if (w.bucket_of[static_cast<std::size_t>(i)] != b) continue;
        const vllm_tensor& t = w.tensors[static_cast<std::size_t>(i)];
        if (seen[static_cast<std::size_t>(bk.class_of(t.page_bytes))]++ % bk.groups != j) continue;
        int m = 0;
        while (m < g.num_members && !(g.members[static_cast<std::size_t>(m)].group == t.group &&
                                      g.members[static_cast<std::size_t>(m)].pool == t.pool))
          ++m;
        if (m == g.num_members) {
          require(
              g.num_members < kMaxGroupMembers,
              "a vLLM block table of more than 8 tensor sets is not modelled: plan it with own pools (--pools own)");
          g.members[static_cast<std::size_t>(g.num_members++)] = {t.group,         t.pool,       {},
                                                                  t.rows_per_page, t.page_bytes, t.alignment};
        }
        g.members[static_cast<std::size_t>(m)].layers.set(t.layer);
      }
    }
  }
}

}  // namespace detail

/// vLLM v1's pool structure: one pool of `num_blocks` blocks; a block id belongs to one engine
/// group (a block table) at a time and every block is a slab of `bytes_per_block` bytes, the
/// widest group's packing; groups overlay the slab from byte 0 (K `get_kv_cache_config_from_groups`).
inline constexpr pool_structure_traits vllm_shared_block_pool{
    .name = "shared_block_pool",
    .title = "the shared pool",
    .overhead = "the shared pool: groups padded to its widest block, the null block, its startup need",
    .summary = "one shared block pool, {block_bytes} B per block",
    .legend =
        "(rows, tokens: per page of the library's layout; window: tokens a sliding group keeps per request; "
        "page B: one page of one layer, all pools, as {engine} pads it; pages/L: blocks of its engine group "
        "(table), H x per request + prompt blocks, the pool's null block apart; bytes: what its pages take of "
        "those blocks{sim})\n",
    .sim_legend = "; sim/L: the simulator's peak blocks of that table; slack: pages/L - sim/L",
    .whole_blocks = true,
    .pads_pages = true,
    .one_block_pool = true,
    .measure = peak_measure::blocks,
    .place = vllm_page_placement,
    .placed = true,
    .key_unit_bytes = "bytes_per_block",
    .key_units = "num_blocks",
    .key_planned = "planned_blocks",
    .key_startup = "startup_blocks",
    .key_sim_peak = "simulated_peak_blocks",
    .key_sim_peak_admission = "simulated_peak_admission_blocks"};

/// vLLM's shared block pool for the groups `specs` of a model of `family` at s tokens per step:
/// its block tables (packed groups) and bytes_per_block (see the top of this file); caches of one
/// spec (one page size) are one group of every layer (K `_get_kv_cache_groups_uniform_spec`).
/// Fails if vLLM does not store a pool's format (`vllm_format_mismatch`), a V4.1 model mixes
/// the V4.1 records with V4 rows, caches of one page size have several spec types (vLLM's
/// uniform-page-size grouping, not modelled), or the grouping needs more than kMaxEngineGroups
/// groups or kMaxGroupMembers tensor sets per group; each message says to plan own pools.
constexpr engine_pools vllm_engine_pools(const group_spec_list& specs, model_family family,
                                         const vllm_pool_rules& r = {}, std::int64_t s = 1) {
  detail::vllm_grouping w;
  detail::collect_tensors(w, specs, family, r, s);
  detail::bucket_tensors(w);
  bool one_page = true;  // packing applies only to mixed page sizes (K get_kv_cache_groups)
  for (int i = 1; i < w.num_tensors; ++i)
    one_page = one_page && w.tensors[static_cast<std::size_t>(i)].page_bytes == w.tensors[0].page_bytes;
  require(!one_page || w.num_buckets == 1,
          "vLLM groups caches of one page size but several spec types by its uniform-page-size rule, which is not "
          "modelled: plan it with own pools (--pools own)",
          {"spec_types", w.num_buckets});
  if (!one_page) detail::split_buckets(w, r);  // one page size and one spec type: one group of every layer
  engine_pools e;
  e.structure = &vllm_shared_block_pool;
  detail::emit_groups(w, e);
  for (const engine_group& g : e) e.bytes_per_block = std::max(e.bytes_per_block, g.bytes());
  return e;
}

/// vLLM's per-request blocks of a group of rule `g` at startup (the "charge"), for
/// max_model_len L, max_in_flight tokens M (B, or 2B with async scheduling) and DCP size dcp:
/// full history cdiv(cdiv(L, dcp), block) (I `FullAttentionSpec.max_memory_usage_bytes`); sliding
/// cdiv(min(W - 1 + M, L), block) + 1 (I `max_admission_blocks_per_request`); ring 1 (I
/// `CircularBufferSpec`). The same cap bounds a sliding group's blocks at admission (M). Never
/// overflows: M may be INT64_MAX (a saturated 2B). Needs L >= 1, dcp >= 1, block >= 1.
constexpr std::int64_t vllm_charge_blocks(const table_rule& g, std::int64_t L, std::int64_t in_flight,
                                          std::int64_t dcp = 1) {
  switch (g.kind) {
    case table_kind::full_history: return ceil_div(ceil_div(L, dcp), g.page_tokens);
    case table_kind::sliding_window: {
      // min(W - 1 + M, L) without forming W - 1 + M: M < L, so L - M > 0 and the sum stays <= L.
      const std::int64_t tokens = in_flight >= L ? L : in_flight + std::min(g.window_tokens - 1, L - in_flight);
      return ceil_div(tokens, g.page_tokens) + 1;
    }
    case table_kind::request_ring: return 1;
  }
  return 0;
}

/// vLLM's max_in_flight_tokens (V `VllmConfig.max_in_flight_tokens`): max_concurrent_batches x
/// max_num_batched_tokens, 2 batches with async scheduling (pp = 1), else 1.
constexpr std::int64_t vllm_in_flight_tokens(std::int64_t max_num_batched_tokens, bool async_scheduling) {
  return async_scheduling ? checked_mul(max_num_batched_tokens, std::int64_t{2}) : max_num_batched_tokens;
}

/// One request's startup charge over every group of `e` (the sum of `vllm_charge_blocks`).
constexpr std::int64_t vllm_request_blocks(const engine_pools& e, std::int64_t L, std::int64_t in_flight,
                                           std::int64_t dcp = 1) {
  std::int64_t total = 0;
  for (const engine_group& g : e) total = checked_add(total, vllm_charge_blocks(g.rule, L, in_flight, dcp));
  return total;
}

/// vLLM's `format_gib` (vllm/utils/mem_utils.py): str(round(bytes / 2^30, 2)), e.g. "6.95",
/// "12.5", "7.0" (the binary quotient rounded half-even to 2 decimals, printed shortest).
inline std::string vllm_format_gib(std::uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / 1073741824.0);
  std::string s = buf;
  while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
  return s;
}

/// What vLLM computes and logs at startup for one deployment (K `get_kv_cache_configs`,
/// `_check_enough_kv_cache_memory`; U `update_kv_cache_capacity`).
struct vllm_startup_report {
  std::int64_t max_model_len = 0;     ///< L.
  std::int64_t in_flight_tokens = 0;  ///< max_in_flight_tokens: B, or 2B with async scheduling.
  bool async_scheduling = false;
  std::int64_t bytes_per_block = 0;  ///< The widest worker's (the largest over pipeline stages).
  int num_groups = 0;
  std::array<std::int64_t, kMaxEngineGroups> charge_blocks{};  ///< Per group: one request's blocks.
  std::int64_t request_blocks = 0;                             ///< Their sum: one request of L.
  std::uint64_t request_bytes = 0;       ///< bytes_per_block x request_blocks (the widest worker).
  std::uint64_t min_bytes_to_start = 0;  ///< bytes_per_block x (request_blocks + 1): the null block too.
  // With a KV budget (the available KV cache memory of every worker):
  std::optional<std::uint64_t> available_bytes;
  std::int64_t num_blocks = 0;               ///< The smallest available // bytes_per_block over workers.
  bool starts = false;                       ///< Every worker passes the startup check.
  double max_concurrency = 0;                ///< num_blocks / request_blocks.
  std::int64_t reported_tokens = 0;          ///< int(max_concurrency x L): "GPU KV cache size".
  std::int64_t estimated_max_model_len = 0;  ///< When it does not start: vLLM's estimate (0: not even 1 token).
  std::string log_line;                      ///< The capacity line, in vLLM's text (when it starts).
  std::string refusal;                       ///< The ValueError text (when it does not).
};

/// vLLM's startup figures for the engine groups `pools` of the whole model, with the workers'
/// bytes per block `worker_bytes_per_block` (one per pipeline stage; a single GPU: just
/// `pools.bytes_per_block`; TP and DP ranks repeat their stage's), max_model_len L,
/// max_num_batched_tokens B, async scheduling on or off, DCP size dcp, and, if given, the
/// available KV bytes of every worker. Each worker must hold one request's blocks (every group of
/// the model: the scheduler's one pool) plus the null block; num_blocks is the smallest over
/// workers. Throws std::invalid_argument for L < 1, B < 1, dcp < 1 or no worker.
inline vllm_startup_report vllm_startup(const engine_pools& pools, std::span<const std::int64_t> worker_bytes_per_block,
                                        std::int64_t L, std::int64_t B, bool async_scheduling, std::int64_t dcp,
                                        std::optional<std::uint64_t> available_bytes) {
  require(L >= 1 && B >= 1 && dcp >= 1, "vLLM startup needs max_model_len, max_num_batched_tokens and dcp >= 1",
          {"max_model_len", L}, {"max_num_batched_tokens", B}, {"dcp", dcp});
  require(!worker_bytes_per_block.empty(), "vLLM startup needs at least one worker");
  vllm_startup_report r;
  r.max_model_len = L;
  r.async_scheduling = async_scheduling;
  r.in_flight_tokens = async_scheduling ? saturating_mul(B, std::int64_t{2}) : B;  // saturated: never wraps
  r.num_groups = pools.num_groups;
  const auto charge_at = [&](std::int64_t len) {
    std::int64_t total = 0;
    for (const engine_group& g : pools)
      total = checked_add(total, vllm_charge_blocks(g.rule, len, r.in_flight_tokens, dcp));
    return total;
  };
  for (int e = 0; e < pools.num_groups; ++e)
    r.charge_blocks[static_cast<std::size_t>(e)] = vllm_charge_blocks(pools[e].rule, L, r.in_flight_tokens, dcp);
  r.request_blocks = charge_at(L);
  for (const std::int64_t b : worker_bytes_per_block) r.bytes_per_block = std::max(r.bytes_per_block, b);
  require(r.bytes_per_block > 0, "vLLM startup needs a block of at least one byte");
  const auto bpb = static_cast<std::uint64_t>(r.bytes_per_block);
  r.request_bytes = checked_mul(bpb, static_cast<std::uint64_t>(r.request_blocks));
  r.min_bytes_to_start = checked_add(r.request_bytes, bpb);
  if (!available_bytes) return r;
  r.available_bytes = available_bytes;
  const std::uint64_t avail = *available_bytes;
  r.starts = true;
  r.num_blocks = std::numeric_limits<std::int64_t>::max();
  for (const std::int64_t wb : worker_bytes_per_block) {
    const auto w = static_cast<std::uint64_t>(wb);
    r.num_blocks = std::min<std::int64_t>(r.num_blocks, static_cast<std::int64_t>(std::min<std::uint64_t>(
                                                            avail / w, std::numeric_limits<std::int64_t>::max())));
    if (!r.starts) continue;  // vLLM raises for the first worker that does not fit
    // The null block is held back before the check (K get_kv_cache_configs).
    const std::int64_t check =
        avail > w
            ? static_cast<std::int64_t>(std::min<std::uint64_t>(avail - w, std::numeric_limits<std::int64_t>::max()))
            : 0;
    constexpr const char* kSee =
        "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.";
    if (check <= 0) {
      r.starts = false;
      r.refusal = std::string(
                      "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                      "initializing the engine (this flag also controls CPU memory reservation on the CPU "
                      "backend, despite its name). ") +
                  kSee;
      continue;
    }
    const auto needed_at = [&](std::int64_t len) {
      return saturating_mul(w, static_cast<std::uint64_t>(charge_at(len)));
    };
    const std::uint64_t needed = needed_at(L);
    if (needed <= static_cast<std::uint64_t>(check)) continue;
    r.starts = false;
    // `_estimate_max_model_len_from_groups`: a binary search over [1, L] for needed <= check.
    std::int64_t est = 0;
    if (needed_at(1) <= static_cast<std::uint64_t>(check)) {
      std::int64_t lo = 1;
      std::int64_t hi = L;
      est = 1;
      while (lo <= hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        if (needed_at(mid) <= static_cast<std::uint64_t>(check)) {
          est = mid;
          lo = mid + 1;
        } else {
          hi = mid - 1;
        }
      }
    }
    r.estimated_max_model_len = est;
    r.refusal =
        "To serve at least one request with the model's max seq len (" + std::to_string(L) + "), (" +
        vllm_format_gib(needed) + " GiB KV cache is needed, which is larger than the available KV cache memory (" +
        vllm_format_gib(static_cast<std::uint64_t>(check)) + " GiB). " +
        (est > 0 ? "Based on the available memory, the estimated maximum model length is " + std::to_string(est) + ". "
                 : std::string()) +
        "Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or "
        "decreasing `max_model_len` when initializing the engine. " +
        kSee;
  }
  if (!r.starts) return r;
  // U: max_concurrency = num_blocks / per-request blocks (the null block not removed).
  r.max_concurrency = static_cast<double>(r.num_blocks) / static_cast<double>(r.request_blocks);
  r.reported_tokens = static_cast<std::int64_t>(r.max_concurrency * static_cast<double>(L));
  char conc[64];
  std::snprintf(conc, sizeof conc, "%.2f", r.max_concurrency);
  r.log_line = "GPU KV cache size: " + thousands(r.reported_tokens) + " tokens, Maximum concurrency for " +
               thousands(L) + " tokens per request: " + conc + "x";
  return r;
}

/// vLLM as the planner names it, derives its budget and refuses (engines/engine.hpp).
inline constexpr engine_traits vllm_traits{
    .title = "vLLM",
    .running_cap = "vLLM's max_num_seqs",
    .weights = weight_engine::vllm,
    .fraction_flag = "--gpu-memory-utilization",
    .fraction_reference = "vllm-project/vllm vllm/config/cache.py@002f10e0 CacheConfig.gpu_memory_utilization",
    .fraction_of_total = true,
    .fixed_kv_bytes = true,
    .default_fraction = [](const budget_inputs&) { return kVllmDefaultGpuMemoryUtilization; },
    .own_structure_models = [](model_family, std::int64_t) { return true; },
    .refusal = [](model_family family, std::int64_t dcp, bool) -> const char* {
      if (dcp != 1 && family != model_family::v3_2)
        return "vLLM rejects decode context parallelism for DeepSeek V4 and V4.1 (its sliding-window specs assert "
               "decode_context_parallel_size == 1, kv_cache_interface.py SlidingWindowSpec.max_memory_usage_bytes); "
               "plan own pools (--pools own) for tokenspeed's DCP rule";
      return nullptr;
    },
    .format_mismatch = vllm_format_mismatch};

}  // namespace dsv4::cache
