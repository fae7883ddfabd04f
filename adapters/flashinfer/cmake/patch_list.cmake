# The negative controls of FlashInfer's families, one per patch file, for the kernel registry
# (KernelFamily::mutants): written in every build, with or without FlashInfer's headers, so that
# `fusioncheck mutants` and --mutant know them everywhere. A patch file sets FC_PATCH_MUTANT; one
# whose id is not in the catalogue (protocol/mutants.hpp) also sets FC_PATCH_WHAT (what the
# broken kernel does) and FC_PATCH_REAL_WORLD (the fix or report behind it).

# fc_fi_patch_rows(<folder> <family> <out var>): one table row per patch file of <folder>.
function(fc_fi_patch_rows folder family out_var)
  set(rows "")
  file(GLOB patches ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/*.cmake)
  foreach(patch IN LISTS patches)
    unset(FC_PATCH_MUTANT)
    unset(FC_PATCH_WHAT)
    unset(FC_PATCH_REAL_WORLD)
    include(${patch})
    if(NOT FC_PATCH_MUTANT)
      message(FATAL_ERROR "fusioncheck: ${patch} sets no FC_PATCH_MUTANT")
    endif()
    string(APPEND rows "    {\"${family}\", \"${FC_PATCH_MUTANT}\", R\"fc(${FC_PATCH_WHAT})fc\",\n"
                       "     R\"fc(${FC_PATCH_REAL_WORLD})fc\"},\n")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${patch})
  endforeach()
  set(${out_var} "${rows}" PARENT_SCOPE)
endfunction()

set(_fi_patch_rows "")
foreach(pair "fusion/patches=flashinfer" "pcie/patches=flashinfer-pcie" "pcie/patches_ce=flashinfer-pcie"
             "moe/patches=flashinfer-moe" "vllm/patches=flashinfer-vllm")
  string(REPLACE "=" ";" pair "${pair}")
  list(GET pair 0 folder)
  list(GET pair 1 family)
  fc_fi_patch_rows(${folder} ${family} rows)
  string(APPEND _fi_patch_rows "${rows}")
endforeach()
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/fi_patch_list.hpp.in
  ${CMAKE_CURRENT_BINARY_DIR}/generated/fi_patch_list.hpp @ONLY)
