#!/usr/bin/env bash
# large_file_bench.sh: one large file restored with sections over several channels, next to
# the disk's fio copy ceiling and cp on this machine's disk, and next to nfs-cp when the
# pieces are on NFS (a private nfs-ganesha on loopback, the libnfs client).
#
# Run as root (dropping the page cache, fstrim and starting nfs-ganesha need it). See
# --help and the "One large file: restore with sections" section of docs/benchmarks.md.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

DIR=/var/tmp/stripeback-bigfile-bench
SIZE=4G
SECTION_SIZE=256M
CHANNELS=4
REPEAT=3
QUIET_TIMEOUT=120
MEDIA="local nfs"
BIN=""
RESULTS=""
IODEPTH=8  # the fio copy ceiling's queue depth, as backup_bench.sh's default

usage() {
  cat <<EOF
Usage: $(basename "$0") [options]

Makes one file of SIZE random bytes, DIR/src/big.dbf (AES-128-CTR keystream from openssl,
so every run gets the same bytes; reused while its size is the same), then per medium:

  local   backs the file up once, untimed, to DIR/pieces (--section-size, --channels),
          then in each of REPEAT interleaved rounds measures:
            fio copy ceiling   one fio run, two concurrent jobs, io_uring, O_DIRECT, 1 MiB,
                               iodepth $IODEPTH: a sequential read of the file and a sequential
                               write of as many bytes to a new preallocated file, end_fsync
                               (the ceiling backup_bench.sh measures, bench_lib.sh)
            stripeback restore --catalog DIR/cat --to DIR/out --channels CHANNELS
            cp                 cp --reflink=never of the file to DIR/out-cp (a reference)
          The first round's restore is compared with the source (cmp): the script stops if
          they differ.
  nfs     starts a private nfs-ganesha (bench/nfs_server_lib.sh, ports 22149/22150)
          exporting DIR/nfs-export, which holds a copy of the file; backs the file up once,
          untimed, to nfs://127.0.0.1/.../pieces with the same section size and channels,
          then in each round measures:
            nfs-cp             libnfs's nfs-cp of the exported copy to DIR/out-cp
            stripeback restore of the nfs:// backup to DIR/out with CHANNELS channels
          The first round's restore is compared with the source too.

Before each measurement the previous outputs are removed, the file system is synced and
trimmed, the page cache dropped (the server's as well: it runs on this machine), and the
script waits for a quiet machine; the timed region is "command; sync" (GNU time).

Reported per measurement: MB/s (the file's size in 10^6 bytes per second of elapsed
time), CPU seconds (user + sys), peak RSS, the channels the restore used; and the targets:
local restore / fio ceiling >= 0.90, NFS restore / nfs-cp >= 2.0. For information also the
restore against fio's jobs alone (their longest runtime in fio's JSON, without fio's
start-up, about 0.4 s on the development machines, and exit): it matters at small sizes. Medians over the rounds
(the round with the median elapsed time stands for each row), min-max, every round.

Options:
  --dir DIR            work directory (default: $DIR); needs about 3 x SIZE free for
                       the local rows and 4 x SIZE with the NFS rows (the source and its
                       exported copy stay there for the next run)
  --size SIZE          the file's size, rounded down to whole MiB (default: $SIZE)
  --section-size SIZE  backup --section-size (default: $SECTION_SIZE); only a file larger
                       than it is split, so give a smaller one with a small --size
  --channels N         channels of the backups and the restores (default: $CHANNELS)
  --repeat N           rounds (default: $REPEAT)
  --quiet-timeout S    before each measurement wait up to S seconds (default:
                       $QUIET_TIMEOUT) for the machine to be quiet (other CPU < 15%, disk
                       < 20 MB/s); 0: no wait
  --media "M..."       local, nfs or both (default: "$MEDIA")
  --bin PATH           stripeback binary (default: build/release/cli/stripeback, built with
                       the release preset's flags if missing)
  --results FILE       where to write the results (default: DIR/bigfile-<time>.md)
  -h, --help           this text
EOF
}

die() { echo "large_file_bench: error: $*" >&2; exit 1; }
note() { echo "large_file_bench: $*" >&2; }

ORIG_ARGS="$*"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --size) SIZE=${2:?--size needs a value}; shift 2 ;;
    --section-size) SECTION_SIZE=${2:?--section-size needs a value}; shift 2 ;;
    --channels) CHANNELS=${2:?--channels needs a value}; shift 2 ;;
    --repeat) REPEAT=${2:?--repeat needs a value}; shift 2 ;;
    --quiet-timeout) QUIET_TIMEOUT=${2:?--quiet-timeout needs a value}; shift 2 ;;
    --media) MEDIA=${2:?--media needs a value}; shift 2 ;;
    --bin) BIN=${2:?--bin needs a value}; shift 2 ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
[[ "$REPEAT" =~ ^[1-9][0-9]*$ ]] || die "--repeat must be a positive integer"
[[ "$CHANNELS" =~ ^[1-9][0-9]*$ ]] || die "--channels must be a positive integer"
[[ "$QUIET_TIMEOUT" =~ ^[0-9]+$ ]] || die "--quiet-timeout must be a non-negative integer"
WANT_LOCAL=0 WANT_NFS=0
for m in $MEDIA; do
  case "$m" in
    local) WANT_LOCAL=1 ;;
    nfs) WANT_NFS=1 ;;
    *) die "--media: '$m' is not local or nfs" ;;
  esac
done
((WANT_LOCAL + WANT_NFS > 0)) || die "--media names no medium"
MEDIA=$( ((WANT_LOCAL)) && echo -n "local "; ((WANT_NFS)) && echo -n nfs; true)
MEDIA=${MEDIA% }
FILE_BYTES=$(numfmt --from=iec "$SIZE" 2>/dev/null) || die "cannot parse --size '$SIZE' (use e.g. 256M, 4G)"
FILE_BYTES=$((FILE_BYTES / 1048576 * 1048576))
((FILE_BYTES >= 16 * 1048576)) || die "--size must be at least 16M"
SECTION_BYTES=$(numfmt --from=iec "$SECTION_SIZE" 2>/dev/null) || die "cannot parse --section-size '$SECTION_SIZE'"
((SECTION_BYTES >= 1048576)) || die "--section-size must be at least 1M"
((FILE_BYTES > SECTION_BYTES)) ||
  note "NOTE: the file ($SIZE) is not larger than --section-size ($SECTION_SIZE): it is backed up as one set, without sections"

for t in fio cp cmp sync awk numfmt openssl sha256sum lsblk findmnt; do
  command -v "$t" >/dev/null || die "'$t' is not installed"
done
if ((WANT_NFS)); then
  command -v nfs-cp >/dev/null || die "'nfs-cp' is not installed (apt-get install libnfs-utils)"
fi
GNU_TIME=/usr/bin/time
"$GNU_TIME" -f '%U' -o /dev/null true 2>/dev/null || die "GNU time is needed at /usr/bin/time (apt-get install time)"

# ---- shared helpers (cache, trim, quiet, signals, measure, fio ceiling, binary) ----------
# shellcheck source=bench/bench_lib.sh
source "$SCRIPT_DIR/bench_lib.sh"
resolve_bin
# shellcheck source=bench/nfs_server_lib.sh
source "$SCRIPT_DIR/nfs_server_lib.sh"

# ---- work directory and the file ---------------------------------------------------------
[[ -n "$DIR" && "$DIR" != "/" ]] || die "refusing to use '$DIR' as the work directory"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd -P)
SRC="$DIR/src/big.dbf"
NFS_DIR="$DIR/nfs-export"  # the export: written only while the server is stopped
OUT="$DIR/out"             # the restores and fio's written file
OUT_CP="$DIR/out-cp"       # cp's and nfs-cp's copies
LOGS="$DIR/logs"
MOUNT=$(df --output=target "$DIR" | tail -1)
mkdir -p "$LOGS"
[[ -n "$RESULTS" ]] || RESULTS="$DIR/bigfile-$(date +%Y%m%d-%H%M%S).md"
trap 'nfs_server_stop' EXIT

# Outputs an earlier run may have left, before the space check.
rm -rf "${OUT:?}" "${OUT_CP:?}" "$DIR/pieces" "$DIR/cat" "$DIR/cat-nfs" "$NFS_DIR/pieces"

# The file is the AES-128-CTR keystream of a fixed key (the encryption of zeros): the same
# bytes on every machine, incompressible, with no all-zero block.
KEY=$(printf 'stripeback large_file_bench' | sha256sum | cut -c1-32)
WANT="bytes=$FILE_BYTES generator=openssl-aes-128-ctr key=$KEY"
have_src=0
if [[ -f "$DIR/src.stamp" && "$(cat "$DIR/src.stamp")" == "$WANT" && -f "$SRC" &&
      "$(stat -c %s "$SRC")" == "$FILE_BYTES" ]]; then
  have_src=1
fi
have_copy=0
if ((have_src)) && [[ -f "$NFS_DIR/src/big.dbf" && -f "$NFS_DIR/src.stamp" &&
                      "$(cat "$NFS_DIR/src.stamp")" == "$WANT" ]]; then
  have_copy=1
fi
need=$((FILE_BYTES * 2 + 64 * 1048576))          # the pieces and one output at a time
if ((WANT_NFS)); then need=$((need + FILE_BYTES * (1 - have_copy))); fi
if ((!have_src)); then need=$((need + FILE_BYTES)); fi
avail=$(df --output=avail -B1 "$DIR" | tail -1 | tr -d ' ')
((avail >= need)) || die "$(numfmt --to=iec "$avail") free in $DIR, need about $(numfmt --to=iec "$need")"

if ((have_src)); then
  note "reusing the file $SRC ($(numfmt --to=iec "$FILE_BYTES"))"
else
  rm -rf "${DIR:?}/src" "$DIR/src.stamp" "$NFS_DIR"
  mkdir -p "$DIR/src"
  note "writing $(numfmt --to=iec "$FILE_BYTES") of random bytes to $SRC"
  head -c "$FILE_BYTES" /dev/zero |
    openssl enc -aes-128-ctr -nosalt -K "$KEY" -iv 00000000000000000000000000000000 -out "$SRC" ||
    die "generating $SRC failed"
  [[ "$(stat -c %s "$SRC")" == "$FILE_BYTES" ]] || die "generated $SRC has $(stat -c %s "$SRC") bytes, expected $FILE_BYTES"
  sync
  echo "$WANT" >"$DIR/src.stamp"
fi
if ((WANT_NFS && !have_copy)); then
  rm -rf "${NFS_DIR:?}"
  mkdir -p "$NFS_DIR/src"
  note "copying the file into the export, $NFS_DIR/src"
  cp --reflink=never "$SRC" "$NFS_DIR/src/big.dbf"
  sync
  echo "$WANT" >"$NFS_DIR/src.stamp"
fi

# The fio copy ceiling (bench_lib.sh) of this one file.
FIO_FILES=$SRC
FIO_WRITE_MIB=$((FILE_BYTES / 1048576))
FIO_WRITE_BYTES=$FILE_BYTES
DATA_BYTES=$FILE_BYTES
DATA_FILES=1

json_field() { grep -o "\"$2\":[^,}]*" "$1" | head -n 1 | cut -d: -f2- | tr -d '"'; }
json_text() { { grep -o "\"$2\":\"[^\"]*\"" "$1" || true; } | head -n 1 | cut -d: -f2- | tr -d '"'; }
channels_used() { grep -o '"channel":[0-9]*' "$1" | wc -l; }

clean_outputs() { rm -rf "${OUT:?}" "${OUT_CP:?}"; mkdir -p "$OUT" "$OUT_CP"; trim; }

declare -A BACKUP_NOTE CHUSED BOUND EVIDENCE FIO_JOB_S
backup_once() {  # backup_once MEDIUM TO CATALOG: the untimed backup the restores read
  local medium=$1 to=$2 cat=$3 log="$LOGS/$1.backup.out"
  note "$medium: backing up $SRC to $to (--section-size $SECTION_SIZE --channels $CHANNELS), untimed"
  if ! "$BIN" backup "$SRC" --to "$to" --catalog "$cat" --section-size "$SECTION_SIZE" \
       --channels "$CHANNELS" --json >"$log" 2>"$LOGS/$medium.backup.err" </dev/null; then
    tail -n 20 "$LOGS/$medium.backup.err" >&2 || true
    die "$medium: the backup failed (see $log)"
  fi
  [[ "$(json_field "$log" status)" == complete ]] || die "$medium: the backup did not complete (see $log)"
  [[ "$(json_field "$log" bytes_read)" == "$FILE_BYTES" ]] || die "$medium: the backup did not read the whole file (see $log)"
  local sections
  sections=$(json_field "$log" sections)
  if [[ "$sections" == 0 ]]; then
    sections="not split into sections (the file is not larger than the section size)"
  else
    sections="$sections sections of $(numfmt --to=iec "$(json_field "$log" section_size)")"
  fi
  BACKUP_NOTE[$medium]="$sections, $(json_field "$log" pieces) pieces, $(channels_used "$log") channels, $(json_field "$log" elapsed_s) s"
  note "  ${BACKUP_NOTE[$medium]}"
}

timed_restore() {  # timed_restore MEDIUM ROUND CATALOG: one timed restore, checked
  local medium=$1 round=$2 key="$1.restore" log got="$OUT$SRC"
  clean_outputs
  measure "$key" "$round" "$BIN" restore --catalog "$3" --to "$OUT" --channels "$CHANNELS" --json
  log="$LOGS/$key.$round.out"
  [[ "$(json_field "$log" status)" == complete ]] || die "$key: the restore did not complete (see $log)"
  [[ "$(json_field "$log" bytes_written)" == "$FILE_BYTES" ]] || die "$key: the restore did not write the whole file (see $log)"
  CHUSED[$key.$round]=$(channels_used "$log")
  BOUND[$key.$round]=$(json_field "$log" bound_by)
  EVIDENCE[$key.$round]=$(json_text "$log" evidence)
  if ((round == 1)); then
    if [[ ! -f "$got" ]] || ! cmp "$SRC" "$got" >"$LOGS/$key.cmp" 2>&1; then
      echo "######################################################################" >&2
      echo "large_file_bench: VERIFY FAILED ($key): the restored file $got differs from $SRC" >&2
      cat "$LOGS/$key.cmp" >&2 || true
      [[ -f "$got" ]] || find "$OUT" -type f >&2
      echo "######################################################################" >&2
      exit 1
    fi
    note "  $key: the restored file is identical to the source (cmp)"
  fi
}

# ---- measurement -------------------------------------------------------------------------
if ((WANT_LOCAL)); then
  SERVER_TICKS=""
  backup_once local "$DIR/pieces" "$DIR/cat"
  for ((round = 1; round <= REPEAT; round++)); do
    note "local: round $round of $REPEAT"
    clean_outputs
    fio_copy_cmd native
    measure local.fio "$round" "${FIO_COPY[@]}"
    check_fio local.fio "$round"
    FIO_JOB_S[$round]=$(grep -o '"job_runtime" : [0-9]*' "$LOGS/local.fio.$round.out" |
      awk '$3 > m {m = $3} END {printf "%.3f", m / 1000}')
    timed_restore local "$round" "$DIR/cat"
    clean_outputs
    measure local.cp "$round" cp --reflink=never "$SRC" "$OUT_CP/big.dbf"
  done
  rm -rf "${OUT:?}" "${OUT_CP:?}" "$DIR/pieces" "$DIR/cat"
fi

if ((WANT_NFS)); then
  nfs_server_start "$DIR/nfs-state" "$NFS_DIR"
  SERVER_TICKS=nfs_server_ticks
  NFS_URL="nfs://127.0.0.1$NFS_EXPORT"
  backup_once nfs "$NFS_URL/pieces$NFS_Q" "$DIR/cat-nfs"
  for ((round = 1; round <= REPEAT; round++)); do
    note "nfs: round $round of $REPEAT"
    clean_outputs
    measure nfs.nfscp "$round" nfs-cp "$NFS_URL/src/big.dbf$NFS_Q" "$OUT_CP/big.dbf"
    [[ "$(stat -c %s "$OUT_CP/big.dbf")" == "$FILE_BYTES" ]] || die "nfs-cp copied $(stat -c %s "$OUT_CP/big.dbf") bytes, expected $FILE_BYTES"
    timed_restore nfs "$round" "$DIR/cat-nfs"
  done
  SERVER_TICKS=""
  nfs_server_stop
  # The server is stopped: its pieces may go now.
  rm -rf "${OUT:?}" "${OUT_CP:?}" "$NFS_DIR/pieces" "$DIR/cat-nfs"
fi

# ---- report ----------------------------------------------------------------------------
KEYS=()
declare -A LABEL
if ((WANT_LOCAL)); then
  KEYS+=(local.fio local.restore local.cp)
  LABEL[local.fio]="fio copy ceiling (io_uring, O_DIRECT, 1 MiB, QD $IODEPTH)"
  LABEL[local.restore]="stripeback restore, $CHANNELS channels"
  LABEL[local.cp]="cp --reflink=never"
fi
if ((WANT_NFS)); then
  KEYS+=(nfs.nfscp nfs.restore)
  LABEL[nfs.nfscp]="nfs-cp"
  LABEL[nfs.restore]="stripeback restore, $CHANNELS channels"
fi
# The round with the median elapsed time (the faster middle one for even counts).
declare -A PICK
for k in "${KEYS[@]}"; do
  PICK[$k]=$(for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[$k.$r]} $r"; done |
               sort -g | awk -v n="$REPEAT" 'NR == int((n + 1) / 2) {print $2}')
done
pk() { echo "$1.${PICK[$1]}"; }
mbs_of() { awk -v b="$FILE_BYTES" -v e="$1" 'BEGIN {printf "%.0f", b / e / 1e6}'; }
mbs() { mbs_of "${R_EL[$(pk "$1")]}"; }
range_mbs() {
  for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[$1.$r]}"; done |
    awk -v b="$FILE_BYTES" '{v = b / $1 / 1e6; if (NR == 1 || v < lo) lo = v; if (NR == 1 || v > hi) hi = v} END {printf "%.0f-%.0f", lo, hi}'
}
# el_ratio KEY REF: KEY's MB/s over REF's, from the elapsed times of the rounds shown.
el_ratio() { awk -v a="${R_EL[$(pk "$1")]}" -v b="${R_EL[$(pk "$2")]}" 'BEGIN {printf "%.2f", b / a}'; }
rss_mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
medium_of() { echo "${1%%.*}"; }
verdict() { awk -v a="$1" -v t="$2" 'BEGIN {print (a >= t ? "met" : "**missed**")}'; }
per_round_ratios() {  # per_round_ratios KEY REF: the ratio of KEY's MB/s to REF's in each round
  for ((r = 1; r <= REPEAT; r++)); do
    awk -v a="${R_EL[$1.$r]}" -v b="${R_EL[$2.$r]}" -v r="$r" 'BEGIN {printf "%s%.2f", (r > 1 ? ", " : ""), b / a}'
  done
}
srv() { if [[ "$(medium_of "$1")" == nfs ]]; then echo "${R_SRV[$2]}"; else echo -; fi; }
chused() { if [[ "$1" == *.restore ]]; then echo "${CHUSED[$2]}"; else echo -; fi; }

{
  echo "# stripeback large file benchmark: one file restored with sections"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "- command: \`bench/large_file_bench.sh $ORIG_ARGS\` (size $SIZE, section size $SECTION_SIZE, $CHANNELS channels, media $MEDIA, $REPEAT round(s), dir $DIR)"
  echo "- stripeback: $BIN_VERSION, $BIN (built $BIN_BUILT, sha256 $BIN_SHA); source tree: $TREE"
  echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) RAM, kernel $(uname -r)"
  dev=$(df --output=source "$DIR" | tail -1)
  bdev=$(lsblk -no PKNAME "$dev" 2>/dev/null | head -n 1); [[ -n "$bdev" ]] || bdev=$(basename "$dev")
  echo "- disk: $dev ($bdev, $(lsblk -dno SIZE "/dev/$bdev" 2>/dev/null | tr -d ' '), scheduler $(sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/$bdev/queue/scheduler" 2>/dev/null)), $(findmnt -no FSTYPE,OPTIONS "$MOUNT") on $MOUNT"
  echo "- file: $SRC, $FILE_BYTES bytes ($(numfmt --to=iec "$FILE_BYTES")) of AES-128-CTR keystream (\`head -c $FILE_BYTES /dev/zero | openssl enc -aes-128-ctr -nosalt -K $KEY -iv 0...0\`)"
  for m in $MEDIA; do
    echo "- $m backup (untimed): ${BACKUP_NOTE[$m]}"
  done
  echo "- timed region: \`command; sync\` after removing the previous outputs, \`sync; fstrim\`, \`echo 3 > /proc/sys/vm/drop_caches\` and the quiet wait; MB = 10^6 bytes of the file per second; CPU = user + sys (GNU time); the round with the median elapsed time is shown (the faster middle one for an even count)$( ((QUIET_NOTES)) && echo "; $QUIET_NOTES measurement(s) started while the machine was busy")$( ((CAN_DROP)) || echo '; page cache NOT dropped')$( ((CAN_TRIM)) || echo '; fstrim not available')"
  echo
  echo "| medium | measurement | median s | of which sync s | MB/s | MB/s min-max | CPU s | peak RSS MiB | other CPU s | server CPU s | channels used |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for k in "${KEYS[@]}"; do
    p=$(pk "$k")
    echo "| $(medium_of "$k") | ${LABEL[$k]} | ${R_EL[$p]} | ${R_SYNC[$p]} | $(mbs "$k") | $(range_mbs "$k") | ${R_CPU[$p]} | $(rss_mib "${R_RSS[$p]}") | ${R_OTHER[$p]} | $(srv "$k" "$p") | $(chused "$k" "$p") |"
  done
  echo
  echo "| target | value | per round | result |"
  echo "|---|---:|---|---|"
  if ((WANT_LOCAL)); then
    v=$(el_ratio local.restore local.fio)
    echo "| local restore >= 0.90 x fio copy ceiling | $v x | $(per_round_ratios local.restore local.fio) | $(verdict "$v" 0.90) |"
    echo "| local restore / cp (for information) | $(el_ratio local.restore local.cp) x | $(per_round_ratios local.restore local.cp) | |"
    fio_jobs=$(mbs_of "${FIO_JOB_S[${PICK[local.fio]}]}")
    v=$(awk -v a="${R_EL[$(pk local.restore)]}" -v b="${FIO_JOB_S[${PICK[local.fio]}]}" 'BEGIN {printf "%.2f", b / a}')
    echo "| local restore / fio's jobs alone, $fio_jobs MB/s (for information: fio's start-up and exit left out) | $v x | $(for ((r = 1; r <= REPEAT; r++)); do awk -v a="${R_EL[local.restore.$r]}" -v b="${FIO_JOB_S[$r]}" -v r="$r" 'BEGIN {printf "%s%.2f", (r > 1 ? ", " : ""), b / a}'; done) | |"
  fi
  if ((WANT_NFS)); then
    v=$(el_ratio nfs.restore nfs.nfscp)
    echo "| NFS restore >= 2.0 x nfs-cp | $v x | $(per_round_ratios nfs.restore nfs.nfscp) | $(verdict "$v" 2.0) |"
  fi
  echo
  echo "What bounded the restores (stripeback's verdict, shown rounds):"
  echo
  for m in $MEDIA; do
    p=$(pk "$m.restore")
    echo "- $m: ${BOUND[$p]}: ${EVIDENCE[$p]}"
  done
  echo
  echo "All rounds:"
  echo
  echo "| medium | measurement | round | s | of which sync s | MB/s | CPU s | peak RSS MiB | other CPU s |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
  for k in "${KEYS[@]}"; do
    for ((r = 1; r <= REPEAT; r++)); do
      echo "| $(medium_of "$k") | ${LABEL[$k]} | $r | ${R_EL[$k.$r]} | ${R_SYNC[$k.$r]} | $(mbs_of "${R_EL[$k.$r]}") | ${R_CPU[$k.$r]} | $(rss_mib "${R_RSS[$k.$r]}") | ${R_OTHER[$k.$r]} |"
    done
  done
} | tee "$RESULTS"
note "results written to $RESULTS; logs in $LOGS"
