// Process-wide NFS client settings (set once from the command line, before any transfer).
#pragma once

#include <chrono>
#include <cstdint>

namespace stripeback::nfs {

struct NfsOptions {
  // READ/WRITE requests in flight per connection (one connection per channel and export).
  unsigned inflight = 4;
  // Largest request; lowered to what the server negotiates (readmax/writemax).
  uint32_t max_request = 1u << 20;
  // Deadline of every NFS request, mount and reconnect attempt.
  std::chrono::milliseconds timeout{10000};
  // How long a channel keeps reconnecting to a server that stopped answering before the job
  // fails (counted from the last request that made progress).
  std::chrono::milliseconds retry{60000};
};

void set_options(const NfsOptions& opts);
const NfsOptions& options();

}  // namespace stripeback::nfs
