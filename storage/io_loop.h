// IoLoop: one per channel thread, owned and driven by that thread only. Files submit their
// requests to a Queue of their backend on the loop (made the first time a backend is
// used on it: the thread's io_uring ring, its NFS connections, a tape drive's ordering
// buffer); reap() collects completions from every queue.
//
// With requests in flight on more than one queue, reap() looks at every queue without
// waiting, then waits on the one that can wait on another's descriptor (NFS polls its
// sockets and the ring's eventfd together), so no queue starves another and nothing spins.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "storage/storage.h"

namespace stripeback::storage {

class Queue {
 public:
  virtual ~Queue() = default;
  virtual const char* name() const = 0;  // "io_uring", "sync", "nfs", "tape"
  virtual size_t reap(std::span<Completion> out, size_t min_complete, Clock::time_point until) = 0;
  virtual size_t in_flight() const = 0;
  // Hands requests queued since the last call to the medium (one system call for a batch).
  virtual void flush() {}
  // A descriptor that polls readable when completions may be waiting (-1: none).
  virtual int wait_fd() const { return -1; }
  // Whether reap() can also end early when `fd` polls readable (wake_on(fd) then reap()).
  virtual bool can_wake() const { return false; }
  virtual void wake_on(int /*fd*/) {}
};

class IoLoop {
 public:
  explicit IoLoop(unsigned queue_depth = 64) : depth_(queue_depth) {}
  IoLoop(const IoLoop&) = delete;
  IoLoop& operator=(const IoLoop&) = delete;

  unsigned queue_depth() const { return depth_; }
  // Queues requests; they go out together at the next reap() (or flush()).
  Result<void> submit(const Request& r) { return r.file->submit(*this, r); }
  Result<void> submit(std::span<const Request> rs);
  void flush();
  // Fills `out` with up to out.size() completions, waiting until at least `min_complete`
  // (capped at out.size() and in_flight()) are there or `until` passes.
  size_t reap(std::span<Completion> out, size_t min_complete, Clock::time_point until);
  size_t in_flight() const;
  // Waits for everything in flight (after a failure, so no buffer is freed under the
  // kernel); completions are dropped.
  void drain();

  // The queue a backend keeps on this loop under `key` (any address unique to it), made
  // by `make` on first use.
  template <class Q>
  Q& queue(const void* key, const std::function<std::unique_ptr<Q>()>& make) {
    for (auto& e : queues_)
      if (e.key == key) return static_cast<Q&>(*e.q);
    queues_.push_back({key, make()});
    return static_cast<Q&>(*queues_.back().q);
  }
  // Memory regions requests may name (Request::region), in index order; call before the
  // first request. The regions must outlive the loop's queues.
  void register_buffers(std::vector<std::pair<std::byte*, size_t>> regions) {
    regions_ = std::move(regions);
  }
  const std::vector<std::pair<std::byte*, size_t>>& buffers() const { return regions_; }
  // The names of the queues used, "+"-joined in order of first use ("io_uring+nfs").
  std::string names() const;
  // Drops every queue (after drain()): a channel does this before its backends' per-thread
  // state (connections) goes.
  void close() { queues_.clear(); }

 private:
  struct Entry {
    const void* key;
    std::unique_ptr<Queue> q;
  };
  unsigned depth_;
  std::vector<Entry> queues_;
  std::vector<std::pair<std::byte*, size_t>> regions_;
};

}  // namespace stripeback::storage
