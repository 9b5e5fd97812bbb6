// dsv4-cache-cuda-demo, device half: arena, round trips, throughput. See demo.hpp.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <ostream>
#include <string>

#include "demo.hpp"
#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/cuda/device_arena.cuh"
#include "dsv4/cache/cuda/error.cuh"
#include "round_trip.cuh"

namespace dsv4::cache::cuda_demo {
namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}
std::string gib(std::uint64_t bytes) {
  return fixed(static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0), 3) + " GiB";
}
std::string mib(std::uint64_t bytes) { return fixed(static_cast<double>(bytes) / (1024.0 * 1024.0), 2) + " MiB"; }
std::string gbps(std::uint64_t bytes, double ms) {
  return ms > 0 ? fixed(static_cast<double>(bytes) / (ms * 1e6), 1) : "-";
}

/// Peak DRAM bandwidth from the device attributes: 2 (DDR) x memory clock x bus width.
double peak_gbps(int dev) {
  int clock_khz = 0;
  int bus_bits = 0;
  DSV4_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, dev));
  DSV4_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev));
  return 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
}

int run(const model_config& model, const memory_plan& plan, std::int64_t max_tokens, std::optional<writer_id> writer,
        std::ostream& out, std::ostream& err) {
  using namespace dsv4::cache::cuda;
  if (!sample::device_present()) {
    out << "\nno CUDA device found (cudaGetDeviceCount reports none): the plan above is valid; "
           "nothing was allocated and no kernel was run\n";
    return kExitNoDevice;
  }
  int dev = 0;
  DSV4_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  DSV4_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  const double peak = peak_gbps(dev);
  out << "\ndevice " << dev << ": " << prop.name << ", " << gib(prop.totalGlobalMem) << ", sm_" << prop.major
      << prop.minor << ", peak DRAM bandwidth " << fixed(peak, 0) << " GB/s (device properties)\n";

  const arena_layout layout = build_arena_layout(model, plan);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  DSV4_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  constexpr std::uint64_t kHeadroom = 512ull << 20;  // staging buffers of the round trips
  if (layout.total_bytes + kHeadroom > free_bytes) {
    err << "dsv4-cache-cuda-demo: error: the arena needs " << layout.total_bytes << " B (" << gib(layout.total_bytes)
        << ") + " << mib(kHeadroom) << " of staging, more than the device's " << free_bytes << " B free ("
        << gib(free_bytes) << ")\n";
    return kExitUsage;
  }
  device_arena arena(layout);
  out << "arena: one allocation of " << arena.allocated_bytes() << " B (" << gib(arena.allocated_bytes()) << "): plan "
      << layout.payload_bytes << " B + alignment padding " << layout.padding_bytes << " B + 8 B error counter, "
      << layout.num_regions << " pool regions\n\n";

  out << "pool sizes (per layer; page 0 of each pool is the reserved null page)\n";
  out << "  group                             pool  format                 row B   page B   pages  layers      bytes\n";
  for (int g = 0; g < plan.num_groups; ++g) {
    const group_plan& gp = plan.groups[static_cast<std::size_t>(g)];
    for (int p = 0; p < gp.spec.num_pools; ++p) {
      const pool_region r = layout.region(g, 0, p);
      char line[256];
      std::snprintf(line, sizeof line, "  %-33s %4d  %-21s %6lld %8lld %7lld %7d %10s\n", to_string(gp.spec.id).c_str(),
                    p, std::string(r.format.name).c_str(), static_cast<long long>(r.row_bytes),
                    static_cast<long long>(r.page_bytes), static_cast<long long>(r.num_pages), gp.spec.num_layers,
                    mib(r.bytes * static_cast<std::uint64_t>(gp.spec.num_layers)).c_str());
      out << line;
    }
  }

  out << "\nround trips: random rows -> insert at random distinct slots -> gather -> compare with the host codec "
         "of the writer used\n";
  if (writer)
    out << "writer: " << to_string(*writer) << " where the format lists it, else the format's default writer\n";
  else
    out << "writer: each format's default writer (--writer NAME to choose one)\n";
  out << "path: fast = the specialized warp-per-row kernels (the format has them and they implement the "
         "writer's policy), generic = one lane per token and unit (every format)\n";
  std::uint64_t ins_bytes = 0, gat_bytes = 0, rows = 0;
  double ins_ms = 0, gat_ms = 0;
  int failures = 0;
  std::uint32_t seed = 2024;
  for (const pool_region& r : sample::sample_regions(layout)) {
    const group_plan& gp = plan.groups[static_cast<std::size_t>(r.group)];
    sample::round_trip_options o;
    o.max_tokens = max_tokens;
    o.seed = seed++;
    o.writer = writer;
    const sample::round_trip_result res = sample::round_trip_any(arena, r, o);
    char line[320];
    std::snprintf(line, sizeof line,
                  "  %-33s layer %3d pool %d %-21s %-10s %-7s %7lld rows  insert %8s GB/s  gather %8s GB/s  %s\n",
                  to_string(gp.spec.id).c_str(), r.layer, r.pool, res.format.c_str(), res.writer.c_str(),
                  std::string(to_string(res.path)).c_str(), static_cast<long long>(res.tokens),
                  gbps(res.insert_bytes, res.insert_ms).c_str(), gbps(res.gather_bytes, res.gather_ms).c_str(),
                  res.error.empty() ? "bit-exact" : "MISMATCH");
    out << line;
    if (!res.error.empty()) {
      ++failures;
      err << "dsv4-cache-cuda-demo: mismatch: " << res.error << "\n";
    }
    ins_bytes += res.insert_bytes;
    gat_bytes += res.gather_bytes;
    ins_ms += res.insert_ms;
    gat_ms += res.gather_ms;
    rows += static_cast<std::uint64_t>(res.tokens);
  }
  out << "\ninsert: " << gbps(ins_bytes, ins_ms) << " GB/s, gather: " << gbps(gat_bytes, gat_ms)
      << " GB/s (bytes read + written / kernel time, single launches; see dsv4-cache-gpu-bench); peak "
      << fixed(peak, 0) << " GB/s\n";
  if (failures != 0) {
    out << failures << " round trip(s) differ from the host codecs\n";
    return kExitMismatch;
  }
  out << "all " << rows
      << " rows bit-exact against the host codecs of the writers used; refused slots counted; "
         "canaries intact\n";
  return kExitOk;
}

}  // namespace

int run_on_device(const model_config& model, const memory_plan& plan, std::int64_t max_tokens,
                  std::optional<writer_id> writer, std::ostream& out, std::ostream& err) {
  try {
    return run(model, plan, max_tokens, writer, out, err);
  } catch (const cuda::cuda_error& e) {
    if (e.code() == cudaErrorMemoryAllocation) {
      err << "dsv4-cache-cuda-demo: error: the plan does not fit in device memory: " << e.what() << "\n";
      return kExitUsage;
    }
    err << "dsv4-cache-cuda-demo: CUDA error: " << e.what() << "\n";
    return kExitMismatch;
  } catch (const std::exception& e) {
    err << "dsv4-cache-cuda-demo: error: " << e.what() << "\n";
    return kExitUsage;
  }
}

}  // namespace dsv4::cache::cuda_demo
