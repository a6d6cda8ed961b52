#!/usr/bin/env bash
# Starts, stops and inspects the S3 test gateway Stripeback's S3 tests and benchmarks use: a
# one-node Ceph cluster (one monitor, one OSD on BlueStore over a sparse file) with the RADOS
# Gateway serving S3 on 127.0.0.1, built from nothing in a state directory and removed again
# by stop. No manager daemon: S3 does not need one.
#
#   scripts/s3-server.sh start    start (or report the running one); prints the endpoint
#   scripts/s3-server.sh stop     stop every daemon it started, remove the state directory
#   scripts/s3-server.sh status   print pids and the endpoint; exit 3 when not running
#   scripts/s3-server.sh url      print the endpoint only
#
# The endpoint is printed as shell-sourceable lines (eval "$(scripts/s3-server.sh url)"):
#   AWS_ACCESS_KEY_ID=...  AWS_SECRET_ACCESS_KEY=...  AWS_ENDPOINT_URL=http://127.0.0.1:PORT
#   AWS_REGION=default  SB_S3_KMS_KEY_ID=stripeback-test-key
# The credentials are fixed test values; the region is the gateway's zonegroup name; the
# KMS key id names the key SSE-KMS requests may use (x-amz-server-side-encryption-aws-kms-
# key-id), printed when the gateway's configuration has it.
#
# Environment: SB_S3_PORT (22080, the gateway's HTTP port; the monitor listens on PORT+1
# (msgr2) and PORT+2 (msgr1), the OSD's messengers bind within PORT+3..PORT+19),
# SB_S3_STATE (state directory, default /tmp/stripeback-s3-$SB_S3_PORT), SB_S3_BLOCK_GIB
# (size of the sparse BlueStore file, default 10).
# Start and stop of one state directory are serialized by a lock on $SB_S3_STATE.lock, so
# test processes may call start at the same time: one starts, the others find it running.
# The lock file stays when stop removes the state directory (removing it would let two
# processes hold "the" lock at once).
#
# Measured on the development machine (Debian 12, Ceph 16.2.15, 2 cores shared with other
# work, quiet at the time): start from nothing to a working S3 endpoint 23-24 s (of which
# ~6 s make the gateway's bucket pools, so that the first test request is not slow), stop
# ~5 s (the daemons one after the other); resident memory 30 s after start mon 39 MiB, OSD
# 60 MiB, radosgw 55 MiB (~155 MiB; the OSD reached 73 MiB after tens of MiB written);
# ~47 MiB on disk (the 10 GiB block file is sparse).
set -euo pipefail

PORT=${SB_S3_PORT:-22080}
[[ $PORT =~ ^[0-9]+$ ]] && ((PORT >= 1024 && PORT <= 65515)) ||
  { echo "s3-server: SB_S3_PORT '$PORT' must be a number from 1024 to 65515" >&2; exit 2; }
MON_V2=$((PORT + 1))
MON_V1=$((PORT + 2))
MS_MIN=$((PORT + 3))
MS_MAX=$((PORT + 19))
STATE=${SB_S3_STATE:-/tmp/stripeback-s3-$PORT}
BLOCK_GIB=${SB_S3_BLOCK_GIB:-10}
[[ $BLOCK_GIB =~ ^[0-9]+$ ]] && ((BLOCK_GIB >= 1 && BLOCK_GIB <= 1024)) ||
  { echo "s3-server: SB_S3_BLOCK_GIB '$BLOCK_GIB' must be a number of GiB from 1 to 1024" >&2; exit 2; }
CONF=$STATE/ceph.conf
LOCK=$STATE.lock
RGW_NAME=client.rgw.sb
ACCESS_KEY=STRIPEBACKTESTKEY000
SECRET_KEY=stripeback-test-secret-key-0000000000000
REGION=default
# The gateway's one KMS key: a fixed test value (32 bytes, base64) and its id.
KMS_KEY_ID=stripeback-test-key
KMS_KEY=c3RyaXBlYmFjay10ZXN0LWttcy1rZXktMzItYnl0ZXM=
ENDPOINT=http://127.0.0.1:$PORT
export CEPH_CONF=$CONF
MARK="# state of scripts/s3-server.sh"

die() { echo "s3-server: $1" >&2; exit "${2:-1}"; }

# ceph's command line tool without a working monitor waits for ever: bound every call.
ceph_cli() { timeout 20 ceph --connect-timeout 15 "$@"; }

endpoint() {
  cat <<ENDPOINT
AWS_ACCESS_KEY_ID=$ACCESS_KEY
AWS_SECRET_ACCESS_KEY=$SECRET_KEY
AWS_ENDPOINT_URL=$ENDPOINT
AWS_REGION=$REGION
ENDPOINT
  # Only when the running gateway's configuration has it (one started by an older version of
  # this script has not).
  if grep -q "^rgw crypt s3 kms encryption keys = $KMS_KEY_ID=" "$CONF" 2>/dev/null; then
    echo "SB_S3_KMS_KEY_ID=$KMS_KEY_ID"
  fi
}

# Sets CMDLINE to a process's command line, arguments separated by spaces and one after the
# last; empty when the process has gone. Without a subprocess: stop and spawn scan /proc.
cmdline() {
  local -a args=()
  { mapfile -d '' args <"$1/cmdline"; } 2>/dev/null || true
  CMDLINE="${args[*]} "
}

# The pid of one of our daemons (mon, osd, rgw) if it runs: its pid file names it, and its
# command line must name our ceph.conf (a recycled pid is somebody else's).
daemon_pid() {
  local file=$STATE/run/$1.pid pid
  [[ -s $file ]] || return 1
  pid=$(<"$file")
  cmdline "/proc/$pid"
  [[ $CMDLINE == *" -c $CONF "* ]] || return 1
  echo "$pid"
}

running() { daemon_pid rgw >/dev/null; }

check_programs() {
  local missing=() p
  for p in ceph-mon ceph-osd radosgw radosgw-admin ceph ceph-authtool monmaptool; do
    command -v "$p" >/dev/null || missing+=("$p")
  done
  command -v curl >/dev/null || missing+=(curl)
  ((${#missing[@]} == 0)) ||
    die "missing programs: ${missing[*]} (Debian packages ceph-mon ceph-osd radosgw ceph-common curl; scripts/install-deps.sh installs them)" 2
}

# start and stop remove the state directory: only one this script made (or an empty one).
check_state_dir() {
  [[ ! -e $STATE ]] && return 0
  [[ -d $STATE && -z $(ls -A "$STATE") ]] && return 0
  [[ -f $CONF && $(head -n 1 "$CONF") == "$MARK" ]] && return 0
  die "'$STATE' (SB_S3_STATE) is not a state directory of this script; not removing it" 2
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

write_conf() {
  cat >"$CONF" <<CONF
$MARK
[global]
fsid = $(cat /proc/sys/kernel/random/uuid)
mon host = [v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1]
mon initial members = a
public network = 127.0.0.1/32
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv6 = false
ms bind port min = $MS_MIN
ms bind port max = $MS_MAX
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
run dir = $STATE/run
admin socket = $STATE/run/\$name.asok
log file = $STATE/log/\$name.log
crash dir = $STATE/crash
keyring = $STATE/keyring
# One OSD: every pool has one copy, a few placement groups, and no automatic resizing.
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false

[mon]
mon data = $STATE/mon

[osd]
osd data = $STATE/osd0
keyring = $STATE/osd0/keyring
osd objectstore = bluestore
# The block file lives beside the OSD directory: inside it the OSD fails with ELOOP.
bluestore block path = $STATE/osd0.block
bluestore block create = true
bluestore block size = $((BLOCK_GIB << 30))
bluestore fsck on mkfs = false
# Its caches stay small: the machine is shared.
osd memory target = 1073741824

[$RGW_NAME]
keyring = $STATE/rgw.keyring
rgw frontends = beast endpoint=127.0.0.1:$PORT
# Deleted objects' data is collected after seconds, not the default two hours.
rgw gc obj min wait = 5
rgw gc processor period = 5
# SSE-C over plain HTTP, for tests of customer-provided keys.
rgw crypt require ssl = false
# SSE-KMS with one key kept in this file (the gateway's "testing" key backend), for tests of
# x-amz-server-side-encryption: aws:kms. Ceph 16 has no SSE-S3 (AES256 is accepted and
# ignored).
rgw crypt s3 kms backend = testing
rgw crypt s3 kms encryption keys = $KMS_KEY_ID=$KMS_KEY
CONF
}

# Runs a daemon in the foreground of its own session and records its pid (in foreground mode
# the daemons write no pid file of their own). setsid forks when its caller leads a process
# group, so the pid is looked up by command line rather than taken from $!.
spawn() {
  local what=$1
  shift
  # fd 9 holds the start lock: the daemon must not keep it.
  setsid "$@" -f -c "$CONF" </dev/null >>"$STATE/log/$what.out" 2>&1 9>&- &
  local want="$* -f -c $CONF " proc
  for _ in $(seq 100); do
    for proc in /proc/[0-9]*; do
      cmdline "$proc"
      if [[ $CMDLINE == "$want" ]]; then
        echo "${proc#/proc/}" >"$STATE/run/$what.pid"
        return 0
      fi
    done
    sleep 0.1
  done
  tail -n 20 "$STATE/log/$what.out" >&2 || true
  die "$what did not start (logs: $STATE/log)"
}

# Polls `check` (a command) every 0.5 s for up to $2 s; on timeout dies with $3.
wait_for() {
  local check=$1 seconds=$2 what=$3
  for _ in $(seq $((seconds * 2))); do
    if eval "$check" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  die "$what within $seconds s (logs: $STATE/log)"
}

start_mon() {
  ceph-authtool --create-keyring "$STATE/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool --create-keyring "$STATE/keyring" --gen-key -n client.admin \
    --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
  ceph-authtool "$STATE/mon.keyring" --import-keyring "$STATE/keyring" >/dev/null
  local fsid
  fsid=$(sed -n 's/^fsid = //p' "$CONF")
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1]" \
    "$STATE/monmap" >/dev/null
  ceph-mon -c "$CONF" --mkfs -i a --monmap "$STATE/monmap" --keyring "$STATE/mon.keyring" \
    >>"$STATE/log/mon.out" 2>&1 || die "ceph-mon --mkfs failed (log: $STATE/log/mon.out)"
  spawn mon ceph-mon -i a
  wait_for "ceph_cli mon stat" 30 "the monitor did not answer"
}

start_osd() {
  local uuid id
  uuid=$(cat /proc/sys/kernel/random/uuid)
  id=$(ceph_cli osd new "$uuid") || die "'ceph osd new' failed"
  [[ $id == 0 ]] || die "'ceph osd new' made osd.$id, expected osd.0"
  mkdir -p "$STATE/osd0"
  # --no-mon-config: the monitor does not know this OSD's key yet.
  ceph-osd -c "$CONF" -i 0 --no-mon-config --mkfs --mkkey --osd-uuid "$uuid" \
    >>"$STATE/log/osd.out" 2>&1 || die "ceph-osd --mkfs failed (log: $STATE/log/osd.out)"
  ceph_cli auth add osd.0 osd 'allow *' mon 'allow profile osd' mgr 'allow profile osd' \
    -i "$STATE/osd0/keyring" >/dev/null 2>&1 || die "'ceph auth add osd.0' failed"
  spawn osd ceph-osd -i 0
  wait_for "ceph_cli osd dump | grep -q '^osd.0 up'" 60 "osd.0 was not up"
}

start_rgw() {
  ceph_cli auth get-or-create "$RGW_NAME" mon 'allow rw' osd 'allow rwx' \
    -o "$STATE/rgw.keyring" >/dev/null 2>&1 || die "'ceph auth get-or-create $RGW_NAME' failed"
  spawn rgw radosgw -n "$RGW_NAME"
  wait_for "[[ \$(curl -s -o /dev/null -w '%{http_code}' $ENDPOINT/) == 200 ]]" 90 \
    "radosgw did not answer HTTP 200 on $ENDPOINT/"
  radosgw-admin -c "$CONF" user create --uid=stripeback --display-name="Stripeback tests" \
    --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >/dev/null 2>>"$STATE/log/rgw.out" ||
    die "radosgw-admin user create failed (log: $STATE/log/rgw.out)"
}

# One signed S3 request with curl; prints the HTTP status, then the body.
s3req() {
  curl -sS --max-time 60 --aws-sigv4 "aws:amz:$REGION:s3" --user "$ACCESS_KEY:$SECRET_KEY" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -w '%{http_code}\n' "$@"
}

# The gateway makes its bucket index, data and multipart pools on first use, taking
# seconds each: one bucket, object and aborted multipart upload make them now, and prove
# the credentials work.
warm_up() {
  local b=$ENDPOINT/stripeback-warm-up out id
  s3req -X PUT "$b" | grep -q '^200$' || die "creating a bucket with the test user failed"
  s3req -X PUT --data-binary warm "$b/o" | grep -q '^200$' || die "putting an object failed"
  out=$(s3req -X POST "$b/o?uploads=") || die "starting a multipart upload failed"
  id=$(sed -n 's:.*<UploadId>\(.*\)</UploadId>.*:\1:p' <<<"$out")
  [[ -n $id ]] || die "starting a multipart upload failed: $out"
  s3req -X DELETE "$b/o?uploadId=$id" >/dev/null || die "aborting a multipart upload failed"
  s3req -X DELETE "$b/o" >/dev/null && s3req -X DELETE "$b" >/dev/null ||
    die "deleting the warm-up bucket failed"
}

start() {
  if running; then endpoint; return 0; fi
  local p
  for p in "$PORT" "$MON_V2" "$MON_V1"; do
    port_in_use "$p" && die "127.0.0.1:$p is already in use (set SB_S3_PORT)" 2
  done
  # Left over from a start that failed or a machine that stopped: begin from nothing.
  check_state_dir
  stop_daemons
  rm -rf "$STATE"
  mkdir -p "$STATE/run" "$STATE/log" "$STATE/crash"
  local t0=$SECONDS
  write_conf
  # A failed start leaves nothing running behind it.
  trap 'stop_daemons' EXIT
  start_mon
  start_osd
  start_rgw
  warm_up
  trap - EXIT
  echo "s3-server: ready on $ENDPOINT after $((SECONDS - t0)) s (state: $STATE)" >&2
  endpoint
}

# Ends processes: SIGTERM, up to 10 s to exit, then SIGKILL.
terminate() {
  ((${#@} > 0)) || return 0
  kill -TERM "$@" 2>/dev/null || true
  local pid alive
  for _ in $(seq 100); do
    alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || return 0
    sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null || true
}

# Stops our daemons one after the other, gateway first and monitor last (the gateway and the
# OSD take seconds more to exit when the monitor has gone first), then any other process
# whose command line names our ceph.conf (a daemon whose pid was not recorded yet, from a
# start that failed).
stop_daemons() {
  local d pid
  for d in rgw osd mon; do
    if pid=$(daemon_pid "$d"); then terminate "$pid"; fi
  done
  local proc others=()
  for proc in /proc/[0-9]*; do
    cmdline "$proc"
    [[ $CMDLINE == *" -c $CONF "* ]] && others+=("${proc#/proc/}")
  done
  terminate "${others[@]}"
}

stop() {
  check_state_dir
  stop_daemons
  rm -rf "$STATE"
}

status() {
  if ! running; then echo "not running"; exit 3; fi
  local d pids=()
  for d in mon osd rgw; do pids+=("$d $(daemon_pid "$d" || echo down)"); done
  local IFS=,
  echo "# running: ${pids[*]}; state $STATE"
  endpoint
}

# Serializes start and stop of this state directory across processes.
locked() {
  mkdir -p "$(dirname "$STATE")"
  exec 9>"$LOCK"
  flock 9
  "$@"
}

case ${1:-} in
  start) check_programs; locked start ;;
  stop) locked stop ;;
  status) status ;;
  url) endpoint ;;
  *) die "usage: $0 start|stop|status|url" 2 ;;
esac
