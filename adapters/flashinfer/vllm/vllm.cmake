# FlashInfer's copy of vLLM's custom allreduce (flashinfer/comm/vllm_custom_all_reduce.cuh, the
# same headers), included by CMakeLists.txt: one library per copy of the header, each the only
# translation unit that includes it (hidden visibility keeps the copies apart in one process);
# each instantiates both kernels for bf16 and fp16 at 2, 4, 6 and 8 ranks. The original and its
# sync-delay copy are built in every configuration; the copies patched by vllm/patches/
# (negative controls, applied like fusion/patches/, then given the hooks) where the kill table runs
# (FUSIONCHECK_FLASHINFER_COPIES). A tree without the
# header has no flashinfer-vllm kernel.
set(_fi_vllm_header "${_fi_include}/flashinfer/comm/vllm_custom_all_reduce.cuh")
set(_fi_vllm_declarations "")
set(_fi_vllm_table "")
function(fc_fi_vllm_instance name mutant header sync_lines)
  set(FI_VLLM_INSTANCE "${name}")
  set(FI_VLLM_HEADER "${header}")
  set(FI_VLLM_NOTE "${mutant}")
  set(FI_VLLM_ENTRY "fc_fi_vllm_api_${name}")
  set(cu ${CMAKE_CURRENT_BINARY_DIR}/instances/vllm_${name}.cu)
  configure_file(${CMAKE_CURRENT_SOURCE_DIR}/vllm/fi_vllm_instance.cu.in ${cu} @ONLY)
  set(target fc_flashinfer_vllm_${name})
  fc_fi_instance_library(${target} ${cu})
  target_include_directories(${target} PRIVATE ${_fi_src_dirs})
  if(mutant STREQUAL "none")
    fc_fi_arch_check(${target} ${cu})
  endif()
  list(LENGTH sync_lines site_count)
  set(sites_comma "")
  if(site_count GREATER 0)
    set(sites_comma ", ")
  endif()
  string(REPLACE ";" ", " sites "${sync_lines}")
  set(sites_name "kVllmSyncSites_${name}")
  set(_fi_vllm_declarations "${_fi_vllm_declarations}extern \"C\" void ${FI_VLLM_ENTRY}(VllmApi*);
inline constexpr int ${sites_name}[] = {${sites}${sites_comma}0};  // 0: the end
" PARENT_SCOPE)
  set(_fi_vllm_table "${_fi_vllm_table}    {\"${mutant}\", &${FI_VLLM_ENTRY}, ${sites_name}, ${site_count}},\n" PARENT_SCOPE)
endfunction()
set(_fi_vllm_not_built "")
if(EXISTS "${_fi_vllm_header}")
  fc_fi_vllm_instance(none none "${_fi_vllm_header}" "")
  # The sync-delay copy (sync_delay.cmake): the cases with delays hold a block at a barrier
  # exit inside the kernel.
  file(READ "${_fi_vllm_header}" _fi_vllm_text)
  fc_fi_sync_delay_copy("${_fi_vllm_text}" _fi_vllm_sync_text _fi_vllm_sync_lines)
  set(_fi_vllm_sync_copy ${CMAKE_CURRENT_BINARY_DIR}/sync_delay/vllm_custom_all_reduce.cuh)
  fc_fi_write_if_changed(${_fi_vllm_sync_copy} "${_fi_vllm_sync_text}")
  if(_fi_vllm_sync_lines)
    fc_fi_vllm_instance(sync none "${_fi_vllm_sync_copy}" "${_fi_vllm_sync_lines}")
  endif()
  if(FUSIONCHECK_FLASHINFER_PATCHES)
    fc_fi_patched_copies("${_fi_vllm_header}" vllm/patches _names _mutants _copies _fi_vllm_not_built)
    foreach(name mutant copy IN ZIP_LISTS _names _mutants _copies)
      if(FUSIONCHECK_FLASHINFER_COPIES)  # the patch as written against the header, then the hooks
        fc_fi_sync_delay_file("${copy}" hooked lines)
        fc_fi_vllm_instance(${name} ${mutant} "${hooked}" "${lines}")
      else()
        fc_fi_copy_not_compiled("${mutant}" _fi_vllm_not_built)
      endif()
    endforeach()
  endif()
else()
  message(STATUS "fusioncheck: FlashInfer tree has no vllm_custom_all_reduce.cuh: no flashinfer-vllm kernel")
endif()
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/vllm/fi_vllm_instances.hpp.in
  ${CMAKE_CURRENT_BINARY_DIR}/generated/fi_vllm_instances.hpp @ONLY)
target_sources(fusioncheck_adapter_flashinfer PRIVATE vllm/vllm_kernels.cpp vllm/vllm_workspace.cpp)
