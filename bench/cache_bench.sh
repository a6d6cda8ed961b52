#!/usr/bin/env bash
# cache_bench.sh: page-cache neutrality. How much of a backup's source stays in the page
# cache, how much of a warm working set (a database's cached files) the backup evicts, and
# what a restore leaves dirty, for stripeback, cp, tar, pgBackRest and restic on the same
# PostgreSQL cluster. Run as root (the page cache is dropped, PostgreSQL runs as postgres).
# See --help.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

DIR=/var/tmp/stripeback-cachebench
SCALE=250
WARM_MIB=2048
HEADROOM_MIB=2048
ROUNDS=3
BALLAST=1
BIN=""
RESULTS=""
TOOLS="stripeback cp tar pgbackrest restic"
PG=/usr/lib/postgresql/15/bin

usage() {
  cat <<EOF
Usage: $(basename "$0") [options]

Makes (once) a PostgreSQL 15 cluster at pgbench scale SCALE (about 16 MiB per unit: 250
gives about 4 GiB, loaded with wal_level=minimal so that pg_wal stays small; stopped, so
every tool reads the same bytes) and a warm set of WARM
MiB of other files. Memory is then filled with a ballast (a tmpfs file, which the kernel
cannot evict without swap) until only the warm set plus HEADROOM MiB are available to the
page cache: the situation of a database server whose memory is in use, where a backup
that reads through the cache must evict something.

For each tool and round: the page cache is dropped, the warm set read (cached), then

  backup   the tool backs the cluster up into a directory of its own; measured when it
           exits: the share of the source still cached, the share of the warm set evicted,
           the share of the backup's own output cached, and dirty memory (/proc/meminfo)
  restore  after the cache is dropped and the warm set read again, the tool restores
           that backup into an empty directory; measured when it exits: the share of the
           restored files cached, the warm set evicted, dirty memory

  stripeback  backup --channels 2 (uncompressed) / restore --channels 2
  cp          cp -a / cp -a back
  tar         tar -cf ARCHIVE -C SRC . / tar -xf ARCHIVE -C TARGET
  pgbackrest  backup --type=full --no-online, compress-type=none, process-max=2 /
              restore --pg1-path=TARGET (as postgres)
  restic      backup (repository v2, compression auto, its default) / restore latest

Reported: medians over ROUNDS. Targets (docs/benchmarks.md): stripeback under 1% of the
source cached and under 2% of the warm set evicted; a restore leaves no more dirty than its
durability protocol needs (stripeback syncs every file it writes).

Options:
  --dir DIR            work directory (default $DIR)
  --scale N            pgbench scale of the cluster (default $SCALE)
  --warm MIB           the warm set (default $WARM_MIB)
  --headroom MIB       page cache left free beside the warm set (default $HEADROOM_MIB)
  --no-ballast         no memory ballast: every tool has all free memory as cache
  --rounds N           rounds per tool (default $ROUNDS)
  --tools "A B ..."    the tools to run (default: $TOOLS)
  --bin PATH           stripeback binary (default: build/release/cli/stripeback, built when
                       missing)
  --results FILE       also write the results to FILE (default DIR/results-<time>.md)
  -h, --help           this text
EOF
}

note() { echo "cache_bench: $*" >&2; }
die() { echo "cache_bench: $*" >&2; exit 1; }

while (($#)); do
  case "$1" in
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --scale) SCALE=${2:?--scale needs a value}; shift 2 ;;
    --warm) WARM_MIB=${2:?--warm needs a value}; shift 2 ;;
    --headroom) HEADROOM_MIB=${2:?--headroom needs a value}; shift 2 ;;
    --no-ballast) BALLAST=0; shift ;;
    --rounds) ROUNDS=${2:?--rounds needs a value}; shift 2 ;;
    --tools) TOOLS=${2:?--tools needs a value}; shift 2 ;;
    --bin) BIN=${2:?--bin needs a value}; shift 2 ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
for v in SCALE WARM_MIB HEADROOM_MIB ROUNDS; do
  [[ "${!v}" =~ ^[0-9]+$ && "${!v}" -ge 1 ]] || die "${v} must be a positive number (see --help)"
done
for t in $TOOLS; do
  [[ " stripeback cp tar pgbackrest restic " == *" $t "* ]] || die "unknown tool '$t' (see --help)"
done
[[ $(id -u) -eq 0 ]] || die "run as root (the page cache is dropped, PostgreSQL runs as postgres)"
[[ -x "$PG/initdb" && -x "$PG/pgbench" ]] || die "PostgreSQL 15 is missing (apt-get install postgresql-15)"
command -v fincore >/dev/null || die "fincore is missing (apt-get install util-linux)"
GNU_TIME=/usr/bin/time
[[ -x "$GNU_TIME" ]] || die "GNU time is missing (apt-get install time)"
QUIET_TIMEOUT=60

# shellcheck source=bench/bench_lib.sh
source "$SCRIPT_DIR/bench_lib.sh"
resolve_bin

[[ -n "$DIR" && "$DIR" != "/" ]] || die "refusing to use '$DIR' as the work directory"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
OUT="$DIR/out"
LOGS="$DIR/logs"
BAL="$DIR/ballast"
cleanup() {
  if mountpoint -q "$BAL" 2>/dev/null; then umount "$BAL" || true; fi
}
trap 'cleanup' EXIT
trap 'cleanup; exit 130' INT TERM
rm -rf "${OUT:?}" "${LOGS:?}"
mkdir -p "$OUT" "$LOGS"
chown postgres "$DIR" "$OUT"
[[ -n "$RESULTS" ]] || RESULTS="$DIR/results-$(date +%Y%m%d-%H%M%S).md"
MOUNT=$(df --output=target "$DIR" | tail -1)
as_pg() { runuser -u postgres -- "$@"; }

# ---- the data: a stopped cluster and a warm set -----------------------------------------
SRC="$DIR/cluster/data"
if [[ "$(cat "$DIR/cluster/scale" 2>/dev/null || true)" != "$SCALE" ]]; then
  note "making a PostgreSQL cluster at pgbench scale $SCALE (once)"
  rm -rf "$DIR/cluster"
  mkdir -p "$DIR/cluster"
  chown postgres "$DIR/cluster"
  as_pg "$PG/initdb" -D "$SRC" --data-checksums -A trust -U postgres >"$LOGS/initdb.log" 2>&1 ||
    die "initdb failed (see $LOGS/initdb.log)"
  as_pg "$PG/pg_ctl" -D "$SRC" -w -l "$DIR/cluster/server.log" \
    -o "-k $DIR/cluster -c listen_addresses='' -c wal_level=minimal -c max_wal_senders=0 -c max_wal_size=1GB" start >/dev/null ||
    die "PostgreSQL did not start (see $DIR/cluster/server.log)"
  as_pg "$PG/pgbench" -i -q -s "$SCALE" -h "$DIR/cluster" -U postgres postgres \
    >"$LOGS/pgbench-i.log" 2>&1 || die "pgbench -i failed (see $LOGS/pgbench-i.log)"
  as_pg "$PG/psql" -XAtq -h "$DIR/cluster" -U postgres -c 'CHECKPOINT' postgres >/dev/null
  as_pg "$PG/pg_ctl" -D "$SRC" -w -m fast stop >/dev/null || die "PostgreSQL did not stop"
  echo "$SCALE" >"$DIR/cluster/scale"
fi
WARM="$DIR/warm"
if [[ "$(cat "$WARM/mib" 2>/dev/null || true)" != "$WARM_MIB" ]]; then
  note "making a warm set of $WARM_MIB MiB (once)"
  rm -rf "$WARM"
  mkdir -p "$WARM"
  per=$(((WARM_MIB + 7) / 8))
  for i in 1 2 3 4 5 6 7 8; do
    head -c "$((per * 1024 * 1024))" /dev/urandom >"$WARM/w$i"
  done
  echo "$WARM_MIB" >"$WARM/mib"
fi
SRC_BYTES=$(du -sb "$SRC" | cut -f1)
WARM_BYTES=$(cat "$WARM"/w* | wc -c)

# Bytes of the files below the arguments that are in the page cache.
cached() {
  find "$@" -type f -print0 2>/dev/null | xargs -0 -r fincore --bytes --noheadings --output RES 2>/dev/null |
    awk '{s += $1} END {printf "%.0f\n", s}'
}
dirty_bytes() { awk '/^Dirty:/ {printf "%.0f\n", $2 * 1024}' /proc/meminfo; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? 100 * a / b : 0)}'; }
warm_up() { cat "$WARM"/w* >/dev/null; }

# ---- the ballast ----------------------------------------------------------------------
if ((BALLAST)); then
  drop_caches
  avail=$(awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo)
  ballast=$((avail - WARM_MIB - HEADROOM_MIB))
  if ((ballast > 0)); then
    note "filling ${ballast} MiB of memory with a ballast (tmpfs), leaving the warm set and ${HEADROOM_MIB} MiB"
    mkdir -p "$BAL"
    mount -t tmpfs -o size="$((ballast + 64))m" stripeback-ballast "$BAL"
    fallocate -l "${ballast}m" "$BAL/ballast" || die "the ballast could not be allocated"
  else
    note "available memory ($avail MiB) is already below warm + headroom: no ballast"
  fi
fi

# ---- the tools ------------------------------------------------------------------------
PGBR_CONF="$OUT/pgbackrest.conf"
RESTIC_REPO="$OUT/restic-repo"
export RESTIC_PASSWORD=cache-bench
backup_cmd() {  # tool -> the command that backs SRC up into $OUT/<tool>
  case "$1" in
    stripeback) echo "$BIN backup $SRC --to $OUT/stripeback/pieces --catalog $OUT/stripeback/catalog --channels 2" ;;
    cp) echo "cp -a $SRC $OUT/cp/copy" ;;
    tar) echo "tar -cf $OUT/tar/cluster.tar -C $SRC ." ;;
    pgbackrest) echo "runuser -u postgres -- pgbackrest --config=$PGBR_CONF --stanza=bench --no-online --type=full backup" ;;
    restic) echo "restic --repo $RESTIC_REPO --quiet backup $SRC" ;;
  esac
}
restore_cmd() {  # tool target -> the command that restores the backup into target
  case "$1" in
    stripeback) echo "$BIN restore --to $2 --catalog $OUT/stripeback/catalog --channels 2" ;;
    cp) echo "cp -a $OUT/cp/copy $2" ;;
    tar) echo "tar -xf $OUT/tar/cluster.tar -C $2" ;;
    pgbackrest) echo "runuser -u postgres -- pgbackrest --config=$PGBR_CONF --stanza=bench --pg1-path=$2 restore" ;;
    restic) echo "restic --repo $RESTIC_REPO --quiet restore latest --target $2" ;;
  esac
}
output_of() { echo "$OUT/$1"; }
prepare_backup() {  # an empty destination for the tool
  local t=$1
  rm -rf "${OUT:?}/$t"
  mkdir -p "$OUT/$t"
  case "$t" in
    pgbackrest)
      chown postgres "$OUT/$t"
      cat >"$PGBR_CONF" <<EOF
[global]
repo1-path=$OUT/pgbackrest
compress-type=none
process-max=2
log-level-console=warn
log-path=$LOGS
lock-path=$OUT/pgbackrest/lock
spool-path=$OUT/pgbackrest/spool

[bench]
pg1-path=$SRC
pg1-socket-path=$DIR/cluster
EOF
      chown postgres "$PGBR_CONF"
      as_pg pgbackrest --config="$PGBR_CONF" --stanza=bench --no-online stanza-create \
        >"$LOGS/stanza.log" 2>&1 || die "pgbackrest stanza-create failed (see $LOGS/stanza.log)"
      ;;
    restic)
      rm -rf "$RESTIC_REPO"
      restic --repo "$RESTIC_REPO" --quiet init --repository-version 2 >"$LOGS/restic-init.log" 2>&1 ||
        die "restic init failed (see $LOGS/restic-init.log)"
      ;;
  esac
}
backup_output() {  # where the tool's backup lies
  case "$1" in
    restic) echo "$RESTIC_REPO" ;;
    *) echo "$OUT/$1" ;;
  esac
}

declare -A M  # tool.kind.metric.round -> value
run_step() {  # tool kind round target
  local t=$1 kind=$2 round=$3 target=$4 cmd w0 w1 s1 o1 d1 rc=0
  if [[ $kind == backup ]]; then cmd=$(backup_cmd "$t"); else cmd=$(restore_cmd "$t" "$target"); fi
  drop_caches
  warm_up
  w0=$(cached "$WARM")
  $GNU_TIME -f '%e %U %S' -o "$LOGS/$t.$kind.$round.time" $cmd \
    >"$LOGS/$t.$kind.$round.out" 2>"$LOGS/$t.$kind.$round.err" </dev/null || rc=$?
  d1=$(dirty_bytes)
  if ((rc != 0)); then
    tail -n 20 "$LOGS/$t.$kind.$round.err" >&2
    die "$t $kind failed (exit $rc): $cmd"
  fi
  w1=$(cached "$WARM")
  M[$t.$kind.evicted.$round]=$(pct "$((w0 > w1 ? w0 - w1 : 0))" "$w0")
  M[$t.$kind.dirty.$round]=$(awk -v d="$d1" 'BEGIN {printf "%.0f", d / 1048576}')
  read -r el _ < "$LOGS/$t.$kind.$round.time"
  M[$t.$kind.seconds.$round]=$el
  if [[ $kind == backup ]]; then
    s1=$(cached "$SRC")
    o1=$(cached "$(backup_output "$t")")
    M[$t.$kind.source.$round]=$(pct "$s1" "$SRC_BYTES")
    M[$t.$kind.output.$round]=$(pct "$o1" "$SRC_BYTES")
  else
    o1=$(cached "$target")
    M[$t.$kind.output.$round]=$(pct "$o1" "$SRC_BYTES")
  fi
  sync
  note "  $t $kind round $round: ${el} s, warm evicted ${M[$t.$kind.evicted.$round]}%$([[ $kind == backup ]] && echo ", source cached ${M[$t.$kind.source.$round]}%"), output cached ${M[$t.$kind.output.$round]}%, dirty ${M[$t.$kind.dirty.$round]} MiB"
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
med() {  # tool kind metric
  local r vals=()
  for ((r = 1; r <= ROUNDS; r++)); do vals+=("${M[$1.$2.$3.$r]}"); done
  median "${vals[@]}"
}

note "source: $SRC ($((SRC_BYTES / 1048576)) MiB), warm set $((WARM_BYTES / 1048576)) MiB, $ROUNDS round(s)"
for t in $TOOLS; do
  case "$t" in
    pgbackrest) command -v pgbackrest >/dev/null || { note "pgbackrest is not installed: skipped"; continue; } ;;
    restic) command -v restic >/dev/null || { note "restic is not installed: skipped"; continue; } ;;
  esac
  for ((r = 1; r <= ROUNDS; r++)); do
    prepare_backup "$t"
    run_step "$t" backup "$r" ""
    target="$OUT/restore-$t"
    rm -rf "$target"
    mkdir -p "$target"
    [[ $t == pgbackrest ]] && chown postgres "$target" && chmod 700 "$target"
    [[ $t == cp ]] && rmdir "$target"
    run_step "$t" restore "$r" "$target"
    rm -rf "$target"
  done
  rm -rf "${OUT:?}/$t" "$RESTIC_REPO"
done

{
  echo "# Page-cache neutrality, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "stripeback: $BIN_VERSION (tree $TREE); source: PostgreSQL cluster at pgbench scale $SCALE, $((SRC_BYTES / 1048576)) MiB; warm set $((WARM_BYTES / 1048576)) MiB; $( ((BALLAST)) && echo "memory ballast: warm set + $HEADROOM_MIB MiB left to the page cache" || echo "no memory ballast"); medians of $ROUNDS round(s)"
  echo
  echo "| tool | backup s | source cached | warm set evicted | backup output cached | dirty at exit | restore s | restored cached | warm set evicted | dirty at exit |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  for t in $TOOLS; do
    [[ -n "${M[$t.backup.seconds.1]:-}" ]] || continue
    echo "| $t | $(med "$t" backup seconds) | $(med "$t" backup source)% | $(med "$t" backup evicted)% | $(med "$t" backup output)% | $(med "$t" backup dirty) MiB | $(med "$t" restore seconds) | $(med "$t" restore output)% | $(med "$t" restore evicted)% | $(med "$t" restore dirty) MiB |"
  done
  echo
  echo "Command: \`bash bench/cache_bench.sh --scale $SCALE --warm $WARM_MIB --headroom $HEADROOM_MIB --rounds $ROUNDS$( ((BALLAST)) || echo ' --no-ballast')\`"
} | tee "$RESULTS"
note "results in $RESULTS"
