# Runs CMD (a ;-list) and checks how the fusioncheck binary ends. Used by the table-driven
# CLI tests (cases.txt).
#   EXPECT_RC      required exit code
#   EXPECT_STDERR  exit code not 0: regex the one stderr line must match
#   EXPECT_STDOUT  exit code 0: regex stdout must match
#   MAX_SECONDS    the run must end within this (default 15): bad input is refused before
#                  any long work, and nothing may run without end
#   STDOUT_FILE    stdout goes to this file (e.g. /dev/full) instead of being checked
#   SCRATCH        a folder made empty before the run, holding a FIFO `fifo`, a symbolic
#                  link to nothing `dangling`, and the folder $ENV{FC_MKDIR} if that is set
# An element __FC_EMPTY__ of CMD is passed as an empty argument.
# Always, with a non-zero exit code: stderr is exactly one line, starting with the prefix
# "fusioncheck: error: " once (never twice), and nothing went to stdout (refused before the
# work); EXPECT_STDERR <silent>: no output at all. With exit code 0: no flag renders as
# "--x{false}" in help.
if(NOT DEFINED MAX_SECONDS)
  set(MAX_SECONDS 15)
endif()
if(DEFINED SCRATCH)
  file(REMOVE_RECURSE "${SCRATCH}")
  file(MAKE_DIRECTORY "${SCRATCH}")
  execute_process(COMMAND mkfifo "${SCRATCH}/fifo" RESULT_VARIABLE fifo_rc)
  if(NOT fifo_rc EQUAL 0)
    message(FATAL_ERROR "mkfifo ${SCRATCH}/fifo failed: ${fifo_rc}")
  endif()
  file(CREATE_LINK "${SCRATCH}/no-such-target" "${SCRATCH}/dangling" SYMBOLIC)
  if(DEFINED ENV{FC_MKDIR})
    file(MAKE_DIRECTORY "${SCRATCH}/$ENV{FC_MKDIR}")
  endif()
endif()
# Each argument as a bracket argument: empty ones survive, nothing is expanded twice.
set(command_words "")
foreach(word IN LISTS CMD)
  if(word STREQUAL "")
    continue()  # the end of a row without arguments
  elseif(word STREQUAL "__FC_EMPTY__")
    set(word "")
  endif()
  string(APPEND command_words " [==[${word}]==]")
endforeach()
set(output_to "OUTPUT_VARIABLE out")
if(DEFINED STDOUT_FILE)
  set(output_to "OUTPUT_FILE [==[${STDOUT_FILE}]==]")
  set(out "")
endif()
cmake_language(EVAL CODE "execute_process(COMMAND ${command_words} RESULT_VARIABLE rc ${output_to}
                ERROR_VARIABLE err TIMEOUT ${MAX_SECONDS})")
list(JOIN CMD " " shown)
if(rc MATCHES "timeout")
  message(FATAL_ERROR "did not finish within ${MAX_SECONDS} s: ${shown}\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "expected exit ${EXPECT_RC}, got ${rc}: ${shown}\nstdout: ${out}\nstderr: ${err}")
endif()
if(rc EQUAL 0)
  if(DEFINED EXPECT_STDOUT AND NOT out MATCHES "${EXPECT_STDOUT}")
    message(FATAL_ERROR "stdout does not match '${EXPECT_STDOUT}':\n${out}")
  endif()
  if(out MATCHES "{(true|false)}")
    message(FATAL_ERROR "a flag renders with its value in braces:\n${out}")
  endif()
  return()
endif()
if(EXPECT_STDERR STREQUAL "<silent>")
  if(NOT err STREQUAL "" OR NOT out STREQUAL "")
    message(FATAL_ERROR "expected no output, got:\nstdout: ${out}\nstderr: ${err}")
  endif()
  message("ok: exit ${rc}, silent")
  return()
endif()
string(STRIP "${err}" err_stripped)
string(FIND "${err_stripped}" "\n" newline_at)
if(err_stripped STREQUAL "" OR NOT newline_at EQUAL -1)
  message(FATAL_ERROR "expected a one-line error, got:\n${err}")
endif()
if(NOT err_stripped MATCHES "^fusioncheck: error: " OR err_stripped MATCHES "error: fusioncheck")
  message(FATAL_ERROR "expected the prefix 'fusioncheck: error: ' exactly once, got:\n${err}")
endif()
if(DEFINED EXPECT_STDERR AND NOT err_stripped MATCHES "${EXPECT_STDERR}")
  message(FATAL_ERROR "stderr does not match '${EXPECT_STDERR}': ${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "bad input must be refused before any work, but stdout has:\n${out}")
endif()
message("ok: exit ${rc}: ${err_stripped}")
