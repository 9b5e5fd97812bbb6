// The generic CUDA kernels (`insert_rows<F>`, `gather_rows<F>`) for every registered row format,
// V4.1's included: pages written on the device equal, byte for byte, the pages the same lane
// functions write on the host (`insert_unit<F>`, slot_work.hpp), and the rows gathered on the
// device (float and BF16) equal the host's `gather_unit<F>`. Slots in shuffled order, padding
// (-1) and refused slots among them; the null page must stay zero. Every case skips, saying
// why, when the CUDA runtime sees no device; CI (nvcc, no GPU) compiles every format's kernels.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
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

/// One format: device pages and gathered rows against the host lanes. Returns "" or the first
/// difference.
template <row_format F>
std::string check_format() {
  const format_layout l = F::layout.name == formats::fp32_state::layout.name ? bind_state_row_bytes(4'096) : F::layout;
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
  const auto tokens = static_cast<std::int64_t>(slots.size());
  using In = typename F::input_type;
  const std::vector<In> in = random_rows<In>(tokens, values, 11);

  // Host lanes.
  std::vector<std::uint8_t> host(static_cast<std::size_t>(pool_bytes), 0);
  const pool_pages hp{host.data(), page_bytes, pages, rows};
  for (std::int64_t k = 0; k < tokens; ++k)
    for (int u = 0; u < F::units(l); ++u)
      (void)insert_unit<F>(l, F::default_policy, hp, slots[static_cast<std::size_t>(k)], in.data() + k * values, u);

  // Device kernels.
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
  insert_rows<F>(view, d_in.p, values, d_slots.p, tokens, d_err.p, nullptr);
  gather_rows<F>(view, d_slots.p, tokens, d_f32.p, values, d_err.p, nullptr);
  gather_rows<F>(view, d_slots.p, tokens, d_bf16.p, values, d_err.p, nullptr);
  DSV4_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint8_t> dev(static_cast<std::size_t>(pool_bytes));
  std::vector<float> f32(static_cast<std::size_t>(tokens * values));
  std::vector<bf16> b16(static_cast<std::size_t>(tokens * values));
  unsigned long long refused = 0;
  DSV4_CUDA_CHECK(cudaMemcpy(dev.data(), d_pool.p, dev.size(), cudaMemcpyDeviceToHost));
  DSV4_CUDA_CHECK(cudaMemcpy(f32.data(), d_f32.p, f32.size() * sizeof(float), cudaMemcpyDeviceToHost));
  DSV4_CUDA_CHECK(cudaMemcpy(b16.data(), d_bf16.p, b16.size() * sizeof(bf16), cudaMemcpyDeviceToHost));
  DSV4_CUDA_CHECK(cudaMemcpy(&refused, d_err.p, sizeof(refused), cudaMemcpyDeviceToHost));

  const std::string name(l.name);
  for (std::size_t i = 0; i < dev.size(); ++i)
    if (dev[i] != host[i])
      return name + ": device page byte " + std::to_string(i) + " = " + std::to_string(dev[i]) + ", host lanes " +
             std::to_string(host[i]);
  if (refused != 3) return name + ": " + std::to_string(refused) + " refused slots counted, expected 3 (1 per launch)";
  // Host gather of the host pages, per (token, unit), compared bit for bit (NaN payloads too).
  std::vector<float> hf(f32.size(), -1.0f);
  std::vector<bf16> hb(b16.size());
  for (std::int64_t k = 0; k < tokens; ++k)
    for (int u = 0; u < F::units(l); ++u) {
      (void)gather_unit<F>(l, F::default_policy, hp, slots[static_cast<std::size_t>(k)], hf.data() + k * values, u);
      (void)gather_unit<F>(l, F::default_policy, hp, slots[static_cast<std::size_t>(k)], hb.data() + k * values, u);
    }
  if (std::memcmp(hf.data(), f32.data(), f32.size() * sizeof(float)) != 0) return name + ": float gather differs";
  if (std::memcmp(hb.data(), b16.data(), b16.size() * sizeof(bf16)) != 0) return name + ": BF16 gather differs";
  return {};
}

TEST(GenericKernels, EveryRegisteredFormatMatchesTheHostLanes) {
  if (!device_present()) GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount found none";
  std::string errors;
  for (int i = 0; i < static_cast<int>(kFormats.size()); ++i)
    visit_format(i, [&]<row_format F>() {
      if (const std::string e = check_format<F>(); !e.empty()) errors += e + "\n";
    });
  EXPECT_EQ(errors, "");
}

}  // namespace
}  // namespace dsv4::cache::cuda
