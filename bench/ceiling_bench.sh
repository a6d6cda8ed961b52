#!/usr/bin/env bash
# ceiling_bench.sh: the engine's own ceiling, in GiB/s per core. Backup, restore and validate
# from and to memory (tmpfs), uncompressed, incompressible data, through the C API
# (bench/ceiling.c), with the CPU seconds of each job: the figure an appliance maker scales
# from, since no disk or network bounds it. See --help.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

DIR=/var/tmp/stripeback-ceiling
SIZE_MIB=2048
FILES=8
CHANNELS=2
ROUNDS=3
BUILD="$REPO/build/release"
RESULTS=""

usage() {
  cat <<EOF
Usage: $(basename "$0") [options]

Builds BUILD (the release preset) and installs it into DIR/prefix, compiles
bench/ceiling.c against it, mounts a tmpfs on DIR/mem and writes SIZE MiB of random bytes
there in FILES files. Each round, with CHANNELS channels and direct I/O off:

  discard   backup of the tmpfs files to a storage of the benchmark's own whose writes are
            dropped (discard://): the engine's work alone
  backup    the same backup into a tmpfs directory (adds the kernel's copy into memory)
  restore   that backup restored into a tmpfs directory
  validate  that backup read and checked, nothing written

Reported: medians of ROUNDS of GiB/s (wall) and GiB per CPU second (user + sys of the
process: GiB/s per core). Target: at least 4 GiB/s per core uncompressed.

Options:
  --dir DIR          work directory (default $DIR)
  --size MIB         data set (default $SIZE_MIB)
  --files N          files in the data set (default $FILES)
  --channels N       channels (default $CHANNELS)
  --rounds N         rounds (default $ROUNDS)
  --build DIR        build directory to install from (default $BUILD)
  --results FILE     also write the results to FILE (default DIR/results-<time>.md)
  -h, --help         this text
EOF
}
note() { echo "ceiling_bench: $*" >&2; }
die() { echo "ceiling_bench: $*" >&2; exit 1; }

while (($#)); do
  case "$1" in
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --size) SIZE_MIB=${2:?--size needs a value}; shift 2 ;;
    --files) FILES=${2:?--files needs a value}; shift 2 ;;
    --channels) CHANNELS=${2:?--channels needs a value}; shift 2 ;;
    --rounds) ROUNDS=${2:?--rounds needs a value}; shift 2 ;;
    --build) BUILD=${2:?--build needs a value}; shift 2 ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
for v in SIZE_MIB FILES CHANNELS ROUNDS; do
  [[ "${!v}" =~ ^[0-9]+$ && "${!v}" -ge 1 ]] || die "${v} must be a positive number (see --help)"
done
[[ $(id -u) -eq 0 ]] || die "run as root (a tmpfs is mounted)"
[[ -n "$DIR" && "$DIR" != "/" ]] || die "refusing to use '$DIR' as the work directory"

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
MEM="$DIR/mem"
cleanup() { if mountpoint -q "$MEM" 2>/dev/null; then umount "$MEM" || true; fi; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

note "building and installing $BUILD"
(cd "$REPO" && cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRIPEBACK_TESTS=OFF \
   -DSTRIPEBACK_BENCH=OFF >/dev/null && cmake --build "$BUILD" -j2 >/dev/null) || die "build failed"
rm -rf "$DIR/prefix"
cmake --install "$BUILD" --prefix "$DIR/prefix" >/dev/null || die "install failed"
export PKG_CONFIG_PATH=$DIR/prefix/lib/pkgconfig
cc -O2 "$SCRIPT_DIR/ceiling.c" -o "$DIR/ceiling" $(pkg-config --cflags stripeback) \
  -L"$DIR/prefix/lib" -Wl,-rpath,"$DIR/prefix/lib" -lstripeback || die "bench/ceiling.c did not compile"
TREE="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"

cleanup
mkdir -p "$MEM"
mount -t tmpfs -o size="$((SIZE_MIB * 3 + 1024))m" stripeback-ceiling "$MEM"
mkdir -p "$MEM/data"
per=$((SIZE_MIB / FILES))
for ((i = 1; i <= FILES; i++)); do
  head -c "$((per * 1024 * 1024))" /dev/urandom >"$MEM/data/f$i"
done
BYTES=$(cat "$MEM"/data/* | wc -c)

declare -A GBS PERCORE
step() {  # key round args...
  local key=$1 round=$2 line bytes wall user sys
  shift 2
  line=$("$DIR/ceiling" "$@") || die "$key failed: $line"
  read -r _ _ bytes wall user sys <<<"$(echo "$line" | tr '=' ' ' | awk '{print $1, $2, $4, $6, $8, $10}')"
  GBS[$key.$round]=$(awk -v b="$bytes" -v w="$wall" 'BEGIN {printf "%.2f", b / 1073741824 / w}')
  PERCORE[$key.$round]=$(awk -v b="$bytes" -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", b / 1073741824 / (u + s)}')
  note "  round $round $key: $(awk -v b="$bytes" 'BEGIN {printf "%.2f", b / 1073741824}') GiB in $wall s, cpu user $user + sys $sys s: ${GBS[$key.$round]} GiB/s, ${PERCORE[$key.$round]} GiB/s per core"
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
med() {  # array key
  local -n arr=$1
  local r vals=()
  for ((r = 1; r <= ROUNDS; r++)); do vals+=("${arr[$2.$r]}"); done
  median "${vals[@]}"
}

note "$((BYTES / 1048576)) MiB in $FILES files in memory, $CHANNELS channels, $ROUNDS rounds"
for ((r = 1; r <= ROUNDS; r++)); do
  rm -rf "$MEM/pieces" "$MEM/restore" "$DIR/cat-discard" "$DIR/cat"
  step discard "$r" discard "$MEM/data" "$DIR/cat-discard" "$CHANNELS"
  step backup "$r" backup "$MEM/data" "$MEM/pieces" "$DIR/cat" "$CHANNELS"
  step restore "$r" restore "$MEM/restore" "$DIR/cat" "$CHANNELS"
  cmp -s "$MEM/data/f1" "$MEM/restore$MEM/data/f1" || die "the restored f1 differs from the source"
  step validate "$r" validate "$DIR/cat" "$CHANNELS"
done
[[ -n "$RESULTS" ]] || RESULTS="$DIR/results-$(date +%Y%m%d-%H%M%S).md"
{
  echo "# The engine's own ceiling, $(date -u '+%Y-%m-%d %H:%M UTC') (tree $TREE)"
  echo
  echo "$((BYTES / 1048576)) MiB of random bytes in $FILES files in a tmpfs, $CHANNELS channels, uncompressed, direct I/O off; medians of $ROUNDS rounds"
  echo
  echo "| job | GiB/s | GiB/s per core (GiB per CPU second) |"
  echo "|---|---|---|"
  for k in discard backup restore validate; do
    echo "| $k | $(med GBS "$k") | $(med PERCORE "$k") |"
  done
  echo
  echo "Command: \`bash bench/ceiling_bench.sh --size $SIZE_MIB --files $FILES --channels $CHANNELS --rounds $ROUNDS\`"
} | tee "$RESULTS"
