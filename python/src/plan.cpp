// dsv4_cache._core, planner and contract: the Python package's plan(), describe(), fingerprint(),
// diff() and check() parse the same flags with the same tables as dsv4-cache-plan and
// dsv4-cache-layout (`parse_planner_args`, `parse_contract_args`) and compute with the same
// functions (`compute`, `to_json`, `describe_descriptor`, `diff_descriptors`), so a result here is
// the CLI's for the same flags. Bad input raises ValueError (nanobind's translation of
// std::invalid_argument) with the CLI's message; the Python layer names its parameters in it.
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "core.hpp"
#include "dsv4/tools/contract_cli.hpp"
#include "dsv4/tools/planner_cli.hpp"

namespace nb = nanobind;

namespace dsv4::python {
namespace {

using cache::cli::planner_args;
using cache::cli::planner_result;

/// A computed plan and the arguments it was computed for (the renderers need both).
struct plan_report {
  planner_args args;
  planner_result result;
};

/// The model given inline (a config.json's text): it replaces --preset / --config.
void set_config(planner_args& a, const std::string& config_text, const std::string& config_name) {
  a.config_text = config_text;
  a.config_name = config_name;
}

/// describe / fingerprint's flags `argv` parsed as dsv4-cache-layout describe parses them.
tools::contract_args contract_of(const std::vector<std::string>& argv, const std::string& config_text,
                                 const std::string& config_name) {
  tools::contract_args c = tools::parse_contract_args(argv);
  set_config(c.plan, config_text, config_name);
  return c;
}

std::string dump(const nlohmann::ordered_json& j) {
  // replace: a model name from a file name need not be valid UTF-8 (as the CLI's --json)
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

void register_plan(nb::module_& m) {
  nb::class_<plan_report>(m, "PlanReport", "A computed plan (dsv4-cache-plan's report) and its renderings")
      .def(
          "json", [](const plan_report& p) { return dump(cache::cli::to_json(p.result)); },
          "The report as dsv4-cache-plan --json prints it (compact JSON text).")
      .def(
          "screen", [](const plan_report& p) { return cache::cli::screen_text(p.result); },
          "The operator screen (dsv4-cache-plan's default output).")
      .def(
          "summary", [](const plan_report& p) { return cache::cli::summary_line(p.result); },
          "The verdict as one line (dsv4-cache-plan --summary).")
      .def(
          "tables", [](const plan_report& p) { return cache::cli::to_text(p.result); },
          "Every table (dsv4-cache-plan --verbose).")
      .def(
          "svg",
          [](plan_report& p) {
            const nb::gil_scoped_release release;
            if (p.result.curves.empty()) p.result.curves = cache::cli::capacity_curves(p.args, p.result.model);
            return cache::cli::plan_svg(p.result);
          },
          "The plan as an SVG image (dsv4-cache-plan --svg): group bars and the capacity curves.");

  m.def(
      "plan",
      [](const std::vector<std::string>& argv, const std::string& config_text, const std::string& config_name) {
        plan_report p{cache::cli::parse_planner_args(argv), {}};
        set_config(p.args, config_text, config_name);
        const nb::gil_scoped_release release;
        p.result = cache::cli::compute(p.args);
        return p;
      },
      nb::arg("argv"), nb::arg("config_text") = "", nb::arg("config_name") = "",
      "dsv4-cache-plan's report for the flags `argv` (config_text: a config.json given inline).");

  m.def(
      "describe",
      [](const std::vector<std::string>& argv, const std::string& config_text, const std::string& config_name) {
        const tools::contract_args c = contract_of(argv, config_text, config_name);
        const nb::gil_scoped_release release;
        return dump(tools::describe_descriptor(c));
      },
      nb::arg("argv"), nb::arg("config_text") = "", nb::arg("config_name") = "",
      "dsv4-cache-layout describe's descriptor (JSON text) for the flags `argv`.");

  m.def(
      "fingerprint",
      [](const std::vector<std::string>& argv, const std::string& config_text, const std::string& config_name) {
        const tools::contract_args c = contract_of(argv, config_text, config_name);
        const nb::gil_scoped_release release;
        return cache::fingerprint(tools::layout_from_flags(c).first);
      },
      nb::arg("argv"), nb::arg("config_text") = "", nb::arg("config_name") = "",
      "dsv4-cache-layout fingerprint's value (XXH64 of the canonical layout) for the flags `argv`.");

  m.def(
      "check",
      [](const std::string& text, const std::string& name) {
        const auto d = tools::contract_detail::parse_descriptor(text, name);
        std::string wrong = tools::contract_detail::first_wrong(d);
        const bool named = d.contains("fingerprint") && d["fingerprint"].is_string();
        if (wrong.empty() && !named) wrong = "fingerprint: missing or not a string";  // first_wrong checks its value
        return std::pair{wrong, named ? d["fingerprint"].get<std::string>() : std::string()};
      },
      nb::arg("text"), nb::arg("name"),
      "dsv4-cache-layout check: (the first wrong number, or '' when every number is right; the fingerprint).");

  m.def(
      "diff",
      [](const std::string& a_text, const std::string& b_text, const std::string& a_name, const std::string& b_name) {
        const auto a = tools::contract_detail::parse_descriptor(a_text, a_name);
        const auto b = tools::contract_detail::parse_descriptor(b_text, b_name);
        const tools::diff_result r = tools::diff_descriptors(a, b, a_name, b_name);
        std::vector<std::pair<int, std::string>> diffs;
        for (const tools::contract_detail::difference& d : r.differences) diffs.emplace_back(d.rank, d.text);
        return std::tuple{r.code, r.text, diffs};
      },
      nb::arg("a_text"), nb::arg("b_text"), nb::arg("a_name"), nb::arg("b_name"),
      "dsv4-cache-layout diff: (exit code 0 / 4 / 1, the text it prints, [(rank, difference)]).");

  m.def("preset_names", &cache::cli::preset_names, "The built-in models' names and aliases (--preset).");
  m.def("engine_names", &cache::engine_names, "The registered engines' names (--engine), comma-separated.");
  m.attr("FIRST_COMPATIBLE_RANK") = tools::kFirstCompatibleRank;
}

}  // namespace dsv4::python
