// The host slot calls of host_codec.hpp (`host_insert_rows`, `host_gather_rows`): every
// registered format, on 1 to 8 threads, against the per-row scalar codec placed by slot
// (`quantize_row` / `dequantize_row` at page = slot / rows_per_page, row = slot % rows_per_page),
// with padding slots, and the errors, which leave the pool untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/cache/host_codec.hpp"

namespace dsv4::cache {
namespace {

constexpr std::int64_t kRowsPerPage = 16;
constexpr std::int64_t kPages = 40;  // page 0 the null page: 624 writable slots

template <row_format F>
format_layout slot_test_layout() {
  if constexpr (std::is_same_v<F, formats::fp32_state>) {
    return bind_state_row_bytes(1024);
  } else {
    return F::layout;
  }
}

/// Activation-like rows (normal samples at 2^(k % 20 - 10), some zeros): the blocks the fast
/// kernels take and the ones they leave to the general path.
template <class In>
std::vector<In> activation_rows(std::int64_t rows, std::int64_t values) {
  std::vector<In> v(static_cast<std::size_t>(rows * values));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto row = static_cast<int>(i / static_cast<std::size_t>(values));
    const float x = rng() % 32 == 0 ? 0.0f : normal(rng) * exp2i(row % 20 - 10);
    if constexpr (std::is_same_v<In, float>) {
      v[i] = x;
    } else {
      v[i] = float_to_bf16(x);
    }
  }
  return v;
}

/// `tokens` slots: distinct writable slots in random order, every 7th token padding (-1).
std::vector<std::int64_t> random_slots(std::int64_t tokens, std::uint32_t seed) {
  std::vector<std::int64_t> all(static_cast<std::size_t>((kPages - 1) * kRowsPerPage));
  std::iota(all.begin(), all.end(), kRowsPerPage);
  std::mt19937 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<std::int64_t> s(all.begin(), all.begin() + tokens);
  for (std::size_t k = 3; k < s.size(); k += 7) s[k] = -1;
  return s;
}

template <row_format F>
void check_slots(int threads) {
  using In = typename F::input_type;
  const format_layout l = slot_test_layout<F>();
  const std::int64_t pb = l.page_bytes(kRowsPerPage) + 64;  // a page stride above the page bytes
  const pool_pages shape{nullptr, pb, kPages, kRowsPerPage};
  const std::int64_t tokens = 500;
  const std::vector<std::int64_t> slots = random_slots(tokens, 5U + static_cast<std::uint32_t>(threads));
  const std::vector<In> in = activation_rows<In>(tokens, l.values);
  SCOPED_TRACE(std::string(l.name) + " on " + std::to_string(threads) + " threads");

  std::vector<std::uint8_t> want(static_cast<std::size_t>(kPages * pb), 0);
  for (std::int64_t k = 0; k < tokens; ++k) {
    if (slots[k] < 0) continue;
    quantize_row<F>(l, want.data() + (slots[k] / kRowsPerPage) * pb, kRowsPerPage, slots[k] % kRowsPerPage,
                    in.data() + k * l.values);
  }
  std::vector<std::uint8_t> got(want.size(), 0);
  pool_pages pool = shape;
  pool.base = got.data();
  host_insert_rows<F>(l, pool, slots.data(), tokens, in.data(), F::default_policy, threads);
  ASSERT_EQ(got, want) << "insert: pool bytes differ";

  const auto check_gather = [&]<class Out>(Out /*tag*/) {
    std::vector<Out> ref(static_cast<std::size_t>(tokens * l.values));
    for (std::int64_t k = 0; k < tokens; ++k) {
      const std::int64_t s = slots[k] < 0 ? 0 : slots[k];  // padding reads row 0 of the null page
      dequantize_row<F, Out>(l, want.data() + (s / kRowsPerPage) * pb, kRowsPerPage, s % kRowsPerPage,
                             ref.data() + k * l.values);
    }
    for (host_store store : {host_store::cached, host_store::streaming}) {
      std::vector<Out> out(ref.size());
      host_gather_rows<F, Out>(l, pool, slots.data(), tokens, out.data(), F::default_policy, store, threads);
      ASSERT_EQ(std::memcmp(out.data(), ref.data(), ref.size() * sizeof(Out)), 0)
          << "gather to " << (std::is_same_v<Out, float> ? "float" : "bf16") << " (" << to_string(store) << ")";
    }
  };
  check_gather(float{});
  check_gather(bf16{});
}

TEST(HostSlots, EveryFormatMatchesTheRowCodecsOnAnyThreadCount) {
  for (int threads : {1, 2, 3, 8}) {
    for (int i = 0; i < static_cast<int>(kFormats.size()); ++i)
      visit_format(i, [&]<row_format F>() { check_slots<F>(threads); });
  }
}

TEST(HostSlots, RejectBadCallsBeforeWriting) {
  using F = formats::v4_fp8_ds_mla;
  const format_layout l = F::layout;
  const std::int64_t pb = l.page_bytes(kRowsPerPage);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(kPages * pb), 0);
  const pool_pages pool{bytes.data(), pb, kPages, kRowsPerPage};
  std::vector<bf16> in(static_cast<std::size_t>(4 * l.values), float_to_bf16(1.0f));
  std::vector<float> out(in.size());
  const auto insert_into = [&](const pool_pages& p, std::vector<std::int64_t> s, int threads) {
    host_insert_rows<F>(l, p, s.data(), static_cast<std::int64_t>(s.size()), in.data(), F::default_policy, threads);
  };
  const auto insert = [&](std::vector<std::int64_t> s, int threads = 1) { insert_into(pool, std::move(s), threads); };
  // The null page (slots 0..15), past the pool, below -1: refused, naming the token and the slot.
  for (std::int64_t bad : {std::int64_t{0}, kRowsPerPage - 1, kPages * kRowsPerPage, std::int64_t{-2}}) {
    try {
      insert({kRowsPerPage, kRowsPerPage + 1, bad});
      ADD_FAILURE() << "slot " << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("token=2"), std::string::npos) << what;
      EXPECT_NE(what.find("slot=" + std::to_string(bad)), std::string::npos) << what;
    }
  }
  EXPECT_THROW(insert({kRowsPerPage}, 0), std::invalid_argument);
  EXPECT_THROW(insert({kRowsPerPage}, kHostMaxThreads + 1), std::invalid_argument);
  // A repeated slot: a race on several threads, refused there; on one thread the last row wins.
  EXPECT_THROW(insert({kRowsPerPage + 1, kRowsPerPage + 2, kRowsPerPage + 1}, 2), std::invalid_argument);
  pool_pages small = pool;
  small.page_bytes = pb - 1;
  EXPECT_THROW(insert_into(small, {kRowsPerPage}, 1), std::invalid_argument);
  try {
    host_insert_rows<F>(formats::v4_bf16::layout, pool, nullptr, 0, in.data());
    ADD_FAILURE() << "another format's layout accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'v4.bf16', not the called format 'v4.fp8_ds_mla'"), std::string::npos)
        << e.what();
  }
  const std::int64_t one = kRowsPerPage;
  EXPECT_THROW(host_insert_rows<F>(l, pool, &one, -1, in.data()), std::invalid_argument);
  EXPECT_THROW(host_insert_rows<F>(l, pool, nullptr, 1, in.data()), std::invalid_argument);
  EXPECT_THROW((host_gather_rows<F, float>(l, pool, &one, 1, nullptr)), std::invalid_argument);
  for (std::uint8_t b : bytes) ASSERT_EQ(b, 0) << "a refused call wrote";

  // The accepted repeated slot on one thread: the last token's row.
  in[static_cast<std::size_t>(2 * l.values)] = float_to_bf16(2.0f);
  insert({kRowsPerPage + 1, kRowsPerPage + 2, kRowsPerPage + 1}, 1);
  const std::int64_t s = kRowsPerPage + 1;
  host_gather_rows<F, float>(l, pool, &s, 1, out.data());
  EXPECT_EQ(out[0], 2.0f);
  // Zero tokens: nothing to do, no pointers needed.
  EXPECT_NO_THROW(host_insert_rows<F>(l, pool, nullptr, 0, nullptr, F::default_policy, 4));
}

}  // namespace
}  // namespace dsv4::cache
