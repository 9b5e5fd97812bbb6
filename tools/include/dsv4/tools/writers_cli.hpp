// dsv4-cache-layout writers: for each registered format, the producers' writers it models
// (`F::writers`, format_traits.hpp) and, for each pair of them that writes different bytes, the
// rule that differs and one witness block: its input, both writers' bytes and what the reader
// decodes from each (one reader: the engines' readers decode the same bytes the same way,
// docs/engines/writers.md), so that an engine developer knows whether two engines' pages are
// byte-identical before comparing them.
//
//   writers [--json]
//
// Witnesses are searched, not stored: each pair writes the same probe rows (in order: an
// all-zero row, a row of tiny values 2^-20, a row of E2M1 ties and small negatives on a block
// amax of 6, a row holding +inf, the golden SplitMix64 rows of seed 0) into one-row pages with
// `quantize_row<F>` under each writer's policy; the first probe whose pages differ is the
// witness, shown at the first byte that differs (its scale block, 8 values of it). A pair that
// differs on no probe is reported as such (never the case for the registered writers: a second
// writer is modelled only where it differs).
// Exit codes: 0 printed; 3 the output could not be written or an internal error.
#pragma once

#include <bit>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dsv4/cache/formats/format_traits.hpp"
#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/tools/golden.hpp"

namespace dsv4::tools {

/// One probe row: a name and V BF16 bit patterns.
struct writer_probe {
  std::string_view name;
  std::vector<std::uint16_t> bits;
};

namespace writers_detail {

inline constexpr std::uint16_t kBf16One = 0x3F80;

/// The probe rows for a format of `values` values per row (see the top of this file).
inline std::vector<writer_probe> probes(std::int64_t values) {
  const auto n = static_cast<std::size_t>(values);
  std::vector<writer_probe> p;
  p.push_back({"all-zero row", std::vector<std::uint16_t>(n, 0)});
  p.push_back({"tiny row (every value 2^-20)", std::vector<std::uint16_t>(n, 0x3580)});
  // Per 8 values: 6, 0.75, 1.75, 3.5, -0.1, -0.2, 2.5, 5 (BF16): a block amax of 6 gives an E2M1
  // scale of 1, so the ties and the negatives that round to zero are exactly where the
  // roundings differ.
  constexpr std::uint16_t kTies[8] = {0x40C0, 0x3F40, 0x3FE0, 0x4060, 0xBDCD, 0xBE4D, 0x4020, 0x40A0};
  std::vector<std::uint16_t> ties(n);
  for (std::size_t i = 0; i < n; ++i) ties[i] = kTies[i % 8];
  p.push_back({"E2M1 ties (6, 0.75, 1.75, 3.5, -0.1, -0.2, 2.5, 5 repeated)", ties});
  std::vector<std::uint16_t> inf(n, kBf16One);
  inf[0] = 0x7F80;
  p.push_back({"+inf at value 0, every other value 1", inf});
  std::vector<std::uint16_t> golden(n);
  for (std::size_t i = 0; i < n; ++i) golden[i] = golden_input_bits(0, i);
  p.push_back({"golden rows, seed 0 (row 0)", golden});
  return p;
}

/// A value as text: finite in %g, else inf / -inf / nan.
inline std::string value_text(float v) { return fmt::format("{:g}", v); }

/// The page (one row) and the decoded row of format `index` for `bits` under `policy`.
struct written {
  std::vector<std::uint8_t> page;
  std::vector<float> decoded;
};
inline written write_one(int index, const cache::format_layout& l, const std::vector<std::uint16_t>& bits,
                         const cache::format_policy& policy) {
  written w;
  w.page.assign(static_cast<std::size_t>(l.page_bytes(1)), 0);
  w.decoded.assign(static_cast<std::size_t>(l.values), 0.0f);
  cache::visit_format(index, [&]<cache::row_format F>() {
    using In = typename F::input_type;
    std::vector<In> row(bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) {
      if constexpr (std::is_same_v<In, float>) {
        row[i] = std::bit_cast<float>(std::uint32_t{bits[i]} << 16);
      } else {
        row[i] = cache::bf16{bits[i]};
      }
    }
    cache::quantize_row<F>(l, w.page.data(), 1, 0, row.data(), policy);
    cache::dequantize_row<F>(l, w.page.data(), 1, 0, w.decoded.data(), policy);
  });
  return w;
}

/// An amax floor as the engines write it.
inline std::string floor_text(float f, bool fp8) {
  if (f == 0.0f) return "none";
  if (f == 6.0f * 0x1p-126f) return "6 x 2^-126 on amax";
  if (fp8 && f == 0.0448f) return "1e-4 on amax / 448";
  if (fp8 && f == 4.48e-8f) return "1e-10 on amax / 448";
  if (f == 1e-4f) return "1e-4 on amax";
  return fmt::format("{:g} on amax", f);
}

/// One rule two writers differ on: its text and writer a's policy with only that field of b's
/// (the witness search tells the rules apart with it).
struct rule_diff {
  std::string text;
  cache::format_policy variant;
};

/// The policy fields two writers set differently, one rule each.
inline std::vector<rule_diff> rules_that_differ(const cache::format_policy& a, const cache::format_policy& b) {
  std::vector<rule_diff> r;
  const auto add = [&](std::string text, auto&& set) {
    cache::format_policy v = a;
    set(v);
    r.push_back({std::move(text), v});
  };
  if (a.fp8_amax_floor != b.fp8_amax_floor)
    add(fmt::format("FP8 scale floor: {} vs {}", floor_text(a.fp8_amax_floor, true),
                    floor_text(b.fp8_amax_floor, true)),
        [&](cache::format_policy& v) { v.fp8_amax_floor = b.fp8_amax_floor; });
  if (a.fp8_exp != b.fp8_exp)
    add("FP8 exponent: exact ceiling vs ceil(log2f) in float", [&](cache::format_policy& v) { v.fp8_exp = b.fp8_exp; });
  if (a.mxfp4_amax_floor != b.mxfp4_amax_floor)
    add(fmt::format("MXFP4 scale floor: {} vs {}", floor_text(a.mxfp4_amax_floor, false),
                    floor_text(b.mxfp4_amax_floor, false)),
        [&](cache::format_policy& v) { v.mxfp4_amax_floor = b.mxfp4_amax_floor; });
  if (a.mxfp4_scale != b.mxfp4_scale)
    add("MXFP4 scale rule: DeepSeek ceil vs OCP floor",
        [&](cache::format_policy& v) { v.mxfp4_scale = b.mxfp4_scale; });
  if (a.mxfp4_rounding != b.mxfp4_rounding) {
    const auto name = [](cache::e2m1_rounding x) {
      return x == cache::e2m1_rounding::nearest_even ? "nearest even, signed zero"
                                                     : "ties toward zero (0.75, 1.75, 3.5 down), zero written +0";
    };
    add(fmt::format("E2M1 rounding: {} vs {}", name(a.mxfp4_rounding), name(b.mxfp4_rounding)),
        [&](cache::format_policy& v) { v.mxfp4_rounding = b.mxfp4_rounding; });
  }
  if (a.fp32_scale != b.fp32_scale)
    add("fp32 scale: power of two vs the unrounded amax / 448",
        [&](cache::format_policy& v) { v.fp32_scale = b.fp32_scale; });
  if (a.nan != b.nan) add("NaN: propagate vs ignore", [&](cache::format_policy& v) { v.nan = b.nan; });
  if (a.tensor_scale != b.tensor_scale)
    add(fmt::format("per-tensor scale {:g} vs {:g}", a.tensor_scale, b.tensor_scale),
        [&](cache::format_policy& v) { v.tensor_scale = b.tensor_scale; });
  return r;
}

/// Hex of `n` bytes at `p`, space-separated.
inline std::string hex_bytes(const std::uint8_t* p, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += fmt::format("{}{:02x}", i ? " " : "", p[i]);
  return s;
}

/// A scale as the screen shows it, from its hex bytes ("72", "00 00 80 34"): a one-byte scale
/// (UE8M0, E4M3) as its decimal byte, "114 (0x72)", as the README and docs/engines/writers.md
/// quote it; a four-byte (fp32, little-endian) scale as its value, "2.38419e-07 (00 00 80 34)".
inline std::string scale_text(const std::string& hex) {
  std::vector<std::uint8_t> bytes;
  for (std::size_t i = 0; i < hex.size(); i += 3)
    bytes.push_back(static_cast<std::uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  if (bytes.size() == 1) return fmt::format("{} (0x{})", bytes[0], hex);
  if (bytes.size() == 4) {
    std::uint32_t u = 0;
    for (std::size_t i = 0; i < 4; ++i) u |= std::uint32_t{bytes[i]} << (8 * i);
    return fmt::format("{:g} ({})", std::bit_cast<float>(u), hex);
  }
  return "[" + hex + "]";
}

/// Bytes of one scale of the layout: 4 for fp32, else 1.
inline std::int64_t scale_elem_bytes(const cache::format_layout& l) {
  return l.scales.type == cache::element_type::fp32 ? 4 : 1;
}

/// The witness at the first differing byte `at` of two one-row pages (see writers_json).
inline nlohmann::ordered_json witness_json(const cache::format_layout& l, const writer_probe& p, const written& wa,
                                           const written& wb, std::int64_t at) {
  using json = nlohmann::ordered_json;
  const std::int64_t se = scale_elem_bytes(l);
  const std::int64_t blk = l.scales.block > 0 ? l.scales.block : l.values;
  const bool e2m1 = l.data.type == cache::element_type::e2m1;
  // One row: data first, then scales.
  const std::int64_t block = at >= l.data_bytes ? (at - l.data_bytes) / se : (e2m1 ? 2 * at : at) / blk;
  const std::int64_t v0 = block * blk;
  const std::int64_t shown = blk < 8 ? blk : 8;
  const std::int64_t code_off = e2m1 ? v0 / 2 : v0;
  const std::int64_t code_n = e2m1 ? shown / 2 : shown;
  const std::int64_t scale_off = l.data_bytes + block * se;
  json input = json::array(), da = json::array(), db = json::array();
  for (std::int64_t i = v0; i < v0 + shown; ++i) {
    input.push_back(value_text(cache::bf16_to_float(cache::bf16{p.bits[static_cast<std::size_t>(i)]})));
    da.push_back(value_text(wa.decoded[static_cast<std::size_t>(i)]));
    db.push_back(value_text(wb.decoded[static_cast<std::size_t>(i)]));
  }
  const auto bytes_at = [](const written& w, std::int64_t off, std::int64_t n) {
    return hex_bytes(w.page.data() + off, static_cast<std::size_t>(n));
  };
  return {{"probe", std::string(p.name)},
          {"block", block},
          {"input", input},
          {"scale_offset", scale_off},
          {"scale_bytes", {bytes_at(wa, scale_off, se), bytes_at(wb, scale_off, se)}},
          {"code_offset", code_off},
          {"code_bytes", {bytes_at(wa, code_off, code_n), bytes_at(wb, code_off, code_n)}},
          {"decoded", {da, db}}};
}

}  // namespace writers_detail

/// The `writers` report as JSON: {"schema": "dsv4-cache-writers/1", "formats": [{"format",
/// "writers": [{"name", "default", "compared", "source"}], "differences": [{"writers": [A, B],
/// "rules": [{"rule", "witness": {"probe", "block", "input", "scale_offset", "scale_bytes":
/// [A, B], "code_offset", "code_bytes": [A, B], "decoded": [[..A], [..B]]} or null}]}]}]}.
/// Each rule's witness is the first probe on which A and A-with-only-that-field-of-B write
/// different bytes, shown at the scale block of the first such byte with A's and B's own bytes
/// and decoded values. Offsets are bytes in a page of one row; 8 values of the witness block
/// are shown (fewer if it is smaller). No errors (a bug throws std::logic_error).
inline nlohmann::ordered_json writers_json() {
  using json = nlohmann::ordered_json;
  using namespace writers_detail;
  json formats = json::array();
  for (std::size_t fi = 0; fi < cache::kFormats.size(); ++fi) {
    const int index = static_cast<int>(fi);
    cache::format_layout l = cache::kFormats[fi];
    if (l.row_bytes == 0) l = cache::bind_state_row_bytes(1024);  // fp32_state: a 256-value row
    const auto ws = cache::kFormatWriters[fi];
    json writers = json::array();
    for (std::size_t k = 0; k < ws.size(); ++k)
      writers.push_back({{"name", std::string(cache::to_string(ws[k].producer))},
                         {"default", k == 0},
                         {"compared", ws[k].compared},
                         {"source", std::string(ws[k].source)}});
    json diffs = json::array();
    const std::vector<writer_probe> ps = probes(l.values);
    for (std::size_t a = 0; a < ws.size(); ++a)
      for (std::size_t b = a + 1; b < ws.size(); ++b) {
        json rules = json::array();
        for (const rule_diff& rd : rules_that_differ(ws[a].policy, ws[b].policy)) {
          json w = nullptr;
          for (const writer_probe& p : ps) {
            // The probe tells this rule apart (a vs a with only this field of b); the bytes shown
            // are the two writers' own.
            const written wa = write_one(index, l, p.bits, ws[a].policy);
            const written wv = write_one(index, l, p.bits, rd.variant);
            std::size_t at = 0;
            while (at < wa.page.size() && wa.page[at] == wv.page[at]) ++at;
            if (at == wa.page.size()) continue;
            w = witness_json(l, p, wa, write_one(index, l, p.bits, ws[b].policy), static_cast<std::int64_t>(at));
            break;
          }
          rules.push_back({{"rule", rd.text}, {"witness", w}});
        }
        json d = {
            {"writers", {std::string(cache::to_string(ws[a].producer)), std::string(cache::to_string(ws[b].producer))}},
            {"rules", rules}};
        diffs.push_back(d);
      }
    formats.push_back({{"format", std::string(l.name)}, {"writers", writers}, {"differences", diffs}});
  }
  return {{"schema", "dsv4-cache-writers/1"}, {"formats", formats}};
}

/// The `writers` report as text, from `writers_json()`: one line per format with its writers
/// (`*` the default, `=` compared with the producer's own writer byte for byte), then per pair
/// that differs its rules and witness.
inline std::string writers_text(const nlohmann::ordered_json& j) {
  std::string s =
      "Writers per format (* default, = bytes compared with the producer's own writer; others read, not run)\n";
  for (const auto& f : j["formats"]) {
    std::string names;
    for (const auto& w : f["writers"])
      names += fmt::format("{}{}{}{}", names.empty() ? "" : ", ", w["name"].get<std::string>(),
                           w["default"].get<bool>() ? "*" : "", w["compared"].get<bool>() ? "=" : "");
    s += fmt::format("{:<30} {}\n", f["format"].get<std::string>(), names);
    for (const auto& d : f["differences"]) {
      const std::string a = d["writers"][0], b = d["writers"][1];
      s += fmt::format("  {} vs {}:\n", a, b);
      const auto list = [](const nlohmann::ordered_json& v) {
        std::string t;
        for (const auto& x : v) {
          if (!t.empty()) t += ' ';
          t += x.get<std::string>();
        }
        return t;
      };
      for (const auto& r : d["rules"]) {
        s += fmt::format("    rule: {}\n", r["rule"].get<std::string>());
        const auto& w = r["witness"];
        if (w.is_null()) {
          s += "      no probe row tells them apart\n";
          continue;
        }
        s += fmt::format("      witness: {}, block {}: input {}\n", w["probe"].get<std::string>(),
                         w["block"].get<int>(), list(w["input"]));
        s +=
            fmt::format("        scale @{}: {} vs {}; codes @{}: [{}] vs [{}]\n", w["scale_offset"].get<int>(),
                        writers_detail::scale_text(w["scale_bytes"][0].get<std::string>()),
                        writers_detail::scale_text(w["scale_bytes"][1].get<std::string>()), w["code_offset"].get<int>(),
                        w["code_bytes"][0].get<std::string>(), w["code_bytes"][1].get<std::string>());
        s += fmt::format("        decoded: [{}] vs [{}]\n", list(w["decoded"][0]), list(w["decoded"][1]));
      }
    }
  }
  return s;
}

}  // namespace dsv4::tools
