# ctest driver for dsv4-cache-cuda-demo (label `host`): runs the sample and checks its exit
# code and output, so that the no-device path is tested for real in CI.
#   -DDEMO=<path> -DMODE=run|bad_flag|bad_writer|over_budget
# run:         exit 0 with "bit-exact" (a GPU is present) or exit 3 with "no CUDA device found"
#              and the printed plan (no GPU); anything else fails.
# bad_flag:    exit 2 and exactly one line on stderr.
# bad_writer:  exit 2 and exactly one line on stderr naming --writer and the value.
# over_budget: exit 2 and exactly one line on stderr naming --memory-gib.
if(MODE STREQUAL "run")
  set(args --preset flash --context 4096 --requests 2 --max-tokens 256)
elseif(MODE STREQUAL "bad_flag")
  set(args --preset flash --requests)
elseif(MODE STREQUAL "bad_writer")
  set(args --preset flash --context 4096 --requests 2 --writer nvidia)
elseif(MODE STREQUAL "over_budget")
  set(args --preset pro --context 1048576 --requests 64 --memory-gib 1)
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()
execute_process(COMMAND ${DEMO} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
string(REGEX MATCHALL "\n" err_newlines "${err}")
list(LENGTH err_newlines err_lines)
if(MODE STREQUAL "run")
  if(rc EQUAL 0 AND out MATCHES "bit-exact against the host codecs")
    message(STATUS "demo ran on a GPU: all rows bit-exact")
  elseif(rc EQUAL 3 AND out MATCHES "no CUDA device found" AND out MATCHES "plan: 2 request")
    message(STATUS "demo printed the plan and reported no CUDA device (exit 3)")
  else()
    message(FATAL_ERROR "unexpected exit ${rc}\n--- stdout:\n${out}\n--- stderr:\n${err}")
  endif()
else()
  if(NOT rc EQUAL 2 OR NOT err_lines EQUAL 1 OR NOT err MATCHES "^dsv4-cache-cuda-demo: error: ")
    message(FATAL_ERROR "expected exit 2 and one error line, got exit ${rc}\n--- stderr:\n${err}")
  endif()
  if(MODE STREQUAL "over_budget" AND NOT err MATCHES "--memory-gib")
    message(FATAL_ERROR "the error line does not name --memory-gib: ${err}")
  endif()
  if(MODE STREQUAL "bad_writer" AND NOT err MATCHES "--writer 'nvidia' is not a writer")
    message(FATAL_ERROR "the error line does not name --writer and its value: ${err}")
  endif()
  if(NOT out STREQUAL "")
    message(FATAL_ERROR "a refused run printed on stdout:\n${out}")
  endif()
endif()
