#include "storage/ordered_writes.h"

#include <algorithm>

namespace stripeback::storage {

InOrderQueue::~InOrderQueue() {
  for (OrderedWrites* f : files_) f->queue_ = nullptr;
}

size_t InOrderQueue::reap(std::span<Completion> out, size_t min_complete, Clock::time_point) {
  if (ready_.empty() && min_complete > 0) {
    // Held writes wait for one the caller has not sent, and the caller waits here: they
    // can never complete.
    auto files = files_;
    for (OrderedWrites* f : files) f->fail_held();
  }
  size_t n = 0;
  while (n < out.size() && !ready_.empty()) {
    out[n++] = std::move(ready_.front());
    ready_.pop_front();
  }
  return n;
}

OrderedWrites::OrderedWrites(std::string name, const char* queue_name, Sink sink)
    : name_(std::move(name)), queue_name_(queue_name), sink_(std::move(sink)) {}

OrderedWrites::~OrderedWrites() {
  if (queue_) {
    queue_->held_ -= held_.size();
    auto& fs = queue_->files_;
    fs.erase(std::remove(fs.begin(), fs.end(), this), fs.end());
  }
}

void OrderedWrites::drain() {
  while (!held_.empty() && held_.begin()->first == next_) {
    Held h = std::move(held_.begin()->second);
    held_.erase(held_.begin());
    Result<void> r = error_ ? Result<void>(*error_)
                            : sink_({h.copy.empty() ? h.data : h.copy.data(), h.len});
    if (!r && !error_) error_ = r.error();
    next_ += h.len;
    if (h.tag && queue_) {
      --queue_->held_;
      queue_->done({*h.tag, OpKind::write,
                    r ? Result<uint32_t>(h.len) : Result<uint32_t>(r.error())});
    }
  }
}

Result<void> OrderedWrites::submit(IoLoop& loop, const void* key, const Request& r) {
  if (!queue_) {
    const char* qn = queue_name_;
    queue_ = &loop.queue<InOrderQueue>(key, [qn] { return std::make_unique<InOrderQueue>(qn); });
    queue_->files_.push_back(this);
  }
  if (r.kind != OpKind::write) {
    // Durability is the file's commit, and nothing is read back by offset.
    queue_->done({r.tag, r.kind,
                  r.kind == OpKind::sync
                      ? Result<uint32_t>(uint32_t{0})
                      : Result<uint32_t>(Error{Errc::unsupported, 0,
                                               "'" + name_ + "' cannot be read back by offset"})});
    return ok();
  }
  if (r.offset < next_ || held_.count(r.offset)) {
    queue_->done({r.tag, r.kind,
                  Error{Errc::invalid_argument, 0,
                        "'" + name_ + "': offset " + std::to_string(r.offset) +
                            " written twice to an append-only " + queue_name_ + " stream"}});
    return ok();
  }
  held_.emplace(r.offset, Held{r.buf, r.len, r.tag, {}});
  ++queue_->held_;
  drain();
  return ok();
}

Result<void> OrderedWrites::write_at(const std::byte* buf, size_t len, uint64_t offset) {
  if (offset < next_ || held_.count(offset))
    return fail(Errc::invalid_argument, "'" + name_ + "': a " + queue_name_ +
                                            " stream is append-only, offset " +
                                            std::to_string(offset) + " written twice");
  held_.emplace(offset, Held{nullptr, static_cast<uint32_t>(len), std::nullopt,
                             std::vector<std::byte>(buf, buf + len)});
  drain();
  return error_ ? Result<void>(*error_) : ok();
}

void OrderedWrites::fail_held() {
  if (queue_) {
    // Writes held for a gap that will never close complete as failed.
    for (auto& [offset, h] : held_)
      if (h.tag) {
        --queue_->held_;
        queue_->done({*h.tag, OpKind::write,
                      Error{Errc::io, 0,
                            "'" + name_ + "': the write before offset " + std::to_string(offset) +
                                " never came"}});
      }
  }
  held_.clear();
  if (!error_) error_ = Error{Errc::io, 0, "'" + name_ + "': writes missing"};
}

}  // namespace stripeback::storage
