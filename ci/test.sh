#!/usr/bin/env bash
# README command 2: build (if needed) and run the test suite, every test that needs no GPU
# once (without a GPU, fc_configure_default builds no GPU test programs): the CPU tests under
# AddressSanitizer + UndefinedBehaviorSanitizer in the CUDA configuration without FlashInfer's
# headers (the asan preset: the sim's per-profile sweeps on one NVLink and one PCIe profile,
# the same code as the other two; the sim's mutant searches only through its command-line
# tests, one per model, which search, minimise and write the counterexample under the
# sanitizers), then in build/default every test that run does not have (FlashInfer's and
# SGLang's, the long ones, the other profiles and mutant searches), then the CPU-only
# configuration's binary with its command-line tests. JUnit XML lands in build/*/junit.xml.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
jobs=$(nproc)
bash ci/check_format.sh  # the sources follow .clang-format
# The configuration setup.sh built (ci/lib.sh fc_configure_default): nothing is rebuilt here
# after `bash ci/setup.sh`.
fc_configure_default
cmake --build --preset default -j "$jobs"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --preset asan -j "$jobs"
rest=$(fc_tests_not_in default asan)
[ -n "$rest" ] || { echo "test.sh: build/default has no test beyond the sanitizer run's" >&2; exit 1; }
ctest --preset default -j "$jobs" -I "$rest"
# The CPU-only configuration (no CUDA, as where nvcc is missing): its binary and command lines.
cmake --preset cpu-only >/dev/null
cmake --build --preset cpu-only -j "$jobs" --target fusioncheck
ctest --test-dir build/cpu-only -R '^cli\.' -j "$jobs" --output-on-failure --no-tests=error \
  --output-junit junit.xml
