#!/usr/bin/env bash
# SIGTERM and SIGINT to `fusioncheck audit` end the cuobjdump it runs (a stand-in that
# sleeps); SIGKILL, which no handler sees, leaves it running: the negative control that
# shows the check below can see a process left behind.
set -u
set -m  # background jobs keep SIGINT (without job control bash makes them ignore it)
fusioncheck=$1
work=$(mktemp -d)
left_behind=""
cleanup() {
  [ -n "$left_behind" ] && kill -KILL "$left_behind" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cat >"$work/cuobjdump" <<SCRIPT
#!/bin/sh
echo \$\$ >"$work/child.pid"
exec sleep 60
SCRIPT
chmod +x "$work/cuobjdump"

# Whether process $1 is gone (a zombie waiting for its new parent counts as gone).
gone() {
  ! kill -0 "$1" 2>/dev/null || grep -q ') Z' "/proc/$1/stat" 2>/dev/null
}

# Runs an audit with the stand-in, sends signal $1 once the stand-in runs, and sets `child`
# to the stand-in's pid (no subshell: job control holds in this shell only).
signal_audit() {
  rm -f "$work/child.pid"
  CUOBJDUMP="$work/cuobjdump" "$fusioncheck" audit /bin/true >/dev/null 2>&1 &
  local audit_pid=$!
  for _ in $(seq 200); do
    [ -s "$work/child.pid" ] && break
    sleep 0.05
  done
  if [ ! -s "$work/child.pid" ]; then
    echo "FAIL: the stand-in cuobjdump did not start" >&2
    exit 1
  fi
  kill -"$1" "$audit_pid"
  wait "$audit_pid" 2>/dev/null
  child=$(cat "$work/child.pid")
}

# Whether process $1 ends within 5 s.
ends_soon() {
  for _ in $(seq 100); do
    gone "$1" && return 0
    sleep 0.05
  done
  return 1
}

status=0
for signal in TERM INT; do
  signal_audit "$signal"
  if ends_soon "$child"; then
    echo "ok: SIG$signal ended cuobjdump ($child)"
  else
    echo "FAIL: SIG$signal left cuobjdump ($child) running" >&2
    kill -KILL "$child" 2>/dev/null
    status=1
  fi
done
signal_audit KILL
left_behind=$child
if ends_soon "$child"; then
  echo "FAIL: negative control: after SIGKILL cuobjdump ($child) should still run" >&2
  status=1
else
  echo "ok: negative control: SIGKILL leaves cuobjdump ($child), and the check sees it"
fi
exit $status
