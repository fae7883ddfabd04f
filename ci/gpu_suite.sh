#!/usr/bin/env bash
# The GPU suite for GPU runners, over an existing build (BUILD, default build/default).
# Picks rank counts from the GPUs present: one rank per GPU for every supported count
# (2, 4, 8, 16) up to the GPU count; on a single GPU, 2 ranks sharing it, under MPS when
# ALLOW_MPS=1 (the default; set 0 where the runner may not start the MPS daemon).
# Runs: the in-process kernel tests, then per rank count the smoke run, the property
# suite (CASES cases), the mutant kill table (KILL_CASES cases per mutant), the latency bench
# and a wait profile, with PNG plots of both. Reports land in REPORTS (default
# $BUILD/gpu-reports): JSON, JUnit XML, Markdown and PNG. Every step's exit
# code is recorded and listed at the end; exits non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
source ci/lib.sh
BUILD=${BUILD:-build/default}
REPORTS=${REPORTS:-$BUILD/gpu-reports}
CASES=${CASES:-10000}
ALLOW_MPS=${ALLOW_MPS:-1}
FC=$(fc_bin "$BUILD")
mkdir -p "$REPORTS"
REPORTS_ABS=$(cd "$REPORTS" && pwd)

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${gpus:-0}" -lt 1 ]; then echo "gpu_suite: no GPU found"; exit 2; fi
rank_counts=()
for n in 2 4 8 16; do [ "$n" -le "$gpus" ] && rank_counts+=("$n"); done
trap fc_mps_stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ "${#rank_counts[@]}" -eq 0 ]; then
  rank_counts=(2)  # one GPU: two ranks share it
  if [ "$ALLOW_MPS" != 1 ]; then
    echo "gpu_suite: ranks share one GPU without MPS: they are time-sliced (slow, still correct)"
  elif ! fc_mps_start; then
    echo "gpu_suite: MPS did not start: ranks sharing the GPU are time-sliced (slow, still correct)"
  fi
fi

fc_step ctest-gpu 0 - ctest --test-dir "$BUILD" -L gpu --output-on-failure \
  --output-junit "$REPORTS_ABS/ctest-gpu.xml"
for n in "${rank_counts[@]}"; do
  echo "== $n ranks: smoke"
  fc_step "smoke-$n" 0 - fc_mpirun "$n" "$FC" gpu smoke --json "$REPORTS/smoke-$n.json"
  echo "== $n ranks: property suite, $CASES cases"
  fc_step "check-$n" 0 - fc_mpirun "$n" "$FC" gpu check --cases "$CASES" --json "$REPORTS/check-$n.json" \
    --junit "$REPORTS/check-$n.xml" --replay-out "$REPORTS/counterexample-$n.json"
  [ "$n" = 2 ] || continue  # the mutant instances are compiled for 2 ranks
  # Fails on a false positive or on a survivor this setup can kill (expected survivors,
  # e.g. the sm_120-only mutants on older GPUs, are marked in the table, not failures).
  echo "== $n ranks: kill table"
  fc_step "kill-table-$n" 0 - fc_mpirun "$n" "$FC" gpu kill-table --cases "${KILL_CASES:-300}" \
    --out "$REPORTS/kill-table-$n.md" --json "$REPORTS/kill-table-$n.json" --junit "$REPORTS/kill-table-$n.xml"
  # Latency, graph-timed and eager, beside FlashInfer where this build has its adapter; then
  # the wait profile of one small call with rank 1 starting 20 us late (2 and 4 ranks).
  compare=()
  [ -f "$BUILD/adapters/flashinfer/libfc_flashinfer_none_bf16.so" ] && compare=(--compare flashinfer)
  echo "== $n ranks: bench"
  fc_step "bench-$n" 0 - fc_mpirun "$n" "$FC" gpu bench "${compare[@]}" --json "$REPORTS/bench-$n.json"
  if [ "$n" -le 4 ]; then
    echo "== $n ranks: wait profile"
    fc_step "wait-profile-$n" 0 - fc_mpirun "$n" "$FC" gpu bench --wait-profile --tokens 8 --delay-rank 1 \
      --delay-us 20 --json "$REPORTS/wait-profile-$n.json"
  fi
done
# PNGs from the JSON (python3-matplotlib, installed by ci/install_deps.sh).
for json in "$REPORTS"/bench-*.json "$REPORTS"/wait-profile-*.json; do
  [ -f "$json" ] && fc_step "plot-$(basename "$json" .json)" 0 - "$(fc_python)" bench/plots/plot_bench.py "$json" "$REPORTS"
done
echo "gpu_suite: reports in $REPORTS"
fc_steps_report
