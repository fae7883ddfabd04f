#!/usr/bin/env bash
# ci/gpu_suite.sh's hostfile mode (HOSTFILE=FILE): the single-node suite on every node of an
# allocation, side by side, each node's reports gathered into REPORTS/<host>/. A job cannot
# span nodes (its workspace is shared through CUDA IPC; docs/design.md "Beyond one node"),
# so each node runs its own ranks. The hostfile is Open MPI's (one host per line, first word;
# "slots=N" and "#" comments allowed). Each node runs this checkout's ci/gpu_suite.sh from the
# same path (a file system the nodes share) with the caller's settings; its reports travel
# back through mpirun's stdout, so REPORTS need not be shared. Exit 0 when every node's suite
# passed, 1 when one failed, 2 on bad input.
# Called by gpu_suite.sh as: suite_on_hosts.sh HOSTFILE REPORTS_ABS (settings in the environment).
set -uo pipefail
hostfile=$1 reports=$2
cd "$(dirname "$0")/.." || exit 2
source ci/lib.sh
[ -f "$hostfile" ] && [ -r "$hostfile" ] || { echo "gpu_suite: HOSTFILE=$hostfile: not a readable file"; exit 2; }
mapfile -t hosts < <(awk '!/^[[:space:]]*(#|$)/ {print $1}' "$hostfile" | awk '!seen[$0]++')
[ "${#hosts[@]}" -gt 0 ] || { echo "gpu_suite: HOSTFILE=$hostfile names no host"; exit 2; }
for host in "${hosts[@]}"; do
  [[ $host =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || { echo "gpu_suite: HOSTFILE=$hostfile: '$host' is not a host name"; exit 2; }
done
# The settings each node's suite takes, passed on as they are here.
settings=()
for v in BUILD CASES KILL_CASES KILL_SEEDS ALLOW_MPS GPU_TESTS FAMILIES STRICT KNOWN; do
  [ -n "${!v+x}" ] && settings+=("$v=${!v}")
done
# On the node: the suite into a temporary folder, its log and exit code beside the reports,
# then the folder as a tar stream in base64 on stdout (nothing else goes there; mpirun may
# forward it through a terminal, which would bend raw bytes).
# The launcher's own variables are dropped first: the node's suite starts mpirun itself.
remote='for v in $(compgen -e | grep -E "^(OMPI_|PMIX_|PMI_|HOSTFILE$)"); do unset "$v"; done
t=$(mktemp -d) && mkdir -p "$t/r" && env "$@" REPORTS="$t/r" bash "$0" >"$t/r/suite.log" 2>&1; echo $? >"$t/r/suite.rc"; tar cz -C "$t/r" . | base64 && rm -rf "$t"'
pids=()
for host in "${hosts[@]}"; do
  mkdir -p "$reports/$host" || exit 2
  mpirun -H "$host" -np 1 --bind-to none bash -c "$remote" "$FC_ROOT/ci/gpu_suite.sh" "${settings[@]}" \
    2>"$reports/$host/mpirun.err" | base64 -d -i | tar xz -C "$reports/$host" 2>>"$reports/$host/mpirun.err" &
  pids+=($!)
done
failed=0
for i in "${!hosts[@]}"; do
  wait "${pids[$i]}"
  host=${hosts[$i]}
  rc=$(cat "$reports/$host/suite.rc" 2>/dev/null || echo "none")
  last=$(grep -v '^\s*$' "$reports/$host/suite.log" 2>/dev/null | tail -1)
  [ "$rc" = none ] && last="no reports came back: $(head -c 300 "$reports/$host/mpirun.err" | tr '\n' ' ')"
  echo "gpu_suite: node $host: exit $rc: $last"
  [ "$rc" = 0 ] || failed=1
done
echo "gpu_suite: ${#hosts[@]} node(s); reports in $reports/<host>/"
exit $failed
