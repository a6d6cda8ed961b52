#!/usr/bin/env bash
# progress_overhead_bench.sh: what live progress costs a job (docs/monitoring.md). The same
# backup of a demo data set, cold cache, alternately
#   quiet     --progress never (the status file alone: it is always written)
#   watched   --progress always (terminal lines to a file) --progress-json=FILE
#             --status-listen SOCKET, with `stripeback status --json` and a curl of /metrics
#             every second from another process while it runs
# and their elapsed and CPU seconds side by side. Run as root (dropping the page cache).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
DIR=/var/tmp/stripeback-progressbench
SIZE=2G
REPEAT=3
CHANNELS=2
BIN=""
QUIET_TIMEOUT=60

usage() {
  cat <<USAGE
Usage: $(basename "$0") [--dir DIR] [--size 2G] [--repeat 3] [--channels 2] [--bin PATH]

Makes a demo data set of SIZE in DIR/src (once), then per round backs it up twice to DIR
(quiet, then watched; see the head of this script), the pieces removed after each. Prints
the median of each and the ratio watched / quiet of elapsed and CPU seconds.
USAGE
}
while (($#)); do
  case "$1" in
    --dir) DIR=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --channels) CHANNELS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "progress_overhead_bench: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
note() { echo "progress_overhead_bench: $*" >&2; }
die() { echo "progress_overhead_bench: $*" >&2; exit 1; }
GNU_TIME=/usr/bin/time
BENCH_NAME=progress_overhead_bench
SERVER_TICKS=""
LOGS=$DIR/logs
# shellcheck source=bench/bench_lib.sh
source "$SCRIPT_DIR/bench_lib.sh"
resolve_bin
declare -A R_EL R_SYNC R_CPU R_RSS R_DISKW R_OTHER R_SRV
mkdir -p "$DIR" "$LOGS"
[[ -d $DIR/src ]] || "$BIN" demo-data "$DIR/src" --size "$SIZE" >/dev/null

# Polls the running job from another process once a second until it ends.
watcher() {
  local sock=$1
  while sleep 1; do
    "$BIN" status --catalog "$DIR/cat" --json >/dev/null 2>&1 || true
    curl -s --max-time 2 --unix-socket "$sock" http://localhost/metrics >/dev/null 2>&1 || true
  done
}

for r in $(seq 1 "$REPEAT"); do
  rm -rf "$DIR/p" "$DIR/cat"
  measure quiet "$r" "$BIN" backup "$DIR/src" --to "$DIR/p" --catalog "$DIR/cat" \
    --channels "$CHANNELS" --progress never
  rm -rf "$DIR/p" "$DIR/cat"
  ( sleep 0.5; watcher "$DIR/status.sock" ) &
  W=$!
  measure watched "$r" "$BIN" backup "$DIR/src" --to "$DIR/p" --catalog "$DIR/cat" \
    --channels "$CHANNELS" --progress always --progress-json="$LOGS/progress.$r.json" \
    --status-listen "$DIR/status.sock"
  kill "$W" 2>/dev/null || true
  wait "$W" 2>/dev/null || true
done
rm -rf "$DIR/p"

median() { tr ' ' '\n' | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
row() {
  local key=$1 el="" cpu=""
  for r in $(seq 1 "$REPEAT"); do el+="${R_EL[$key.$r]} "; cpu+="${R_CPU[$key.$r]} "; done
  echo "$(echo "$el" | median) $(echo "$cpu" | median) $el"
}
read -r qe qc qall < <(row quiet)
read -r we wc wall < <(row watched)
echo "| Run | Elapsed s (median) | CPU s (median) | Elapsed s, every round |"
echo "|---|---:|---:|---|"
echo "| quiet (--progress never) | $qe | $qc | $qall |"
echo "| watched (terminal, JSON lines, endpoint, polled each second) | $we | $wc | $wall |"
awk -v qe="$qe" -v we="$we" -v qc="$qc" -v wc="$wc" \
  'BEGIN {printf "\nwatched / quiet: elapsed %.3f x, CPU %.3f x\n", we / qe, wc / qc}'
note "binary $BIN ($TREE); logs in $LOGS"
