# fc_fi_poll_profiled_copy(<header text> <out var> <sites var>): FlashInfer's PCIe header with
# every poll loop opening a FUSIONCHECK_POLL_TIMER (common/fi_poll_profile.cuh), on the same line
# as before, so that a site's line is the original header's. Two loop forms poll in the header:
# `while (true) {` (the sentinel and barrier polls on slot contents) and
# `while (!generation_reached(...)) {` (the block barriers). <sites var>: how many were rewritten;
# 0 when the header has neither form (a tree this rewrite does not know).
# Script mode, for the tests: cmake -DHEADER=... [-DOUT=...] -P poll_profile.cmake prints
# "poll sites: N".
function(fc_fi_poll_profiled_copy text out_var sites_var)
  set(spin_form "while \\(true\\) \\{")
  set(barrier_form "while \\(!generation_reached\\(([^;{]*)\\)\\) \\{")
  string(REGEX MATCHALL "${spin_form}" spins "${text}")
  string(REGEX MATCHALL "${barrier_form}" barriers "${text}")
  list(LENGTH spins spin_count)
  list(LENGTH barriers barrier_count)
  string(REGEX REPLACE "${spin_form}" "for (FUSIONCHECK_POLL_TIMER;;) {" text "${text}")
  string(REGEX REPLACE "${barrier_form}"
         "for (FUSIONCHECK_POLL_TIMER; !generation_reached(\\1);) {" text "${text}")
  math(EXPR sites "${spin_count} + ${barrier_count}")
  set(${out_var} "${text}" PARENT_SCOPE)
  set(${sites_var} ${sites} PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND HEADER)
  file(READ "${HEADER}" header_text)
  fc_fi_poll_profiled_copy("${header_text}" profiled sites)
  if(OUT)
    file(WRITE "${OUT}" "${profiled}")
  endif()
  message("poll sites: ${sites}")
endif()
