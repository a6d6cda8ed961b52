// UringEngine: one io_uring ring per channel.
//
// Every op accepted by the kernel owns a slot in a fixed table (user_data is the slot
// index) that remembers how much of it is done, so a short transfer or -EAGAIN/-EINTR is
// reissued from the same slot without the caller seeing it. At most queue_depth slots
// exist, which keeps the CQ (twice the SQ size) from ever overflowing; ops beyond that wait
// in a FIFO and go out as completions free slots.
#include <liburing.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "storage/async/io_engine.h"
#include "util/log.h"
#include "storage/async/op_progress.h"

namespace stripeback::io {
namespace {

// Beyond this a ring costs pinned memory without helping a single channel.
constexpr unsigned kMaxQueueDepth = 4096;
// How long destruction waits for cancelled ops still in the kernel.
constexpr auto kDestroyWait = std::chrono::seconds(10);
// user_data of cancel requests; never a slot index.
constexpr uint64_t kCancelTag = ~uint64_t{0} - 1;

// liburing maps and unmaps a ring's memory with raw system calls that ThreadSanitizer does
// not see, so when a new ring (on another channel's thread) gets the addresses of one just
// torn down, the new owner's writes look unordered with the old owner's. Each teardown
// publishes through this counter before the unmap, and each setup reads it after the map:
// the order the kernel already imposes (unmap before a reuse of the address) becomes one
// the happens-before analysis sees. It costs one atomic add per ring.
std::atomic<uint64_t> ring_handoffs{0};

__kernel_timespec to_timespec(Clock::duration d) {
  const auto ns =
      std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
  return __kernel_timespec{ns / 1'000'000'000, ns % 1'000'000'000};
}

class UringEngine final : public IoEngine {
 public:
  static Result<std::unique_ptr<IoEngine>> create(unsigned depth);
  UringEngine(const UringEngine&) = delete;
  UringEngine& operator=(const UringEngine&) = delete;
  ~UringEngine() override;

  const char* name() const override { return "io_uring"; }
  Result<void> submit(std::span<const IoOp> ops) override;
  size_t reap(std::span<IoCompletion> out, size_t min_complete, Clock::time_point until) override;
  size_t in_flight() const override { return active_ + held_.size() + ready_.size(); }
  int wait_fd() const override { return ring_.ring_fd; }
  bool register_buffers(std::span<const std::pair<std::byte*, size_t>> regions) override {
    std::vector<iovec> iov;
    for (const auto& [p, n] : regions) iov.push_back({p, n});
    if (iov.empty()) return false;
    return io_uring_register_buffers(&ring_, iov.data(), static_cast<unsigned>(iov.size())) == 0;
  }

 private:
  explicit UringEngine(unsigned depth) : slots_(depth) {
    free_slots_.reserve(depth);
    for (unsigned i = depth; i > 0; --i) free_slots_.push_back(i - 1);
  }
  void cancel_and_wait();
  void prepare(io_uring_sqe* sqe, uint32_t slot);
  Result<void> flush();
  void drain_cq();
  void on_cqe(uint64_t user_data, int res);
  bool wait(size_t wanted, Clock::time_point until);
  // Slots whose current transfer the kernel has accepted (not merely queued in the SQ).
  unsigned in_kernel() const { return active_ - io_uring_sq_ready(&ring_); }

  io_uring ring_{};
  bool ring_ready_ = false;
  std::vector<detail::OpProgress> slots_;
  std::vector<uint32_t> free_slots_;
  unsigned active_ = 0;             // slots in use
  std::deque<IoOp> held_;           // submitted, waiting for a slot
  std::deque<IoCompletion> ready_;  // finished, waiting for reap()
  bool error_logged_ = false;       // a broken ring is reported once, not on every reap
};

Result<std::unique_ptr<IoEngine>> UringEngine::create(unsigned depth) {
  if (depth == 0 || depth > kMaxQueueDepth) {
    return fail(Errc::invalid_argument, "io_uring queue depth must be between 1 and " +
                                            std::to_string(kMaxQueueDepth) + ", got " +
                                            std::to_string(depth));
  }
  std::unique_ptr<UringEngine> engine(new UringEngine(depth));
  const int rc = io_uring_queue_init(depth, &engine->ring_, 0);
  if (rc < 0) {
    return sys_error(-rc, "unable to set up an io_uring of depth " + std::to_string(depth));
  }
  engine->ring_ready_ = true;
  ring_handoffs.fetch_add(1, std::memory_order_acq_rel);
  // Kernels 5.1-5.5 set up a ring but reject IORING_OP_READ/WRITE in every completion;
  // finding out here lets make_engine() fall back instead of failing each read.
  io_uring_probe* probe = io_uring_get_probe_ring(&engine->ring_);
  const bool usable = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_READ) &&
                      io_uring_opcode_supported(probe, IORING_OP_WRITE) &&
                      io_uring_opcode_supported(probe, IORING_OP_FSYNC);
  if (probe != nullptr) io_uring_free_probe(probe);
  if (!usable) {
    return fail(Errc::unsupported,
                "this kernel's io_uring lacks read/write operations (Linux 5.6 or later needed)");
  }
  return std::unique_ptr<IoEngine>(std::move(engine));
}

UringEngine::~UringEngine() {
  if (!ring_ready_) return;
  if (active_ > 0) cancel_and_wait();
  ring_handoffs.fetch_add(1, std::memory_order_acq_rel);
  io_uring_queue_exit(&ring_);
}

// The caller should have reaped everything. Ops the kernel still holds would write into
// buffers the caller frees next, and a read from a pipe may never finish by itself, so
// cancel them and wait (bounded) for their completions before the ring goes away.
void UringEngine::cancel_and_wait() {
  if (const int rc = io_uring_submit(&ring_); rc < 0) {
    util::log_warn(std::string("io_uring submit before teardown failed: ") + std::strerror(-rc));
  }
  unsigned pending = in_kernel();
  std::vector<bool> busy(slots_.size(), true);
  for (uint32_t slot : free_slots_) busy[slot] = false;
  for (uint32_t slot = 0; slot < slots_.size(); ++slot) {
    io_uring_sqe* sqe = busy[slot] ? io_uring_get_sqe(&ring_) : nullptr;
    if (sqe == nullptr) continue;
    io_uring_prep_cancel64(sqe, slot, 0);
    io_uring_sqe_set_data64(sqe, kCancelTag);  // outside the slot range: ignored below
  }
  if (const int rc = io_uring_submit(&ring_); rc < 0) {
    util::log_warn(std::string("io_uring cancel before teardown failed: ") + std::strerror(-rc));
  }
  const auto give_up = Clock::now() + kDestroyWait;
  while (pending > 0 && Clock::now() < give_up) {
    io_uring_cqe* cqe = nullptr;
    __kernel_timespec ts = to_timespec(std::chrono::milliseconds(100));
    const int rc = io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
    if (rc == -ETIME || rc == -EINTR) continue;
    if (rc < 0 || cqe == nullptr) break;
    if (io_uring_cqe_get_data64(cqe) < slots_.size()) --pending;
    io_uring_cqe_seen(&ring_, cqe);
  }
  if (pending > 0) util::log_warn("io_uring engine destroyed with " + std::to_string(pending) + " ops still running");
}

void UringEngine::prepare(io_uring_sqe* sqe, uint32_t slot) {
  const detail::OpProgress& p = slots_[slot];
  switch (p.op.kind) {
    case OpKind::read:
      if (p.op.fixed >= 0)
        io_uring_prep_read_fixed(sqe, p.op.fd, p.next_buf(), p.remaining(), p.next_offset(),
                                 p.op.fixed);
      else
        io_uring_prep_read(sqe, p.op.fd, p.next_buf(), p.remaining(), p.next_offset());
      break;
    case OpKind::write:
      if (p.op.fixed >= 0)
        io_uring_prep_write_fixed(sqe, p.op.fd, p.next_buf(), p.remaining(), p.next_offset(),
                                  p.op.fixed);
      else
        io_uring_prep_write(sqe, p.op.fd, p.next_buf(), p.remaining(), p.next_offset());
      break;
    case OpKind::fsync:
      io_uring_prep_fsync(sqe, p.op.fd, 0);
      break;
    case OpKind::fdatasync:
      io_uring_prep_fsync(sqe, p.op.fd, IORING_FSYNC_DATASYNC);
      break;
  }
  io_uring_sqe_set_data64(sqe, slot);
}

Result<void> UringEngine::submit(std::span<const IoOp> ops) {
  held_.insert(held_.end(), ops.begin(), ops.end());
  return flush();
}

Result<void> UringEngine::flush() {
  while (!held_.empty() && !free_slots_.empty()) {
    // Every prepared SQE belongs to a slot in use, so a free slot implies a free SQE.
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) break;
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    ++active_;
    slots_[slot] = detail::OpProgress{held_.front()};
    held_.pop_front();
    prepare(sqe, slot);
  }
  if (io_uring_sq_ready(&ring_) == 0) return ok();
  const int rc = io_uring_submit(&ring_);
  // On a transient shortage the SQEs stay in the ring and go out with the next submit.
  if (rc >= 0 || rc == -EAGAIN || rc == -EBUSY || rc == -EINTR) return ok();
  return sys_error(-rc, "io_uring submit failed");
}

void UringEngine::on_cqe(uint64_t user_data, int res) {
  if (user_data >= slots_.size()) return;  // not an op of ours (liburing's own timeouts)
  const auto slot = static_cast<uint32_t>(user_data);
  detail::OpProgress& p = slots_[slot];
  std::optional<IoCompletion> done = detail::apply_result(p, res);
  if (!done) {
    if (io_uring_sqe* sqe = io_uring_get_sqe(&ring_)) {
      prepare(sqe, slot);  // submitted by the flush() that follows every drain
      return;
    }
    done = IoCompletion{p.op.tag, p.op.kind,
                        sys_error(EBUSY, detail::describe(p) + " could not be reissued")};
  }
  ready_.push_back(std::move(*done));
  free_slots_.push_back(slot);
  --active_;
}

void UringEngine::drain_cq() {
  io_uring_cqe* cqe = nullptr;
  while (io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe != nullptr) {
    const uint64_t user_data = io_uring_cqe_get_data64(cqe);
    const int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    on_cqe(user_data, res);
  }
}

// Waits until `wanted` CQEs are ready or `until` passes. False if waiting is broken.
bool UringEngine::wait(size_t wanted, Clock::time_point until) {
  const unsigned accepted = in_kernel();
  if (accepted == 0) {
    // Everything is still queued in the SQ after a transient submit failure: back off
    // briefly and let the caller's loop submit again.
    std::this_thread::sleep_for(
        std::min<Clock::duration>(std::chrono::milliseconds(1), until - Clock::now()));
    return true;
  }
  const auto wait_nr = static_cast<unsigned>(std::min<size_t>(wanted, accepted));
  __kernel_timespec ts = to_timespec(until - Clock::now());
  io_uring_cqe* cqe = nullptr;
  const int rc = io_uring_wait_cqes(&ring_, &cqe, wait_nr, &ts, nullptr);
  if (rc == 0 || rc == -ETIME || rc == -EINTR || rc == -EAGAIN) return true;
  if (!error_logged_) {
    util::log_error(std::string("io_uring wait failed: ") + std::strerror(-rc));
    error_logged_ = true;
  }
  return false;
}

size_t UringEngine::reap(std::span<IoCompletion> out, size_t min_complete,
                         Clock::time_point until) {
  // Waiting for more than can ever arrive would only burn the whole deadline.
  min_complete = std::min({min_complete, out.size(), in_flight()});
  size_t n = 0;
  for (;;) {
    drain_cq();
    if (auto submitted = flush(); !submitted.has_value() && !error_logged_) {
      util::log_error(submitted.error().what);
      error_logged_ = true;
    }
    while (n < out.size() && !ready_.empty()) {
      out[n++] = std::move(ready_.front());
      ready_.pop_front();
    }
    if (n >= min_complete || Clock::now() >= until) return n;
    if (!wait(min_complete - n, until)) return n;
  }
}

}  // namespace

Result<std::unique_ptr<IoEngine>> make_uring_engine(const EngineOptions& opts) {
  return UringEngine::create(opts.queue_depth);
}

}  // namespace stripeback::io
