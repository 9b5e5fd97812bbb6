// dsv4-cache-bench: host throughput of each row codec, one core, beside a memcpy of the same
// bytes measured in the same run.
//
// Each benchmark runs over one of two working sets (the argument, printed as /pages:N):
//   /pages:1    one page of 64 rows: 64 KiB of BF16 input for fp8_ds_mla (16 KiB indexer), so
//               input, page and memcpy buffers stay in L1/L2 (in-cache);
//   /pages:512  512 pages (32,768 rows): 32 MiB of fp8_ds_mla input + 18 MiB of pages (8 MiB +
//               4.3 / 2.2 MiB indexer), larger than L2 (1 MiB here) and most of L3, so both the
//               codec and the memcpy stream from memory.
// The codecs are called through the public row API (layout, page pointer, row), and report:
//   rows/s         rows quantized or dequantized per second
//   bytes_per_second  input bytes per second (BF16 in for quantize, page bytes in for dequantize)
//   memcpy_GB/s    memcpy of the same input bytes over the same working set (same source
//                  buffers, a destination of the same size), measured just before
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

constexpr std::int64_t kRows = 64;  // rows per page

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
  const std::int64_t total_rows = kRows * state.range(0);
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
      benchmark::Counter(static_cast<double>(state.iterations() * total_rows), benchmark::Counter::kIsRate);
  state.counters["working_set_MiB"] = static_cast<double>(input_bytes) / (1 << 20);
  state.counters["memcpy_GB/s"] = mc / 1e9;
  state.counters["vs_memcpy"] = rate / mc;
}

void BM_Fp8DsMlaQuantize(benchmark::State& state) {
  const std::int64_t pages = state.range(0);
  const auto layout = dc::make_fp8_ds_mla_page_layout(dc::make_fp8_ds_mla_format(512, 64), kRows);
  const auto pb = static_cast<std::size_t>(layout.page_bytes());
  const auto in = random_bf16(static_cast<std::size_t>(512 * kRows * pages));
  std::vector<std::uint8_t> page(pb * static_cast<std::size_t>(pages));
  std::vector<std::uint8_t> scratch(in.size() * sizeof(dc::bf16));
  run(state, in.size() * sizeof(dc::bf16), in.data(), scratch.data(), [&] {
    for (std::int64_t p = 0; p < pages; ++p)
      for (std::int64_t r = 0; r < kRows; ++r)
        dc::quantize_fp8_ds_mla_row(layout, page.data() + static_cast<std::size_t>(p) * pb, r,
                                    in.data() + (p * kRows + r) * 512);
  });
}

void BM_Fp8DsMlaDequantize(benchmark::State& state) {
  const std::int64_t pages = state.range(0);
  const auto layout = dc::make_fp8_ds_mla_page_layout(dc::make_fp8_ds_mla_format(512, 64), kRows);
  const auto pb = static_cast<std::size_t>(layout.page_bytes());
  const auto in = random_bf16(static_cast<std::size_t>(512 * kRows * pages));
  std::vector<std::uint8_t> page(pb * static_cast<std::size_t>(pages));
  for (std::int64_t p = 0; p < pages; ++p)
    for (std::int64_t r = 0; r < kRows; ++r)
      dc::quantize_fp8_ds_mla_row(layout, page.data() + static_cast<std::size_t>(p) * pb, r,
                                  in.data() + (p * kRows + r) * 512);
  std::vector<float> out(in.size());
  std::vector<std::uint8_t> scratch(page.size());
  run(state, page.size(), page.data(), scratch.data(), [&] {
    for (std::int64_t p = 0; p < pages; ++p)
      for (std::int64_t r = 0; r < kRows; ++r)
        dc::dequantize_fp8_ds_mla_row(layout, page.data() + static_cast<std::size_t>(p) * pb, r,
                                      out.data() + (p * kRows + r) * 512);
  });
}

void BM_IndexerQuantize(benchmark::State& state, dc::indexer_format f) {
  const std::int64_t pages = state.range(0);
  const auto layout = dc::make_indexer_page_layout(dc::make_indexer_row_format(f, 128), kRows);
  const auto pb = static_cast<std::size_t>(layout.page_bytes());
  const auto in = random_bf16(static_cast<std::size_t>(128 * kRows * pages));
  std::vector<std::uint8_t> page(pb * static_cast<std::size_t>(pages));
  std::vector<std::uint8_t> scratch(in.size() * sizeof(dc::bf16));
  run(state, in.size() * sizeof(dc::bf16), in.data(), scratch.data(), [&] {
    for (std::int64_t p = 0; p < pages; ++p)
      for (std::int64_t r = 0; r < kRows; ++r)
        dc::quantize_indexer_row(layout, page.data() + static_cast<std::size_t>(p) * pb, r,
                                 in.data() + (p * kRows + r) * 128);
  });
}

void BM_IndexerDequantize(benchmark::State& state, dc::indexer_format f) {
  const std::int64_t pages = state.range(0);
  const auto layout = dc::make_indexer_page_layout(dc::make_indexer_row_format(f, 128), kRows);
  const auto pb = static_cast<std::size_t>(layout.page_bytes());
  const auto in = random_bf16(static_cast<std::size_t>(128 * kRows * pages));
  std::vector<std::uint8_t> page(pb * static_cast<std::size_t>(pages));
  for (std::int64_t p = 0; p < pages; ++p)
    for (std::int64_t r = 0; r < kRows; ++r)
      dc::quantize_indexer_row(layout, page.data() + static_cast<std::size_t>(p) * pb, r,
                               in.data() + (p * kRows + r) * 128);
  std::vector<float> out(in.size());
  std::vector<std::uint8_t> scratch(page.size());
  run(state, page.size(), page.data(), scratch.data(), [&] {
    for (std::int64_t p = 0; p < pages; ++p)
      for (std::int64_t r = 0; r < kRows; ++r)
        dc::dequantize_indexer_row(layout, page.data() + static_cast<std::size_t>(p) * pb, r,
                                   out.data() + (p * kRows + r) * 128);
  });
}

}  // namespace

// pages:1 = in-cache working set, pages:512 = larger than L2 (see the top of the file).
BENCHMARK(BM_Fp8DsMlaQuantize)->ArgName("pages")->Arg(1)->Arg(512);
BENCHMARK(BM_Fp8DsMlaDequantize)->ArgName("pages")->Arg(1)->Arg(512);
BENCHMARK_CAPTURE(BM_IndexerQuantize, fp8, dc::indexer_format::fp8)->ArgName("pages")->Arg(1)->Arg(512);
BENCHMARK_CAPTURE(BM_IndexerDequantize, fp8, dc::indexer_format::fp8)->ArgName("pages")->Arg(1)->Arg(512);
BENCHMARK_CAPTURE(BM_IndexerQuantize, mxfp4, dc::indexer_format::mxfp4)->ArgName("pages")->Arg(1)->Arg(512);
BENCHMARK_CAPTURE(BM_IndexerDequantize, mxfp4, dc::indexer_format::mxfp4)->ArgName("pages")->Arg(1)->Arg(512);

BENCHMARK_MAIN();
