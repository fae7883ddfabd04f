#!/usr/bin/env bash
# README command 2: build (if needed) and run the test suite: every test that needs no GPU
# runs; GPU tests report as skipped where no GPU is present. Then the CPU tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer. JUnit XML lands in build/*/junit.xml.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
jobs=$(nproc)
bash ci/check_format.sh  # the sources follow .clang-format
# The adapter is built against the pinned FlashInfer and one older release (its compile probes
# find what that release lacks): --kernel flashinfer@<release>. The CUDA code is compiled for
# sm_90 and the FlashInfer instances for 2 ranks alone here: the CPU tests only build and load
# them; the audit tests read the sm_100 and sm_120 code of fixtures built for those
# architectures and of the pdl-wait-missing copy, which every build compiles for sm_120. The
# other patched copies of the fusion and MoE headers are applied (configuration fails if one
# stops applying) but not compiled: they are the GPU kill table's. The PCIe and MoE kernels'
# instances are also compiled (not linked) for sm_100 and sm_120.
cmake --preset default -DFUSIONCHECK_FLASHINFER_RELEASES="$(tr -d '[:space:]' <ci/old_flashinfer_release)" \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DFUSIONCHECK_FLASHINFER_RANKS=2 \
  -DFUSIONCHECK_FLASHINFER_COPIES=OFF -DFUSIONCHECK_FLASHINFER_ARCH_CHECK="100;120" >/dev/null
cmake --build --preset default -j "$jobs"
ctest --preset default -j "$jobs"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --preset asan -j "$jobs"
