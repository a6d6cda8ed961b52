#!/usr/bin/env bash
# wal_bench.sh: stripeback archive-push against pgBackRest's archive-push and cp + sync, in
# sync and async modes, over the same real WAL segments (made by pgbench); and a
# point-in-time restore of a pgbench cluster by stripeback against pgBackRest's restore of
# the same cluster. Run as root (the page cache is dropped, PostgreSQL runs as postgres).
# See --help.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

DIR=/var/tmp/stripeback-walbench
SEGMENTS=64
SCALE=100
PARALLEL=4
BIN=""
RESULTS=""
QUIET_TIMEOUT=120
SKIP_RESTORE=0
PG=/usr/lib/postgresql/15/bin

usage() {
  cat <<EOF
Usage: $(basename "$0") [options]

Archive-push: makes (once) SEGMENTS real 16 MiB WAL segments by running pgbench on a
PostgreSQL 15 cluster whose archive_command copies them aside, then archives them the way
PostgreSQL's archiver does (one command per segment, in order, from the data directory,
its .ready status file renamed .done on success), page cache dropped before each step:

  cp+sync          cp pg_wal/SEG REPO/ && sync REPO/SEG: the durable-copy floor
  sb-sync          stripeback archive-push --catalog C pg_wal/SEG (zstd level 1)
  pgbr-sync        pgbackrest --stanza=bench archive-push pg_wal/SEG (zst level 1)
  sb-async         the same with configure archive-async on, archive-parallel N
  pgbr-async       the same with archive-async=y, process-max=N, a spool directory

Reported: segments per second and CPU seconds per segment (all CPU of the machine during
the step: async pushers run in the background, outside the command's own accounting).
Targets: sb-async >= 2 x pgbr-async in segments/s at no more CPU per segment.

PITR restore: a cluster at pgbench scale SCALE (about 15 MB per unit) archiving to both
tools (archive_command runs both), one full backup by each (stripeback backup --pg,
pgbackrest backup --type=full; 2 channels / process-max 2, zstd level 1 both), WAL
switched and archived, then the time of a restore to that point in time into an empty
directory by each: stripeback restore --target-time T, pgbackrest restore --type=time
--target=T. Target: stripeback >= 2 x pgBackRest (restore time).

Options:
  --dir DIR          work directory (default $DIR)
  --segments N       WAL segments to archive (default $SEGMENTS: 1 GiB)
  --scale N          pgbench scale of the restore cluster (default $SCALE)
  --parallel N       parallel pushes in async mode, both tools (default $PARALLEL)
  --bin PATH         stripeback binary (default: build/release/cli/stripeback, built when
                     missing)
  --results FILE     also write the results to FILE (default DIR/results-<time>.md)
  --quiet-timeout S  longest wait for a quiet machine before each step (default $QUIET_TIMEOUT)
  --no-restore       archive-push only
  -h, --help         this text
EOF
}

note() { echo "wal_bench: $*" >&2; }
die() { echo "wal_bench: $*" >&2; exit 1; }

while (($#)); do
  case "$1" in
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --segments) SEGMENTS=${2:?--segments needs a value}; shift 2 ;;
    --scale) SCALE=${2:?--scale needs a value}; shift 2 ;;
    --parallel) PARALLEL=${2:?--parallel needs a value}; shift 2 ;;
    --bin) BIN=${2:?--bin needs a value}; shift 2 ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    --quiet-timeout) QUIET_TIMEOUT=${2:?--quiet-timeout needs a value}; shift 2 ;;
    --no-restore) SKIP_RESTORE=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
for v in SEGMENTS SCALE PARALLEL; do
  [[ "${!v}" =~ ^[0-9]+$ && "${!v}" -ge 1 ]] || die "--${v,,} must be a positive number"
done
[[ $(id -u) -eq 0 ]] || die "run as root (the page cache is dropped, PostgreSQL runs as postgres)"
[[ -x "$PG/initdb" && -x "$PG/pgbench" ]] || die "PostgreSQL 15 is missing (apt-get install postgresql-15)"
command -v pgbackrest >/dev/null || die "pgBackRest is missing (apt-get install pgbackrest)"
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
chown postgres "$DIR" "$OUT"
[[ -n "$RESULTS" ]] || RESULTS="$DIR/results-$(date +%Y%m%d-%H%M%S).md"
MOUNT=$(df --output=target "$DIR" | tail -1)
as_pg() { runuser -u postgres -- "$@"; }
PGBR_CONF="$OUT/pgbackrest.conf"
pgbr() { as_pg pgbackrest --config="$PGBR_CONF" "$@"; }

# ---- the segments ------------------------------------------------------------------------
SEGS="$DIR/segments"
if [[ "$(cat "$SEGS/count" 2>/dev/null || true)" != "$SEGMENTS" ]]; then
  note "making $SEGMENTS WAL segments with pgbench (once)"
  rm -rf "${SEGS:?}" "$DIR/walgen"
  mkdir -p "$SEGS/wal" "$DIR/walgen"
  chown -R postgres "$SEGS" "$DIR/walgen"
  as_pg "$PG/initdb" -D "$DIR/walgen/data" --data-checksums -A trust -U postgres >"$LOGS/initdb.log" 2>&1 ||
    die "initdb failed (see $LOGS/initdb.log)"
  as_pg "$PG/pg_ctl" -D "$DIR/walgen/data" -w -l "$DIR/walgen/server.log" \
    -o "-k $DIR/walgen -c listen_addresses='' -c archive_mode=on -c archive_command='cp %p $SEGS/wal/%f'" \
    start >/dev/null || die "PostgreSQL did not start (see $DIR/walgen/server.log)"
  as_pg "$PG/pgbench" -i -q -s 20 -h "$DIR/walgen" -U postgres postgres >"$LOGS/pgbench-i.log" 2>&1 ||
    die "pgbench -i failed (see $LOGS/pgbench-i.log)"
  while (($(find "$SEGS/wal" -name '0000000*' -size 16M | wc -l) < SEGMENTS)); do
    as_pg "$PG/pgbench" -n -T 10 -c 4 -h "$DIR/walgen" -U postgres postgres >>"$LOGS/pgbench.log" 2>&1 ||
      die "pgbench failed (see $LOGS/pgbench.log)"
    as_pg "$PG/psql" -XAtq -h "$DIR/walgen" -U postgres -c 'SELECT pg_switch_wal()' postgres >/dev/null
  done
  cp "$DIR/walgen/data/global/pg_control" "$SEGS/pg_control"
  as_pg "$PG/pg_ctl" -D "$DIR/walgen/data" -w -m fast stop >/dev/null || die "PostgreSQL did not stop"
  rm -rf "$DIR/walgen"
  # The first SEGMENTS segments in name order, the way the archiver hands them over.
  find "$SEGS/wal" -name '0000000*' -size 16M -printf '%f\n' | sort | head -n "$SEGMENTS" >"$SEGS/list"
  echo "$SEGMENTS" >"$SEGS/count"
fi
mapfile -t SEG_NAMES <"$SEGS/list"
SEG_BYTES=$((SEGMENTS * 16 * 1024 * 1024))

# A data directory as the archiver sees it: global/pg_control, and pg_wal/ with the
# segments (hard links: no copy) and a .ready file for each.
fresh_data() {
  local d=$OUT/push
  rm -rf "$d"
  mkdir -p "$d/data/global" "$d/data/pg_wal/archive_status"
  cp "$SEGS/pg_control" "$d/data/global/pg_control"
  for s in "${SEG_NAMES[@]}"; do
    ln "$SEGS/wal/$s" "$d/data/pg_wal/$s"
    : >"$d/data/pg_wal/archive_status/$s.ready"
  done
  chown -R postgres "$d"
  chmod 700 "$d/data"
}

# The archiver's loop: for each segment in order, `cmd... pg_wal/SEG` from the data
# directory, as postgres; .ready becomes .done on success. Written as a script so that
# measure() times the whole loop.
cat >"$OUT/archiver.sh" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
cd "$1"; shift
while read -r seg; do
  "$@" "pg_wal/$seg"
  mv "pg_wal/archive_status/$seg.ready" "pg_wal/archive_status/$seg.done"
done <"$SEG_LIST"
EOF
chmod 755 "$OUT/archiver.sh"
export SEG_LIST="$SEGS/list"
cat >"$OUT/cp-sync.sh" <<EOF
#!/usr/bin/env bash
set -euo pipefail
cp "\$1" "$OUT/repo-cp/" && sync "$OUT/repo-cp/\$(basename "\$1")"
EOF
chmod 755 "$OUT/cp-sync.sh"

write_pgbr_conf() {  # write_pgbr_conf ASYNC PG_PATH REPO [SOCKET]
  cat >"$PGBR_CONF" <<EOF
[global]
repo1-path=$3
compress-type=zst
compress-level=1
log-level-console=warn
log-level-file=off
lock-path=$OUT/pgbr-lock
spool-path=$OUT/pgbr-spool
archive-async=$1
process-max=$PARALLEL
start-fast=y
[bench]
pg1-path=$2
${4:+pg1-socket-path=$4}
EOF
  chown postgres "$PGBR_CONF"
}

# Stripeback's catalog for the archive: destination, zstd level 1, async or not.
sb_archive_catalog() {  # sb_archive_catalog CATALOG REPO ASYNC
  rm -rf "$1" "$2"
  mkdir -p "$1" "$2"
  chown postgres "$1" "$2"
  as_pg "$BIN" configure destination "$2" --catalog "$1" >/dev/null
  as_pg "$BIN" configure compression zstd:1 --catalog "$1" >/dev/null
  as_pg "$BIN" configure archive-async "$3" --catalog "$1" >/dev/null
  as_pg "$BIN" configure archive-parallel "$PARALLEL" --catalog "$1" >/dev/null
  as_pg "$BIN" configure archive-spool-path "$OUT/sb-spool" --catalog "$1" >/dev/null
}

declare -A SEG_S CPU_SEG
push_step() {  # push_step KEY CMD...
  local key=$1
  shift
  fresh_data
  measure "$key" 1 runuser -u postgres -- env SEG_LIST="$SEG_LIST" "$OUT/archiver.sh" "$OUT/push/data" "$@"
  local total_cpu
  total_cpu=$(awk -v a="${R_CPU[$key.1]}" -v b="${R_OTHER[$key.1]}" 'BEGIN {print a + b}')
  SEG_S[$key]=$(awk -v n="$SEGMENTS" -v t="${R_EL[$key.1]}" 'BEGIN {printf "%.1f", n / t}')
  CPU_SEG[$key]=$(awk -v n="$SEGMENTS" -v c="$total_cpu" 'BEGIN {printf "%.3f", c / n}')
}

note "archive-push of $SEGMENTS segments ($((SEG_BYTES >> 20)) MiB), parallel $PARALLEL"
rm -rf "$OUT/repo-cp" && mkdir -p "$OUT/repo-cp" && chown postgres "$OUT/repo-cp"
push_step cp+sync "$OUT/cp-sync.sh"

sb_archive_catalog "$OUT/sb-cat" "$OUT/repo-sb" off
push_step sb-sync "$BIN" archive-push --catalog "$OUT/sb-cat"
sb_archive_catalog "$OUT/sb-cat" "$OUT/repo-sb" on
push_step sb-async "$BIN" archive-push --catalog "$OUT/sb-cat"

for mode in sync async; do
  rm -rf "$OUT/repo-pgbr" "$OUT/pgbr-spool" "$OUT/pgbr-lock"
  mkdir -p "$OUT/repo-pgbr" && chown postgres "$OUT/repo-pgbr"
  fresh_data
  write_pgbr_conf "$([[ $mode == async ]] && echo y || echo n)" "$OUT/push/data" "$OUT/repo-pgbr"
  pgbr --stanza=bench --no-online stanza-create >"$LOGS/stanza-$mode.log" 2>&1 ||
    die "pgbackrest stanza-create failed (see $LOGS/stanza-$mode.log)"
  push_step "pgbr-$mode" pgbackrest --config="$PGBR_CONF" --stanza=bench archive-push
done
# Every tool archived every segment.
[[ $(find "$OUT/repo-sb/wal" -type f | wc -l) -ge $SEGMENTS ]] || die "stripeback's archive lacks segments"
[[ $(find "$OUT/repo-pgbr/archive" -type f -name '0000000*' | wc -l) -ge $SEGMENTS ]] || die "pgBackRest's archive lacks segments"

# ---- PITR restore ------------------------------------------------------------------------
RESTORE_ROWS=""
if ((SKIP_RESTORE == 0)); then
  RC="$DIR/restore-cluster"
  DATA="$RC/data"
  if [[ "$(cat "$RC/scale" 2>/dev/null || true)" != "$SCALE" ]]; then
    note "making a cluster at pgbench scale $SCALE in $RC (once)"
    rm -rf "${RC:?}"
    mkdir -p "$RC"
    chown postgres "$RC"
    as_pg "$PG/initdb" -D "$DATA" --data-checksums -A trust -U postgres >"$LOGS/initdb-r.log" 2>&1 ||
      die "initdb failed (see $LOGS/initdb-r.log)"
    echo "$SCALE" >"$RC/scale.pending"
  fi
  sb_archive_catalog "$OUT/r-cat" "$OUT/r-repo-sb" on
  rm -rf "$OUT/r-repo-pgbr" "$OUT/pgbr-spool" "$OUT/pgbr-lock"
  mkdir -p "$OUT/r-repo-pgbr" && chown postgres "$OUT/r-repo-pgbr"
  write_pgbr_conf y "$DATA" "$OUT/r-repo-pgbr" "$RC"
  cat >"$OUT/pgbackrest-and-stripeback.sh" <<EOF
#!/usr/bin/env bash
"$BIN" archive-push --catalog "$OUT/r-cat" "\$1" && pgbackrest --config="$PGBR_CONF" --stanza=bench archive-push "\$1"
EOF
  chmod 755 "$OUT/pgbackrest-and-stripeback.sh"
  as_pg "$PG/pg_ctl" -D "$DATA" -w -l "$RC/server.log" \
    -o "-k $RC -c listen_addresses='' -c archive_mode=on -c archive_command='$OUT/pgbackrest-and-stripeback.sh %p'" \
    start >/dev/null || die "PostgreSQL did not start (see $RC/server.log)"
  stop_cluster() { as_pg "$PG/pg_ctl" -D "$DATA" -w -m fast stop >/dev/null 2>&1 || true; }
  trap stop_cluster EXIT
  if [[ -f "$RC/scale.pending" ]]; then
    as_pg "$PG/pgbench" -i -q -s "$SCALE" -h "$RC" -U postgres postgres >"$LOGS/pgbench-r.log" 2>&1 ||
      die "pgbench -i failed (see $LOGS/pgbench-r.log)"
    mv "$RC/scale.pending" "$RC/scale"
  fi
  pgbr --stanza=bench stanza-create >"$LOGS/stanza-r.log" 2>&1 || die "stanza-create failed (see $LOGS/stanza-r.log)"
  note "backups of the scale-$SCALE cluster"
  as_pg "$BIN" backup "$DATA" --to "$OUT/r-repo-sb" --catalog "$OUT/r-cat" --channels 2 \
    --compress zstd:1 --pg "host=$RC user=postgres dbname=postgres" >"$LOGS/sb-backup.log" 2>&1 ||
    die "stripeback backup failed (see $LOGS/sb-backup.log)"
  pgbr --stanza=bench --type=full --process-max=2 backup >"$LOGS/pgbr-backup.log" 2>&1 ||
    die "pgbackrest backup failed (see $LOGS/pgbr-backup.log)"
  sleep 2
  # The same moment in each tool's spelling: ISO 8601 for stripeback, pgBackRest's own.
  TARGET=$(as_pg "$PG/psql" -XAtq -h "$RC" -U postgres -c "SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')" postgres)
  PGBR_TARGET="$(echo "$TARGET" | sed 's/T/ /; s/Z$/+00/')"
  sleep 2
  as_pg "$PG/psql" -XAtq -h "$RC" -U postgres -c 'DROP TABLE IF EXISTS after_target; CREATE TABLE after_target(); SELECT pg_switch_wal()' postgres >/dev/null
  sleep 5
  stop_cluster
  trap - EXIT
  restore_step() {  # restore_step KEY CMD...
    rm -rf "$OUT/restored" && mkdir -p "$OUT/restored" && chown postgres "$OUT/restored" && chmod 700 "$OUT/restored"
    measure "$1" 1 "${@:2}"
  }
  restore_step sb-restore "$BIN" restore --to "$OUT/restored" --catalog "$OUT/r-cat" --channels 2 \
    --target-time "$TARGET" --target-action promote
  [[ -f "$OUT/restored$DATA/recovery.signal" ]] || die "stripeback's restore wrote no recovery.signal"
  restore_step pgbr-restore runuser -u postgres -- pgbackrest --config="$PGBR_CONF" --stanza=bench \
    --pg1-path="$OUT/restored" --type=time --target="$PGBR_TARGET" --target-action=promote \
    --process-max=2 restore
  [[ -f "$OUT/restored/recovery.signal" ]] || die "pgBackRest's restore wrote no recovery.signal"
  DATA_MIB=$(du -sm "$DATA" | cut -f1)
  RESTORE_ROWS="| restore (scale $SCALE, $DATA_MIB MiB) | ${R_EL[sb-restore.1]} s | ${R_EL[pgbr-restore.1]} s | $(awk -v a="${R_EL[sb-restore.1]}" -v b="${R_EL[pgbr-restore.1]}" 'BEGIN {printf "%.2f", b / a}') x | cpu ${R_CPU[sb-restore.1]} s vs ${R_CPU[pgbr-restore.1]} s |"
fi

# ---- the table ---------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
{
  echo "### WAL archiving and PITR restore ($(date -u '+%Y-%m-%d'), $TREE, $(nproc) cores)"
  echo
  echo "\`bench/wal_bench.sh --segments $SEGMENTS --parallel $PARALLEL --scale $SCALE\`"
  echo
  echo "| step | segments/s | CPU s/segment | vs pgBackRest (same mode) |"
  echo "|---|---|---|---|"
  echo "| cp+sync | ${SEG_S[cp+sync]} | ${CPU_SEG[cp+sync]} | |"
  echo "| stripeback sync | ${SEG_S[sb-sync]} | ${CPU_SEG[sb-sync]} | $(ratio "${SEG_S[sb-sync]}" "${SEG_S[pgbr-sync]}") x |"
  echo "| pgBackRest sync | ${SEG_S[pgbr-sync]} | ${CPU_SEG[pgbr-sync]} | |"
  echo "| stripeback async | ${SEG_S[sb-async]} | ${CPU_SEG[sb-async]} | $(ratio "${SEG_S[sb-async]}" "${SEG_S[pgbr-async]}") x |"
  echo "| pgBackRest async | ${SEG_S[pgbr-async]} | ${CPU_SEG[pgbr-async]} | |"
  if [[ -n "$RESTORE_ROWS" ]]; then
    echo
    echo "| PITR | stripeback | pgBackRest | speed-up | CPU |"
    echo "|---|---|---|---|---|"
    echo "$RESTORE_ROWS"
  fi
  if ((QUIET_NOTES)); then echo; echo "($QUIET_NOTES step(s) measured on a busy machine)"; fi
} | tee "$RESULTS"
note "results in $RESULTS; logs in $LOGS"
