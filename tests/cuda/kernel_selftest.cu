// dsv4-cache-gpu-selftest: the GPU cases of cuda_kernels_test.cu without GoogleTest, for a
// machine that has only the CUDA toolkit (scripts/gpu-check.sh builds it with nvcc alone).
// Exit codes: 0 all cases passed, 1 a case failed (or threw), 3 no CUDA device.
#include <cstdio>
#include <exception>
#include <string>

#include "gpu_cases.cuh"

int main() {
  using namespace dsv4::cache::cuda;
  if (!sample::device_present()) {
    std::printf("dsv4-cache-gpu-selftest: SKIPPED: no CUDA device (cudaGetDeviceCount found none)\n");
    return 3;
  }
  int failed = 0;
  for (const gpu_test::gpu_case& c : gpu_test::all_cases()) {
    std::string error;
    try {
      error = c.run();
    } catch (const std::exception& e) {
      error = std::string("exception: ") + e.what();
    }
    std::printf("[%s] %s\n%s", error.empty() ? "PASS" : "FAIL", c.name, error.c_str());
    failed += error.empty() ? 0 : 1;
  }
  std::printf("dsv4-cache-gpu-selftest: %d case(s) failed\n", failed);
  return failed == 0 ? 0 : 1;
}
