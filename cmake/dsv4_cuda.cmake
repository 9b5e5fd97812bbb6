# CUDA flags for the project's own CUDA targets (GPU tests, sample, benchmark). Included by
# tests/cuda.cmake and examples/cuda.cmake only when DSV4_CACHE_HAS_CUDA is ON.
#
# --expt-relaxed-constexpr: the kernels use std::array-based structs (the arena layout), whose
#   members are not __device__ without it. The row-format, page-layout and group-spec members an
#   engine kernel needs are DSV4_HOST_DEVICE and are compiled without it
#   (tests/cuda/host_device_layout.cu).
# -Werror all-warnings: nvcc's own warnings are errors; the host compiler gets -Wall -Wextra.
# No --use_fast_math: the codecs are integer bit manipulation, but the scale division in
#   scale_exponent_for_amax must stay an IEEE division to match the host bit for bit.
find_package(CUDAToolkit REQUIRED)

# The CUDA runtime the project's CUDA programs link: the shared libcudart by default, the static
# one with DSV4_CACHE_CUDART_STATIC=ON (scripts/gpu-build-prebuilt.sh: binaries carried to a GPU
# machine then need only the driver's libcuda there).
if(DSV4_CACHE_CUDART_STATIC)
  set(DSV4_CACHE_CUDART CUDA::cudart_static)
else()
  set(DSV4_CACHE_CUDART CUDA::cudart)
endif()

# CMake < 3.26 (Debian 12 ships 3.25) knows no C++20 flag for nvcc, so CMAKE_CUDA_STANDARD 20
# fails at generate time ("does not support this, or CMake does not know the flags"). nvcc >= 12
# accepts -std=c++20: teach CMake the flag in the directories that define CUDA targets.
if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()

function(dsv4_cache_cuda_target target)
  target_link_libraries(${target} PRIVATE dsv4::cache ${DSV4_CACHE_CUDART})
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Werror=all-warnings -Xcompiler=-Wall,-Wextra>)
  dsv4_cache_warnings(${target})  # the target's .cpp files
endfunction()
