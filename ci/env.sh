# Sourced by the ci/ scripts: finds nvcc and a pip-installed cuobjdump.
if [ -d /usr/local/cuda/bin ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
if ! command -v cuobjdump >/dev/null 2>&1; then
  for d in $(python3 -c 'import site,sys; print(" ".join(site.getsitepackages()+[site.getusersitepackages()]))' 2>/dev/null); do
    for b in "$d"/nvidia/*/bin/cuobjdump "$d"/nvidia/cuda_cuobjdump/bin/cuobjdump; do
      if [ -x "$b" ]; then export PATH="$(dirname "$b"):$PATH"; break 2; fi
    done
  done
fi
export NCCL_NVLS_ENABLE=0
