# fusioncheck_add_gtest(NAME LABELS <labels...> SOURCES <files...> LIBS <libs...>)
# One test executable whose GoogleTest cases are registered with ctest under the given
# labels (cpu, sim, audit, gpu, mpi). A GTEST_SKIP shows as "skipped" in ctest, never "passed".
function(fusioncheck_add_gtest name)
  cmake_parse_arguments(ARG "" "" "LABELS;SOURCES;LIBS" ${ARGN})
  # A configuration that never runs GPU tests (the sanitizer one) does not build them.
  if("gpu" IN_LIST ARG_LABELS AND NOT FUSIONCHECK_BUILD_GPU_TESTS)
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  # A test program's own C++ compiles at -O0, in about half the time of -O2: the code it tests
  # is in the libraries, compiled as the build type says.
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O0>)
  # Escaped so that a list of labels stays one property value.
  string(REPLACE ";" "\\;" labels "${ARG_LABELS}")
  gtest_discover_tests(${name}
    PROPERTIES LABELS "${labels}"
    DISCOVERY_TIMEOUT 60)
endfunction()
