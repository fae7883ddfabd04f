#!/usr/bin/env bash
# FlashInfer's headers for the adapter (adapters/flashinfer): downloads the pinned
# flashinfer-python wheel from PyPI (adapters/flashinfer/VERSION) and unpacks only
# flashinfer/data/include into a cache outside the repository, where CMake finds it:
#   ${FUSIONCHECK_CACHE:-$HOME/.cache/fusioncheck}/flashinfer-python-<version>/include
# Nothing of FlashInfer is committed. Another include tree (a branch, an older release) is
# given to CMake with -DFUSIONCHECK_FLASHINFER_INCLUDE=DIR instead. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(tr -d '[:space:]' <adapters/flashinfer/VERSION)
cache=${FUSIONCHECK_CACHE:-$HOME/.cache/fusioncheck}
dest="$cache/flashinfer-python-$version"
if [ -f "$dest/include/flashinfer/comm/trtllm_allreduce_fusion.cuh" ]; then
  echo "fusioncheck: FlashInfer $version headers in $dest/include"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: -d "$work" "flashinfer-python==$version"
wheel=$(ls "$work"/flashinfer_python-"$version"-*.whl)
python3 - "$wheel" "$work/unpacked" <<'PY'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    members = [n for n in z.namelist() if n.startswith("flashinfer/data/include/")]
    if not members:
        sys.exit(f"{wheel}: no flashinfer/data/include in the wheel")
    z.extractall(out, members)
PY
mkdir -p "$dest"
rm -rf "$dest/include"
mv "$work/unpacked/flashinfer/data/include" "$dest/include"
echo "fusioncheck: FlashInfer $version headers unpacked into $dest/include"
