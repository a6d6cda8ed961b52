# Helpers shared by the benchmark scripts: page cache and trim control, waiting for a quiet
# machine, CPU and disk activity counters, and a signal trap that stops the measured
# command. Source it after defining note(), DIR, MOUNT, OUT and QUIET_TIMEOUT; it sets
# CHILD to the GNU time process of the measurement in progress.
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
DISK_DEV=$(basename "$(df --output=source "$DIR" | tail -1)")
busy_ticks() {  # CPU ticks spent not idle, all CPUs (user nice system irq softirq steal)
  awk '/^cpu / {printf "%.0f\n", $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat
}
disk_sectors() {  # sectors read + written on the work directory's device
  awk -v d="$DISK_DEV" '$3 == d {printf "%.0f\n", $6 + $10; found = 1} END {if (!found) print 0}' /proc/diskstats
}
QUIET_NOTES=0
wait_quiet() {  # wait until the rest of the machine is quiet, or QUIET_TIMEOUT passes
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
  note "interrupted; partial outputs are in $OUT"
  exit 130
}
trap on_signal INT TERM

