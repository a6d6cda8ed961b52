// The NFS backend of the Storage seam: nfs:// locations (storage/location.h).
//
// Each thread (a channel, or the job's main thread) has its own connections, one per
// server and export it uses; with several server addresses in a URL each thread picks one
// (round robin in the order threads first use NFS), so channels spread over the paths.
// A file id is valid on every thread: each connection opens its own NFS handle for it on
// first use (and again after a reconnect). Writes are FILE_SYNC (stable): a completed
// write is on the server's stable storage, so "durable" never depends on COMMIT and write
// verifiers, which libnfs 4.0.0 does not compare.
#pragma once

#include <memory>
#include <string>

#include "storage/async/io_engine.h"
#include "storage/storage.h"
#include "backends/nfs/connection.h"
#include "backends/nfs/url.h"

namespace stripeback::nfs {

// The process's NFS storage. Asynchronous requests go to the calling thread's NFS engine
// (nfs_engine.h); its counter group "nfs" is the thread's connections'.
storage::Storage& nfs_storage();

// What the engine and the synchronous calls share: resolving ids and paths to the calling
// thread's connections.
struct Target {
  Connection* conn = nullptr;
  std::string rel;   // path below the mount
  std::string name;  // the URL, for messages
  bool write = false;
};
Result<Target> target_of_id(int id);
// The NFS handle of `id` on `conn` (opened on first use after each (re)connect).
Result<nfsfh*> handle_on(Connection& conn, int id);
// The calling thread's counters of its closed connections (its counter group "nfs" adds
// them to its open connections').
ConnStats& thread_closed_stats();

}  // namespace stripeback::nfs
