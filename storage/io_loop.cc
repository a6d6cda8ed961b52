#include "storage/io_loop.h"

#include <algorithm>

namespace stripeback::storage {

Result<void> IoLoop::submit(std::span<const Request> rs) {
  for (const Request& r : rs) SB_TRY(r.file->submit(*this, r));
  return ok();
}

void IoLoop::flush() {
  for (auto& e : queues_) e.q->flush();
}

size_t IoLoop::in_flight() const {
  size_t n = 0;
  for (const auto& e : queues_) n += e.q->in_flight();
  return n;
}

size_t IoLoop::reap(std::span<Completion> out, size_t min_complete, Clock::time_point until) {
  flush();
  min_complete = std::min({min_complete, out.size(), in_flight()});
  Queue* busy = nullptr;
  size_t busy_count = 0;
  for (auto& e : queues_)
    if (e.q->in_flight() > 0) {
      busy = e.q.get();
      ++busy_count;
    }
  if (busy_count == 0) return 0;
  if (busy_count == 1) return busy->reap(out, min_complete, until);
  // Several queues: one that can wait on another's descriptor waits for both; the rest
  // are looked at without waiting in between.
  Queue* waiter = nullptr;
  int fd = -1;
  for (auto& e : queues_)
    if (e.q->in_flight() > 0 && e.q->can_wake() && !waiter) waiter = e.q.get();
  for (auto& e : queues_)
    if (e.q.get() != waiter && e.q->in_flight() > 0 && e.q->wait_fd() >= 0) fd = e.q->wait_fd();
  if (waiter) waiter->wake_on(fd);
  size_t n = 0;
  for (;;) {
    for (auto& e : queues_) {
      if (n == out.size()) break;
      if (e.q.get() != waiter && e.q->in_flight() > 0)
        n += e.q->reap(out.subspan(n), 0, Clock::now());
    }
    if (n >= min_complete || n == out.size() || Clock::now() >= until) break;
    auto slice = std::min(until, Clock::now() + std::chrono::milliseconds(1));
    if (waiter && waiter->in_flight() > 0) {
      n += waiter->reap(out.subspan(n), 1, fd >= 0 ? until : slice);
    } else {
      // Nothing can wait for two: short waits on each in turn.
      for (auto& e : queues_)
        if (e.q->in_flight() > 0 && n < out.size()) {
          n += e.q->reap(out.subspan(n), 1, slice);
          break;
        }
    }
    if (n >= min_complete || n == out.size() || Clock::now() >= until) break;
  }
  if (waiter) waiter->wake_on(-1);
  return n;
}

void IoLoop::drain() {
  std::vector<Completion> comps(64);
  while (in_flight() > 0) reap(comps, 1, Clock::now() + std::chrono::milliseconds(200));
}

std::string IoLoop::names() const {
  std::string s;
  for (const auto& e : queues_) s += (s.empty() ? "" : "+") + std::string(e.q->name());
  return s;
}

}  // namespace stripeback::storage
