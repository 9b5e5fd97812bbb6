# dsv4-cache-bench: host throughput of every registered format's bulk codecs beside memcpy
# (Google Benchmark). Measure in a Release build: cmake -DCMAKE_BUILD_TYPE=Release.
# One binary covers every instruction set: the codecs are compiled once per host_isa
# (baseline x86-64 SSE2, AVX2, AVX-512) and the benchmark runs each one the CPU supports
# (host_codec.hpp); no -march flag is needed.
find_package(benchmark QUIET)
if(benchmark_FOUND)
  add_executable(dsv4-cache-bench ${CMAKE_CURRENT_SOURCE_DIR}/bench/codec_bench.cpp)
  target_link_libraries(dsv4-cache-bench PRIVATE dsv4::cache benchmark::benchmark)
  dsv4_cache_warnings(dsv4-cache-bench)
else()
  message(STATUS "dsv4-cache: Google Benchmark not found (Debian: libbenchmark-dev); dsv4-cache-bench is skipped")
endif()
