#!/bin/sh
# The reproducer folders of docs/reports are what `fusioncheck gpu repro` writes today: each is
# exported again from its replay (under the file name it was exported from) and compared.
# Usage: reports_current.sh FUSIONCHECK SOURCE_DIR WORK_DIR
set -u
fc=$1 src=$2 work=$3
known=$src/adapters/flashinfer/known/flashinfer-0.7.4.json
rm -rf "$work" && mkdir -p "$work/replays" || exit 1
status=0
# id, the replay's file name when it was exported, extra options
while read -r id name extra; do
  replay=$work/replays/$name
  cp "$src/docs/reports/$id/replay.json" "$replay" || { status=1; continue; }
  # shellcheck disable=SC2086
  "$fc" gpu repro --replay "$replay" --known "$known" --out "$work/$id" $extra >/dev/null || { echo "STALE $id: export failed"; status=1; continue; }
  # The include tree's default names this machine's cache: the one line that may differ.
  diff -r -I '^set(FLASHINFER_INCLUDE ' "$src/docs/reports/$id" "$work/$id" >/dev/null || { echo "STALE $id: docs/reports/$id differs from a fresh export"; status=1; }
done <<EOF
fi-fusion-block-scaled-launch-resources flashinfer-block-scaled-launch-resources-back-to-back.json
fi-legacy-residual-before-pdl-wait legacy_residual_before_wait.json
fi-moe-partial-warp-rmsnorm flashinfer-moe-partial-warp-rmsnorm.json
fi-moe-finalize-remote-read moe_finalize_held_block.json --runs 1000
EOF
[ $status -eq 0 ] && echo "reports current"
exit $status
