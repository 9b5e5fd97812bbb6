// dsv4-cache-gpu-bench: insert and gather throughput of the FP8/MXFP4 kernels for 1, 64, 4,096,
// 65,536 and 262,144 tokens, against a device-to-device cudaMemcpy of the same traffic measured
// in the same run. Plain main(), no third-party library.
//
// An H200 has about 50 MB of L2 and each line re-touches the same bytes 55 times: only lines
// moving well over 50 MB measure HBM (fp8_ds_mla from 65,536 tokens, 106 MB; every format at
// 262,144 tokens); smaller ones measure L2 and launch rate, the copy baseline likewise.
//
// Effective GB/s = bytes read + bytes written by the kernel (insert: BF16 rows + slots in,
// quantized rows out; gather: slots + quantized rows in, BF16 rows out) / kernel time.
// The copy baseline moves the same traffic: a cudaMemcpy of bytes / 2 (it reads and writes
// each byte once), so ratio = kernel time of the copy / kernel time. Times are cudaEvent
// means over 50 launches after 5 warm-ups. Slots are consecutive from page 1 (a prefill); a
// second insert line uses a random permutation of slots (scattered decode writes).
// Exit codes: 0 done, 3 no CUDA device.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <numeric>
#include <random>
#include <vector>

#include "dsv4/cache/cuda/device_arena.cuh"
#include "dsv4/cache/cuda/error.cuh"
#include "dsv4/cache/cuda/kernels.cuh"
#include "round_trip.cuh"

namespace {

using namespace dsv4::cache;
using namespace dsv4::cache::cuda;

constexpr int kWarmup = 5;
constexpr int kIters = 50;
constexpr std::size_t kScratch = 512u << 20;  ///< Bytes of each copy-baseline buffer.

template <class F>
float time_ms(cudaStream_t s, F&& launch) {
  cudaEvent_t a = nullptr, b = nullptr;
  DSV4_CUDA_CHECK(cudaEventCreate(&a));
  DSV4_CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < kWarmup; ++i) launch();
  DSV4_CUDA_CHECK(cudaEventRecord(a, s));
  for (int i = 0; i < kIters; ++i) launch();
  DSV4_CUDA_CHECK(cudaEventRecord(b, s));
  DSV4_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  DSV4_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  (void)cudaEventDestroy(a);
  (void)cudaEventDestroy(b);
  return ms / kIters;
}

/// The copy baseline: a device-to-device cudaMemcpy moving `traffic` bytes (traffic / 2 copied).
float memcpy_ms(cudaStream_t s, std::uint64_t traffic, std::uint8_t* dst, const std::uint8_t* src) {
  const std::size_t n = static_cast<std::size_t>(std::max<std::uint64_t>(traffic / 2, 16));
  require(n <= kScratch, "copy baseline larger than its scratch buffers", {"bytes", n});
  return time_ms(s, [&] { DSV4_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s)); });
}

void line(const char* fmt_name, const char* op, std::int64_t tokens, std::uint64_t bytes, float ms, float copy_ms) {
  const double gbps = static_cast<double>(bytes) / (ms * 1e6);
  const double copy_gbps = static_cast<double>(bytes) / (copy_ms * 1e6);
  std::printf("%-14s %-14s %7lld %12llu %10.4f %9.1f %9.1f %7.3f\n", fmt_name, op, static_cast<long long>(tokens),
              static_cast<unsigned long long>(bytes), ms * 1e3, gbps, copy_gbps, copy_ms / ms);
}

template <pool_format F>
void bench(const device_arena& arena, const pool_region& r, std::uint8_t* scratch_a, std::uint8_t* scratch_b,
           cudaStream_t s) {
  const pool_view<F> v = arena.view<F>(r);
  const std::int64_t values = row_values(v);
  const std::int64_t max_tokens = 262144;  // every usable slot of a 4,097-page CSA pool
  require(v.num_slots() - v.first_usable_slot() >= max_tokens, "benchmark pool too small");
  std::mt19937 rng(5);
  const std::vector<bf16> rows = sample::random_rows(max_tokens, values + 8, rng);
  std::vector<bf16> packed(static_cast<std::size_t>(max_tokens * values));  // dense rows, stride = values
  for (std::int64_t k = 0; k < max_tokens; ++k)
    std::copy_n(rows.begin() + k * (values + 8), values, packed.begin() + k * values);
  std::vector<std::int64_t> seq(static_cast<std::size_t>(max_tokens));
  std::iota(seq.begin(), seq.end(), v.first_usable_slot());
  std::vector<std::int64_t> rnd(static_cast<std::size_t>(v.num_slots() - v.first_usable_slot()));
  std::iota(rnd.begin(), rnd.end(), v.first_usable_slot());
  std::shuffle(rnd.begin(), rnd.end(), rng);
  rnd.resize(static_cast<std::size_t>(max_tokens));

  sample::device_buffer<bf16> d_in(packed.size());
  sample::device_buffer<bf16> d_out(packed.size());
  sample::device_buffer<std::int64_t> d_seq(seq.size());
  sample::device_buffer<std::int64_t> d_rnd(rnd.size());
  d_in.upload(packed);
  d_seq.upload(seq);
  d_rnd.upload(rnd);
  const char* name = to_string(F).data();
  for (const std::int64_t tokens :
       {std::int64_t{1}, std::int64_t{64}, std::int64_t{4096}, std::int64_t{65536}, max_tokens}) {
    const std::uint64_t ib = insert_bytes_moved(v, tokens);
    const float ins =
        time_ms(s, [&] { insert_rows<F>(v, d_in.get(), values, d_seq.get(), tokens, arena.error_counter(), s); });
    line(name, "insert", tokens, ib, ins, memcpy_ms(s, ib, scratch_a, scratch_b));
    const float ins_r =
        time_ms(s, [&] { insert_rows<F>(v, d_in.get(), values, d_rnd.get(), tokens, arena.error_counter(), s); });
    line(name, "insert(random)", tokens, ib, ins_r, memcpy_ms(s, ib, scratch_a, scratch_b));
    const std::uint64_t gb = gather_bytes_moved(v, tokens, true, false);
    const float gat = time_ms(
        s, [&] { gather_rows<F>(v, d_seq.get(), tokens, d_out.get(), nullptr, values, arena.error_counter(), s); });
    line(name, "gather(bf16)", tokens, gb, gat, memcpy_ms(s, gb, scratch_a, scratch_b));
  }
}

}  // namespace

int main() {
  if (!sample::device_present()) {
    std::printf("dsv4-cache-gpu-bench: no CUDA device found (cudaGetDeviceCount reports none); nothing measured\n");
    return 3;
  }
  try {
    int dev = 0;
    DSV4_CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop{};
    DSV4_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    int clock_khz = 0, bus_bits = 0;
    DSV4_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, dev));
    DSV4_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev));
    std::printf("device %d: %s, peak DRAM bandwidth %.0f GB/s (device properties)\n", dev, prop.name,
                2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9);

    // Flash, one request of 2^20 tokens: the CSA compressed KV pool of a layer has 4,097 pages
    // of 64 rows (262,144 usable slots), the SWA pool 131+ pages. Only the benchmarked regions
    // matter; the whole plan is allocated as an application would.
    plan_options o;
    o.context_tokens = 1 << 20;
    o.requests = 1;
    const arena_layout fp8 = build_arena_layout(deepseek_v4_flash, o);
    o.indexer = indexer_format::mxfp4;
    const arena_layout mx = build_arena_layout(deepseek_v4_flash, o);
    std::printf("arena: Flash, 1 request x 1,048,576 tokens: %.2f GiB (FP8 keys), %.2f GiB (MXFP4 keys)\n",
                static_cast<double>(fp8.total_bytes) / (1 << 30), static_cast<double>(mx.total_bytes) / (1 << 30));
    const group_id c4kv{group_kind::compressed_kv, 4};
    cudaStream_t s = nullptr;
    DSV4_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    sample::device_buffer<std::uint8_t> scratch_a(kScratch);
    sample::device_buffer<std::uint8_t> scratch_b(kScratch);
    DSV4_CUDA_CHECK(cudaMemset(scratch_b.get(), 1, kScratch));
    std::printf("\n%-14s %-14s %7s %12s %10s %9s %9s %7s\n", "format", "op", "tokens", "bytes", "time us", "GB/s",
                "copy GB/s", "ratio");
    {
      device_arena arena(fp8);
      bench<pool_format::fp8_ds_mla>(arena, fp8.find(c4kv, 2, 0), scratch_a.get(), scratch_b.get(), s);
      bench<pool_format::indexer_fp8>(arena, fp8.find(c4kv, 2, 1), scratch_a.get(), scratch_b.get(), s);
    }
    {
      device_arena arena(mx);
      bench<pool_format::indexer_mxfp4>(arena, mx.find(c4kv, 2, 1), scratch_a.get(), scratch_b.get(), s);
    }
    DSV4_CUDA_CHECK(cudaStreamSynchronize(s));
    (void)cudaStreamDestroy(s);
    std::printf("\ntarget: fp8_ds_mla insert at 65536 tokens >= 0.85 x the copy (ratio column)\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dsv4-cache-gpu-bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
