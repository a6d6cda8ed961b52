#include "tape/tape_storage.h"

#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "storage/io_loop.h"

namespace stripeback::tape {
namespace {

using storage::Completion;
using storage::Request;

// Completions of tape writes: a write completes once its bytes are in piece order and
// copied toward the drive, which happens while it is submitted (or when the gap before it
// closes), so nothing here ever waits.
class TapeQueue final : public storage::Queue {
 public:
  const char* name() const override { return "tape"; }
  void done(Completion c) { ready_.push_back(std::move(c)); }
  void hold() { ++held_; }
  void release(size_t n) { held_ -= n; }
  size_t reap(std::span<Completion> out, size_t, storage::Clock::time_point) override {
    size_t n = 0;
    while (n < out.size() && !ready_.empty()) {
      out[n++] = std::move(ready_.front());
      ready_.pop_front();
    }
    return n;
  }
  size_t in_flight() const override { return ready_.size() + held_; }

 private:
  std::deque<Completion> ready_;
  size_t held_ = 0;
};

class TapeStorage;

class TapeFile final : public storage::WriteFile {
 public:
  TapeFile(TapeStorage& st, StreamId id, std::string name) : st_(st), id_(id), name_(std::move(name)) {}
  ~TapeFile() override;
  const std::string& name() const override { return name_; }
  Result<void> submit(storage::IoLoop& loop, const Request& r) override;
  Result<void> write_at(const std::byte* buf, size_t len, uint64_t offset) override;
  Result<void> preallocate(uint64_t, uint64_t) override { return ok(); }
  Result<void> truncate(uint64_t size) override {
    if (size == next_ && held_.empty()) return ok();
    return fail(Errc::unsupported, "'" + name_ + "': a tape stream cannot be resized");
  }
  Result<void> commit() override;
  Result<void> set_attrs(const storage::Attrs&) override { return ok(); }
  Result<void> close() override { return ok(); }
  void abandon() override;
  std::optional<storage::MediaPlacement> placement() const override { return placement_; }

 private:
  friend class TapeStorage;
  struct Held {
    const std::byte* data;
    uint32_t len;
    std::optional<uint64_t> tag;  // a request's; none for write_at copies
    std::vector<std::byte> copy;
  };
  Result<void> append(std::span<const std::byte> data);
  void drain();

  TapeStorage& st_;
  StreamId id_;
  std::string name_;
  TapeQueue* queue_ = nullptr;  // of the loop writing this file
  uint64_t next_ = 0;           // bytes delivered in order so far
  std::map<uint64_t, Held> held_;
  std::vector<std::byte> backlog_;  // in-order bytes waiting for the drive (not active yet)
  bool active_ = false, done_ = false;
  std::optional<Error> error_;
  std::optional<storage::MediaPlacement> placement_;
};

class TapeStorage final : public storage::Storage {
 public:
  TapeStorage(std::unique_ptr<Volume> volume, VolumeProvider* spares, const TapeStorageOptions& o)
      : volume_(std::move(volume)), drive_(volume_->url) {
    helper_ = std::make_unique<TapeIoHelper>(volume_, spares, o.block_size, o.buffers, o.mode);
    caps_.random_read = false;
    caps_.random_write = false;
    caps_.sequential_only = true;
    caps_.directories = false;
    caps_.removable = true;
    caps_.alignment = 1;
    caps_.max_io = 1u << 20;
  }
  ~TapeStorage() override { helper_.reset(); }  // its thread uses volume_

  const char* scheme() const override { return "tape"; }
  const storage::StorageCaps& caps() const override { return caps_; }

  Result<std::unique_ptr<storage::ReadFile>> open_read(const storage::Location& at,
                                                       const storage::OpenOptions&) override {
    return unsupported("reading by name", at);
  }

  Result<std::unique_ptr<storage::WriteFile>> create(const storage::Location& at,
                                                     const storage::CreateOptions& o) override {
    auto f = std::make_unique<TapeFile>(*this, StreamId{o.set_id, o.channel, o.number},
                                        "tape:" + drive_ + at.path);
    open_.push_back(f.get());
    if (open_.size() == 1) SB_TRY(activate(*f));
    return std::unique_ptr<storage::WriteFile>(std::move(f));
  }

  std::optional<storage::CounterGroup> thread_counters(bool) override {
    DriveStats d = helper_->stats();
    storage::CounterGroup g;
    g.name = "tape";
    g.text("drive", d.drive)
        .text("io", d.async ? "async" : "sync")
        .num("bytes", d.bytes, "bytes")
        .num("commands", d.commands)
        .real("write_s", d.write_s, "s")
        .real("write_mb_s", d.write_mb_s())
        .num("stalls", d.stalls)
        .real("stall_s", d.stall_s, "s")
        .num("producer_waits", d.producer_waits)
        .real("producer_wait_s", d.producer_wait_s, "s")
        .num("volume_changes", d.volume_changes);
    return g;
  }

  Result<void> deliver(TapeFile& f, std::span<const std::byte> data) {
    if (!f.active_) {
      f.backlog_.insert(f.backlog_.end(), data.begin(), data.end());
      return ok();
    }
    while (!data.empty()) {
      if (!have_buf_) {
        SB_ASSIGN(buf_, helper_->acquire());
        have_buf_ = true;
        fill_ = 0;
      }
      const size_t n = std::min(buf_.size() - fill_, data.size());
      std::memcpy(buf_.data() + fill_, data.data(), n);
      fill_ += n;
      data = data.subspan(n);
      if (fill_ == buf_.size()) {
        have_buf_ = false;
        SB_TRY(helper_->submit(fill_));
      }
    }
    return ok();
  }

  Result<StreamLocation> finish(TapeFile& f) {
    if (open_.empty() || open_.front() != &f)
      return fail(Errc::invalid_argument, "tape streams must be finished in the order they began");
    if (have_buf_) {
      have_buf_ = false;
      SB_TRY(helper_->submit(fill_));
    }
    SB_ASSIGN(StreamLocation loc, helper_->end_stream());
    open_.pop_front();
    if (!open_.empty()) SB_TRY(activate(*open_.front()));
    return loc;
  }

  void forget(TapeFile& f) {
    for (auto it = open_.begin(); it != open_.end(); ++it)
      if (*it == &f) {
        open_.erase(it);
        break;
      }
  }

 private:
  Result<void> activate(TapeFile& f) {
    SB_TRY(helper_->begin_stream(f.id_));
    f.active_ = true;
    if (!f.backlog_.empty()) {
      std::vector<std::byte> b = std::move(f.backlog_);
      f.backlog_.clear();
      SB_TRY(deliver(f, b));
    }
    return ok();
  }

  std::unique_ptr<Volume> volume_;
  std::string drive_;
  std::unique_ptr<TapeIoHelper> helper_;
  storage::StorageCaps caps_;
  std::deque<TapeFile*> open_;  // uncommitted, oldest first
  std::span<uint8_t> buf_;      // helper buffer being filled
  size_t fill_ = 0;
  bool have_buf_ = false;
};

TapeFile::~TapeFile() {
  if (queue_) queue_->release(held_.size());
  if (!done_) st_.forget(*this);
}

Result<void> TapeFile::append(std::span<const std::byte> data) {
  if (error_) return *error_;
  auto r = st_.deliver(*this, data);
  if (!r) error_ = r.error();
  return r;
}

void TapeFile::drain() {
  while (!held_.empty() && held_.begin()->first == next_) {
    Held h = std::move(held_.begin()->second);
    held_.erase(held_.begin());
    auto r = append({h.copy.empty() ? h.data : h.copy.data(), h.len});
    next_ += h.len;
    if (h.tag && queue_) {
      queue_->release(1);
      queue_->done({*h.tag, storage::OpKind::write,
                    r ? Result<uint32_t>(h.len) : Result<uint32_t>(r.error())});
    }
  }
}

Result<void> TapeFile::submit(storage::IoLoop& loop, const Request& r) {
  if (!queue_) queue_ = &loop.queue<TapeQueue>(&st_, [] { return std::make_unique<TapeQueue>(); });
  if (r.kind != storage::OpKind::write) {
    // Durability is commit()'s job on tape, and nothing is read back by offset.
    queue_->done({r.tag, r.kind,
                  r.kind == storage::OpKind::sync
                      ? Result<uint32_t>(uint32_t{0})
                      : Result<uint32_t>(Error{Errc::unsupported, 0,
                                               "'" + name_ + "' cannot be read back by offset"})});
    return ok();
  }
  if (r.offset < next_ || held_.count(r.offset)) {
    queue_->done({r.tag, r.kind,
                  Error{Errc::invalid_argument, 0,
                        "'" + name_ + "': offset " + std::to_string(r.offset) +
                            " written twice to an append-only tape stream"}});
    return ok();
  }
  held_.emplace(r.offset, Held{r.buf, r.len, r.tag, {}});
  queue_->hold();
  drain();
  return ok();
}

Result<void> TapeFile::write_at(const std::byte* buf, size_t len, uint64_t offset) {
  if (offset < next_ || held_.count(offset))
    return fail(Errc::invalid_argument, "'" + name_ + "': a tape stream is append-only, offset " +
                                            std::to_string(offset) + " written twice");
  held_.emplace(offset, Held{nullptr, static_cast<uint32_t>(len), std::nullopt,
                             std::vector<std::byte>(buf, buf + len)});
  drain();
  return error_ ? Result<void>(*error_) : ok();
}

Result<void> TapeFile::commit() {
  if (error_) return *error_;
  if (!held_.empty())
    return fail(Errc::io, "'" + name_ + "': a gap at offset " + std::to_string(next_) +
                              " remains before the tape stream can be closed");
  auto loc = st_.finish(*this);
  done_ = true;
  if (!loc) {
    error_ = loc.error();
    return loc.error();
  }
  storage::MediaPlacement p;
  p.block_size = loc->block_size;
  p.bytes = loc->bytes;
  for (const auto& s : loc->spans)
    p.spans.push_back({s.volume_id, s.url, s.file, s.block, s.first_seq, s.blocks, s.address});
  placement_ = std::move(p);
  return ok();
}

void TapeFile::abandon() {
  if (queue_) {
    // Writes held for a gap that will never close complete as failed.
    for (auto& [offset, h] : held_)
      if (h.tag) {
        queue_->release(1);
        queue_->done({*h.tag, storage::OpKind::write,
                      Error{Errc::io, 0,
                            "'" + name_ + "': the write before offset " + std::to_string(offset) +
                                " never came"}});
      }
  }
  held_.clear();
}

}  // namespace

std::unique_ptr<storage::Storage> make_tape_storage(std::unique_ptr<Volume> volume,
                                                    VolumeProvider* spares,
                                                    const TapeStorageOptions& o) {
  return std::make_unique<TapeStorage>(std::move(volume), spares, o);
}

}  // namespace stripeback::tape
