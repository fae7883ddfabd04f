#!/usr/bin/env bash
# Development run on the H200 test machine (one GPU): build the GPU targets for sm_90, then
# the steps named in STEPS, for each rank count in RANKS, ranks sharing the GPU under MPS
# (MPS=0: time-sliced). Logs in $OUT. Every step runs under `timeout`.
#   gtest     in-process kernel tests                 smoke   `fusioncheck gpu smoke`
#   check     property suite, CASES cases (CHECK_ARGS)  kill    mutant kill table, KILL_CASES each
#   bench     latency table                             kill9   a rank killed mid-run (plain mpirun)
#   kill9r    the same with --enable-recovery (survivors must notice by themselves)
#   ncclshare `--allreduce nccl` with ranks sharing the GPU must be bad input (exit 2)
#   memcheck  compute-sanitizer memcheck on a small check run (2 ranks, no MPS needed)
set -uo pipefail
cd "$(dirname "$0")/.."
source ci/h200_deps.sh
OUT=${OUT:-out}; mkdir -p "$OUT"
STEPS=${STEPS-gtest smoke check kill bench}
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cmake --preset h200 >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 2; }
  cmake --build build/h200 --target fusioncheck kernels_gpu_test bench_kernels -j "$(nproc)" >"$OUT/build.log" 2>&1 \
    || { grep -E 'error' -A5 "$OUT/build.log" | head -60; exit 2; }
  echo "== build ok"
fi
FC=build/h200/mpi_launch/fusioncheck
has() { [[ " $STEPS " == *" $1 "* ]]; }
if has gtest; then
  timeout "${GTEST_S:-200}" build/h200/property_tests/kernels/kernels_gpu_test --gtest_filter="${GTEST_FILTER:-*}" \
    >"$OUT/gtest.log" 2>&1; echo "gtest rc=$?"
  grep -E '^\[  (FAILED|PASSED) |Failure' -A3 "$OUT/gtest.log" | head -40
fi
export CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps CUDA_MPS_LOG_DIRECTORY=/tmp/nvidia-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
# MPS_MANAGE=0: the caller started (or stopped) MPS, e.g. for several runs side by side.
if [ "${MPS_MANAGE:-1}" = 1 ]; then
  if [ "${MPS:-1}" = 1 ]; then nvidia-cuda-mps-control -d && echo "== MPS started"
  else echo quit | nvidia-cuda-mps-control 2>/dev/null; echo "== MPS off (time-sliced ranks)"; fi
fi
tag=$([ "${MPS:-1}" = 1 ] && echo mps || echo ts)

kill9_run() {  # $1: extra mpirun flags, $2: log name
  local log="$OUT/$2.log"
  (timeout 120 $M $1 $FC gpu --timeout 15 check --cases 100000 >"$log" 2>&1; echo "rc=$?" >>"$log") &
  sleep "${KILL9_AFTER_S:-15}"
  local victim; victim=$(pgrep -x fusioncheck | sort -n | tail -1)
  local start; start=$(date +%s%N)
  kill -9 "$victim"; wait
  echo "$2: killed pid $victim; job ended $(( ($(date +%s%N) - start) / 1000000 )) ms later"
  grep -E "vanished|terminated|no progress|waited|rc=|noticed" "$log" | head -6
  for _ in $(seq 20); do pgrep -x fusioncheck >/dev/null || break; sleep 0.25; done  # exiting ranks release the GPU
  if pgrep -x fusioncheck >/dev/null; then echo "LEFT BEHIND 5 s after the job ended: $(pgrep -x fusioncheck)"; \
    pkill -9 -x fusioncheck; else echo "no fusioncheck process left"; fi
}

for n in ${RANKS:-2}; do
  M="mpirun -np $n --oversubscribe --bind-to none -x CUDA_MPS_PIPE_DIRECTORY -x NCCL_NVLS_ENABLE"
  if has smoke; then
    timeout "${SMOKE_S:-150}" $M $FC gpu smoke --json "$OUT/smoke-$tag$n.json" >"$OUT/smoke-$tag$n.log" 2>&1; echo "smoke $tag $n rc=$?"
    grep -v '^FAIL' "$OUT/smoke-$tag$n.log" | grep fusioncheck | tail -3; grep '^FAIL' "$OUT/smoke-$tag$n.log" | head -10
  fi
  if has check; then
    timeout "${CHECK_S:-300}" $M $FC gpu check --cases "${CASES:-1000}" ${CHECK_ARGS:-} --json "$OUT/check-$tag$n.json" \
      --junit "$OUT/check-$tag$n.xml" >"$OUT/check-$tag$n.log" 2>&1
    echo "check $tag $n rc=$?"; grep -v "^---\|^$" "$OUT/check-$tag$n.log" | tail -12
  fi
  if has kill; then
    timeout "${KILL_S:-300}" $M $FC gpu kill-table --cases "${KILL_CASES:-200}" ${KILL_ARGS:-} --out "$OUT/kill-$tag$n.md" \
      --json "$OUT/kill-$tag$n.json" >"$OUT/kill-$tag$n.log" 2>&1
    echo "kill $tag $n rc=$?"; cat "$OUT/kill-$tag$n.md" 2>/dev/null || tail -20 "$OUT/kill-$tag$n.log"
  fi
  if has bench; then
    timeout "${BENCH_S:-150}" $M $FC gpu bench --json "$OUT/bench-$tag$n.json" >"$OUT/bench-$tag$n.log" 2>&1; echo "bench $tag $n rc=$?"
    tail -28 "$OUT/bench-$tag$n.log"
  fi
  has kill9 && kill9_run "" "kill9-$tag$n"
  has kill9r && kill9_run "--enable-recovery" "kill9r-$tag$n"
  if has ncclshare; then
    timeout 60 $M $FC gpu bench --allreduce nccl --tokens 1 --hidden 1024 >"$OUT/ncclshare-$n.log" 2>&1
    echo "ncclshare $n rc=$? (2 expected)"; sort -u "$OUT/ncclshare-$n.log" | head -3
  fi
  if has memcheck; then
    timeout "${MEMCHECK_S:-300}" $M compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
      $FC gpu --timeout 120 check --cases "${MEMCHECK_CASES:-30}" --max-tokens 64 --max-hidden 1024 --no-delays \
      >"$OUT/memcheck-$tag$n.log" 2>&1
    echo "memcheck $tag $n rc=$?"; grep -E "ERROR SUMMARY|checked cases|Invalid|error" "$OUT/memcheck-$tag$n.log" | head -12
  fi
done
[ "${MPS_MANAGE:-1}" = 1 ] && [ "${MPS:-1}" = 1 ] && echo quit | nvidia-cuda-mps-control
exit 0
