#!/usr/bin/env bash
# Several h200_quick.sh runs side by side on the one H200 (device time is scarce): build
# once, start MPS once (MPS=1) or make sure it is off (MPS=0), then run each JOBS entry
# ("RANKS|STEPS|extra env") in the background with its own log directory. Prints each log.
#   JOBS='2|check|CASES=10000 CHECK_ARGS="--max-tokens 128 --max-hidden 4096"; 2|kill|KILL_CASES=100'
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
if [ "${SKIP_BUILD:-0}" != 1 ]; then OUT="$OUT" STEPS="" MPS_MANAGE=0 bash ci/h200_quick.sh || exit 2; fi
export CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps CUDA_MPS_LOG_DIRECTORY=/tmp/nvidia-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if [ "${MPS:-1}" = 1 ]; then nvidia-cuda-mps-control -d 2>/dev/null; echo "== MPS on"
else echo quit | nvidia-cuda-mps-control 2>/dev/null; sleep 1; echo "== MPS off"; fi
i=0
IFS=';' read -ra entries <<<"$JOBS"
# kill9 picks its victim by process name: it would hit another job's ranks.
if [ "${#entries[@]}" -gt 1 ] && [[ "$JOBS" == *kill9* ]]; then echo "kill9 must run as the only job"; exit 2; fi
for entry in "${entries[@]}"; do
  IFS='|' read -r ranks steps extra <<<"$entry"
  ranks=$(echo $ranks); steps=$(echo $steps)  # trim
  i=$((i + 1)); mkdir -p "$OUT/job$i"
  (eval "env $extra OUT=$OUT/job$i RANKS='$ranks' STEPS='$steps' SKIP_BUILD=1 MPS_MANAGE=0 MPS=${MPS:-1} \
     bash ci/h200_quick.sh" >"$OUT/job$i/summary.txt" 2>&1) &
done
wait
for d in "$OUT"/job*; do echo "=== $d"; cat "$d/summary.txt"; done
[ "${MPS:-1}" = 1 ] && echo quit | nvidia-cuda-mps-control
exit 0
