# shellcheck shell=bash
# What the ci/ scripts share; sourced by them (and by hand: `source ci/lib.sh`). Sourcing it
# sets PATH and a few variables and defines functions; it starts nothing. Safe under
# `set -euo pipefail`.
#   PATH          nvcc (/usr/local/cuda/bin) and a pip-installed cuobjdump / nvdisasm
#                 (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm) for `fusioncheck audit`
#   NCCL_NVLS_ENABLE=0, always: no NVLink multicast
#   OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1: OpenMPI runs as root on the test machines
#   CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY: /tmp/nvidia-mps(-log) unless set
#   fc_from_caller DIR PATH   PATH as given when absolute or empty, else DIR/PATH: a path the user
#                             typed, relative to the folder a script was started from (DIR)
#   fc_bin BUILD_DIR          prints the fusioncheck binary of a build (BUILD_DIR/bin/fusioncheck)
#   fc_configure_default      configures build/default as README's two commands share it
#   fc_tests_not_in PRESET OTHER   a ctest -I spec of PRESET's tests that OTHER does not run
#                             (empty when there are none)
#   fc_gpu_archs              the GPUs' CUDA architectures (90;120), empty without a GPU
#   fc_build_flashinfer_copies BUILD   adds FlashInfer's patched copies to a build (kill tables)
#   fc_use_carried_debs       machines without a network: unpacks .debs/ into /tmp/fcdeps
#   fc_mps_start / fc_mps_stop   the MPS daemon for ranks sharing a GPU; stop only quits a
#                             daemon that fc_mps_start started
#   fc_mps_running            whether an MPS daemon answers at CUDA_MPS_PIPE_DIRECTORY
#   FC_MPIRUN_FLAGS, fc_mpirun N CMD...   mpirun -np N with the flags every run here uses
#   fc_step NAME EXPECTED LOG CMD...      runs a step, records its exit code; fc_steps_report
#                             prints the record and fails when any step did

FC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ -d /usr/local/cuda/bin ] && [[ ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
# $1: a tool from NVIDIA's PyPI wheels; prints the folder holding it, fails when none does.
fc_pip_tool_dir() {
  local d b
  while IFS= read -r d; do
    for b in "$d"/nvidia/*/bin/"$1"; do
      if [ -x "$b" ]; then dirname "$b"; return 0; fi
    done
  done < <(python3 -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
  return 1
}
for _fc_tool in cuobjdump nvdisasm; do
  if ! command -v "$_fc_tool" >/dev/null 2>&1 && _fc_dir=$(fc_pip_tool_dir "$_fc_tool"); then
    export PATH="$_fc_dir:$PATH"
  fi
done
unset _fc_tool _fc_dir

export NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# These are where CUDA looks when they are unset; set, they can be passed on by mpirun -x.
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/nvidia-mps-log}

FC_MPIRUN_FLAGS=(--oversubscribe --bind-to none -x NCCL_NVLS_ENABLE -x CUDA_MPS_PIPE_DIRECTORY)
fc_mpirun() {  # N CMD ARGS...
  local n=$1; shift
  mpirun -np "$n" "${FC_MPIRUN_FLAGS[@]}" "$@"
}

fc_from_caller() {
  case $2 in
    "" | /*) printf '%s\n' "$2" ;;
    *) printf '%s/%s\n' "$1" "$2" ;;
  esac
}

fc_bin() { printf '%s/bin/fusioncheck\n' "${1:-build/default}"; }

# The CUDA architectures of this machine's GPUs, ";"-separated (9.0 -> 90); nothing where
# nvidia-smi is missing or finds no GPU (and no failure: callers run under set -e -o pipefail).
fc_gpu_archs() {
  nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d '. ' | sort -u |
    paste -sd';' || true
}

# The one configuration of build/default that setup.sh and test.sh share (test.sh then builds
# nothing setup.sh built). Without a GPU the CUDA code is compiled for sm_90 alone and the
# FlashInfer instances for 2 ranks: the CPU tests only build and load them, and the audit
# tests read sm_100 and sm_120 code of fixtures built for those architectures (and of the
# pdl-wait-missing copy, which every build compiles for sm_120); the PCIe and MoE instances
# are also compiled, not linked, for sm_100 and sm_120. With a GPU the code is compiled for
# that GPU and every rank count. Beside the pinned FlashInfer, one older release (its compile
# probes find what it lacks): --kernel flashinfer@<release>. The patched copies are not
# compiled here: the kill table's machine adds them (fc_build_flashinfer_copies).
# The tests of test preset $1 whose names test preset $2 does not list, as a ctest -I
# argument ("0,0,0,N,M,..."; empty when there are none): every test then runs in one of the two.
fc_tests_not_in() {
  local others
  others=$(cd "$FC_ROOT" && ctest --preset "$2" -N) || return 1
  (cd "$FC_ROOT" && ctest --preset "$1" -N) | awk -v others="$others" '
    BEGIN { n = split(others, lines, "\n")
            for (i = 1; i <= n; i++) if (lines[i] ~ /Test +#[0-9]+: /) {
              sub(/^.*Test +#[0-9]+: /, "", lines[i]); split(lines[i], w, " "); seen[w[1]] = 1 } }
    /Test +#[0-9]+: / { num = $0; sub(/^.*Test +#/, "", num); sub(/:.*$/, "", num)
                        name = $0; sub(/^.*Test +#[0-9]+: /, "", name); split(name, w, " ")
                        if (!(w[1] in seen)) list = list "," num }
    END { if (list != "") print "0,0,0" list }'
}

fc_configure_default() {
  local args=(-DFUSIONCHECK_FLASHINFER_RELEASES="$(tr -d '[:space:]' <"$FC_ROOT/ci/old_flashinfer_release")")
  local archs
  archs=$(fc_gpu_archs)
  if [ -n "$archs" ]; then  # the GPUs' own architectures (90 for compute capability 9.0)
    args+=("-DCMAKE_CUDA_ARCHITECTURES=$archs" -DFUSIONCHECK_FLASHINFER_ARCH_CHECK=)
  else
    # No GPU: the GPU test programs would only be skipped here (a GPU runner builds them).
    args+=(-DCMAKE_CUDA_ARCHITECTURES=90 -DFUSIONCHECK_FLASHINFER_RANKS=2
           "-DFUSIONCHECK_FLASHINFER_ARCH_CHECK=100;120" -DFUSIONCHECK_BUILD_GPU_TESTS=OFF)
  fi
  (cd "$FC_ROOT" && cmake --preset default "${args[@]}" >/dev/null)
}

# FlashInfer's patched copies (the kill table's negative controls) compiled into BUILD, for
# the architectures it is configured for, on the machine that runs them; nothing to do where
# they are built already or the build has no FlashInfer adapter.
fc_build_flashinfer_copies() {
  local build=${1:-build/default} copies
  copies=$(sed -n 's/^FUSIONCHECK_FLASHINFER_COPIES:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
  if [ -z "$copies" ] || [ "$copies" = ON ]; then return 0; fi
  echo "== building FlashInfer's patched copies into $build (first kill table here)"
  cmake -S "$FC_ROOT" -B "$build" -DFUSIONCHECK_FLASHINFER_COPIES=ON >/dev/null &&
    cmake --build "$build" --target fusioncheck
}

# The GPU test machine has no network: the Debian packages it lacks (RapidCheck and the like)
# are carried in .debs/ (ci/fetch_gpu_debs.sh downloads them), unpacked into
# FCDEPS (/tmp/fcdeps) and put on CMake's, the compiler's and the loader's paths. Packages the
# machine already has are left alone by CMake's search order. Nothing to do without .debs/;
# done once per environment (FC_DEBS_UNPACKED is exported to child scripts).
fc_use_carried_debs() {
  local prefix=${FCDEPS:-/tmp/fcdeps} deb
  [ -d "$FC_ROOT/.debs" ] || return 0
  [ "${FC_DEBS_UNPACKED:-}" = "$prefix" ] && return 0
  mkdir -p "$prefix"
  for deb in "$FC_ROOT"/.debs/*.deb; do
    [ -e "$deb" ] || continue
    dpkg -x "$deb" "$prefix" || { echo "fc_use_carried_debs: dpkg -x $deb failed" >&2; return 1; }
  done
  export CMAKE_PREFIX_PATH="$prefix/usr:$prefix/usr/lib/x86_64-linux-gnu/cmake:$prefix/usr/share/cmake${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export CPATH="$prefix/usr/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export FC_DEBS_UNPACKED=$prefix
}

# MPS lets ranks that share a GPU run at the same time (without it they are time-sliced).
# fc_mps_start starts the daemon unless one is running already, and remembers whether it did:
# fc_mps_stop quits only a daemon this shell started (FC_MPS_STARTED; not exported, so a child
# script never stops its caller's daemon).
FC_MPS_STARTED=0
fc_mps_running() {
  [ -e "$CUDA_MPS_PIPE_DIRECTORY/control" ] &&
    echo get_server_list | timeout 10 nvidia-cuda-mps-control >/dev/null 2>&1
}
fc_mps_start() {
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if [ "$FC_MPS_STARTED" = 1 ]; then return 0; fi
  if fc_mps_running; then
    echo "== MPS already running ($CUDA_MPS_PIPE_DIRECTORY): used, left running"
    return 0
  fi
  local out="$CUDA_MPS_LOG_DIRECTORY/fc_mps_start.out"
  if nvidia-cuda-mps-control -d >"$out" 2>&1; then
    FC_MPS_STARTED=1
    echo "== MPS started ($CUDA_MPS_PIPE_DIRECTORY)"
    return 0
  fi
  # -d refuses while a daemon is running (one that did not answer the probe above).
  if [ -e "$CUDA_MPS_PIPE_DIRECTORY/control" ]; then
    echo "== MPS already running ($CUDA_MPS_PIPE_DIRECTORY): used, left running"
    return 0
  fi
  echo "fc_mps_start: nvidia-cuda-mps-control -d failed: $(cat "$out" 2>/dev/null)" >&2
  return 1
}
fc_mps_stop() {
  [ "$FC_MPS_STARTED" = 1 ] || return 0
  FC_MPS_STARTED=0
  echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 || true
  echo "== MPS stopped"
}

# Steps and their exit codes. fc_step NAME EXPECTED LOG CMD...: runs CMD with its output in
# LOG ("-": not redirected), records NAME as passed when CMD's exit code is EXPECTED. A step
# whose pass/fail is more than an exit code is a function returning 0 or 1 (expected 0), or
# calls fc_record NAME RC EXPECTED [SECONDS] [NOTE] itself. FC_STEPS_FILE, if set, gets each
# record line too. fc_step and fc_record return 1 for a failed step (under `set -e`, add
# `|| true`); fc_steps_report prints every record and returns 1 when any step failed.
FC_STEP_LINES=()
FC_STEPS_FAILED=0
fc_record() {
  local verdict=passed line
  if [ "$2" != "$3" ]; then verdict=FAILED; FC_STEPS_FAILED=$((FC_STEPS_FAILED + 1)); fi
  line=$(printf '%-7s %-22s rc=%-4s expected=%-4s %6s' "$verdict" "$1" "$2" "$3" "${4:+${4}s}")
  if [ -n "${5:-}" ]; then line+="  $5"; fi
  FC_STEP_LINES+=("$line")
  echo "$line"
  if [ -n "${FC_STEPS_FILE:-}" ]; then echo "$line" >>"$FC_STEPS_FILE"; fi
  [ "$verdict" = passed ]
}
# A python3 that has matplotlib (Debian's, from ci/install_deps.sh, may sit behind a pyenv
# shim on PATH); plain python3 otherwise, whose plot step then says what is missing.
fc_python() {
  local py
  for py in /usr/bin/python3 python3; do
    if "$py" -c 'import matplotlib' 2>/dev/null; then echo "$py"; return; fi
  done
  echo python3
}
fc_step() {
  local name=$1 want=$2 log=$3 rc=0 t0=$SECONDS
  shift 3
  if [ "$log" = - ]; then "$@" || rc=$?; else "$@" >"$log" 2>&1 || rc=$?; fi
  fc_record "$name" "$rc" "$want" $((SECONDS - t0))
}
fc_steps_report() {
  local line
  echo "== steps: ${#FC_STEP_LINES[@]} run, $FC_STEPS_FAILED failed"
  for line in "${FC_STEP_LINES[@]}"; do echo "$line"; done
  [ "$FC_STEPS_FAILED" = 0 ]
}
