#!/usr/bin/env bash
# Development run on the H200 test machine (one GPU): build the GPU targets for sm_90, then
# the steps named in STEPS (default: all), ranks sharing the GPU under MPS. Logs in $OUT.
#   gtest  in-process kernel tests        smoke  `fusioncheck gpu smoke` on RANKS ranks
#   check  property suite, CASES cases     kill   mutant kill table, KILL_CASES cases each
#   bench  latency table                   kill9  a rank killed mid-run must be diagnosed
set -uo pipefail
cd "$(dirname "$0")/.."
source ci/h200_deps.sh
OUT=${OUT:-out}; mkdir -p "$OUT"
STEPS=${STEPS:-gtest smoke check kill bench}
cmake --preset h200 >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 2; }
cmake --build build/h200 --target fusioncheck test_kernels_gpu bench_kernels -j "$(nproc)" >"$OUT/build.log" 2>&1 \
  || { grep -E 'error' -A5 "$OUT/build.log" | head -60; exit 2; }
echo "== build ok"
FC=build/h200/mpi_launch/fusioncheck
has() { [[ " $STEPS " == *" $1 "* ]]; }
if has gtest; then
  timeout "${GTEST_S:-150}" build/h200/property_tests/kernels/test_kernels_gpu >"$OUT/gtest.log" 2>&1; echo "gtest rc=$?"
  grep -E '^\[  (FAILED|PASSED) |Failure' -A3 "$OUT/gtest.log" | head -40
fi
export CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps CUDA_MPS_LOG_DIRECTORY=/tmp/nvidia-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
[ "${MPS:-1}" = 1 ] && nvidia-cuda-mps-control -d && echo "== MPS started"
for n in ${RANKS:-2}; do
  M="mpirun -np $n --oversubscribe --bind-to none -x CUDA_MPS_PIPE_DIRECTORY -x NCCL_NVLS_ENABLE"
  if has smoke; then
    timeout "${SMOKE_S:-120}" $M $FC gpu smoke --json "$OUT/smoke-$n.json" >"$OUT/smoke-$n.log" 2>&1; echo "smoke $n rc=$?"
    grep -v '^FAIL' "$OUT/smoke-$n.log" | grep fusioncheck | tail -3; grep '^FAIL' "$OUT/smoke-$n.log" | head -10
  fi
  if has check; then
    timeout "${CHECK_S:-120}" $M $FC gpu check --cases "${CASES:-1000}" --json "$OUT/check-$n.json" >"$OUT/check-$n.log" 2>&1
    echo "check $n rc=$?"; grep -v "^---\|^$" "$OUT/check-$n.log" | tail -12
  fi
  if has kill; then
    timeout "${KILL_S:-240}" $M $FC gpu kill-table --cases "${KILL_CASES:-200}" --out "$OUT/kill-$n.md" >"$OUT/kill-$n.log" 2>&1
    echo "kill $n rc=$?"; cat "$OUT/kill-$n.md" 2>/dev/null || tail -20 "$OUT/kill-$n.log"
  fi
  if has bench; then
    timeout "${BENCH_S:-120}" $M $FC gpu bench --json "$OUT/bench-$n.json" >"$OUT/bench-$n.log" 2>&1; echo "bench $n rc=$?"
    tail -28 "$OUT/bench-$n.log"
  fi
  if has kill9; then  # --enable-recovery: survivors keep running, so they must notice themselves
    (timeout 90 $M --enable-recovery $FC gpu --timeout 15 check --cases 100000 >"$OUT/kill9-$n.log" 2>&1; echo "rc=$?" >>"$OUT/kill9-$n.log") &
    sleep 12; victim=$(pgrep -f "fusioncheck gpu --timeout 15" | tail -1); start=$(date +%s)
    kill -9 "$victim"; wait; echo "kill9 $n: killed pid $victim, job ended after $(( $(date +%s) - start )) s"
    grep -E "vanished|waited|rc=|terminated" "$OUT/kill9-$n.log" | head -6
    pgrep -f "fusioncheck gpu" && echo "LEFT BEHIND" || echo "no fusioncheck process left"
  fi
done
[ "${MPS:-1}" = 1 ] && echo quit | nvidia-cuda-mps-control
exit 0
