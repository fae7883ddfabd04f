#!/usr/bin/env bash
# README command 2: build (if needed) and run the test suite: every test that needs no GPU
# runs (without a GPU, fc_configure_default builds no GPU test programs). Then the CPU tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer, in the CUDA configuration without
# FlashInfer's headers (the asan preset: no GPU test programs; the sim's per-profile sweeps
# on one NVLink and one PCIe profile, the same code as the other two; the sim's mutant
# searches only through its command-line tests, one per model, which search, minimise and
# write the counterexample under the sanitizers), and the CPU-only
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
ctest --preset default -j "$jobs"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --preset asan -j "$jobs"
# The CPU-only configuration (no CUDA, as where nvcc is missing): its binary and command lines.
cmake --preset cpu-only >/dev/null
cmake --build --preset cpu-only -j "$jobs" --target fusioncheck
ctest --test-dir build/cpu-only -R '^cli\.' -j "$jobs" --output-on-failure --no-tests=error \
  --output-junit junit.xml
