# FlashInfer's MoE allreduce fusion (flashinfer/comm/trtllm_moe_allreduce_fusion.cuh, the same
# headers), included by CMakeLists.txt: one library per (copy of the header, element type),
# each the only translation unit that includes its copy (the header has no include guard and
# non-inline functions; hidden visibility keeps the copies apart). The original in bf16 and
# fp16; the copies patched by moe/patches/ (negative controls, applied like fusion/patches/) in bf16.
# FlashInfer's entry points dispatch every rank count (2, 4, 8, 16) themselves. A tree without
# the header has no flashinfer-moe kernel.
set(_fi_moe_header "${_fi_include}/flashinfer/comm/trtllm_moe_allreduce_fusion.cuh")
set(_fi_moe_declarations "")
set(_fi_moe_table "")
# <sync_lines>: the sync-delay copy's sites (empty: the header as shipped); <poll_lines> those of
# them before a Lamport poll (where a rank is held before its poll).
function(fc_fi_moe_instance name mutant dtype header sync_lines poll_lines)
  set(FI_MOE_INSTANCE "${name}")
  set(FI_MOE_HEADER "${header}")
  set(FI_MOE_NOTE "${mutant}")
  set(FI_MOE_ENTRY "fc_fi_moe_launch_${name}")
  if(dtype STREQUAL "bf16")
    set(FI_MOE_IS_BF16 true)
    set(FI_MOE_TYPE __nv_bfloat16)
  else()
    set(FI_MOE_IS_BF16 false)
    set(FI_MOE_TYPE __half)
  endif()
  set(cu ${CMAKE_CURRENT_BINARY_DIR}/instances/moe_${name}.cu)
  configure_file(${CMAKE_CURRENT_SOURCE_DIR}/moe/fi_moe_instance.cu.in ${cu} @ONLY)
  set(target fc_flashinfer_moe_${name})
  fc_fi_instance_library(${target} ${cu})
  # The relative includes of a patched copy ("../exception.h") resolve through comm/.
  target_include_directories(${target} PRIVATE ${_fi_include} ${_fi_include}/flashinfer/comm
    ${FUSIONCHECK_SPDLOG_INCLUDE} ${_fi_src_dirs})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
  if(name STREQUAL "none_bf16")  # one element type: the same code paths
    fc_fi_arch_check(${target} ${cu})
  endif()
  list(LENGTH sync_lines site_count)
  string(REPLACE ";" ", " sites "${sync_lines}")
  set(sites_comma "")
  if(site_count GREATER 0)
    set(sites_comma ", ")
  endif()
  set(sites_name "kMoeSyncSites_${name}")
  set(polls_name "kMoePollSites_${name}")
  list(LENGTH poll_lines poll_count)
  string(REPLACE ";" ", " polls "${poll_lines}")
  set(polls_comma "")
  if(poll_count GREATER 0)
    set(polls_comma ", ")
  endif()
  set(_fi_moe_declarations "${_fi_moe_declarations}extern \"C\" cudaError_t ${FI_MOE_ENTRY}(const FiMoeCall&, char*, std::size_t);
extern \"C\" cudaError_t ${FI_MOE_ENTRY}_sync_delay(int, int, int, std::uint32_t, cudaStream_t);
inline constexpr int ${sites_name}[] = {${sites}${sites_comma}0};  // 0: the end
inline constexpr int ${polls_name}[] = {${polls}${polls_comma}0};
" PARENT_SCOPE)
  set(_fi_moe_table "${_fi_moe_table}    {\"${mutant}\", ${FI_MOE_IS_BF16}, &${FI_MOE_ENTRY}, ${sites_name}, ${site_count}, ${polls_name}, ${poll_count}, &${FI_MOE_ENTRY}_sync_delay},\n" PARENT_SCOPE)
endfunction()
set(_fi_moe_not_built "")
if(EXISTS "${_fi_moe_header}")
  fc_fi_moe_instance(none_bf16 none bf16 "${_fi_moe_header}" "" "")
  fc_fi_moe_instance(none_f16 none f16 "${_fi_moe_header}" "" "")
  # The sync-delay copy in bf16 in every build, so that a replay runs alike in each.
  file(READ "${_fi_moe_header}" _fi_moe_text)
  fc_fi_sync_delay_copy("${_fi_moe_text}" _fi_moe_sync_text _fi_moe_sync_lines _fi_moe_poll_lines)
  set(_fi_moe_sync_copy ${CMAKE_CURRENT_BINARY_DIR}/sync_delay/trtllm_moe_allreduce_fusion.cuh)
  fc_fi_write_if_changed(${_fi_moe_sync_copy} "${_fi_moe_sync_text}")
  if(_fi_moe_sync_lines)
    fc_fi_moe_instance(sync_bf16 none bf16 "${_fi_moe_sync_copy}" "${_fi_moe_sync_lines}"
      "${_fi_moe_poll_lines}")
  endif()
  if(FUSIONCHECK_FLASHINFER_PATCHES)
    fc_fi_patched_copies("${_fi_moe_header}" moe/patches _names _mutants _copies _fi_moe_not_built)
    foreach(name mutant copy IN ZIP_LISTS _names _mutants _copies)
      if(FUSIONCHECK_FLASHINFER_COPIES)  # the patch as written against the header, then the hooks
        fc_fi_sync_delay_file("${copy}" hooked lines poll_lines)
        fc_fi_moe_instance(${name}_bf16 ${mutant} bf16 "${hooked}" "${lines}" "${poll_lines}")
      else()
        fc_fi_copy_not_compiled("${mutant}" _fi_moe_not_built)
      endif()
    endforeach()
  endif()
else()
  message(STATUS "fusioncheck: FlashInfer tree has no trtllm_moe_allreduce_fusion.cuh: no flashinfer-moe kernel")
endif()
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/moe/fi_moe_instances.hpp.in
  ${CMAKE_CURRENT_BINARY_DIR}/generated/fi_moe_instances.hpp @ONLY)
target_sources(fusioncheck_adapter_flashinfer PRIVATE moe/moe_kernels.cpp)
