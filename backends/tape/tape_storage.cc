#include "backends/tape/tape_storage.h"

#include <condition_variable>
#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "storage/io_loop.h"
#include "storage/ordered_writes.h"
#include "util/log.h"

namespace stripeback::tape {
namespace {

using storage::Completion;
using storage::Request;

class TapeStorage;

// A tape stream being written: its writes, which a channel submits out of order, go to the
// drive's helper in piece order (storage::OrderedWrites) and complete once copied toward it.
class TapeFile final : public storage::WriteFile {
 public:
  TapeFile(TapeStorage& st, StreamId id, std::string name);
  ~TapeFile() override;
  const std::string& name() const override { return name_; }
  Result<void> submit(storage::IoLoop& loop, const Request& r) override;
  Result<void> write_at(const std::byte* buf, size_t len, uint64_t offset) override {
    return w_.write_at(buf, len, offset);
  }
  Result<void> preallocate(uint64_t, uint64_t) override { return ok(); }
  Result<void> truncate(uint64_t size) override {
    if (size == w_.next() && !w_.has_held()) return ok();
    return fail(Errc::unsupported, "'" + name_ + "': a tape stream cannot be resized");
  }
  Result<void> commit() override;
  Result<void> set_attrs(const storage::Attrs&) override { return ok(); }
  Result<void> close() override { return ok(); }
  void abandon() override { w_.fail_held(); }
  std::optional<storage::MediaPlacement> placement() const override { return placement_; }

 private:
  friend class TapeStorage;
  TapeStorage& st_;
  StreamId id_;
  std::string name_;
  storage::OrderedWrites w_;
  std::vector<std::byte> backlog_;  // in-order bytes waiting for the drive (not active yet)
  bool active_ = false, done_ = false;
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
    caps_.rename = false;
    caps_.append = false;
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

TapeFile::TapeFile(TapeStorage& st, StreamId id, std::string name)
    : st_(st), id_(id), name_(std::move(name)),
      w_(name_, "tape", [this](std::span<const std::byte> data) { return st_.deliver(*this, data); }) {}

TapeFile::~TapeFile() {
  if (!done_) st_.forget(*this);
}

Result<void> TapeFile::submit(storage::IoLoop& loop, const Request& r) {
  return w_.submit(loop, &st_, r);
}

Result<void> TapeFile::commit() {
  if (w_.error()) return *w_.error();
  if (w_.has_held())
    return fail(Errc::io, "'" + name_ + "': a gap at offset " + std::to_string(w_.next()) +
                              " remains before the tape stream can be closed");
  auto loc = st_.finish(*this);
  done_ = true;
  if (!loc) {
    w_.set_error(loc.error());
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

// Completions of reads of a tape stream, served from the read-ahead in submission order.
class TapeStreamFile;
class StreamQueue final : public storage::Queue {
 public:
  const char* name() const override { return "tape"; }
  void add(TapeStreamFile* f, const Request& r) { pending_.push_back({f, r}); }
  size_t reap(std::span<Completion> out, size_t min_complete,
              storage::Clock::time_point until) override;
  size_t in_flight() const override { return pending_.size(); }

 private:
  std::deque<std::pair<TapeStreamFile*, Request>> pending_;
};

class TapeStreamFile final : public storage::ReadFile {
 public:
  static constexpr size_t kAhead = 64u << 20;

  TapeStreamFile(StreamLocation loc, StreamId id, std::string name, std::vector<std::string> drives)
      : loc_(std::move(loc)), id_(id), name_(std::move(name)), drives_(std::move(drives)) {
    thread_ = std::thread([this, logs = util::current_log_sink()] {
      util::ScopedLogSink scope(logs);
      run();
    });
  }
  ~TapeStreamFile() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  const std::string& name() const override { return name_; }
  Result<void> submit(storage::IoLoop& loop, const Request& r) override {
    if (r.kind != storage::OpKind::read)
      return fail(Errc::invalid_argument, "'" + name_ + "' is open for reading");
    loop.queue<StreamQueue>(this, [] { return std::make_unique<StreamQueue>(); }).add(this, r);
    return ok();
  }
  Result<storage::FileInfo> stat() override {
    storage::FileInfo i;
    i.size = loc_.bytes;
    i.mode = 0100400;
    return i;
  }
  Result<size_t> read_at(std::byte* buf, size_t len, uint64_t offset) override {
    return read_until(buf, len, offset, std::nullopt);
  }
  // Waits at most until `until` (none: as long as it takes) for the bytes; timed_out when
  // they are not there yet.
  Result<size_t> read_until(std::byte* buf, size_t len, uint64_t offset,
                            std::optional<storage::Clock::time_point> until) {
    std::unique_lock lock(mu_);
    if (offset < base_)
      return fail(Errc::invalid_argument, "'" + name_ + "' is read in order: offset " +
                                              std::to_string(offset) + " was passed");
    // Drop what lies before the offset.
    auto drop = [&] {
      uint64_t skip = std::min<uint64_t>(offset - base_, data_.size());
      data_.erase(data_.begin(), data_.begin() + static_cast<std::ptrdiff_t>(skip));
      base_ += skip;
      if (skip) cv_.notify_all();
    };
    const uint64_t want_end = std::min<uint64_t>(offset + len, loc_.bytes);
    for (;;) {
      drop();
      if (base_ == offset && base_ + data_.size() >= want_end) break;
      if (done_) {
        if (error_) return *error_;
        break;  // the stream ended: return what there is
      }
      if (until) {
        if (cv_.wait_until(lock, *until) == std::cv_status::timeout &&
            !(base_ + data_.size() >= want_end || done_))
          return fail(Errc::timed_out, "'" + name_ + "': not read yet");
      } else {
        cv_.wait(lock);
      }
    }
    if (base_ != offset) return size_t{0};
    size_t n = static_cast<size_t>(std::min<uint64_t>(len, data_.size()));
    auto end = data_.begin() + static_cast<std::ptrdiff_t>(n);
    std::copy(data_.begin(), end, buf);
    data_.erase(data_.begin(), end);  // read once: the reader moves on
    base_ += n;
    cv_.notify_all();
    return n;
  }

 private:
  void run() {
    std::vector<std::unique_ptr<Volume>> open;
    VolumeOpener opener = [&](const Span& sp) -> Result<Volume*> {
      for (auto& v : open)
        if (v->label.volume_id == sp.volume_id) return v.get();
      if (drives_.empty()) {
        SB_ASSIGN(auto v, open_volume_for_read(sp.url, sp.volume_id));
        open.push_back(std::move(v));
        return open.back().get();
      }
      std::string tried;
      for (const auto& d : drives_) {
        auto v = open_volume_for_read(d, sp.volume_id);
        if (v) {
          open.push_back(std::move(*v));
          return open.back().get();
        }
        tried += "; " + v.error().what;
      }
      return fail(Errc::not_found,
                  "volume " + sp.volume_id + " is in none of the drives given" + tried);
    };
    auto r = read_stream(loc_, id_, opener, [&](std::span<const uint8_t> b) -> Result<void> {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || data_.size() < kAhead; });
      if (stop_) return fail(Errc::cancelled, "reading '" + name_ + "' stopped");
      const auto* p = reinterpret_cast<const std::byte*>(b.data());
      data_.insert(data_.end(), p, p + b.size());
      cv_.notify_all();
      return ok();
    });
    std::lock_guard lock(mu_);
    if (!r) error_ = r.error().wrap("unable to read '" + name_ + "' from tape");
    done_ = true;
    cv_.notify_all();
  }

  StreamLocation loc_;
  StreamId id_;
  std::string name_;
  std::vector<std::string> drives_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::byte> data_;  // stream bytes from base_ on
  uint64_t base_ = 0;
  bool done_ = false, stop_ = false;
  std::optional<Error> error_;
  std::thread thread_;
};

size_t StreamQueue::reap(std::span<Completion> out, size_t min_complete,
                         storage::Clock::time_point until) {
  size_t n = 0;
  while (n < out.size() && !pending_.empty()) {
    auto& [f, r] = pending_.front();
    bool wait = n < min_complete;
    auto got = f->read_until(r.buf, r.len, r.offset,
                             wait ? until : storage::Clock::now());
    if (!got && got.error().code == Errc::timed_out) break;
    out[n++] = Completion{r.tag, r.kind,
                          got ? Result<uint32_t>(static_cast<uint32_t>(*got))
                              : Result<uint32_t>(got.error())};
    pending_.pop_front();
  }
  return n;
}

}  // namespace

Result<std::unique_ptr<storage::ReadFile>> open_tape_stream(StreamLocation loc, StreamId id,
                                                           std::string name,
                                                           std::vector<std::string> drives) {
  if (loc.block_size == 0)
    return fail(Errc::corrupt, "'" + name + "': tape stream without a block size");
  return std::unique_ptr<storage::ReadFile>(
      std::make_unique<TapeStreamFile>(std::move(loc), id, std::move(name), std::move(drives)));
}

std::unique_ptr<storage::Storage> make_tape_storage(std::unique_ptr<Volume> volume,
                                                    VolumeProvider* spares,
                                                    const TapeStorageOptions& o) {
  return std::make_unique<TapeStorage>(std::move(volume), spares, o);
}

}  // namespace stripeback::tape
