#!/usr/bin/env bash
# The main job over an existing build: every step must pass.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
FC=build/default/mpi_launch/fusioncheck
"$FC" mutants
echo "fusioncheck: main job passed"
