#!/usr/bin/env bash
# page_check_bench.sh: backup --validate --check-logical of a real PostgreSQL cluster against
# a fio read-only pass over the same files and against pg_checksums --check, side by side,
# cold cache. Run as root (dropping the page cache and running PostgreSQL as postgres need
# it). See --help.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

DIR=/var/tmp/stripeback-pagebench
SCALE=270
CHANNELS=2
REPEAT=1
BIN=""
RESULTS=""
IODEPTH=8
QUIET_TIMEOUT=120
# How the validation reads: 256 MiB sections spread the 1 GiB segment files over the
# channels (otherwise one channel reads the largest file alone), 1 MiB buffers, and two
# files open per channel (fewer concurrent streams for the disk to seek between).
SB_ARGS="--section-size 256M --buffer-size 1M --max-open-files 2"
PG=/usr/lib/postgresql/15/bin

usage() {
  cat <<EOF
Usage: $(basename "$0") [options]

Makes (once, reused while --scale stays the same) a PostgreSQL 15 cluster with data
checksums in DIR/pg (initdb --data-checksums, pgbench -i -s SCALE: about 15 MB per unit of
scale, so the default 270 is about 4 GiB), stopped, then per round, dropping the page cache
before each timed step:

  validate       stripeback backup --validate --check-logical DIR/pg/data/base
                 DIR/pg/data/global --channels N: reads the files pg_checksums reads (no
                 WAL) and checks every page of the relation files; must find no corrupt
                 page
  fio            fio reading the same files once (those of 1 MiB or more; io_uring,
                 O_DIRECT, 1 MiB blocks, iodepth $IODEPTH); its I/O time scaled to the data
                 set's bytes is the read ceiling
  pg_checksums   pg_checksums --check -D DIR/pg/data as postgres (one process, buffered
                 8 KiB reads)

Ratios: validate MB/s against fio's and against pg_checksums's, CPU seconds per GiB of
each (targets: >= 0.9 x fio; >= 1.2 x pg_checksums at no more CPU per GiB; <= 0.3 CPU s
per GiB). The Markdown table goes to stdout and --results FILE.

Options:
  --dir DIR          work directory (default $DIR)
  --scale N          pgbench scale of the cluster (default $SCALE)
  --channels N       stripeback channels (default $CHANNELS)
  --repeat N         rounds; the median round by validate time is shown (default $REPEAT)
  --bin PATH         stripeback binary (default: build/release/cli/stripeback, built when
                     missing)
  --results FILE     also write the results to FILE (default DIR/results-<time>.md)
  --sb-args "ARGS"   more arguments for the validation (default "$SB_ARGS")
  --quiet-timeout S  longest wait for a quiet machine before each step (default $QUIET_TIMEOUT)
  -h, --help         this text
EOF
}

note() { echo "page_check_bench: $*" >&2; }
die() { echo "page_check_bench: $*" >&2; exit 1; }

while (($#)); do
  case "$1" in
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --scale) SCALE=${2:?--scale needs a value}; shift 2 ;;
    --channels) CHANNELS=${2:?--channels needs a value}; shift 2 ;;
    --repeat) REPEAT=${2:?--repeat needs a value}; shift 2 ;;
    --bin) BIN=${2:?--bin needs a value}; shift 2 ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    --sb-args) SB_ARGS=${2?--sb-args needs a value}; shift 2 ;;
    --quiet-timeout) QUIET_TIMEOUT=${2:?--quiet-timeout needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$SCALE" =~ ^[0-9]+$ && "$SCALE" -ge 1 ]] || die "--scale must be a positive number"
[[ "$REPEAT" =~ ^[0-9]+$ && "$REPEAT" -ge 1 ]] || die "--repeat must be a positive number"
[[ $(id -u) -eq 0 ]] || die "run as root (the page cache is dropped, PostgreSQL runs as postgres)"
[[ -x "$PG/initdb" && -x "$PG/pg_checksums" ]] || die "PostgreSQL 15 is missing (apt-get install postgresql-15)"
command -v fio >/dev/null || die "fio is missing (apt-get install fio)"
GNU_TIME=/usr/bin/time
[[ -x "$GNU_TIME" ]] || die "GNU time is missing (apt-get install time)"

# shellcheck source=bench/bench_lib.sh
source "$SCRIPT_DIR/bench_lib.sh"
resolve_bin

[[ -n "$DIR" && "$DIR" != "/" ]] || die "refusing to use '$DIR' as the work directory"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
OUT="$DIR/out"
LOGS="$DIR/logs"
rm -rf "${OUT:?}" "${LOGS:?}"
mkdir -p "$OUT" "$LOGS"
[[ -n "$RESULTS" ]] || RESULTS="$DIR/results-$(date +%Y%m%d-%H%M%S).md"
MOUNT=$(df --output=target "$DIR" | tail -1)
PGDIR="$DIR/pg"
DATA="$PGDIR/data"
as_pg() { runuser -u postgres -- "$@"; }

# ---- the cluster -----------------------------------------------------------------------
if [[ "$(cat "$PGDIR/scale" 2>/dev/null || true)" != "$SCALE" ]]; then
  note "making a cluster at pgbench scale $SCALE in $PGDIR (once)"
  rm -rf "${PGDIR:?}"
  mkdir -p "$PGDIR"
  chown postgres "$PGDIR"
  as_pg "$PG/initdb" -D "$DATA" --data-checksums -A trust -U postgres >"$LOGS/initdb.log" 2>&1 ||
    die "initdb failed (see $LOGS/initdb.log)"
  as_pg "$PG/pg_ctl" -D "$DATA" -w -l "$PGDIR/server.log" \
    -o "-k $PGDIR -c listen_addresses='' -c fsync=off" start >/dev/null ||
    die "PostgreSQL did not start (see $PGDIR/server.log)"
  as_pg "$PG/pgbench" -i -q -s "$SCALE" -h "$PGDIR" -U postgres postgres >"$LOGS/pgbench.log" 2>&1 ||
    { as_pg "$PG/pg_ctl" -D "$DATA" -w -m fast stop >/dev/null || true; die "pgbench -i failed (see $LOGS/pgbench.log)"; }
  as_pg "$PG/pg_ctl" -D "$DATA" -w -m fast stop >/dev/null || die "PostgreSQL did not stop"
  echo "$SCALE" >"$PGDIR/scale"
fi
# What pg_checksums reads: the relation files below base/ and global/ (no WAL).
SOURCES=("$DATA/base" "$DATA/global")
DATA_BYTES=$(find "${SOURCES[@]}" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f", s}')
DATA_FILES=$(find "${SOURCES[@]}" -type f | wc -l)
FIO_FILES=$(find "${SOURCES[@]}" -type f -size +1023k -printf '%p:' | sed 's/:$//')
[[ -n "$FIO_FILES" ]] || die "no file of 1 MiB or more in $DATA"
note "cluster: $DATA_FILES files, $DATA_BYTES bytes below $DATA/base and $DATA/global"

jq_py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
declare -A FIO_IO PAGES CORRUPT
for ((round = 1; round <= REPEAT; round++)); do
  note "round $round of $REPEAT"
  rm -rf "$OUT/cat"
  measure validate "$round" "$BIN" backup --validate --check-logical "${SOURCES[@]}" --catalog "$OUT/cat" \
    --channels "$CHANNELS" --json $SB_ARGS
  PAGES[$round]=$(jq_py "$LOGS/validate.$round.out" "d['pages_checked']")
  CORRUPT[$round]=$(jq_py "$LOGS/validate.$round.out" "len(d['corrupt'])")
  [[ "${CORRUPT[$round]}" == 0 ]] || die "validate reported ${CORRUPT[$round]} corrupt pages in a clean cluster"
  measure fio "$round" fio --output-format=json --ioengine=io_uring --direct=1 --bs=1M \
    --iodepth="$IODEPTH" --name=read --filename="$FIO_FILES" --file_service_type=sequential --rw=read
  FIO_IO[$round]=$(jq_py "$LOGS/fio.$round.out" \
    "'%.3f' % (max(j['read']['runtime'] for j in d['jobs']) / 1000 * $DATA_BYTES / sum(j['read']['io_bytes'] for j in d['jobs']))")
  measure pg_checksums "$round" runuser -u postgres -- "$PG/pg_checksums" --check -D "$DATA"
done

# The median round by validate time.
best=$(for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[validate.$r]} $r"; done | sort -n |
  awk -v n="$REPEAT" 'NR == int((n + 1) / 2) {print $2}')
el() { echo "${R_EL[$1.$best]}"; }
cpu() { echo "${R_CPU[$1.$best]}"; }
mbs() { awk -v b="$DATA_BYTES" -v t="$1" 'BEGIN {printf "%.1f", b / 1e6 / t}'; }
per_gib() { awk -v c="$1" -v b="$DATA_BYTES" 'BEGIN {printf "%.3f", c / (b / 1073741824)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
verdict() { awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN {ok = (op == ">=") ? v >= t : v <= t; print ok ? "PASS" : "**FAIL**"}'; }

V_MBS=$(mbs "$(el validate)")
F_MBS=$(mbs "${FIO_IO[$best]}")
P_MBS=$(mbs "$(el pg_checksums)")
V_CPU=$(per_gib "$(cpu validate)")
P_CPU=$(per_gib "$(cpu pg_checksums)")
R_FIO=$(ratio "$V_MBS" "$F_MBS")
R_PG=$(ratio "$V_MBS" "$P_MBS")
{
  echo "## backup --validate --check-logical against fio and pg_checksums"
  echo
  echo "- binary: $BIN_VERSION ($BIN_SHA, built $BIN_BUILT), tree $TREE"
  echo "- cluster: PostgreSQL 15, pgbench scale $SCALE, data checksums on: $DATA_FILES files, $DATA_BYTES bytes below base/ and global/; ${PAGES[$best]} relation pages checked"
  echo "- stripeback: $CHANNELS channel(s), $SB_ARGS; round $best of $REPEAT shown (median validate time); page cache dropped before each step$( ((CAN_DROP)) || echo ' (NOT: not permitted)')"
  echo "- command: \`bench/page_check_bench.sh --scale $SCALE --channels $CHANNELS --repeat $REPEAT --sb-args \"$SB_ARGS\"\`"
  echo
  echo "| Measurement | Elapsed s | MB/s | CPU s | CPU s/GiB | Peak RSS MiB |"
  echo "|---|---:|---:|---:|---:|---:|"
  echo "| stripeback backup --validate --check-logical | $(el validate) | $V_MBS | $(cpu validate) | $V_CPU | $((R_RSS[validate.$best] / 1024)) |"
  echo "| fio read pass, I/O time scaled to the data set | ${FIO_IO[$best]} | $F_MBS | - | - | - |"
  echo "| fio read pass, elapsed | $(el fio) | $(mbs "$(el fio)") | $(cpu fio) | $(per_gib "$(cpu fio)") | $((R_RSS[fio.$best] / 1024)) |"
  echo "| pg_checksums --check | $(el pg_checksums) | $P_MBS | $(cpu pg_checksums) | $P_CPU | $((R_RSS[pg_checksums.$best] / 1024)) |"
  echo
  echo "| Ratio | Value | Target | Result |"
  echo "|---|---:|---|---|"
  echo "| validate MB/s / fio read MB/s (I/O time) | $R_FIO | >= 0.9 | $(verdict "$R_FIO" ">=" 0.9) |"
  echo "| validate MB/s / pg_checksums MB/s | $R_PG | >= 1.2 | $(verdict "$R_PG" ">=" 1.2) |"
  echo "| validate CPU s/GiB / pg_checksums CPU s/GiB | $(ratio "$V_CPU" "$P_CPU") | <= 1 | $(verdict "$(ratio "$V_CPU" "$P_CPU")" "<=" 1) |"
  echo "| validate CPU s/GiB | $V_CPU | <= 0.3 | $(verdict "$V_CPU" "<=" 0.3) |"
} | tee "$RESULTS"
note "results in $RESULTS; logs in $LOGS"
