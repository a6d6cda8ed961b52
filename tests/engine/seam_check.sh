#!/usr/bin/env bash
# The storage seam holds: outside engine/backends.{h,cc} (the one place that wires location
# schemes to backends), no engine/ source names a backend, includes one, or takes a URL
# apart. The engine branches on StorageCaps instead (docs/architecture.md).
set -euo pipefail
root=${1:?usage: seam_check.sh SOURCE_DIR}
cd "$root/engine"
pattern='tape|nfs|iscsi|libnfs|is_remote|remote_fd|register_remote|://|sg_io|/dev/sg'
found=$(grep -n -i -E "$pattern" -- *.h *.cc | grep -v -E '^backends\.(h|cc):' || true)
if [[ -n $found ]]; then
  echo "engine/ names a storage backend outside engine/backends.{h,cc}:" >&2
  echo "$found" >&2
  exit 1
fi
# The wiring file is where the backends are: it must still be the one that includes them.
grep -q '"nfs/' backends.cc && grep -q '"tape/' backends.cc && grep -q '"io/local_storage.h"' backends.cc || {
  echo "engine/backends.cc no longer wires the backends (nfs/, tape/, io/local_storage.h)" >&2
  exit 1
}
echo "engine/ names no backend outside engine/backends.{h,cc}"
