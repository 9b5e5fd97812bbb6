// An independent test of every registered row format's writer and reader
// (include/dsv4/cache/formats/, reached only through registry.hpp).
//
// The library is used for one thing: the code under test (`visit_format(format_index(name))`,
// `quantize_row<F>`, `dequantize_row<F>`). Nothing that decides an EXPECTED byte or value comes
// from it: no `F::layout` offsets or sizes, no scalar_codec / row_codec / format_traits helper.
// The expected pages are built here from the field tables of docs/layout-variants.md and
// docs/facts.md (sections 2 and 4): own offset constants per format (the `ref_formats()` table),
// own scale rules (double precision, `std::log2` / `std::ceil` / `std::ldexp`), and for the
// element conversions NVIDIA's host implementation in the CUDA toolkit headers when the build
// found them (DSV4_HAVE_CUDA_HEADERS), else a plain nearest-even search over the 127 finite E4M3
// magnitudes / 8 E2M1 magnitudes written below (cross-checked against NVIDIA's when both exist).
//
// What is checked, per format (the 19 fixed-size formats and fp32_state bound to 4,096-B rows):
//   Writer     pages of N in {64, 1, 2, 5, 32} rows, filled with a sentinel (0xA5), rows written in
//              a shuffled order from deterministic inputs (SplitMix64 -> BF16 over many
//              magnitudes, all-zero blocks, single large values, negatives, E4M3 / E2M1 ties),
//              compared byte for byte with the expected page; the first difference names its
//              offset and field. Bytes a format never writes keep the sentinel; the bytes the
//              doc or header says are written as zero are zero. Guard bytes before and after the
//              page keep the sentinel. Single-row pages: one row touches only its own bytes.
//   Reader     every row of the written page and of a page of random bytes, decoded by the
//              library (float and BF16 output) and by the reference decoder; float bit-exact
//              (NaN: both NaN), BF16 = RNE of the reference float. The reader of row r gives the
//              same result when every byte outside row r's fields is changed.
//   Round trip |dequant(x) - x| within a bound derived from the INPUT block's amax and the
//              format's documented scale rule (not from the stored scale).
//   Every BF16 every positive finite BF16 value as a block amax of every scaled field (every
//              scale byte a BF16 input can produce), every BF16 value as an element of the
//              unscaled formats: pages, reader and round trip as above.
//   Policies   zero-block bytes (105 / 114 / 92, 2^-13, 2^-22, 1, 0x00, V4.1 FP4 0x01), NaN
//              blocks under the default nan_policy::propagate (documented result per header), V4.1
//              FP4 tiles poisoned by NaN only (scale 0x7F, codes 0; +-inf: 0x7E, +-6), legacy_amax fp32
//              scales, per-tensor scales, TensorRT-LLM's float-log2 exponent (constructed case,
//              every BF16 amax, a sweep of a few million amax values against ceil(log2f(x))).
//   Offsets    each layout's row-1 data / scale / RoPE offsets and page bytes for N = 64, N = 1
//              and N = 2, typed from the doc.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "dsv4/cache/formats/registry.hpp"

#if DSV4_HAVE_CUDA_HEADERS
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#endif

namespace dc = dsv4::cache;

namespace {

// =============================================================================================
// Reference element conversions
// =============================================================================================

float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }
std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }
const float kNaN = std::numeric_limits<float>::quiet_NaN();

/// Plain reference conversions, written from the format definitions (facts section 4): used when
/// the CUDA headers are absent, and checked against NVIDIA's when they are present.
namespace plain {

/// E4M3 (fn) code -> value: bias 7, 3 mantissa bits, subnormals m x 2^-9, 0x7F / 0xFF NaN.
float e4m3_value(std::uint8_t c) {
  const int e = (c >> 3) & 0xF;
  const int m = c & 7;
  if (e == 15 && m == 7) return kNaN;
  const double v = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
  return static_cast<float>((c & 0x80) != 0 ? -v : v);
}

/// float -> E4M3 code: the nearest of the 127 finite magnitudes (codes 0x00..0x7E), a tie to the
/// even code; |x| >= 448 (inf included) saturates to 448; the sign is kept (also for zero); NaN
/// gives 0x7F.
std::uint8_t e4m3(float x) {
  if (std::isnan(x)) return 0x7F;
  const double a = std::fabs(static_cast<double>(x));
  static const std::vector<double> magnitude = [] {
    std::vector<double> m;
    for (int c = 0; c <= 0x7E; ++c) m.push_back(static_cast<double>(e4m3_value(static_cast<std::uint8_t>(c))));
    return m;
  }();
  if (a >= 448.0) return static_cast<std::uint8_t>(0x7E | (std::signbit(x) ? 0x80 : 0));  // saturate
  // The magnitudes grow with the code: the two neighbours of a, the nearer, a tie to the even code.
  const auto hi = static_cast<int>(std::lower_bound(magnitude.begin(), magnitude.end(), a) - magnitude.begin());
  int best = hi;
  if (hi > 0) {
    const double d_lo = a - magnitude[static_cast<std::size_t>(hi - 1)];
    const double d_hi = magnitude[static_cast<std::size_t>(hi)] - a;
    if (d_lo < d_hi || (d_lo == d_hi && (hi - 1) % 2 == 0)) best = hi - 1;
  }
  return static_cast<std::uint8_t>(best | (std::signbit(x) ? 0x80 : 0));
}

constexpr double kE2m1Magnitude[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

/// E2M1 nibble -> value (sign bit 3).
float e2m1_value(std::uint8_t nibble) {
  const double v = kE2m1Magnitude[nibble & 7];
  return static_cast<float>((nibble & 8) != 0 ? -v : v);
}

/// float -> E2M1 nibble: nearest magnitude, a tie to the even code, saturating at 6, sign kept;
/// NaN gives 0x7 (what NVIDIA's satfinite conversion gives).
std::uint8_t e2m1(float x) {
  if (std::isnan(x)) return 0x7;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= 6.0) return static_cast<std::uint8_t>(7 | (std::signbit(x) ? 8 : 0));  // saturate
  int best = 0;
  double best_d = a;
  for (int c = 1; c < 8; ++c) {
    const double d = std::fabs(kE2m1Magnitude[c] - a);
    if (d < best_d || (d == best_d && c % 2 == 0)) {
      best = c;
      best_d = d;
    }
  }
  return static_cast<std::uint8_t>(best | (std::signbit(x) ? 8 : 0));
}

/// float -> BF16 bits, round to nearest even; NaN -> 0x7FFF.
std::uint16_t bf16_rn(float x) {
  if (std::isnan(x)) return 0x7FFF;
  const std::uint32_t u = bits_of(x);
  return static_cast<std::uint16_t>((u + 0x7FFFU + ((u >> 16) & 1U)) >> 16);
}

}  // namespace plain

#if DSV4_HAVE_CUDA_HEADERS
namespace nvidia {
std::uint8_t e4m3(float x) { return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)); }
float e4m3_value(std::uint8_t c) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(c, __NV_E4M3))); }
std::uint8_t e2m1(float x) {
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest) & 0xF);
}
float e2m1_value(std::uint8_t nibble) {
  return __half2float(__half(__nv_cvt_fp4_to_halfraw(static_cast<__nv_fp4_storage_t>(nibble & 0xF), __NV_E2M1)));
}
std::uint16_t bf16_rn(float x) { return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(x)).x; }
}  // namespace nvidia
namespace conv = nvidia;
#else
namespace conv = plain;
#endif

/// E8M0 (ue8m0) byte -> 2^(b - 127); 0xFF is NaN (layout-variants notation, facts section 4).
float e8m0_value(std::uint8_t b) {
  return b == 0xFF ? kNaN : static_cast<float>(std::ldexp(1.0, static_cast<int>(b) - 127));
}
float bf16_value(std::uint16_t b) { return from_bits(static_cast<std::uint32_t>(b) << 16); }

/// A code's value times a scale, rounded once to float. Exact in double (at most 4 significant
/// bits times 24), so this is the IEEE float product, independent of how the library forms it.
float product(float code_value, float scale) {
  return static_cast<float>(static_cast<double>(code_value) * static_cast<double>(scale));
}

/// Clamps a (possibly infinite) double exponent to [-127, 127], the E8M0 byte range minus NaN.
int clamp_exponent(double e) {
  if (!(e > -127.0)) return -127;  // -inf too
  if (e > 127.0) return 127;
  return static_cast<int>(e);
}

void put_le(std::uint8_t* p, std::uint32_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) p[k] = static_cast<std::uint8_t>(v >> (8 * k));
}
std::uint32_t get_le(const std::uint8_t* p, int bytes) {
  std::uint32_t v = 0;
  for (int k = 0; k < bytes; ++k) v |= static_cast<std::uint32_t>(p[k]) << (8 * k);
  return v;
}

// =============================================================================================
// Reference formats: the doc's field tables as data
// =============================================================================================

/// What a field holds and how it is quantized (doc rules; see `encode_field`).
enum class kind {
  fp8_e8m0,         ///< E4M3 codes, power-of-two scale stored as a ue8m0 byte per block
  fp8_fp32,         ///< E4M3 codes, power-of-two scale stored as little-endian fp32 per block
  fp8_fp32_legacy,  ///< E4M3 codes, fp32 scale max(max(amax, amax_floor) / 448, ratio_floor) as is
  fp8_tensor,       ///< E4M3 codes of x / tensor_scale, no block scale
  mxfp4_ceil,       ///< packed E2M1, ue8m0 2^ceil(log2(max(amax, floor) / 6)) per block
  mxfp4_nearest,    ///< packed E2M1, ue8m0 of the nearest exponent (SGLang PR #37138)
  nvfp4,            ///< packed E2M1, E4M3 scale E4M3(min(max(amax / 6, ratio_floor), 448)) per block
  bf16,             ///< BF16 bits, little-endian
  fp32,             ///< fp32 bits, little-endian
  zeros,            ///< `count` bytes written as 0x00
};

/// Offset of a field in a page: n x rows + r x row + c.
struct lin {
  std::int64_t n = 0;
  std::int64_t r = 0;
  std::int64_t c = 0;
  [[nodiscard]] std::int64_t at(std::int64_t rows, std::int64_t row) const { return n * rows + r * row + c; }
};

struct field {
  const char* what = "";
  kind k = kind::zeros;
  int first = 0;  ///< first input value of the field
  int count = 0;  ///< values (zeros: bytes)
  int block = 0;  ///< values per scale
  lin at{};       ///< codes / values of row r
  lin scale_at{};
  double amax_floor = 0.0;   ///< floor on amax
  double ratio_floor = 0.0;  ///< floor on amax / 448 (or amax / 6 for nvfp4)
  bool float_log2 = false;   ///< exponent ceil(log2f(x)) in float math (TensorRT-LLM)
  float tensor_scale = 1.0f;
  int decoded = -1;  ///< values the reader takes from this field (-1: all)

  [[nodiscard]] std::int64_t data_bytes() const {
    switch (k) {
      case kind::mxfp4_ceil:
      case kind::mxfp4_nearest:
      case kind::nvfp4: return count / 2;
      case kind::bf16: return 2 * count;
      case kind::fp32: return 4 * count;
      default: return count;
    }
  }
  [[nodiscard]] std::int64_t scale_bytes() const {
    switch (k) {
      case kind::fp8_e8m0:
      case kind::mxfp4_ceil:
      case kind::mxfp4_nearest:
      case kind::nvfp4: return count / block;
      case kind::fp8_fp32:
      case kind::fp8_fp32_legacy: return 4 * (count / block);
      default: return 0;
    }
  }
  [[nodiscard]] int decoded_values() const { return decoded < 0 ? count : decoded; }
};

struct ref_format {
  std::string name;
  int values = 0;           ///< input values per row
  bool fp32_input = false;  ///< fp32_state: float input
  std::int64_t row_bytes = 0;
  std::int64_t align = 1;  ///< page = rows x row_bytes rounded up to a multiple of it
  std::vector<field> fields;

  [[nodiscard]] std::int64_t page_bytes(std::int64_t rows) const {
    return (rows * row_bytes + align - 1) / align * align;
  }
  [[nodiscard]] field& get(kind k) {
    for (field& f : fields)
      if (f.k == k) return f;
    throw std::logic_error("no such field");
  }
};

/// Every registered format, written from docs/layout-variants.md (LV) and docs/facts.md.
std::vector<ref_format> ref_formats() {
  std::vector<ref_format> v;
  // facts section 2: [N x 576 data: 448 e4m3 | 64 bf16][N x 8: 7 ue8m0 + 1 zero pad], padded to a
  // multiple of 576; section 4: amax floor 1e-4, e = ceil(log2(amax / 448)), pad byte 0.
  v.push_back({"v4.fp8_ds_mla",
               512,
               false,
               584,
               576,
               {{.what = "NoPE e4m3",
                 .k = kind::fp8_e8m0,
                 .first = 0,
                 .count = 448,
                 .block = 64,
                 .at = {.r = 576},
                 .scale_at = {.n = 576, .r = 8},
                 .ratio_floor = 1e-4},  // the default writer, FlashMLA's (docs/engines/writers.md 3): 114
                {.what = "RoPE bf16", .k = kind::bf16, .first = 448, .count = 64, .at = {.r = 576, .c = 448}},
                {.what = "scale pad byte (0x00)", .k = kind::zeros, .count = 1, .at = {.n = 576, .r = 8, .c = 7}}}});
  // LV 2.1 (B1): same row, page [N x 576][N x 8] unpadded; EPS 1e-8, log2 in float math; the
  // footer's pad byte is never written (LV 7).
  v.push_back({"v4.fp8_ds_mla.footer",
               512,
               false,
               584,
               1,
               {{.what = "NoPE e4m3",
                 .k = kind::fp8_e8m0,
                 .first = 0,
                 .count = 448,
                 .block = 64,
                 .at = {.r = 576},
                 .scale_at = {.n = 576, .r = 8},
                 .amax_floor = 1e-8,
                 .float_log2 = true},
                {.what = "RoPE bf16", .k = kind::bf16, .first = 448, .count = 64, .at = {.r = 576, .c = 448}}}});
  // LV 2.2 (B2): [448 e4m3 NoPE | 64 e4m3 RoPE], per-tensor scale 1.0, N x 512.
  v.push_back({"v4.fp8_uniform",
               512,
               false,
               512,
               1,
               {{.what = "NoPE+RoPE e4m3", .k = kind::fp8_tensor, .first = 0, .count = 512, .at = {.r = 512}}}});
  // LV 2.2 (B3): 512 bf16, N x 1024.
  v.push_back({"v4.bf16",
               512,
               false,
               1024,
               1,
               {{.what = "bf16 values", .k = kind::bf16, .first = 0, .count = 512, .at = {.r = 1024}}}});
  // LV 2.4 (B5): [0,224) e2m1 | [224,238) 14 e8m0 | [238,240) pad (never written, LV 7) |
  // [240,368) 64 bf16; nearest exponent, amax floor 1e-40.
  v.push_back({"v4.mxfp4_kv",
               512,
               false,
               368,
               1,
               {{.what = "NoPE e2m1",
                 .k = kind::mxfp4_nearest,
                 .first = 0,
                 .count = 448,
                 .block = 32,
                 .at = {.r = 368},
                 .scale_at = {.r = 368, .c = 224},
                 .amax_floor = static_cast<double>(1e-40f)},
                {.what = "RoPE bf16", .k = kind::bf16, .first = 448, .count = 64, .at = {.r = 368, .c = 240}}}});
  // LV 2.5 (B6) and 7: data row r at r x 352 = [224 e2m1 | 128 bf16]; scales at N x 352 + r x 32 =
  // [28 e4m3 | 4 zero]; stride a multiple of 16; scale E4M3(amax / 6), zero block 0x00 + zero codes.
  v.push_back(
      {"v4.nvfp4_kv",
       512,
       false,
       384,
       16,
       {{.what = "NoPE e2m1",
         .k = kind::nvfp4,
         .first = 0,
         .count = 448,
         .block = 16,
         .at = {.r = 352},
         .scale_at = {.n = 352, .r = 32}},
        {.what = "RoPE bf16", .k = kind::bf16, .first = 448, .count = 64, .at = {.r = 352, .c = 224}},
        {.what = "trailing scale bytes (0x00)", .k = kind::zeros, .count = 4, .at = {.n = 352, .r = 32, .c = 28}}}});
  // LV 2.6 (B7): [0,256) 512 e2m1 (all dims) | [256,288) 32 e4m3 | [288,304) 16 zero |
  // [304,432) 64 bf16 RoPE; scale E4M3(max(amax / 6, FLT_MIN)). The reader takes the RoPE from
  // the bf16 copy (the header's choice; the doc names no reader).
  v.push_back({"v4.nvfp4_kv432",
               512,
               false,
               432,
               1,
               {{.what = "e2m1 (all dims)",
                 .k = kind::nvfp4,
                 .first = 0,
                 .count = 512,
                 .block = 16,
                 .at = {.r = 432},
                 .scale_at = {.r = 432, .c = 256},
                 .ratio_floor = static_cast<double>(FLT_MIN),
                 .decoded = 448},
                {.what = "zero bytes (0x00)", .k = kind::zeros, .count = 16, .at = {.r = 432, .c = 288}},
                {.what = "RoPE bf16", .k = kind::bf16, .first = 448, .count = 64, .at = {.r = 432, .c = 304}}}});
  // LV 1.4 / 1.6 (a) (A1, split): data [N x 512] = 512 e4m3 (NoPE then RoPE, tiles of 32),
  // scales [N x 16] ue8m0 at N x 512 + r x 16, page padded to a multiple of 512; scale
  // 2^ceil(log2(max(amax / 448, 1e-4))), an all-zero tile byte 114.
  v.push_back({"v4.1.fp8",
               512,
               false,
               528,
               512,
               {{.what = "values e4m3 (NoPE + RoPE)",
                 .k = kind::fp8_e8m0,
                 .first = 0,
                 .count = 512,
                 .block = 32,
                 .at = {.r = 512},
                 .scale_at = {.n = 512, .r = 16},
                 .ratio_floor = 1e-4}}});
  // LV 1.6 (b) (A1, interleaved, FlashMLA 2026.09.30): row r at r x 528 = [512 e4m3][16 ue8m0],
  // no padding; the same tiles and scale rule as v4.1.fp8.
  v.push_back({"v4.1.fp8.interleaved",
               512,
               false,
               528,
               1,
               {{.what = "values e4m3 (NoPE + RoPE)",
                 .k = kind::fp8_e8m0,
                 .first = 0,
                 .count = 512,
                 .block = 32,
                 .at = {.r = 528},
                 .scale_at = {.r = 528, .c = 512},
                 .ratio_floor = 1e-4}}});
  // LV 1.5 / 1.6 (a) / 7 (A2, split): data [N x 256] = 512 e2m1 (all dims, RoPE included, even dim
  // in the low nibble, tiles of 16), scales [N x 32] e4m3 at N x 256 + r x 32, page padded to a
  // multiple of 512; scale e4m3(clamp(amax / 6, 2^-9, 448)), a NaN poisons its tile; an inf does
  // not (docs/engines/writers.md 1: amax from nan_to_num, inf -> FLT_MAX, so the scale clamps to 448).
  const field v41_fp4{.what = "values e2m1 (NoPE + RoPE)",
                      .k = kind::nvfp4,
                      .first = 0,
                      .count = 512,
                      .block = 16,
                      .at = {.r = 256},
                      .scale_at = {.n = 256, .r = 32},
                      .ratio_floor = 0x1p-9};
  v.push_back({"v4.1.fp4", 512, false, 288, 512, {v41_fp4}});
  // LV 1.6 (a) / 7: the same page padded to a multiple of 256 (SGLang, vLLM deepseek_v4_1).
  v.push_back({"v4.1.fp4.align256", 512, false, 288, 256, {v41_fp4}});
  // LV 1.6 (b): row r at r x 288 = [256 e2m1][32 e4m3], no padding.
  field v41_fp4_inter = v41_fp4;
  v41_fp4_inter.at = {.r = 288};
  v41_fp4_inter.scale_at = {.r = 288, .c = 256};
  v.push_back({"v4.1.fp4.interleaved", 512, false, 288, 1, {v41_fp4_inter}});
  // LV 2.7 / 1.7 ("FP8 indexer ... values at r x 128, fp32 scale at N x 128 + r x 4"); facts
  // section 4: 2^ceil(log2(amax / 448)), floor 1e-4 (the header's choice of the two).
  const field indexer_fp8{.what = "key e4m3",
                          .k = kind::fp8_fp32,
                          .first = 0,
                          .count = 128,
                          .block = 128,
                          .at = {.r = 128},
                          .scale_at = {.n = 128, .r = 4},
                          .amax_floor = 1e-4};
  v.push_back({"v4.indexer_fp8", 128, false, 132, 1, {indexer_fp8}});
  // LV 1.7: [N x 64 e2m1][N x 4 ue8m0], 2^ceil(log2(amax / 6)), e in [-127, 127]; the default
  // writer, vLLM's, floors amax at 6 x 2^-126 (docs/engines/writers.md 4).
  const field indexer_mxfp4{.what = "key e2m1",
                            .k = kind::mxfp4_ceil,
                            .first = 0,
                            .count = 128,
                            .block = 32,
                            .at = {.r = 64},
                            .scale_at = {.n = 64, .r = 4},
                            .amax_floor = 6.0 * std::ldexp(1.0, -126)};
  v.push_back({"v4.indexer_mxfp4", 128, false, 68, 1, {indexer_mxfp4}});
  // LV 2.7 (B8): the same writer in an N x 132 page, amax floor 6 x 2^-126; [68N, 132N) unused.
  const field slot = indexer_mxfp4;
  v.push_back({"v4.indexer_mxfp4_in_fp8_slot", 128, false, 132, 1, {slot}});
  // LV 3.2 (C1): [0,512) e4m3 | [512,528) 4 fp32 at 512 + 4k | [528,656) 64 bf16; FlashMLA
  // 2^ceil(log2(max(amax / 448, 1e-4))).
  v.push_back({"v3.2.fp8_ds_mla",
               576,
               false,
               656,
               1,
               {{.what = "NoPE e4m3",
                 .k = kind::fp8_fp32,
                 .first = 0,
                 .count = 512,
                 .block = 128,
                 .at = {.r = 656},
                 .scale_at = {.r = 656, .c = 512},
                 .ratio_floor = 1e-4},
                {.what = "RoPE bf16", .k = kind::bf16, .first = 512, .count = 64, .at = {.r = 656, .c = 528}}}});
  // LV 3.3 (C2): [N x 128 e4m3][N x 4 fp32], 2^ceil(log2(max(amax, 1e-4) / 448)).
  v.push_back({"v3.2.indexer_fp8", 128, false, 132, 1, {indexer_fp8}});
  // LV 3.4 (C3): [512 e4m3 | 64 e4m3], per-tensor scale, N x 576.
  v.push_back({"v3.2.fp8_flat",
               576,
               false,
               576,
               1,
               {{.what = "latent+RoPE e4m3", .k = kind::fp8_tensor, .first = 0, .count = 576, .at = {.r = 576}}}});
  // LV 3.4: BF16 is 1,152 B (576 bf16).
  v.push_back({"v3.2.bf16",
               576,
               false,
               1152,
               1,
               {{.what = "bf16 values", .k = kind::bf16, .first = 0, .count = 576, .at = {.r = 1152}}}});
  // LV 1.3 (A4) / facts section 2: fp32 [kv | score] rows, row r at r x row_bytes (4,096 here).
  v.push_back({"fp32_state",
               1024,
               true,
               4096,
               1,
               {{.what = "fp32 state", .k = kind::fp32, .first = 0, .count = 1024, .at = {.r = 4096}}}});
  return v;
}

ref_format ref_by_name(std::string_view name) {
  for (ref_format& f : ref_formats())
    if (f.name == name) return f;
  throw std::logic_error("no reference format " + std::string(name));
}

// ---------------------------------------------------------------------------------------------
// Reference encoder (writer), decoder (reader) and round-trip bounds
// ---------------------------------------------------------------------------------------------

struct amax_t {
  float amax = 0.0f;
  bool nan = false;
};
amax_t block_amax(const float* x, int n) {
  amax_t a;
  for (int i = 0; i < n; ++i) {
    if (std::isnan(x[i]))
      a.nan = true;
    else
      a.amax = std::max(a.amax, std::fabs(x[i]));
  }
  return a;
}

/// FP8 power-of-two exponent of a block with NaN-free `amax` (facts section 4, LV 2.1 / 2.8 / 3.2):
///   e = ceil(log2(max(max(amax, amax_floor) / 448, ratio_floor))), clamped to [-127, 127].
/// Double precision: for a BF16 amax, amax / 448 is a power of two or at least 2^-10 away from
/// one in relative terms, so the float32 division the producers do gives the same ceiling (float
/// and double could only differ for a quotient within 2^-24 of a power of two). TensorRT-LLM's
/// rule is taken literally instead: the division and log2f in float, as `std::log2(float)`.
int fp8_exponent(float amax, const field& f) {
  if (f.float_log2) {
    const float x =
        std::max(std::max(amax, static_cast<float>(f.amax_floor)) / 448.0f, static_cast<float>(f.ratio_floor));
    return clamp_exponent(static_cast<double>(std::ceil(std::log2(x))));
  }
  const double a = std::max(std::max(static_cast<double>(amax), f.amax_floor) / 448.0, f.ratio_floor);
  return clamp_exponent(a > 0.0 ? std::ceil(std::log2(a)) : -HUGE_VAL);
}
/// MXFP4 ceiling exponent (facts section 4, LV 1.7 / 2.7): ceil(log2(max(amax, floor) / 6)).
int mxfp4_ceil_exponent(float amax, const field& f) {
  const double a = std::max(static_cast<double>(amax), f.amax_floor);
  return clamp_exponent(a > 0.0 ? std::ceil(std::log2(a / 6.0)) : -HUGE_VAL);
}
/// MXFP4 nearest byte (LV 2.4): round_half_up(log2(max(amax, 1e-40)) - log2 6) + 127 in [0, 255].
int mxfp4_nearest_byte(float amax, const field& f) {
  const double a = std::max(static_cast<double>(amax), f.amax_floor);
  const double e = std::floor(std::log2(a) - std::log2(6.0) + 0.5);
  if (!(e + 127.0 < 255.0)) return 255;  // inf
  return std::max(0, static_cast<int>(e) + 127);
}
/// The float legacy scale of `fp8_fp32_legacy`: max(max(amax, amax_floor) / 448, ratio_floor) in float.
float legacy_scale(float amax, const field& f) {
  return std::max(std::max(amax, static_cast<float>(f.amax_floor)) / 448.0f, static_cast<float>(f.ratio_floor));
}
/// E4M3 scale byte of an NVFP4 block: E4M3(min(max(amax / 6, ratio_floor), 448)), float
/// division (the clamp at 448 is what satfinite does anyway; V4.1 writes it out, LV 1.5).
std::uint8_t nvfp4_scale_byte(float amax, const field& f) {
  return conv::e4m3(std::min(std::max(amax / 6.0f, static_cast<float>(f.ratio_floor)), 448.0f));
}

float scaled_pow2(float x, int e) { return static_cast<float>(std::ldexp(static_cast<double>(x), -e)); }

/// Writes one field of row r (inputs `x`, the row's values as floats; `bits`, their raw bits).
void encode_field(const field& f, std::uint8_t* page, std::int64_t rows, std::int64_t r, const float* x,
                  const std::uint32_t* bits) {
  std::uint8_t* d = page + f.at.at(rows, r);
  std::uint8_t* s = page + f.scale_at.at(rows, r);
  const float* v = x + f.first;
  const int blocks = f.block > 0 ? f.count / f.block : 0;
  switch (f.k) {
    case kind::fp8_e8m0:
    case kind::fp8_fp32:
      for (int b = 0; b < blocks; ++b) {
        const float* xb = v + b * f.block;
        std::uint8_t* cb = d + b * f.block;
        const amax_t a = block_amax(xb, f.block);
        // NaN block (headers' rule under nan_policy::propagate; the doc is silent): every code
        // 0x7F, scale E8M0 0xFF or fp32 NaN (0x7FC00000). An amax of +-inf (docs/engines/writers.md 2, the
        // references run): the scale is inf (E8M0 0xFF, fp32 0x7F800000) and each code is
        // E4M3(x / inf): NaN (0x7F) for an inf, +-0 for a finite value.
        const bool inf = !a.nan && std::isinf(a.amax);
        const int e = a.nan || inf ? 0 : fp8_exponent(a.amax, f);
        for (int i = 0; i < f.block; ++i)
          cb[i] = a.nan ? 0x7F : inf ? conv::e4m3(xb[i] / a.amax) : conv::e4m3(scaled_pow2(xb[i], e));
        if (f.k == kind::fp8_e8m0)
          s[b] = a.nan || inf ? 0xFF : static_cast<std::uint8_t>(e + 127);
        else
          put_le(s + 4 * b,
                 a.nan ? 0x7FC00000U
                 : inf ? 0x7F800000U
                       : bits_of(static_cast<float>(std::ldexp(1.0, e))),
                 4);
      }
      return;
    case kind::fp8_fp32_legacy:
      for (int b = 0; b < blocks; ++b) {
        const float* xb = v + b * f.block;
        const amax_t a = block_amax(xb, f.block);
        const float sc = a.nan ? kNaN : legacy_scale(a.amax, f);
        for (int i = 0; i < f.block; ++i) d[b * f.block + i] = a.nan ? 0x7F : conv::e4m3(xb[i] / sc);
        put_le(s + 4 * b, a.nan ? 0x7FC00000U : bits_of(sc), 4);
      }
      return;
    case kind::fp8_tensor:
      for (int i = 0; i < f.count; ++i) d[i] = conv::e4m3(v[i] / f.tensor_scale);
      return;
    case kind::mxfp4_ceil:
    case kind::mxfp4_nearest:
      for (int b = 0; b < blocks; ++b) {
        const float* xb = v + b * f.block;
        const amax_t a = block_amax(xb, f.block);
        int byte = 0xFF;  // NaN block: E8M0 NaN, zero codes (headers' rule)
        if (!a.nan)
          byte = f.k == kind::mxfp4_ceil ? mxfp4_ceil_exponent(a.amax, f) + 127 : mxfp4_nearest_byte(a.amax, f);
        s[b] = static_cast<std::uint8_t>(byte);
        for (int i = 0; i < f.block / 2; ++i) {
          std::uint8_t lo = 0;
          std::uint8_t hi = 0;
          if (byte != 0xFF) {  // codes of x / 2^(byte - 127), the stored scale
            lo = conv::e2m1(scaled_pow2(xb[2 * i], byte - 127));
            hi = conv::e2m1(scaled_pow2(xb[2 * i + 1], byte - 127));
          }
          d[b * f.block / 2 + i] = static_cast<std::uint8_t>(lo | (hi << 4));  // even value: low nibble
        }
      }
      return;
    case kind::nvfp4:
      for (int b = 0; b < blocks; ++b) {
        const float* xb = v + b * f.block;
        const amax_t a = block_amax(xb, f.block);
        // NaN: E4M3 NaN 0x7F, zero codes (LV 7; headers' sign choice). An inf clamps the scale
        // to 448 (V4.1, docs/engines/writers.md 1) or saturates it.
        const bool poisoned = a.nan;
        const std::uint8_t sb = poisoned ? 0x7F : nvfp4_scale_byte(a.amax, f);
        const float sc = conv::e4m3_value(sb);
        s[b] = sb;
        for (int i = 0; i < f.block / 2; ++i) {
          std::uint8_t lo = 0;
          std::uint8_t hi = 0;
          if (!poisoned && sc != 0.0f) {  // a zero scale gives zero codes (LV 7)
            lo = conv::e2m1(xb[2 * i] / sc);
            hi = conv::e2m1(xb[2 * i + 1] / sc);
          }
          d[b * f.block / 2 + i] = static_cast<std::uint8_t>(lo | (hi << 4));
        }
      }
      return;
    case kind::bf16:
      for (int i = 0; i < f.count; ++i) put_le(d + 2 * i, bits[f.first + i] >> 16, 2);
      return;
    case kind::fp32:
      for (int i = 0; i < f.count; ++i) put_le(d + 4 * i, bits[f.first + i], 4);
      return;
    case kind::zeros:
      for (int i = 0; i < f.count; ++i) d[i] = 0;
      return;
  }
}

void encode_row(const ref_format& rf, std::uint8_t* page, std::int64_t rows, std::int64_t r,
                const std::vector<std::uint32_t>& bits) {
  std::vector<float> x(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) x[i] = from_bits(bits[i]);
  for (const field& f : rf.fields) encode_field(f, page, rows, r, x.data(), bits.data());
}

/// Reference reader of row r: float values (code value x scale, one rounding).
std::vector<float> decode_row(const ref_format& rf, const std::uint8_t* page, std::int64_t rows, std::int64_t r) {
  std::vector<float> out(static_cast<std::size_t>(rf.values), kNaN);
  for (const field& f : rf.fields) {
    if (f.k == kind::zeros) continue;
    const std::uint8_t* d = page + f.at.at(rows, r);
    const std::uint8_t* s = page + f.scale_at.at(rows, r);
    float* o = out.data() + f.first;
    const int n = f.decoded_values();
    for (int i = 0; i < n; ++i) {
      const int b = f.block > 0 ? i / f.block : 0;
      const std::uint8_t nib = static_cast<std::uint8_t>((d[i / 2] >> (4 * (i % 2))) & 0xF);
      switch (f.k) {
        case kind::fp8_e8m0: o[i] = product(conv::e4m3_value(d[i]), e8m0_value(s[b])); break;
        case kind::fp8_fp32:
        case kind::fp8_fp32_legacy: o[i] = product(conv::e4m3_value(d[i]), from_bits(get_le(s + 4 * b, 4))); break;
        case kind::fp8_tensor: o[i] = product(conv::e4m3_value(d[i]), f.tensor_scale); break;
        case kind::mxfp4_ceil:
        case kind::mxfp4_nearest: o[i] = product(conv::e2m1_value(nib), e8m0_value(s[b])); break;
        case kind::nvfp4: o[i] = product(conv::e2m1_value(nib), conv::e4m3_value(s[b])); break;
        case kind::bf16: o[i] = bf16_value(static_cast<std::uint16_t>(get_le(d + 2 * i, 2))); break;
        case kind::fp32: o[i] = from_bits(get_le(d + 4 * i, 4)); break;
        case kind::zeros: break;
      }
    }
  }
  return out;
}

/// Round-trip bound |dequant(x) - x| per value, from the input block's amax and the doc's rule
/// (never from the stored scale). -1: the value must come back bit for bit.
///   E4M3, 3 mantissa bits: a scaled value y in the normal range rounds with error <= |y| 2^-4,
///     a subnormal one with <= 2^-10; the power-of-two scale 2^e never saturates, so
///     |err| <= max(|x| 2^-4, 2^(e - 10)) with e the rule's exponent of the input amax.
///   E4M3 with a float scale s (per-tensor, legacy): the same with s, plus clipping to 448 s.
///   E2M1 (0, .5, 1, 1.5, 2, 3, 4, 6): |err| <= max(0.25, |y| / 4) in units of the scale when
///     |y| <= 6; the ceiling exponent never clips; the nearest exponent (2^e >= amax / (6 sqrt 2))
///     clips to 6 x 2^e.
///   NVFP4: the E4M3 scale s of amax / 6 is within max(amax / 96, 2^-10) of amax / 6 (448 at
///     most); values clip to 6 s.
/// A relative slack of 2^-20 covers the float rounding of x / s and of code x s.
std::vector<double> round_trip_bounds(const ref_format& rf, const std::vector<float>& x) {
  std::vector<double> bound(x.size(), -1.0);
  for (const field& f : rf.fields) {
    if (f.k == kind::zeros) continue;
    const float* v = x.data() + f.first;
    double* o = bound.data() + f.first;
    const int n = f.decoded_values();
    float amax = 0.0f;  // of the block of value i
    for (int i = 0; i < n; ++i) {
      const double ax = std::fabs(static_cast<double>(v[i]));
      double b = -1.0;
      if (f.block > 0 && i % f.block == 0) amax = block_amax(v + i, f.block).amax;
      switch (f.k) {
        case kind::fp8_e8m0:
        case kind::fp8_fp32: b = std::max(ax / 16.0, std::ldexp(1.0, fp8_exponent(amax, f) - 10)); break;
        case kind::fp8_fp32_legacy: {
          const double sc = std::max(std::max(static_cast<double>(amax), f.amax_floor) / 448.0, f.ratio_floor);
          b = std::max(ax / 16.0, sc * std::ldexp(1.0, -10));
          break;
        }
        case kind::fp8_tensor: {
          const double t = f.tensor_scale;
          b = ax / t <= 448.0 ? std::max(ax / 16.0, t * std::ldexp(1.0, -10)) : ax - 448.0 * t;
          break;
        }
        case kind::mxfp4_ceil: b = std::max(ax / 4.0, std::ldexp(1.0, mxfp4_ceil_exponent(amax, f) - 2)); break;
        case kind::mxfp4_nearest: {
          const int e = mxfp4_nearest_byte(amax, f) - 127;
          b = std::ldexp(ax, -e) > 6.0 ? ax - std::ldexp(6.0, e) : std::max(ax / 4.0, std::ldexp(1.0, e - 2));
          break;
        }
        case kind::nvfp4: {
          const double a6 = std::max(static_cast<double>(amax) / 6.0, f.ratio_floor);
          const double h = std::max(a6 / 16.0, std::ldexp(1.0, -10));
          const double s_hi = std::min(a6 + h, 448.0);
          const double s_lo = std::min(a6 - h, 448.0);
          b = std::max(ax / 4.0, s_hi / 4.0);
          if (s_lo <= 0.0)
            b = std::max(b, ax);
          else if (ax > 6.0 * s_lo)
            b = std::max(b, ax - 6.0 * s_lo);
          break;
        }
        default: break;  // bf16, fp32: exact
      }
      o[i] = b < 0.0 ? -1.0 : b * (1.0 + std::ldexp(1.0, -20)) + 1e-45;
    }
  }
  return bound;
}

/// Which field byte `off` of a page of `rows` rows belongs to (for failure messages).
std::string field_at(const ref_format& rf, std::int64_t rows, std::int64_t off) {
  if (off < 0) return "guard before the page";
  if (off >= rf.page_bytes(rows)) return "guard after the page";
  for (std::int64_t r = 0; r < rows; ++r) {
    for (const field& f : rf.fields) {
      const std::int64_t d = f.at.at(rows, r);
      if (off >= d && off < d + f.data_bytes())
        return "row " + std::to_string(r) + " " + f.what + " byte " + std::to_string(off - d);
      const std::int64_t s = f.scale_at.at(rows, r);
      if (f.scale_bytes() > 0 && off >= s && off < s + f.scale_bytes())
        return "row " + std::to_string(r) + " " + f.what + " scale byte " + std::to_string(off - s);
    }
  }
  return "a byte no row writes (padding / unused / pad byte)";
}

/// Marks every byte of row r's fields.
void mark_row(const ref_format& rf, std::int64_t rows, std::int64_t r, std::vector<bool>& mask) {
  for (const field& f : rf.fields) {
    for (std::int64_t k = 0; k < f.data_bytes(); ++k) mask[static_cast<std::size_t>(f.at.at(rows, r) + k)] = true;
    for (std::int64_t k = 0; k < f.scale_bytes(); ++k)
      mask[static_cast<std::size_t>(f.scale_at.at(rows, r) + k)] = true;
  }
}

// =============================================================================================
// The library under test, reached through the registry only
// =============================================================================================

struct lib_format {
  int index = -1;
  dc::format_policy policy{};  ///< the format's default (producer) policy
};

lib_format lib(std::string_view name) {
  lib_format f;
  f.index = dc::format_index(name);
  if (f.index < 0) throw std::logic_error("format not registered: " + std::string(name));
  f.policy = dc::kFormatPolicies[static_cast<std::size_t>(f.index)];
  return f;
}

/// The layout the library's codecs are called with: F::layout (fp32_state bound to 4,096 B).
template <class F>
dc::format_layout layout_of() {
  if constexpr (std::is_same_v<typename F::input_type, float>) {
    return dc::bind_state_row_bytes(4096);
  } else {
    return F::layout;
  }
}

void lib_quantize(const lib_format& lf, std::uint8_t* page, std::int64_t rows, std::int64_t r,
                  const std::vector<std::uint32_t>& bits, const dc::format_policy& p) {
  dc::visit_format(lf.index, [&]<dc::row_format F>() {
    if constexpr (std::is_same_v<typename F::input_type, float>) {
      std::vector<float> in(bits.size());
      for (std::size_t i = 0; i < bits.size(); ++i) in[i] = from_bits(bits[i]);
      dc::quantize_row<F>(layout_of<F>(), page, rows, r, in.data(), p);
    } else {
      std::vector<dc::bf16> in(bits.size());
      for (std::size_t i = 0; i < bits.size(); ++i) in[i] = dc::bf16{static_cast<std::uint16_t>(bits[i] >> 16)};
      dc::quantize_row<F>(layout_of<F>(), page, rows, r, in.data(), p);
    }
  });
}

template <class Out>
std::vector<Out> lib_dequantize(const lib_format& lf, const std::uint8_t* page, std::int64_t rows, std::int64_t r,
                                int values, const dc::format_policy& p) {
  std::vector<Out> out(static_cast<std::size_t>(values));
  dc::visit_format(lf.index,
                   [&]<dc::row_format F>() { dc::dequantize_row<F>(layout_of<F>(), page, rows, r, out.data(), p); });
  return out;
}

// =============================================================================================
// Inputs
// =============================================================================================

struct splitmix64 {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
};

std::uint32_t bf16_input(double v) { return static_cast<std::uint32_t>(conv::bf16_rn(static_cast<float>(v))) << 16; }

/// One row of deterministic inputs (float bits; BF16 values have zero low halves). `profile`:
/// 0 mixed magnitudes around a random base; 1 every value of its own magnitude in [2^-133, 2^127);
/// 2 as 0 with all-zero (+-0) 128-, 32- and 16-value blocks; 3 small values with one large value
/// per 64; 4 negative only; 5 tiny (below the FP8 floors); 6 E2M1 ties (amax 6 x 2^j, multiples
/// of 2^j); 7 E4M3 ties (amax 448 x 2^j, E4M3 midpoints x 2^j). fp32 rows: random bit patterns
/// (NaN payloads, infinities, subnormals) and ordinary values.
std::vector<std::uint32_t> make_row(int n, bool fp32, std::uint64_t seed, int profile) {
  splitmix64 g{seed};
  std::vector<std::uint32_t> x(static_cast<std::size_t>(n), 0);
  const auto value = [&](int e, bool negative_only = false) {
    const double m = 1.0 + g.below(128) / 128.0;
    return ((negative_only || g.below(2) == 1) ? -1.0 : 1.0) * std::ldexp(m, e);
  };
  if (fp32) {
    for (auto& b : x)
      b = g.below(4) == 0 ? static_cast<std::uint32_t>(g.next())
                          : bits_of(static_cast<float>(value(g.below(121) - 60)));
    return x;
  }
  const int base = g.below(49) - 24;
  const int j = g.below(41) - 20;
  switch (profile) {
    case 0:
    case 2:
    case 4:
      for (auto& b : x) b = bf16_input(value(base - g.below(13), profile == 4));
      if (profile == 2) {
        const auto zero = [&](int at, int len) {
          for (int i = at; i < at + len && i < n; ++i)
            x[static_cast<std::size_t>(i)] = g.below(2) == 0 ? 0U : 0x80000000U;
        };
        zero(128 * g.below(n / 128), 128);
        zero(32 * g.below(n / 32), 32);
        zero(16 * g.below(n / 16), 16);
      }
      break;
    case 1:
      for (auto& b : x) b = bf16_input(value(g.below(260) - 133));
      break;
    case 3:
      for (auto& b : x) b = bf16_input(value(base - g.below(4)));
      for (int blk = 0; blk < n; blk += 64)
        x[static_cast<std::size_t>(blk + g.below(64))] = bf16_input(value(base + 12 + g.below(8)));
      break;
    case 5:
      for (auto& b : x) b = bf16_input(value(-14 - g.below(27)));
      break;
    case 6: {
      static constexpr double kMult[] = {0,   0.125, 0.25, 0.375, 0.5, 0.75, 1,   1.25, 1.5, 1.75,
                                         2.0, 2.25,  2.5,  3,     3.5, 4,    4.5, 5,    5.5, 6};
      for (auto& b : x) b = bf16_input((g.below(2) == 1 ? -1.0 : 1.0) * std::ldexp(kMult[g.below(20)], j));
      for (int blk = 0; blk < n; blk += 16)
        x[static_cast<std::size_t>(blk + g.below(16))] =
            bf16_input((g.below(2) == 1 ? -6.0 : 6.0) * std::ldexp(1.0, j));
      break;
    }
    default:
      for (auto& b : x) {
        const double mid = 1.0 + (2.0 * g.below(8) + 1.0) / 16.0;  // an E4M3 midpoint in [1, 2)
        b = bf16_input((g.below(2) == 1 ? -1.0 : 1.0) * std::ldexp(mid, j + g.below(17) - 9));
      }
      for (int blk = 0; blk < n; blk += 64)
        x[static_cast<std::size_t>(blk + g.below(64))] =
            bf16_input((g.below(2) == 1 ? -448.0 : 448.0) * std::ldexp(1.0, j));
      break;
  }
  return x;
}

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  splitmix64 g{a * 0x100000001B3ULL ^ b};
  return g.next();
}

std::vector<std::int64_t> shuffled(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), std::int64_t{0});
  splitmix64 g{seed};
  for (std::int64_t i = n - 1; i > 0; --i)
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(g.below(static_cast<int>(i + 1)))]);
  return p;
}

// =============================================================================================
// Checks
// =============================================================================================

constexpr std::uint8_t kSentinel = 0xA5;
constexpr std::int64_t kGuard = 64;

std::string hex(std::uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*X", digits, v);
  return buf;
}

/// "" if the pages (with their guards) agree, else the first differing offset, its field, both
/// bytes and the number of differing bytes.
std::string page_difference(const ref_format& rf, std::int64_t rows, const std::vector<std::uint8_t>& got,
                            const std::vector<std::uint8_t>& want) {
  std::int64_t first = -1;
  std::int64_t count = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (first < 0) first = static_cast<std::int64_t>(i);
    ++count;
  }
  if (first < 0) return "";
  const std::int64_t off = first - kGuard;
  return rf.name + ", N = " + std::to_string(rows) + ": first differing byte at page offset " + std::to_string(off) +
         " (" + field_at(rf, rows, off) + "): library " + hex(got[static_cast<std::size_t>(first)], 2) + ", expected " +
         hex(want[static_cast<std::size_t>(first)], 2) + "; " + std::to_string(count) + " differing bytes";
}

struct written_page {
  std::vector<std::uint8_t> buf;  // guard | page | guard
  std::vector<std::vector<std::uint32_t>> in;
  [[nodiscard]] const std::uint8_t* page() const { return buf.data() + kGuard; }
};

/// Writes a page of `rows` rows through the library (shuffled order) and compares it with the
/// reference page; also single-row pages for rows 0, 1 and N - 1. Returns the library's page.
written_page check_writer(const ref_format& rf, const lib_format& lf, const dc::format_policy& p, std::int64_t rows,
                          std::uint64_t seed, const std::vector<std::vector<std::uint32_t>>* inputs = nullptr) {
  written_page w;
  const std::int64_t page = rf.page_bytes(rows);
  for (std::int64_t r = 0; r < rows; ++r)
    w.in.push_back(inputs != nullptr ? (*inputs)[static_cast<std::size_t>(r)]
                                     : make_row(rf.values, rf.fp32_input, mix(seed, static_cast<std::uint64_t>(r)),
                                                static_cast<int>((static_cast<std::uint64_t>(r) + seed) % 8)));
  w.buf.assign(static_cast<std::size_t>(page + 2 * kGuard), kSentinel);
  std::vector<std::uint8_t> want = w.buf;
  for (const std::int64_t r : shuffled(rows, seed))
    lib_quantize(lf, w.buf.data() + kGuard, rows, r, w.in[static_cast<std::size_t>(r)], p);
  for (std::int64_t r = 0; r < rows; ++r)
    encode_row(rf, want.data() + kGuard, rows, r, w.in[static_cast<std::size_t>(r)]);
  const std::string diff = page_difference(rf, rows, w.buf, want);
  EXPECT_EQ(diff, "") << "writer, whole page";

  for (const std::int64_t r : {std::int64_t{0}, std::int64_t{1}, rows - 1}) {
    if (r >= rows) continue;
    std::vector<std::uint8_t> one(w.buf.size(), kSentinel);
    std::vector<std::uint8_t> one_want = one;
    lib_quantize(lf, one.data() + kGuard, rows, r, w.in[static_cast<std::size_t>(r)], p);
    encode_row(rf, one_want.data() + kGuard, rows, r, w.in[static_cast<std::size_t>(r)]);
    const std::string d1 = page_difference(rf, rows, one, one_want);
    EXPECT_EQ(d1, "") << "writer, only row " << r << " written";
  }
  return w;
}

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b); }

/// Reader: every row, library float and BF16 output against the reference decoder. fp32_state
/// float output must keep NaN payloads (the header: copied bit for bit).
void check_reader(const ref_format& rf, const lib_format& lf, const dc::format_policy& p, std::int64_t rows,
                  const std::uint8_t* page, const char* what) {
  int failures = 0;
  for (std::int64_t r = 0; r < rows && failures < 4; ++r) {
    const std::vector<float> want = decode_row(rf, page, rows, r);
    const auto got = lib_dequantize<float>(lf, page, rows, r, rf.values, p);
    const auto got16 = lib_dequantize<dc::bf16>(lf, page, rows, r, rf.values, p);
    for (int i = 0; i < rf.values; ++i) {
      const float w = want[static_cast<std::size_t>(i)];
      const float g = got[static_cast<std::size_t>(i)];
      const bool ok = rf.fp32_input ? bits_of(g) == bits_of(w) : same_float(g, w);
      const std::uint16_t g16 = got16[static_cast<std::size_t>(i)].bits;
      const std::uint16_t w16 = conv::bf16_rn(w);
      const bool ok16 = std::isnan(w) ? (g16 & 0x7FFF) > 0x7F80 : g16 == w16;
      if (!ok || !ok16) {
        ADD_FAILURE() << rf.name << " reader (" << what << "), N = " << rows << ", row " << r << " value " << i
                      << ": library float " << g << " (" << hex(bits_of(g), 8) << "), reference " << w << " ("
                      << hex(bits_of(w), 8) << "); library bf16 " << hex(g16, 4) << ", reference " << hex(w16, 4);
        if (++failures >= 4) break;
      }
    }
  }
}

/// The reader of row r reads only row r's bytes: changing every other byte changes nothing.
void check_reader_locality(const ref_format& rf, const lib_format& lf, const dc::format_policy& p, std::int64_t rows,
                           std::vector<std::uint8_t> page, std::uint64_t seed) {
  splitmix64 g{seed};
  for (const std::int64_t r : {std::int64_t{0}, std::int64_t{1}, rows - 1}) {
    if (r >= rows) continue;
    std::vector<bool> mask(page.size(), false);
    mark_row(rf, rows, r, mask);
    const auto before = lib_dequantize<float>(lf, page.data(), rows, r, rf.values, p);
    std::vector<std::uint8_t> other = page;
    for (std::size_t k = 0; k < other.size(); ++k)
      if (!mask[k]) other[k] = static_cast<std::uint8_t>(g.next());
    const auto after = lib_dequantize<float>(lf, other.data(), rows, r, rf.values, p);
    for (int i = 0; i < rf.values; ++i) {
      if (bits_of(before[static_cast<std::size_t>(i)]) != bits_of(after[static_cast<std::size_t>(i)]) &&
          !(std::isnan(before[static_cast<std::size_t>(i)]) && std::isnan(after[static_cast<std::size_t>(i)]))) {
        ADD_FAILURE() << rf.name << " reader of row " << r << " (N = " << rows << ") changed at value " << i
                      << " when bytes outside the row's fields changed";
        break;
      }
    }
  }
}

/// Round trip: |dequant(x) - x| against `round_trip_bounds`; exact fields bit for bit. Returns how
/// many finite inputs came back as +-inf because their rounded value is 2^128 (see below).
long check_round_trip(const ref_format& rf, const lib_format& lf, const dc::format_policy& p, const written_page& w,
                      std::int64_t rows) {
  int failures = 0;
  long overflows = 0;
  for (std::int64_t r = 0; r < rows && failures < 4; ++r) {
    const auto& bits = w.in[static_cast<std::size_t>(r)];
    std::vector<float> x(bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) x[i] = from_bits(bits[i]);
    const std::vector<double> bound = round_trip_bounds(rf, x);
    const auto got = lib_dequantize<float>(lf, w.page(), rows, r, rf.values, p);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double err = std::fabs(static_cast<double>(got[i]) - static_cast<double>(x[i]));
      // Near the top of the BF16 range the rule can round a value up to 2^128 (E4M3 248 x 2^120 ->
      // 256 x 2^120; E2M1 3.5 x 2^126 -> 4 x 2^126), which float cannot hold: +-inf, counted.
      const bool overflow = bound[i] >= 0.0 && std::isinf(got[i]) && std::signbit(got[i]) == std::signbit(x[i]) &&
                            std::fabs(static_cast<double>(x[i])) + bound[i] >= 0x1p128;
      overflows += overflow ? 1 : 0;
      const bool ok = bound[i] < 0.0 ? same_float(got[i], x[i]) && (rf.fp32_input ? bits_of(got[i]) == bits[i] : true)
                                     : err <= bound[i] || overflow;
      if (!ok) {
        ADD_FAILURE() << rf.name << " round trip, row " << r << " value " << i << ": x = " << x[i]
                      << ", dequant = " << got[i] << ", |err| = " << err << ", bound "
                      << (bound[i] < 0 ? std::string("exact") : std::to_string(bound[i]));
        if (++failures >= 4) break;
      }
    }
  }
  return overflows;
}

std::string test_name(std::string s) {
  for (char& c : s)
    if (c == '.') c = '_';
  return s;
}

std::vector<std::string> all_names() {
  std::vector<std::string> n;
  for (const ref_format& f : ref_formats()) n.push_back(f.name);
  return n;
}

// =============================================================================================
// Tests
// =============================================================================================

TEST(FormatPagesSetup, EveryRegisteredFormatHasAReference) {
  ASSERT_EQ(dc::kFormats.size(), ref_formats().size());
  for (const dc::format_layout& l : dc::kFormats) {
    bool found = false;
    for (const ref_format& f : ref_formats()) found = found || f.name == l.name;
    EXPECT_TRUE(found) << "no reference for registered format " << l.name;
  }
  std::printf("[ info     ] element conversions: %s\n",
              DSV4_HAVE_CUDA_HEADERS ? "NVIDIA host conversions (cuda_fp8.h, cuda_fp4.h, cuda_bf16.h)"
                                     : "plain nearest-even reference (no CUDA headers)");
}

class FormatPages : public ::testing::TestWithParam<std::string> {};

/// Writer, reader and round trip on pages of several sizes under the format's default policy.
TEST_P(FormatPages, WriterReaderRoundTrip) {
  const ref_format rf = ref_by_name(GetParam());
  const lib_format lf = lib(GetParam());
  for (const std::int64_t rows : {64, 1, 2, 5, 32}) {
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      const written_page w = check_writer(rf, lf, lf.policy, rows, seed * 1000 + static_cast<std::uint64_t>(rows));
      check_reader(rf, lf, lf.policy, rows, w.page(), "written page");
      check_round_trip(rf, lf, lf.policy, w, rows);
    }
  }
}

/// Every BF16 value, whole pages of 64 rows byte for byte, then the reader and the round trip.
/// Formats with block scales: every positive finite BF16 value (0x0001..0x7F7F) is the amax of
/// some block of every scaled field (at a random position, with a random sign; the block's other
/// values random fractions of it): every scale byte a BF16 input can produce, for each rule.
/// Formats without: every non-NaN BF16 bit pattern (infinities included) as an element.
TEST_P(FormatPages, EveryBf16Value) {
  const ref_format rf = ref_by_name(GetParam());
  const lib_format lf = lib(GetParam());
  std::vector<std::vector<std::uint32_t>> rows;
  const bool scaled = std::any_of(rf.fields.begin(), rf.fields.end(), [](const field& f) { return f.block > 0; });
  if (!scaled) {
    std::vector<std::uint32_t> x;
    for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
      if ((b & 0x7FFF) > 0x7F80) continue;  // NaN: NanBlockUnderPropagate
      x.push_back(b << 16);
      if (x.size() == static_cast<std::size_t>(rf.values)) rows.push_back(std::exchange(x, {}));
    }
    x.resize(static_cast<std::size_t>(rf.values), 0U);
    rows.push_back(x);
  }
  splitmix64 g{4711};
  std::uint32_t next = 1;  // the next BF16 amax bits
  while (scaled && next <= 0x7F7F) {
    std::vector<std::uint32_t> x = make_row(rf.values, false, g.next(), 0);
    for (const field& f : rf.fields) {
      for (int b = 0; f.block > 0 && b < f.count / f.block; ++b) {
        const std::uint32_t a = std::min(next++, 0x7F7FU);
        const float amax = from_bits(a << 16);
        const int at = f.first + b * f.block;
        for (int i = 0; i < f.block; ++i) {
          const double frac = static_cast<double>(g.next() >> 11) * 0x1p-53;
          x[static_cast<std::size_t>(at + i)] = bf16_input((g.below(2) == 1 ? -1.0 : 1.0) * amax * frac);
        }
        x[static_cast<std::size_t>(at + g.below(f.block))] = (a << 16) | (g.below(2) == 1 ? 0x80000000U : 0U);
      }
    }
    rows.push_back(std::move(x));
  }
  while (rows.size() % 64 != 0) rows.push_back(rows.back());
  long overflows = 0;
  for (std::size_t p = 0; p < rows.size() && !HasFailure(); p += 64) {
    const std::vector<std::vector<std::uint32_t>> page(rows.begin() + static_cast<std::ptrdiff_t>(p),
                                                       rows.begin() + static_cast<std::ptrdiff_t>(p + 64));
    const written_page w = check_writer(rf, lf, lf.policy, 64, p, &page);
    check_reader(rf, lf, lf.policy, 64, w.page(), "every BF16 amax");
    overflows += check_round_trip(rf, lf, lf.policy, w, 64);
  }
  if (overflows > 0)
    std::printf(
        "[ info     ] %s: %ld finite BF16 inputs near the top of the range dequantize to +-inf (rounded to 2^128)\n",
        rf.name.c_str(), overflows);
}

/// The reader on pages of random bytes (every code, NaN codes, any scale byte or fp32 scale).
TEST_P(FormatPages, ReaderOnRandomBytes) {
  const ref_format rf = ref_by_name(GetParam());
  const lib_format lf = lib(GetParam());
  for (const std::int64_t rows : {64, 3}) {
    splitmix64 g{0xC0FFEEULL + static_cast<std::uint64_t>(rows)};
    std::vector<std::uint8_t> page(static_cast<std::size_t>(rf.page_bytes(rows)));
    for (auto& b : page) b = static_cast<std::uint8_t>(g.next());
    check_reader(rf, lf, lf.policy, rows, page.data(), "random bytes");
    check_reader_locality(rf, lf, lf.policy, rows, page, 77);
  }
}

/// Row r outside [0, rows) (the padding slot -1 included) fails before a byte is written.
TEST_P(FormatPages, RowOutsideThePageFailsWithoutWriting) {
  const ref_format rf = ref_by_name(GetParam());
  const lib_format lf = lib(GetParam());
  const std::vector<std::uint32_t> in = make_row(rf.values, rf.fp32_input, 5, 0);
  std::vector<std::uint8_t> page(static_cast<std::size_t>(rf.page_bytes(4) + 2 * kGuard), kSentinel);
  for (const std::int64_t r : {std::int64_t{-1}, std::int64_t{4}}) {
    EXPECT_ANY_THROW(lib_quantize(lf, page.data() + kGuard, 4, r, in, lf.policy)) << "row " << r;
    std::vector<float> out;
    EXPECT_ANY_THROW(out = lib_dequantize<float>(lf, page.data() + kGuard, 4, r, rf.values, lf.policy));
  }
  EXPECT_TRUE(std::all_of(page.begin(), page.end(), [](std::uint8_t b) { return b == kSentinel; }));
}

/// A NaN in one block under nan_policy::propagate (the default): the page against the reference
/// (which follows the headers' documented NaN results), the literal bytes, and the reader.
TEST_P(FormatPages, NanBlockUnderPropagate) {
  const ref_format rf = ref_by_name(GetParam());
  const lib_format lf = lib(GetParam());
  ASSERT_EQ(lf.policy.nan, dc::nan_policy::propagate);
  constexpr std::int64_t kRows = 64;
  constexpr std::int64_t kRow = 1;
  std::vector<std::vector<std::uint32_t>> in;
  for (std::int64_t r = 0; r < kRows; ++r)
    in.push_back(make_row(rf.values, rf.fp32_input, 900 + static_cast<std::uint64_t>(r), 0));
  auto& row = in[kRow];
  row[70] = rf.fp32_input ? 0x7F812345U : 0x7FC00000U;  // fp32_state: a signalling NaN with a payload
  const int rope_nan = rf.values == 576 ? 530 : 500;    // a RoPE value where the format has one
  if (rf.values > 128) row[static_cast<std::size_t>(rope_nan)] = rf.fp32_input ? 0xFFC00001U : 0xFFC10000U;
  const written_page w = check_writer(rf, lf, lf.policy, kRows, 0, &in);
  check_reader(rf, lf, lf.policy, kRows, w.page(), "NaN block");

  // Literal expectations, offsets for N = 64, row 1, from the doc's tables.
  const std::uint8_t* pg = w.page();
  const auto expect_bytes = [&](std::int64_t at, std::int64_t n, std::uint8_t v, const char* what) {
    for (std::int64_t k = 0; k < n; ++k)
      EXPECT_EQ(pg[at + k], v) << rf.name << ": " << what << " byte " << k << " at " << at + k;
  };
  const auto expect_nan_f32 = [&](std::int64_t at, const char* what) {
    EXPECT_TRUE(std::isnan(from_bits(get_le(pg + at, 4))))
        << rf.name << ": " << what << " at " << at << " is " << hex(get_le(pg + at, 4), 8);
  };
  int nan_lo = 0;  // dequantized values [nan_lo, nan_hi) are NaN
  int nan_hi = 0;
  int rope_lo = rope_nan;  // and [rope_lo, rope_hi): the block holding the RoPE NaN where it has block scales
  int rope_hi = rope_nan + 1;
  const std::string& n = rf.name;
  if (n == "v4.fp8_ds_mla" || n == "v4.fp8_ds_mla.footer") {
    expect_bytes(64 * 576 + 8 + 1, 1, 0xFF, "block 1 scale (E8M0 NaN)");
    expect_bytes(576 + 64, 64, 0x7F, "block 1 codes (E4M3 NaN)");
    nan_lo = 64;
    nan_hi = 128;
  } else if (n == "v4.fp8_uniform" || n == "v3.2.fp8_flat") {
    expect_bytes(kRow * rf.row_bytes + 70, 1, 0x7F, "the NaN value's code");
    nan_lo = 70;
    nan_hi = 71;
  } else if (n == "v4.bf16" || n == "v3.2.bf16") {
    expect_bytes(kRow * rf.row_bytes + 140, 1, 0xC0, "bf16 low byte");
    expect_bytes(kRow * rf.row_bytes + 141, 1, 0x7F, "bf16 high byte");
    nan_lo = 70;
    nan_hi = 71;
  } else if (n == "v4.mxfp4_kv") {
    expect_bytes(368 + 224 + 2, 1, 0xFF, "block 2 scale (E8M0 NaN)");
    expect_bytes(368 + 32, 16, 0x00, "block 2 codes");
    nan_lo = 64;
    nan_hi = 96;
  } else if (n == "v4.nvfp4_kv") {
    expect_bytes(64 * 352 + 32 + 4, 1, 0x7F, "block 4 scale (E4M3 NaN)");
    expect_bytes(352 + 32, 8, 0x00, "block 4 codes");
    nan_lo = 64;
    nan_hi = 80;
  } else if (n == "v4.nvfp4_kv432") {
    expect_bytes(432 + 256 + 4, 1, 0x7F, "block 4 scale (E4M3 NaN)");
    expect_bytes(432 + 32, 8, 0x00, "block 4 codes");
    nan_lo = 64;
    nan_hi = 80;
  } else if (n == "v4.indexer_fp8" || n == "v3.2.indexer_fp8") {
    expect_nan_f32(64 * 128 + 4, "fp32 scale");
    expect_bytes(128, 128, 0x7F, "codes (E4M3 NaN)");
    nan_lo = 0;
    nan_hi = 128;
  } else if (n == "v4.indexer_mxfp4" || n == "v4.indexer_mxfp4_in_fp8_slot") {
    expect_bytes(64 * 64 + 4 + 2, 1, 0xFF, "block 2 scale (E8M0 NaN)");
    expect_bytes(64 + 32, 16, 0x00, "block 2 codes");
    nan_lo = 64;
    nan_hi = 96;
  } else if (n == "v3.2.fp8_ds_mla") {
    expect_nan_f32(656 + 512, "block 0 fp32 scale");
    expect_bytes(656, 128, 0x7F, "block 0 codes (E4M3 NaN)");
    nan_lo = 0;
    nan_hi = 128;
  } else if (n == "v4.1.fp8") {
    expect_bytes(64 * 512 + 16 + 2, 1, 0xFF, "tile 2 scale (E8M0 NaN)");
    expect_bytes(512 + 64, 32, 0x7F, "tile 2 codes (E4M3 NaN)");
    expect_bytes(64 * 512 + 16 + 15, 1, 0xFF, "tile 15 (RoPE) scale (E8M0 NaN)");
    nan_lo = 64;
    nan_hi = 96;
    rope_lo = 480;  // RoPE is FP8 with tile scales: the NaN poisons tile 15
    rope_hi = 512;
  } else if (n == "v4.1.fp8.interleaved") {
    // LV 1.6 (b): row 1 at 528, its scales at 528 + 512.
    expect_bytes(528 + 512 + 2, 1, 0xFF, "tile 2 scale (E8M0 NaN)");
    expect_bytes(528 + 64, 32, 0x7F, "tile 2 codes (E4M3 NaN)");
    expect_bytes(528 + 512 + 15, 1, 0xFF, "tile 15 (RoPE) scale (E8M0 NaN)");
    nan_lo = 64;
    nan_hi = 96;
    rope_lo = 480;
    rope_hi = 512;
  } else if (n == "v4.1.fp4" || n == "v4.1.fp4.align256" || n == "v4.1.fp4.interleaved") {
    // LV 1.5 / 7: the NaN poisons its 16-value tile (4: dims 64..79; the negative RoPE NaN tile
    // 31: dims 496..511): scale E4M3 NaN 0x7F, codes 0 (the header writes 0x0 for a negative NaN too).
    const bool inter = n == "v4.1.fp4.interleaved";
    const std::int64_t data = inter ? 288 : 256;
    const std::int64_t scales = inter ? 288 + 256 : 64 * 256 + 32;
    expect_bytes(scales + 4, 1, 0x7F, "tile 4 scale (E4M3 NaN)");
    expect_bytes(data + 32, 8, 0x00, "tile 4 codes");
    expect_bytes(scales + 31, 1, 0x7F, "tile 31 (RoPE) scale (E4M3 NaN)");
    expect_bytes(data + 248, 8, 0x00, "tile 31 codes");
    nan_lo = 64;
    nan_hi = 80;
    rope_lo = 496;
    rope_hi = 512;
  } else if (n == "fp32_state") {
    EXPECT_EQ(get_le(pg + 4096 + 280, 4), 0x7F812345U) << "signalling NaN payload kept";
    nan_lo = 70;
    nan_hi = 71;
  }
  const auto out = lib_dequantize<float>(lf, w.page(), kRows, kRow, rf.values, lf.policy);
  for (int i = 0; i < rf.values; ++i) {
    const bool expect_nan = (i >= nan_lo && i < nan_hi) || (rf.values > 128 && i >= rope_lo && i < rope_hi);
    EXPECT_EQ(std::isnan(out[static_cast<std::size_t>(i)]), expect_nan)
        << rf.name << " dequant value " << i << " = " << out[static_cast<std::size_t>(i)];
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, FormatPages, ::testing::ValuesIn(all_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return test_name(i.param); });

/// Worked offsets typed from the doc: row 1's data / scale / RoPE offsets and page bytes.
TEST(FormatPagesOffsets, WorkedExamplesFromTheDoc) {
  struct row {
    const char* name;
    std::int64_t rows;
    std::int64_t data, scales, rope, page;  // row 1 (row 0 when rows == 1); -1: none
    const char* source;
  };
  const row table[] = {
      {"v4.fp8_ds_mla", 64, 576, 36872, 1024, 37440, "facts 2 and 5.6; LV 2.1 (RoPE 1,024, FlashMLA page 37,440)"},
      {"v4.fp8_ds_mla", 2, 576, 1160, 1024, 1728, "facts 2 (N=2 -> 1,728); LV 2.1 (C128 2-row page)"},
      {"v4.fp8_ds_mla", 1, 0, 576, 448, 1152, "facts 2 (padded to a multiple of 576: 584 -> 1,152)"},
      {"v4.fp8_ds_mla.footer", 64, 576, 36872, 1024, 37376, "LV 2.1"},
      {"v4.fp8_ds_mla.footer", 2, 576, 1160, 1024, 1168, "LV 2.1 (C128 2-row page: scales 1,152 + r x 8, page 1,168)"},
      {"v4.fp8_uniform", 64, 512, -1, 960, 32768, "LV 2.2"},
      {"v4.bf16", 64, 1024, -1, 1920, 65536, "LV 0 B3 (N x 1024), 2.2; RoPE dims 448.. at 2 x 448"},
      {"v4.mxfp4_kv", 64, 368, 592, 608, 23552, "LV 2.4"},
      {"v4.nvfp4_kv", 64, 352, 22560, 576, 24576, "LV 2.5"},
      {"v4.nvfp4_kv", 2, 352, 736, 576, 768, "LV 2.5 (stride >= N x 384, a multiple of 16)"},
      {"v4.nvfp4_kv", 1, 0, 352, 224, 384, "LV 2.5 (384 is already a multiple of 16)"},
      {"v4.nvfp4_kv432", 64, 432, 688, 736, 27648, "LV 2.6"},
      {"v4.indexer_fp8", 64, 128, 8196, -1, 8448, "LV 2.7 / 1.7 (values r x 128, scale N x 128 + r x 4); facts 3"},
      {"v4.indexer_mxfp4", 64, 64, 4100, -1, 4352, "LV 1.7"},
      {"v4.indexer_mxfp4_in_fp8_slot", 64, 64, 4100, -1, 8448, "LV 2.7"},
      {"v3.2.fp8_ds_mla", 64, 656, 1168, 1184, 41984, "LV 3.2"},
      {"v4.1.fp8", 64, 512, 32784, 960, 33792, "LV 1.6 (a): scales 64 x 512 + 16; page 66 x 512"},
      {"v4.1.fp8", 32, 512, 16400, 960, 16896, "LV 1.6 (a): vLLM's SWA block of 32 rows"},
      {"v4.1.fp8", 1, 0, 512, 448, 1024, "LV 1.6 (a): N = 1, 528 -> 1,024"},
      {"v4.1.fp8.interleaved", 64, 528, 1040, 976, 33792, "LV 1.6 (b): row 1 at 528, scales 528 + 512, no padding"},
      {"v4.1.fp8.interleaved", 1, 0, 512, 448, 528, "LV 1.6 (b): N = 1, 528 unpadded"},
      {"v4.1.fp4", 64, 256, 16416, 480, 18432, "LV 1.6 (a): scales 16,384 + 32; page 36 x 512"},
      {"v4.1.fp4", 8, 256, 2080, 480, 2560, "LV 1.6 (a) / 7: N = 8, 2,304 -> 2,560 (512)"},
      {"v4.1.fp4", 1, 0, 256, 224, 512, "LV 1.6 (a): N = 1, 288 -> 512"},
      {"v4.1.fp4.align256", 64, 256, 16416, 480, 18432, "LV 7: 18,432 either way for N = 64"},
      {"v4.1.fp4.align256", 8, 256, 2080, 480, 2304, "LV 7: N = 8 (8 mod 16): 2,304 = 9 x 256"},
      {"v4.1.fp4.align256", 2, 256, 544, 480, 768, "LV 1.6 (a): N = 2, 576 -> 768 (256)"},
      {"v4.1.fp4.align256", 1, 0, 256, 224, 512, "LV 1.6 (a): N = 1, 288 -> 512 (256)"},
      {"v4.1.fp4.interleaved", 64, 288, 544, 512, 18432, "LV 1.6 (b): row 1 at 288, scales 288 + 256"},
      {"v4.1.fp4.interleaved", 1, 0, 256, 224, 288, "LV 1.6 (b): N = 1, 288 unpadded"},
      {"v3.2.indexer_fp8", 64, 128, 8196, -1, 8448, "LV 3.3"},
      {"v3.2.fp8_flat", 64, 576, -1, 1088, 36864, "LV 3.4 (512 + 64 e4m3, N x 576)"},
      {"v3.2.bf16", 64, 1152, -1, 2176, 73728, "LV 3.4 (1,152 B: 512 + 64 bf16)"},
      {"fp32_state", 2, 4096, -1, -1, 8192, "LV 1.3 (4,096-B rows, 2 rows: row 1 at 4,096, page 8,192)"},
  };
  for (const row& t : table) {
    const int i = dc::format_index(t.name);
    ASSERT_GE(i, 0) << t.name;
    const dc::format_layout l = std::string_view(t.name) == "fp32_state" ? dc::bind_state_row_bytes(4096)
                                                                         : dc::kFormats[static_cast<std::size_t>(i)];
    const std::int64_t r = t.rows == 1 ? 0 : 1;
    EXPECT_EQ(l.data_offset(t.rows, r), t.data) << t.name << " N=" << t.rows << " data (" << t.source << ")";
    EXPECT_EQ(l.scale_offset(t.rows, r), t.scales) << t.name << " N=" << t.rows << " scales (" << t.source << ")";
    EXPECT_EQ(l.rope_offset(t.rows, r), t.rope) << t.name << " N=" << t.rows << " RoPE (" << t.source << ")";
    EXPECT_EQ(l.page_bytes(t.rows), t.page) << t.name << " N=" << t.rows << " page (" << t.source << ")";
    // The reference table agrees with the doc's numbers too.
    EXPECT_EQ(ref_by_name(t.name).page_bytes(t.rows), t.page) << t.name << " reference page";
  }
}

/// All-zero blocks: the scale bytes each doc / header names, literally, at row 1 of 64.
TEST(FormatPagesPolicies, AllZeroBlocks) {
  struct row {
    const char* name;
    dc::format_policy policy;
    bool use_default;
    std::int64_t at;                  // row 1's scales (N = 64)
    std::vector<std::uint8_t> bytes;  // expected from `at` (0xA5: never written)
    const char* source;
  };
  dc::format_policy floor_1e4{};
  floor_1e4.fp8_amax_floor = 1e-4f;
  dc::format_policy legacy = lib("v3.2.fp8_ds_mla").policy;
  legacy.fp32_scale = dc::fp32_scale_rule::legacy_amax;
  dc::format_policy legacy_idx = lib("v3.2.indexer_fp8").policy;
  legacy_idx.fp32_scale = dc::fp32_scale_rule::legacy_amax;
  std::vector<std::uint8_t> idx_legacy(4);
  put_le(idx_legacy.data(), bits_of(1e-4f / 448.0f), 4);
  const row table[] = {
      {"v4.fp8_ds_mla", {}, true, 36872, {114, 114, 114, 114, 114, 114, 114, 0x00}, "LV 2.8: FlashMLA 114, pad 0"},
      {"v4.fp8_ds_mla", floor_1e4, false, 36872, {105, 105, 105, 105, 105, 105, 105, 0x00}, "facts 4: vLLM 105"},
      {"v4.fp8_ds_mla.footer", {}, true, 36872, {92, 92, 92, 92, 92, 92, 92, 0xA5}, "LV 2.1: 92, pad never written"},
      {"v3.2.fp8_ds_mla",
       {},
       true,
       1168,
       {0, 0, 0, 0x39, 0, 0, 0, 0x39, 0, 0, 0, 0x39, 0, 0, 0, 0x39},
       "LV 3.2: 2^-13"},
      {"v3.2.fp8_ds_mla",
       legacy,
       false,
       1168,
       {0, 0, 0x80, 0, 0, 0, 0x80, 0, 0, 0, 0x80, 0, 0, 0, 0x80, 0},
       "LV 3.2: legacy floor FLT_MIN"},
      {"v3.2.indexer_fp8", {}, true, 8196, {0, 0, 0x80, 0x34}, "LV 3.3: 2^-22"},
      {"v3.2.indexer_fp8", legacy_idx, false, 8196, idx_legacy, "LV 3.3: max(amax, 1e-4) / 448 as is"},
      {"v4.indexer_fp8", {}, true, 8196, {0, 0, 0x80, 0x34}, "facts 4 (floor 1e-4): 2^-22"},
      {"v4.indexer_mxfp4", {}, true, 4100, {1, 1, 1, 1}, "docs/engines/writers.md 4: vLLM floor 6 x 2^-126, byte 1"},
      {"v4.indexer_mxfp4_in_fp8_slot", {}, true, 4100, {1, 1, 1, 1}, "LV 2.7: floor 6 x 2^-126, byte 1"},
      {"v4.mxfp4_kv", {}, true, 592, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xA5, 0xA5}, "LV 2.4: byte 0, pad"},
      {"v4.nvfp4_kv", {}, true, 22560, std::vector<std::uint8_t>(32, 0), "LV 7: 0x00, 4 trailing zeros"},
      {"v4.nvfp4_kv432", {}, true, 688, std::vector<std::uint8_t>(48, 0), "LV 2.6: E4M3(FLT_MIN) = 0, 16 zeros"},
      {"v4.1.fp8", {}, true, 32784, std::vector<std::uint8_t>(16, 114), "LV 1.4: 2^-13, byte 114"},
      {"v4.1.fp8.interleaved", {}, true, 1040, std::vector<std::uint8_t>(16, 114), "LV 1.4 / 1.6 (b): 114"},
      {"v4.1.fp4", {}, true, 16416, std::vector<std::uint8_t>(32, 0x01), "LV 1.5: clamp 2^-9, byte 0x01"},
      {"v4.1.fp4.align256", {}, true, 16416, std::vector<std::uint8_t>(32, 0x01), "LV 1.5: byte 0x01"},
      {"v4.1.fp4.interleaved", {}, true, 544, std::vector<std::uint8_t>(32, 0x01), "LV 1.5 / 1.6 (b): 0x01"},
  };
  for (const row& t : table) {
    const ref_format rf = ref_by_name(t.name);
    const lib_format lf = lib(t.name);
    const dc::format_policy p = t.use_default ? lf.policy : t.policy;
    std::vector<std::uint8_t> page(static_cast<std::size_t>(rf.page_bytes(64)), kSentinel);
    const std::vector<std::uint32_t> zeros(static_cast<std::size_t>(rf.values), 0U);
    lib_quantize(lf, page.data(), 64, 1, zeros, p);
    for (std::size_t k = 0; k < t.bytes.size(); ++k)
      EXPECT_EQ(page[static_cast<std::size_t>(t.at) + k], t.bytes[k])
          << t.name << " zero block, scale byte " << k << " at " << t.at + static_cast<std::int64_t>(k) << " ("
          << t.source << ")";
    const auto out = lib_dequantize<float>(lf, page.data(), 64, 1, rf.values, p);
    for (int i = 0; i < rf.values; ++i)
      EXPECT_EQ(bits_of(out[static_cast<std::size_t>(i)]), 0U) << t.name << " zero row dequant value " << i;
  }
}

/// All-zero V4.1 rows: besides the scale bytes above, every code byte of row 1 (N = 64) is 0x00
/// (E4M3 / E2M1 of +0 under scale 2^-13 / 2^-9; LV 1.4, 1.5), at the doc's data offsets.
TEST(FormatPagesPolicies, AllZeroV41RowsHaveZeroCodes) {
  struct row {
    const char* name;
    std::int64_t data_at;  // row 1's data (N = 64)
    std::int64_t bytes;    // code bytes
  };
  const row table[] = {{"v4.1.fp8", 512, 512},
                       {"v4.1.fp8.interleaved", 528, 512},
                       {"v4.1.fp4", 256, 256},
                       {"v4.1.fp4.align256", 256, 256},
                       {"v4.1.fp4.interleaved", 288, 256}};
  for (const row& t : table) {
    const ref_format rf = ref_by_name(t.name);
    const lib_format lf = lib(t.name);
    std::vector<std::uint8_t> page(static_cast<std::size_t>(rf.page_bytes(64)), kSentinel);
    const std::vector<std::uint32_t> zeros(512, 0U);
    lib_quantize(lf, page.data(), 64, 1, zeros, lf.policy);
    for (std::int64_t k = 0; k < t.bytes; ++k)
      ASSERT_EQ(page[static_cast<std::size_t>(t.data_at + k)], 0x00) << t.name << " zero row, code byte " << k;
    EXPECT_EQ(page[static_cast<std::size_t>(t.data_at - 1)], kSentinel) << t.name << " row 0 untouched";
  }
}

/// V4.1 FP4 poisoning (LV 1.5, 7; FlashMLA tests/quant.py `nan_to_num(|x|, nan=inf)`): a NaN
/// anywhere in a 16-value tile makes its scale byte 0x7F and its 8 code bytes 0x00, and the
/// reader gives NaN for exactly that tile's 16 values. +inf or -inf does not poison (docs/engines/writers.md
/// 1, the reference run on such a tile): `nan_to_num` maps it to +-FLT_MAX, the scale clamps to
/// 448 (0x7E) and the inf codes +-6. Pages of 64 and 3 rows against the reference, then literal
/// bytes at row 1.
TEST(FormatPagesPolicies, V41Fp4NanAndInfPoisonTheirTile) {
  for (const char* name : {"v4.1.fp4", "v4.1.fp4.align256", "v4.1.fp4.interleaved"}) {
    SCOPED_TRACE(name);
    const ref_format rf = ref_by_name(name);
    const lib_format lf = lib(name);
    const bool inter = std::string_view(name) == "v4.1.fp4.interleaved";
    for (const std::int64_t rows : {std::int64_t{64}, std::int64_t{3}}) {
      std::vector<std::vector<std::uint32_t>> in;
      for (std::int64_t r = 0; r < rows; ++r)
        in.push_back(make_row(512, false, 3100 + static_cast<std::uint64_t>(r), 0));
      auto& x = in[1];
      x[16 * 3 + 5] = 0x7F800000U;   // tile 3: +inf
      x[16 * 9] = 0xFF800000U;       // tile 9: -inf (its first value)
      x[16 * 9 + 15] = 0x7F800000U;  //         and +inf
      x[16 * 20 + 7] = 0xFFC00000U;  // tile 20: a negative NaN
      x[16 * 29 + 2] = 0xFF800000U;  // tile 29 (RoPE dims 464..479): -inf
      x[16 * 29 + 3] = 0x7FC00000U;  //         and a NaN
      const written_page w = check_writer(rf, lf, lf.policy, rows, 0, &in);
      check_reader(rf, lf, lf.policy, rows, w.page(), "inf / NaN tiles");
      const std::int64_t data = inter ? 288 : 256;                      // row 1's data
      const std::int64_t scales = inter ? 288 + 256 : rows * 256 + 32;  // row 1's scales
      const std::uint8_t* pg = w.page();
      for (const int t : {20, 29}) {  // a NaN
        EXPECT_EQ(pg[scales + t], 0x7F) << "N = " << rows << " tile " << t << " scale";
        for (int k = 0; k < 8; ++k) EXPECT_EQ(pg[data + 8 * t + k], 0x00) << "N = " << rows << " tile " << t;
      }
      for (const int t : {3, 9}) EXPECT_EQ(pg[scales + t], 0x7E) << "N = " << rows << " inf tile " << t;
      EXPECT_EQ(pg[data + 8 * 3 + 2] & 0xF0, 0x70) << "tile 3 value 5 (+inf): +6 in the high nibble";
      EXPECT_EQ(pg[data + 8 * 9] & 0x0F, 0x0F) << "tile 9 value 0 (-inf): -6";
      EXPECT_EQ(pg[data + 8 * 9 + 7] & 0xF0, 0x70) << "tile 9 value 15 (+inf): +6";
      for (const int t : {2, 4, 8, 10, 19, 21, 28, 30})
        EXPECT_NE(pg[scales + t], 0x7F) << "N = " << rows << " finite tile " << t << " poisoned";
      const auto out = lib_dequantize<float>(lf, pg, rows, 1, 512, lf.policy);
      for (int i = 0; i < 512; ++i) {
        const int t = i / 16;
        EXPECT_EQ(std::isnan(out[static_cast<std::size_t>(i)]), t == 20 || t == 29) << "N = " << rows << " value " << i;
      }
    }
  }
}

/// Non-default policies, whole pages against the reference with the matching rule.
TEST(FormatPagesPolicies, PagesUnderOtherPolicies) {
  struct variant {
    const char* name;
    const char* what;
    dc::format_policy policy;
    ref_format ref;
  };
  std::vector<variant> vs;
  {
    // Facts 4 / LV 2.8: vLLM's floor on amax (1e-4) instead of FlashMLA's on amax / 448.
    variant v{"v4.fp8_ds_mla", "fp8_amax_floor 1e-4", lib("v4.fp8_ds_mla").policy, ref_by_name("v4.fp8_ds_mla")};
    v.policy.fp8_amax_floor = 1e-4f;
    v.ref.get(kind::fp8_e8m0).amax_floor = 1e-4;
    v.ref.get(kind::fp8_e8m0).ratio_floor = 0.0;
    vs.push_back(v);
  }
  {
    // LV 3.2: vLLM before #49435 stored amax / 448 as is, floor FLT_MIN.
    variant v{"v3.2.fp8_ds_mla", "legacy_amax", lib("v3.2.fp8_ds_mla").policy, ref_by_name("v3.2.fp8_ds_mla")};
    v.policy.fp32_scale = dc::fp32_scale_rule::legacy_amax;
    field& f = v.ref.get(kind::fp8_fp32);
    f.k = kind::fp8_fp32_legacy;
    f.amax_floor = 0.0;
    f.ratio_floor = static_cast<double>(FLT_MIN);
    vs.push_back(v);
  }
  {
    // LV 3.3: use_ue8m0 off: max(amax, 1e-4) / 448 as is.
    variant v{"v3.2.indexer_fp8", "legacy_amax", lib("v3.2.indexer_fp8").policy, ref_by_name("v3.2.indexer_fp8")};
    v.policy.fp32_scale = dc::fp32_scale_rule::legacy_amax;
    v.ref.get(kind::fp8_fp32).k = kind::fp8_fp32_legacy;
    vs.push_back(v);
  }
  for (const float t : {0.37f, 0.125f, 3.0f}) {
    for (const char* name : {"v4.fp8_uniform", "v3.2.fp8_flat"}) {
      variant v{name, "tensor_scale", lib(name).policy, ref_by_name(name)};
      v.policy.tensor_scale = t;
      v.ref.get(kind::fp8_tensor).tensor_scale = t;
      vs.push_back(v);
    }
  }
  {
    // The float-log2 exponent on FlashMLA's page: the footer's rule with the default floor.
    variant v{"v4.fp8_ds_mla", "float_log2_ceil", lib("v4.fp8_ds_mla").policy, ref_by_name("v4.fp8_ds_mla")};
    v.policy.fp8_exp = dc::fp8_exponent::float_log2_ceil;
    v.ref.get(kind::fp8_e8m0).float_log2 = true;
    vs.push_back(v);
  }
  for (const variant& v : vs) {
    SCOPED_TRACE(std::string(v.name) + " under " + v.what);
    const lib_format lf = lib(v.name);
    for (const std::int64_t rows : {64, 3}) {
      const written_page w = check_writer(v.ref, lf, v.policy, rows, 4242);
      check_reader(v.ref, lf, v.policy, rows, w.page(), v.what);
      check_round_trip(v.ref, lf, v.policy, w, rows);
    }
  }
}

/// legacy_amax on V3.2 fp8_ds_mla: scale = max(amax / 448, FLT_MIN), not a power of two.
TEST(FormatPagesPolicies, V32LegacyAmaxScaleIsNotAPowerOfTwo) {
  const lib_format lf = lib("v3.2.fp8_ds_mla");
  dc::format_policy p = lf.policy;
  p.fp32_scale = dc::fp32_scale_rule::legacy_amax;
  std::vector<std::uint32_t> in(576, 0);
  in[3] = bf16_input(1.0);     // block 0: amax 1 -> 1 / 448
  in[130] = bf16_input(-3.0);  // block 1: amax 3 -> 3 / 448
  in[131] = bf16_input(0.5);
  std::vector<std::uint8_t> page(656 * 64, kSentinel);
  lib_quantize(lf, page.data(), 64, 1, in, p);
  const float s0 = from_bits(get_le(page.data() + 656 + 512, 4));
  const float s1 = from_bits(get_le(page.data() + 656 + 516, 4));
  EXPECT_EQ(bits_of(s0), bits_of(1.0f / 448.0f));
  EXPECT_EQ(bits_of(s1), bits_of(3.0f / 448.0f));
  int ignored = 0;
  EXPECT_NE(std::frexp(s0, &ignored), 0.5f) << "legacy scale must not be a power of two";
  EXPECT_EQ(page[656 + 3], conv::e4m3(1.0f / s0));  // 448 -> 0x7E (or saturated)
  EXPECT_EQ(page[656 + 130], conv::e4m3(-3.0f / s1));
  EXPECT_EQ(bits_of(from_bits(get_le(page.data() + 656 + 520, 4))), bits_of(FLT_MIN)) << "zero block 2: FLT_MIN";
}

/// TensorRT-LLM's float-log2 exponent (LV 2.1: "computed in float math"): a quotient amax / 448
/// = 2^k (1 + tiny) gets exponent k where the exact ceiling gets k + 1. A BF16 amax cannot make
/// such a quotient (its 8-bit significand keeps amax / 448 at least 2^-8 away from a power of two
/// unless it is one), so the case is built through the amax floor of an all-zero block.
TEST(FormatPagesFloatLog2, FooterPicksKWhereTheExactCeilingPicksKPlus1) {
  const lib_format lf = lib("v4.fp8_ds_mla.footer");
  ASSERT_EQ(lf.policy.fp8_exp, dc::fp8_exponent::float_log2_ceil);
  int found = 0;
  for (const int k : {-20, -9, -3, 5, 17, 40, 100}) {
    for (int j = 1; j < 64; ++j) {
      const float x = std::ldexp(1.0f + static_cast<float>(j) * 0x1p-23f, k);
      const float m = x * 448.0f;
      if (m / 448.0f != x) continue;
      if (std::ceil(std::log2(x)) != static_cast<float>(k)) continue;  // the host log2f rounds it to k
      dc::format_policy p = lf.policy;
      p.fp8_amax_floor = m;
      std::vector<std::uint8_t> page(584 * 64, kSentinel);
      const std::vector<std::uint32_t> zeros(512, 0U);
      lib_quantize(lf, page.data(), 64, 1, zeros, p);
      EXPECT_EQ(page[36872], k + 127) << "float log2: x = 2^" << k << " (1 + " << j << " x 2^-23)";
      p.fp8_exp = dc::fp8_exponent::exact_ceil;
      lib_quantize(lf, page.data(), 64, 1, zeros, p);
      EXPECT_EQ(page[36872], k + 128) << "exact ceiling: x = 2^" << k << " (1 + " << j << " x 2^-23)";
      ++found;
      break;
    }
  }
  EXPECT_GE(found, 5) << "too few constructible cases";
}

/// Every positive finite BF16 amax through the footer's default policy (floor 1e-8): the byte
/// is ceil(log2f(max(amax, 1e-8) / 448)) + 127; and, for BF16 amax, this equals the exact
/// ceiling (so the footer's float rule never changes a byte for BF16 input).
TEST(FormatPagesFloatLog2, EveryBf16AmaxOnTheFooter) {
  const ref_format rf = ref_by_name("v4.fp8_ds_mla.footer");
  const lib_format lf = lib("v4.fp8_ds_mla.footer");
  std::vector<std::uint8_t> page(584 * 64, kSentinel);
  int disagree = 0;
  int float_vs_exact = 0;
  for (std::uint32_t b = 1; b <= 0x7F7F; b += 7) {
    std::vector<std::uint32_t> in(512, 0);
    for (std::uint32_t k = 0; k < 7; ++k) in[64 * k + (b + k) % 64] = std::min(b + k, 0x7F7FU) << 16;
    lib_quantize(lf, page.data(), 64, 1, in, lf.policy);
    for (std::uint32_t k = 0; k < 7; ++k) {
      const float amax = from_bits(std::min(b + k, 0x7F7FU) << 16);
      const field& f = rf.fields[0];
      const int want = fp8_exponent(amax, f) + 127;
      field exact = f;
      exact.float_log2 = false;
      float_vs_exact += fp8_exponent(amax, exact) != fp8_exponent(amax, f);
      if (page[36872 + k] != want && ++disagree <= 5)
        ADD_FAILURE() << "amax " << amax << " (" << hex(std::min(b + k, 0x7F7FU), 4) << "): library byte "
                      << int{page[36872 + k]} << ", ceil(log2f) byte " << want;
    }
  }
  EXPECT_EQ(disagree, 0);
  EXPECT_EQ(float_vs_exact, 0) << "BF16 amax values where float log2 and the exact ceiling differ";
}

/// Sanitizer builds run a smaller float-log2 sweep (an instrumented row write is ~8x slower).
#if defined(__SANITIZE_ADDRESS__)
constexpr int kSweepSteps = 512;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int kSweepSteps = 512;
#else
constexpr int kSweepSteps = 4096;
#endif
#else
constexpr int kSweepSteps = 4096;
#endif

/// A sweep of a few million amax / 448 quotients (powers of two times 1 +- j ulp, and random
/// floats), fed through the amax floor of an all-zero block: the library's float-log2 byte
/// against ceil(log2f(x)) from <cmath>. Every disagreement is reported with its value.
TEST(FormatPagesFloatLog2, SweepAgainstHostLog2f) {
  const lib_format lf = lib("v4.fp8_ds_mla.footer");
  std::vector<float> xs;
  for (int k = -125; k <= 120; ++k) {
    for (int j = 1; j <= kSweepSteps; ++j) {
      xs.push_back(std::ldexp(1.0f + static_cast<float>(j) * 0x1p-23f, k));
      xs.push_back(std::ldexp(1.0f - static_cast<float>(j) * 0x1p-24f, k));
    }
    xs.push_back(std::ldexp(1.0f, k));
  }
  splitmix64 g{12345};
  for (int i = 0; i < 100 * kSweepSteps; ++i) {
    const float x = std::ldexp(1.0f + static_cast<float>(g.next() >> 41) * 0x1p-23f, g.below(240) - 120);
    xs.push_back(x);
  }
  const std::vector<std::uint32_t> zeros(512, 0U);
  std::vector<std::uint8_t> page(584, kSentinel);  // N = 1
  dc::format_policy p = lf.policy;
  long disagree = 0;
  long differs_from_exact = 0;
  for (const float x0 : xs) {
    const float m = x0 * 448.0f;
    if (!(m > 0.0f) || std::isinf(m)) continue;
    const float x = m / 448.0f;  // the quotient the rule sees
    p.fp8_amax_floor = m;
    lib_quantize(lf, page.data(), 1, 0, zeros, p);
    const int e = clamp_exponent(static_cast<double>(std::ceil(std::log2(x))));
    const int exact = clamp_exponent(std::ceil(std::log2(static_cast<double>(x))));
    differs_from_exact += e != exact;
    if (page[576] != e + 127 && ++disagree <= 10)
      ADD_FAILURE() << "x = amax / 448 = " << hex(bits_of(x), 8) << " (" << x << "): library byte " << int{page[576]}
                    << ", ceil(log2f(x)) + 127 = " << e + 127 << ", exact ceiling + 127 = " << exact + 127;
  }
  std::printf("[ info     ] float-log2 sweep: %zu quotients, %ld where ceil(log2f) differs from the exact ceiling\n",
              xs.size(), differs_from_exact);
  EXPECT_EQ(disagree, 0);
  EXPECT_GT(differs_from_exact, 1000) << "the sweep should cover the float-vs-exact region";
}

/// The plain reference conversions (used without CUDA headers) against NVIDIA's.
TEST(FormatPagesReference, PlainConversionsMatchNvidia) {
#if DSV4_HAVE_CUDA_HEADERS
  for (int c = 0; c < 256; ++c)
    ASSERT_TRUE(
        same_float(plain::e4m3_value(static_cast<std::uint8_t>(c)), nvidia::e4m3_value(static_cast<std::uint8_t>(c))))
        << c;
  for (int c = 0; c < 16; ++c)
    ASSERT_EQ(bits_of(plain::e2m1_value(static_cast<std::uint8_t>(c))),
              bits_of(nvidia::e2m1_value(static_cast<std::uint8_t>(c))))
        << c;
  long bad = 0;
  for (const float scale : {1.0f, 0x1p-7f, 0x1p5f, 1.0f / 3.0f, 0.37f}) {
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
      const float x = from_bits(b << 16) * scale;
      if (plain::e4m3(x) != nvidia::e4m3(x) && ++bad <= 5) ADD_FAILURE() << "e4m3 " << x;
      if (plain::e2m1(x) != nvidia::e2m1(x) && ++bad <= 5) ADD_FAILURE() << "e2m1 " << x;
    }
  }
  splitmix64 g{99};
  for (int i = 0; i < 200000; ++i) {
    const float x = from_bits(static_cast<std::uint32_t>(g.next()));
    if (plain::bf16_rn(x) != nvidia::bf16_rn(x) && ++bad <= 5) ADD_FAILURE() << "bf16 " << hex(bits_of(x), 8);
  }
  EXPECT_EQ(bad, 0);
#else
  GTEST_SKIP() << "no CUDA toolkit headers: the plain reference is used unchecked";
#endif
}

}  // namespace
