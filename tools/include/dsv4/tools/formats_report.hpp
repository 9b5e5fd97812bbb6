// dsv4-cache-layout formats: every registered row format's sizes, page rule and row offsets, as
// JSON and as a table (the CLI's `formats` and the Python package's `formats()`).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/tools/messages.hpp"

namespace dsv4::tools {

/// `formats` subcommand inputs.
struct formats_args {
  std::int64_t rows = 64;  ///< N, rows per page
  bool json = false;
};

namespace layout_detail {

/// Row bytes 0: the row size is bound per group (fp32_state), so sizes and offsets are not fixed.
constexpr bool bound_per_group(const cache::format_layout& l) { return l.row_bytes == 0; }

/// "split_padded/576" for a padded split page, else the rule's name.
inline std::string page_rule_text(const cache::format_layout& l) {
  std::string s(cache::to_string(l.rule));
  if (l.rule == cache::page_rule::split_padded) s += fmt::format("/{}", l.alignment);
  return s;
}

/// The row whose offsets `formats` prints: row 1, or row 0 in a page of one row.
constexpr std::int64_t shown_row(std::int64_t rows) { return std::min<std::int64_t>(1, rows - 1); }

/// A table: a header and rows of cells; columns padded to their widest cell, numbers (the
/// columns in `right`) right-aligned, the last column not padded.
inline std::string render_table(const std::vector<std::string>& header,
                                const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::vector<std::size_t> width(header.size(), 0);
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::string s;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) l += "  ";
      if (c + 1 == cells.size() && !right[c])
        l += cells[c];
      else if (right[c])
        l += fmt::format("{:>{}}", cells[c], width[c]);
      else
        l += fmt::format("{:<{}}", cells[c], width[c]);
    }
    s += l + "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
  return s;
}

}  // namespace layout_detail

/// `formats` as a JSON list, one object per registered format in registry order.
inline nlohmann::ordered_json formats_json(const formats_args& a) {
  using json = nlohmann::ordered_json;  // keys in the documented order
  using layout_detail::bound_per_group;
  json list = json::array();
  for (const cache::format_layout& l : cache::kFormats) {
    const bool bound = bound_per_group(l);
    auto offset = [&](std::int64_t off) { return bound || off < 0 ? json(nullptr) : json(off); };
    json row1 = nullptr;  // a page of one row has no row 1
    if (a.rows > 1)
      row1 = {{"data", offset(l.data_offset(a.rows, 1))},
              {"scales", offset(l.scale_offset(a.rows, 1))},
              {"rope", offset(l.rope_offset(a.rows, 1))}};
    auto field = [&](const cache::field_spec& f) {
      if (f.type == cache::element_type::none) return json(nullptr);
      return json{{"type", std::string(cache::to_string(f.type))},
                  {"count", bound && f.count == 0 ? json(nullptr) : json(f.count)},
                  {"block", f.block}};
    };
    list.push_back({{"name", std::string(l.name)},
                    {"model", std::string(cache::to_string(l.model))},
                    {"role", std::string(cache::to_string(l.role))},
                    {"row_bytes", bound ? json(nullptr) : json(l.row_bytes)},
                    {"page_rule", std::string(cache::to_string(l.rule))},
                    {"alignment", l.rule == cache::page_rule::split_padded ? json(l.alignment) : json(nullptr)},
                    {"rows", a.rows},
                    {"page_bytes", bound ? json(nullptr) : json(l.page_bytes(a.rows))},
                    {"row1", row1},
                    {"fields", {{"data", field(l.data)}, {"scales", field(l.scales)}, {"rope", field(l.rope)}}},
                    {"source", std::string(l.source)}});
  }
  return list;
}

/// `formats` as a table, one line per registered format in registry order, and footnotes.
inline std::string formats_text(const formats_args& a) {
  using layout_detail::bound_per_group;
  const std::int64_t r = layout_detail::shown_row(a.rows);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> bound_names;
  auto offset = [](std::int64_t off) { return off < 0 ? std::string("-") : std::to_string(off); };
  for (const cache::format_layout& l : cache::kFormats) {
    std::vector<std::string> cells = {std::string(l.name), std::string(cache::to_string(l.model)),
                                      std::string(cache::to_string(l.role))};
    if (bound_per_group(l)) {
      bound_names.emplace_back(l.name);
      cells.insert(cells.end(), {"group", layout_detail::page_rule_text(l), "-", "-", "-", "-"});
    } else {
      cells.insert(cells.end(), {std::to_string(l.row_bytes), layout_detail::page_rule_text(l),
                                 std::to_string(l.page_bytes(a.rows)), offset(l.data_offset(a.rows, r)),
                                 offset(l.scale_offset(a.rows, r)), offset(l.rope_offset(a.rows, r))});
    }
    cells.emplace_back(l.source);
    rows.push_back(std::move(cells));
  }
  std::string s = fmt::format("{} row formats, pages of {} row{}; data, scales, rope: offset of row {}{} in bytes\n\n",
                              cache::kFormats.size(), a.rows, a.rows == 1 ? "" : "s", r,
                              r == 1 ? "" : " (a page of 1 row has no row 1)");
  s += layout_detail::render_table(
      {"name", "model", "role", "row B", "page rule", "page B", "data", "scales", "rope", "source"}, rows,
      {false, false, false, true, false, true, true, true, true, false});
  s += fmt::format(
      "(row B: bytes a row takes in the page; page rule: split = all rows' data, then all rows' scales; "
      "split_padded/A: split, page padded to a multiple of A bytes; interleaved = each row whole; page B: a page "
      "of {} rows, padding included; data, scales, rope: first byte of that part of row {} from the page start, "
      "- where the row has no such part)\n",
      a.rows, r);
  if (!bound_names.empty())
    s += fmt::format(
        "(group: the row bytes of {} are bound per group (the compressor state's row size), so its page bytes and "
        "offsets are not fixed)\n",
        fmt::join(bound_names, ", "));
  return s;
}

}  // namespace dsv4::tools
