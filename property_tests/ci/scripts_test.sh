#!/usr/bin/env bash
# Runs the ci/ scripts on bad input and on a fixture cache; prints "N passed, M failed".
set -uo pipefail
root=$1
fc=$2  # a built fusioncheck binary (its build folder is $fc/../..)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export FUSIONCHECK_CACHE="$here/fixtures/cache"
passed=0 failed=0
# expect NAME RC PATTERN CMD...: CMD exits RC and its output (stdout and stderr) matches PATTERN.
expect() {
  local name=$1 want=$2 pattern=$3 rc=0 output
  shift 3
  output=$("$@" 2>&1 </dev/null) || rc=$?
  if [ "$rc" = "$want" ] && grep -Eq -- "$pattern" <<<"$output"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $name: exit $rc (want $want), output:"; echo "$output" | head -5
  fi
}
# One line on stderr for bad input.
one_line() {
  local rc=0 err
  err=$("$@" 2>&1 >/dev/null </dev/null) || rc=$?
  [ "$rc" = 2 ] && [ "$(grep -c . <<<"$err")" = 1 ]
}
F="$root/ci/fetch_flashinfer.sh"
H="$root/ci/flashinfer_history.sh"
expect "fetch: unknown option" 2 "unknown option '--bogus'" bash "$F" --bogus
expect "fetch: not a version" 2 "'1.x' is not a release version" bash "$F" 1.x
expect "fetch: bad version among good ones" 2 "'0.7-rc' is not" bash "$F" 0.2.0 0.7-rc
expect "fetch: --list takes no argument" 2 "--list takes no arguments" bash "$F" --list 0.7.4
expect "fetch: --path of a cached release" 0 "flashinfer-python-0.2.0/include$" bash "$F" --path 0.2.0
expect "fetch: --path of an uncached release" 1 "is not fetched" bash "$F" --path 9.9.9
expect "fetch: an empty argument" 2 "an empty argument" bash "$F" ""
expect "fetch: a relative cache is the caller's" 0 "^$here/fixtures/cache/flashinfer-python-0.2.0/include$" \
  bash -c 'cd "$1" && FUSIONCHECK_CACHE=cache bash "$2" --path 0.2.0' _ "$here/fixtures" "$F"
expect "fetch: a cached release is not downloaded again" 0 "0.2.1 headers in .*flashinfer-python-0.2.1/include" bash "$F" 0.2.1
# A cached include tree without the wheel's jit/ files (or NO-JIT) is downloaded again; a
# python3 whose pip always fails stands in for PyPI.
mkdir -p "$tmp/bin"
printf '#!/bin/sh\n[ "$1" = -m ] && [ "$2" = pip ] && { echo "ERROR: offline"; exit 1; }\nexec %s "$@"\n' \
  "$(command -v python3)" >"$tmp/bin/python3"
chmod +x "$tmp/bin/python3"
expect "fetch: a cached release without jit/ is downloaded again" 1 "0.2.0: pip download failed" \
  env PATH="$tmp/bin:$PATH" bash "$F" 0.2.0
expect "fetch: --all when PyPI cannot be listed" 1 "could not list flashinfer-python's releases" \
  env PATH="$tmp/bin:$PATH" bash "$F" --all
expect "history: --cases 0" 2 "--cases must be a whole number" bash "$H" --cases 0 --out "$tmp/o"
expect "history: --cases not a number" 2 "--cases must be" bash "$H" --cases 1e3 --out "$tmp/o"
expect "history: unknown option" 2 "unknown option '--bogus'" bash "$H" --bogus
expect "history: --ranks 4" 2 "built for 2 ranks" bash "$H" --ranks 4 --out "$tmp/o"
expect "history: not a release" 2 "'latest' is not a flashinfer-python release" bash "$H" latest
expect "history: release not cached" 2 "9.9.9 is not in the cache" bash "$H" --dry-run --out "$tmp/o" 9.9.9
expect "history: bisect newer first" 2 "A must be the older" bash "$H" --bisect 0.2.1 0.1.0 --out "$tmp/o"
expect "history: bisect one release" 2 "two different releases" bash "$H" --bisect 0.2.1 0.2.1 --out "$tmp/o"
expect "history: bisect uncached end" 2 "must both be in the cache" bash "$H" --bisect 0.1.0 0.3.0 --dry-run --out "$tmp/o"
expect "history: --out a file" 2 "exists and is not a folder" bash "$H" --dry-run --out /dev/null
expect "history: --out unwritable" 2 "cannot write to --out" bash "$H" --dry-run --out /proc/fc-no-such
# Every minor version's first release and every release whose header changed; not 0.1.1
# (same header, same minor) nor 0.2.1.post1 (same header as 0.2.1).
expect "history: --changed on the fixture cache" 0 "^== FlashInfer releases: 0.1.0 0.2.0 0.2.1$" \
  bash "$H" --dry-run --out "$tmp/o"
expect "history: bisect range" 0 "^== FlashInfer releases: 0.1.1 0.2.0 0.2.1$" \
  bash "$H" --dry-run --bisect 0.1.1 0.2.1 --out "$tmp/o"
# The run itself, over a stand-in binary (fixtures/fake_build): the table, and bisect finding
# where the verdict changes (releases before 0.2.1 fail).
if command -v mpirun >/dev/null 2>&1; then
  fake="$here/fixtures/fake_build"
  expect "history: a failing and a passing release" 1 "\| 0.2.0 \| passed \| FAILED \[agreement\] after 3 cases, 0.05 s" \
    bash "$H" --no-build --build "$fake" --cases 10 --out "$tmp/run" 0.2.0 0.2.1
  expect "history: the table names the passing release" 0 "\| 0.2.1 \| passed \| passed \(10 cases, 0.5 s\)" \
    cat "$tmp/run/history.md"
  expect "history: bisect" 1 "verdict changes between 0.2.0 and 0.2.1" \
    bash "$H" --no-build --build "$fake" --cases 10 --out "$tmp/bisect" --bisect 0.1.0 0.2.1
fi
# The GPU suite's figures for results.md, from a fixture report folder.
R="$root/ci/gpu_results.py"
reports="$here/fixtures/gpu_reports"
expect "results: a step's command and result line" 0 \
  "\| check-ours-2 \| \`mpirun -np 2 .*--cases 10000\` \| 0 \| 40s \| 2 ranks, mutant none, .*all passed \|" \
  python3 "$R" "$reports" --date 2026-01-01 --device "1 x GPU"
expect "results: a failed step's exit code stands out" 0 "\| kill-table-flashinfer-2-s9 \| .* \| \*\*1\*\* \|.*1 of 1 mutant runs killed; control passed" \
  python3 "$R" "$reports" --device "1 x GPU"
expect "results: the build as the suite recorded it" 0 "build \`build/h200\` \(CUDA architectures 90\), commit 0123abc" \
  python3 "$R" "$reports" --device x
expect "results: commands without the report paths" 0 "\`mpirun -np 2 fusioncheck gpu kill-table --kernel flashinfer --seed 9\`" \
  python3 "$R" "$reports" --device x
expect "results: the kill tables follow" 0 "^\| float-sentinel \| yes \|$" python3 "$R" "$reports" --device x
expect "results: no steps" 2 "steps.txt: no steps recorded" python3 "$R" "$tmp" --device x
expect "results: not a folder" 2 "not a folder" python3 "$R" "$tmp/none"
printf '# Results\n\nbefore\n<!-- gpu_suite:begin -->\nold figures\n<!-- gpu_suite:end -->\nafter\n' >"$tmp/results.md"
expect "results: --into replaces the block" 0 "" python3 "$R" "$reports" --device x --into "$tmp/results.md"
expect "results: the old figures are gone, the rest kept" 0 "^before$" grep -v "old figures" "$tmp/results.md"
expect "results: no old figures left" 1 "" grep -q "old figures" "$tmp/results.md"
expect "results: the new figures are in" 0 "smoke-ours-2" cat "$tmp/results.md"
printf '# no markers\n' >"$tmp/plain.md"
expect "results: --into a file without markers" 2 "no '<!-- gpu_suite:begin -->'" \
  python3 "$R" "$reports" --device x --into "$tmp/plain.md"
# The shipped-wheels audit refuses bad settings before any download.
W="$root/ci/audit_wheels.sh"
fake="$here/fixtures/fake_build"
expect "wheels: no binary" 2 "no fusioncheck binary at $tmp/nobuild/bin/fusioncheck" env BUILD="$tmp/nobuild" bash "$W"
expect "wheels: TIMEOUT not a number" 2 "TIMEOUT=soon: not a number of seconds" env BUILD="$fake" TIMEOUT=soon bash "$W"
expect "wheels: ARCH not an architecture" 2 "ARCH=compute_90: not an architecture list" env BUILD="$fake" ARCH=compute_90 bash "$W"
expect "wheels: not a requirement" 2 "'vllm;rm': not a requirement" env BUILD="$fake" bash "$W" "vllm;rm"
real_build=$(cd "$(dirname "$fc")/.." && pwd)
# (A cache of its own and a requirement PyPI lacks: nothing is downloaded even if the check broke.)
expect "wheels: KERNELS the audit refuses" 2 "KERNELS=\(ab: .*pattern refused: not a valid regular expression" \
  env BUILD="$real_build" KERNELS="(ab" CACHE="$tmp/wheels" bash "$W" fusioncheck-no-such-package==0
expect "wheels: a relative BUILD is the caller's" 2 "no fusioncheck binary at $tmp/nobuild/bin/fusioncheck" \
  bash -c 'cd "$1" && BUILD=nobuild bash "$2"' _ "$tmp" "$W"
# The GPU suite refuses bad settings before it looks for a GPU, and a machine without one.
G="$root/ci/gpu_suite.sh"
fake="$here/fixtures/fake_build"
expect "gpu suite: no binary" 2 "no fusioncheck binary at $tmp/nobuild/bin/fusioncheck" env BUILD="$tmp/nobuild" bash "$G"
expect "gpu suite: CASES not a number" 2 "CASES=1e4: not a positive integer" env BUILD="$fake" CASES=1e4 bash "$G"
expect "gpu suite: KILL_SEEDS not seeds" 2 "KILL_SEEDS='9,3': not seeds" env BUILD="$fake" KILL_SEEDS=9,3 bash "$G"
expect "gpu suite: STRICT not 0 or 1" 2 "STRICT=yes: 0 or 1" env BUILD="$fake" STRICT=yes bash "$G"
expect "gpu suite: KNOWN missing" 2 "KNOWN=$tmp/none.json: no such file" env BUILD="$fake" KNOWN="$tmp/none.json" bash "$G"
expect "gpu suite: a relative BUILD is the caller's" 2 "no fusioncheck binary at $tmp/nobuild/bin/fusioncheck" \
  bash -c 'cd "$1" && BUILD=nobuild bash "$2"' _ "$tmp" "$G"
if ! command -v nvidia-smi >/dev/null 2>&1; then
  expect "gpu suite: no GPU" 2 "no GPU found" env BUILD="$fake" REPORTS="$tmp/reports" bash "$G"
fi
# Hostfile mode: every node of a (fake) allocation runs the single-node suite and its reports
# come back into REPORTS/<host>/; here one node, "localhost", whose nvidia-smi finds no GPU (a
# stand-in first on PATH), so its suite exits 2 and the mode names it and fails.
mkdir -p "$tmp/nogpu"
printf '#!/bin/sh\nexit 0\n' >"$tmp/nogpu/nvidia-smi" && chmod +x "$tmp/nogpu/nvidia-smi"
printf '# the allocation\nlocalhost slots=2\n\nlocalhost\n' >"$tmp/hosts"
if command -v mpirun >/dev/null 2>&1; then
  expect "gpu suite: hostfile mode runs each node and gathers its reports" 1 \
    "^gpu_suite: node localhost: exit 2: gpu_suite: no GPU found$" \
    env PATH="$tmp/nogpu:$PATH" HOSTFILE="$tmp/hosts" BUILD="$fake" REPORTS="$tmp/hostreports" bash "$G"
  expect "gpu suite: the node's log came back" 0 "^gpu_suite: no GPU found$" cat "$tmp/hostreports/localhost/suite.log"
fi
printf '# nothing here\n\n' >"$tmp/nohosts"
expect "gpu suite: a hostfile without hosts" 2 "names no host" env HOSTFILE="$tmp/nohosts" BUILD="$fake" REPORTS="$tmp/r2" bash "$G"
printf 'node1;rm slots=1\n' >"$tmp/badhost"
expect "gpu suite: a hostfile with a bad host name" 2 "'node1;rm' is not a host name" env HOSTFILE="$tmp/badhost" BUILD="$fake" REPORTS="$tmp/r3" bash "$G"
expect "gpu suite: an unreadable hostfile" 2 "HOSTFILE=$tmp/missing: not a readable file" env HOSTFILE="$tmp/missing" BUILD="$fake" REPORTS="$tmp/r4" bash "$G"
# The GPUs' architectures for the shared configuration, under set -e -o pipefail as setup.sh
# and test.sh run it: none without nvidia-smi (a stand-in that is "not found"), else each once.
mkdir -p "$tmp/nosmi" "$tmp/smi"
printf '#!/bin/sh\nexit 127\n' >"$tmp/nosmi/nvidia-smi"
printf '#!/bin/sh\nprintf "9.0\\n12.0\\n9.0\\n"\n' >"$tmp/smi/nvidia-smi"
chmod +x "$tmp/nosmi/nvidia-smi" "$tmp/smi/nvidia-smi"
archs_of() { PATH="$1:$PATH" bash -c 'set -euo pipefail; source "$0/ci/lib.sh"; a=$(fc_gpu_archs); echo "archs=[$a]"' "$root"; }
expect "lib: no GPU, no architectures, no failure" 0 "^archs=\[\]$" archs_of "$tmp/nosmi"
expect "lib: each GPU architecture once" 0 "^archs=\[120;90\]$" archs_of "$tmp/smi"
# The GPU suite's closing line on known findings, from its JSON reports.
K="$root/ci/known_summary.py"
mkdir -p "$tmp/known"
echo '[{"outcome": "pass"}, {"outcome": "known fi-moe-partial-warp-rmsnorm"}]' >"$tmp/known/smoke-flashinfer-moe-2.json"
echo '{"mutant": "none", "new_finding": false, "known_findings": [{"id": "fi-moe-finalize-remote-read", "state": "known"}, {"id": "x", "state": "absent"}]}' >"$tmp/known/check-flashinfer-moe-2.json"
echo '[{"mutant": "none", "new_finding": false, "known_findings": []}, {"mutant": "float-sentinel", "new_finding": true, "known_findings": []}]' >"$tmp/known/kill-table-flashinfer-moe-2-s1.json"
expect "known summary: known reproduced, a killed mutant is no new finding" 0 \
  "^gpu_suite: 2 known findings reproduced, 0 new$" python3 "$K" "$tmp/known"
echo '{"mutant": "none", "new_finding": true, "known_findings": []}' >"$tmp/known/check-ours-2.json"
expect "known summary: a new finding in a check" 0 "NEW finding in check-ours-2.json" python3 "$K" "$tmp/known"
expect "known summary: not a folder" 2 "usage" python3 "$K" "$tmp/none"
echo '{' >"$tmp/known/check-bad-2.json"
expect "known summary: a report that is not JSON" 2 "check-bad-2.json" python3 "$K" "$tmp/known"
# The format check: a misformatted file fails it, a formatted one passes.
if command -v clang-format >/dev/null 2>&1; then
  expect "format: a misformatted file" 1 "unformatted.cpp is not formatted" \
    bash "$root/ci/check_format.sh" "$here/fixtures/unformatted.cpp"
  expect "format: a formatted file" 0 "1 files, 0 not formatted" bash "$root/ci/check_format.sh" "$here/fixtures/formatted.cpp"
  expect "format: a missing file" 2 "no such file" bash "$root/ci/check_format.sh" "$tmp/none.cpp"
fi
for args in "--cases 0" "--bogus" "--ranks 3" "latest"; do
  # shellcheck disable=SC2086
  if one_line bash "$H" $args; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: history $args: not one line on stderr"; fi
done
# The shipped-wheels explanation check (ci/wheels_findings.py) on fixture reports and doc.
W="$root/ci/wheels_findings.py"
WF="$here/fixtures/wheels"
expect "wheels: extract keeps findings, drops notes" 0 '"kernel": "symKernel_Tma_sum"' python3 "$W" extract "$WF/reports"
if python3 "$W" extract "$WF/reports" | cmp -s - "$WF/findings.json"; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL: wheels: extract output differs from fixtures/wheels/findings.json"; fi
expect "wheels: every fixture finding explained" 0 "every finding is explained \(3 finding" python3 "$W" check --findings "$WF/findings.json" --doc "$WF/doc.md"
expect "wheels: a missing explanation fails" 1 "UNEXPLAINED: wheelb-2.0-py3-none-any lib/libb.so.2 sync-differs-between-archs sm_90" python3 "$W" check --findings "$WF/findings.json" --doc "$WF/doc.md" --drop-explanation 2
sed 's/^## After the table/| `wheela-1\\.0-.*` | `lib_a` | `nothing_like_this` | `empty-body` | `sm_90` | fixture: stale |\n\n## After the table/' "$WF/doc.md" >"$tmp/stale.md"
expect "wheels: a stale explanation fails" 1 "STALE: explanation matches no finding: .*nothing_like_this" python3 "$W" check --findings "$WF/findings.json" --doc "$tmp/stale.md"
echo '{"not": "a list"}' >"$tmp/bad.json"
expect "wheels: malformed findings file" 2 "not a list of findings" python3 "$W" check --findings "$tmp/bad.json" --doc "$WF/doc.md"
sed 's/^| `wheela-1\\.0-.*` |.*$/| `wheela(` | `x` | `y` | `z` | `w` | bad regex |/' "$WF/doc.md" >"$tmp/badrx.md"
expect "wheels: a bad regex in the doc" 2 "bad regex in" python3 "$W" check --findings "$WF/findings.json" --doc "$tmp/badrx.md"
printf '## Explained findings\n| `a` | `b` | `c` | `d` | `e` |\n' >"$tmp/short.md"
expect "wheels: an explanation row without its reason" 2 "needs 6 cells" python3 "$W" check --findings "$WF/findings.json" --doc "$tmp/short.md"
mkdir -p "$tmp/noreport"
expect "wheels: no report" 2 "no JSON report in" python3 "$W" extract "$tmp/noreport"
# The audit across releases: PyPI's list read from a fixture, the diff summarised, each
# finding checked against the explanations of a document (ci/release_history.py), and the
# driver's bad settings (ci/audit_releases.sh; its run end to end: property_tests/audit).
RH="$root/ci/release_history.py"
RF="$here/fixtures/releases"
expect "releases: final x86_64 wheels, oldest first, the last N" 0 "^1\.0 1\.9\.post1 1\.10$" \
  bash -c 'python3 "$1" versions fcpkg 3 --index-json "$2" | tr "\n" " " | sed "s/ $//"' _ "$RH" "$RF/index.json"
expect "releases: fewer than two" 2 "COUNT 1: a diff needs two releases" python3 "$RH" versions fcpkg 1 --index-json "$RF/index.json"
echo '{"info": {}}' >"$tmp/norel.json"
expect "releases: an index without releases" 2 "the index has no releases" python3 "$RH" versions fcpkg 2 --index-json "$tmp/norel.json"
expect "releases: an index that is not JSON" 2 "doc.md: " python3 "$RH" versions fcpkg 2 --index-json "$RF/doc.md"
"$fc" audit --diff-releases --json "$root/property_tests/audit/fixtures/releases/pkg-1.0.json" \
  "$root/property_tests/audit/fixtures/releases/pkg-1.1.json" >"$tmp/diff.json"
expect "releases: the summary counts the step" 0 "^\| pkg-1\.0 → pkg-1\.1 \| 1 \| 1 \| 1 \| 0 \| 0 \| 1 \|$" python3 "$RH" summary "$tmp/diff.json"
expect "releases: the finding explained" 0 "1 finding\(s\), 0 lost class\(es\) unexplained, 0 stale" \
  python3 "$RH" check --diff "$tmp/diff.json" --doc "$RF/doc.md"
expect "releases: its explanation dropped" 1 "UNEXPLAINED: pkg-1\.0 -> pkg-1\.1: pkg_allreduce\(Params\) \[sm_90\] lost griddep\.wait" \
  python3 "$RH" check --diff "$tmp/diff.json" --doc "$RF/doc.md" --drop-explanation 1
sed 's/^| `pkg-1\\.0 -> pkg-1\\.1` | `pkg_allreduce`.*$/&\n| `pkg-1\\.0 -> pkg-1\\.1` | `other_kernel` | `sm_90` | `fence\\.sys` | fixture: stale |/' "$RF/doc.md" >"$tmp/stale-rel.md"
expect "releases: a stale explanation" 1 "STALE: .*other_kernel" python3 "$RH" check --diff "$tmp/diff.json" --doc "$tmp/stale-rel.md"
expect "releases: not a diff" 2 "not the JSON of" python3 "$RH" check --diff "$RF/index.json" --doc "$RF/doc.md"
A="$root/ci/audit_releases.sh"
expect "releases: one release" 2 "COUNT=1: give 2 releases or more" env BUILD="$fake" bash "$A" fcpkg 1
expect "releases: not a package" 2 "'fc;pkg': not a package name" env BUILD="$fake" bash "$A" "fc;pkg" 2
expect "releases: versions that are not COUNT" 2 "1 versions given for COUNT=2" env BUILD="$fake" bash "$A" fcpkg 2 1.0
expect "releases: no binary" 2 "no fusioncheck binary at $tmp/nobuild/bin/fusioncheck" env BUILD="$tmp/nobuild" bash "$A" fcpkg 2
expect "releases: JOBS not a number" 2 "JOBS=many: not a number of runs" env BUILD="$fake" JOBS=many bash "$A" fcpkg 2
expect "releases: FIND_LINKS without versions" 2 "FIND_LINKS: give the versions" env BUILD="$fake" FIND_LINKS="$tmp" bash "$A" fcpkg 2
# ci/fetch_sglang.sh on fixture wheels made here (FIND_LINKS): the kernels' folders and the
# tvm-ffi headers its METADATA names are unpacked, a cached release is not fetched again.
S="$root/ci/fetch_sglang.sh"
mkdir -p "$tmp/wheels"
python3 - "$tmp/wheels" <<'PY'
import sys, zipfile
out = sys.argv[1]
def wheel(name, version, files, requires=""):
    info = f"{name}-{version}.dist-info/"
    with zipfile.ZipFile(f"{out}/{name}-{version}-py3-none-any.whl", "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr(info + "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{requires}")
        z.writestr(info + "WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(info + "RECORD", "")
wheel("sglang", "9.9.1", {"sglang/kernels/jit/include/sgl_kernel/ffi.h": "// ffi\n",
                          "sglang/kernels/jit/csrc/distributed/custom_all_reduce.cuh": "// car\n"},
      "Requires-Dist: apache-tvm-ffi==9.8.1\n")
wheel("sglang", "9.9.2", {"sglang/kernels/jit/include/sgl_kernel/ffi.h": "// ffi\n"})
wheel("sglang", "9.9.3", {"sglang/kernels/jit/include/sgl_kernel/ffi.h": "// ffi\n",
                          "sglang/kernels/jit/csrc/distributed/custom_all_reduce.cuh": "// car\n"})
wheel("apache_tvm_ffi", "9.8.1", {"tvm_ffi/include/tvm/ffi/any.h": "// any\n"})
PY
SC="$tmp/sglang-cache"
expect "sglang: unpacked with its tvm-ffi headers" 0 "SGLang 9.9.1 kernels \(apache-tvm-ffi 9.8.1 headers\) unpacked" \
  env FUSIONCHECK_CACHE="$SC" FIND_LINKS="$tmp/wheels" bash "$S" 9.9.1
expect "sglang: the layout" 0 "^ok$" bash -c '[ -f "$1/include/sgl_kernel/ffi.h" ] &&
  [ -f "$1/csrc/distributed/custom_all_reduce.cuh" ] && [ -f "$1/tvm_ffi/include/tvm/ffi/any.h" ] &&
  [ "$(cat "$1/TVM_FFI_VERSION")" = 9.8.1 ] && echo ok' _ "$SC/sglang-9.9.1"
expect "sglang: cached, not fetched again" 0 "SGLang 9.9.1 kernels in " \
  env FUSIONCHECK_CACHE="$SC" FIND_LINKS="$tmp/nowheels-but-unused" bash -c 'mkdir -p "$FIND_LINKS" && bash "$1" 9.9.1' _ "$S"
expect "sglang: --path" 0 "sglang-9.9.1$" env FUSIONCHECK_CACHE="$SC" bash "$S" --path 9.9.1
expect "sglang: a wheel without the kernels" 1 "9.9.2: the wheel has no sglang/kernels/jit/csrc/distributed/" \
  env FUSIONCHECK_CACHE="$SC" FIND_LINKS="$tmp/wheels" bash "$S" 9.9.2
expect "sglang: no tvm-ffi requirement" 1 "9.9.3: its METADATA names no apache-tvm-ffi" \
  env FUSIONCHECK_CACHE="$SC" FIND_LINKS="$tmp/wheels" bash "$S" 9.9.3
expect "sglang: a release not there" 1 "sglang==9.9.9: pip download failed" \
  env FUSIONCHECK_CACHE="$SC" FIND_LINKS="$tmp/wheels" bash "$S" 9.9.9
expect "sglang: not a version" 2 "'9.x' is not a release version" bash "$S" 9.x
expect "sglang: an empty argument" 2 "an empty argument" bash "$S" ""
expect "sglang: unknown option" 2 "unknown option '--all'" bash "$S" --all
expect "sglang: FIND_LINKS not a folder" 2 "FIND_LINKS=/nonexistent: not a folder" env FIND_LINKS=/nonexistent bash "$S" 9.9.1
expect "sglang: --path of a release not fetched" 1 "SGLang 9.9.7 is not fetched" env FUSIONCHECK_CACHE="$SC" bash "$S" --path 9.9.7
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
