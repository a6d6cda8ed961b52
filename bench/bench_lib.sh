# Helpers shared by the benchmark scripts: the stripeback binary to measure, page cache and
# trim control, waiting for a quiet machine, CPU and disk activity counters, measure(), the
# fio copy ceiling, and a signal trap that stops the measured command. Source it after defining note(), die(),
# REPO and QUIET_TIMEOUT (DIR, MOUNT, OUT and LOGS are read only when a helper runs); it
# sets CHILD to the GNU time process of the measurement in progress.
# shellcheck shell=bash

# ---- cache and trim helpers ----------------------------------------------------------
CAN_DROP=1
CAN_TRIM=1
drop_caches() {
  sync
  if [[ "$CAN_DROP" == 1 ]] && ! (echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then
    CAN_DROP=0
    note "NOTE: cannot drop the page cache (not root?); measurements may read from cache"
  fi
}
trim() {
  sync
  if [[ "$CAN_TRIM" == 1 ]] && ! fstrim "$MOUNT" >/dev/null 2>&1; then
    CAN_TRIM=0
    note "NOTE: fstrim $MOUNT is not permitted or not supported; skipping trims"
  fi
}

# ---- background activity ---------------------------------------------------------------
CLK_TCK=$(getconf CLK_TCK)
NCPU=$(nproc)
DISK_DEV=""  # the work directory's device, found by wait_quiet (DIR is known by then)
busy_ticks() {  # CPU ticks spent not idle, all CPUs (user nice system irq softirq steal)
  awk '/^cpu / {printf "%.0f\n", $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat
}
disk_sectors() {  # sectors read + written on the work directory's device
  awk -v d="$DISK_DEV" '$3 == d {printf "%.0f\n", $6 + $10; found = 1} END {if (!found) print 0}' /proc/diskstats
}
disk_written() {  # bytes written to the work directory's device so far
  awk -v d="$DISK_DEV" '$3 == d {printf "%.0f\n", $10 * 512; found = 1} END {if (!found) print 0}' /proc/diskstats
}
QUIET_NOTES=0
wait_quiet() {  # wait until the rest of the machine is quiet, or QUIET_TIMEOUT passes
  [[ -n "$DISK_DEV" ]] || DISK_DEV=$(basename "$(df --output=source "$DIR" | tail -1)")
  ((QUIET_TIMEOUT > 0)) || return 0
  local start=$SECONDS b1 b2 s1 s2 cpu_pct mbs
  while true; do
    b1=$(busy_ticks); s1=$(disk_sectors)
    sleep 1
    b2=$(busy_ticks); s2=$(disk_sectors)
    cpu_pct=$(((b2 - b1) * 100 / CLK_TCK / NCPU))
    mbs=$(((s2 - s1) * 512 / 1000000))
    ((cpu_pct < 15 && mbs < 20)) && return 0
    if ((SECONDS - start >= QUIET_TIMEOUT)); then
      note "  machine still busy (${cpu_pct}% CPU, $mbs MB/s disk) after ${QUIET_TIMEOUT}s; measuring anyway"
      QUIET_NOTES=$((QUIET_NOTES + 1))
      return 0
    fi
    sleep 2
  done
}

now() { date +%s.%N; }
CHILD=""   # GNU time running the measured command, while one runs
on_signal() {
  trap - INT TERM
  if [[ -n "$CHILD" ]]; then
    pkill -TERM -P "$CHILD" 2>/dev/null || true  # the measured command (GNU time's child)
    kill -TERM "$CHILD" 2>/dev/null || true
    wait "$CHILD" 2>/dev/null || true
  fi
  note "interrupted; partial outputs are in ${OUT:-the work directory}"
  exit 130
}
trap on_signal INT TERM


# ---- measurement ---------------------------------------------------------------------
# measure KEY ROUND CMD...: drops caches, waits for a quiet machine, then times
# "CMD; sync". Records in R_EL, R_SYNC, R_CPU, R_RSS, R_OTHER and R_DISKW (keyed
# KEY.ROUND) the elapsed time, its sync part, user+sys CPU, max RSS (KiB), the CPU time
# everything else on the machine used meanwhile and the bytes written to the work
# directory's device meanwhile (by anything). stdout of CMD goes to $LOGS/KEY.ROUND.out. Needs
# GNU_TIME and LOGS; a failed CMD stops the script with its last error lines. When
# SERVER_TICKS names a command printing a server's CPU ticks so far (nfs_server_ticks), the
# server's CPU seconds meanwhile go to R_SRV too (and are part of R_OTHER).
BENCH_NAME=$(basename "$0" .sh)
SERVER_TICKS=""
declare -A R_EL R_SYNC R_CPU R_RSS R_OTHER R_DISKW R_SRV
measure() {
  local key=$1 round=$2
  shift 2
  local tf="$LOGS/$key.$round.time" log="$LOGS/$key.$round.out" err="$LOGS/$key.$round.err"
  drop_caches
  wait_quiet
  local t0 t1 t2 b0 b2 w0 w2 g0=0 g2=0 rc=0
  [[ -z "$SERVER_TICKS" ]] || g0=$($SERVER_TICKS)
  b0=$(busy_ticks)
  w0=$(disk_written)
  t0=$(now)
  "$GNU_TIME" -f '%U %S %M' -o "$tf" "$@" >"$log" 2>"$err" </dev/null &
  CHILD=$!
  wait "$CHILD" || rc=$?
  CHILD=""
  t1=$(now)
  sync
  t2=$(now)
  b2=$(busy_ticks)
  w2=$(disk_written)
  [[ -z "$SERVER_TICKS" ]] || g2=$($SERVER_TICKS)
  if ((rc != 0)); then
    echo "$BENCH_NAME: FAILED ($key, exit $rc): $*" >&2
    tail -n 20 "$err" >&2 || true
    exit 1
  fi
  local u s m
  read -r u s m < <(tail -n 1 "$tf")
  R_EL[$key.$round]=$(awk -v a="$t0" -v c="$t2" 'BEGIN {printf "%.3f", c - a}')
  R_SYNC[$key.$round]=$(awk -v b="$t1" -v c="$t2" 'BEGIN {printf "%.3f", c - b}')
  R_CPU[$key.$round]=$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%.2f", u + s}')
  R_RSS[$key.$round]=$m   # KiB
  R_DISKW[$key.$round]=$((w2 - w0))
  R_OTHER[$key.$round]=$(awk -v b="$((b2 - b0))" -v t="$CLK_TCK" -v c="${R_CPU[$key.$round]}" \
    'BEGIN {o = b / t - c; printf "%.2f", (o < 0 ? 0 : o)}')
  R_SRV[$key.$round]=$(awk -v g="$((g2 - g0))" -v t="$CLK_TCK" 'BEGIN {printf "%.2f", g / t}')
  note "  $key: ${R_EL[$key.$round]} s (sync ${R_SYNC[$key.$round]} s), cpu ${R_CPU[$key.$round]} s, rss $((m / 1024)) MiB, other cpu ${R_OTHER[$key.$round]} s$([[ -z "$SERVER_TICKS" ]] || echo ", server cpu ${R_SRV[$key.$round]} s")"
}

# ---- the fio copy ceiling -------------------------------------------------------------
# One fio run, two concurrent jobs, io_uring, O_DIRECT, 1 MiB blocks: a sequential read of
# the files FIO_FILES names (colon-separated) and a sequential write of FIO_WRITE_MIB MiB to
# the new file OUT/fio-copy, fsynced at the end. The run ends when both jobs have.
# fio_copy_cmd FALLOCATE_MODE: sets the array FIO_COPY (native: fio preallocates the new
# file, the ceiling; none: every write extends it). Needs IODEPTH, FIO_FILES, FIO_WRITE_MIB
# and OUT.
fio_copy_cmd() {
  FIO_COPY=(fio --output-format=json --ioengine=io_uring --direct=1 --bs=1M --iodepth="$IODEPTH"
    --name=read --filename="$FIO_FILES" --file_service_type=sequential --rw=read
    --name=write --filename="$OUT/fio-copy" --rw=write --size="${FIO_WRITE_MIB}M"
    --fallocate="$1" --end_fsync=1)
}
# check_fio KEY ROUND: stops the script unless the fio run measure() recorded as KEY.ROUND
# moved the bytes it should have (fio skips each read file's tail shorter than 1 MiB).
# Needs LOGS, FIO_WRITE_BYTES, DATA_BYTES and DATA_FILES.
check_fio() {
  local moved
  moved=$(grep -o '"io_bytes" : [0-9]*' "$LOGS/$1.$2.out" | awk '{s += $3} END {printf "%.0f", s}')
  ((moved >= FIO_WRITE_BYTES + DATA_BYTES - DATA_FILES * 1048576)) ||
    die "fio moved fewer bytes ($moved) than expected (see $LOGS/$1.$2.out)"
}

# ---- the binary under test -------------------------------------------------------------
# resolve_bin: BIN as given, else REPO/build/release/cli/stripeback, built with the
# release preset's flags when missing (or REBUILD=1). Sets BIN (absolute), BIN_VERSION,
# BIN_BUILT, BIN_SHA and TREE (the commit, and whether the tree had uncommitted changes).
resolve_bin() {
  if [[ -z "$BIN" ]]; then
    BIN="$REPO/build/release/cli/stripeback"
    if [[ ! -x "$BIN" || "${REBUILD:-0}" == 1 ]]; then
      note "building $BIN"
      (cd "$REPO" &&
         cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRIPEBACK_TESTS=OFF >&2 &&
         cmake --build build/release -j2 --target stripeback_cli >&2) || die "build failed"
    fi
  fi
  [[ -x "$BIN" ]] || die "stripeback binary '$BIN' not found or not executable"
  BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
  BIN_VERSION=$("$BIN" --version 2>/dev/null | head -n 1 || true)
  BIN_BUILT=$(date -u -r "$BIN" '+%Y-%m-%d %H:%M:%S UTC')
  BIN_SHA=$(sha256sum "$BIN" | cut -c1-12)
  TREE="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)$( [[ -n "$(git -C "$REPO" status --porcelain 2>/dev/null)" ]] && echo ' + uncommitted changes' || true)"
}
