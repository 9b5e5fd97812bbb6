// Compile check: the layout members an engine kernel needs are callable in device code without
// --expt-relaxed-constexpr (this file is built without it): row formats, page layouts (offsets,
// page bytes) and group specs. The device results are checked when a GPU is present; without
// one the program exits 3 (skipped).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "dsv4/cache/group_spec.hpp"
#include "dsv4/cache/row_format.hpp"

namespace dc = dsv4::cache;

__global__ void layout_kernel(dc::fp8_ds_mla_page_layout kv, dc::indexer_page_layout idx, dc::paged_cache_group_spec g,
                              std::int64_t* out) {
  out[0] = kv.scale_offset(1);                // 64 x 576 + 8 = 36,872
  out[1] = kv.page_bytes();                   // 37,440
  out[2] = kv.used_bytes();                   // 37,376
  out[3] = idx.page_bytes();                  // 64 x 68 = 4,352
  out[4] = g.page_bytes();                    // 37,440 + 4,352
  out[5] = g.row_bytes();                     // 584 + 68
  out[6] = g.page_size_tokens();              // 256
  out[7] = dc::dcp_sharded(g, 0) ? 1 : 0;     // the main-KV pool of a full-history group
  out[8] = dc::swa_row_bytes(512, 64);        // 584
  out[9] = dc::indexer_mxfp4_row_bytes(128);  // 68
}

int main() {
  const dc::group_spec_list groups = dc::build_cache_specs(dc::deepseek_v4_flash, dc::indexer_format::mxfp4);
  const dc::paged_cache_group_spec kv_group = groups[2];
  const dc::fp8_ds_mla_page_layout kv{dc::make_fp8_ds_mla_format(512, 64), 64};
  const dc::indexer_page_layout idx =
      dc::make_indexer_page_layout(dc::make_indexer_row_format(dc::indexer_format::mxfp4, 128), 64);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA device\n");
    return 3;
  }
  std::int64_t* d_out = nullptr;
  if (cudaMalloc(&d_out, 10 * sizeof(std::int64_t)) != cudaSuccess) return 1;
  layout_kernel<<<1, 1>>>(kv, idx, kv_group, d_out);
  std::int64_t out[10] = {};
  if (cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
  cudaFree(d_out);
  const std::int64_t expected[10] = {36'872, 37'440, 37'376, 4'352, 37'440 + 4'352, 584 + 68, 256, 1, 584, 68};
  for (int i = 0; i < 10; ++i)
    if (out[i] != expected[i]) {
      std::printf("value %d: device %lld, expected %lld\n", i, static_cast<long long>(out[i]),
                  static_cast<long long>(expected[i]));
      return 1;
    }
  std::printf("ok: layout members agree on the device\n");
  return 0;
}
