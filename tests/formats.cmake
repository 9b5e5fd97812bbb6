# Independent byte-level tests of every registered row format's writer and reader
# (tests/formats/format_pages_test.cpp): expected pages built from docs/layout-variants.md and
# docs/facts.md, never from the library's layouts or codecs.
#
# The element conversions of the reference come from NVIDIA's host implementation in the CUDA
# toolkit headers (cuda_fp8.h / cuda_fp4.h / cuda_bf16.h compiled as plain host C++; no CUDA
# compiler, no GPU, no cudart) when a toolkit is found; otherwise from the test's own plain
# nearest-even reference. Label "host".
find_package(CUDAToolkit QUIET)

add_executable(format_pages_test ${CMAKE_CURRENT_SOURCE_DIR}/formats/format_pages_test.cpp)
target_link_libraries(format_pages_test PRIVATE dsv4::cache GTest::gtest_main)
dsv4_cache_warnings(format_pages_test)
if(CUDAToolkit_FOUND)
  # SYSTEM: NVIDIA's headers are not held to this project's -Wconversion -Werror.
  target_include_directories(format_pages_test SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(format_pages_test PRIVATE DSV4_HAVE_CUDA_HEADERS=1)
else()
  target_compile_definitions(format_pages_test PRIVATE DSV4_HAVE_CUDA_HEADERS=0)
endif()
# The float-log2 sweep runs a few million rows: optimise this binary in Debug builds too.
target_compile_options(format_pages_test PRIVATE $<$<CONFIG:Debug>:-O2>)
gtest_discover_tests(format_pages_test PROPERTIES LABELS host DISCOVERY_TIMEOUT 120)

# The V4.1 FP4 row against NVIDIA's host conversions (cuda_fp8.h / cuda_fp4.h as plain host C++,
# as above; the test skips with the reason without a toolkit) and a hand-computed golden row.
add_executable(v41_fp4_reference_test ${CMAKE_CURRENT_SOURCE_DIR}/formats/v41_fp4_reference_test.cpp)
target_link_libraries(v41_fp4_reference_test PRIVATE dsv4::cache GTest::gtest_main)
dsv4_cache_warnings(v41_fp4_reference_test)
if(CUDAToolkit_FOUND)
  target_include_directories(v41_fp4_reference_test SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(v41_fp4_reference_test PRIVATE DSV4_HAVE_CUDA_HEADERS=1)
else()
  target_compile_definitions(v41_fp4_reference_test PRIVATE DSV4_HAVE_CUDA_HEADERS=0)
endif()
gtest_discover_tests(v41_fp4_reference_test PROPERTIES LABELS host)
