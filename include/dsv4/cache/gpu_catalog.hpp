// dsv4-cache: the memory a GPU reports to the engines (CUDA's / ROCm's total) and its compute
// capability (which the engines' GPU-dependent defaults and refusals follow), by name.
//
// The engines size from what the runtime reports (torch.cuda.mem_get_info's total, the same as
// cudaDeviceProp::totalGlobalMem), not from the marketing figure: an "H200 141GB" reports
// 150,109,880,320 B = 139.80 GiB. Each entry says how its figure was obtained (`gpu_memory_basis`)
// and where; an entry that is not a measured runtime total says so, and by how much it may differ.
// Plain C++20, constexpr.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "dsv4/cache/platform.hpp"

namespace dsv4::cache {

/// How a catalog figure was obtained.
enum class gpu_memory_basis : std::uint8_t {
  runtime_total,  ///< what CUDA / ROCm report as total (mem_get_info, totalGlobalMem): what the engines see
  nvidia_smi,     ///< nvidia-smi's "Total" MiB: a few hundred MiB above the runtime total on Hopper
                  ///< (H200: 143,771 MiB in nvidia-smi, 143,155.75 MiB from CUDA)
  nominal,        ///< the vendor's capacity (e.g. "180 GiB"): not what the runtime reports
};

/// One GPU model: its name as typed, the bytes, how they were obtained and the source.
struct gpu_entry {
  std::string_view name;   ///< canonical name, e.g. "H200"
  std::string_view keys;   ///< accepted spellings, normalised (lower case, no spaces, '-' or '_'), ',' separated
  std::int64_t bytes = 0;  ///< total device memory, bytes
  gpu_memory_basis basis = gpu_memory_basis::runtime_total;
  std::string_view source;  ///< where the figure comes from
  int sm_major = 0;         ///< CUDA compute capability (SM major); 0: not an NVIDIA GPU
  int sm_minor = 0;         ///< SM minor
  std::string_view arch;    ///< "Hopper", "Blackwell", "Ampere", "CDNA 3"
};

/// The catalog. Figures that are not a measured runtime total are marked by `basis`.
inline constexpr std::array<gpu_entry, 9> gpu_catalog{{
    {"H200", "h200,h200sxm,h200141gb,h200sxm141gb", 150'109'880'320, gpu_memory_basis::runtime_total,
     "torch.cuda.mem_get_info() total, measured on a lent H200 SXM 141GB (dsv4-cache issue 42)", 9, 0, "Hopper"},
    {"H100 80GB", "h100,h10080gb,h100sxm,h100sxm80gb,h10080gbhbm3", 85'029'158'912, gpu_memory_basis::runtime_total,
     "cudaDeviceProp::totalGlobalMem of an H100 80GB HBM3 (deviceQuery); the same 85,029,158,912 B that "
     "ai-dynamo/aiconfigurator src/aiconfigurator/systems/h800_sxm.yaml @ 77f0282e records for the H800 80GB",
     9, 0, "Hopper"},
    {"H800", "h800,h800sxm,h80080gb", 85'029'158'912, gpu_memory_basis::runtime_total,
     "ai-dynamo/aiconfigurator src/aiconfigurator/systems/h800_sxm.yaml @ 77f0282e (85,029,158,912 B, the H100 "
     "80GB's totalGlobalMem)",
     9, 0, "Hopper"},
    {"A100 80GB", "a100,a10080gb,a100sxm,a100sxm80gb,a100sxm480gb", 85'899'345'920, gpu_memory_basis::nominal,
     "80 GiB nominal (ai-dynamo/aiconfigurator aic-core/.../systems/a100_sxm.yaml @ 095f58a5); CUDA reports "
     "less (not measured here)",
     8, 0, "Ampere"},
    {"B200", "b200,b200sxm", 193'273'528'320, gpu_memory_basis::nominal,
     "180 GiB nominal (ai-dynamo/aiconfigurator aic-core/.../systems/b200_sxm.yaml @ 095f58a5); CUDA reports "
     "less (not measured here)",
     10, 0, "Blackwell"},
    {"B300", "b300,b300sxm", 288'400'343'040, gpu_memory_basis::nvidia_smi,
     "275,040 MiB as nvidia-smi reports (ai-dynamo/aiconfigurator aic-core/.../systems/b300_sxm.yaml @ 095f58a5)", 10,
     3, "Blackwell"},
    {"GB200", "gb200", 198'674'743'296, gpu_memory_basis::nvidia_smi,
     "189,471 MiB as nvidia-smi reports (ai-dynamo/aiconfigurator aic-core/.../systems/gb200.yaml @ 095f58a5)", 10, 0,
     "Blackwell"},
    {"GB300", "gb300", 298'013'687'808, gpu_memory_basis::nvidia_smi,
     "284,208 MiB as nvidia-smi reports (ai-dynamo/aiconfigurator aic-core/.../systems/gb300.yaml @ 095f58a5)", 10, 3,
     "Blackwell"},
    {"MI300X", "mi300x,instinctmi300x", 205'822'885'888, gpu_memory_basis::runtime_total,
     "ROCm VRAM total (rocm-smi --showmeminfo vram, hipDeviceProp totalGlobalMem and torch.cuda.mem_get_info "
     "agree in public MI300X logs)",
     0, 0, "CDNA 3"},
}};

namespace detail {
/// Lower case, spaces, '-', '_' and '.' removed: "H100 80GB" and "h100-80gb" are one key.
constexpr std::string normalise_gpu_name(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    if (ch == ' ' || ch == '-' || ch == '_' || ch == '.') continue;
    out.push_back(ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch);
  }
  return out;
}

constexpr bool key_in(std::string_view keys, std::string_view key) {
  while (!keys.empty()) {
    const std::size_t comma = keys.find(',');
    if (keys.substr(0, comma) == key) return true;
    if (comma == std::string_view::npos) break;
    keys.remove_prefix(comma + 1);
  }
  return false;
}
}  // namespace detail

/// The catalog entry for `name` (case, spaces, '-', '_' and '.' ignored: "h200", "H100 80GB",
/// "mi300x"), or nullptr.
constexpr const gpu_entry* lookup_gpu(std::string_view name) {
  const std::string key = detail::normalise_gpu_name(name);
  for (const gpu_entry& g : gpu_catalog)
    if (detail::key_in(g.keys, key)) return &g;
  return nullptr;
}

/// "H200, H100 80GB, ...": the catalog's names, for messages.
inline std::string gpu_catalog_names() {
  std::string out;
  for (const gpu_entry& g : gpu_catalog) {
    if (!out.empty()) out += ", ";
    out += g.name;
  }
  return out;
}

/// The catalog entry for `name`. Throws std::invalid_argument naming the value and listing the
/// known names for a name not in the catalog (no guess: give the memory in bytes instead).
inline const gpu_entry& find_gpu(std::string_view name) {
  if (const gpu_entry* g = lookup_gpu(name)) return *g;
  detail::raise_invalid_argument("dsv4::cache: unknown GPU '" + std::string(name) + "': the catalog knows " +
                                 gpu_catalog_names() +
                                 "; for another GPU give its memory as CUDA reports it (--gpu-memory-gib)");
}

/// "measured runtime total", "nvidia-smi total" or "nominal capacity".
constexpr std::string_view to_string(gpu_memory_basis b) {
  switch (b) {
    case gpu_memory_basis::runtime_total: return "runtime total (what the engine sees)";
    case gpu_memory_basis::nvidia_smi: return "nvidia-smi total (the runtime reports a few hundred MiB less)";
    case gpu_memory_basis::nominal: return "nominal capacity (the runtime reports less)";
  }
  return "?";
}

}  // namespace dsv4::cache
