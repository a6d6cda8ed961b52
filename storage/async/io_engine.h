// IoEngine: owned and driven by one thread only. The local and NFS storages keep one per
// thread's IoLoop, as a queue of it (engine_queue.h).
//
// Requests are plain data. submit() queues them and never blocks; reap() returns
// completions, waiting at most until a deadline. Two implementations:
//   - UringEngine: one io_uring ring (liburing); reads and writes are IORING_OP_READ/WRITE,
//     durability is IORING_OP_FSYNC (with IORING_FSYNC_DATASYNC for fdatasync).
//   - SyncEngine: the pread/pwrite fallback used where io_uring is unavailable (seccomp,
//     old kernel) or chosen for the process (set_engine_choice); it performs each op
//     inside submit() and queues the completion.
// Both resubmit the remainder of a short transfer and retry -EAGAIN/-EINTR, the way
// liburing's examples do (giving up after 1000 retries in a row without progress, so a
// non-blocking fd cannot spin forever); a read that returns 0 bytes (end of file) completes
// with what it has. A completion's `result` is the total bytes transferred, or the error
// (with the errno translated once, here).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "stripeback/result.h"

namespace stripeback::io {

enum class OpKind : uint8_t { read, write, fsync, fdatasync };

struct IoOp {
  OpKind kind = OpKind::read;
  int fd = -1;
  uint64_t offset = 0;
  std::byte* buf = nullptr;  // caller-owned; must stay valid until the completion is reaped
  uint32_t len = 0;          // bytes to transfer (0 for fsync/fdatasync)
  uint64_t tag = 0;          // returned unchanged in the completion
  int16_t fixed = -1;        // index of the registered buffer `buf` lies in, or -1
};

struct IoCompletion {
  uint64_t tag = 0;
  OpKind kind = OpKind::read;
  Result<uint32_t> result = uint32_t{0};  // total bytes transferred, or the error
};

using Clock = std::chrono::steady_clock;

class IoEngine {
 public:
  virtual ~IoEngine() = default;
  virtual const char* name() const = 0;  // "io_uring" or "sync"
  // Queues ops. Fails only if the engine itself is broken; per-op failures arrive as
  // completions. Ops beyond the free queue depth are held and submitted as slots free up.
  virtual Result<void> submit(std::span<const IoOp> ops) = 0;
  // Fills `out` with up to out.size() completions. Waits until at least `min_complete`
  // are available or `until` passes; min_complete is capped at out.size() and in_flight(),
  // so nothing is waited for that was never submitted. Returns how many were written.
  virtual size_t reap(std::span<IoCompletion> out, size_t min_complete,
                      Clock::time_point until) = 0;
  // Ops submitted whose completions were not reaped yet.
  virtual size_t in_flight() const = 0;
  // A descriptor that polls readable when completions may be waiting (-1: none), and a
  // request to end a reap() early when `fd` polls readable: together they let one thread
  // wait on two engines at once (local files and NFS) without spinning.
  virtual int wait_fd() const { return -1; }
  virtual void wake_on(int /*fd*/) {}
  // Registers memory regions that ops then name by index (IoOp::fixed): the kernel pins
  // their pages once instead of on every transfer. False when the engine cannot (no
  // io_uring, or the locked-memory limit): ops must then leave `fixed` at -1.
  virtual bool register_buffers(std::span<const std::pair<std::byte*, size_t>> /*regions*/) {
    return false;
  }
};

struct EngineOptions {
  unsigned queue_depth = 64;  // 1..4096: ops the kernel holds at once; more wait in a FIFO
};

// Which engine make_engine() makes, for the whole process.
enum class EngineChoice : uint8_t {
  automatic,  // io_uring, or the sync engine where io_uring cannot be set up
  sync,       // always the sync engine (pread/pwrite)
};
// Applies to engines made from now on; those made before keep theirs. Any thread. The
// program decides (the CLI chooses `sync` for STRIPEBACK_IO=sync): the library does not
// look at the environment for it.
void set_engine_choice(EngineChoice choice);
EngineChoice engine_choice();

// Creates an io_uring engine, or the sync engine when io_uring cannot be set up or the
// process chose it. The first fallback in a process logs one warning saying why.
std::unique_ptr<IoEngine> make_engine(const EngineOptions& opts);
std::unique_ptr<IoEngine> make_sync_engine();
// Returns the io_uring engine or the error that prevented it.
Result<std::unique_ptr<IoEngine>> make_uring_engine(const EngineOptions& opts);

}  // namespace stripeback::io
