// EngineQueue: an IoEngine (io_uring ring, pread/pwrite fallback, the NFS engine) as a Queue
// of a thread's IoLoop. Requests queued between two reaps go to the engine in one submit;
// regions registered with the loop are registered with the engine when it can use them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "storage/async/io_engine.h"
#include "storage/io_loop.h"

namespace stripeback::io {

OpKind op_kind(storage::OpKind k);
storage::OpKind op_kind(OpKind k);

class EngineQueue final : public storage::Queue {
 public:
  // `name`: for IoLoop::names() (empty: the engine's). `can_wake`: the engine's reap() can also end when another queue's descriptor polls
  // readable (the NFS engine polls its sockets).
  EngineQueue(std::unique_ptr<IoEngine> engine, std::string name, bool can_wake,
              const std::vector<std::pair<std::byte*, size_t>>& regions);
  const char* name() const override { return name_.c_str(); }
  // Queues `r` as an op on descriptor (or engine file id) `fd`.
  void add(int fd, const storage::Request& r);
  void flush() override;
  size_t reap(std::span<storage::Completion> out, size_t min_complete,
              storage::Clock::time_point until) override;
  size_t in_flight() const override;
  int wait_fd() const override { return engine_->wait_fd(); }
  bool can_wake() const override { return can_wake_; }
  void wake_on(int fd) override { engine_->wake_on(fd); }

 private:
  std::unique_ptr<IoEngine> engine_;
  std::string name_;
  bool can_wake_;
  bool fixed_;  // the regions are registered with the engine
  std::vector<IoOp> pending_;
  std::vector<storage::Completion> failed_;  // of a batch the engine refused as a whole
  std::vector<IoCompletion> comps_;
};

}  // namespace stripeback::io
