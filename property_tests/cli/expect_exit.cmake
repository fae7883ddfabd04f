# Runs CMD (a ;-list) and fails unless it exits with EXPECT_RC and its stderr is exactly one
# line containing EXPECT_STDERR. Used by the bad-input tests of every subcommand.
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "expected exit ${EXPECT_RC}, got ${rc}\nstdout: ${out}\nstderr: ${err}")
endif()
string(STRIP "${err}" err_stripped)
string(FIND "${err_stripped}" "\n" newline_at)
if(NOT newline_at EQUAL -1)
  message(FATAL_ERROR "expected a one-line error, got:\n${err}")
endif()
if(DEFINED EXPECT_STDERR AND NOT err MATCHES "${EXPECT_STDERR}")
  message(FATAL_ERROR "stderr does not match '${EXPECT_STDERR}': ${err}")
endif()
