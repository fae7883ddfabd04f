# cmake -DPROGRAM=<binary> -DARGS=<list> -DEXPECT=<exit code> -P expect_exit.cmake
# Runs the binary, prints what it wrote (for the test's pass regex) and fails unless it exited
# with EXPECT; a bad-input exit must say why in one line on stderr.
execute_process(COMMAND ${PROGRAM} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc STREQUAL "${EXPECT}")
  message(FATAL_ERROR "${PROGRAM} ${ARGS}: exit ${rc}, expected ${EXPECT}")
endif()
if(EXPECT STREQUAL "2")
  string(STRIP "${err}" line)
  if(line STREQUAL "" OR line MATCHES "\n")
    message(FATAL_ERROR "bad input must be one line on stderr, got: '${err}'")
  endif()
endif()
