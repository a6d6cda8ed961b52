#!/usr/bin/env bash
# The demo command: installs what is needed, builds a Release binary, generates a data set
# of datafile-like files, backs it up with 2 channels, lists the catalog, restores into
# another directory and proves the restored tree identical (contents, sizes, modes, mtimes).
#
# Usage: scripts/demo.sh [--size SIZE] [--dir WORKDIR]
#   --size  size of the generated data set (default 300M)
#   --dir   work directory (default /var/tmp/stripeback-demo; emptied first)
set -euo pipefail
cd "$(dirname "$0")/.."
size=300M
work=/var/tmp/stripeback-demo
while (($#)); do
  case "$1" in
    --size) size=$2; shift 2 ;;
    --dir) work=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

bash scripts/install-deps.sh
echo "== building (Release)"
bash scripts/build.sh release
bin=$PWD/build/release/cli/stripeback

rm -rf "$work"
mkdir -p "$work"
data=$work/data
export STRIPEBACK_CATALOG=$work/catalog

echo "== generating $size of datafile-like files in $data"
"$bin" demo-data "$data" --size "$size"

echo "== backup with 2 channels to $work/pieces"
"$bin" backup "$data" --to "$work/pieces" --channels 2 --tag demo

echo "== list"
"$bin" list

echo "== restore to $work/restore"
"$bin" restore --to "$work/restore" --channels 2

echo "== verify"
restored=$work/restore$data
listing() { (cd "$1" && find . -printf '%y %P %s %m %T@\n' | sort); }
if ! diff <(listing "$data") <(listing "$restored") >"$work/meta.diff"; then
  echo "FAILED: names, sizes, modes or mtimes differ:" >&2
  head -20 "$work/meta.diff" >&2
  exit 1
fi
files=0
while IFS= read -r -d '' f; do
  rel=${f#"$data"/}
  cmp -s "$f" "$restored/$rel" || { echo "FAILED: contents differ: $rel" >&2; exit 1; }
  files=$((files + 1))
done < <(find "$data" -type f -print0)
bytes=$(du -sb --apparent-size "$data" | cut -f1)
echo "identical: $files files, $bytes bytes (contents, sizes, modes and mtimes)"
echo "demo done; work directory: $work"
