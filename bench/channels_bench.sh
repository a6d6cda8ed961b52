#!/usr/bin/env bash
# channels_bench.sh: how close `--channels auto` comes to the best fixed channel count.
# Backs up one multi-file source with --channels 1, 2, 4, 8 and auto, from this machine's
# disk and from NFS (nfs-ganesha on loopback, the libnfs client), and reports for each
# medium the best fixed count's MB/s, auto's choice and MB/s, and the ratio auto / best.
#
# Run as root (dropping the page cache and starting nfs-ganesha need it). See --help and
# the "Channel count: --channels auto" section of docs/benchmarks.md.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

DIR=/var/tmp/stripeback-channels-bench
FILES=8
FILE_SIZE=256M
COUNTS="1 2 4 8"
MEDIA="local nfs"
REPEAT=3
BIN=""
RESULTS=""
QUIET_TIMEOUT=120

usage() {
  cat <<EOF
Usage: $(basename "$0") [options]

Makes a source of FILES files of FILE_SIZE random bytes (kept in DIR and reused when the
same shape is there), then for each medium backs it up to DIR/out on this machine's disk
once per channel count and once with --channels auto, REPEAT rounds interleaved. Every
backup starts with a new catalog, so auto has no history and chooses by its read probe
(the probe's time is part of auto's elapsed time). Before each backup the previous pieces
are removed, the file system is synced and the page cache dropped; the timed region is
"stripeback backup ...; sync" (GNU time). MB = 10^6 bytes of source per second.

Media:
  local   the source in DIR/local on this machine's disk (read with O_DIRECT, io_uring)
  nfs     the same files exported by a private nfs-ganesha (bench/nfs_server_lib.sh,
          ports 22149/22150) and read through libnfs (nfs:// source)

Reported per medium: each count's median MB/s (min-max over the rounds); auto's choice
in each round, its median MB/s; the best fixed count; and auto / best (the target: 0.90
or more).

Options:
  --dir DIR           work directory (default: $DIR); needs about 3 x FILES x FILE_SIZE
  --files N           files in the source (default: $FILES)
  --file-size SIZE    bytes per file (default: $FILE_SIZE)
  --counts "N..."     fixed channel counts to compare with (default: "$COUNTS")
  --media "M..."      local, nfs or both (default: "$MEDIA")
  --repeat N          rounds (default: $REPEAT); medians are over the rounds
  --bin PATH          stripeback binary (default: build/release/cli/stripeback, built with
                      the release preset's flags if missing)
  --quiet-timeout S   before each backup wait up to S seconds (default: $QUIET_TIMEOUT) for
                      the machine to be quiet (other CPU < 15%, disk < 20 MB/s); 0: no wait
  --results FILE      where to write the results (default: DIR/channels-<time>.md)
  -h, --help          this text
EOF
}

die() { echo "channels_bench: error: $*" >&2; exit 1; }
note() { echo "channels_bench: $*" >&2; }

ORIG_ARGS="$*"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --files) FILES=${2:?--files needs a value}; shift 2 ;;
    --file-size) FILE_SIZE=${2:?--file-size needs a value}; shift 2 ;;
    --counts) COUNTS=${2:?--counts needs a value}; shift 2 ;;
    --media) MEDIA=${2:?--media needs a value}; shift 2 ;;
    --repeat) REPEAT=${2:?--repeat needs a value}; shift 2 ;;
    --bin) BIN=${2:?--bin needs a value}; shift 2 ;;
    --quiet-timeout) QUIET_TIMEOUT=${2:?--quiet-timeout needs a value}; shift 2 ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
[[ "$FILES" =~ ^[1-9][0-9]*$ ]] || die "--files must be a positive integer"
[[ "$REPEAT" =~ ^[1-9][0-9]*$ ]] || die "--repeat must be a positive integer"
[[ "$QUIET_TIMEOUT" =~ ^[0-9]+$ ]] || die "--quiet-timeout must be a non-negative integer"
for c in $COUNTS; do [[ "$c" =~ ^[1-9][0-9]*$ ]] || die "--counts: '$c' is not a positive integer"; done
for m in $MEDIA; do [[ "$m" == local || "$m" == nfs ]] || die "--media: '$m' is not local or nfs"; done
FILE_BYTES=$(numfmt --from=iec "$FILE_SIZE" 2>/dev/null) || die "cannot parse --file-size '$FILE_SIZE'"
FILE_BYTES=$((FILE_BYTES / 1048576 * 1048576))
((FILE_BYTES >= 1048576)) || die "--file-size must be at least 1M"
DATA_BYTES=$((FILE_BYTES * FILES))

for t in sync awk numfmt; do command -v "$t" >/dev/null || die "'$t' is not installed"; done
GNU_TIME=/usr/bin/time
"$GNU_TIME" -f '%U' -o /dev/null true 2>/dev/null || die "GNU time is needed at /usr/bin/time (apt-get install time)"

# shellcheck source=bench/bench_lib.sh
source "$SCRIPT_DIR/bench_lib.sh"
resolve_bin
# shellcheck source=bench/nfs_server_lib.sh
source "$SCRIPT_DIR/nfs_server_lib.sh"

# ---- work directory and source ---------------------------------------------------------
[[ -n "$DIR" && "$DIR" != "/" ]] || die "refusing to use '$DIR' as the work directory"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
SRC="$DIR/local/src"
NFS_DIR="$DIR/nfs-export"  # the export: its files are written before the server starts
OUT="$DIR/out"
LOGS="$DIR/logs"
MOUNT=$(df --output=target "$DIR" | tail -1)
mkdir -p "$LOGS"
[[ -n "$RESULTS" ]] || RESULTS="$DIR/channels-$(date +%Y%m%d-%H%M%S).md"
trap 'nfs_server_stop' EXIT

WANT="files=$FILES bytes=$FILE_BYTES"
if [[ -f "$DIR/src.stamp" && "$(cat "$DIR/src.stamp")" == "$WANT" ]]; then
  note "reusing the source in $SRC ($FILES x $FILE_SIZE)"
else
  rm -rf "${DIR:?}/local" "$NFS_DIR" "$DIR/src.stamp"
  mkdir -p "$SRC" "$NFS_DIR/src"
  note "writing $FILES files of $FILE_SIZE of random bytes to $SRC and $NFS_DIR/src"
  for ((i = 0; i < FILES; i++)); do
    head -c "$FILE_BYTES" /dev/urandom >"$SRC/f$i"
    cp "$SRC/f$i" "$NFS_DIR/src/f$i"
  done
  sync
  echo "$WANT" >"$DIR/src.stamp"
fi

json_field() { grep -o "\"$2\":[^,}]*" "$1" | head -n 1 | cut -d: -f2- | tr -d '"'; }
json_text() { { grep -o "\"$2\":\"[^\"]*\"" "$1" || true; } | head -n 1 | cut -d: -f2- | tr -d '"'; }

# ---- measurement -------------------------------------------------------------------------
declare -A CHOSEN REASON
CONFIGS=()
for c in $COUNTS; do CONFIGS+=("$c"); done
CONFIGS+=(auto)

run_medium() {  # run_medium MEDIUM SOURCE
  local medium=$1 source=$2 round cfg key log
  for ((round = 1; round <= REPEAT; round++)); do
    note "$medium: round $round of $REPEAT"
    for cfg in "${CONFIGS[@]}"; do
      key="$medium.$cfg"
      rm -rf "${OUT:?}"; mkdir -p "$OUT"; sync
      measure "$key" "$round" "$BIN" backup "$source" --to "$OUT/pieces" \
        --catalog "$OUT/catalog" --channels "$cfg" --json
      log="$LOGS/$key.$round.out"
      [[ "$(json_field "$log" status)" == complete ]] || die "$key: the backup did not complete (see $log)"
      [[ "$(json_field "$log" bytes_read)" == "$DATA_BYTES" ]] || die "$key: the backup did not read the whole source (see $log)"
      CHOSEN[$key.$round]=$(json_field "$log" channels_chosen)
      REASON[$key.$round]=$(json_text "$log" channels_reason)
      [[ "$cfg" != auto ]] || note "  auto chose ${CHOSEN[$key.$round]} (${REASON[$key.$round]})"
    done
  done
  rm -rf "${OUT:?}"
}

for medium in $MEDIA; do
  if [[ "$medium" == local ]]; then
    SERVER_TICKS=""
    run_medium local "$SRC"
  else
    nfs_server_start "$DIR/nfs-state" "$NFS_DIR"
    SERVER_TICKS=nfs_server_ticks
    run_medium nfs "nfs://127.0.0.1$NFS_EXPORT/src$NFS_Q"
    nfs_server_stop
    SERVER_TICKS=""
  fi
done

# ---- report ----------------------------------------------------------------------------
mbs() { awk -v b="$DATA_BYTES" -v e="$1" 'BEGIN {printf "%.0f", b / e / 1e6}'; }
median_el() {  # median elapsed of KEY over the rounds
  for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[$1.$r]}"; done | sort -g |
    awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
range_mbs() {
  for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[$1.$r]}"; done |
    awk -v b="$DATA_BYTES" '{v = b / $1 / 1e6; if (NR == 1 || v < lo) lo = v; if (NR == 1 || v > hi) hi = v} END {printf "%.0f-%.0f", lo, hi}'
}
{
  echo "# stripeback channel count benchmark: --channels auto"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "- command: \`bench/channels_bench.sh $ORIG_ARGS\`"
  echo "- stripeback: $BIN_VERSION, $BIN (built $BIN_BUILT, sha256 $BIN_SHA); source tree: $TREE"
  echo "- machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), kernel $(uname -r); work directory $DIR on $MOUNT ($DISK_DEV)"
  echo "- source: $FILES files x $(numfmt --to=iec "$FILE_BYTES") of random bytes ($DATA_BYTES bytes); pieces to $DIR/out on the same disk; a new catalog for every backup (auto probes)"
  echo "- timed region: \`stripeback backup ...; sync\` after \`echo 3 > /proc/sys/vm/drop_caches\`; MB = 10^6 bytes; $REPEAT round(s), medians$( ((QUIET_NOTES)) && echo "; $QUIET_NOTES measurement(s) started while the machine was busy")$( ((CAN_DROP)) || echo '; page cache NOT dropped')"
  echo
  echo "| medium | channels | median s | median MB/s | MB/s min-max | chosen (per round) |"
  echo "|---|---|---:|---:|---:|---|"
  for medium in $MEDIA; do
    for cfg in "${CONFIGS[@]}"; do
      key="$medium.$cfg"
      el=$(median_el "$key")
      chosen=""
      [[ "$cfg" != auto ]] || chosen=$(for ((r = 1; r <= REPEAT; r++)); do printf '%s ' "${CHOSEN[$key.$r]}"; done)
      echo "| $medium | $cfg | $el | $(mbs "$el") | $(range_mbs "$key") | $chosen |"
    done
  done
  echo
  echo "| medium | best fixed | best MB/s | auto chose | auto MB/s | auto / best |"
  echo "|---|---:|---:|---|---:|---:|"
  for medium in $MEDIA; do
    best="" best_el=""
    for c in $COUNTS; do
      el=$(median_el "$medium.$c")
      if [[ -z "$best" ]] || awk -v a="$el" -v b="$best_el" 'BEGIN {exit !(a < b)}'; then
        best=$c best_el=$el
      fi
    done
    auto_el=$(median_el "$medium.auto")
    chosen=$(for ((r = 1; r <= REPEAT; r++)); do echo "${CHOSEN[$medium.auto.$r]}"; done | sort -n | uniq -c |
      awk '{printf "%s%s (x%s)", (NR > 1 ? ", " : ""), $2, $1}')
    ratio=$(awk -v a="$best_el" -v b="$auto_el" 'BEGIN {printf "%.2f", a / b}')
    echo "| $medium | $best | $(mbs "$best_el") | $chosen | $(mbs "$auto_el") | $ratio |"
  done
  echo
  echo "Auto's reasons:"
  echo
  for medium in $MEDIA; do
    for ((r = 1; r <= REPEAT; r++)); do
      echo "- $medium, round $r: ${REASON[$medium.auto.$r]}"
    done
  done
} | tee "$RESULTS"
note "results written to $RESULTS"
