// Host bulk codecs (host_codec.hpp): for every registered format and every host ISA this CPU
// runs (the others skip, naming the reason), `quantize_rows` / `dequantize_rows` give the bytes
// and values of the scalar per-row codec (`quantize_row` / `dequantize_row`, run without
// flush-to-zero), with the caller's MXCSR / FPCR in its default mode and with flush-to-zero and
// denormals-are-zero set (as PyTorch processes often run); the caller's mode is kept.
//
// Inputs: every BF16 bit pattern once per format (a permutation, rows of the format's values),
// once as is (NaN, inf and huge values in blocks) and once with each 16-value group led by an
// anchor 2^j (j cycling over [-133, 127]) so that blocks take many scale exponents, and
// activations (normal samples at 24 row scales, zeros, rounding midpoints: the blocks the fast
// kernels take); dequantized values stored cached and streaming (`host_store`); policies: the
// default and the variants a format may read. Pages for dequantization: the quantized pages and
// pages of random bytes (about 2^18 values per format: each code / scale byte pair expected a
// few times), plus E8M0 scale byte 0x00 (2^-127) and E4M3 subnormal codes by construction.
// The host kernels that replace float arithmetic by 16-bit integer work (E4M3 and E2M1 codes at
// a power-of-two scale, E2M1 of x / E4M3 scale) are also checked alone, exhaustively: every BF16
// input at every scale.
#include "dsv4/cache/host_codec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "dsv4/cache/formats/registry.hpp"

namespace dsv4::cache {
namespace {

constexpr std::int64_t kCodecRowsPerPage = 64;

/// Sets flush-to-zero and denormals-are-zero (x86 MXCSR bits 15 and 6; aarch64 FPCR.FZ) for its
/// lifetime when `on`.
class ftz_daz {
 public:
  explicit ftz_daz(bool on) : on_(on) {
    if (!on_) return;
#if defined(__x86_64__) || defined(__i386__)
    saved_ = __builtin_ia32_stmxcsr();
    __builtin_ia32_ldmxcsr(static_cast<unsigned>(saved_) | 0x8040U);
#elif defined(__aarch64__)
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(saved_));
    const std::uint64_t v = saved_ | (1ULL << 24);
    __asm__ __volatile__("msr fpcr, %0" : : "r"(v));
#endif
  }
  ~ftz_daz() {
    if (!on_) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_ldmxcsr(static_cast<unsigned>(saved_ & 0xFFFFFFFFU));
#elif defined(__aarch64__)
    __asm__ __volatile__("msr fpcr, %0" : : "r"(saved_));
#endif
  }
  ftz_daz(const ftz_daz&) = delete;
  ftz_daz& operator=(const ftz_daz&) = delete;

  /// Whether FTZ is set now (so the test can check that a bulk call left it set).
  static bool ftz_set() {
#if defined(__x86_64__) || defined(__i386__)
    return (__builtin_ia32_stmxcsr() & 0x8000U) != 0;
#elif defined(__aarch64__)
    std::uint64_t v = 0;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
    return (v & (1ULL << 24)) != 0;
#else
    return false;
#endif
  }
  /// Whether FTZ makes 2^-126 x 0.5 zero here (so the FTZ runs really run flushed).
  static bool flushes() {
    volatile float a = 0x1p-126f;
    volatile float b = 0.5f;
    return a * b == 0.0f;
  }

 private:
  bool on_;
  std::uint64_t saved_ = 0;
};

/// The layout tested for F (fp32_state bound to 4,096-B rows).
template <row_format F>
format_layout test_layout() {
  if constexpr (std::is_same_v<F, formats::fp32_state>) {
    return bind_state_row_bytes(4096);
  } else {
    return F::layout;
  }
}

/// Policies to run F with: its default and the variants of every option.
template <row_format F>
std::vector<format_policy> policies() {
  const format_policy d = F::default_policy;
  std::vector<format_policy> v{d};
  format_policy p = d;
  p.nan = nan_policy::ignore;
  v.push_back(p);
  p = d;
  p.fp8_exp = d.fp8_exp == fp8_exponent::exact_ceil ? fp8_exponent::float_log2_ceil : fp8_exponent::exact_ceil;
  v.push_back(p);
  p = d;
  p.fp32_scale = fp32_scale_rule::legacy_amax;
  v.push_back(p);
  p = d;
  p.mxfp4_scale = mxfp4_scale_rule::ocp_floor;
  p.mxfp4_amax_floor = 1e-3f;
  v.push_back(p);
  p = d;
  p.tensor_scale = 0.75f;  // not a power of two: a true division
  p.fp8_amax_floor = 1e-8f;
  v.push_back(p);
  p = d;
  p.tensor_scale = 0x1p-3f;
  v.push_back(p);
  return v;
}

/// The input sets: every BF16 pattern once (a permutation), the same with anchors, and
/// activations: normal(0, 1) samples, row k scaled by 2^(k % 24 - 12), with exact zeros and
/// values on the E4M3 / E2M1 rounding midpoints (the common case the fast kernels take).
enum class input_set { permutation, anchored, activations };

/// count x l.values inputs of F from `set`.
template <row_format F>
std::vector<typename F::input_type> inputs(const format_layout& l, std::int64_t count, input_set set) {
  using In = typename F::input_type;
  std::vector<In> v(static_cast<std::size_t>(count * l.values));
  std::mt19937 rng(7);
  const bool anchored = set == input_set::anchored;
  if (set == input_set::activations) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    constexpr float kMidpoints[] = {0.25f, 0.75f, 1.25f, 2.5f, 5.0f, 0x1.2p-7f, 0x1.8p-9f, 464.0f};
    for (std::size_t i = 0; i < v.size(); ++i) {
      const auto row = static_cast<int>(i / static_cast<std::size_t>(l.values));
      float x = normal(rng) * exp2i(row % 24 - 12);
      if (rng() % 16 == 0) x = 0.0f;
      if (rng() % 16 == 1) x = kMidpoints[rng() % 8] * exp2i(row % 24 - 12);
      if constexpr (std::is_same_v<In, float>) {
        v[i] = x;
      } else {
        v[i] = float_to_bf16(x);
      }
    }
    return v;
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same_v<In, float>) {
      v[i] = detail::bits_float(static_cast<std::uint32_t>(rng()));
    } else {
      v[i] = bf16{static_cast<std::uint16_t>((i * 40503U) & 0xFFFFU)};
      if (anchored && i % 16 == 0) {
        const int j = static_cast<int>((i / 16) % 261) - 133;
        v[i] = float_to_bf16((i & 16U) != 0 ? -exp2i(j) : exp2i(j));
      }
    }
  }
  return v;
}

std::size_t pages_for(std::int64_t count) {
  return static_cast<std::size_t>((count + kCodecRowsPerPage - 1) / kCodecRowsPerPage);
}

/// Checks F's bulk codecs against its scalar codec on `isa`, with FTZ / DAZ set when `ftz`.
template <row_format F>
void check_format(host_isa isa, bool ftz) {
  using In = typename F::input_type;
  const format_layout l = test_layout<F>();
  const auto pb = static_cast<std::size_t>(l.page_bytes(kCodecRowsPerPage));
  const std::int64_t count = (65536 + l.values - 1) / l.values;  // every BF16 pattern once
  const std::size_t npages = pages_for(count);
  SCOPED_TRACE(std::string(l.name) + " on " + std::string(to_string(isa)) + (ftz ? " with FTZ/DAZ" : ""));

  std::vector<std::vector<std::uint8_t>> dequant_pages;
  for (input_set set : {input_set::permutation, input_set::anchored, input_set::activations}) {
    const std::vector<In> in = inputs<F>(l, count, set);
    const std::vector<format_policy> pols = policies<F>();
    for (std::size_t pi = 0; pi < pols.size(); ++pi) {
      const format_policy& p = pols[pi];
      std::vector<std::uint8_t> ref(npages * pb, 0x5A);
      std::vector<std::uint8_t> got(npages * pb, 0x5A);
      for (std::int64_t k = 0; k < count; ++k)
        quantize_row<F>(l, ref.data() + static_cast<std::size_t>(k / kCodecRowsPerPage) * pb, kCodecRowsPerPage,
                        k % kCodecRowsPerPage, in.data() + k * l.values, p);
      {
        const ftz_daz mode(ftz);
        force_host_isa(isa);
        for (std::size_t pg = 0; pg < npages; ++pg) {
          const std::int64_t first = static_cast<std::int64_t>(pg) * kCodecRowsPerPage;
          const std::int64_t n = std::min(kCodecRowsPerPage, count - first);
          quantize_rows<F>(l, got.data() + pg * pb, kCodecRowsPerPage, 0, n, in.data() + first * l.values, p);
        }
        force_host_isa(std::nullopt);
        EXPECT_EQ(ftz_daz::ftz_set(), ftz) << "the bulk call changed the caller's FTZ mode";
      }
      std::size_t first_diff = ref.size();
      for (std::size_t i = 0; i < ref.size() && first_diff == ref.size(); ++i)
        if (ref[i] != got[i]) first_diff = i;
      ASSERT_EQ(first_diff, ref.size()) << "quantize: page byte " << first_diff << " differs (page " << first_diff / pb
                                        << ", offset " << first_diff % pb << ")";
      if (pi == 0) dequant_pages.push_back(ref);  // the default policy
    }
  }
  // Random page bytes: every code with every scale byte, NaN / subnormal / zero scales included.
  std::mt19937 rng(11);
  for (int k = 0; k < 2; ++k) {
    std::vector<std::uint8_t> page(npages * pb);
    for (auto& b : page) b = static_cast<std::uint8_t>(rng());
    dequant_pages.push_back(page);
  }
  for (const auto& page : dequant_pages) {
    const auto check = [&]<class Out>(Out /*tag*/) {
      std::vector<Out> ref(static_cast<std::size_t>(count * l.values));
      std::vector<Out> got(ref.size());
      for (std::int64_t k = 0; k < count; ++k)
        dequantize_row<F, Out>(l, page.data() + static_cast<std::size_t>(k / kCodecRowsPerPage) * pb, kCodecRowsPerPage,
                               k % kCodecRowsPerPage, ref.data() + k * l.values);
      for (host_store store : {host_store::cached, host_store::streaming}) {
        // Streaming output one value off a 16-byte boundary: the unaligned head and tail too.
        std::vector<Out> buf(got.size() + 1);
        Out* dst = store == host_store::cached ? got.data() : buf.data() + 1;
        {
          const ftz_daz mode(ftz);
          force_host_isa(isa);
          for (std::size_t pg = 0; pg < npages; ++pg) {
            const std::int64_t first = static_cast<std::int64_t>(pg) * kCodecRowsPerPage;
            const std::int64_t n = std::min(kCodecRowsPerPage, count - first);
            dequantize_rows<F, Out>(l, page.data() + pg * pb, kCodecRowsPerPage, 0, n, dst + first * l.values,
                                    F::default_policy, store);
          }
          force_host_isa(std::nullopt);
        }
        std::size_t first_diff = ref.size();
        for (std::size_t i = 0; i < ref.size() && first_diff == ref.size(); ++i)
          if (std::memcmp(&ref[i], &dst[i], sizeof(Out)) != 0) first_diff = i;
        ASSERT_EQ(first_diff, ref.size()) << "dequantize to " << (std::is_same_v<Out, float> ? "float" : "bf16") << " ("
                                          << to_string(store) << "): value " << first_diff << " differs";
      }
    };
    check(float{});
    check(bf16{});
  }
}

class HostCodec : public ::testing::TestWithParam<host_isa> {
 protected:
  void SetUp() override {
    const std::string why = host_isa_unsupported_reason(GetParam());
    if (!why.empty()) GTEST_SKIP() << to_string(GetParam()) << " not run: " << why;
    std::cout << "[ host ISA ] running " << to_string(GetParam()) << "\n";
  }
};

TEST_P(HostCodec, EveryFormatMatchesTheScalarCodec) {
  for (int i = 0; i < static_cast<int>(kFormats.size()); ++i)
    visit_format(i, [&]<row_format F>() { check_format<F>(GetParam(), false); });
}

TEST_P(HostCodec, EveryFormatMatchesTheScalarCodecUnderFtzDaz) {
  {
    const ftz_daz mode(true);
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
    ASSERT_TRUE(ftz_daz::flushes()) << "setting FTZ did not flush here: this test would prove nothing";
#endif
  }
  for (int i = 0; i < static_cast<int>(kFormats.size()); ++i)
    visit_format(i, [&]<row_format F>() { check_format<F>(GetParam(), true); });
}

// Zeros at the extreme scales (a fault class found in review): the power-of-two kernels add the
// scale's exponent to the BF16 bits, which turned a zero into 2^(-e - 127), so at scales of
// 2^-117 and below (E4M3) or 2^-126, 2^-127 (E2M1) a zero was written as a nonzero code. These
// scales come from all-zero blocks under a zero amax floor (the MXFP4 formats' default: E8M0
// 0x00) and from tiny per-tensor scales. Every format, on this ISA, with its default policy and
// zero floors / tiny tensor scales, for rows of zeros, +-0 and zeros holding one tiny value:
// the bulk bytes equal `quantize_row`'s, and a row of zeros reads back as zeros (the hand value:
// E4M3, E2M1 and BF16 codes of +-0 are +-0 whatever the scale).
TEST_P(HostCodec, ZeroRowsAtExtremeScalesMatchTheScalarCodec) {
  for (int fi = 0; fi < static_cast<int>(kFormats.size()); ++fi)
    visit_format(fi, [&]<row_format F>() {
      using In = typename F::input_type;
      const format_layout l = test_layout<F>();
      std::vector<format_policy> pols{F::default_policy};
      for (float ts : {1.0f, 0x1p-120f, 0x1p-126f}) {
        format_policy p = F::default_policy;
        p.fp8_amax_floor = 0.0f;
        p.mxfp4_amax_floor = 0.0f;
        p.tensor_scale = ts;
        pols.push_back(p);
      }
      const auto n = static_cast<std::size_t>(l.values);
      for (int kind = 0; kind < 4; ++kind) {
        std::vector<In> row(n);
        for (std::size_t i = 0; i < n; ++i) {
          float x = kind == 1 && i % 2 == 1 ? -0.0f : 0.0f;
          if (kind == 2 && i == 5) x = 0x1p-125f;
          if (kind == 3 && i == 5) x = 0x1p-133f;  // a BF16 subnormal
          if constexpr (std::is_same_v<In, float>) {
            row[i] = x;
          } else {
            row[i] = float_to_bf16(x);
          }
        }
        for (const format_policy& p : pols) {
          std::vector<std::uint8_t> want(static_cast<std::size_t>(l.page_bytes(kCodecRowsPerPage)), 0);
          std::vector<std::uint8_t> have(want.size(), 0);
          quantize_row<F>(l, want.data(), kCodecRowsPerPage, 1, row.data(), p);
          force_host_isa(GetParam());
          quantize_rows<F>(l, have.data(), kCodecRowsPerPage, 1, 1, row.data(), p);
          force_host_isa(std::nullopt);
          ASSERT_EQ(have, want) << l.name << " row kind " << kind << " tensor_scale " << p.tensor_scale;
          if (kind > 1) continue;
          std::vector<float> back(n);
          dequantize_row<F, float>(l, have.data(), kCodecRowsPerPage, 1, back.data(), p);
          for (std::size_t i = 0; i < n; ++i)  // (a zero-scale NVFP4 block writes -0 as +0)
            ASSERT_EQ(detail::float_bits(back[i]) & detail::kF32AbsMask, 0U)
                << l.name << " value " << i << " row kind " << kind;
        }
      }
    });
}

// The two values FTZ / DAZ would destroy, by hand: E8M0 0x00 (2^-127) times E2M1 6 is
// 1.5 x 2^-125 (a float normal; the scale itself is a subnormal), and E4M3 0x01 (2^-9) times
// 2^-120 is 2^-129 (a float subnormal).
TEST_P(HostCodec, SubnormalScalesAndCodesSurviveFtzDaz) {
  const format_layout mx = formats::v4_indexer_mxfp4::layout;
  std::vector<std::uint8_t> page(static_cast<std::size_t>(mx.page_bytes(kCodecRowsPerPage)), 0);
  page[static_cast<std::size_t>(mx.data_offset(kCodecRowsPerPage, 0))] = 0x07;  // value 0: +6, value 1: 0
  page[static_cast<std::size_t>(mx.scale_offset(kCodecRowsPerPage, 0))] = 0x00;
  std::vector<float> out(static_cast<std::size_t>(mx.values));
  {
    const ftz_daz mode(true);
    force_host_isa(GetParam());
    dequantize_rows<formats::v4_indexer_mxfp4, float>(mx, page.data(), kCodecRowsPerPage, 0, 1, out.data());
    force_host_isa(std::nullopt);
  }
  EXPECT_EQ(detail::float_bits(out[0]), detail::float_bits(0x1.8p-125f));

  const format_layout f8 = formats::v4_fp8_ds_mla::layout;
  std::vector<std::uint8_t> p8(static_cast<std::size_t>(f8.page_bytes(kCodecRowsPerPage)), 0);
  p8[static_cast<std::size_t>(f8.data_offset(kCodecRowsPerPage, 0))] = 0x01;
  p8[static_cast<std::size_t>(f8.scale_offset(kCodecRowsPerPage, 0))] = 7;  // 2^-120
  std::vector<float> o8(static_cast<std::size_t>(f8.values));
  {
    const ftz_daz mode(true);
    force_host_isa(GetParam());
    dequantize_rows<formats::v4_fp8_ds_mla, float>(f8, p8.data(), kCodecRowsPerPage, 0, 1, o8.data());
    force_host_isa(std::nullopt);
  }
  EXPECT_EQ(detail::float_bits(o8[0]), detail::float_bits(0x1p-129f));
}

/// A form of the host kernels (`host_simd_scope`): SSE2 (the baseline copy on x86), the plain
/// loops (what CPUs without the SSE2 and AVX2 forms run, aarch64 for one; here through a wide
/// scope without AVX2) and, on x86-64 with AVX2, the AVX2 kernels of the AVX2 / AVX-512 copies.
struct kernel_form {
  const char* name;
  bool wide;
  bool avx2;
};
/// The kernel forms this machine runs (`avx2_form`: the kernels under test have an AVX2 form;
/// without one the wide copies run the plain loops). An absent AVX2 form is reported once,
/// with the reason.
std::vector<kernel_form> kernel_forms(bool avx2_form) {
  std::vector<kernel_form> forms{{"sse2", false, false}, {"plain", true, false}};
  if (!avx2_form) return forms;
  static const std::string why_not = DSV4_HOST_AVX2 != 0 ? host_isa_unsupported_reason(host_isa::avx2)
                                                         : std::string("this build has no AVX2 kernels (not x86-64)");
  if (why_not.empty()) {
    forms.push_back({"avx2", true, true});
  } else {
    static const bool said = [] {
      std::cout << "[ SKIPPED  ] the avx2 kernel form: " << why_not << "\n";
      return true;
    }();
    (void)said;
  }
  return forms;
}

// The E2M1 host kernels against the scalar conversion for every BF16 input: the comparison
// kernel at every positive finite E4M3 scale (as a divisor), the 16-bit power-of-two kernel at
// every scale 2^-e, e in [-127, 127]. Compiled for the test's own target (the format tests above
// run them on every ISA), in every kernel form (`kernel_forms`).
TEST(HostKernels, E2m1DividedByEveryE4m3ScaleIsExact) {
  for (const kernel_form& form : kernel_forms(/*avx2_form=*/true)) {
    SCOPED_TRACE(form.name);
    const detail::host_simd_scope scope(form.wide, form.avx2);
    std::vector<bf16> in(65536);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = bf16{static_cast<std::uint16_t>(i)};
    std::vector<std::uint8_t> got(in.size() / 2);
    for (int byte = 1; byte <= 0x7E; ++byte) {
      const float s = e4m3_to_float(static_cast<std::uint8_t>(byte));
      detail::simd::e2m1_divided(in.data(), static_cast<int>(in.size()), s, got.data());
      for (std::size_t i = 0; i < in.size(); ++i) {
        const std::uint8_t want = float_to_e2m1(bf16_to_float(in[i]) / s);
        const auto have = static_cast<std::uint8_t>(i % 2 == 0 ? got[i / 2] & 0xF : got[i / 2] >> 4);
        ASSERT_EQ(have, want) << "bf16 0x" << std::hex << i << " / E4M3 byte 0x" << byte;
      }
      // The same codes from the scale byte itself (the divisor operands from kE4m3Divisors).
      std::vector<std::uint8_t> by_byte(got.size());
      detail::e2m1_pack_e4m3_divided(in.data(), static_cast<std::int64_t>(in.size()), static_cast<std::uint8_t>(byte),
                                     by_byte.data());
      ASSERT_EQ(by_byte, got) << "E4M3 byte 0x" << std::hex << byte;
    }
  }
}

// 64 values: +0 at i % 4 == 0, -0 at i % 4 == 1, the normals 0x3F80 + i elsewhere (no BF16
// subnormal, so that the power-of-two kernels take their 16-bit path): a zero times any power
// of two must keep the code of +-0.
std::vector<bf16> zeros_among_normals() {
  std::vector<bf16> z(64);
  for (std::size_t i = 0; i < z.size(); ++i)
    z[i] = bf16{static_cast<std::uint16_t>(i % 4 == 0 ? 0x0000 : i % 4 == 1 ? 0x8000 : 0x3F80 + i)};
  return z;
}

TEST(HostKernels, E2m1TimesEveryPowerOfTwoIsExact) {
  for (const kernel_form& form : kernel_forms(/*avx2_form=*/true)) {
    SCOPED_TRACE(form.name);
    const detail::host_simd_scope scope(form.wide, form.avx2);
    std::vector<bf16> in(65536);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = bf16{static_cast<std::uint16_t>(i)};
    std::vector<std::uint8_t> got(in.size() / 2);
    for (int e = -127; e <= 127; ++e) {
      const float inv = exp2i(-e);
      detail::simd::e2m1_scaled(in.data(), static_cast<int>(in.size()), inv, got.data());
      for (std::size_t i = 0; i < in.size(); ++i) {
        const std::uint8_t want = float_to_e2m1(bf16_to_float(in[i]) * inv);
        const auto have = static_cast<std::uint8_t>(i % 2 == 0 ? got[i / 2] & 0xF : got[i / 2] >> 4);
        ASSERT_EQ(have, want) << "bf16 0x" << std::hex << i << " x 2^" << std::dec << -e;
      }
      // +-0 among normal values (no subnormal: the 16-bit path): E2M1(+-0 x 2^-e) is 0x0 / 0x8.
      const std::vector<bf16> z = zeros_among_normals();
      std::vector<std::uint8_t> zp(32);
      detail::simd::e2m1_scaled(z.data(), 64, inv, zp.data());
      for (std::size_t i = 0; i < 64; ++i) {
        const std::uint8_t want = i % 4 == 0 ? 0x0 : i % 4 == 1 ? 0x8 : float_to_e2m1(bf16_to_float(z[i]) * inv);
        const auto have = static_cast<std::uint8_t>(i % 2 == 0 ? zp[i / 2] & 0xF : zp[i / 2] >> 4);
        ASSERT_EQ(have, want) << "value " << i << " x 2^" << -e;
      }
    }
  }
}

TEST(HostKernels, E4m3TimesEveryPowerOfTwoIsExact) {
  for (const kernel_form& form : kernel_forms(/*avx2_form=*/false)) {
    SCOPED_TRACE(form.name);
    const detail::host_simd_scope scope(form.wide, form.avx2);
    std::vector<bf16> in(65536);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = bf16{static_cast<std::uint16_t>(i)};
    std::vector<std::uint8_t> got(in.size());
    for (int e = -127; e <= 127; ++e) {
      const float inv = exp2i(-e);
      // Blocks of 64: those with BF16 subnormals take the float path when e < 0, the others the
      // 16-bit path; every input is checked either way.
      for (std::size_t b = 0; b < in.size(); b += 64) detail::simd::e4m3_scaled(in.data() + b, 64, inv, got.data() + b);
      for (std::size_t i = 0; i < in.size(); ++i)
        ASSERT_EQ(got[i], float_to_e4m3(bf16_to_float(in[i]) * inv))
            << "bf16 0x" << std::hex << i << " x 2^" << std::dec << -e;
      detail::simd::e4m3_pow2_codes(in.data() + 128, 64, e, got.data());  // normal BF16 inputs only
      for (std::size_t i = 0; i < 64; ++i) ASSERT_EQ(got[i], float_to_e4m3(bf16_to_float(in[128 + i]) * inv));
      // +-0 among normal values (no subnormal: the 16-bit path): E4M3(+-0 x 2^-e) is 0x00 / 0x80.
      const std::vector<bf16> z = zeros_among_normals();
      detail::simd::e4m3_scaled(z.data(), 64, inv, got.data());
      for (std::size_t i = 0; i < 64; ++i) {
        const std::uint8_t want = i % 4 == 0 ? 0x00 : i % 4 == 1 ? 0x80 : float_to_e4m3(bf16_to_float(z[i]) * inv);
        ASSERT_EQ(got[i], want) << "value " << i << " x 2^" << -e;
      }
    }
  }
}

// The FP8 block codec on the host kernels (SSE2 stats and codes, or the loops; taken by every
// E4M3 block with a power-of-two scale) against the scalar block codec: every BF16 pattern, 63
// consecutive patterns per block after an anchor 448 x 2^e (e in [-134, 127], so that the block exponent is e unless a
// pattern is larger), at the floors the formats use. Consecutive patterns share their exponent,
// so most blocks at most anchors are in the kernel's normal range and the rest take the general
// path; both must give the scalar bytes.
TEST(HostKernels, Fp8BlockKernelMatchesTheScalarBlockCodec) {
  for (const kernel_form& form : kernel_forms(/*avx2_form=*/false))
    for (float floor : {1e-4f, 0.0448f, 0.0f}) {
      for (int e = -134; e <= 127; ++e) {
        bf16 block[64];
        block[0] = float_to_bf16(kE4m3Max * exp2i(e));
        for (std::uint32_t x = 0; x < 65536; x += 63) {
          for (std::uint32_t i = 0; i < 63; ++i) block[1 + i] = bf16{static_cast<std::uint16_t>((x + i) & 0xFFFFU)};
          std::uint8_t want[64];
          std::uint8_t have[64];
          const std::uint8_t want_scale =
              detail::quantize_fp8_block_fixed<64>(block, want, floor, nan_policy::propagate);
          std::uint8_t have_scale = 0;
          {
            const detail::host_simd_scope simd_on(form.wide, form.avx2);
            have_scale = detail::quantize_fp8_block_fixed<64>(block, have, floor, nan_policy::propagate);
          }
          ASSERT_EQ(have_scale, want_scale) << form.name << " anchor 2^" << e << " patterns from 0x" << std::hex << x;
          ASSERT_EQ(std::memcmp(have, want, 64), 0)
              << form.name << " anchor 2^" << e << " patterns from 0x" << std::hex << x;
        }
      }
    }
}

// The E2M1 dequantization tables (`simd::e2m1_table_dequant`) for every scale byte (E4M3 and
// E8M0) and every packed byte, against the scalar product, float and BF16 outputs, in every
// kernel form (the AVX2 form: byte shuffles, floats as the BF16 bits << 16).
TEST(HostKernels, E2m1TableDequantMatchesEveryScaleAndByte) {
  std::vector<std::uint8_t> packed(256);
  for (std::size_t b = 0; b < 256; ++b) packed[b] = static_cast<std::uint8_t>(b);
  std::vector<float> f(512);
  std::vector<bf16> h(512);
  for (const kernel_form& form : kernel_forms(/*avx2_form=*/true))
    for (int sb = 0; sb < 256; ++sb) {
      SCOPED_TRACE(form.name);
      const detail::host_simd_scope scope(form.wide, form.avx2);
      const auto byte = static_cast<std::uint8_t>(sb);
      for (bool e4m3 : {true, false}) {
        const float scale = e4m3 ? e4m3_to_float(byte) : e8m0_to_float(byte);
        if (e4m3) {
          detail::simd::e2m1_table_dequant<true>(packed.data(), 512, byte, f.data());
          detail::simd::e2m1_table_dequant<true>(packed.data(), 512, byte, h.data());
        } else {
          detail::simd::e2m1_table_dequant<false>(packed.data(), 512, byte, f.data());
          detail::simd::e2m1_table_dequant<false>(packed.data(), 512, byte, h.data());
        }
        for (int i = 0; i < 512; ++i) {
          const auto nib = static_cast<std::uint8_t>(i % 2 == 0 ? packed[i / 2] & 0xF : packed[i / 2] >> 4);
          const float x = e2m1_to_float(nib) * scale;
          ASSERT_EQ(detail::float_bits(f[i]), detail::float_bits(canonical_nan(x)))
              << (e4m3 ? "E4M3" : "E8M0") << " scale byte " << sb << " nibble " << int{nib};
          ASSERT_EQ(h[i].bits, detail::from_float<bf16>(x).bits)
              << (e4m3 ? "E4M3" : "E8M0") << " scale byte " << sb << " nibble " << int{nib};
        }
      }
    }
}

// E4M3 codes times an E8M0 scale (`dequantize_e4m3_block`, the FP8 formats' dequantizer), on the
// host kernels (a power-of-two exponent shift for normal codes) and in scalar code, for every
// code at every scale byte.
TEST(HostKernels, E4m3DequantMatchesEveryCodeAndScale) {
  std::uint8_t codes[256];
  for (int c = 0; c < 256; ++c) codes[c] = static_cast<std::uint8_t>(c);
  for (const kernel_form& form : kernel_forms(/*avx2_form=*/false))
    for (int sb = 0; sb < 256; ++sb) {
      const float scale = e8m0_to_float(static_cast<std::uint8_t>(sb));
      // Whole blocks of normal codes and zeros take the shift; a block with a subnormal or NaN
      // code the float path. Both are compared code by code.
      for (int start = 0; start < 256; start += 16) {
        float f[16];
        bf16 h[16];
        {
          const detail::host_simd_scope simd_on(form.wide, form.avx2);
          detail::dequantize_e4m3_block<16>(codes + start, scale, f);
          detail::dequantize_e4m3_block<16>(codes + start, scale, h);
        }
        for (int i = 0; i < 16; ++i) {
          const float x = e4m3_to_float(codes[start + i]) * scale;
          ASSERT_EQ(detail::float_bits(f[i]), detail::float_bits(canonical_nan(x)))
              << form.name << " code " << start + i << " scale " << sb;
          ASSERT_EQ(h[i].bits, detail::from_float<bf16>(x).bits)
              << form.name << " code " << start + i << " scale " << sb;
        }
      }
    }
}

// The block exponent without the division, for every non-negative BF16 amax (NaN excluded) and
// the floors the formats use, against `scale_exponent_for_amax`.
TEST(HostKernels, BlockScaleExponentMatchesForEveryBf16Amax) {
  for (float fmax : {kE4m3Max, kE2m1Max}) {
    for (float floor : {0.0f, 1e-4f, 0.0448f, 1e-8f, 6.0f * 0x1p-126f}) {
      for (std::uint32_t b = 0; b <= 0x7F80U; ++b) {
        const float amax = bf16_to_float(bf16{static_cast<std::uint16_t>(b)});
        ASSERT_EQ(detail::simd::block_scale_exponent(amax, fmax, floor), scale_exponent_for_amax(amax, fmax, floor))
            << "amax bf16 0x" << std::hex << b << " max " << fmax << " floor " << floor;
      }
    }
  }
}

// The NVFP4 and V4.1 FP4 tile scales from the amax table (`scale_byte_of_amax`) for every
// non-negative BF16 amax (NaN excluded), against the rules as the producers write them:
// E4M3(amax / 6) (FlashInfer NVFP4 KV) and E4M3(clamp(amax / 6, 2^-9, 448)) (FlashMLA V4.1).
TEST(HostKernels, TileScaleTablesMatchTheRulesForEveryBf16Amax) {
  const detail::host_simd_scope scope;
  for (std::uint32_t b = 0; b <= 0x7F80U; ++b) {
    const float amax = bf16_to_float(bf16{static_cast<std::uint16_t>(b)});
    const float q = amax / 6.0f;
    ASSERT_EQ(detail::scale_byte_of_amax<formats::detail::nvfp4_scale_rule>(amax), float_to_e4m3(q))
        << "amax bf16 0x" << std::hex << b;
    const float clamped = std::min(std::max(q, 0x1p-9f), 448.0f);
    ASSERT_EQ(detail::scale_byte_of_amax<formats::detail::v41_fp4_scale_rule>(amax), float_to_e4m3(clamped))
        << "amax bf16 0x" << std::hex << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, HostCodec, ::testing::ValuesIn(kHostIsas),
                         [](const ::testing::TestParamInfo<host_isa>& i) { return std::string(to_string(i.param)); });

TEST(HostIsa, SelectionAndErrors) {
  std::cout << "[ host ISA ] best " << to_string(best_host_isa()) << ", active " << to_string(active_host_isa())
            << "\n";
  EXPECT_TRUE(host_isa_supported(host_isa::baseline));
  EXPECT_TRUE(host_isa_supported(best_host_isa()));
  force_host_isa(host_isa::baseline);
  EXPECT_EQ(active_host_isa(), host_isa::baseline);
  force_host_isa(std::nullopt);
  for (host_isa isa : kHostIsas) {
    if (host_isa_supported(isa)) continue;
    EXPECT_THROW(force_host_isa(isa), std::invalid_argument) << to_string(isa);
    EXPECT_FALSE(host_isa_unsupported_reason(isa).empty());
  }
  EXPECT_EQ(host_isa_from_string("avx2"), host_isa::avx2);
  EXPECT_EQ(host_isa_from_string("sse9"), std::nullopt);
}

TEST(HostIsa, BulkCallsCheckTheirRows) {
  const format_layout l = formats::v4_fp8_ds_mla::layout;
  std::vector<std::uint8_t> page(static_cast<std::size_t>(l.page_bytes(kCodecRowsPerPage)), 0);
  std::vector<bf16> in(static_cast<std::size_t>(2 * l.values));
  EXPECT_THROW(quantize_rows<formats::v4_fp8_ds_mla>(l, page.data(), kCodecRowsPerPage, 63, 2, in.data()),
               std::invalid_argument);
  EXPECT_THROW(quantize_rows<formats::v4_fp8_ds_mla>(l, page.data(), kCodecRowsPerPage, -1, 1, in.data()),
               std::invalid_argument);
  EXPECT_THROW(
      quantize_rows<formats::v4_fp8_ds_mla>(formats::v4_bf16::layout, page.data(), kCodecRowsPerPage, 0, 1, in.data()),
      std::invalid_argument);
  for (std::uint8_t b : page) ASSERT_EQ(b, 0) << "a failed call wrote";
  EXPECT_THROW(quantize_rows<formats::fp32_state>(formats::fp32_state::layout, page.data(), kCodecRowsPerPage, 0, 1,
                                                  reinterpret_cast<const float*>(in.data())),
               std::invalid_argument);
}

}  // namespace
}  // namespace dsv4::cache
