// dsv4-cache-plan --svg FILE: the plan as one SVG image a browser shows, 1,000 px wide, every text
// wrapped to stay on it (widths from `svg_text_width`, conservative for DejaVu Sans, the usual
// sans-serif). Top: the title (model, engine, verdict). Then one bar per group of the worst GPU's
// plan and one for the engine's share, each split by the causes of the screen's breakdown (rows of
// context, sliding windows and rings, page rounding, in flight, null pages; `breakdown_of` per
// group), labelled with its parts; the legend names only the causes and kinds present, in the
// screen's words. Below: the capacity curve of the budget under each modelled engine (max requests
// against context, 4k to the model's maximum, log scales from 1: no 0 tick), each labelled with the
// scheduling it assumes; an engine that refuses is a legend note; the plan's point and the largest
// N that fits at its context marked and labelled. Every bar is a <g class="bar"> with data-group,
// data-kind and data-bytes, its parts <rect class="part" data-cause data-bytes>; every curve a
// <polyline class="curve" data-engine>, its points in data-points ("L:N ..."); all text in <text>
// elements with an explicit font-size (units in the labels).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "dsv4/tools/planner_report.hpp"

namespace dsv4::cache::cli {

/// `s` with &, <, >, " and ' escaped, and bytes that are not printable ASCII as '?': the file
/// stays well-formed XML whatever a model name or path holds.
inline std::string xml_escape(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c < 0x20 || c >= 0x7F ? '?' : ch;
    }
  }
  return out;
}

/// The width in px of text `s` at `font_size`, an upper bound for DejaVu Sans (the sans-serif of
/// Debian's fontconfig and librsvg; narrower fonts fit too): per character, in em (DejaVu's widest
/// of the class in brackets), 1.0 for M W m @ % & (1.0), 0.84 for D G H N O Q U w and the
/// operators (0.838), 0.70 for the other capitals (0.698), 0.42 for the narrow ones: space,
/// punctuation, I J f i j l r t (0.411), 0.64 for the rest: small letters, digits, other signs
/// (0.636). Bytes that are not printable ASCII are written as '?' (0.64). Checked against the
/// rendered ink by tests/cli/svg_render_test.py.
inline double svg_text_width(std::string_view s, double font_size) {
  constexpr std::string_view kExtra = "MWm@%&";
  constexpr std::string_view kWide = "DGHNOQUw<=>+^~#";
  constexpr std::string_view kNarrow = " !'(),-./:;IJ[\\]fijlrt|";
  double em = 0;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7F)
      em += 0.64;
    else if (kExtra.find(ch) != std::string_view::npos)
      em += 1.0;
    else if (kWide.find(ch) != std::string_view::npos)
      em += 0.84;
    else if (kNarrow.find(ch) != std::string_view::npos)
      em += 0.42;
    else if (ch >= 'A' && ch <= 'Z')
      em += 0.70;
    else
      em += 0.64;
  }
  return em * font_size;
}

/// `text` in lines of at most `width` px at `font_size` (`svg_text_width`), broken at spaces (a
/// word wider than a line is cut); at most `max_lines` lines (0: any), the last ending "..." when
/// cut short.
inline std::vector<std::string> svg_wrap(std::string_view text, double font_size, double width,
                                         std::size_t max_lines = 0) {
  std::vector<std::string> lines;
  std::string line;
  const auto fits = [&](std::string_view s) { return svg_text_width(s, font_size) <= width; };
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = text.find(' ', i);
    if (j == std::string_view::npos) j = text.size();
    std::string word(text.substr(i, j - i));
    i = j + 1;
    if (word.empty()) continue;
    const std::string joined = line.empty() ? word : line + " " + word;
    if (fits(joined)) {
      line = joined;
      continue;
    }
    if (!line.empty()) lines.push_back(line);
    line.clear();
    while (!fits(word)) {  // a word wider than a line: cut it
      std::size_t n = word.size();
      while (n > 1 && !fits(std::string_view(word).substr(0, n))) --n;
      lines.push_back(word.substr(0, n));
      word.erase(0, n);
    }
    line = word;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  if (max_lines > 0 && lines.size() > max_lines) {
    lines.resize(max_lines);
    std::string& last = lines.back();
    while (!last.empty() && !fits(last + "...")) last.pop_back();
    last += "...";
  }
  return lines;
}

/// The SVG's colors: one per cause of the breakdown (rows of context, sliding windows and rings,
/// page rounding, in flight, null pages, the engine's share) and one per curve engine.
inline constexpr std::array<std::string_view, 6> kSvgCauseColors = {"#1f77b4", "#17becf", "#bcbd22",
                                                                    "#ff7f0e", "#8c564b", "#7f7f7f"};
inline constexpr std::array<std::string_view, 3> kSvgCurveColors = {"#d62728", "#2ca02c", "#9467bd"};

/// The causes of `plan_breakdown`, in the screen's order: the JSON key (without "_bytes"), the
/// short name a bar's label gives it, and the screen's line.
struct svg_cause {
  std::string_view key;
  std::string name;
  std::string text;
};

inline std::array<svg_cause, 6> svg_causes(const memory_plan& p) {
  const pool_structure_traits& t = traits_of(p.pools.structure);
  return {{
      {"context_rows", "rows of context",
       fmt::format("rows of context ({} x {} tokens in every full-history group)", thousands(p.holding_requests),
                   thousands(p.options.context_tokens))},
      {"window", "sliding windows and rings",
       "sliding windows and compressor-state rings (min(L, window) rows a request)"},
      {"page_rounding", "page rounding",
       "page rounding (the pages a request's rows span, padded as their format pads them)"},
      {"in_flight", "in flight (prompt pages)",
       fmt::format("in flight: a step's prompt pages (--prefill-chunk {}), the steps' tokens ahead",
                   thousands(p.options.prefill_chunk_tokens))},
      {"null_page", "null pages", "null pages (one per pool and layer)"},
      {"engine_structure", std::string(t.title), std::string(t.overhead)},
  }};
}

/// The parts of breakdown `b` in the order of `svg_causes`.
inline std::array<std::uint64_t, 6> svg_parts(const plan_breakdown& b) {
  return {b.context_rows, b.windows, b.rounding, b.in_flight, b.null_pages, b.engine};
}

/// The SVG document of report `r` (its curves drawn when `r.curves` holds them).
inline std::string plan_svg(const planner_result& r) {
  constexpr int kWidth = 1000;
  constexpr double kMargin = 20;
  constexpr double kRight = kWidth - kMargin;  // no text box ends beyond it
  constexpr double kLine = 15;                 // line height of 12-px text
  const memory_plan& p = screen_plan(r);
  const plan_verdict v = verdict_of(r);
  const std::array<svg_cause, 6> causes = svg_causes(p);
  std::string s;
  auto out = std::back_inserter(s);
  // One text element; `x` its anchor.
  const auto text = [&](double x, double y, std::string_view t, double size, std::string_view anchor = "start",
                        std::string_view attrs = "") {
    fmt::format_to(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{:g}\"{}{}>{}</text>\n", x, y, size,
                   anchor == "start" ? std::string() : fmt::format(" text-anchor=\"{}\"", anchor),
                   attrs.empty() ? std::string() : " " + std::string(attrs), xml_escape(t));
  };
  // A wrapped paragraph from baseline `y` at `x`, `width` px wide; returns the baseline after it.
  const auto paragraph = [&](double x, double y, std::string_view t, double size, double width,
                             std::string_view attrs = "", std::size_t max_lines = 0) {
    for (const std::string& line : svg_wrap(t, size, width, max_lines)) {
      text(x, y, line, size, "start", attrs);
      y += size + 3;
    }
    return y;
  };
  double y = 24;
  const std::string title =
      fmt::format("{}, {}: {}", r.model.name.view(), r.engine != nullptr ? engine_label(*r.engine) : "",
                  verdict_line(v).substr(std::string_view("verdict: ").size()));
  y = paragraph(kMargin, y, title, 15, kRight - kMargin, "class=\"title\"");
  // ---- bytes per group on the worst GPU, split by cause ----
  y += 10;
  y = paragraph(kMargin, y,
                fmt::format("Bytes per group, per GPU{} (total {})",
                            r.parallel ? fmt::format(" (rank {}, the worst)", r.worst.worst_rank) : std::string(),
                            size_text(p.total_bytes)),
                13, kRight - kMargin);
  struct bar_row {
    std::string name;
    std::string_view kind;
    std::array<std::uint64_t, 6> parts{};
    std::uint64_t bytes = 0;
  };
  std::vector<bar_row> rows;
  bool any_replay = false;
  std::array<std::uint64_t, 6> cause_sum{};
  for (int gi = 0; gi < p.num_groups; ++gi) {
    const group_plan& g = p.groups[static_cast<std::size_t>(gi)];
    const bool replay = g.spec.prefix == prefix_reuse::replay;
    any_replay = any_replay || replay;
    bar_row row{std::string(to_string(g.spec.id)) + (replay ? " (replay)" : ""), replay ? "replay" : "persist",
                svg_parts(breakdown_of(p, gi))};
    rows.push_back(row);
  }
  std::uint64_t groups_bytes = 0;
  for (bar_row& row : rows) {
    for (std::size_t k = 0; k < row.parts.size(); ++k) {
      row.bytes += row.parts[k];
      cause_sum[k] += row.parts[k];
    }
    groups_bytes += row.bytes;
  }
  bar_row engine_row{causes[5].name, "engine", {}};
  engine_row.parts[5] = p.total_bytes > groups_bytes ? p.total_bytes - groups_bytes : 0;
  engine_row.bytes = engine_row.parts[5];
  cause_sum[5] = engine_row.parts[5];
  rows.push_back(engine_row);
  double name_width = 0;
  std::uint64_t widest = 1;
  for (const bar_row& row : rows) {
    name_width = std::max(name_width, svg_text_width(row.name, 12));
    widest = std::max(widest, row.bytes);
  }
  const double bar_x = kMargin + name_width + 8;
  const double bar_max = std::clamp(kRight - bar_x - 330, 120.0, 300.0);
  const double label_x = bar_x + bar_max + 8;
  y += 4;
  for (const bar_row& row : rows) {
    std::string label = size_text(row.bytes);
    std::vector<std::string> named;
    for (std::size_t k = 0; k < row.parts.size(); ++k)
      if (row.parts[k] > 0) named.push_back(fmt::format("{} {}", size_text(row.parts[k]), causes[k].name));
    if (named.size() == 1)
      label += ": " + causes[static_cast<std::size_t>(std::find_if(row.parts.begin(), row.parts.end(),
                                                                   [](std::uint64_t b) { return b > 0; }) -
                                                      row.parts.begin())]
                          .name;
    else if (named.size() > 1)
      label += fmt::format(" = {}", fmt::join(named, " + "));
    const std::vector<std::string> lines = svg_wrap(label, 12, kRight - label_x);
    text(bar_x - 6, y + 13, row.name, 12, "end");
    fmt::format_to(out, "<g class=\"bar\" data-group=\"{}\" data-kind=\"{}\" data-bytes=\"{}\">\n",
                   xml_escape(row.name), row.kind, row.bytes);
    std::uint64_t before = 0;
    bool drawn = false;
    for (std::size_t k = 0; k < row.parts.size(); ++k) {
      if (row.parts[k] == 0) continue;
      const double x0 = bar_x + static_cast<double>(before) / static_cast<double>(widest) * bar_max;
      before += row.parts[k];
      const double x1 = bar_x + static_cast<double>(before) / static_cast<double>(widest) * bar_max;
      fmt::format_to(out,
                     "<rect class=\"part\" data-cause=\"{}\" data-bytes=\"{}\" x=\"{:.2f}\" y=\"{:.1f}\" "
                     "width=\"{:.2f}\" height=\"18\" fill=\"{}\"/>\n",
                     causes[k].key, row.parts[k], x0, y, std::max(x1 - x0, drawn ? 0.0 : 1.0), kSvgCauseColors[k]);
      drawn = true;
    }
    if (!drawn)  // nothing: a hairline in the engine's color, 0 bytes
      fmt::format_to(out,
                     "<rect class=\"part\" data-cause=\"{}\" data-bytes=\"0\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"1\" "
                     "height=\"18\" fill=\"{}\"/>\n",
                     causes[5].key, bar_x, y, kSvgCauseColors[5]);
    s += "</g>\n";
    double ly = y + 13;
    for (const std::string& line : lines) {
      text(label_x, ly, line, 12);
      ly += kLine;
    }
    y += std::max(26.0, kLine * static_cast<double>(lines.size()) + 11);
  }
  // The legend: the causes present, as the screen's breakdown says them, and the replay kind
  // where the model has a replay group.
  y += 12;
  for (std::size_t k = 0; k < causes.size(); ++k) {
    if (cause_sum[k] == 0) continue;
    fmt::format_to(
        out,
        "<rect class=\"swatch\" data-cause=\"{}\" x=\"20\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n",
        causes[k].key, y - 10, kSvgCauseColors[k]);
    y = paragraph(38, y, fmt::format("{}  {}", size_text(cause_sum[k]), causes[k].text), 12, kRight - 38,
                  fmt::format("class=\"cause\" data-cause=\"{}\"", causes[k].key));
  }
  if (any_replay)
    y = paragraph(38, y,
                  "(replay): a prefix cache rebuilds the group's pages from the last window's tokens; every other "
                  "group's pages persist (a prefix cache stores them)",
                  12, kRight - 38);
  // ---- capacity curves (log2 context on x, log10 requests on y, from 1) ----
  y += 14;
  if (r.curves.empty()) {
    y = paragraph(kMargin, y, "no budget given (--memory-gib or --gpu-memory-gib): no capacity curve", 12,
                  kRight - kMargin);
  } else {
    y = paragraph(
        kMargin, y,
        fmt::format("Max requests against context{} (the plan's bound under each engine)",
                    r.budget_bytes ? fmt::format(", {} per GPU{}", size_text(*r.budget_bytes),
                                                 r.parallel ? fmt::format(", {} GPUs", r.parallel->world_size()) : "")
                                   : std::string()),
        13, kRight - kMargin);
    constexpr double kPlotX = 130;
    constexpr double kPlotW = kRight - kPlotX - 20;  // room for the last tick's label
    constexpr double kPlotH = 280;
    const double plot_y = y + 4;
    const double bottom = plot_y + kPlotH;
    constexpr std::int64_t kAny = std::numeric_limits<std::int64_t>::max();
    std::int64_t top = 1;
    for (const capacity_curve& c : r.curves)
      for (const auto& [l, n] : c.points)
        if (n != kAny) top = std::max(top, n);
    if (v.has_budget) {
      top = std::max(top, v.requests);
      if (v.max_requests != kAny) top = std::max(top, v.max_requests);
    }
    const double decades = std::clamp(std::ceil(std::log10(static_cast<double>(top)) - 1e-9), 1.0, 18.0);
    const double lowest = v.has_budget && v.context_tokens < 4096
                              ? std::floor(std::log2(static_cast<double>(std::max<std::int64_t>(v.context_tokens, 1))))
                              : 12.0;
    const double x0 = lowest;
    const double x1 =
        std::max({x0 + 1, std::log2(static_cast<double>(r.model.max_position_embeddings)),
                  v.has_budget ? std::log2(static_cast<double>(std::max<std::int64_t>(v.context_tokens, 1))) : 0.0});
    const auto px = [&](std::int64_t l) {
      return kPlotX + (std::log2(static_cast<double>(l)) - x0) / (x1 - x0) * kPlotW;
    };
    const auto py = [&](std::int64_t n) {  // n >= 1; "any number" at the top
      const double d = n == kAny ? decades : std::log10(static_cast<double>(std::max<std::int64_t>(n, 1)));
      return bottom - std::min(d, decades) / decades * kPlotH;
    };
    fmt::format_to(out,
                   "<rect class=\"plot\" x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" fill=\"none\" "
                   "stroke=\"#000000\"/>\n",
                   kPlotX, plot_y, kPlotW, kPlotH);
    double tick_width = 0;  // the widest tick label: the axis title goes left of it
    for (int d = 0; d <= static_cast<int>(decades); ++d) {
      const auto n = static_cast<std::int64_t>(std::llround(std::pow(10.0, d)));
      tick_width = std::max(tick_width, svg_text_width(thousands(n), 12));
      fmt::format_to(out, "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#000000\"/>\n",
                     kPlotX - 4, kPlotX, py(n));
      text(kPlotX - 6, py(n) + 4, thousands(n), 12, "end", "class=\"tick-y\"");
    }
    std::int64_t first_tick = 4096;
    while (static_cast<double>(first_tick) / 4 >= std::exp2(x0) - 0.5) first_tick /= 4;
    // (no tick past 2^62: a config's max_position_embeddings may be near 2^63, and 4 x l overflows)
    for (std::int64_t l = first_tick; static_cast<double>(l) <= std::exp2(x1) + 0.5;
         l = l <= std::numeric_limits<std::int64_t>::max() / 4 ? l * 4 : std::numeric_limits<std::int64_t>::max()) {
      if (l == std::numeric_limits<std::int64_t>::max()) break;
      fmt::format_to(out, "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#000000\"/>\n",
                     px(l), bottom, bottom + 4);
      text(px(l), bottom + 19,
           l >= 1048576 && l % 1048576 == 0 ? fmt::format("{}M", l / 1048576)
           : l >= 1024                      ? fmt::format("{}k", l / 1024)
                                            : thousands(l),
           12, "middle", "class=\"tick-x\"");
    }
    text(kPlotX + kPlotW / 2, bottom + 37, "context (tokens per request, log scale)", 12, "middle");
    const double ay = plot_y + kPlotH / 2;
    const double ax = std::max(14.0, std::min(40.0, kPlotX - 6 - tick_width - 8));
    fmt::format_to(out,
                   "<text x=\"{0:.1f}\" y=\"{1:.1f}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 "
                   "{0:.1f} {1:.1f})\">max requests (log scale)</text>\n",
                   ax, ay);
    y = bottom + 61;
    for (std::size_t k = 0; k < r.curves.size(); ++k) {
      const capacity_curve& c = r.curves[k];
      const std::string_view color = kSvgCurveColors[k % kSvgCurveColors.size()];
      fmt::format_to(out,
                     "<line x1=\"20\" x2=\"40\" y1=\"{0:.1f}\" y2=\"{0:.1f}\" stroke=\"{1}\" stroke-width=\"2\"{2}/>\n",
                     y - 4, color, c.points.empty() ? " stroke-dasharray=\"3 3\"" : "");
      if (c.points.empty()) {  // the engine's refusal: a legend note, the plot left to the others
        y = paragraph(46, y, fmt::format("{}: no curve: {}", c.engine, c.why_not), 12, kRight - 46,
                      fmt::format("class=\"refusal\" data-engine=\"{}\" fill=\"{}\"", xml_escape(c.engine), color), 4);
        continue;
      }
      std::string pts;
      std::string data;
      std::int64_t none_from = 0;
      for (const auto& [l, n] : c.points) {
        data += fmt::format("{}:{} ", l, n == kAny ? -1 : n);
        if (n >= 1) {
          pts += fmt::format("{:.1f},{:.1f} ", px(l), py(n));
          none_from = 0;
        } else if (none_from == 0) {
          none_from = l;
        }
      }
      data.pop_back();
      if (!pts.empty()) pts.pop_back();
      std::string mode = fmt::format("{}", fmt::join(c.assumes, ", "));
      mode = (c.policy.scheduler == scheduler_kind::running_first ? "mixed batches" : "prefill-first batches") +
             (mode.empty() ? std::string() : ", " + mode);
      fmt::format_to(out,
                     "<polyline class=\"curve\" data-engine=\"{}\" data-assumes=\"{}\" data-points=\"{}\" "
                     "points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                     xml_escape(c.engine), xml_escape(mode), data, pts, color);
      if (std::count(pts.begin(), pts.end(), ',') == 1)  // one point: a dot, as a line of one point shows nothing
        fmt::format_to(out, "<circle class=\"curve-dot\" cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>\n",
                       pts.substr(0, pts.find(',')), pts.substr(pts.find(',') + 1), color);
      std::string legend = fmt::format("{} ({}): {} at {} tokens, {} at {}", c.label, mode,
                                       requests_text(c.points.front().second), thousands(c.points.front().first),
                                       requests_text(c.points.back().second), thousands(c.points.back().first));
      if (none_from > 0) legend += fmt::format("; none fit from {} tokens", thousands(none_from));
      y = paragraph(46, y, legend, 12, kRight - 46,
                    fmt::format("class=\"curve-label\" data-engine=\"{}\" fill=\"{}\"", xml_escape(c.engine), color));
    }
    if (v.has_budget) {
      const double cx = px(v.context_tokens);
      // The plan's point: N x L as asked.
      fmt::format_to(out,
                     "<circle class=\"plan-point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"none\" "
                     "stroke=\"#000000\" stroke-width=\"2\"/>\n",
                     cx, py(v.requests));
      fmt::format_to(out,
                     "<circle cx=\"30\" cy=\"{:.1f}\" r=\"5\" fill=\"none\" stroke=\"#000000\" stroke-width=\"2\"/>\n",
                     y - 4);
      y = paragraph(46, y,
                    fmt::format("the plan: {} x {} tokens, as asked ({})", thousands(v.requests),
                                thousands(v.context_tokens), v.fits ? "FITS" : "DOES NOT FIT"),
                    12, kRight - 46);
      // The largest N that fits at L: the verdict's headline (a cross on the axis when none fits).
      const std::string n_text = (v.max_requests_lower_bound ? "at least " : "") + requests_text(v.max_requests);
      if (v.max_requests >= 1) {
        const double my = py(v.max_requests);
        fmt::format_to(out,
                       "<polygon class=\"max-fit\" data-requests=\"{}\" data-context=\"{}\" points=\"{:.1f},{:.1f} "
                       "{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"#000000\"/>\n",
                       v.max_requests, v.context_tokens, cx, my - 6, cx + 6, my, cx, my + 6, cx - 6, my);
        const std::string tag = "largest N: " + n_text;
        const double w = svg_text_width(tag, 11);
        const bool right = cx + 10 + w <= kPlotX + kPlotW - 2;
        text(right ? cx + 10 : std::max(cx - 10, kPlotX + 2 + w), std::clamp(my - 8, plot_y + 13, bottom - 4), tag, 11,
             right ? "start" : "end", "class=\"max-fit-label\"");
      } else {
        fmt::format_to(out,
                       "<path class=\"max-fit\" data-requests=\"0\" data-context=\"{}\" d=\"M{:.1f},{:.1f} l10,10 "
                       "m0,-10 l-10,10\" stroke=\"#000000\" stroke-width=\"2\"/>\n",
                       v.context_tokens, cx - 5, bottom - 5);
        text(std::clamp(cx, kPlotX + 40, kPlotX + kPlotW - 40), bottom - 10, "none fits", 11, "middle",
             "class=\"max-fit-label\"");
      }
      fmt::format_to(out, "<polygon points=\"30,{:.1f} 36,{:.1f} 30,{:.1f} 24,{:.1f}\" fill=\"#000000\"/>\n", y - 10,
                     y - 4, y + 2, y - 4);
      y = paragraph(46, y,
                    fmt::format("largest N that fits at {} tokens: {} ({}; limit: {})", thousands(v.context_tokens),
                                v.max_requests >= 1 ? n_text : std::string("none"),
                                v.by_plan ? "the plan's bound" : "replayed", v.limit_text),
                    12, kRight - 46);
    }
  }
  const int height = static_cast<int>(std::ceil(y + 6));
  return fmt::format(
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
             "font-family=\"sans-serif\" font-size=\"12\">\n"
             "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n",
             kWidth, height) +
         s + "</svg>\n";
}

}  // namespace dsv4::cache::cli
