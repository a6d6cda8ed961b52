#!/usr/bin/env bash
# nfs_bench.sh: libnfs's own nfs-cp (one stream) next to stripeback reading from and writing
# to the same nfs-ganesha, with 1, 2 and 4 channels and 1, 2, 4 and 8 requests in flight.
# For every run: throughput, client CPU seconds per GiB (GNU time) and the server's CPU
# seconds per GiB (/proc/<ganesha pid>/stat). Run as root (ganesha needs it).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

SIZE=1G
FILES=4
BIN=""
WORK=/var/tmp/stripeback-nfs-bench
CHANNELS="1 2 4"
INFLIGHT="1 2 4 8"
STABLE=0
REPEAT=1

usage() {
  cat <<USAGE
Usage: $(basename "$0") [--size 1G] [--bin PATH] [--work DIR] [--channels "1 2 4"]
                       [--inflight "1 2 4 8"] [--stable] [--repeat N]

Starts a private nfs-ganesha (ports 22149/22150) exporting WORK/export, fills it with
FILES=$FILES files of SIZE/$FILES random bytes, then measures:
  nfs-cp read    each file to WORK/local (one stream), then sync --data of the copies
  disk ceiling   fio writing the same size to WORK/local (1 MiB O_DIRECT, 8 in flight,
                 fdatasync at the end): what the local disk takes durably, the bound of
                 both tools' reads
  nfs-cp write   each local file to the export (one stream, UNSTABLE writes, no COMMIT)
  nfs-cp write+sync  the same, then sync --data of the written files on the server side (the
                 durability a COMMIT gives; stripeback's writes end durable)
  sb read        stripeback backup of the export to local pieces (O_DIRECT, the default),
                 per channels x in-flight
  sb write       stripeback backup of the local copy to pieces on the export (UNSTABLE
                 writes + COMMIT with the verifier checked, the default)
WORK (default /var/tmp) holds the export and the local side; keep it on a disk file
system, not tmpfs: tmpfs pages count against the memory limit, and on the development
machines a tmpfs data set made the OOM killer pick ganesha. Stable writes then include the
disk's fsync cost, as they would on a filer. --stable adds "sb write-sync" rows with
--nfs-stable-writes (FILE_SYNC WRITEs). --repeat N runs each measurement N times and keeps the
fastest (the machine may be shared). Prints a table with ratios to nfs-cp.
USAGE
}

while (($#)); do
  case $1 in
    --size) SIZE=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --channels) CHANNELS=$2; shift 2 ;;
    --inflight) INFLIGHT=$2; shift 2 ;;
    --stable) STABLE=1; shift ;;
    --repeat) REPEAT=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "nfs_bench: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done

[[ -n $BIN ]] || for b in "$REPO/build/release/cli/stripeback" "$REPO/build/ci/cli/stripeback"; do
  [[ -x $b ]] && { BIN=$b; break; }
done
[[ -x $BIN ]] || { echo "nfs_bench: no stripeback binary (build it or pass --bin)" >&2; exit 2; }
command -v fio >/dev/null || { echo "nfs_bench: fio missing" >&2; exit 2; }
command -v nfs-cp >/dev/null || { echo "nfs_bench: nfs-cp missing (libnfs-utils)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "nfs_bench: GNU time missing" >&2; exit 2; }

# shellcheck source=bench/nfs_server_lib.sh
source "$SCRIPT_DIR/nfs_server_lib.sh"
cleanup() { nfs_server_stop; rm -rf "$WORK"; }
trap cleanup EXIT
rm -rf "$WORK"
mkdir -p "$WORK/local/src"
nfs_server_start "$WORK/server"
EXPORT=$NFS_EXPORT
Q=$NFS_Q
URL="nfs://127.0.0.1$EXPORT"
CLK_TCK=$(getconf CLK_TCK)

bytes=$(numfmt --from=iec "$SIZE")
per=$((bytes / FILES / 1048576 * 1048576))
total=$((per * FILES))
mkdir -p "$EXPORT/data"
for i in $(seq 0 $((FILES - 1))); do
  head -c "$per" /dev/urandom >"$WORK/local/src/f$i"
  cp "$WORK/local/src/f$i" "$EXPORT/data/f$i"  # new names only: ganesha has not seen them
done
sync

# run LABEL 'COMMAND': prints "LABEL wall_s client_cpu_s server_cpu_s", the fastest of
# REPEAT runs. COMMAND is expanded anew for each run; CLEAN (a command) runs after each but
# the last, to undo what the run made.
CLEAN=true
run() {
  local best="" line i
  for ((i = 1; i <= REPEAT; i++)); do
    line=$(run_once "$1" "$2") || exit 1
    ((i < REPEAT)) && eval "$CLEAN"
    if [[ -z $best ]] || awk -v a="$line" -v b="$best" 'BEGIN {split(a, x, " "); split(b, y, " "); exit !(x[length(x) - 2] < y[length(y) - 2])}'; then
      best=$line
    fi
  done
  echo "$best"
}
run_once() {
  local label=$1
  eval "set -- $2"
  local s0 t0 t1 s1 tf
  tf=$(mktemp)
  s0=$(nfs_server_ticks); t0=$(date +%s.%N)
  if ! /usr/bin/time -f "%U %S" -o "$tf" "$@" >/dev/null; then
    echo "nfs_bench: '$label' failed: $*" >&2
    tail -n 20 "$SB_NFS_STATE/ganesha.log" >&2 || true
    rm -f "$tf"
    exit 1
  fi
  t1=$(date +%s.%N); s1=$(nfs_server_ticks)
  awk -v l="$label" -v a="$t0" -v b="$t1" -v s0="$s0" -v s1="$s1" -v hz="$CLK_TCK" \
    '{printf "%s %.3f %.3f %.3f\n", l, b - a, $1 + $2, (s1 - s0) / hz}' "$tf"
  rm -f "$tf"
}

# The copies are synced as stripeback syncs its pieces: both reads end durable on disk.
nfscp_read() {
  for i in $(seq 0 $((FILES - 1))); do nfs-cp "$URL/data/f$i$Q" "$WORK/local/cp-f$i" >/dev/null; done
  sync --data "$WORK"/local/cp-f*
}
nfscp_write() { for i in $(seq 0 $((FILES - 1))); do nfs-cp "$WORK/local/src/f$i" "$URL/$CPW/f$i$Q" >/dev/null; done; }
# nfs-cp never sends COMMIT: this variant syncs its files on the server afterwards (what a
# COMMIT makes ganesha do), so the data ends durable as stripeback's does.
nfscp_write_sync() { nfscp_write; sync --data "$EXPORT/$CPW"/f*; }
export -f nfscp_read nfscp_write nfscp_write_sync
export URL Q WORK FILES EXPORT

RESULTS=$WORK/results
{
  CLEAN='rm -f "$WORK"/local/cp-f*'
  run "nfs-cp read" 'bash -c nfscp_read'
  rm -f "$WORK"/local/cp-f*
  # What the local disk takes durably (O_DIRECT, then fdatasync): the ceiling of every read
  # row, since both tools end with the data synced on this disk.
  CLEAN='rm -f "$WORK"/local/ceiling'
  run "disk ceiling read" 'fio --name=ceiling --filename="$WORK/local/ceiling" --rw=write --bs=1M \
    --size=$total --direct=1 --ioengine=io_uring --iodepth=8 --end_fsync=1 --output=/dev/null'
  rm -f "$WORK"/local/ceiling
  # Each repetition writes under a new directory name: names ganesha has seen are never
  # reused after a local removal.
  export CPW=cpw0
  mkdir -p "$EXPORT/$CPW"
  CLEAN='rm -rf "$EXPORT/$CPW"; CPW=cpw$RANDOM; mkdir -p "$EXPORT/$CPW"'
  run "nfs-cp write" 'bash -c nfscp_write'
  eval "$CLEAN"
  run "nfs-cp write+sync" 'bash -c nfscp_write_sync'
  rm -rf "$EXPORT"/cpw*
  for ch in $CHANNELS; do
    for q in $INFLIGHT; do
      CLEAN='rm -rf "$WORK/local/p-$ch-$q"'
      run "sb read ${ch}ch ${q}q" '"$BIN" backup "$URL/data$Q" --to "$WORK/local/p-$ch-$q" \
        --channels "$ch" --nfs-inflight "$q" --catalog "$WORK/local/cat-r-$ch-$q"'
      rm -rf "$WORK/local/p-$ch-$q"
      # Pieces go to a new directory each time (see above); the catalog keeps them apart.
      W=w-$ch-$q-0
      CLEAN='rm -rf "$EXPORT/$W"; W=w-$ch-$q-$RANDOM'
      run "sb write ${ch}ch ${q}q" '"$BIN" backup "$WORK/local/src" --to "$URL/$W$Q" \
        --channels "$ch" --nfs-inflight "$q" --catalog "$WORK/local/cat-w-$ch-$q"'
      if ((STABLE)); then
        W=s-$ch-$q-0
        CLEAN='rm -rf "$EXPORT/$W"; W=s-$ch-$q-$RANDOM'
        run "sb write-sync ${ch}ch ${q}q" '"$BIN" backup "$WORK/local/src" --to "$URL/$W$Q" \
          --channels "$ch" --nfs-inflight "$q" --catalog "$WORK/local/cat-s-$ch-$q" \
          --nfs-stable-writes'
        rm -rf "$EXPORT"/s-$ch-$q-*
      fi
      rm -rf "$EXPORT"/w-$ch-$q-*
    done
  done
} | tee "$RESULTS" >&2

echo
echo "data: $FILES files, $(numfmt --to=iec $total) per direction; stripeback: $("$BIN" --version)"
awk -v total="$total" '
  function label(n,   s, i) { s = $1; for (i = 2; i <= n; i++) s = s " " $i; return s }
  { n = NF - 3; l = label(n); wall[l] = $(NF-2); cli[l] = $(NF-1); srv[l] = $NF; order[++k] = l }
  END {
    gib = total / 1073741824
    printf "| run | MiB/s | x nfs-cp | client CPU s/GiB | x nfs-cp | server CPU s/GiB |\n"
    printf "|---|---:|---:|---:|---:|---:|\n"
    for (i = 1; i <= k; i++) {
      l = order[i]; dir = (l ~ /read/) ? "nfs-cp read" : "nfs-cp write"
      mibs = total / 1048576 / wall[l]; ref = total / 1048576 / wall[dir]
      printf "| %s | %.0f | %.2f | %.3f | %.2f | %.3f |\n", l, mibs, mibs / ref,
             cli[l] / gib, (cli[l] / gib) / (cli[dir] / gib), srv[l] / gib
    }
  }' "$RESULTS"
