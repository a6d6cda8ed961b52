// NFS client flags shared by backup, restore and bench nfs.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "stripeback/result.h"

namespace stripeback::cli {

struct NfsFlags {
  unsigned inflight = 0;  // 0: the default
  std::string timeout, retry;
  bool stable_writes = false;
};

// Adds --nfs-inflight, --nfs-timeout, --nfs-retry and --nfs-stable-writes to `app`.
void add_nfs_flags(CLI::App* app, NfsFlags& f);
// Registers the NFS backend and applies the flags; errors are usage errors. `cancel` (set
// by SIGINT/SIGTERM) cuts NFS reconnect waits short.
Result<void> apply_nfs_flags(const NfsFlags& f, const std::atomic<bool>* cancel = nullptr);

}  // namespace stripeback::cli
