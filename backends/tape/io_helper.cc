#include "backends/tape/io_helper.h"
#include "util/log.h"

#include <cstdlib>
#include <cstring>

namespace stripeback::tape {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

TapeIoHelper::TapeIoHelper(std::unique_ptr<Volume>& volume, VolumeProvider* spares,
                           uint32_t block_size, size_t buffers, Mode mode)
    : volume_(volume), spares_(spares), bs_(block_size), mode_(mode) {
  buffer_size_ = chunk_bytes(block_size, volume_ ? volume_->drive->max_transfer() : (16u << 20));
  for (size_t i = 0; i < std::max<size_t>(2, buffers); ++i) {
    void* p = nullptr;
    if (posix_memalign(&p, 4096, buffer_size_) != 0) break;
    bufs_.emplace_back(static_cast<uint8_t*>(p), &std::free);
    free_.push_back(i);
  }
  stats_.drive = volume_ ? volume_->url : "";
  stats_.async = mode == Mode::async;
  if (mode_ == Mode::async) thread_ = std::thread([this, logs = util::current_log_sink()] {
      util::ScopedLogSink scope(logs);
      thread_main();
    });
}

TapeIoHelper::~TapeIoHelper() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<void> TapeIoHelper::take_error() {
  if (!error_) return ok();
  return *error_;
}

Result<void> TapeIoHelper::perform(const Job& job) {
  auto t0 = Clock::now();
  Result<void> r;
  if (job.kind == Job::begin) {
    writer_.emplace(volume_, spares_, job.id, bs_);
    r = writer_->begin();
  } else if (job.kind == Job::data) {
    uint8_t* p = bufs_[job.buffer].get();
    const size_t whole = (job.used + bs_ - 1) / bs_ * bs_;
    if (whole == 0) return ok();  // a buffer given back unused
    if (whole > job.used) std::memset(p + job.used, 0, whole - job.used);
    r = writer_->write_blocks({p, whole}, job.used);
    std::lock_guard lock(mu_);
    stats_.bytes += whole;
    ++stats_.commands;
  } else {
    auto loc = writer_->finish();
    if (loc) {
      std::lock_guard lock(mu_);
      done_ = std::move(*loc);
      stats_.volume_changes += writer_->volume_changes();
    } else {
      r = loc.error();
    }
  }
  std::lock_guard lock(mu_);
  stats_.write_s += seconds(Clock::now() - t0);
  return r;
}

void TapeIoHelper::thread_main() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (jobs_.empty() && in_stream_ && !stop_) {
      // Inside a stream with nothing to write: the drive waits for the producer.
      auto t0 = Clock::now();
      ++stats_.stalls;
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty() || !in_stream_; });
      stats_.stall_s += seconds(Clock::now() - t0);
    }
    cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty() && stop_) return;
    Job job = jobs_.front();
    jobs_.pop_front();
    busy_ = true;
    Result<void> r = ok();
    if (!error_) {
      lock.unlock();
      r = perform(job);
      lock.lock();
    }
    busy_ = false;
    if (!r && !error_) error_ = r.error();
    if (job.kind == Job::data) free_.push_back(job.buffer);
    if (job.kind == Job::end) in_stream_ = false;
    cv_.notify_all();
  }
}

Result<void> TapeIoHelper::begin_stream(const StreamId& id) {
  std::unique_lock lock(mu_);
  SB_TRY(take_error());
  if (!first_start_) first_start_ = Clock::now();
  done_.reset();
  if (mode_ == Mode::sync) {
    lock.unlock();
    return perform(Job{Job::begin, 0, 0, id});
  }
  in_stream_ = true;
  jobs_.push_back(Job{Job::begin, 0, 0, id});
  cv_.notify_all();
  return ok();
}

Result<std::span<uint8_t>> TapeIoHelper::acquire() {
  std::unique_lock lock(mu_);
  SB_TRY(take_error());
  if (free_.empty()) {
    auto t0 = Clock::now();
    ++stats_.producer_waits;
    cv_.wait(lock, [&] { return !free_.empty() || error_.has_value(); });
    stats_.producer_wait_s += seconds(Clock::now() - t0);
    SB_TRY(take_error());
  }
  held_ = free_.front();
  free_.pop_front();
  return std::span<uint8_t>(bufs_[*held_].get(), buffer_size_);
}

Result<void> TapeIoHelper::submit(size_t used) {
  std::unique_lock lock(mu_);
  const size_t b = *held_;
  held_.reset();
  if (mode_ == Mode::sync) {
    lock.unlock();
    auto r = perform(Job{Job::data, b, used, {}});
    lock.lock();
    free_.push_back(b);
    return r;
  }
  if (error_) {
    free_.push_back(b);
    return *error_;
  }
  jobs_.push_back(Job{Job::data, b, used, {}});
  cv_.notify_all();
  return ok();
}

Result<StreamLocation> TapeIoHelper::end_stream() {
  std::unique_lock lock(mu_);
  if (mode_ == Mode::sync) {
    lock.unlock();
    SB_TRY(perform(Job{Job::end, 0, 0, {}}));
    lock.lock();
  } else {
    jobs_.push_back(Job{Job::end, 0, 0, {}});
    cv_.notify_all();
    cv_.wait(lock, [&] { return !in_stream_; });
  }
  if (first_start_) stats_.elapsed_s = seconds(Clock::now() - *first_start_);
  SB_TRY(take_error());
  if (!done_) return fail(Errc::io, "tape stream ended without a location");
  return *done_;
}

DriveStats TapeIoHelper::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace stripeback::tape
