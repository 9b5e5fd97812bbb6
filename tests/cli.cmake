# The planner CLI: in-process tests of run_planner, and the built binary run by ctest.
if(TARGET dsv4-cache-plan)
  find_package(CLI11 REQUIRED)
  dsv4_cache_add_test(cli_test ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_test.cpp)
  target_link_libraries(cli_test PRIVATE CLI11::CLI11)
  target_link_libraries(cli_test PRIVATE dsv4_cache_tools)
  # The built binary, run as a user would (exit codes, stdout/stderr separation).
  target_compile_definitions(cli_test PRIVATE DSV4_PLAN_BIN="$<TARGET_FILE:dsv4-cache-plan>")
  add_dependencies(cli_test dsv4-cache-plan)
endif()
