# Compiles SOURCE with CXX (-std=c++20 -fsyntax-only -I INCLUDE). With EXPECT "compiles" it must
# succeed; otherwise it must fail and the compiler's output must contain EXPECT (the rule the
# library's fail() names), so that an unrelated error does not pass.
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE} ${SOURCE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(EXPECT STREQUAL "compiles")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the control does not compile:\n${err}")
  endif()
  return()
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but a bad input in a static_assert must be a compile error")
endif()
string(FIND "${out}${err}" "${EXPECT}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "${SOURCE} failed to compile without naming the rule '${EXPECT}':\n${err}")
endif()
