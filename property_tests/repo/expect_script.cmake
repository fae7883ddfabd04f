# Runs one of the repository checkers and checks its verdict.
#   -DPYTHON= -DSCRIPT= -DROOT= [-DARGS=a;b] -DEXPECT_RC=0|1 [-DEXPECT_OUTPUT=line;line] [-DEXPECT_COUNT=N]
# EXPECT_OUTPUT: substrings that must each be on stdout; EXPECT_COUNT: how many problem lines
# (stdout lines other than the summary) there must be.
execute_process(COMMAND ${PYTHON} ${SCRIPT} ${ROOT} ${ARGS}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit ${rc}, expected ${EXPECT_RC}\nstdout:\n${out}\nstderr:\n${err}")
endif()
foreach(want IN LISTS EXPECT_OUTPUT)
  string(FIND "${out}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "stdout lacks '${want}'\nstdout:\n${out}")
  endif()
endforeach()
if(DEFINED EXPECT_COUNT)
  string(REGEX MATCHALL "[^\n]+" lines "${out}")
  list(LENGTH lines n)
  math(EXPR n "${n} - 1")
  if(NOT n EQUAL EXPECT_COUNT)
    message(FATAL_ERROR "${n} problem lines, expected ${EXPECT_COUNT}\nstdout:\n${out}")
  endif()
endif()
message(STATUS "${out}")
