# Runs `${BIN} bad` (a bad input in a build without exceptions): it must not exit 0, and must
# print the rule on stderr before trapping.
execute_process(COMMAND ${BIN} bad RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "a bad input did not stop the program (exit 0): ${out}")
endif()
if(NOT err MATCHES "dsv4::cache: requests must be >= 1 \\(requests=0\\)")
  message(FATAL_ERROR "no message before the trap (exit ${rc}), stderr: ${err}")
endif()
message(STATUS "trapped as expected (${rc}): ${err}")
