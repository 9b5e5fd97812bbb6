// The generic CUDA kernels (`insert_rows<F>`, `gather_rows<F>`) for every registered row format
// and every writer it lists (`F::writers`, each with its `format_policy`), V4.1's included:
// pages written on the device equal, byte for byte, the pages the same lane functions write on
// the host (`insert_unit<F>`, slot_work.hpp, lanes in shuffled order), and the rows gathered on
// the device (float and BF16) equal the host's `gather_unit<F>`. Slots in shuffled order,
// padding (-1) and refused slots among them; the null page must stay zero; the refused-slot
// counter must hold what the documented contract gives (once per refused token and launch).
// Every check runs and reports, whatever the others found. Every case skips, saying why, when
// the CUDA runtime sees no device; CI (nvcc, no GPU) compiles every format's kernels.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dsv4/cache/cuda/kernels.cuh"
#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/cache/slot_work.hpp"

namespace dsv4::cache::cuda {
namespace {

bool device_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

/// Device memory of `n` T, freed on scope exit.
template <class T>
struct device_buffer {
  T* p = nullptr;
  explicit device_buffer(std::size_t n) { DSV4_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T))); }
  ~device_buffer() { cudaFree(p); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
};

/// Random input row values: normal, with exact zeros and large values mixed in.
template <class In>
std::vector<In> random_rows(std::int64_t rows, std::int64_t values, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<In> v(static_cast<std::size_t>(rows * values));
  for (std::size_t i = 0; i < v.size(); ++i) {
    float x = normal(rng);
    if (i % 97 == 0) x = 0.0f;
    if (i % 89 == 0) x *= 300.0f;
    if constexpr (std::is_same_v<In, float>)
      v[i] = x;
    else
      v[i] = float_to_bf16(x);
  }
  return v;
}

/// Refused-slot count one launch of a generic kernel adds, from the documented contract
/// (slot_work.hpp, cuda/kernels.cuh): one per token whose slot is neither -1 (padding) nor in
/// [rows_per_page, num_slots) (the null page's rows and anything outside the pool are refused),
/// counted once per token whatever the format's units per row.
std::int64_t refused_per_launch(const std::vector<std::int64_t>& slots, std::int64_t rows_per_page,
                                std::int64_t num_slots) {
  std::int64_t n = 0;
  for (const std::int64_t s : slots)
    if (s != -1 && (s < rows_per_page || s >= num_slots)) ++n;
  return n;
}

/// One format under writer `w`: device pages and gathered rows against the host lanes run with
/// the same policy. Returns "" or every difference found (each check runs whatever the others
/// found).
template <row_format F>
std::string check_format(const format_writer& w) {
  const format_layout l = F::layout.name == formats::fp32_state::layout.name ? bind_state_row_bytes(4'096) : F::layout;
  const format_policy& policy = w.policy;
  const std::int64_t rows = l.rule == page_rule::interleaved && l.row_bytes >= 4'096 ? 2 : 64;
  const std::int64_t pages = 4;  // page 0: the null page
  const std::int64_t page_bytes = l.page_bytes(rows);
  const std::int64_t pool_bytes = pages * page_bytes;
  const std::int64_t values = l.values;
  // Slots: every writable slot once, shuffled, then padding and refused slots.
  std::vector<std::int64_t> slots(static_cast<std::size_t>((pages - 1) * rows));
  std::iota(slots.begin(), slots.end(), rows);
  std::mt19937 rng(static_cast<std::uint32_t>(l.row_bytes));
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.insert(slots.begin() + 3, -1);
  slots.push_back(0);             // a row of the null page: refused
  slots.push_back(pages * rows);  // one past the pool: refused
  slots.push_back(-5);            // negative, not -1: refused
  const auto tokens = static_cast<std::int64_t>(slots.size());
  using In = typename F::input_type;
  const std::vector<In> in = random_rows<In>(tokens, values, 11);

  // Host lanes, in a shuffled (token, unit) order.
  std::vector<std::uint8_t> host(static_cast<std::size_t>(pool_bytes), 0);
  const pool_pages hp{host.data(), page_bytes, pages, rows};
  std::vector<std::pair<std::int64_t, int>> lanes;
  for (std::int64_t k = 0; k < tokens; ++k)
    for (int u = 0; u < F::units(l); ++u) lanes.emplace_back(k, u);
  std::shuffle(lanes.begin(), lanes.end(), rng);
  for (const auto& [k, u] : lanes)
    (void)insert_unit<F>(l, policy, hp, slots[static_cast<std::size_t>(k)], in.data() + k * values, u);

  // Device kernels: one insert and two gathers (float, BF16), all with the writer's policy.
  device_buffer<std::uint8_t> d_pool(static_cast<std::size_t>(pool_bytes));
  device_buffer<In> d_in(in.size());
  device_buffer<std::int64_t> d_slots(slots.size());
  device_buffer<unsigned long long> d_err(1);
  device_buffer<float> d_f32(static_cast<std::size_t>(tokens * values));
  device_buffer<bf16> d_bf16(static_cast<std::size_t>(tokens * values));
  DSV4_CUDA_CHECK(cudaMemset(d_pool.p, 0, static_cast<std::size_t>(pool_bytes)));
  DSV4_CUDA_CHECK(cudaMemset(d_err.p, 0, sizeof(unsigned long long)));
  DSV4_CUDA_CHECK(cudaMemcpy(d_in.p, in.data(), in.size() * sizeof(In), cudaMemcpyHostToDevice));
  DSV4_CUDA_CHECK(cudaMemcpy(d_slots.p, slots.data(), slots.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice));
  const raw_pool_view view{d_pool.p, page_bytes, pages, rows, l.row_bytes, l};
  insert_rows<F>(view, d_in.p, values, d_slots.p, tokens, d_err.p, nullptr, policy);
  gather_rows<F>(view, d_slots.p, tokens, d_f32.p, values, d_err.p, nullptr, policy);
  gather_rows<F>(view, d_slots.p, tokens, d_bf16.p, values, d_err.p, nullptr, policy);
  DSV4_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint8_t> dev(static_cast<std::size_t>(pool_bytes));
  std::vector<float> f32(static_cast<std::size_t>(tokens * values));
  std::vector<bf16> b16(static_cast<std::size_t>(tokens * values));
  unsigned long long refused = 0;
  DSV4_CUDA_CHECK(cudaMemcpy(dev.data(), d_pool.p, dev.size(), cudaMemcpyDeviceToHost));
  DSV4_CUDA_CHECK(cudaMemcpy(f32.data(), d_f32.p, f32.size() * sizeof(float), cudaMemcpyDeviceToHost));
  DSV4_CUDA_CHECK(cudaMemcpy(b16.data(), d_bf16.p, b16.size() * sizeof(bf16), cudaMemcpyDeviceToHost));
  DSV4_CUDA_CHECK(cudaMemcpy(&refused, d_err.p, sizeof(refused), cudaMemcpyDeviceToHost));

  const std::string name = std::string(l.name) + " (" + std::string(to_string(w.producer)) + ")";
  std::string errors;
  for (std::size_t i = 0; i < dev.size(); ++i)
    if (dev[i] != host[i]) {
      errors += name + ": device page byte " + std::to_string(i) + " = " + std::to_string(dev[i]) + ", host lanes " +
                std::to_string(host[i]) + "\n";
      break;
    }
  for (std::int64_t p = 0; p < page_bytes; ++p)  // the null page stays zero
    if (dev[static_cast<std::size_t>(p)] != 0) {
      errors += name + ": the null page's byte " + std::to_string(p) + " was written\n";
      break;
    }
  const std::int64_t want_refused = 3 * refused_per_launch(slots, rows, pages * rows);  // 3 launches
  if (static_cast<std::int64_t>(refused) != want_refused)
    errors += name + ": " + std::to_string(refused) + " refused slots counted, expected " +
              std::to_string(want_refused) + " (3 per launch: the null-page row, one past the pool, -5)\n";
  // Host gather of the host pages, per (token, unit), compared bit for bit (NaN payloads too).
  std::vector<float> hf(f32.size(), -1.0f);
  std::vector<bf16> hb(b16.size());
  for (const auto& [k, u] : lanes) {
    (void)gather_unit<F>(l, policy, hp, slots[static_cast<std::size_t>(k)], hf.data() + k * values, u);
    (void)gather_unit<F>(l, policy, hp, slots[static_cast<std::size_t>(k)], hb.data() + k * values, u);
  }
  for (std::size_t i = 0; i < f32.size(); ++i)
    if (std::memcmp(&hf[i], &f32[i], sizeof(float)) != 0) {
      errors += name + ": float gather differs at token " + std::to_string(i / static_cast<std::size_t>(values)) +
                " value " + std::to_string(i % static_cast<std::size_t>(values)) + "\n";
      break;
    }
  for (std::size_t i = 0; i < b16.size(); ++i)
    if (hb[i].bits != b16[i].bits) {
      errors += name + ": BF16 gather differs at token " + std::to_string(i / static_cast<std::size_t>(values)) +
                " value " + std::to_string(i % static_cast<std::size_t>(values)) + "\n";
      break;
    }
  return errors;
}

TEST(GenericKernels, EveryRegisteredFormatMatchesTheHostLanes) {
  if (!device_present()) GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount found none";
  std::string errors;
  int checked = 0;
  for (int i = 0; i < static_cast<int>(kFormats.size()); ++i)
    visit_format(i, [&]<row_format F>() {
      for (const format_writer& w : F::writers) {
        errors += check_format<F>(w);
        ++checked;
      }
    });
  EXPECT_EQ(errors, "");
  EXPECT_GE(checked, static_cast<int>(kFormats.size()));
}

}  // namespace
}  // namespace dsv4::cache::cuda
