// dsv4-cache-layout golden's flags as CLI11 options (the command itself is golden.hpp's).
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "dsv4/tools/golden.hpp"

namespace dsv4::tools {

namespace golden_detail {

/// A CLI11 transform: a plain decimal integer of type T (no sign, "0x", blanks; leading zeros read
/// as decimal, not octal) in [lo, hi], passed on in plain decimal.
template <class T>
CLI::Validator decimal(T lo, T hi, std::string what) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        const std::string rule = fmt::format("{} must be a decimal integer in [{}, {}]", what, lo, hi);
        if (s.empty()) return rule + ", got an empty value";
        T v{};
        const char* end = s.data() + s.size();
        const auto [ptr, ec] = std::from_chars(s.data(), end, v);
        if (s.front() == '-' || ec != std::errc() || ptr != end || v < lo || v > hi)
          return rule + ", got '" + one_line(s) + "'";
        s = std::to_string(v);  // CLI11 would read a leading 0 as octal
        return {};
      },
      "N");
}

}  // namespace golden_detail

/// Registers the `golden` subcommand on `app`, parsing into `a`.
inline CLI::App* add_golden_command(CLI::App& app, golden_args& a) {
  CLI::App* cmd = app.add_subcommand("golden", "Write a golden page of a row format: input, page bytes, manifest");
  cmd->add_option("FORMAT", a.format, "Registered row format name (see `formats`)")->required();
  cmd->add_option("--writer", a.writer,
                  "Writer: default (the format's first) or a producer it models (see `writers`): flashmla, vllm, "
                  "sglang, tokenspeed, trtllm, flashinfer")
      ->capture_default_str();
  cmd->add_option("--policy", a.policy, "Schema-/1 alias of --writer (default or a writer name)");
  cmd->add_option("--rows", a.rows, fmt::format("Rows N of the page, 1 to {} (with --input: checked)", kGoldenMaxRows))
      ->transform(golden_detail::decimal<std::int64_t>(1, kGoldenMaxRows, "rows"))
      ->each([&a](const std::string&) { a.rows_given = true; })
      ->capture_default_str();
  cmd->add_option("--seed", a.seed, "Seed S of the SplitMix64 input, a decimal uint64")
      ->transform(golden_detail::decimal<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max(), "seed"))
      ->each([&a](const std::string&) { a.seed_given = true; })
      ->capture_default_str();
  cmd->add_option("--input", a.input_file,
                  "Your own rows instead of the SplitMix64 ones: a file of rows x values, little-endian");
  cmd->add_option("--input-type", a.input_type, "Element type of --input: bf16 (2 B) or f32 (4 B)")
      ->capture_default_str();
  cmd->add_option("--out", a.out_dir,
                  "Output directory DIR (created with its parents if missing; an existing one must be a directory "
                  "you may write, its three files new, regular files you may write or symlinks to them)")
      ->required()
      ->check(CLI::Validator(
          [](const std::string& s) { return s.empty() ? std::string("--out must not be empty") : std::string(); },
          "DIR"));
  cmd->add_option("--row-bytes", a.row_bytes,
                  fmt::format("fp32_state only: its row bytes, a multiple of 1024 up to {}", kGoldenMaxRowBytes))
      ->transform(golden_detail::decimal<std::int64_t>(1024, kGoldenMaxRowBytes, "row bytes"));
  cmd->footer(
      "Writes to DIR: input.bf16 (N x values-per-row BF16, little-endian; fp32_state: input.f32), page.bin (the page "
      "bytes after writing rows 0..N-1 in order into a zeroed page) and manifest.json (format, writer, rows, seed, "
      "sizes, the input mapping, each file's bytes and SHA-256); prints `<sha256>  <file>` for each.\n"
      "Input: value i = r*V + j is BF16 bits 0 if (i>>6)%7 == 6, else sign d>>63, exponent field "
      "100 + ((d>>56)&31) - 4*((i>>6)%3), mantissa d&0x7F, with d = SplitMix64 output i of seed S; or, with "
      "--input FILE, the file's rows (N = its size / (values x element size)).\n"
      "Exit codes: 0 written, 2 bad input (nothing written; DIR or a file in it a device, FIFO, socket, directory, "
      "dangling or looping symlink, or not yours to write, too), 3 DIR could not be written (the system's reason; "
      "temporary files removed, replaced files put back) or an internal error.");
  return cmd;
}

}  // namespace dsv4::tools
