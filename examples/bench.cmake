# dsv4-cache-bench: host throughput of the row codecs beside memcpy (Google Benchmark).
# Measure in a Release build: cmake -DCMAKE_BUILD_TYPE=Release.
#   dsv4-cache-bench         the baseline ISA of the toolchain (x86-64: SSE2)
#   dsv4-cache-bench-native  the same code compiled with -march=native, as an engine built for
#                            its host would (the codecs are portable C++ that auto-vectorizes, so
#                            wider vectors come from the flag alone; no intrinsics)
find_package(benchmark QUIET)
if(benchmark_FOUND)
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-march=native DSV4_CACHE_HAS_MARCH_NATIVE)
  add_executable(dsv4-cache-bench ${CMAKE_CURRENT_SOURCE_DIR}/bench/codec_bench.cpp)
  target_link_libraries(dsv4-cache-bench PRIVATE dsv4::cache benchmark::benchmark)
  dsv4_cache_warnings(dsv4-cache-bench)
  if(DSV4_CACHE_HAS_MARCH_NATIVE)
    add_executable(dsv4-cache-bench-native ${CMAKE_CURRENT_SOURCE_DIR}/bench/codec_bench.cpp)
    target_link_libraries(dsv4-cache-bench-native PRIVATE dsv4::cache benchmark::benchmark)
    target_compile_options(dsv4-cache-bench-native PRIVATE -march=native)
    dsv4_cache_warnings(dsv4-cache-bench-native)
  endif()
else()
  message(STATUS "dsv4-cache: Google Benchmark not found (Debian: libbenchmark-dev); dsv4-cache-bench is skipped")
endif()
