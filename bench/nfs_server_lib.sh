# The private nfs-ganesha the NFS benchmarks measure against: started and stopped through
# scripts/nfs-server.sh on ports 22149/22150 (the tests use 22049/22050), with the query
# every client URL needs (no portmapper) and the server's CPU ticks. Source it after
# setting REPO.
# shellcheck shell=bash

NFS_SERVER="$REPO/scripts/nfs-server.sh"
export SB_NFS_PORT=22149 SB_NFS_MOUNT_PORT=22150
# shellcheck disable=SC2034 # NFS_Q, NFS_EXPORT: for the scripts that source this
NFS_Q="?nfsport=$SB_NFS_PORT&mountport=$SB_NFS_MOUNT_PORT"
NFS_PID=""

# nfs_server_start STATE [EXPORT]: stops a server an earlier run left with this STATE, then
# starts one keeping its files in STATE and exporting EXPORT (an existing directory, which
# must not change while the server runs), or STATE/export made for the purpose. Sets
# NFS_EXPORT and NFS_PID.
nfs_server_start() {
  export SB_NFS_STATE=$1
  if [[ -n ${2:-} ]]; then export SB_NFS_EXPORT=$2; else unset SB_NFS_EXPORT; fi
  "$NFS_SERVER" stop >/dev/null 2>&1 || true
  "$NFS_SERVER" start >/dev/null
  # shellcheck disable=SC2034
  NFS_EXPORT=${2:-$SB_NFS_STATE/export}
  NFS_PID=$(cat "$SB_NFS_STATE/ganesha.pid")
}

nfs_server_stop() { [[ -z ${SB_NFS_STATE:-} ]] || "$NFS_SERVER" stop >/dev/null 2>&1 || true; }

# CPU ticks (user + system, all threads) the server has used so far.
nfs_server_ticks() { awk '{print $14 + $15}' "/proc/$NFS_PID/stat"; }
