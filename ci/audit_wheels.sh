#!/usr/bin/env bash
# The audit on what users install: downloads wheels from PyPI (no dependencies) into a cache
# outside the repository and runs `fusioncheck audit` on each, as a user would, timing it
# (wall time and peak memory, /usr/bin/time). Writes OUT/wheels.md (one row per wheel: the
# time, the memory, the files audited, findings and notes), one JSON report per wheel and
# OUT/kernels.md (ci/wheels_report.py: findings by file and kind, the comm kernels' sync
# classes per architecture), and OUT/findings.json (ci/wheels_findings.py), checked against
# the explanations in docs/shipped_wheels.md.
#
#   ci/audit_wheels.sh                                  the default set below
#   ci/audit_wheels.sh sglang-kernel==0.4.10 vllm       these requirements (pip syntax)
#   ARCH=sm_120a ci/audit_wheels.sh                     only that architecture's code (--arch;
#                                                       default: the audit's, sm_90+; ARCH=all)
#   KERNELS='allreduce|lamport' ci/audit_wheels.sh      only kernels whose names match (--kernels)
#   BUILD=build/default  OUT=out/wheels  CACHE=~/.cache/fusioncheck/wheels  TIMEOUT=3000
#
# Exit 2 on bad settings or a failed download (one line); 1 when a finding is not explained
# in docs/shipped_wheels.md (or an explanation of an audited wheel matches nothing); else 0.
# An audit that ended with bad input shows its exit code 2 in the table.
set -uo pipefail
caller=$PWD  # paths the user gives are relative to it; the defaults to the checkout
cd "$(dirname "$0")/.." || exit 2
source ci/lib.sh
BUILD=$(fc_from_caller "$caller" "${BUILD:-}")
BUILD=${BUILD:-build/default}
OUT=$(fc_from_caller "$caller" "${OUT:-}")
OUT=${OUT:-out/wheels}
FUSIONCHECK_CACHE=$(fc_from_caller "$caller" "${FUSIONCHECK_CACHE:-}")
CACHE=$(fc_from_caller "$caller" "${CACHE:-}")
CACHE=${CACHE:-${FUSIONCHECK_CACHE:-$HOME/.cache/fusioncheck}/wheels}
TIMEOUT=${TIMEOUT:-3000}
ARCH=${ARCH:-}
KERNELS=${KERNELS:-}
FC=$(fc_bin "$BUILD")
# The wheels of docs/shipped_wheels.md, pinned.
defaults=(sglang-kernel==0.4.10 vllm==0.34.0 nvidia-nccl-cu13==2.32.3 flashinfer-cubin==0.6.13 flashinfer-python==0.7.4)
requirements=("$@")
[ "${#requirements[@]}" -gt 0 ] || requirements=("${defaults[@]}")

die2() { echo "audit_wheels.sh: $*" >&2; exit 2; }
[ -x "$FC" ] || die2 "no fusioncheck binary at $FC (build first, or set BUILD)"
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || die2 "TIMEOUT=$TIMEOUT: not a number of seconds"
[ -z "$ARCH" ] || [[ $ARCH =~ ^(all|sm_[0-9]{2,4}[af+]?(,sm_[0-9]{2,4}[af+]?)*)$ ]] || die2 "ARCH=$ARCH: not an architecture list (e.g. sm_120a, sm_90+, all)"
for r in "${requirements[@]}"; do
  [[ $r =~ ^[A-Za-z0-9][A-Za-z0-9._-]*(==[0-9][0-9A-Za-z.+-]*)?$ ]] || die2 "'$r': not a requirement (NAME or NAME==VERSION)"
done
if [ -n "$KERNELS" ]; then  # the audit's own check of the pattern, before any download
  why=$("$FC" audit --kernels "$KERNELS" /nonexistent 2>&1 | grep -- '--kernels:')
  [ -z "$why" ] || die2 "KERNELS=$KERNELS: ${why#*error: }"
fi
[ -x /usr/bin/time ] || die2 "/usr/bin/time is needed for the memory figure (Debian: time)"
mkdir -p "$OUT" "$CACHE" || die2 "cannot create $OUT or $CACHE"

# The wheel pip picks for REQUIREMENT on this machine (Linux x86_64, this Python), downloaded
# once into the cache; prints its path.
fetch() {
  local req=$1 dir="$CACHE/${1//=/_}" wheel
  wheel=$(ls "$dir"/*.whl 2>/dev/null | head -1)
  if [ -z "$wheel" ]; then
    mkdir -p "$dir"
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$dir" "$req" >"$dir/pip.log" 2>&1 ||
      { echo "audit_wheels.sh: $req: pip download failed: $(tail -1 "$dir/pip.log")" >&2; return 1; }
    wheel=$(ls "$dir"/*.whl 2>/dev/null | head -1)
  fi
  [ -n "$wheel" ] || { echo "audit_wheels.sh: $req: no wheel downloaded" >&2; return 1; }
  echo "$wheel"
}

{
  echo "Audited $(date -u +%F) with \`fusioncheck audit${ARCH:+ --arch $ARCH}${KERNELS:+ --kernels '$KERNELS'}\` ($FC) on $(nproc) cores."
  echo
  echo "| wheel | size | audit time | peak memory | files audited | findings | notes | exit |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$OUT/wheels.md"
for req in "${requirements[@]}"; do
  wheel=$(fetch "$req") || exit 2
  name=$(basename "$wheel" .whl)
  echo "== $name"
  args=(audit --json --timeout "$TIMEOUT")
  [ -z "$ARCH" ] || args+=(--arch "$ARCH")
  [ -z "$KERNELS" ] || args+=(--kernels "$KERNELS")
  rc=0
  /usr/bin/time -f '%e %M' -o "$OUT/$name.time" "$FC" "${args[@]}" "$wheel" >"$OUT/$name.json" 2>"$OUT/$name.stderr" || rc=$?
  # (time puts "Command exited with non-zero status N" first when the audit exits non-zero)
  read -r seconds kib < <(tail -1 "$OUT/$name.time" 2>/dev/null)
  [[ ${kib:-} =~ ^[0-9]+$ ]] || { seconds="?"; kib=0; }
  summary=$(python3 - "$OUT/$name.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print("- | - | -"); sys.exit()
print(f"{len(d.get('files', []))} | {d.get('findings_total', '-')} | {d.get('notes_total', '-')}")
PY
)
  size=$(du -hL "$wheel" | cut -f1)
  echo "| $name | $size | ${seconds} s | $((kib / 1024)) MB | $summary | $rc |" >>"$OUT/wheels.md"
  tail -1 "$OUT/$name.stderr"
done
python3 ci/wheels_report.py "$OUT" >"$OUT/kernels.md" ||
  echo "audit_wheels.sh: no kernels.md (ci/wheels_report.py failed)" >&2
python3 ci/wheels_findings.py extract "$OUT" >"$OUT/findings.json" ||
  { echo "audit_wheels.sh: no findings.json (ci/wheels_findings.py failed)" >&2; exit 2; }
echo "audit_wheels.sh: $OUT/wheels.md, $OUT/kernels.md, $OUT/findings.json"
cat "$OUT/wheels.md"
python3 ci/wheels_findings.py check --findings "$OUT/findings.json" --doc docs/shipped_wheels.md
