#!/usr/bin/env bash
# multiplex_bench.sh: measures stripeback backup at several multiplexing levels
# (--max-open-files L) and channel counts, and what each layout costs a single-file
# restore, on the same generated datafile-like data set as backup_bench.sh.
#
# Run as root (dropping the page cache and fstrim need it). See --help and the
# "Multiplexing" section of docs/benchmarks.md.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

SIZE=4G
DIR=/var/tmp/stripeback-bench
SEED=1
BIN=""
RESULTS=""
REPEAT=1
LEVELS="1 2 4 8"
CHANNELS="1 2"
FILES_PER_SET=64
FILE=""
QUIET_TIMEOUT=120

usage() {
  cat <<EOF
Usage: $(basename "$0") [options]

Backs up the data set of backup_bench.sh ('stripeback demo-data', reused when one of the
same size and seed is already there; generated otherwise) once per combination of
multiplexing level L (--max-open-files L) and channel count, then restores ONE file of
the data set (the same file for every combination) from that backup. Before each
measurement the outputs of the previous one are removed, the file system is synced and
trimmed, and the page cache is dropped; every timed region is "command; sync", timed
around GNU time (/usr/bin/time).

Reported per combination:
  L reported    the "multiplexing" field of the backup's JSON: min(L, files in a
                channel's set). The data set has only a dozen files, so with 2 channels
                (two sets of about 6 files) a level of 8 cannot be reached; the table
                shows the level the engine actually used.
  backup        elapsed s, MB/s (data set bytes / elapsed, MB = 10^6 bytes), CPU s/GiB
                (user + sys from GNU time), peak RSS
  1-file restore  elapsed s of 'stripeback restore FILE', the restore's own
                "piece_bytes_read" (bytes read from pieces, index metadata included), the
                file's size, and their ratio. The restored file is compared with the
                source byte for byte; the script fails if they differ.

Options:
  --size SIZE         data set size (default: $SIZE)
  --dir DIR           work directory shared with backup_bench.sh (default: $DIR); outputs
                      go to DIR/mx-out, logs to DIR/mx-logs; needs about 2x SIZE free
  --seed N            data set seed (default: $SEED)
  --levels "L..."     multiplexing levels to try (default: "$LEVELS")
  --channels "C..."   channel counts to try (default: "$CHANNELS")
  --files-per-set N   backup --files-per-set (default: $FILES_PER_SET: every file of a
                      channel's share in one set, so each set holds as many files as it can)
  --file PATH         the file to restore, relative to the data set directory (default:
                      the largest file)
  --repeat N          measure everything N times, interleaved; per row the round with the
                      median backup time is shown, with the min-max of the MB/s and of
                      the restore time over all rounds (default: 1)
  --bin PATH          stripeback binary (default: build/release/cli/stripeback, built with
                      the release preset commands if missing)
  --quiet-timeout S   before each measurement wait up to S seconds (default: $QUIET_TIMEOUT)
                      for the machine to be quiet (other CPU < 15% and disk < 20 MB/s
                      over one second); 0 disables the wait
  --results FILE      where to write the results (default: DIR/multiplex-<time>.md)
  -h, --help          this text
EOF
}

die() { echo "multiplex_bench: error: $*" >&2; exit 1; }
note() { echo "multiplex_bench: $*" >&2; }

ORIG_ARGS="$*"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --size) SIZE=${2:?--size needs a value}; shift 2 ;;
    --size=*) SIZE=${1#*=}; shift ;;
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --dir=*) DIR=${1#*=}; shift ;;
    --seed) SEED=${2:?--seed needs a value}; shift 2 ;;
    --seed=*) SEED=${1#*=}; shift ;;
    --levels) LEVELS=${2:?--levels needs a value}; shift 2 ;;
    --levels=*) LEVELS=${1#*=}; shift ;;
    --channels) CHANNELS=${2:?--channels needs a value}; shift 2 ;;
    --channels=*) CHANNELS=${1#*=}; shift ;;
    --files-per-set) FILES_PER_SET=${2:?--files-per-set needs a value}; shift 2 ;;
    --files-per-set=*) FILES_PER_SET=${1#*=}; shift ;;
    --file) FILE=${2:?--file needs a value}; shift 2 ;;
    --file=*) FILE=${1#*=}; shift ;;
    --repeat) REPEAT=${2:?--repeat needs a value}; shift 2 ;;
    --repeat=*) REPEAT=${1#*=}; shift ;;
    --bin) BIN=${2:?--bin needs a value}; shift 2 ;;
    --bin=*) BIN=${1#*=}; shift ;;
    --quiet-timeout) QUIET_TIMEOUT=${2:?--quiet-timeout needs a value}; shift 2 ;;
    --quiet-timeout=*) QUIET_TIMEOUT=${1#*=}; shift ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    --results=*) RESULTS=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done

[[ "$REPEAT" =~ ^[1-9][0-9]*$ ]] || die "--repeat must be a positive integer"
[[ "$SEED" =~ ^[0-9]+$ ]] || die "--seed must be a non-negative integer"
[[ "$FILES_PER_SET" =~ ^[1-9][0-9]*$ ]] || die "--files-per-set must be a positive integer"
[[ "$QUIET_TIMEOUT" =~ ^[0-9]+$ ]] || die "--quiet-timeout must be a non-negative integer"
for l in $LEVELS; do [[ "$l" =~ ^[1-9][0-9]*$ ]] || die "--levels: '$l' is not a positive integer"; done
for c in $CHANNELS; do [[ "$c" =~ ^[1-9][0-9]*$ ]] || die "--channels: '$c' is not a positive integer"; done
[[ -n "${LEVELS// /}" && -n "${CHANNELS// /}" ]] || die "--levels and --channels must not be empty"
SIZE_BYTES=$(numfmt --from=iec "$SIZE" 2>/dev/null) || die "cannot parse --size '$SIZE'"
((SIZE_BYTES >= 16 * 1024 * 1024)) || die "--size must be at least 16M"

# ---- tools ---------------------------------------------------------------------------
for t in sync awk cmp find numfmt fstrim; do
  command -v "$t" >/dev/null || die "'$t' is not installed"
done
GNU_TIME=/usr/bin/time
"$GNU_TIME" -f '%U' -o /dev/null true 2>/dev/null || die "GNU time is needed at /usr/bin/time (apt-get install time)"

# ---- shared helpers (cache, trim, quiet, signals, measure, binary): bench/bench_lib.sh
# shellcheck source=bench/bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
resolve_bin

# ---- work directory and data set -----------------------------------------------------
[[ -n "$DIR" && "$DIR" != "/" ]] || die "refusing to use '$DIR' as the work directory"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
DATA="$DIR/data"
STAMP="$DIR/data.stamp"
OUT="$DIR/mx-out"
LOGS="$DIR/mx-logs"
mkdir -p "$LOGS"
[[ -n "$RESULTS" ]] || RESULTS="$DIR/multiplex-$(date +%Y%m%d-%H%M%S).md"
clean_out() { rm -rf "${OUT:?}"; mkdir -p "$OUT"; }
clean_out

WANT_STAMP="size=$SIZE_BYTES seed=$SEED"
if [[ -d "$DATA" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT_STAMP" ]]; then
  note "reusing the data set in $DATA ($SIZE, seed $SEED)"
else
  rm -rf "${DATA:?}" "$STAMP"
  avail=$(df --output=avail -B1 "$DIR" | tail -1 | tr -d ' ')
  ((avail >= SIZE_BYTES * 3)) || die "$(numfmt --to=iec "$avail") free in $DIR, need about $(numfmt --to=iec $((SIZE_BYTES * 3)))"
  note "generating a $SIZE data set in $DATA (seed $SEED)"
  "$BIN" demo-data "$DATA" --size "$SIZE" --seed "$SEED" >&2
  echo "$WANT_STAMP" >"$STAMP"
fi
avail=$(df --output=avail -B1 "$DIR" | tail -1 | tr -d ' ')
((avail >= SIZE_BYTES * 2)) || die "$(numfmt --to=iec "$avail") free in $DIR, need about $(numfmt --to=iec $((SIZE_BYTES * 2))) besides the data set"

DATA_BYTES=$(find "$DATA" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f", s}')
DATA_FILES=$(find "$DATA" -type f | wc -l)
((DATA_BYTES > 0)) || die "the data set in $DATA is empty"
GIB=$(awk -v b="$DATA_BYTES" 'BEGIN {printf "%.6f", b / 1073741824}')
MOUNT=$(df --output=target "$DIR" | tail -1)

if [[ -z "$FILE" ]]; then
  FILE=$(cd "$DATA" && find . -type f -printf '%s %P\n' | sort -k1,1n -k2 | tail -n 1 | cut -d' ' -f2-)
fi
SRC_FILE="$DATA/$FILE"
[[ -f "$SRC_FILE" ]] || die "--file '$FILE' is not a regular file under $DATA"
FILE_BYTES=$(stat -c %s "$SRC_FILE")
((FILE_BYTES > 0)) || die "--file '$FILE' is empty"


# ---- measurement ---------------------------------------------------------------------
declare -A R_EL R_CPU R_RSS R_OTHER
measure() {  # measure KEY CMD...: drop caches, wait for quiet, time "CMD; sync"
  local key=$1
  shift
  local tf="$LOGS/$key.time" log="$LOGS/$key.out" err="$LOGS/$key.err"
  drop_caches
  wait_quiet
  local t0 t2 b0 b2 rc=0
  b0=$(busy_ticks)
  t0=$(now)
  "$GNU_TIME" -f '%U %S %M' -o "$tf" "$@" >"$log" 2>"$err" </dev/null &
  CHILD=$!
  wait "$CHILD" || rc=$?
  CHILD=""
  sync
  t2=$(now)
  b2=$(busy_ticks)
  if ((rc != 0)); then
    echo "multiplex_bench: FAILED ($key, exit $rc): $*" >&2
    tail -n 20 "$err" >&2 || true
    exit 1
  fi
  local u s m
  read -r u s m < <(tail -n 1 "$tf")
  R_EL[$key]=$(awk -v a="$t0" -v c="$t2" 'BEGIN {printf "%.3f", c - a}')
  R_CPU[$key]=$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%.2f", u + s}')
  R_RSS[$key]=$m
  R_OTHER[$key]=$(awk -v b="$((b2 - b0))" -v t="$CLK_TCK" -v c="${R_CPU[$key]}" \
    'BEGIN {o = b / t - c; printf "%.2f", (o < 0 ? 0 : o)}')
}
json_field() { grep -o "\"$2\":[^,}]*" "$1" | head -n 1 | cut -d: -f2- | tr -d '"'; }

declare -A MUX SETS BUFS BUFSZ PBR RFILES
note "data set: $DATA_FILES files, $DATA_BYTES bytes; restore file: $FILE ($FILE_BYTES bytes); $REPEAT round(s); logs in $LOGS"
ROWS=()
for c in $CHANNELS; do for l in $LEVELS; do ROWS+=("$c:$l"); done; done
for ((round = 1; round <= REPEAT; round++)); do
  note "round $round of $REPEAT"
  for row in "${ROWS[@]}"; do
    c=${row%%:*}; l=${row##*:}
    bk="backup.c$c.l$l.$round" rk="restore.c$c.l$l.$round"

    clean_out; trim
    measure "$bk" "$BIN" backup "$DATA" --to "$OUT/pieces" --catalog "$OUT/catalog" \
      --channels "$c" --files-per-set "$FILES_PER_SET" --max-open-files "$l" --json
    log="$LOGS/$bk.out"
    [[ "$(json_field "$log" status)" == complete ]] || die "$bk: backup did not complete (see $log)"
    [[ "$(json_field "$log" bytes_read)" == "$DATA_BYTES" ]] || die "$bk: backup did not read the whole data set (see $log)"
    MUX[$bk]=$(json_field "$log" multiplexing)
    SETS[$bk]=$(json_field "$log" sets)
    BUFS[$bk]=$(json_field "$log" buffers)
    BUFSZ[$bk]=$(json_field "$log" buffer_size)
    id=$(json_field "$log" backup_id)

    rm -rf "${OUT:?}/restore"; trim
    measure "$rk" "$BIN" restore "$SRC_FILE" --to "$OUT/restore" --catalog "$OUT/catalog" \
      --backup "$id" --channels 1 --json
    log="$LOGS/$rk.out"
    [[ "$(json_field "$log" status)" == complete ]] || die "$rk: restore did not complete (see $log)"
    RFILES[$rk]=$(json_field "$log" files)
    [[ "${RFILES[$rk]}" == 1 ]] || die "$rk: restored ${RFILES[$rk]} files, expected 1 (see $log)"
    PBR[$rk]=$(json_field "$log" piece_bytes_read)
    cmp -s "$SRC_FILE" "$OUT/restore$SRC_FILE" || die "$rk: VERIFY FAILED: $OUT/restore$SRC_FILE differs from $SRC_FILE"
    note "  ch $c L $l: backup ${R_EL[$bk]} s (L reported ${MUX[$bk]}, cpu ${R_CPU[$bk]} s, other ${R_OTHER[$bk]} s); restore ${R_EL[$rk]} s, ${PBR[$rk]} piece bytes read; verified"
  done
  clean_out
done
trim

# ---- report --------------------------------------------------------------------------
f2() { awk -v v="$1" 'BEGIN {printf "%.2f", v}'; }
{
  echo "# stripeback multiplexing benchmark"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "- command: \`bench/multiplex_bench.sh $ORIG_ARGS\` (levels $LEVELS; channels $CHANNELS; --files-per-set $FILES_PER_SET; repeat $REPEAT)"
  echo "- stripeback: $BIN_VERSION, $BIN (built $BIN_BUILT, sha256 $BIN_SHA); source tree: $TREE"
  echo "- machine: $(nproc) CPUs, kernel $(uname -r); work directory $DIR on $MOUNT ($DISK_DEV)"
  echo "- data set: $DATA_FILES files, $DATA_BYTES bytes from \`stripeback demo-data --size $SIZE --seed $SEED\`"
  echo "- restored file: \`$FILE\`, $FILE_BYTES bytes, restored alone (\`stripeback restore PATH --channels 1\`) from each backup and compared with the source"
  echo "- timed region: \`command; sync\` after fstrim and \`echo 3 > /proc/sys/vm/drop_caches\`; MB = 10^6 bytes; CPU = user + sys (GNU time)$( ((QUIET_NOTES)) && echo "; $QUIET_NOTES measurement(s) started while the machine was busy")$( ((CAN_DROP)) || echo '; page cache NOT dropped')"
  ((REPEAT > 1)) && echo "- rounds: $REPEAT, interleaved; each row shows the round with the median backup time, and min-max over all rounds"
  echo
  if ((REPEAT > 1)); then
    echo "| Channels | L asked | L reported | Sets | Buffers/channel | Backup s | Backup MB/s | MB/s min-max | CPU s/GiB | Peak RSS MiB | Other CPU s | 1-file restore s | restore s min-max | piece_bytes_read | File bytes | read / size |"
    echo "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  else
    echo "| Channels | L asked | L reported | Sets | Buffers/channel | Backup s | Backup MB/s | CPU s/GiB | Peak RSS MiB | Other CPU s | 1-file restore s | piece_bytes_read | File bytes | read / size |"
    echo "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  fi
  for row in "${ROWS[@]}"; do
    c=${row%%:*}; l=${row##*:}
    pick=$(for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[backup.c$c.l$l.$r]} $r"; done |
             sort -g | awk -v n="$REPEAT" 'NR == int((n + 1) / 2) {print $2}')
    bk="backup.c$c.l$l.$pick" rk="restore.c$c.l$l.$pick"
    mbs=$(awk -v b="$DATA_BYTES" -v e="${R_EL[$bk]}" 'BEGIN {printf "%.0f", b / e / 1e6}')
    cpu=$(awk -v c="${R_CPU[$bk]}" -v g="$GIB" 'BEGIN {printf "%.2f", c / g}')
    rss=$(awk -v k="${R_RSS[$bk]}" 'BEGIN {printf "%.1f", k / 1024}')
    bufs="${BUFS[$bk]} x $(numfmt --to=iec "${BUFSZ[$bk]}")"
    ratio=$(awk -v a="${PBR[$rk]}" -v b="$FILE_BYTES" 'BEGIN {printf "%.3f", a / b}')
    mark=""; [[ "${MUX[$bk]}" != "$l" ]] && mark=" (capped)"
    if ((REPEAT > 1)); then
      brange=$(for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[backup.c$c.l$l.$r]}"; done |
        awk -v b="$DATA_BYTES" '{v = b / $1 / 1e6; if (NR == 1 || v < lo) lo = v; if (NR == 1 || v > hi) hi = v} END {printf "%.0f-%.0f", lo, hi}')
      rrange=$(for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[restore.c$c.l$l.$r]}"; done |
        awk '{if (NR == 1 || $1 < lo) lo = $1; if (NR == 1 || $1 > hi) hi = $1} END {printf "%.2f-%.2f", lo, hi}')
      echo "| $c | $l | ${MUX[$bk]}$mark | ${SETS[$bk]} | $bufs | ${R_EL[$bk]} | $mbs | $brange | $cpu | $rss | ${R_OTHER[$bk]} | $(f2 "${R_EL[$rk]}") | $rrange | ${PBR[$rk]} | $FILE_BYTES | $ratio |"
    else
      echo "| $c | $l | ${MUX[$bk]}$mark | ${SETS[$bk]} | $bufs | ${R_EL[$bk]} | $mbs | $cpu | $rss | ${R_OTHER[$bk]} | $(f2 "${R_EL[$rk]}") | ${PBR[$rk]} | $FILE_BYTES | $ratio |"
    fi
  done
  echo
  echo "\"L reported\" is the backup JSON's \"multiplexing\" field, min(L, files in a channel's set);"
  echo "\"(capped)\" marks rows where a channel's set held fewer than L files, so L could not be reached."
  if ((REPEAT > 1)); then
    echo
    echo "## All rounds"
    echo
    echo "| Channels | L | Round | Backup s | Backup MB/s | CPU s | Other CPU s | 1-file restore s | piece_bytes_read |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for row in "${ROWS[@]}"; do
      c=${row%%:*}; l=${row##*:}
      for ((r = 1; r <= REPEAT; r++)); do
        bk="backup.c$c.l$l.$r" rk="restore.c$c.l$l.$r"
        echo "| $c | $l | $r | ${R_EL[$bk]} | $(awk -v b="$DATA_BYTES" -v e="${R_EL[$bk]}" 'BEGIN {printf "%.0f", b / e / 1e6}') | ${R_CPU[$bk]} | ${R_OTHER[$bk]} | ${R_EL[$rk]} | ${PBR[$rk]} |"
      done
    done
  fi
} | tee "$RESULTS"

note "results written to $RESULTS"
