#!/usr/bin/env bash
# s3_bench.sh: stripeback backup and restore to S3 side by side with rclone copy, s3cmd
# put/get and restic, all against one private Ceph RADOS Gateway on this machine
# (scripts/s3-server.sh), on the same incompressible data in two shapes: several files,
# and one file. For every step: throughput, the client's CPU per GiB and peak RSS (GNU
# time), and the gateway's CPU per GiB (radosgw, ceph-osd and ceph-mon, /proc/PID/stat).
#
# Run as root (dropping the page cache needs it). See --help and the "S3 object storage"
# section of docs/benchmarks.md.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

SIZE=2G
FILES=8
SHAPES=files,one
ROUNDS=3
CHANNELS=2
CHECKSUMS="md5 crc32c none"
RCLONE_FILES="4/4 8/8"
RCLONE_ONE="1/4 1/8"
TOOLS="stripeback rclone s3cmd restic"
PORT=22280
BLOCK_GIB=24
DIR=/var/tmp/stripeback-s3-bench
SEED=1
BIN=""
REBUILD=0
RESULTS=""
QUIET_TIMEOUT=10
VALIDATE=1

usage() {
  cat <<EOF
Usage: $(basename "$0") [options]

Starts a private S3 gateway (scripts/s3-server.sh on --port, a one-node Ceph cluster with
the RADOS Gateway; one already running on that port is used as it is and left running),
generates --size bytes of incompressible data in two shapes (reused while size and seed
stay the same):

  files   --files files of SIZE/FILES bytes each (default $FILES)
  one     one file of SIZE bytes

and for each shape, each of --rounds rounds, drops the page cache before every step and
measures, each tool writing to a bucket of its own that is deleted after its step:

  stripeback   backup DATA --to s3://BUCKET/data --channels N (--s3-checksum md5, the
               default), restore --to DIR, validate; then backups with each other
               --s3-checksums value (files shape only: what the integrity header costs)
  rclone       copy DATA remote:BUCKET/data and back, for each T/C of the sweep:
               --transfers T --s3-upload-concurrency C up, --transfers T
               --multi-thread-streams C down (rclone's defaults otherwise, 5 MiB chunks);
               the remote comes from RCLONE_CONFIG_* variables (provider Ceph, path style)
  s3cmd        put --recursive and get --recursive, with a config file the script writes
               (host_base/host_bucket the gateway, no HTTPS, signature v4)
  restic       backup DATA and restore latest to -r s3:http://127.0.0.1:PORT/BUCKET
               (repository made by restic init outside the timed region; restic's defaults:
               repository version 2, compression auto, always encrypted)

Every restore is checked byte for byte against the data set (sha256 of every file, and
the number of files); the script stops with VERIFY FAILED if one differs.

Timed region: "command; sync", after "sync; echo 3 > /proc/sys/vm/drop_caches" and a
wait for the gateway to finish deleting the previous step's objects. Reported per step,
each the median of the rounds: MB/s (data set bytes / elapsed, MB = 10^6 bytes), client
CPU s/GiB (user + sys of the command and its children, GNU time), peak RSS (GNU time's
maximum resident set size of the largest process), gateway CPU s/GiB (utime + stime of
radosgw, ceph-osd and ceph-mon over the step), and the CPU everything else used meanwhile.
The Markdown report goes to stdout and to --results; a TSV of the medians and one of every
round go next to it (.tsv, -rounds.tsv).

Options:
  --size SIZE        data per shape, e.g. 2G (default) or 256M for a quick run
  --files N          files in the "files" shape (default: $FILES)
  --shapes LIST      files, one or files,one (default)
  --rounds N         rounds; medians are reported (default: $ROUNDS)
  --channels N       stripeback --channels (default: $CHANNELS)
  --checksums LIST   --s3-checksum values measured for backup, first one restored
                     (default: "$CHECKSUMS"); the others on the files shape only
  --rclone-files "T/C .."  rclone sweep for the files shape (default: "$RCLONE_FILES")
  --rclone-one "T/C .."    rclone sweep for the one-file shape (default: "$RCLONE_ONE")
  --tools LIST       any of: stripeback rclone s3cmd restic (default: all)
  --no-validate      leave out the stripeback validate step
  --port PORT        the gateway's S3 port (default: $PORT; the tests use 22080)
  --block-gib N      size of the gateway's sparse BlueStore file (default: $BLOCK_GIB)
  --dir DIR          work directory (default: $DIR); needs about 4x SIZE free
  --seed N           data seed (default: $SEED)
  --bin PATH         stripeback binary (default: build/release/cli/stripeback, built if
                     missing)
  --rebuild          rebuild the default binary before measuring
  --quiet-timeout S  before each step wait up to S s for the machine to be quiet (other
                     CPU < 15%, disk < 20 MB/s); 0 disables (default: $QUIET_TIMEOUT)
  --results FILE     the report (default: DIR/s3-results-<time>.md)
  -h, --help         this text
EOF
}

die() { echo "s3_bench: error: $*" >&2; exit 1; }
note() { echo "s3_bench: $*" >&2; }

ORIG_ARGS="$*"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --size) SIZE=${2:?--size needs a value}; shift 2 ;;
    --files) FILES=${2:?--files needs a value}; shift 2 ;;
    --shapes) SHAPES=${2:?--shapes needs a value}; shift 2 ;;
    --rounds) ROUNDS=${2:?--rounds needs a value}; shift 2 ;;
    --channels) CHANNELS=${2:?--channels needs a value}; shift 2 ;;
    --checksums) CHECKSUMS=${2:?--checksums needs a value}; shift 2 ;;
    --rclone-files) RCLONE_FILES=${2:?--rclone-files needs a value}; shift 2 ;;
    --rclone-one) RCLONE_ONE=${2:?--rclone-one needs a value}; shift 2 ;;
    --tools) TOOLS=${2:?--tools needs a value}; shift 2 ;;
    --no-validate) VALIDATE=0; shift ;;
    --port) PORT=${2:?--port needs a value}; shift 2 ;;
    --block-gib) BLOCK_GIB=${2:?--block-gib needs a value}; shift 2 ;;
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --seed) SEED=${2:?--seed needs a value}; shift 2 ;;
    --bin) BIN=${2:?--bin needs a value}; shift 2 ;;
    --rebuild) REBUILD=1; shift ;;
    --quiet-timeout) QUIET_TIMEOUT=${2:?--quiet-timeout needs a value}; shift 2 ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done

[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer"
[[ "$FILES" =~ ^[1-9][0-9]*$ ]] || die "--files must be a positive integer"
[[ "$CHANNELS" =~ ^[1-9][0-9]*$ ]] || die "--channels must be a positive integer"
[[ "$SEED" =~ ^[0-9]+$ ]] || die "--seed must be a non-negative integer"
[[ "$QUIET_TIMEOUT" =~ ^[0-9]+$ ]] || die "--quiet-timeout must be a non-negative integer"
SIZE_BYTES=$(numfmt --from=iec "$SIZE" 2>/dev/null) || die "cannot parse --size '$SIZE' (use e.g. 256M, 1G, 2G)"
FILE_BYTES=$((SIZE_BYTES / FILES / 1048576 * 1048576))
((FILE_BYTES >= 1048576)) || die "--size / --files must be at least 1 MiB"
FILES_BYTES=$((FILE_BYTES * FILES))
for c in $CHECKSUMS; do
  [[ "$c" =~ ^(md5|crc32c|none)$ ]] || die "--checksums: '$c' is not md5, crc32c or none"
done
read -r -a CKS <<<"$CHECKSUMS"
((${#CKS[@]} > 0)) || die "--checksums names no value"
for spec in $RCLONE_FILES $RCLONE_ONE; do
  [[ "$spec" =~ ^[1-9][0-9]*/[1-9][0-9]*$ ]] || die "rclone sweep: '$spec' is not T/C (e.g. 4/4)"
done
declare -A WANT=()
for t in $TOOLS; do
  case "$t" in stripeback|rclone|s3cmd|restic) WANT[$t]=1 ;; *) die "--tools: unknown tool '$t'" ;; esac
done
IFS=, read -r -a SHAPE_LIST <<<"$SHAPES"
for s in "${SHAPE_LIST[@]}"; do [[ "$s" == files || "$s" == one ]] || die "--shapes: unknown shape '$s'"; done
((${#SHAPE_LIST[@]} > 0)) || die "--shapes names no shape"

# ---- tools ---------------------------------------------------------------------------
for t in awk sha256sum numfmt openssl curl; do
  command -v "$t" >/dev/null || die "'$t' is not installed"
done
INSTALL_HINT="scripts/install-deps.sh, or apt-get install rclone s3cmd restic"
for t in rclone s3cmd restic; do
  [[ -z "${WANT[$t]:-}" ]] || command -v "$t" >/dev/null || die "'$t' is not installed ($INSTALL_HINT)"
done
command -v rclone >/dev/null || die "rclone is needed to make and delete buckets ($INSTALL_HINT)"
GNU_TIME=/usr/bin/time
"$GNU_TIME" -f '%U' -o /dev/null true 2>/dev/null || die "GNU time is needed at /usr/bin/time (apt-get install time)"
tool_version() {
  case $1 in
    rclone) rclone version 2>/dev/null | head -n 1 ;;
    s3cmd) s3cmd --version 2>/dev/null | head -n 1 ;;
    restic) restic version 2>/dev/null | head -n 1 ;;
  esac
}

# shellcheck source=bench/bench_lib.sh
source "$SCRIPT_DIR/bench_lib.sh"
resolve_bin

# ---- work directory and data ---------------------------------------------------------
[[ -n "$DIR" && "$DIR" != "/" ]] || die "refusing to use '$DIR' as the work directory"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
OUT="$DIR/out"
LOGS="$DIR/logs"
rm -rf "$OUT" "$LOGS"
mkdir -p "$OUT" "$LOGS"
STAMP=$(date +%Y%m%d-%H%M%S)
[[ -n "$RESULTS" ]] || RESULTS="$DIR/s3-results-$STAMP.md"
TSV="${RESULTS%.md}.tsv"
ROUNDS_TSV="${RESULTS%.md}-rounds.tsv"

declare -A SHAPE_DIR=([files]="$DIR/data-files" [one]="$DIR/data-one")
declare -A SHAPE_WANT=([files]="files=$FILES file_size=$FILE_BYTES seed=$SEED"
                       [one]="files=1 file_size=$SIZE_BYTES seed=$SEED")
declare -A SHAPE_BYTES=([files]="$FILES_BYTES" [one]="$SIZE_BYTES")
declare -A SHAPE_NFILES=([files]="$FILES" [one]=1)
declare -A SHAPE_LABEL=([files]="$FILES x $(numfmt --to=iec "$FILE_BYTES")" [one]="1 x $(numfmt --to=iec "$SIZE_BYTES")")

# File i of a shape is the AES-128-CTR keystream of a key from the seed and the shape, at
# counter i * 2^64: incompressible, and no two files (or shapes) share bytes, so no tool
# can deduplicate across them.
data_key() { printf 'stripeback s3_bench data, shape %s, seed %s' "$1" "$SEED" | sha256sum | cut -c1-32; }
gen_shape() {  # gen_shape SHAPE
  local shape=$1 d=${SHAPE_DIR[$1]} n=${SHAPE_NFILES[$1]} len i f key
  key=$(data_key "$shape")
  len=$((SHAPE_BYTES[$shape] / n))
  rm -rf "${d:?}" "$d.sha256" "$d.stamp"
  mkdir -p "$d"
  for ((i = 0; i < n; i++)); do
    if [[ $shape == one ]]; then f=$d/one.bin; else f=$(printf '%s/part-%02d.bin' "$d" "$i"); fi
    head -c "$len" /dev/zero |
      openssl enc -aes-128-ctr -nosalt -K "$key" -iv "$(printf '%016x%016x' "$i" 0)" -out "$f" ||
      die "generating $f failed"
    [[ "$(stat -c %s "$f")" == "$len" ]] || die "generated $f has the wrong size"
  done
  (cd "$d" && sha256sum -- *.bin) >"$d.sha256"
  echo "${SHAPE_WANT[$shape]}" >"$d.stamp"
}
need=0
for s in "${SHAPE_LIST[@]}"; do
  d=${SHAPE_DIR[$s]}
  [[ -f "$d.stamp" && "$(cat "$d.stamp")" == "${SHAPE_WANT[$s]}" && -f "$d.sha256" ]] ||
    need=$((need + SHAPE_BYTES[$s]))
done
need=$((need + 2 * SIZE_BYTES))  # one restored copy at a time, plus slack
avail=$(df --output=avail -B1 "$DIR" | tail -1 | tr -d ' ')
((avail >= need)) || die "$(numfmt --to=iec "$avail") free in $DIR, need about $(numfmt --to=iec "$need")"
for s in "${SHAPE_LIST[@]}"; do
  d=${SHAPE_DIR[$s]}
  if [[ -f "$d.stamp" && "$(cat "$d.stamp")" == "${SHAPE_WANT[$s]}" && -f "$d.sha256" ]]; then
    note "reusing the $s data set in $d (${SHAPE_WANT[$s]})"
  else
    note "generating the $s data set in $d (${SHAPE_LABEL[$s]})"
    gen_shape "$s"
  fi
done

# ---- the gateway ---------------------------------------------------------------------
S3_SERVER="$REPO/scripts/s3-server.sh"
export SB_S3_PORT=$PORT SB_S3_BLOCK_GIB=$BLOCK_GIB
unset SB_S3_STATE
GW_STATE=/tmp/stripeback-s3-$PORT
STARTED_GW=0
cleanup() {
  if ((STARTED_GW)); then
    note "stopping the gateway on port $PORT"
    "$S3_SERVER" stop >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
if "$S3_SERVER" status >/dev/null 2>&1; then
  note "using the gateway already running on port $PORT (left running)"
else
  note "starting a gateway on port $PORT (BlueStore file ${BLOCK_GIB} GiB)"
  STARTED_GW=1
  "$S3_SERVER" start >/dev/null || die "the gateway did not start (logs: $GW_STATE/log)"
fi
set -a
eval "$("$S3_SERVER" url)"
set +a
unset AWS_CA_BUNDLE AWS_PROFILE  # rclone refuses to start with AWS_CA_BUNDLE set
ENDPOINT=$AWS_ENDPOINT_URL
GW_PIDS=()
for d in mon osd rgw; do
  pid=$(cat "$GW_STATE/run/$d.pid" 2>/dev/null) || die "no pid file for the gateway's $d"
  [[ -r /proc/$pid/stat ]] || die "the gateway's $d (pid $pid) is not running"
  GW_PIDS+=("$pid")
done
# CPU ticks (user + system, all threads) the gateway's daemons have used so far.
gateway_ticks() {
  local p t=0 a
  for p in "${GW_PIDS[@]}"; do
    read -r -a a <"/proc/$p/stat" || die "the gateway's process $p has gone"
    # Fields 14 and 15 (utime, stime); the command name (field 2) has no spaces here.
    t=$((t + a[13] + a[14]))
  done
  echo "$t"
}
SERVER_TICKS=gateway_ticks

# The peers' configurations. rclone: a remote "sbb" from the environment, no config file.
export RCLONE_CONFIG=/dev/null
export RCLONE_CONFIG_SBB_TYPE=s3 RCLONE_CONFIG_SBB_PROVIDER=Ceph
export RCLONE_CONFIG_SBB_ENDPOINT=$ENDPOINT RCLONE_CONFIG_SBB_FORCE_PATH_STYLE=true
export RCLONE_CONFIG_SBB_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID
export RCLONE_CONFIG_SBB_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
export RCLONE_CONFIG_SBB_REGION=$AWS_REGION
S3CMD_CONF=$DIR/s3cmd.conf
cat >"$S3CMD_CONF" <<EOF
[default]
access_key = $AWS_ACCESS_KEY_ID
secret_key = $AWS_SECRET_ACCESS_KEY
host_base = ${ENDPOINT#http://}
host_bucket = ${ENDPOINT#http://}
bucket_location = $AWS_REGION
use_https = False
signature_v2 = False
progress_meter = False
EOF
export RESTIC_PASSWORD=s3-bench-restic-password
export RESTIC_CACHE_DIR=$OUT/restic-cache

make_bucket() { rclone mkdir "sbb:$1" 2>>"$LOGS/buckets.err" || die "making bucket $1 failed (see $LOGS/buckets.err)"; }
# Deletes a bucket with everything in it, then waits until the gateway has collected the
# objects' data (its garbage collection runs 5 s after a delete) and is quiet again: the
# next step is charged for its own gateway work only.
drop_bucket() {
  rclone purge "sbb:$1" 2>>"$LOGS/buckets.err" || die "deleting bucket $1 failed (see $LOGS/buckets.err)"
  sleep 11
  local t0=$SECONDS a b
  while ((SECONDS - t0 < 40)); do
    a=$(gateway_ticks); sleep 1; b=$(gateway_ticks)
    (((b - a) * 100 / CLK_TCK < 5)) && return 0
  done
  note "  the gateway still busy 40 s after deleting $1; measuring anyway"
}

# ---- checks --------------------------------------------------------------------------
json_field() {  # json_field FILE NAME: first value of "NAME" in FILE
  grep -o "\"$2\":[^,}]*" "$1" | head -n 1 | cut -d: -f2- | tr -d '" '
}
# verify KEY ROOT: ROOT must hold exactly the shape's files, each with the data set's
# sha256; anything else stops the script.
verify() {
  local key=$1 root=$2 sums=${SHAPE_DIR[$SHAPE]}.sha256 n bad=""
  if [[ ! -d "$root" ]]; then
    bad="$root does not exist"
  else
    n=$(find "$root" -type f | wc -l)
    if [[ "$n" != "${SHAPE_NFILES[$SHAPE]}" ]]; then
      bad="$root holds $n files, the data set ${SHAPE_NFILES[$SHAPE]}"
    elif ! (cd "$root" && sha256sum --quiet --strict -c "$sums") >"$LOGS/$key.verify" 2>&1; then
      bad="contents differ: $(head -n 5 "$LOGS/$key.verify" | tr '\n' ' ')"
    fi
  fi
  if [[ -n "$bad" ]]; then
    echo "######################################################################" >&2
    echo "s3_bench: VERIFY FAILED ($key): $bad" >&2
    echo "######################################################################" >&2
    exit 1
  fi
  note "  $key: restored data verified (sha256 of every file)"
}
check_sb() {  # check_sb KEY ROUND: stripeback's --json says the job completed
  local log="$LOGS/$1.$2.out"
  [[ "$(json_field "$log" status)" == complete ]] || die "$1: stripeback did not complete (see $log)"
}

# ---- the steps -----------------------------------------------------------------------
declare -A SHAPE_OF DIRN TOOL_OF CONF_OF
KEYS=()
add_key() {  # add_key KEY SHAPE TOOL CONFIG DIRECTION
  [[ -n "${SHAPE_OF[$1]:-}" ]] && return 0
  KEYS+=("$1"); SHAPE_OF[$1]=$2; TOOL_OF[$1]=$3; CONF_OF[$1]=$4; DIRN[$1]=$5
}
bucket_name() { echo "s3b-$1-$SHAPE-r$ROUND" | tr '_/' '--'; }
fresh_restore() { rm -rf "${OUT:?}/restore" "${OUT:?}/catalog" "$RESTIC_CACHE_DIR"; }

step_stripeback() {
  local ck key b i=0
  for ck in "${CKS[@]}"; do
    ((i == 0)) || [[ $SHAPE == files ]] || continue
    b=$(bucket_name "sb-$ck")
    fresh_restore
    make_bucket "$b"
    key=${SHAPE}_sb_backup_$ck
    add_key "$key" "$SHAPE" stripeback "${CHANNELS}ch, --s3-checksum $ck" backup
    measure "$key" "$ROUND" "$BIN" backup "$DATA" --to "s3://$b/data" --catalog "$OUT/catalog" \
      --channels "$CHANNELS" --s3-checksum "$ck" --json
    check_sb "$key" "$ROUND"
    if ((i == 0)); then
      key=${SHAPE}_sb_restore
      add_key "$key" "$SHAPE" stripeback "${CHANNELS}ch" restore
      measure "$key" "$ROUND" "$BIN" restore --to "$OUT/restore" --catalog "$OUT/catalog" \
        --channels "$CHANNELS" --json
      check_sb "$key" "$ROUND"
      verify "$key.$ROUND" "$OUT/restore$DATA"
      rm -rf "${OUT:?}/restore"
      if ((VALIDATE)); then
        key=${SHAPE}_sb_validate
        add_key "$key" "$SHAPE" stripeback "${CHANNELS}ch" validate
        measure "$key" "$ROUND" "$BIN" validate --catalog "$OUT/catalog" --channels "$CHANNELS" --json
        check_sb "$key" "$ROUND"
      fi
    fi
    drop_bucket "$b"
    i=$((i + 1))
  done
}

step_rclone() {
  local spec t c key b sweep
  if [[ $SHAPE == files ]]; then sweep=$RCLONE_FILES; else sweep=$RCLONE_ONE; fi
  for spec in $sweep; do
    t=${spec%/*} c=${spec#*/}
    b=$(bucket_name "rc-$t-$c")
    fresh_restore
    make_bucket "$b"
    key=${SHAPE}_rclone_${t}_${c}_up
    add_key "$key" "$SHAPE" rclone "--transfers $t --s3-upload-concurrency $c" backup
    measure "$key" "$ROUND" rclone copy "$DATA" "sbb:$b/data" --transfers "$t" --s3-upload-concurrency "$c"
    key=${SHAPE}_rclone_${t}_${c}_down
    add_key "$key" "$SHAPE" rclone "--transfers $t --multi-thread-streams $c" restore
    measure "$key" "$ROUND" rclone copy "sbb:$b/data" "$OUT/restore" --transfers "$t" --multi-thread-streams "$c"
    verify "$key.$ROUND" "$OUT/restore"
    rm -rf "${OUT:?}/restore"
    drop_bucket "$b"
  done
}

step_s3cmd() {
  local key b
  b=$(bucket_name s3cmd)
  fresh_restore
  make_bucket "$b"
  key=${SHAPE}_s3cmd_put
  add_key "$key" "$SHAPE" s3cmd "put --recursive" backup
  measure "$key" "$ROUND" s3cmd -c "$S3CMD_CONF" put --recursive "$DATA/" "s3://$b/data/"
  key=${SHAPE}_s3cmd_get
  add_key "$key" "$SHAPE" s3cmd "get --recursive" restore
  mkdir -p "$OUT/restore"
  measure "$key" "$ROUND" s3cmd -c "$S3CMD_CONF" get --recursive "s3://$b/data/" "$OUT/restore/"
  verify "$key.$ROUND" "$OUT/restore"
  rm -rf "${OUT:?}/restore"
  drop_bucket "$b"
}

step_restic() {
  local key b repo
  b=$(bucket_name restic)
  repo="s3:$ENDPOINT/$b"
  fresh_restore
  make_bucket "$b"
  restic -r "$repo" init >"$LOGS/restic-init.out" 2>&1 || die "restic init failed (see $LOGS/restic-init.out)"
  key=${SHAPE}_restic_backup
  add_key "$key" "$SHAPE" restic "backup" backup
  measure "$key" "$ROUND" restic -r "$repo" backup "$DATA"
  key=${SHAPE}_restic_restore
  add_key "$key" "$SHAPE" restic "restore latest" restore
  measure "$key" "$ROUND" restic -r "$repo" restore latest --target "$OUT/restore"
  verify "$key.$ROUND" "$OUT/restore$DATA"
  rm -rf "${OUT:?}/restore"
  drop_bucket "$b"
}

note "stripeback: $BIN_VERSION ($BIN); gateway $ENDPOINT; $ROUNDS round(s); logs in $LOGS"
T_START=$(date -u '+%Y-%m-%d %H:%M UTC')
for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
  for SHAPE in "${SHAPE_LIST[@]}"; do
    DATA=${SHAPE_DIR[$SHAPE]}
    note "round $ROUND of $ROUNDS, shape $SHAPE (${SHAPE_LABEL[$SHAPE]})"
    [[ -z "${WANT[stripeback]:-}" ]] || step_stripeback
    [[ -z "${WANT[rclone]:-}" ]] || step_rclone
    [[ -z "${WANT[s3cmd]:-}" ]] || step_s3cmd
    [[ -z "${WANT[restic]:-}" ]] || step_restic
  done
done
rm -rf "${OUT:?}"
T_END=$(date -u '+%Y-%m-%d %H:%M UTC')

# ---- report --------------------------------------------------------------------------
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
per_round() {  # per_round KEY WHAT: one value per round
  local k=$1 what=$2 r b gib
  b=${SHAPE_BYTES[${SHAPE_OF[$k]}]}
  gib=$(awk -v b="$b" 'BEGIN {printf "%.9f", b / 1073741824}')
  for ((r = 1; r <= ROUNDS; r++)); do
    case $what in
      mbs) awk -v b="$b" -v e="${R_EL[$k.$r]}" 'BEGIN {printf "%.1f\n", b / e / 1e6}' ;;
      cpu) awk -v c="${R_CPU[$k.$r]}" -v g="$gib" 'BEGIN {printf "%.3f\n", c / g}' ;;
      rss) awk -v m="${R_RSS[$k.$r]}" 'BEGIN {printf "%.1f\n", m / 1024}' ;;
      gw) awk -v c="${R_SRV[$k.$r]}" -v g="$gib" 'BEGIN {printf "%.3f\n", c / g}' ;;
      other) awk -v o="${R_OTHER[$k.$r]}" -v s="${R_SRV[$k.$r]}" 'BEGIN {o -= s; printf "%.2f\n", (o < 0 ? 0 : o)}' ;;
    esac
  done
}
declare -A MED_MBS MED_CPU MED_RSS MED_GW MED_OTHER MIN_MBS MAX_MBS
for k in "${KEYS[@]}"; do
  MED_MBS[$k]=$(per_round "$k" mbs | median)
  MED_CPU[$k]=$(per_round "$k" cpu | median)
  MED_RSS[$k]=$(per_round "$k" rss | median)
  MED_GW[$k]=$(per_round "$k" gw | median)
  MED_OTHER[$k]=$(per_round "$k" other | median)
  MIN_MBS[$k]=$(per_round "$k" mbs | sort -g | head -n 1)
  MAX_MBS[$k]=$(per_round "$k" mbs | sort -g | tail -n 1)
done
f1() { awk -v v="$1" 'BEGIN {printf "%.1f", v}'; }
f2() { awk -v v="$1" 'BEGIN {printf "%.2f", v}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }

# rclone's best configuration per shape and direction (highest median MB/s).
declare -A BEST_RCLONE
for k in "${KEYS[@]}"; do
  [[ ${TOOL_OF[$k]} == rclone ]] || continue
  id=${SHAPE_OF[$k]}.${DIRN[$k]}
  if [[ -z "${BEST_RCLONE[$id]:-}" ]] ||
     awk -v a="${MED_MBS[$k]}" -v b="${MED_MBS[${BEST_RCLONE[$id]}]}" 'BEGIN {exit !(a > b)}'; then
    BEST_RCLONE[$id]=$k
  fi
done
find_key() {  # find_key SHAPE TOOL DIRECTION: the first such step
  local k
  for k in "${KEYS[@]}"; do
    [[ ${SHAPE_OF[$k]} == "$1" && ${TOOL_OF[$k]} == "$2" && ${DIRN[$k]} == "$3" ]] && { echo "$k"; return 0; }
  done
  return 1
}

{
  echo "# stripeback S3 benchmark"
  echo
  echo "- date: $T_START to $T_END"
  echo "- command: \`bench/s3_bench.sh $ORIG_ARGS\` (size $SIZE, files $FILES, shapes $SHAPES, rounds $ROUNDS, channels $CHANNELS, checksums $CHECKSUMS, rclone sweeps \"$RCLONE_FILES\" / \"$RCLONE_ONE\")"
  echo "- stripeback: $BIN_VERSION, $BIN (built $BIN_BUILT, sha256 $BIN_SHA); source tree: $TREE"
  echo "- peers: $(for t in rclone s3cmd restic; do [[ -z "${WANT[$t]:-}" ]] || tool_version "$t"; done | paste -sd ';' | sed 's/;/; /g')"
  echo "- gateway: scripts/s3-server.sh on $ENDPOINT: $(radosgw --version 2>/dev/null | awk '{print $1, $2, $3}'), one monitor, one OSD (BlueStore on a ${BLOCK_GIB} GiB sparse file on the work disk), radosgw (beast), all on this machine"
  echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) RAM, kernel $(uname -r)"
  for s in "${SHAPE_LIST[@]}"; do
    echo "- data, shape $s: ${SHAPE_LABEL[$s]} = ${SHAPE_BYTES[$s]} bytes of AES-128-CTR keystream (incompressible) in ${SHAPE_DIR[$s]}"
  done
  echo "- each figure the median of $ROUNDS round(s)$( ((CAN_DROP)) || echo '; page cache NOT dropped (not permitted)')$( ((QUIET_NOTES)) && echo "; $QUIET_NOTES step(s) started while the machine was busy")"
  echo "- timed region: \`command; sync\` after \`sync; echo 3 > /proc/sys/vm/drop_caches\`; MB = 10^6 bytes; client CPU = user + sys of the command and its children (GNU time); gateway CPU = utime + stime of radosgw, ceph-osd and ceph-mon over the step; other CPU = what the rest of the machine used meanwhile (s, not per GiB)"
  echo
  echo "| Shape | Tool | Configuration | Step | MB/s | MB/s min-max | vs rclone | Client CPU s/GiB | vs rclone | Peak RSS MiB | Gateway CPU s/GiB | Other CPU s |"
  echo "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  for k in "${KEYS[@]}"; do
    ref=${BEST_RCLONE[${SHAPE_OF[$k]}.${DIRN[$k]}]:-}
    vs=-; vc=-
    if [[ -n $ref ]]; then vs=$(ratio "${MED_MBS[$k]}" "${MED_MBS[$ref]}"); vc=$(ratio "${MED_CPU[$k]}" "${MED_CPU[$ref]}"); fi
    conf=${CONF_OF[$k]}
    [[ $k == "$ref" ]] && conf="$conf (best)"
    echo "| ${SHAPE_LABEL[${SHAPE_OF[$k]}]} | ${TOOL_OF[$k]} | $conf | ${DIRN[$k]} | $(f1 "${MED_MBS[$k]}") | $(f1 "${MIN_MBS[$k]}")-$(f1 "${MAX_MBS[$k]}") | $vs | $(f2 "${MED_CPU[$k]}") | $vc | $(f1 "${MED_RSS[$k]}") | $(f2 "${MED_GW[$k]}") | $(f1 "${MED_OTHER[$k]}") |"
  done
  echo
  echo "## Targets"
  echo
  echo "| Target | Value | Result |"
  echo "|---|---:|---|"
  verdict() { if [[ $1 == 1 ]]; then echo met; else echo "**missed**"; fi; }
  for s in "${SHAPE_LIST[@]}"; do
    for pair in backup:backup restore:restore; do
      d=${pair%%:*}
      sb=$(find_key "$s" stripeback "$d") || continue
      ref=${BEST_RCLONE[$s.$d]:-}
      [[ -n $ref ]] || continue
      r=$(ratio "${MED_MBS[$sb]}" "${MED_MBS[$ref]}")
      echo "| ${SHAPE_LABEL[$s]}: stripeback $d >= 1.5 x rclone's best ($(f1 "${MED_MBS[$ref]}") MB/s) | $r x | $(verdict "$(awk -v r="$r" 'BEGIN {print (r >= 1.5)}')") |"
      r=$(ratio "${MED_CPU[$sb]}" "${MED_CPU[$ref]}")
      echo "| ${SHAPE_LABEL[$s]}: stripeback $d client CPU/GiB <= rclone's ($(f2 "${MED_CPU[$ref]}")) | $(f2 "${MED_CPU[$sb]}") ($r x) | $(verdict "$(awk -v r="$r" 'BEGIN {print (r <= 1)}')") |"
    done
  done
  if sb=$(find_key one stripeback restore) && rs=$(find_key one restic restore); then
    r=$(ratio "${MED_MBS[$sb]}" "${MED_MBS[$rs]}")
    echo "| ${SHAPE_LABEL[one]}: stripeback restore >= 3 x restic's ($(f1 "${MED_MBS[$rs]}") MB/s) | $r x | $(verdict "$(awk -v r="$r" 'BEGIN {print (r >= 3)}')") |"
  fi
  echo
  echo "## All rounds"
  echo
  echo "| Step | Round | Elapsed s | of which sync s | MB/s | Client CPU s | Peak RSS MiB | Gateway CPU s | Other CPU s |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  for k in "${KEYS[@]}"; do
    for ((r = 1; r <= ROUNDS; r++)); do
      echo "| $k | $r | ${R_EL[$k.$r]} | ${R_SYNC[$k.$r]} | $(awk -v b="${SHAPE_BYTES[${SHAPE_OF[$k]}]}" -v e="${R_EL[$k.$r]}" 'BEGIN {printf "%.1f", b / e / 1e6}') | ${R_CPU[$k.$r]} | $(awk -v m="${R_RSS[$k.$r]}" 'BEGIN {printf "%.1f", m / 1024}') | ${R_SRV[$k.$r]} | ${R_OTHER[$k.$r]} |"
    done
  done
} | tee "$RESULTS"

{
  printf 'key\tshape\tbytes\ttool\tconfiguration\tstep\trounds\tmb_s\tmb_s_min\tmb_s_max\tclient_cpu_s_per_gib\tpeak_rss_mib\tgateway_cpu_s_per_gib\tother_cpu_s\trclone_best\n'
  for k in "${KEYS[@]}"; do
    best=0; [[ ${BEST_RCLONE[${SHAPE_OF[$k]}.${DIRN[$k]}]:-} == "$k" ]] && best=1
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$k" "${SHAPE_OF[$k]}" \
      "${SHAPE_BYTES[${SHAPE_OF[$k]}]}" "${TOOL_OF[$k]}" "${CONF_OF[$k]}" "${DIRN[$k]}" "$ROUNDS" \
      "${MED_MBS[$k]}" "${MIN_MBS[$k]}" "${MAX_MBS[$k]}" "${MED_CPU[$k]}" "${MED_RSS[$k]}" \
      "${MED_GW[$k]}" "${MED_OTHER[$k]}" "$best"
  done
} >"$TSV"
{
  printf 'key\tround\telapsed_s\tsync_s\tclient_cpu_s\tpeak_rss_kib\tgateway_cpu_s\tother_cpu_s\n'
  for k in "${KEYS[@]}"; do
    for ((r = 1; r <= ROUNDS; r++)); do
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$k" "$r" "${R_EL[$k.$r]}" "${R_SYNC[$k.$r]}" \
        "${R_CPU[$k.$r]}" "${R_RSS[$k.$r]}" "${R_SRV[$k.$r]}" "${R_OTHER[$k.$r]}"
    done
  done
} >"$ROUNDS_TSV"
note "results written to $RESULTS, $TSV and $ROUNDS_TSV"
