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

# dsv4-cache-planner-bench: the wall time of the planner's answers with a budget (the engine
# replays, issue 41) over a fixed grid, and the writer of tests/data/replay_expectations.tsv.
# A plain timing program (no Google Benchmark needed), built by default, never run by ctest.
find_package(fmt REQUIRED)
add_executable(dsv4-cache-planner-bench ${CMAKE_CURRENT_SOURCE_DIR}/bench/planner_bench.cpp)
target_link_libraries(dsv4-cache-planner-bench PRIVATE dsv4_cache_tools)
target_include_directories(dsv4-cache-planner-bench PRIVATE ${PROJECT_SOURCE_DIR}/tests)
dsv4_cache_warnings(dsv4-cache-planner-bench)

# dsv4-cache-transfer-bench: transfer manifests per second for 1M-token prompts and the range
# counts against tokenspeed's unmerged form (issue 46). A plain timing program, never run by ctest.
add_executable(dsv4-cache-transfer-bench ${CMAKE_CURRENT_SOURCE_DIR}/bench/transfer_bench.cpp)
target_link_libraries(dsv4-cache-transfer-bench PRIVATE dsv4_cache_tools)
dsv4_cache_warnings(dsv4-cache-transfer-bench)
