#!/usr/bin/env bash
# compress_bench.sh: measures stripeback backup at every compression level, with and without
# encryption, side by side with the zstd compression ceiling, tar | zstd, borg and restic,
# and the AES-256-GCM cipher ceiling, on one data set that is half datafile-like pages and
# half incompressible bytes.
#
# Run as root (dropping the page cache and fstrim need it). See --help and the
# "Compression and encryption" section of docs/benchmarks.md.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

SIZE=2G
DIR=/var/tmp/stripeback-bench
SEED=1
BIN=""
RESULTS=""
REPEAT=1
CHANNELS=2
ZSTD_LEVELS="1 3 9"
SKIP=""
REBUILD=0
QUIET_TIMEOUT=120
RANDOM_FILES=4

usage() {
  cat <<EOF
Usage: $(basename "$0") [options]

Generates a data set (reused when one of the same size and seed is already there): half of
it datafile-like pages from 'stripeback demo-data --size SIZE/2', half incompressible
bytes in $RANDOM_FILES files (an AES-256-CTR keystream of zeros keyed by the seed, so the same seed
gives the same bytes). Then measures, dropping the page cache before each measurement and
writing every output to a directory on the same disk as the data set:

  zstd ceiling         zstd -T2 -N -c FILES | wc -c, for N in --zstd-levels (default
                       "$ZSTD_LEVELS"): compression alone, nothing written to disk
  tar | zstd           tar -cf - DATA | zstd -T2 -3 > OUT/data.tar.zst
  borg create          --compression lz4 and zstd,3 into a repository made with
                       'borg init --encryption=none', and zstd,3 into one made with
                       --encryption=repokey (BORG_PASSPHRASE from the environment, or a
                       fixed benchmark passphrase when it is not set)
  restic backup        into a repository made with 'restic init --repository-version 2'
                       (compression auto, the default; restic always encrypts;
                       RESTIC_PASSWORD from the environment or a fixed benchmark one)
  restic restore       restic restore latest of that backup, verified against the data set
  stripeback backup    --channels $CHANNELS at --compress none, low, medium, high and auto, each
                       without and with --encrypt --key-file (a key made once with
                       'stripeback keygen')
  stripeback restore   of the medium, encrypted backup, --channels $CHANNELS, verified byte for
                       byte against the data set (the script fails if they differ)
  openssl speed        openssl speed -evp aes-256-gcm -seconds 2: the cipher ceiling, one
                       core, the 16384-byte column

Repository and archive creation (borg init, restic init, keygen) is outside the timed
regions. Every timed region is "command; sync", so buffered writers are charged for
getting their data onto the disk. Outputs are removed, and the file system synced and
trimmed, outside the timed regions.

Reported per measurement: elapsed s, MB/s (data set bytes / elapsed, MB = 10^6 bytes), output
size (what the command wrote: the compressed stream, the repository, the pieces without
the catalog, the restored tree) and ratio (data set bytes / output bytes), CPU seconds per
GiB (user + sys of the command and its children, from GNU time) and peak RSS (GNU time's
maximum resident set size). Then the ratios the product targets are stated in:
stripeback medium against tar | zstd -3, borg zstd,3 and restic (throughput, CPU, output
size), the cost of encryption per level, auto against the best fixed level, and
stripeback restore against restic restore. A tool that is not installed gets a
"skipped" row. The Markdown report goes to stdout and to a results file.

Options:
  --size SIZE          data set size, e.g. 2G (default) or 256M for a quick run
  --dir DIR            work directory (default: $DIR); the data set goes to DIR/cdata,
                       outputs to DIR/c-out, logs to DIR/c-logs; needs about 3x SIZE free
  --seed N             data set seed (default: $SEED)
  --repeat N           measure everything N times, interleaved, and report the round with
                       the median elapsed time (the faster middle one for even N) plus the
                       min-max MB/s range; every round is listed too (default: 1)
  --channels N         stripeback --channels for every backup and the restore (default: $CHANNELS)
  --zstd-levels "N.."  zstd ceiling levels (default: "$ZSTD_LEVELS"; 3 is always measured,
                       the ratios need it)
  --skip "TOOL.."      leave out some reference tools: any of zstd tar borg restic openssl
                       (their rows say "skipped"); for quick runs
  --bin PATH           stripeback binary (default: build/release/cli/stripeback, built
                       with the release preset commands if missing)
  --rebuild            rebuild the default binary (incremental) before measuring
  --quiet-timeout S    before each measurement wait up to S seconds (default: $QUIET_TIMEOUT) for
                       the machine to be quiet (other CPU use < 15% and disk < 20 MB/s over
                       one second); 0 disables the wait. The CPU used by everything else
                       during each measurement is reported either way.
  --results FILE       where to write the results (default: DIR/compress-<time>.md)
  -h, --help           this text

Environment: BORG_PASSPHRASE and RESTIC_PASSWORD are used when set (never printed).
EOF
}

die() { echo "compress_bench: error: $*" >&2; exit 1; }
note() { echo "compress_bench: $*" >&2; }
usage_error() { echo "compress_bench: error: $*" >&2; exit 2; }

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
    --channels) CHANNELS=${2:?--channels needs a value}; shift 2 ;;
    --channels=*) CHANNELS=${1#*=}; shift ;;
    --zstd-levels) ZSTD_LEVELS=${2:?--zstd-levels needs a value}; shift 2 ;;
    --zstd-levels=*) ZSTD_LEVELS=${1#*=}; shift ;;
    --skip) SKIP=${2?--skip needs a value}; shift 2 ;;
    --skip=*) SKIP=${1#*=}; shift ;;
    --bin) BIN=${2:?--bin needs a value}; shift 2 ;;
    --bin=*) BIN=${1#*=}; shift ;;
    --rebuild) REBUILD=1; shift ;;
    --quiet-timeout) QUIET_TIMEOUT=${2:?--quiet-timeout needs a value}; shift 2 ;;
    --quiet-timeout=*) QUIET_TIMEOUT=${1#*=}; shift ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    --results=*) RESULTS=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; usage_error "unknown argument '$1'" ;;
  esac
done

[[ "$REPEAT" =~ ^[1-9][0-9]*$ ]] || usage_error "--repeat must be a positive integer"
[[ "$CHANNELS" =~ ^[1-9][0-9]*$ ]] || usage_error "--channels must be a positive integer"
[[ "$SEED" =~ ^[0-9]+$ ]] || usage_error "--seed must be a non-negative integer"
[[ "$QUIET_TIMEOUT" =~ ^[0-9]+$ ]] || usage_error "--quiet-timeout must be a non-negative integer"
for l in $ZSTD_LEVELS; do
  [[ "$l" =~ ^[1-9][0-9]*$ ]] && ((l <= 19)) || usage_error "--zstd-levels: '$l' is not a zstd level (1-19)"
done
# Level 3 is the reference of the ratios; keep the list sorted and without duplicates.
# shellcheck disable=SC2086 # the list is split on purpose
ZSTD_LEVELS=$(printf '%s\n' $ZSTD_LEVELS 3 | sort -n -u | tr '\n' ' ')
for t in $SKIP; do
  case "$t" in zstd|tar|borg|restic|openssl) ;; *) usage_error "--skip: unknown tool '$t' (zstd tar borg restic openssl)" ;; esac
done
SIZE_BYTES=$(numfmt --from=iec "$SIZE" 2>/dev/null) || usage_error "cannot parse --size '$SIZE' (use e.g. 256M, 1G, 2G)"
((SIZE_BYTES >= 32 * 1024 * 1024)) || usage_error "--size must be at least 32M"

# ---- tools ---------------------------------------------------------------------------
for t in sync awk cmp diff find numfmt fstrim openssl head du; do
  command -v "$t" >/dev/null || die "'$t' is not installed"
done
GNU_TIME=/usr/bin/time
"$GNU_TIME" -f '%U' -o /dev/null true 2>/dev/null || die "GNU time is needed at /usr/bin/time (apt-get install time)"

# Reference tools: a missing one gives "skipped" rows, not a failure.
declare -A TOOL_SKIP=()
INSTALL_HINT="apt-get install borgbackup restic zstd"
for t in zstd tar borg restic openssl; do
  if [[ " $SKIP " == *" $t "* ]]; then
    TOOL_SKIP[$t]="skipped: --skip $t"
  elif ! command -v "$t" >/dev/null; then
    TOOL_SKIP[$t]="skipped: $t not installed ($INSTALL_HINT)"
    note "${TOOL_SKIP[$t]}"
  fi
done
# tar | zstd needs both.
[[ -z "${TOOL_SKIP[tar]:-}" ]] && [[ -n "${TOOL_SKIP[zstd]:-}" ]] && TOOL_SKIP[tar]=${TOOL_SKIP[zstd]}
tool_version() {
  case "$1" in
    zstd) zstd --version 2>/dev/null | grep -o 'v[0-9.]*' | head -n 1 ;;
    tar) tar --version 2>/dev/null | head -n 1 | awk '{print $NF}' ;;
    borg) borg --version 2>/dev/null | awk '{print $2}' ;;
    restic) restic version 2>/dev/null | awk '{print $2}' ;;
    openssl) openssl version 2>/dev/null | awk '{print $2}' ;;
  esac
}
declare -A TOOL_VER=()
for t in zstd tar borg restic openssl; do
  [[ -n "${TOOL_SKIP[$t]:-}" ]] || TOOL_VER[$t]=$(tool_version "$t")
done

# ---- shared helpers (cache, trim, quiet, signals, measure, binary): bench/bench_lib.sh
# shellcheck source=bench/bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
resolve_bin

# ---- work directory and data set -----------------------------------------------------
[[ -n "$DIR" && "$DIR" != "/" ]] || die "refusing to use '$DIR' as the work directory"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
DATA="$DIR/cdata"
STAMP="$DIR/cdata.stamp"
OUT="$DIR/c-out"     # everything a measurement writes; emptied between measurements
LOGS="$DIR/c-logs"
KEY="$DIR/c-bench.key"
mkdir -p "$LOGS"
[[ -n "$RESULTS" ]] || RESULTS="$DIR/compress-$(date +%Y%m%d-%H%M%S).md"

clean_out() { rm -rf "${OUT:?}"; mkdir -p "$OUT"; }
clean_out

PAGES_MIB=$((SIZE_BYTES / 2 / 1048576))
RANDOM_BYTES=$((SIZE_BYTES - PAGES_MIB * 1048576))
WANT_STAMP="size=$SIZE_BYTES seed=$SEED pages=${PAGES_MIB}M random=$RANDOM_BYTES in $RANDOM_FILES files"
if [[ -d "$DATA" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT_STAMP" ]]; then
  note "reusing the data set in $DATA ($SIZE, seed $SEED)"
else
  rm -rf "${DATA:?}" "$STAMP"
  avail=$(df --output=avail -B1 "$DIR" | tail -1 | tr -d ' ')
  need=$((SIZE_BYTES * 3))
  ((avail >= need)) || die "$(numfmt --to=iec "$avail") free in $DIR, need about $(numfmt --to=iec "$need") (3x --size)"
  note "generating a $SIZE data set in $DATA (seed $SEED): ${PAGES_MIB}M of pages, $RANDOM_BYTES incompressible bytes"
  mkdir -p "$DATA/random"
  "$BIN" demo-data "$DATA/pages" --size "${PAGES_MIB}M" --seed "$SEED" >&2
  per=$((RANDOM_BYTES / RANDOM_FILES))
  for ((i = 1; i <= RANDOM_FILES; i++)); do
    n=$per
    ((i == RANDOM_FILES)) && n=$((RANDOM_BYTES - per * (RANDOM_FILES - 1)))
    # AES-256-CTR of zeros: incompressible, fast, and the same bytes for the same seed.
    head -c "$n" /dev/zero |
      openssl enc -aes-256-ctr -nosalt -pbkdf2 -iter 1 -pass "pass:compress-bench-seed-$SEED-file-$i" \
      >"$DATA/random/random-$i.bin" || die "cannot generate $DATA/random/random-$i.bin"
  done
  echo "$WANT_STAMP" >"$STAMP"
fi
avail=$(df --output=avail -B1 "$DIR" | tail -1 | tr -d ' ')
need=$((SIZE_BYTES * 2))
((avail >= need)) || die "$(numfmt --to=iec "$avail") free in $DIR, need about $(numfmt --to=iec "$need") besides the data set"

DATA_BYTES=$(find "$DATA" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f", s}')
DATA_FILES=$(find "$DATA" -type f | wc -l)
PAGES_BYTES=$(find "$DATA/pages" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f", s}')
((DATA_BYTES > 0)) || die "the data set in $DATA is empty"
GIB=$(awk -v b="$DATA_BYTES" 'BEGIN {printf "%.6f", b / 1073741824}')
MOUNT=$(df --output=target "$DIR" | tail -1)
mapfile -t DATA_LIST < <(find "$DATA" -type f | sort)

if [[ ! -f "$KEY" ]]; then
  "$BIN" keygen "$KEY" >&2 || die "stripeback keygen $KEY failed"
fi
export BORG_PASSPHRASE=${BORG_PASSPHRASE:-compress-bench-borg-passphrase}
export RESTIC_PASSWORD=${RESTIC_PASSWORD:-compress-bench-restic-password}
export BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK=yes
export BORG_RELOCATED_REPO_ACCESS_IS_OK=yes
export BORG_BASE_DIR="$OUT/borg-home"          # borg's cache and security dirs: per run
export RESTIC_CACHE_DIR="$OUT/restic-cache"    # restic's local cache: per run


# ---- measurement (measure(): bench/bench_lib.sh) -------------------------------------
declare -A R_OUT  # output bytes, keyed like R_EL
tree_bytes() {  # bytes in the regular files of a tree (or one file)
  find "$1" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}'
}
set_out() { R_OUT[$1.$2]=$3; note "  $1: output $3 bytes"; }

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
meta_list() {  # files: path, size, mode; directories and anything else: type, path
  (cd "$1" && find . \( -type f -printf 'f %p %s %m\n' \) -o -printf '%y %p\n' | sort)
}
verify_restore() {  # verify_restore KEY RESTORED_DATA_DIR
  local key=$1 got=$2 failed=0
  if [[ ! -d "$got" ]]; then
    echo "compress_bench: VERIFY FAILED ($key): $got does not exist" >&2
    exit 1
  fi
  diff -r "$DATA" "$got" >"$LOGS/$key.diff" 2>&1 || failed=1
  diff <(meta_list "$DATA") <(meta_list "$got") >>"$LOGS/$key.diff" 2>&1 || failed=1
  if ((failed)); then
    echo "######################################################################" >&2
    echo "compress_bench: VERIFY FAILED ($key): restored tree $got differs from $DATA" >&2
    head -n 40 "$LOGS/$key.diff" >&2
    echo "######################################################################" >&2
    exit 1
  fi
  note "  $key: restored tree verified identical (contents, sizes, modes)"
}

SB_LEVELS=(none low medium high auto)
KEYS=()
declare -A LABEL=() SKIPPED=()
for l in $ZSTD_LEVELS; do
  KEYS+=("zstd_$l"); LABEL[zstd_$l]="zstd -T2 -$l (ceiling, to /dev/null)"
  SKIPPED[zstd_$l]=${TOOL_SKIP[zstd]:-}
done
KEYS+=(tar_zstd borg_lz4 borg_zstd3 borg_zstd3_enc restic)
LABEL[tar_zstd]="tar -cf - \| zstd -T2 -3"; SKIPPED[tar_zstd]=${TOOL_SKIP[tar]:-}
LABEL[borg_lz4]="borg create, lz4"; SKIPPED[borg_lz4]=${TOOL_SKIP[borg]:-}
LABEL[borg_zstd3]="borg create, zstd,3"; SKIPPED[borg_zstd3]=${TOOL_SKIP[borg]:-}
LABEL[borg_zstd3_enc]="borg create, zstd,3, repokey (encrypted)"; SKIPPED[borg_zstd3_enc]=${TOOL_SKIP[borg]:-}
LABEL[restic]="restic backup (auto, encrypted)"; SKIPPED[restic]=${TOOL_SKIP[restic]:-}
for l in "${SB_LEVELS[@]}"; do
  KEYS+=("sb_$l" "sb_${l}_enc")
  LABEL[sb_$l]="stripeback backup, $l"
  LABEL[sb_${l}_enc]="stripeback backup, $l, encrypted"
done
KEYS+=(restic_restore sb_restore)
LABEL[restic_restore]="restic restore latest"; SKIPPED[restic_restore]=${TOOL_SKIP[restic]:-}
LABEL[sb_restore]="stripeback restore (medium, encrypted)"
skipped() { [[ -n "${SKIPPED[$1]:-}" ]]; }

sb_backup() {  # sb_backup KEY ROUND LEVEL [--encrypt ...]
  local key=$1 round=$2 level=$3
  shift 3
  measure "$key" "$round" "$BIN" backup "$DATA" --to "$OUT/pieces" --catalog "$OUT/catalog" \
    --channels "$CHANNELS" --compress "$level" --json "$@"
  check_backup "$key" "$round"
  set_out "$key" "$round" "$(tree_bytes "$OUT/pieces")"
}

declare -A SSL_MBS=()
SSL_LINE=""
note "data set: $DATA_FILES files, $DATA_BYTES bytes ($PAGES_BYTES of pages); $REPEAT round(s); logs in $LOGS"
for ((round = 1; round <= REPEAT; round++)); do
  note "round $round of $REPEAT"

  if [[ -z "${TOOL_SKIP[openssl]:-}" ]]; then
    drop_caches; wait_quiet
    openssl speed -evp aes-256-gcm -seconds 2 >"$LOGS/openssl.$round.out" 2>"$LOGS/openssl.$round.err" ||
      die "openssl speed failed (see $LOGS/openssl.$round.err)"
    # Values are in 1000s of bytes per second; the last column is 16384-byte blocks.
    SSL_LINE=$(grep -i '^AES-256-GCM' "$LOGS/openssl.$round.out" | tail -n 1)
    [[ -n "$SSL_LINE" ]] || die "no AES-256-GCM line in openssl speed output (see $LOGS/openssl.$round.out)"
    SSL_MBS[$round]=$(awk '{v = $NF; sub(/k$/, "", v); printf "%.0f", v / 1000}' <<<"$SSL_LINE")
    note "  openssl aes-256-gcm: ${SSL_MBS[$round]} MB/s per core (16 KiB blocks)"
  fi

  for l in $ZSTD_LEVELS; do
    skipped "zstd_$l" && continue
    clean_out; trim
    measure "zstd_$l" "$round" bash -o pipefail -c 'zstd -q -T2 "-$1" -c -- "${@:2}" | wc -c' _ "$l" "${DATA_LIST[@]}"
    set_out "zstd_$l" "$round" "$(tail -n 1 "$LOGS/zstd_$l.$round.out")"
  done

  if ! skipped tar_zstd; then
    clean_out; trim
    measure tar_zstd "$round" bash -o pipefail -c 'tar -cf - -C "$1" "$2" | zstd -q -T2 -3 >"$3"' \
      _ "$(dirname "$DATA")" "$(basename "$DATA")" "$OUT/data.tar.zst"
    set_out tar_zstd "$round" "$(tree_bytes "$OUT/data.tar.zst")"
  fi

  if ! skipped borg_lz4; then
    for b in "borg_lz4 none lz4" "borg_zstd3 none zstd,3" "borg_zstd3_enc repokey zstd,3"; do
      read -r key enc comp <<<"$b"
      clean_out; trim
      borg init --encryption="$enc" "$OUT/borg" >"$LOGS/$key.$round.init" 2>&1 ||
        die "borg init --encryption=$enc failed (see $LOGS/$key.$round.init)"
      measure "$key" "$round" borg create --compression "$comp" "$OUT/borg::bench" "$DATA"
      set_out "$key" "$round" "$(tree_bytes "$OUT/borg")"
    done
  fi

  if ! skipped restic; then
    clean_out; trim
    restic init --repository-version 2 -r "$OUT/restic" >"$LOGS/restic.$round.init" 2>&1 ||
      die "restic init failed (see $LOGS/restic.$round.init)"
    measure restic "$round" restic -r "$OUT/restic" backup --quiet "$DATA"
    set_out restic "$round" "$(tree_bytes "$OUT/restic")"
    rm -rf "${OUT:?}/restic-restore"; trim
    measure restic_restore "$round" restic -r "$OUT/restic" restore latest --target "$OUT/restic-restore"
    set_out restic_restore "$round" "$(tree_bytes "$OUT/restic-restore$DATA")"
    verify_restore "restic_restore.$round" "$OUT/restic-restore$DATA"
  fi

  for l in "${SB_LEVELS[@]}"; do
    clean_out; trim
    sb_backup "sb_$l" "$round" "$l"
    clean_out; trim
    sb_backup "sb_${l}_enc" "$round" "$l" --encrypt --key-file "$KEY"
    if [[ "$l" == medium ]]; then
      backup_id=$(json_field "$LOGS/sb_medium_enc.$round.out" backup_id)
      rm -rf "${OUT:?}/restore"; trim
      measure sb_restore "$round" "$BIN" restore --to "$OUT/restore" --catalog "$OUT/catalog" \
        --channels "$CHANNELS" --json --backup "$backup_id" --key-file "$KEY"
      [[ "$(json_field "$LOGS/sb_restore.$round.out" status)" == complete ]] ||
        die "stripeback restore did not complete (see $LOGS/sb_restore.$round.out)"
      set_out sb_restore "$round" "$(tree_bytes "$OUT/restore$DATA")"
      verify_restore "sb_restore.$round" "$OUT/restore$DATA"
    fi
  done
  clean_out
done
trim

# ---- report --------------------------------------------------------------------------
# The round with the median elapsed time stands for each measurement.
declare -A PICK=() MBS_MIN=() MBS_MAX=()
for k in "${KEYS[@]}"; do
  skipped "$k" && continue
  PICK[$k]=$(for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[$k.$r]} $r"; done |
               sort -g | awk -v n="$REPEAT" 'NR == int((n + 1) / 2) {print $2}')
  read -r "MBS_MIN[$k]" "MBS_MAX[$k]" < <(for ((r = 1; r <= REPEAT; r++)); do echo "${R_EL[$k.$r]}"; done |
    awk -v b="$DATA_BYTES" '{v = b / $1 / 1e6; if (NR == 1 || v < lo) lo = v; if (NR == 1 || v > hi) hi = v}
                            END {printf "%.0f %.0f\n", lo, hi}')
done
have() { [[ -n "${PICK[$1]:-}" ]]; }
el() { echo "${R_EL[$1.${PICK[$1]}]}"; }
mbs() { have "$1" && awk -v b="$DATA_BYTES" -v e="$(el "$1")" 'BEGIN {printf "%.1f", b / e / 1e6}' || echo ""; }
cpu_gib() { have "$1" && awk -v c="${R_CPU[$1.${PICK[$1]}]}" -v g="$GIB" 'BEGIN {printf "%.2f", c / g}' || echo ""; }
rss_mib() { awk -v k="${R_RSS[$1.${PICK[$1]}]}" 'BEGIN {printf "%.1f", k / 1024}'; }
out_b() { have "$1" && echo "${R_OUT[$1.${PICK[$1]}]}" || echo ""; }
out_mb() { awk -v b="$(out_b "$1")" 'BEGIN {printf "%.1f", b / 1e6}'; }
comp_ratio() { awk -v a="$DATA_BYTES" -v b="$(out_b "$1")" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a != "" && b != "" && b > 0) printf "%.2f", a / b; else print "n/a"}'; }
verdict() {  # verdict A OP B: met / missed / n/a
  awk -v a="$1" -v b="$3" -v op="$2" 'BEGIN {
    if (a == "" || b == "" || a == "n/a" || b == "n/a") { print "n/a"; exit }
    ok = (op == ">=") ? (a + 0 >= b + 0) : (a + 0 <= b + 0)
    print (ok ? "met" : "**missed**") }'
}
SSL_PICK=""
if ((${#SSL_MBS[@]})); then
  SSL_PICK=$(for ((r = 1; r <= REPEAT; r++)); do echo "${SSL_MBS[$r]}"; done | sort -g |
             awk -v n="$REPEAT" 'NR == int((n + 1) / 2) {print}')
fi

{
  echo "# stripeback compression and encryption benchmark"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "- command: \`bench/compress_bench.sh $ORIG_ARGS\` (size $SIZE, dir $DIR, seed $SEED, repeat $REPEAT, channels $CHANNELS)"
  echo "- stripeback: $BIN_VERSION, $BIN (built $BIN_BUILT, sha256 $BIN_SHA); source tree when the run started: $TREE"
  tools=""
  for t in zstd tar borg restic openssl; do
    tools+="$t ${TOOL_VER[$t]:-(${TOOL_SKIP[$t]})}, "
  done
  echo "- tools: ${tools%, }"
  echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) RAM, kernel $(uname -r); load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- disk: $(df --output=source "$DIR" | tail -1), $(findmnt -no FSTYPE,OPTIONS "$MOUNT") on $MOUNT"
  echo "- data set: $DATA_FILES files, $DATA_BYTES bytes ($(numfmt --to=iec "$DATA_BYTES")): $PAGES_BYTES bytes from \`stripeback demo-data --size ${PAGES_MIB}M --seed $SEED\` and $RANDOM_BYTES incompressible bytes in $RANDOM_FILES files"
  echo "- rounds: $REPEAT (the round with the median elapsed time is shown)$( ((CAN_DROP)) || echo '; page cache NOT dropped (not permitted)')$( ((CAN_TRIM)) || echo '; fstrim not available')"
  echo "- Other CPU s: CPU time the whole machine used during the timed region for everything but the measured command$( ((QUIET_NOTES)) && echo "; $QUIET_NOTES measurement(s) started while the machine was busy")"
  echo "- timed region: \`command; sync\` after \`sync; echo 3 > /proc/sys/vm/drop_caches\`; MB/s = data set bytes / elapsed, MB = 10^6 bytes; ratio = data set bytes / output bytes; CPU = user + sys of the command and its children (GNU time)"
  echo
  if ((REPEAT > 1)); then
    echo "| Measurement | Elapsed s | of which sync s | MB/s | MB/s min-max | Output MB | Ratio | CPU s/GiB | Peak RSS MiB | Other CPU s |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  else
    echo "| Measurement | Elapsed s | of which sync s | MB/s | Output MB | Ratio | CPU s/GiB | Peak RSS MiB | Other CPU s |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  fi
  skip_row() {  # skip_row LABEL REASON: the reason, then empty cells
    local cells=$(( REPEAT > 1 ? 8 : 7 )) row="| $1 | $2 |"
    for ((i = 0; i < cells; i++)); do row+=" |"; done
    echo "$row"
  }
  range_col() { ((REPEAT > 1)) && echo " $1 |" || true; }
  if [[ -n "$SSL_PICK" ]]; then
    echo "| openssl speed -evp aes-256-gcm, 16 KiB blocks (cipher ceiling, 1 core) | - | - | $SSL_PICK |$(range_col -) - | - | $(awk -v m="$SSL_PICK" 'BEGIN {printf "%.2f", 1073.741824 / m}') | - | - |"
  else
    skip_row "openssl speed -evp aes-256-gcm" "${TOOL_SKIP[openssl]}"
  fi
  for k in "${KEYS[@]}"; do
    if skipped "$k"; then
      skip_row "${LABEL[$k]}" "${SKIPPED[$k]}"
      continue
    fi
    rc="n/a"
    [[ "$k" == *restore ]] && rc="-" || rc=$(comp_ratio "$k")
    echo "| ${LABEL[$k]} | $(el "$k") | ${R_SYNC[$k.${PICK[$k]}]} | $(mbs "$k") |$(range_col "${MBS_MIN[$k]}-${MBS_MAX[$k]}") $(out_mb "$k") | $rc | $(cpu_gib "$k") | $(rss_mib "$k") | ${R_OTHER[$k.${PICK[$k]}]} |"
  done
  echo
  echo "## Ratios and targets"
  echo
  echo "| Comparison | Value | Target | Result |"
  echo "|---|---:|---|---|"
  M=$(mbs sb_medium); MC=$(cpu_gib sb_medium); MO=$(out_b sb_medium)
  for ref in tar_zstd borg_zstd3 restic; do
    if ! have "$ref"; then
      echo "| stripeback medium vs ${LABEL[$ref]} | ${SKIPPED[$ref]} | | n/a |"
      continue
    fi
    t=$(ratio "$M" "$(mbs "$ref")"); c=$(ratio "$MC" "$(cpu_gib "$ref")")
    echo "| stripeback medium vs ${LABEL[$ref]}: throughput | $t x | >= 2 x | $(verdict "$t" ">=" 2) |"
    echo "| stripeback medium vs ${LABEL[$ref]}: CPU s/GiB | $c x | <= 0.6 x | $(verdict "$c" "<=" 0.6) |"
    echo "| stripeback medium vs ${LABEL[$ref]}: output size | $(ratio "$MO" "$(out_b "$ref")") x | for information | - |"
  done
  for pair in "sb_medium_enc borg_zstd3_enc" "sb_medium_enc restic"; do
    read -r a b <<<"$pair"
    have "$b" || continue
    echo "| ${LABEL[$a]} vs ${LABEL[$b]}: throughput / CPU s/GiB | $(ratio "$(mbs "$a")" "$(mbs "$b")") x / $(ratio "$(cpu_gib "$a")" "$(cpu_gib "$b")") x | for information | - |"
  done
  if have zstd_3; then
    o=$(ratio "$MO" "$(out_b zstd_3)")
    echo "| stripeback medium output vs zstd -3 output | $o x | <= 1 x | $(verdict "$o" "<=" 1) |"
  fi
  for l in "${SB_LEVELS[@]}"; do
    cost=$(awk -v p="$(mbs "sb_$l")" -v e="$(mbs "sb_${l}_enc")" 'BEGIN {printf "%.1f", (1 - e / p) * 100}')
    echo "| encryption cost, $l: 1 - encrypted / plain MB/s | $cost % | <= 10 % | $(verdict "$cost" "<=" 10) |"
  done
  for suffix in "" _enc; do
    best=""; best_mbs=0
    for l in none low medium high; do
      m=$(mbs "sb_$l$suffix")
      if awk -v a="$m" -v b="$best_mbs" 'BEGIN {exit !(a > b)}'; then best=$l; best_mbs=$m; fi
    done
    a=$(ratio "$(mbs "sb_auto$suffix")" "$best_mbs")
    echo "| auto$( [[ -n "$suffix" ]] && echo ', encrypted') vs best fixed level ($best, $best_mbs MB/s): throughput | $a x | >= 0.9 x | $(verdict "$a" ">=" 0.9) |"
    if [[ "$best" == none ]]; then  # auto always compresses: compare with compressing levels too
      best=""; best_mbs=0
      for l in low medium high; do
        m=$(mbs "sb_$l$suffix")
        if awk -v a="$m" -v b="$best_mbs" 'BEGIN {exit !(a > b)}'; then best=$l; best_mbs=$m; fi
      done
      a=$(ratio "$(mbs "sb_auto$suffix")" "$best_mbs")
      echo "| auto$( [[ -n "$suffix" ]] && echo ', encrypted') vs best compressing level ($best, $best_mbs MB/s): throughput | $a x | for information | - |"
    fi
  done
  if have restic_restore; then
    r=$(ratio "$(mbs sb_restore)" "$(mbs restic_restore)")
    echo "| ${LABEL[sb_restore]} vs restic restore: throughput | $r x | >= 2 x | $(verdict "$r" ">=" 2) |"
    echo "| ${LABEL[sb_restore]} vs restic restore: CPU s/GiB | $(ratio "$(cpu_gib sb_restore)" "$(cpu_gib restic_restore)") x | for information | - |"
  else
    echo "| ${LABEL[sb_restore]} vs restic restore | ${SKIPPED[restic_restore]} | | n/a |"
  fi
  echo
  echo "## All rounds"
  echo
  echo "| Measurement | Round | Elapsed s | of which sync s | MB/s | Output bytes | CPU s | Peak RSS MiB | Other CPU s |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  for k in "${KEYS[@]}"; do
    skipped "$k" && continue
    for ((r = 1; r <= REPEAT; r++)); do
      echo "| ${LABEL[$k]} | $r | ${R_EL[$k.$r]} | ${R_SYNC[$k.$r]} | $(awk -v b="$DATA_BYTES" -v e="${R_EL[$k.$r]}" 'BEGIN {printf "%.1f", b / e / 1e6}') | ${R_OUT[$k.$r]} | ${R_CPU[$k.$r]} | $(awk -v k="${R_RSS[$k.$r]}" 'BEGIN {printf "%.1f", k / 1024}') | ${R_OTHER[$k.$r]} |"
    done
  done
  if [[ -n "$SSL_LINE" ]]; then
    echo
    echo "openssl speed -evp aes-256-gcm -seconds 2, last round (1000s of bytes per second):"
    echo
    echo '```'
    grep -i -e '^type' "$LOGS/openssl.$REPEAT.out" | tail -n 1
    echo "$SSL_LINE"
    echo '```'
  fi
  echo
  echo "## zstd levels stripeback auto used (raw bytes per level, per channel; every round)"
  echo
  for k in sb_auto sb_auto_enc; do
    for ((r = 1; r <= REPEAT; r++)); do
      echo "- ${LABEL[$k]}, round $r: $(grep -o '"compress_levels":{[^}]*}' "$LOGS/$k.$r.out" | cut -d: -f2- | tr '\n' ' ')"
    done
  done
  echo
  echo "## stripeback JSON summaries (shown rounds)"
  echo
  for k in sb_medium sb_medium_enc sb_auto sb_auto_enc sb_restore; do
    echo "${LABEL[$k]}:"
    echo
    echo '```json'
    cat "$LOGS/$k.${PICK[$k]}.out"
    echo '```'
    echo
  done
} | tee "$RESULTS"

note "results written to $RESULTS"
