#!/usr/bin/env bash
# The GPU suite for GPU runners, over an existing build (BUILD, default build/default).
# Picks rank counts from the GPUs present: one rank per GPU for every supported count
# (2, 4, 8, 16) up to the GPU count; on a single GPU, 2 ranks sharing it, under MPS when
# ALLOW_MPS=1 (the default; set 0 where the runner may not start the MPS daemon).
# Runs the in-process kernel tests, then per rank count and for every kernel family this build
# has (ours, flashinfer, flashinfer-legacy, flashinfer-pcie: `fusioncheck gpu kernels`): smoke,
# the mutant kill table (2 ranks; KILL_CASES cases per mutant; one table per seed of KILL_SEEDS), then the
# property suite (CASES cases), so that the check also shows the GPU usable after the tables.
# Then our latency bench (beside FlashInfer where built) and a wait profile, with PNG plots.
# Reports land in REPORTS (default $BUILD/gpu-reports): JSON, JUnit XML, Markdown, PNG, one
# log per step, and results.md (the figures for docs/results.md; RESULTS_MD=docs/results.md
# writes them between its gpu_suite markers). GPU_TESTS=0 leaves out the in-process tests.
# KNOWN: the ledger of known findings given to smoke, check and kill-table (--known; default
# the pinned FlashInfer release's, adapters/flashinfer/known/flashinfer-<VERSION>.json, when
# this build's FlashInfer is that release; KNOWN=none: every finding is new); STRICT=1 adds
# --strict (an entry whose trigger was drawn and that never failed fails the step).
# HOSTFILE=FILE (Open MPI's format): the suite on every node named there instead, side by side,
# each node's reports in REPORTS/<host>/ (ci/suite_on_hosts.sh; a job cannot span nodes).
# Exits non-zero if any step failed.
set -uo pipefail
caller=$PWD  # BUILD, REPORTS, KNOWN, RESULTS_MD given relative are relative to it
cd "$(dirname "$0")/.." || exit 2
source ci/lib.sh
BUILD=$(fc_from_caller "$caller" "${BUILD:-}")
BUILD=${BUILD:-build/default}
REPORTS=$(fc_from_caller "$caller" "${REPORTS:-}")
REPORTS=${REPORTS:-$BUILD/gpu-reports}
[ "${KNOWN:-}" = none ] || KNOWN=$(fc_from_caller "$caller" "${KNOWN:-}")
RESULTS_MD=$(fc_from_caller "$caller" "${RESULTS_MD:-}")
CASES=${CASES:-10000}
KILL_CASES=${KILL_CASES:-300}
KILL_SEEDS=${KILL_SEEDS:-1}
ALLOW_MPS=${ALLOW_MPS:-1}
GPU_TESTS=${GPU_TESTS:-1}
FAMILIES=${FAMILIES:-}  # default: every family the build has
STRICT=${STRICT:-0}
FC=$(fc_bin "$BUILD")
[ -x "$FC" ] || { echo "gpu_suite: no fusioncheck binary at $FC (build first)"; exit 2; }
[[ $STRICT =~ ^[01]$ ]] || { echo "gpu_suite: STRICT=$STRICT: 0 or 1"; exit 2; }
if [ -z "${KNOWN:-}" ]; then
  # The pinned release's ledger, where this build's FlashInfer is the pinned wheel (no other
  # include tree given at configure time).
  pinned=$(tr -d '[:space:]' <adapters/flashinfer/VERSION)
  KNOWN=none
  if [ -z "$(sed -n 's/^FUSIONCHECK_FLASHINFER_INCLUDE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)" ]; then
    KNOWN=adapters/flashinfer/known/flashinfer-$pinned.json
  fi
fi
known=()
if [ "$KNOWN" != none ]; then
  [ -f "$KNOWN" ] || { echo "gpu_suite: KNOWN=$KNOWN: no such file"; exit 2; }
  known=(--known "$KNOWN")
  [ "$STRICT" = 1 ] && known+=(--strict)
fi
for v in CASES KILL_CASES; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "gpu_suite: $v=${!v}: not a positive integer"; exit 2; }
done
[[ $KILL_SEEDS =~ ^[0-9]+( [0-9]+)*$ ]] || { echo "gpu_suite: KILL_SEEDS='$KILL_SEEDS': not seeds"; exit 2; }
mkdir -p "$REPORTS" || exit 2
REPORTS_ABS=$(cd "$REPORTS" && pwd)
if [ -n "${HOSTFILE:-}" ]; then
  HOSTFILE=$(fc_from_caller "$caller" "$HOSTFILE")
  exec bash ci/suite_on_hosts.sh "$HOSTFILE" "$REPORTS_ABS"
fi
export FC_STEPS_FILE="$REPORTS_ABS/steps.txt"
: >"$FC_STEPS_FILE"

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
if [ -z "$FAMILIES" ]; then
  # The families this build can run: the first word of each line of `gpu kernels` that does
  # not say the build lacks it; releases (flashinfer@VERSION) are ci/flashinfer_history.sh's.
  FAMILIES=$("$FC" gpu kernels 2>/dev/null | awk '$1 !~ /@/ && !/\[not in this build/ {print $1}' | tr '\n' ' ')
  [ -n "$FAMILIES" ] || FAMILIES=ours
fi
echo "gpu_suite: families: $FAMILIES; rank counts: ${rank_counts[*]}; known findings: $KNOWN"
# The build as results.md names it, recorded now (the tree may change before the figures are
# written elsewhere).
printf '`%s` (CUDA architectures %s), commit %s\n' "$BUILD" \
  "$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)" \
  "$(git describe --always --dirty 2>/dev/null || echo unknown)" >"$REPORTS_ABS/build.txt"

# A step, its log in REPORTS/NAME.log as well as on the terminal, its command in
# REPORTS/NAME.cmd (results.md shows both).
suite_step() {
  local name=$1 t0=$SECONDS rc
  shift
  printf '%s\n' "$*" >"$REPORTS_ABS/$name.cmd"
  { "$@" 2>&1; echo $? >"$REPORTS_ABS/$name.rc"; } | tee "$REPORTS_ABS/$name.log"
  rc=$(cat "$REPORTS_ABS/$name.rc" 2>/dev/null || echo 1)
  fc_record "$name" "$rc" 0 $((SECONDS - t0))
}

copies_built=0  # FlashInfer's patched copies, compiled here before its first kill table
[ "$GPU_TESTS" = 0 ] || suite_step ctest-gpu ctest --test-dir "$BUILD" -L gpu --output-on-failure \
  --output-junit "$REPORTS_ABS/ctest-gpu.xml"
for n in "${rank_counts[@]}"; do
  for fam in $FAMILIES; do
    echo "== $n ranks, $fam: smoke"
    suite_step "smoke-$fam-$n" fc_mpirun "$n" "$FC" gpu smoke --kernel "$fam" "${known[@]}" \
      --json "$REPORTS/smoke-$fam-$n.json"
    if [ "$n" = 2 ]; then  # the mutant instances are compiled for 2 ranks
      if [[ $fam == flashinfer* ]] && [ "$copies_built" = 0 ]; then
        copies_built=1
        fc_step flashinfer-copies 0 "$REPORTS_ABS/flashinfer-copies.log" fc_build_flashinfer_copies "$BUILD"
      fi
      # Fails on a false positive or on a survivor this setup can kill (expected survivors
      # are marked in the table, not failures).
      for seed in $KILL_SEEDS; do
        echo "== $n ranks, $fam: kill table, seed $seed"
        suite_step "kill-table-$fam-$n-s$seed" fc_mpirun "$n" "$FC" gpu kill-table --kernel "$fam" \
          "${known[@]}" --cases "$KILL_CASES" --seed "$seed" --out "$REPORTS/kill-table-$fam-$n-s$seed.md" \
          --json "$REPORTS/kill-table-$fam-$n-s$seed.json" --junit "$REPORTS/kill-table-$fam-$n-s$seed.xml"
      done
    fi
    echo "== $n ranks, $fam: property suite, $CASES cases"
    suite_step "check-$fam-$n" fc_mpirun "$n" "$FC" gpu check --kernel "$fam" "${known[@]}" --cases "$CASES" \
      --json "$REPORTS/check-$fam-$n.json" --junit "$REPORTS/check-$fam-$n.xml" \
      --replay-out "$REPORTS/counterexample-$fam-$n.json"
  done
  # Latency, graph-timed and eager, beside FlashInfer where this build has it; then the wait
  # profile of one small call with rank 1 starting 20 us late (2 and 4 ranks).
  compare=()
  [[ " $FAMILIES " == *" flashinfer "* ]] && compare=(--compare flashinfer)
  echo "== $n ranks: bench"
  suite_step "bench-$n" fc_mpirun "$n" "$FC" gpu bench "${compare[@]}" --json "$REPORTS/bench-$n.json"
  if [ "$n" -le 4 ]; then
    echo "== $n ranks: wait profile"
    suite_step "wait-profile-$n" fc_mpirun "$n" "$FC" gpu bench --wait-profile --tokens 8 --delay-rank 1 \
      --delay-us 20 --json "$REPORTS/wait-profile-$n.json"
  fi
done
# PNGs from the JSON (python3-matplotlib, installed by ci/install_deps.sh).
for json in "$REPORTS"/bench-*.json "$REPORTS"/wait-profile-*.json; do
  [ -f "$json" ] && fc_step "plot-$(basename "$json" .json)" 0 - "$(fc_python)" bench/plots/plot_bench.py "$json" "$REPORTS"
done
fc_step results 0 - python3 ci/gpu_results.py "$REPORTS_ABS" --build "$BUILD" ${RESULTS_MD:+--into "$RESULTS_MD"}
python3 ci/known_summary.py "$REPORTS_ABS"
echo "gpu_suite: reports in $REPORTS"
fc_steps_report
