#!/usr/bin/env bash
# Comments name files that exist: every path of this repository a comment in a source, CMake
# or script file names (`// see engine/monitor/progress.h`) is checked against the tree, so a
# moved or removed file is caught where a comment still points at it.
#   comment_paths.sh SOURCE_DIR
# Paths that name another project's files (PostgreSQL's storage/checksum_impl.h) are listed
# in KNOWN_ELSEWHERE.
set -euo pipefail
cd "${1:?usage: comment_paths.sh SOURCE_DIR}"
KNOWN_ELSEWHERE=" storage/checksum_impl.h "
roots='util|storage|backends|catalog|engine|options|cli|capi|include|tests|scripts|bench|docs'
missing=0 checked=0
while IFS= read -r hit; do
  path=${hit##*:}
  where=${hit%:*}
  checked=$((checked + 1))
  [[ $KNOWN_ELSEWHERE == *" $path "* || $path == *'**'* ]] && continue
  # shellcheck disable=SC2206
  matches=($path)
  if ((${#matches[@]} == 0)) || [[ ! -e ${matches[0]} ]]; then
    echo "$where: '$path' does not exist" >&2
    missing=$((missing + 1))
  fi
done < <(git ls-files '*.cc' '*.h' '*.c' '*.sh' '*.py' 'CMakeLists.txt' '*.cmake' |
           grep -v '^tests/fuzz/corpus/' |
           xargs grep -n -o -E '(//|#|/?\*) .*' 2>/dev/null |
           grep -o -E "^[^:]+:[0-9]+:|\\b($roots)/[A-Za-z0-9_./*-]+\\.(cc|h|c|sh|md|py|cmake|\\*)\\b" |
           awk '/:$/ { loc = $0; next } { print loc $0 }')
echo "comment_paths: $checked paths checked, $missing missing"
((missing == 0))
