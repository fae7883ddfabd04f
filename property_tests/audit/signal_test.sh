#!/usr/bin/env bash
# SIGTERM and SIGINT to `fusioncheck audit` end every cuobjdump it runs (stand-ins that
# sleep, two at once: a fatbin of two entries, --jobs 2); SIGKILL, which no handler sees,
# leaves them running: the negative control that shows the check below can see a process
# left behind.
set -u
set -m  # background jobs keep SIGINT (without job control bash makes them ignore it)
fusioncheck=$1
work=$(mktemp -d)
left_behind=""
cleanup() {
  # shellcheck disable=SC2086
  [ -n "$left_behind" ] && kill -KILL $left_behind 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cat >"$work/cuobjdump" <<SCRIPT
#!/bin/sh
echo \$\$ >"$work/child.\$\$.pid"
exec sleep 60
SCRIPT
chmod +x "$work/cuobjdump"
# A fatbin header (16 bytes) and two empty PTX entries for sm_90 (64 bytes each).
entry='\x01\x00\x01\x01\x40\x00\x00\x00'$(printf '\\x00%.0s' $(seq 20))'\x5a'$(printf '\\x00%.0s' $(seq 35))
printf '\x50\xed\x55\xba\x01\x00\x10\x00\x80\x00\x00\x00\x00\x00\x00\x00'"$entry$entry" >"$work/two.fatbin"

# Whether process $1 is gone (a zombie waiting for its new parent counts as gone).
gone() {
  ! kill -0 "$1" 2>/dev/null || grep -q ') Z' "/proc/$1/stat" 2>/dev/null
}

# Runs an audit with the stand-ins, sends signal $1 once both run, and sets `children` to
# their pids (no subshell: job control holds in this shell only).
signal_audit() {
  rm -f "$work"/child.*.pid
  CUOBJDUMP="$work/cuobjdump" "$fusioncheck" audit --jobs 2 "$work/two.fatbin" >/dev/null 2>&1 &
  local audit_pid=$!
  for _ in $(seq 200); do
    [ "$(cat "$work"/child.*.pid 2>/dev/null | wc -l)" -ge 2 ] && break
    sleep 0.05
  done
  children=$(cat "$work"/child.*.pid 2>/dev/null | tr '\n' ' ')
  if [ "$(echo $children | wc -w)" -lt 2 ]; then
    echo "FAIL: the two stand-in cuobjdumps did not start (pids: $children)" >&2
    kill -KILL "$audit_pid" $children 2>/dev/null
    exit 1
  fi
  kill -"$1" "$audit_pid"
  wait "$audit_pid" 2>/dev/null
}

# Whether every pid in $@ ends within 5 s.
all_end_soon() {
  local pid
  for pid in "$@"; do ends_soon "$pid" || return 1; done
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
  # shellcheck disable=SC2086
  if all_end_soon $children; then
    echo "ok: SIG$signal ended both cuobjdumps ($children)"
  else
    echo "FAIL: SIG$signal left a cuobjdump of ($children) running" >&2
    kill -KILL $children 2>/dev/null
    status=1
  fi
done
signal_audit KILL
left_behind=$children
# shellcheck disable=SC2086
if all_end_soon $children; then
  echo "FAIL: negative control: after SIGKILL the cuobjdumps ($children) should still run" >&2
  status=1
else
  echo "ok: negative control: SIGKILL leaves the cuobjdumps ($children), and the check sees it"
fi
exit $status
