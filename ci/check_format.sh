#!/usr/bin/env bash
# Checks that C++/CUDA sources follow .clang-format (ColumnLimit 100): with no arguments,
# every tracked source outside fixture folders (fixtures mimic other projects' files byte for
# byte) and the exported reproducers of docs/reports (written by `gpu repro`, kept as
# exported); else the files named. --fix rewrites them instead. Exit 0 clean, 1 when a file
# differs (its name and the first differences are printed), 2 on bad usage.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
fix=0
if [ "${1:-}" = --fix ]; then fix=1; shift; fi
command -v clang-format >/dev/null 2>&1 || { echo "check_format: clang-format not found (ci/install_deps.sh installs it)"; exit 2; }
files=("$@")
if [ "${#files[@]}" -eq 0 ]; then
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h' |
      grep -v -e '/fixtures/' -e '^docs/reports/' | while IFS= read -r f; do [ -f "$f" ] && echo "$f"; done)
  else
    mapfile -t files < <(find . -path ./build -prune -o -path '*/fixtures/*' -prune -o -path ./docs/reports -prune -o \
      \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) -print | sed 's|^\./||')
  fi
fi
for f in "${files[@]}"; do [ -f "$f" ] || { echo "check_format: $f: no such file"; exit 2; }; done
if [ "$fix" = 1 ]; then clang-format -i --style=file "${files[@]}"; exit $?; fi
bad=0
for f in "${files[@]}"; do
  if ! clang-format --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
    bad=$((bad + 1))
    echo "check_format: $f is not formatted (bash ci/check_format.sh --fix $f):"
    diff <(clang-format --style=file "$f") "$f" | head -6
  fi
done
echo "check_format: ${#files[@]} files, $bad not formatted"
[ "$bad" = 0 ]
