# Runs CMD (a ;-list, an mpirun command line) and fails unless it exits with EXPECT_RC and
# its combined output matches EXPECT_OUTPUT. For bad-input runs of `fusioncheck gpu`.
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "expected exit ${EXPECT_RC}, got ${rc}\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT_OUTPUT}")
  message(FATAL_ERROR "output does not match '${EXPECT_OUTPUT}':\n${out}${err}")
endif()
# Bad input is one line: the ranks that leave with it add none (no launcher's SIGTERM report).
if(DEFINED FORBID_OUTPUT AND "${out}${err}" MATCHES "${FORBID_OUTPUT}")
  message(FATAL_ERROR "output matches '${FORBID_OUTPUT}':\n${out}${err}")
endif()
