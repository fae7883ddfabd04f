# fc_fi_apply_patch(<header text> <patch file> <out var> <status var>): FlashInfer's header with
# one patch of <family>/patches/ applied. A patch file sets
#   FC_PATCH_MUTANT   the mutant id: a catalogue id (protocol/mutants.hpp), or the family's own,
#                     then with FC_PATCH_WHAT and FC_PATCH_REAL_WORLD (patch_list.cmake)
#   FC_PATCH_WHERE    the lines it changes, in the pinned release
#   FC_PATCH_OLD, FC_PATCH_NEW              the first edit
#   FC_PATCH_OLD_2, FC_PATCH_NEW_2 (... _4) further edits, where one change spans places
# and optionally FC_PATCH_HEADER (default trtllm_allreduce_fusion.cuh). Every OLD text must
# occur exactly once in the header. <status var> is "" when the patch applies, else one line
# saying which edit does not apply and why; the caller decides whether that stops the
# configuration (the pinned release) or only skips the patch (any other tree).
# Script mode, for the tests: cmake -DHEADER=... -DPATCH=... [-DOUT=...] -P apply_patch.cmake
set(FC_FI_PATCH_MAX_EDITS 4)

function(fc_fi_count_occurrences text needle out_var)
  set(count 0)
  string(FIND "${text}" "${needle}" first)
  if(NOT first EQUAL -1)
    set(count 1)
    string(LENGTH "${needle}" length)
    math(EXPR after "${first} + ${length}")
    string(SUBSTRING "${text}" ${after} -1 rest)
    string(FIND "${rest}" "${needle}" second)
    if(NOT second EQUAL -1)
      set(count 2)
    endif()
  endif()
  set(${out_var} ${count} PARENT_SCOPE)
endfunction()

function(fc_fi_apply_patch text patch out_var status_var)
  foreach(suffix "" _2 _3 _4)
    unset(FC_PATCH_OLD${suffix})
    unset(FC_PATCH_NEW${suffix})
  endforeach()
  unset(FC_PATCH_MUTANT)
  unset(FC_PATCH_HEADER)
  include(${patch})
  if(NOT FC_PATCH_HEADER)
    set(FC_PATCH_HEADER trtllm_allreduce_fusion.cuh)
  endif()
  set(patched "${text}")
  set(status "")
  set(edit 0)
  foreach(suffix "" _2 _3 _4)
    if(NOT DEFINED FC_PATCH_OLD${suffix})
      break()
    endif()
    math(EXPR edit "${edit} + 1")
    # Counted in the original text: a later edit may not match what an earlier one wrote.
    fc_fi_count_occurrences("${text}" "${FC_PATCH_OLD${suffix}}" count)
    if(NOT count EQUAL 1)
      set(status "edit ${edit} (at ${FC_PATCH_WHERE}) occurs ${count} times in ${FC_PATCH_HEADER} (must be once)")
      break()
    endif()
    string(REPLACE "${FC_PATCH_OLD${suffix}}" "${FC_PATCH_NEW${suffix}}" patched "${patched}")
  endforeach()
  if(edit EQUAL 0 AND status STREQUAL "")
    set(status "the patch file sets no FC_PATCH_OLD")
  endif()
  set(${out_var} "${patched}" PARENT_SCOPE)
  set(${status_var} "${status}" PARENT_SCOPE)
  set(FC_PATCH_MUTANT "${FC_PATCH_MUTANT}" PARENT_SCOPE)
  set(FC_PATCH_HEADER "${FC_PATCH_HEADER}" PARENT_SCOPE)
endfunction()

# fc_fi_patch_for_tree(<header text> <patch file> <pinned> <out var> <skipped var>): the patch
# applied, or, where it does not apply: for the pinned release (<pinned> true) the
# configuration stops naming the patch; for any other tree one line says it is skipped and
# <skipped var> holds why ("" when it applied).
function(fc_fi_patch_for_tree text patch pinned out_var skipped_var)
  fc_fi_apply_patch("${text}" ${patch} patched status)
  get_filename_component(patch_name ${patch} NAME)
  if(NOT status STREQUAL "" AND pinned)
    message(FATAL_ERROR "FlashInfer patch ${patch_name} (${FC_PATCH_MUTANT}) does not apply to the pinned release: "
      "${status}. Update the patch, or configure with -DFUSIONCHECK_FLASHINFER_PATCHES=OFF.")
  endif()
  if(NOT status STREQUAL "")
    message(STATUS "fusioncheck: FlashInfer patch ${patch_name} (${FC_PATCH_MUTANT}) skipped for this tree: ${status}")
  endif()
  set(${out_var} "${patched}" PARENT_SCOPE)
  set(${skipped_var} "${status}" PARENT_SCOPE)
  set(FC_PATCH_MUTANT "${FC_PATCH_MUTANT}" PARENT_SCOPE)
endfunction()

# Script mode: PINNED=ON (default) as for the pinned release, OFF as for any other tree.
if(CMAKE_SCRIPT_MODE_FILE AND DEFINED HEADER AND DEFINED PATCH)
  if(NOT DEFINED PINNED)
    set(PINNED ON)
  endif()
  file(READ "${HEADER}" header_text)
  fc_fi_patch_for_tree("${header_text}" "${PATCH}" ${PINNED} patched skipped)
  if(skipped STREQUAL "")
    if(DEFINED OUT)
      file(WRITE "${OUT}" "${patched}")
    endif()
    message(STATUS "patch ${FC_PATCH_MUTANT} applies once")
  endif()
endif()
