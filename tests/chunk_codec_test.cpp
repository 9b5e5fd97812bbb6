// Tests of chunk_codec.hpp: the 8-value functions each lane of the specialized GPU kernels runs
// (cuda/kernels.cuh: `chunk_amax`, `combine`, `quantize_e4m3_chunk`, `quantize_e2m1_chunk`,
// `dequantize_*_chunk`, `indexer_fp8_scale_bits`, `pack_bf16x8`) give the row codecs' bytes and
// values exactly, for every row format, policy and kind of input (random bit patterns with NaN,
// inf and subnormals; ordinary values; all-zero blocks).
//
// The oracle is a whole row quantized and dequantized by row_codec.hpp; each chunk's outputs are
// compared, value by value, with that row's codes, scales and decoded values, read at the
// positions facts section 2 gives them (NoPE / key value j's code at data byte j, or in the
// nibble of byte j / 2; block b's scale at scale byte b, or fp32 word b). The block amax is
// combined from per-chunk partials in a shuffled order, as a shuffle tree's order differs, and the
// chunks are visited in a shuffled order too.
//
// Where each lane stores its chunk's bytes in the page (data + 8c, scales[c / 8], RoPE at
// nope_bytes + 16 (c - nope_chunks), ...) is written only inside the __device__ functions of
// cuda/kernels.cuh, so it is not tested here: the GPU tests (tests/cuda) compare whole pages
// with the row codecs.
#include "dsv4/cache/chunk_codec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "dsv4/cache/row_codec.hpp"
#include "dsv4/cache/row_format.hpp"

namespace dsv4::cache {
namespace {

/// The register image of a 16 B load of values [8c, 8c + 8) (value 2i in the low half of word i).
bf16x8 load_chunk(const bf16* row, int c) {
  bf16x8 x{};
  for (int i = 0; i < 4; ++i)
    x.w[i] = static_cast<std::uint32_t>(row[c * 8 + 2 * i].bits) |
             (static_cast<std::uint32_t>(row[c * 8 + 2 * i + 1].bits) << 16);
  return x;
}

/// Block amax of chunks [first, first + n) combined in a random order.
amax_bits block_amax(const bf16* row, int first, int n, std::mt19937& rng) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), first);
  std::shuffle(order.begin(), order.end(), rng);
  amax_bits m;
  for (int c : order) m = combine(m, chunk_amax(load_chunk(row, c)));
  return m;
}

/// 0, 1, .., n - 1 in a random order.
std::vector<int> shuffled(int n, std::mt19937& rng) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

/// Code i of a chunk's E4M3 output (chunk_codec.hpp: code i in byte i % 4 of word i / 4).
std::uint8_t code_at(const std::uint32_t (&codes)[2], int i) {
  return static_cast<std::uint8_t>(codes[i / 4] >> (8 * (i % 4)));
}

std::uint32_t float_bits_of(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return u;
}

/// Little-endian 32-bit word at p.
std::uint32_t le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

// ---- inputs ----

enum class input_kind { any_bits, gaussian, zeros, wide_range, sparse_nan };

std::vector<bf16> make_row(int n, input_kind k, std::mt19937& rng) {
  std::vector<bf16> r(static_cast<std::size_t>(n));
  std::uniform_int_distribution<int> bits(0, 0xFFFF);
  std::normal_distribution<float> gauss(0.0f, 3.0f);
  std::uniform_int_distribution<int> expo(-140, 127);
  for (int i = 0; i < n; ++i) {
    switch (k) {
      case input_kind::any_bits: r[i] = bf16{static_cast<std::uint16_t>(bits(rng))}; break;
      case input_kind::gaussian: r[i] = float_to_bf16(gauss(rng)); break;
      case input_kind::zeros: r[i] = bf16{static_cast<std::uint16_t>(i % 3 == 0 ? 0x8000 : 0)}; break;
      case input_kind::wide_range: r[i] = float_to_bf16(gauss(rng) * exp2i(expo(rng))); break;
      case input_kind::sparse_nan:
        r[i] = (i % 37 == 5) ? bf16{0x7FC1} : ((i % 53 == 7) ? bf16{0xFF80} : float_to_bf16(gauss(rng)));
        break;
    }
  }
  return r;
}

std::vector<quant_policy> policies() {
  quant_policy ignore;
  ignore.nan = nan_policy::ignore;
  quant_policy floors;
  floors.indexer_fp8_amax_floor = 1e-10f;
  floors.mxfp4_amax_floor = 1e-4f;
  quant_policy ocp;
  ocp.mxfp4_scale = mxfp4_scale_rule::ocp_floor;
  ocp.nan = nan_policy::ignore;
  return {quant_policy{}, ignore, floors, ocp};
}

constexpr input_kind kKinds[] = {input_kind::any_bits, input_kind::gaussian, input_kind::zeros, input_kind::wide_range,
                                 input_kind::sparse_nan};

TEST(ChunkCodec, Fp8DsMlaRowsMatchTheRowCodec) {
  std::mt19937 rng(1234);
  const fp8_ds_mla_page_layout L = make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(512, 64), 64);
  for (const quant_policy& pol : policies())
    for (input_kind k : kKinds)
      for (int trial = 0; trial < 40; ++trial) {
        SCOPED_TRACE(::testing::Message() << "kind " << static_cast<int>(k) << " trial " << trial);
        const std::int64_t row = trial % 64;
        const std::vector<bf16> in = make_row(512, k, rng);
        // The oracle: the whole row through the row codec.
        std::vector<std::uint8_t> page(static_cast<std::size_t>(L.page_bytes()));
        quantize_fp8_ds_mla_row(L, page.data(), row, in.data(), pol);
        const std::uint8_t* codes_want = page.data() + L.data_offset(row);  // NoPE value j's code at byte j
        const std::uint8_t* scales_want = page.data() + L.scale_offset(row);
        std::vector<float> f_want(512);
        std::vector<bf16> b_want(512);
        dequantize_fp8_ds_mla_row(L, page.data(), row, f_want.data());
        dequantize_fp8_ds_mla_row(L, page.data(), row, b_want.data());
        // Each of the 64 chunks as one lane: 56 NoPE chunks, 8 scale blocks of 8 chunks; 8 RoPE chunks.
        for (const int c : shuffled(64, rng)) {
          float v[8];
          bf16x8 b{};
          if (c < 56) {
            const amax_bits m = block_amax(in.data(), c / 8 * 8, 8, rng);
            std::uint32_t codes[2];
            const std::uint8_t byte =
                quantize_e4m3_chunk(load_chunk(in.data(), c), m, pol.fp8_ds_mla_amax_floor, pol.nan, codes);
            ASSERT_EQ(byte, scales_want[c / 8]) << "chunk " << c;
            for (int i = 0; i < 8; ++i)
              ASSERT_EQ(code_at(codes, i), codes_want[c * 8 + i]) << "chunk " << c << " " << i;
            dequantize_e4m3_chunk(codes, e8m0_to_float(byte), v);
            b = pack_bf16x8(v);
          } else {  // RoPE: the BF16 values as loaded
            b = load_chunk(in.data(), c);
            unpack_bf16x8(b, v);
          }
          for (int i = 0; i < 8; ++i) {
            ASSERT_EQ(float_bits_of(v[i]), float_bits_of(f_want[c * 8 + i])) << "chunk " << c << " " << i;
            ASSERT_EQ(b.at(i), b_want[c * 8 + i]) << "chunk " << c << " " << i;
          }
        }
      }
}

TEST(ChunkCodec, IndexerRowsMatchTheRowCodec) {
  std::mt19937 rng(99);
  for (const indexer_format f : {indexer_format::fp8, indexer_format::mxfp4})
    for (const std::int64_t d : {128, 256}) {
      const indexer_page_layout L = make_indexer_page_layout(make_indexer_row_format(f, d), 64);
      const bool fp8 = f == indexer_format::fp8;
      const int chunks = static_cast<int>(d / 8);
      const int block_chunks = fp8 ? 16 : 4;  // 128 or 32 values per scale
      for (const quant_policy& pol : policies())
        for (input_kind k : kKinds)
          for (int trial = 0; trial < 40; ++trial) {
            SCOPED_TRACE(::testing::Message()
                         << to_string(f) << " d " << d << " kind " << static_cast<int>(k) << " trial " << trial);
            const std::int64_t row = (trial * 7) % 64;
            const std::vector<bf16> in = make_row(static_cast<int>(d), k, rng);
            std::vector<std::uint8_t> page(static_cast<std::size_t>(L.page_bytes()));
            quantize_indexer_row(L, page.data(), row, in.data(), pol);
            const std::uint8_t* values_want = page.data() + L.data_offset(row);
            const std::uint8_t* scales_want = page.data() + L.scale_offset(row);
            std::vector<float> f_want(static_cast<std::size_t>(d));
            std::vector<bf16> b_want(static_cast<std::size_t>(d));
            dequantize_indexer_row(L, page.data(), row, f_want.data());
            dequantize_indexer_row(L, page.data(), row, b_want.data());
            for (const int c : shuffled(chunks, rng)) {
              const amax_bits m = block_amax(in.data(), c / block_chunks * block_chunks, block_chunks, rng);
              const int blk = c / block_chunks;
              float v[8];
              if (fp8) {
                std::uint32_t codes[2];
                const std::uint8_t byte =
                    quantize_e4m3_chunk(load_chunk(in.data(), c), m, pol.indexer_fp8_amax_floor, pol.nan, codes);
                // Key value j's code at byte j; block b's fp32 scale in little-endian word b.
                const std::uint32_t scale = indexer_fp8_scale_bits(byte, m, pol.nan);
                ASSERT_EQ(scale, le32(scales_want + 4 * blk)) << "chunk " << c;
                for (int i = 0; i < 8; ++i)
                  ASSERT_EQ(code_at(codes, i), values_want[c * 8 + i]) << "chunk " << c << " " << i;
                float scale_f = 0;
                std::memcpy(&scale_f, &scale, 4);
                dequantize_e4m3_chunk(codes, scale_f, v);
              } else {
                std::uint32_t packed = 0;
                const std::uint8_t byte = quantize_e2m1_chunk(load_chunk(in.data(), c), m, pol.mxfp4_amax_floor,
                                                              pol.mxfp4_scale, pol.nan, packed);
                ASSERT_EQ(byte, scales_want[blk]) << "chunk " << c;
                // Value j in byte j / 2 of the row, the low nibble for even j; chunk_codec.hpp packs
                // value i of the chunk in bits 4i..4i+3.
                for (int i = 0; i < 8; ++i) {
                  const int j = c * 8 + i;
                  const unsigned want = (values_want[j / 2] >> (j % 2 == 0 ? 0 : 4)) & 0xFU;
                  ASSERT_EQ((packed >> (4 * i)) & 0xFU, want) << "chunk " << c << " " << i;
                }
                dequantize_e2m1_chunk(packed, e8m0_to_float(byte), v);
              }
              const bf16x8 b = pack_bf16x8(v);
              for (int i = 0; i < 8; ++i) {
                ASSERT_EQ(float_bits_of(v[i]), float_bits_of(f_want[c * 8 + i])) << "chunk " << c << " " << i;
                ASSERT_EQ(b.at(i), b_want[c * 8 + i]) << "chunk " << c << " " << i;
              }
            }
          }
    }
}

TEST(ChunkCodec, AmaxPartialsAreOrderIndependent) {
  // Hand values. Chunk a holds BF16 0x0001 (2^-133) and 0x7FC0 (NaN): all = 0x7FC0 (> 0x7F80: a
  // NaN), finite = 0x0001. Chunk b holds 0xFF80 (-inf) and 0x3F80 (1.0): all = finite = 0x7F80.
  const amax_bits a = chunk_amax(bf16x8{{0x7FC00001U, 0, 0, 0}});
  const amax_bits b = chunk_amax(bf16x8{{0xFF800000U, 0x3F800000U, 0, 0}});
  EXPECT_EQ(a.all, 0x7FC0U);
  EXPECT_EQ(a.finite, 0x0001U);
  EXPECT_TRUE(a.has_nan());
  EXPECT_EQ(b.all, 0x7F80U);
  EXPECT_EQ(b.finite, 0x7F80U);
  EXPECT_FALSE(b.has_nan());
  // Combined in either order: the NaN is kept in `all`, and +-inf is the largest non-NaN magnitude.
  for (const amax_bits m : {combine(a, b), combine(b, a)}) {
    EXPECT_EQ(m.all, 0x7FC0U);
    EXPECT_EQ(m.finite, 0x7F80U);
    EXPECT_TRUE(m.has_nan());
    EXPECT_EQ(m.amax(), std::numeric_limits<float>::infinity());
  }
  // Without the NaN chunk: amax 1.0 from {1.0, 0.5} and {-0.75}, either order.
  const amax_bits c = chunk_amax(bf16x8{{0x3F003F80U, 0, 0, 0}});  // 1.0, 0.5
  const amax_bits e = chunk_amax(bf16x8{{0, 0, 0, 0xBF400000U}});  // -0.75 as value 7
  for (const amax_bits m : {combine(c, e), combine(e, c)}) {
    EXPECT_EQ(m.finite, 0x3F80U);
    EXPECT_FALSE(m.has_nan());
    EXPECT_EQ(m.amax(), 1.0f);
  }
}

TEST(ChunkCodec, DequantizedNansAreCanonical) {
  // chunk_codec.hpp: any NaN product leaves as 0x7FC00000 (a GPU gives 0x7FFFFFFF, x86 the
  // operand's payload). A NaN scale with a payload, and the E4M3 NaN code 0x7F with scale 1.
  const float payload_nan = [] {
    const std::uint32_t b = 0x7FA00001U;
    float f = 0;
    std::memcpy(&f, &b, 4);
    return f;
  }();
  const std::uint32_t codes[2] = {0x38302820U, 0x7F7F7F7FU};  // 0x20, 0x28, 0x30, 0x38, then four NaN codes
  float v[8];
  dequantize_e4m3_chunk(codes, payload_nan, v);
  for (const float x : v) EXPECT_EQ(float_bits_of(x), 0x7FC00000U);
  dequantize_e4m3_chunk(codes, 1.0f, v);
  EXPECT_EQ(v[0], 0.125f);  // 0x20: exponent 4 - 7, mantissa 0
  for (int i = 4; i < 8; ++i) EXPECT_EQ(float_bits_of(v[i]), 0x7FC00000U) << i;
  dequantize_e2m1_chunk(0x76543210U, payload_nan, v);
  for (const float x : v) EXPECT_EQ(float_bits_of(x), 0x7FC00000U);
}

}  // namespace
}  // namespace dsv4::cache
