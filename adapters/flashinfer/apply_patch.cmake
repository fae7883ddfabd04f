# fc_fi_apply_patch(<header text> <patch file> <out var>): FlashInfer's header with one patch of
# patches/ applied. A patch file sets FC_PATCH_MUTANT (the catalogue id), FC_PATCH_WHERE (the
# lines it changes), FC_PATCH_OLD and FC_PATCH_NEW; OLD must occur exactly once in the
# header, else this stops with an error naming the patch (a newer FlashInfer that moved the
# code fails loudly instead of yielding an unpatched "mutant").
# Script mode, for the tests: cmake -DHEADER=... -DPATCH=... [-DOUT=...] -P apply_patch.cmake
function(fc_fi_apply_patch text patch out_var)
  include(${patch})
  string(FIND "${text}" "${FC_PATCH_OLD}" first)
  set(count 0)
  if(NOT first EQUAL -1)
    string(LENGTH "${FC_PATCH_OLD}" old_length)
    math(EXPR after "${first} + ${old_length}")
    string(SUBSTRING "${text}" ${after} -1 rest)
    string(FIND "${rest}" "${FC_PATCH_OLD}" second)
    set(count 1)
    if(NOT second EQUAL -1)
      set(count 2)
    endif()
  endif()
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "FlashInfer patch ${patch} (${FC_PATCH_MUTANT}) does not apply: the text it replaces, at "
      "${FC_PATCH_WHERE}, occurs ${count} times in the header (must be once). Update the patch for this FlashInfer, "
      "or configure with -DFUSIONCHECK_FLASHINFER_PATCHES=OFF.")
  endif()
  string(REPLACE "${FC_PATCH_OLD}" "${FC_PATCH_NEW}" patched "${text}")
  set(${out_var} "${patched}" PARENT_SCOPE)
  set(FC_PATCH_MUTANT "${FC_PATCH_MUTANT}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED HEADER AND DEFINED PATCH)
  file(READ "${HEADER}" header_text)
  fc_fi_apply_patch("${header_text}" "${PATCH}" patched)
  if(DEFINED OUT)
    file(WRITE "${OUT}" "${patched}")
  endif()
  message(STATUS "patch ${FC_PATCH_MUTANT} applies once")
endif()
