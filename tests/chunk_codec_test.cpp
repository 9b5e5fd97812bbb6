// Tests of chunk_codec.hpp: the GPU kernels' per-lane decomposition of the row codecs gives
// the row codecs' bytes and values exactly, for every row format, policy and kind of input
// (random bit patterns with NaN, inf and subnormals; ordinary values; all-zero blocks).
// The oracle is row_codec.hpp; the assembly below mirrors cuda/kernels.cuh: the block amax is
// combined from per-chunk partials in a shuffled order (a shuffle tree's order differs), each
// chunk is quantized alone, and its bytes land at the layout's offsets.
#include "dsv4/cache/chunk_codec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "dsv4/cache/row_codec.hpp"
#include "dsv4/cache/row_format.hpp"

namespace dsv4::cache {
namespace {

constexpr std::uint8_t kCanary = 0xA5;

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

void put_u32(std::uint8_t* p, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) p[k] = static_cast<std::uint8_t>(v >> (8 * k));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
std::uint32_t float_bits_of(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return u;
}

// ---- the kernels' assembly, on the host ----

void chunked_quantize_fp8_ds_mla(const fp8_ds_mla_page_layout& L, std::uint8_t* page, std::int64_t row, const bf16* in,
                                 const quant_policy& pol, std::mt19937& rng) {
  std::uint8_t* data = page + L.data_offset(row);
  std::uint8_t* scales = page + L.scale_offset(row);
  const int chunks = static_cast<int>(L.format.head_dim / 8);
  const int nope_chunks = static_cast<int>(L.format.nope_values() / 8);
  for (int c = 0; c < chunks; ++c) {
    if (c < nope_chunks) {
      const amax_bits m = block_amax(in, c / 8 * 8, 8, rng);
      std::uint32_t codes[2];
      const std::uint8_t byte = quantize_e4m3_chunk(load_chunk(in, c), m, pol.fp8_ds_mla_amax_floor, pol.nan, codes);
      put_u32(data + c * 8, codes[0]);
      put_u32(data + c * 8 + 4, codes[1]);
      if (c % 8 == 0) scales[c / 8] = byte;
    } else {
      std::memcpy(data + L.format.nope_bytes() + (c - nope_chunks) * 16, in + c * 8, 16);
    }
  }
  for (std::int64_t b = L.format.num_scales(); b < L.format.scale_bytes(); ++b) scales[b] = 0;
}

void chunked_quantize_indexer(const indexer_page_layout& L, std::uint8_t* page, std::int64_t row, const bf16* in,
                              const quant_policy& pol, std::mt19937& rng) {
  std::uint8_t* values = page + L.data_offset(row);
  std::uint8_t* scales = page + L.scale_offset(row);
  const int chunks = static_cast<int>(L.format.index_head_dim / 8);
  const bool fp8 = L.format.format == indexer_format::fp8;
  const int block_chunks = fp8 ? 16 : 4;
  for (int c = 0; c < chunks; ++c) {
    const amax_bits m = block_amax(in, c / block_chunks * block_chunks, block_chunks, rng);
    if (fp8) {
      std::uint32_t codes[2];
      const std::uint8_t byte = quantize_e4m3_chunk(load_chunk(in, c), m, pol.indexer_fp8_amax_floor, pol.nan, codes);
      put_u32(values + c * 8, codes[0]);
      put_u32(values + c * 8 + 4, codes[1]);
      if (c % block_chunks == 0) put_u32(scales + c / block_chunks * 4, indexer_fp8_scale_bits(byte));
    } else {
      std::uint32_t packed = 0;
      const std::uint8_t byte =
          quantize_e2m1_chunk(load_chunk(in, c), m, pol.mxfp4_amax_floor, pol.mxfp4_scale, pol.nan, packed);
      put_u32(values + c * 4, packed);
      if (c % block_chunks == 0) scales[c / block_chunks] = byte;
    }
  }
}

void chunked_dequantize_fp8_ds_mla(const fp8_ds_mla_page_layout& L, const std::uint8_t* page, std::int64_t row,
                                   float* out_f, bf16* out_b) {
  const std::uint8_t* data = page + L.data_offset(row);
  const std::uint8_t* scales = page + L.scale_offset(row);
  const int chunks = static_cast<int>(L.format.head_dim / 8);
  const int nope_chunks = static_cast<int>(L.format.nope_values() / 8);
  for (int c = 0; c < chunks; ++c) {
    float v[8];
    bf16x8 b{};
    if (c < nope_chunks) {
      const std::uint32_t codes[2] = {get_u32(data + c * 8), get_u32(data + c * 8 + 4)};
      dequantize_e4m3_chunk(codes, e8m0_to_float(scales[c / 8]), v);
      b = pack_bf16x8(v);
    } else {
      const std::uint8_t* r = data + L.format.nope_bytes() + (c - nope_chunks) * 16;
      for (int i = 0; i < 4; ++i) b.w[i] = get_u32(r + 4 * i);
      unpack_bf16x8(b, v);
    }
    for (int i = 0; i < 8; ++i) {
      out_f[c * 8 + i] = v[i];
      out_b[c * 8 + i] = b.at(i);
    }
  }
}

void chunked_dequantize_indexer(const indexer_page_layout& L, const std::uint8_t* page, std::int64_t row, float* out_f,
                                bf16* out_b) {
  const std::uint8_t* values = page + L.data_offset(row);
  const std::uint8_t* scales = page + L.scale_offset(row);
  const int chunks = static_cast<int>(L.format.index_head_dim / 8);
  for (int c = 0; c < chunks; ++c) {
    float v[8];
    if (L.format.format == indexer_format::fp8) {
      const std::uint32_t codes[2] = {get_u32(values + c * 8), get_u32(values + c * 8 + 4)};
      const std::uint32_t sb = get_u32(scales + c / 16 * 4);
      float scale = 0;
      std::memcpy(&scale, &sb, 4);
      dequantize_e4m3_chunk(codes, scale, v);
    } else {
      dequantize_e2m1_chunk(get_u32(values + c * 4), e8m0_to_float(scales[c / 4]), v);
    }
    const bf16x8 b = pack_bf16x8(v);
    for (int i = 0; i < 8; ++i) {
      out_f[c * 8 + i] = v[i];
      out_b[c * 8 + i] = b.at(i);
    }
  }
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

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(float_bits_of(a[i]), float_bits_of(b[i])) << "value " << i;
}

TEST(ChunkCodec, Fp8DsMlaRowsMatchTheRowCodec) {
  std::mt19937 rng(1234);
  const fp8_ds_mla_page_layout L = make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(512, 64), 64);
  const auto page_bytes = static_cast<std::size_t>(L.page_bytes());
  for (const quant_policy& pol : policies())
    for (input_kind k : kKinds)
      for (int trial = 0; trial < 40; ++trial) {
        const std::int64_t row = trial % 64;
        const std::vector<bf16> in = make_row(512, k, rng);
        std::vector<std::uint8_t> want(page_bytes, kCanary);
        std::vector<std::uint8_t> got(page_bytes, kCanary);
        quantize_fp8_ds_mla_row(L, want.data(), row, in.data(), pol);
        chunked_quantize_fp8_ds_mla(L, got.data(), row, in.data(), pol, rng);
        ASSERT_EQ(got, want) << "kind " << static_cast<int>(k) << " trial " << trial;
        std::vector<float> wf(512), gf(512);
        std::vector<bf16> wb(512), gb(512);
        dequantize_fp8_ds_mla_row(L, want.data(), row, wf.data());
        dequantize_fp8_ds_mla_row(L, want.data(), row, wb.data());
        chunked_dequantize_fp8_ds_mla(L, got.data(), row, gf.data(), gb.data());
        expect_same_bits(gf, wf);
        ASSERT_EQ(gb, wb);
      }
}

TEST(ChunkCodec, IndexerRowsMatchTheRowCodec) {
  std::mt19937 rng(99);
  for (const indexer_format f : {indexer_format::fp8, indexer_format::mxfp4})
    for (const std::int64_t d : {128, 256}) {
      const indexer_page_layout L = make_indexer_page_layout(make_indexer_row_format(f, d), 64);
      const auto page_bytes = static_cast<std::size_t>(L.page_bytes());
      for (const quant_policy& pol : policies())
        for (input_kind k : kKinds)
          for (int trial = 0; trial < 40; ++trial) {
            const std::int64_t row = (trial * 7) % 64;
            const std::vector<bf16> in = make_row(static_cast<int>(d), k, rng);
            std::vector<std::uint8_t> want(page_bytes, kCanary);
            std::vector<std::uint8_t> got(page_bytes, kCanary);
            quantize_indexer_row(L, want.data(), row, in.data(), pol);
            chunked_quantize_indexer(L, got.data(), row, in.data(), pol, rng);
            ASSERT_EQ(got, want) << to_string(f) << " d " << d << " kind " << static_cast<int>(k) << " trial " << trial;
            std::vector<float> wf(static_cast<std::size_t>(d)), gf(static_cast<std::size_t>(d));
            std::vector<bf16> wb(static_cast<std::size_t>(d)), gb(static_cast<std::size_t>(d));
            dequantize_indexer_row(L, want.data(), row, wf.data());
            dequantize_indexer_row(L, want.data(), row, wb.data());
            chunked_dequantize_indexer(L, got.data(), row, gf.data(), gb.data());
            expect_same_bits(gf, wf);
            ASSERT_EQ(gb, wb);
          }
    }
}

TEST(ChunkCodec, AmaxPartialsAreOrderIndependent) {
  // NaN and -inf partials: the combined value is the same whatever the order.
  const amax_bits a = chunk_amax(bf16x8{{0x7FC00001U, 0, 0, 0}});            // values 0x0001 (2^-133) and 0x7FC0 (NaN)
  const amax_bits b = chunk_amax(bf16x8{{0xFF800000U, 0x3F800000U, 0, 0}});  // -inf, 1.0
  EXPECT_TRUE(a.has_nan());
  EXPECT_FALSE(b.has_nan());
  EXPECT_EQ(combine(a, b).all, combine(b, a).all);
  EXPECT_EQ(combine(a, b).finite, combine(b, a).finite);
  EXPECT_EQ(combine(a, b).finite, 0x7F80U);  // +-inf is the largest non-NaN magnitude
}

}  // namespace
}  // namespace dsv4::cache
