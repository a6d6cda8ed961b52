#!/usr/bin/env bash
# backup_bench.sh: measures stripeback backup and restore side by side with the disk's
# fio "copy ceiling", cp -r and tar -cf, on a generated datafile-like data set, and
# against the same ceiling on an incompressible random data set.
#
# Run as root (dropping the page cache and fstrim need it). See --help and
# docs/benchmarks.md for what is measured and how to read the table.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

SIZE=4G
RANDOM_SIZE=2G
RANDOM_FILE_SIZE=128M
DATA_SETS=demo,random
DIR=/var/tmp/stripeback-bench
SEED=1
BIN=""
BIN_BEFORE=""
RESULTS=""
REPEAT=1
IODEPTH=8
REBUILD=0
QUIET_TIMEOUT=120

usage() {
  cat <<EOF
Usage: $(basename "$0") [options]

Measures on up to two data sets, each generated once outside the timed regions and
reused while its size and seed stay the same:

  demo     a datafile-like data set from 'stripeback demo-data' (table pages, sparse
           files with zero regions, incompressible files, odd sizes, an empty file)
  random   incompressible data without any all-zero block: --random-size bytes in files
           of --random-file-size, the AES-128-CTR keystream of a key derived from --seed
           (openssl enc), so the same seed gives the same bytes

and, dropping the page cache before each measurement:

  fio copy ceiling   one fio run, two concurrent jobs, io_uring, O_DIRECT, 1 MiB blocks,
                     iodepth $IODEPTH: a sequential read of every data set file and a
                     sequential write of the same number of bytes to a new file that
                     fio preallocates (fallocate=native), end_fsync=1 (both data sets)
  fio, no prealloc   the same with fallocate=none (every write extends the file); for
                     information, not the ceiling (demo only)
  cp -r              of the data set (demo only)
  tar -cf            of the data set to one file (demo only)
  stripeback backup  with 1 and 2 channels (both data sets)
  stripeback restore with 1 and 2 channels (each into a fresh directory, then verified
                     byte for byte against the source: the script fails if they differ)

The demo rows keep their names; the random data set's rows start with "random: ".
With --bin-before every stripeback row is also measured with that binary in the same
round, right next to the row of --bin (the order of the two alternates from round to
round), and reported with " (before)" appended; each binary writes its own pieces,
catalog and restored tree into fresh directories.

Every timed region is "command; sync", so buffered writers (cp, tar) are charged for
getting their data onto the disk just as stripeback (O_DIRECT + fdatasync) is.
Outputs are removed, and the file system synced and trimmed, outside the timed regions.

Reported per measurement: MB/s (data set bytes / elapsed, MB = 10^6 bytes; for fio, the
bytes it wrote / elapsed), CPU seconds per GiB (user + sys from GNU time), peak RSS
(GNU time's maximum resident set size), and ratios to the fio ceiling of the same data
set and (demo only) to cp. The Markdown table goes to stdout and to a results file.

Options:
  --data-sets LIST   which data sets to measure: demo, random or demo,random (default)
  --size SIZE        demo data set size, e.g. 4G (default) or 1G for a quick run
  --random-size SIZE random data set size (default: $RANDOM_SIZE)
  --random-file-size SIZE  size of each random file (default: $RANDOM_FILE_SIZE; the last
                     file is shorter when it does not divide --random-size)
  --dir DIR       work directory (default: $DIR); needs the data sets plus about 3x the
                  larger one free (4x with --bin-before)
  --seed N        data set seed, for both data sets (default: $SEED)
  --repeat N      measure everything N times, interleaved, and report the round with the
                  median elapsed time (the faster middle one for even N) plus the min-max
                  MB/s range; every round is listed too (default: 1)
  --iodepth N     fio queue depth (default: $IODEPTH)
  --bin PATH      stripeback binary (default: build/release/cli/stripeback, built with
                  the release preset commands if missing)
  --bin-before PATH  a second stripeback binary (e.g. a build of the previous design)
                  measured in the same rounds; its rows end in " (before)"
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
    --random-size) RANDOM_SIZE=${2:?--random-size needs a value}; shift 2 ;;
    --random-size=*) RANDOM_SIZE=${1#*=}; shift ;;
    --random-file-size) RANDOM_FILE_SIZE=${2:?--random-file-size needs a value}; shift 2 ;;
    --random-file-size=*) RANDOM_FILE_SIZE=${1#*=}; shift ;;
    --data-sets) DATA_SETS=${2:?--data-sets needs a value}; shift 2 ;;
    --data-sets=*) DATA_SETS=${1#*=}; shift ;;
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
    --bin-before) BIN_BEFORE=${2:?--bin-before needs a value}; shift 2 ;;
    --bin-before=*) BIN_BEFORE=${1#*=}; shift ;;
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

# The data sets to measure, always in the order demo, random.
WANT_DEMO=0
WANT_RANDOM=0
IFS=, read -r -a _sets <<<"$DATA_SETS"
for s in "${_sets[@]}"; do
  case "$s" in
    demo) WANT_DEMO=1 ;;
    random) WANT_RANDOM=1 ;;
    "") ;;
    *) die "unknown data set '$s' in --data-sets (use demo, random or demo,random)" ;;
  esac
done
SETS=()
((WANT_DEMO)) && SETS+=(demo)
((WANT_RANDOM)) && SETS+=(random)
((${#SETS[@]} > 0)) || die "--data-sets names no data set"

SIZE_BYTES=$(numfmt --from=iec "$SIZE" 2>/dev/null) || die "cannot parse --size '$SIZE' (use e.g. 512M, 1G, 4G)"
((SIZE_BYTES >= 16 * 1024 * 1024)) || die "--size must be at least 16M"
RANDOM_BYTES=$(numfmt --from=iec "$RANDOM_SIZE" 2>/dev/null) || die "cannot parse --random-size '$RANDOM_SIZE' (use e.g. 256M, 2G)"
((RANDOM_BYTES >= 16 * 1024 * 1024)) || die "--random-size must be at least 16M"
RANDOM_FILE_BYTES=$(numfmt --from=iec "$RANDOM_FILE_SIZE" 2>/dev/null) || die "cannot parse --random-file-size '$RANDOM_FILE_SIZE' (use e.g. 64M, 128M)"
((RANDOM_FILE_BYTES >= 1024 * 1024)) || die "--random-file-size must be at least 1M"

# ---- tools ---------------------------------------------------------------------------
for t in fio cp tar sync awk diff find numfmt lsblk findmnt sha256sum; do
  command -v "$t" >/dev/null || die "'$t' is not installed (fio: apt-get install fio)"
done
if ((WANT_RANDOM)); then
  command -v openssl >/dev/null || die "'openssl' is needed for the random data set (apt-get install openssl)"
fi
GNU_TIME=/usr/bin/time
if ! "$GNU_TIME" -f '%U' -o /dev/null true 2>/dev/null; then
  die "GNU time is needed at /usr/bin/time (apt-get install time)"
fi

# ---- shared helpers (cache, trim, quiet, signals, measure, binary): bench/bench_lib.sh
# shellcheck source=bench/bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
resolve_bin

# ---- the binaries: "main" is --bin, "before" the optional --bin-before -----------------
BINS=(main)
declare -A BIN_OF=([main]="$BIN") KSUF=([main]="") LSUF=([main]="")
if [[ -n "$BIN_BEFORE" ]]; then
  [[ -x "$BIN_BEFORE" && -f "$BIN_BEFORE" ]] || die "--bin-before binary '$BIN_BEFORE' not found or not executable"
  BIN_BEFORE=$(cd "$(dirname "$BIN_BEFORE")" && pwd)/$(basename "$BIN_BEFORE")
  BEFORE_VERSION=$("$BIN_BEFORE" --version 2>/dev/null | head -n 1 || true)
  BEFORE_BUILT=$(date -u -r "$BIN_BEFORE" '+%Y-%m-%d %H:%M:%S UTC')
  BEFORE_SHA=$(sha256sum "$BIN_BEFORE" | cut -c1-12)
  BINS+=(before)
  BIN_OF[before]=$BIN_BEFORE
  KSUF[before]=_before
  LSUF[before]=" (before)"
  [[ "$BEFORE_SHA" != "$BIN_SHA" ]] || note "NOTE: --bin and --bin-before are the same build (sha256 $BIN_SHA)"
fi

# ---- work directory ------------------------------------------------------------------
[[ -n "$DIR" && "$DIR" != "/" ]] || die "refusing to use '$DIR' as the work directory"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
OUT="$DIR/out"     # everything a measurement writes; emptied between measurements
LOGS="$DIR/logs"
mkdir -p "$LOGS"
[[ -n "$RESULTS" ]] || RESULTS="$DIR/results-$(date +%Y%m%d-%H%M%S).md"

# Where each binary writes: --bin into OUT, --bin-before into OUT/before.
declare -A PIECES=([main]="$OUT/pieces" [before]="$OUT/before/pieces")
declare -A CATALOG=([main]="$OUT/catalog" [before]="$OUT/before/catalog")
declare -A RESTORE=([main]="$OUT/restore" [before]="$OUT/before/restore")
clean_out() { rm -rf "${OUT:?}"; mkdir -p "$OUT/before"; }
clean_bin() { rm -rf "${PIECES[$1]:?}" "${CATALOG[$1]:?}" "${RESTORE[$1]:?}"; mkdir -p "$OUT/before"; }
clean_out

# Per data set: directory, stamp (what it was generated with), key and label prefixes.
declare -A SET_DIR=([demo]="$DIR/data" [random]="$DIR/random-data")
declare -A SET_STAMP=([demo]="$DIR/data.stamp" [random]="$DIR/random-data.stamp")
declare -A SET_WANT=([demo]="size=$SIZE_BYTES seed=$SEED"
                     [random]="size=$RANDOM_BYTES file_size=$RANDOM_FILE_BYTES seed=$SEED generator=openssl-aes-128-ctr")
declare -A SET_SIZE=([demo]="$SIZE_BYTES" [random]="$RANDOM_BYTES")
declare -A KPRE=([demo]="" [random]="rnd_")
declare -A LPRE=([demo]="" [random]="random: ")

tree_bytes() { find "$1" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f", s}'; }

# The random data set: file i (from 0) is the AES-128-CTR encryption of zeros, that is the
# cipher's keystream, under a key taken from SHA-256 of the seed, starting at counter
# i * 2^64, so no two files (and no two 16-byte blocks anywhere) share keystream. The
# chance that a given 4 KiB block comes out all zero is 2^-32768: there are none.
random_key() { printf 'stripeback backup_bench random data, seed %s' "$SEED" | sha256sum | cut -c1-32; }
gen_random() {  # gen_random DIR
  local dir=$1 key n i len f
  key=$(random_key)
  n=$(((RANDOM_BYTES + RANDOM_FILE_BYTES - 1) / RANDOM_FILE_BYTES))
  mkdir -p "$dir"
  for ((i = 0; i < n; i++)); do
    len=$((RANDOM_BYTES - i * RANDOM_FILE_BYTES))
    ((len <= RANDOM_FILE_BYTES)) || len=$RANDOM_FILE_BYTES
    f=$(printf '%s/random-%03d.bin' "$dir" "$i")
    head -c "$len" /dev/zero |
      openssl enc -aes-128-ctr -nosalt -K "$key" -iv "$(printf '%016x%016x' "$i" 0)" -out "$f" ||
      die "generating $f failed"
    [[ "$(stat -c %s "$f")" == "$len" ]] || die "generated $f has $(stat -c %s "$f") bytes, expected $len"
  done
}

# Remove stale data sets first, then check the space for the missing ones and the outputs:
# per data set, a backup per binary plus one restored tree alive at once, plus slack.
MISSING=()
for set in "${SETS[@]}"; do
  d=${SET_DIR[$set]} st=${SET_STAMP[$set]}
  if [[ -d "$d" && -f "$st" && "$(cat "$st")" == "${SET_WANT[$set]}" ]] &&
     [[ "$set" != random || "$(tree_bytes "$d")" == "$RANDOM_BYTES" ]]; then
    note "reusing the $set data set in $d (${SET_WANT[$set]})"
  else
    rm -rf "${d:?}" "$st"
    MISSING+=("$set")
  fi
done
need=0
for set in "${SETS[@]}"; do
  n=$((SET_SIZE[$set] * (${#BINS[@]} + 2)))
  ((n <= need)) || need=$n
done
for set in "${MISSING[@]}"; do need=$((need + SET_SIZE[$set])); done
avail=$(df --output=avail -B1 "$DIR" | tail -1 | tr -d ' ')
((avail >= need)) || die "$(numfmt --to=iec "$avail") free in $DIR, need about $(numfmt --to=iec "$need") (missing data sets + $((${#BINS[@]} + 2))x the largest)"
for set in "${MISSING[@]}"; do
  d=${SET_DIR[$set]}
  if [[ "$set" == demo ]]; then
    note "generating a $SIZE demo data set in $d (seed $SEED)"
    "$BIN" demo-data "$d" --size "$SIZE" --seed "$SEED" >&2
  else
    note "generating a $RANDOM_SIZE random data set in $d ($RANDOM_FILE_SIZE files, seed $SEED)"
    gen_random "$d"
  fi
  echo "${SET_WANT[$set]}" >"${SET_STAMP[$set]}"
done
MOUNT=$(df --output=target "$DIR" | tail -1)

# fio's read job reads the data set's own files (in order, 1 MiB at a time: tails shorter
# than 1 MiB are skipped by fio); the write job writes the data set's size rounded up to
# 1 MiB into a new file. Both run concurrently; the run ends when both have finished and
# the written file is fsynced. The ceiling lets fio preallocate the new file (its default,
# fallocate=native, part of the timed run); a second run without preallocation
# (fallocate=none: every write extends the file) is reported for information, since
# that is how stripeback writes its pieces today.
declare -A SET_BYTES SET_FILES SET_GIB SET_FIO_FILES SET_FIO_WRITE_MIB SET_FIO_WRITE_BYTES
for set in "${SETS[@]}"; do
  d=${SET_DIR[$set]}
  SET_BYTES[$set]=$(tree_bytes "$d")
  SET_FILES[$set]=$(find "$d" -type f | wc -l)
  ((SET_BYTES[$set] > 0)) || die "the $set data set in $d is empty"
  SET_GIB[$set]=$(awk -v b="${SET_BYTES[$set]}" 'BEGIN {printf "%.6f", b / 1073741824}')
  SET_FIO_FILES[$set]=$(find "$d" -type f -size +0 -printf '%p:' | sed 's/:$//')
  SET_FIO_WRITE_MIB[$set]=$(((SET_BYTES[$set] + 1048575) / 1048576))
  SET_FIO_WRITE_BYTES[$set]=$((SET_FIO_WRITE_MIB[$set] * 1048576))
done
use_set() {  # use_set SET: the data set the helpers below work on
  SET=$1
  DATA=${SET_DIR[$SET]}
  DATA_BYTES=${SET_BYTES[$SET]}
  DATA_FILES=${SET_FILES[$SET]}
  FIO_FILES=${SET_FIO_FILES[$SET]}
  FIO_WRITE_MIB=${SET_FIO_WRITE_MIB[$SET]}
  FIO_WRITE_BYTES=${SET_FIO_WRITE_BYTES[$SET]}
  P=${KPRE[$SET]}
}

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

# fio_copy_cmd(), check_fio(): bench/bench_lib.sh

# ---- the measurements: keys, labels, and the data set of each ----------------------------
declare -A LABEL KEY_SET
KEYS=()
add_key() { KEYS+=("$1"); LABEL[$1]=$2; KEY_SET[$1]=$3; }
declare -A BASE_LABEL=(
  [fio]="fio copy ceiling (io_uring, O_DIRECT, 1 MiB, QD $IODEPTH)"
  [fio_nopre]="fio copy, destination not preallocated"
  [cp]="cp -r"
  [tar]="tar -cf"
  [sb_backup_1]="stripeback backup, 1 channel"
  [sb_backup_2]="stripeback backup, 2 channels"
  [sb_restore_1]="stripeback restore, 1 channel"
  [sb_restore_2]="stripeback restore, 2 channels"
)
SB_BASES=(sb_backup_1 sb_backup_2 sb_restore_1 sb_restore_2)
for set in "${SETS[@]}"; do
  if [[ "$set" == demo ]]; then bases=(fio fio_nopre cp tar); else bases=(fio); fi
  for b in "${bases[@]}"; do add_key "${KPRE[$set]}$b" "${LPRE[$set]}${BASE_LABEL[$b]}" "$set"; done
  for b in "${SB_BASES[@]}"; do
    for w in "${BINS[@]}"; do
      add_key "${KPRE[$set]}$b${KSUF[$w]}" "${LPRE[$set]}${BASE_LABEL[$b]}${LSUF[$w]}" "$set"
    done
  done
done

# The stripeback rows of the current data set, for each binary in the order ORDER.
run_stripeback() {  # run_stripeback ROUND
  local round=$1 ch w key bin
  declare -A backup_id
  for ch in 1 2; do
    ((ch == 1)) || clean_out
    for w in "${ORDER[@]}"; do
      key="${P}sb_backup_$ch${KSUF[$w]}" bin=${BIN_OF[$w]}
      if ((ch == 1)); then clean_out; else clean_bin "$w"; fi
      trim
      measure "$key" "$round" "$bin" backup "$DATA" --to "${PIECES[$w]}" --catalog "${CATALOG[$w]}" \
        --channels "$ch" --json
      check_backup "$key" "$round"
      ((ch == 1)) || backup_id[$w]=$(json_field "$LOGS/$key.$round.out" backup_id)
    done
  done
  for ch in 1 2; do
    for w in "${ORDER[@]}"; do
      key="${P}sb_restore_$ch${KSUF[$w]}" bin=${BIN_OF[$w]}
      rm -rf "${RESTORE[$w]:?}"; trim
      measure "$key" "$round" "$bin" restore --to "${RESTORE[$w]}" --catalog "${CATALOG[$w]}" \
        --channels "$ch" --json --backup "${backup_id[$w]}"
      [[ "$(json_field "$LOGS/$key.$round.out" status)" == complete ]] ||
        die "$key: restore with $ch channel(s) did not complete"
      verify_restore "$key.$round" "${RESTORE[$w]}"
      rm -rf "${RESTORE[$w]:?}"
    done
  done
  clean_out
}

for set in "${SETS[@]}"; do
  note "$set data set: ${SET_FILES[$set]} files, ${SET_BYTES[$set]} bytes in ${SET_DIR[$set]}"
done
note "$REPEAT round(s), binaries: ${BINS[*]}; logs in $LOGS"
for ((round = 1; round <= REPEAT; round++)); do
  note "round $round of $REPEAT"
  # With two binaries, the one that goes first alternates from round to round.
  if ((${#BINS[@]} == 2 && round % 2 == 0)); then ORDER=(before main); else ORDER=("${BINS[@]}"); fi
  for set in "${SETS[@]}"; do
    use_set "$set"

    clean_out; trim
    fio_copy_cmd native
    measure "${P}fio" "$round" "${FIO_COPY[@]}"
    check_fio "${P}fio" "$round"

    if [[ "$set" == demo ]]; then
      clean_out; trim
      fio_copy_cmd none
      measure fio_nopre "$round" "${FIO_COPY[@]}"
      check_fio fio_nopre "$round"

      clean_out; trim
      measure cp "$round" cp -r "$DATA" "$OUT/cp-copy"

      clean_out; trim
      measure tar "$round" tar -cf "$OUT/data.tar" -C "$(dirname "$DATA")" "$(basename "$DATA")"
    fi

    run_stripeback "$round"
  done
done
trim

# ---- report --------------------------------------------------------------------------
# The round with the median elapsed time stands for each measurement.
declare -A PICK MBS_MIN MBS_MAX
bytes_of() {
  local set=${KEY_SET[$1]} base=${1#rnd_}
  if [[ "$base" == fio* ]]; then echo "${SET_FIO_WRITE_BYTES[$set]}"; else echo "${SET_BYTES[$set]}"; fi
}
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
cpu_gib() { awk -v c="${R_CPU[$1.${PICK[$1]}]}" -v g="${SET_GIB[${KEY_SET[$1]}]}" 'BEGIN {printf "%.2f", c / g}'; }
rss_mib() { awk -v k="${R_RSS[$1.${PICK[$1]}]}" 'BEGIN {printf "%.1f", k / 1024}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }

declare -A FIO_MBS
for set in "${SETS[@]}"; do FIO_MBS[$set]=$(mbs "${KPRE[$set]}fio"); done
if ((WANT_DEMO)); then
  CP_MBS=$(mbs cp)
  TAR_MBS=$(mbs tar)
  CP_CPU=$(cpu_gib cp)
fi

{
  echo "# stripeback backup benchmark"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "- command: \`bench/backup_bench.sh $ORIG_ARGS\` (data sets ${SETS[*]}, size $SIZE, random size $RANDOM_SIZE in $RANDOM_FILE_SIZE files, dir $DIR, seed $SEED, repeat $REPEAT, fio iodepth $IODEPTH)"
  echo "- stripeback: $BIN_VERSION, $BIN (built $BIN_BUILT, sha256 $BIN_SHA); source tree when the run started: $TREE"
  if [[ -n "$BIN_BEFORE" ]]; then
    echo "- stripeback (before), the rows ending in \"(before)\": $BEFORE_VERSION, $BIN_BEFORE (built $BEFORE_BUILT, sha256 $BEFORE_SHA); in each round it ran right before or after --bin, alternating (--bin first in round 1)"
  fi
  echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) RAM, kernel $(uname -r)"
  dev=$(df --output=source "$DIR" | tail -1)
  bdev=$(lsblk -no PKNAME "$dev" 2>/dev/null | head -n 1); [[ -n "$bdev" ]] || bdev=$(basename "$dev")
  echo "- disk: $dev ($bdev, $(lsblk -dno SIZE "/dev/$bdev" 2>/dev/null | tr -d ' '), $(cat "/sys/block/$bdev/device/model" 2>/dev/null || readlink "/sys/block/$bdev/device/driver" 2>/dev/null | xargs -r basename || echo '?'), scheduler $(sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/$bdev/queue/scheduler" 2>/dev/null)), $(findmnt -no FSTYPE,OPTIONS "$MOUNT") on $MOUNT"
  if ((WANT_DEMO)); then
    echo "- data set: ${SET_FILES[demo]} files, ${SET_BYTES[demo]} bytes ($(numfmt --to=iec "${SET_BYTES[demo]}")) from \`stripeback demo-data --size $SIZE --seed $SEED\`"
  fi
  if ((WANT_RANDOM)); then
    echo "- random data set (rows \"random: ...\"): ${SET_FILES[random]} files, ${SET_BYTES[random]} bytes ($(numfmt --to=iec "${SET_BYTES[random]}")) of AES-128-CTR keystream (\`head -c $RANDOM_FILE_SIZE /dev/zero | openssl enc -aes-128-ctr -nosalt -K $(random_key) -iv <file index><64 zero bits>\`), incompressible, no all-zero blocks"
  fi
  echo "- rounds: $REPEAT (the round with the median elapsed time is shown)$( ((CAN_DROP)) || echo '; page cache NOT dropped (not permitted)')$( ((CAN_TRIM)) || echo '; fstrim not available')"
  echo "- Other CPU s: CPU time the whole machine used during the timed region for everything but the measured command (kernel writeback and block threads, other processes)$( ((QUIET_NOTES)) && echo "; $QUIET_NOTES measurement(s) started while the machine was busy")"
  echo "- timed region: \`command; sync\` after \`sync; echo 3 > /proc/sys/vm/drop_caches\`; MB = 10^6 bytes; CPU = user + sys of the command and its children (GNU time); kernel writeback threads are not charged to the command; \"vs fio\" is against the fio ceiling of the row's own data set, \"vs cp\" (demo only) against cp -r"
  echo
  if ((REPEAT > 1)); then
    echo "| Measurement | Elapsed s | of which sync s | MB/s | MB/s min-max | vs fio | vs cp | CPU s/GiB | CPU vs cp | Peak RSS MiB | Other CPU s |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  else
    echo "| Measurement | Elapsed s | of which sync s | MB/s | vs fio | vs cp | CPU s/GiB | CPU vs cp | Peak RSS MiB | Other CPU s |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  fi
  for k in "${KEYS[@]}"; do
    set=${KEY_SET[$k]}
    m=$(mbs "$k"); c=$(cpu_gib "$k")
    range=""; ((REPEAT > 1)) && range=" ${MBS_MIN[$k]}-${MBS_MAX[$k]} |"
    if [[ "$set" == demo ]]; then
      vs_cp=$(ratio "$m" "$CP_MBS"); cpu_cp=$(ratio "$c" "$CP_CPU")
    else
      vs_cp=-; cpu_cp=-
    fi
    echo "| ${LABEL[$k]} | $(el "$k") | ${R_SYNC[$k.${PICK[$k]}]} | $m |$range $(ratio "$m" "${FIO_MBS[$set]}") | $vs_cp | $c | $cpu_cp | $(rss_mib "$k") | ${R_OTHER[$k.${PICK[$k]}]} |"
  done
  echo
  echo "## Targets"
  echo
  echo "| Target | Value | Result |"
  echo "|---|---:|---|"
  verdict() { awk -v ok="$1" 'BEGIN {print (ok ? "met" : "**missed**")}'; }
  for set in "${SETS[@]}"; do
    fm=${FIO_MBS[$set]}
    for b in sb_backup_2 sb_restore_2; do
      k=${KPRE[$set]}$b
      m=$(mbs "$k")
      echo "| ${LABEL[$k]}: >= 0.90 x fio ceiling | $(ratio "$m" "$fm") x | $(verdict "$(awk -v a="$m" -v b="$fm" 'BEGIN {print (a >= 0.9 * b)}')") |"
      if [[ "$set" == demo ]]; then
        echo "| ${LABEL[$k]}: faster than cp | $(ratio "$m" "$CP_MBS") x | $(verdict "$(awk -v a="$m" -v b="$CP_MBS" 'BEGIN {print (a > b)}')") |"
        echo "| ${LABEL[$k]}: faster than tar | $(ratio "$m" "$TAR_MBS") x | $(verdict "$(awk -v a="$m" -v b="$TAR_MBS" 'BEGIN {print (a > b)}')") |"
      fi
    done
    if [[ "$set" == demo ]]; then
      for b in "${SB_BASES[@]}"; do
        k=$b c=$(cpu_gib "$b")
        echo "| ${LABEL[$k]}: CPU s/GiB <= 0.5 x cp ($CP_CPU) | $c | $(verdict "$(awk -v a="$c" -v b="$CP_CPU" 'BEGIN {print (a <= 0.5 * b)}')") |"
      done
    fi
    for b in "${SB_BASES[@]}"; do
      k=${KPRE[$set]}$b
      ch=${b##*_}; lim=$((64 + 20 * ch))
      r=$(rss_mib "$k")
      echo "| ${LABEL[$k]}: peak RSS < $lim MiB | $r MiB | $(verdict "$(awk -v a="$r" -v b="$lim" 'BEGIN {print (a < b)}')") |"
    done
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
  for k in "${KEYS[@]}"; do
    [[ "${k#rnd_}" == sb_* ]] || continue
    echo "${LABEL[$k]}:"
    echo
    echo '```json'
    cat "$LOGS/$k.${PICK[$k]}.out"
    echo '```'
    echo
  done
} | tee "$RESULTS"

note "results written to $RESULTS"
