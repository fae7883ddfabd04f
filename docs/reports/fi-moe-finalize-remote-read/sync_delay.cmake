# fc_fi_sync_delay_copy(<header text> <out var> <lines var> [<rank lines var>]): a FlashInfer
# header with a delay hook (fi_sync_delay.cuh) at each synchronisation exit inside its
# kernels, on the same line as the exit so that a site is named by the original header's line
# (after a barrier that is the body of a one-line `if`, the hook runs whatever the condition):
#   after  __syncthreads();  cluster.sync();  barrier.sync();   (a block or cluster barrier)
#          FUSIONCHECK_SYNC_DELAY(__LINE__);
#   before while (!done) {                                     (a Lamport poll on peers' slots,
#          FUSIONCHECK_SYNC_DELAY_RANK(__LINE__, params.rank);  in a kernel body: it knows its rank)
#   before while (*reinterpret_cast<int volatile*>(counter_ptr) != gridDim.x) {  (a grid counter)
# A block held there lets its siblings and its peers run ahead: the race of a slot reused
# before every reader has read it shows within one call. <lines var>: the sites' lines, a list
# (empty when the header has none of these forms: a tree this rewrite does not know);
# <rank lines var>: those of the sites that know their rank.
# Script mode, for the tests and the reproducers:
#   cmake -DHEADER=... [-DOUT=...] -P sync_delay.cmake   prints "sync delay sites: N (lines ...)"
set(FC_FI_SYNC_DELAY_HOOK "FUSIONCHECK_SYNC_DELAY(__LINE__);")
set(FC_FI_SYNC_DELAY_RANK_HOOK "FUSIONCHECK_SYNC_DELAY_RANK(__LINE__, params.rank);")

function(fc_fi_sync_delay_copy text out_var lines_var)
  set(hook "${FC_FI_SYNC_DELAY_HOOK}")
  string(REGEX REPLACE "(__syncthreads\\(\\);|cluster\\.sync\\(\\);|barrier\\.sync\\(\\);)"
         "\\1 ${hook}" text "${text}")
  string(REGEX REPLACE "(while \\(\\*reinterpret_cast<int volatile\\*>\\(counter_ptr\\) != gridDim\\.x\\) \\{)"
         "${hook} \\1" text "${text}")
  string(REGEX REPLACE "(while \\(!done\\) \\{)" "${FC_FI_SYNC_DELAY_RANK_HOOK} \\1" text "${text}")
  # The sites' lines: newlines before each hook (both start alike), counted piece by piece.
  set(lines "")
  set(rank_lines "")
  set(line 1)
  set(rest "${text}")
  set(hook "FUSIONCHECK_SYNC_DELAY")
  string(LENGTH "${hook}" hook_length)
  string(FIND "${rest}" "${hook}" at)
  while(NOT at EQUAL -1)
    string(SUBSTRING "${rest}" 0 ${at} before)
    string(REGEX MATCHALL "\n" newlines "${before}")
    list(LENGTH newlines count)
    math(EXPR line "${line} + ${count}")
    list(APPEND lines ${line})
    string(SUBSTRING "${rest}" ${at} 28 form)
    if(form STREQUAL "FUSIONCHECK_SYNC_DELAY_RANK(")
      list(APPEND rank_lines ${line})
    endif()
    math(EXPR after "${at} + ${hook_length}")
    string(SUBSTRING "${rest}" ${after} -1 rest)
    string(FIND "${rest}" "${hook}" at)
  endwhile()
  set(${out_var} "${text}" PARENT_SCOPE)
  set(${lines_var} "${lines}" PARENT_SCOPE)
  if(ARGC GREATER 3)  # the lines of the hooks that know their rank
    set(${ARGV3} "${rank_lines}" PARENT_SCOPE)
  endif()
endfunction()

# fc_fi_sync_delay_file(<copy> <out path var> <lines var> [<rank lines var>]): the sync-delay
# copy of a header copy (a patched copy, say), written beside it in sync_delay/ under the same
# name.
function(fc_fi_sync_delay_file copy path_var lines_var)
  file(READ "${copy}" text)
  fc_fi_sync_delay_copy("${text}" text lines rank_lines)
  if(ARGC GREATER 3)
    set(${ARGV3} "${rank_lines}" PARENT_SCOPE)
  endif()
  get_filename_component(dir "${copy}" DIRECTORY)
  get_filename_component(name "${copy}" NAME)
  fc_fi_write_if_changed(${dir}/sync_delay/${name} "${text}")
  set(${path_var} "${dir}/sync_delay/${name}" PARENT_SCOPE)
  set(${lines_var} "${lines}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND HEADER)
  file(READ "${HEADER}" header_text)
  fc_fi_sync_delay_copy("${header_text}" rewritten sites)
  if(OUT)
    file(WRITE "${OUT}" "${rewritten}")
  endif()
  list(LENGTH sites count)
  string(REPLACE ";" " " sites_text "${sites}")
  message("sync delay sites: ${count} (lines ${sites_text})")
endif()
