#!/usr/bin/env bash
# clang-format over every C++ source of the tree, in the style of
# .clang-format.
#
#   scripts/format.sh           rewrite the files in place (make format)
#   scripts/format.sh --check   change nothing; list each difference and fail
#                               if there is any (make format-check, CI)
set -euo pipefail
cd "$(dirname "$0")/.."

CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
# Tracked files when this is a git checkout, else every C++ file outside the
# build directories.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh')
else
  mapfile -t files < <(find . -path './build*' -prune -o \
    \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -type f -print | sort)
fi

case "${1:-}" in
  --check)
    if ! "$CLANG_FORMAT" --dry-run -Werror "${files[@]}"; then
      echo "format.sh: files differ from .clang-format; run 'make format'" >&2
      exit 1
    fi
    ;;
  "")
    "$CLANG_FORMAT" -i "${files[@]}"
    ;;
  *)
    echo "usage: scripts/format.sh [--check]" >&2
    exit 2
    ;;
esac
