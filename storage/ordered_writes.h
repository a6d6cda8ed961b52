// OrderedWrites: writes that arrive at any offset turned into one byte stream in offset
// order, for a file on a sequential medium (a tape stream, an object written as parts in
// order). A channel submits its writes as its reads complete, out of order; each is held
// until the bytes before it have arrived, then handed to the medium's sink in order, and
// completes (on the thread's IoLoop, through an InOrderQueue) once the sink took it. Nothing
// here waits: a write behind a gap that never closes is completed as failed when the loop
// would otherwise wait for it forever, or when the file is abandoned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "storage/io_loop.h"
#include "storage/storage.h"

namespace stripeback::storage {

class OrderedWrites;

// The completions of a medium's ordered writes on one IoLoop (one per medium and loop).
class InOrderQueue final : public Queue {
 public:
  explicit InOrderQueue(const char* name) : name_(name) {}
  ~InOrderQueue() override;
  const char* name() const override { return name_; }
  size_t reap(std::span<Completion> out, size_t min_complete, Clock::time_point until) override;
  size_t in_flight() const override { return ready_.size() + held_; }

 private:
  friend class OrderedWrites;
  void done(Completion c) { ready_.push_back(std::move(c)); }
  const char* name_;
  std::deque<Completion> ready_;
  size_t held_ = 0;
  std::vector<OrderedWrites*> files_;  // that queue here
};

class OrderedWrites {
 public:
  // Takes the next bytes of the stream, in order.
  using Sink = std::function<Result<void>(std::span<const std::byte>)>;
  // `name` is the file as shown in messages; `queue_name` the queue's ("tape").
  OrderedWrites(std::string name, const char* queue_name, Sink sink);
  ~OrderedWrites();
  OrderedWrites(const OrderedWrites&) = delete;
  OrderedWrites& operator=(const OrderedWrites&) = delete;

  // A request on `loop`; `key` is the medium's (one queue per medium and loop). Syncs
  // complete at once (durability is the file's commit), reads are refused.
  Result<void> submit(IoLoop& loop, const void* key, const Request& r);
  // A blocking write: its bytes are copied and go when their turn comes.
  Result<void> write_at(const std::byte* buf, size_t len, uint64_t offset);
  // Bytes handed to the sink so far.
  uint64_t next() const { return next_; }
  bool has_held() const { return !held_.empty(); }
  // The first error of the sink or of a missing write, if any.
  const std::optional<Error>& error() const { return error_; }
  void set_error(Error e) { error_ = std::move(e); }
  // Completes every held write as failed (the write before it never came).
  void fail_held();

 private:
  friend class InOrderQueue;
  struct Held {
    const std::byte* data;
    uint32_t len;
    std::optional<uint64_t> tag;  // a request's; none for write_at copies
    std::vector<std::byte> copy;
  };
  void drain();

  std::string name_;
  const char* queue_name_;
  Sink sink_;
  InOrderQueue* queue_ = nullptr;  // of the loop writing this file
  uint64_t next_ = 0;
  std::map<uint64_t, Held> held_;
  std::optional<Error> error_;
};

}  // namespace stripeback::storage
