// The files and the loop queue of MemStorage (mem_storage.h).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <span>

#include "storage/io_loop.h"
#include "storage/ordered_writes.h"
#include "tests/support/mem_state.h"

namespace stripeback::testing::mem {

using storage::Completion;
using storage::FileInfo;
using storage::OpKind;
using storage::Request;
using State = MemStorage::State;

namespace {

thread_local std::map<uint64_t, ThreadCounts> thread_local_counts;

// The completions of one storage's requests on one loop. Requests are carried out when
// submitted, so reap() only hands out what is there.
class MemQueue final : public storage::Queue {
 public:
  explicit MemQueue(bool reverse) : reverse_(reverse) {}
  const char* name() const override { return "mem"; }
  size_t in_flight() const override { return done_.size(); }
  size_t reap(std::span<Completion> out, size_t, storage::Clock::time_point) override {
    size_t n = 0;
    while (n < out.size() && !done_.empty()) {
      if (reverse_) {
        out[n++] = std::move(done_.back());
        done_.pop_back();
      } else {
        out[n++] = std::move(done_.front());
        done_.pop_front();
      }
    }
    return n;
  }
  void post(Completion c) { done_.push_back(std::move(c)); }

 private:
  bool reverse_;
  std::deque<Completion> done_;
};

// Writes `len` bytes at `off`, extending the file as needed. Under the lock.
void put_bytes(State& s, Inode& n, const std::byte* buf, size_t len, uint64_t off) {
  if (n.data.size() < off + len) n.data.resize(off + len, '\0');
  std::memcpy(n.data.data() + off, buf, len);
  n.written += len;
  n.dirty = true;
  n.mtime_ns = n.ctime_ns = now_ns();
  ++s.counts.writes;
  s.counts.write_bytes += len;
  auto& t = thread_counts(s.id);
  ++t.writes;
  t.write_bytes += len;
}

// Reads up to `len` bytes at `off`; fewer at the end of the file. Under the lock.
size_t get_bytes(State& s, const Inode& n, std::byte* buf, size_t len, uint64_t off) {
  const size_t got = off >= n.data.size() ? 0 : std::min<size_t>(len, n.data.size() - off);
  if (got > 0) std::memcpy(buf, n.data.data() + off, got);
  ++s.counts.reads;
  s.counts.read_bytes += got;
  auto& t = thread_counts(s.id);
  ++t.reads;
  t.read_bytes += got;
  return got;
}

MemQueue& queue_of(State& s, storage::IoLoop& loop) {
  const bool reverse = s.o.reverse_reap;
  return loop.queue<MemQueue>(&s, [reverse] { return std::make_unique<MemQueue>(reverse); });
}

// What a file of this storage shares between reading and writing.
class FileCore {
 public:
  FileCore(std::shared_ptr<State> s, std::shared_ptr<Inode> n, std::string name, bool direct)
      : s_(std::move(s)),
        n_(std::move(n)),
        name_(std::move(name)),
        direct_(direct && s_->o.caps.alignment > 1) {}

  const std::string& name() const { return name_; }
  bool direct() const { return direct_; }
  State& state() const { return *s_; }
  Inode& inode() const { return *n_; }

  // With direct I/O, the error O_DIRECT would give a misaligned transfer.
  Result<void> check_aligned(const std::byte* buf, size_t len, uint64_t off, const char* op) const {
    if (!direct_) return ok();
    const uint64_t a = s_->o.caps.alignment;
    if (off % a == 0 && len % a == 0 && reinterpret_cast<uintptr_t>(buf) % a == 0) return ok();
    return sys_error(EINVAL, "unable to " + std::string(op) + " " + quoted(name_) + " at offset " +
                                 std::to_string(off) + ": " + std::to_string(len) +
                                 " bytes not aligned to " + std::to_string(a));
  }

  Result<FileInfo> stat() const {
    std::lock_guard lock(s_->mu);
    return info_of(*n_);
  }

 private:
  std::shared_ptr<State> s_;
  std::shared_ptr<Inode> n_;
  std::string name_;
  bool direct_;
};

class MemReadFile final : public storage::ReadFile {
 public:
  explicit MemReadFile(FileCore f) : f_(std::move(f)) {}
  const std::string& name() const override { return f_.name(); }
  bool direct() const override { return f_.direct(); }

  Result<void> submit(storage::IoLoop& loop, const Request& r) override {
    Completion c;
    c.tag = r.tag;
    c.kind = r.kind;
    if (r.kind != OpKind::read) {
      c.result = Error{Errc::invalid_argument, EBADF,
                       "unable to write " + quoted(name()) + ": it is open for reading"};
    } else if (auto got = read_at(r.buf, r.len, r.offset)) {
      c.result = static_cast<uint32_t>(*got);
    } else {
      c.result = got.error();
    }
    queue_of(f_.state(), loop).post(std::move(c));
    return ok();
  }

  Result<FileInfo> stat() override { return f_.stat(); }

  Result<size_t> read_at(std::byte* buf, size_t len, uint64_t offset) override {
    SB_TRY(f_.check_aligned(buf, len, offset, "read"));
    State& s = f_.state();
    if (!s.o.caps.random_read && offset != next_)
      return fail(Errc::unsupported, "unable to read " + quoted(name()) + " at offset " +
                                         std::to_string(offset) + ": this medium is read in " +
                                         "order (next offset " + std::to_string(next_) + ")");
    std::lock_guard lock(s.mu);
    const size_t got = get_bytes(s, f_.inode(), buf, len, offset);
    next_ = offset + got;
    return got;
  }

 private:
  FileCore f_;
  uint64_t next_ = 0;  // !random_read: where the next read must start
};

// A file written at any offset, or, where the medium takes new files in order
// (sequential_only, multipart), through storage::OrderedWrites as the tape stream is: a
// write ahead of its turn is held until the bytes before it arrive.
class MemWriteFile final : public storage::WriteFile {
 public:
  MemWriteFile(FileCore f, uint64_t end) : f_(std::move(f)), end_(end) {
    const auto& caps = f_.state().o.caps;
    if (caps.sequential_only || caps.multipart)
      ordered_.emplace(f_.name(), "mem",
                       [this](std::span<const std::byte> b) { return append(b.data(), b.size()); });
  }
  const std::string& name() const override { return f_.name(); }
  bool direct() const override { return f_.direct(); }

  Result<void> submit(storage::IoLoop& loop, const Request& r) override {
    State& s = f_.state();
    Completion c;
    c.tag = r.tag;
    c.kind = r.kind;
    if (r.kind == OpKind::read) {
      c.result = Error{Errc::invalid_argument, EBADF,
                       "unable to read " + quoted(name()) + ": it is open for writing"};
    } else if (r.kind == OpKind::sync) {
      if (auto done = commit(); !done) c.result = done.error();
    } else if (auto aligned = f_.check_aligned(r.buf, r.len, r.offset, "write"); !aligned) {
      c.result = aligned.error();
    } else if (ordered_) {
      if (r.offset > ordered_->next()) {
        std::lock_guard lock(s.mu);
        ++s.counts.held_writes;
      }
      return ordered_->submit(loop, &s.ordered_key, r);
    } else if (auto w = write_bytes(r.buf, r.len, r.offset); !w) {
      c.result = w.error();
    } else {
      c.result = r.len;
    }
    queue_of(s, loop).post(std::move(c));
    return ok();
  }

  Result<void> write_at(const std::byte* buf, size_t len, uint64_t offset) override {
    SB_TRY(f_.check_aligned(buf, len, offset, "write"));
    if (ordered_) return ordered_->write_at(buf, len, offset);
    return write_bytes(buf, len, offset);
  }

  Result<void> preallocate(uint64_t offset, uint64_t len) override {
    State& s = f_.state();
    std::lock_guard lock(s.mu);
    ++s.counts.preallocates;
    if (!s.o.caps.preallocate) return ok();
    Inode& n = f_.inode();
    if (n.data.size() < offset + len) {
      n.data.resize(offset + len, '\0');
      n.dirty = true;
    }
    return ok();
  }

  Result<void> truncate(uint64_t size) override {
    State& s = f_.state();
    std::lock_guard lock(s.mu);
    Inode& n = f_.inode();
    if (ordered_ && size != n.data.size())
      return fail(Errc::unsupported, "unable to truncate " + quoted(name()) + " to " +
                                         std::to_string(size) + " bytes: this medium is " +
                                         "written in order");
    ++s.counts.truncates;
    n.data.resize(size, '\0');
    n.dirty = true;
    n.mtime_ns = n.ctime_ns = now_ns();
    return ok();
  }

  Result<void> commit() override {
    if (ordered_ && ordered_->has_held())
      return fail(Errc::io, "unable to sync " + quoted(name()) + ": a write waits for offset " +
                                std::to_string(ordered_->next()));
    if (ordered_ && ordered_->error()) return *ordered_->error();
    State& s = f_.state();
    std::lock_guard lock(s.mu);
    ++s.counts.syncs;
    ++thread_counts(s.id).syncs;
    f_.inode().dirty = false;
    return ok();
  }

  Result<void> set_attrs(const storage::Attrs& a) override {
    State& s = f_.state();
    std::lock_guard lock(s.mu);
    ++s.counts.set_attrs;
    apply_attrs(f_.inode(), a);
    return ok();
  }

  Result<void> close() override { return ok(); }
  void abandon() override {
    if (ordered_) ordered_->fail_held();
  }
  Result<FileInfo> stat() override { return f_.stat(); }

 private:
  Result<void> write_bytes(const std::byte* buf, size_t len, uint64_t offset) {
    State& s = f_.state();
    std::lock_guard lock(s.mu);
    put_bytes(s, f_.inode(), buf, len, offset);
    return ok();
  }
  // The next bytes of a file written in order.
  Result<void> append(const std::byte* buf, size_t len) {
    SB_TRY(write_bytes(buf, len, end_));
    end_ += len;
    return ok();
  }

  FileCore f_;
  uint64_t end_;  // where bytes written in order go next
  std::optional<storage::OrderedWrites> ordered_;
};

}  // namespace

ThreadCounts& thread_counts(uint64_t storage_id) { return thread_local_counts[storage_id]; }

std::optional<ThreadCounts> take_thread_counts(uint64_t storage_id, bool close) {
  auto it = thread_local_counts.find(storage_id);
  if (it == thread_local_counts.end()) return std::nullopt;
  ThreadCounts t = it->second;
  if (close) thread_local_counts.erase(it);
  return t;
}

std::unique_ptr<storage::ReadFile> make_read_file(std::shared_ptr<State> s,
                                                  std::shared_ptr<Inode> n, std::string name,
                                                  bool direct) {
  return std::make_unique<MemReadFile>(
      FileCore(std::move(s), std::move(n), std::move(name), direct));
}

std::unique_ptr<storage::WriteFile> make_write_file(std::shared_ptr<State> s,
                                                    std::shared_ptr<Inode> n, std::string name,
                                                    bool direct, uint64_t end) {
  return std::make_unique<MemWriteFile>(
      FileCore(std::move(s), std::move(n), std::move(name), direct), end);
}

}  // namespace stripeback::testing::mem
