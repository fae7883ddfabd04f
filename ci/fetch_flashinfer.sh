#!/usr/bin/env bash
# FlashInfer's headers for the adapter (adapters/flashinfer): downloads flashinfer-python
# wheels from PyPI and unpacks only their include tree into a cache outside the repository,
# one folder per release, where CMake finds them:
#   ${FUSIONCHECK_CACHE:-$HOME/.cache/fusioncheck}/flashinfer-python-<version>/include
# and beside it jit/ with the wheel's flashinfer/jit/core.py and comm.py (where its JIT flags
# are; adapters/flashinfer/jit_flags.py reads them for the fast-math instance).
#
#   ci/fetch_flashinfer.sh                  the pinned release (adapters/flashinfer/VERSION)
#   ci/fetch_flashinfer.sh 0.6.18 0.7.2     these releases
#   ci/fetch_flashinfer.sh --all            every release PyPI serves
#   ci/fetch_flashinfer.sh --list           the releases PyPI serves, newest first; fetches nothing
#   ci/fetch_flashinfer.sh --path VERSION   prints the include folder of a fetched release
#
# A release whose wheel carries no include tree (the oldest ones shipped sources only) is
# reported and recorded (a file NO-INCLUDE in its folder) so that it is not downloaded again.
# Exit 2 for a malformed version or option, 1 when a download or unpack fails. Nothing of
# FlashInfer is committed; any other tree is given to CMake with
# -DFUSIONCHECK_FLASHINFER_INCLUDE=DIR instead. Safe to run again.
set -euo pipefail
caller=$PWD  # a relative FUSIONCHECK_CACHE is relative to it
cd "$(dirname "$0")/.."
source ci/lib.sh
cache=$(fc_from_caller "$caller" "${FUSIONCHECK_CACHE:-}")
cache=${cache:-$HOME/.cache/fusioncheck}
pinned=$(tr -d '[:space:]' <adapters/flashinfer/VERSION)
version_re='^[0-9]+(\.[0-9]+){1,3}(\.post[0-9]+)?$'

die2() { echo "fetch_flashinfer.sh: $*" >&2; exit 2; }

list_releases() {  # newest first, as pip prints them
  local out
  out=$(python3 -m pip index versions flashinfer-python 2>/dev/null) ||
    { echo "fetch_flashinfer.sh: pip could not list flashinfer-python's releases" >&2; return 1; }
  sed -n 's/^Available versions: //p' <<<"$out" | tr -d ' ' | tr ',' '\n'
}

fetch_one() {  # VERSION: 0 fetched or cached, 1 failure
  local version=$1 dest="$cache/flashinfer-python-$1" work wheel
  if [ -d "$dest/include/flashinfer" ] && { [ -f "$dest/jit/core.py" ] || [ -f "$dest/NO-JIT" ]; }; then
    echo "fusioncheck: FlashInfer $version headers in $dest/include"
    return 0
  fi
  if [ -f "$dest/NO-INCLUDE" ]; then
    echo "fusioncheck: FlashInfer $version: $(cat "$dest/NO-INCLUDE")"
    return 0
  fi
  work=$(mktemp -d)
  if ! python3 -m pip download -q --no-deps --only-binary=:all: -d "$work" "flashinfer-python==$version" >"$work/pip.log" 2>&1; then
    echo "fetch_flashinfer.sh: $version: pip download failed: $(tail -1 "$work/pip.log")" >&2
    rm -rf "$work"; return 1
  fi
  wheel=$(ls "$work"/flashinfer_python-*.whl 2>/dev/null | head -1)
  if [ -z "$wheel" ]; then
    echo "fetch_flashinfer.sh: $version: no wheel downloaded" >&2
    rm -rf "$work"; return 1
  fi
  mkdir -p "$dest"
  if ! python3 - "$wheel" "$work/unpacked" "$dest" <<'PY'
import os, sys, zipfile
wheel, out, dest = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    # Newer wheels: flashinfer/data/include/; older ones: flashinfer/data/include or include/ at
    # the top of the package. The first prefix holding flashinfer/ headers wins.
    jit = [n for n in ("flashinfer/jit/core.py", "flashinfer/jit/comm.py") if n in names]
    if len(jit) == 2:
        z.extractall(out, jit)
        os.rename(os.path.join(out, "flashinfer/jit"), os.path.join(out, "jit"))
    for prefix in ("flashinfer/data/include/", "flashinfer/include/"):
        members = [n for n in names if n.startswith(prefix + "flashinfer/")]
        if members:
            z.extractall(out, members)
            os.rename(os.path.join(out, prefix), os.path.join(out, "include"))
            sys.exit(0)
with open(os.path.join(dest, "NO-INCLUDE"), "w") as f:
    f.write("the wheel carries no include tree (sources only)\n")
sys.exit(3)
PY
  then
    rc=$?
    rm -rf "$work"
    if [ "$rc" = 3 ]; then echo "fusioncheck: FlashInfer $version: $(cat "$dest/NO-INCLUDE")"; return 0; fi
    echo "fetch_flashinfer.sh: $version: unpacking $wheel failed" >&2
    return 1
  fi
  rm -rf "$dest/include" "$dest/jit" "$dest/NO-JIT"
  mv "$work/unpacked/include" "$dest/include"
  if [ -d "$work/unpacked/jit" ]; then
    mv "$work/unpacked/jit" "$dest/jit"
  else
    echo "the wheel has no flashinfer/jit/core.py and comm.py" >"$dest/NO-JIT"
  fi
  rm -rf "$work"
  echo "fusioncheck: FlashInfer $version headers unpacked into $dest/include"
}

versions=()
[ $# -eq 0 ] && set -- "$pinned"
case "$1" in
  "") die2 "an empty argument (a release version, --all, --list or --path VERSION)" ;;
  --list) [ $# -eq 1 ] || die2 "--list takes no arguments"; list_releases; exit ;;
  --path)
    [ $# -eq 2 ] || die2 "--path takes one version"
    [[ $2 =~ $version_re ]] || die2 "'$2' is not a release version (e.g. $pinned)"
    [ -d "$cache/flashinfer-python-$2/include/flashinfer" ] ||
      { echo "fetch_flashinfer.sh: FlashInfer $2 is not fetched (ci/fetch_flashinfer.sh $2)" >&2; exit 1; }
    echo "$cache/flashinfer-python-$2/include"; exit ;;
  --all)
    [ $# -eq 1 ] || die2 "--all takes no arguments"
    listed=$(list_releases) || exit 1
    mapfile -t versions <<<"$listed"
    [ -n "$listed" ] || { echo "fetch_flashinfer.sh: PyPI listed no release of flashinfer-python" >&2; exit 1; } ;;
  -*) die2 "unknown option '$1' (versions, --all, --list or --path VERSION)" ;;
  *) versions=("$@") ;;
esac
for v in "${versions[@]}"; do
  [[ $v =~ $version_re ]] || die2 "'$v' is not a release version (e.g. $pinned)"
done
failed=0
for v in "${versions[@]}"; do fetch_one "$v" || failed=1; done
exit "$failed"
