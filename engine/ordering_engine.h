// OrderingEngine: the channel's IoEngine when its pieces go to tape. Reads (and anything
// on a real file) pass through to the wrapped engine; writes on a tape piece's placeholder
// descriptor go to that piece's TapePieceOutput, which puts them in piece order and
// completes them once copied toward the drive.
#pragma once

#include <deque>
#include <map>
#include <memory>

#include "engine/tape_sink.h"
#include "io/io_engine.h"

namespace stripeback::engine {

class OrderingEngine final : public io::IoEngine {
 public:
  explicit OrderingEngine(std::unique_ptr<io::IoEngine> inner) : inner_(std::move(inner)) {}
  const char* name() const override { return inner_->name(); }
  void route(TapePieceOutput& out) { routes_[out.fd()] = &out; }
  void unroute(TapePieceOutput& out) { routes_.erase(out.fd()); }

  Result<void> submit(std::span<const io::IoOp> ops) override;
  size_t reap(std::span<io::IoCompletion> out, size_t min_complete,
              io::Clock::time_point until) override;
  size_t in_flight() const override;

 private:
  std::unique_ptr<io::IoEngine> inner_;
  std::map<int, TapePieceOutput*> routes_;
  std::vector<io::IoCompletion> ready_;
};

}  // namespace stripeback::engine
