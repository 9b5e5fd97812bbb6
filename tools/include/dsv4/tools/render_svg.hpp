// dsv4-cache-plan --svg FILE: the plan as one SVG image a browser shows. Left: one horizontal
// bar per group of the worst GPU's plan (bytes, colored persist or replay by what a prefix
// cache does with its pages), and a bar for what the engine's pool structure adds. Right: the
// capacity curve of the budget under each modelled engine (max requests against context, 4k to
// the model's maximum, log scales), the plan's point marked. Every bar is a <rect class="bar">
// with data-group and data-bytes; every curve a <polyline class="curve" data-engine>, its
// points in data-points ("L:N ..."); all text in <text> elements (units in the labels).
#pragma once

#include <algorithm>
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

/// The SVG's colors: persist bars, replay bars, the engine's share, and one per curve engine.
inline constexpr std::string_view kSvgPersist = "#1f77b4";
inline constexpr std::string_view kSvgReplay = "#ff7f0e";
inline constexpr std::string_view kSvgEngine = "#7f7f7f";
inline constexpr std::array<std::string_view, 3> kSvgCurveColors = {"#d62728", "#2ca02c", "#9467bd"};

/// The SVG document of report `r` (its curves drawn when `r.curves` holds them).
inline std::string plan_svg(const planner_result& r) {
  constexpr int kWidth = 1000;
  constexpr int kBarX = 250;  // bars start here; labels to their left
  constexpr int kBarMax = 230;
  constexpr int kTop = 70;
  constexpr int kRow = 26;
  constexpr int kPlotX = 610;  // the capacity plot
  constexpr int kPlotW = 360;
  constexpr int kPlotY = 70;
  constexpr int kPlotH = 260;
  const memory_plan& p = screen_plan(r);
  const plan_verdict v = verdict_of(r);
  const plan_breakdown b = breakdown_of(p);
  std::string s;
  auto out = std::back_inserter(s);
  const int rows = p.num_groups + 1;
  const int height = std::max(kTop + rows * kRow + 90,
                              kPlotY + kPlotH + 64 + 16 * static_cast<int>(std::max<std::size_t>(r.curves.size(), 1)));
  fmt::format_to(out,
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                 "font-family=\"sans-serif\" font-size=\"12\">\n"
                 "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n",
                 kWidth, height);
  const std::string title =
      fmt::format("{}, {}: {}", r.model.name.view(), r.engine != nullptr ? engine_label(*r.engine) : "",
                  verdict_line(v).substr(std::string_view("verdict: ").size()));
  fmt::format_to(out, "<text class=\"title\" x=\"20\" y=\"26\" font-size=\"15\">{}</text>\n", xml_escape(title));
  // ---- left: bytes per group on the worst GPU ----
  fmt::format_to(out, "<text x=\"20\" y=\"52\" font-size=\"13\">Bytes per group, per GPU{} (total {})</text>\n",
                 r.parallel ? fmt::format(" (rank {}, the worst)", r.worst.worst_rank) : std::string(),
                 xml_escape(size_text(p.total_bytes)));
  std::uint64_t widest = std::max<std::uint64_t>(b.engine, 1);
  for (const group_plan& g : p) widest = std::max(widest, g.bytes);
  const auto bar = [&](int i, std::string_view name, std::uint64_t bytes, std::string_view color,
                       std::string_view kind) {
    const int y = kTop + i * kRow;
    const double w = static_cast<double>(bytes) / static_cast<double>(widest) * kBarMax;
    fmt::format_to(out, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kBarX - 6, y + 14, xml_escape(name));
    fmt::format_to(out,
                   "<rect class=\"bar\" data-group=\"{}\" data-kind=\"{}\" data-bytes=\"{}\" x=\"{}\" y=\"{}\" "
                   "width=\"{:.1f}\" height=\"18\" fill=\"{}\"/>\n",
                   xml_escape(name), kind, bytes, kBarX, y, std::max(w, 1.0), color);
    fmt::format_to(out, "<text x=\"{:.1f}\" y=\"{}\">{}</text>\n", kBarX + std::max(w, 1.0) + 4, y + 14,
                   xml_escape(size_text(bytes)));
  };
  for (int gi = 0; gi < p.num_groups; ++gi) {
    const group_plan& g = p.groups[static_cast<std::size_t>(gi)];
    const bool replay = g.spec.prefix == prefix_reuse::replay;
    bar(gi, to_string(g.spec.id), g.bytes, replay ? kSvgReplay : kSvgPersist, replay ? "replay" : "persist");
  }
  std::uint64_t groups_bytes = 0;
  for (const group_plan& g : p) groups_bytes += g.bytes;
  bar(p.num_groups, "engine pool structure", p.total_bytes > groups_bytes ? p.total_bytes - groups_bytes : 0,
      kSvgEngine, "engine");
  const int legend_y = kTop + rows * kRow + 16;
  fmt::format_to(out,
                 "<rect x=\"20\" y=\"{0}\" width=\"12\" height=\"12\" fill=\"{1}\"/>"
                 "<text x=\"36\" y=\"{2}\">persist (a prefix cache stores the pages)</text>\n"
                 "<rect x=\"20\" y=\"{3}\" width=\"12\" height=\"12\" fill=\"{4}\"/>"
                 "<text x=\"36\" y=\"{5}\">replay (rebuilt from the last window's tokens)</text>\n"
                 "<rect x=\"20\" y=\"{6}\" width=\"12\" height=\"12\" fill=\"{7}\"/>"
                 "<text x=\"36\" y=\"{8}\">the engine's padding, null pages and startup need</text>\n",
                 legend_y, kSvgPersist, legend_y + 10, legend_y + 18, kSvgReplay, legend_y + 28, legend_y + 36,
                 kSvgEngine, legend_y + 46);
  // ---- right: capacity curves (log2 context on x, log10 requests on y) ----
  fmt::format_to(out, "<text x=\"{}\" y=\"52\" font-size=\"13\">Max requests against context{}</text>\n", kPlotX - 60,
                 r.budget_bytes ? fmt::format(", {} per GPU{}", xml_escape(size_text(*r.budget_bytes)),
                                              r.parallel ? fmt::format(", {} GPUs", r.parallel->world_size()) : "")
                                : std::string());
  fmt::format_to(out,
                 "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#000000\"/>\n"
                 "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">context (tokens per request, log scale)</text>\n"
                 "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 {} {})\">max requests "
                 "(log scale)</text>\n",
                 kPlotX, kPlotY, kPlotW, kPlotH, kPlotX + kPlotW / 2, kPlotY + kPlotH + 34, kPlotX - 50,
                 kPlotY + kPlotH / 2, kPlotX - 50, kPlotY + kPlotH / 2);
  std::int64_t top = 1;
  for (const capacity_curve& c : r.curves)
    for (const auto& [l, n] : c.points)
      if (n != std::numeric_limits<std::int64_t>::max()) top = std::max(top, n);
  if (v.has_budget) top = std::max(top, v.requests);
  const double decades = std::max(1.0, std::ceil(std::log10(static_cast<double>(top) + 1)));
  const double x0 = std::log2(4096.0);
  const double x1 = std::max(x0 + 1, std::log2(static_cast<double>(r.model.max_position_embeddings)));
  const auto px = [&](std::int64_t l) {
    return kPlotX + (std::log2(static_cast<double>(l)) - x0) / (x1 - x0) * kPlotW;
  };
  const auto py = [&](std::int64_t n) {  // 0 requests on the axis; "any number" at the top
    const double d = n == std::numeric_limits<std::int64_t>::max() ? decades
                     : n <= 0                                      ? 0.0
                                                                   : std::log10(static_cast<double>(n) + 1);
    return kPlotY + kPlotH - std::min(d, decades) / decades * kPlotH;
  };
  for (int d = 0; d <= static_cast<int>(decades); ++d) {
    const std::int64_t n = d == 0 ? 0 : static_cast<std::int64_t>(std::pow(10.0, d));
    fmt::format_to(out, "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kPlotX - 4, py(n) + 4,
                   thousands(n));
  }
  for (std::int64_t l = 4096; static_cast<double>(l) <= std::exp2(x1) + 0.5; l *= 4)
    fmt::format_to(out, "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(l), kPlotY + kPlotH + 16,
                   l >= 1048576 ? fmt::format("{}M", l / 1048576) : fmt::format("{}k", l / 1024));
  int legend = 0;
  for (std::size_t k = 0; k < r.curves.size(); ++k) {
    const capacity_curve& c = r.curves[k];
    const std::string_view color = kSvgCurveColors[k % kSvgCurveColors.size()];
    const int ly = kPlotY + kPlotH + 54 + legend++ * 16;
    if (c.points.empty()) {
      std::string why = c.why_not.size() > 64 ? c.why_not.substr(0, 61) + "..." : c.why_not;
      fmt::format_to(out, "<text x=\"{}\" y=\"{}\" fill=\"{}\">{}: no curve ({})</text>\n", kPlotX - 60, ly, color,
                     xml_escape(c.engine), xml_escape(why));
      continue;
    }
    std::string pts;
    std::string data;
    for (const auto& [l, n] : c.points) {
      pts += fmt::format("{:.1f},{:.1f} ", px(l), py(n));
      data += fmt::format("{}:{} ", l, n == std::numeric_limits<std::int64_t>::max() ? -1 : n);
    }
    pts.pop_back();
    data.pop_back();
    fmt::format_to(out,
                   "<polyline class=\"curve\" data-engine=\"{}\" data-points=\"{}\" points=\"{}\" fill=\"none\" "
                   "stroke=\"{}\" stroke-width=\"2\"/>\n",
                   xml_escape(c.engine), data, pts, color);
    fmt::format_to(out, "<text x=\"{}\" y=\"{}\" fill=\"{}\">{}: {} at {} tokens, {} at {}</text>\n", kPlotX - 60, ly,
                   color, xml_escape(c.engine), requests_text(c.points.front().second),
                   thousands(c.points.front().first), requests_text(c.points.back().second),
                   thousands(c.points.back().first));
  }
  if (r.curves.empty())
    fmt::format_to(out, "<text x=\"{}\" y=\"{}\">no budget given (--memory-gib): no capacity curve</text>\n",
                   kPlotX + 10, kPlotY + kPlotH / 2);
  if (v.has_budget && v.context_tokens >= 4096) {
    fmt::format_to(out,
                   "<circle class=\"plan-point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"none\" stroke=\"#000000\" "
                   "stroke-width=\"2\"/>\n<text x=\"{:.1f}\" y=\"{:.1f}\">the plan: {} x {}</text>\n",
                   px(v.context_tokens), py(v.requests), px(v.context_tokens) + 8, py(v.requests) - 8,
                   thousands(v.requests), thousands(v.context_tokens));
  }
  s += "</svg>\n";
  return s;
}

}  // namespace dsv4::cache::cli
