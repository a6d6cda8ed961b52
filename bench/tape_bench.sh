#!/usr/bin/env bash
# Tape throughput, side by side on the same tgtd drives: the bare libiscsi WRITE(6) loop
# (bench/tape_raw) and `stripeback backup --to tape:...` with 1 and 2 drives, at 64 KiB,
# 256 KiB and 1 MiB blocks, with tgtd's CPU seconds for each run.
#
#   bash bench/tape_bench.sh [--size 512M] [--dir /var/tmp/stripeback-tape-bench] [--build build/release]
#
# Starts its own tape service (scripts/tape-server.sh, control port 4790, portal 13290,
# 4 GiB thin tapes so no run reaches end of medium) and stops it at the end. The data set is
# generated once with `stripeback demo-data` and read from the page cache. Results: a
# Markdown table on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE=512M
DIR=/var/tmp/stripeback-tape-bench
BUILD=build/release
while (($#)); do
  case $1 in
    --size) SIZE=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    *) echo "usage: $0 [--size SIZE] [--dir DIR] [--build BUILD_DIR]" >&2; exit 2 ;;
  esac
done
SB=$BUILD/cli/stripeback
RAW=$BUILD/bench/tape_raw
[[ -x $SB && -x $RAW ]] || { echo "tape_bench: build $SB and $RAW first" >&2; exit 2; }

export SB_TAPE_CTL=${SB_TAPE_CTL:-4790} SB_TAPE_PORT=${SB_TAPE_PORT:-13290}
export SB_TAPE_DRIVES=2 SB_TAPE_SIZE=4096 SB_TAPE_DIR=$DIR/tapes
mkdir -p "$DIR"
cleanup() { bash scripts/tape-server.sh stop || true; }
trap cleanup EXIT
mapfile -t URLS < <(bash scripts/tape-server.sh start)
D1=tape:${URLS[0]}
D2=tape:${URLS[1]}
TGTD=$(<"$SB_TAPE_DIR/tgtd.pid")

if [[ ! -d $DIR/src ]]; then "$SB" demo-data "$DIR/src" --size "$SIZE" >/dev/null; fi
cat "$DIR"/src/*/* "$DIR"/src/*/*/* >/dev/null 2>&1 || true
SRC_BYTES=$(du -sb "$DIR/src" | cut -f1)
SIZE_MIB=$((SRC_BYTES >> 20))

tgtd_cpu() { awk '{printf "%.2f\n", ($14 + $15) / '"$(getconf CLK_TCK)"'}' "/proc/$TGTD/stat"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a - b}'; }

echo "Data: $SIZE_MIB MiB ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)); tapes: tgtd $(tgtd -V 2>/dev/null | head -1 || true)"
echo
echo "| block | run | MB/s (bytes on tape / s) | per drive | vs raw | tgtd CPU s | stalls | producer waits |"
echo "|---|---|---|---|---|---|---|---|"
for bs in 65536 262144 1048576; do
  c0=$(tgtd_cpu)
  read -r _ _ _ raw < <("$RAW" "${URLS[0]}" "$bs" "$SIZE_MIB")
  c1=$(tgtd_cpu)
  echo "| $((bs >> 10)) KiB | raw libiscsi loop, 1 drive | $raw | $raw | 100% | $(sub "$c1" "$c0") | - | - |"
  for drives in 1 2; do
    args=(--to "$D1")
    "$SB" tape label "$D1" --volume BENCH1 --tape-block-size "$bs" --force >/dev/null
    if ((drives == 2)); then
      args+=(--to "$D2")
      "$SB" tape label "$D2" --volume BENCH2 --tape-block-size "$bs" --force >/dev/null
    fi
    rm -rf "$DIR/cat"
    c0=$(tgtd_cpu)
    json=$("$SB" backup "$DIR/src" "${args[@]}" --tape-block-size "$bs" --catalog "$DIR/cat" --json)
    c1=$(tgtd_cpu)
    python3 - "$json" "$bs" "$drives" "$raw" "$(sub "$c1" "$c0")" <<'PY'
import json, sys
j = json.loads(sys.argv[1]); bs = int(sys.argv[2]); drives = int(sys.argv[3]); raw = float(sys.argv[4])
tape = [c["tape"] for c in j["channels"]]
total = sum(t["bytes"] for t in tape) / j["elapsed_s"] / 1e6
per = total / drives
stalls = sum(t["stalls"] for t in tape); waits = sum(t["producer_waits"] for t in tape)
print(f"| {bs >> 10} KiB | stripeback, {drives} drive{'s' if drives > 1 else ''} | {total:.1f} | {per:.1f} | {100 * per / raw:.0f}% | {sys.argv[5]} | {stalls} | {waits} |")
PY
  done
done
