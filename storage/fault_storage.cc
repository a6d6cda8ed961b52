// See fault_storage.h.
#include "storage/fault_storage.h"

#include <optional>

#include <algorithm>
#include <array>
#include <cassert>
#include <deque>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "storage/io_loop.h"

namespace stripeback::storage {

namespace {

size_t index(FaultOp op) { return static_cast<size_t>(op); }

std::string quoted(const std::string& s) { return "'" + s + "'"; }

Error injected(int err, const std::string& what) {
  Error e = sys_error(err, what);
  e.what += " (injected)";
  return e;
}

// What the rules that fired on one operation make of it.
struct Decision {
  enum class Outcome : uint8_t { none, fail, short_io };
  Outcome outcome = Outcome::none;
  bool fired = false;
  int err = 0;
  uint32_t short_len = 0;
  std::chrono::milliseconds delay{0};

  void hold() const {
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
  }
};

}  // namespace

struct FaultStorage::State {
  struct Slot {
    size_t id = 0;
    FaultRule rule;
    uint64_t matched = 0;  // operations of its kind and substring seen
    uint64_t fired = 0;
  };

  mutable std::mutex mu;
  std::vector<Slot> rules;
  size_t next_id = 0;
  std::array<uint64_t, kFaultOpCount> seen{};
  std::array<uint64_t, kFaultOpCount> fired{};

  // Counts the operation of kind `op` on the objects `a` (and `b`, a rename's target) and
  // says which faults it gets.
  Decision decide(FaultOp op, std::string_view a, std::string_view b = {}) {
    std::lock_guard lock(mu);
    ++seen[index(op)];
    Decision d;
    for (Slot& s : rules) {
      const FaultRule& r = s.rule;
      if (r.op != op) continue;
      if (!r.match.empty() && a.find(r.match) == std::string_view::npos &&
          b.find(r.match) == std::string_view::npos)
        continue;
      const uint64_t k = ++s.matched;
      if (k != r.nth && !(r.from_nth_on && k > r.nth)) continue;
      ++s.fired;
      ++fired[index(op)];
      d.fired = true;
      switch (r.effect) {
        case FaultRule::Effect::delay:
          d.delay += r.delay;
          break;
        case FaultRule::Effect::fail:
          if (d.outcome == Decision::Outcome::none) {
            d.outcome = Decision::Outcome::fail;
            d.err = r.err;
          }
          break;
        case FaultRule::Effect::short_io:
          if (d.outcome == Decision::Outcome::none) {
            d.outcome = Decision::Outcome::short_io;
            d.short_len = r.short_len;
          }
          break;
      }
    }
    return d;
  }
};

namespace {

using State = FaultStorage::State;

// A blocking call: waits out the delays that fired, then fails as injected or forwards.
template <class What, class Forward>
auto run(State& s, FaultOp op, std::string_view a, std::string_view b, What&& what,
         Forward&& forward) -> decltype(forward()) {
  const Decision d = s.decide(op, a, b);
  d.hold();
  if (d.outcome == Decision::Outcome::fail) return injected(d.err, what());
  return forward();
}

// The completions FaultStorage delivers itself on one loop: faulted requests' results and
// delayed requests, which the inner files run on a private loop; each is handed out once
// it is due and its result is there.
class FaultQueue final : public Queue {
 public:
  explicit FaultQueue(unsigned depth) : private_(depth) {}

  const char* name() const override { return "fault"; }
  size_t in_flight() const override { return held_.size(); }

  void post(Completion c, Clock::time_point due) {
    held_.push_back(Held{next_id_++, std::move(c), due, true});
  }

  // `f` names the inner file; its completion comes back under f.tag.
  Result<void> submit_delayed(Request f, Clock::time_point due) {
    Completion c;
    c.tag = f.tag;
    c.kind = f.kind;
    f.tag = next_id_++;
    SB_TRY(private_.submit(f));
    held_.push_back(Held{f.tag, std::move(c), due, false});
    return ok();
  }

  size_t reap(std::span<Completion> out, size_t min_complete, Clock::time_point until) override {
    min_complete = std::min({min_complete, out.size(), held_.size()});
    size_t n = 0;
    for (;;) {
      if (private_.in_flight() > 0) collect(private_.reap(scratch_, 0, Clock::now()));
      const auto now = Clock::now();
      for (auto it = held_.begin(); it != held_.end() && n < out.size();) {
        if (it->done && it->due <= now) {
          out[n++] = std::move(it->c);
          it = held_.erase(it);
        } else {
          ++it;
        }
      }
      if (n >= min_complete || n == out.size() || now >= until) return n;
      auto wake = until;
      for (const Held& h : held_)
        if (h.done) wake = std::min(wake, h.due);
      if (private_.in_flight() > 0)
        collect(private_.reap(scratch_, 1, wake));
      else
        std::this_thread::sleep_until(wake);
    }
  }

 private:
  struct Held {
    uint64_t id;
    Completion c;  // the caller's tag and kind; the result once done
    Clock::time_point due;
    bool done;
  };

  void collect(size_t got) {
    for (size_t i = 0; i < got; ++i) {
      Completion& c = scratch_[i];
      for (Held& h : held_)
        if (!h.done && h.id == c.tag) {
          h.c.result = std::move(c.result);
          h.done = true;
          break;
        }
    }
  }

  IoLoop private_;
  std::deque<Held> held_;  // in order of submission
  uint64_t next_id_ = 0;
  std::vector<Completion> scratch_ = std::vector<Completion>(16);
};

FaultQueue& fault_queue(State& s, IoLoop& loop) {
  return loop.queue<FaultQueue>(
      &s, [&loop] { return std::make_unique<FaultQueue>(loop.queue_depth()); });
}

std::string request_what(const Request& r, const std::string& name) {
  switch (r.kind) {
    case OpKind::read:
      return "unable to read " + quoted(name) + " at offset " + std::to_string(r.offset);
    case OpKind::write:
      return "unable to write " + quoted(name) + " at offset " + std::to_string(r.offset);
    case OpKind::sync:
      return "unable to sync " + quoted(name);
  }
  return "unable to access " + quoted(name);
}

// File::submit of a wrapped file whose inner file is `inner`.
Result<void> submit_through(State& s, File& inner, IoLoop& loop, const Request& r) {
  const FaultOp op = r.kind == OpKind::read    ? FaultOp::read
                     : r.kind == OpKind::write ? FaultOp::write
                                               : FaultOp::sync;
  const Decision d = s.decide(op, inner.name());
  Request f = r;
  f.file = &inner;
  if (!d.fired) return inner.submit(loop, f);
  const auto due = Clock::now() + d.delay;
  if (d.outcome == Decision::Outcome::fail) {
    Completion c;
    c.tag = r.tag;
    c.kind = r.kind;
    c.result = injected(d.err, request_what(r, inner.name()));
    fault_queue(s, loop).post(std::move(c), due);
    return ok();
  }
  if (d.outcome == Decision::Outcome::short_io && r.kind != OpKind::sync && d.short_len < f.len) {
    f.len = d.short_len;
    if (f.len == 0) {
      Completion c;
      c.tag = r.tag;
      c.kind = r.kind;
      c.result = uint32_t{0};
      fault_queue(s, loop).post(std::move(c), due);
      return ok();
    }
  }
  if (d.delay.count() == 0) return inner.submit(loop, f);
  return fault_queue(s, loop).submit_delayed(f, due);
}

class FaultReadFile final : public ReadFile {
 public:
  FaultReadFile(std::shared_ptr<State> s, std::unique_ptr<ReadFile> in)
      : s_(std::move(s)), in_(std::move(in)) {}

  const std::string& name() const override { return in_->name(); }
  bool direct() const override { return in_->direct(); }
  Result<void> submit(IoLoop& loop, const Request& r) override {
    return submit_through(*s_, *in_, loop, r);
  }

  Result<FileInfo> stat() override {
    return run(
        *s_, FaultOp::stat, name(), {}, [&] { return "unable to stat " + quoted(name()); },
        [&] { return in_->stat(); });
  }

  Result<size_t> read_at(std::byte* buf, size_t len, uint64_t offset) override {
    const Decision d = s_->decide(FaultOp::read, name());
    d.hold();
    if (d.outcome == Decision::Outcome::fail)
      return injected(d.err,
                      "unable to read " + quoted(name()) + " at offset " + std::to_string(offset));
    if (d.outcome == Decision::Outcome::short_io)
      return in_->read_at(buf, std::min<size_t>(len, d.short_len), offset);
    return in_->read_at(buf, len, offset);
  }

 private:
  std::shared_ptr<State> s_;
  std::unique_ptr<ReadFile> in_;
};

class FaultWriteFile final : public WriteFile {
 public:
  FaultWriteFile(std::shared_ptr<State> s, std::unique_ptr<WriteFile> in)
      : s_(std::move(s)), in_(std::move(in)) {}

  const std::string& name() const override { return in_->name(); }
  bool direct() const override { return in_->direct(); }
  Result<void> submit(IoLoop& loop, const Request& r) override {
    return submit_through(*s_, *in_, loop, r);
  }

  Result<FileInfo> stat() override {
    return run(
        *s_, FaultOp::stat, name(), {}, [&] { return "unable to stat " + quoted(name()); },
        [&] { return in_->stat(); });
  }

  Result<void> write_at(const std::byte* buf, size_t len, uint64_t offset) override {
    const Decision d = s_->decide(FaultOp::write, name());
    d.hold();
    const std::string what =
        d.fired ? "unable to write " + quoted(name()) + " at offset " + std::to_string(offset)
                : std::string();
    if (d.outcome == Decision::Outcome::fail) return injected(d.err, what);
    if (d.outcome == Decision::Outcome::short_io && d.short_len < len) {
      if (d.short_len > 0) SB_TRY(in_->write_at(buf, d.short_len, offset));
      return fail(Errc::io, what + ": only " + std::to_string(d.short_len) + " of " +
                                std::to_string(len) + " bytes written (injected)");
    }
    return in_->write_at(buf, len, offset);
  }

  Result<void> preallocate(uint64_t offset, uint64_t len) override {
    return run(
        *s_, FaultOp::preallocate, name(), {},
        [&] {
          return "unable to reserve " + std::to_string(len) + " bytes at offset " +
                 std::to_string(offset) + " in " + quoted(name());
        },
        [&] { return in_->preallocate(offset, len); });
  }

  Result<void> truncate(uint64_t size) override {
    return run(
        *s_, FaultOp::truncate, name(), {},
        [&] {
          return "unable to truncate " + quoted(name()) + " to " + std::to_string(size) + " bytes";
        },
        [&] { return in_->truncate(size); });
  }

  Result<void> commit() override {
    return run(
        *s_, FaultOp::sync, name(), {}, [&] { return "unable to sync " + quoted(name()); },
        [&] { return in_->commit(); });
  }

  Result<void> set_attrs(const Attrs& a) override {
    return run(
        *s_, FaultOp::set_attrs, name(), {},
        [&] { return "unable to set the attributes of " + quoted(name()); },
        [&] { return in_->set_attrs(a); });
  }

  Result<void> close() override {
    return run(
        *s_, FaultOp::close, name(), {}, [&] { return "unable to close " + quoted(name()); },
        [&] { return in_->close(); });
  }

  void abandon() override { in_->abandon(); }
  std::optional<MediaPlacement> placement() const override { return in_->placement(); }

 private:
  std::shared_ptr<State> s_;
  std::unique_ptr<WriteFile> in_;
};

Result<std::unique_ptr<ReadFile>> wrap(const std::shared_ptr<State>& s,
                                       Result<std::unique_ptr<ReadFile>> r) {
  if (!r) return r.error();
  return std::unique_ptr<ReadFile>(std::make_unique<FaultReadFile>(s, std::move(r).value()));
}

Result<std::unique_ptr<WriteFile>> wrap(const std::shared_ptr<State>& s,
                                        Result<std::unique_ptr<WriteFile>> r) {
  if (!r) return r.error();
  return std::unique_ptr<WriteFile>(std::make_unique<FaultWriteFile>(s, std::move(r).value()));
}

class FaultDirectory final : public Directory {
 public:
  FaultDirectory(std::shared_ptr<State> s, std::unique_ptr<Directory> in)
      : s_(std::move(s)), in_(std::move(in)), text_(in_->location().str()) {}

  const Location& location() const override { return in_->location(); }

  Result<std::unique_ptr<Directory>> open_dir(const std::string& name, bool create,
                                              mode_t mode) override;

  Result<std::unique_ptr<WriteFile>> create(const std::string& name,
                                            const CreateOptions& o) override {
    const std::string at = child(name);
    return run(
        *s_, FaultOp::open, at, {}, [&] { return "unable to create " + quoted(at); },
        [&] { return wrap(s_, in_->create(name, o)); });
  }

  Result<std::unique_ptr<ReadFile>> open(const std::string& name,
                                         const OpenOptions& o) override {
    const std::string at = child(name);
    return run(
        *s_, FaultOp::open, at, {}, [&] { return "unable to open " + quoted(at) + " for read"; },
        [&] { return wrap(s_, in_->open(name, o)); });
  }

  Result<std::unique_ptr<WriteFile>> open_write(const std::string& name,
                                                const OpenOptions& o) override {
    const std::string at = child(name);
    return run(
        *s_, FaultOp::open, at, {}, [&] { return "unable to open " + quoted(at) + " for write"; },
        [&] { return wrap(s_, in_->open_write(name, o)); });
  }

  Result<FileInfo> stat(const std::string& name) override {
    const std::string at = child(name);
    return run(
        *s_, FaultOp::stat, at, {}, [&] { return "unable to stat " + quoted(at); },
        [&] { return in_->stat(name); });
  }

  Result<std::vector<std::string>> list() override {
    return run(
        *s_, FaultOp::list, text_, {}, [&] { return "unable to list " + quoted(text_); },
        [&] { return in_->list(); });
  }

  Result<void> remove(const std::string& name) override {
    const std::string at = child(name);
    return run(
        *s_, FaultOp::remove, at, {}, [&] { return "unable to remove " + quoted(at); },
        [&] { return in_->remove(name); });
  }

  Result<void> rename(const std::string& from, const std::string& to, bool replace) override {
    const std::string a = child(from), b = child(to);
    return run(
        *s_, FaultOp::rename, a, b,
        [&] { return "unable to rename " + quoted(a) + " to " + quoted(b); },
        [&] { return in_->rename(from, to, replace); });
  }

  Result<void> set_attrs(const Attrs& a) override {
    return run(
        *s_, FaultOp::set_attrs, text_, {},
        [&] { return "unable to set the attributes of " + quoted(text_); },
        [&] { return in_->set_attrs(a); });
  }

  Result<void> sync() override {
    return run(
        *s_, FaultOp::sync, text_, {}, [&] { return "unable to sync directory " + quoted(text_); },
        [&] { return in_->sync(); });
  }

 private:
  std::string child(const std::string& name) const { return in_->location().join(name).str(); }

  std::shared_ptr<State> s_;
  std::unique_ptr<Directory> in_;
  std::string text_;  // the location as shown
};

Result<std::unique_ptr<Directory>> wrap(const std::shared_ptr<State>& s,
                                        Result<std::unique_ptr<Directory>> r) {
  if (!r) return r.error();
  return std::unique_ptr<Directory>(std::make_unique<FaultDirectory>(s, std::move(r).value()));
}

Result<std::unique_ptr<Directory>> FaultDirectory::open_dir(const std::string& name, bool create,
                                                            mode_t mode) {
  const std::string at = child(name);
  return run(
      *s_, FaultOp::open, at, {}, [&] { return "unable to open directory " + quoted(at); },
      [&] { return wrap(s_, in_->open_dir(name, create, mode)); });
}

}  // namespace

FaultStorage::FaultStorage(std::shared_ptr<Storage> inner)
    : inner_(std::move(inner)), state_(std::make_shared<State>()) {}

FaultStorage::~FaultStorage() = default;

size_t FaultStorage::add(FaultRule r) {
  assert(r.effect != FaultRule::Effect::short_io || r.op == FaultOp::read ||
         r.op == FaultOp::write);
  if (r.nth == 0) r.nth = 1;
  std::lock_guard lock(state_->mu);
  const size_t id = state_->next_id++;
  state_->rules.push_back(State::Slot{id, std::move(r), 0, 0});
  return id;
}

void FaultStorage::clear_rules() {
  std::lock_guard lock(state_->mu);
  state_->rules.clear();
}

uint64_t FaultStorage::seen(FaultOp op) const {
  std::lock_guard lock(state_->mu);
  return state_->seen[index(op)];
}

uint64_t FaultStorage::fired(FaultOp op) const {
  std::lock_guard lock(state_->mu);
  return state_->fired[index(op)];
}

uint64_t FaultStorage::fired() const {
  std::lock_guard lock(state_->mu);
  uint64_t n = 0;
  for (uint64_t f : state_->fired) n += f;
  return n;
}

uint64_t FaultStorage::rule_fired(size_t id) const {
  std::lock_guard lock(state_->mu);
  for (const State::Slot& s : state_->rules)
    if (s.id == id) return s.fired;
  return 0;
}

void FaultStorage::reset_counts() {
  std::lock_guard lock(state_->mu);
  state_->seen.fill(0);
  state_->fired.fill(0);
  for (State::Slot& s : state_->rules) s.matched = s.fired = 0;
}

const char* FaultStorage::scheme() const { return inner_->scheme(); }
const StorageCaps& FaultStorage::caps() const { return inner_->caps(); }

Result<std::unique_ptr<ReadFile>> FaultStorage::open_read(const Location& at,
                                                          const OpenOptions& o) {
  const std::string t = at.str();
  return run(
      *state_, FaultOp::open, t, {}, [&] { return "unable to open " + quoted(t) + " for read"; },
      [&] { return wrap(state_, inner_->open_read(at, o)); });
}

Result<std::unique_ptr<WriteFile>> FaultStorage::create(const Location& at,
                                                        const CreateOptions& o) {
  const std::string t = at.str();
  return run(
      *state_, FaultOp::open, t, {}, [&] { return "unable to create " + quoted(t); },
      [&] { return wrap(state_, inner_->create(at, o)); });
}

Result<std::unique_ptr<WriteFile>> FaultStorage::open_write(const Location& at, mode_t mode) {
  const std::string t = at.str();
  return run(
      *state_, FaultOp::open, t, {}, [&] { return "unable to open " + quoted(t) + " for write"; },
      [&] { return wrap(state_, inner_->open_write(at, mode)); });
}

Result<std::unique_ptr<Directory>> FaultStorage::open_dir(const Location& at, bool create) {
  const std::string t = at.str();
  return run(
      *state_, FaultOp::open, t, {}, [&] { return "unable to open directory " + quoted(t); },
      [&] { return wrap(state_, inner_->open_dir(at, create)); });
}

Result<FileInfo> FaultStorage::stat(const Location& at, bool follow) {
  const std::string t = at.str();
  return run(
      *state_, FaultOp::stat, t, {}, [&] { return "unable to stat " + quoted(t); },
      [&] { return inner_->stat(at, follow); });
}

Result<std::vector<std::string>> FaultStorage::list(const Location& dir) {
  const std::string t = dir.str();
  return run(
      *state_, FaultOp::list, t, {}, [&] { return "unable to list " + quoted(t); },
      [&] { return inner_->list(dir); });
}

Result<void> FaultStorage::remove(const Location& at) {
  const std::string t = at.str();
  return run(
      *state_, FaultOp::remove, t, {}, [&] { return "unable to remove " + quoted(t); },
      [&] { return inner_->remove(at); });
}

Result<void> FaultStorage::rename(const Location& from, const Location& to, bool replace) {
  const std::string a = from.str(), b = to.str();
  return run(
      *state_, FaultOp::rename, a, b,
      [&] { return "unable to rename " + quoted(a) + " to " + quoted(b); },
      [&] { return inner_->rename(from, to, replace); });
}

Result<void> FaultStorage::set_attrs(const Location& at, const Attrs& a) {
  const std::string t = at.str();
  return run(
      *state_, FaultOp::set_attrs, t, {},
      [&] { return "unable to set the attributes of " + quoted(t); },
      [&] { return inner_->set_attrs(at, a); });
}

Result<void> FaultStorage::make_dirs(const Location& at, mode_t mode) {
  const std::string t = at.str();
  return run(
      *state_, FaultOp::make_dirs, t, {}, [&] { return "unable to create directory " + quoted(t); },
      [&] { return inner_->make_dirs(at, mode); });
}

Result<void> FaultStorage::sync_dir(const Location& dir) {
  const std::string t = dir.str();
  return run(
      *state_, FaultOp::sync, t, {}, [&] { return "unable to sync directory " + quoted(t); },
      [&] { return inner_->sync_dir(dir); });
}

std::optional<CounterGroup> FaultStorage::thread_counters(bool close_thread) {
  return inner_->thread_counters(close_thread);
}

}  // namespace stripeback::storage
