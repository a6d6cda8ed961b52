#!/usr/bin/env bash
# incremental_bench.sh: measures stripeback incremental backups on a generated
# datafile-like data set: a level 0, a level 1 after 1% of the 8 KiB pages changed, the
# disk's fio read pass over the same files as the ceiling for the level 1, a plain full
# backup of the changed set, its restore against the chain restore (level 0 + level 1)
# and, when the binary has it, restore --delta over a target that differs in 1% of its
# pages.
#
# Run as root (dropping the page cache and fstrim need it). See --help.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

SIZE=4G
DIR=/var/tmp/stripeback-incbench
SEED=1
PERCENT=1
CHANGE_UNIT=64K
CHANNELS=2
BIN=""
RESULTS=""
REPEAT=1
IODEPTH=8
REBUILD=0
QUIET_TIMEOUT=120
PAGE=8192

usage() {
  cat <<EOF
Usage: $(basename "$0") [options]

Measures incremental backups on a datafile-like data set from 'stripeback demo-data'
(generated once into DIR/data and reused while its size and seed stay the same). Each
round copies it to DIR/src, the tree that is backed up and changed, and then, dropping
the page cache before each timed step:

  level 0 backup     backup --level 0 of DIR/src
  (change)           bench/change_pages.py overwrites --percent of the whole 8 KiB pages
                     of DIR/src in place with random bytes, at random offsets across all
                     files (deterministic for --seed); counts the pages and the distinct
                     change units they touch. Not timed.
  fio read pass      fio reading every file of the changed set once: one job, io_uring,
                     O_DIRECT, 1 MiB blocks, iodepth $IODEPTH, the files as its --filename
                     list (tails shorter than 1 MiB are skipped by fio). The ceiling for the
                     level 1, which must read every block too, is fio's own I/O time: its
                     read job's runtime (without fio's start-up and exit, about half a
                     second on some machines), scaled to the data set's bytes.
  level 1 backup     backup --level 1 (differential): writes only the changed units
  full backup        a plain full backup (no --level) of the changed set, into its own
                     pieces directory and catalog
  full restore       restore of the full backup into a fresh directory
  chain restore      restore of the level 1 (level 0 + level 1) into a fresh directory
  delta restore      only when 'stripeback restore --help' lists --delta: the full
                     restore's tree gets --percent of its pages changed again (other
                     pages, other bytes), then restore --delta of the level 1 (the same
                     tree, with its change units' digests) over it

Every restored tree is verified against DIR/src (contents with diff -r, plus sizes,
modes and mtimes); the script fails loudly if one differs. Every timed region is
"command; sync". Pieces, catalogs and restored trees live in DIR/out and are removed
between rounds and at the end; DIR/src is removed at the end.

Reported: elapsed, MB/s (data set bytes / elapsed, MB = 10^6 bytes; for fio the bytes it
read), the bytes written as the command's --json reports them and as the disk counted them
(/proc/diskstats, device-wide), CPU, peak RSS, and the ratios

  level 1 bytes written / (changed pages x change unit)   target <= 1.5 (metadata included)
  level 1 bytes written / full backup bytes written       (no target)
  level 1 elapsed / fio read pass I/O time                target <= 1.1
  chain restore MB/s / full restore MB/s                  target >= 0.9
  full restore elapsed / delta restore elapsed            target >= 3

each with PASS or FAIL, plus a check that the level 1 wrote exactly the change units
that were changed. The elapsed time of a stripeback command includes a fixed cost outside
its job (process start, catalog and parent digest maps read, catalog written: about 50 ms
on a 2-CPU virtual machine), which fio's I/O time does not: judge the level 1 target on
the default 4G, not on a quick 512M run, where that cost alone is over 10% of the pass. The Markdown table goes to stdout and to --results FILE, followed by
the command line that reproduces the run.

Options:
  --size SIZE        data set size, e.g. 4G (default) or 512M for a quick run
  --dir DIR          work directory (default: $DIR); needs the data set plus about 5.5x
                     its size free
  --seed N           data set and change seed (default: $SEED)
  --percent P        share of the 8 KiB pages to change, in percent (default: $PERCENT)
  --change-unit SIZE backup --change-unit, a power of two from 8K to 1M (default: $CHANGE_UNIT)
  --channels N       channels of every backup and restore (default: $CHANNELS)
  --repeat N         run the whole sequence N times and report, per measurement, the round
                     with the median elapsed time (the faster middle one for even N); every
                     round is listed too (default: 1)
  --iodepth N        fio queue depth (default: $IODEPTH)
  --bin PATH         stripeback binary (default: build/release/cli/stripeback, built with
                     the release preset's flags if missing)
  --rebuild          rebuild the default binary (incremental) before measuring
  --quiet-timeout S  before each measurement wait up to S seconds (default: $QUIET_TIMEOUT)
                     for the machine to be quiet (other CPU use < 15% and disk < 20 MB/s
                     over one second); 0 disables the wait
  --results FILE     also write the results to FILE (default: DIR/results-<time>.md)
  -h, --help         this text
EOF
}

die() { echo "incremental_bench: error: $*" >&2; exit 1; }
note() { echo "incremental_bench: $*" >&2; }

ORIG_ARGS=$(printf ' %q' "$@")
while [[ $# -gt 0 ]]; do
  case "$1" in
    --size) SIZE=${2:?--size needs a value}; shift 2 ;;
    --size=*) SIZE=${1#*=}; shift ;;
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --dir=*) DIR=${1#*=}; shift ;;
    --seed) SEED=${2:?--seed needs a value}; shift 2 ;;
    --seed=*) SEED=${1#*=}; shift ;;
    --percent) PERCENT=${2:?--percent needs a value}; shift 2 ;;
    --percent=*) PERCENT=${1#*=}; shift ;;
    --change-unit) CHANGE_UNIT=${2:?--change-unit needs a value}; shift 2 ;;
    --change-unit=*) CHANGE_UNIT=${1#*=}; shift ;;
    --channels) CHANNELS=${2:?--channels needs a value}; shift 2 ;;
    --channels=*) CHANNELS=${1#*=}; shift ;;
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
[[ "$CHANNELS" =~ ^[1-9][0-9]*$ ]] || die "--channels must be a positive integer"
[[ "$SEED" =~ ^[0-9]+$ ]] || die "--seed must be a non-negative integer"
[[ "$QUIET_TIMEOUT" =~ ^[0-9]+$ ]] || die "--quiet-timeout must be a non-negative integer"
if ! [[ "$PERCENT" =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] ||
   ! awk -v p="$PERCENT" 'BEGIN {exit !(p > 0 && p <= 100)}'; then
  die "--percent must be a number in (0, 100]"
fi
SIZE_BYTES=$(numfmt --from=iec "$SIZE" 2>/dev/null) || die "cannot parse --size '$SIZE' (use e.g. 512M, 1G, 4G)"
((SIZE_BYTES >= 16 * 1024 * 1024)) || die "--size must be at least 16M"
UNIT_BYTES=$(numfmt --from=iec "$CHANGE_UNIT" 2>/dev/null) || die "cannot parse --change-unit '$CHANGE_UNIT' (use e.g. 8K, 64K, 1M)"
((UNIT_BYTES >= 8192 && UNIT_BYTES <= 1048576 && (UNIT_BYTES & (UNIT_BYTES - 1)) == 0)) ||
  die "--change-unit must be a power of two from 8K to 1M"

# ---- tools ---------------------------------------------------------------------------
for t in fio python3 cp sync awk diff find numfmt lsblk findmnt sha256sum; do
  command -v "$t" >/dev/null || die "'$t' is not installed (fio: apt-get install fio)"
done
GNU_TIME=/usr/bin/time
if ! "$GNU_TIME" -f '%U' -o /dev/null true 2>/dev/null; then
  die "GNU time is needed at /usr/bin/time (apt-get install time)"
fi
CHANGE_PAGES="$SCRIPT_DIR/change_pages.py"
[[ -f "$CHANGE_PAGES" ]] || die "$CHANGE_PAGES is missing"

# ---- shared helpers (cache, trim, quiet, signals, measure, binary): bench/bench_lib.sh
# shellcheck source=bench/bench_lib.sh
source "$SCRIPT_DIR/bench_lib.sh"
resolve_bin

# restore --delta: only measured when this binary's restore has it. When its help says
# the option goes with --force, --force is passed too.
HAVE_DELTA=0
DELTA_ARGS=()
if "$BIN" restore --help 2>/dev/null | grep -q -- --delta; then
  HAVE_DELTA=1
  DELTA_ARGS=(--delta)
  if "$BIN" restore --help 2>/dev/null | grep -- --delta | grep -q -- --force; then DELTA_ARGS+=(--force); fi
else
  note "NOTE: this binary's restore has no --delta; the delta restore rows are skipped"
fi

# ---- work directory ------------------------------------------------------------------
[[ -n "$DIR" && "$DIR" != "/" ]] || die "refusing to use '$DIR' as the work directory"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
PRISTINE="$DIR/data"        # as demo-data generated it; never changed
STAMP="$DIR/data.stamp"
SRC="$DIR/src"              # the tree backed up and changed: a fresh copy every round
OUT="$DIR/out"              # pieces, catalogs and restored trees; emptied every round
LOGS="$DIR/logs"
mkdir -p "$LOGS"
[[ -n "$RESULTS" ]] || RESULTS="$DIR/results-$(date +%Y%m%d-%H%M%S).md"

PIECES="$OUT/pieces"        # level 0 and level 1
CATALOG="$OUT/catalog"
FULL_PIECES="$OUT/full-pieces"
FULL_CATALOG="$OUT/full-catalog"
RESTORE_FULL="$OUT/restore-full"
RESTORE_CHAIN="$OUT/restore-chain"
clean_out() { rm -rf "${OUT:?}"; mkdir -p "$OUT"; }
clean_out

tree_bytes() { find "$1" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f", s}'; }

WANT="size=$SIZE_BYTES seed=$SEED"
MISSING=0
if [[ -d "$PRISTINE" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  note "reusing the data set in $PRISTINE ($WANT)"
else
  rm -rf "${PRISTINE:?}" "$STAMP"
  MISSING=1
fi
rm -rf "${SRC:?}"
# The data set (if missing), its copy, the level 0, the full backup and two restored
# trees are on the disk at once, plus the level 1 and some slack.
need=$((SIZE_BYTES * (MISSING + 5) + SIZE_BYTES / 2))
avail=$(df --output=avail -B1 "$DIR" | tail -1 | tr -d ' ')
((avail >= need)) || die "$(numfmt --to=iec "$avail") free in $DIR, need about $(numfmt --to=iec "$need")"
if ((MISSING)); then
  note "generating a $SIZE demo data set in $PRISTINE (seed $SEED)"
  "$BIN" demo-data "$PRISTINE" --size "$SIZE" --seed "$SEED" >&2
  echo "$WANT" >"$STAMP"
fi
MOUNT=$(df --output=target "$DIR" | tail -1)

DATA_BYTES=$(tree_bytes "$PRISTINE")
DATA_FILES=$(find "$PRISTINE" -type f | wc -l)
((DATA_BYTES > 0)) || die "the data set in $PRISTINE is empty"
DATA_GIB=$(awk -v b="$DATA_BYTES" 'BEGIN {printf "%.6f", b / 1073741824}')
FIO_FILES=$(cd "$PRISTINE" && find . -type f -size +0 -printf "$SRC/%P:" | sed 's/:$//')
FIO_FILE_COUNT=$(find "$PRISTINE" -type f -size +0 | wc -l)

# ---- helpers -------------------------------------------------------------------------
jq_py() {  # jq_py FILE EXPR: prints the Python expression EXPR over the JSON document d in FILE
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
json_field() {  # json_field FILE NAME: the top-level value NAME of the JSON document in FILE
  jq_py "$1" "d.get('$2', '')"
}

check_backup() {  # check_backup KEY ROUND LEVEL ("" for a plain full backup)
  local log="$LOGS/$1.$2.out" br lv
  [[ "$(json_field "$log" status)" == complete ]] || die "$1: backup did not complete (see $log)"
  br=$(json_field "$log" bytes_read)
  [[ "$br" == "$DATA_BYTES" ]] || die "$1: backup read $br bytes, the data set has $DATA_BYTES"
  if [[ -n "$3" ]]; then
    lv=$(json_field "$log" level)
    [[ "$lv" == "$3" ]] || die "$1: backup reports level '$lv', expected $3 (see $log)"
  fi
}

check_restore() {  # check_restore KEY ROUND
  local log="$LOGS/$1.$2.out" b
  [[ "$(json_field "$log" status)" == complete ]] || die "$1: restore did not complete (see $log)"
  b=$(json_field "$log" bytes)
  [[ "$b" == "$DATA_BYTES" ]] || die "$1: restore reports $b bytes, the data set has $DATA_BYTES (see $log)"
}

meta_list() {  # files: path, size, mode, mtime; directories and anything else: type, path
  (cd "$1" && find . \( -type f -printf 'f %p %s %m %T@\n' \) -o -printf '%y %p\n' | sort)
}

verify_restore() {  # verify_restore KEY RESTORE_ROOT
  local key=$1 got="$2$SRC"
  local failed=0
  if [[ ! -d "$got" ]]; then
    echo "incremental_bench: VERIFY FAILED ($key): $got does not exist" >&2
    exit 1
  fi
  if ! diff -r "$SRC" "$got" >"$LOGS/$key.diff" 2>&1; then failed=1; fi
  if ! diff <(meta_list "$SRC") <(meta_list "$got") >>"$LOGS/$key.diff" 2>&1; then
    failed=1
  fi
  if ((failed)); then
    echo "######################################################################" >&2
    echo "incremental_bench: VERIFY FAILED ($key): restored tree $got differs from $SRC" >&2
    head -n 40 "$LOGS/$key.diff" >&2
    echo "######################################################################" >&2
    exit 1
  fi
  note "  $key: restored tree verified identical (contents, sizes, modes, mtimes)"
}

change_pages() {  # change_pages TREE SALT OUTFILE
  python3 "$CHANGE_PAGES" "$1" --seed "$SEED" --salt "$2" --percent "$PERCENT" --unit "$UNIT_BYTES" >"$3" ||
    die "changing pages in $1 failed"
  note "  changed $(json_field "$3" pages_changed) of $(json_field "$3" pages_total) pages in $(json_field "$3" files_changed) files of $1: $(json_field "$3" units_changed) of $(json_field "$3" units_total) change units"
}

FIO_READ=(fio --output-format=json --ioengine=io_uring --direct=1 --bs=1M --iodepth="$IODEPTH"
  --name=read --filename="$FIO_FILES" --file_service_type=sequential --rw=read)
fio_read_bytes() {  # fio_read_bytes KEY ROUND
  jq_py "$LOGS/$1.$2.out" "sum(j['read']['io_bytes'] for j in d['jobs'])"
}
# fio's own I/O time (the read job's runtime, without fio's start-up and exit, which take
# about half a second on some machines), scaled up to the data set's bytes since fio skips
# the tails shorter than 1 MiB: the time the disk needs to read the data set once.
fio_io_s() {  # fio_io_s KEY ROUND
  jq_py "$LOGS/$1.$2.out" "'%.3f' % (max(j['read']['runtime'] for j in d['jobs']) / 1000 * $DATA_BYTES / sum(j['read']['io_bytes'] for j in d['jobs']))"
}
check_fio() {  # check_fio KEY ROUND
  local moved
  moved=$(fio_read_bytes "$1" "$2")
  ((moved >= DATA_BYTES - FIO_FILE_COUNT * 1048576)) ||
    die "fio read fewer bytes ($moved) than expected (see $LOGS/$1.$2.out)"
}

# The level 1 against the change: the files it calls changed must be the files with
# changed pages, and the units it wrote per file the distinct units changed in it.
check_level1() {  # check_level1 KEY ROUND CHANGEFILE: prints "ok" or what differs
  python3 - "$LOGS/$1.$2.out" "$3" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
c = json.load(open(sys.argv[2]))
want = c["changed"]
got = {f["path"]: f.get("units_written", 0) for f in b.get("file_changes", [])
       if f.get("change") != "unchanged"}
bad = []
for p in sorted(set(want) | set(got)):
    if want.get(p, 0) != got.get(p, 0):
        bad.append(f"{p}: {got.get(p, 0)} units written, {want.get(p, 0)} changed")
print("ok" if not bad else "; ".join(bad[:5]) + (f" (+{len(bad) - 5} more)" if len(bad) > 5 else ""))
PY
}

# ---- the measurements --------------------------------------------------------------------
declare -A LABEL=(
  [l0]="level 0 backup"
  [fio]="fio read pass of the changed set (io_uring, O_DIRECT, 1 MiB, QD $IODEPTH)"
  [l1]="level 1 backup (differential), $PERCENT% of pages changed"
  [full]="full backup of the changed set (no --level)"
  [restore_full]="full restore (from the full backup)"
  [restore_chain]="chain restore (level 0 + level 1)"
  [restore_delta]="delta restore over a target with $PERCENT% of pages changed (full backup)"
)
KEYS=(l0 fio l1 full restore_full restore_chain)
((HAVE_DELTA)) && KEYS+=(restore_delta)
declare -A L1_CHECK FIO_IO

note "data set: $DATA_FILES files, $DATA_BYTES bytes in $PRISTINE; change unit $UNIT_BYTES, $CHANNELS channel(s)"
note "$REPEAT round(s); logs in $LOGS"
for ((round = 1; round <= REPEAT; round++)); do
  note "round $round of $REPEAT"
  clean_out
  rm -rf "${SRC:?}"
  cp -a "$PRISTINE" "$SRC"
  trim

  measure l0 "$round" "$BIN" backup "$SRC" --to "$PIECES" --catalog "$CATALOG" \
    --level 0 --change-unit "$CHANGE_UNIT" --channels "$CHANNELS" --json
  check_backup l0 "$round" 0
  l0_id=$(json_field "$LOGS/l0.$round.out" backup_id)

  change_pages "$SRC" source "$LOGS/change.$round.json"

  measure fio "$round" "${FIO_READ[@]}"
  check_fio fio "$round"
  FIO_IO[$round]=$(fio_io_s fio "$round")
  note "  fio read I/O time: ${FIO_IO[$round]} s (scaled to the data set's bytes)"

  trim
  measure l1 "$round" "$BIN" backup "$SRC" --to "$PIECES" --catalog "$CATALOG" \
    --level 1 --change-unit "$CHANGE_UNIT" --channels "$CHANNELS" --json
  check_backup l1 "$round" 1
  l1_id=$(json_field "$LOGS/l1.$round.out" backup_id)
  [[ "$(jq_py "$LOGS/l1.$round.out" "' '.join(map(str, d.get('parents', [])))")" == "$l0_id" ]] ||
    die "l1: the level 1's parents are not the level 0 ($l0_id) (see $LOGS/l1.$round.out)"
  L1_CHECK[$round]=$(check_level1 l1 "$round" "$LOGS/change.$round.json")
  [[ "${L1_CHECK[$round]}" == ok ]] || note "  WARNING: the level 1 did not write exactly the changed units: ${L1_CHECK[$round]}"

  trim
  measure full "$round" "$BIN" backup "$SRC" --to "$FULL_PIECES" --catalog "$FULL_CATALOG" \
    --channels "$CHANNELS" --json
  check_backup full "$round" ""
  full_id=$(json_field "$LOGS/full.$round.out" backup_id)

  trim
  measure restore_full "$round" "$BIN" restore --catalog "$FULL_CATALOG" --backup "$full_id" \
    --to "$RESTORE_FULL" --channels "$CHANNELS" --json
  check_restore restore_full "$round"
  verify_restore "restore_full.$round" "$RESTORE_FULL"

  trim
  measure restore_chain "$round" "$BIN" restore --catalog "$CATALOG" --backup "$l1_id" \
    --to "$RESTORE_CHAIN" --channels "$CHANNELS" --json
  check_restore restore_chain "$round"
  verify_restore "restore_chain.$round" "$RESTORE_CHAIN"
  rm -rf "${RESTORE_CHAIN:?}"

  if ((HAVE_DELTA)); then
    change_pages "$RESTORE_FULL$SRC" target "$LOGS/change-target.$round.json"
    trim
    # The level 1 holds the same tree as the full backup, with the digest map of its
    # change units: the delta restore compares by unit, not by 1 MiB frame.
    measure restore_delta "$round" "$BIN" restore "${DELTA_ARGS[@]}" --catalog "$CATALOG" \
      --backup "$l1_id" --to "$RESTORE_FULL" --channels "$CHANNELS" --json
    check_restore restore_delta "$round"
    verify_restore "restore_delta.$round" "$RESTORE_FULL"
  fi
  clean_out
done
rm -rf "${SRC:?}"
trim

# ---- report --------------------------------------------------------------------------
# The round with the median elapsed time stands for each measurement.
declare -A PICK
for k in "${KEYS[@]}"; do
  PICK[$k]=$(for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[$k.$r]} $r"; done |
               sort -g | awk -v n="$REPEAT" 'NR == int((n + 1) / 2) {print $2}')
done
log_of() { echo "$LOGS/$1.${PICK[$1]}.out"; }
el() { echo "${R_EL[$1.${PICK[$1]}]}"; }
bytes_of() {  # the bytes a measurement moved through: fio's reads, else the data set
  if [[ "$1" == fio ]]; then fio_read_bytes "$1" "${PICK[$1]}"; else echo "$DATA_BYTES"; fi
}
mbs() { awk -v b="$(bytes_of "$1")" -v e="$(el "$1")" 'BEGIN {printf "%.1f", b / e / 1e6}'; }
written() {  # bytes written: a backup's bytes_written, a restore's channel bytes_written
  case "$1" in
    fio) echo 0 ;;
    restore_*) jq_py "$(log_of "$1")" "d['bytes_written'] if 'bytes_written' in d else sum(c.get('bytes_written', 0) for c in d.get('channels', []))" ;;
    *) json_field "$(log_of "$1")" bytes_written ;;
  esac
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }
ratio3() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.4f", a / b; else print "n/a"}'; }
verdict() { if awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN {exit !(op == "<=" ? a <= b : a >= b)}'; then echo PASS; else echo "**FAIL**"; fi; }
mb() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1e6}'; }

CH="$LOGS/change.${PICK[l1]}.json"
PAGES_CHANGED=$(json_field "$CH" pages_changed)
PAGES_TOTAL=$(json_field "$CH" pages_total)
UNITS_CHANGED=$(json_field "$CH" units_changed)
UNITS_TOTAL=$(json_field "$CH" units_total)
PAGES_X_UNIT=$((PAGES_CHANGED * UNIT_BYTES))
L1_W=$(written l1)
L0_W=$(written l0)
FULL_W=$(written full)
L1_UNITS_W=$(jq_py "$(log_of l1)" "sum(f.get('units_written', 0) for f in d.get('file_changes', []))")
L1_META=$((L1_W - UNITS_CHANGED * UNIT_BYTES))
((L1_META >= 0)) || L1_META=0

R_L1_PAGES=$(ratio "$L1_W" "$PAGES_X_UNIT")
R_L1_FULL=$(ratio3 "$L1_W" "$FULL_W")
R_L1_L0=$(ratio3 "$L1_W" "$L0_W")
# fio's I/O time: the median over the rounds on its own (the faster middle one for even N).
FIO_IO_S=$(for ((r = 1; r <= REPEAT; r++)); do echo "${FIO_IO[$r]}"; done |
             sort -g | awk -v n="$REPEAT" 'NR == int((n + 1) / 2) {print $1}')
R_L1_FIO=$(ratio "$(el l1)" "$FIO_IO_S")
R_L1_FIO_WALL=$(ratio "$(el l1)" "$(el fio)")
R_CHAIN=$(ratio "$(mbs restore_chain)" "$(mbs restore_full)")
if ((HAVE_DELTA)); then R_DELTA=$(ratio "$(el restore_full)" "$(el restore_delta)"); fi

# The command that reproduces this run, every setting spelled out.
REPRO="bench/incremental_bench.sh --bin $(printf '%q' "$BIN") --size $SIZE --seed $SEED --percent $PERCENT --change-unit $CHANGE_UNIT --channels $CHANNELS --iodepth $IODEPTH --repeat $REPEAT --dir $(printf '%q' "$DIR")"

{
  echo "# stripeback incremental backup benchmark"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "- command: \`bench/incremental_bench.sh$ORIG_ARGS\` (size $SIZE, seed $SEED, $PERCENT% of 8 KiB pages changed, change unit $CHANGE_UNIT, $CHANNELS channel(s), dir $DIR, repeat $REPEAT, fio iodepth $IODEPTH)"
  echo "- stripeback: $BIN_VERSION, $BIN (built $BIN_BUILT, sha256 $BIN_SHA); source tree when the run started: $TREE"
  echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) RAM, kernel $(uname -r)"
  dev=$(df --output=source "$DIR" | tail -1)
  bdev=$(lsblk -no PKNAME "$dev" 2>/dev/null | head -n 1); [[ -n "$bdev" ]] || bdev=$(basename "$dev")
  echo "- disk: $dev ($bdev, $(lsblk -dno SIZE "/dev/$bdev" 2>/dev/null | tr -d ' '), $(cat "/sys/block/$bdev/device/model" 2>/dev/null || readlink "/sys/block/$bdev/device/driver" 2>/dev/null | xargs -r basename || echo '?'), scheduler $(sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/$bdev/queue/scheduler" 2>/dev/null)), $(findmnt -no FSTYPE,OPTIONS "$MOUNT") on $MOUNT"
  echo "- data set: $DATA_FILES files, $DATA_BYTES bytes ($(numfmt --to=iec "$DATA_BYTES")) from \`stripeback demo-data --size $SIZE --seed $SEED\`"
  echo "- change: $PAGES_CHANGED of $PAGES_TOTAL whole 8 KiB pages overwritten with random bytes ($(mb $((PAGES_CHANGED * PAGE))) MB), touching $UNITS_CHANGED of $UNITS_TOTAL change units of $CHANGE_UNIT ($(mb $((UNITS_CHANGED * UNIT_BYTES))) MB); changed pages x change unit = $(mb "$PAGES_X_UNIT") MB"
  echo "- rounds: $REPEAT (the round with the median elapsed time is shown)$( ((CAN_DROP)) || echo '; page cache NOT dropped (not permitted)')$( ((CAN_TRIM)) || echo '; fstrim not available')$( ((QUIET_NOTES)) && echo "; $QUIET_NOTES measurement(s) started while the machine was busy")"
  echo "- timed region: \`command; sync\` after \`sync; echo 3 > /proc/sys/vm/drop_caches\`; MB = 10^6 bytes; MB/s = data set bytes / elapsed (fio: bytes read / elapsed); CPU = user + sys (GNU time); Other CPU s = CPU time everything else on the machine used meanwhile; MB written (reported) = bytes_written of the command's --json (a restore: the sum over its channels); Disk MB written = the device's own count of bytes written during the step (sectors written in /proc/diskstats: pieces, restored files, catalog, file system journal, and anything else writing to $DISK_DEV meanwhile)"
  echo
  echo "| Measurement | Elapsed s | of which sync s | MB/s | MB written (reported) | Disk MB written | Written vs full backup | Elapsed vs fio read I/O time | MB/s vs full restore | CPU s/GiB | Peak RSS MiB | Other CPU s |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for k in "${KEYS[@]}"; do
    p=${PICK[$k]}
    w=$(written "$k")
    case "$k" in
      fio) wcol=-; vs_full=- ;;
      restore_*) wcol=$(mb "$w"); vs_full=- ;;
      *) wcol=$(mb "$w"); vs_full=$(ratio3 "$w" "$FULL_W") ;;
    esac
    if [[ "$k" == restore_* ]]; then vs_rest=$(ratio "$(mbs "$k")" "$(mbs restore_full)"); else vs_rest=-; fi
    echo "| ${LABEL[$k]} | $(el "$k") | ${R_SYNC[$k.$p]} | $(mbs "$k") | $wcol | $(mb "${R_DISKW[$k.$p]}") | $vs_full | $(ratio "$(el "$k")" "$FIO_IO_S") | $vs_rest | $(awk -v c="${R_CPU[$k.$p]}" -v g="$DATA_GIB" 'BEGIN {printf "%.2f", c / g}') | $(awk -v k="${R_RSS[$k.$p]}" 'BEGIN {printf "%.1f", k / 1024}') | ${R_OTHER[$k.$p]} |"
    if [[ "$k" == fio ]]; then
      echo "| fio read pass, I/O time only (its read job's runtime, scaled to the data set's bytes; median of its own) | $FIO_IO_S | - | $(awk -v b="$DATA_BYTES" -v e="$FIO_IO_S" 'BEGIN {printf "%.1f", b / e / 1e6}') | - | - | - | 1.00 | - | - | - | - |"
    fi
  done
  ((HAVE_DELTA)) || echo "| ${LABEL[restore_delta]} | skipped: this binary's restore has no --delta | | | | | | | | | | |"
  echo
  echo "## Ratios and targets"
  echo
  echo "| Ratio | Value | Target | Result |"
  echo "|---|---:|---|---|"
  echo "| level 1 bytes written / (changed pages x change unit) = $L1_W / ($PAGES_CHANGED x $UNIT_BYTES), metadata included | $R_L1_PAGES | <= 1.5 | $(verdict "$R_L1_PAGES" "<=" 1.5) |"
  echo "| level 1 bytes written beyond the changed units ($UNITS_CHANGED x $UNIT_BYTES): metadata | $(mb "$L1_META") MB | - | - |"
  echo "| level 1 change units written (per file, from --json) = distinct units changed | $L1_UNITS_W vs $UNITS_CHANGED | equal in every file | $([[ "${L1_CHECK[${PICK[l1]}]}" == ok ]] && echo PASS || echo "**FAIL**: ${L1_CHECK[${PICK[l1]}]}") |"
  echo "| level 1 bytes written / full backup bytes written | $R_L1_FULL | - | - |"
  echo "| level 1 bytes written / level 0 bytes written | $R_L1_L0 | - | - |"
  echo "| level 1 elapsed / fio read pass I/O time ($(el l1) / $FIO_IO_S s) | $R_L1_FIO | <= 1.1 | $(verdict "$R_L1_FIO" "<=" 1.1) |"
  echo "| level 1 elapsed / fio read pass elapsed, fio start-up and exit included ($(el l1) / $(el fio) s) | $R_L1_FIO_WALL | <= 1.1 (for information) | $(verdict "$R_L1_FIO_WALL" "<=" 1.1) |"
  echo "| chain restore MB/s / full restore MB/s | $R_CHAIN | >= 0.9 | $(verdict "$R_CHAIN" ">=" 0.9) |"
  if ((HAVE_DELTA)); then
    echo "| full restore elapsed / delta restore elapsed | $R_DELTA | >= 3 | $(verdict "$R_DELTA" ">=" 3) |"
  else
    echo "| full restore elapsed / delta restore elapsed | - | >= 3 | skipped: no restore --delta |"
  fi
  if ((REPEAT > 1)); then
    echo
    echo "## All rounds"
    echo
    echo "| Measurement | Round | Elapsed s | of which sync s | MB/s | Disk MB written | CPU s | Peak RSS MiB | Other CPU s |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for k in "${KEYS[@]}"; do
      for ((r = 1; r <= REPEAT; r++)); do
        if [[ "$k" == fio ]]; then b=$(fio_read_bytes fio "$r"); else b=$DATA_BYTES; fi
        echo "| ${LABEL[$k]} | $r | ${R_EL[$k.$r]} | ${R_SYNC[$k.$r]} | $(awk -v b="$b" -v e="${R_EL[$k.$r]}" 'BEGIN {printf "%.1f", b / e / 1e6}') | $(mb "${R_DISKW[$k.$r]}") | ${R_CPU[$k.$r]} | $(awk -v k="${R_RSS[$k.$r]}" 'BEGIN {printf "%.1f", k / 1024}') | ${R_OTHER[$k.$r]} |"
      done
      if [[ "$k" == fio ]]; then
        for ((r = 1; r <= REPEAT; r++)); do
          echo "| fio read pass, I/O time only | $r | ${FIO_IO[$r]} | - | $(awk -v b="$DATA_BYTES" -v e="${FIO_IO[$r]}" 'BEGIN {printf "%.1f", b / e / 1e6}') | - | - | - | - |"
        done
      fi
    done
  fi
  echo
  echo "To reproduce (as root, from the repository root):"
  echo
  echo '```sh'
  echo "# source tree: $TREE"
  echo "$REPRO"
  echo '```'
} | tee "$RESULTS"

note "results written to $RESULTS"
