#include "engine/ordering_engine.h"

#include <algorithm>
#include <vector>

namespace stripeback::engine {

Result<void> OrderingEngine::submit(std::span<const io::IoOp> ops) {
  std::vector<io::IoOp> pass;
  for (const io::IoOp& op : ops) {
    auto it = routes_.find(op.fd);
    if (it == routes_.end())
      pass.push_back(op);
    else
      it->second->accept(op, ready_);
  }
  if (!pass.empty()) return inner_->submit(pass);
  return ok();
}

size_t OrderingEngine::reap(std::span<io::IoCompletion> out, size_t min_complete,
                            io::Clock::time_point until) {
  // Frames are placed and submitted in piece order within one submit batch, so a write
  // still held when nothing else is in flight waits for one that will never come (the
  // channel failed between placing and submitting): fail it rather than wait for ever.
  if (ready_.empty() && inner_->in_flight() == 0)
    for (auto& [fd, o] : routes_)
      if (o->held() > 0) o->fail_held(ready_);
  size_t n = std::min(out.size(), ready_.size());
  for (size_t i = 0; i < n; ++i) out[i] = std::move(ready_[i]);
  ready_.erase(ready_.begin(), ready_.begin() + static_cast<std::ptrdiff_t>(n));
  if (n < out.size() && inner_->in_flight() > 0) {
    const size_t want = n >= min_complete ? 0 : min_complete - n;
    n += inner_->reap(out.subspan(n), want, want == 0 ? io::Clock::now() : until);
  }
  return n;
}

size_t OrderingEngine::in_flight() const {
  size_t held = 0;
  for (const auto& [fd, out] : routes_) held += out->held();
  return inner_->in_flight() + ready_.size() + held;
}

}  // namespace stripeback::engine
