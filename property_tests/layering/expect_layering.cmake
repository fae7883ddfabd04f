# Runs check_layering.cmake on a fixture tree and checks its verdict, so that a negative
# control passes only when the checker failed for the right reason (not, say, a script error).
#   -DCHECKER=<check_layering.cmake> -DROOT=<tree> -DEXPECT=PASS|FAIL
#   [-DEXPECT_VIOLATIONS=<n>]      the number of violations the checker must report
#   [-DEXPECT_OUTPUT=<s;s...>]     literal strings its output must contain (e.g. lib/foo.cpp:3:)
#   [-DCHECK_ARGS=<-Dx=y;...>]     more -D options for the checker
execute_process(
  COMMAND ${CMAKE_COMMAND} -DROOT=${ROOT} ${CHECK_ARGS} -P ${CHECKER}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
message("---- check_layering output (exit ${rc}) ----\n${all}----")

if(EXPECT STREQUAL "PASS")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "expected check_layering to pass on ${ROOT}, it exited ${rc}")
  endif()
elseif(EXPECT STREQUAL "FAIL")
  if(rc EQUAL 0)
    message(FATAL_ERROR "expected check_layering to fail on ${ROOT}, it passed")
  endif()
else()
  message(FATAL_ERROR "EXPECT must be PASS or FAIL, not '${EXPECT}'")
endif()

if(DEFINED EXPECT_VIOLATIONS)
  if(NOT all MATCHES "scanned [0-9]+ source files and [0-9]+ CMake files: ([0-9]+) violation")
    message(FATAL_ERROR "check_layering printed no summary line")
  endif()
  if(NOT CMAKE_MATCH_1 EQUAL EXPECT_VIOLATIONS)
    message(FATAL_ERROR "expected ${EXPECT_VIOLATIONS} violation(s), check_layering reported "
            "${CMAKE_MATCH_1}")
  endif()
endif()
foreach(expected IN LISTS EXPECT_OUTPUT)
  string(FIND "${all}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "check_layering output does not contain '${expected}'")
  endif()
endforeach()
message("expect_layering: ${EXPECT} as expected")
