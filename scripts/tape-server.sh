#!/usr/bin/env bash
# The project's tape test service: a private tgtd exposing virtual SSC tape drives over iSCSI
# on 127.0.0.1, each drive a target of its own (LUN 1) backed by a small thin tape image, so
# end of medium comes after a few MiB.
#
#   scripts/tape-server.sh start    start tgtd, create the drives, print one URL per line
#   scripts/tape-server.sh stop     delete the targets, stop tgtd, remove the images
#   scripts/tape-server.sh status   exit 0 and print the URLs when the service runs
#
# Environment (all optional):
#   SB_TAPE_CTL     tgtd control port (-C, at most 32767), default 7. Another tgtd uses
#                   another control port and is never touched.
#   SB_TAPE_PORT    iSCSI portal port on 127.0.0.1, default 13267
#   SB_TAPE_DRIVES  number of drives, default 2
#   SB_TAPE_SIZE    nominal size of each tape in MiB, default 64 (tgt's end of medium is a
#                   warning at this size; writes go on past it)
#   SB_TAPE_DIR     state directory (pid, log, images, URLs), default /tmp/stripeback-tape-CTL
set -euo pipefail

CTL=${SB_TAPE_CTL:-7}
PORT=${SB_TAPE_PORT:-13267}
DRIVES=${SB_TAPE_DRIVES:-2}
SIZE=${SB_TAPE_SIZE:-64}
DIR=${SB_TAPE_DIR:-/tmp/stripeback-tape-$CTL}
IQN_PREFIX=iqn.2026-11.org.stripeback:tape

die() { echo "tape-server: $*" >&2; exit 1; }
adm() { tgtadm -C "$CTL" --lld iscsi "$@"; }

for tool in tgtd tgtadm tgtimg; do
  command -v "$tool" >/dev/null || die "$tool not found (install the Debian package tgt)"
done
[[ $CTL =~ ^[0-9]+$ && $PORT =~ ^[0-9]+$ && $DRIVES =~ ^[0-9]+$ && $SIZE =~ ^[0-9]+$ ]] ||
  die "SB_TAPE_CTL, SB_TAPE_PORT, SB_TAPE_DRIVES and SB_TAPE_SIZE must be numbers"

tgtd_pid() {
  local pid
  [[ -f $DIR/tgtd.pid ]] || return 1
  pid=$(<"$DIR/tgtd.pid")
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
  # A recycled pid is not ours: it must be a tgtd with our control port (or, while starting,
  # the shell or setsid that is about to become it).
  local want="^tgtd -C $CTL "
  [[ ${1:-} == starting ]] && want="^(tgtd|setsid tgtd) -C $CTL |^(/usr/bin/)?bash"
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qE "$want" || return 1
  echo "$pid"
}

print_urls() { cat "$DIR/urls"; }

portal_open() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

start() {
  if tgtd_pid >/dev/null; then
    print_urls
    return 0
  fi
  if portal_open; then
    die "127.0.0.1:$PORT is already in use (set SB_TAPE_PORT)"
  fi
  if adm --mode target --op show >/dev/null 2>&1; then
    die "another tgtd already answers on control port $CTL (set SB_TAPE_CTL)"
  fi
  mkdir -p "$DIR"
  rm -f "$DIR"/*.img "$DIR/urls"
  mkdir -p /var/run/tgtd
  setsid tgtd -C "$CTL" --iscsi "portal=127.0.0.1:$PORT" -f >"$DIR/tgtd.log" 2>&1 </dev/null &
  echo $! >"$DIR/tgtd.pid"
  local i ready=0
  for ((i = 0; i < 100; i++)); do
    if ! tgtd_pid starting >/dev/null; then
      die "tgtd exited at start: $(grep -vE 'RDMA|oom|nr_open' "$DIR/tgtd.log" | tail -n 3 | tr '\n' ' ')"
    fi
    if adm --mode target --op show >/dev/null 2>&1 && portal_open; then
      ready=1
      break
    fi
    sleep 0.05
  done
  ((ready)) || { stop; die "tgtd did not become ready within 5 s (log: $DIR/tgtd.log)"; }

  : >"$DIR/urls"
  for ((i = 1; i <= DRIVES; i++)); do
    local img=$DIR/tape$i.img iqn=$IQN_PREFIX$i barcode
    barcode=$(printf 'SBT%05d' "$i")
    tgtimg --op new --device-type tape --barcode="$barcode" --size="$SIZE" --type=data \
      --file="$img" --thin-provisioning >/dev/null
    adm --mode target --op new --tid "$i" --targetname "$iqn"
    adm --mode logicalunit --op new --tid "$i" --lun 1 --device-type tape --bstype ssc \
      --backing-store "$img"
    # The faster iSCSI parameters (about 3x for writes); they apply to the next login.
    local kv
    for kv in MaxRecvDataSegmentLength=262144 MaxXmitDataSegmentLength=262144 \
      MaxBurstLength=16776192 FirstBurstLength=262144 InitialR2T=No; do
      adm --mode target --op update --tid "$i" --name "${kv%%=*}" --value "${kv#*=}"
    done
    adm --mode target --op bind --tid "$i" --initiator-address ALL
    echo "iscsi://127.0.0.1:$PORT/$iqn/1" >>"$DIR/urls"
  done
  print_urls
}

stop() {
  local pid
  if ! pid=$(tgtd_pid); then
    rm -rf "$DIR"
    return 0
  fi
  local tid
  for tid in $(adm --mode target --op show 2>/dev/null | sed -n 's/^Target \([0-9]*\):.*/\1/p'); do
    adm --mode target --op delete --tid "$tid" --force >/dev/null 2>&1 || true
  done
  # tgtd ignores SIGTERM: asking the system to go away is the clean stop.
  adm --mode system --op delete >/dev/null 2>&1 || true
  # tgtd takes up to about 2 s to leave after that; a new one on the same ports must wait.
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -e /proc/$pid ]] || break
    sleep 0.05
  done
  if [[ -e /proc/$pid ]]; then
    echo "tape-server: tgtd $pid did not stop; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do
      [[ -e /proc/$pid ]] || break
      sleep 0.05
    done
  fi
  # tgtd leaves its control socket behind.
  [[ -e /proc/$pid ]] || rm -f "/var/run/tgtd/socket.$CTL" "/var/run/tgtd/socket.$CTL.lock"
  rm -rf "$DIR"
}

status() {
  tgtd_pid >/dev/null || { echo "tape-server: not running (control port $CTL)" >&2; return 1; }
  print_urls
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
