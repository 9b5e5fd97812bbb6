# The planner CLI: in-process tests of run_planner, and the built binary run by ctest.
if(TARGET dsv4-cache-plan)
  find_package(CLI11 REQUIRED)
  # One binary, two unity groups (tests/CMakeLists.txt, dsv4_cache_add_test_suite):
  # - cli_test: the planner in process and its built binary (exit codes, stdout/stderr separation);
  #   file_output_test: every kind of target of --svg FILE and golden --out DIR (file_io.hpp), in
  #   process and through both built binaries (as `nobody` in a forked child when run as root);
  #   layout_cli_test: run_layout in process and its built binary; contract_test: the layout
  #   contract (describe, fingerprint against libxxhash, diff, check);
  # - golden_test: golden pages in process, byte-compared with an independent Python writer
  #   (skipped, saying why, without a Python 3 interpreter); transfer_test: transfer manifests
  #   (issue 46: the merge, vLLM's NIXL rule, the proof on host arenas, the CLI); bad_input_test:
  #   every refusal of the library and the planner (docs/bad-input.md).
  dsv4_cache_add_test_suite(cli_test GROUP cli/cli_test cli/file_output_test cli/layout_cli_test cli/contract_test
                            GROUP cli/transfer_test bad_input_test cli/golden_test)
  find_package(Python3 COMPONENTS Interpreter)
  set(dsv4_golden_python "")
  if(Python3_Interpreter_FOUND)
    set(dsv4_golden_python "${Python3_EXECUTABLE}")
  endif()
  target_link_libraries(cli_test PRIVATE CLI11::CLI11 dsv4_cache_tools ${XXHASH_LIBRARY})
  target_include_directories(cli_test PRIVATE ${XXHASH_INCLUDE_DIR})
  target_compile_definitions(
    cli_test PRIVATE DSV4_PLAN_BIN="$<TARGET_FILE:dsv4-cache-plan>" DSV4_LAYOUT_BIN="$<TARGET_FILE:dsv4-cache-layout>"
                     DSV4_PYTHON3="${dsv4_golden_python}"
                     DSV4_GOLDEN_WRITER_PY="${CMAKE_CURRENT_SOURCE_DIR}/golden/fp8_ds_mla_writer.py"
                     DSV4_GOLDEN_WRITERS_PY="${CMAKE_CURRENT_SOURCE_DIR}/golden/golden_writer.py")
  add_dependencies(cli_test dsv4-cache-plan dsv4-cache-layout)
  # dsv4-cache-plan --svg rendered by rsvg-convert (librsvg2-bin): every text box inside the canvas
  # (the width estimate against the ink), bars by cause against --json's breakdown, bar pixels,
  # curve ends against --json, refusals, ticks, the largest N; skipped (77) without rsvg-convert.
  if(Python3_Interpreter_FOUND)
    add_test(NAME cli.svg_render
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/svg_render_test.py
                     $<TARGET_FILE:dsv4-cache-plan>)
    # A grid of ~35 planner runs with their capacity curves (replays): the slow stage runs it (g++)
    # and the clang++ stage; the ASan stage leaves it to CliScreen.SvgReadsRight, the same
    # renderer in-process, and to cli_fuzz's SVG inputs.
    set_tests_properties(cli.svg_render PROPERTIES SKIP_RETURN_CODE 77 LABELS "host;grid")
  endif()
  # The independent writer's own hand-derived cases (zero blocks per writer, ties, +-inf, NaN).
  if(Python3_Interpreter_FOUND)
    add_test(NAME golden.writer_self_test
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/golden/golden_writer.py --self-test)
  endif()
  # vLLM's startup figures against the independent Python oracle of vLLM's sizing
  # (tests/oracle/vllm_pool_oracle.py, written from vLLM's source): 24 cases, and the oracle's own
  # hand-checked values. Python 3 comes with scripts/install-deps.sh.
  if(Python3_Interpreter_FOUND)
    add_test(NAME oracle.vllm_pool_self_test
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/vllm_pool_oracle.py --self-test)
    add_test(NAME oracle.vllm_plan_agrees
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/compare_vllm_plan.py
                     $<TARGET_FILE:dsv4-cache-plan>)
    # tokenspeed's parent arena and `Cache profile` against the independent oracle of its recipe
    # (tests/oracle/tokenspeed_oracle.py, written from tokenspeed's source): 42 cases under each of
    # tokenspeed 0.1.1 and the pin f4d8ec6e, and the oracle's re-derivation of tokenspeed's own
    # memory-plan tests.
    add_test(NAME oracle.tokenspeed_self_test
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/tokenspeed_oracle.py --self-test)
    add_test(NAME oracle.tokenspeed_plan_agrees
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/compare_tokenspeed_plan.py
                     $<TARGET_FILE:dsv4-cache-plan>)
    # SGLang's DSV4PoolConfigurator (tests/oracle/sglang_pool_oracle.py, written from SGLang's source at
    # cce0a124, docs/engines/sglang-pools.md): its hand-derived cases, and the planner's --engine sglang
    # report against it (22 cases: pool sizes, reservation, max_running_requests, log lines, refusals).
    add_test(NAME oracle.sglang_pool_self_test
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/sglang_pool_oracle.py --self-test)
    # SGLang's occupancy (tests/oracle/sglang_occupancy_oracle.py, written from its scheduler and radix
    # cache at cce0a124): its hand-derived cases; sglang_engine_test compares the C++ replay with its rows.
    add_test(NAME oracle.sglang_occupancy_self_test
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/sglang_occupancy_oracle.py --self-test)
    add_test(NAME oracle.sglang_plan_agrees
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/compare_sglang_plan.py
                     $<TARGET_FILE:dsv4-cache-plan>)
    # The transfer oracle's hand-computed checks (tests/oracle/transfer_oracle.py; pytest's
    # test_transfer_oracle.py compares dsv4_cache.transfer with it).
    add_test(NAME oracle.transfer_self_test COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/transfer_oracle.py)
    set_tests_properties(oracle.transfer_self_test PROPERTIES LABELS host)
    set_tests_properties(oracle.vllm_pool_self_test oracle.vllm_plan_agrees oracle.tokenspeed_self_test
                         oracle.tokenspeed_plan_agrees oracle.sglang_pool_self_test oracle.sglang_plan_agrees
                         oracle.sglang_occupancy_self_test PROPERTIES LABELS host)
  else()
    message(WARNING "dsv4-cache: no Python 3 interpreter: the vLLM and tokenspeed oracle comparisons are not run "
                    "(bash scripts/install-deps.sh installs python3)")
  endif()
endif()
