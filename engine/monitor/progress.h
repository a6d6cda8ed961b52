// Live progress of a job: what each channel is doing now and how far the job has come.
// Channels write it (relaxed atomics, a store when something changes, nothing else); a
// publisher thread reads it a few times a second and hands snapshots to its sinks: the
// terminal line, --progress-json, the status file `stripeback status` reads
// (status_file.h), and an embedder's callback. One structure for all of them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace stripeback::engine {

enum class ChannelState : uint8_t {
  starting = 0,
  reading,    // waiting for reads in flight (the source, or the pieces in a restore)
  writing,    // waiting for writes or a sync in flight (the target)
  throttled,  // a rate limit holds reads back
  working,    // on the CPU: checksums, compression, encryption, page checks
  idle,       // nothing in flight and nothing to do yet (waiting for buffers or work)
  done,
};
const char* state_name(ChannelState s);

// One channel's part: written by that channel only. A wait interrupted only by a moment of
// work (under 50 ms: the channel woke, found nothing done, and waits again) keeps the time
// it began, so state_s says how long a channel has been waiting for the same thing.
class ChannelProgress {
 public:
  void set(ChannelState s);
  void add_bytes(uint64_t n) { bytes_.fetch_add(n, std::memory_order_relaxed); }
  ChannelState state() const { return static_cast<ChannelState>(state_.load(std::memory_order_relaxed)); }
  int64_t since_ns() const { return since_ns_.load(std::memory_order_relaxed); }
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint8_t> state_{0};
  std::atomic<int64_t> since_ns_{0};  // steady clock, ns
  std::atomic<uint64_t> bytes_{0};
  // Before the current `working`: the state and when it began (the channel's thread only).
  uint8_t before_work_ = 0;
  int64_t before_since_ = 0;
};

// Monotonic time in ns, the clock of since_ns().
int64_t steady_ns();
// Wall-clock time in ns since the epoch.
int64_t wall_ns();

struct ChannelSnapshot {
  uint32_t channel = 0;
  std::string state;
  double state_s = 0;  // seconds in that state
  uint64_t bytes = 0;
};

struct ProgressSnapshot {
  std::string operation;  // "backup", "restore", "validate"
  uint64_t id = 0;        // backup id (0 while none, or for a validation)
  std::string tag;
  int32_t pid = 0;
  std::string host;
  int64_t started_ns = 0;      // wall clock
  int64_t last_update_ns = 0;  // wall clock of this snapshot
  int64_t last_progress_ns = 0;  // wall clock when bytes_done last grew
  uint64_t bytes_done = 0, bytes_total = 0;
  double rate = 0;   // bytes per second over the last seconds
  double eta_s = -1; // -1: unknown
  double hang_after_s = 60;
  bool finished = false;
  std::string verdict;  // what bound the job, once finished
  std::string verdict_stage;       // e.g. "source read (local)", once finished
  std::string verdict_suggestion;  // what to change, once finished (empty: nothing)
  // A backup the ransomware alarm fired on: the rules and figures in one line (empty: not).
  std::string suspicious;
  std::vector<ChannelSnapshot> channels;
};

class JobProgress {
 public:
  JobProgress(std::string operation, std::string tag, double hang_after_s = 60);
  // Called by the job before its channels start.
  void start(uint32_t channels, uint64_t bytes_total);
  void set_id(uint64_t id) { id_.store(id, std::memory_order_relaxed); }
  void add_total(uint64_t n) { total_.fetch_add(n, std::memory_order_relaxed); }
  // Channel i (1-based); the job's channels are made by start().
  ChannelProgress* channel(uint32_t i);
  uint32_t channels() const { return static_cast<uint32_t>(channels_.size()); }
  void finish(std::string verdict, std::string stage = {}, std::string suggestion = {});
  // The ransomware alarm fired (ProgressSnapshot::suspicious); any thread.
  void set_suspicious(std::string line);
  // A consistent-enough picture for display (each field read once); `rate` is over the
  // samples this object kept from earlier snapshots.
  ProgressSnapshot snapshot();

 private:
  std::string operation_, tag_;
  double hang_after_s_;
  int64_t started_ns_;
  std::atomic<uint64_t> id_{0}, total_{0};
  std::vector<std::unique_ptr<ChannelProgress>> channels_;
  std::atomic<bool> started_{false};
  std::mutex mu_;  // snapshot state below
  bool finished_ = false;
  std::string verdict_, verdict_stage_, verdict_suggestion_, suspicious_;
  uint64_t last_done_ = 0;
  int64_t last_progress_ns_ = 0;
  std::vector<std::pair<int64_t, uint64_t>> samples_;  // (steady ns, bytes done)
};

// Calls each sink with a snapshot every `interval` on its own thread, and once more at the
// end (stop(), or the destructor).
class ProgressPublisher {
 public:
  using Sink = std::function<void(const ProgressSnapshot&)>;
  ProgressPublisher(JobProgress& job, std::vector<Sink> sinks,
                    std::chrono::milliseconds interval = std::chrono::milliseconds(250));
  ~ProgressPublisher();
  void stop();

 private:
  void run();
  JobProgress& job_;
  std::vector<Sink> sinks_;
  std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace stripeback::engine
