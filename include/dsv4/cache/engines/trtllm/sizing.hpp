// dsv4-cache: how TensorRT-LLM's KVCacheManagerV2 sizes the DeepSeek V4 pool groups from a GPU
// quota (StorageManager, C++ backend), its quota from a budget or max_tokens, and the inverse the
// planner needs (the smallest quota that holds N requests of L tokens).
//
// Rules, sources and what is not modelled: docs/engines/trtllm.md. Files (NVIDIA/TensorRT-LLM):
//   SM   cpp/tensorrt_llm/batch_manager/kv_cache_manager_v2/storageManager.cpp @
//   2cdb4523511c9ae64a383b90287e5165f2e75772 CORE cpp/tensorrt_llm/batch_manager/kv_cache_manager_v2/storage/core.cpp
//   @ 2cdb4523511c9ae64a383b90287e5165f2e75772 LCR
//   cpp/tensorrt_llm/batch_manager/kv_cache_manager_v2/lifeCycleRegistry.h (index id 55118970483) V2
//   tensorrt_llm/_torch/pyexecutor/kv_cache/kv_cache_manager_v2.py      @ 0004396720054fd8e205cbf616f21f0b57c6b412 CM
//   tensorrt_llm/_torch/attention/backends/sparse/deepseek_v4/cache_manager.py (index id 70181721244)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <utility>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/engines/trtllm/pools.hpp"

namespace dsv4::cache {

inline constexpr std::uint64_t kTrtllmMiB = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kTrtllmGiB = std::uint64_t{1} << 30;

/// The settings TensorRT-LLM sizes a DeepSeek V4 cache from, with its defaults.
struct trtllm_options {
  std::int64_t tokens_per_block = 128;       ///< DeepseekV4ForCausalLM.get_model_defaults (generic default 32).
  std::int64_t max_batch_size = 2048;        ///< BaseLlmArgs.max_batch_size.
  std::int64_t max_seq_len = 0;              ///< Required (> 0): TensorRT-LLM derives it from the model (not modelled).
  std::int64_t max_num_tokens = 8192;        ///< BaseLlmArgs.max_num_tokens.
  bool swa_scratch_reuse = true;             ///< enable_swa_scratch_reuse: the V4 model default (KvCacheConfig: False).
  double max_util_for_resume = 0.95;         ///< KvCacheConfig.max_util_for_resume.
  double free_gpu_memory_fraction = 0.9;     ///< KvCacheConfig.free_gpu_memory_fraction.
  std::optional<std::int64_t> max_tokens{};  ///< KvCacheConfig.max_tokens (tokens).
  std::optional<std::int64_t>
      avg_seq_len{};  ///< KvCacheConfig.avg_seq_len; unset: max_seq_len (CM `_get_typical_seq_len`).
  int sm = 90;        ///< GPU SM version (90: H100 / H200): only for `trtllm_check_gpu`.
};

/// One request of a batch description (V2 `KVCacheDesc`): `capacity` tokens of cache, the first
/// `history` of them already computed; `count` identical requests.
struct trtllm_kv_desc {
  std::int64_t capacity = 0;
  std::int64_t history = 0;
  std::int64_t count = 1;
};

/// Slot counts (blocks), one per pool group in the layout's order.
using trtllm_slots = std::array<std::int64_t, kTrtllmMaxLifeCycles>;

/// The GPU tier's granularity for `quota` bytes: 2 MiB << min(4, max(0, int(log2(quota / 1 GiB))))
/// with quota / 1 GiB an integer division (SM `CacheLevelManager::cacheTierGranularity`; CORE
/// `createCacheLevelStorage`): 2 MiB below 2 GiB, 4 MiB from 2 GiB, 8 from 4, 16 from 8, 32 MiB from
/// 16 GiB. (Below 1 GiB the C++ takes log2(0) = -inf to int, INT_MIN on x86: 2 MiB.)
constexpr std::uint64_t trtllm_granularity(std::uint64_t quota) {
  const std::uint64_t gib = quota / (2 * kTrtllmMiB * 512);
  int shift = 0;
  for (std::uint64_t k = gib; k > 1 && shift < 4; k >>= 1) ++shift;  // floor(log2(gib)), capped at 4
  return (2 * kTrtllmMiB) << shift;
}

/// Blocks of the stale range of a request with `history` computed tokens in a life cycle of window
/// `window` (0: none; no sink tokens): max(0, (history + 1 - window) / tokens_per_block), C++
/// truncating division (LCR `AttnLifeCycle::getStaleRange`).
constexpr std::int64_t trtllm_stale_blocks(std::int64_t window, std::int64_t history, std::int64_t tpb) {
  if (window == 0) return 0;
  const std::int64_t start = history + 1 - window;
  return start <= 0 ? 0 : start / tpb;
}

/// Blocks of the scratch range (LCR `computeScratchRange`): the stale range at capacity - max_rewind
/// intersected with the new blocks [ceil(history / tpb), ceil(capacity / tpb)); 0 without a window.
constexpr std::int64_t trtllm_scratch_blocks(std::int64_t window, std::int64_t history, std::int64_t capacity,
                                             std::int64_t tpb, std::int64_t max_rewind = 0) {
  if (window == 0) return 0;
  const std::int64_t non_rewindable = capacity - max_rewind > 0 ? capacity - max_rewind : 0;
  const std::int64_t stale_end = trtllm_stale_blocks(window, non_rewindable, tpb);  // stale = [0, stale_end)
  const std::int64_t beg = ceil_div(history, tpb);
  const std::int64_t end = ceil_div(capacity, tpb) < stale_end ? ceil_div(capacity, tpb) : stale_end;
  return end > beg ? end - beg : 0;
}

/// Slots one request `d` (count 1) takes in pool group `g` (SM `computeSlotsForBatch`, no system
/// prompt): ceil(capacity / tpb) - stale blocks; with scratch reuse the scratch blocks count
/// ceil(scratch x slotUtilFracMax) (`Rational::ceilMul`).
constexpr std::int64_t trtllm_request_slots(const trtllm_pool_group& g, const trtllm_kv_desc& d, std::int64_t tpb,
                                            bool scratch_reuse) {
  require(d.capacity >= 0 && d.history >= 0, "a request needs capacity >= 0 and history >= 0", {"capacity", d.capacity},
          {"history", d.history});
  const std::int64_t total = ceil_div(d.capacity, tpb);
  const std::int64_t stale = trtllm_stale_blocks(g.window_tokens, d.history, tpb);
  const std::int64_t unique = total - stale > 0 ? total - stale : 0;
  if (!scratch_reuse) return unique;
  const std::int64_t scratch = trtllm_scratch_blocks(g.window_tokens, d.history, d.capacity, tpb);
  return unique - scratch + ceil_div(checked_mul(scratch, g.util_num), g.util_den);
}

/// Slots a batch takes per pool group (SM `computeSlotsForBatch`), `descs[0 .. n)`.
constexpr trtllm_slots trtllm_batch_slots(const trtllm_layout& L, const trtllm_kv_desc* descs, int n,
                                          bool scratch_reuse) {
  trtllm_slots s{};
  for (int g = 0; g < L.num_groups; ++g)
    for (int i = 0; i < n; ++i)
      s[static_cast<std::size_t>(g)] = checked_add(
          s[static_cast<std::size_t>(g)],
          checked_mul(descs[i].count, trtllm_request_slots(L[g], descs[i], L.tokens_per_block, scratch_reuse)));
  return s;
}

namespace detail {
constexpr void check_options(const trtllm_options& o) {
  require(o.max_seq_len > 0, "max_seq_len must be > 0 (TensorRT-LLM derives it from the model: set it)",
          {"max_seq_len", o.max_seq_len});
  require(o.max_batch_size > 0, "max_batch_size must be > 0", {"max_batch_size", o.max_batch_size});
  require(o.max_num_tokens > 0, "max_num_tokens must be > 0", {"max_num_tokens", o.max_num_tokens});
  require(!o.avg_seq_len || *o.avg_seq_len <= o.max_seq_len,
          "kv_cache_config.avg_seq_len must be less than or equal to max_seq_len",
          {"avg_seq_len", o.avg_seq_len.value_or(0)}, {"max_seq_len", o.max_seq_len});
  require(o.max_util_for_resume > 0 && o.max_util_for_resume <= 1, "max_util_for_resume must be in (0, 1]");
}
}  // namespace detail

/// Minimum slots per pool group (SM `computeMinSlotsFromConstraints`): at least 1 per life cycle,
/// and the element-wise max over the constraints (V2 `_build_base_config`, no draft tokens):
/// [KV(max_seq_len, max_seq_len - 1)] + [KV(1, 0)] x (max_batch_size - 1) (CUDA-graph decode warmup)
/// and [KV(max_num_tokens, 0)] (one context chunk).
constexpr trtllm_slots trtllm_min_slots(const trtllm_layout& L, const trtllm_options& o) {
  detail::check_options(o);
  trtllm_slots m{};
  for (int g = 0; g < L.num_groups; ++g) m[static_cast<std::size_t>(g)] = 1;
  const trtllm_kv_desc c1[] = {{o.max_seq_len, o.max_seq_len - 1, 1}, {1, 0, o.max_batch_size - 1}};
  const trtllm_kv_desc c2[] = {{o.max_num_tokens, 0, 1}};
  const trtllm_slots a = trtllm_batch_slots(L, c1, 2, o.swa_scratch_reuse);
  const trtllm_slots b = trtllm_batch_slots(L, c2, 1, o.swa_scratch_reuse);
  for (std::size_t g = 0; g < m.size(); ++g) {
    if (a[g] > m[g]) m[g] = a[g];
    if (b[g] > m[g]) m[g] = b[g];
  }
  return m;
}

/// Slots of the typical step (V2 `_build_base_config`): one context request [KV(max_num_tokens, 0)]
/// and max_batch_size - 1 decode requests [KV(T, T - 1)], T = avg_seq_len or max_seq_len.
constexpr trtllm_slots trtllm_typical_slots(const trtllm_layout& L, const trtllm_options& o) {
  detail::check_options(o);
  const std::int64_t t = o.avg_seq_len.value_or(o.max_seq_len);
  const trtllm_kv_desc step[] = {{o.max_num_tokens, 0, 1}, {t, t - 1 > 0 ? t - 1 : 0, o.max_batch_size - 1}};
  return trtllm_batch_slots(L, step, 2, o.swa_scratch_reuse);
}

/// Bytes of `slots` slots of pool group `g`, each pool rounded up to `granularity` (SM `slotsToBytes`).
constexpr std::uint64_t trtllm_group_bytes(const trtllm_pool_group& g, std::int64_t slots, std::uint64_t granularity) {
  std::uint64_t b = 0;
  for (int p = 0; p < g.num_pools; ++p)
    b = checked_add(
        b, round_up(checked_mul(static_cast<std::uint64_t>(slots), static_cast<std::uint64_t>(g[p].slot_bytes())),
                    granularity));
  return b;
}

/// Bytes of `slots` over all pool groups (SM `slotsToBytes` / `minQuotaForLevel`).
constexpr std::uint64_t trtllm_bytes(const trtllm_layout& L, const trtllm_slots& slots, std::uint64_t granularity) {
  std::uint64_t b = 0;
  for (int g = 0; g < L.num_groups; ++g)
    b = checked_add(b, trtllm_group_bytes(L[g], slots[static_cast<std::size_t>(g)], granularity));
  return b;
}

/// Float ratios per pool group (the C++ `TypedVec<PoolGroupIndex, float>`).
using trtllm_ratio_list = std::array<float, kTrtllmMaxLifeCycles>;

/// The typical step's byte shares (SM `ratioFromBatch` -> `normalizeToRatio`): float(bytes) / float(total).
constexpr trtllm_ratio_list trtllm_ratio_from_slots(const trtllm_layout& L, const trtllm_slots& slots,
                                                    std::uint64_t granularity) {
  std::uint64_t total = 0;
  std::array<std::uint64_t, kTrtllmMaxLifeCycles> b{};
  for (int g = 0; g < L.num_groups; ++g) {
    b[static_cast<std::size_t>(g)] = trtllm_group_bytes(L[g], slots[static_cast<std::size_t>(g)], granularity);
    total = checked_add(total, b[static_cast<std::size_t>(g)]);
  }
  require(total > 0, "the typical step needs some bytes");
  trtllm_ratio_list r{};
  for (int g = 0; g < L.num_groups; ++g)
    r[static_cast<std::size_t>(g)] = static_cast<float>(b[static_cast<std::size_t>(g)]) / static_cast<float>(total);
  return r;
}

namespace detail {
/// std::nearbyint in the default rounding mode (to nearest, ties to even) for 0 <= x < 2^63.
constexpr std::uint64_t nearbyint_even(double x) {
  require(x >= 0 && x < 9.2e18, "nearbyint outside [0, 2^63)");
  const auto f = static_cast<std::uint64_t>(x);  // floor for x >= 0
  const double frac = x - static_cast<double>(f);
  if (frac > 0.5) return f + 1;
  if (frac < 0.5) return f;
  return (f % 2 == 0) ? f : f + 1;
}

/// CORE `CacheLevelStorage::grainsForSlots`: sum over pools of ceil(slots x slot bytes / granularity).
constexpr std::uint64_t grains_for_slots(const trtllm_pool_group& g, std::int64_t slots, std::uint64_t gran) {
  std::uint64_t total = 0;
  for (int p = 0; p < g.num_pools; ++p)
    total = checked_add(
        total,
        ceil_div(checked_mul(static_cast<std::uint64_t>(slots), static_cast<std::uint64_t>(g[p].slot_bytes())), gran));
  return total;
}

struct slots_and_grains {
  std::int64_t slots = 0;
  std::uint64_t grains = 0;
};

/// CORE `CacheLevelStorage::grainsToSlots`: split `pg_grains` over the pools (smallest slot first,
/// each its share rounded with nearbyint, at least its one-slot grains), the slot count the
/// tightest pool allows, then raised while the group still fits in `pg_grains`.
constexpr slots_and_grains grains_to_slots(std::uint64_t pg_grains, const trtllm_pool_group& g, std::uint64_t gran) {
  std::array<std::uint64_t, kTrtllmMaxPools> min_grains{};
  std::uint64_t min_total = 0;
  for (int p = 0; p < g.num_pools; ++p) {
    min_grains[static_cast<std::size_t>(p)] = ceil_div(static_cast<std::uint64_t>(g[p].slot_bytes()), gran);
    min_total += min_grains[static_cast<std::size_t>(p)];
  }
  if (pg_grains < min_total) return {0, 0};
  std::array<int, kTrtllmMaxPools> order{};  // ascending slot size (stable on ties)
  for (int p = 0; p < g.num_pools; ++p) order[static_cast<std::size_t>(p)] = p;
  for (int a = 1; a < g.num_pools; ++a)
    for (int b = a; b > 0 && g[order[static_cast<std::size_t>(b)]].slot_bytes() <
                                 g[order[static_cast<std::size_t>(b - 1)]].slot_bytes();
         --b)
      std::swap(order[static_cast<std::size_t>(b)], order[static_cast<std::size_t>(b - 1)]);
  std::int64_t num_slots = INT64_MAX;
  std::uint64_t remaining = pg_grains;
  for (int j = 0; j < g.num_pools; ++j) {
    const int p = order[static_cast<std::size_t>(j)];
    const auto sz = static_cast<std::uint64_t>(g[p].slot_bytes());
    std::uint64_t sum = 0;
    for (int k = j; k < g.num_pools; ++k)
      sum += static_cast<std::uint64_t>(g[order[static_cast<std::size_t>(k)]].slot_bytes());
    const double frac = sum > 0 ? static_cast<double>(sz) / static_cast<double>(sum) : 1.0;
    const std::uint64_t rounded = nearbyint_even(static_cast<double>(remaining) * frac);
    const std::uint64_t pool_grains =
        rounded > min_grains[static_cast<std::size_t>(p)] ? rounded : min_grains[static_cast<std::size_t>(p)];
    require(pool_grains <= remaining, "grainsToSlots: a pool's grains exceed the group's (C++ TLLM_CHECK_DEBUG)",
            {"pool_grains", pool_grains}, {"remaining", remaining});
    const auto pool_slots = static_cast<std::int64_t>(checked_mul(pool_grains, gran) / sz);
    if (pool_slots < num_slots) num_slots = pool_slots;
    remaining -= pool_grains;
  }
  std::int64_t lo = num_slots;
  std::int64_t step = 1;
  std::int64_t hi = lo + step;
  while (grains_for_slots(g, hi, gran) <= pg_grains) {
    lo = hi;
    step *= 2;
    hi = lo + step;
  }
  while (lo + 1 < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (grains_for_slots(g, mid, gran) <= pg_grains)
      lo = mid;
    else
      hi = mid;
  }
  return {lo, grains_for_slots(g, lo, gran)};
}
}  // namespace detail

/// Slots per pool group for `quota` bytes (a multiple of `granularity`) split by `ratio` (CORE
/// `CacheLevelStorage::ratioToSlotCountList`, the C++ backend): grains given by ratio, smallest
/// ratio first (ties in index order; the C++ std::sort leaves them unspecified), each share
/// std::nearbyint(budget x ratio / remaining ratio sum) (double, ties to even: not Python's round,
/// not std::round); groups at or below `min_slots` pinned to their minimum and the rest shared
/// again; finally each group raised while its grains do not grow.
/// Fails like the C++ ("Insufficient quota to satisfy min_slots constraints") when nothing is left
/// for the unpinned groups.
constexpr trtllm_slots trtllm_ratio_to_slot_count_list(const trtllm_layout& L, std::uint64_t quota,
                                                       const trtllm_ratio_list& ratio, std::uint64_t granularity,
                                                       const trtllm_slots& min_slots) {
  require(quota % granularity == 0, "the quota must be a multiple of the granularity", {"quota", quota},
          {"granularity", granularity});
  const int n = L.num_groups;
  trtllm_slots out{};
  std::uint64_t remaining = quota / granularity;
  std::array<int, kTrtllmMaxLifeCycles> active{};
  int num_active = n;
  for (int i = 0; i < n; ++i) active[static_cast<std::size_t>(i)] = i;
  while (num_active > 0) {
    std::array<std::int64_t, kTrtllmMaxLifeCycles> slots{};
    std::array<int, kTrtllmMaxLifeCycles> order{};  // indices into active, ratio ascending
    for (int i = 0; i < num_active; ++i) order[static_cast<std::size_t>(i)] = i;
    const auto ratio_of = [&](int i) { return ratio[static_cast<std::size_t>(active[static_cast<std::size_t>(i)])]; };
    for (int a = 1; a < num_active; ++a)
      for (int b = a;
           b > 0 && ratio_of(order[static_cast<std::size_t>(b)]) < ratio_of(order[static_cast<std::size_t>(b - 1)]);
           --b)
        std::swap(order[static_cast<std::size_t>(b)], order[static_cast<std::size_t>(b - 1)]);
    std::uint64_t budget = remaining;
    for (int i = 0; i < num_active; ++i) {
      const int idx = order[static_cast<std::size_t>(i)];
      double sum = 0.0;
      for (int j = i; j < num_active; ++j) sum += static_cast<double>(ratio_of(order[static_cast<std::size_t>(j)]));
      const double pct = sum > 0.0 ? static_cast<double>(ratio_of(idx)) / sum : 1.0;
      const detail::slots_and_grains r =
          detail::grains_to_slots(detail::nearbyint_even(static_cast<double>(budget) * pct),
                                  L[active[static_cast<std::size_t>(idx)]], granularity);
      slots[static_cast<std::size_t>(idx)] = r.slots;
      budget -= r.grains;
    }
    std::array<int, kTrtllmMaxLifeCycles> unconstrained{};
    int num_un = 0;
    bool any_constrained = false;
    for (int i = 0; i < num_active; ++i) {
      const int pg = active[static_cast<std::size_t>(i)];
      if (slots[static_cast<std::size_t>(i)] <= min_slots[static_cast<std::size_t>(pg)]) {
        any_constrained = true;
        const std::uint64_t min_grains =
            detail::grains_for_slots(L[pg], min_slots[static_cast<std::size_t>(pg)], granularity);
        const detail::slots_and_grains r = detail::grains_to_slots(min_grains, L[pg], granularity);
        out[static_cast<std::size_t>(pg)] = r.slots;
        require(r.grains <= remaining, "Insufficient quota to satisfy min_slots constraints", {"grains", r.grains},
                {"remaining_grains", remaining});
        remaining -= r.grains;
      } else {
        unconstrained[static_cast<std::size_t>(num_un++)] = pg;
      }
    }
    if (!any_constrained) {
      for (int i = 0; i < num_active; ++i)
        out[static_cast<std::size_t>(active[static_cast<std::size_t>(i)])] = slots[static_cast<std::size_t>(i)];
      break;
    }
    if (num_un == 0) break;
    require(remaining > 0, "Insufficient quota to satisfy min_slots constraints", {"quota", quota});
    active = unconstrained;
    num_active = num_un;
  }
  for (int g = 0; g < n; ++g) {
    const std::uint64_t now = detail::grains_for_slots(L[g], out[static_cast<std::size_t>(g)], granularity);
    while (detail::grains_for_slots(L[g], out[static_cast<std::size_t>(g)] + 1, granularity) <= now)
      out[static_cast<std::size_t>(g)] += 1;
  }
  return out;
}

/// What KVCacheManagerV2's StorageManager makes of a GPU quota.
struct trtllm_sizing {
  std::uint64_t quota = 0;            ///< The quota asked for (bytes).
  std::uint64_t granularity = 0;      ///< Physical page size backing each pool (bytes).
  std::uint64_t min_quota = 0;        ///< Bytes the minimum slots need (each pool rounded to granules).
  std::uint64_t effective_quota = 0;  ///< max(min_quota, round_up(quota, granularity)): what is split.
  trtllm_slots min_slots{};
  trtllm_slots typical_slots{};
  trtllm_ratio_list ratio{};
  trtllm_slots slots{};               ///< Blocks per pool group.
  std::uint64_t allocated_bytes = 0;  ///< Pools backed by whole granules (GpuSlotPool.resize).
  std::uint64_t logical_bytes = 0;    ///< slots x slot bytes, unrounded.
  /// Bytes allocated above the quota because the minimum slots need them (not a refusal: the C++
  /// raises the quota to min_quota, SM `computeSlotCountForLevel`).
  [[nodiscard]] constexpr std::uint64_t over_quota() const {
    return allocated_bytes > quota ? allocated_bytes - quota : 0;
  }
};

/// Sizes `L` for a GPU quota of `quota` bytes (SM `StorageManager::StorageManager`):
/// granularity from the quota; min slots from the constraints; ratio from the typical step at that
/// granularity; slot counts from max(min_quota, round_up(quota, granularity)). Fails for bad options
/// (max_seq_len unset, avg_seq_len > max_seq_len, ...) or a zero quota ("Quota not set").
constexpr trtllm_sizing trtllm_size(const trtllm_layout& L, std::uint64_t quota, const trtllm_options& o) {
  require(quota > 0, "Quota not set. Check kv_cache_config.max_tokens or kv_cache_config.max_gpu_total_bytes");
  trtllm_sizing s;
  s.quota = quota;
  s.granularity = trtllm_granularity(quota);
  s.min_slots = trtllm_min_slots(L, o);
  s.typical_slots = trtllm_typical_slots(L, o);
  s.ratio = trtllm_ratio_from_slots(L, s.typical_slots, s.granularity);
  s.min_quota = trtllm_bytes(L, s.min_slots, s.granularity);
  const std::uint64_t rounded = round_up(quota, s.granularity);
  s.effective_quota = rounded > s.min_quota ? rounded : s.min_quota;
  s.slots = trtllm_ratio_to_slot_count_list(L, s.effective_quota, s.ratio, s.granularity, s.min_slots);
  s.allocated_bytes = trtllm_bytes(L, s.slots, s.granularity);
  for (int g = 0; g < L.num_groups; ++g)
    s.logical_bytes =
        checked_add(s.logical_bytes, checked_mul(static_cast<std::uint64_t>(s.slots[static_cast<std::size_t>(g)]),
                                                 static_cast<std::uint64_t>(L[g].slot_bytes())));
  return s;
}

/// Blocks one request of `context_tokens` tokens holds in each pool group: the slots of
/// KV(capacity = L, history = L - 1) (SM `computeSlotsForBatch`, the form of V2's decode-warmup
/// constraint): ceil(L / tpb) in the full-history group, ceil(L / tpb) - stale blocks in a window
/// group (1 or 2 blocks for V4: the blocks the window [L - W, L) spans).
constexpr trtllm_slots trtllm_request_blocks(const trtllm_layout& L, std::int64_t context_tokens,
                                             bool scratch_reuse = true) {
  require(context_tokens > 0, "a request needs context_tokens > 0", {"context_tokens", context_tokens});
  const trtllm_kv_desc d{context_tokens, context_tokens - 1, 1};
  return trtllm_batch_slots(L, &d, 1, scratch_reuse);
}

/// Whether the slot counts for `quota` hold `requests` requests of `context_tokens` each.
constexpr bool trtllm_quota_holds(const trtllm_layout& L, std::uint64_t quota, const trtllm_options& o,
                                  std::int64_t requests, std::int64_t context_tokens) {
  const trtllm_slots need = trtllm_request_blocks(L, context_tokens, o.swa_scratch_reuse);
  const trtllm_sizing s = trtllm_size(L, quota, o);
  for (int g = 0; g < L.num_groups; ++g)
    if (s.slots[static_cast<std::size_t>(g)] < checked_mul(requests, need[static_cast<std::size_t>(g)])) return false;
  return true;
}

/// The smallest quota, a multiple of 2 MiB, whose slot counts hold `requests` requests of
/// `context_tokens` tokens (`trtllm_request_blocks` each) in every pool group: a doubling search
/// then a bisection, assuming slot counts grow with the quota (true up to a granule: the ratio is
/// re-derived per granularity; the tests check the quota one step below fails). Fails if no quota
/// up to 2^50 bytes holds them.
constexpr std::uint64_t trtllm_min_quota_for(const trtllm_layout& L, const trtllm_options& o, std::int64_t requests,
                                             std::int64_t context_tokens) {
  require(requests > 0, "requests must be > 0", {"requests", requests});
  constexpr std::uint64_t step = 2 * kTrtllmMiB;
  std::uint64_t hi = step;
  while (!trtllm_quota_holds(L, hi, o, requests, context_tokens)) {
    require(hi < (std::uint64_t{1} << 50), "no quota up to 1 PiB holds these requests", {"requests", requests},
            {"context_tokens", context_tokens});
    hi *= 2;
  }
  std::uint64_t lo = hi / 2;  // lo does not hold (or is 1 MiB)
  if (lo < step) return hi;
  while (hi - lo > step) {
    const std::uint64_t mid = lo + (hi - lo) / step / 2 * step;
    if (trtllm_quota_holds(L, mid, o, requests, context_tokens))
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

namespace detail {
/// ceil(x) for 0 <= x < 2^63 (constexpr).
constexpr std::uint64_t ceil_u64(double x) {
  require(x >= 0 && x < 9.2e18, "ceil outside [0, 2^63)");
  const auto f = static_cast<std::uint64_t>(x);
  return static_cast<double>(f) < x ? f + 1 : f;
}
}  // namespace detail

/// The DeepSeek-V4 quota for `max_tokens` tokens (CM `_get_quota_from_max_tokens`), bytes:
/// max_tokens x non_sliding + (max_tokens - ctx) x 0 + max_batch_size x generation_swa_per_request
/// + ctx x context_swa_per_token (scratch on or off) + 7 x 2 MiB, ctx = min(max_tokens, max_num_tokens).
constexpr std::uint64_t trtllm_quota_from_max_tokens(const trtllm_layout& L, const trtllm_options& o,
                                                     std::int64_t max_tokens) {
  require(max_tokens >= 0, "max_tokens must be >= 0", {"max_tokens", max_tokens});
  const std::int64_t ctx = max_tokens < o.max_num_tokens ? max_tokens : o.max_num_tokens;
  const std::int64_t ctx_swa =
      o.swa_scratch_reuse ? L.costs.context_swa_per_token : L.costs.context_swa_per_token_no_scratch;
  std::int64_t q = checked_mul(max_tokens, L.costs.non_sliding_per_token);
  q = checked_add(q, checked_mul(o.max_batch_size, L.costs.generation_swa_per_request));
  q = checked_add(q, checked_mul(ctx, ctx_swa));
  q = checked_add(q, std::int64_t{kTrtllmAttentionTypes} * static_cast<std::int64_t>(2 * kTrtllmMiB));
  return static_cast<std::uint64_t>(q);
}

/// The DeepSeek-V4 tokens a quota holds (CM `_get_max_tokens_from_quota`, a float): 0 below
/// B x generation_swa_per_request + padding; (quota - that) / (non_sliding + context_swa) up to
/// the max_num_tokens context limit; past it max_num_tokens + the rest / non_sliding.
constexpr double trtllm_max_tokens_from_quota(const trtllm_layout& L, const trtllm_options& o, std::uint64_t quota) {
  const std::int64_t ctx_swa =
      o.swa_scratch_reuse ? L.costs.context_swa_per_token : L.costs.context_swa_per_token_no_scratch;
  const auto per_batch = static_cast<std::uint64_t>(
      checked_add(checked_mul(o.max_batch_size, L.costs.generation_swa_per_request),
                  std::int64_t{kTrtllmAttentionTypes} * static_cast<std::int64_t>(2 * kTrtllmMiB)));
  if (quota < per_batch) return 0;
  const auto ctx_per_token = static_cast<double>(L.costs.non_sliding_per_token + ctx_swa);
  const std::uint64_t limit =
      checked_add(checked_mul(static_cast<std::uint64_t>(o.max_num_tokens),
                              static_cast<std::uint64_t>(L.costs.non_sliding_per_token + ctx_swa)),
                  per_batch);
  if (quota <= limit) return static_cast<double>(quota - per_batch) / ctx_per_token;
  return static_cast<double>(o.max_num_tokens) +
         static_cast<double>(quota - limit) / static_cast<double>(L.costs.non_sliding_per_token);
}

/// The V2 device quota (V2 `KVCacheManagerV2.__init__`): `budget` (max_gpu_total_bytes, bytes),
/// lowered to ceil(quota_from_max_tokens(max_tokens) / max_util_for_resume) when max_tokens is set.
constexpr std::uint64_t trtllm_device_quota(const trtllm_layout& L, const trtllm_options& o, std::uint64_t budget) {
  std::uint64_t q = budget;
  if (o.max_tokens) {
    const std::uint64_t from_tokens = trtllm_quota_from_max_tokens(L, o, *o.max_tokens);
    const std::uint64_t allowed = detail::ceil_u64(static_cast<double>(from_tokens) / o.max_util_for_resume);
    if (q == 0 || allowed < q) q = allowed;
  }
  require(q > 0, "Quota not set. Check kv_cache_config.max_tokens or kv_cache_config.max_gpu_total_bytes");
  return q;
}

/// The KV budget from free memory (py_executor `_cal_max_memory` / estimation phase):
/// int(free_gpu_memory_fraction x free_bytes), bytes (`free_bytes`: total - peak + temporary KV).
constexpr std::uint64_t trtllm_budget_from_free(std::uint64_t free_bytes, double fraction) {
  require(fraction >= 0 && fraction <= 1, "free_gpu_memory_fraction must be in [0, 1]");
  return static_cast<std::uint64_t>(fraction * static_cast<double>(free_bytes));
}

}  // namespace dsv4::cache
