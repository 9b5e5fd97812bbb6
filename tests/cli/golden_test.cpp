// Golden pages (dsv4-cache-layout golden, tools/include/dsv4/tools/golden.hpp): the v4.fp8_ds_mla
// page for seed 7 equals byte for byte the one written by an independent implementation of the
// format (tests/golden/fp8_ds_mla_writer.py: exact rational arithmetic, Python's hashlib for a
// second SHA-256); the manifest's fields; determinism; every registered format's page size; the
// bad-input and write-error contract (exit 2 / 3, one line on stderr, nothing half-written).
// In process: run_golden, and the `golden` subcommand parsed by CLI11 as run_layout parses it.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dsv4/tools/golden.hpp"

namespace dsv4::tools {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

struct run_result {
  int code;
  std::string out, err;
};

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
  std::ostringstream out, err;
  const int code = run_golden(a, out, err);
  return {code, out.str(), err.str()};
}

run_result run_args(const golden_args& a) {
  std::ostringstream out, err;
  const int code = run_golden(a, out, err);
  return {code, out.str(), err.str()};
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
  const fs::path ours = golden("v4.fp8_ds_mla", 64, 7, "cpp");
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
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "format", "policy", "rows", "seed", "values_per_row", "row_bytes",
                                            "page_bytes", "input_mapping", "files"}));
  EXPECT_EQ(m["schema"], "dsv4-cache-golden/1");
  EXPECT_EQ(m["format"], "v4.fp8_ds_mla");
  EXPECT_EQ(m["policy"], "default");
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

TEST_F(Golden, FlashmlaPolicyVariant) {
  const fs::path d = golden("v4.fp8_ds_mla", 64, 7, "default");
  const fs::path f = golden("v4.fp8_ds_mla", 64, 7, "flashmla", {"--policy", "flashmla"});
  const std::string pd = read_file(d / "page.bin");
  const std::string pf = read_file(f / "page.bin");
  EXPECT_TRUE(read_file(d / "input.bf16") == read_file(f / "input.bf16"));
  EXPECT_EQ(static_cast<unsigned char>(pd[64 * 576 + 6]), 105);  // all-zero block: amax floor 1e-4
  EXPECT_EQ(static_cast<unsigned char>(pf[64 * 576 + 6]), 114);  // FlashMLA: floor 1e-4 on amax / 448
  EXPECT_EQ(json::parse(read_file(f / "manifest.json"))["policy"], "flashmla");
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

void expect_bad(const run_result& r, const std::string& fragment) {
  EXPECT_EQ(r.code, kGoldenExitBadInput) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
}

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
  const run_result policy = run_cli({"golden", "v4.fp8_ds_mla", "--policy", "vllm", "--out", out});
  expect_bad(policy, "unknown policy 'vllm'");
  EXPECT_NE(policy.err.find("default, flashmla"), std::string::npos) << policy.err;
  expect_bad(run_cli({"golden", "v4.bf16", "--policy", "flashmla", "--out", out}), "accepted: default)");
  expect_bad(run_cli({"golden", "fp32_state", "--out", out}), "--row-bytes");
  expect_bad(run_cli({"golden", "fp32_state", "--row-bytes", "1000", "--out", out}), "--row-bytes");
  expect_bad(run_cli({"golden", "v4.bf16", "--row-bytes", "4096", "--out", out}), "fp32_state only");
  expect_bad(run_cli({"golden", "fp32_state", "--row-bytes", "65536", "--rows", "65536", "--out", out}), "over");
  // run_golden checks what it is handed directly, too.
  golden_args a;
  a.format = "v4.fp8_ds_mla";
  a.out_dir = out;
  a.rows = 0;
  expect_bad(run_args(a), "rows must be in [1, 65536], got 0");
  a.rows = 64;
  a.out_dir.clear();
  expect_bad(run_args(a), "--out");
  EXPECT_FALSE(fs::exists(dir("bad"))) << "bad input created the output directory";
}

TEST_F(Golden, UnwritableDirectoryExit3) {
  const run_result proc = run_cli({"golden", "v4.fp8_ds_mla", "--out", "/proc/x"});
  EXPECT_EQ(proc.code, kGoldenExitWriteError) << proc.err;
  EXPECT_TRUE(proc.out.empty());
  EXPECT_NE(proc.err.find("/proc/x"), std::string::npos) << proc.err;
  EXPECT_FALSE(fs::exists("/proc/x"));

  // DIR is an existing regular file.
  std::ofstream(dir("file")) << "x";
  const run_result file = run_cli({"golden", "v4.fp8_ds_mla", "--out", dir("file").string()});
  EXPECT_EQ(file.code, kGoldenExitWriteError) << file.err;
  EXPECT_EQ(read_file(dir("file")), "x");

  // Below a regular file: cannot be created; nothing is left behind.
  const run_result below = run_cli({"golden", "v4.fp8_ds_mla", "--out", (dir("file") / "sub").string()});
  EXPECT_EQ(below.code, kGoldenExitWriteError) << below.err;
}

TEST_F(Golden, FailedRenameLeavesNoTemporaryFiles) {
  // page.bin is a non-empty directory: its rename fails after input.bf16's; the temporary files
  // are removed and no manifest is written (a reader checking hashes cannot accept the mix).
  const fs::path d = dir("blocked");
  fs::create_directories(d / "page.bin");
  std::ofstream(d / "page.bin" / "keep") << "x";
  const run_result r = run_cli({"golden", "v4.fp8_ds_mla", "--out", d.string()});
  EXPECT_EQ(r.code, kGoldenExitWriteError) << r.err;
  EXPECT_NE(r.err.find("page.bin"), std::string::npos) << r.err;
  for (const std::string& name : names_in(d)) EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;
  EXPECT_FALSE(fs::exists(d / "manifest.json"));
  EXPECT_TRUE(fs::is_directory(d / "page.bin"));
}

TEST_F(Golden, CreatesMissingParents) {
  const fs::path d = dir("x") / "y" / "z";
  golden("v4.fp8_uniform", 2, 3, "x/y/z");
  EXPECT_EQ(names_in(d), (std::set<std::string>{"input.bf16", "page.bin", "manifest.json"}));
}

}  // namespace
}  // namespace dsv4::tools
