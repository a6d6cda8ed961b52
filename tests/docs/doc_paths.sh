#!/usr/bin/env bash
# Docs name files that exist: every backticked source path in README.md and docs/*.md
# (`engine/backup/planner.cc`, `backends/tape/io_helper.*`) is checked against the tree, so a
# moved or removed file is caught where a doc still names it.
#   doc_paths.sh SOURCE_DIR
set -euo pipefail
cd "${1:?usage: doc_paths.sh SOURCE_DIR}"
shopt -s nullglob
missing=0 checked=0
while IFS=: read -r doc line path; do
  checked=$((checked + 1))
  # shellcheck disable=SC2206
  matches=($path)
  if ((${#matches[@]} == 0)) || [[ ! -e ${matches[0]} ]]; then
    echo "$doc:$line: '$path' does not exist" >&2
    missing=$((missing + 1))
  fi
done < <(grep -o -n '`[a-z_]\+/[a-z_/]*\.\(cc\|h\|c\|sh\|\*\)`' README.md docs/*.md | tr -d '`')
echo "doc_paths: $checked paths checked, $missing missing"
((missing == 0))
