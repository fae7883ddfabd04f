#!/usr/bin/env bash
# On the H200 test machine: build for sm_90, run the in-process GPU tests, then the 2-rank
# MPI smoke run and the latency benchmark with two processes sharing the GPU under MPS.
# Logs land in ${OUT:-out}/.
set -uo pipefail
cd "$(dirname "$0")/.."
source ci/h200_deps.sh
OUT=${OUT:-out}; mkdir -p "$OUT"
ranks=${RANKS:-2}
cmake --preset h200 >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 2; }
cmake --build --preset h200 -j "$(nproc)" >"$OUT/build.log" 2>&1 || { grep -E 'error' -A5 "$OUT/build.log" | head -60; exit 2; }
echo "== build ok"
FC=build/h200/mpi_launch/fusioncheck
status=0
if [ "${SKIP_GTEST:-0}" != 1 ]; then
  ctest --test-dir build/h200 -L gpu --output-on-failure --timeout 300 >"$OUT/ctest_gpu.log" 2>&1 || status=1
  grep -E 'tests passed|tests failed|Failed|\*\*\*' "$OUT/ctest_gpu.log" | head -30
fi
# MPS lets the ranks sharing the GPU run concurrently; without it they are time-sliced.
export CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps CUDA_MPS_LOG_DIRECTORY=/tmp/nvidia-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "== MPS started"
MPIRUN="mpirun -np $ranks --oversubscribe --bind-to none"
timeout 400 $MPIRUN $FC gpu smoke --json "$OUT/smoke.json" ${SMOKE_ARGS:-} 2>&1 | tee "$OUT/smoke.log" | tail -40
[ "${PIPESTATUS[0]}" = 0 ] || status=1
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  timeout 300 $MPIRUN $FC gpu bench --json "$OUT/bench.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
echo quit | nvidia-cuda-mps-control
exit $status
