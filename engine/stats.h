// Per-channel statistics: where the time went. Each channel thread owns its ChannelStats
// and publishes it when it ends; nothing here is shared while a job runs.
//
// Times are wall-clock seconds on the channel's thread:
//   read_busy   some read was in flight
//   write_busy  some write (or sync) was in flight
//   wait        the thread was blocked waiting for a completion (neither CPU nor submit)
//   throttle    of wait, the time a rate limit held reads back
//   cpu         CPU time the thread used (checksums, framing, system calls)
// read_busy and write_busy overlap when reads and writes run together, which is the goal.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/json.h"

namespace stripeback::engine {

// A tape drive's side of a channel (see tape/io_helper.h).
struct TapeStats {
  std::string drive;
  bool async = true;            // a helper thread wrote while the channel produced
  uint64_t bytes = 0, commands = 0;
  double write_s = 0, write_mb_s = 0;
  uint64_t stalls = 0;          // the drive waited for data: the shoe-shine risk
  double stall_s = 0;
  uint64_t producer_waits = 0;  // the channel waited for a free tape buffer
  double producer_wait_s = 0;
  uint32_t volume_changes = 0;

  void to_json(util::JsonWriter& w) const;
  std::string to_text() const;  // one indented line
};

// A channel's NFS traffic (its own connections), like dNFS's per-channel views.
struct NfsChannelStats {
  std::string servers;  // addresses this channel used
  uint64_t rpcs = 0, bytes_read = 0, bytes_written = 0;
  uint64_t retries = 0;     // requests sent again after a deadline or a lost connection
  uint64_t reconnects = 0;  // fresh connections after a failure
  uint64_t commits = 0;     // COMMITs that made UNSTABLE writes durable
  uint64_t rewritten = 0;   // bytes written again: a COMMIT showed a new write verifier
  double avg_latency_ms = 0, max_latency_ms = 0;
  uint32_t read_size = 0, write_size = 0;  // request sizes after the server's limits
  void to_json(util::JsonWriter& w) const;
  std::string to_text() const;  // one indented summary line
};

struct ChannelStats {
  uint32_t channel = 0;
  std::string io_engine;  // "io_uring" or "sync"
  bool direct_source = false, direct_sink = false;
  uint64_t files = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t frames = 0, zero_frames = 0;
  uint64_t reads = 0, writes = 0;
  uint32_t pieces = 0;
  uint64_t bytes_compressed_in = 0, bytes_compressed_out = 0;  // data frames only
  double compress_s = 0;   // CPU spent compressing (or decompressing, in a restore)
  double encrypt_s = 0;    // CPU spent sealing (or opening, in a restore) frames
  std::map<int, uint64_t> level_bytes;  // raw bytes given to the compressor, by zstd level
  bool throttled = false;  // a rate limit held reads back
  double throttle_s = 0;   // of wait_s, time spent waiting for read tokens
  double elapsed_s = 0, read_busy_s = 0, write_busy_s = 0, wait_s = 0, cpu_s = 0;
  std::optional<TapeStats> tape;  // set when the channel wrote to (or read from) tape
  std::optional<NfsChannelStats> nfs;  // set when the channel used NFS

  void to_json(util::JsonWriter& w) const;
};

// Accumulates busy and wait time from a series of marks on one thread.
class BusyClock {
 public:
  using Clock = std::chrono::steady_clock;
  BusyClock();
  // Attributes the time since the last mark to the states that held during it.
  void mark(bool reading, bool writing, bool waiting, ChannelStats& s);
  void finish(ChannelStats& s);  // sets elapsed and cpu

 private:
  Clock::time_point start_, last_;
  double cpu_start_;
};

double thread_cpu_seconds();

// Fills s.nfs from the calling thread's NFS connections (nothing if it made none) and
// closes them. Call at the end of a channel, on its thread.
void collect_nfs_stats(ChannelStats& s);

// What bounded a job, from its channel stats: "read", "write", "cpu" or "balanced".
std::string verdict(const std::vector<ChannelStats>& channels);

}  // namespace stripeback::engine
