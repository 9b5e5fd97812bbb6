// xxh64: the constexpr XXH64 against the published vectors and libxxhash's XXH64() (every length
// 0..300, three seeds, long inputs, the checked-in canonical strings); fingerprint_hex's text.
#include "dsv4/cache/xxh64.hpp"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

namespace dsv4::cache {
namespace {

const std::filesystem::path kData = DSV4_TEST_DATA_DIR;

// ---- Compile time ----
// The expected values were computed once with libxxhash 0.8.1 (Debian libxxhash-dev), by a
// tiny C program: printf("0x%016llX\n", XXH64(s, strlen(s), seed)), linked with -lxxhash.
static_assert(xxh64("") == 0xEF46DB3751D8E999ULL);                                     // the spec's empty-input value
static_assert(xxh64(R"({"schema":"dsv4-cache-layout/1"})") == 0xFB620FA6595EB06FULL);  // one stripe, no tail
// 63 bytes: one 32-byte stripe, three 8-byte lanes, one 4-byte lane, three single bytes.
constexpr std::string_view kEveryPath = "dsv4-cache: 32-byte stripe, 3 lanes of 8, 4 bytes, then 3 more.";
static_assert(kEveryPath.size() == 63);
static_assert(xxh64(kEveryPath) == 0xEC1F0EAD8921F6CDULL);
static_assert(xxh64(kEveryPath, 0x9E3779B97F4A7C15ULL) == 0x75394A8F44E0AE39ULL);
static_assert(xxh64("abc") == 0x44BC2CF5AD770999ULL);

// ---- Deterministic bytes: SplitMix64 (Steele, Lea, Flood 2014), 8 bytes per step ----
constexpr std::uint64_t splitmix64_next(std::uint64_t& state) {
  state += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = state;
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

/// `n` SplitMix64 bytes from `seed`: each output's bytes, least significant first (all 0..255).
template <class Bytes>
constexpr void fill_splitmix(Bytes& out, std::size_t n, std::uint64_t seed) {
  std::uint64_t state = seed;
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t r = splitmix64_next(state);
    for (std::size_t k = 0; k < 8 && i + k < n; ++k) out[i + k] = static_cast<char>((r >> (8U * k)) & 0xFFU);
  }
}

std::string splitmix_bytes(std::size_t n, std::uint64_t seed) {
  std::string s(n, '\0');
  fill_splitmix(s, n, seed);
  return s;
}

template <std::size_t N>
constexpr std::array<char, N> splitmix_array(std::uint64_t seed) {
  std::array<char, N> a{};
  fill_splitmix(a, N, seed);
  return a;
}

// 20,000 bytes (SplitMix64 from seed 2026) hashed in a static_assert: the size the header
// promises within g++'s and clang's default constexpr limits (-fconstexpr-ops-limit 2^25,
// -fconstexpr-steps 1,048,576), checked with whichever compiler builds this file. The value is
// libxxhash's XXH64 of the same bytes, computed once by a C program that makes them the same way
// and calls XXH64(bytes, 20000, 0); ConstexprBytesMatchRuntime re-checks it at run time.
constexpr auto kLongConstexpr = splitmix_array<20'000>(2026);
static_assert(xxh64(std::string_view(kLongConstexpr.data(), kLongConstexpr.size())) == 0x45A60933E7385E74ULL);

std::uint64_t reference(std::string_view s, std::uint64_t seed) { return XXH64(s.data(), s.size(), seed); }

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << p;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string hex_text(std::uint64_t h) {
  const auto a = fingerprint_hex(h);
  return {a.data(), a.size()};
}

// ---- (a) Published vectors ----

TEST(Xxh64, SpecEmptyInput) {
  EXPECT_EQ(xxh64(""), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(xxh64(std::string_view{}), 0xEF46DB3751D8E999ULL);  // null data(), size 0
}

// xxHash's own self-test table, XSUM_XXH64_testdata in cli/xsum_sanity_check.c
// (https://github.com/Cyan4973/xxHash/blob/dev/cli/xsum_sanity_check.c, read at commit
// 08ae0257300ddde62ccca5b0765d66bc7a2fc1b4), over the buffer XSUM_fillTestBuffer makes:
// byteGen = PRIME32; byte i = byteGen >> 56; byteGen *= PRIME64 (64-bit wrapping).
TEST(Xxh64, XxhsumSanityTable) {
  constexpr std::uint64_t prime32 = 2654435761U;
  constexpr std::uint64_t prime64 = 11400714785074694797ULL;
  std::string buffer(222, '\0');
  std::uint64_t gen = prime32;
  for (char& c : buffer) {
    c = static_cast<char>(gen >> 56U);
    gen *= prime64;
  }
  struct vector {
    std::size_t len;
    std::uint64_t seed;
    std::uint64_t hash;
  };
  constexpr std::array<vector, 9> table{{{0, 0, 0xEF46DB3751D8E999ULL},
                                         {0, prime32, 0xAC75FDA2929B17EFULL},
                                         {1, 0, 0xE934A84ADB052768ULL},
                                         {1, prime32, 0x5014607643A9B4C3ULL},
                                         {4, 0, 0x9136A0DCA57457EEULL},
                                         {14, 0, 0x8282DCC4994E35C8ULL},
                                         {14, prime32, 0xC3BD6BF63DEB6DF0ULL},
                                         {222, 0, 0xB641AE8CB691C174ULL},
                                         {222, prime32, 0x20CB8AB7AE10C14AULL}}};
  for (const vector& v : table) {
    const std::string_view s(buffer.data(), v.len);
    EXPECT_EQ(xxh64(s, v.seed), v.hash) << "len " << v.len << " seed " << v.seed;
    EXPECT_EQ(reference(s, v.seed), v.hash) << "libxxhash disagrees with its own table: len " << v.len;
  }
}

// ---- (b) Against libxxhash ----

constexpr std::array<std::uint64_t, 3> kSeeds{0, 1, 0x9E3779B97F4A7C15ULL};

TEST(Xxh64, EveryLengthUpTo300MatchesLibxxhash) {
  const std::string bytes = splitmix_bytes(300 + 7, 1);
  for (const std::uint64_t seed : kSeeds) {
    for (std::size_t offset : {std::size_t{0}, std::size_t{3}, std::size_t{7}}) {  // any alignment
      for (std::size_t len = 0; len <= 300; ++len) {
        const std::string_view s(bytes.data() + offset, len);
        ASSERT_EQ(xxh64(s, seed), reference(s, seed)) << "len " << len << " offset " << offset << " seed " << seed;
      }
    }
  }
}

TEST(Xxh64, LongInputsMatchLibxxhash) {
  for (const std::size_t len : {std::size_t{1} << 10U, std::size_t{64} << 10U, (std::size_t{1} << 20U) + 13}) {
    const std::string s = splitmix_bytes(len, len);
    for (const std::uint64_t seed : kSeeds) EXPECT_EQ(xxh64(s, seed), reference(s, seed)) << "len " << len;
  }
}

TEST(Xxh64, ConstexprBytesMatchRuntime) {
  const std::string s = splitmix_bytes(kLongConstexpr.size(), 2026);
  EXPECT_EQ(s, std::string_view(kLongConstexpr.data(), kLongConstexpr.size()));
  EXPECT_EQ(reference(s, 0), 0x45A60933E7385E74ULL);
}

TEST(Xxh64, HighBytesAreUnsigned) {  // char may be signed: 0x80..0xFF must hash as bytes, not as negatives
  std::string s;
  for (int b = 0; b < 256; ++b) s.push_back(static_cast<char>(b));
  for (const std::uint64_t seed : kSeeds) EXPECT_EQ(xxh64(s, seed), reference(s, seed));
}

// ---- (c) The checked-in canonical strings (tests/data/fingerprint) ----

TEST(Xxh64, CanonicalFilesMatchLibxxhash) {
  const std::filesystem::path dir = kData / "fingerprint";
  for (const char* name : {"schema.json", "layout.json", "newline.txt"}) {
    const std::string s = read_file(dir / name);
    ASSERT_FALSE(s.empty()) << name;
    for (const std::uint64_t seed : kSeeds) EXPECT_EQ(xxh64(s, seed), reference(s, seed)) << name;
  }
  // schema.json is the static_assert's string above, byte for byte (no trailing newline).
  EXPECT_EQ(xxh64(read_file(dir / "schema.json")), 0xFB620FA6595EB06FULL);
  EXPECT_EQ(read_file(dir / "newline.txt"), "\n");
  EXPECT_EQ(read_file(dir / "layout.json").size(), 2047U);  // 63 stripes, then 8+8+8+4+3 tail bytes
}

// ---- (e) fingerprint_hex ----

static_assert(fingerprint_hex(0xEF46DB3751D8E999ULL) == std::array<char, 18>{'0', 'x', 'e', 'f', '4', '6', 'd', 'b',
                                                                             '3', '7', '5', '1', 'd', '8', 'e', '9',
                                                                             '9', '9'});

TEST(FingerprintHex, FixedWidthLowercase) {
  EXPECT_EQ(hex_text(0), "0x0000000000000000");
  EXPECT_EQ(hex_text(1), "0x0000000000000001");
  EXPECT_EQ(hex_text(0x0123456789ABCDEFULL), "0x0123456789abcdef");
  EXPECT_EQ(hex_text(0xEF46DB3751D8E999ULL), "0xef46db3751d8e999");
  EXPECT_EQ(hex_text(~std::uint64_t{0}), "0xffffffffffffffff");
}

TEST(FingerprintHex, MatchesPrintf) {
  std::uint64_t state = 7;
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t h = splitmix64_next(state);
    std::array<char, 19> want{};
    std::snprintf(want.data(), want.size(), "0x%016llx", static_cast<unsigned long long>(h));
    EXPECT_EQ(hex_text(h), std::string_view(want.data(), 18));
  }
}

}  // namespace
}  // namespace dsv4::cache
