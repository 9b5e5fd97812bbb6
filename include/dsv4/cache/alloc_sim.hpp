// dsv4-cache: an allocation simulator that replays an engine's page tables step by step.
//
// It answers "how many pages does the engine really hold at its worst?" without any plan
// formula: per request and group it keeps the page table an engine keeps (a table length and a
// freed prefix) and applies the rules of an `allocation_policy` (policy.hpp, with sources) one
// scheduler step at a time: the step's token budget shared by running and waiting requests,
// several prompts per step, expiry at each allocation or at the request's own admission,
// extents capped at the context or running past it, lookahead, rejected drafts rolled back,
// frees one step late under overlap. It records, per group, the peak live pages per layer
// (every layer of a group shares one table) and the peak total bytes over all groups, null
// pages included. It never includes memory_plan.hpp: the plan and the simulator meet only in
// tests and in the planner's --simulate.
//
// It replays the block tables of an engine's pool structure (engines/engine.hpp): own pools (one
// table per library group, each page priced at the group's page bytes in every layer), or
// vLLM's shared block pool (one table per engine group, every block `bytes_per_block`; engine
// groups of one rule share one simulated table, counted `multiplicity` times). For a shared pool
// it also records the peak blocks in use after every request's allocation (vLLM checks the free
// blocks request by request, after that request's expired blocks are freed) and, at every
// admission, the blocks in use plus what vLLM's admission gate asks of the new request (M
// `allocate_slots`, full_sequence_must_fit: every block of its prompt, sliding tables capped at
// their startup charge): a pool of `usable` blocks runs the workload as replayed, with no
// preemption and no delayed admission, iff max(peak_blocks, peak_admission_blocks) <= usable.
//
// Not modelled: prefix caching (shared pages), prefill/decode disaggregation, preemption and
// recomputation (the pool is unbounded here: the peak is what a pool must hold for none of
// them to happen), request priorities.
//
// Fast-forward: while the same requests are scheduled with the same token counts step after
// step (steady decode or a long chunked prefill), a request's live pages in a sliding group
// repeat with period R (the group's tokens per page) in its computed tokens, and full-history
// tables only grow. Once a schedule has repeated and every scheduled request's tables are what
// its last allocation alone gives, the simulator skips a multiple of the period T (steps after
// which every scheduled request's computed tokens advanced by a multiple of every sliding R),
// keeping at least T + 2 steps of the steady schedule, which is certain to last (no arrival,
// prompt end, finish or draft truncation before), to replay after the jump: those have the
// same sliding pages and at least the full-history pages of every skipped step.
// `simulate(..., {.fast_forward = false})` replays every step; a test runs both and compares
// every peak.
//
// Steady decoders in bulk (`sim_options::steady_decoders`, with the fast-forward): a decode of s
// tokens (and the lookahead) at c computed tokens, past every window and before the end of the
// context, whose tables are what that decode alone gives, changes each table's live pages by an
// amount that depends on c mod the lcm of the tables' tokens per page only (its extent grows by
// whole pages, its expiry frees them). Such a request keeps its tables implicit (`table_now` makes
// them from c) and a step adds its phase's precomputed change: the blocks after each request's
// allocation in order (vLLM's per-request peak), the pages per table by phase, the frees that
// reach the pool at the next step's top under overlap. It is the same run step for step: the same
// peaks, steps, visits and fast-forward jumps (a test compares every field with it off).
//
// Fit searches (`max_requests_simulated`, `max_context_simulated`, issue 41) replay the same
// workloads at many N or L, and skip work that cannot change an answer: a staggered workload
// whose all-at-once twin admitted every request no earlier than it would arrive is that run
// (`sim_result::staggered_twin_gap`); a probe resumes each run from the fork of the same
// workload's run in the last probe that fitted (`simulator::keep_fork`: the state up to which
// more requests, or a longer context, change nothing); a run stops once no later step can raise
// the peak the capacity bounds (`sim_options::stop_when_settled`, with the bounds of its own
// context, also when resumed from a shorter one's fork); the request search brackets
// its answer with the critical workloads alone and replays every workload only at the bracket's
// top (`detail::largest_fitting_bracketed`; the context search keeps a whole probe at every
// bisection step: a fit is not monotone in L everywhere, and its answer is that bisection's).
// Property tests compare each with whole runs (tests/alloc_sim_test.cpp, AllocSimFast.*).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <string_view>
#include <vector>

#include "dsv4/cache/engines/engine.hpp"
#include "dsv4/cache/engines/vllm/engine.hpp"
#include "dsv4/cache/group_spec.hpp"
#include "dsv4/cache/policy.hpp"

namespace dsv4::cache {

/// At most this many simulated tables: a library group each (own pools, at most kMaxGroups) or an
/// engine group each (tokenspeed 0.1.1's arena: the six V4 groups and its own index-key group).
inline constexpr int kMaxSimTables = kMaxGroups + 2;

/// How requests arrive.
enum class arrival_pattern : std::uint8_t {
  all_at_once,  ///< All N requests wait at step 0.
  staggered,    ///< Request i arrives at step i x gap.
  closed_loop,  ///< N at step 0; each finished request is replaced at once, until `completions` finished.
};

constexpr std::string_view to_string(arrival_pattern a) {
  switch (a) {
    case arrival_pattern::all_at_once: return "all_at_once";
    case arrival_pattern::staggered: return "staggered";
    case arrival_pattern::closed_loop: return "closed_loop";
  }
  return "?";
}

/// One simulated deployment and workload. Every request has the same prompt.
struct sim_workload {
  std::int64_t requests = 1;            ///< N: requests (running at once at most N).
  std::int64_t context_tokens = 1;      ///< L: prompt + generated tokens of each request (max_model_len).
  std::int64_t tokens_per_step = 1;     ///< s: tokens per decode step (1 verified + s - 1 drafts).
  std::int64_t step_budget_tokens = 1;  ///< B: tokens of one scheduler step (the prefill chunk).
  std::int64_t prompt_tokens = 1;       ///< P in [1, L - 1]: prompt tokens of each request.
  std::int64_t accepted_tokens = 1;     ///< a in [1, s]: tokens a decode step keeps (1: every draft rejected).
  arrival_pattern arrivals = arrival_pattern::all_at_once;
  std::int64_t arrival_gap_steps = 1;  ///< staggered: steps between arrivals (>= 1).
  std::int64_t completions = 0;        ///< closed_loop: finished requests to stop at (0: 2N).
  std::int64_t max_running = 0;        ///< Requests running at once at most (vLLM max_num_seqs); 0 = no cap.
};

/// What one simulation (or a worst case over many) found.
struct sim_result {
  int num_groups = 0;  ///< Simulated tables: library groups (own pools), distinct engine-group rules (shared).
  std::array<std::int64_t, kMaxSimTables>
      peak_pages{};              ///< Per table: peak live pages of one layer, null page excluded.
  std::uint64_t peak_bytes = 0;  ///< Peak over steps of all tables' bytes, null pages included.
  /// Shared pool: the table each engine group is simulated as (`pools.groups[e]` -> peak_pages index).
  std::array<int, kMaxEngineGroups> table_of_group{};
  /// Shared pool: peak blocks in use (the null block apart), after any request's allocation.
  std::int64_t peak_blocks = 0;
  /// Shared pool: peak over admissions of the blocks in use plus the new request's admission
  /// gate (vLLM admits it only if the free blocks cover that).
  std::int64_t peak_admission_blocks = 0;
  std::int64_t steps = 0;           ///< Scheduler steps until the workload ended (skipped ones included).
  std::int64_t replayed_steps = 0;  ///< Steps replayed one by one (steps minus fast-forwarded ones).
  std::int64_t finished = 0;        ///< Requests that finished.
  std::int64_t simulations = 0;     ///< Workloads covered (1 for `simulate`; twins included, see `worst_case`).
  std::int64_t visits = 0;          ///< Request visits made (scheduled requests over replayed steps).
  bool incomplete = false;          ///< Stopped at `sim_options::max_visits`: the peaks are of a part only.
  /// All requests at once under a running-first scheduler: the largest arrival gap g (steps) for
  /// which the staggered workload of the same requests (request i arriving at step i x g) is this
  /// run step for step, i.e. every request i was admitted at step i x g or later (it waited in
  /// both, and nothing else sees the queue); its peaks are this run's. INT64_MAX when no request
  /// after the first was admitted; 0 for other workloads and schedulers. Of the replayed part only
  /// when `incomplete` or `exceeded`.
  std::int64_t staggered_twin_gap = 0;
  /// Stopped because a peak passed `sim_options::stop_above` (the peaks are of a part only, and
  /// already above it): the workload does not fit that capacity.
  bool exceeded = false;
  /// Stopped at `sim_options::stop_when_settled`: the peak a capacity bounds is the whole run's
  /// (the other peaks, `steps` and `finished` are of the part replayed).
  bool settled = false;
};

/// Simulator switches.
struct sim_options {
  bool fast_forward = true;  ///< Skip whole periods of steady steps (see the header comment).
  /// With `fast_forward`: steady decoders in bulk (see the header comment), the same run, peaks,
  /// steps and visits as without; off only to test that.
  bool steady_decoders = true;
  /// Stop once this many request visits (a scheduled request in a replayed step) have been made,
  /// marking the result `incomplete`; 0 = no bound. About 3 x 10^7 visits a second here.
  std::int64_t max_visits = 0;
  /// Stop once the peaks pass this capacity (marking the result `exceeded`): a shared pool's
  /// peak blocks or admission blocks above `stop_above_blocks`, or the peak bytes above
  /// `stop_above_bytes` (0: no bound). The fit searches use it: a probe that fails stops there.
  std::int64_t stop_above_blocks = 0;
  std::uint64_t stop_above_bytes = 0;
  /// A parent arena: stop once sum over engine groups of ceil(peak pages / pages_per_block)
  /// (`sim_peak_parents`) passes this (0: no bound).
  std::int64_t stop_above_parents = 0;
  /// Stop once no later step can raise the peak a capacity bounds (a shared pool's blocks, a
  /// parent arena's peak pages of every table, own pools' bytes), marking the result `settled`:
  /// every request arrived and admitted, every running one decoding, and the running requests,
  /// each at the most pages it can hold in a table until it finishes, within that peak. The fit
  /// searches use it (the drain after the last admission, one finish a step, is most of a run).
  bool stop_when_settled = false;
};

namespace detail {

/// One block table as the simulator sees it.
struct sim_group {
  bool sliding = false;
  bool ring = false;                   ///< One page for the request's life (vLLM CircularBufferSpec).
  std::int64_t page_tokens = 0;        ///< R: tokens per page.
  std::int64_t window = 0;             ///< W (sliding groups).
  int page_shift = -1;                 ///< log2(R) when R is a power of two (every V4 group), else -1.
  std::uint64_t layer_page_bytes = 0;  ///< One page of the table: page bytes x layers, or the blocks of a shared pool.
  std::int64_t multiplicity = 1;       ///< Shared pool: engine groups of this rule (blocks per page).
  std::int64_t admission_cap = 0;      ///< Shared pool, sliding: vLLM's per-request cap at admission; else 0.
  friend bool operator==(const sim_group&, const sim_group&) = default;
};

/// What a run's fork (`simulator::keep_fork`) is resumed with: more requests, or a longer context.
enum class fork_kind : std::uint8_t { requests, context };

/// One request's page table in one group: table entries [0, length), the first `freed` freed.
struct sim_table {
  std::int64_t length = 0;
  std::int64_t freed = 0;      ///< Freed prefix as the allocator sees it.
  std::int64_t held_from = 0;  ///< Freed prefix as the pool sees it (lags one step under overlap).
};

enum class req_phase : std::uint8_t { waiting, prefill, decode, done };

struct sim_request {
  std::int64_t id = 0;
  req_phase phase = req_phase::waiting;
  std::int64_t computed = 0;  ///< c
  /// (A steady decoder's computed tokens and tables are stale: see `sim_hot`.)
  std::int64_t zombie_steps = 0;  ///< Overlap: steps a finished request still holds its pages.
  /// Fast path (`sim_options::fast_forward`): a decode of `quiet_tokens` tokens and
  /// `quiet_lookahead` lookahead at computed tokens below `quiet_until` changes none of its
  /// tables (its next page-boundary crossing, memoized at its last allocation); -1: unknown.
  std::int64_t quiet_until = -1;
  std::int64_t quiet_tokens = 0;
  std::int64_t quiet_lookahead = 0;
  /// Per table, the computed tokens from which such a decode needs one more page, or frees one.
  std::array<std::int64_t, kMaxSimTables> grow_at{};
  std::array<std::int64_t, kMaxSimTables> free_at{};
  bool lagging = false;  ///< Overlap: a freed prefix not yet released to the pool (held_from < freed).
  std::array<sim_table, kMaxSimTables> tables{};
};

/// Tokens, lookahead and kind of one scheduled request in one step.
struct sim_sched {
  std::size_t index = 0;
  std::int64_t tokens = 0;
  std::int64_t lookahead = 0;
  bool first_chunk = false;
  bool decode = false;
  friend bool operator==(const sim_sched&, const sim_sched&) = default;
};

/// What a step reads of every running request, kept densely apart from `sim_request` (one per
/// request, in its order) so that a step over many steady decoders reads little memory.
struct sim_hot {
  /// A steady decoder (`sim_options::steady_decoders`): `computed` is its computed tokens (the
  /// request's own is stale), and its `tables` are those of its last allocation, a steady decode at
  /// computed - a tokens (`simulator::table_now`).
  bool steady = false;
  bool done = false;  ///< Finished (its `sim_request::phase` says so too).
  std::int64_t computed = 0;
  std::int64_t steady_step = -1;  ///< The step of that allocation (-1: none yet, its `tables` current).
  std::int64_t kind_step = -2;    ///< The last step it was scheduled as a steady decode (either way).
};

/// What one steady decode at c computed tokens changes (`sim_options::steady_decoders`), for c of
/// one phase (c mod the period of the tables' tokens per page).
struct steady_phase {
  std::array<std::int64_t, kMaxSimTables> alloc{};    ///< Live pages per table, at its allocation.
  std::array<std::int64_t, kMaxSimTables> release{};  ///< Overlap: live pages per table at the next step's top.
  std::int64_t alloc_blocks = 0;                      ///< The same in blocks (x multiplicity).
  std::int64_t release_blocks = 0;
  std::uint32_t alloc_mask = 0;  ///< Tables whose `alloc` is not 0.
  std::uint32_t release_mask = 0;
};

class simulator {
 public:
  simulator(const engine_pools& pools, const allocation_policy& p, const sim_workload& w, sim_options o)
      : p_(p), w_(w), o_(o) {
    const policy_variants v = concrete_variants(p);
    require(v.count == 1, "simulate() needs a concrete policy (one window rule, one first-chunk rule)",
            {"variants", v.count});
    require(w.requests >= 1, "simulated requests must be >= 1", {"requests", w.requests});
    require(w.context_tokens >= 2, "simulated context_tokens must be >= 2 (a prompt and one generated token)",
            {"context_tokens", w.context_tokens});
    require(w.tokens_per_step >= 1, "simulated tokens_per_step must be >= 1", {"tokens_per_step", w.tokens_per_step});
    require(w.step_budget_tokens >= 1, "simulated step_budget_tokens must be >= 1",
            {"step_budget_tokens", w.step_budget_tokens});
    require(!p.decode_needs_whole_step || w.step_budget_tokens >= w.tokens_per_step,
            "this engine decodes only with a whole step of s tokens in the budget: B must be >= s",
            {"step_budget_tokens", w.step_budget_tokens}, {"tokens_per_step", w.tokens_per_step});
    require(w.prompt_tokens >= 1 && w.prompt_tokens < w.context_tokens,
            "simulated prompt_tokens must be in [1, context_tokens - 1]", {"prompt_tokens", w.prompt_tokens},
            {"context_tokens", w.context_tokens});
    require(w.accepted_tokens >= 1 && w.accepted_tokens <= w.tokens_per_step,
            "simulated accepted_tokens must be in [1, tokens_per_step]", {"accepted_tokens", w.accepted_tokens},
            {"tokens_per_step", w.tokens_per_step});
    require(w.arrival_gap_steps >= 1, "arrival_gap_steps must be >= 1", {"arrival_gap_steps", w.arrival_gap_steps});
    require(w.requests <= (std::int64_t{1} << 20), "simulated requests must be <= 2^20", {"requests", w.requests});
    require(w.context_tokens <= (std::int64_t{1} << 40), "simulated context_tokens must be <= 2^40",
            {"context_tokens", w.context_tokens});
    require(w.tokens_per_step <= w.context_tokens, "simulated tokens_per_step must be <= context_tokens",
            {"tokens_per_step", w.tokens_per_step}, {"context_tokens", w.context_tokens});
    require(w.step_budget_tokens <= (std::int64_t{1} << 40), "simulated step_budget_tokens must be <= 2^40",
            {"step_budget_tokens", w.step_budget_tokens});

    require(w.max_running >= 0, "max_running must be >= 0 (0: no cap)", {"max_running", w.max_running});
    measure_ = traits_of(pools.structure).measure;
    shared_ = measure_ == peak_measure::blocks;
    page_token_lcm_ = 1;
    const std::int64_t in_flight = vllm_in_flight_tokens(w.step_budget_tokens, p.overlap);
    for (int e = 0; e < pools.num_groups; ++e) {
      const engine_group& eg = pools[e];
      const table_rule& rule = eg.rule;
      // A shared pool simulates engine groups of one rule as one table.
      int t = 0;
      while (shared_ && t < result_.num_groups && !(rules_[static_cast<std::size_t>(t)] == rule)) ++t;
      if (!shared_ || t == result_.num_groups) {
        require(result_.num_groups < kMaxSimTables, "more simulated tables than kMaxSimTables",
                {"tables", result_.num_groups});
        t = result_.num_groups++;
        rules_[static_cast<std::size_t>(t)] = rule;
        sim_group& sg = groups_[static_cast<std::size_t>(t)];
        sg.sliding = rule.sliding();
        sg.ring = rule.kind == table_kind::request_ring;
        sg.page_tokens = rule.page_tokens;
        if (std::has_single_bit(static_cast<std::uint64_t>(sg.page_tokens)))
          sg.page_shift = std::countr_zero(static_cast<std::uint64_t>(sg.page_tokens));
        sg.window = sg.sliding ? effective_window(rule.window_tokens, rule.step_window_base_tokens, p,
                                                  w.tokens_per_step, rule.engine_state_ring)
                               : 0;
        sg.multiplicity = 0;
        sg.layer_page_bytes = 0;
        if (shared_ && sg.sliding) sg.admission_cap = vllm_charge_blocks(rule, w.context_tokens, in_flight);
        if (sg.sliding) page_token_lcm_ = std::lcm(page_token_lcm_, sg.page_tokens);
      }
      sim_group& sg = groups_[static_cast<std::size_t>(t)];
      ++sg.multiplicity;
      sg.layer_page_bytes = checked_add(sg.layer_page_bytes, shared_ ? static_cast<std::uint64_t>(pools.bytes_per_block)
                                                                     : static_cast<std::uint64_t>(eg.bytes()));
      result_.table_of_group[static_cast<std::size_t>(e)] = t;
      pages_per_block_[static_cast<std::size_t>(e)] = std::max<std::int64_t>(eg.pages_per_block, 1);
    }
    num_engine_groups_ = pools.num_groups;
    // The null block of a shared pool, or one null page in every layer of every pool.
    null_bytes_ = static_cast<std::uint64_t>(pools.bytes_per_block);
    if (!shared_) {
      null_bytes_ = 0;
      for (int g = 0; g < result_.num_groups; ++g)
        null_bytes_ = checked_add(null_bytes_, groups_[static_cast<std::size_t>(g)].layer_page_bytes);
    }
    if (w.arrivals == arrival_pattern::all_at_once && p.scheduler == scheduler_kind::running_first)
      result_.staggered_twin_gap = std::numeric_limits<std::int64_t>::max();
    total_arrivals_ = arrivals_of(w);
    steady_setup();
  }

  /// Requests that arrive in workload `w`: N, or a closed loop's completions.
  [[nodiscard]] static std::int64_t arrivals_of(const sim_workload& w) {
    if (w.arrivals != arrival_pattern::closed_loop) return w.requests;
    return w.completions > 0 ? std::max(w.completions, w.requests) : 2 * w.requests;
  }

  /// `run` keeps in `out` a copy of itself at its fork, when it reaches one: the top of a step
  /// (before its arrivals) where the state is also that of the same workload with more requests,
  /// which `resumed` continues. Staggered arrivals: the step the last request arrives at (no
  /// earlier step saw the number of requests). All at once, or a closed loop before its first
  /// finish: a step that may admit the last waiting request (at most as many wait as the last step
  /// admitted); up to there the queue never ran dry, and nothing else sees its length.
  /// `fork_kind::context`: the first step after every arrival (before a closed loop's first
  /// finish) while no request is within max(B, s) + 2s tokens of L and no table covers L: no
  /// scheduling, extent, finish or memoized crossing has seen L yet (only the fast-forward's jump
  /// lengths have, which change no peak); `resumed_context` continues it with a longer context.
  void keep_fork(std::optional<simulator>* out, fork_kind kind = fork_kind::requests) {
    fork_ = out;
    fork_kind_ = kind;
  }

  /// This fork's run (see `keep_fork` with `fork_kind::context`) of its workload with a context of
  /// `context` tokens (at least its own) on `pools` (its own) under options `o` (the same
  /// `fast_forward`), or none when the longer context changes a table's rules (vLLM's admission
  /// cap): the peaks and steps of `simulate` of that workload from step 0; its `visits` count the
  /// steps from the fork on only. Throws as `simulate` for a context out of range.
  [[nodiscard]] std::optional<simulator> resumed_context(std::int64_t context, const engine_pools& pools,
                                                         const sim_options& o) const {
    require(context >= w_.context_tokens, "a fork resumes with a context as long as its own or longer",
            {"context_tokens", context});
    require(o.fast_forward == o_.fast_forward, "a fork resumes with its own fast_forward switch");
    sim_workload w = w_;
    w.context_tokens = context;
    const simulator fresh(pools, p_, w, o);
    if (fresh.groups_ != groups_ || fresh.result_.num_groups != result_.num_groups) return std::nullopt;
    simulator s = *this;
    s.w_ = w;
    s.o_ = o;
    s.sd_max_computed_ = s.steady_max_computed();
    s.settle_pages_.fill(-1);  // the settle bounds are of the context (a full-history table's extent)
    s.settle_skip_ = 0;
    s.pages_peaked_ = true;
    s.result_.visits = 0;
    s.fork_ = nullptr;
    return s;
  }

  /// This fork's run (see `keep_fork`) of its workload with `requests` requests (at least its
  /// own) under options `o` (the same `fast_forward`): the same run as `simulate` of that
  /// workload from step 0, every peak and step the same; its `visits` count the steps from the
  /// fork on only.
  [[nodiscard]] simulator resumed(std::int64_t requests, const sim_options& o) const {
    require(requests >= w_.requests && requests <= (std::int64_t{1} << 20),
            "a fork resumes with as many requests as its own or more, at most 2^20", {"requests", requests});
    require(o.fast_forward == o_.fast_forward, "a fork resumes with its own fast_forward switch");
    simulator s = *this;
    s.w_.requests = requests;
    s.total_arrivals_ = arrivals_of(s.w_);
    // All requests arrived at step 0: a step that noted the arrivals noted all of them.
    if (w_.arrivals != arrival_pattern::staggered && s.no_room_arrived_ == arrived_) s.no_room_arrived_ = requests;
    s.o_ = o;
    s.pages_peaked_ = true;  // (a new capacity: sum the parents again)
    s.result_.visits = 0;
    s.fork_ = nullptr;
    return s;
  }

  sim_result run() {
    prev_.reserve(static_cast<std::size_t>(std::min<std::int64_t>(w_.requests, 1 << 16)));
    reqs_.reserve(static_cast<std::size_t>(std::min<std::int64_t>(total_arrivals_, 1 << 16)));
    hot_.reserve(reqs_.capacity());
    cur_.reserve(prev_.capacity());
    // Every request finishes after at most (P + L) steps alone; a generous guard against a bug.
    while (finished_ < total_arrivals_ || zombies_ > 0) {  // every arrival finishes
      if (fork_ != nullptr) take_fork();
      arrive(step_);
      release_held(prev_);
      cur_.clear();
      bool event = schedule(cur_, step_);
      measure();
      event |= advance(cur_);
      ++step_;
      ++result_.replayed_steps;
      result_.visits += static_cast<std::int64_t>(cur_.size()) + sd_count_ + 1;
      if (o_.max_visits > 0 && result_.visits > o_.max_visits) {
        result_.incomplete = true;
        break;
      }
      if (above_stop()) {
        result_.exceeded = true;
        break;
      }
      if (o_.stop_when_settled && settled()) {
        result_.settled = true;
        break;
      }
      const bool scheduled = !cur_.empty() || sd_count_ > 0;
      if (o_.fast_forward && !event && scheduled && zombies_ == 0 && same_schedule()) {
        repeated_step();
      } else {
        steady_ = 0;
        no_room_ = false;
      }
      idle_ = !scheduled && zombies_ == 0 ? idle_ + 1 : 0;
      require(idle_ <= w_.arrival_gap_steps + 1, "simulation makes no progress (internal error)", {"step", step_});
      std::swap(prev_, cur_);
      kind_count_prev_ = kind_count_;
    }
    const std::int64_t step = step_;
    result_.steps = step;
    result_.finished = finished_;
    result_.simulations = 1;
    return result_;
  }

 private:
  /// After a step that repeated the last one's schedule: a fast-forward jump once it repeated twice.
  void repeated_step() {
    ++steady_;
    if (no_room_ && arrived_ != no_room_arrived_) no_room_ = false;  // a waiting arrival moves the next one
    if (steady_ < 2 || no_room_) return;
    gather_schedule(cur_, step_ - 1);  // the steady decoders join the list, their tables current
    const std::int64_t jumped = fast_forward(cur_, step_);
    if (jumped > 0) {
      for (const sim_sched& sc : cur_)  // the same schedule, later
        if (steady_kind(sc)) hot_[sc.index].kind_step += jumped;
      step_ += jumped;
      steady_ = 0;
    }
    no_room_ = jumped < 0;
    no_room_arrived_ = arrived_;
  }

  /// At the top of a step: keeps the fork there (see `keep_fork`), or gives up on one.
  void take_fork() {
    if (fork_kind_ == fork_kind::context) {
      if (finished_ > 0) fork_ = nullptr;  // too late (L decided a finish)
      if (fork_ == nullptr || step_ == 0 || zombies_ > 0 || !waiting_.empty() ||
          arrived_ != (w_.arrivals == arrival_pattern::staggered ? total_arrivals_ : w_.requests))
        return;
      if (!far_from_context()) {  // and from now on: computed tokens and tables only grow until a finish
        fork_ = nullptr;
        return;
      }
    } else if (!at_fork()) {
      return;
    }
    fork_->emplace(*this);
    (*fork_)->fork_ = nullptr;
    fork_ = nullptr;
  }

  /// Whether no running request's next step reaches L (max(B, s) + 2s tokens: chunk or decode,
  /// lookahead, a last chunk's reserve) and no table covers L: nothing has seen L yet.
  [[nodiscard]] bool far_from_context() const {
    const std::int64_t reach = std::max(w_.step_budget_tokens, w_.tokens_per_step) + 2 * w_.tokens_per_step;
    for (const std::size_t i : running_) {
      if (computed_now(i) + reach >= w_.context_tokens) return false;
      for (int g = 0; g < result_.num_groups; ++g) {
        const sim_group& sg = groups_[static_cast<std::size_t>(g)];
        if (!sg.ring && table_now(i, g).length * sg.page_tokens >= w_.context_tokens) return false;
      }
    }
    return true;
  }

  /// Whether `run` is at its fork for more requests (see `keep_fork`).
  [[nodiscard]] bool at_fork() const {
    if (w_.arrivals == arrival_pattern::staggered)
      return arrived_ >= 1 && arrived_ + 1 == total_arrivals_ && step_ == arrived_ * w_.arrival_gap_steps;
    if (step_ == 0 || arrived_ != w_.requests || waiting_.empty() ||
        static_cast<std::int64_t>(waiting_.size()) > admitted_last_)
      return false;
    return w_.arrivals == arrival_pattern::all_at_once || finished_ == 0;
  }

  // ---- arrivals ----
  void arrive(std::int64_t step) {
    if (w_.arrivals == arrival_pattern::staggered) {
      while (arrived_ < total_arrivals_ && arrived_ * w_.arrival_gap_steps <= step) add_request();
    } else if (w_.arrivals == arrival_pattern::all_at_once) {
      while (arrived_ < total_arrivals_) add_request();
    } else {  // closed loop: refill to N live requests
      while (arrived_ < total_arrivals_ && live_requests_ < w_.requests) add_request();
    }
  }
  void add_request() {
    sim_request r;
    r.id = arrived_++;
    ++live_requests_;
    reqs_.push_back(r);
    hot_.emplace_back();
    waiting_.push_back(reqs_.size() - 1);
  }
  /// Next step a staggered arrival happens at (INT64_MAX if none).
  [[nodiscard]] std::int64_t next_arrival_step() const {
    if (w_.arrivals != arrival_pattern::staggered || arrived_ >= total_arrivals_)
      return std::numeric_limits<std::int64_t>::max();
    return arrived_ * w_.arrival_gap_steps;
  }

  // ---- page accounting: live pages change only through these two ----
  [[nodiscard]] static std::int64_t held(const sim_table& t) { return t.length - std::min(t.held_from, t.length); }
  /// Sets `t` to `next`, keeping the group's live-page sum.
  void update(int g, sim_table& t, const sim_table& next) {
    const std::int64_t d = held(next) - held(t);
    live_pages_[static_cast<std::size_t>(g)] += d;
    live_blocks_ += d * groups_[static_cast<std::size_t>(g)].multiplicity;
    t = next;
  }
  /// Shared pool: the blocks in use now (after a request's allocation) may be a peak.
  void note_blocks() {
    if (!shared_ || jumping_) return;  // a jump's catch-up allocations are no step of their own
    result_.peak_blocks = std::max(result_.peak_blocks, live_blocks_);
  }
  /// Shared pool: what vLLM's admission gate asks of a request of `prompt` tokens: every block of
  /// its prompt, sliding tables capped at their startup charge, one block of a ring.
  [[nodiscard]] std::int64_t admission_blocks(std::int64_t prompt) const {
    std::int64_t need = 0;
    const std::int64_t tokens = std::min(prompt, w_.context_tokens);
    for (int g = 0; g < result_.num_groups; ++g) {
      const sim_group& sg = groups_[static_cast<std::size_t>(g)];
      std::int64_t pages = sg.ring ? 1 : pages_for(sg, tokens);
      if (sg.sliding && sg.admission_cap > 0) pages = std::min(pages, sg.admission_cap);
      need += pages * sg.multiplicity;
    }
    return need;
  }
  void release_all(sim_request& r) {
    for (int g = 0; g < result_.num_groups; ++g) update(g, r.tables[static_cast<std::size_t>(g)], sim_table{});
  }

  // ---- overlap: what the allocator freed last step reaches the pool now ----
  void release_held(const std::vector<sim_sched>& last_step) {
    if (!p_.overlap) return;
    for (int g = 0; g < result_.num_groups; ++g) {  // the steady decoders' frees of the last step
      live_pages_[static_cast<std::size_t>(g)] += sd_pending_pages_[static_cast<std::size_t>(g)];
      sd_pending_pages_[static_cast<std::size_t>(g)] = 0;
    }
    live_blocks_ += sd_pending_blocks_;
    sd_pending_blocks_ = 0;
    sd_released_through_ = step_;
    for (const sim_sched& sc : last_step) {
      sim_request& r = reqs_[sc.index];
      if (r.phase == req_phase::done) continue;
      if (o_.fast_forward && !r.lagging) continue;  // nothing freed last step: held_from == freed already
      r.lagging = false;
      for (int g = 0; g < result_.num_groups; ++g) {
        sim_table& t = r.tables[static_cast<std::size_t>(g)];
        sim_table next = t;
        next.held_from = t.freed;
        update(g, t, next);
      }
    }
    for (std::size_t i : zombie_list_) {
      sim_request& r = reqs_[i];
      if (--r.zombie_steps == 0) {
        release_all(r);
        --zombies_;
      }
    }
    std::erase_if(zombie_list_, [&](std::size_t i) { return reqs_[i].zombie_steps == 0; });
  }

  // ---- scheduling ----
  /// Fills `out` with step `step`'s scheduled requests and allocates their pages. Returns true
  /// if anything but steady work happened (an admission).
  bool schedule(std::vector<sim_sched>& out, std::int64_t step) {
    const std::int64_t s = w_.tokens_per_step;
    std::int64_t budget = w_.step_budget_tokens;
    bool event = false;
    const bool prefill_only = p_.scheduler == scheduler_kind::prefill_first && (!waiting_.empty() || prefilling_ > 0);
    schedule_running(out, step, prefill_only, budget);
    const bool may_admit = p_.scheduler == scheduler_kind::running_first || prefill_only;
    admitted_last_ = 0;
    while (may_admit && budget > 0 && !waiting_.empty()) {
      if (w_.max_running > 0 && static_cast<std::int64_t>(running_.size()) >= w_.max_running) break;
      if (shared_)
        result_.peak_admission_blocks =
            std::max(result_.peak_admission_blocks, live_blocks_ + admission_blocks(w_.prompt_tokens));
      const std::size_t i = waiting_.front();
      waiting_.pop_front();
      sim_request& r = reqs_[i];
      r.phase = req_phase::prefill;
      ++prefilling_;
      running_.push_back(i);
      ++admitted_last_;
      if (r.id > 0)  // staggered by g, request i arrives at step i x g: admitted no earlier iff g <= step / i
        result_.staggered_twin_gap = std::min(result_.staggered_twin_gap, step / r.id);
      sim_sched sc{.index = i, .first_chunk = true};
      sc.tokens = std::min(w_.prompt_tokens, budget);
      sc.lookahead = p_.has(first_chunk_lookahead::spec) ? s - 1 : 0;
      allocate(r, sc);
      budget -= sc.tokens;
      out.push_back(sc);
      event = true;
    }
    return event;
  }

  /// The running requests' part of `schedule`, in order: steady decoders in bulk, the others
  /// step by step (`step_request`), within `budget` tokens (which they spend).
  void schedule_running(std::vector<sim_sched>& out, std::int64_t step, bool prefill_only, std::int64_t& budget) {
    const std::int64_t s = w_.tokens_per_step;
    const std::int64_t L = w_.context_tokens;
    sd_count_ = 0;
    kind_count_ = 0;
    kind_mismatch_ = 0;
    const steady_phase* phases = sd_phases_ ? sd_phases_->phases.data() : nullptr;
    // The steady decodes' pages per table are counted by phase and added after the loop, once
    // per phase: with many of them, scanning every phase; else those met, listed as met.
    const bool by_phase = phases != nullptr && 2 * kind_count_prev_ >= sd_period_;
    if (phases != nullptr && sd_hist_.size() != static_cast<std::size_t>(sd_period_)) {
      sd_hist_.assign(static_cast<std::size_t>(sd_period_), 0);
      sd_met_.assign(static_cast<std::size_t>(sd_period_), 0);
    }
    std::int64_t blocks = live_blocks_;  // (the steady decodes' running sum, peak and counts, in registers)
    std::int64_t peak = result_.peak_blocks;
    std::int64_t steady_count = 0;
    std::int64_t mismatch = 0;
    const std::int64_t* phase_blocks = sd_phases_ ? sd_phases_->blocks.data() : nullptr;
    steady_loop loop{.hot = hot_.data(),
                     .phase_blocks = phase_blocks,
                     .hist = sd_hist_.data(),
                     .met = sd_met_.data(),
                     .s = s,
                     .a = w_.accepted_tokens,
                     .max_computed = sd_max_computed_,
                     .mask = sd_mask_,
                     .period = sd_period_,
                     .step = step};
    const std::size_t n = running_.size();
    for (std::size_t k = 0; k < n;) {
      if (budget == 0) break;
      const std::size_t i = running_[k];
      sim_hot& h = loop.hot[i];
      if (h.steady) {
        if (prefill_only) {
          ++k;
          continue;
        }
        if (budget >= s && h.computed <= sd_max_computed_) {  // steady decodes from here: their phases' changes
          loop.budget = budget;
          loop.blocks = blocks;
          loop.peak = peak;
          const std::size_t end = by_phase ? steady_run<true>(loop, k) : steady_run<false>(loop, k);
          steady_count += static_cast<std::int64_t>(end - k);
          mismatch += loop.mismatch;
          loop.mismatch = 0;
          budget = loop.budget;
          blocks = loop.blocks;
          peak = loop.peak;
          k = end;
          continue;
        }
        leave_steady(i);
      }
      ++k;
      sim_request& r = reqs_[i];
      live_blocks_ = blocks;  // the step-by-step code below keeps them itself
      if (shared_) result_.peak_blocks = peak;
      step_request(r, i, s, L, budget, prefill_only, step, out);
      blocks = live_blocks_;
      peak = result_.peak_blocks;
    }
    live_blocks_ = blocks;
    if (shared_) result_.peak_blocks = peak;
    sd_count_ = steady_count;
    kind_count_ += steady_count;
    kind_mismatch_ += mismatch;
    const auto add_phase = [&](std::size_t rho) {
      add_steady(phases[rho], sd_hist_[rho]);
      sd_hist_[rho] = 0;
    };
    if (by_phase) {
      for (std::size_t rho = 0; rho < sd_hist_.size(); ++rho)
        if (sd_hist_[rho] != 0) add_phase(rho);
    } else {
      for (std::size_t j = 0; j < loop.num_met; ++j) add_phase(sd_met_[j]);
    }
  }

  /// What a run of steady decodes reads and keeps (`steady_run`), in registers.
  struct steady_loop {
    sim_hot* hot = nullptr;
    const std::int64_t* phase_blocks = nullptr;
    std::int64_t* hist = nullptr;  ///< Per phase, the steady decodes of this step.
    std::uint32_t* met = nullptr;  ///< The phases met this step, in `num_met` (not `ByPhase`).
    std::size_t num_met = 0;
    std::int64_t s = 0;
    std::int64_t a = 0;
    std::int64_t max_computed = 0;
    std::int64_t mask = -1;
    std::int64_t period = 1;
    std::int64_t step = 0;
    std::int64_t budget = 0;
    std::int64_t blocks = 0;
    std::int64_t peak = 0;
    std::int64_t mismatch = 0;
    [[nodiscard]] std::size_t rho_of(std::int64_t c) const {
      return static_cast<std::size_t>(mask >= 0 ? c & mask : c % period);
    }
  };
  /// The steady decodes of `running_` from its k-th request on, while they are: each adds its
  /// phase's blocks (the peak after each, in order) and counts its phase (listing the phases met
  /// unless `ByPhase`, which scans them all after). Returns the index after the last one.
  template <bool ByPhase>
  std::size_t steady_run(steady_loop& x, std::size_t k) const {
    const std::size_t n = running_.size();
    const std::size_t* idx = running_.data();
    steady_loop v = x;
    for (; k < n; ++k) {
      sim_hot& h = v.hot[idx[k]];
      const std::int64_t c = h.computed;
      if (!h.steady || v.budget < v.s || c > v.max_computed) break;
      const std::size_t rho = v.rho_of(c);
      v.blocks += v.phase_blocks[rho];
      v.peak = std::max(v.peak, v.blocks);
      if constexpr (ByPhase) {
        ++v.hist[rho];
      } else if (v.hist[rho]++ == 0) {
        v.met[v.num_met++] = static_cast<std::uint32_t>(rho);
      }
      v.budget -= v.s;
      h.computed = c + v.a;
      h.steady_step = v.step;
      v.mismatch += h.kind_step != v.step - 1 ? 1 : 0;
      h.kind_step = v.step;
    }
    x = v;
    return k;
  }

  /// One running request of a step, step by step (not a steady decode in bulk): its schedule
  /// within the step's `budget` tokens (which it spends), its allocation, and whether it goes on
  /// in bulk from its next step (`sim_options::steady_decoders`).
  void step_request(sim_request& r, std::size_t i, std::int64_t s, std::int64_t L, std::int64_t& budget,
                    bool prefill_only, std::int64_t step, std::vector<sim_sched>& out) {
    sim_sched sc{.index = i};
    if (r.phase == req_phase::prefill) {
      sc.tokens = std::min(w_.prompt_tokens - r.computed, budget);
      sc.lookahead = p_.running_lookahead ? s - 1 : 0;
    } else {
      if (prefill_only) return;
      if (p_.decode_needs_whole_step) {
        if (budget < s) return;
        sc.tokens = s;
      } else {
        sc.tokens = std::min({s, L - 1 - r.computed, budget});
      }
      sc.lookahead = p_.running_lookahead ? s - 1 : 0;
      sc.decode = true;
    }
    allocate(r, sc);
    if (steady_kind(sc)) {
      sim_hot& h = hot_[i];
      note_kind(h, step);
      if (sd_enabled_ && steady_ready(r)) {  // from its next allocation on (its tables are current now)
        h.steady = true;
        h.computed = r.computed + kept_tokens(sc);  // (`advance` gives the request's own the same)
        h.steady_step = -1;
      }
    }
    budget -= sc.tokens;
    out.push_back(sc);
  }

  /// Adds `count` steady decodes of phase `ph` to the tables' live pages (and, under overlap, to
  /// the frees due at the next step's top).
  void add_steady(const steady_phase& ph, std::int64_t count) {
    for (std::uint32_t m = ph.alloc_mask; m != 0; m &= m - 1) {
      const auto g = static_cast<std::size_t>(std::countr_zero(m));
      live_pages_[g] += count * ph.alloc[g];
    }
    for (std::uint32_t m = ph.release_mask; m != 0; m &= m - 1) {
      const auto g = static_cast<std::size_t>(std::countr_zero(m));
      sd_pending_pages_[g] += count * ph.release[g];
    }
    sd_pending_blocks_ += count * ph.release_blocks;
  }

  /// Tokens a request scheduled as `sc` adds to its computed count at the end of the step: the
  /// chunk, or the accepted part of a decode (rejected drafts roll back).
  [[nodiscard]] std::int64_t kept_tokens(const sim_sched& sc) const {
    return sc.decode ? std::min(w_.accepted_tokens, sc.tokens) : sc.tokens;
  }
  /// Position whose window an allocation at c computed tokens keeps: c, or for a tokenspeed
  /// decode, admitted at TokenSize - s, c - (s - 1).
  [[nodiscard]] std::int64_t expiry_position(std::int64_t c, const sim_sched& sc) const {
    return p_.expiry == expiry_timing::own_admission && sc.decode ? c - (w_.tokens_per_step - 1) : c;
  }
  /// Tokens a table must cover after an allocation at c computed tokens.
  [[nodiscard]] std::int64_t extent(std::int64_t c, const sim_sched& sc) const {
    std::int64_t e = c + sc.tokens + sc.lookahead;
    if (p_.last_chunk_reserves_step && !sc.decode && c + sc.tokens == w_.prompt_tokens) e += w_.tokens_per_step;
    return p_.extent_capped ? std::min(e, w_.context_tokens) : e;
  }
  /// Table entries [0, result) a sliding group may free once the window ends before `pos`.
  [[nodiscard]] static std::int64_t expired_pages(const sim_group& sg, std::int64_t pos) {
    const std::int64_t first_kept = pos - sg.window + 1;
    if (first_kept <= 0) return 0;
    return sg.page_shift >= 0 ? first_kept >> sg.page_shift : first_kept / sg.page_tokens;
  }
  [[nodiscard]] static std::int64_t pages_for(const sim_group& sg, std::int64_t tokens) {
    if (sg.ring) return tokens > 0 ? 1 : 0;
    if (sg.page_shift >= 0) return (tokens + sg.page_tokens - 1) >> sg.page_shift;  // tokens < 2^41
    return tokens / sg.page_tokens + (tokens % sg.page_tokens != 0 ? 1 : 0);
  }

  /// The allocation of one scheduled request: expiry in every table, then every table's extent
  /// (vLLM frees a request's expired blocks in all groups before it counts the new ones).
  void allocate(sim_request& r, const sim_sched& sc) {
    if (o_.fast_forward && sc.decode && r.quiet_until >= 0 && sc.tokens == r.quiet_tokens &&
        sc.lookahead == r.quiet_lookahead) {
      if (r.computed >= r.quiet_until) cross(r, sc);  // only the tables that cross a page boundary
      note_blocks();  // (no table changed below quiet_until: the same blocks as after the last change)
      return;
    }
    allocate_tables(r, sc);
    if (o_.fast_forward && sc.decode) quiet_from(r, sc);
  }

  /// `allocate_tables` for a decode of the memoized kind: the tables whose `free_at` or
  /// `grow_at` the request reached, expiry first (in every table, then the extents).
  void cross(sim_request& r, const sim_sched& sc) {
    const std::int64_t c = r.computed;
    const std::int64_t expiry_at = expiry_position(c, sc);
    const std::int64_t e = extent(c, sc);
    std::int64_t until = std::numeric_limits<std::int64_t>::max();
    for (int g = 0; g < result_.num_groups; ++g) {
      const auto gi = static_cast<std::size_t>(g);
      if (c < r.free_at[gi]) continue;
      const sim_group& sg = groups_[gi];
      sim_table& t = r.tables[gi];
      sim_table next = t;
      next.freed = std::max(t.freed, expired_pages(sg, expiry_at));
      if (!p_.overlap) next.held_from = next.freed;
      if (next.freed != next.held_from) r.lagging = true;
      update(g, t, next);
      r.free_at[gi] = free_threshold(sg, t, sc);
    }
    for (int g = 0; g < result_.num_groups; ++g) {
      const auto gi = static_cast<std::size_t>(g);
      if (c >= r.grow_at[gi]) {
        sim_table& t = r.tables[gi];
        sim_table next = t;
        next.length = std::max(t.length, pages_for(groups_[gi], e));
        update(g, t, next);
        r.grow_at[gi] = grow_threshold(r, groups_[gi], t, sc);
      }
      until = std::min({until, r.grow_at[gi], r.free_at[gi]});
    }
    r.quiet_until = until;
  }

  /// The first computed count at which a decode like `sc` frees one more page of table `t`.
  [[nodiscard]] std::int64_t free_threshold(const sim_group& sg, const sim_table& t, const sim_sched& sc) const {
    if (!sg.sliding) return std::numeric_limits<std::int64_t>::max();
    return (t.freed + 1) * sg.page_tokens + sg.window - 1 - expiry_position(0, sc);
  }
  /// The first computed count at which a decode like `sc` needs one more page of table `t`.
  [[nodiscard]] std::int64_t grow_threshold(const sim_request& r, const sim_group& sg, const sim_table& t,
                                            const sim_sched& sc) const {
    if (sg.ring) return t.length == 0 ? r.computed : std::numeric_limits<std::int64_t>::max();
    const std::int64_t covered = t.length * sg.page_tokens;  // tokens the table covers
    if (p_.extent_capped && w_.context_tokens <= covered) return std::numeric_limits<std::int64_t>::max();
    return covered - (sc.tokens + sc.lookahead) + 1;  // extent - computed: tokens + lookahead for a decode
  }

  /// The decodes of `sc`'s kind at computed tokens in [r.computed, r.quiet_until) change none of
  /// r's tables: per table the first computed count whose extent needs one more page, and per
  /// sliding table the first whose window frees one more page (both monotone in it).
  void quiet_from(sim_request& r, const sim_sched& sc) {
    std::int64_t until = std::numeric_limits<std::int64_t>::max();
    for (int g = 0; g < result_.num_groups; ++g) {
      const auto gi = static_cast<std::size_t>(g);
      r.grow_at[gi] = grow_threshold(r, groups_[gi], r.tables[gi], sc);
      r.free_at[gi] = free_threshold(groups_[gi], r.tables[gi], sc);
      until = std::min({until, r.grow_at[gi], r.free_at[gi]});
    }
    r.quiet_until = until;
    r.quiet_tokens = sc.tokens;
    r.quiet_lookahead = sc.lookahead;
  }

  /// Whether no later step can raise the peak a capacity bounds (`sim_options::stop_when_settled`).
  /// With nothing left to arrive or wait and every running request decoding, a request holds at
  /// most `settle_pages_[g]` pages of table g until it finishes (if it holds no more now): a
  /// full-history table grows to cover at most L - 2 + s + lookahead tokens, a ring holds one
  /// page, and a sliding table holds at most max over c of pages_for(c + s + lookahead) -
  /// expired_pages(its expiry position at c - lag) (lag: the tokens a step keeps under overlap,
  /// whose frees reach the pool a step late; periodic in c with period R once c >= c_min), since
  /// its length is the largest extent allocated and its freed prefix at least the last expiry's.
  /// Zombies are gone by the next step. A request settles once it kept a decode (the lag is then
  /// a decode's).
  [[nodiscard]] bool settled() {
    if (arrived_ < total_arrivals_ || !waiting_.empty() || running_.empty()) return false;
    if (settle_skip_ > 0) {
      --settle_skip_;
      return false;
    }
    if (settle_pages_[0] < 0) settle_bounds();
    const auto n = static_cast<std::int64_t>(running_.size());
    if (measure_ == peak_measure::blocks) {
      std::int64_t blocks = 0;
      for (int g = 0; g < result_.num_groups; ++g) {
        const auto gi = static_cast<std::size_t>(g);
        blocks += n * settle_pages_[gi] * groups_[gi].multiplicity;
      }
      if (blocks > result_.peak_blocks) return false;
    } else if (measure_ == peak_measure::parents) {
      for (int g = 0; g < result_.num_groups; ++g)
        if (n * settle_pages_[static_cast<std::size_t>(g)] > result_.peak_pages[static_cast<std::size_t>(g)])
          return false;
    } else {
      std::uint64_t bytes = null_bytes_;
      for (int g = 0; g < result_.num_groups; ++g) {
        const auto gi = static_cast<std::size_t>(g);
        bytes = checked_add(
            bytes, checked_mul(static_cast<std::uint64_t>(n * settle_pages_[gi]), groups_[gi].layer_page_bytes));
      }
      if (bytes > result_.peak_bytes) return false;
    }
    for (const std::size_t i : running_) {
      const sim_request& r = reqs_[i];
      // (a decode kept since the prompt: the last allocation was a decode's, whose frees the next
      // step's pool sees; the last chunk's expiry lags further behind)
      const std::int64_t c = computed_now(i);
      bool within = r.phase == req_phase::decode && c > w_.prompt_tokens && c >= settle_min_computed_;
      for (int g = 0; g < result_.num_groups && within; ++g) {
        const auto gi = static_cast<std::size_t>(g);
        within = held(table_now(i, g)) <= settle_pages_[gi];
      }
      if (!within) {
        settle_skip_ = n;  // not before many steps
        return false;
      }
    }
    return true;
  }

  /// `settle_pages_` and `settle_min_computed_` (see `settled`).
  void settle_bounds() {
    const std::int64_t s = w_.tokens_per_step;
    const std::int64_t lookahead = p_.running_lookahead ? s - 1 : 0;
    const std::int64_t lag = p_.overlap ? w_.accepted_tokens : 0;
    const std::int64_t admission_shift = p_.expiry == expiry_timing::own_admission ? s - 1 : 0;
    settle_min_computed_ = 0;
    for (int g = 0; g < result_.num_groups; ++g) {
      const sim_group& sg = groups_[static_cast<std::size_t>(g)];
      if (sg.sliding)
        settle_min_computed_ = std::max(settle_min_computed_, sg.window + lag + admission_shift + sg.page_tokens);
    }
    for (int g = 0; g < result_.num_groups; ++g) {
      const sim_group& sg = groups_[static_cast<std::size_t>(g)];
      std::int64_t pages = 0;
      if (sg.ring) {
        pages = 1;
      } else if (!sg.sliding) {
        const std::int64_t e = w_.context_tokens - 2 + s + lookahead;
        pages = pages_for(sg, p_.extent_capped ? std::min(e, w_.context_tokens) : e);
      } else {
        for (std::int64_t c = settle_min_computed_; c < settle_min_computed_ + sg.page_tokens; ++c)
          pages = std::max(pages, pages_for(sg, c + s + lookahead) - expired_pages(sg, c - lag - admission_shift));
      }
      settle_pages_[static_cast<std::size_t>(g)] = pages;
    }
  }

  /// Whether the peaks passed `sim_options::stop_above_*`.
  [[nodiscard]] bool above_stop() {
    if (o_.stop_above_blocks > 0 && std::max(result_.peak_blocks, result_.peak_admission_blocks) > o_.stop_above_blocks)
      return true;
    if (o_.stop_above_parents > 0 && pages_peaked_) {  // (the parents are of the peak pages)
      pages_peaked_ = false;
      std::int64_t parents = 0;
      for (int e = 0; e < num_engine_groups_; ++e) {
        const auto ei = static_cast<std::size_t>(e);
        const std::int64_t pages = result_.peak_pages[static_cast<std::size_t>(result_.table_of_group[ei])];
        parents += pages / pages_per_block_[ei] + (pages % pages_per_block_[ei] != 0 ? 1 : 0);
      }
      if (parents > o_.stop_above_parents) return true;
    }
    return o_.stop_above_bytes > 0 && result_.peak_bytes > o_.stop_above_bytes;
  }

  void allocate_tables(sim_request& r, const sim_sched& sc) {
    const std::int64_t expiry_at = expiry_position(r.computed, sc);
    const std::int64_t e = extent(r.computed, sc);
    for (int g = 0; g < result_.num_groups; ++g) {
      const sim_group& sg = groups_[static_cast<std::size_t>(g)];
      if (!sg.sliding) continue;
      sim_table& t = r.tables[static_cast<std::size_t>(g)];
      sim_table next = t;
      next.freed = std::max(t.freed, expired_pages(sg, expiry_at));
      if (!p_.overlap) next.held_from = next.freed;
      if (next.freed != next.held_from) r.lagging = true;
      update(g, t, next);
    }
    for (int g = 0; g < result_.num_groups; ++g) {
      sim_table& t = r.tables[static_cast<std::size_t>(g)];
      sim_table next = t;
      next.length = std::max(t.length, pages_for(groups_[static_cast<std::size_t>(g)], e));
      update(g, t, next);
    }
    note_blocks();
  }

  /// True if the tables of a request scheduled as `sc` last step are exactly what that
  /// allocation alone gives (no larger earlier extent or expiry still showing): then they
  /// are periodic in the computed tokens from here on.
  [[nodiscard]] bool tables_current(const sim_request& r, const sim_sched& sc) const {
    const std::int64_t c = r.computed - kept_tokens(sc);  // computed tokens at the last allocation
    for (int g = 0; g < result_.num_groups; ++g) {
      const sim_group& sg = groups_[static_cast<std::size_t>(g)];
      const sim_table& t = r.tables[static_cast<std::size_t>(g)];
      if (t.length != pages_for(sg, extent(c, sc))) return false;
      if (sg.sliding && t.freed != expired_pages(sg, expiry_position(c, sc))) return false;
    }
    return true;
  }

  void measure() {
    std::uint64_t bytes = null_bytes_;
    for (int g = 0; g < result_.num_groups; ++g) {
      const auto gi = static_cast<std::size_t>(g);
      if (live_pages_[gi] > result_.peak_pages[gi]) {
        result_.peak_pages[gi] = live_pages_[gi];
        pages_peaked_ = true;
      }
      bytes =
          checked_add(bytes, checked_mul(static_cast<std::uint64_t>(live_pages_[gi]), groups_[gi].layer_page_bytes));
    }
    result_.peak_bytes = std::max(result_.peak_bytes, bytes);
    if (shared_)  // a request-by-request peak above the step's end
      result_.peak_bytes =
          std::max(result_.peak_bytes,
                   checked_add(null_bytes_, checked_mul(static_cast<std::uint64_t>(result_.peak_blocks), null_bytes_)));
  }

  /// Ends the step: computed tokens advance, prompts end, requests finish. Returns true on a
  /// prompt end or a finish.
  bool advance(const std::vector<sim_sched>& sched) {
    bool event = false;
    bool finished = false;  // (a prompt's end keeps the request running)
    for (const sim_sched& sc : sched) {
      sim_request& r = reqs_[sc.index];
      std::int64_t tokens = 0;  // num_tokens after the step
      r.computed += kept_tokens(sc);
      if (sc.decode) {
        tokens = r.computed + 1;
      } else {
        if (r.computed < w_.prompt_tokens) continue;
        r.phase = req_phase::decode;  // the first token is sampled with the prompt's last chunk
        --prefilling_;
        tokens = r.computed + 1;
        event = true;
      }
      if (tokens >= w_.context_tokens) finish(sc.index), event = true, finished = true;
    }
    if (finished) std::erase_if(running_, [&](std::size_t i) { return hot_[i].done; });
    return event;
  }

  void finish(std::size_t i) {
    sim_request& r = reqs_[i];
    r.phase = req_phase::done;
    hot_[i].done = true;
    ++finished_;
    --live_requests_;
    if (p_.overlap) {
      r.zombie_steps = 1;  // its pages come back after the step in flight
      zombie_list_.push_back(i);
      ++zombies_;
    } else {
      release_all(r);
    }
  }

  /// Skips a multiple of the period while the schedule stays `sched`. Returns the steps skipped,
  /// or -1 if the schedule lasts too few steps for a jump.
  std::int64_t fast_forward(const std::vector<sim_sched>& sched, std::int64_t step) {
    // Steps the steady schedule certainly lasts: no prompt end, no finish, no draft truncation.
    // The period in steps: each request's phase c mod lcm(R) repeats after lcm(R) / gcd(lcm(R), d)
    // steps of d tokens.
    std::int64_t room = next_arrival_step() - step;
    std::int64_t period = 1;
    for (const sim_sched& sc : sched) {
      const sim_request& r = reqs_[sc.index];
      const std::int64_t per_step = kept_tokens(sc);
      period = std::lcm(period, page_token_lcm_ / std::gcd(page_token_lcm_, per_step));
      // prefill: c + k x (n + 1) < P keeps the chunk size and phase for n more steps
      // decode: c + a x n + s < L - 1 keeps k = s and no finish
      const std::int64_t left = sc.decode ? w_.context_tokens - 2 - w_.tokens_per_step - r.computed
                                          : w_.prompt_tokens - r.computed - sc.tokens - 1;
      room = std::min(room, left / per_step);
    }
    const std::int64_t jump = (room - period - 2) / period * period;
    if (jump <= 0) return -1;  // and none while this schedule lasts
    for (const sim_sched& sc : sched) {
      if (!tables_current(reqs_[sc.index], sc)) return 0;
    }
    // Replay the last two skipped steps of each scheduled request: its tables are functions of
    // its most recent allocations (monotone lengths and freed prefixes).
    jumping_ = true;
    for (const sim_sched& sc : sched) {
      sim_request& r = reqs_[sc.index];
      const std::int64_t per_step = kept_tokens(sc);
      r.computed += (jump - 2) * per_step;
      for (int k = 0; k < 2; ++k) {
        for (int g = 0; g < result_.num_groups; ++g) {
          sim_table& t = r.tables[static_cast<std::size_t>(g)];
          sim_table next = t;
          next.held_from = t.freed;
          update(g, t, next);
        }
        allocate(r, sc);
        r.computed += per_step;
      }
    }
    jumping_ = false;
    return jump;
  }

  // ---- steady decoders (sim_options::steady_decoders) ----
  /// The longest period (lcm of the tables' tokens per page) replayed in bulk.
  static constexpr std::int64_t kMaxSteadyPeriod = std::int64_t{1} << 12;

  /// The steady decode's schedule, period and bounds (the phases are made at the first entry).
  void steady_setup() {
    const std::int64_t s = w_.tokens_per_step;
    sd_kind_ = sim_sched{.tokens = s, .lookahead = p_.running_lookahead ? s - 1 : 0, .decode = true};
    std::int64_t period = 1;
    std::int64_t min_c = 0;
    for (int g = 0; g < result_.num_groups; ++g) {
      const sim_group& sg = groups_[static_cast<std::size_t>(g)];
      if (!sg.ring) period = std::lcm(period, sg.page_tokens);
      if (period > kMaxSteadyPeriod) break;
      if (sg.sliding) min_c = std::max(min_c, sg.window + (w_.tokens_per_step - 1) + w_.accepted_tokens);
    }
    sd_enabled_ = o_.fast_forward && o_.steady_decoders && period <= kMaxSteadyPeriod && result_.num_groups <= 32;
    sd_period_ = period;
    sd_mask_ = std::has_single_bit(static_cast<std::uint64_t>(period)) ? period - 1 : -1;
    sd_min_computed_ = min_c;
    sd_max_computed_ = steady_max_computed();
  }
  /// The most computed tokens at which a steady decode is one: s tokens scheduled (min(s, L - 1 - c)),
  /// an extent within L where it is capped, and no finish after it (c + a + 1 < L).
  [[nodiscard]] std::int64_t steady_max_computed() const {
    const std::int64_t L = w_.context_tokens;
    std::int64_t top = std::min(L - 1 - w_.tokens_per_step, L - 2 - w_.accepted_tokens);
    if (p_.extent_capped) top = std::min(top, L - w_.tokens_per_step - sd_kind_.lookahead);
    return top;
  }
  [[nodiscard]] bool steady_kind(const sim_sched& sc) const {
    return sc.decode && !sc.first_chunk && sc.tokens == sd_kind_.tokens && sc.lookahead == sd_kind_.lookahead;
  }
  /// A request scheduled as a steady decode in `step` (in bulk or not): whether the last step did too.
  void note_kind(sim_hot& h, std::int64_t step) {
    kind_mismatch_ += h.kind_step != step - 1 ? 1 : 0;
    h.kind_step = step;
    ++kind_count_;
  }
  /// Whether this step's schedule is the last step's (`cur_ == prev_` with the steady decoders in
  /// both): the same requests scheduled as steady decodes (each was last step, and as many), and
  /// the others the same in the same order (both lists follow `running_`).
  [[nodiscard]] bool same_schedule() const {
    if (kind_mismatch_ != 0 || kind_count_ != kind_count_prev_) return false;
    std::size_t a = 0;
    std::size_t b = 0;
    while (true) {
      while (a < cur_.size() && steady_kind(cur_[a])) ++a;
      while (b < prev_.size() && steady_kind(prev_[b])) ++b;
      if (a == cur_.size() || b == prev_.size()) return a == cur_.size() && b == prev_.size();
      if (!(cur_[a] == prev_[b])) return false;
      ++a, ++b;
    }
  }
  /// Table g of a steady decoder whose last allocation was the steady decode at c computed tokens:
  /// its extent and expiry, the freed prefix of the allocation before (c - a) still held when
  /// `pending` (overlap, before the next step's top).
  [[nodiscard]] sim_table steady_state(int g, std::int64_t c, bool pending) const {
    const sim_group& sg = groups_[static_cast<std::size_t>(g)];
    sim_table t;
    t.length = pages_for(sg, c + sd_kind_.tokens + sd_kind_.lookahead);  // (within L: not capped)
    if (sg.sliding) t.freed = expired_pages(sg, expiry_position(c, sd_kind_));
    t.held_from = t.freed;
    if (pending && sg.sliding) t.held_from = expired_pages(sg, expiry_position(c - w_.accepted_tokens, sd_kind_));
    return t;
  }
  /// Table g of request r as the step-by-step replay holds it now.
  [[nodiscard]] sim_table table_now(std::size_t i, int g) const {
    const sim_hot& h = hot_[i];
    if (!h.steady || h.steady_step < 0) return reqs_[i].tables[static_cast<std::size_t>(g)];
    return steady_state(g, h.computed - w_.accepted_tokens, p_.overlap && h.steady_step >= sd_released_through_);
  }
  /// Request i's computed tokens.
  [[nodiscard]] std::int64_t computed_now(std::size_t i) const {
    return hot_[i].steady ? hot_[i].computed : reqs_[i].computed;
  }
  /// Whether a request just scheduled as a steady decode at r.computed tokens may go on in bulk:
  /// past every window (the phases hold from there) and its tables what that decode alone gives.
  [[nodiscard]] bool steady_ready(const sim_request& r) {
    const std::int64_t c = r.computed;
    if (c < sd_min_computed_ || c > sd_max_computed_) return false;
    for (int g = 0; g < result_.num_groups; ++g) {
      const sim_group& sg = groups_[static_cast<std::size_t>(g)];
      const sim_table& t = r.tables[static_cast<std::size_t>(g)];
      if (t.length != pages_for(sg, extent(c, sd_kind_))) return false;
      if (sg.sliding && t.freed != expired_pages(sg, expiry_position(c, sd_kind_))) return false;
    }
    if (!sd_phases_) sd_phases_ = steady_phases();
    return true;
  }
  /// What the steady phases depend on (`make_steady_phases`), and the phases.
  struct steady_tables {
    int num_groups = 0;
    /// Per table: sliding, ring, tokens per page, window, multiplicity.
    std::array<std::array<std::int64_t, 5>, kMaxSimTables> tables{};
    std::array<std::int64_t, 6> decode{};  ///< s, lookahead, a, overlap, own-admission expiry, min computed.
    std::vector<steady_phase> phases;
    std::vector<std::int64_t> blocks;  ///< Per phase, its `alloc_blocks` (the bulk loop's only read).
    [[nodiscard]] bool same_inputs(const steady_tables& o) const {
      return num_groups == o.num_groups && tables == o.tables && decode == o.decode;
    }
  };
  /// The steady phases of this simulator: made once per thread for the same tables and decode (a
  /// fit search makes thousands of simulators of a few kinds), the last 8 kept.
  [[nodiscard]] std::shared_ptr<const steady_tables> steady_phases() const {
    steady_tables key;
    key.num_groups = result_.num_groups;
    for (int g = 0; g < result_.num_groups; ++g) {
      const sim_group& sg = groups_[static_cast<std::size_t>(g)];
      key.tables[static_cast<std::size_t>(g)] = {sg.sliding ? 1 : 0, sg.ring ? 1 : 0, sg.page_tokens, sg.window,
                                                 sg.multiplicity};
    }
    key.decode = {sd_kind_.tokens,
                  sd_kind_.lookahead,
                  w_.accepted_tokens,
                  p_.overlap ? 1 : 0,
                  p_.expiry == expiry_timing::own_admission ? 1 : 0,
                  sd_min_computed_};
    static thread_local std::vector<std::shared_ptr<const steady_tables>> cache;
    for (const auto& e : cache)
      if (e->same_inputs(key)) return e;
    auto made = std::make_shared<steady_tables>(std::move(key));
    made->phases = make_steady_phases();
    for (const steady_phase& ph : made->phases) made->blocks.push_back(ph.alloc_blocks);
    if (cache.size() >= 8) cache.erase(cache.begin());
    cache.push_back(made);
    return made;
  }
  /// Per phase of c, the live pages one steady decode at c changes: at its allocation (its extent;
  /// without overlap its expiry too) and, under overlap, at the next step's top (its expiry).
  [[nodiscard]] std::vector<steady_phase> make_steady_phases() const {
    std::vector<steady_phase> out(static_cast<std::size_t>(sd_period_));
    const std::int64_t a = w_.accepted_tokens;
    const std::int64_t base = (ceil_div(sd_min_computed_ + 4 * a, sd_period_) + 1) * sd_period_;
    for (std::int64_t rho = 0; rho < sd_period_; ++rho) {
      steady_phase& ph = out[static_cast<std::size_t>(rho)];
      const std::int64_t c = base + rho;
      for (int g = 0; g < result_.num_groups; ++g) {
        const auto gi = static_cast<std::size_t>(g);
        const std::int64_t before = held(steady_state(g, c - a, false));
        const std::int64_t after = held(steady_state(g, c, p_.overlap));
        const std::int64_t released = held(steady_state(g, c, false));
        ph.alloc[gi] = after - before;
        ph.release[gi] = released - after;
        if (ph.alloc[gi] != 0) ph.alloc_mask |= std::uint32_t{1} << g;
        if (ph.release[gi] != 0) ph.release_mask |= std::uint32_t{1} << g;
        ph.alloc_blocks += ph.alloc[gi] * groups_[gi].multiplicity;
        ph.release_blocks += ph.release[gi] * groups_[gi].multiplicity;
      }
    }
    return out;
  }
  /// Request r goes on step by step: its tables as the replay holds them now.
  void leave_steady(std::size_t i) {
    sim_request& r = reqs_[i];
    sim_hot& h = hot_[i];
    if (h.steady_step >= 0) {
      for (int g = 0; g < result_.num_groups; ++g) {
        const auto gi = static_cast<std::size_t>(g);
        r.tables[gi] = table_now(i, g);
        if (r.tables[gi].held_from != r.tables[gi].freed) r.lagging = true;
      }
    }
    r.computed = h.computed;
    h.steady = false;
    r.quiet_until = -1;  // its memoized crossings are stale
  }
  /// The whole schedule of `step` (just replayed) in `sched`: its list plus the steady decoders
  /// it scheduled, in the order of `running_`, each now stepped one by one (their frees still
  /// due at the next step's top are theirs again), as are those that entered in it (a jump moves
  /// their own computed tokens).
  void gather_schedule(std::vector<sim_sched>& sched, std::int64_t step) {
    if (sd_count_ == 0) {  // none in bulk: those that entered this step go on one by one
      for (const sim_sched& sc : sched)
        if (hot_[sc.index].steady) leave_steady(sc.index);
      return;
    }
    std::vector<sim_sched> all;
    all.reserve(sched.size() + static_cast<std::size_t>(sd_count_));
    std::size_t k = 0;
    for (const std::size_t i : running_) {
      if (k < sched.size() && sched[k].index == i) {
        if (hot_[i].steady) leave_steady(i);  // entered this step: the jump moves its own computed tokens
        all.push_back(sched[k++]);
        continue;
      }
      const sim_hot& h = hot_[i];
      if (!h.steady || h.steady_step != step) continue;
      leave_steady(i);
      sim_sched sc = sd_kind_;
      sc.index = i;
      all.push_back(sc);
    }
    require(k == sched.size(), "a scheduled request is not running (internal error)", {"step", step});
    for (std::int64_t& v : sd_pending_pages_) v = 0;
    sd_pending_blocks_ = 0;
    sched.swap(all);
  }

  allocation_policy p_;
  sim_workload w_;
  sim_options o_;
  bool shared_ = false;
  bool jumping_ = false;          ///< Inside a fast-forward's catch-up (no peak is noted there).
  std::uint64_t null_bytes_ = 0;  ///< The null block, or every pool's null page.
  std::int64_t live_blocks_ = 0;  ///< Shared pool: blocks in use (sum over tables of live pages x multiplicity).
  std::array<table_rule, kMaxSimTables> rules_{};
  std::array<std::int64_t, kMaxEngineGroups> pages_per_block_{};  ///< Per engine group (parent arena: K).
  int num_engine_groups_ = 0;
  std::array<sim_group, kMaxSimTables> groups_{};
  std::int64_t page_token_lcm_ = 1;
  std::int64_t total_arrivals_ = 0;
  std::int64_t arrived_ = 0;
  std::int64_t live_requests_ = 0;
  std::array<std::int64_t, kMaxSimTables> live_pages_{};  ///< Per group: live pages of all requests, one layer.
  std::int64_t finished_ = 0;
  std::int64_t zombies_ = 0;
  std::vector<sim_request> reqs_;
  std::vector<sim_hot> hot_;     ///< Per request (the same index).
  std::int64_t prefilling_ = 0;  ///< Running requests in their prompt.
  bool pages_peaked_ = true;     ///< A table's peak pages rose since `above_stop` last summed parents.
  std::deque<std::size_t> waiting_;
  std::vector<std::size_t> running_;
  std::vector<std::size_t> zombie_list_;
  sim_result result_;
  // The loop of `run` (kept here so that a fork resumes it).
  std::int64_t step_ = 0;
  std::int64_t steady_ = 0;  ///< Steps the schedule has repeated.
  std::int64_t idle_ = 0;    ///< Consecutive steps that scheduled nothing.
  /// While one steady schedule lasts, the steps it certainly lasts shrink by one a step: once too
  /// few for a jump, none is possible until the schedule changes.
  bool no_room_ = false;
  std::int64_t no_room_arrived_ = 0;
  std::int64_t admitted_last_ = 0;  ///< Requests admitted in the last step.
  std::vector<sim_sched> prev_;
  std::vector<sim_sched> cur_;
  std::optional<simulator>* fork_ = nullptr;  ///< Where `run` keeps its fork (see `keep_fork`), until it does.
  fork_kind fork_kind_ = fork_kind::requests;
  peak_measure measure_ = peak_measure::bytes;  ///< What the structure's capacity bounds (its traits).
  /// `settled`: per table the most pages a decoding request holds until it finishes (-1: not
  /// computed yet), from `settle_min_computed_` computed tokens on; steps before the next check.
  std::array<std::int64_t, kMaxSimTables> settle_pages_ = [] {
    std::array<std::int64_t, kMaxSimTables> a{};
    a.fill(-1);
    return a;
  }();
  std::int64_t settle_min_computed_ = 0;
  std::int64_t settle_skip_ = 0;
  // Steady decoders (see `steady_setup`).
  bool sd_enabled_ = false;
  sim_sched sd_kind_{};                             ///< A steady decode's schedule (its index apart).
  std::int64_t sd_period_ = 1;                      ///< lcm of the tables' tokens per page (rings apart).
  std::int64_t sd_mask_ = -1;                       ///< period - 1 when a power of two, else -1.
  std::int64_t sd_min_computed_ = 0;                ///< A request enters at this many computed tokens or more.
  std::int64_t sd_max_computed_ = 0;                ///< `steady_max_computed`.
  std::shared_ptr<const steady_tables> sd_phases_;  ///< Shared by forks and like simulators.
  std::array<std::int64_t, kMaxSimTables> sd_pending_pages_{};  ///< Overlap: due at the next step's top.
  std::int64_t sd_pending_blocks_ = 0;
  std::vector<std::int64_t> sd_hist_;     ///< Steady decodes of this step by phase.
  std::vector<std::uint32_t> sd_met_;     ///< The phases of this step's steady decodes (`sd_hist_` > 0).
  std::int64_t sd_released_through_ = 0;  ///< Steady allocations before this step are released.
  std::int64_t sd_count_ = 0;             ///< Steady decodes in bulk this step.
  std::int64_t kind_count_ = 0;           ///< Requests scheduled as steady decodes this step (either way).
  std::int64_t kind_count_prev_ = -1;
  std::int64_t kind_mismatch_ = 0;  ///< Of them, those the last step did not schedule so.
};

}  // namespace detail

/// Replays workload `w` under the concrete policy `p` (one window rule and one first-chunk
/// rule: see `concrete_variants`) on the block tables of `pools` (an engine's pool structure,
/// engines/engine.hpp), and returns the peak pages per table (one layer, null page excluded), the
/// peak total bytes (null pages included) and, for a shared pool, the peak blocks and admission
/// blocks (see the top of this file).
/// Throws std::invalid_argument for a policy with several rule variants, or a workload out of
/// range: N outside [1, 2^20], L outside [2, 2^40], s outside [1, L], B < 1 (or B < s for an
/// engine that decodes only whole steps), P outside [1, L - 1], a outside [1, s], gap < 1,
/// max_running < 0.
inline sim_result simulate(const engine_pools& pools, const allocation_policy& p, const sim_workload& w,
                           sim_options o = {}) {
  return detail::simulator(pools, p, w, o).run();
}

/// `simulate` on the library's own pools of `specs` (one table per group).
inline sim_result simulate(const group_spec_list& specs, const allocation_policy& p, const sim_workload& w,
                           sim_options o = {}) {
  return simulate(own_pools_of(specs), p, w, o);
}

/// The workloads `simulate_worst_case` tries.
struct sim_search {
  /// Contexts with L - 1 <= this try every prompt length; longer ones the page- and
  /// chunk-aligned lengths of `candidate_prompts`.
  std::int64_t every_prompt_up_to = 256;
  bool staggered = true;  ///< Also staggered arrivals, one every `arrival_gap_steps` steps.
  std::int64_t arrival_gap_steps = 1;
  bool closed_loop = true;       ///< Also a closed loop (2N completions).
  std::int64_t max_running = 0;  ///< The engine's cap on running requests (0: none).
  sim_options sim{};
};

/// Prompt lengths worth trying for contexts of L tokens: every length in [1, L - 1] if
/// L - 1 <= `every_up_to`; otherwise 1..8, m x R - 1, m x R, m x R + 1 for m in 1..2 and
/// each table's tokens per page R, the same around the last whole page before L, the chunk
/// boundaries B - 1, B, B + 1, 2B - 1, 2B, 2B + 1, and L - 1 - j for j in [0, min(s + 1, 16)]; all
/// within [1, L - 1], ascending, without repeats.
inline std::vector<std::int64_t> candidate_prompts(const engine_pools& pools, std::int64_t L, std::int64_t B,
                                                   std::int64_t s, std::int64_t every_up_to = 256) {
  std::vector<std::int64_t> out;
  const auto add = [&](std::int64_t v) {
    if (v >= 1 && v <= L - 1) out.push_back(v);
  };
  if (L - 1 <= every_up_to) {
    for (std::int64_t v = 1; v <= L - 1; ++v) out.push_back(v);
    return out;
  }
  for (std::int64_t v = 1; v <= 8; ++v) add(v);
  for (const engine_group& g : pools) {
    if (g.rule.kind == table_kind::request_ring) continue;  // one page whatever the length
    const std::int64_t r = g.rule.page_tokens;
    for (std::int64_t m = 1; m <= 2; ++m)
      for (std::int64_t d = -1; d <= 1; ++d) add(m * r + d);
    const std::int64_t last = (L - 1) / r * r;
    for (std::int64_t d = -1; d <= 1; ++d) add(last + d), add(last - r + d);
  }
  for (std::int64_t m = 1; m <= 2; ++m)
    for (std::int64_t d = -1; d <= 1; ++d)
      if (B <= L) add(m * B + d);
  for (std::int64_t j = 0; j <= std::min<std::int64_t>(s + 1, 16); ++j) add(L - 1 - j);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// `candidate_prompts` for the library's own pools of `specs`.
inline std::vector<std::int64_t> candidate_prompts(const group_spec_list& specs, std::int64_t L, std::int64_t B,
                                                   std::int64_t s, std::int64_t every_up_to = 256) {
  return candidate_prompts(own_pools_of(specs), L, B, s, every_up_to);
}

namespace detail {
/// Calls fn(policy variant, workload) for every workload `simulate_worst_case` tries (see there).
template <class Fn>
void for_each_workload(const engine_pools& pools, const allocation_policy& p, std::int64_t N, std::int64_t L,
                       std::int64_t s, std::int64_t B, const sim_search& search, Fn&& fn) {
  const std::vector<std::int64_t> prompts = candidate_prompts(pools, L, B, s, search.every_prompt_up_to);
  // Variants that act alike at this s (the same windows, the same first-chunk lookahead) run once.
  std::array<std::array<std::int64_t, kMaxEngineGroups + 1>, 4> seen{};
  int num_seen = 0;
  for (const allocation_policy& v : concrete_variants(p)) {
    std::array<std::int64_t, kMaxEngineGroups + 1> key{};
    for (int g = 0; g < pools.num_groups; ++g) {
      const table_rule& t = pools[g].rule;
      key[static_cast<std::size_t>(g)] =
          effective_window(t.window_tokens, t.step_window_base_tokens, v, s, t.engine_state_ring);
    }
    key[kMaxEngineGroups] = v.has(first_chunk_lookahead::spec) ? s - 1 : 0;
    if (std::find(seen.begin(), seen.begin() + num_seen, key) != seen.begin() + num_seen) continue;
    seen[static_cast<std::size_t>(num_seen++)] = key;
    for (const std::int64_t a : {std::int64_t{1}, s}) {
      for (const std::int64_t prompt : prompts) {
        sim_workload w{.requests = N,
                       .context_tokens = L,
                       .tokens_per_step = s,
                       .step_budget_tokens = B,
                       .prompt_tokens = prompt,
                       .accepted_tokens = a,
                       .max_running = search.max_running};
        fn(v, w);
        if (N == 1) continue;  // one request: every arrival pattern is the same run
        if (search.staggered) {
          w.arrivals = arrival_pattern::staggered;
          w.arrival_gap_steps = search.arrival_gap_steps;
          fn(v, w);
        }
        if (search.closed_loop) {
          w.arrivals = arrival_pattern::closed_loop;
          fn(v, w);
        }
      }
      if (s == 1) break;  // a = 1 = s: one acceptance only
    }
  }
}
}  // namespace detail

namespace detail {
/// Whether workload `w` is staggered by a gap within `at_once.staggered_twin_gap`: then, with every
/// other input the same (the caller's check) and `at_once` complete, its run is `at_once` step
/// for step (`sim_result::staggered_twin_gap`). Shared by `simulate_worst_case` and the fit probes.
[[nodiscard]] constexpr bool staggered_within_twin_gap(const sim_workload& w, const sim_result& at_once) noexcept {
  return w.arrivals == arrival_pattern::staggered && at_once.staggered_twin_gap > 0 &&
         w.arrival_gap_steps <= at_once.staggered_twin_gap;
}

/// `simulate_worst_case`'s loop: stops at the visits bound or, with `search.sim.stop_above_*`,
/// at the first workload past them (`exceeded`). A staggered workload right after its all-at-once
/// twin (`for_each_workload`'s order) within that run's `staggered_twin_gap` is that run, step for
/// step: its peaks, steps and finishes, without a replay (no visits).
inline sim_result worst_case(const engine_pools& pools, const allocation_policy& p, std::int64_t N, std::int64_t L,
                             std::int64_t s, std::int64_t B, const sim_search& search) {
  sim_result worst;
  sim_result at_once;  // the last all-at-once run (complete)
  bool first = true;
  detail::for_each_workload(pools, p, N, L, s, B, search, [&](const allocation_policy& v, const sim_workload& w) {
    if (worst.incomplete || worst.exceeded) return;  // the visits bound covers every workload together
    sim_result r;
    if (staggered_within_twin_gap(w, at_once)) {
      r = at_once;
      r.replayed_steps = 0;
      r.visits = 0;
      r.staggered_twin_gap = 0;
    } else {
      sim_options o = search.sim;
      if (o.max_visits > 0) o.max_visits -= worst.visits;
      r = simulate(pools, v, w, o);
    }
    const bool twin_source = w.arrivals == arrival_pattern::all_at_once && !r.incomplete && !r.exceeded && !r.settled;
    at_once = twin_source ? r : sim_result{};
    worst.exceeded = r.exceeded;
    if (first) {
      worst.num_groups = r.num_groups;
      worst.table_of_group = r.table_of_group;
      first = false;
    }
    for (std::size_t g = 0; g < kMaxSimTables; ++g)
      worst.peak_pages[g] = std::max(worst.peak_pages[g], r.peak_pages[g]);
    worst.peak_bytes = std::max(worst.peak_bytes, r.peak_bytes);
    worst.peak_blocks = std::max(worst.peak_blocks, r.peak_blocks);
    worst.peak_admission_blocks = std::max(worst.peak_admission_blocks, r.peak_admission_blocks);
    worst.steps += r.steps;
    worst.replayed_steps += r.replayed_steps;
    worst.finished += r.finished;
    worst.visits += r.visits;
    worst.incomplete = r.incomplete;
    ++worst.simulations;
  });
  return worst;
}
}  // namespace detail

/// The worst case of `simulate` over every concrete variant of the preset `p`, every prompt
/// of `candidate_prompts`, drafts all rejected or all accepted (a = 1 and a = s), and the
/// arrival patterns of `search` (one for N = 1), for N requests of L tokens, s tokens per step and a step
/// budget of B tokens: per table the largest peak pages, and the largest peak bytes, blocks and
/// admission blocks (each of one workload: they need not fall on one step or one workload).
/// `steps`, `replayed_steps` and `visits` are summed over the simulations, counted in
/// `simulations` (a staggered workload that is its all-at-once run step for step, see
/// `sim_result::staggered_twin_gap`, takes that run's peaks and steps, without visits);
/// `search.sim.max_visits` bounds the visits of all of them together (then
/// `incomplete`); with `search.sim.stop_above_*` it stops at the first workload past them
/// (`exceeded`). Throws as `simulate`.
inline sim_result simulate_worst_case(const engine_pools& pools, const allocation_policy& p, std::int64_t N,
                                      std::int64_t L, std::int64_t s, std::int64_t B, const sim_search& search = {}) {
  return detail::worst_case(pools, p, N, L, s, B, search);
}

/// `simulate_worst_case` on the library's own pools of `specs`.
inline sim_result simulate_worst_case(const group_spec_list& specs, const allocation_policy& p, std::int64_t N,
                                      std::int64_t L, std::int64_t s, std::int64_t B, const sim_search& search = {}) {
  return simulate_worst_case(own_pools_of(specs), p, N, L, s, B, search);
}

/// An estimate of `simulate_worst_case`'s work, in request visits: per workload, each of the
/// 3N events (an arrival, a prompt's end, a finish) is followed by at most P + 4 steps before the
/// fast-forward skips the steady ones (P: the sliding tables' page period, at most 256), and each
/// step visits at most N running requests. An upper estimate: on this project's 2-core machine
/// 1024 requests of 1,048,576 tokens at B = 512 (estimated 3.3e10) replay in about 8 s.
inline double sim_work_estimate(const engine_pools& pools, const allocation_policy& p, std::int64_t N, std::int64_t L,
                                std::int64_t s, std::int64_t B, const sim_search& search = {}) {
  std::int64_t period = 1;
  for (const engine_group& g : pools)
    if (g.rule.sliding()) period = std::lcm(period, g.rule.page_tokens);
  std::int64_t workloads = 0;
  detail::for_each_workload(pools, p, N, L, s, B, search,
                            [&](const allocation_policy&, const sim_workload&) { ++workloads; });
  const auto n = static_cast<double>(N);
  return static_cast<double>(workloads) * 3.0 * n * static_cast<double>(std::min<std::int64_t>(period, 256) + 4) * n;
}

/// What fits a pool: a shared pool of `usable_blocks` blocks (num_blocks - 1: the null block
/// apart), a parent arena of `usable_blocks` parents (the null parent apart), or own pools of
/// `budget_bytes` bytes.
struct sim_capacity {
  std::int64_t usable_blocks = 0;
  std::uint64_t budget_bytes = 0;
};

/// A bound on the work of the fit searches below, in request visits (`sim_result::visits`).
struct sim_work_budget {
  std::int64_t limit = 0;  ///< 0: no bound.
  std::int64_t spent = 0;  ///< Visits made so far.
  bool exhausted = false;  ///< A probe ran out of it: the searches' answers are lower bounds.
};

/// A parent arena's peak parents (tokenspeed, engines/tokenspeed/engine.hpp) by the simulation `r`:
/// sum over groups of ceil(peak pages / K). A group fills its bound parents before it binds a
/// free one (`BlockPool::AcquireBlocks`), so it never holds more than ceil(its peak pages / K):
/// an upper bound on the arena's peak, exact when the groups peak together.
inline std::int64_t sim_peak_parents(const engine_pools& pools, const sim_result& r) {
  std::int64_t sum = 0;
  for (int e = 0; e < pools.num_groups; ++e) {
    const std::int64_t pages = r.peak_pages[static_cast<std::size_t>(r.table_of_group[static_cast<std::size_t>(e)])];
    const std::int64_t k = pools[e].pages_per_block;
    sum = checked_add(sum, ceil_div(pages, k));
  }
  return sum;
}

namespace detail {

/// One workload of a worst case, named so that it can be found again at another N or L: the
/// policy variant's ordinal, the acceptance, the arrivals and the prompt (from the start when it
/// is at most L / 2, else from the end: L - 1 - j is the same workload at every L).
struct workload_key {
  int variant = 0;
  std::int64_t accepted = 0;
  arrival_pattern arrivals = arrival_pattern::all_at_once;
  std::int64_t prompt = 0;  ///< P, or P - L (< 0) for a prompt past L / 2.
  friend bool operator==(const workload_key&, const workload_key&) = default;
};

/// The probes of one fit search (`max_requests_simulated`, `max_context_simulated`): each probe
/// replays the worst case's workloads at (N, L), the critical ones first, and stops at the first
/// that does not fit `cap` (each simulation stops as soon as its peaks pass it). The critical
/// workloads are those that failed an earlier probe and those that set the peaks of an earlier
/// fitting one: a probe of them alone (`critical_only`) is a necessary condition, cheap, that
/// brackets the search before a whole probe confirms its answer.
class fit_prober {
 public:
  fit_prober(const engine_pools& pools, const allocation_policy& p, std::int64_t s, std::int64_t B,
             const sim_capacity& cap, const sim_search& search, sim_work_budget* budget)
      : pools_(pools),
        measure_(traits_of(pools.structure).measure),
        p_(p),
        s_(s),
        B_(B),
        cap_(cap),
        search_(search),
        budget_(budget) {
    search_.sim.stop_when_settled = true;  // the probes need the peak the capacity bounds only
    switch (measure_) {
      case peak_measure::blocks:
        if (cap.usable_blocks > 0) search_.sim.stop_above_blocks = cap.usable_blocks;
        break;
      case peak_measure::parents:
        if (cap.usable_blocks > 0) search_.sim.stop_above_parents = cap.usable_blocks;
        break;
      case peak_measure::bytes: search_.sim.stop_above_bytes = cap.budget_bytes; break;
    }
  }

  [[nodiscard]] std::size_t critical_count() const { return critical_.size(); }

  /// Keeps each run's fork (simulator::keep_fork) after a probe that fits, and starts a run of
  /// the same workload with more requests (`fork_kind::requests`) or a longer context
  /// (`fork_kind::context`, prompts counted from the start only) from it: for the request and
  /// context searches, whose probes after one that fits are all above it. The answers are the
  /// same (a run from its fork has the peaks of the run from step 0).
  void keep_forks(fork_kind kind) {
    keep_forks_ = true;
    fork_kind_ = kind;
  }

  /// `simulated_fit`'s answer at (N, L): the critical workloads alone first (a cheap refusal),
  /// then every workload.
  bool fits(std::int64_t N, std::int64_t L) { return probe(N, L, true) && probe(N, L, false); }

  /// Whether N requests of L fit: every workload (`critical_only` false: `simulated_fit`'s
  /// answer), or the critical ones only, from the `from`-th on (true when there are none).
  bool probe(std::int64_t N, std::int64_t L, bool critical_only, std::size_t from = 0) {
    if (search_.max_running > 0 && N > search_.max_running) return false;
    const std::vector<item> all = workloads(N, L);
    std::vector<bool> taken(all.size(), false);
    std::vector<std::size_t> order = critical_order(all, taken, critical_only ? from : 0);
    if (critical_only && order.empty()) return true;
    if (!critical_only) append_by_score(all, taken, order);
    return replay(all, order, critical_only);
  }

 private:
  struct item {
    workload_key key;
    allocation_policy policy;
    sim_workload w;
  };

  /// Every workload of the worst case at (N, L), keyed for the critical list.
  [[nodiscard]] std::vector<item> workloads(std::int64_t N, std::int64_t L) const {
    std::vector<item> all;
    int variant = -1;
    const allocation_policy* last = nullptr;
    for_each_workload(pools_, p_, N, L, s_, B_, search_, [&](const allocation_policy& v, const sim_workload& w) {
      if (&v != last) ++variant, last = &v;
      const std::int64_t rel = 2 * w.prompt_tokens <= L ? w.prompt_tokens : w.prompt_tokens - L;
      all.push_back({{variant, w.accepted_tokens, w.arrivals, rel}, v, w});
    });
    return all;
  }

  /// The critical workloads (the newest first, from the `from`-th on), each matched to the same
  /// one at this L or the nearest prompt of its kind (from the same end): any workload will do
  /// for a necessary condition. Marks them in `taken`.
  [[nodiscard]] std::vector<std::size_t> critical_order(const std::vector<item>& all, std::vector<bool>& taken,
                                                        std::size_t from) const {
    std::vector<std::size_t> order;
    for (std::size_t c = critical_.size(); c > from; --c) {
      const workload_key& k = critical_[c - 1];
      std::size_t best = all.size();
      std::int64_t best_d = std::numeric_limits<std::int64_t>::max();
      for (std::size_t i = 0; i < all.size(); ++i) {
        const workload_key& a = all[i].key;
        if (taken[i] || a.variant != k.variant || a.accepted != k.accepted || a.arrivals != k.arrivals ||
            (a.prompt < 0) != (k.prompt < 0))
          continue;
        const std::int64_t d = a.prompt > k.prompt ? a.prompt - k.prompt : k.prompt - a.prompt;
        if (d < best_d) best = i, best_d = d;
      }
      if (best < all.size()) {
        order.push_back(best);
        taken[best] = true;
      }
    }
    return order;
  }

  /// Appends the workloads not taken, the highest peaks of the last whole probe first (never
  /// run: first), and forgets those scores.
  void append_by_score(const std::vector<item>& all, const std::vector<bool>& taken, std::vector<std::size_t>& order) {
    const auto score = [&](std::size_t i) {
      for (const auto& [k, v] : scores_)
        if (k == all[i].key) return v;
      return std::numeric_limits<std::int64_t>::max();
    };
    std::vector<std::pair<std::int64_t, std::size_t>> by_score;
    for (std::size_t i = 0; i < all.size(); ++i)
      if (!taken[i]) by_score.emplace_back(score(i), i);
    std::stable_sort(by_score.begin(), by_score.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& e : by_score) order.push_back(e.second);
    scores_.clear();
  }

  /// `replay_order`, keeping its complete runs for the next probe and, once a whole probe fits,
  /// its forks and those of the critical probe before it at the same N and L (whose runs it
  /// takes): the next probes of a search are above a probe that fits, and may be below one that
  /// does not.
  bool replay(const std::vector<item>& all, const std::vector<std::size_t>& order, bool critical_only) {
    if (critical_only) pending_forks_.clear();
    ran_now_.clear();
    const bool ok = replay_order(all, order, critical_only);
    ran_before_ = std::move(ran_now_);
    ran_now_.clear();
    if (ok && critical_only) return true;  // its forks wait for the whole probe
    if (ok) {
      for (fork_entry& f : pending_forks_) {  // (one search: the other of N and L is the same)
        std::erase_if(forks_, [&](const fork_entry& e) { return e.key == f.key; });
        forks_.push_back(std::move(f));
      }
    }
    pending_forks_.clear();
    return ok;
  }

  /// Replays `order`'s workloads; false at the first whose peaks (or the peaks together) pass
  /// the cap, or when the work budget runs out.
  bool replay_order(const std::vector<item>& all, const std::vector<std::size_t>& order, bool critical_only) {
    sim_result worst;  // per table the largest peak pages (a parent arena's parents are of them)
    std::array<std::size_t, kMaxSimTables + 3> setter{};      // the workload that set each peak
    std::vector<std::pair<std::size_t, sim_result>> at_once;  // the all-at-once runs of this probe
    // Forks for the request search's next probes, within kMaxForkBytes.
    const bool forking = keep_forks_ && !all.empty() &&
                         all.front().w.requests * static_cast<std::int64_t>(all.size()) <=
                             kMaxForkBytes / static_cast<std::int64_t>(sizeof(sim_request));
    for (const std::size_t i : order) {
      sim_result r;
      if (const sim_result* twin = staggered_twin(all, i, at_once)) {
        r = *twin;  // the same run: its peaks, without the work
      } else if (const sim_result* same = ran_before(all[i])) {
        r = *same;  // the last probe (the critical workloads at the same N and L) ran it
      } else {
        sim_options o = search_.sim;
        if (budget_ != nullptr && budget_->limit > 0) {
          if (budget_->spent >= budget_->limit) {
            budget_->exhausted = true;
            return false;
          }
          o.max_visits = budget_->limit - budget_->spent;
        }
        r = run(all[i], o, forking);
        if (budget_ != nullptr) budget_->spent += r.visits;
      }
      if (!r.exceeded && !r.incomplete) ran_now_.push_back({all[i].key, all[i].w.context_tokens, all[i].w.requests, r});
      if (r.exceeded) {
        note_critical(all[i].key);
        return false;
      }
      if (budget_ != nullptr && r.incomplete) {
        budget_->exhausted = true;
        return false;
      }
      if (!critical_only) scores_.emplace_back(all[i].key, binding(r));
      if (all[i].w.arrivals == arrival_pattern::all_at_once && r.staggered_twin_gap > 0 && !r.incomplete)
        at_once.emplace_back(i, r);
      take_peaks(r, i, worst, setter);
      if (!fits(worst)) {
        note_critical(all[i].key);
        if (measure_ == peak_measure::parents)  // the tables' peaks together passed it
          for (int g = 0; g < worst.num_groups; ++g) note_critical(all[setter[static_cast<std::size_t>(g)]].key);
        return false;
      }
    }
    if (!critical_only && !order.empty()) note_setters(all, worst, setter);
    return true;
  }

  /// The run of workload `x` under options `o`: from the fork of a run of it with fewer requests
  /// when there is one (the one with the most), else from step 0; with `forking`, its own fork
  /// joins `pending_forks_`.
  sim_result run(const item& x, const sim_options& o, bool forking) {
    std::optional<simulator> s;
    for (const fork_entry& e : forks_) {
      if (!forking) break;
      if (!(e.key == x.key)) continue;
      if (fork_kind_ == fork_kind::requests && e.context == x.w.context_tokens && e.requests <= x.w.requests) {
        s = e.state.resumed(x.w.requests, o);
      } else if (fork_kind_ == fork_kind::context && x.key.prompt >= 0 && e.requests == x.w.requests &&
                 e.context <= x.w.context_tokens) {
        s = e.state.resumed_context(x.w.context_tokens, pools_, o);
      }
      break;  // one fork per workload
    }
    if (!s) s.emplace(pools_, x.policy, x.w, o);
    std::optional<simulator> fork;
    if (forking) s->keep_fork(&fork, fork_kind_);
    const sim_result r = s->run();
    if (fork) pending_forks_.push_back({x.key, x.w.context_tokens, x.w.requests, std::move(*fork)});
    return r;
  }

  /// The complete run of workload `x` (the same N and L) that the last probe made, or null.
  [[nodiscard]] const sim_result* ran_before(const item& x) const {
    for (const ran_entry& e : ran_before_)
      if (e.key == x.key && e.context == x.w.context_tokens && e.requests == x.w.requests) return &e.result;
    return nullptr;
  }

  /// The complete all-at-once run of `at_once` that is workload `i`'s run step for step (`i`
  /// staggered by a gap within its `sim_result::staggered_twin_gap`, every other input the same),
  /// or null.
  [[nodiscard]] static const sim_result* staggered_twin(
      const std::vector<item>& all, std::size_t i, const std::vector<std::pair<std::size_t, sim_result>>& at_once) {
    const item& x = all[i];
    for (const auto& [j, r] : at_once) {
      const workload_key& k = all[j].key;
      if (k.variant == x.key.variant && k.accepted == x.key.accepted && k.prompt == x.key.prompt &&
          staggered_within_twin_gap(x.w, r))
        return &r;
    }
    return nullptr;
  }

  /// Folds one workload's peaks into `worst`, remembering which workload set each.
  static void take_peaks(const sim_result& r, std::size_t i, sim_result& worst,
                         std::array<std::size_t, kMaxSimTables + 3>& setter) {
    worst.num_groups = r.num_groups;
    worst.table_of_group = r.table_of_group;
    for (std::size_t g = 0; g < kMaxSimTables; ++g)
      if (r.peak_pages[g] > worst.peak_pages[g]) worst.peak_pages[g] = r.peak_pages[g], setter[g] = i;
    if (r.peak_bytes > worst.peak_bytes) worst.peak_bytes = r.peak_bytes, setter[kMaxSimTables] = i;
    const std::int64_t blocks = std::max(r.peak_blocks, r.peak_admission_blocks);
    if (blocks > worst.peak_blocks) worst.peak_blocks = blocks, setter[kMaxSimTables + 1] = i;
  }

  /// The workloads that set the binding peaks of a whole probe that fit become critical.
  void note_setters(const std::vector<item>& all, const sim_result& worst,
                    const std::array<std::size_t, kMaxSimTables + 3>& setter) {
    switch (measure_) {
      case peak_measure::blocks: note_critical(all[setter[kMaxSimTables + 1]].key); break;
      case peak_measure::bytes: note_critical(all[setter[kMaxSimTables]].key); break;
      case peak_measure::parents:
        for (int g = 0; g < worst.num_groups; ++g) note_critical(all[setter[static_cast<std::size_t>(g)]].key);
        break;
    }
  }

  [[nodiscard]] bool fits(const sim_result& worst) const {
    switch (measure_) {
      case peak_measure::blocks: return worst.peak_blocks <= cap_.usable_blocks;
      case peak_measure::parents: return sim_peak_parents(pools_, worst) <= cap_.usable_blocks;
      case peak_measure::bytes: break;
    }
    return worst.peak_bytes <= cap_.budget_bytes;
  }
  /// The measure `cap` bounds, of one workload.
  [[nodiscard]] std::int64_t binding(const sim_result& r) const {
    switch (measure_) {
      case peak_measure::blocks: return std::max(r.peak_blocks, r.peak_admission_blocks);
      case peak_measure::parents: return sim_peak_parents(pools_, r);
      case peak_measure::bytes: break;
    }
    constexpr auto kTop = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() - 1);
    return static_cast<std::int64_t>(std::min(r.peak_bytes, kTop));
  }
  void note_critical(const workload_key& k) {
    if (std::find(critical_.begin(), critical_.end(), k) == critical_.end()) critical_.push_back(k);
  }

  const engine_pools& pools_;
  peak_measure measure_;  ///< What `cap_` bounds (the structure's traits).
  allocation_policy p_;
  std::int64_t s_;
  std::int64_t B_;
  sim_capacity cap_;
  sim_search search_;
  sim_work_budget* budget_;
  /// A run's fork (simulator::keep_fork) for a workload of `requests` requests of `context` tokens.
  struct fork_entry {
    workload_key key;
    std::int64_t context = 0;
    std::int64_t requests = 0;
    simulator state;
  };
  /// A complete run of one probe.
  struct ran_entry {
    workload_key key;
    std::int64_t context = 0;
    std::int64_t requests = 0;
    sim_result result;
  };
  /// The forks kept of one probe at most: its requests x workloads x a request's state (bytes).
  static constexpr std::int64_t kMaxForkBytes = std::int64_t{64} << 20;
  bool keep_forks_ = false;
  fork_kind fork_kind_ = fork_kind::requests;
  std::vector<fork_entry> forks_;          ///< Per workload and context, the fork of the last fitting probe.
  std::vector<fork_entry> pending_forks_;  ///< The forks of the probe under way.
  std::vector<ran_entry> ran_before_;      ///< The complete runs of the last probe.
  std::vector<ran_entry> ran_now_;         ///< The complete runs of the probe under way.
  std::vector<workload_key> critical_;
  std::vector<std::pair<workload_key, std::int64_t>> scores_;  ///< The last whole probe's workloads and peaks.
};

/// The largest v in [lo, hi] for which `fits(v)` holds, given that it holds at lo (or lo is a
/// trivial answer) and that it is monotone; `cheap(v)` is a necessary condition of it (the critical
/// workloads alone). The cheap probes bracket the answer (doubling up from lo with `doubling`, then
/// bisecting), and one whole probe confirms the top of the bracket: the cheap probe above it
/// failed, so nothing above fits. A whole probe that fails lowers hi below it, and its failing
/// workload joins the critical ones, which tightens the next bracket. The answer is that of a
/// bisection with `fits` alone; most of its whole probes (every probe below the answer) are not run.
template <class Cheap, class Fits>
std::int64_t largest_fitting_bracketed(std::int64_t lo, std::int64_t hi, bool doubling, Cheap&& cheap, Fits&& fits) {
  while (lo < hi) {
    std::int64_t base = lo;  // cheap holds here
    std::int64_t top = hi;   // cheap may hold up to here
    for (std::int64_t step = 1; doubling && base < top; step *= 2) {
      const std::int64_t next = step > top - base ? top : base + step;
      if (!cheap(next)) {
        top = next - 1;
        break;
      }
      base = next;
    }
    const std::int64_t c = base < top ? largest_fitting(base, top, cheap) : base;
    if (c == lo) return lo;  // cheap fails at lo + 1
    if (fits(c)) return c;   // cheap fails at c + 1, or c is hi
    hi = c - 1;
  }
  return lo;
}

}  // namespace detail

/// Whether the worst case of `simulate_worst_case` fits `cap`: a shared pool's peak blocks and
/// admission blocks within `usable_blocks` (no preemption, no admission delayed), a parent
/// arena's peak parents (`sim_peak_parents`) within `usable_blocks`, or own pools' peak bytes
/// within `budget_bytes`; and N no more than `search.max_running` (when set). With a
/// `budget`, the simulation stops when it is spent: then false, and `budget->exhausted`. A
/// workload past `cap` ends the probe at once (the others need not run).
inline bool simulated_fit(const engine_pools& pools, const allocation_policy& p, std::int64_t N, std::int64_t L,
                          std::int64_t s, std::int64_t B, const sim_capacity& cap, const sim_search& search = {},
                          sim_work_budget* budget = nullptr) {
  detail::fit_prober prober(pools, p, s, B, cap, search, budget);
  return prober.probe(N, L, false);
}

/// The largest N in [1, max_requests] (the simulator's 2^20 cap, and `search.max_running` when
/// set) for which `simulated_fit` holds, 0 if even one request does not fit: from `hint` (a
/// guess, e.g. the plan's answer; checked, not trusted) it doubles the step up while N fits, or
/// bisects below it when it does not. Assumes a fit is monotone in N. With a `budget`, a probe
/// over it counts as not fitting (the answer is then a lower bound, `budget->exhausted`). Each
/// probe has `simulated_fit`'s answer, found faster (`detail::fit_prober`): the workloads that
/// failed or set the peaks of an earlier probe first, each simulation stopping once past `cap`.
/// The critical workloads alone bracket the answer, and a whole probe confirms the bracket's top
/// only (`detail::largest_fitting_bracketed`). Throws as `simulate`.
inline std::int64_t max_requests_simulated(const engine_pools& pools, const allocation_policy& p, std::int64_t L,
                                           std::int64_t s, std::int64_t B, const sim_capacity& cap,
                                           const sim_search& search = {}, std::int64_t hint = 1,
                                           std::int64_t max_requests = std::int64_t{1} << 20,
                                           sim_work_budget* budget = nullptr) {
  if (search.max_running > 0) max_requests = std::min(max_requests, search.max_running);
  if (max_requests < 1) return 0;
  detail::fit_prober prober(pools, p, s, B, cap, search, budget);
  prober.keep_forks(detail::fork_kind::requests);
  const auto fits = [&](std::int64_t n) { return prober.fits(n, L); };
  const auto cheap = [&](std::int64_t n) { return prober.probe(n, L, true); };
  const std::int64_t start = std::clamp<std::int64_t>(hint, 1, max_requests);
  // Up from the hint when it fits (doubling the step), else below it.
  if (fits(start)) return detail::largest_fitting_bracketed(start, max_requests, true, cheap, fits);
  return detail::largest_fitting_bracketed(0, start - 1, false, cheap, fits);
}

/// The largest context L in [max(2, s), max_context] for which `starts(L)` holds (an engine's
/// startup check at max_model_len L; by default none) and N requests of L fit `cap`
/// (`simulated_fit`); 0 if even the smallest does not. A binary search: assumes both are monotone
/// in L. A `budget` bounds the work as in `max_requests_simulated`; probes as there. Throws as
/// `simulate`.
template <class Starts = bool (*)(std::int64_t)>
std::int64_t max_context_simulated(
    const engine_pools& pools, const allocation_policy& p, std::int64_t N, std::int64_t max_context, std::int64_t s,
    std::int64_t B, const sim_capacity& cap, const sim_search& search = {},
    Starts starts = [](std::int64_t /*L*/) { return true; }, sim_work_budget* budget = nullptr) {
  detail::fit_prober prober(pools, p, s, B, cap, search, budget);
  prober.keep_forks(detail::fork_kind::context);
  const auto fits = [&](std::int64_t L) { return starts(L) && prober.fits(N, L); };
  const std::int64_t lo = std::max<std::int64_t>(2, s);
  if (lo > max_context || !fits(lo)) return 0;
  return detail::largest_fitting(lo, max_context, fits);
}

}  // namespace dsv4::cache
