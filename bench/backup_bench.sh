#!/usr/bin/env bash
# backup_bench.sh: measures stripeback backup and restore side by side with the disk's
# fio "copy ceiling", cp -r and tar -cf, on one generated datafile-like data set.
#
# Run as root (dropping the page cache and fstrim need it). See --help and
# docs/benchmarks.md for what is measured and how to read the table.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

SIZE=4G
DIR=/var/tmp/stripeback-bench
SEED=1
BIN=""
RESULTS=""
REPEAT=1
IODEPTH=8
REBUILD=0
QUIET_TIMEOUT=120

usage() {
  cat <<EOF
Usage: $(basename "$0") [options]

Generates a datafile-like data set with 'stripeback demo-data' (reused when one of the
same size and seed is already there), then measures, dropping the page cache before
each measurement:

  fio copy ceiling   one fio run, two concurrent jobs, io_uring, O_DIRECT, 1 MiB blocks,
                     iodepth $IODEPTH: a sequential read of every data set file and a
                     sequential write of the same number of bytes to a new file that
                     fio preallocates (fallocate=native), end_fsync=1
  fio, no prealloc   the same with fallocate=none (every write extends the file); for
                     information, not the ceiling
  cp -r              of the data set
  tar -cf            of the data set to one file
  stripeback backup  with 1 and 2 channels
  stripeback restore with 1 and 2 channels (each into a fresh directory, then verified
                     byte for byte against the source: the script fails if they differ)

Every timed region is "command; sync", so buffered writers (cp, tar) are charged for
getting their data onto the disk just as stripeback (O_DIRECT + fdatasync) is.
Outputs are removed, and the file system synced and trimmed, outside the timed regions.

Reported per measurement: MB/s (data set bytes / elapsed, MB = 10^6 bytes; for fio, the
bytes it wrote / elapsed), CPU seconds per GiB (user + sys from GNU time), peak RSS
(GNU time's maximum resident set size), and ratios to the fio ceiling and to cp.
The Markdown table goes to stdout and to a results file.

Options:
  --size SIZE     data set size, e.g. 4G (default) or 1G for a quick run
  --dir DIR       work directory (default: $DIR); needs about 4x SIZE free
  --seed N        data set seed (default: $SEED)
  --repeat N      measure everything N times, interleaved, and report the round with the
                  median elapsed time (the faster middle one for even N) plus the min-max
                  MB/s range; every round is listed too (default: 1)
  --iodepth N     fio queue depth (default: $IODEPTH)
  --bin PATH      stripeback binary (default: build/release/cli/stripeback, built with
                  the release preset commands if missing)
  --rebuild       rebuild the default binary (incremental) before measuring
  --quiet-timeout S  before each measurement wait up to S seconds (default: $QUIET_TIMEOUT)
                  for the machine to be quiet (other CPU use < 15% and disk < 20 MB/s over
                  one second); 0 disables the wait. The CPU used by everything else during
                  each measurement is reported either way.
  --results FILE  where to write the results (default: DIR/results-<time>.md)
  -h, --help      this text
EOF
}

die() { echo "backup_bench: error: $*" >&2; exit 1; }
note() { echo "backup_bench: $*" >&2; }

ORIG_ARGS="$*"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --size) SIZE=${2:?--size needs a value}; shift 2 ;;
    --size=*) SIZE=${1#*=}; shift ;;
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --dir=*) DIR=${1#*=}; shift ;;
    --seed) SEED=${2:?--seed needs a value}; shift 2 ;;
    --seed=*) SEED=${1#*=}; shift ;;
    --repeat) REPEAT=${2:?--repeat needs a value}; shift 2 ;;
    --repeat=*) REPEAT=${1#*=}; shift ;;
    --iodepth) IODEPTH=${2:?--iodepth needs a value}; shift 2 ;;
    --iodepth=*) IODEPTH=${1#*=}; shift ;;
    --bin) BIN=${2:?--bin needs a value}; shift 2 ;;
    --bin=*) BIN=${1#*=}; shift ;;
    --rebuild) REBUILD=1; shift ;;
    --quiet-timeout) QUIET_TIMEOUT=${2:?--quiet-timeout needs a value}; shift 2 ;;
    --quiet-timeout=*) QUIET_TIMEOUT=${1#*=}; shift ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    --results=*) RESULTS=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done

[[ "$REPEAT" =~ ^[1-9][0-9]*$ ]] || die "--repeat must be a positive integer"
[[ "$IODEPTH" =~ ^[1-9][0-9]*$ ]] || die "--iodepth must be a positive integer"
[[ "$SEED" =~ ^[0-9]+$ ]] || die "--seed must be a non-negative integer"
[[ "$QUIET_TIMEOUT" =~ ^[0-9]+$ ]] || die "--quiet-timeout must be a non-negative integer"
SIZE_BYTES=$(numfmt --from=iec "$SIZE" 2>/dev/null) || die "cannot parse --size '$SIZE' (use e.g. 512M, 1G, 4G)"
((SIZE_BYTES >= 16 * 1024 * 1024)) || die "--size must be at least 16M"

# ---- tools ---------------------------------------------------------------------------
for t in fio cp tar sync awk diff find numfmt lsblk findmnt; do
  command -v "$t" >/dev/null || die "'$t' is not installed (fio: apt-get install fio)"
done
GNU_TIME=/usr/bin/time
if ! "$GNU_TIME" -f '%U' -o /dev/null true 2>/dev/null; then
  die "GNU time is needed at /usr/bin/time (apt-get install time)"
fi

# ---- shared helpers (cache, trim, quiet, signals, measure, binary): bench/bench_lib.sh
# shellcheck source=bench/bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
resolve_bin

# ---- work directory ------------------------------------------------------------------
[[ -n "$DIR" && "$DIR" != "/" ]] || die "refusing to use '$DIR' as the work directory"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
DATA="$DIR/data"
STAMP="$DIR/data.stamp"
OUT="$DIR/out"     # everything a measurement writes; emptied between measurements
LOGS="$DIR/logs"
mkdir -p "$LOGS"
[[ -n "$RESULTS" ]] || RESULTS="$DIR/results-$(date +%Y%m%d-%H%M%S).md"

clean_out() { rm -rf "${OUT:?}"; mkdir -p "$OUT"; }
clean_out

WANT_STAMP="size=$SIZE_BYTES seed=$SEED"
if [[ -d "$DATA" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT_STAMP" ]]; then
  note "reusing the data set in $DATA ($SIZE, seed $SEED)"
else
  rm -rf "${DATA:?}" "$STAMP"
  # Space: data set + the largest pair of outputs alive at once (backup pieces and a
  # restored copy) + slack.
  avail=$(df --output=avail -B1 "$DIR" | tail -1 | tr -d ' ')
  need=$((SIZE_BYTES * 4))
  ((avail >= need)) || die "$(numfmt --to=iec "$avail") free in $DIR, need about $(numfmt --to=iec "$need") (4x --size)"
  note "generating a $SIZE data set in $DATA (seed $SEED)"
  "$BIN" demo-data "$DATA" --size "$SIZE" --seed "$SEED" >&2
  echo "$WANT_STAMP" >"$STAMP"
fi
avail=$(df --output=avail -B1 "$DIR" | tail -1 | tr -d ' ')
need=$((SIZE_BYTES * 3))
((avail >= need)) || die "$(numfmt --to=iec "$avail") free in $DIR, need about $(numfmt --to=iec "$need") besides the data set"

DATA_BYTES=$(find "$DATA" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f", s}')
DATA_FILES=$(find "$DATA" -type f | wc -l)
((DATA_BYTES > 0)) || die "the data set in $DATA is empty"
GIB=$(awk -v b="$DATA_BYTES" 'BEGIN {printf "%.6f", b / 1073741824}')
MOUNT=$(df --output=target "$DIR" | tail -1)


# measure(): bench/bench_lib.sh

json_field() {  # json_field FILE NAME: first numeric/string value of "NAME" in FILE
  grep -o "\"$2\":[^,}]*" "$1" | head -n 1 | cut -d: -f2- | tr -d '"'
}

check_backup() {  # check_backup KEY ROUND
  local log="$LOGS/$1.$2.out"
  [[ "$(json_field "$log" status)" == complete ]] || die "$1: backup did not complete (see $log)"
  local br
  br=$(json_field "$log" bytes_read)
  [[ "$br" == "$DATA_BYTES" ]] || die "$1: backup read $br bytes, the data set has $DATA_BYTES"
}

meta_list() {  # files: path, size, mode, mtime; directories and anything else: type, path
  (cd "$1" && find . \( -type f -printf 'f %p %s %m %T@\n' \) -o -printf '%y %p\n' | sort)
}

verify_restore() {  # verify_restore KEY RESTORE_ROOT
  local key=$1 got="$2$DATA"
  local failed=0
  if [[ ! -d "$got" ]]; then
    echo "backup_bench: VERIFY FAILED ($key): $got does not exist" >&2
    exit 1
  fi
  if ! diff -r "$DATA" "$got" >"$LOGS/$key.diff" 2>&1; then failed=1; fi
  if ! diff <(meta_list "$DATA") <(meta_list "$got") >>"$LOGS/$key.diff" 2>&1; then
    failed=1
  fi
  if ((failed)); then
    echo "######################################################################" >&2
    echo "backup_bench: VERIFY FAILED ($key): restored tree $got differs from $DATA" >&2
    head -n 40 "$LOGS/$key.diff" >&2
    echo "######################################################################" >&2
    exit 1
  fi
  note "  $key: restored tree verified identical (contents, sizes, modes, mtimes)"
}

# fio's read job reads the data set's own files (in order, 1 MiB at a time: tails shorter
# than 1 MiB are skipped by fio); the write job writes the data set's size rounded up to
# 1 MiB into a new file. Both run concurrently; the run ends when both have finished and
# the written file is fsynced. The ceiling lets fio preallocate the new file (its default,
# fallocate=native, part of the timed run); a second run without preallocation
# (fallocate=none: every write extends the file) is reported for information, since
# that is how stripeback writes its pieces today.
FIO_FILES=$(find "$DATA" -type f -size +0 -printf '%p:' | sed 's/:$//')
FIO_WRITE_MIB=$(((DATA_BYTES + 1048575) / 1048576))
FIO_WRITE_BYTES=$((FIO_WRITE_MIB * 1048576))
fio_copy_cmd() {  # fio_copy_cmd FALLOCATE_MODE: sets the array FIO_COPY
  FIO_COPY=(fio --output-format=json --ioengine=io_uring --direct=1 --bs=1M --iodepth="$IODEPTH"
    --name=read --filename="$FIO_FILES" --file_service_type=sequential --rw=read
    --name=write --filename="$OUT/fio-copy" --rw=write --size="${FIO_WRITE_MIB}M"
    --fallocate="$1" --end_fsync=1)
}
check_fio() {  # check_fio KEY ROUND
  local moved
  moved=$(grep -o '"io_bytes" : [0-9]*' "$LOGS/$1.$2.out" | awk '{s += $3} END {printf "%.0f", s}')
  ((moved >= FIO_WRITE_BYTES + DATA_BYTES - DATA_FILES * 1048576)) ||
    die "fio moved fewer bytes ($moved) than expected (see $LOGS/$1.$2.out)"
}

KEYS=(fio fio_nopre cp tar sb_backup_1 sb_backup_2 sb_restore_1 sb_restore_2)
declare -A LABEL=(
  [fio]="fio copy ceiling (io_uring, O_DIRECT, 1 MiB, QD $IODEPTH)"
  [fio_nopre]="fio copy, destination not preallocated"
  [cp]="cp -r"
  [tar]="tar -cf"
  [sb_backup_1]="stripeback backup, 1 channel"
  [sb_backup_2]="stripeback backup, 2 channels"
  [sb_restore_1]="stripeback restore, 1 channel"
  [sb_restore_2]="stripeback restore, 2 channels"
)

note "data set: $DATA_FILES files, $DATA_BYTES bytes; $REPEAT round(s); logs in $LOGS"
for ((round = 1; round <= REPEAT; round++)); do
  note "round $round of $REPEAT"

  clean_out; trim
  fio_copy_cmd native
  measure fio "$round" "${FIO_COPY[@]}"
  check_fio fio "$round"

  clean_out; trim
  fio_copy_cmd none
  measure fio_nopre "$round" "${FIO_COPY[@]}"
  check_fio fio_nopre "$round"

  clean_out; trim
  measure cp "$round" cp -r "$DATA" "$OUT/cp-copy"

  clean_out; trim
  measure tar "$round" tar -cf "$OUT/data.tar" -C "$(dirname "$DATA")" "$(basename "$DATA")"

  clean_out; trim
  measure sb_backup_1 "$round" "$BIN" backup "$DATA" --to "$OUT/pieces" --catalog "$OUT/catalog" --channels 1 --json
  check_backup sb_backup_1 "$round"

  clean_out; trim
  measure sb_backup_2 "$round" "$BIN" backup "$DATA" --to "$OUT/pieces" --catalog "$OUT/catalog" --channels 2 --json
  check_backup sb_backup_2 "$round"
  backup_id=$(json_field "$LOGS/sb_backup_2.$round.out" backup_id)

  for ch in 1 2; do
    rm -rf "${OUT:?}/restore"; trim
    measure "sb_restore_$ch" "$round" "$BIN" restore --to "$OUT/restore" --catalog "$OUT/catalog" \
      --channels "$ch" --json --backup "$backup_id"
    [[ "$(json_field "$LOGS/sb_restore_$ch.$round.out" status)" == complete ]] ||
      die "restore with $ch channel(s) did not complete"
    verify_restore "sb_restore_$ch.$round" "$OUT/restore"
  done
  clean_out
done
trim

# ---- report --------------------------------------------------------------------------
# The round with the median elapsed time stands for each measurement.
declare -A PICK MBS_MIN MBS_MAX
bytes_of() { [[ "$1" == fio* ]] && echo "$FIO_WRITE_BYTES" || echo "$DATA_BYTES"; }
for k in "${KEYS[@]}"; do
  b=$(bytes_of "$k")
  PICK[$k]=$(for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[$k.$r]} $r"; done |
               sort -g | awk -v n="$REPEAT" 'NR == int((n + 1) / 2) {print $2}')
  read -r "MBS_MIN[$k]" "MBS_MAX[$k]" < <(for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[$k.$r]}"; done |
    awk -v b="$b" '{v = b / $1 / 1e6; if (NR == 1 || v < lo) lo = v; if (NR == 1 || v > hi) hi = v}
                   END {printf "%.0f %.0f\n", lo, hi}')
done
el() { echo "${R_EL[$1.${PICK[$1]}]}"; }
mbs() { awk -v b="$(bytes_of "$1")" -v e="$(el "$1")" 'BEGIN {printf "%.1f", b / e / 1e6}'; }
cpu_gib() { awk -v c="${R_CPU[$1.${PICK[$1]}]}" -v g="$GIB" 'BEGIN {printf "%.2f", c / g}'; }
rss_mib() { awk -v k="${R_RSS[$1.${PICK[$1]}]}" 'BEGIN {printf "%.1f", k / 1024}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }

FIO_MBS=$(mbs fio)
CP_MBS=$(mbs cp)
TAR_MBS=$(mbs tar)
CP_CPU=$(cpu_gib cp)

{
  echo "# stripeback backup benchmark"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "- command: \`bench/backup_bench.sh $ORIG_ARGS\` (size $SIZE, dir $DIR, seed $SEED, repeat $REPEAT, fio iodepth $IODEPTH)"
  echo "- stripeback: $BIN_VERSION, $BIN (built $BIN_BUILT, sha256 $BIN_SHA); source tree when the run started: $TREE"
  echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) RAM, kernel $(uname -r)"
  dev=$(df --output=source "$DIR" | tail -1)
  bdev=$(lsblk -no PKNAME "$dev" 2>/dev/null | head -n 1); [[ -n "$bdev" ]] || bdev=$(basename "$dev")
  echo "- disk: $dev ($bdev, $(lsblk -dno SIZE "/dev/$bdev" 2>/dev/null | tr -d ' '), $(cat "/sys/block/$bdev/device/model" 2>/dev/null || readlink "/sys/block/$bdev/device/driver" 2>/dev/null | xargs -r basename || echo '?'), scheduler $(sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/$bdev/queue/scheduler" 2>/dev/null)), $(findmnt -no FSTYPE,OPTIONS "$MOUNT") on $MOUNT"
  echo "- data set: $DATA_FILES files, $DATA_BYTES bytes ($(numfmt --to=iec "$DATA_BYTES")) from \`stripeback demo-data --size $SIZE --seed $SEED\`"
  echo "- rounds: $REPEAT (the round with the median elapsed time is shown)$( ((CAN_DROP)) || echo '; page cache NOT dropped (not permitted)')$( ((CAN_TRIM)) || echo '; fstrim not available')"
  echo "- Other CPU s: CPU time the whole machine used during the timed region for everything but the measured command (kernel writeback and block threads, other processes)$( ((QUIET_NOTES)) && echo "; $QUIET_NOTES measurement(s) started while the machine was busy")"
  echo "- timed region: \`command; sync\` after \`sync; echo 3 > /proc/sys/vm/drop_caches\`; MB = 10^6 bytes; CPU = user + sys of the command and its children (GNU time); kernel writeback threads are not charged to the command"
  echo
  if ((REPEAT > 1)); then
    echo "| Measurement | Elapsed s | of which sync s | MB/s | MB/s min-max | vs fio | vs cp | CPU s/GiB | CPU vs cp | Peak RSS MiB | Other CPU s |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  else
    echo "| Measurement | Elapsed s | of which sync s | MB/s | vs fio | vs cp | CPU s/GiB | CPU vs cp | Peak RSS MiB | Other CPU s |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  fi
  for k in "${KEYS[@]}"; do
    m=$(mbs "$k"); c=$(cpu_gib "$k")
    range=""; ((REPEAT > 1)) && range=" ${MBS_MIN[$k]}-${MBS_MAX[$k]} |"
    echo "| ${LABEL[$k]} | $(el "$k") | ${R_SYNC[$k.${PICK[$k]}]} | $m |$range $(ratio "$m" "$FIO_MBS") | $(ratio "$m" "$CP_MBS") | $c | $(ratio "$c" "$CP_CPU") | $(rss_mib "$k") | ${R_OTHER[$k.${PICK[$k]}]} |"
  done
  echo
  echo "## Targets"
  echo
  echo "| Target | Value | Result |"
  echo "|---|---:|---|"
  verdict() { awk -v ok="$1" 'BEGIN {print (ok ? "met" : "**missed**")}'; }
  for k in sb_backup_2 sb_restore_2; do
    m=$(mbs "$k"); c=$(cpu_gib "$k")
    echo "| ${LABEL[$k]}: >= 0.90 x fio ceiling | $(ratio "$m" "$FIO_MBS") x | $(verdict "$(awk -v a="$m" -v b="$FIO_MBS" 'BEGIN {print (a >= 0.9 * b)}')") |"
    echo "| ${LABEL[$k]}: faster than cp | $(ratio "$m" "$CP_MBS") x | $(verdict "$(awk -v a="$m" -v b="$CP_MBS" 'BEGIN {print (a > b)}')") |"
    echo "| ${LABEL[$k]}: faster than tar | $(ratio "$m" "$TAR_MBS") x | $(verdict "$(awk -v a="$m" -v b="$TAR_MBS" 'BEGIN {print (a > b)}')") |"
  done
  for k in sb_backup_1 sb_backup_2 sb_restore_1 sb_restore_2; do
    c=$(cpu_gib "$k")
    echo "| ${LABEL[$k]}: CPU s/GiB <= 0.5 x cp ($CP_CPU) | $c | $(verdict "$(awk -v a="$c" -v b="$CP_CPU" 'BEGIN {print (a <= 0.5 * b)}')") |"
  done
  for k in sb_backup_1 sb_backup_2 sb_restore_1 sb_restore_2; do
    ch=${k##*_}; lim=$((64 + 20 * ch))
    r=$(rss_mib "$k")
    echo "| ${LABEL[$k]}: peak RSS < $lim MiB | $r MiB | $(verdict "$(awk -v a="$r" -v b="$lim" 'BEGIN {print (a < b)}')") |"
  done
  echo
  echo "## All rounds"
  echo
  echo "| Measurement | Round | Elapsed s | of which sync s | MB/s | CPU s | Peak RSS MiB | Other CPU s |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  for k in "${KEYS[@]}"; do
    for ((r = 1; r <= REPEAT; r++)); do
      echo "| ${LABEL[$k]} | $r | ${R_EL[$k.$r]} | ${R_SYNC[$k.$r]} | $(awk -v b="$(bytes_of "$k")" -v e="${R_EL[$k.$r]}" 'BEGIN {printf "%.1f", b / e / 1e6}') | ${R_CPU[$k.$r]} | $(awk -v k="${R_RSS[$k.$r]}" 'BEGIN {printf "%.1f", k / 1024}') | ${R_OTHER[$k.$r]} |"
    done
  done
  echo
  echo "## stripeback JSON summaries (shown rounds)"
  echo
  for k in sb_backup_1 sb_backup_2 sb_restore_1 sb_restore_2; do
    echo "${LABEL[$k]}:"
    echo
    echo '```json'
    cat "$LOGS/$k.${PICK[$k]}.out"
    echo '```'
    echo
  done
} | tee "$RESULTS"

note "results written to $RESULTS"
