# The functions every FlashInfer family builds its instance libraries with: architectures,
# the arch check, one instance library, the patched copies of a header.
# FlashInfer's NVFP4 conversion (cvt ... e2m1x2) exists only in the arch-specific targets of
# sm_100 and newer, which FlashInfer's own JIT compiles for: 100 -> 100a, 120 -> 120a.
function(fc_fi_archs input out)
  set(archs "")
  foreach(arch IN LISTS input)
    string(REGEX MATCH "^[0-9]+" number "${arch}")
    if(number GREATER_EQUAL 100 AND NOT arch MATCHES "[af]")
      string(REGEX REPLACE "^([0-9]+)" "\\1a" arch "${arch}")
    endif()
    list(APPEND archs "${arch}")
  endforeach()
  set(${out} "${archs}" PARENT_SCOPE)
endfunction()
# The pdl-wait-missing copy is built for every architecture of the build and sm_120: its
# defect is sm_120 code that the audit tests read.
set(_fi_pdl_archs ${CMAKE_CUDA_ARCHITECTURES})
if(NOT "120" IN_LIST _fi_pdl_archs)
  list(APPEND _fi_pdl_archs 120)
endif()
fc_fi_archs("${_fi_pdl_archs}" _fi_archs_pdl)
fc_fi_archs("${CMAKE_CUDA_ARCHITECTURES}" _fi_archs)
fc_fi_archs("${FUSIONCHECK_FLASHINFER_ARCH_CHECK}" _fi_archs_check)

# fc_fi_arch_check(<target> <source>): <source> compiled as <target> is, for the architectures
# of FUSIONCHECK_FLASHINFER_ARCH_CHECK, into objects nothing links (part of the default build).
function(fc_fi_arch_check target source)
  if(NOT _fi_archs_check)
    return()
  endif()
  add_library(${target}_arch_check OBJECT ${source})
  foreach(property INCLUDE_DIRECTORIES COMPILE_OPTIONS COMPILE_DEFINITIONS)
    set_property(TARGET ${target}_arch_check PROPERTY ${property}
      "$<TARGET_PROPERTY:${target},${property}>")
  endforeach()
  set_target_properties(${target}_arch_check PROPERTIES CUDA_STANDARD 17
    CUDA_ARCHITECTURES "${_fi_archs_check}" CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden)
  target_link_libraries(${target}_arch_check PRIVATE CUDA::cudart)
endfunction()

# A mutant id as a folder or C name ("revert-0.7.2-x" -> revert_0_7_2_x).
function(fc_fi_enum id out_var)
  string(REGEX REPLACE "[-.]" "_" enum "${id}")
  set(${out_var} "${enum}" PARENT_SCOPE)
endfunction()

# fc_fi_use_spdlog(<target>): FlashInfer's logging.h against the spdlog library where its CMake
# package is installed (Debian's libspdlog-dev), not as header-only code: the header-only
# build compiles spdlog's sources into every instance (a fifth of an instance's compile time).
# The definitions are the target's own, so that its arch-check objects copy them.
function(fc_fi_use_spdlog target)
  if(TARGET spdlog::spdlog)
    target_compile_definitions(${target} PRIVATE SPDLOG_SHARED_LIB SPDLOG_COMPILED_LIB SPDLOG_FMT_EXTERNAL)
    target_link_libraries(${target} PRIVATE spdlog::spdlog)
  endif()
endfunction()

# fc_fi_instance_library(<target> <source>): one instance library of a FlashInfer header copy:
# hidden visibility (the copies live side by side in one process), the shared CUDA runtime, this
# build's FlashInfer architectures, linked into the adapter and installed with the binary. The
# caller adds its include directories and options.
function(fc_fi_instance_library target source)
  add_library(${target} SHARED ${source})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fvisibility=hidden -w>)
  set_target_properties(${target} PROPERTIES CUDA_STANDARD 17 CUDA_RUNTIME_LIBRARY Shared
    CUDA_ARCHITECTURES "${_fi_archs}" CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden)
  target_link_libraries(${target} PRIVATE CUDA::cudart)
  fc_fi_use_spdlog(${target})
  target_link_libraries(fusioncheck_adapter_flashinfer PUBLIC ${target})
  set_property(GLOBAL APPEND PROPERTY FUSIONCHECK_FLASHINFER_LIBRARIES ${target})
endfunction()

# fc_fi_patched_copies(<header> <patch folder> <out names> <out mutants> <out copies>
#                      <out not-built>): every patch of the folder applied to the header, each
# copy written in the build tree under <folder>/<enum name>/ with the header's file name. The pinned
# release must take every patch (a patch that stopped applying fails CI); another tree skips the
# ones that do not apply, and <out not-built> holds a table row saying why for each.
function(fc_fi_patched_copies header folder out_names out_mutants out_copies out_not_built)
  set(names "")
  set(mutants "")
  set(copies "")
  set(not_built "")
  get_filename_component(header_name ${header} NAME)
  file(READ "${header}" text)
  file(GLOB patches ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/*.cmake)
  set(pinned OFF)
  if(NOT FUSIONCHECK_FLASHINFER_INCLUDE)
    set(pinned ON)
  endif()
  foreach(patch IN LISTS patches)
    fc_fi_patch_for_tree("${text}" ${patch} ${pinned} patched skipped)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${patch})
    fc_fi_enum("${FC_PATCH_MUTANT}" name)
    if(NOT skipped STREQUAL "")
      string(REPLACE "\"" "'" skipped "${skipped}")
      string(APPEND not_built "    {\"${FC_PATCH_MUTANT}\", \"${skipped}\"},\n")
      continue()
    endif()
    set(copy ${CMAKE_CURRENT_BINARY_DIR}/${folder}/${name}/${header_name})
    fc_fi_write_if_changed(${copy} "${patched}")
    list(APPEND names ${name})
    list(APPEND mutants ${FC_PATCH_MUTANT})
    list(APPEND copies ${copy})
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${header}")
  set(${out_names} "${names}" PARENT_SCOPE)
  set(${out_mutants} "${mutants}" PARENT_SCOPE)
  set(${out_copies} "${copies}" PARENT_SCOPE)
  set(${out_not_built} "${not_built}" PARENT_SCOPE)
endfunction()
