# Installs the build tree into a scratch prefix, then configures, builds and runs the
# out-of-tree consumer against it. Fails on any step.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix
  RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc) 
  message(FATAL_ERROR "install failed: ${rc}")
endif()
# The installed binary runs on its own (its shared libraries found through its RPATH), from an
# environment with nothing but /usr/bin:/bin on PATH: --version, the catalogue, a short sim
# search, and the audit of an installed kernel library where the build has one.
set(clean_env ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH --unset=CUOBJDUMP PATH=/usr/bin:/bin)
file(MAKE_DIRECTORY ${WORK}/sim-out)
set(runs "--version" "mutants" "sim --profile sm90-nvlink --tiny --budget 200 --out ${WORK}/sim-out")
file(GLOB installed_kernels ${WORK}/prefix/lib/libfc_flashinfer_legacy.so)
if(installed_kernels)
  list(APPEND runs "audit ${installed_kernels}")
endif()
foreach(args IN LISTS runs)
  separate_arguments(argv UNIX_COMMAND "${args}")
  execute_process(COMMAND ${clean_env} ${WORK}/prefix/bin/fusioncheck ${argv} RESULT_VARIABLE rc
    OUTPUT_VARIABLE out ERROR_VARIABLE err)
  # The audit exits 1 on findings; anything else but 0 is a failure to run.
  if(NOT (rc EQUAL 0 OR (args MATCHES "^audit" AND rc EQUAL 1)) OR out STREQUAL "")
    message(FATAL_ERROR "installed fusioncheck ${args} failed (${rc}): ${err}")
  endif()
  message("installed fusioncheck ${args}: exit ${rc}")
endforeach()
# CUDA for the example kernel, as the main build had it (CUDA_ARCHITECTURES: ',' for ';').
set(cuda_args)
if(CUDA_COMPILER)
  string(REPLACE "," ";" archs "${CUDA_ARCHITECTURES}")
  list(APPEND cuda_args "-DCMAKE_CUDA_COMPILER=${CUDA_COMPILER}" "-DCMAKE_CUDA_ARCHITECTURES=${archs}")
  if(CUDA_LAUNCHER)
    list(APPEND cuda_args "-DCMAKE_CUDA_COMPILER_LAUNCHER=${CUDA_LAUNCHER}")
  endif()
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/build -G Ninja
  -DCMAKE_PREFIX_PATH=${WORK}/prefix -DCMAKE_BUILD_TYPE=Release ${cuda_args} RESULT_VARIABLE rc
  OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "consumer configure failed:\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/build RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "consumer build failed:\n${out}\n${err}")
endif()
execute_process(COMMAND ${WORK}/build/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message("${out}")
if(rc)
  message(FATAL_ERROR "consumer failed: ${rc}")
endif()
# The gpu command line, where the install has it (a CUDA build).
if(EXISTS ${WORK}/build/consumer_gpu_main)
  execute_process(COMMAND ${WORK}/build/consumer_gpu_main RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}")
  if(rc OR NOT out MATCHES "consumer-gpu-main: ok")
    message(FATAL_ERROR "consumer_gpu_main failed (${rc}): ${err}")
  endif()
endif()
# The example kernel's binary, built from examples/my_kernel against the package, starts and
# lists its kernel (CPU: help and the registry need neither MPI nor a GPU).
if(EXAMPLE)
  foreach(args "--help" "kernels")
    execute_process(COMMAND ${WORK}/build/bin/my_kernel_check ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out
      ERROR_VARIABLE err)
    if(rc OR NOT out MATCHES "my-kernel")
      message(FATAL_ERROR "my_kernel_check failed: ${args} exited ${rc}: ${out}${err}")
    endif()
  endforeach()
  message("my_kernel_check: ok")
endif()
