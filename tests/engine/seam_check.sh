#!/usr/bin/env bash
# The storage seam holds: outside engine/wiring/ (the one place that wires location schemes
# to backends), no engine source includes a backend folder (backends/<name>/), names a
# backend or takes a URL apart. The engine branches on StorageCaps instead
# (docs/architecture.md). Every folder under backends/ counts, so a backend added later is
# covered without changing this check.
#   seam_check.sh SOURCE_DIR            check the tree
#   seam_check.sh --self-test SOURCE_DIR  show that the check fails on a planted include
set -euo pipefail
if [[ ${1:-} == --self-test ]]; then
  root=${2:?usage: seam_check.sh --self-test SOURCE_DIR}
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  cp -r "$root/engine" "$root/backends" "$tmp/"
  for b in "$tmp"/backends/*/; do
    name=$(basename "$b")
    hdr=$(cd "$b" && ls -- *.h | head -1)
    cp -r "$root/engine/." "$tmp/engine/"
    echo "#include \"backends/$name/$hdr\"" >>"$tmp/engine/backup/planner.cc"
    if bash "$0" "$tmp" >/dev/null 2>&1; then
      echo "seam_check.sh: a planted include of backends/$name/$hdr was not found" >&2
      exit 1
    fi
  done
  echo "seam_check.sh: fails on a planted include of every backend folder"
  exit 0
fi
root=${1:?usage: seam_check.sh SOURCE_DIR}
cd "$root"
backends=$(cd backends && ls -d -- */ | tr -d / | paste -sd'|')
pattern="\"backends/|\"($backends)/|tape|nfs|iscsi|libnfs|is_remote|remote_fd|://|sg_io|/dev/sg"
found=$(grep -rn -i -E "$pattern" --include='*.h' --include='*.cc' engine | grep -v -E '^engine/wiring/' || true)
if [[ -n $found ]]; then
  echo "engine/ names a storage backend outside engine/wiring/:" >&2
  echo "$found" >&2
  exit 1
fi
# The wiring room is where the backends are: it must still be the one that includes them.
grep -rq '"backends/' engine/wiring || {
  echo "engine/wiring/ no longer wires the backends (backends/...)" >&2
  exit 1
}
echo "engine/ names no backend outside engine/wiring/ (backends: ${backends//|/, })"
