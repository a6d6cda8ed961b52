// What both engines share: completion semantics for partial transfers, and the choice of
// engine for a process.
#include "storage/async/io_engine.h"

#include <atomic>
#include <cerrno>
#include <mutex>
#include <utility>

#include "storage/async/op_progress.h"
#include "util/log.h"

namespace stripeback::io {
namespace detail {
namespace {

// A regular file never returns EAGAIN for long, but a non-blocking fd can do so forever;
// the bound turns what would be a silent livelock into an error completion.
constexpr uint32_t kMaxRetries = 1000;

const char* kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::read:
      return "read";
    case OpKind::write:
      return "write";
    case OpKind::fsync:
      return "fsync";
    case OpKind::fdatasync:
      return "fdatasync";
  }
  return "op";
}

IoCompletion finish(const OpProgress& p, Result<uint32_t> result) {
  return IoCompletion{p.op.tag, p.op.kind, std::move(result)};
}

}  // namespace

std::string describe(const OpProgress& p) {
  std::string text = kind_name(p.op.kind);
  if (p.op.kind == OpKind::read || p.op.kind == OpKind::write) {
    text += " at offset " + std::to_string(p.next_offset());
  }
  return text;
}

std::optional<IoCompletion> apply_result(OpProgress& p, int64_t res) {
  if (res == -EAGAIN || res == -EINTR) {
    if (++p.retries < kMaxRetries) return std::nullopt;
    return finish(p, sys_error(static_cast<int>(-res), describe(p) + " failed"));
  }
  p.retries = 0;
  const bool transfer = p.op.kind == OpKind::read || p.op.kind == OpKind::write;
  if (res < 0) {
    // After a short O_DIRECT read at end of file the remainder starts unaligned, which some
    // file systems reject with EINVAL instead of returning 0. The first part proved the fd
    // and buffer are fine, so this is end of file, not an error.
    if (res == -EINVAL && p.op.kind == OpKind::read && p.done > 0) return finish(p, p.done);
    return finish(p, sys_error(static_cast<int>(-res), describe(p) + " failed"));
  }
  if (!transfer) return finish(p, uint32_t{0});

  const uint32_t got =
      res > static_cast<int64_t>(p.remaining()) ? p.remaining() : static_cast<uint32_t>(res);
  p.done += got;
  if (p.remaining() == 0) return finish(p, p.done);
  // A short transfer continues; a read that made no progress is at end of file; a write
  // that made none would only spin, so it is reported.
  if (got > 0) return std::nullopt;
  if (p.op.kind == OpKind::read) return finish(p, p.done);
  return finish(p, Error{Errc::io, 0, describe(p) + " failed: no bytes written"});
}

}  // namespace detail

namespace {

std::atomic<EngineChoice> g_choice{EngineChoice::automatic};

}  // namespace

void set_engine_choice(EngineChoice choice) { g_choice.store(choice, std::memory_order_relaxed); }

EngineChoice engine_choice() { return g_choice.load(std::memory_order_relaxed); }

std::unique_ptr<IoEngine> make_engine(const EngineOptions& opts) {
  if (engine_choice() == EngineChoice::sync) {
    static std::once_flag logged;
    std::call_once(logged, [] {
      util::log_info("io_uring not used: the program chose the pread/pwrite engine");
    });
    return make_sync_engine();
  }
  auto uring = make_uring_engine(opts);
  if (uring.has_value()) return std::move(uring).value();
  // Every channel makes an engine; one line per process is enough to explain the fallback.
  static std::once_flag warned;
  std::call_once(warned, [&uring] {
    util::log_warn("io_uring unavailable (" + uring.error().what + "); using the pread/pwrite path");
  });
  return make_sync_engine();
}

}  // namespace stripeback::io
