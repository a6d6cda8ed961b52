#!/usr/bin/env bash
# page_check_bench.sh: backup --validate --check-logical of a real PostgreSQL cluster against
# a fio read-only pass over the same files and against pg_checksums --check, side by side,
# cold cache; with --nfs, the same validation reading the cluster from nfs-ganesha against
# libnfs's own tools reading the same files. Run as root (dropping the page cache, running
# PostgreSQL as postgres and ganesha need it). See --help.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

DIR=/var/tmp/stripeback-pagebench
SCALE=270
CHANNELS=2
REPEAT=1
BIN=""
BIN_BEFORE=""
RESULTS=""
IODEPTH=8
QUIET_TIMEOUT=120
NFS=0
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
  fio            fio reading every file the validation reads, once, one file after the
                 other (io_uring, iodepth $IODEPTH; one job file, DIR/out/all.fio): the
                 files whose size is a multiple of 4 KiB in one job with O_DIRECT, then
                 each of the others buffered. A fio job reads only whole blocks of a size
                 it is given and ignores a file smaller than its smallest one, so the
                 O_DIRECT job gets a block size split (bssplit): 1 MiB for 99% of its
                 reads and, where 1 MiB no longer fits, the largest power of two dividing
                 every O_DIRECT file's size (8 KiB in a PostgreSQL cluster); a buffered
                 file of up to 1 MiB is a job of its own reading it in one read of its
                 size (larger ones share a job of 1 MiB, 4 KiB and 1-byte blocks). Files
                 of 0 bytes hold nothing to read and are left out (fio ignores them). Its
                 I/O time (the jobs' runtime added) is the read ceiling; the bytes it
                 read must be the data set's
  fio-large      the former ceiling, reported beside it: fio reading only the files of
                 1 MiB or more (O_DIRECT, 1 MiB blocks, iodepth $IODEPTH), its I/O time
                 scaled to the data set's bytes
  pg_checksums   pg_checksums --check -D DIR/pg/data as postgres (one process, buffered
                 8 KiB reads)

Ratios: validate MB/s against fio's reading every file (and the job's own time against
fio's I/O time) and against pg_checksums's, CPU seconds per GiB of
each (targets: >= 0.9 x fio; >= 1.2 x pg_checksums at no more CPU per GiB; <= 0.3 CPU s
per GiB). The Markdown table goes to stdout and --results FILE.

With --nfs, a private nfs-ganesha (scripts/nfs-server.sh, ports 22149/22150, state in
DIR/nfs-server) exports DIR/pg/data once the cluster is made (it is not changed while the
server runs), and the steps of each round are instead, page cache dropped before each
(on this host that is the server's cache too):

  validate       stripeback backup --validate --check-logical nfs://127.0.0.1/DIR/pg/data/base
                 nfs://127.0.0.1/DIR/pg/data/global (?nfsport=22149&mountport=22150)
                 --channels N; must find no corrupt page
  nfs-cat        libnfs's nfs-cat of every regular file below base/ and global/ to
                 /dev/null, one after the other: nfs-cp's read loop (synchronous 1 MiB
                 READs, one stream, a mount per file) without a destination; nfs-cp itself
                 cannot write to /dev/null (it creates its destination with O_EXCL)
  nfs-cp         nfs-cp of each of those files to a file in a tmpfs directory, removed
                 after each copy
  nfs-cat-large  nfs-cat of the files of 1 MiB or more only (no target: the streaming
                 rate without the per-file cost)

Reported: MB/s, client CPU s/GiB (user + sys of the command and its children, GNU time),
ganesha CPU s/GiB (/proc/PID/stat over the step), and the ratios against nfs-cat and
nfs-cp (targets: validate >= 1.5 x their MB/s at no more client CPU per GiB).

Options:
  --dir DIR          work directory (default $DIR)
  --scale N          pgbench scale of the cluster (default $SCALE)
  --channels N       stripeback channels (default $CHANNELS)
  --repeat N         rounds (default $REPEAT). Locally the steps' order rotates from round to
                     round (the first read after pg_checksums is the slowest, whoever
                     makes it) and every figure is the median of its step; give a multiple
                     of the number of steps (3, or 4 with --bin-before). With --nfs the
                     median round by validate time is shown
  --bin PATH         stripeback binary (default: build/release/cli/stripeback, built when
                     missing)
  --bin-before PATH  a second stripeback binary (local only): its validation runs in the
                     same rounds, right before or after --bin's (alternating, --bin first
                     in round 1), and is reported as "(before)" next to it
  --results FILE     also write the results to FILE (default DIR/results-<time>.md)
  --sb-args "ARGS"   more arguments for the validation (default "$SB_ARGS")
  --quiet-timeout S  longest wait for a quiet machine before each step (default $QUIET_TIMEOUT)
  --nfs              read the cluster from nfs-ganesha, against nfs-cat and nfs-cp (above)
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
    --bin-before) BIN_BEFORE=${2:?--bin-before needs a value}; shift 2 ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    --sb-args) SB_ARGS=${2?--sb-args needs a value}; shift 2 ;;
    --quiet-timeout) QUIET_TIMEOUT=${2:?--quiet-timeout needs a value}; shift 2 ;;
    --nfs) NFS=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$SCALE" =~ ^[0-9]+$ && "$SCALE" -ge 1 ]] || die "--scale must be a positive number"
[[ "$REPEAT" =~ ^[0-9]+$ && "$REPEAT" -ge 1 ]] || die "--repeat must be a positive number"
[[ $(id -u) -eq 0 ]] || die "run as root (the page cache is dropped, PostgreSQL runs as postgres)"
[[ -x "$PG/initdb" && -x "$PG/pg_checksums" ]] || die "PostgreSQL 15 is missing (apt-get install postgresql-15)"
if ((NFS)); then
  if ! command -v nfs-cp >/dev/null || ! command -v nfs-cat >/dev/null; then
    die "nfs-cp and nfs-cat are missing (apt-get install libnfs-utils)"
  fi
else
  command -v fio >/dev/null || die "fio is missing (apt-get install fio)"
fi
GNU_TIME=/usr/bin/time
[[ -x "$GNU_TIME" ]] || die "GNU time is missing (apt-get install time)"

# shellcheck source=bench/bench_lib.sh
source "$SCRIPT_DIR/bench_lib.sh"
resolve_bin
if [[ -n "$BIN_BEFORE" ]]; then
  ((NFS == 0)) || die "--bin-before is for the local measurement only"
  [[ -x "$BIN_BEFORE" && -f "$BIN_BEFORE" ]] || die "--bin-before binary '$BIN_BEFORE' not found or not executable"
  BIN_BEFORE=$(cd "$(dirname "$BIN_BEFORE")" && pwd)/$(basename "$BIN_BEFORE")
  BEFORE_VERSION=$("$BIN_BEFORE" --version 2>/dev/null | head -n 1 || true)
  BEFORE_BUILT=$(date -u -r "$BIN_BEFORE" '+%Y-%m-%d %H:%M:%S UTC')
  BEFORE_SHA=$(sha256sum "$BIN_BEFORE" | cut -c1-12)
  [[ "$BEFORE_SHA" != "$BIN_SHA" ]] || note "NOTE: --bin and --bin-before are the same build (sha256 $BIN_SHA)"
fi

[[ -n "$DIR" && "$DIR" != "/" ]] || die "refusing to use '$DIR' as the work directory"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
OUT="$DIR/out"
LOGS="$DIR/logs"
rm -rf "${OUT:?}" "${LOGS:?}"
mkdir -p "$OUT" "$LOGS"
[[ -n "$RESULTS" ]] || RESULTS="$DIR/results-$( ((NFS)) && echo nfs-)$(date +%Y%m%d-%H%M%S).md"
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
# fio's pass over every file: one job file, one filename= line a file (fio adds each).
if ((NFS == 0)); then
  find "${SOURCES[@]}" -type f -printf '%s %p\n' | sort -k2 | awk -v qd="$IODEPTH" '
    # The largest power of two up to 1 MiB dividing n.
    function pow2(n,   b) { b = 1048576; while (b > 1 && n % b) b /= 2; return b }
    { size[NR] = $1; name[NR] = substr($0, index($0, " ") + 1)
      if ($1 > 0 && $1 % 4096 == 0) { b = pow2($1); if (!step || b < step) step = b } }
    END {
      print "[global]\nioengine=io_uring\nrw=read\niodepth=" qd "\nfile_service_type=sequential"
      if (!step) step = 4096
      print "[direct]\ndirect=1\nbssplit=1M/99:" step "/1"
      for (i = 1; i <= NR; i++) if (size[i] > 0 && size[i] % 4096 == 0) print "filename=" name[i]
      # The others buffered: one job a file read in one read of its size, as the validation
      # reads a file that fits in a buffer; larger ones in blocks of 1 MiB, 4 KiB and 1 byte.
      for (i = 1; i <= NR; i++)
        if (size[i] % 4096 && size[i] <= 1048576)
          print "[buffered" ++jobs "]\nstonewall\ndirect=0\nbs=" size[i] "\nfilename=" name[i]
      for (i = 1; i <= NR; i++)
        if (size[i] % 4096 && size[i] > 1048576) {
          if (!big++) print "[buffered-large]\nstonewall\ndirect=0\nbssplit=1M/98:4k/1:1/1"
          print "filename=" name[i]
        }
    }' >"$OUT/all.fio"
  FIO_DIRECT_FILES=$(find "${SOURCES[@]}" -type f -printf '%s\n' | awk '$1 > 0 && $1 % 4096 == 0' | wc -l)
  FIO_EMPTY_FILES=$(find "${SOURCES[@]}" -type f -empty | wc -l)
  FIO_STEP=$(awk -F'[:/]' '/^bssplit=1M\/99:/ {print $3}' "$OUT/all.fio")
  FIO_BUFFERED_FILES=$((DATA_FILES - FIO_DIRECT_FILES - FIO_EMPTY_FILES))
fi
note "cluster: $DATA_FILES files, $DATA_BYTES bytes below $DATA/base and $DATA/global"

if ((NFS)); then
  # shellcheck source=bench/nfs_server_lib.sh
  source "$SCRIPT_DIR/nfs_server_lib.sh"
  SINK=""
  trap 'nfs_server_stop; [[ -z "$SINK" ]] || rm -rf "$SINK"' EXIT
  # The cluster is complete and stopped: ganesha sees it only as it stays.
  nfs_server_start "$DIR/nfs-server" "$DATA"
  SERVER_TICKS=nfs_server_ticks
  note "nfs-ganesha (pid $NFS_PID) exports $DATA"
  URL="nfs://127.0.0.1$DATA"
  VALIDATE_SOURCES=("$URL/base$NFS_Q" "$URL/global$NFS_Q")
  # The files the validation reads, and those of 1 MiB or more, one path a line.
  find "${SOURCES[@]}" -type f | sort >"$OUT/files"
  find "${SOURCES[@]}" -type f -size +1023k | sort >"$OUT/files-large"
  LARGE_BYTES=$(xargs -a "$OUT/files-large" stat -c %s | awk '{s += $1} END {printf "%.0f", s}')
  LARGE_FILES=$(wc -l <"$OUT/files-large")
  # nfs-cp creates its destination (O_EXCL), so it copies to a new file in memory each time.
  SINK=$(mktemp -d /dev/shm/stripeback-pagebench.XXXXXX)
  # read_each Q LIST [SINK]: every file in LIST from the server, one after the other, by
  # nfs-cat to /dev/null, or with SINK by nfs-cp to SINK/f (removed after each).
  # shellcheck disable=SC2016 # expanded by the bash that runs it
  READ_EACH='while IFS= read -r f; do
      if [[ -z ${3:-} ]]; then nfs-cat "nfs://127.0.0.1$f$1" >/dev/null
      else nfs-cp "nfs://127.0.0.1$f$1" "$3/f" >/dev/null && rm -f "$3/f"; fi ||
        { echo "reading $f failed" >&2; exit 1; }
    done <"$2"'
else
  VALIDATE_SOURCES=("${SOURCES[@]}")
fi

jq_py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
# The same for a fio report, which starts with the lines fio writes about ignored files.
fio_py() {
  python3 -c "import json,re,sys; t=open(sys.argv[1]).read(); d=json.loads(t[re.search(r'^\{', t, re.M).start():]); print($2)" "$1"
}
declare -A FIO_IO FIO_LARGE PAGES JOB_EL
# One validation: KEY is validate (--bin) or validate_before (--bin-before).
step_validate() {
  local key=$1 round=$2 bin=$BIN n
  [[ "$key" == validate ]] || bin=$BIN_BEFORE
  rm -rf "$OUT/cat"
  # shellcheck disable=SC2086 # SB_ARGS is a list of arguments
  measure "$key" "$round" "$bin" backup --validate --check-logical "${VALIDATE_SOURCES[@]}" \
    --catalog "$OUT/cat" --channels "$CHANNELS" --json $SB_ARGS
  n=$(jq_py "$LOGS/$key.$round.out" "len(d['corrupt'])")
  [[ "$n" == 0 ]] || die "$key reported $n corrupt pages in a clean cluster"
  # The job's own elapsed time: the reading, without starting the process and the plan.
  JOB_EL[$key.$round]=$(jq_py "$LOGS/$key.$round.out" "'%.3f' % d['elapsed_s']")
}
# fio over every file: its I/O time, the jobs' runtime added.
step_fio() {
  local round=$1 got
  measure fio "$round" fio --output-format=json "$OUT/all.fio"
  got=$(fio_py "$LOGS/fio.$round.out" "'%d' % sum(j['read']['io_bytes'] for j in d['jobs'])")
  [[ "$got" == "$DATA_BYTES" ]] || die "fio read $got bytes of the $DATA_BYTES in the files (see $OUT/all.fio)"
  FIO_IO[fio.$round]=$(fio_py "$LOGS/fio.$round.out" "'%.3f' % (sum(j['read']['runtime'] for j in d['jobs']) / 1000)")
}
# fio over the files of 1 MiB or more only, its I/O time scaled to the data set.
step_fio_large() {
  local round=$1
  measure fio_large "$round" fio --output-format=json --ioengine=io_uring --direct=1 --bs=1M \
    --iodepth="$IODEPTH" --name=read --filename="$FIO_FILES" --file_service_type=sequential --rw=read
  FIO_LARGE[fio.$round]=$(jq_py "$LOGS/fio_large.$round.out" \
    "'%.3f' % (max(j['read']['runtime'] for j in d['jobs']) / 1000 * $DATA_BYTES / sum(j['read']['io_bytes'] for j in d['jobs']))")
}
declare -A ORDER
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for ((round = 1; round <= REPEAT; round++)); do
  note "round $round of $REPEAT"
  if ((NFS)); then
    step_validate validate "$round"
    PAGES[$round]=$(jq_py "$LOGS/validate.$round.out" "d['pages_checked']")
    measure nfs_cat "$round" bash -c "$READ_EACH" read_each "$NFS_Q" "$OUT/files"
    measure nfs_cp "$round" bash -c "$READ_EACH" read_each "$NFS_Q" "$OUT/files" "$SINK"
    measure nfs_cat_large "$round" bash -c "$READ_EACH" read_each "$NFS_Q" "$OUT/files-large"
    continue
  fi
  # The first read of the data set after pg_checksums is the slowest on a virtual disk
  # (the host's cache), whoever makes it: the order of the steps rotates from round to
  # round, so each takes each place as often (with --repeat a multiple of their number).
  steps=(validate fio fio_large)
  [[ -z "$BIN_BEFORE" ]] || steps=(validate validate_before fio fio_large)
  ORDER[$round]=""
  for ((i = 0; i < ${#steps[@]}; i++)); do
    key=${steps[(i + round - 1) % ${#steps[@]}]}
    ORDER[$round]+="${ORDER[$round]:+, }$key"
    case "$key" in
      fio) step_fio "$round" ;;
      fio_large) step_fio_large "$round" ;;
      *) step_validate "$key" "$round" ;;
    esac
  done
  PAGES[$round]=$(jq_py "$LOGS/validate.$round.out" "d['pages_checked']")
  measure pg_checksums "$round" runuser -u postgres -- "$PG/pg_checksums" --check -D "$DATA"
done

# The median round by validate time.
best=$(for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[validate.$r]} $r"; done | sort -n |
  awk -v n="$REPEAT" 'NR == int((n + 1) / 2) {print $2}')
# median NAME KEY: the median over the rounds of NAME[KEY.round].
median() {
  local -n a=$1
  local r
  for ((r = 1; r <= REPEAT; r++)); do echo "${a[$2.$r]}"; done | sort -g |
    awk '{v[NR] = $1} END {printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
# The figures shown: from the median round by validate time with --nfs, else each the
# median of its own step over the rounds (the steps' order rotates).
if ((NFS)); then
  el() { echo "${R_EL[$1.$best]}"; }
  cpu() { echo "${R_CPU[$1.$best]}"; }
  rss() { echo "$((R_RSS[$1.$best] / 1024))"; }
else
  el() { median R_EL "$1"; }
  cpu() { median R_CPU "$1"; }
  rss() { awk -v k="$(median R_RSS "$1")" 'BEGIN {printf "%d", k / 1024}'; }
fi
srv() { echo "${R_SRV[$1.$best]}"; }
mbs() { awk -v b="${2:-$DATA_BYTES}" -v t="$1" 'BEGIN {printf "%.1f", b / 1e6 / t}'; }
per_gib() { awk -v c="$1" -v b="${2:-$DATA_BYTES}" 'BEGIN {printf "%.3f", c / (b / 1073741824)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
verdict() { awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN {ok = (op == ">=") ? v >= t : v <= t; print ok ? "PASS" : "**FAIL**"}'; }
cmdline="bench/page_check_bench.sh$( ((NFS)) && echo ' --nfs' || true) --scale $SCALE --channels $CHANNELS --repeat $REPEAT --sb-args \"$SB_ARGS\"$([[ -z "$BIN_BEFORE" ]] || echo " --bin-before $BIN_BEFORE")"
header() {
  echo "- binary: $BIN_VERSION ($BIN_SHA, built $BIN_BUILT), tree $TREE"
  echo "- cluster: PostgreSQL 15, pgbench scale $SCALE, data checksums on: $DATA_FILES files, $DATA_BYTES bytes below base/ and global/; ${PAGES[$best]} relation pages checked"
  if ((NFS)); then
    echo "- stripeback: $CHANNELS channel(s), $SB_ARGS; round $best of $REPEAT shown (median validate time); page cache dropped before each step$( ((CAN_DROP)) || echo ' (NOT: not permitted)')"
  else
    echo "- stripeback: $CHANNELS channel(s), $SB_ARGS; every figure the median of its step over $REPEAT rounds, the steps' order rotating from round to round (pg_checksums last); page cache dropped before each step$( ((CAN_DROP)) || echo ' (NOT: not permitted)')"
  fi
  echo "- command: \`$cmdline\`"
  if [[ -n "$BIN_BEFORE" ]]; then
    echo "- stripeback (before), the rows ending in \"(before)\": $BEFORE_VERSION, $BIN_BEFORE (built $BEFORE_BUILT, sha256 $BEFORE_SHA); in each round right before or after --bin, alternating (--bin first in round 1)"
  fi
}

if ((NFS)); then
  # Everything else on the machine during a step: CPU not used by the command or ganesha.
  bgcpu() { awk -v o="${R_OTHER[$1.$best]}" -v g="$(srv "$1")" 'BEGIN {b = o - g; printf "%.2f", (b < 0 ? 0 : b)}'; }
  row() {  # row LABEL KEY [BYTES]
    echo "| $1 | $(el "$2") | $(mbs "$(el "$2")" "${3:-}") | $(cpu "$2") | $(per_gib "$(cpu "$2")" "${3:-}") | $(srv "$2") | $(per_gib "$(srv "$2")" "${3:-}") | $(bgcpu "$2") | $(rss "$2") |"
  }
  V_MBS=$(mbs "$(el validate)")
  V_CPU=$(per_gib "$(cpu validate)")
  {
    echo "## backup --validate --check-logical from NFS (nfs-ganesha) against nfs-cat and nfs-cp"
    echo
    header
    echo "- server: nfs-ganesha $(ganesha.nfsd -v 2>&1 | grep -o 'Release = V[0-9.]*' | head -1 | cut -d' ' -f3) on 127.0.0.1 (VFS FSAL, NFSv3), same host and cores as the client; $LARGE_FILES files of 1 MiB or more hold $LARGE_BYTES bytes"
    echo "- machine: $NCPU CPUs; steps that waited ${QUIET_TIMEOUT}s for a quiet machine in vain: $QUIET_NOTES; background CPU s = CPU used meanwhile by neither the command nor ganesha"
    echo
    echo "| Measurement | Elapsed s | MB/s | Client CPU s | Client CPU s/GiB | ganesha CPU s | ganesha CPU s/GiB | Background CPU s | Peak RSS MiB |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    row "stripeback backup --validate --check-logical ($CHANNELS channels)" validate
    row "nfs-cat > /dev/null, each file in turn" nfs_cat
    row "nfs-cp to tmpfs, each file in turn" nfs_cp
    row "nfs-cat > /dev/null, the files of 1 MiB or more only" nfs_cat_large "$LARGE_BYTES"
    echo
    echo "| Ratio | Value | Target | Result |"
    echo "|---|---:|---|---|"
    for k in nfs_cat nfs_cp; do
      name=${k//_/-}
      r_mbs=$(ratio "$V_MBS" "$(mbs "$(el $k)")")
      r_cpu=$(ratio "$V_CPU" "$(per_gib "$(cpu $k)")")
      echo "| validate MB/s / $name MB/s | $r_mbs | >= 1.5 | $(verdict "$r_mbs" ">=" 1.5) |"
      echo "| validate client CPU s/GiB / $name client CPU s/GiB | $r_cpu | <= 1 | $(verdict "$r_cpu" "<=" 1) |"
    done
    echo "| validate MB/s / nfs-cat MB/s on the files of 1 MiB or more | $(ratio "$V_MBS" "$(mbs "$(el nfs_cat_large)" "$LARGE_BYTES")") | - | - |"
    echo "| validate ganesha CPU s/GiB / nfs-cat ganesha CPU s/GiB | $(ratio "$(srv validate)" "$(srv nfs_cat)") | - | - |"
    echo
    # The disk's speed changes between the steps of one round: every round's ratios.
    echo "Per round (validate MB/s / nfs-cat MB/s, / nfs-cp MB/s; elapsed s of validate, nfs-cat, nfs-cp, nfs-cat of the large files):"
    echo
    for ((r = 1; r <= REPEAT; r++)); do
      echo "- round $r: $(ratio "${R_EL[nfs_cat.$r]}" "${R_EL[validate.$r]}"), $(ratio "${R_EL[nfs_cp.$r]}" "${R_EL[validate.$r]}"); ${R_EL[validate.$r]}, ${R_EL[nfs_cat.$r]}, ${R_EL[nfs_cp.$r]}, ${R_EL[nfs_cat_large.$r]} s"
    done
  } | tee "$RESULTS"
  note "results in $RESULTS; logs in $LOGS"
  exit 0
fi

V_MBS=$(mbs "$(el validate)")
F_MBS=$(mbs "$(median FIO_IO fio)")
L_MBS=$(mbs "$(median FIO_LARGE fio)")
P_MBS=$(mbs "$(el pg_checksums)")
V_CPU=$(per_gib "$(cpu validate)")
P_CPU=$(per_gib "$(cpu pg_checksums)")
R_FIO=$(ratio "$V_MBS" "$F_MBS")
R_PG=$(ratio "$V_MBS" "$P_MBS")
{
  echo "## backup --validate --check-logical against fio and pg_checksums"
  echo
  header
  echo "- fio, every file: $FIO_DIRECT_FILES files with O_DIRECT (bssplit 1M/99:$FIO_STEP/1), $FIO_BUFFERED_FILES buffered (sizes not a multiple of 4 KiB), $FIO_EMPTY_FILES empty left out (nothing to read); $DATA_BYTES bytes read in every round"
  echo "- load before the run: $LOAD_BEFORE; after: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| Measurement | Elapsed s | MB/s | CPU s | CPU s/GiB | Peak RSS MiB |"
  echo "|---|---:|---:|---:|---:|---:|"
  echo "| stripeback backup --validate --check-logical | $(el validate) | $V_MBS | $(cpu validate) | $V_CPU | $(rss validate) |"
  [[ -z "$BIN_BEFORE" ]] || echo "| stripeback backup --validate --check-logical (before) | $(el validate_before) | $(mbs "$(el validate_before)") | $(cpu validate_before) | $(per_gib "$(cpu validate_before)") | $(rss validate_before) |"
  echo "| validate, the job's own elapsed time (--json elapsed_s: no process start, no plan) | $(median JOB_EL validate) | $(mbs "$(median JOB_EL validate)") | - | - | - |"
  [[ -z "$BIN_BEFORE" ]] || echo "| validate, the job's own elapsed time (before) | $(median JOB_EL validate_before) | $(mbs "$(median JOB_EL validate_before)") | - | - | - |"
  echo "| fio, every file: I/O time | $(median FIO_IO fio) | $F_MBS | - | - | - |"
  echo "| fio, every file: elapsed | $(el fio) | $(mbs "$(el fio)") | $(cpu fio) | $(per_gib "$(cpu fio)") | $(rss fio) |"
  echo "| fio, the files of 1 MiB or more only: I/O time scaled to the data set | $(median FIO_LARGE fio) | $L_MBS | - | - | - |"
  echo "| pg_checksums --check | $(el pg_checksums) | $P_MBS | $(cpu pg_checksums) | $P_CPU | $(rss pg_checksums) |"
  echo
  echo "| Ratio | Value | Target | Result |"
  echo "|---|---:|---|---|"
  echo "| validate MB/s / fio MB/s, every file (I/O time) | $R_FIO | >= 0.9 | $(verdict "$R_FIO" ">=" 0.9) |"
  [[ -z "$BIN_BEFORE" ]] || echo "| validate MB/s / fio MB/s, every file (I/O time), before | $(ratio "$(mbs "$(el validate_before)")" "$F_MBS") | - | - |"
  echo "| validate MB/s / fio MB/s, large files only (I/O time scaled) | $(ratio "$V_MBS" "$L_MBS") | - | - |"
  echo "| validate's job elapsed / fio's I/O time, every file, as rates (both without process start) | $(ratio "$(median FIO_IO fio)" "$(median JOB_EL validate)") | - | - |"
  echo "| validate MB/s / fio elapsed MB/s, every file (both with process start) | $(ratio "$(el fio)" "$(el validate)") | - | - |"
  echo "| validate MB/s / pg_checksums MB/s | $R_PG | >= 1.2 | $(verdict "$R_PG" ">=" 1.2) |"
  echo "| validate CPU s/GiB / pg_checksums CPU s/GiB | $(ratio "$V_CPU" "$P_CPU") | <= 1 | $(verdict "$(ratio "$V_CPU" "$P_CPU")" "<=" 1) |"
  echo "| validate CPU s/GiB | $V_CPU | <= 0.3 | $(verdict "$V_CPU" "<=" 0.3) |"
  echo
  # The disk's speed changes between the steps of one round: every round's figures.
  echo "Per round (the order of its steps; elapsed s: validate$([[ -z "$BIN_BEFORE" ]] || echo ', validate (before)'), fio every file I/O time, fio every file elapsed, fio large files I/O time scaled, pg_checksums; validate / fio every file (I/O time) as rates; the job's own time):"
  echo
  for ((r = 1; r <= REPEAT; r++)); do
    echo "- round $r (${ORDER[$r]}): ${R_EL[validate.$r]}$([[ -z "$BIN_BEFORE" ]] || echo ", ${R_EL[validate_before.$r]}"), ${FIO_IO[fio.$r]}, ${R_EL[fio.$r]}, ${FIO_LARGE[fio.$r]}, ${R_EL[pg_checksums.$r]} s; $(ratio "${FIO_IO[fio.$r]}" "${R_EL[validate.$r]}")$([[ -z "$BIN_BEFORE" ]] || echo " (before $(ratio "${FIO_IO[fio.$r]}" "${R_EL[validate_before.$r]}"))"); ${JOB_EL[validate.$r]} s"
  done
} | tee "$RESULTS"
note "results in $RESULTS; logs in $LOGS"
