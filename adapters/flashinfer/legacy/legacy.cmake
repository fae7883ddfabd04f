# The older Lamport kernel (flashinfer/comm/trtllm_allreduce.cuh, the same headers): one
# library of one translation unit, bf16 and fp16, 2/4/8 ranks, launcher only; hidden visibility
# as for the instances above. A tree without it has no flashinfer-legacy kernel.
set(_fi_legacy_header "${_fi_include}/flashinfer/comm/trtllm_allreduce.cuh")
if(EXISTS "${_fi_legacy_header}")
  add_library(fc_flashinfer_legacy SHARED legacy/fi_legacy_instance.cu)
  target_include_directories(fc_flashinfer_legacy PRIVATE ${_fi_include} ${FUSIONCHECK_SPDLOG_INCLUDE}
    ${_fi_src_dirs})
  target_compile_options(fc_flashinfer_legacy PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fvisibility=hidden -w>)
  set_target_properties(fc_flashinfer_legacy PROPERTIES CUDA_STANDARD 17 CUDA_RUNTIME_LIBRARY Shared
    CUDA_ARCHITECTURES "${_fi_archs}" CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden)
  target_link_libraries(fc_flashinfer_legacy PRIVATE CUDA::cudart)
  fc_fi_use_spdlog(fc_flashinfer_legacy)
  target_link_libraries(fusioncheck_adapter_flashinfer PUBLIC fc_flashinfer_legacy)
  set_property(GLOBAL APPEND PROPERTY FUSIONCHECK_FLASHINFER_LIBRARIES fc_flashinfer_legacy)
  target_sources(fusioncheck_adapter_flashinfer PRIVATE legacy/legacy_kernels.cpp)
  target_compile_definitions(fusioncheck_adapter_flashinfer PRIVATE FUSIONCHECK_HAVE_FLASHINFER_LEGACY=1)
else()
  message(STATUS "fusioncheck: FlashInfer tree has no trtllm_allreduce.cuh: no flashinfer-legacy kernel")
endif()
