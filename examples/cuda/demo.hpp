// dsv4-cache-cuda-demo: the device half of the sample (demo_device.cu), called by the CLI
// front end (demo_main.cpp). Plain C++ interface: no CUDA or fmt header.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>

#include "dsv4/cache/formats/format_traits.hpp"
#include "dsv4/cache/memory_plan.hpp"
#include "dsv4/cache/model.hpp"

namespace dsv4::cache::cuda_demo {

/// Exit codes of the sample.
inline constexpr int kExitOk = 0;
inline constexpr int kExitMismatch = 1;  ///< A byte or a counter differed from the host codecs.
inline constexpr int kExitUsage = 2;     ///< Bad flags, an invalid plan, or a plan the device cannot hold.
inline constexpr int kExitNoDevice = 3;  ///< The plan is valid but no CUDA device was found.

/// Allocates the arena of `plan` (a plan of `model`) on the current device and round-trips
/// random rows through every pool (every pool of the first and last layer of each group,
/// compressor states included; up to `max_tokens` rows each): the specialized kernels where the
/// pool's format has them for the writer's policy, the generic ones otherwise, each row checked
/// against the host codec of the writer used (`writer` where the format lists it, else the
/// format's default writer). Prints pool sizes, one line per round trip (format, writer, path,
/// rows, GB/s) and the device's peak bandwidth on `out`. Returns one of the exit codes above;
/// writes one line on `err` for kExitUsage, one per mismatch for kExitMismatch. Never throws.
int run_on_device(const model_config& model, const memory_plan& plan, std::int64_t max_tokens,
                  std::optional<writer_id> writer, std::ostream& out, std::ostream& err);

}  // namespace dsv4::cache::cuda_demo
