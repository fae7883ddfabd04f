#!/usr/bin/env bash
# SGLang's push allreduce as its wheel ships it (JIT sources, compiled by SGLang at run time):
# downloads the sglang wheel from PyPI and unpacks only what that kernel needs into a cache
# outside the repository, one folder per release:
#   ${FUSIONCHECK_CACHE:-$HOME/.cache/fusioncheck}/sglang-<version>/
#     include/sgl_kernel/...          sglang/kernels/jit/include (the device headers)
#     csrc/distributed/...            sglang/kernels/jit/csrc/distributed (the kernels)
#     tvm_ffi/include/...             the apache-tvm-ffi release the wheel requires (its host
#                                     types are in the kernels' headers)
#     TVM_FFI_VERSION                 that release
#
#   ci/fetch_sglang.sh                  the pinned release (adapters/sglang/VERSION)
#   ci/fetch_sglang.sh 0.5.23 ...       these releases
#   ci/fetch_sglang.sh --path VERSION   prints the folder of a fetched release
#   FIND_LINKS=DIR ci/fetch_sglang.sh VERSION   wheels from this folder (pip --no-index)
#
# Exit 2 for a malformed version or option, 1 when a download or unpack fails, 0 otherwise
# (a cached release is not downloaded again). Nothing of SGLang is committed.
set -euo pipefail
caller=$PWD  # relative FUSIONCHECK_CACHE and FIND_LINKS are relative to it
cd "$(dirname "$0")/.."
source ci/lib.sh
cache=$(fc_from_caller "$caller" "${FUSIONCHECK_CACHE:-}")
cache=${cache:-$HOME/.cache/fusioncheck}
pinned=$(tr -d '[:space:]' <adapters/sglang/VERSION)
version_re='^[0-9]+(\.[0-9]+){1,3}(\.post[0-9]+)?$'

die2() { echo "fetch_sglang.sh: $*" >&2; exit 2; }

find_links=$(fc_from_caller "$caller" "${FIND_LINKS:-}")
pip_source=()
if [ -n "$find_links" ]; then
  [ -d "$find_links" ] || die2 "FIND_LINKS=$find_links: not a folder"
  pip_source=(--no-index --find-links "$find_links")
fi

# download PACKAGE==VERSION WORK: the wheel's path on stdout; 1 with one line on stderr.
download() {
  local spec=$1 work=$2 wheel
  if ! python3 -m pip download -q --no-deps --only-binary=:all: "${pip_source[@]}" -d "$work" \
      "$spec" >"$work/pip.log" 2>&1; then
    echo "fetch_sglang.sh: $spec: pip download failed: $(tail -1 "$work/pip.log")" >&2
    return 1
  fi
  wheel=$(ls -t "$work"/*.whl 2>/dev/null | head -1)
  [ -n "$wheel" ] || { echo "fetch_sglang.sh: $spec: no wheel downloaded" >&2; return 1; }
  echo "$wheel"
}

# unpack WHEEL OUT: the sglang wheel's headers and kernels, and the tvm-ffi requirement.
unpack_sglang() {
  python3 - "$1" "$2" <<'PY'
import os, re, shutil, sys, zipfile
wheel, out = sys.argv[1:3]
moves = {"sglang/kernels/jit/include/": "include/", "sglang/kernels/jit/csrc/distributed/": "csrc/distributed/"}
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    for src, dst in moves.items():
        members = [n for n in names if n.startswith(src) and not n.endswith("/")]
        if not members:
            sys.exit(f"the wheel has no {src}")
        for n in members:
            target = os.path.join(out, dst, n[len(src):])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(n) as f, open(target, "wb") as g:
                shutil.copyfileobj(f, g)
    meta = [n for n in names if n.endswith(".dist-info/METADATA")]
    text = z.read(meta[0]).decode() if meta else ""
    m = re.search(r"^Requires-Dist: apache-tvm-ffi\s*\(?==\s*([0-9][0-9a-z.]*)", text, re.M)
    if not m:
        sys.exit("its METADATA names no apache-tvm-ffi==VERSION")
    with open(os.path.join(out, "TVM_FFI_VERSION"), "w") as f:
        f.write(m.group(1) + "\n")
PY
}

unpack_tvm_ffi() {
  python3 - "$1" "$2" <<'PY'
import os, shutil, sys, zipfile
wheel, out = sys.argv[1:3]
src = "tvm_ffi/include/"
with zipfile.ZipFile(wheel) as z:
    members = [n for n in z.namelist() if n.startswith(src) and not n.endswith("/")]
    if not members:
        sys.exit(f"the wheel has no {src}")
    for n in members:
        target = os.path.join(out, "tvm_ffi/include", n[len(src):])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(n) as f, open(target, "wb") as g:
            shutil.copyfileobj(f, g)
PY
}

fetch_one() {  # VERSION: 0 fetched or cached, 1 failure
  local version=$1 dest="$cache/sglang-$1" work wheel tvm why
  if [ -f "$dest/csrc/distributed/custom_all_reduce.cuh" ] && [ -d "$dest/tvm_ffi/include" ]; then
    echo "fusioncheck: SGLang $version kernels in $dest"
    return 0
  fi
  work=$(mktemp -d)
  if ! wheel=$(download "sglang==$version" "$work"); then rm -rf "$work"; return 1; fi
  if ! why=$(unpack_sglang "$wheel" "$work/unpacked" 2>&1); then
    echo "fetch_sglang.sh: $version: $(tail -1 <<<"$why")" >&2
    rm -rf "$work"; return 1
  fi
  tvm=$(tr -d '[:space:]' <"$work/unpacked/TVM_FFI_VERSION")
  mkdir -p "$work/tvm"
  if ! wheel=$(download "apache-tvm-ffi==$tvm" "$work/tvm"); then rm -rf "$work"; return 1; fi
  if ! why=$(unpack_tvm_ffi "$wheel" "$work/unpacked" 2>&1); then
    echo "fetch_sglang.sh: apache-tvm-ffi $tvm: $(tail -1 <<<"$why")" >&2
    rm -rf "$work"; return 1
  fi
  rm -rf "$dest"
  mkdir -p "$(dirname "$dest")"
  mv "$work/unpacked" "$dest"
  rm -rf "$work"
  echo "fusioncheck: SGLang $version kernels (apache-tvm-ffi $tvm headers) unpacked into $dest"
}

[ $# -eq 0 ] && set -- "$pinned"
case "$1" in
  "") die2 "an empty argument (a release version, or --path VERSION)" ;;
  --path)
    [ $# -eq 2 ] || die2 "--path takes one version"
    [[ $2 =~ $version_re ]] || die2 "'$2' is not a release version (e.g. $pinned)"
    [ -f "$cache/sglang-$2/csrc/distributed/custom_all_reduce.cuh" ] ||
      { echo "fetch_sglang.sh: SGLang $2 is not fetched (ci/fetch_sglang.sh $2)" >&2; exit 1; }
    echo "$cache/sglang-$2"; exit ;;
  -*) die2 "unknown option '$1' (versions or --path VERSION)" ;;
esac
for v in "$@"; do
  [[ $v =~ $version_re ]] || die2 "'$v' is not a release version (e.g. $pinned)"
done
failed=0
for v in "$@"; do fetch_one "$v" || failed=1; done
exit "$failed"
