// dsv4-cache-layout golden: golden page images of a registered row format under a named writer,
// for engine developers to byte-compare their writers with in their own CI.
//
//   golden FORMAT [--writer W] [--rows N] [--seed S] --out DIR [--row-bytes B]
//   golden FORMAT [--writer W] --input FILE [--input-type bf16|f32] [--rows N] --out DIR
//
// W: `default` (the format's default writer, `F::writers[0]`) or a producer the format models
// (`dsv4-cache-layout writers` lists them: flashmla, vllm, sglang, tokenspeed, trtllm,
// flashinfer); `--policy P` is the alias kept from schema /1 (`default` or a writer name).
// N: rows of the page, 1 to 65,536 (default 64); with --input, N is the file's row count (a
// --rows that disagrees is bad input). S: a decimal uint64 (default 0; bad input with --input).
// FILE: the user's own rows, row major, values little-endian, `bf16` (2 B each, the default) or
// `f32` (4 B each: rounded to BF16 to nearest even for a BF16 format, any NaN becoming 0x7FFF;
// fp32_state reads float32 as is and widens BF16 exactly); its size must be a positive multiple
// of the row's values x the element size. B: fp32_state only (its rows are bound per group),
// the row bytes, a multiple of 1,024 up to 65,536. Writes to DIR (created with its parents if
// missing; other files in it are left alone, these three are replaced):
//   input.bf16     N x V BF16 values (V = the format's values per row), raw little-endian, row
//                  major: value j of row r at byte 2 (r V + j). fp32_state: `input.f32`, the same
//                  values as float32 (float bits = BF16 bits << 16), 4 bytes each. With --input:
//                  the rows as the writer read them.
//   page.bin       the page: `layout.page_bytes(N)` zero bytes, then rows 0..N-1 written in order
//                  by `quantize_row<F>(layout, page, N, r, row r of the input, writer's policy)`.
//                  Padding and bytes the format never writes stay zero.
//   manifest.json  {"schema": "dsv4-cache-golden/2", "format", "writer" (the resolved name),
//                  "writer_source", "rows", "seed" (null with --input), "values_per_row",
//                  "row_bytes", "page_bytes", "input_mapping" (the formula below in one line, or
//                  the file and its element type), "files": {"input.bf16" (or "input.f32"):
//                  {"bytes", "sha256"}, "page.bin": {...}}}: keys in this order, 2-space indent, a
//                  trailing newline; sha256 = 64 lowercase hex digits (OpenSSL libcrypto,
//                  EVP_sha256). Schema /1 had "policy" where /2 has "writer" and "writer_source".
// and prints `<sha256>  <file>` for the three files on `out` (check with `sha256sum -c` in DIR).
//
// Input mapping, a pure function of (S, i), i = r V + j the value's index in the whole input:
//   d    = SplitMix64 output i (0-based) for seed S, all mod 2^64:
//          z = S + (i + 1) * 0x9E3779B97F4A7C15; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
//          z = (z ^ (z >> 27)) * 0x94D049BB133111EB; d = z ^ (z >> 31)
//   b    = i >> 6                                   (the 64-value run i lies in)
//   bits = 0x0000                                   if b % 7 == 6 (all-zero runs: the scale floor)
//          (d >> 63) << 15                          sign
//          | (100 + ((d >> 56) & 31) - 4 (b % 3)) << 7   exponent field 92..131: runs shifted down 0,
//                                                   4 or 8 binades, so block scales differ
//          | (d & 0x7F)                             otherwise; mantissa
// Magnitudes 2^-35 .. < 2^5 and zeros; never a subnormal, infinity or NaN. Every tie case of the
// 7-bit-mantissa-to-E4M3/E2M1 roundings and power-of-two amaxes (mantissa 0x60 = 1.75 = 7/4)
// occur at random. tests/golden/ implements it independently (fp8_ds_mla_writer.py,
// golden_writer.py).
//
// Exit codes: 0 written; 2 bad input (unknown format or writer, with the accepted names; rows,
// seed, row bytes, an empty DIR; an input file that is missing, not a regular file, unreadable,
// empty or not a whole number of rows, naming the file, its size and the row size; a DIR that is
// not a new or existing directory the user may write, e.g. a regular file, a FIFO or a dangling
// symlink; a file in DIR that is not a regular file the user may write or a symlink to one, e.g.
// a directory page.bin: file_io.hpp's rule), one line on `err`, nothing written; 3 a write error
// (DIR cannot be created or written, e.g. /proc/x: the system's reason) or an internal error,
// one line on `err`. Every byte is computed before DIR is touched; each file is written to a
// temporary name in its folder (`.NAME.tmp-XXXXXXXXXXXX`) and renamed over NAME (a symlink is
// written through), manifest.json last, so a reader that checks the manifest's hashes never
// accepts a mix of two runs. On a failure the temporary files are removed, the files already
// replaced are put back, and the folders this run created are removed (file_io::write_files).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <openssl/evp.h>
#include <nlohmann/json.hpp>

#include "dsv4/cache/formats/format_traits.hpp"
#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/tools/file_io.hpp"
#include "dsv4/tools/messages.hpp"

namespace dsv4::tools {

/// Exit codes of `golden`.
inline constexpr int kGoldenExitOk = 0;
inline constexpr int kGoldenExitBadInput = 2;
inline constexpr int kGoldenExitWriteError = 3;  ///< DIR not written, or an internal error

/// Rows accepted by --rows: 1 .. 65,536.
inline constexpr std::int64_t kGoldenMaxRows = 65'536;
/// fp32_state --row-bytes: a positive multiple of 1,024 up to 65,536.
inline constexpr std::int64_t kGoldenMaxRowBytes = 65'536;
/// Largest page written, 256 MiB (reached only by fp32_state with large rows).
inline constexpr std::int64_t kGoldenMaxPageBytes = std::int64_t{1} << 28;

/// The manifest's schema name.
inline constexpr std::string_view kGoldenSchema = "dsv4-cache-golden/2";

/// The input mapping as written in the manifest (see the top of this file).
inline constexpr std::string_view kGoldenInputMapping =
    "i = r*values_per_row + j; d = SplitMix64 output i (0-based) of seed S, mod 2^64: z = S + "
    "(i+1)*0x9E3779B97F4A7C15, "
    "z = (z^(z>>30))*0xBF58476D1CE4E5B9, z = (z^(z>>27))*0x94D049BB133111EB, d = z^(z>>31); b = i>>6; "
    "bf16 bits = 0 if b%7 == 6, else (d>>63)<<15 | (100 + ((d>>56)&31) - 4*(b%3))<<7 | (d&0x7F); "
    "input.bf16: 2 bytes little-endian per value; input.f32 (fp32_state): float32 bits = bf16 bits<<16, 4 bytes "
    "little-endian";

/// `golden` subcommand inputs.
struct golden_args {
  std::string format;               ///< registry name
  std::int64_t rows = 64;           ///< N, rows of the page (with input_file: checked when rows_given)
  std::uint64_t seed = 0;           ///< S
  std::string out_dir;              ///< DIR
  std::string writer = "default";   ///< `default` or a producer in the format's `writers`
  std::string policy;               ///< --policy, the schema-/1 alias of --writer ("" if not given)
  std::int64_t row_bytes = 0;       ///< fp32_state only: the group's row bytes (0: not given)
  std::string input_file;           ///< --input FILE ("" for the SplitMix64 rows)
  std::string input_type = "bf16";  ///< --input-type: "bf16" or "f32"
  bool rows_given = false;          ///< --rows was given (set by the CLI)
  bool seed_given = false;          ///< --seed was given (set by the CLI; bad input with input_file)
};

/// SplitMix64 output i (0-based) for seed `seed`: the generator's state after i + 1 steps, mixed.
constexpr std::uint64_t splitmix64_at(std::uint64_t seed, std::uint64_t i) noexcept {
  std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// BF16 bits of input value i for seed `seed` (the mapping at the top of this file).
constexpr std::uint16_t golden_input_bits(std::uint64_t seed, std::uint64_t i) noexcept {
  const std::uint64_t b = i >> 6;
  if (b % 7 == 6) return 0;
  const std::uint64_t d = splitmix64_at(seed, i);
  const std::uint64_t exponent = 100 + ((d >> 56) & 31) - 4 * (b % 3);
  return static_cast<std::uint16_t>(((d >> 63) << 15) | (exponent << 7) | (d & 0x7F));
}

/// Lowercase hex SHA-256 of `n` bytes (OpenSSL libcrypto). Throws std::runtime_error if it fails.
inline std::string sha256_hex(const void* data, std::size_t n) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_Digest(data, n, md.data(), &len, EVP_sha256(), nullptr) != 1 || len != 32)
    throw std::runtime_error("OpenSSL EVP_Digest(SHA-256) failed");
  std::string hex;
  for (unsigned int k = 0; k < len; ++k) hex += fmt::format("{:02x}", md[k]);
  return hex;
}

/// Everything `golden` writes, computed in memory.
struct golden_image {
  std::string input_name;  ///< "input.bf16", or "input.f32" for fp32_state
  std::vector<std::uint8_t> input;
  std::vector<std::uint8_t> page;
  std::string input_sha256, page_sha256;
  std::string manifest_text;  ///< manifest.json: ordered_json dump(2) and a newline
  std::string manifest_sha256;
};

namespace golden_detail {

using dsv4::tools::one_line;  // messages.hpp

[[noreturn]] inline void bad_input(const std::string& msg) { throw std::invalid_argument(msg); }

/// The writer named `name` of the format at registry index `index` ("default": its first).
/// Throws std::invalid_argument naming the value and the format's writers.
inline const cache::format_writer& resolve_writer(int index, std::string_view name) {
  const auto writers = cache::kFormatWriters[static_cast<std::size_t>(index)];
  if (name == "default") return writers[0];
  cache::writer_id id{};
  if (cache::writer_from_name(name, id))
    if (const cache::format_writer* w = cache::find_writer(index, id)) return *w;
  std::string names = "default";
  for (const cache::format_writer& w : writers) names += ", " + std::string(cache::to_string(w.producer));
  bad_input(fmt::format("unknown writer '{}' for {} (accepted: {})", one_line(name),
                        cache::kFormats[static_cast<std::size_t>(index)].name, names));
}

/// The bytes of the regular file `path`, at most `max_bytes`. Throws std::invalid_argument
/// (bad input) naming the file: missing, not a regular file, unreadable, empty or too large.
inline std::vector<std::uint8_t> read_input_file(const std::string& path, std::int64_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st))
    bad_input(
        fmt::format("--input {}: cannot read it: {}", one_line(path), ec ? ec.message() : std::string("no such file")));
  if (!fs::is_regular_file(st)) bad_input(fmt::format("--input {}: not a regular file", one_line(path)));
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) bad_input(fmt::format("--input {}: cannot read its size: {}", one_line(path), ec.message()));
  if (size == 0) bad_input(fmt::format("--input {}: the file is empty (0 B)", one_line(path)));
  if (size > static_cast<std::uintmax_t>(max_bytes))
    bad_input(fmt::format("--input {}: {} B, over the {} B that {} rows take", one_line(path), size, max_bytes,
                          kGoldenMaxRows));
  std::ifstream in(path, std::ios::binary);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  if (!in || !in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size)) ||
      in.gcount() != static_cast<std::streamsize>(size))
    bad_input(fmt::format("--input {}: cannot read {} B from it", one_line(path), size));
  return bytes;
}

inline void put_le(std::vector<std::uint8_t>& out, std::uint32_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) out.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
}

}  // namespace golden_detail

/// The files `golden` writes for `a` (out_dir is not read). Throws std::invalid_argument for bad
/// input (unknown format or writer, rows outside [1, 65,536], a missing or wrong --row-bytes; an
/// input file that cannot be read or is not a whole number of rows; --seed with --input;
/// --writer and --policy naming two writers).
inline golden_image make_golden(const golden_args& a) {
  using golden_detail::bad_input;
  using golden_detail::one_line;
  const int index = cache::format_index(a.format);
  if (index < 0)
    bad_input(fmt::format("unknown row format '{}' (registered: {})", one_line(a.format), cache::format_names()));
  const bool from_file = !a.input_file.empty();
  if (!from_file && (a.rows < 1 || a.rows > kGoldenMaxRows))
    bad_input(fmt::format("--rows must be in [1, {}], got {}", kGoldenMaxRows, a.rows));
  if (from_file && a.seed_given) bad_input("--seed has no effect with --input (the rows come from the file)");
  if (a.input_type != "bf16" && a.input_type != "f32")
    bad_input(fmt::format("--input-type must be bf16 or f32, got '{}'", one_line(a.input_type)));
  if (!from_file && a.input_type != "bf16") bad_input("--input-type has no effect without --input");
  const cache::format_layout& reg = cache::kFormats[static_cast<std::size_t>(index)];
  const bool bound = reg.row_bytes == 0;  // fp32_state: rows bound per group
  if (bound && a.row_bytes == 0)
    bad_input(
        fmt::format("{} rows are bound per group: give --row-bytes B (a multiple of 1024 up to {}, e.g. 8192 "
                    "for the V4 CSA compressor state)",
                    reg.name, kGoldenMaxRowBytes));
  if (!bound && a.row_bytes != 0)
    bad_input(fmt::format("--row-bytes is for fp32_state only ({} rows are {} B)", reg.name, reg.row_bytes));
  if (bound && (a.row_bytes < 0 || a.row_bytes > kGoldenMaxRowBytes || a.row_bytes % 1024 != 0))
    bad_input(fmt::format("--row-bytes must be a positive multiple of 1024 up to {}, got {}", kGoldenMaxRowBytes,
                          a.row_bytes));
  const cache::format_layout layout = bound ? cache::bind_state_row_bytes(a.row_bytes) : reg;
  // --policy is --writer's old name: either may be given, or both naming the same writer.
  std::string writer_name = a.writer;
  if (!a.policy.empty()) {
    if (a.writer != "default" && a.writer != a.policy)
      bad_input(fmt::format("--writer {} and --policy {} name two writers (--policy is --writer's old name)",
                            one_line(a.writer), one_line(a.policy)));
    writer_name = a.policy;
  }
  const cache::format_writer& writer = golden_detail::resolve_writer(index, writer_name);
  const std::int64_t values = layout.values;

  golden_image g;
  std::vector<std::uint8_t> file;
  std::int64_t rows = a.rows;
  const std::int64_t elem = a.input_type == "f32" ? 4 : 2;
  if (from_file) {
    const std::int64_t row_in = values * elem;
    file = golden_detail::read_input_file(a.input_file, kGoldenMaxRows * row_in);
    const auto size = static_cast<std::int64_t>(file.size());
    if (size % row_in != 0)
      bad_input(
          fmt::format("--input {}: {} B is not a whole number of rows: {} rows are {} values of {} ({} B "
                      "each)",
                      one_line(a.input_file), size, reg.name, values, a.input_type, row_in));
    if (a.rows_given && a.rows != size / row_in)
      bad_input(fmt::format("--rows {} but --input {} holds {} rows ({} B of {}-B rows)", a.rows,
                            one_line(a.input_file), size / row_in, size, row_in));
    rows = size / row_in;
  }
  const std::int64_t page_bytes = layout.page_bytes(rows);
  if (page_bytes > kGoldenMaxPageBytes)
    bad_input(fmt::format("a page of {} rows of {} B is {} B, over the {} B a golden page may take", rows,
                          layout.row_bytes, page_bytes, kGoldenMaxPageBytes));

  // Value k of the input as BF16 bits (a BF16 format) or float32 bits (fp32_state).
  const auto file_value = [&](std::int64_t k, bool want_f32) -> std::uint32_t {
    const std::uint8_t* p = file.data() + k * elem;
    if (elem == 2) {
      const auto b = static_cast<std::uint32_t>(p[0] | (p[1] << 8));
      return want_f32 ? b << 16 : b;
    }
    const std::uint32_t f = static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
                            (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
    return want_f32 ? f : cache::float_to_bf16(std::bit_cast<float>(f)).bits;
  };
  g.page.assign(static_cast<std::size_t>(page_bytes), 0);
  cache::visit_format(index, [&]<cache::row_format F>() {
    using In = typename F::input_type;
    constexpr bool f32 = std::is_same_v<In, float>;
    g.input_name = f32 ? "input.f32" : "input.bf16";
    g.input.reserve(static_cast<std::size_t>(rows * values) * sizeof(In));
    std::vector<In> row(static_cast<std::size_t>(values));
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t j = 0; j < values; ++j) {
        const std::int64_t k = r * values + j;
        const std::uint32_t bits = from_file ? file_value(k, f32)
                                   : f32 ? std::uint32_t{golden_input_bits(a.seed, static_cast<std::uint64_t>(k))} << 16
                                         : golden_input_bits(a.seed, static_cast<std::uint64_t>(k));
        if constexpr (f32) {
          row[static_cast<std::size_t>(j)] = std::bit_cast<float>(bits);
          golden_detail::put_le(g.input, bits, 4);
        } else {
          row[static_cast<std::size_t>(j)] = cache::bf16{static_cast<std::uint16_t>(bits)};
          golden_detail::put_le(g.input, bits, 2);
        }
      }
      cache::quantize_row<F>(layout, g.page.data(), rows, r, row.data(), writer.policy);
    }
  });
  g.input_sha256 = sha256_hex(g.input.data(), g.input.size());
  g.page_sha256 = sha256_hex(g.page.data(), g.page.size());

  using json = nlohmann::ordered_json;
  json files = json::object();
  files[g.input_name] = {{"bytes", g.input.size()}, {"sha256", g.input_sha256}};
  files["page.bin"] = {{"bytes", g.page.size()}, {"sha256", g.page_sha256}};
  const std::string mapping =
      from_file ? fmt::format("rows read from {} ({}, little-endian{})", one_line(a.input_file), a.input_type,
                              elem == 4 && g.input_name == "input.bf16" ? ", rounded to BF16 to nearest even" : "")
                : std::string(kGoldenInputMapping);
  const json manifest = {{"schema", std::string(kGoldenSchema)},
                         {"format", std::string(reg.name)},
                         {"writer", std::string(cache::to_string(writer.producer))},
                         {"writer_source", std::string(writer.source)},
                         {"rows", rows},
                         {"seed", from_file ? json(nullptr) : json(a.seed)},
                         {"values_per_row", values},
                         {"row_bytes", layout.row_bytes},
                         {"page_bytes", page_bytes},
                         {"input_mapping", mapping},
                         {"files", files}};
  g.manifest_text = manifest.dump(2) + "\n";
  g.manifest_sha256 = sha256_hex(g.manifest_text.data(), g.manifest_text.size());
  return g;
}

namespace golden_detail {

// The all-or-nothing file writes (file_io.hpp), shared with dsv4-cache-plan --svg.
using file_io::errno_text;
using file_io::write_error;
using file_io::write_files;

}  // namespace golden_detail

/// Runs `golden` on parsed arguments: writes the three files to a.out_dir and prints their
/// SHA-256 lines on `out`. Returns the exit code (see the top of this file).
inline int run_golden(const golden_args& a, std::ostream& out, std::ostream& err) {
  golden_image g;
  try {
    if (a.out_dir.empty()) golden_detail::bad_input("--out must not be empty");
    g = make_golden(a);
  } catch (const std::invalid_argument& e) {
    err << "dsv4-cache-layout: error: " << dsv4::tools::error_text(e.what()) << "\n";
    return kGoldenExitBadInput;
  } catch (const std::exception& e) {
    err << "dsv4-cache-layout: internal error: " << dsv4::tools::error_text(e.what()) << "\n";
    return kGoldenExitWriteError;
  }
  try {
    const auto view = [](const std::vector<std::uint8_t>& v) {
      return std::string_view(reinterpret_cast<const char*>(v.data()), v.size());
    };
    golden_detail::write_files(a.out_dir, {{g.input_name, view(g.input)},
                                           {"page.bin", view(g.page)},
                                           {"manifest.json", std::string_view(g.manifest_text)}});
  } catch (const golden_detail::write_error& e) {
    err << "dsv4-cache-layout: error: " << dsv4::tools::error_text(e.what()) << "\n";
    return kGoldenExitWriteError;
  } catch (const std::invalid_argument& e) {  // file_io::refused_output: DIR or a file in it may not be written
    err << "dsv4-cache-layout: error: " << dsv4::tools::error_text(e.what()) << "\n";
    return kGoldenExitBadInput;
  } catch (const std::exception& e) {
    err << "dsv4-cache-layout: error: writing " << golden_detail::one_line(a.out_dir) << ": "
        << golden_detail::one_line(e.what()) << "\n";
    return kGoldenExitWriteError;
  }
  out << g.input_sha256 << "  " << g.input_name << "\n"
      << g.page_sha256 << "  page.bin\n"
      << g.manifest_sha256 << "  manifest.json\n"
      << std::flush;
  if (!out) {
    err << "dsv4-cache-layout: error: the files were written, but writing the output failed\n";
    return kGoldenExitWriteError;
  }
  return kGoldenExitOk;
}

}  // namespace dsv4::tools
