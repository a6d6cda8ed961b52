// SyncEngine: the pread/pwrite path for where io_uring is unavailable or unwanted.
//
// Each op runs to completion inside submit(), so the calling channel thread blocks on the
// device the way any read loop would; reap() only hands over what is already done. The
// retry and short-transfer rules are shared with the io_uring engine (op_progress.h).
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <limits>
#include <utility>

#include "storage/async/io_engine.h"
#include "storage/async/op_progress.h"

namespace stripeback::io {
namespace {

// Issues the transfer p describes once. Returns bytes transferred or -errno.
int64_t issue(const detail::OpProgress& p) {
  const int fd = p.op.fd;
  if ((p.op.kind == OpKind::read || p.op.kind == OpKind::write) &&
      p.next_offset() > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) {
    return -EINVAL;  // would turn negative as an off_t
  }
  const auto offset = static_cast<off_t>(p.next_offset());
  ssize_t rc = 0;
  switch (p.op.kind) {
    case OpKind::read:
      rc = ::pread(fd, p.next_buf(), p.remaining(), offset);
      break;
    case OpKind::write:
      rc = ::pwrite(fd, p.next_buf(), p.remaining(), offset);
      break;
    case OpKind::fsync:
      rc = ::fsync(fd);
      break;
    case OpKind::fdatasync:
      rc = ::fdatasync(fd);
      break;
  }
  return rc < 0 ? -static_cast<int64_t>(errno) : static_cast<int64_t>(rc);
}

IoCompletion perform(const IoOp& op) {
  detail::OpProgress p{op};
  for (;;) {
    if (auto done = detail::apply_result(p, issue(p))) return std::move(*done);
  }
}

class SyncEngine final : public IoEngine {
 public:
  const char* name() const override { return "sync"; }

  Result<void> submit(std::span<const IoOp> ops) override {
    for (const IoOp& op : ops) done_.push_back(perform(op));
    return ok();
  }

  // Everything submitted has completed already, so there is never anything to wait for.
  size_t reap(std::span<IoCompletion> out, size_t /*min_complete*/,
              Clock::time_point /*until*/) override {
    size_t n = 0;
    while (n < out.size() && !done_.empty()) {
      out[n++] = std::move(done_.front());
      done_.pop_front();
    }
    return n;
  }

  size_t in_flight() const override { return done_.size(); }

 private:
  std::deque<IoCompletion> done_;
};

}  // namespace

std::unique_ptr<IoEngine> make_sync_engine() { return std::make_unique<SyncEngine>(); }

}  // namespace stripeback::io
