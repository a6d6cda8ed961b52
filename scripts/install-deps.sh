#!/usr/bin/env bash
# Installs the Debian 12 packages Stripeback needs to build, test and benchmark.
# Runs apt-get only when something is missing, so repeated runs are quick.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  liburing-dev libzstd-dev libssl-dev libxxhash-dev libboost-dev libcurl4-openssl-dev
  libspdlog-dev libfmt-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  fio time
  tgt libiscsi-dev libiscsi-bin
  nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-dev libnfs-utils
  clang-14 libclang-rt-14-dev
  postgresql-15 libpq-dev pgbackrest
  ceph-mon ceph-osd radosgw ceph-common
  rclone s3cmd restic
  tmux curl prometheus
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root (or with sudo)" >&2
  exit 2
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
