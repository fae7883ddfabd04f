#!/usr/bin/env bash
# A copy of the pinned FlashInfer include tree with the fixes of known findings applied
# (adapters/flashinfer/known/fixes/<id>.cmake), for a build that shows a finding gone:
#
#   ci/fixed_flashinfer_tree.sh OUT_DIR ID...
#   cmake --preset default -DFUSIONCHECK_FLASHINFER_INCLUDE=OUT_DIR ...   # then --known --strict
#
# OUT_DIR must not exist (nothing is overwritten). Exit 2 on bad input (an unknown id, the
# pinned tree not fetched, OUT_DIR present), 1 when a fix does not apply exactly once.
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/.."
source ci/lib.sh
die2() { echo "fixed_flashinfer_tree.sh: $*" >&2; exit 2; }
[ $# -ge 2 ] || die2 "usage: ci/fixed_flashinfer_tree.sh OUT_DIR ID... (ids: $(cd adapters/flashinfer/known/fixes && ls | sed 's/\.cmake$//' | tr '\n' ' '))"
out=$(fc_from_caller "$caller" "$1")
shift
[ -n "$out" ] && [ ! -e "$out" ] || die2 "$out exists (give a new folder)"
pinned=$(tr -d '[:space:]' <adapters/flashinfer/VERSION)
src=$(bash ci/fetch_flashinfer.sh --path "$pinned" 2>/dev/null) ||
  die2 "FlashInfer $pinned is not fetched (bash ci/fetch_flashinfer.sh)"
for id in "$@"; do
  [ -f "adapters/flashinfer/known/fixes/$id.cmake" ] || die2 "no fix for '$id' (adapters/flashinfer/known/fixes)"
done
mkdir -p "$out"
cp -r "$src/." "$out/"
for id in "$@"; do
  fix="$FC_ROOT/adapters/flashinfer/known/fixes/$id.cmake"
  header=$(sed -n 's/^set(FC_PATCH_HEADER \(.*\))$/\1/p' "$fix")
  target="$out/flashinfer/comm/$header"
  if ! cmake -DHEADER="$target" -DPATCH="$fix" -DOUT="$target.fixed" -P adapters/flashinfer/cmake/apply_patch.cmake >/dev/null 2>"$out/.fix.log"; then
    echo "fixed_flashinfer_tree.sh: $id does not apply: $(grep -m1 -v '^$' "$out/.fix.log")" >&2
    exit 1
  fi
  mv "$target.fixed" "$target"
  echo "fusioncheck: $id fixed in $target"
done
rm -f "$out/.fix.log"
