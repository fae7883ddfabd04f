# Runs CMD (a ;-list) and fails unless it exits with EXPECT_RC and its stdout matches every
# regex in EXPECT_STDOUT (a ;-list). For the sim CLI tests whose findings go to stdout.
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "expected exit ${EXPECT_RC}, got ${rc}\nstdout: ${out}\nstderr: ${err}")
endif()
foreach(pattern IN LISTS EXPECT_STDOUT)
  if(NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "stdout does not match '${pattern}':\n${out}")
  endif()
endforeach()
