#!/usr/bin/env bash
# FlashInfer's releases under the suite: for each release, `gpu smoke` and N checked cases of
# `gpu check` (with PDL producers drawn, and without) on its own fusion header, and a table of the verdicts (release, verdict, first
# failing check, cases and seconds to detect, the minimised replay file, the upstream fixes
# that explain a failure: adapters/flashinfer/fixes.tsv). Needs GPUs (ranks sharing one run
# under MPS) and the releases' headers in the cache (--fetch gets them).
#
#   ci/flashinfer_history.sh [options] [RELEASE...]
#     RELEASE...      releases to run (default: --changed)
#     --changed       the first release of every minor version and every release whose fusion
#                     or Lamport header differs from the release before it (among the cached ones)
#     --bisect A B    the first release after A whose verdict differs from A's, up to B
#     --fetch         fetch every release PyPI has a wheel of first (ci/fetch_flashinfer.sh --all)
#     --cases N       checked cases per release (default 300)
#     --seed S        RapidCheck seed (default 1)
#     --ranks N       ranks (default 2; the release instances are built for 2)
#     --build DIR     the build to configure with the releases and use (default build/history)
#     --cmake-args A  more arguments for its configuration (e.g. "-DCMAKE_CUDA_ARCHITECTURES=90")
#     --no-build      use DIR as it is (configured with these releases before)
#     --out DIR       where the table, JSON, logs and replay files go (default build/history-report)
#     --dry-run       print the releases and the commands, run nothing
# Exit: 0 every release passed, 1 a release failed (a result: see the table), 2 bad input.
set -euo pipefail
caller=$PWD  # --build, --out and FUSIONCHECK_CACHE given relative are relative to it
cd "$(dirname "$0")/.."
source ci/lib.sh

die2() { echo "flashinfer_history.sh: $*" >&2; exit 2; }
version_re='^[0-9]+(\.[0-9]+){1,3}(\.post[0-9]+)?$'
cache=$(fc_from_caller "$caller" "${FUSIONCHECK_CACHE:-}")
cache=${cache:-$HOME/.cache/fusioncheck}
cases=300 seed=1 ranks=2 build=build/history out=build/history-report
cmake_args="" no_build=0 dry_run=0 fetch=0 changed=0 bisect_a="" bisect_b=""
releases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --changed) changed=1 ;;
    --bisect) [ $# -ge 3 ] || die2 "--bisect takes two releases"; bisect_a=$2; bisect_b=$3; shift 2 ;;
    --fetch) fetch=1 ;;
    --cases) [ $# -ge 2 ] || die2 "--cases takes a number"; cases=$2; shift ;;
    --seed) [ $# -ge 2 ] || die2 "--seed takes a number"; seed=$2; shift ;;
    --ranks) [ $# -ge 2 ] || die2 "--ranks takes a number"; ranks=$2; shift ;;
    --build) [ $# -ge 2 ] || die2 "--build takes a folder"; build=$(fc_from_caller "$caller" "$2"); shift ;;
    --cmake-args) [ $# -ge 2 ] || die2 "--cmake-args takes a string"; cmake_args=$2; shift ;;
    --no-build) no_build=1 ;;
    --out) [ $# -ge 2 ] || die2 "--out takes a folder"; out=$(fc_from_caller "$caller" "$2"); shift ;;
    --dry-run) dry_run=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die2 "unknown option '$1' (--help lists them)" ;;
    *) [[ $1 =~ $version_re ]] || die2 "'$1' is not a flashinfer-python release (e.g. 0.7.4)"; releases+=("$1") ;;
  esac
  shift
done
[[ $cases =~ ^[1-9][0-9]{0,6}$ ]] || die2 "--cases must be a whole number in [1, 9999999]"
[[ $seed =~ ^[0-9]{1,10}$ ]] || die2 "--seed must be a whole number"
[ "$ranks" = 2 ] || die2 "--ranks: the release instances are built for 2 ranks"
[ -z "$bisect_a" ] || [ ${#releases[@]} -eq 0 ] || die2 "--bisect takes no other releases"
if [ -n "$bisect_a" ]; then
  for v in "$bisect_a" "$bisect_b"; do [[ $v =~ $version_re ]] || die2 "--bisect: '$v' is not a release"; done
  [ "$bisect_a" != "$bisect_b" ] || die2 "--bisect needs two different releases"
  [ "$(printf '%s\n%s\n' "$bisect_a" "$bisect_b" | sort -V | head -1)" = "$bisect_a" ] ||
    die2 "--bisect A B: A must be the older release"
fi
for d in "$out" "$build"; do
  if [ -e "$d" ] && [ ! -d "$d" ]; then die2 "'$d' exists and is not a folder"; fi
done
mkdir -p "$out" 2>/dev/null && [ -w "$out" ] || die2 "cannot write to --out '$out'"

if [ "$fetch" = 1 ] && [ "$dry_run" = 0 ]; then bash ci/fetch_flashinfer.sh --all || true; fi

# The cached releases, oldest first.
cached_releases() {
  local d
  for d in "$cache"/flashinfer-python-*/include/flashinfer; do
    [ -d "$d" ] || continue
    d=${d%/include/flashinfer}; echo "${d##*/flashinfer-python-}"
  done | sort -V
}
header_sum() {  # RELEASE FILE: a checksum of one comm header, "-" when absent
  local f="$cache/flashinfer-python-$1/include/flashinfer/comm/$2"
  if [ -f "$f" ]; then cksum <"$f" | cut -d' ' -f1; else echo -; fi
}
changed_releases() {
  local v minor prev_minor="" sums prev_sums=""
  while IFS= read -r v; do
    [ -f "$cache/flashinfer-python-$v/include/flashinfer/comm/trtllm_allreduce_fusion.cuh" ] || continue
    minor=$(cut -d. -f1-2 <<<"$v")
    sums="$(header_sum "$v" trtllm_allreduce_fusion.cuh) $(header_sum "$v" trtllm_allreduce.cuh)"
    if [ "$minor" != "$prev_minor" ] || [ "$sums" != "$prev_sums" ]; then echo "$v"; fi
    prev_minor=$minor prev_sums=$sums
  done < <(cached_releases)
}

if [ -n "$bisect_a" ]; then
  mapfile -t releases < <(cached_releases | awk -v a="$bisect_a" -v b="$bisect_b" '
    $0 == a { on = 1 } on { print } $0 == b { exit }')
  [ "${releases[0]:-}" = "$bisect_a" ] && [ "${releases[-1]:-}" = "$bisect_b" ] ||
    die2 "--bisect: $bisect_a and $bisect_b must both be in the cache ($cache; --fetch)"
elif [ ${#releases[@]} -eq 0 ] || [ "$changed" = 1 ]; then
  mapfile -t -O ${#releases[@]} releases < <(changed_releases)
fi
[ ${#releases[@]} -gt 0 ] || die2 "no releases to run (none cached under $cache: --fetch)"
for v in "${releases[@]}"; do
  [ -d "$cache/flashinfer-python-$v/include/flashinfer" ] ||
    die2 "FlashInfer $v is not in the cache ($cache): ci/fetch_flashinfer.sh $v, or --fetch"
done
mapfile -t releases < <(printf '%s\n' "${releases[@]}" | sort -uV)
list=$(IFS=';'; echo "${releases[*]}")
FC=$(fc_bin "$build")

echo "== FlashInfer releases: ${releases[*]}"
if [ "$dry_run" = 1 ]; then
  [ "$no_build" = 1 ] || echo "cmake -S . -B $build -DFUSIONCHECK_FLASHINFER_RELEASES=\"$list\" $cmake_args"
  for v in "${releases[@]}"; do
    echo "fc_mpirun $ranks $FC gpu smoke --kernel flashinfer@$v"
    echo "fc_mpirun $ranks $FC gpu check --kernel flashinfer@$v --cases $cases --seed $seed [--no-pdl-producer]"
  done
  exit 0
fi
if [ "$no_build" = 0 ]; then
  # shellcheck disable=SC2086
  cmake -S . -B "$build" -DFUSIONCHECK_FLASHINFER_RELEASES="$list" $cmake_args >"$out/configure.log"
  cmake --build "$build" -j "$(nproc)" --target fusioncheck >"$out/build.log"
fi
[ -x "$FC" ] || die2 "no fusioncheck binary in $build"
# Ranks sharing a GPU run concurrently only under MPS.
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  if [ "${gpus:-0}" -lt "$ranks" ]; then fc_mps_start; trap fc_mps_stop EXIT; fi
fi

# One check of one release: prints its cell ("passed (N cases)", "FAILED [check] after N
# cases, S s: replay FILE", ...). TAG names its files, ARGS are more gpu check options.
check_cell() {
  local v=$1 tag=$2 rc=0; shift 2
  local json="$out/check-$v$tag.json" replay="$out/replay-$v$tag.json"
  rm -f "$json" "$replay"
  fc_mpirun "$ranks" "$FC" gpu check --kernel "flashinfer@$v" --cases "$cases" --seed "$seed" --json "$json" \
    --replay-out "$replay" "$@" >"$out/check-$v$tag.log" 2>&1 || rc=$?
  python3 - "$rc" "$json" "$replay" <<'PY'
import json, os, sys
rc, path, replay = int(sys.argv[1]), sys.argv[2], sys.argv[3]
try:
    r = json.load(open(path))
    r = r[0] if isinstance(r, list) else r
except (OSError, ValueError):
    print(f"ERROR (exit {rc}, no result)"); sys.exit()
if not r.get("failed"):
    print(f"passed ({r['cases']} cases, {r['seconds']:.1f} s)"); sys.exit()
f = r["findings"][0]["check"] if r["findings"] else "?"
where = f": replay {os.path.basename(replay)}" if os.path.exists(replay) else ""
print(f"FAILED [{f}] after {r['cases_to_first_failure']} cases, {r['seconds_to_first_failure']:.2f} s{where}")
PY
}

# One release: smoke, the checked cases with PDL producers drawn, and without them (a kernel
# that reads its inputs before its wait fails the first at once; the second still sees the
# other bug classes). Prints one tab-separated row: release, smoke, check, check without.
run_release() {
  local v=$1 rc=0 smoke
  fc_mpirun "$ranks" "$FC" gpu smoke --kernel "flashinfer@$v" >"$out/smoke-$v.log" 2>&1 || rc=$?
  if [ "$rc" = 2 ]; then
    printf '%s\tnot run: %s\t-\t-\n' "$v" "$(grep -m1 -o 'error: .*' "$out/smoke-$v.log" | cut -c8-200)"
    return
  fi
  smoke=passed
  [ "$rc" = 0 ] || smoke="FAILED $(grep -m1 -o '\[[a-z0-9 -]*\]' "$out/smoke-$v.log")"
  printf '%s\t%s\t%s\t%s\n' "$v" "$smoke" "$(check_cell "$v" "")" "$(check_cell "$v" -noproducer --no-pdl-producer --twoshot-percent 75)"
}

rows="$out/rows.tsv"
: >"$rows"
if [ -n "$bisect_a" ]; then
  verdict() { cut -f3 <<<"$1" | cut -d' ' -f1; }  # of the check with producers
  first=$(run_release "${releases[0]}"); echo "$first" | tee -a "$rows"
  lo=0 hi=$((${#releases[@]} - 1))
  last=$(run_release "${releases[$hi]}"); echo "$last" | tee -a "$rows"
  if [ "$(verdict "$first")" = "$(verdict "$last")" ]; then
    echo "== bisect: ${releases[0]} and ${releases[$hi]} have the same verdict ($(verdict "$first")): nothing to find"
  else
    while [ $((hi - lo)) -gt 1 ]; do
      mid=$(((lo + hi) / 2))
      row=$(run_release "${releases[$mid]}"); echo "$row" | tee -a "$rows"
      if [ "$(verdict "$row")" = "$(verdict "$first")" ]; then lo=$mid; else hi=$mid; fi
    done
    echo "== bisect: the verdict changes between ${releases[$lo]} and ${releases[$hi]}"
  fi
else
  for v in "${releases[@]}"; do run_release "$v" | tee -a "$rows"; done
fi

# The table, with the fixes that explain each failure: those released after it, up to the
# next release whose every step passed.
python3 - "$rows" adapters/flashinfer/fixes.tsv "$out/history.md" "$cases" "$seed" <<'PY'
import sys
rows_path, fixes_path, md_path, cases, seed = sys.argv[1:6]
def key(v):
    parts = v.replace(".post", ".-").split(".")
    return [int(p) if p.lstrip("-").isdigit() else 0 for p in parts]
rows = sorted((l.rstrip("\n").split("\t") for l in open(rows_path) if l.strip()), key=lambda r: key(r[0]))
fixes = [l.rstrip("\n").split("\t") for l in open(fixes_path) if l.strip() and not l.startswith("#")]
passes = lambda cell: cell.startswith("passed")
out = [f"Each release: `gpu smoke`, then `gpu check --cases {cases} --seed {seed}` with PDL producers drawn and "
       "again with `--no-pdl-producer --twoshot-percent 75`. Candidate fixes of a failing column: those released "
       "after it, up to the first later release whose column passes (adapters/flashinfer/fixes.tsv).", "",
       "| release | smoke | check | check, no PDL producer | candidate fixes |", "|---|---|---|---|---|"]
for i, r in enumerate(rows):
    why = []
    for col, name in ((2, "check"), (3, "no producer")):
        if passes(r[col]) or r[1].startswith("not run"):
            continue
        nxt = next((s[0] for s in rows[i + 1:] if passes(s[col])), None)
        hits = [f"{f[0]} {f[3]}" for f in fixes
                if key(f[0]) > key(r[0]) and (nxt is None or key(f[0]) <= key(nxt))]
        why.append(f"{name}: " + (", ".join(hits) or "no listed fix"))
    out.append("| " + " | ".join(r + ["; ".join(why) or "-"]) + " |")
open(md_path, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
if grep -q 'FAILED\|ERROR' "$rows"; then exit 1; fi
