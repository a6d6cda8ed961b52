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

#include "catalog/job_record.h"
#include "engine/monitor/progress.h"
#include "storage/storage.h"

namespace stripeback::engine {

struct ChannelStats {
  uint32_t channel = 0;
  std::string io_engine;  // the loop's queues, IoLoop::names(): "io_uring", "sync", or several joined by "+"
  bool direct_source = false, direct_sink = false;
  uint64_t files = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t frames = 0, zero_frames = 0;
  uint64_t reads = 0, writes = 0;
  uint32_t pieces = 0;
  uint32_t checkpoints = 0;  // pieces closed at a checkpoint (not at their size limit or end)
  uint64_t bytes_compressed_in = 0, bytes_compressed_out = 0;  // data frames only
  double compress_s = 0;   // CPU spent compressing (or decompressing, in a restore)
  double page_check_s = 0;  // CPU spent in page checks (--check-logical)
  uint64_t pages_checked = 0, pages_retried = 0, pages_corrupt = 0;
  double encrypt_s = 0;    // CPU spent sealing (or opening, in a restore) frames
  std::map<int, uint64_t> level_bytes;  // raw bytes given to the compressor, by zstd level
  bool throttled = false;  // a rate limit held reads back
  double throttle_s = 0;   // of wait_s, time spent waiting for read tokens
  double elapsed_s = 0, read_busy_s = 0, write_busy_s = 0, wait_s = 0, cpu_s = 0;
  // Of wait_s: blocked with only reads in flight, with only writes in flight (a wait with
  // both counts half to each).
  double wait_read_s = 0, wait_write_s = 0;
  double start_s = 0;  // when the channel began, seconds after the job began
  // How long the channel waited for each read and each write completion (and piece sync),
  // in the classes of catalog/job_record.h: see add_wait().
  catalog::WaitCounts read_waits, write_waits;
  uint32_t buffers = 0, buffer_size = 0;
  uint32_t multiplexing = 1;  // files read at once
  // Per file the channel did I/O on: at most kMaxFileIo, the first begun (files are handed
  // out largest first); file_io_dropped counts the files past the bound.
  std::vector<catalog::FileIoRecord> file_io;
  uint64_t file_io_dropped = 0;
  static constexpr size_t kMaxFileIo = catalog::JobRecord::kMaxFiles;
  // Each backend the channel used publishes its own counters (a server's connections, a
  // drive), rendered by cli/ without knowing their fields.
  std::vector<storage::CounterGroup> backends;
};

// Counts one wait of `ns` in its class, the total and the longest.
void add_wait(catalog::WaitCounts& w, int64_t ns);
// One completed request of `bytes`, which the channel waited `wait_ns` for.
inline void add_io(catalog::IoFigures& f, uint64_t bytes, int64_t wait_ns) {
  ++f.ios;
  f.bytes += bytes;
  add_wait(f.waits, wait_ns);
}

// The per-file figures of a channel, by path: at most ChannelStats::kMaxFileIo entries.
class FileIoIndex {
 public:
  // The index of `path`'s entry in s.file_io (made on first use), or -1 past the bound
  // (counted in s.file_io_dropped, once for consecutive calls with the same path: a file's
  // units or chunks come together).
  int32_t entry(const std::string& path, ChannelStats& s);

 private:
  std::map<std::string, int32_t> at_;
  std::string last_dropped_;
};

// Accumulates busy and wait time from a series of marks on one thread.
class BusyClock {
 public:
  using Clock = std::chrono::steady_clock;
  BusyClock();
  // Attributes the time since the last mark to the states that held during it. With a
  // progress attached, also says what comes next: marks come in pairs around each wait, so
  // a mark of a busy stretch (waiting false) begins a wait for what is in flight, and a mark
  // of a wait begins work on the CPU.
  void mark(bool reading, bool writing, bool waiting, ChannelStats& s);
  // Live progress of this channel (progress.h), or null.
  void attach(ChannelProgress* p) { progress_ = p; }
  ChannelProgress* progress() const { return progress_; }
  void note(ChannelState st) {
    if (progress_) progress_->set(st);
  }
  void add_bytes(uint64_t n) {
    if (progress_) progress_->add_bytes(n);
  }
  // Sets elapsed and cpu, and start_s: when the channel began, after `job_start`.
  void finish(ChannelStats& s, Clock::time_point job_start);
  // The time the thread was blocked with I/O in flight since a completion last took it:
  // what the next completion handled was waited for (0 when it was already there). Costs
  // no clock reading: marks measure it.
  int64_t take_wait_ns() {
    const int64_t w = pending_ns_;
    pending_ns_ = 0;
    return w;
  }
  // When the last mark was made (the end of the last wait, when completions are handled).
  Clock::time_point last() const { return last_; }

 private:
  Clock::time_point start_, last_;
  int64_t pending_ns_ = 0;
  double cpu_start_;
  ChannelProgress* progress_ = nullptr;
};

double thread_cpu_seconds();

// What a verdict needs to know about the job beyond its channels' figures.
struct VerdictInputs {
  std::string source = "local";  // Storage::scheme() of what is read (a restore: the pieces)
  std::string target = "local";  // of what is written; empty when nothing is (validate)
  bool target_removable = false;  // a drive of removable media that must be kept streaming
  bool paced = false;             // --minimize-load spreads the job over its --duration
  unsigned cores = 0;             // 0: this machine's
  bool compress_auto = false;     // the job already uses --compress auto
  // Bytes the job moved (read, or restored): a job that moved none has no verdict, only
  // "none" (its channels' time is set-up, which says nothing about the devices).
  uint64_t bytes = 1;
};

// What bounded a job and why (docs/monitoring.md#the-verdict): the stage, the busy share of
// each stage over the channels' time as evidence, and a suggestion when there is one.
struct Verdict {
  std::string bound_by = "none";  // "read", "write", "cpu", "rate limit", "balanced", "none"
  std::string stage;              // e.g. "source read (local)", "compression CPU", "throttle"
  // Shares of the channels' time (0..1): some read in flight, some write in flight, on the
  // CPU (and of that compressing, sealing, checking pages), held back by a rate; blocked
  // waiting for reads, for writes; not blocked at all (working, or waiting for a core).
  double read = 0, write = 0, cpu = 0, compress = 0, encrypt = 0, page_checks = 0,
         throttle = 0, wait_read = 0, wait_write = 0, working = 0;
  double machine_cpu = 0;  // CPU used of all the machine's cores over the job
  std::string evidence;    // the shares in words
  std::string suggestion;  // empty when there is none
};
Verdict explain_verdict(const std::vector<ChannelStats>& channels, const VerdictInputs& in);

}  // namespace stripeback::engine
