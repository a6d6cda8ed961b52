// TapeIoHelper: one per drive, like the reference system's tape I/O slaves. A thread owns
// the drive's StreamWriter and writes from a ring of buffers while the producer (a backup
// channel) fills the next ones, so the drive keeps streaming instead of waiting for each
// buffer to be produced ("shoe-shining").
//
// Producer API (one producer thread): begin_stream, then acquire/submit buffers, then
// end_stream. Buffers are whole multiples of the block size; the last one of a stream may
// be partly filled (the helper zero-pads it to a block). A write failure is reported by the
// next producer call and ends the stream.
//
// Mode::sync runs every write on the producer's thread instead (no overlap): for
// comparison, and reported as synchronous I/O in the stats.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "stripeback/result.h"
#include "backends/tape/stream.h"

namespace stripeback::tape {

struct DriveStats {
  std::string drive;
  bool async = true;
  uint64_t bytes = 0;         // data bytes written to tape (headers and padding included)
  uint64_t commands = 0;      // WRITE(6) commands
  double write_s = 0;         // time inside tape writes, filemarks and positioning
  double elapsed_s = 0;       // from the first stream's start to the last one's end
  uint64_t stalls = 0;        // the drive thread waited for data inside a stream
  double stall_s = 0;
  uint64_t producer_waits = 0;  // the producer waited for a free buffer (drive is the limit)
  double producer_wait_s = 0;
  uint32_t volume_changes = 0;
  double write_mb_s() const { return write_s > 0 ? static_cast<double>(bytes) / write_s / 1e6 : 0; }
};

class TapeIoHelper {
 public:
  enum class Mode : bool { sync, async };
  // `volume` is the drive's current volume slot (the helper thread uses it between
  // begin_stream and end_stream); `spares` may be null.
  TapeIoHelper(std::unique_ptr<Volume>& volume, VolumeProvider* spares, uint32_t block_size,
               size_t buffers, Mode mode);
  ~TapeIoHelper();
  TapeIoHelper(const TapeIoHelper&) = delete;
  TapeIoHelper& operator=(const TapeIoHelper&) = delete;

  size_t buffer_size() const { return buffer_size_; }

  Result<void> begin_stream(const StreamId& id);
  // A free buffer of buffer_size() bytes (waits for one while the drive writes).
  Result<std::span<uint8_t>> acquire();
  // Queues the acquired buffer with its first `used` bytes as stream data.
  Result<void> submit(size_t used);
  // Waits for every queued buffer, closes the stream's tape file, returns its location.
  Result<StreamLocation> end_stream();

  DriveStats stats() const;

 private:
  struct Job {
    enum Kind { begin, data, end } kind;
    size_t buffer = 0;
    size_t used = 0;
    StreamId id;
  };
  void thread_main();
  Result<void> perform(const Job& job);  // on the helper thread (or the caller's in sync mode)
  Result<void> take_error();

  std::unique_ptr<Volume>& volume_;
  VolumeProvider* spares_;
  uint32_t bs_;
  size_t buffer_size_;
  Mode mode_;
  std::vector<std::unique_ptr<uint8_t, void (*)(void*)>> bufs_;
  std::optional<StreamWriter> writer_;
  std::optional<StreamLocation> done_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<size_t> free_;
  std::deque<Job> jobs_;
  std::optional<size_t> held_;  // acquired, not yet submitted
  std::optional<Error> error_;
  bool in_stream_ = false, stop_ = false, busy_ = false;
  DriveStats stats_;
  std::optional<std::chrono::steady_clock::time_point> first_start_;
  std::thread thread_;
};

}  // namespace stripeback::tape
