// Process-wide NFS client settings (set once from the command line, before any transfer).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace stripeback::nfs {

struct NfsOptions {
  // READ/WRITE requests in flight per connection (one connection per channel and export).
  unsigned inflight = 2;
  // WRITEs ask for FILE_SYNC (each one durable when answered) instead of UNSTABLE writes
  // made durable by COMMIT with the write verifier checked.
  bool stable_writes = false;
  // Largest request; lowered to what the server negotiates (readmax/writemax).
  uint32_t max_request = 1u << 20;
  // Deadline of every NFS request, mount and reconnect attempt.
  std::chrono::milliseconds timeout{10000};
  // How long a channel keeps reconnecting to a server that stopped answering before the job
  // fails (counted from the last request that made progress).
  std::chrono::milliseconds retry{60000};
  // When set and true, reconnect attempts stop and waiting requests fail at once (the job
  // was cancelled): a cancelled job does not wait out the retry window.
  const std::atomic<bool>* cancel = nullptr;
  // Raise glibc's mmap and trim thresholds for the process when the first connection is made
  // (connection.cc: libnfs's 1 MiB PDU buffers are then reused from the heap instead of
  // mapped and faulted in each time). A process-wide side effect: the CLI turns it on, an
  // embedding program only if it asks.
  bool tune_malloc = false;
};

inline bool cancelled(const NfsOptions& o) { return o.cancel != nullptr && o.cancel->load(); }

void set_options(const NfsOptions& opts);
const NfsOptions& options();

}  // namespace stripeback::nfs
