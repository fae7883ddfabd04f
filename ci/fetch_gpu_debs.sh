#!/usr/bin/env bash
# The Debian packages the GPU test machine lacks, downloaded into .debs/ (ignored by git) for a
# machine without a network: ci/lib.sh's fc_use_carried_debs unpacks them there. That machine
# has its own OpenMPI (with headers): carrying Debian's OpenMPI or PMIx libraries would put a
# second PMIx before its mpirun's, so none is carried. Exit 1 when a download fails.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(
  librapidcheck-dev googletest libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian
  libcli11-dev nlohmann-json3-dev libfmt-dev libfmt9 libspdlog-dev libspdlog1.10 libeigen3-dev
  libzip-dev libzip4 libgfortran5 libre2-dev libre2-9
)
mkdir -p .debs
cd .debs
if ! apt-get download "${packages[@]}" >/dev/null; then
  echo "fetch_gpu_debs.sh: apt-get download failed (run 'apt-get update' first?)" >&2
  exit 1
fi
echo "fusioncheck: ${#packages[@]} packages in .debs/ ($(du -sh . | cut -f1))"
