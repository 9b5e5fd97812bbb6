// dsv4-cache: CUDA runtime errors as C++ exceptions.
//
// Every CUDA runtime call of this library goes through `DSV4_CUDA_CHECK`, which throws a
// `dsv4::cache::cuda::cuda_error` naming the failing call, its source location and the CUDA
// error string. The library never calls `exit()` or prints: the caller decides. CUDA only.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace dsv4::cache::cuda {

/// A failed CUDA runtime call. `what()` is "<call> failed at <file>:<line>: <cudaErrorName>
/// (<cudaGetErrorString>)"; `code()` is the runtime's error code.
class cuda_error : public std::runtime_error {
 public:
  cuda_error(cudaError_t code, const char* call, const char* file, int line)
      : std::runtime_error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                           cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")"),
        code_(code) {}

  /// The CUDA runtime error code of the failed call.
  [[nodiscard]] cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

/// Throws `cuda_error(code, call, file, line)` unless `code == cudaSuccess`. Use through
/// `DSV4_CUDA_CHECK(expr)`, which fills in the call text and the location. Clears the
/// runtime's last-error state first (a non-sticky error such as a failed cudaMalloc), so that a
/// caller who catches and goes on is not blamed for it by the next launch check.
inline void check(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return;
  (void)cudaGetLastError();
  throw cuda_error(code, call, file, line);
}

/// Throws for an error of the last kernel launch (bad configuration, or a sticky error of an
/// earlier asynchronous failure). Does not synchronize. Clears a non-sticky launch error.
inline void check_last_launch(const char* kernel, const char* file, int line) {
  check(cudaGetLastError(), kernel, file, line);
}

}  // namespace dsv4::cache::cuda

/// Evaluates a CUDA runtime call once; throws `dsv4::cache::cuda::cuda_error` if it fails.
#define DSV4_CUDA_CHECK(expr) ::dsv4::cache::cuda::check((expr), #expr, __FILE__, __LINE__)
