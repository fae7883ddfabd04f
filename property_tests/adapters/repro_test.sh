#!/bin/sh
# gpu repro on the CPU machine: a replay exported, the folder configured and compiled with nvcc
# against an include tree, and the program run: without a GPU it must say so and exit 2.
# Usage: repro_test.sh FUSIONCHECK REPLAY KNOWN INCLUDE CUDA_COMPILER WORKDIR
set -u
fc=$1 replay=$2 known=$3 include=$4 nvcc=$5 work=$6
rm -rf "$work"
"$fc" gpu repro --replay "$replay" --known "$known" --out "$work/repro" || { echo "export failed"; exit 1; }
for f in repro_main.cu repro_run.cuh repro_types.h repro_case.h CMakeLists.txt README.md replay.json; do
  [ -s "$work/repro/$f" ] || { echo "missing $f"; exit 1; }
done
cmake -S "$work/repro" -B "$work/build" -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DFLASHINFER_INCLUDE="$include" >"$work/configure.log" 2>&1 || { tail -20 "$work/configure.log"; exit 1; }
cmake --build "$work/build" >"$work/build.log" 2>&1 || { grep -m5 -A3 error "$work/build.log"; exit 1; }
out=$(CUDA_VISIBLE_DEVICES= "$work/build/repro" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 2 ] || { echo "exit $rc without a GPU (expected 2)"; exit 1; }
echo "$out" | grep -q "sha256 [0-9a-f]\{64\}" || { echo "no header checksum printed"; exit 1; }
# Bad options are refused before the GPU is looked for, with the reason.
for bad in "--runs 0" "--runs 100001" "--runs 3x" "--timeout 0" "--runs" "--whole-gpu --runs"; do
  out=$(CUDA_VISIBLE_DEVICES= "$work/build/repro" $bad 2>&1)
  rc=$?
  [ $rc -eq 2 ] || { echo "exit $rc for $bad (expected 2)"; exit 1; }
  echo "$out" | grep -q -e "--runs takes\|--timeout takes\|usage:" || { echo "$bad: $out"; exit 1; }
done
# Good options reach the GPU search (and end there).
out=$(CUDA_VISIBLE_DEVICES= "$work/build/repro" --whole-gpu --runs 2 --timeout 1 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q "no CUDA device" || { echo "good options: $out"; exit 1; }
# A case that holds a block inside the kernel: built against the rewritten header, and
# --sync-line is its option alone.
if grep -q "^#define FC_SYNC_DELAY 1" "$work/repro/repro_case.h"; then
  for f in fi_sync_delay.cuh sync_delay.cmake; do
    [ -s "$work/repro/$f" ] || { echo "missing $f"; exit 1; }
  done
  grep -q "FUSIONCHECK_SYNC_DELAY" "$work"/build/rewritten/flashinfer/comm/*.cuh ||
    { echo "no rewritten header"; exit 1; }
  grep -q "FC_SYNC_RANK_SITES [0-9]" "$work/build/rewritten/fc_sync_sites.h" ||
    { echo "no site that knows its rank"; exit 1; }
  out=$(CUDA_VISIBLE_DEVICES= "$work/build/repro" --sync-line 0 2>&1)
  [ $? -eq 2 ] && echo "$out" | grep -q "sync-line takes" || { echo "--sync-line 0: $out"; exit 1; }
  out=$(CUDA_VISIBLE_DEVICES= "$work/build/repro" --sync-line 1377 2>&1)
  [ $? -eq 2 ] && echo "$out" | grep -q "no CUDA device" || { echo "--sync-line 1377: $out"; exit 1; }
  for bad in -1 100000001 20us; do
    out=$(CUDA_VISIBLE_DEVICES= "$work/build/repro" --hold-ns $bad 2>&1)
    [ $? -eq 2 ] && echo "$out" | grep -q "hold-ns takes" || { echo "--hold-ns $bad: $out"; exit 1; }
  done
  out=$(CUDA_VISIBLE_DEVICES= "$work/build/repro" --hold-ns 0 2>&1)
  [ $? -eq 2 ] && echo "$out" | grep -q "no CUDA device" || { echo "--hold-ns 0: $out"; exit 1; }
else
  grep -q "sync_delay" "$work/repro/CMakeLists.txt" && { echo "a rewrite without a hold"; exit 1; }
  [ -e "$work/repro/fi_sync_delay.cuh" ] && { echo "a hook without a hold"; exit 1; }
  out=$(CUDA_VISIBLE_DEVICES= "$work/build/repro" --sync-line 5 2>&1)
  [ $? -eq 2 ] && echo "$out" | grep -q "usage:" || { echo "--sync-line without a hold: $out"; exit 1; }
  out=$(CUDA_VISIBLE_DEVICES= "$work/build/repro" --hold-ns 0 2>&1)
  [ $? -eq 2 ] && echo "$out" | grep -q "usage:" || { echo "--hold-ns without a hold: $out"; exit 1; }
fi
echo "repro_test: exported, compiled, refused to run without a GPU"
