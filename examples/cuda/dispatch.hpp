// dsv4-cache sample: which regions of an arena the sample round-trips, with which writer and on
// which device path. Host only (no CUDA header): the CUDA sample (round_trip.cuh, demo_device.cu)
// and its host test (tests/sample_dispatch_test.cpp) share it.
//
// Every pool region of every preset gets a path (fast_rows.hpp `device_path_for`): the
// specialized kernels where the region's format has them and they implement the writer's
// policy, the generic kernels otherwise (every registry format has them, fp32 compressor states
// included). The writer is the format's default (`F::writers[0]`) unless one is asked for and
// the format lists it; the round trip then checks every row against the host codec of that
// writer (`quantize_row<F>` / `dequantize_row<F>` under its policy).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/fast_rows.hpp"
#include "dsv4/cache/formats/registry.hpp"

namespace dsv4::cache::cuda::sample {

/// What a round trip of one region does: the region's registry format, the writer whose bytes it
/// writes and checks, and the device path of its kernels.
struct region_dispatch {
  int format_index = -1;          ///< Registry index of the region's format.
  const format_writer* writer{};  ///< The writer used (never null).
  bool writer_asked = false;      ///< True when `writer` is the one asked for.
  device_path path = device_path::generic;
};

/// The writer of registry format `format_index`: `asked` if the format lists it, else the
/// format's default writer (`kFormatWriters[i][0]`). Throws std::invalid_argument for an index
/// outside the registry.
inline const format_writer& writer_for(int format_index, std::optional<writer_id> asked) {
  require(format_index >= 0 && static_cast<std::size_t>(format_index) < kFormats.size(),
          "format index outside the registry", {"index", format_index});
  if (asked)
    if (const format_writer* w = find_writer(format_index, *asked)) return *w;
  return kFormatWriters[static_cast<std::size_t>(format_index)][0];
}

/// The dispatch of region `r`: its format, the writer (`writer_for`) and the path
/// (`device_path_for(r.format, writer policy)`, or generic when `force_generic`). Throws
/// std::invalid_argument if the region's format is not a registry format.
inline region_dispatch dispatch_region(const pool_region& r, std::optional<writer_id> asked,
                                       bool force_generic = false) {
  region_dispatch d;
  d.format_index = format_index(r.format.name);
  require(d.format_index >= 0, "the region's format is not in the registry", {"layer", r.layer}, {"pool", r.pool});
  d.writer = &writer_for(d.format_index, asked);
  d.writer_asked = asked.has_value() && d.writer->producer == *asked;
  d.path = force_generic ? device_path::generic : device_path_for(r.format, d.writer->policy);
  return d;
}

/// The regions the sample round-trips: every pool of the first and the last layer of every group
/// (one layer for a group of one), in arena order. Compressor-state pools included.
inline std::vector<pool_region> sample_regions(const arena_layout& a) {
  std::vector<pool_region> out;
  for (int g = 0; g < a.plan.num_groups; ++g) {
    const arena_group_layout& gl = a.groups[static_cast<std::size_t>(g)];
    for (int p = 0; p < gl.num_pools; ++p) {
      out.push_back(a.region(g, 0, p));
      if (gl.num_layers > 1) out.push_back(a.region(g, gl.num_layers - 1, p));
    }
  }
  return out;
}

}  // namespace dsv4::cache::cuda::sample
