#!/usr/bin/env bash
# Starts, stops and inspects the nfs-ganesha test server Stripeback's NFS tests and
# benchmarks use: NFSv3 on 127.0.0.1 with fixed unprivileged ports, exporting a temporary
# directory.
#
#   scripts/nfs-server.sh start     start (or report the running one); prints the export URL
#   scripts/nfs-server.sh stop      stop the server, remove its state and export directory
#   scripts/nfs-server.sh status    print pid and URL; exit 3 when not running
#   scripts/nfs-server.sh kill      SIGKILL the server, keep the export (for outage tests)
#   scripts/nfs-server.sh url       print the export URL only
#
# Environment: SB_NFS_PORT (22049), SB_NFS_MOUNT_PORT (22050), SB_NFS_STATE (state
# directory, default /tmp/stripeback-nfs-$SB_NFS_PORT; the export is $SB_NFS_STATE/export),
# SB_NFS_EXPORT (an existing directory to export instead: it is neither made, nor opened up,
# nor removed by stop; the caller must not change what ganesha has seen of it while it runs).
#
# Isolation: ganesha registers NFSv3 with rpcbind and refuses to start without one; two
# ganesha on one rpcbind take over each other's registrations. This script therefore runs
# at most one server per rpcbind: it starts `rpcbind -w` when none runs (and stops it again
# only if it started it), refuses to start when another ganesha is already running, and
# every client passes explicit ports (nfsport/mountport in the URL), so nothing the
# portmapper holds can redirect or break the test clients.
set -euo pipefail

NFS_PORT=${SB_NFS_PORT:-22049}
MNT_PORT=${SB_NFS_MOUNT_PORT:-22050}
STATE=${SB_NFS_STATE:-/tmp/stripeback-nfs-$NFS_PORT}
EXPORT=${SB_NFS_EXPORT:-$STATE/export}
CONF=$STATE/ganesha.conf
LOG=$STATE/ganesha.log
PIDFILE=$STATE/ganesha.pid
URL="nfs://127.0.0.1$EXPORT?nfsport=$NFS_PORT&mountport=$MNT_PORT"

die() { echo "nfs-server: $*" >&2; exit "${2:-1}"; }

server_pid() {
  [[ -f $PIDFILE ]] || return 1
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [[ -n $pid && $(cat "/proc/$pid/comm" 2>/dev/null) == ganesha.nfsd ]] || return 1
  echo "$pid"
}

write_conf() {
  cat >"$CONF" <<CONF
NFS_CORE_PARAM {
  Protocols = 3;
  NFS_Port = $NFS_PORT;
  MNT_Port = $MNT_PORT;
  Bind_addr = 127.0.0.1;
  Enable_NLM = false;
  Enable_RQUOTA = false;
}
NFS_KRB5 { Active_krb5 = false; }
NFSV4 { Graceless = true; }
EXPORT {
  Export_Id = 1;
  Path = $EXPORT;
  Pseudo = /export;
  Access_Type = RW;
  Squash = No_Root_Squash;
  Protocols = 3;
  Transports = TCP;
  SecType = sys;
  Attr_Expiration_Time = 0;
  FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
CONF
}

ensure_rpcbind() {
  if rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then return 0; fi
  command -v rpcbind >/dev/null || die "rpcbind is not installed (apt-get install rpcbind)" 2
  rpcbind -w || die "unable to start rpcbind"
  for _ in $(seq 50); do
    if rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
      # No other rpcbind answered before, so the one answering now (the daemon, not the
      # parent that forked it) is ours: remember it to stop it with the server.
      pidof -s rpcbind >"$STATE/rpcbind.pid" || true
      return 0
    fi
    sleep 0.1
  done
  die "rpcbind did not answer after 5 s"
}

# Ready when a real mount and directory read work, not merely when the port answers.
wait_ready() {
  local pid=$1
  for _ in $(seq 150); do
    kill -0 "$pid" 2>/dev/null || { tail -n 20 "$LOG" >&2; die "ganesha exited during start (log: $LOG)"; }
    if nfs-ls "$URL" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  tail -n 20 "$LOG" >&2
  die "ganesha did not serve a mount within 15 s (log: $LOG)"
}

start() {
  if pid=$(server_pid); then echo "$URL"; return 0; fi
  [[ $(id -u) -eq 0 ]] || die "ganesha needs root to start (running as uid $(id -u))" 2
  command -v ganesha.nfsd >/dev/null || die "nfs-ganesha is not installed (apt-get install nfs-ganesha nfs-ganesha-vfs)" 2
  command -v nfs-ls >/dev/null || die "nfs-ls is not installed (apt-get install libnfs-utils)" 2
  local others
  others=$(pgrep -x ganesha.nfsd || true)
  [[ -z $others ]] || die "another ganesha.nfsd (pid $others) is running; one server per rpcbind" 2
  if [[ -n ${SB_NFS_EXPORT:-} ]]; then
    [[ -d $EXPORT ]] || die "SB_NFS_EXPORT '$EXPORT' is not a directory" 2
  else
    mkdir -p "$EXPORT"
    chmod 0777 "$EXPORT"
  fi
  mkdir -p "$STATE"
  write_conf
  ensure_rpcbind
  : >"$LOG"
  rm -f "$PIDFILE"
  # setsid forks when the caller leads its process group, so $! is not always the server:
  # the server's own pid file (-p) is what names it.
  # ganesha receives every 1 MiB WRITE into a fresh malloc() buffer: above glibc's default
  # mmap threshold each one is a new mapping, page-faulted in and unmapped again, which on
  # the development VMs doubled the server's CPU per GiB written. Served from the heap, the
  # buffers are reused.
  GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4194304:glibc.malloc.trim_threshold=268435456 \
    setsid ganesha.nfsd -F -f "$CONF" -L "$LOG" -p "$PIDFILE" -N NIV_EVENT </dev/null >/dev/null 2>&1 &
  local pid=""
  for _ in $(seq 100); do
    pid=$(server_pid) && break
    sleep 0.1
  done
  [[ -n $pid ]] || { tail -n 20 "$LOG" >&2; die "ganesha did not start (log: $LOG)"; }
  wait_ready "$pid"
  echo "$URL"
}

stop() {
  if pid=$(server_pid); then
    kill -CONT "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  if [[ -s $STATE/rpcbind.pid ]] && ! pgrep -x ganesha.nfsd >/dev/null; then
    kill "$(cat "$STATE/rpcbind.pid")" 2>/dev/null || true
  fi
  [[ -d $STATE ]] && rm -rf "$STATE"
  return 0
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status)
    if pid=$(server_pid); then echo "running pid $pid $URL"; else echo "not running"; exit 3; fi ;;
  kill)
    pid=$(server_pid) || die "not running"
    kill -KILL "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done ;;
  url) echo "$URL" ;;
  *) die "usage: $0 start|stop|status|kill|url" 2 ;;
esac
