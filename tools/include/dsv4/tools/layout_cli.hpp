// dsv4-cache-layout: the byte layouts of the registered KV-cache row formats, and the layout
// contract of a deployment (descriptor, fingerprint, diff, check; contract_cli.hpp).
//
// The CLI lives in this header (not in main) so that tests drive the same code with an argument
// list and two streams, as dsv4-cache-plan does (planner_cli.hpp). One subcommand per run:
//   formats [--rows N] [--json]   every registered format: sizes, page rule, offsets of row 1
//   describe [planner flags] [--rank R]      the descriptor (JSON) of a deployment's layout
//   fingerprint [planner flags] [--rank R]   its fingerprint, 0x + 16 hex digits
//   diff A.json B.json                       differences, most consequential first
//   check FILE                               recomputes every derived number
//   golden FORMAT [--writer W] (--rows N --seed S | --input FILE) --out DIR
//                                            input.bf16, page.bin, manifest.json (golden.hpp)
//   writers [--json]                         each format's writers and a witness per pair that
//                                            differs (writers_cli.hpp)
// Exit codes: 0 success (diff, check: equal / right), 1 different (diff) or wrong (check),
// 2 bad input (one line on `err`, nothing on `out`), 3 the output could not be written, or an
// internal error (a bug: please report it). Output is built whole before any of it is written.
// Every number printed comes from the registry's `format_layout` values.
#pragma once

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "dsv4/cache/formats/format_traits.hpp"
#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/tools/cli_parse.hpp"
#include "dsv4/tools/contract_cli.hpp"
#include "dsv4/tools/formats_report.hpp"
#include "dsv4/tools/golden_cli.hpp"
#include "dsv4/tools/messages.hpp"
#include "dsv4/tools/planner_cli.hpp"
#include "dsv4/tools/transfer.hpp"
#include "dsv4/tools/writers_cli.hpp"

namespace dsv4::tools {

/// Exit codes (1 is diff's and check's "different").
inline constexpr int kLayoutExitOk = 0;
inline constexpr int kLayoutExitFailure = 3;  ///< output not written, or an internal error
inline constexpr int kLayoutExitBadInput = 2;

/// Rows per page accepted by --rows: 1 .. 2^20.
inline constexpr std::int64_t kLayoutMaxRows = std::int64_t{1} << 20;

/// Every subcommand's inputs, as parsed from the command line.
struct layout_args {
  formats_args formats;
  contract_args describe;
  contract_args fingerprint;
  std::vector<std::string> diff;
  std::string check;
  golden_args golden;
  bool writers_json = false;
  transfer_args transfer;
};

namespace layout_detail {

using cache::cli::one_line;  // the planner's: one printable line, at most 500 bytes

/// CLI11 transform for --rows: a plain decimal integer (leading zeros read as decimal, not octal;
/// no "0x", "+", blanks) in [1, kLayoutMaxRows], passed on as plain decimal.
inline const CLI::Validator kRowsPerPage(
    [](std::string& s) -> std::string {
      const std::string rule = fmt::format("rows per page must be a decimal integer in [1, {}]", kLayoutMaxRows);
      if (s.empty()) return rule + ", got an empty value";
      std::int64_t v = 0;
      const char* end = s.data() + s.size();
      const auto [ptr, ec] = std::from_chars(s.data(), end, v);
      if (ec != std::errc() || ptr != end || v < 1 || v > kLayoutMaxRows) return rule + ", got '" + one_line(s) + "'";
      s = std::to_string(v);  // CLI11 would read a leading 0 as octal ("0100" = 64)
      return {};
    },
    "N");

/// The message for a parse error. CLI11 reports a missing subcommand even when an unknown one
/// was given ("bogus"): say which argument it was, and list the subcommands.
inline std::string parse_error_text(CLI::App& app, const CLI::ParseError& e) {
  if (dynamic_cast<const CLI::RequiredError*>(&e) == nullptr || !app.get_subcommands().empty()) return e.what();
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  const std::string list = fmt::format("subcommands: {}", fmt::join(names, ", "));
  const std::vector<std::string> rest = app.remaining();
  if (rest.empty()) return "a subcommand is required (" + list + ")";
  if (rest.front().starts_with('-'))
    return "unexpected argument '" + rest.front() + "' before a subcommand (" + list + ")";
  return "unknown subcommand '" + rest.front() + "' (" + list + ")";
}

}  // namespace layout_detail

/// Registers the `formats` subcommand on `app`, parsing into `a`.
inline CLI::App* add_formats_command(CLI::App& app, formats_args& a) {
  CLI::App* cmd = app.add_subcommand("formats", "List every registered row format: sizes, page rule, row offsets");
  cmd->add_option("--rows", a.rows, fmt::format("Rows per page N, 1 to {}", kLayoutMaxRows))
      ->transform(layout_detail::kRowsPerPage)
      ->capture_default_str();
  cmd->add_flag("--json", a.json, "Print a JSON list instead of a table");
  cmd->footer(
      "Table: one line per format in registry order: name, model family, role, row bytes, page rule (split_padded/A: "
      "padded to a multiple of A bytes), page bytes for N rows, the offsets of row 1 (row 0 if N = 1) of its data, "
      "scales and RoPE (- where absent), source.\n"
      "JSON: a list of objects with keys name, model (v4, v4.1, v3.2, any), role (main_kv, indexer_k, state), "
      "row_bytes, page_rule, alignment (split_padded only, else null), rows, page_bytes, row1 ({data, scales, rope}: "
      "first byte of each part of row 1 from the page start, null where the row has no such part; row1 is null if "
      "N = 1), fields ({data, scales, rope}: each {type, count, block} or null; block = values per scale, 0 for data "
      "and RoPE), source.\n"
      "fp32_state rows are bound per group (the compressor state's row size): its table line prints 'group' and "
      "dashes, and its JSON row_bytes, page_bytes, row1 values and data count are null.");
  return cmd;
}

/// Registers the `transfer` subcommand on `app`, parsing into `a`.
inline CLI::App* add_transfer_command(CLI::App& app, transfer_args& a) {
  CLI::App* cmd = app.add_subcommand(
      "transfer",
      "One request's prefill -> decode transfer manifest between two descriptors (describe --engine vllm or "
      "tokenspeed): per group the byte ranges the engine's connector moves, merged (exit 0; 1 the layouts cannot "
      "exchange pages; 2 bad "
      "input)");
  cmd->add_option("descriptors", a.descriptors, "PREFILL.json DECODE.json")->expected(2)->required();
  cmd->add_option("--prompt-len", a.prompt_len, "Tokens of the request's prompt")
      ->required()
      ->transform(cache::cli::kDecimalInt);
  cmd->add_option("--prefix", a.prefix,
                  "Tokens of the prompt already cached on the decode side (whole blocks; default 0)")
      ->transform(cache::cli::kDecimalInt);
  cmd->add_option("--blocks", a.blocks,
                  "JSON file {\"prefill\": [[block ids] per engine group], \"decode\": [...]}: the request's block "
                  "tables; without it a dry run (each pool fresh, blocks handed out from 1)");
  cmd->add_option("--prefill-dp-rank", a.prefill_dp_rank, "The prefill DP rank that ran the request (default 0)")
      ->transform(cache::cli::kDecimalInt);
  cmd->add_option("--decode-dp-rank", a.decode_dp_rank, "The decode DP rank the request goes to (default 0)")
      ->transform(cache::cli::kDecimalInt);
  CLI::Option* json = cmd->add_flag("--json", a.json, "The manifest as JSON (exact offsets)");
  CLI::Option* nixl = cmd->add_flag("--nixl", a.nixl, "NIXL descriptor lists (addr, len, dev_id) per rank pair");
  CLI::Option* mooncake = cmd->add_flag("--mooncake", a.mooncake, "Mooncake batch transfer requests per rank pair");
  json->excludes(nixl)->excludes(mooncake);
  nixl->excludes(mooncake);
  return cmd;
}

/// Runs dsv4-cache-layout on `args` (without the program name). Returns the exit code.
inline int run_layout(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  layout_args a;
  CLI::App app{"dsv4-cache-layout: byte layouts of the registered KV-cache row formats", "dsv4-cache-layout"};
  app.footer(std::string(cache::cli::kExitCodesHelp));
  app.require_subcommand(1);  // exactly one
  const CLI::App* formats = add_formats_command(app, a.formats);
  CLI::App* describe =
      app.add_subcommand("describe", "The descriptor (JSON) of a deployment's cache layout: layout, fingerprint, info");
  add_contract_options(*describe, a.describe);
  CLI::App* fingerprint = app.add_subcommand("fingerprint", "The layout's fingerprint: XXH64 of its canonical bytes");
  add_contract_options(*fingerprint, a.fingerprint);
  CLI::App* diff = app.add_subcommand(
      "diff",
      "Differences of two descriptors, the verdict first (exit 0 identical, 4 compatible for page transfer, 1 "
      "incompatible, 2 bad input, 3 write error)");
  diff->add_option("descriptors", a.diff, "A.json B.json")->expected(2)->required()->check(CLI::ExistingFile);
  CLI::App* check = app.add_subcommand(
      "check", "Recompute every derived number of a descriptor (exit 0 right, 1 wrong, 2 bad input)");
  check->add_option("descriptor", a.check, "FILE")->required()->check(CLI::ExistingFile);
  const CLI::App* golden = add_golden_command(app, a.golden);
  const CLI::App* transfer = add_transfer_command(app, a.transfer);
  CLI::App* writers = app.add_subcommand(
      "writers", "Each format's writers and, per pair that writes different bytes, the rule and a witness block");
  writers->add_flag("--json", a.writers_json, "JSON instead of text");
  try {
    parse_args(app, args);
  } catch (const CLI::CallForHelp&) {
    out << app.help();  // the subcommand's help after `formats --help`
    return kLayoutExitOk;
  } catch (const CLI::ParseError& e) {
    err << "dsv4-cache-layout: error: " << layout_detail::one_line(layout_detail::parse_error_text(app, e))
        << " (see --help)\n";
    return kLayoutExitBadInput;
  }
  try {
    std::string text;
    if (diff->parsed()) return run_diff(a.diff[0], a.diff[1], out, err);
    if (check->parsed()) return run_check(a.check, out, err);
    if (golden->parsed()) return run_golden(a.golden, out, err);
    if (transfer->parsed()) return run_transfer(a.transfer, out, err);
    if (formats->parsed()) {
      text = a.formats.json ? formats_json(a.formats).dump(2) + "\n" : formats_text(a.formats);
    } else if (describe->parsed()) {
      text = describe_descriptor(a.describe).dump(2) + "\n";
    } else if (writers->parsed()) {
      const nlohmann::ordered_json j = writers_json();
      text = a.writers_json ? j.dump(2) + "\n" : writers_text(j);
    } else if (fingerprint->parsed()) {
      text = contract_detail::hex(cache::fingerprint(layout_from_flags(a.fingerprint).first)) + "\n";
    } else {
      throw std::logic_error("no subcommand to run");  // require_subcommand(1) makes this unreachable
    }
    errno = 0;
    out << text << std::flush;
    if (!out) {
      err << "dsv4-cache-layout: error: " << write_failure(errno) << "\n";
      return kLayoutExitFailure;
    }
    return kLayoutExitOk;
  } catch (const std::invalid_argument& e) {  // bad input: the library's errors
    err << "dsv4-cache-layout: error: " << dsv4::tools::error_text(e.what()) << "\n";
    return kLayoutExitBadInput;
  } catch (const std::exception& e) {  // anything else is a bug, not the user's input
    err << "dsv4-cache-layout: internal error: " << dsv4::tools::error_text(e.what()) << "\n";
    return kLayoutExitFailure;
  }
}

}  // namespace dsv4::tools
