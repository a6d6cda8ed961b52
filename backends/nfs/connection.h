// One libnfs context mounted on one export of one server, used by one thread only.
//
// libnfs is driven by hand: poll(nfs_get_fd, nfs_which_events) then nfs_service, at least
// every 100 ms so its timeouts fire. Its own reconnect loop is switched off (it spins a core
// and never gives up): a broken connection is destroyed and a fresh context mounted, within
// the retry window (options().retry), and every request carries options().timeout.
#pragma once

#include <sys/time.h>  // libnfs.h needs struct timeval first
#include <nfsc/libnfs.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "backends/nfs/url.h"
#include "stripeback/result.h"

namespace stripeback::nfs {

// The NFS client's timing, shared by the blocking calls (connection.cc) and the engine
// (nfs_engine.cc): how often a waiting thread services its connections, how long it waits
// before reconnecting after a failure, and our own bound above libnfs's timeout: a request
// that got no callback this long after its deadline is treated as lost with its connection.
inline constexpr std::chrono::milliseconds kServiceEvery{100};
inline constexpr std::chrono::milliseconds kBackoff{200};
inline constexpr std::chrono::milliseconds kSlack{1000};

using Clock = std::chrono::steady_clock;

struct ConnStats {
  uint64_t rpcs = 0, bytes_read = 0, bytes_written = 0, retries = 0, reconnects = 0;
  uint64_t commits = 0, rewritten = 0;  // COMMITs answered; bytes written again after one
  double latency_sum_s = 0, latency_max_s = 0;
  void add_latency(Clock::duration d);
  void add(const ConnStats& o);  // sums counters, keeps the worst latency
};

// A libnfs status that means "the connection, not the server's answer, failed".
bool is_transport_error(int status);

class Connection {
 public:
  Connection(NfsUrl url, std::string server, std::string mount);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& server() const { return server_; }
  const std::string& mount() const { return mount_; }
  nfs_context* ctx() const { return ctx_; }
  bool alive() const { return ctx_ != nullptr && !dead_; }
  uint64_t generation() const { return generation_; }
  uint32_t read_max() const { return read_max_; }
  uint32_t write_max() const { return write_max_; }

  // One attempt: a fresh context mounted on the export, bounded by options().timeout.
  Result<void> connect();
  // Destroys the context (callbacks of requests still queued may run from here).
  void drop();
  // Waits for socket events up to `until` (never more than 100 ms) and services them; a
  // context that fails is marked dead.
  void drive(Clock::time_point until);
  int poll_fd() const;
  short poll_events() const;
  void service(short revents);

  using Start = std::function<int(nfs_context*, nfs_cb, void*)>;
  using Done = std::function<void(int status, void* data)>;  // data valid only inside
  // A synchronous request: reconnects and retries transport failures within the retry
  // window; errors name `what` and the server.
  Result<void> call(const std::string& what, const Start& start, const Done& done);

  // Handles opened on the current context, by NFS file id (nfs_fs.h; cleared by drop()).
  std::map<int, nfsfh*>& handles() { return fhs_; }

  ConnStats stats;
  std::string last_error;

 private:
  NfsUrl url_;
  std::string server_, mount_;
  nfs_context* ctx_ = nullptr;
  bool dead_ = false;
  uint64_t generation_ = 0;
  uint32_t read_max_ = 0, write_max_ = 0;
  std::map<int, nfsfh*> fhs_;
};

}  // namespace stripeback::nfs
