#!/usr/bin/env bash
# README command 1: install dependencies, build, and run the main job
# (CPU-only machine: the sim over every profile and the audit of the compiled kernels;
# with GPUs: the GPU suite too).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install_deps.sh
source ci/env.sh
cmake --preset default
cmake --build --preset default
bash ci/main_job.sh
