// dsv4-cache-bench: host throughput of every registered row format's bulk codecs
// (`quantize_rows` / `dequantize_rows`, host_codec.hpp), one core, beside a memcpy of the same
// working set measured in the same run.
//
// Benchmarks are generated from the registry (`visit_format`), so a new format appears by
// itself: <format>/<direction>/<values>/<set>/<isa>, with
//   direction  quantize (values in, page out) or dequantize (page in, values out)
//   values     the unpacked side: bf16 or float (fp32_state quantizes float rows)
//   set        large: >= DSV4_BENCH_LARGE_MIB MiB of input + output (default 512, above the
//              last-level cache of most servers), dequantized with host_store::streaming (a bulk
//              conversion: the values stream to memory); small: DSV4_BENCH_SMALL_KIB KiB (default
//              256, in L2), host_store::cached. Pages of 64 rows; fp32_state at 8,192-B rows (the
//              V4 CSA state row).
//   isa        every host_isa the CPU supports (baseline = the forced x86-64 SSE2 path); and
//              (large set) "stream": a reference loop of the bulk calls' shape with no arithmetic,
//              one thread (the codec's source bytes read, its destination bytes written with its
//              kind of store; `bench_stream`): roughly how much of a codec's time is arithmetic,
//              not a ceiling
//   threads    (large set, baseline and best ISA) the same rows through the slot calls
//              (`host_insert_rows` / `host_gather_rows`, slots in page order) on 1, 2, 4, ...
//              threads up to the hardware's (at most 8); without it, `quantize_rows` /
//              `dequantize_rows` page by page on one thread
// Counters:
//   GB/s       codec traffic: (bytes read + bytes written by the codec) per second; a row's
//              page bytes are those its quantizer writes (measured), the values 2 or 4 B each
//   memcpy_GB/s  memcpy traffic, 2 x bytes copied per second, copying half the working set
//              into the other half (best of 3 copies, measured before each group of benchmarks)
//   vs_memcpy  GB/s / memcpy_GB/s
// After the run a table prints, per format, direction, values type, set, ISA and threads ("page":
// the page calls; "-": the stream rows), the median over every measurement taken (Google Benchmark's calibration calls
// and each of --benchmark_repetitions=N; "samples" counts them), and for the slot calls the
// scaling: GB/s over the same slot call's on one thread. memcpy is always one thread.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/cache/host_codec.hpp"

namespace dc = dsv4::cache;

namespace {

constexpr std::int64_t kRows = 64;             // rows per page
constexpr std::int64_t kStateRowBytes = 8192;  // fp32_state row bytes benchmarked

std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
  return v != nullptr && *v != '\0' ? std::atoll(v) : fallback;
}

/// A 64-byte aligned byte buffer, zeroed.
struct buffer {
  std::unique_ptr<std::uint64_t[]> storage;
  std::size_t bytes = 0;
  explicit buffer(std::size_t n) : storage(new std::uint64_t[(n + 7) / 8 + 8]()), bytes(n) {}
  std::uint8_t* data() {
    auto p = reinterpret_cast<std::uintptr_t>(storage.get());
    return reinterpret_cast<std::uint8_t*>((p + 63) & ~std::uintptr_t{63});
  }
};

/// memcpy traffic (2 x bytes copied per second) copying `bytes` within `buf` (best of 3, each >= 20 ms).
double memcpy_traffic(std::size_t bytes) {
  static std::unique_ptr<buffer> b;
  if (!b || b->bytes < 2 * bytes) b = std::make_unique<buffer>(2 * bytes);
  std::uint8_t* src = b->data();
  std::uint8_t* dst = src + bytes;
  std::memset(src, 1, 2 * bytes);
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    std::int64_t reps = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double s = 0;
    do {
      std::memcpy(dst, src, bytes);
      benchmark::ClobberMemory();
      ++reps;
      s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (s < 0.02);
    best = std::max(best, 2.0 * static_cast<double>(reps) * static_cast<double>(bytes) / s);
  }
  return best;
}

/// The layout benchmarked for format F (fp32_state bound to kStateRowBytes).
template <dc::row_format F>
dc::format_layout bench_layout() {
  if constexpr (std::is_same_v<F, dc::formats::fp32_state>) {
    return dc::bind_state_row_bytes(kStateRowBytes);
  } else {
    return F::layout;
  }
}

/// Input values: normal(0, 1) samples tiled from a 64 Ki pool, each row scaled by 2^(row % 16 - 8);
/// rows repeat with a period of 256.
template <class In>
void fill_input(In* in, std::int64_t rows, std::int64_t values) {
  static const std::vector<float> pool = [] {
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(65536);
    for (float& x : v) x = normal(rng);
    return v;
  }();
  constexpr std::int64_t kPeriod = 256;  // rows filled; the rest repeat them (setup time of large sets)
  for (std::int64_t r = 0; r < std::min(rows, kPeriod); ++r) {
    const float scale = dc::exp2i(static_cast<int>(r % 16) - 8);
    for (std::int64_t i = 0; i < values; ++i) {
      const float x = pool[static_cast<std::size_t>((r * values + i) % 65536)] * scale;
      if constexpr (std::is_same_v<In, dc::bf16>) {
        in[r * values + i] = dc::float_to_bf16(x);
      } else {
        in[r * values + i] = x;
      }
    }
  }
  for (std::int64_t r = kPeriod; r < rows; r += kPeriod)
    std::memcpy(in + r * values, in, static_cast<std::size_t>(std::min(kPeriod, rows - r) * values) * sizeof(In));
}

/// A byte run [offset, offset + bytes) of a page.
struct byte_run {
  std::int64_t offset, bytes;
};
/// The page bytes the quantizer writes for row r of a page, r in [0, kRows), as runs of
/// consecutive bytes in page order: row r quantized into two pages pre-filled with 0x00 and 0xFF,
/// a byte written where either page changed.
template <dc::row_format F>
std::vector<std::vector<byte_run>> written_runs(const dc::format_layout& l) {
  using In = typename F::input_type;
  std::vector<In> in(static_cast<std::size_t>(l.values));
  fill_input(in.data(), 1, l.values);
  const auto pb = static_cast<std::size_t>(l.page_bytes(kRows));
  std::vector<std::vector<byte_run>> runs(kRows);
  for (std::int64_t r = 0; r < kRows; ++r) {
    std::vector<std::uint8_t> a(pb, 0x00), b(pb, 0xFF);
    dc::quantize_row<F>(l, a.data(), kRows, r, in.data());
    dc::quantize_row<F>(l, b.data(), kRows, r, in.data());
    auto& row = runs[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < pb; ++i) {
      if (a[i] == 0x00 && b[i] == 0xFF) continue;
      const auto at = static_cast<std::int64_t>(i);
      if (!row.empty() && row.back().offset + row.back().bytes == at) {
        ++row.back().bytes;
      } else {
        row.push_back({at, 1});
      }
    }
  }
  return runs;
}
std::int64_t run_bytes(const std::vector<byte_run>& runs) {
  std::int64_t n = 0;
  for (const byte_run& r : runs) n += r.bytes;
  return n;
}

enum class direction { quantize, dequantize };

struct result_key {
  std::string format, dir, values, set, isa;
  int threads = 0;  ///< 0: the page calls; N: the slot calls on N threads
  auto tie() const { return std::tie(format, dir, values, set, isa, threads); }
  bool operator<(const result_key& o) const { return tie() < o.tie(); }
};
struct result {
  std::vector<double> gbps, memcpy_gbps, ratio;
};
std::map<result_key, result>& results() {
  static std::map<result_key, result> r;
  return r;
}
std::vector<result_key>& result_order() {
  static std::vector<result_key> o;
  return o;
}

/// The data of the last prepared group (format, direction, values, set): reused by the
/// benchmarks of every ISA of that group and by Google Benchmark's repeated calls.
struct prepared {
  std::string key;
  std::unique_ptr<buffer> values, pages;
  std::vector<std::int64_t> slots;  ///< slot k = k + kRows: the pages in order after the null page
  std::int64_t page_count = 0;
  std::vector<std::vector<byte_run>> runs;  ///< `written_runs` of the group's format
  double traffic_per_pass = 0;
  double memcpy = 0;
};
prepared& cache() {
  static prepared p;
  return p;
}

/// Records one measurement of `key`.
void record(benchmark::State& state, const result_key& key, double gbps, double memcpy, double working_set_bytes) {
  state.counters["GB/s"] = gbps;
  state.counters["memcpy_GB/s"] = memcpy / 1e9;
  state.counters["vs_memcpy"] = gbps * 1e9 / memcpy;
  state.counters["working_set_MiB"] = working_set_bytes / (1 << 20);
  result& r = results()[key];
  if (r.gbps.empty()) result_order().push_back(key);
  r.gbps.push_back(gbps);
  r.memcpy_gbps.push_back(memcpy / 1e9);
  r.ratio.push_back(gbps * 1e9 / memcpy);
}

/// OR of the n bytes at p, read as 8-byte words and a byte tail.
std::uint64_t or_bytes(const std::uint8_t* p, std::int64_t n) {
  std::uint64_t acc = 0;
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, p + i, 8);
    acc |= w;
  }
  for (; i < n; ++i) acc |= p[i];
  return acc;
}

/// The "stream" row of a prepared group: a reference loop with the bulk calls' shape
/// (host_codec.hpp) and no arithmetic, on one thread. Row by row it reads the source bytes and
/// writes the destination bytes the codec would: for quantize the row's value_row bytes of values
/// (prefetching `kPrefetchRows` rows ahead, as the codecs do) and then its written page bytes
/// (`written_runs`, memset: cached stores); for dequantize those page bytes (prefetched the same
/// way) and then value_row bytes of values, staged 16 KiB at a time and copied out with
/// non-temporal stores (`stream_copy`, then sfence) where the codecs stream (SSE2 hosts, rows up
/// to 16 KiB), else memset in place. Its GB/s counts the bytes it reads and writes, which are
/// the codec's (the same count as the codec rows). It shows roughly how much of a codec's time
/// is arithmetic; it is not a ceiling: memcpy's `rep movsb` moves bytes faster than such a loop,
/// and a codec can beat it.
void bench_stream(benchmark::State& state, const prepared& c, direction dir, std::int64_t page_bytes,
                  std::int64_t value_row, const result_key& key) {
  std::uint8_t* pages = c.pages->data() + page_bytes;
  std::uint8_t* vals = c.values->data();
  const std::int64_t rows = c.page_count * kRows;
  const bool quantize = dir == direction::quantize;
  auto page_of = [&](std::int64_t k) { return pages + (k / kRows) * page_bytes; };
  auto runs_of = [&](std::int64_t k) -> const std::vector<byte_run>& {
    return c.runs[static_cast<std::size_t>(k % kRows)];
  };
  auto prefetch = [&](std::int64_t k) {
    if (quantize) {
      const std::uint8_t* v = vals + k * value_row;
      for (std::int64_t b = 0; b < value_row; b += 64) __builtin_prefetch(v + b);
    } else {
      for (const byte_run& r : runs_of(k))
        for (std::int64_t b = 0; b < r.bytes; b += 64) __builtin_prefetch(page_of(k) + r.offset + b);
    }
  };
  // Row k: its source bytes are read, then `value_row` destination bytes at dst (dequantize) or
  // its page runs (quantize) are written.
  auto row = [&](std::int64_t k, std::uint8_t* dst) {
    if (k + dc::detail::kPrefetchRows < rows) prefetch(k + dc::detail::kPrefetchRows);
    std::uint8_t* page = page_of(k);
    if (quantize) {
      const int fill = static_cast<int>(or_bytes(vals + k * value_row, value_row) & 1U);
      for (const byte_run& r : runs_of(k)) std::memset(page + r.offset, fill, static_cast<std::size_t>(r.bytes));
    } else {
      std::uint64_t acc = 0;
      for (const byte_run& r : runs_of(k)) acc |= or_bytes(page + r.offset, r.bytes);
      std::memset(dst, static_cast<int>(acc & 1U), static_cast<std::size_t>(value_row));
    }
  };
  alignas(64) static std::uint8_t stage[dc::kHostStreamStageBytes];
  auto pass = [&] {
#if DSV4_HOST_SSE2
    if (!quantize && value_row <= dc::kHostStreamStageBytes) {
      const std::int64_t chunk = dc::kHostStreamStageBytes / value_row;
      for (std::int64_t k0 = 0; k0 < rows; k0 += chunk) {
        const std::int64_t m = std::min(chunk, rows - k0);
        for (std::int64_t k = k0; k < k0 + m; ++k) row(k, stage + (k - k0) * value_row);
        dc::detail::stream_copy(vals + k0 * value_row, stage, static_cast<std::size_t>(m * value_row));
      }
      _mm_sfence();
      benchmark::ClobberMemory();
      return;
    }
#endif
    for (std::int64_t k = 0; k < rows; ++k) row(k, vals + k * value_row);
    benchmark::ClobberMemory();
  };
  pass();
  std::int64_t bytes = 0;
  for (std::int64_t r = 0; r < kRows; ++r) bytes += run_bytes(runs_of(r)) + value_row;
  bytes *= c.page_count;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) pass();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  record(state, key, static_cast<double>(state.iterations()) * static_cast<double>(bytes) / s / 1e9, c.memcpy,
         static_cast<double>(c.page_count * (page_bytes + kRows * value_row)));
}

template <dc::row_format F, class V>
void bench_case(benchmark::State& state, direction dir, std::int64_t ws_bytes, dc::host_isa isa, const result_key& key,
                int threads, bool stream = false) {
  const dc::format_layout l = bench_layout<F>();
  const auto pb = static_cast<std::size_t>(l.page_bytes(kRows));
  const auto value_row = static_cast<std::size_t>(l.values) * sizeof(V);
  const std::int64_t per_page = static_cast<std::int64_t>(pb + kRows * value_row);
  const std::int64_t pages = std::max<std::int64_t>(1, ws_bytes / per_page);
  prepared& c = cache();
  const std::string ck = key.format + "/" + key.dir + "/" + key.values + "/" + key.set;
  if (c.key != ck) {
    using In = typename F::input_type;
    c.key.clear();
    c.values = std::make_unique<buffer>(static_cast<std::size_t>(pages * kRows) * value_row);
    // Page p at (p + 1) x pb: page 0 is the slot calls' null page.
    c.pages = std::make_unique<buffer>(static_cast<std::size_t>(pages + 1) * pb);
    c.slots.resize(static_cast<std::size_t>(pages * kRows));
    for (std::size_t k = 0; k < c.slots.size(); ++k) c.slots[k] = static_cast<std::int64_t>(k) + kRows;
    std::vector<In> in(static_cast<std::size_t>(pages * kRows * l.values));
    fill_input(in.data(), pages * kRows, l.values);
    if (dir == direction::quantize) {
      std::memcpy(c.values->data(), in.data(), in.size() * sizeof(In));
    } else {
      for (std::int64_t p = 0; p < pages; ++p)
        dc::quantize_rows<F>(l, c.pages->data() + static_cast<std::size_t>(p + 1) * pb, kRows, 0, kRows,
                             in.data() + p * kRows * l.values);
    }
    c.page_count = pages;
    c.runs = written_runs<F>(l);
    c.traffic_per_pass =
        static_cast<double>(pages * kRows) * static_cast<double>(run_bytes(c.runs[1]) + std::int64_t(value_row));
    c.memcpy = memcpy_traffic(static_cast<std::size_t>(pages * per_page / 2));
    c.key = ck;
  }
  if (stream) {
    bench_stream(state, c, dir, static_cast<std::int64_t>(pb), static_cast<std::int64_t>(value_row), key);
    return;
  }
  dc::force_host_isa(isa);
  // The large set is a bulk conversion: its dequantized values stream to memory (host_store).
  const dc::host_store store = key.set == "large" ? dc::host_store::streaming : dc::host_store::cached;
  std::uint8_t* pg = c.pages->data() + pb;
  auto* vals = reinterpret_cast<V*>(c.values->data());
  const dc::pool_pages pool{c.pages->data(), static_cast<std::int64_t>(pb), c.page_count + 1, kRows};
  auto pass = [&] {
    if (threads > 0) {
      const std::int64_t n = c.page_count * kRows;
      if (dir == direction::quantize) {
        if constexpr (std::is_same_v<V, typename F::input_type>)
          dc::host_insert_rows<F>(l, pool, c.slots.data(), n, vals, F::default_policy, threads);
      } else {
        dc::host_gather_rows<F, V>(l, pool, c.slots.data(), n, vals, F::default_policy, store, threads);
      }
      benchmark::ClobberMemory();
      return;
    }
    for (std::int64_t p = 0; p < c.page_count; ++p) {
      std::uint8_t* page = pg + static_cast<std::size_t>(p) * pb;
      if (dir == direction::quantize) {
        if constexpr (std::is_same_v<V, typename F::input_type>)
          dc::quantize_rows<F>(l, page, kRows, 0, kRows, vals + p * kRows * l.values);
      } else {
        dc::dequantize_rows<F, V>(l, page, kRows, 0, kRows, vals + p * kRows * l.values, F::default_policy, store);
      }
    }
    benchmark::ClobberMemory();
  };
  pass();  // warm up (page faults of a fresh buffer)
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) pass();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  dc::force_host_isa(std::nullopt);
  record(state, key, static_cast<double>(state.iterations()) * c.traffic_per_pass / s / 1e9, c.memcpy,
         static_cast<double>(pages * per_page));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Thread counts of the slot-call benchmarks: 1, 2, 4, ... and the hardware's, at most 8.
std::vector<int> thread_counts() {
  const int hw = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 8);
  std::vector<int> t;
  for (int n = 1; n < hw; n *= 2) t.push_back(n);
  t.push_back(hw);
  return t;
}

void register_all() {
  const std::int64_t large = env_int("DSV4_BENCH_LARGE_MIB", 512) << 20;
  const std::int64_t small = env_int("DSV4_BENCH_SMALL_KIB", 256) << 10;
  for (int i = 0; i < static_cast<int>(dc::kFormats.size()); ++i) {
    dc::visit_format(i, [&]<dc::row_format F>() {
      using In = typename F::input_type;
      const std::string in_name = std::is_same_v<In, float> ? "float" : "bf16";
      struct group {
        direction dir;
        std::string values;
      };
      for (const auto& [set, ws] : {std::pair<std::string, std::int64_t>{"large", large}, {"small", small}}) {
        for (const group& g : {group{direction::quantize, in_name}, group{direction::dequantize, "bf16"},
                               group{direction::dequantize, "float"}}) {
          // (Large set) the traffic ceiling, the page calls on every ISA, then (large set) the
          // slot calls on 1..N threads.
          struct run_kind {
            dc::host_isa isa;
            int threads;
            bool stream;
          };
          std::vector<run_kind> runs;
          if (set == "large") runs.push_back({dc::host_isa::baseline, 0, true});
          for (dc::host_isa isa : dc::kHostIsas)
            if (dc::host_isa_supported(isa)) runs.push_back({isa, 0, false});
          if (set == "large") {
            for (dc::host_isa isa : {dc::host_isa::baseline, dc::best_host_isa()}) {
              for (int t : thread_counts()) runs.push_back({isa, t, false});
              if (isa == dc::best_host_isa()) break;
            }
          }
          for (const run_kind& run : runs) {
            const dc::host_isa isa = run.isa;
            const int threads = run.threads;
            const bool stream = run.stream;
            result_key key{std::string(F::layout.name), g.dir == direction::quantize ? "quantize" : "dequantize",
                           g.values, set, stream ? std::string("stream") : std::string(dc::to_string(isa))};
            std::string name = key.format + "/" + key.dir + "/" + key.values + "/" + key.set + "/" + key.isa;
            if (threads > 0) {
              key.threads = threads;
              name.append("/threads:").append(std::to_string(threads));
            }
            const direction dir = g.dir;
            const std::int64_t bytes = ws;
            auto* b = benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
              if (g.values == "float") {
                bench_case<F, float>(st, dir, bytes, isa, key, threads, stream);
              } else {
                bench_case<F, dc::bf16>(st, dir, bytes, isa, key, threads, stream);
              }
            });
            b->Unit(benchmark::kMillisecond);
            if (set == "large") b->MinTime(0.2);
          }
        }
      }
    });
  }
}

void print_table() {
  if (results().empty()) return;
  std::printf(
      "\nMedians per benchmark (GB/s = codec bytes read + written per second; vs_memcpy = over memcpy's"
      " 2 x bytes copied per second, same working set, same run)\n");
  std::printf("%-30s %-10s %-6s %-6s %-9s %-7s %8s %8s %9s %7s %5s\n", "format", "direction", "values", "set", "isa",
              "threads", "GB/s", "memcpy", "vs_memcpy", "scaling", "samples");
  for (const result_key& k : result_order()) {
    const result& r = results()[k];
    double scaling = 0;  // 0: not a slot call, or no one-thread run of it
    if (k.threads > 0) {
      result_key one = k;
      one.threads = 1;
      const auto it = results().find(one);
      if (it != results().end()) scaling = median(r.gbps) / median(it->second.gbps);
    }
    char threads[16] = "page";
    if (k.isa == "stream") std::snprintf(threads, sizeof(threads), "-");
    if (k.threads > 0) std::snprintf(threads, sizeof(threads), "%d", k.threads);
    std::printf("%-30s %-10s %-6s %-6s %-9s %-7s %8.2f %8.2f %9.2f ", k.format.c_str(), k.dir.c_str(), k.values.c_str(),
                k.set.c_str(), k.isa.c_str(), threads, median(r.gbps), median(r.memcpy_gbps), median(r.ratio));
    if (scaling > 0) {
      std::printf("%7.2f %5zu\n", scaling, r.gbps.size());
    } else {
      std::printf("%7s %5zu\n", "-", r.gbps.size());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::printf("host ISAs: best %s, supported:", std::string(dc::to_string(dc::best_host_isa())).c_str());
  for (dc::host_isa isa : dc::kHostIsas)
    if (dc::host_isa_supported(isa)) std::printf(" %s", std::string(dc::to_string(isa)).c_str());
  std::printf("\n");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_table();
  return 0;
}
