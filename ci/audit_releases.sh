#!/usr/bin/env bash
# The audit across releases: the last COUNT releases of one PyPI package, each downloaded,
# audited (`fusioncheck audit --json`, saved per release) and deleted before the next, so that
# a history of NCCL's 200-300 MB wheels needs the disk of one wheel and its largest member;
# then `fusioncheck audit --diff-releases` over the saved reports, oldest first.
#
#   ci/audit_releases.sh nvidia-nccl-cu13 12
#   ci/audit_releases.sh sglang-kernel 4 0.4.8 0.4.9 ...   these versions instead of the last 4
#   ARCH=sm_90,sm_100,sm_120   only that code (--arch; default: the audit's, sm_90+)
#   KERNELS='allreduce|nccl'   only kernels whose names match (--kernels)
#   BUILD=build/default  OUT=out/releases/PACKAGE  JOBS=  TIMEOUT=3000
#   FIND_LINKS=DIR             wheels from this folder instead of PyPI (pip --no-index), and
#                              VERSION... must be given (tests, mirrors)
#
# Writes in OUT: PACKAGE-VERSION.json (each release's audit; a report already there is kept,
# so an interrupted run resumes; options.txt says which options they were audited with, and
# a run with others is refused), times.md (per release: wheel size, audit time, peak memory,
# exit), diff.json and diff.txt (the release diff), diff.md (ci/release_history.py summary).
# Exit 2 on bad settings or a failed download (one line); 1 when a finding of the diff is not
# explained in docs/shipped_wheels.md ('## Explained release-diff findings') or a row there
# matches nothing; else 0.
set -uo pipefail
caller=$PWD
cd "$(dirname "$0")/.." || exit 2
source ci/lib.sh
die2() { echo "audit_releases.sh: $*" >&2; exit 2; }
[ $# -ge 2 ] || die2 "usage: ci/audit_releases.sh PACKAGE COUNT [VERSION...]"
PACKAGE=$1 COUNT=$2
shift 2
[[ $PACKAGE =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die2 "'$PACKAGE': not a package name"
[[ $COUNT =~ ^[0-9]+$ ]] && [ "$COUNT" -ge 2 ] || die2 "COUNT=$COUNT: give 2 releases or more"
BUILD=$(fc_from_caller "$caller" "${BUILD:-}")
BUILD=${BUILD:-build/default}
OUT=$(fc_from_caller "$caller" "${OUT:-}")
OUT=${OUT:-out/releases/$PACKAGE}
TIMEOUT=${TIMEOUT:-3000}
ARCH=${ARCH:-}
KERNELS=${KERNELS:-}
JOBS=${JOBS:-}
FIND_LINKS=$(fc_from_caller "$caller" "${FIND_LINKS:-}")
FC=$(fc_bin "$BUILD")
[ -x "$FC" ] || die2 "no fusioncheck binary at $FC (build first, or set BUILD)"
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || die2 "TIMEOUT=$TIMEOUT: not a number of seconds"
[ -z "$JOBS" ] || [[ $JOBS =~ ^[1-9][0-9]?$ ]] || die2 "JOBS=$JOBS: not a number of runs"
[ -z "$ARCH" ] || [[ $ARCH =~ ^(all|sm_[0-9]{2,4}[af+]?(,sm_[0-9]{2,4}[af+]?)*)$ ]] ||
  die2 "ARCH=$ARCH: not an architecture list (e.g. sm_120a, sm_90+, all)"
if [ -n "$KERNELS" ]; then  # the audit's own check of the pattern, before any download
  why=$("$FC" audit --kernels "$KERNELS" /nonexistent 2>&1 | grep -- '--kernels:')
  [ -z "$why" ] || die2 "KERNELS=$KERNELS: ${why#*error: }"
fi
[ -x /usr/bin/time ] || die2 "/usr/bin/time is needed for the memory figure (Debian: time)"
pip_source=()
if [ -n "$FIND_LINKS" ]; then
  [ -d "$FIND_LINKS" ] || die2 "FIND_LINKS=$FIND_LINKS: not a folder"
  [ $# -gt 0 ] || die2 "FIND_LINKS: give the versions (PyPI's list is not read)"
  pip_source=(--no-index --find-links "$FIND_LINKS")
fi
if [ $# -gt 0 ]; then
  [ $# -eq "$COUNT" ] || die2 "$# versions given for COUNT=$COUNT"
  for v in "$@"; do [[ $v =~ ^[0-9][0-9A-Za-z.+-]*$ ]] || die2 "'$v': not a version"; done
  versions=("$@")
else
  mapfile -t versions < <(python3 ci/release_history.py versions "$PACKAGE" "$COUNT") || exit 2
  [ "${#versions[@]}" -ge 2 ] || die2 "$PACKAGE: fewer than 2 releases listed"
fi
mkdir -p "$OUT" || die2 "cannot create $OUT"
download="$OUT/.download"  # one wheel at a time
args=(audit --json --timeout "$TIMEOUT")
[ -z "$ARCH" ] || args+=(--arch "$ARCH")
[ -z "$KERNELS" ] || args+=(--kernels "$KERNELS")
[ -z "$JOBS" ] || args+=(--jobs "$JOBS")
# Saved reports are kept only for the same selection of code (a report of other options would
# diff as if kernels had changed).
options="${args[*]:1}"
if [ -f "$OUT/options.txt" ]; then
  [ "$(cat "$OUT/options.txt")" = "$options" ] ||
    die2 "$OUT holds reports audited with other options ($(cat "$OUT/options.txt")): use another OUT"
else
  echo "$options" >"$OUT/options.txt"
fi
[ -f "$OUT/times.md" ] || {
  echo "| release | wheel | audit time | peak memory | exit |"
  echo "|---|---|---|---|---|"
} >"$OUT/times.md"
reports=()
for version in "${versions[@]}"; do
  report="$OUT/$PACKAGE-$version.json"
  reports+=("$report")
  if python3 -c 'import json,sys; json.load(open(sys.argv[1]))["files"]' "$report" 2>/dev/null; then
    echo "== $PACKAGE $version: kept $report"
    continue
  fi
  rm -rf "$download" && mkdir -p "$download" || die2 "cannot create $download"
  echo "== $PACKAGE $version: downloading"
  python3 -m pip download -q --no-deps --only-binary=:all: "${pip_source[@]}" -d "$download" \
    "$PACKAGE==$version" \
    >"$OUT/pip.log" 2>&1 || die2 "$PACKAGE==$version: pip download failed: $(tail -1 "$OUT/pip.log")"
  wheel=$(ls "$download"/*.whl 2>/dev/null | head -1)
  [ -n "$wheel" ] || die2 "$PACKAGE==$version: no wheel downloaded"
  size=$(du -hL "$wheel" | cut -f1)
  echo "== $PACKAGE $version: auditing $(basename "$wheel") ($size)"
  rc=0
  /usr/bin/time -f '%e %M' -o "$OUT/time.txt" "$FC" "${args[@]}" "$wheel" >"$report.part" \
    2>"$OUT/$PACKAGE-$version.stderr" || rc=$?
  read -r seconds kib < <(tail -1 "$OUT/time.txt" 2>/dev/null)
  [[ ${kib:-} =~ ^[0-9]+$ ]] || { seconds="?"; kib=0; }
  echo "| $version | $(basename "$wheel") $size | $seconds s | $((kib / 1024)) MB | $rc |" >>"$OUT/times.md"
  rm -rf "$download"
  # Exit 0 or 1 (findings of the release itself) leave a report; anything else is no audit.
  [ "$rc" -le 1 ] || die2 "$PACKAGE==$version: the audit exited $rc: $(tail -1 "$OUT/$PACKAGE-$version.stderr")"
  mv "$report.part" "$report"
done
rc=0
"$FC" audit --diff-releases --json "${reports[@]}" >"$OUT/diff.json" || rc=$?
[ "$rc" -le 1 ] || die2 "the release diff exited $rc"
"$FC" audit --diff-releases "${reports[@]}" >"$OUT/diff.txt"
python3 ci/release_history.py summary "$OUT/diff.json" >"$OUT/diff.md" || exit 2
{
  echo "Audited $(date -u +%F) with \`fusioncheck audit${ARCH:+ --arch $ARCH}${KERNELS:+ --kernels '$KERNELS'}\` ($FC) on $(nproc) cores."
  echo
  cat "$OUT/times.md"
  echo
  cat "$OUT/diff.md"
}
python3 ci/release_history.py check --diff "$OUT/diff.json" --doc docs/shipped_wheels.md
