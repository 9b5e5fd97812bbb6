// Golden pages (dsv4-cache-layout golden, tools/include/dsv4/tools/golden.hpp): the v4.fp8_ds_mla
// page for seed 7 equals byte for byte the one written by an independent implementation of the
// format (tests/golden/fp8_ds_mla_writer.py: exact rational arithmetic, Python's hashlib for a
// second SHA-256); the manifest's fields; determinism; every registered format's page size; the
// bad-input and write-error contract (exit 2 / 3, one line on stderr, nothing half-written);
// writers (`--writer`) and the user's own rows (`--input`): every modelled writer of the FP8,
// FP4 and indexer formats equals tests/golden/golden_writer.py (written from the docs and
// docs/engines/writers.md, not from this code) on SplitMix64 rows and on a file of +-inf, NaN,
// subnormals, ties and zero blocks, and each rule's witness has its hand-derived bytes.
// In process: run_golden, and the `golden` subcommand parsed by CLI11 as run_layout parses it.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../test_util.hpp"
#include "dsv4/tools/golden_cli.hpp"

namespace dsv4::tools {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

using run_result = dsv4::cache::testing::cli_run;

run_result run_args(const golden_args& a) {
  return dsv4::cache::testing::run_in_process(
      [&](std::ostream& out, std::ostream& err) { return run_golden(a, out, err); });
}

/// The `golden` subcommand on a CLI11 app, parsed and run as dsv4-cache-layout runs it.
run_result run_cli(const std::vector<std::string>& args) {
  golden_args a;
  CLI::App app{"golden test", "dsv4-cache-layout"};
  app.require_subcommand(1);
  add_golden_command(app, a);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return {kGoldenExitBadInput, "", std::string("dsv4-cache-layout: error: ") + e.what() + "\n"};
  }
  return run_args(a);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << p;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

bool is_lower_hex64(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

/// A fresh temporary directory per test, removed afterwards.
class Golden : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() / ("dsv4-golden-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  fs::path dir(const std::string& name) const { return root_ / name; }

  /// Runs `golden FORMAT --rows N --seed S --out DIR` in process; expects success.
  fs::path golden(const std::string& format, std::int64_t rows, std::uint64_t seed, const std::string& name,
                  const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {
        "golden", format, "--rows", std::to_string(rows), "--seed", std::to_string(seed), "--out", dir(name).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const run_result r = run_cli(args);
    EXPECT_EQ(r.code, kGoldenExitOk) << r.err;
    EXPECT_TRUE(r.err.empty()) << r.err;
    return dir(name);
  }

  fs::path root_;
};

// ---------------------------------------------------------------- the input mapping

TEST(GoldenInput, SplitMix64MatchesPublishedVectors) {
  // Rosetta Code "Pseudo-random numbers/Splitmix64": seed 1234567, the first five outputs.
  const std::uint64_t want[] = {6457827717110365317ULL, 3203168211198807973ULL, 9817491932198370423ULL,
                                4593380528125082431ULL, 16408922859458223821ULL};
  for (std::uint64_t i = 0; i < 5; ++i) EXPECT_EQ(splitmix64_at(1234567, i), want[i]) << i;
  EXPECT_EQ(splitmix64_at(0, 0), 0xE220A8397B1DCDAFULL);  // seed 0: the classic first output
}

TEST(GoldenInput, MappingAsDocumented) {
  for (std::uint64_t seed : {0ULL, 7ULL, ~0ULL}) {
    for (std::uint64_t i = 0; i < 4096; ++i) {
      const std::uint16_t bits = golden_input_bits(seed, i);
      const std::uint64_t b = i >> 6;
      if (b % 7 == 6) {
        EXPECT_EQ(bits, 0);
        continue;
      }
      const std::uint64_t d = splitmix64_at(seed, i);
      EXPECT_EQ(bits >> 15, d >> 63);
      EXPECT_EQ((bits >> 7) & 0xFF, 100 + ((d >> 56) & 31) - 4 * (b % 3));
      EXPECT_EQ(bits & 0x7F, d & 0x7F);
      const unsigned exponent = (bits >> 7) & 0xFFU;
      EXPECT_GE(exponent, 92U);  // 2^-35: never zero, subnormal, infinite or NaN
      EXPECT_LE(exponent, 131U);
    }
  }
}

// ---------------------------------------------------------------- the independent writer

TEST_F(Golden, Fp8DsMlaSeed7MatchesIndependentPythonWriter) {
  const std::string python = DSV4_PYTHON3;
  if (python.empty())
    GTEST_SKIP() << "no Python 3 interpreter found by CMake (find_package(Python3)): the independent "
                    "writer tests/golden/fp8_ds_mla_writer.py cannot run";
  const fs::path ours = golden("v4.fp8_ds_mla", 64, 7, "cpp", {"--writer", "vllm"});  // the Python file's rule
  const fs::path theirs = dir("py");
  const std::string cmd = "'" + python + "' '" + std::string(DSV4_GOLDEN_WRITER_PY) + "' --rows 64 --seed 7 --out '" +
                          theirs.string() + "' 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr) << cmd;
  std::string printed;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) printed += buf;
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << printed;

  // Byte for byte.
  const std::string page = read_file(ours / "page.bin");
  const std::string input = read_file(ours / "input.bf16");
  ASSERT_EQ(page.size(), 37'440U);
  ASSERT_EQ(input.size(), 64U * 512 * 2);
  EXPECT_TRUE(read_file(theirs / "input.bf16") == input) << "input.bf16 differs from the Python writer's";
  const std::string py_page = read_file(theirs / "page.bin");
  ASSERT_EQ(py_page.size(), page.size());
  for (std::size_t k = 0; k < page.size(); ++k)
    ASSERT_EQ(static_cast<unsigned char>(page[k]), static_cast<unsigned char>(py_page[k])) << "page byte " << k;

  // The manifest's SHA-256 values equal Python hashlib's.
  const json m = json::parse(read_file(ours / "manifest.json"));
  const std::string in_sha = m["files"]["input.bf16"]["sha256"];
  const std::string page_sha = m["files"]["page.bin"]["sha256"];
  EXPECT_EQ(printed, in_sha + "  input.bf16\n" + page_sha + "  page.bin\n");

  // The page exercises the interesting cases: scales of several binades, the all-zero block
  // (byte 105), signed zero codes, saturation-free maxima.
  std::set<int> scale_bytes;
  for (int r = 0; r < 64; ++r)
    for (int blk = 0; blk < 7; ++blk) scale_bytes.insert(static_cast<unsigned char>(page[64 * 576 + r * 8 + blk]));
  EXPECT_TRUE(scale_bytes.count(105)) << "no all-zero block";
  EXPECT_GE(scale_bytes.size(), 6U);
  EXPECT_EQ(static_cast<unsigned char>(page[64 * 576 + 6]), 105);  // row 0 block 6: run 6, all zero
}

// ---------------------------------------------------------------- writers and --input

void expect_bad(const run_result& r, const std::string& fragment) {
  EXPECT_EQ(r.code, kGoldenExitBadInput) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
}

/// Writes `bits` (BF16, little-endian) to `path`.
void write_bf16_file(const fs::path& path, const std::vector<std::uint16_t>& bits) {
  std::ofstream out(path, std::ios::binary);
  for (const std::uint16_t b : bits) {
    out.put(static_cast<char>(b & 0xFF));
    out.put(static_cast<char>(b >> 8));
  }
}

/// BF16 bits of the hard cases, `values` per row, `rows` rows: per 16-value tile t (row-major
/// index / 16), by t % 6: 0 all zero; 1 +inf at its first value, then 1, -2, 1000, -500, tiny
/// 2^-20 ...; 2 a NaN among ordinary values; 3 BF16 subnormals (0x0001 .. 0x007F, both signs);
/// 4 E2M1 / E4M3 ties on a power-of-two amax (6 x 2^k: 0.75, 1.75, 3.5, 2.5, 5 and 0.25 x 2^k,
/// negatives that round to zero); 5 -inf with large finite values. `finite`: patterns 1, 2 and 5
/// become all-zero tiles (for the MXFP4 writers, which do not model non-finite input).
std::vector<std::uint16_t> hard_cases(std::int64_t rows, std::int64_t values, bool finite) {
  std::vector<std::uint16_t> v(static_cast<std::size_t>(rows * values));
  constexpr std::uint16_t kOrdinary[16] = {0x3F80, 0xC000, 0x447A, 0xC3FA, 0x3580, 0x3F00, 0xBF40, 0x4040,
                                           0x3E80, 0xBE80, 0x4100, 0xC100, 0x3C00, 0x3FC0, 0xBFC0, 0x4000};
  constexpr std::uint16_t kTies[16] = {0x40C0, 0x3F40, 0x3FE0, 0x4060, 0x4020, 0x40A0, 0x3E80, 0xBDCD,
                                       0xBE4D, 0xBF40, 0x3FA0, 0xC060, 0x3F20, 0x3E00, 0x8000, 0x0000};
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::size_t t = i / 16, k = i % 16;
    const std::uint16_t shift = static_cast<std::uint16_t>(((t / 6) % 4) << 7);  // 2^0 .. 2^3 for the ties
    switch (t % 6) {
      case 0: v[i] = 0; break;
      case 1: v[i] = finite ? 0 : (k == 0 ? 0x7F80 : kOrdinary[k]); break;
      case 2: v[i] = finite ? 0 : (k == 5 ? 0x7FC1 : kOrdinary[k]); break;
      case 3: v[i] = static_cast<std::uint16_t>((k % 2 ? 0x8000 : 0) | (1 + 8 * k)); break;
      case 4:
        v[i] = kTies[k] == 0 || kTies[k] == 0x8000 ? kTies[k] : static_cast<std::uint16_t>(kTies[k] + shift);
        break;
      default: v[i] = finite ? 0 : (k == 3 ? 0xFF80 : kOrdinary[(k + 2) % 16]); break;
    }
  }
  return v;
}

/// The (format, writer) pairs tests/golden/golden_writer.py implements.
const std::vector<std::pair<std::string, std::string>> kPythonWriters = {{"v4.fp8_ds_mla", "flashmla"},
                                                                         {"v4.fp8_ds_mla", "vllm"},
                                                                         {"v4.1.fp8", "flashmla"},
                                                                         {"v4.1.fp8", "sglang"},
                                                                         {"v4.1.fp8.interleaved", "flashmla"},
                                                                         {"v4.1.fp8.interleaved", "sglang"},
                                                                         {"v4.1.fp4", "flashmla"},
                                                                         {"v4.1.fp4.interleaved", "flashmla"},
                                                                         {"v4.1.fp4.align256", "flashmla"},
                                                                         {"v4.indexer_fp8", "vllm"},
                                                                         {"v4.indexer_fp8", "tokenspeed"},
                                                                         {"v4.indexer_mxfp4", "vllm"},
                                                                         {"v4.indexer_mxfp4", "tokenspeed"}};

/// Runs the Python writer with `args`; returns its exit status (-1 if it could not run).
int run_python_writer(const std::string& args) {
  const std::string cmd =
      "'" + std::string(DSV4_PYTHON3) + "' '" + std::string(DSV4_GOLDEN_WRITERS_PY) + "' " + args + " > /dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(Golden, EveryWriterMatchesTheIndependentPythonWriter) {
  if (std::string(DSV4_PYTHON3).empty())
    GTEST_SKIP() << "no Python 3 interpreter found by CMake: tests/golden/golden_writer.py cannot run";
  struct run_case {
    std::int64_t rows;
    std::uint64_t seed;
    bool file;  // the hard cases through --input
  };
  for (const auto& [format, writer] : kPythonWriters) {
    const cache::format_layout& l = cache::format_by_name(format);
    const bool mxfp4 = format == "v4.indexer_mxfp4";
    for (const run_case c : {run_case{64, 7, false}, run_case{3, 1, false}, run_case{5, 0, true}}) {
      SCOPED_TRACE(format + " --writer " + writer + " rows " + std::to_string(c.rows));
      const std::string tag = format + "-" + writer + "-" + std::to_string(c.rows);
      std::vector<std::string> args = {"golden", format, "--writer", writer, "--out", dir("cpp-" + tag).string()};
      std::string py = "'" + format + "' --writer " + writer + " --out '" + dir("py-" + tag).string() + "'";
      if (c.file) {
        const fs::path in = dir("hard-" + tag + ".bf16");
        write_bf16_file(in, hard_cases(c.rows, l.values, mxfp4));
        args.insert(args.end(), {"--input", in.string()});
        py += " --input '" + in.string() + "'";
      } else {
        args.insert(args.end(), {"--rows", std::to_string(c.rows), "--seed", std::to_string(c.seed)});
        py += " --rows " + std::to_string(c.rows) + " --seed " + std::to_string(c.seed);
      }
      const run_result r = run_cli(args);
      ASSERT_EQ(r.code, kGoldenExitOk) << r.err;
      ASSERT_EQ(run_python_writer(py), 0) << py;
      const std::string ours = read_file(dir("cpp-" + tag) / "page.bin");
      const std::string theirs = read_file(dir("py-" + tag) / "page.bin");
      ASSERT_EQ(ours.size(), static_cast<std::size_t>(l.page_bytes(c.rows)));
      ASSERT_EQ(theirs.size(), ours.size());
      for (std::size_t k = 0; k < ours.size(); ++k)
        ASSERT_EQ(static_cast<unsigned char>(ours[k]), static_cast<unsigned char>(theirs[k])) << "page byte " << k;
      EXPECT_TRUE(read_file(dir("cpp-" + tag) / "input.bf16") == read_file(dir("py-" + tag) / "input.bf16"));
    }
  }
}

/// The page `golden FORMAT --writer W --input FILE` writes for one row `bits`.
std::string page_for(const fs::path& root, const std::string& format, const std::string& writer,
                     const std::vector<std::uint16_t>& bits) {
  const fs::path in = root / (format + "-" + writer + "-row.bf16");
  write_bf16_file(in, bits);
  const fs::path out = root / (format + "-" + writer + "-out");
  const run_result r = run_cli({"golden", format, "--writer", writer, "--input", in.string(), "--out", out.string()});
  EXPECT_EQ(r.code, kGoldenExitOk) << r.err;
  return read_file(out / "page.bin");
}

unsigned byte_at(const std::string& s, std::size_t k) { return static_cast<unsigned char>(s.at(k)); }

TEST_F(Golden, RuleWitnessesHandDerived) {
  // FP4 tile holding +inf (docs/engines/writers.md 1; FlashMLA nan_to_num maps inf to FLT_MAX): amax / 6
  // clamps to 448 = E4M3 0x7E; +inf / 448 saturates to +6 (0x7); 1 / 448 and -2 / 448 are below
  // 0.25: +0 (0x0) and -0 (0x8); 1000 / 448 = 2.23 -> 2 (0x4); -500 / 448 = -1.116 -> -1 (0xA).
  std::vector<std::uint16_t> row(512, 0x3F80);  // 1.0
  row[0] = 0x7F80;                              // +inf
  row[1] = 0xC000;                              // -2
  row[2] = 0x447A;                              // 1000
  row[3] = 0xC3FA;                              // -500
  const std::string fp4 = page_for(root_, "v4.1.fp4", "flashmla", row);
  EXPECT_EQ(byte_at(fp4, 256), 0x7EU);  // tile 0's scale (split page, 1 row: scales at 256)
  EXPECT_EQ(byte_at(fp4, 0), 0x87U);    // values 0, 1: +6 low, -0 high
  EXPECT_EQ(byte_at(fp4, 1), 0xA4U);    // values 2, 3: 2 low, -1 high
  EXPECT_EQ(byte_at(fp4, 2), 0x00U);    // 1 / 448: +0
  // Tile 1 (all 1.0): 1 / 6 = 0.1667 -> E4M3 0.171875 (exponent -3, mantissa 3: 0x23); 1 /
  // 0.171875 = 5.82 -> 6 (0x7).
  EXPECT_EQ(byte_at(fp4, 257), 0x23U);
  EXPECT_EQ(byte_at(fp4, 8), 0x77U);
  // The same tile with a NaN instead of the inf is poisoned: scale 0x7F, codes 0.
  std::vector<std::uint16_t> nan_row = row;
  nan_row[0] = 0x7FC0;
  const std::string fp4n = page_for(root_, "v4.1.fp4", "flashmla", nan_row);
  EXPECT_EQ(byte_at(fp4n, 256), 0x7FU);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(byte_at(fp4n, k), 0x00U) << k;

  // FP8 block holding +inf (docs/engines/writers.md 2): scale from amax = inf, UE8M0 0xFF; inf / inf = NaN
  // (0x7F); -2 / inf = -0 (0x80), 1000 / inf = +0, -500 / inf = -0. Block 1 (all 1.0) under
  // FlashMLA: e = ceil(log2(1 / 448)) = -8, byte 119 (0x77), code 1 x 2^8 = 256 = E4M3 0x78.
  const std::string v4 = page_for(root_, "v4.fp8_ds_mla", "flashmla", row);
  EXPECT_EQ(byte_at(v4, 576), 0xFFU);  // one row: data 576 B, then the scales
  EXPECT_EQ(byte_at(v4, 0), 0x7FU);
  EXPECT_EQ(byte_at(v4, 1), 0x80U);
  EXPECT_EQ(byte_at(v4, 2), 0x00U);
  EXPECT_EQ(byte_at(v4, 3), 0x80U);
  EXPECT_EQ(byte_at(v4, 4), 0x00U);
  EXPECT_EQ(byte_at(v4, 577), 0x77U);
  EXPECT_EQ(byte_at(v4, 64), 0x78U);
  const std::string v41 = page_for(root_, "v4.1.fp8", "sglang", row);
  EXPECT_EQ(byte_at(v41, 512), 0xFFU);
  EXPECT_EQ(byte_at(v41, 0), 0x7FU);
  EXPECT_EQ(byte_at(v41, 1), 0x80U);
  // An fp32 scale: +inf, bytes 00 00 80 7F (V3.2 latent and the indexer keys).
  std::vector<std::uint16_t> key(row.begin(), row.begin() + 128);
  const std::string idx = page_for(root_, "v4.indexer_fp8", "vllm", key);
  EXPECT_EQ(idx.substr(128, 4), std::string("\x00\x00\x80\x7f", 4));
  EXPECT_EQ(byte_at(idx, 0), 0x7FU);
  std::vector<std::uint16_t> v32(576, 0x3F80);
  v32[0] = 0x7F80;
  const std::string p32 = page_for(root_, "v3.2.fp8_ds_mla", "flashmla", v32);
  EXPECT_EQ(p32.substr(512, 4), std::string("\x00\x00\x80\x7f", 4));  // interleaved: scales at 512
  EXPECT_EQ(p32.substr(516, 4), std::string("\x00\x00\x80\x3b", 4));  // block 1: 1 / 448 = 2^-8.8 -> 2^-8

  // Zero blocks, per writer (docs/engines/writers.md 3, 4): the floors' exponents by hand.
  const std::vector<std::uint16_t> zeros512(512, 0), zeros128(128, 0);
  EXPECT_EQ(byte_at(page_for(root_, "v4.fp8_ds_mla", "vllm", zeros512), 576), 105U);  // ceil(log2(1e-4 / 448)) = -22
  EXPECT_EQ(byte_at(page_for(root_, "v4.1.fp8", "flashmla", zeros512), 512), 114U);   // ceil(log2(1e-4)) = -13
  EXPECT_EQ(byte_at(page_for(root_, "v4.fp8_ds_mla.footer", "trtllm", zeros512), 576),
            92U);  // ceil(log2(1e-8 / 448)) = -35
  EXPECT_EQ(page_for(root_, "v4.indexer_fp8", "tokenspeed", zeros128).substr(128, 4),
            std::string("\x00\x00\x00\x2f", 4));  // 2^ceil(log2(1e-10)) = 2^-33
  EXPECT_EQ(page_for(root_, "v4.indexer_fp8", "vllm", zeros128).substr(128, 4),
            std::string("\x00\x00\x80\x34", 4));                                         // 2^-22
  EXPECT_EQ(byte_at(page_for(root_, "v4.indexer_mxfp4", "vllm", zeros128), 64), 0x01U);  // 6 x 2^-126 / 6 = 2^-126
  EXPECT_EQ(byte_at(page_for(root_, "v4.indexer_mxfp4", "tokenspeed", zeros128), 64),
            0x70U);  // ceil(log2(1e-4 / 6)) = -15

  // MXFP4 ties on a block amax of 6 (scale 2^0, byte 0x7F): 6, 0.75, 1.75, 3.5, -0.1, -0.2, 2.5, 5.
  // vLLM (nearest even, sign kept): 6 0x7, 0.75 -> 1 (0x2), 1.75 -> 2 (0x4), 3.5 -> 4 (0x6),
  // -0.1 and -0.2 -> -0 (0x8), 2.5 -> 2 (0x4), 5 -> 4 (0x6). tokenspeed (ties down, +0): 0x7,
  // 0.5 (0x1), 1.5 (0x3), 3 (0x5), 0x0, 0x0, 0x4, 0x6.
  std::vector<std::uint16_t> ties(128, 0);
  const std::uint16_t t8[8] = {0x40C0, 0x3F40, 0x3FE0, 0x4060, 0xBDCD, 0xBE4D, 0x4020, 0x40A0};
  for (int k = 0; k < 8; ++k) ties[static_cast<std::size_t>(k)] = t8[k];
  const std::string tv = page_for(root_, "v4.indexer_mxfp4", "vllm", ties);
  const std::string tt = page_for(root_, "v4.indexer_mxfp4", "tokenspeed", ties);
  EXPECT_EQ(byte_at(tv, 64), 0x7FU);
  EXPECT_EQ(byte_at(tt, 64), 0x7FU);
  EXPECT_EQ(tv.substr(0, 4), std::string("\x27\x64\x88\x64", 4));
  EXPECT_EQ(tt.substr(0, 4), std::string("\x17\x53\x00\x64", 4));
}

TEST_F(Golden, InputFileIsTheSeedRowsWhenGivenThem) {
  // The SplitMix64 rows written as a file give the same page; f32 input rounds to BF16.
  const fs::path g = golden("v4.1.fp8", 3, 7, "seeded");
  const run_result r =
      run_cli({"golden", "v4.1.fp8", "--input", (g / "input.bf16").string(), "--out", dir("file").string()});
  ASSERT_EQ(r.code, kGoldenExitOk) << r.err;
  EXPECT_TRUE(read_file(g / "page.bin") == read_file(dir("file") / "page.bin"));
  EXPECT_TRUE(read_file(g / "input.bf16") == read_file(dir("file") / "input.bf16"));
  const json m = json::parse(read_file(dir("file") / "manifest.json"));
  EXPECT_EQ(m["rows"], 3);
  EXPECT_TRUE(m["seed"].is_null());
  EXPECT_NE(m["input_mapping"].get<std::string>().find("rows read from"), std::string::npos);
  // float32: bits << 16 (exact), and one value that rounds: 0x3F808001 -> BF16 0x3F81 (above
  // the halfway point 0x3F808000).
  const std::string bf = read_file(g / "input.bf16");
  std::string f32;
  for (std::size_t k = 0; k + 1 < bf.size(); k += 2) f32 += std::string("\0\0", 2) + bf.substr(k, 2);
  f32.replace(0, 4, std::string("\x01\x80\x80\x3f", 4));
  std::ofstream(dir("in.f32"), std::ios::binary) << f32;
  const run_result rf = run_cli({"golden", "v4.1.fp8", "--input", dir("in.f32").string(), "--input-type", "f32",
                                 "--rows", "3", "--out", dir("f32").string()});
  ASSERT_EQ(rf.code, kGoldenExitOk) << rf.err;
  const std::string in2 = read_file(dir("f32") / "input.bf16");
  EXPECT_EQ(in2.substr(0, 2), std::string("\x81\x3f", 2));
  EXPECT_TRUE(in2.substr(2) == bf.substr(2));
}

TEST_F(Golden, BadInputFiles) {
  const std::string out = dir("bad").string();
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--input", dir("missing").string(), "--out", out}),
             "missing: cannot read it");
  fs::create_directories(dir("adir"));
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--input", dir("adir").string(), "--out", out}), "not a regular file");
  std::ofstream(dir("empty.bf16")) << "";
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--input", dir("empty.bf16").string(), "--out", out}),
             "the file is empty (0 B)");
  std::ofstream(dir("odd.bf16"), std::ios::binary) << std::string(1025, '\0');
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--input", dir("odd.bf16").string(), "--out", out}),
             "1025 B is not a whole number of rows: v4.fp8_ds_mla rows are 512 values of bf16 (1024 B each)");
  std::ofstream(dir("two.bf16"), std::ios::binary) << std::string(2048, '\0');
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--input", dir("two.bf16").string(), "--rows", "3", "--out", out}),
             "--rows 3 but --input");
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--input", dir("two.bf16").string(), "--seed", "1", "--out", out}),
             "--seed has no effect with --input");
  expect_bad(
      run_cli({"golden", "v4.fp8_ds_mla", "--input", dir("two.bf16").string(), "--input-type", "f16", "--out", out}),
      "--input-type must be bf16 or f32, got 'f16'");
  EXPECT_FALSE(fs::exists(dir("bad"))) << "bad input created the output directory";
  // The two rows of zeros are fine with --rows 2.
  const run_result ok = run_cli(
      {"golden", "v4.fp8_ds_mla", "--input", dir("two.bf16").string(), "--rows", "2", "--out", dir("two").string()});
  EXPECT_EQ(ok.code, kGoldenExitOk) << ok.err;
}

// ---------------------------------------------------------------- the manifest

TEST_F(Golden, ManifestFieldsAndStdout) {
  const std::vector<std::string> args = {"golden", "v4.fp8_ds_mla", "--rows",         "64", "--seed",
                                         "7",      "--out",         dir("m").string()};
  const run_result r = run_cli(args);
  ASSERT_EQ(r.code, kGoldenExitOk) << r.err;
  EXPECT_EQ(names_in(dir("m")), (std::set<std::string>{"input.bf16", "page.bin", "manifest.json"}));
  const std::string text = read_file(dir("m") / "manifest.json");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(text.find("\n  \"format\": \"v4.fp8_ds_mla\""), std::string::npos) << text;  // 2-space indent
  const nlohmann::ordered_json m = nlohmann::ordered_json::parse(text);
  EXPECT_EQ(text, m.dump(2) + "\n");
  std::vector<std::string> keys;
  for (const auto& [k, v] : m.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "format", "writer", "writer_source", "rows", "seed",
                                            "values_per_row", "row_bytes", "page_bytes", "input_mapping", "files"}));
  EXPECT_EQ(m["schema"], "dsv4-cache-golden/2");
  EXPECT_EQ(m["format"], "v4.fp8_ds_mla");
  EXPECT_EQ(m["writer"], "flashmla");  // the format's default writer, resolved
  EXPECT_NE(m["writer_source"].get<std::string>().find("FlashMLA"), std::string::npos);
  EXPECT_EQ(m["rows"], 64);
  EXPECT_EQ(m["seed"], 7);
  EXPECT_EQ(m["values_per_row"], 512);
  EXPECT_EQ(m["row_bytes"], 584);
  EXPECT_EQ(m["page_bytes"], 37'440);
  EXPECT_EQ(m["input_mapping"], std::string(kGoldenInputMapping));
  std::vector<std::string> file_keys;
  for (const auto& [k, v] : m["files"].items()) file_keys.push_back(k);
  EXPECT_EQ(file_keys, (std::vector<std::string>{"input.bf16", "page.bin"}));
  std::string expect_out;
  for (const std::string name : {"input.bf16", "page.bin"}) {
    const auto& f = m["files"][name];
    const std::string bytes = read_file(dir("m") / name);
    EXPECT_EQ(f["bytes"], bytes.size()) << name;
    const std::string sha = f["sha256"];
    EXPECT_TRUE(is_lower_hex64(sha)) << sha;
    EXPECT_EQ(sha, sha256_hex(bytes.data(), bytes.size())) << name;
    expect_out += sha + "  " + name + "\n";
  }
  expect_out += sha256_hex(text.data(), text.size()) + "  manifest.json\n";
  EXPECT_EQ(r.out, expect_out);
}

TEST(GoldenSha256, KnownVectors) {  // FIPS 180-2 examples: OpenSSL is wired correctly
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(Golden, LargestSeedAndLeadingZeros) {
  const fs::path d = golden("v4.indexer_fp8", 3, 18446744073709551615ULL, "max");
  const json m = json::parse(read_file(d / "manifest.json"));
  EXPECT_EQ(m["seed"].get<std::uint64_t>(), 18446744073709551615ULL);
  const run_result r =
      run_cli({"golden", "v4.indexer_fp8", "--rows", "010", "--seed", "0007", "--out", dir("z").string()});
  ASSERT_EQ(r.code, kGoldenExitOk) << r.err;
  const json z = json::parse(read_file(dir("z") / "manifest.json"));
  EXPECT_EQ(z["rows"], 10);  // decimal, not octal 8
  EXPECT_EQ(z["seed"], 7);
}

TEST_F(Golden, DefaultsRows64Seed0) {
  const run_result r = run_cli({"golden", "v4.bf16", "--out", dir("d").string()});
  ASSERT_EQ(r.code, kGoldenExitOk) << r.err;
  const json m = json::parse(read_file(dir("d") / "manifest.json"));
  EXPECT_EQ(m["rows"], 64);
  EXPECT_EQ(m["seed"], 0);
  EXPECT_EQ(m["page_bytes"], 65'536);
}

// ---------------------------------------------------------------- determinism

TEST_F(Golden, DeterministicAndSeedSensitive) {
  const fs::path a = golden("v4.fp8_ds_mla", 64, 7, "a");
  const fs::path b = golden("v4.fp8_ds_mla", 64, 7, "b");
  const fs::path c = golden("v4.fp8_ds_mla", 64, 8, "c");
  for (const std::string name : {"input.bf16", "page.bin", "manifest.json"}) {
    EXPECT_TRUE(read_file(a / name) == read_file(b / name)) << name << " differs between two runs";
    EXPECT_FALSE(read_file(a / name) == read_file(c / name)) << name << " is the same for seeds 7 and 8";
  }
  // Running again into the same directory replaces the files, leaves other files alone.
  std::ofstream(a / "notes.txt") << "keep";
  golden("v4.fp8_ds_mla", 64, 8, "a");
  EXPECT_TRUE(read_file(a / "page.bin") == read_file(c / "page.bin"));
  EXPECT_EQ(read_file(a / "notes.txt"), "keep");
  EXPECT_EQ(names_in(a), (std::set<std::string>{"input.bf16", "page.bin", "manifest.json", "notes.txt"}));
}

TEST_F(Golden, WritersAndThePolicyAlias) {
  const fs::path d = golden("v4.fp8_ds_mla", 64, 7, "default");
  const fs::path f = golden("v4.fp8_ds_mla", 64, 7, "flashmla", {"--writer", "flashmla"});
  const fs::path p = golden("v4.fp8_ds_mla", 64, 7, "alias", {"--policy", "flashmla"});
  const fs::path v = golden("v4.fp8_ds_mla", 64, 7, "vllm", {"--writer", "vllm"});
  const fs::path vp = golden("v4.fp8_ds_mla", 64, 7, "vllm-alias", {"--policy", "vllm", "--writer", "vllm"});
  EXPECT_TRUE(read_file(d / "input.bf16") == read_file(v / "input.bf16"));
  EXPECT_TRUE(read_file(d / "page.bin") == read_file(f / "page.bin"));  // the default is FlashMLA's writer
  EXPECT_TRUE(read_file(p / "page.bin") == read_file(f / "page.bin"));
  EXPECT_TRUE(read_file(vp / "page.bin") == read_file(v / "page.bin"));
  // Row 0 block 6 is an all-zero run of the input: the two floors (facts 4, docs/engines/writers.md 3):
  // FlashMLA e = ceil(log2(1e-4)) = -13 -> 114; vLLM e = ceil(log2(1e-4 / 448)) = -22 -> 105.
  EXPECT_EQ(static_cast<unsigned char>(read_file(f / "page.bin")[64 * 576 + 6]), 114);
  EXPECT_EQ(static_cast<unsigned char>(read_file(v / "page.bin")[64 * 576 + 6]), 105);
  EXPECT_EQ(json::parse(read_file(p / "manifest.json"))["writer"], "flashmla");
  EXPECT_EQ(json::parse(read_file(v / "manifest.json"))["writer"], "vllm");
}

// ---------------------------------------------------------------- every format

TEST_F(Golden, EveryFixedFormatPageSize) {
  for (const cache::format_layout& l : cache::kFormats) {
    if (l.row_bytes == 0) continue;  // fp32_state: below
    for (const std::int64_t rows : {1, 2, 3, 64}) {
      golden_args a;
      a.format = std::string(l.name);
      a.rows = rows;
      a.seed = 7;
      const golden_image g = make_golden(a);
      const json m = json::parse(g.manifest_text);
      EXPECT_EQ(static_cast<std::int64_t>(g.page.size()), l.page_bytes(rows)) << l.name << " rows " << rows;
      EXPECT_EQ(static_cast<std::int64_t>(g.input.size()), rows * l.values * 2) << l.name;
      EXPECT_EQ(g.input_name, "input.bf16");
      EXPECT_EQ(m["row_bytes"], l.row_bytes);
      EXPECT_EQ(m["values_per_row"], l.values);
      EXPECT_EQ(m["page_bytes"], l.page_bytes(rows));
    }
    // Through the files too, for N = 64.
    const fs::path d = golden(std::string(l.name), 64, 1, std::string(l.name));
    EXPECT_EQ(static_cast<std::int64_t>(fs::file_size(d / "page.bin")), l.page_bytes(64)) << l.name;
    EXPECT_EQ(static_cast<std::int64_t>(fs::file_size(d / "input.bf16")), 64 * l.values * 2) << l.name;
  }
}

TEST_F(Golden, Fp32StateWithRowBytes) {
  const fs::path d = golden("fp32_state", 4, 7, "state", {"--row-bytes", "4096"});
  EXPECT_EQ(names_in(d), (std::set<std::string>{"input.f32", "page.bin", "manifest.json"}));
  const std::string input = read_file(d / "input.f32");
  ASSERT_EQ(input.size(), 4U * 1024 * 4);
  // State rows are copied bit for bit: the page is the input.
  EXPECT_TRUE(read_file(d / "page.bin") == input);
  // float bits = BF16 bits << 16, little-endian.
  EXPECT_EQ(static_cast<unsigned char>(input[2]) | static_cast<unsigned char>(input[3]) << 8, golden_input_bits(7, 0));
  const json m = json::parse(read_file(d / "manifest.json"));
  EXPECT_EQ(m["row_bytes"], 4096);
  EXPECT_EQ(m["values_per_row"], 1024);
  EXPECT_EQ(m["files"]["input.f32"]["bytes"], 16'384);
}

// ---------------------------------------------------------------- bad input, write errors

TEST_F(Golden, BadInputWritesNothing) {
  const std::string out = dir("bad").string();
  const run_result unknown = run_cli({"golden", "v4.fp9", "--out", out});
  expect_bad(unknown, "unknown row format 'v4.fp9'");
  EXPECT_NE(unknown.err.find("v4.fp8_ds_mla"), std::string::npos);  // lists the registered names
  EXPECT_NE(unknown.err.find("fp32_state"), std::string::npos);
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--rows", "0", "--out", out}), "rows");
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--rows", "65537", "--out", out}), "rows");
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--rows", "0x40", "--out", out}), "rows");
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--seed", "-1", "--out", out}), "seed");
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--seed", "18446744073709551616", "--out", out}), "seed");
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--seed", "1e3", "--out", out}), "seed");
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla"}), "--out");
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--out", ""}), "--out");
  expect_bad(run_cli({"golden", "--out", out}), "FORMAT");
  const run_result writer = run_cli({"golden", "v4.fp8_ds_mla", "--writer", "tokenspeed", "--out", out});
  expect_bad(writer, "unknown writer 'tokenspeed' for v4.fp8_ds_mla");
  EXPECT_NE(writer.err.find("accepted: default, flashmla, vllm"), std::string::npos) << writer.err;
  expect_bad(run_cli({"golden", "v4.bf16", "--policy", "flashmla", "--out", out}), "accepted: default, trtllm)");
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--writer", "bogus", "--out", out}), "unknown writer 'bogus'");
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--writer", "vllm", "--policy", "flashmla", "--out", out}),
             "--writer vllm and --policy flashmla name two writers");
  expect_bad(run_cli({"golden", "v4.fp8_ds_mla", "--input-type", "f32", "--out", out}),
             "--input-type has no effect without --input");
  expect_bad(run_cli({"golden", "fp32_state", "--out", out}), "--row-bytes");
  expect_bad(run_cli({"golden", "fp32_state", "--row-bytes", "1000", "--out", out}), "--row-bytes");
  expect_bad(run_cli({"golden", "v4.bf16", "--row-bytes", "4096", "--out", out}), "fp32_state only");
  expect_bad(run_cli({"golden", "fp32_state", "--row-bytes", "65536", "--rows", "65536", "--out", out}), "over");
  // run_golden checks what it is handed directly, too.
  golden_args a;
  a.format = "v4.fp8_ds_mla";
  a.out_dir = out;
  a.rows = 0;
  expect_bad(run_args(a), "--rows must be in [1, 65536], got 0");
  a.rows = 64;
  a.out_dir.clear();
  expect_bad(run_args(a), "--out");
  EXPECT_FALSE(fs::exists(dir("bad"))) << "bad input created the output directory";
}

TEST_F(Golden, UnwritableDirectoryExit3) {
  // /proc refuses a new directory: exit 3 with the system's reason when this user may write /proc
  // by its mode (root), else exit 2 (a folder the user may not write: file_io.hpp's rule).
  const run_result proc = run_cli({"golden", "v4.fp8_ds_mla", "--out", "/proc/x"});
  EXPECT_EQ(proc.code, ::access("/proc", W_OK | X_OK) == 0 ? kGoldenExitWriteError : kGoldenExitBadInput) << proc.err;
  EXPECT_TRUE(proc.out.empty());
  EXPECT_NE(proc.err.find("/proc/x"), std::string::npos) << proc.err;
  EXPECT_FALSE(fs::exists("/proc/x"));

  // DIR is an existing regular file: refused (exit 2), naming what it is; the file untouched.
  std::ofstream(dir("file")) << "x";
  const run_result file = run_cli({"golden", "v4.fp8_ds_mla", "--out", dir("file").string()});
  EXPECT_EQ(file.code, kGoldenExitBadInput) << file.err;
  EXPECT_NE(file.err.find("a regular file; the output must be a new or existing directory"), std::string::npos)
      << file.err;
  EXPECT_EQ(read_file(dir("file")), "x");

  // Below a regular file: refused, naming the file on the way; nothing is left behind.
  const run_result below = run_cli({"golden", "v4.fp8_ds_mla", "--out", (dir("file") / "sub").string()});
  EXPECT_EQ(below.code, kGoldenExitBadInput) << below.err;
  EXPECT_NE(below.err.find(dir("file").string() + " is a regular file, not a folder"), std::string::npos) << below.err;
  EXPECT_EQ(read_file(dir("file")), "x");
}

TEST_F(Golden, DirectoryInPlaceOfAFileIsRefused) {
  // page.bin is a non-empty directory: refused before anything is written (exit 2, naming it),
  // no temporary file, no input.bf16, no manifest (a reader checking hashes cannot accept a mix).
  // The failed-rename rollback itself is tested in file_output_test (FileOutput.GoldenRollback...).
  const fs::path d = dir("blocked");
  fs::create_directories(d / "page.bin");
  std::ofstream(d / "page.bin" / "keep") << "x";
  const run_result r = run_cli({"golden", "v4.fp8_ds_mla", "--out", d.string()});
  EXPECT_EQ(r.code, kGoldenExitBadInput) << r.err;
  EXPECT_NE(r.err.find((d / "page.bin").string() + ": a directory"), std::string::npos) << r.err;
  for (const std::string& name : names_in(d)) EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;
  EXPECT_FALSE(fs::exists(d / "manifest.json"));
  EXPECT_FALSE(fs::exists(d / "input.bf16"));
  EXPECT_EQ(names_in(d).size(), 1U);  // page.bin, the user's directory, alone
  EXPECT_TRUE(fs::is_directory(d / "page.bin"));
}

TEST_F(Golden, CreatesMissingParents) {
  const fs::path d = dir("x") / "y" / "z";
  golden("v4.fp8_uniform", 2, 3, "x/y/z");
  EXPECT_EQ(names_in(d), (std::set<std::string>{"input.bf16", "page.bin", "manifest.json"}));
}

}  // namespace
}  // namespace dsv4::tools
