#!/usr/bin/env bash
# README command 1: install dependencies, build (preset default), and run the main job; every
# step must pass. MAIN_JOB_ONLY=1: the main job alone, over an existing build/default.
# The main job:
#   CPU-only machine: reference self-check, the protocol sim on every architecture profile,
#   and the per-architecture audit of the compiled kernels.
#   With GPUs: the GPU suite too (ci/gpu_suite.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${MAIN_JOB_ONLY:-0}" != 1 ]; then bash ci/install_deps.sh; fi
source ci/lib.sh  # after install_deps.sh: it puts the pip-installed cuobjdump on PATH
B=build/default
if [ "${MAIN_JOB_ONLY:-0}" != 1 ]; then
  fc_configure_default  # the configuration ci/test.sh uses too
  cmake --build --preset default -j "$(nproc)"
fi
FC=$(fc_bin "$B")

echo "== reference self-check"
"$FC" reference --selfcheck

echo "== protocol sim: the correct protocol on every profile"
"$FC" sim --profile all --budget 20000                    # 2e4 random schedules per profile (1e5: ctest -L long)
"$FC" sim --profile all --scheduler pct --budget 20000
"$FC" sim --profile all --tiny --scheduler exhaustive      # every schedule within 2 deviations
echo "== protocol sim: pdl-wait-missing is caught on sm120-pcie"
rc=0; "$FC" sim --profile sm120-pcie --mutant pdl-wait-missing --out "$B/sim-counterexamples" >"$B/sim_pdl.txt" || rc=$?
if [ "$rc" -ne 1 ]; then cat "$B/sim_pdl.txt"; echo "sim: pdl-wait-missing not caught (exit $rc)"; exit 1; fi
tail -3 "$B/sim_pdl.txt"

K=$B/kernels
if [ -f "$K/libfc_audit_kernels_none.so" ]; then
  echo "== audit: the correct build is clean on every architecture"
  "$FC" audit --pdl-kernels _pdl_ "$K/libfc_audit_kernels_none.so"
  echo "== audit: the mutant builds are flagged on sm_120"
  for m in pdl_wait_missing empty_body; do
    rc=0; "$FC" audit --pdl-kernels _pdl_ "$K/libfc_audit_kernels_$m.so" >"$B/audit_$m.txt" || rc=$?
    if [ "$rc" -ne 1 ] || ! grep -Eq "(pdl-wait-missing|empty-body) +sm_120" "$B/audit_$m.txt"; then
      cat "$B/audit_$m.txt"; echo "audit did not flag the $m build on sm_120"; exit 1
    fi
    grep -E "(pdl-wait-missing|empty-body) +sm_120" "$B/audit_$m.txt" | head -2
  done
else
  echo "== audit skipped: the CUDA kernels were not built (no nvcc)"
fi

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "== GPU suite"
  bash ci/gpu_suite.sh
fi
echo "fusioncheck: main job passed"
