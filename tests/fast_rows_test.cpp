// Tests of fast_rows.hpp: the specialized kernels' lane work and the device-path choice.
//
// The specialized insert / gather lanes (`fast::insert_chunk`, `fast::gather_chunk`, emulated on
// the host in shuffled orders by tests/fast_lanes.hpp, exactly the calls the CUDA kernels make
// per lane) write and read the same bytes and values as the generic lanes (`insert_unit<F>` /
// `gather_unit<F>` of slot_work.hpp, what the generic kernels run) under the same writer's
// policy, for every writer of every format that has specialized kernels and every kind of input
// (random bit patterns with NaN, inf and subnormals; ordinary values; all-zero blocks; +-inf).
// So on a GPU the bytes depend on the writer asked for, never on the path that ran. Which path a
// (format, writer) takes is checked against a table written from the formats' documentation;
// the writers' all-zero-block scales against the values their headers give.
#include "dsv4/cache/fast_rows.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/cache/slot_work.hpp"
#include "fast_lanes.hpp"

namespace dsv4::cache {
namespace {

using testing::fast_gather_row;
using testing::fast_insert;
using testing::fast_insert_row;
using testing::generic_insert;

enum class input_kind { any_bits, gaussian, zeros, wide_range, sparse_nan, infinities };
constexpr input_kind kKinds[] = {input_kind::any_bits,   input_kind::gaussian,   input_kind::zeros,
                                 input_kind::wide_range, input_kind::sparse_nan, input_kind::infinities};

std::vector<bf16> make_rows(std::int64_t rows, std::int64_t values, input_kind k, std::mt19937& rng) {
  std::vector<bf16> r(static_cast<std::size_t>(rows * values));
  std::uniform_int_distribution<int> bits(0, 0xFFFF);
  std::normal_distribution<float> gauss(0.0f, 3.0f);
  std::uniform_int_distribution<int> expo(-140, 127);
  for (std::size_t i = 0; i < r.size(); ++i) {
    switch (k) {
      case input_kind::any_bits: r[i] = bf16{static_cast<std::uint16_t>(bits(rng))}; break;
      case input_kind::gaussian: r[i] = float_to_bf16(gauss(rng)); break;
      case input_kind::zeros: r[i] = bf16{static_cast<std::uint16_t>(i % 3 == 0 ? 0x8000 : 0)}; break;
      case input_kind::wide_range: r[i] = float_to_bf16(gauss(rng) * exp2i(expo(rng))); break;
      case input_kind::sparse_nan:
        r[i] = (i % 37 == 5) ? bf16{0x7FC1} : ((i % 53 == 7) ? bf16{0xFF80} : float_to_bf16(gauss(rng)));
        break;
      case input_kind::infinities:
        r[i] =
            (i % 41 == 3) ? bf16{static_cast<std::uint16_t>(i % 2 == 0 ? 0x7F80 : 0xFF80)} : float_to_bf16(gauss(rng));
        break;
    }
  }
  return r;
}

std::uint32_t bits_of(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return u;
}

/// The specialized page layout of registry format F for `rows` rows.
template <pool_format P>
page_layout_t<P> fast_layout(std::int64_t rows) {
  if constexpr (P == pool_format::fp8_ds_mla)
    return make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(512, 64), rows);
  else
    return make_indexer_page_layout(
        make_indexer_row_format(P == pool_format::indexer_fp8 ? indexer_format::fp8 : indexer_format::mxfp4, 128),
        rows);
}

/// Both paths' lanes for format F (specialized format P) under policy `p`, on every input kind:
/// pages, refused counts and gathered rows must be equal. Returns "" or the first difference.
template <pool_format P, row_format F>
std::string compare_paths(const format_policy& p, const std::string& what, std::mt19937& rng) {
  constexpr std::int64_t kRows = 64;
  constexpr std::int64_t kPages = 3;  // page 0: the null page
  const format_layout& l = F::layout;
  const page_layout_t<P> fl = fast_layout<P>(kRows);
  if (fl.page_bytes() != l.page_bytes(kRows) || fast::row_values<P>(fl) != l.values)
    return what + ": the specialized and registry page layouts differ in size";
  const std::int64_t page_bytes = l.page_bytes(kRows);
  const std::int64_t values = l.values;
  std::vector<std::int64_t> slots(static_cast<std::size_t>((kPages - 1) * kRows));
  std::iota(slots.begin(), slots.end(), kRows);
  for (const std::int64_t s : {std::int64_t{-1}, std::int64_t{0}, kRows - 1, kPages * kRows, std::int64_t{-3}})
    slots.push_back(s);
  std::shuffle(slots.begin(), slots.end(), rng);
  for (const input_kind k : kKinds) {
    const std::string where = what + " kind " + std::to_string(static_cast<int>(k));
    const std::vector<bf16> in = make_rows(static_cast<std::int64_t>(slots.size()), values, k, rng);
    std::vector<std::uint8_t> fast_pages(static_cast<std::size_t>(kPages * page_bytes), 0);
    std::vector<std::uint8_t> generic_pages(fast_pages.size(), 0);
    const pool_pages fp{fast_pages.data(), page_bytes, kPages, kRows};
    const pool_pages gp{generic_pages.data(), page_bytes, kPages, kRows};
    const std::int64_t fast_refused = fast_insert<P>(fl, fp, slots, in.data(), values, p, rng);
    const std::int64_t generic_refused = generic_insert<F>(l, gp, slots, in.data(), values, p, rng);
    if (fast_refused != 4 || generic_refused != 4)  // slot 0, rows - 1 (the null page), past the pool, -3
      return where + ": refused " + std::to_string(fast_refused) + " / " + std::to_string(generic_refused) +
             ", expected 4";
    for (std::size_t i = 0; i < fast_pages.size(); ++i)
      if (fast_pages[i] != generic_pages[i])
        return where + ": page byte " + std::to_string(i) + " specialized " + std::to_string(fast_pages[i]) +
               ", generic " + std::to_string(generic_pages[i]);
    std::vector<float> ff(static_cast<std::size_t>(values)), gf(ff.size());
    std::vector<bf16> fb(ff.size()), gb(ff.size());
    for (std::int64_t s = kRows; s < kPages * kRows; ++s) {
      const std::uint8_t* page = fast_pages.data() + (s / kRows) * page_bytes;
      fast_gather_row<P>(fl, page, s % kRows, ff.data(), fb.data(), rng);
      for (const int u : testing::shuffled(F::units(l), rng)) {
        (void)gather_unit<F>(l, p, gp, s, gf.data(), u);
        (void)gather_unit<F>(l, p, gp, s, gb.data(), u);
      }
      for (std::size_t i = 0; i < ff.size(); ++i)
        if (bits_of(ff[i]) != bits_of(gf[i]) || fb[i].bits != gb[i].bits)
          return where + ": slot " + std::to_string(s) + " value " + std::to_string(i) + " gathered differently";
    }
  }
  return {};
}

/// The extra policies beyond the writers': the other NaN rule, other floors, OCP's MXFP4 exponent.
std::vector<format_policy> variations(const format_policy& base) {
  std::vector<format_policy> v;
  format_policy a = base;
  a.nan = base.nan == nan_policy::propagate ? nan_policy::ignore : nan_policy::propagate;
  v.push_back(a);
  format_policy b = base;
  b.fp8_amax_floor = 1e-10f;
  b.mxfp4_amax_floor = 1e-4f;
  v.push_back(b);
  format_policy c = base;
  c.mxfp4_scale = mxfp4_scale_rule::ocp_floor;
  v.push_back(c);
  return v;
}

template <pool_format P, row_format F>
void check_every_writer() {
  std::mt19937 rng(2026);
  int compared = 0;
  for (const format_writer& w : F::writers) {
    const std::string what = std::string(F::layout.name) + " / " + std::string(to_string(w.producer));
    if (!fast_kernels_support(P, w.policy)) {
      EXPECT_EQ(device_path_for(F::layout, w.policy), device_path::generic) << what;
      continue;
    }
    EXPECT_EQ(device_path_for(F::layout, w.policy), device_path::fast) << what;
    EXPECT_EQ((compare_paths<P, F>(w.policy, what, rng)), "");
    ++compared;
    for (const format_policy& v : variations(w.policy)) {
      ASSERT_TRUE(fast_kernels_support(P, v)) << what;
      EXPECT_EQ((compare_paths<P, F>(v, what + " (variation)", rng)), "");
    }
  }
  EXPECT_GE(compared, 1) << F::layout.name << ": no writer took the specialized path";
}

TEST(FastRows, Fp8DsMlaLanesWriteTheGenericBytesForEveryWriter) {
  check_every_writer<pool_format::fp8_ds_mla, formats::v4_fp8_ds_mla>();
}
TEST(FastRows, IndexerFp8LanesWriteTheGenericBytesForEveryWriter) {
  check_every_writer<pool_format::indexer_fp8, formats::v4_indexer_fp8>();
  check_every_writer<pool_format::indexer_fp8, formats::v32_indexer_fp8>();
}
TEST(FastRows, IndexerMxfp4LanesWriteTheGenericBytesForEveryWriter) {
  check_every_writer<pool_format::indexer_mxfp4, formats::v4_indexer_mxfp4>();
}

TEST(FastRows, PathOfEveryFormatAndWriter) {
  // From the formats' headers: the specialized kernels exist for v4.fp8_ds_mla, the FP8 indexer
  // keys and v4.indexer_mxfp4; they compute the exact-ceiling E4M3 exponent, the power-of-two
  // fp32 scale and nearest-even E2M1. tokenspeed's MXFP4 writer rounds ties toward zero: generic.
  const std::vector<std::pair<std::string_view, std::string_view>> fast = {
      {"v4.fp8_ds_mla", "flashmla"},    {"v4.fp8_ds_mla", "vllm"},    {"v4.indexer_fp8", "vllm"},
      {"v4.indexer_fp8", "tokenspeed"}, {"v3.2.indexer_fp8", "vllm"}, {"v4.indexer_mxfp4", "vllm"}};
  int fast_seen = 0;
  for (std::size_t i = 0; i < kFormats.size(); ++i)
    for (const format_writer& w : kFormatWriters[i]) {
      const bool want =
          std::find(fast.begin(), fast.end(), std::pair{kFormats[i].name, to_string(w.producer)}) != fast.end();
      EXPECT_EQ(device_path_for(kFormats[i], w.policy), want ? device_path::fast : device_path::generic)
          << kFormats[i].name << " / " << to_string(w.producer);
      fast_seen += want ? 1 : 0;
    }
  EXPECT_EQ(fast_seen, static_cast<int>(fast.size()));  // every listed pair is a registered writer
  // The generic path for a policy the specialized kernels do not compute, on their own formats.
  format_policy trtllm = formats::v4_fp8_ds_mla::default_policy;
  trtllm.fp8_exp = fp8_exponent::float_log2_ceil;
  EXPECT_EQ(device_path_for(formats::v4_fp8_ds_mla::layout, trtllm), device_path::generic);
  format_policy legacy = formats::v32_indexer_fp8::default_policy;
  legacy.fp32_scale = fp32_scale_rule::legacy_amax;
  EXPECT_EQ(device_path_for(formats::v32_indexer_fp8::layout, legacy), device_path::generic);
  EXPECT_FALSE(fast_kernels_support(pool_format::other, format_policy{}));
}

TEST(FastRows, DefaultPolicyIsTheDefaultWriters) {
  // What the specialized kernels take when no policy is given: the format's default writer.
  EXPECT_EQ(fast_default_policy(pool_format::fp8_ds_mla).fp8_amax_floor, 0.0448f);                // FlashMLA
  EXPECT_EQ(fast_default_policy(pool_format::indexer_fp8).fp8_amax_floor, 1e-4f);                 // vLLM
  EXPECT_EQ(fast_default_policy(pool_format::indexer_mxfp4).mxfp4_amax_floor, 6.0f * 0x1p-126f);  // vLLM
  EXPECT_THROW((void)fast_default_policy(pool_format::other), std::invalid_argument);
}

TEST(FastRows, TheWriterDecidesAnAllZeroBlocksScale) {
  // Hand values from the format headers (docs/engines/writers.md 3, 4): an all-zero block of
  // v4.fp8_ds_mla gets scale byte 114 from FlashMLA (floor 1e-4 on amax / 448: e = -13) and 105
  // from vLLM (floor 1e-4 on amax: e = ceil(log2(1e-4 / 448)) = -22); an all-zero FP8 indexer key
  // gets the fp32 scale 2^-22 (vLLM) or 2^-33 (tokenspeed); an all-zero MXFP4 block byte 0x01
  // (vLLM: floor 6 x 2^-126).
  std::mt19937 rng(7);
  const std::vector<bf16> zeros(512, bf16{0});
  {
    const auto l = fast_layout<pool_format::fp8_ds_mla>(64);
    for (const auto& [w, byte] : {std::pair{0, 114}, std::pair{1, 105}}) {
      std::vector<std::uint8_t> page(static_cast<std::size_t>(l.page_bytes()), 0xAA);
      fast_insert_row<pool_format::fp8_ds_mla>(
          l, page.data(), 5, zeros.data(), formats::v4_fp8_ds_mla::writers[static_cast<std::size_t>(w)].policy, rng);
      for (int b = 0; b < 7; ++b) EXPECT_EQ(page[static_cast<std::size_t>(l.scale_offset(5) + b)], byte) << w;
      EXPECT_EQ(page[static_cast<std::size_t>(l.scale_offset(5) + 7)], 0) << "the pad byte";
    }
  }
  {
    const auto l = fast_layout<pool_format::indexer_fp8>(64);
    for (const auto& [w, scale] : {std::pair{0, 0x34800000U}, std::pair{1, 0x2F000000U}}) {
      std::vector<std::uint8_t> page(static_cast<std::size_t>(l.page_bytes()), 0xAA);
      fast_insert_row<pool_format::indexer_fp8>(
          l, page.data(), 9, zeros.data(), formats::v4_indexer_fp8::writers[static_cast<std::size_t>(w)].policy, rng);
      std::uint32_t got = 0;
      std::memcpy(&got, page.data() + l.scale_offset(9), 4);  // little-endian host
      EXPECT_EQ(got, scale) << w;
    }
  }
  {
    const auto l = fast_layout<pool_format::indexer_mxfp4>(64);
    std::vector<std::uint8_t> page(static_cast<std::size_t>(l.page_bytes()), 0xAA);
    fast_insert_row<pool_format::indexer_mxfp4>(l, page.data(), 0, zeros.data(),
                                                fast_default_policy(pool_format::indexer_mxfp4), rng);
    for (int b = 0; b < 4; ++b) EXPECT_EQ(page[static_cast<std::size_t>(l.scale_offset(0) + b)], 0x01);
  }
}

}  // namespace
}  // namespace dsv4::cache
