# `gpu repro` (common/repro_export.cpp): the reproducer's sources built into the binary, and the
# facts of the include tree it names (where it is, the SHA-256 of the headers it exports).
set(_fi_repro_dir ${CMAKE_CURRENT_SOURCE_DIR}/repro)
set(_fi_repro_files repro_main.cu repro_run.cuh repro_types.h CMakeLists.txt.in
  CMakeLists_sync_delay.txt.in README.md.in)
foreach(file IN LISTS _fi_repro_files)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_fi_repro_dir}/${file})
  file(READ ${_fi_repro_dir}/${file} text)
  if(text MATCHES "\\)fcrepro\"")
    message(FATAL_ERROR "${_fi_repro_dir}/${file} holds the raw-string delimiter )fcrepro\"")
  endif()
  string(MAKE_C_IDENTIFIER "${file}" name)
  set(FC_REPRO_${name} "${text}")
endforeach()
# The in-kernel delay's hook and rewrite, shipped with a reproducer whose case has one.
foreach(file common/fi_sync_delay.cuh cmake/sync_delay.cmake)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${file})
  file(READ ${CMAKE_CURRENT_SOURCE_DIR}/${file} text)
  get_filename_component(name ${file} NAME)
  string(MAKE_C_IDENTIFIER "${name}" name)
  set(FC_REPRO_${name} "${text}")
endforeach()
configure_file(${_fi_repro_dir}/repro_sources.hpp.in
  ${CMAKE_CURRENT_BINARY_DIR}/generated/repro_sources.hpp @ONLY)

set(FC_FI_INCLUDE_DIR "${_fi_include}")
set(FC_FI_HEADER_SUMS "")
foreach(header trtllm_allreduce_fusion.cuh trtllm_moe_allreduce_fusion.cuh trtllm_allreduce.cuh)
  if(EXISTS "${_fi_include}/flashinfer/comm/${header}")
    file(SHA256 "${_fi_include}/flashinfer/comm/${header}" sum)
    string(APPEND FC_FI_HEADER_SUMS "    {\"flashinfer/comm/${header}\", \"${sum}\"},\n")
  endif()
endforeach()
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/common/fi_tree.hpp.in
  ${CMAKE_CURRENT_BINARY_DIR}/generated/fi_tree.hpp @ONLY)
target_sources(fusioncheck_adapter_flashinfer PRIVATE common/repro_export.cpp)
# repro_types.h: the exporter writes what the program reads by the same definitions.
set_source_files_properties(common/repro_export.cpp PROPERTIES INCLUDE_DIRECTORIES ${_fi_repro_dir})
