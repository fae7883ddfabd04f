#!/usr/bin/env bash
# Installs what fusioncheck needs from Debian's packages (and cuobjdump from PyPI for the
# audit). Safe to run again: apt-get and pip skip what is already there.
set -euo pipefail
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  cmake ninja-build g++ git python3 \
  libeigen3-dev librapidcheck-dev libgtest-dev libgmock-dev libbenchmark-dev \
  libopenmpi-dev openmpi-bin libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev \
  libzip-dev libre2-dev python3-matplotlib clang-format >/dev/null
# cuobjdump (and nvdisasm, which its -sass needs) disassemble the compiled kernels for
# `fusioncheck audit`.
if ! command -v nvdisasm >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvdisasm ]; then
  python3 -m pip install -q nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm 2>/dev/null ||
    python3 -m pip install -q --break-system-packages nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
fi
# FlashInfer's headers (the adapter's kernel under test), from its pinned PyPI wheel, and one
# older release that ci/test.sh builds beside it (its compile probes find fields missing).
bash "$(dirname "$0")/fetch_flashinfer.sh"
bash "$(dirname "$0")/fetch_flashinfer.sh" "$(tr -d '[:space:]' <"$(dirname "$0")/old_flashinfer_release")"
# SGLang's push allreduce (the sglang-push family), from its pinned wheel's JIT sources.
bash "$(dirname "$0")/fetch_sglang.sh"
echo "fusioncheck: dependencies installed"
