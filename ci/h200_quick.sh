#!/usr/bin/env bash
# Development run on the H200 test machine: build the GPU targets for sm_90, run the
# in-process kernel tests, then the MPI smoke run, a short property run and the latency
# benchmark with 2 ranks sharing the GPU under MPS. Logs in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
source ci/h200_deps.sh
OUT=${OUT:-out}; mkdir -p "$OUT"
cmake --preset h200 >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 2; }
cmake --build build/h200 --target fusioncheck test_kernels_gpu bench_kernels -j "$(nproc)" >"$OUT/build.log" 2>&1 \
  || { grep -E 'error' -A5 "$OUT/build.log" | head -60; exit 2; }
echo "== build ok"
FC=build/h200/mpi_launch/fusioncheck
timeout "${GTEST_S:-150}" build/h200/property_tests/kernels/test_kernels_gpu >"$OUT/gtest.log" 2>&1; echo "gtest rc=$?"
grep -E '^\[  (FAILED|PASSED|SKIPPED) |OK \]|Failure|expected|hang' "$OUT/gtest.log" | head -70
export CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps CUDA_MPS_LOG_DIRECTORY=/tmp/nvidia-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "== MPS started"
M="mpirun -np ${RANKS:-2} --oversubscribe --bind-to none -x CUDA_MPS_PIPE_DIRECTORY -x NCCL_NVLS_ENABLE"
timeout "${SMOKE_S:-120}" $M $FC gpu smoke --json "$OUT/smoke.json" >"$OUT/smoke.log" 2>&1; echo "smoke rc=$?"
grep -v '^FAIL' "$OUT/smoke.log" | tail -8; grep '^FAIL' "$OUT/smoke.log" | head -25
timeout "${CHECK_S:-60}" $M $FC gpu check --cases "${CASES:-300}" --json "$OUT/check.json" >"$OUT/check.log" 2>&1; echo "check rc=$?"
tail -15 "$OUT/check.log"
timeout "${BENCH_S:-120}" $M $FC gpu bench --json "$OUT/bench.json" >"$OUT/bench.log" 2>&1; echo "bench rc=$?"
cat "$OUT/bench.log" | tail -32
echo quit | nvidia-cuda-mps-control
