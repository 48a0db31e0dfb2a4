#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# format.sh - alloy's one style (.clang-format, Debian's clang-format 14):
#   tools/format.sh           reformat every C and C++ file of the tree in place
#   tools/format.sh --check   change nothing; list each file that is not
#                             formatted and exit 1 (the test `format`)
#   tools/format.sh --check --root DIR   the same on another tree
# The files: *.c *.h *.cpp *.hpp under src include tests tools sim bench
# examples (build directories are never read).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# the tree's own style file, so that --root checks DIR against alloy's style
style="--style=file:$root/.clang-format"
check=0
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1 ;;
    --root) root=$(cd "$2" && pwd); shift ;;
    *) echo "format.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
command -v clang-format >/dev/null || { echo "format.sh: clang-format is missing (apt install clang-format)" >&2; exit 2; }
cd "$root"
mapfile -d '' files < <(find src include tests tools sim bench examples -type f \
  \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' \) -print0 2>/dev/null | sort -z)
if [ $check -eq 0 ]; then
  clang-format "$style" -i "${files[@]}"
  exit 0
fi
# one process for the whole tree; each unformatted file, with its first lines
out=$(clang-format "$style" --dry-run -Werror "${files[@]}" 2>&1) && {
  echo "format: ${#files[@]} files, all formatted"
  exit 0
}
mapfile -t bad < <(grep -o '^[^:]*:[0-9]*:[0-9]*: error: code should be clang-formatted' <<<"$out" | cut -d: -f1 | sort -u)
for f in "${bad[@]}"; do
  echo "format: $f is not formatted (tools/format.sh fixes it; the difference:)"
  clang-format "$style" "$f" | diff -u "$f" - | head -20 || true
done
[ ${#bad[@]} -ne 0 ] || echo "$out" | head -20
echo "format: ${#bad[@]} of ${#files[@]} files are not formatted"
exit 1
