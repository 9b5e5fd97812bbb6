# CUDA sample (dsv4-cache-cuda-demo) and benchmark (dsv4-cache-gpu-bench), built whenever a
# CUDA compiler is found. The sample's CLI half is a plain C++ file (CLI11, fmt, nlohmann_json
# through dsv4/tools/planner_cli.hpp); its device half and the benchmark are .cu files without fmt.
if(DSV4_CACHE_HAS_CUDA)
  include(${PROJECT_SOURCE_DIR}/cmake/dsv4_cuda.cmake)

  add_executable(dsv4-cache-cuda-demo cuda/demo_main.cpp cuda/demo_device.cu)
  target_include_directories(dsv4-cache-cuda-demo PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cuda)
  target_link_libraries(dsv4-cache-cuda-demo PRIVATE dsv4_cache_tools)
  dsv4_cache_cuda_target(dsv4-cache-cuda-demo)

  add_executable(dsv4-cache-gpu-bench cuda/gpu_bench.cu)
  dsv4_cache_cuda_target(dsv4-cache-gpu-bench)

  if(DSV4_CACHE_BUILD_TESTS)
    # The sample's exit codes, checked for real: with no GPU it must print the plan and exit 3.
    foreach(mode IN ITEMS run json bad_flag bad_writer over_budget)
      add_test(NAME cuda_demo.${mode}
               COMMAND ${CMAKE_COMMAND} -DDEMO=$<TARGET_FILE:dsv4-cache-cuda-demo> -DMODE=${mode}
                       -P ${CMAKE_CURRENT_SOURCE_DIR}/cuda/demo_check.cmake)
      set_tests_properties(cuda_demo.${mode} PROPERTIES LABELS host TIMEOUT 300)
    endforeach()
  endif()
endif()
