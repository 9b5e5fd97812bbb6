# Codec tests that need more than the default glob (tests/*_test.cpp builds scalar_codec_test and
# row_codec_test): the exhaustive sweeps against NVIDIA's host implementation of the conversions.
#
# The sweeps compile cuda_fp8.h / cuda_fp4.h / cuda_bf16.h as plain host C++; only the toolkit's
# include directory is needed (no CUDA compiler, no GPU, no linking to cudart). Without a toolkit
# the binary is still built and each test skips with the reason. Labels "host;sweep": a sanitizer
# or quick build runs `ctest -L host -LE sweep`.
find_package(CUDAToolkit QUIET)
find_package(Threads REQUIRED)

add_executable(nvidia_reference_sweep_test ${CMAKE_CURRENT_SOURCE_DIR}/codec_sweep/nvidia_reference_sweep_test.cpp)
target_link_libraries(nvidia_reference_sweep_test PRIVATE dsv4::cache GTest::gtest_main Threads::Threads)
dsv4_cache_warnings(nvidia_reference_sweep_test)
if(CUDAToolkit_FOUND)
  message(STATUS "dsv4-cache: codec sweeps use NVIDIA's host conversions from ${CUDAToolkit_INCLUDE_DIRS}")
  # SYSTEM: NVIDIA's headers are not held to this project's -Wconversion -Werror.
  target_include_directories(nvidia_reference_sweep_test SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(nvidia_reference_sweep_test PRIVATE DSV4_HAVE_CUDA_HEADERS=1)
else()
  message(STATUS "dsv4-cache: no CUDA toolkit found; the codec sweep tests will skip (no NVIDIA oracle)")
  target_compile_definitions(nvidia_reference_sweep_test PRIVATE DSV4_HAVE_CUDA_HEADERS=0)
endif()
# An unoptimised sweep would take many minutes: always optimise this one binary.
target_compile_options(nvidia_reference_sweep_test PRIVATE $<$<CONFIG:Debug>:-O2>)
# gtest_add_tests (a configure-time scan of the source), not gtest_discover_tests: the latter
# splits a list-valued LABELS in PROPERTIES, losing "sweep".
gtest_add_tests(TARGET nvidia_reference_sweep_test TEST_LIST dsv4_sweep_tests)
set_tests_properties(${dsv4_sweep_tests} PROPERTIES LABELS "host;sweep" TIMEOUT 1800
                                                    SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
