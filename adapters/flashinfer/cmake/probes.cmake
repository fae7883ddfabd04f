# What a FlashInfer include tree's fusion header offers the adapter, found by compiling small
# probes (probes/*.cu) against it, never from its version number:
#   fc_fi_probe_tree(<include dir> <prefix>) sets in the caller
#     <prefix>_REASON        "" when the adapter can drive the tree, else one line why not
#     <prefix>_WEIGHT_BIAS   ON/OFF: AllReduceFusionParams::weight_bias (Gemma-style RMSNorm)
#     <prefix>_DYNAMIC_FP8   ON/OFF: kARResidualRMSNormOutDynamicFP8Quant (pattern 11)
#     <prefix>_BLOCK_SCALED_FP8  ON/OFF: the MXFP8 and per-token-group FP8 patterns (8, 9, 13,
#                            14) with block_quant_group_size and tma_aligned_mn
#     <prefix>_DEFINITIONS   the compile definitions an instance of this tree gets
# The results are cached per tree (try_compile's result variables), so a reconfigure does not
# compile them again. All probes compile in one translation unit first; only when that fails
# does each run alone (old trees), so a current tree costs one compile.
set(FC_FI_PROBE_DIR ${CMAKE_CURRENT_LIST_DIR}/probes)

function(fc_fi_try_probe include_dir source out_var)
  string(MD5 tree_key "${include_dir}")
  get_filename_component(name ${source} NAME_WE)
  set(var FC_FI_PROBE_${tree_key}_${name})
  # The first architecture of the build is enough: the probes instantiate no kernel.
  list(GET CMAKE_CUDA_ARCHITECTURES 0 arch)
  string(REGEX MATCH "^[0-9]+" arch "${arch}")
  set(CMAKE_CUDA_ARCHITECTURES ${arch})  # try_compile passes the caller's list on otherwise
  try_compile(${var} ${CMAKE_BINARY_DIR}/fc_fi_probes/${tree_key}/${name}
    SOURCES ${FC_FI_PROBE_DIR}/${source} ${FC_FI_PROBE_DIR}/main.cu
    CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${include_dir};${FC_FI_PROBE_DIR};${FUSIONCHECK_SPDLOG_INCLUDE}"
    COMPILE_DEFINITIONS --expt-relaxed-constexpr -w  # nvcc flags: every source is CUDA
    CUDA_STANDARD 17
    OUTPUT_VARIABLE log)
  if(NOT ${var})
    string(REGEX MATCH "error[^\n]*" first_error "${log}")
    set(FC_FI_PROBE_ERROR "${first_error}" PARENT_SCOPE)
  endif()
  set(${out_var} ${${var}} PARENT_SCOPE)
endfunction()

function(fc_fi_probe_tree include_dir prefix)
  set(header "${include_dir}/flashinfer/comm/trtllm_allreduce_fusion.cuh")
  set(reason "")
  set(weight_bias OFF)
  set(dynamic_fp8 OFF)
  set(block_scaled_fp8 OFF)
  if(NOT EXISTS "${header}")
    set(reason "no flashinfer/comm/trtllm_allreduce_fusion.cuh under ${include_dir}")
  else()
    fc_fi_try_probe("${include_dir}" all.cu all)
    if(all)
      set(weight_bias ON)
      set(dynamic_fp8 ON)
      set(block_scaled_fp8 ON)
    else()
      fc_fi_try_probe("${include_dir}" launcher.cu launcher)
      if(NOT launcher)
        set(reason "its launcher or parameter struct is not the one the adapter calls (probes/launcher.cu: ${FC_FI_PROBE_ERROR})")
      else()
        fc_fi_try_probe("${include_dir}" params_weight_bias.cu weight_bias)
        fc_fi_try_probe("${include_dir}" pattern_dynamic_fp8.cu dynamic_fp8)
        fc_fi_try_probe("${include_dir}" pattern_block_scaled_fp8.cu block_scaled_fp8)
      endif()
    endif()
  endif()
  set(definitions "")
  foreach(feature weight_bias dynamic_fp8 block_scaled_fp8)
    string(TOUPPER ${feature} upper)
    if(${feature})
      set(${feature} ON)
      list(APPEND definitions FI_HAS_${upper}=1)
    else()
      set(${feature} OFF)
      list(APPEND definitions FI_HAS_${upper}=0)
    endif()
    set(${prefix}_${upper} ${${feature}} PARENT_SCOPE)
  endforeach()
  set(${prefix}_REASON "${reason}" PARENT_SCOPE)
  set(${prefix}_DEFINITIONS "${definitions}" PARENT_SCOPE)
endfunction()
