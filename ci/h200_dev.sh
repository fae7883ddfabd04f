#!/usr/bin/env bash
# Development runs on the H200 test machine (one GPU, no network; the packages it lacks are
# carried in .debs/, see fc_use_carried_debs in ci/lib.sh). Builds the GPU targets for sm_90
# (`cmake --preset h200`; only TARGETS), then runs the steps named in STEPS for each rank
# count in RANKS, the ranks sharing the GPU under MPS (MPS=0: time-sliced). Every step runs
# under `timeout`; its exit code is recorded, and the record is printed at the end and kept
# in $OUT/steps.txt. Logs go to OUT (default out/). Exit 0 when every step passed, 1 when
# one failed, 2 on bad usage, a failed build or an MPS daemon that cannot be had.
#
#   STEPS="gtest smoke check kill bench" (the default)   STEPS="" builds only
#     gtest      in-process kernel tests: kernels_gpu_test [GTEST_FILTER]      GTEST_S=200
#     smoke      fusioncheck gpu smoke [SMOKE_ARGS]                            SMOKE_S=150
#     check      property suite, CASES=1000 cases [CHECK_ARGS]                 CHECK_S=300
#     kill       mutant kill table, KILL_CASES=200 per mutant [KILL_ARGS]      KILL_S=300
#     bench      latency table [BENCH_ARGS]                                    BENCH_S=150
#     kill9      a `gpu check` under plain mpirun; KILL9_AFTER_S=15 s in, rank KILL9_RANK
#                (default: the last) gets kill -9. Passes when the job ends with a non-zero
#                code before KILL9_S=120 and no rank is left 5 s later
#     kill9r     the same under `mpirun --enable-recovery` (the launcher does not end the
#                job): passes when a survivor reports "peer process vanished" and the job
#                ends before KILL9_S, leaving no rank (any exit code: mpirun may say 0 here)
#     ncclshare  `gpu bench --allreduce nccl` with ranks sharing the GPU: passes on exit 2
#                (bad input)                                                    60 s
#     memcheck   compute-sanitizer memcheck over `gpu check`, MEMCHECK_CASES=30  MEMCHECK_S=300
#                (docs/results.md ran it time-sliced: MPS=0)
#   RANKS="2"      rank counts; the steps other than gtest run once per count
#   MPS=1          ranks share the GPU under MPS: started unless running, and at the end
#                  stopped only if this script started it. MPS=0: time-sliced; refuses to run
#                  while an MPS daemon is running (stop it: echo quit | nvidia-cuda-mps-control)
#   SKIP_BUILD=1   use build/h200 as it is
#   TARGETS="fusioncheck kernels_gpu_test bench_kernels"   what the build step builds
#   OUT=out        logs: STEP-TAGN.log (TAG: mps or ts, N: ranks), STEP-TAGN.pids (the ranks'
#                  pids: leftovers are found and ended by pid, never by name), steps.txt
#   JOBS='RANKS|STEPS|VAR=value ...; ...'   several runs side by side (device time is scarce):
#                  builds once, sets MPS up once, then runs each entry as its own h200_dev.sh
#                  in the background with its own OUT/jobI; prints each job's console and
#                  fails when any job failed. STEPS is ignored then. E.g.
#     JOBS='2|check|CASES=10000 CHECK_ARGS="--max-tokens 128 --max-hidden 4096"; 2|kill|KILL_CASES=100'
#   (the old h200_smoke.sh: STEPS="gtest smoke bench"; the old h200_parallel.sh: JOBS=...)
set -uo pipefail
caller=$PWD  # a relative OUT is relative to it
cd "$(dirname "$0")/.." || exit 2
source ci/lib.sh
OUT=$(fc_from_caller "$caller" "${OUT:-}")
OUT=${OUT:-out}
read -r -a steps <<<"${STEPS-gtest smoke check kill bench}"
read -r -a rank_counts <<<"${RANKS:-2}"
MPS=${MPS:-1}
MPS_MANAGE=${MPS_MANAGE:-1}  # 0: the caller (a JOBS run) has set MPS up
B=build/h200
read -r -a targets <<<"${TARGETS:-fusioncheck kernels_gpu_test bench_kernels}"
tag=$([ "$MPS" = 1 ] && echo mps || echo ts)

known=" gtest smoke check kill bench kill9 kill9r ncclshare memcheck "
for s in "${steps[@]}"; do
  [[ "$known" == *" $s "* ]] || { echo "h200_dev: unknown step '$s' (steps:$known)"; exit 2; }
done
for n in "${rank_counts[@]}"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "h200_dev: RANKS: '$n' is not a rank count"; exit 2; }
done
has() { [[ " ${steps[*]} " == *" $1 "* ]]; }
mkdir -p "$OUT"
FC_STEPS_FILE="$OUT/steps.txt"
: >"$FC_STEPS_FILE"

# Everything this script starts in the background is remembered by pid and, if still running
# when the script ends early, stopped by pid.
job_pids=()       # background jobs (JOBS runs, the kill9 job); emptied once waited for
live_pidfile=""   # the pid file of the mpirun step in progress
cleanup() {
  local p
  for p in "${job_pids[@]}"; do
    if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then kill -TERM "$p" 2>/dev/null; fi
  done
  if [ -n "$live_pidfile" ]; then
    for p in $(alive_ranks "$live_pidfile"); do kill -9 "$p" 2>/dev/null; done
  fi
  if [ "$MPS_MANAGE" = 1 ]; then fc_mps_stop; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Each rank writes "RANK PID STARTTIME" to the pid file given, then execs the command: the
# pids are those of the ranks themselves, and STARTTIME (/proc/PID/stat field 22) tells a
# rank from a later process that got its pid.
# shellcheck disable=SC2016  # expanded by the rank's bash, not here
rank_wrap=(bash -c 'f=$1; shift; read -r s </proc/$$/stat; s=${s##*) }; read -r -a st <<<"$s"
echo "${OMPI_COMM_WORLD_RANK:-?} $$ ${st[19]}" >>"$f"; exec "$@"' fc-rank)
alive_ranks() {  # PIDFILE: prints the pids of its ranks that are still running
  local p t s st
  while read -r _ p t; do
    if [ -z "$p" ] || ! read -r s 2>/dev/null <"/proc/$p/stat"; then continue; fi
    s=${s##*) }
    read -r -a st <<<"$s"
    if [ "${st[19]}" = "$t" ] && [ "${st[0]}" != Z ]; then echo "$p"; fi
  done <"$1"
}
# PIDFILE: gives the ranks 5 s to exit (a rank releasing the GPU takes a moment), then ends
# those left with kill -9 by pid; fails when there were any.
reap_ranks() {
  local left i
  for i in $(seq 20); do
    left=$(alive_ranks "$1")
    [ -z "$left" ] && return 0
    [ "$i" = 20 ] || sleep 0.25
  done
  echo "LEFT BEHIND 5 s after the job ended: pids $(echo "$left" | tr '\n' ' '); ended with kill -9"
  # shellcheck disable=SC2086  # one pid per word
  kill -9 $left 2>/dev/null
  return 1
}
# mpi_step NAME EXPECTED SECONDS N CMD...: CMD on N ranks under mpirun and `timeout`, output in
# $OUT/NAME.log; passes when mpirun exits EXPECTED and no rank is left behind.
mpi_step() {
  local name=$1 want=$2 secs=$3 n=$4 rc=0 t0=$SECONDS
  shift 4
  live_pidfile="$OUT/$name.pids"
  : >"$live_pidfile"
  timeout -k 10 "$secs" mpirun -np "$n" "${FC_MPIRUN_FLAGS[@]}" "${rank_wrap[@]}" "$live_pidfile" "$@" \
    >"$OUT/$name.log" 2>&1 || rc=$?
  fc_record "$name" "$rc" "$want" $((SECONDS - t0)) "$([ "$rc" = 124 ] && echo "timed out after $secs s")"
  reap_ranks "$live_pidfile" || fc_record "$name-left-behind" 1 0 "" "ranks still running 5 s after mpirun ended"
  live_pidfile=""
}

# kill9_step NAME N [MPIRUN FLAGS...]: see kill9 / kill9r above.
kill9_step() {
  local name=$1 n=$2 recovery=0
  shift 2
  [[ " $* " == *" --enable-recovery "* ]] && recovery=1
  local log="$OUT/$name.log" pids="$OUT/$name.pids" rank=${KILL9_RANK:-$((n - 1))}
  local limit=${KILL9_S:-120} t0=$SECONDS rc=0 victim="" start ms fail=0 note
  live_pidfile=$pids
  : >"$pids"
  timeout -k 10 "$limit" mpirun -np "$n" "${FC_MPIRUN_FLAGS[@]}" "$@" "${rank_wrap[@]}" "$pids" \
    "$FC" gpu --timeout 15 check --cases 100000 >"$log" 2>&1 &
  local job=$!
  job_pids+=("$job")
  local slot=$((${#job_pids[@]} - 1))
  sleep "${KILL9_AFTER_S:-15}"
  if kill -0 "$job" 2>/dev/null; then
    victim=$(awk -v r="$rank" '$1 == r { print $2; exit }' "$pids")
    if [ -n "$victim" ] && alive_ranks "$pids" | grep -qx "$victim"; then
      start=$(date +%s%N)
      kill -9 "$victim"
      wait "$job" || rc=$?
      ms=$((($(date +%s%N) - start) / 1000000))
      note="killed rank $rank (pid $victim); the job ended $ms ms later, rc=$rc"
    else
      kill -TERM "$job" 2>/dev/null
      wait "$job" || rc=$?
      fail=1; note="rank $rank was not running at the kill (pids: $(tr '\n' ';' <"$pids")); job stopped"
    fi
  else
    wait "$job" || rc=$?
    fail=1; note="the job ended (rc=$rc) before the kill"
  fi
  job_pids[slot]=""
  echo "rc=$rc" >>"$log"
  if [ "$fail" = 0 ]; then
    # Under --enable-recovery, mpirun may exit 0 after losing a rank (OpenMPI 4.1.4 here did).
    if [ "$rc" = 0 ] && [ "$recovery" = 0 ]; then fail=1; note+="; a killed rank must not end in exit 0"
    elif [ "$rc" = 124 ] || [ $((SECONDS - t0)) -ge "$limit" ]; then fail=1; note+="; timed out after $limit s"
    fi
    if [ "$recovery" = 1 ] && ! grep -q "peer process vanished" "$log"; then
      fail=1; note+="; no survivor reported the vanished peer"
    fi
  fi
  reap_ranks "$pids" || { fail=1; note+="; ranks left behind"; }
  live_pidfile=""
  fc_record "$name" "$fail" 0 $((SECONDS - t0)) "$note"
  grep -E "vanished|terminated|no progress|waited|noticed" "$log" | head -6
}

mps_setup() {
  [ "$MPS_MANAGE" = 1 ] || return 0
  if [ "$MPS" = 1 ]; then
    fc_mps_start || { fc_record mps-start 1 0; fc_steps_report; exit 2; }
  elif fc_mps_running; then
    echo "h200_dev: MPS=0, but an MPS daemon this script did not start is running;"
    echo "  stop it first (echo quit | nvidia-cuda-mps-control) or run with MPS=1"
    exit 2
  else
    echo "== MPS off (time-sliced ranks)"
  fi
}

run_jobs() {
  local entries entry ranks steps_ extra i=0 k rc dir words
  local -a descs=()
  IFS=';' read -r -a entries <<<"$JOBS"
  for entry in "${entries[@]}"; do
    [ -n "${entry//[[:space:]]/}" ] || continue
    IFS='|' read -r ranks steps_ extra <<<"$entry"
    read -r -a words <<<"$ranks"; ranks="${words[*]}"
    read -r -a words <<<"$steps_"; steps_="${words[*]}"
    i=$((i + 1)); dir="$OUT/job$i"; mkdir -p "$dir"
    (
      # the entry's own settings (e.g. CASES=10000 CHECK_ARGS="..."), then what the job must be
      if [ -n "${extra//[[:space:]]/}" ]; then eval "export $extra"; fi
      exec env -u JOBS OUT="$dir" RANKS="$ranks" STEPS="$steps_" SKIP_BUILD=1 MPS_MANAGE=0 MPS="$MPS" \
        bash ci/h200_dev.sh
    ) >"$dir/console.log" 2>&1 &
    job_pids+=("$!")
    descs+=("RANKS='$ranks' STEPS='$steps_' $extra")
    echo "== job$i started: ${descs[$((i - 1))]}"
  done
  [ "$i" -gt 0 ] || { echo "h200_dev: JOBS has no entry"; exit 2; }
  for k in "${!job_pids[@]}"; do
    rc=0; wait "${job_pids[k]}" || rc=$?
    job_pids[k]=""
    fc_record "job$((k + 1))" "$rc" 0 "" "${descs[k]}" >/dev/null
  done
  for k in $(seq "$i"); do echo "=== $OUT/job$k: ${descs[$((k - 1))]}"; cat "$OUT/job$k/console.log"; done
}

fc_use_carried_debs || exit 2
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  fc_step configure 0 "$OUT/configure.log" cmake --preset h200 ||
    { tail -30 "$OUT/configure.log"; fc_steps_report; exit 2; }
  fc_step build 0 "$OUT/build.log" cmake --build "$B" --target "${targets[@]}" -j "$(nproc)" ||
    { grep -E 'error' -A5 "$OUT/build.log" | head -60; fc_steps_report; exit 2; }
fi
FC=$(fc_bin "$B")

if [ -n "${JOBS:-}" ]; then
  mps_setup
  run_jobs
  fc_steps_report
  exit
fi

if has gtest; then
  fc_step gtest 0 "$OUT/gtest.log" timeout -k 10 "${GTEST_S:-200}" "$B/property_tests/kernels/kernels_gpu_test" \
    --gtest_filter="${GTEST_FILTER:-*}"
  grep -E '^\[  (FAILED|PASSED) |Failure' -A3 "$OUT/gtest.log" | head -40
fi

rank_steps=0
for s in "${steps[@]}"; do [ "$s" = gtest ] || rank_steps=1; done
[ "$rank_steps" = 1 ] && mps_setup

read -r -a smoke_args <<<"${SMOKE_ARGS:-}"
read -r -a check_args <<<"${CHECK_ARGS:-}"
read -r -a kill_args <<<"${KILL_ARGS:-}"
read -r -a bench_args <<<"${BENCH_ARGS:-}"
for n in "${rank_counts[@]}"; do
  [ "$rank_steps" = 1 ] || break
  t="$tag$n"
  if has smoke; then
    mpi_step "smoke-$t" 0 "${SMOKE_S:-150}" "$n" "$FC" gpu smoke --json "$OUT/smoke-$t.json" "${smoke_args[@]}"
    grep -v '^FAIL' "$OUT/smoke-$t.log" | grep fusioncheck | tail -3; grep '^FAIL' "$OUT/smoke-$t.log" | head -10
  fi
  if has check; then
    mpi_step "check-$t" 0 "${CHECK_S:-300}" "$n" "$FC" gpu check --cases "${CASES:-1000}" "${check_args[@]}" \
      --json "$OUT/check-$t.json" --junit "$OUT/check-$t.xml"
    grep -v "^---\|^$" "$OUT/check-$t.log" | tail -12
  fi
  if has kill; then
    mpi_step "kill-$t" 0 "${KILL_S:-300}" "$n" "$FC" gpu kill-table --cases "${KILL_CASES:-200}" "${kill_args[@]}" \
      --out "$OUT/kill-$t.md" --json "$OUT/kill-$t.json"
    cat "$OUT/kill-$t.md" 2>/dev/null || tail -20 "$OUT/kill-$t.log"
  fi
  if has bench; then
    mpi_step "bench-$t" 0 "${BENCH_S:-150}" "$n" "$FC" gpu bench --json "$OUT/bench-$t.json" "${bench_args[@]}"
    tail -28 "$OUT/bench-$t.log"
  fi
  if has kill9; then kill9_step "kill9-$t" "$n"; fi
  if has kill9r; then kill9_step "kill9r-$t" "$n" --enable-recovery; fi
  if has ncclshare; then
    mpi_step "ncclshare-$t" 2 60 "$n" "$FC" gpu bench --allreduce nccl --tokens 1 --hidden 1024
    sort -u "$OUT/ncclshare-$t.log" | head -3
  fi
  if has memcheck; then
    mpi_step "memcheck-$t" 0 "${MEMCHECK_S:-300}" "$n" compute-sanitizer --tool memcheck --error-exitcode 9 \
      --print-limit 20 "$FC" gpu --timeout 120 check --cases "${MEMCHECK_CASES:-30}" --max-tokens 64 \
      --max-hidden 1024 --no-delays
    grep -E "ERROR SUMMARY|checked cases|Invalid|error" "$OUT/memcheck-$t.log" | head -12
  fi
done
fc_steps_report
