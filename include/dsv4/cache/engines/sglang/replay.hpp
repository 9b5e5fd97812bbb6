// dsv4-cache: SGLang's occupancy of its DeepSeek V4 pools, replayed step by step (what really
// fits beside the pool sizes its configurator computes, engines/sglang/engine.hpp).
//
// Every rule with its source (repository, file, commit, function) and what is not modelled:
// docs/engines/sglang.md; each function below cites the rule it implements. [G]: the pin,
// sgl-project/sglang cce0a1244b5a3ee60411fb403f65f856a1d012f0, paths relative to python/sglang/srt/.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/engines/sglang/engine.hpp"

namespace dsv4::cache {

/// SGLang's pools and scheduler limits for one worker (attention-DP rank).
struct sglang_sim_config {
  std::int64_t full_tokens = 0;              ///< max_total_num_tokens (the configurator's `full`).
  std::int64_t swa_tokens = 0;               ///< The SWA pool's tokens (`swa`).
  std::int64_t max_running_requests = 1;     ///< Per worker (`resolve_max_num_reqs`).
  std::int64_t chunked_prefill_size = 8192;  ///< C: tokens of one prefill batch.
  std::int64_t max_prefill_tokens = 16384;   ///< server_args.py:841-852.
  std::int64_t page_size = 256;              ///< Tokens per page (V4: 256).
  std::int64_t window = 128;                 ///< The sliding window.
  /// Stop after this many request visits (a request in a prefill batch, a decode step of the
  /// cohort), marking the result `incomplete`; 0 = no bound.
  std::int64_t max_visits = 0;
};

/// The pools SGLang configured (`sglang_configure`'s sizes `s`) and the options they came from.
constexpr sglang_sim_config sglang_sim_config_of(const sglang_pool_sizes& s, const sglang_options& o) {
  sglang_sim_config c;
  c.full_tokens = s.full;
  c.swa_tokens = s.swa;
  c.max_running_requests = s.max_running_requests > 0 ? s.max_running_requests : 1;
  c.chunked_prefill_size = o.chunked_prefill_size;
  c.page_size = o.page_size;
  return c;
}

/// One simulated workload: N requests of L tokens, each with a prompt of P tokens.
struct sglang_sim_workload {
  std::int64_t requests = 1;        ///< N.
  std::int64_t context_tokens = 2;  ///< L: prompt + generated tokens.
  std::int64_t prompt_tokens = 1;   ///< P in [1, L - 1].
};

/// What a replay found.
struct sglang_sim_result {
  bool fits = false;
  /// Why not: "admission" (a gate held a request back), "prefill allocation", "decode retraction",
  /// "max_running_requests" (N above the running cap), "work limit" (`incomplete`), "" when it fits.
  const char* why = "";
  std::int64_t peak_full_pages = 0;  ///< Peak pages in use in the full index space.
  std::int64_t peak_swa_pages = 0;   ///< Peak pages in use in the SWA pool.
  std::int64_t iterations = 0;       ///< Scheduler iterations replayed (skipped decode periods not counted).
  std::int64_t visits = 0;           ///< Requests in prefill batches + decode steps replayed.
  bool incomplete = false;           ///< Stopped at `max_visits`: neither fits nor fails.
};

namespace detail {

struct sglang_sim_req {
  std::int64_t kv = 0;  ///< Tokens with a slot.
  std::int64_t ev = 0;  ///< swa_evicted_seqlen: its SWA slots below this are freed (a page multiple).
  /// cache_protected_len once its prefill result is processed: the radix tree owns [0, fp), its
  /// last 256-token leaf SWA-locked for the request's life, the rest evictable (room); 0 before.
  std::int64_t fp = 0;
};

class sglang_replay {
 public:
  sglang_replay(const sglang_sim_config& c, const sglang_sim_workload& w) : c_(c), w_(w) {
    full_free_ = c.full_tokens / c.page_size;
    swa_free_ = c.swa_tokens / c.page_size;
  }

  sglang_sim_result run() {
    const std::int64_t n = w_.requests;
    if (n > c_.max_running_requests) return stop("max_running_requests");
    reqs_.assign(static_cast<std::size_t>(n), {});
    if (!prefill_phase()) return r_;
    if (!decode_phase()) return r_;
    r_.fits = true;
    return r_;
  }

 private:
  [[nodiscard]] std::int64_t pages(std::int64_t tokens) const { return ceil_div(tokens, c_.page_size); }
  [[nodiscard]] std::int64_t floor_page(std::int64_t tokens) const {
    return tokens <= 0 ? 0 : tokens / c_.page_size * c_.page_size;
  }
  [[nodiscard]] std::int64_t max_new() const { return w_.context_tokens - w_.prompt_tokens; }
  /// SWA pages request q keeps from the pool: its own [max(ev, fp), kv) and the tree's locked leaf.
  [[nodiscard]] std::int64_t swa_pages_of(const sglang_sim_req& q) const {
    return pages(q.kv) - std::max(q.ev, q.fp) / c_.page_size + (q.fp >= c_.page_size ? 1 : 0);
  }

  sglang_sim_result stop(const char* why) {
    r_.fits = false;
    r_.why = why;
    return r_;
  }

  void note_peaks() {
    r_.peak_full_pages = std::max(r_.peak_full_pages, c_.full_tokens / c_.page_size - full_free_);
    r_.peak_swa_pages = std::max(r_.peak_swa_pages, c_.swa_tokens / c_.page_size - swa_free_);
  }

  // Moves request q's SWA eviction point up to `to` (page-floored), freeing the pages below it.
  void evict_swa(sglang_sim_req& q, std::int64_t to) {
    const std::int64_t before = swa_pages_of(q);
    q.ev = std::max(q.ev, q.fp);  // the floor is first raised to cache_protected_len (common.py:70-73)
    q.ev = std::min(std::max(q.ev, floor_page(to)), std::max(q.ev, floor_page(q.kv)));  // never past its slots
    swa_free_ += before - swa_pages_of(q);
  }

  // A prefill's result (cache_unfinished_req, pre_len = P - 1): slots out of the window freed,
  // then [0, floor256(P)) inserted into the tree, its last leaf locked (R11-R13 of the oracle).
  void prefill_result(sglang_sim_req& q) {
    evict_swa(q, w_.prompt_tokens - 1 - 256);
    const std::int64_t before = swa_pages_of(q);
    q.fp = floor_page(w_.prompt_tokens);
    swa_free_ += before - swa_pages_of(q);
  }

  // Gives request q slots up to `kv` tokens in both pools; false if a pool has too few pages.
  bool grow(sglang_sim_req& q, std::int64_t kv) {
    const std::int64_t add = pages(kv) - pages(q.kv);
    if (add > full_free_ || add > swa_free_) return false;
    full_free_ -= add;
    swa_free_ -= add;
    q.kv = kv;
    return true;
  }

  void finish(sglang_sim_req& q) {
    full_free_ += pages(q.kv);
    swa_free_ += swa_pages_of(q);
    q = {};
  }

  // The result processing of a prefill batch (one iteration late under overlap).
  void process_prefill(const std::vector<std::int64_t>& done) {
    for (const std::int64_t i : done) {
      sglang_sim_req& q = reqs_[static_cast<std::size_t>(i)];
      if (max_new() <= 1) {
        finish(q);  // its one token came from the prefill
      } else {
        prefill_result(q);
        ++running_;
      }
    }
  }

  // One prefill batch being scheduled: its budget left, the gates' offsets, what it allocates.
  struct prefill_batch {
    std::int64_t rem_chunk = 0;
    double offset = 0;               ///< Full tokens reserved: running requests and this batch's admissions.
    double swa_offset = 0;           ///< SWA tokens this batch's admissions asked.
    std::int64_t swa_evictable = 0;  ///< SWA pages the tree keeps unlocked (room for the gates).
    std::vector<std::pair<std::int64_t, std::int64_t>> reqs;  ///< (request, its KV after the batch)
  };

  [[nodiscard]] std::int64_t clip() const { return std::min<std::int64_t>(max_new(), 4096); }

  // The chunked request's next chunk (it goes first); false if a gate caps it (held back).
  bool continue_chunked(prefill_batch& b) {
    sglang_sim_req& q = reqs_[static_cast<std::size_t>(chunked_)];
    evict_swa(q, q.kv - 512);  // stash_chunked_request: the tree keeps the last 512 slots
    // ... one page of them locked, the rest evictable: room for the SWA gate
    // (rem_swa = available + evictable, schedule_policy.py:694-700).
    b.swa_evictable = std::max<std::int64_t>(swa_pages_of(q) - 1, 0);
    const std::int64_t left = w_.prompt_tokens - q.kv;
    std::int64_t chunk = std::min(b.rem_chunk, left);
    if (chunk < left) chunk = floor_page(chunk);
    const double rem_total = static_cast<double>(full_free_ * c_.page_size) - b.offset;
    const auto rem_swa = static_cast<double>((swa_free_ + b.swa_evictable) * c_.page_size);
    const auto c = static_cast<double>(chunk);
    if (chunk <= 0 || c > rem_total || c > rem_swa - 256) return false;
    b.reqs.emplace_back(chunked_, q.kv + chunk);
    b.rem_chunk -= chunk;
    b.offset += static_cast<double>(ceil_div(chunk, c_.page_size) * c_.page_size + clip() + 256);
    if (q.kv + chunk == w_.prompt_tokens) chunked_ = -1;
    return true;
  }

  // Waiting prompts FCFS while the batch has a whole page of budget; false if a gate refuses one.
  bool admit_waiting(prefill_batch& b) {
    const std::int64_t P = w_.prompt_tokens;
    while (chunked_ < 0 && next_ < w_.requests && b.rem_chunk > 0) {
      std::int64_t chunk = std::min(b.rem_chunk, P);
      if (chunk < P) chunk = floor_page(chunk);
      if (chunk <= 0) break;  // no whole page left in this batch: the next one
      const double rem_total = static_cast<double>(full_free_ * c_.page_size) - b.offset;
      if (static_cast<double>(P + clip() + 256) >= rem_total) return false;
      // The SWA gate on the prompt rounded up to the page (real_input_tokens,
      // schedule_policy.py:1239-1256): max(alloc - 128, 0) + min(extend + max_new, 128) + 256.
      const std::int64_t extend = ceil_div(P, c_.page_size) * c_.page_size;
      const std::int64_t alloc = std::min(extend, b.rem_chunk);
      const double need = static_cast<double>(std::max<std::int64_t>(alloc - 128, 0) +
                                              std::min<std::int64_t>(extend + clip(), 128) + 256);
      if (need >= static_cast<double>((swa_free_ + b.swa_evictable) * c_.page_size) - b.swa_offset) return false;
      b.swa_offset += need;
      b.offset += static_cast<double>(ceil_div(chunk, c_.page_size) * c_.page_size + clip() + 256);
      b.reqs.emplace_back(next_, chunk);
      b.rem_chunk -= chunk;
      if (chunk < P) chunked_ = next_;
      ++next_;
    }
    return true;
  }

  // Counts `v` visits; false (and the result incomplete) past the work limit.
  bool visit(std::int64_t v) {
    r_.visits += v;
    if (c_.max_visits <= 0 || r_.visits <= c_.max_visits) return true;
    r_.incomplete = true;
    stop("work limit");
    return false;
  }

  bool prefill_phase() {
    const std::int64_t G = max_new();
    std::vector<std::int64_t> pending;  // prompts finished in the previous batch, results not processed
    while (next_ < w_.requests || chunked_ >= 0) {
      ++r_.iterations;
      prefill_batch b;
      b.rem_chunk = std::min(c_.chunked_prefill_size, c_.max_prefill_tokens);
      // Running requests (prefilled, one token out; the previous batch's are merged into the
      // running batch before this one is scheduled) reserve min(max_new - 1, 4096) x 0.7 tokens.
      const std::int64_t holding = G > 1 ? running_ + static_cast<std::int64_t>(pending.size()) : 0;
      b.offset = static_cast<double>(holding) * static_cast<double>(std::min<std::int64_t>(G - 1, 4096)) * 0.7;
      if ((chunked_ >= 0 && !continue_chunked(b)) || !admit_waiting(b)) {
        stop("admission");
        return false;
      }
      for (const auto& [i, kv] : b.reqs) {
        if (!grow(reqs_[static_cast<std::size_t>(i)], kv)) {
          stop("prefill allocation");
          return false;
        }
      }
      note_peaks();
      if (!visit(static_cast<std::int64_t>(b.reqs.size()))) return false;
      process_prefill(pending);  // the previous batch's results, after this batch was allocated
      pending.clear();
      for (const auto& [i, kv] : b.reqs)
        if (kv == w_.prompt_tokens) pending.push_back(i);
    }
    last_batch_ = std::move(pending);
    return true;
  }

  // One decode step of every running request at committed KV `kv` (all requests alike).
  bool decode_step(std::int64_t t) {
    const std::int64_t n = running_;
    sglang_sim_req& q = reqs_.front();  // the cohort's state (every running request is alike)
    const std::int64_t kv = q.kv;
    if (kv % c_.page_size == 0 && (full_free_ < n || swa_free_ < n)) {
      stop("decode retraction");
      return false;
    }
    if (t >= 1) {
      const std::int64_t seqlen = kv;  // output_ids lag the committed KV by one token under overlap
      if (seqlen - 1 - c_.window >= q.ev + 128) {
        const std::int64_t before = swa_pages_of(q);
        evict_swa(q, seqlen - 1 - std::max<std::int64_t>(c_.window, c_.page_size));
        swa_free_ += (n - 1) * (before - swa_pages_of(q));
      }
    }
    const std::int64_t add = pages(kv + 1) - pages(kv);
    full_free_ -= add * n;
    swa_free_ -= add * n;
    q.kv = kv + 1;
    return true;
  }

  bool decode_phase() {
    const std::int64_t G = max_new();
    const std::int64_t P = w_.prompt_tokens;
    if (G <= 1) {
      // Their one token came from the prefill, but under overlap the next (decode) batch is
      // scheduled before that result is processed: the last batch's requests are decoded once
      // more (one slot each), then finish.
      const auto k = static_cast<std::int64_t>(last_batch_.size());
      if (P % c_.page_size == 0 && (full_free_ < k || swa_free_ < k)) {
        stop("decode retraction");
        return false;
      }
      for (const std::int64_t i : last_batch_)
        if (!grow(reqs_[static_cast<std::size_t>(i)], P + 1)) {
          stop("decode retraction");
          return false;
        }
      note_peaks();
      process_prefill(last_batch_);
      return true;
    }
    // Every prompt is prefilled; the requests of the last batch still hold their whole last
    // chunk during the first decode step's allocation.
    // Every request has kv = P; the ones already processed have their SWA at the prefill floor.
    const std::int64_t n = w_.requests;
    // Step 0 (decode_batch_idx 0: no eviction), every request at kv = P.
    ++r_.iterations;
    if (P % c_.page_size == 0 && (full_free_ < n || swa_free_ < n)) {
      stop("decode retraction");
      return false;
    }
    const std::int64_t add0 = pages(P + 1) - pages(P);
    full_free_ -= add0 * n;
    swa_free_ -= add0 * n;
    for (sglang_sim_req& q : reqs_) q.kv = P + 1;
    note_peaks();
    for (const std::int64_t i : last_batch_) {  // their prefill results: the prefill floor
      sglang_sim_req& q = reqs_[static_cast<std::size_t>(i)];
      prefill_result(q);
    }
    running_ = n;
    // Steps 1 .. G - 1: the cohort (reqs_.front() stands for all). Whole periods of 256 steps
    // past the first 1,024 and before the last 1,024 are skipped: each adds one page per request
    // to the full pool and leaves the SWA pages as they were.
    // G - 1 steps decode the tokens after the prefill's; under overlap the request is decoded
    // once more before its finish is processed: G steps, its KV reaches L.
    const std::int64_t steps = G;
    for (std::int64_t t = 1; t < steps; ++t) {
      if (t == 1024 && steps - t > 2048) {
        const std::int64_t periods = (steps - t - 1024) / c_.page_size;
        const std::int64_t need = checked_mul(periods, n);
        if (need > full_free_) {
          stop("decode retraction");
          return false;
        }
        full_free_ -= need;
        sglang_sim_req& q = reqs_.front();
        q.kv += periods * c_.page_size;
        q.ev += periods * c_.page_size;
        t += periods * c_.page_size;
        note_peaks();
      }
      ++r_.iterations;
      if (!visit(1) || !decode_step(t)) return false;
      note_peaks();
    }
    return true;
  }

  sglang_sim_config c_;
  sglang_sim_workload w_;
  std::int64_t full_free_ = 0;  ///< Free pages.
  std::int64_t swa_free_ = 0;
  std::int64_t running_ = 0;   ///< Prefilled requests (decode phase: all, the cohort).
  std::int64_t next_ = 0;      ///< The next waiting request.
  std::int64_t chunked_ = -1;  ///< The request being chunked (-1: none).
  std::vector<sglang_sim_req> reqs_;
  std::vector<std::int64_t> last_batch_;
  sglang_sim_result r_;
};

}  // namespace detail

/// Replays workload `w` on SGLang's pools `c` (the rules at the top of this file). Throws
/// std::invalid_argument for N < 1, L < 2, P outside [1, L - 1], a page other than 256, a
/// window other than 128, a chunk or pool size < 0... (the configurator's sizes always pass).
inline sglang_sim_result sglang_simulate(const sglang_sim_config& c, const sglang_sim_workload& w) {
  require(w.requests >= 1, "sglang_simulate: requests must be >= 1", {"requests", w.requests});
  require(w.context_tokens >= 2, "sglang_simulate: context_tokens must be >= 2", {"context_tokens", w.context_tokens});
  require(w.prompt_tokens >= 1 && w.prompt_tokens < w.context_tokens,
          "sglang_simulate: prompt_tokens must be in [1, context_tokens - 1]", {"prompt_tokens", w.prompt_tokens},
          {"context_tokens", w.context_tokens});
  require(c.page_size == 256, "sglang_simulate: SGLang's DeepSeek V4 pages are 256 tokens", {"page_size", c.page_size});
  require(c.window == 128, "sglang_simulate: the DeepSeek V4 window is 128 tokens", {"window", c.window});
  require(c.full_tokens >= 0 && c.swa_tokens >= 0, "sglang_simulate: pool sizes must be >= 0",
          {"full_tokens", c.full_tokens}, {"swa_tokens", c.swa_tokens});
  require(c.chunked_prefill_size >= 1 && c.max_prefill_tokens >= 1,
          "sglang_simulate: chunked_prefill_size and max_prefill_tokens must be >= 1",
          {"chunked_prefill_size", c.chunked_prefill_size});
  require(c.max_running_requests >= 1, "sglang_simulate: max_running_requests must be >= 1",
          {"max_running_requests", c.max_running_requests});
  return detail::sglang_replay(c, w).run();
}

/// The prompt lengths the worst case tries for context L and chunk C: around one page, the
/// chunk, half the context and the end (a prompt of L - 1 finishes at its prefill).
inline std::vector<std::int64_t> sglang_sim_prompts(std::int64_t L, std::int64_t C) {
  std::vector<std::int64_t> p;
  for (const std::int64_t v : {std::int64_t{1}, std::int64_t{255}, std::int64_t{256}, std::int64_t{257}, C - 1, C,
                               C + 1, L / 2, L - 257, L - 256, L - 2, L - 1})
    if (v >= 1 && v <= L - 1 && std::find(p.begin(), p.end(), v) == p.end()) p.push_back(v);
  return p;
}

/// The worst case over `sglang_sim_prompts` of N requests of L on pools `c`: fits iff every one
/// fits; the peaks are the largest seen; `c.max_visits` bounds the visits of all of them
/// together (past it: incomplete, not fitting). Throws as `sglang_simulate`.
inline sglang_sim_result sglang_simulate_worst_case(const sglang_sim_config& c, std::int64_t N, std::int64_t L) {
  sglang_sim_result worst;
  worst.fits = true;
  for (const std::int64_t P : sglang_sim_prompts(L, c.chunked_prefill_size)) {
    sglang_sim_config left = c;  // the work limit is for the whole worst case
    if (c.max_visits > 0) left.max_visits = c.max_visits - worst.visits;
    const sglang_sim_result r = left.max_visits < 0 ? sglang_sim_result{false, "work limit", 0, 0, 0, 0, true}
                                                    : sglang_simulate(left, {N, L, P});
    worst.peak_full_pages = std::max(worst.peak_full_pages, r.peak_full_pages);
    worst.peak_swa_pages = std::max(worst.peak_swa_pages, r.peak_swa_pages);
    worst.iterations += r.iterations;
    worst.visits += r.visits;
    worst.incomplete = worst.incomplete || r.incomplete;
    if (!r.fits && worst.fits) {
      worst.fits = false;
      worst.why = r.why;
    }
    if (r.incomplete) break;
  }
  return worst;
}

}  // namespace dsv4::cache
