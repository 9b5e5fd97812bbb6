# Installs the library to a temporary prefix, then configures, builds and runs a consumer
# project against it three times: through find_package, add_subdirectory and FetchContent.
# Inputs: SOURCE_DIR, WORK_DIR, CMAKE_CXX_COMPILER, GENERATOR.
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
endfunction()
set(common -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER})
# 1. Install the library alone (tests/examples off, as a packager would).
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/lib ${common} -DDSV4_CACHE_BUILD_TESTS=OFF
    -DDSV4_CACHE_BUILD_EXAMPLES=OFF -DDSV4_CACHE_INSTALL=ON -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${WORK_DIR}/lib)
# 2. find_package from the prefix.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/packaging/consumer -B ${WORK_DIR}/fp ${common}
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/fp)
run(${WORK_DIR}/fp/consumer)
# 3. add_subdirectory and FetchContent of the source tree.
foreach(mode add_subdirectory FetchContent)
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/packaging/consumer -B ${WORK_DIR}/${mode} ${common}
      -DCONSUME_WITH=${mode} -DDSV4_SOURCE_DIR=${SOURCE_DIR})
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/${mode})
  run(${WORK_DIR}/${mode}/consumer)
endforeach()
message(STATUS "find_package, add_subdirectory and FetchContent consumers built and ran")
