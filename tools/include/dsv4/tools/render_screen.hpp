// dsv4-cache-plan's default output: the operator screen (at most 22 lines of at most 100
// columns): the verdict first, with the one number that really fits (the engine's allocator
// replayed) and the limit that binds it, what was assumed for every input left out, N x L per
// GPU (the worst rank) and for the cluster, one request, the engine's own startup figure, the
// plan's bound (once, labelled), where the bytes go and one hint. `--summary` prints its
// one-line form. Sizes in GiB / MiB with thousands separators; the exact bytes are in --verbose
// and --json.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "dsv4/tools/planner_report.hpp"

namespace dsv4::cache::cli {

/// The screen's width: no line is longer (columns, ASCII).
inline constexpr std::size_t kScreenColumns = 100;
/// The screen's height: no screen has more lines.
inline constexpr std::size_t kScreenLines = 22;

/// `text` after a label padded to 9 columns, wrapped at `kScreenColumns` on a blank (the break
/// after ", " or "; " when there is one in the last third), continuation lines indented 9; at most
/// `max_lines` lines (the last ends in "..." when cut). Returns the lines, each ending in '\n'.
inline std::string screen_lines(std::string_view label, std::string_view text, int max_lines = 2) {
  constexpr std::size_t kIndent = 9;
  std::string out;
  std::string line = std::string(label) + " ";  // a long label keeps a blank
  if (line.size() < kIndent) line.resize(kIndent, ' ');
  std::string_view rest = text;
  for (int n = 1; !rest.empty(); ++n) {
    const std::size_t room = kScreenColumns - line.size();
    if (rest.size() <= room) {
      line += rest;
      rest = {};
    } else if (n == max_lines) {
      const std::size_t cut = rest.rfind(' ', room - 3);
      line += std::string(rest.substr(0, cut == std::string_view::npos || cut == 0 ? room - 3 : cut)) + "...";
      rest = {};
    } else {
      std::size_t cut = rest.rfind(' ', room);   // a blank within the room: it starts the next line
      std::size_t sep = std::string_view::npos;  // or after the last ", " / "; " in the room's last third
      for (const std::string_view mark : {std::string_view(", "), std::string_view("; ")}) {
        const std::size_t at = rest.rfind(mark, room - 1);
        if (at != std::string_view::npos && (sep == std::string_view::npos || at > sep)) sep = at;
      }
      if (sep != std::string_view::npos && sep + 1 >= room * 2 / 3) cut = sep + 1;
      if (cut == std::string_view::npos || cut == 0) cut = room;
      line += rest.substr(0, cut);
      rest.remove_prefix(cut);
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    line.assign(kIndent, ' ');
  }
  return out;
}

/// What one engine calls itself in a sentence ("vLLM", "tokenspeed", "SGLang").
inline std::string engine_title(const planner_result& r) { return engine_title_of(r.plan.options.policy); }

/// The engine line: its label and pool structure as the plan prices it.
inline std::string screen_engine_text(const planner_result& r) {
  const memory_plan& p = screen_plan(r);
  const std::string label = r.engine != nullptr ? engine_label(*r.engine) : std::string("engine");
  std::string s;
  const pool_structure_traits& t = traits_of(p.pools.structure);
  if (!t.summary.empty())
    s = label + ": " +
        fmt::format(fmt::runtime(t.summary), fmt::arg("block_bytes", thousands(p.pools.bytes_per_block)),
                    fmt::arg("swa_ratio", p.options.swa_full_tokens_ratio));
  else
    s = fmt::format("{}: one pool per group ({})", label,
                    p.options.pools == pools_choice::own ? "--pools own: not the engine's own structure"
                                                         : "the engine's own pools are not modelled for this model");
  if (p.options.role != deployment_role::colocated) s += fmt::format(", {} role", to_string(p.options.role));
  return s;
}

/// The engine's own startup figure, in its own words ("" when the plan is not in its pools).
inline std::string screen_engine_figure(const planner_result& r) {
  if (!r.report || !r.budget_bytes) return {};
  return r.report->startup.screen_figure;
}

/// The screen's "assumes" line: every input as planned, where an engine default was taken
/// saying whose ("async scheduling (vLLM's default), no MTP draft, max_num_seqs 1,024, ...").
inline std::string assumptions_text(const planner_result& r) {
  std::string s;
  for (const assumption& a : r.assumptions)
    if (!a.text.empty() && !(a.input == "gpu" && r.budget))  // the budget line names the GPU
      s += (s.empty() ? "" : ", ") + a.text;
  return s;
}

/// The longest context the plan's requests fit with the engine's allocator replayed (its
/// report's fit: the context search at N requests), "at least" where the search stopped at its
/// work limit; none where the replay did not run or found no context. The screen's context
/// follows it, as the verdict follows the replayed requests (one answer, issue 35).
struct replayed_context {
  std::int64_t tokens = 0;
  bool at_least = false;
};
inline std::optional<replayed_context> replayed_context_of(const planner_result& r) {
  if (!r.report || !r.report->fit || !r.report->fit->simulated || r.report->fit->max_context_tokens <= 0)
    return std::nullopt;
  return replayed_context{r.report->fit->max_context_tokens, r.report->fit->context_lower_bound};
}

/// The screen's budget line: the chain from the GPU to the KV budget per GPU, one line.
inline std::string budget_text(const budget_derivation& b) {
  if (!b.derived) return fmt::format("not derived from {}: {}; give --memory-gib", b.gpu->name, b.why_not);
  const kv_budget& c = b.chain;
  const auto sz = [](std::int64_t v) { return size_text(static_cast<std::uint64_t>(std::max<std::int64_t>(v, 0))); };
  if (b.fixed)
    return fmt::format("{} KV per GPU (--kv-cache-memory-bytes); weights {} of the {} {}", sz(c.kv_bytes),
                       sz(c.weights_bytes), b.gpu->name, sz(c.usable_bytes));
  return fmt::format("{} {} x {}{} - weights {} - reserve {} est. = {}", b.gpu->name, sz(c.gpu_bytes),
                     fraction_text(c.fraction), b.fraction_source == "flag" ? "" : " default", sz(c.weights_bytes),
                     sz(c.reserve_bytes), c.fits() ? sz(c.kv_bytes) : "no KV cache");
}

/// The lines of `text`.
inline std::size_t line_count(std::string_view text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

/// The screen's lines below the head, fitted to `kScreenLines`: the engine's startup figure
/// (labelled `engine_label`), the plan's bound, the breakdown (`why`, with its heading), the hint
/// and the footer naming the other outputs, as many as fit. When the whole would run longer, the
/// screen gives up, in this order, the blank line before the breakdown, the footer, the hint's
/// second line, the engine figure's and the bound's second lines, then the hint; the verdict, the
/// assumptions, the budget chain and the breakdown's parts always stay.
inline std::string fit_screen(const std::string& head, const std::string& engine_label, const std::string& fig,
                              const std::string& bound, const std::string& why, const std::string& hint) {
  static constexpr std::string_view kFooter =
      "(tables: --verbose or --layers / --groups / --ranks; exact bytes: --json; a picture: --svg FILE)\n";
  bool blank = true;
  bool footer = true;
  bool show_hint = !hint.empty();
  int hint_lines = 2;
  int fig_lines = 2;
  int bound_lines = 2;
  const auto compose = [&] {
    std::string s = head;
    if (!fig.empty()) s += screen_lines(engine_label, fig, fig_lines);
    if (!bound.empty()) s += screen_lines("bound", bound, bound_lines);
    if (blank) s += "\n";
    s += why;
    if (show_hint) s += screen_lines("hint", hint, hint_lines);
    if (footer) s += kFooter;
    return s;
  };
  std::string s = compose();
  const std::array<std::function<void()>, 6> give_up = {[&] { blank = false; },   [&] { footer = false; },
                                                        [&] { hint_lines = 1; },  [&] { fig_lines = 1; },
                                                        [&] { bound_lines = 1; }, [&] { show_hint = false; }};
  for (std::size_t i = 0; i < give_up.size() && line_count(s) > kScreenLines; ++i) {
    give_up[i]();
    s = compose();
  }
  return s;
}

/// The default output of dsv4-cache-plan (see the file comment).
inline std::string screen_text(const planner_result& r) {
  const plan_verdict v = verdict_of(r);
  const memory_plan& p = screen_plan(r);
  const model_config& m = r.model;
  const std::int64_t l = r.plan.options.context_tokens;
  std::string s = screen_lines("verdict:", verdict_line(v).substr(std::string_view("verdict: ").size()));
  s += screen_lines("model", fmt::format("{}: {} layers + {} MTP{}, indexer {}", m.name.view(), m.num_hidden_layers,
                                         m.num_nextn_predict_layers,
                                         m.num_nextn_predict_layers > 0 && !p.options.cache_mtp ? " (not cached)" : "",
                                         plan_indexer(p)));
  s += screen_lines("assumes", assumptions_text(r));
  if (r.budget) s += screen_lines("budget", budget_text(*r.budget));
  s += screen_lines("engine", screen_engine_text(r));
  // Per GPU: the worst rank's requests and bytes against the budget.
  const std::int64_t gpu_requests = p.options.requests;  // the worst rank's DP share
  std::string gpu =
      r.parallel ? fmt::format("rank {} of {} (the worst): ", r.worst.worst_rank, thousands(r.parallel->world_size()))
                 : std::string();
  gpu += fmt::format("{} x {} tokens take {}{}", thousands(gpu_requests), thousands(l), size_text(p.total_bytes),
                     r.budget_bytes && p.total_bytes > *r.budget_bytes ? " at the plan's worst case" : "");
  if (r.budget_bytes)
    gpu += p.total_bytes <= *r.budget_bytes
               ? fmt::format(" of {}, {} left", size_text(*r.budget_bytes), size_text(*r.budget_bytes - p.total_bytes))
           : v.fits  // the plan's bytes are its bound; the replayed peak is what the verdict follows
               ? fmt::format(", {} over the {} budget, a peak the replay never reaches",
                             size_text(p.total_bytes - *r.budget_bytes), size_text(*r.budget_bytes))
               : fmt::format(", over the {} budget by {}", size_text(*r.budget_bytes),
                             size_text(p.total_bytes - *r.budget_bytes));
  else
    gpu += r.budget && r.budget->derived ? " (no KV budget: the weights leave none)"
                                         : " (no budget given: --memory-gib, --gpu-memory-gib or --gpu)";
  s += screen_lines("per GPU", gpu);
  // The plan's own context answer, where the engine does not start at all with this budget.
  const std::string plan_alone =
      v.has_budget && !v.engine_starts ? " by the plan's bytes, but the engine does not start with this budget" : "";
  if (r.parallel) {
    const parallel_config& pc = *r.parallel;
    // SGLang's DP attention: the dp workers split the TP group's GPUs (pc.tp is its attention TP).
    std::string c =
        r.dp_attention
            ? fmt::format("tp {} (dp {} attention workers inside) x pp {}{} = {} GPUs", pc.tp * pc.dp, pc.dp, pc.pp,
                          pc.dcp > 1 ? fmt::format(", dcp {}", pc.dcp) : std::string(), thousands(r.gpus))
            : fmt::format("tp {} x dp {} x pp {}{} = {} GPUs", pc.tp, pc.dp, pc.pp,
                          pc.dcp > 1 ? fmt::format(", dcp {}", pc.dcp) : std::string(), thousands(r.gpus));
    if (const std::optional<replayed_context> rc = replayed_context_of(r))
      c += fmt::format("; {} request(s) fit up to {}{} tokens (replayed)", thousands(r.plan.options.requests),
                       rc->at_least ? "at least " : "", thousands(rc->tokens));
    else if (r.cluster_fit)
      c += fmt::format("; {} request(s) fit up to {} tokens{}", thousands(r.plan.options.requests),
                       thousands(r.cluster_fit->max_context_tokens), plan_alone);
    else {
      std::uint64_t all = 0;
      for (const rank_plan_result& rp : r.ranks) all += rp.plan.total_bytes;
      c += fmt::format(": {} x {} tokens take {} in all", thousands(r.plan.options.requests), thousands(l),
                       size_text(all));
    }
    s += screen_lines("cluster", c);
  } else if (const std::optional<replayed_context> rc = replayed_context_of(r)) {
    s += screen_lines("context",
                      fmt::format("{} request(s) fit up to {}{} tokens{}", thousands(r.plan.options.requests),
                                  rc->at_least ? "at least " : "", thousands(rc->tokens),
                                  rc->tokens >= m.max_position_embeddings ? " (the model's maximum)" : " (replayed)"));
  } else if (r.context_fit) {
    s += screen_lines("context",
                      fmt::format("{} request(s) fit up to {} tokens{}{}", thousands(r.plan.options.requests),
                                  thousands(r.context_fit->max_context_tokens),
                                  r.context_fit->limited_by_model ? " (the model's maximum)" : "", plan_alone));
  }
  if (p.holding_requests > 0) {
    const auto h = static_cast<std::uint64_t>(p.holding_requests);
    s += screen_lines("request", fmt::format("one of {} tokens: {} of rows ({} B/token), {} of the plan", thousands(l),
                                             size_text(p.ideal_bytes / h),
                                             thousands(std::llround(main_layer_bytes_per_context_token(p, m))),
                                             size_text(p.total_bytes / h)));
  }
  const std::string fig = screen_engine_figure(r);
  const std::string bound = bound_text(v);
  const std::string head = s;  // the lines above never shrink
  // Why: where this GPU's bytes go.
  const plan_breakdown b = breakdown_of(p);
  s = fmt::format("where the {} of this GPU's plan go:\n", size_text(b.total));
  const auto part = [&](std::uint64_t bytes, const std::string& what) {
    if (bytes == 0) return;
    const std::string size = size_text(bytes);
    std::string line = std::string(size.size() < 14 ? 14 - size.size() : 0, ' ') + size + "  " + what;
    if (line.size() > kScreenColumns) line = line.substr(0, kScreenColumns - 3) + "...";
    s += line + "\n";
  };
  part(b.context_rows, fmt::format("rows of context ({} x {} tokens in every full-history group)",
                                   thousands(p.holding_requests), thousands(l)));
  part(b.windows, "sliding windows and compressor-state rings (min(L, window) rows a request)");
  part(b.rounding, "page rounding (the pages a request's rows span, padded as their format pads them)");
  part(b.in_flight, fmt::format("in flight: a step's prompt pages (--prefill-chunk {}), the steps' tokens ahead",
                                thousands(p.options.prefill_chunk_tokens)));
  part(b.null_pages, "null pages (one per pool and layer)");
  part(b.engine, std::string(traits_of(p.pools.structure).overhead));
  const std::string hint = r.hint ? fmt::format("{} {} {} request{}, not {} ({})", r.hint->flag,
                                                r.hint->plan_bound ? "raises the plan's bound to" : "plans",
                                                thousands(r.hint->requests_then), r.hint->requests_then == 1 ? "" : "s",
                                                thousands(r.hint->requests_now), r.hint->why)
                                  : std::string();
  return fit_screen(head, fig.empty() ? std::string() : engine_title(r), fig, bound, s, hint);
}

/// --summary: the screen in one line, for a ticket.
inline std::string summary_line(const planner_result& r) {
  const plan_verdict v = verdict_of(r);
  const memory_plan& p = screen_plan(r);
  std::string s = fmt::format("{} {}", r.model.name.view(), r.engine != nullptr ? engine_label(*r.engine) : "");
  if (r.parallel) s += fmt::format(" tp{} dp{} pp{}", r.parallel->tp, r.parallel->dp, r.parallel->pp);
  s += fmt::format(": {} x {} tokens ", thousands(v.requests), thousands(v.context_tokens));
  if (!v.has_budget) return s + fmt::format("need {} per GPU (no budget given)\n", size_text(p.total_bytes));
  s += v.fits ? "FITS" : "DOES NOT FIT";
  // (a budget derived from --gpu may leave no KV cache at all: then no bytes to compare with)
  s += fmt::format(
      " ({}{} fit at once{}; limit: {}; the plan's bound {}; per GPU {} {})", v.max_requests_lower_bound ? ">= " : "",
      requests_text(v.max_requests), v.by_plan ? " by the plan's bound" : ", replayed", v.limit,
      requests_text(v.plan_max_requests), size_text(p.total_bytes),
      r.budget_bytes ? "of " + size_text(*r.budget_bytes) : std::string("with no KV budget: the weights leave none"));
  return s + "\n";
}

}  // namespace dsv4::cache::cli
