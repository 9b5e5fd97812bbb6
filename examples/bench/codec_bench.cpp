// dsv4-cache-bench: host throughput of each row codec, one core, beside a memcpy of the same
// bytes measured in the same run.
//
// Each benchmark works on one page (64 rows; 64 KiB of BF16 input for fp8_ds_mla, so the data
// stays in L2 as it would for a kernel-sized batch) and reports:
//   rows/s         rows quantized or dequantized per second
//   bytes_per_second  input bytes per second (BF16 in for quantize, page bytes in for dequantize)
//   memcpy_GB/s    memcpy of the same input bytes, same buffers, measured just before
//   vs_memcpy      codec GB/s / memcpy GB/s (goal for the fp8_ds_mla quantizer: >= 0.25)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "dsv4/cache/row_codec.hpp"

namespace dc = dsv4::cache;

namespace {

constexpr std::int64_t kRows = 64;

std::vector<dc::bf16> random_bf16(std::size_t n) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<dc::bf16> v(n);
  for (auto& x : v) x = dc::float_to_bf16(normal(rng));
  return v;
}

/// memcpy throughput of `bytes` from src to dst, bytes per second (best of 5 runs of ~20 ms).
double memcpy_rate(const void* src, void* dst, std::size_t bytes) {
  double best = 0;
  for (int run = 0; run < 5; ++run) {
    std::int64_t reps = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double s = 0;
    do {
      for (int k = 0; k < 64; ++k) {
        std::memcpy(dst, src, bytes);
        benchmark::ClobberMemory();
      }
      reps += 64;
      s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (s < 0.02);
    best = std::max(best, static_cast<double>(reps) * static_cast<double>(bytes) / s);
  }
  return best;
}

/// Runs `body()` (one pass over the page) under the benchmark loop and sets the counters.
template <class Body>
void run(benchmark::State& state, std::size_t input_bytes, const void* src, void* scratch, Body body) {
  const double mc = memcpy_rate(src, scratch, input_bytes);
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    body();
    benchmark::ClobberMemory();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double rate = static_cast<double>(state.iterations()) * static_cast<double>(input_bytes) / s;
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(input_bytes));
  state.counters["rows/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kRows), benchmark::Counter::kIsRate);
  state.counters["memcpy_GB/s"] = mc / 1e9;
  state.counters["vs_memcpy"] = rate / mc;
}

void BM_Fp8DsMlaQuantize(benchmark::State& state) {
  const auto layout = dc::make_fp8_ds_mla_page_layout(dc::make_fp8_ds_mla_format(512, 64), kRows);
  const auto in = random_bf16(static_cast<std::size_t>(512 * kRows));
  std::vector<std::uint8_t> page(static_cast<std::size_t>(layout.page_bytes()));
  std::vector<std::uint8_t> scratch(in.size() * sizeof(dc::bf16));
  run(state, in.size() * sizeof(dc::bf16), in.data(), scratch.data(), [&] {
    for (std::int64_t r = 0; r < kRows; ++r) dc::quantize_fp8_ds_mla_row(layout, page.data(), r, in.data() + r * 512);
  });
}

void BM_Fp8DsMlaDequantize(benchmark::State& state) {
  const auto layout = dc::make_fp8_ds_mla_page_layout(dc::make_fp8_ds_mla_format(512, 64), kRows);
  const auto in = random_bf16(static_cast<std::size_t>(512 * kRows));
  std::vector<std::uint8_t> page(static_cast<std::size_t>(layout.page_bytes()));
  for (std::int64_t r = 0; r < kRows; ++r) dc::quantize_fp8_ds_mla_row(layout, page.data(), r, in.data() + r * 512);
  std::vector<float> out(in.size());
  std::vector<std::uint8_t> scratch(page.size());
  run(state, static_cast<std::size_t>(layout.used_bytes()), page.data(), scratch.data(), [&] {
    for (std::int64_t r = 0; r < kRows; ++r)
      dc::dequantize_fp8_ds_mla_row(layout, page.data(), r, out.data() + r * 512);
  });
}

void BM_IndexerQuantize(benchmark::State& state, dc::indexer_format f) {
  const auto layout = dc::make_indexer_page_layout(dc::make_indexer_row_format(f, 128), kRows);
  const auto in = random_bf16(static_cast<std::size_t>(128 * kRows));
  std::vector<std::uint8_t> page(static_cast<std::size_t>(layout.page_bytes()));
  std::vector<std::uint8_t> scratch(in.size() * sizeof(dc::bf16));
  run(state, in.size() * sizeof(dc::bf16), in.data(), scratch.data(), [&] {
    for (std::int64_t r = 0; r < kRows; ++r) dc::quantize_indexer_row(layout, page.data(), r, in.data() + r * 128);
  });
}

void BM_IndexerDequantize(benchmark::State& state, dc::indexer_format f) {
  const auto layout = dc::make_indexer_page_layout(dc::make_indexer_row_format(f, 128), kRows);
  const auto in = random_bf16(static_cast<std::size_t>(128 * kRows));
  std::vector<std::uint8_t> page(static_cast<std::size_t>(layout.page_bytes()));
  for (std::int64_t r = 0; r < kRows; ++r) dc::quantize_indexer_row(layout, page.data(), r, in.data() + r * 128);
  std::vector<float> out(in.size());
  std::vector<std::uint8_t> scratch(page.size());
  run(state, page.size(), page.data(), scratch.data(), [&] {
    for (std::int64_t r = 0; r < kRows; ++r) dc::dequantize_indexer_row(layout, page.data(), r, out.data() + r * 128);
  });
}

}  // namespace

BENCHMARK(BM_Fp8DsMlaQuantize);
BENCHMARK(BM_Fp8DsMlaDequantize);
BENCHMARK_CAPTURE(BM_IndexerQuantize, fp8, dc::indexer_format::fp8);
BENCHMARK_CAPTURE(BM_IndexerDequantize, fp8, dc::indexer_format::fp8);
BENCHMARK_CAPTURE(BM_IndexerQuantize, mxfp4, dc::indexer_format::mxfp4);
BENCHMARK_CAPTURE(BM_IndexerDequantize, mxfp4, dc::indexer_format::mxfp4);

BENCHMARK_MAIN();
