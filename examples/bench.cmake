# dsv4-cache-bench: host throughput of the row codecs beside memcpy (Google Benchmark).
# Measure in a Release build: cmake -DCMAKE_BUILD_TYPE=Release.
find_package(benchmark QUIET)
if(benchmark_FOUND)
  add_executable(dsv4-cache-bench ${CMAKE_CURRENT_SOURCE_DIR}/bench/codec_bench.cpp)
  target_link_libraries(dsv4-cache-bench PRIVATE dsv4::cache benchmark::benchmark)
  dsv4_cache_warnings(dsv4-cache-bench)
else()
  message(STATUS "dsv4-cache: Google Benchmark not found (Debian: libbenchmark-dev); dsv4-cache-bench is skipped")
endif()
