#include "backends/s3/s3_storage.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

#include "backends/s3/session.h"
#include "backends/s3/url.h"
#include "backends/s3/write_file.h"
#include "storage/io_loop.h"
#include "storage/path_directory.h"

namespace stripeback::s3 {
namespace {

constexpr uint32_t kFileMode = S_IFREG | 0640;
constexpr uint32_t kDirMode = S_IFDIR | 0750;

int64_t ns_of(const std::optional<TimePoint>& t) {
  if (!t) return 0;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t->time_since_epoch()).count();
}

S3Op op_on(S3OpKind kind, const storage::Location& at) {
  S3Op op;
  op.kind = kind;
  op.bucket = bucket_of(at);
  op.key = key_of(at);
  return op;
}

ObjectLock lock_of(const storage::Retention& r) {
  ObjectLock l;
  l.mode = r.mode == storage::Retention::Mode::governance ? RetentionMode::governance
                                                           : RetentionMode::compliance;
  l.retain_until = TimePoint(std::chrono::duration_cast<TimePoint::duration>(
      std::chrono::nanoseconds(r.until_ns)));
  return l;
}
std::optional<ObjectLock> lock_of(const std::optional<storage::Retention>& r) {
  if (!r) return std::nullopt;
  return lock_of(*r);
}

Result<uint32_t> read_result(const S3Result& r, const std::string& name) {
  if (!r.outcome) return r.outcome.error().wrap("unable to read '" + name + "'");
  return static_cast<uint32_t>(r.size);
}

// The reads of one thread's IoLoop: ranged GETs on the thread's session. Reaping drives the
// session, so the thread's part uploads move on too.
//
// Reads queued together (until the loop flushes them) that continue one another in one
// object go out as one GET of up to kMaxCoalesced bytes: a store's cost is mostly per
// request, and a restore reads the frames of a piece one after the other. When their
// buffers also continue one another the GET writes straight into them; otherwise into a
// buffer of its own, copied out when it arrives. A failed GET fails each read it carried.
class ReadQueue final : public storage::Queue {
 public:
  static constexpr uint64_t kMaxCoalesced = 16u << 20;

  explicit ReadQueue(std::shared_ptr<Session> s) : session_(std::move(s)) {}
  const char* name() const override { return "s3"; }
  size_t in_flight() const override { return st_->ready.size() + st_->pending + held_.size(); }
  bool can_wake() const override { return true; }
  void wake_on(int fd) override { wake_fd_ = fd; }
  void flush() override;
  size_t reap(std::span<storage::Completion> out, size_t min_complete,
              storage::Clock::time_point until) override {
    flush();
    size_t n = take(out);
    while (n < min_complete && st_->pending > 0 && Clock::now() < until) {
      session_->poll(until, wake_fd_);
      n += take(out.subspan(n));
      if (wake_fd_ >= 0) break;  // the other queue may have completions: let the loop look
    }
    return n;
  }

  // A read of [offset, offset + len) of an object of `size` bytes; it goes out at the next
  // flush.
  void read(const storage::Request& r, const storage::Location& at, uint64_t size,
            const std::string& name) {
    if (r.offset >= size || r.len == 0) {
      st_->ready.push_back({r.tag, storage::OpKind::read, uint32_t{0}});
      return;
    }
    const auto len = static_cast<size_t>(std::min<uint64_t>(r.len, size - r.offset));
    held_.push_back({at, name, r.offset, len, r.buf, r.tag});
  }
  void done(storage::Completion c) { st_->ready.push_back(std::move(c)); }

 private:
  struct Held {
    storage::Location at;
    std::string name;
    uint64_t offset;
    size_t len;
    std::byte* buf;
    uint64_t tag;
  };
  // Shared with the handlers of reads in flight.
  struct State {
    std::deque<storage::Completion> ready;
    size_t pending = 0;  // reads (not GETs) in flight
  };
  void get(std::vector<Held> run);
  size_t take(std::span<storage::Completion> out) {
    size_t n = 0;
    while (n < out.size() && !st_->ready.empty()) {
      out[n++] = std::move(st_->ready.front());
      st_->ready.pop_front();
    }
    return n;
  }
  std::shared_ptr<Session> session_;
  std::shared_ptr<State> st_ = std::make_shared<State>();
  std::vector<Held> held_;
  int wake_fd_ = -1;
};

void ReadQueue::flush() {
  if (held_.empty()) return;
  std::vector<Held> held;
  held.swap(held_);
  std::stable_sort(held.begin(), held.end(), [](const Held& a, const Held& b) {
    if (a.name != b.name) return a.name < b.name;
    return a.offset < b.offset;
  });
  std::vector<Held> run;
  uint64_t run_end = 0, run_bytes = 0;
  for (const Held& h : held) {
    const bool continues = !run.empty() && run.back().name == h.name && h.offset == run_end &&
                           run_bytes + h.len <= kMaxCoalesced;
    if (!continues && !run.empty()) {
      get(std::move(run));
      run.clear();
      run_bytes = 0;
    }
    run.push_back(h);
    run_end = h.offset + h.len;
    run_bytes += h.len;
  }
  if (!run.empty()) get(std::move(run));
}

void ReadQueue::get(std::vector<Held> run) {
  const Held& first = run.front();
  const uint64_t total = run.back().offset + run.back().len - first.offset;
  bool adjacent = true;  // the buffers continue one another: the GET fills them in place
  for (size_t i = 1; i < run.size() && adjacent; ++i)
    adjacent = run[i].buf == run[i - 1].buf + run[i - 1].len;
  auto bounce = adjacent ? nullptr : std::make_shared<std::vector<std::byte>>(total);
  S3Op op = op_on(S3OpKind::get_object, first.at);
  op.into = {adjacent ? first.buf : bounce->data(), static_cast<size_t>(total)};
  op.offset = first.offset;
  op.length = total;
  st_->pending += run.size();
  session_->start(std::move(op), [st = st_, run = std::move(run), bounce](S3Result res) {
    st->pending -= run.size();
    const uint64_t base = run.front().offset;
    auto got = read_result(res, run.front().name);
    for (const Held& h : run) {
      if (!got) {
        st->ready.push_back({h.tag, storage::OpKind::read, got.error()});
        continue;
      }
      // Bytes of this read that arrived (a short answer ends early).
      const uint64_t from = h.offset - base;
      const auto n = static_cast<uint32_t>(
          *got > from ? std::min<uint64_t>(h.len, *got - from) : 0);
      if (bounce && n) std::memcpy(h.buf, bounce->data() + from, n);
      st->ready.push_back({h.tag, storage::OpKind::read, n});
    }
  });
}

class S3Storage;

class S3ReadFile final : public storage::ReadFile {
 public:
  S3ReadFile(const void* key, storage::Location at, uint64_t size, int64_t mtime_ns)
      : key_(key), at_(std::move(at)), name_(at_.str()), size_(size), mtime_ns_(mtime_ns) {}
  const std::string& name() const override { return name_; }
  Result<storage::FileInfo> stat() override {
    storage::FileInfo fi;
    fi.size = size_;
    fi.mode = kFileMode;
    fi.mtime_ns = mtime_ns_;
    fi.ctime_ns = mtime_ns_;
    return fi;
  }
  Result<size_t> read_at(std::byte* buf, size_t len, uint64_t offset) override {
    if (offset >= size_ || len == 0) return size_t{0};
    SB_ASSIGN(auto s, thread_session(key_, at_));
    S3Op op = op_on(S3OpKind::get_object, at_);
    len = static_cast<size_t>(std::min<uint64_t>(len, size_ - offset));
    op.into = {buf, len};
    op.offset = offset;
    op.length = len;
    SB_ASSIGN(uint32_t n, read_result(s->run(std::move(op)), name_));
    return size_t{n};
  }
  Result<void> submit(storage::IoLoop& loop, const storage::Request& r) override {
    SB_ASSIGN(auto s, thread_session(key_, at_));
    auto& q = loop.queue<ReadQueue>(key_, [&] { return std::make_unique<ReadQueue>(s); });
    if (r.kind == storage::OpKind::read)
      q.read(r, at_, size_, name_);
    else
      q.done({r.tag, r.kind,
              Error{Errc::unsupported, 0, "'" + name_ + "' is open for reading only"}});
    return ok();
  }

 private:
  const void* key_;
  storage::Location at_;
  std::string name_;
  uint64_t size_;
  int64_t mtime_ns_;
};

class S3Storage final : public storage::Storage {
 public:
  S3Storage() {
    caps_.random_read = true;
    caps_.random_write = false;
    caps_.sequential_only = true;
    caps_.durable_writes = true;
    caps_.rename = false;
    caps_.append = false;
    caps_.atomic_put = true;
    caps_.multipart = true;
    caps_.retention = true;
    caps_.directories = true;
    caps_.dir_sync = false;
    caps_.preallocate = false;
    caps_.max_io = 16u << 20;
  }
  const char* scheme() const override { return "s3"; }
  const storage::StorageCaps& caps() const override { return caps_; }

  Result<std::unique_ptr<storage::ReadFile>> open_read(const storage::Location& at,
                                                       const storage::OpenOptions&) override {
    SB_ASSIGN(auto s, session(at));
    S3Result r = s->run(op_on(S3OpKind::head_object, at));
    if (!r.outcome) return r.outcome.error().wrap("unable to open '" + at.str() + "' for read");
    return std::unique_ptr<storage::ReadFile>(
        std::make_unique<S3ReadFile>(this, at, r.size, ns_of(r.last_modified)));
  }

  Result<std::unique_ptr<storage::WriteFile>> create(const storage::Location& at,
                                                     const storage::CreateOptions& o) override {
    if (key_of(at).empty())
      return fail(Errc::invalid_argument, "'" + at.str() + "' is a bucket, not an object");
    SB_ASSIGN(auto s, session(at));
    S3Result r = s->run(op_on(S3OpKind::head_object, at));
    if (r.outcome)
      return fail(Errc::exists, "unable to create '" + at.str() + "': the object exists");
    if (r.outcome.error().code != Errc::not_found)
      return r.outcome.error().wrap("unable to create '" + at.str() + "'");
    return make_write_file(std::move(s), at, &caps_, lock_of(o.retention));
  }

  Result<std::unique_ptr<storage::Directory>> open_dir(const storage::Location& at,
                                                       bool create) override {
    if (create) {
      SB_TRY(make_dirs(at, 0755));
    } else {
      SB_ASSIGN(storage::FileInfo fi, stat(at, true));
      if (!S_ISDIR(fi.mode))
        return fail(Errc::invalid_argument, "'" + at.str() + "' is an object, not a directory");
    }
    return storage::make_path_directory(*this, at);
  }

  Result<storage::FileInfo> stat(const storage::Location& at, bool) override;
  Result<std::vector<std::string>> list(const storage::Location& dir) override;

  Result<void> remove(const storage::Location& at) override {
    SB_ASSIGN(auto s, session(at));
    S3Result r = s->run(op_on(S3OpKind::delete_object, at));
    if (!r.outcome) return r.outcome.error().wrap("unable to remove '" + at.str() + "'");
    return ok();
  }
  // Prefixes need no making; the bucket must exist.
  Result<void> make_dirs(const storage::Location& at, mode_t) override {
    SB_ASSIGN(auto s, session(at));
    S3Op op = op_on(S3OpKind::head_bucket, at);
    op.key.clear();
    S3Result r = s->run(std::move(op));
    if (r.outcome) return ok();
    if (r.outcome.error().code == Errc::not_found)
      return fail(Errc::not_found, "bucket '" + bucket_of(at) + "' of '" + at.str() +
                                       "' does not exist");
    return r.outcome.error().wrap("unable to use bucket '" + bucket_of(at) + "' of '" +
                                  at.str() + "'");
  }
  Result<void> sync_dir(const storage::Location&) override { return ok(); }
  Result<void> put(const storage::Location& at, std::span<const std::byte> data,
                   const storage::PutOptions& o) override {
    SB_ASSIGN(auto s, session(at));
    S3Op op = op_on(S3OpKind::put_object, at);
    op.body = data;
    op.lock = lock_of(o.retention);
    S3Result r = s->run(std::move(op));
    if (!r.outcome) return r.outcome.error().wrap("unable to write '" + at.str() + "'");
    return ok();
  }

  Result<void> retention_available(const storage::Location& dir) override;
  Result<void> set_retention(const storage::Location& at, const storage::Retention& r) override {
    SB_ASSIGN(auto s, session(at));
    S3Op op = op_on(S3OpKind::put_object_retention, at);
    op.lock = lock_of(r);
    S3Result res = s->run(std::move(op));
    if (!res.outcome)
      return res.outcome.error().wrap("unable to lock '" + at.str() + "' until " +
                                      iso8601(lock_of(r).retain_until));
    return ok();
  }
  Result<std::vector<std::string>> unfinished(const storage::Location& dir) override;
  Result<void> abandon_unfinished(const storage::Location& at) override;

  std::optional<storage::CounterGroup> thread_counters(bool close_thread) override {
    auto s = find_thread_session(this, close_thread);
    if (!s) return std::nullopt;
    S3Stats st = s->client().stats();
    storage::CounterGroup g;
    g.name = "s3";
    g.num("operations", st.operations)
        .num("failed", st.failed)
        .num("requests", st.requests)
        .num("retries", st.retries)
        .num("bytes_sent", st.bytes_sent, "bytes")
        .num("bytes_received", st.bytes_received, "bytes")
        .num("connections", st.connections);
    return g;
  }

 private:
  Result<std::shared_ptr<Session>> session(const storage::Location& at) {
    return thread_session(this, at);
  }
  Result<bool> has_children(Session& s, const storage::Location& at);

  storage::StorageCaps caps_;
};

Result<bool> S3Storage::has_children(Session& s, const storage::Location& at) {
  S3Op op = op_on(S3OpKind::list_objects_v2, at);
  op.prefix = op.key.empty() ? "" : op.key + "/";
  op.key.clear();
  op.max_keys = 1;
  S3Result r = s.run(std::move(op));
  if (!r.outcome) return r.outcome.error().wrap("unable to list '" + at.str() + "'");
  return !r.listing.objects.empty() || !r.listing.common_prefixes.empty();
}

Result<void> S3Storage::retention_available(const storage::Location& dir) {
  SB_ASSIGN(auto s, session(dir));
  S3Op op = op_on(S3OpKind::get_object_lock_configuration, dir);
  op.key.clear();
  S3Result r = s->run(std::move(op));
  const std::string bucket = "bucket '" + bucket_of(dir) + "' of '" + dir.str() + "'";
  if (!r.outcome && r.outcome.error().code == Errc::not_found && r.s3_code == "NoSuchBucket")
    return fail(Errc::not_found, bucket + " does not exist");
  if ((!r.outcome && r.outcome.error().code == Errc::not_found) ||
      (r.outcome && !r.lock_config.enabled))
    return fail(Errc::unsupported,
                bucket + " does not have Object Lock enabled (it can only be enabled when the "
                         "bucket is created; locked backups need such a bucket)");
  if (!r.outcome) return r.outcome.error().wrap("unable to read the Object Lock setting of " + bucket);
  return ok();
}

// Unfinished multipart uploads under `dir`, one level down (as list() sees names).
Result<std::vector<std::string>> S3Storage::unfinished(const storage::Location& dir) {
  SB_ASSIGN(auto s, session(dir));
  const std::string prefix = key_of(dir).empty() ? "" : key_of(dir) + "/";
  std::vector<std::string> names;
  std::string key_marker, id_marker;
  for (;;) {
    S3Op op = op_on(S3OpKind::list_multipart_uploads, dir);
    op.key.clear();
    op.prefix = prefix;
    op.delimiter = "/";
    op.key_marker = key_marker;
    op.upload_id_marker = id_marker;
    S3Result r = s->run(std::move(op));
    if (!r.outcome)
      return r.outcome.error().wrap("unable to list the unfinished uploads of '" + dir.str() + "'");
    for (const auto& u : r.uploads.uploads)
      if (u.key.size() > prefix.size()) names.push_back(u.key.substr(prefix.size()));
    if (!r.uploads.truncated || r.uploads.next_key_marker.empty()) break;
    key_marker = r.uploads.next_key_marker;
    id_marker = r.uploads.next_upload_id_marker;
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Result<void> S3Storage::abandon_unfinished(const storage::Location& at) {
  SB_ASSIGN(auto s, session(at));
  const std::string key = key_of(at);
  std::vector<std::string> ids;
  std::string key_marker, id_marker;
  for (;;) {
    S3Op op = op_on(S3OpKind::list_multipart_uploads, at);
    op.key.clear();
    op.prefix = key;
    op.key_marker = key_marker;
    op.upload_id_marker = id_marker;
    S3Result r = s->run(std::move(op));
    if (!r.outcome)
      return r.outcome.error().wrap("unable to list the unfinished uploads of '" + at.str() + "'");
    for (const auto& u : r.uploads.uploads)
      if (u.key == key) ids.push_back(u.upload_id);
    if (!r.uploads.truncated || r.uploads.next_key_marker.empty()) break;
    key_marker = r.uploads.next_key_marker;
    id_marker = r.uploads.next_upload_id_marker;
  }
  for (const auto& id : ids) {
    S3Op op = op_on(S3OpKind::abort_multipart_upload, at);
    op.upload_id = id;
    S3Result r = s->run(std::move(op));
    if (!r.outcome && r.outcome.error().code != Errc::not_found)
      return r.outcome.error().wrap("unable to abort the unfinished upload of '" + at.str() + "'");
  }
  return ok();
}

Result<storage::FileInfo> S3Storage::stat(const storage::Location& at, bool) {
  SB_ASSIGN(auto s, session(at));
  storage::FileInfo fi;
  fi.mode = kDirMode;
  if (key_of(at).empty()) {
    SB_TRY(make_dirs(at, 0));
    return fi;
  }
  S3Result r = s->run(op_on(S3OpKind::head_object, at));
  if (r.outcome) {
    fi.mode = kFileMode;
    fi.size = r.size;
    fi.mtime_ns = ns_of(r.last_modified);
    fi.ctime_ns = fi.mtime_ns;
    return fi;
  }
  if (r.outcome.error().code != Errc::not_found)
    return r.outcome.error().wrap("unable to stat '" + at.str() + "'");
  SB_ASSIGN(bool dir, has_children(*s, at));
  if (dir) return fi;
  return fail(Errc::not_found, "'" + at.str() + "' does not exist");
}

Result<std::vector<std::string>> S3Storage::list(const storage::Location& dir) {
  SB_ASSIGN(auto s, session(dir));
  std::string prefix = key_of(dir).empty() ? "" : key_of(dir) + "/";
  std::vector<std::string> names;
  std::string token;
  do {
    S3Op op = op_on(S3OpKind::list_objects_v2, dir);
    op.key.clear();
    op.prefix = prefix;
    op.delimiter = "/";
    op.continuation_token = token;
    S3Result r = s->run(std::move(op));
    if (!r.outcome) return r.outcome.error().wrap("unable to list '" + dir.str() + "'");
    for (const auto& o : r.listing.objects)
      if (o.key.size() > prefix.size()) names.push_back(o.key.substr(prefix.size()));
    for (const auto& p : r.listing.common_prefixes) {
      std::string n = p.substr(std::min(prefix.size(), p.size()));
      while (!n.empty() && n.back() == '/') n.pop_back();
      if (!n.empty()) names.push_back(std::move(n));
    }
    token = r.listing.truncated ? r.listing.next_continuation_token : std::string();
  } while (!token.empty());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

storage::Storage& s3_storage() {
  static S3Storage st;
  return st;
}

}  // namespace stripeback::s3
