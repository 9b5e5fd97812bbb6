# GPU tests (ctest label `gpu`, never `host`): built whenever a CUDA compiler is found, so CI
# (nvcc, no GPU) compiles them; every GPU case skips with a stated reason when the CUDA runtime
# sees no device.
if(DSV4_CACHE_HAS_CUDA)
  include(${PROJECT_SOURCE_DIR}/cmake/dsv4_cuda.cmake)

  add_executable(cuda_kernels_test ${CMAKE_CURRENT_SOURCE_DIR}/cuda/cuda_kernels_test.cu)
  target_link_libraries(cuda_kernels_test PRIVATE GTest::gtest_main)
  dsv4_cache_cuda_target(cuda_kernels_test)
  gtest_discover_tests(cuda_kernels_test PROPERTIES LABELS gpu SKIP_REGULAR_EXPRESSION "no CUDA device"
                       DISCOVERY_TIMEOUT 120)

  # The generic kernels of every registered format against the host lanes (slot_work.hpp).
  add_executable(generic_kernels_test ${CMAKE_CURRENT_SOURCE_DIR}/cuda/generic_kernels_test.cu)
  target_link_libraries(generic_kernels_test PRIVATE GTest::gtest_main)
  dsv4_cache_cuda_target(generic_kernels_test)
  gtest_discover_tests(generic_kernels_test PROPERTIES LABELS gpu SKIP_REGULAR_EXPRESSION "no CUDA device"
                       DISCOVERY_TIMEOUT 120)

  # Layout members called from device code, built WITHOUT --expt-relaxed-constexpr (as an engine's
  # kernels may be): the compile is the check here; a GPU also checks the values (exit 3 = skipped).
  add_executable(dsv4-host-device-layout ${CMAKE_CURRENT_SOURCE_DIR}/cuda/host_device_layout.cu)
  target_link_libraries(dsv4-host-device-layout PRIVATE dsv4::cache ${DSV4_CACHE_CUDART})
  target_compile_options(dsv4-host-device-layout PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Wall,-Wextra>)
  add_test(NAME gpu.host_device_layout COMMAND dsv4-host-device-layout)
  set_tests_properties(gpu.host_device_layout PROPERTIES LABELS gpu SKIP_RETURN_CODE 3 TIMEOUT 60)

  # The same cases without GoogleTest (exit 3 = no device = skipped).
  add_executable(dsv4-cache-gpu-selftest ${CMAKE_CURRENT_SOURCE_DIR}/cuda/kernel_selftest.cu)
  dsv4_cache_cuda_target(dsv4-cache-gpu-selftest)
  add_test(NAME gpu.selftest COMMAND dsv4-cache-gpu-selftest)
  set_tests_properties(gpu.selftest PROPERTIES LABELS gpu SKIP_RETURN_CODE 3 TIMEOUT 300)
endif()
