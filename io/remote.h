// Remote file systems behind the local file calls.
//
// A path with a URL scheme ("nfs://...") is served by a RemoteFs registered at startup
// (the NFS library registers one); everything else goes to the kernel. A remote file opened
// through io::open_read / io::create_exclusive is a small integer id at or above
// kRemoteFdBase in place of a file descriptor: UniqueFd closes it through the backend, the
// fd_* calls below and the IoEngine from make_engine() route it to the backend, so engine
// code written against descriptors works unchanged. Remote ids are valid on every thread;
// each thread reaches the server through its own connection.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/io_engine.h"
#include "stripeback/result.h"

namespace stripeback::io {

inline constexpr int kRemoteFdBase = 1 << 28;
inline bool is_remote_fd(int fd) { return fd >= kRemoteFdBase; }
// "scheme://..." (a URL rather than a local path).
bool is_url(const std::string& path);
// dir + "/" + name; for a URL with a query the name goes before the query.
std::string join_path(const std::string& dir, const std::string& name);

// Counters of one thread's remote connections (one channel), summed over its servers.
struct RemoteStats {
  std::string servers;  // comma-separated addresses used
  uint64_t rpcs = 0, bytes_read = 0, bytes_written = 0;
  uint64_t retries = 0, reconnects = 0;
  uint64_t commits = 0, rewritten = 0;  // COMMITs; bytes written again (server restarted)
  double latency_sum_s = 0, latency_max_s = 0;
  uint32_t max_read = 0, max_write = 0;  // request sizes in use (after the server's caps)
};

class RemoteFs {
 public:
  virtual ~RemoteFs() = default;
  virtual bool handles(const std::string& path) const = 0;
  virtual Result<int> open_read(const std::string& path) = 0;
  // Creates a new file, never replacing one; writes to it are durable when they complete.
  virtual Result<int> create_exclusive(const std::string& path, mode_t mode) = 0;
  // lstat(2)-like (links not followed).
  virtual Result<struct stat> stat(const std::string& path) = 0;
  virtual Result<struct stat> fstat(int id) = 0;
  // Names of the entries of a directory, without "." and "..".
  virtual Result<std::vector<std::string>> list_dir(const std::string& path) = 0;
  virtual Result<void> make_dirs(const std::string& path) = 0;
  virtual Result<void> unlink(const std::string& path) = 0;
  virtual Result<void> rename(const std::string& from, const std::string& to) = 0;
  // Owner (when set_owner), permission bits, then mtime (atime set to the same).
  virtual Result<void> set_attributes(const std::string& path, bool set_owner, uid_t uid,
                                      gid_t gid, mode_t mode, int64_t mtime_ns) = 0;
  virtual Result<size_t> pread(int id, std::byte* buf, size_t len, uint64_t offset) = 0;
  virtual Result<void> pwrite_all(int id, const std::byte* buf, size_t len, uint64_t off) = 0;
  virtual Result<void> sync(int id) = 0;
  virtual Result<void> truncate(int id, uint64_t size) = 0;
  virtual void close(int id) = 0;
  // The path the id was opened with, for messages.
  virtual std::string name_of(int id) = 0;
  // An engine for the calling thread's connections: ops on remote ids only.
  virtual std::unique_ptr<IoEngine> make_engine() = 0;
  // Counters of the calling thread's connections; empty servers if it made none.
  virtual RemoteStats thread_stats() = 0;
  // Drops the calling thread's connections (at the end of a channel).
  virtual void close_thread() = 0;
};

// Registers the backend (process lifetime; call once before any remote path is used).
void register_remote(RemoteFs* fs);
RemoteFs* remote_for(const std::string& path);  // null for local paths
RemoteFs* remote_fs();                          // the registered backend or null

// Descriptor calls that also accept remote ids. Errors name `what` (the file) and the cause.
Result<struct stat> stat_path(const std::string& path);  // stat(2), follows links locally
Result<struct stat> lstat_path(const std::string& path);
Result<std::vector<std::string>> list_dir(const std::string& path);
Result<struct stat> fstat_fd(int fd, const std::string& what);
Result<size_t> pread_fd(int fd, std::byte* buf, size_t len, uint64_t off, const std::string& what);
Result<void> pwrite_all_fd(int fd, const std::byte* buf, size_t len, uint64_t off,
                           const std::string& what);
Result<void> datasync_fd(int fd, const std::string& what);
Result<void> truncate_fd(int fd, uint64_t size, const std::string& what);
Result<void> unlink_path(const std::string& path);
Result<void> rename_path(const std::string& from, const std::string& to);

// An engine that sends ops on remote ids to `remote` and all others to `local`.
std::unique_ptr<IoEngine> make_routing_engine(std::unique_ptr<IoEngine> local,
                                              std::unique_ptr<IoEngine> remote);

}  // namespace stripeback::io
