# Install and export: `find_package(fusioncheck)` gives fusioncheck::protocol,
# fusioncheck::reference, fusioncheck::kernels_host and, where CUDA was found,
# fusioncheck::kernels, fusioncheck::mpi, fusioncheck::gpu and fusioncheck::gpu_main (the gpu
# command line over a kernel registry, cli/include/.../gpu_main.hpp, with the FlashInfer adapter
# its built-in kernels need); plus the fusioncheck binary.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_fc_exported fusioncheck_protocol fusioncheck_reference fusioncheck_kernels_host)
foreach(_t fusioncheck_nccl fusioncheck_kernels fusioncheck_mpi fusioncheck_gpu fusioncheck_adapter_flashinfer
        fusioncheck_adapter_sglang fusioncheck_gpu_main)
  if(TARGET ${_t} AND (NOT _t STREQUAL "fusioncheck_mpi" OR TARGET fusioncheck_gpu))
    list(APPEND _fc_exported ${_t})
  endif()
endforeach()
foreach(_t IN LISTS _fc_exported)
  string(REPLACE "fusioncheck_" "" _name ${_t})
  set_target_properties(${_t} PROPERTIES EXPORT_NAME ${_name})
  target_include_directories(${_t} INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endforeach()

install(TARGETS ${_fc_exported} EXPORT fusioncheckTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS fusioncheck RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The installed binary finds the FlashInfer instance libraries beside it (lib/) and the CUDA
# runtime where it was linked from.
set_target_properties(fusioncheck PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
  INSTALL_RPATH_USE_LINK_PATH TRUE)
get_property(_fc_fi_libs GLOBAL PROPERTY FUSIONCHECK_FLASHINFER_LIBRARIES)
get_property(_fc_sg_libs GLOBAL PROPERTY FUSIONCHECK_SGLANG_LIBRARIES)
list(APPEND _fc_fi_libs ${_fc_sg_libs})
if(_fc_fi_libs)
  # Exported too: the adapters (linked by fusioncheck::gpu_main) link them.
  install(TARGETS ${_fc_fi_libs} EXPORT fusioncheckTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(DIRECTORY protocol/include/ reference/include/ kernels/include/ mpi_launch/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET fusioncheck_adapter_flashinfer)
  install(DIRECTORY adapters/flashinfer/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
if(TARGET fusioncheck_adapter_sglang)
  install(DIRECTORY adapters/sglang/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
install(EXPORT fusioncheckTargets NAMESPACE fusioncheck::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fusioncheck)
configure_package_config_file(cmake/fusioncheckConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/fusioncheckConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fusioncheck)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/fusioncheckConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/fusioncheckConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/fusioncheckConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fusioncheck)
