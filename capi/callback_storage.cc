#include "capi/callback_storage.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <vector>

#include "storage/io_loop.h"
#include "storage/path_directory.h"

namespace stripeback::capi {
namespace {

using storage::Location;

// The caller's path: what follows "scheme://".
std::string path_of(const Location& at) {
  return at.path.size() > 1 && at.path[0] == '/' ? at.path.substr(1) : std::string();
}

Error error_of(int rc, const std::string& op, const Location& at) {
  const int err = rc < 0 ? -rc : EIO;
  Errc code = Errc::io;
  switch (err) {
    case ENOENT: code = Errc::not_found; break;
    case EEXIST: code = Errc::exists; break;
    case ENOSPC: code = Errc::no_space; break;
    case EINVAL: code = Errc::invalid_argument; break;
    case ENOTSUP: code = Errc::unsupported; break;
    case EBUSY: code = Errc::busy; break;
    default: break;
  }
  return Error{code, err, "unable to " + op + " '" + at.str() + "': " + std::strerror(err)};
}

// Completions of requests already carried out, handed back by reap().
class DoneQueue final : public storage::Queue {
 public:
  const char* name() const override { return "callback"; }
  size_t reap(std::span<storage::Completion> out, size_t, storage::Clock::time_point) override {
    size_t n = 0;
    while (n < out.size() && !done_.empty()) {
      out[n++] = std::move(done_.front());
      done_.pop_front();
    }
    return n;
  }
  size_t in_flight() const override { return done_.size(); }
  void push(storage::Completion c) { done_.push_back(std::move(c)); }

 private:
  std::deque<storage::Completion> done_;
};

class CallbackFile {
 public:
  CallbackFile(const sb_storage_ops& ops, void* handle, Location at)
      : ops_(ops), handle_(handle), at_(std::move(at)), name_(at_.str()) {}
  ~CallbackFile() { (void)release(); }

  Result<size_t> read(std::byte* buf, size_t len, uint64_t offset) {
    size_t total = 0;
    while (total < len) {
      size_t got = 0;
      int rc = ops_.read(ops_.user, handle_, offset + total, buf + total, len - total, &got);
      if (rc != 0) return error_of(rc, "read", at_);
      if (got == 0) break;
      total += got;
    }
    return total;
  }
  Result<void> write(const std::byte* buf, size_t len, uint64_t offset) {
    int rc = ops_.write(ops_.user, handle_, offset, buf, len);
    if (rc != 0) return error_of(rc, "write", at_);
    return ok();
  }
  Result<void> sync() {
    int rc = ops_.sync(ops_.user, handle_);
    if (rc != 0) return error_of(rc, "sync", at_);
    return ok();
  }
  Result<void> release() {
    if (handle_ == nullptr) return ok();
    void* h = handle_;
    handle_ = nullptr;
    int rc = ops_.close(ops_.user, h);
    if (rc != 0) return error_of(rc, "close", at_);
    return ok();
  }
  // Carries `r` out now and queues its completion on the loop.
  Result<void> submit(storage::IoLoop& loop, const storage::Request& r) {
    auto& q = loop.queue<DoneQueue>(&ops_, [] { return std::make_unique<DoneQueue>(); });
    storage::Completion c;
    c.tag = r.tag;
    c.kind = r.kind;
    switch (r.kind) {
      case storage::OpKind::read: {
        auto n = read(r.buf, r.len, r.offset);
        if (n) c.result = static_cast<uint32_t>(*n);
        else c.result = n.error();
        break;
      }
      case storage::OpKind::write: {
        auto w = write(r.buf, r.len, r.offset);
        if (w) c.result = r.len;
        else c.result = w.error();
        break;
      }
      case storage::OpKind::sync: {
        auto s = sync();
        if (s) c.result = uint32_t{0};
        else c.result = s.error();
        break;
      }
    }
    q.push(std::move(c));
    return ok();
  }
  const std::string& name() const { return name_; }
  const Location& at() const { return at_; }

 private:
  sb_storage_ops ops_;
  void* handle_;
  Location at_;
  std::string name_;
};

class CallbackRead final : public storage::ReadFile {
 public:
  CallbackRead(const sb_storage_ops& ops, void* h, Location at) : ops_(ops), f_(ops, h, std::move(at)) {}
  const std::string& name() const override { return f_.name(); }
  Result<void> submit(storage::IoLoop& loop, const storage::Request& r) override {
    return f_.submit(loop, r);
  }
  Result<storage::FileInfo> stat() override {
    sb_storage_stat st{};
    int rc = ops_.stat(ops_.user, path_of(f_.at()).c_str(), &st);
    if (rc != 0) return error_of(rc, "stat", f_.at());
    storage::FileInfo i;
    i.size = st.size;
    i.mode = st.mode;
    i.mtime_ns = st.mtime_ns;
    return i;
  }
  Result<size_t> read_at(std::byte* buf, size_t len, uint64_t offset) override {
    return f_.read(buf, len, offset);
  }

 private:
  sb_storage_ops ops_;
  CallbackFile f_;
};

class CallbackWrite final : public storage::WriteFile {
 public:
  CallbackWrite(const sb_storage_ops& ops, void* h, Location at) : f_(ops, h, std::move(at)) {}
  const std::string& name() const override { return f_.name(); }
  Result<void> submit(storage::IoLoop& loop, const storage::Request& r) override {
    return f_.submit(loop, r);
  }
  Result<void> write_at(const std::byte* buf, size_t len, uint64_t offset) override {
    return f_.write(buf, len, offset);
  }
  Result<void> preallocate(uint64_t, uint64_t) override { return ok(); }
  Result<void> truncate(uint64_t) override {
    return fail(Errc::unsupported, "truncating '" + f_.name() + "' is not supported by its storage");
  }
  Result<void> commit() override { return f_.sync(); }
  Result<void> set_attrs(const storage::Attrs&) override { return ok(); }
  Result<void> close() override { return f_.release(); }
  void abandon() override { (void)f_.release(); }

 private:
  CallbackFile f_;
};

class CallbackStorage final : public storage::Storage {
 public:
  CallbackStorage(std::string scheme, const sb_storage_ops& ops) : scheme_(std::move(scheme)), ops_(ops) {
    caps_.random_read = true;
    caps_.random_write = true;
    caps_.directories = true;
    caps_.alignment = 1;
  }
  const char* scheme() const override { return scheme_.c_str(); }
  const storage::StorageCaps& caps() const override { return caps_; }

  Result<std::unique_ptr<storage::ReadFile>> open_read(const Location& at,
                                                       const storage::OpenOptions&) override {
    void* h = nullptr;
    int rc = ops_.open(ops_.user, path_of(at).c_str(), SB_OPEN_READ, &h);
    if (rc != 0) return error_of(rc, "open", at);
    return std::unique_ptr<storage::ReadFile>(std::make_unique<CallbackRead>(ops_, h, at));
  }
  Result<std::unique_ptr<storage::WriteFile>> create(const Location& at,
                                                     const storage::CreateOptions&) override {
    sb_storage_stat st{};
    if (ops_.stat(ops_.user, path_of(at).c_str(), &st) == 0)
      return Error{Errc::exists, EEXIST, "'" + at.str() + "' exists"};
    void* h = nullptr;
    int rc = ops_.open(ops_.user, path_of(at).c_str(), SB_OPEN_WRITE, &h);
    if (rc != 0) return error_of(rc, "create", at);
    return std::unique_ptr<storage::WriteFile>(std::make_unique<CallbackWrite>(ops_, h, at));
  }
  Result<std::unique_ptr<storage::Directory>> open_dir(const Location& at, bool create) override {
    auto info = stat(at, true);
    if (!info) {
      if (info.error().code != Errc::not_found || !create) return info.error();
      SB_TRY(make_dirs(at, 0755));
    } else if (!S_ISDIR(info->mode)) {
      return fail(Errc::invalid_argument, "'" + at.str() + "' is not a directory");
    }
    return storage::make_path_directory(*this, at);
  }
  Result<storage::FileInfo> stat(const Location& at, bool) override {
    sb_storage_stat st{};
    int rc = ops_.stat(ops_.user, path_of(at).c_str(), &st);
    if (rc != 0) return error_of(rc, "stat", at);
    storage::FileInfo i;
    i.size = st.size;
    i.mode = st.mode;
    i.mtime_ns = st.mtime_ns;
    return i;
  }
  Result<std::vector<std::string>> list(const Location& dir) override {
    std::vector<std::string> names;
    auto add = [](void* ctx, const char* name) {
      try {
        static_cast<std::vector<std::string>*>(ctx)->emplace_back(name);
      } catch (...) {
      }
    };
    int rc = ops_.list(ops_.user, path_of(dir).c_str(), add, &names);
    if (rc != 0) return error_of(rc, "list", dir);
    return names;
  }
  Result<void> remove(const Location& at) override {
    int rc = ops_.remove(ops_.user, path_of(at).c_str());
    if (rc != 0) return error_of(rc, "remove", at);
    return ok();
  }
  Result<void> rename(const Location& from, const Location& to, bool replace) override {
    sb_storage_stat st{};
    if (!replace && ops_.stat(ops_.user, path_of(to).c_str(), &st) == 0)
      return Error{Errc::exists, EEXIST, "'" + to.str() + "' exists"};
    int rc = ops_.rename(ops_.user, path_of(from).c_str(), path_of(to).c_str());
    if (rc != 0) return error_of(rc, "rename", from);
    return ok();
  }
  Result<void> set_attrs(const Location&, const storage::Attrs&) override { return ok(); }
  Result<void> make_dirs(const Location& at, mode_t) override {
    if (ops_.mkdir == nullptr) return ok();
    int rc = ops_.mkdir(ops_.user, path_of(at).c_str());
    if (rc != 0 && rc != -EEXIST) return error_of(rc, "make directory", at);
    return ok();
  }
  Result<void> sync_dir(const Location&) override { return ok(); }

 private:
  std::string scheme_;
  sb_storage_ops ops_;
  storage::StorageCaps caps_;
};

}  // namespace

std::shared_ptr<storage::Storage> make_callback_storage(std::string scheme, const sb_storage_ops& ops) {
  return std::make_shared<CallbackStorage>(std::move(scheme), ops);
}

}  // namespace stripeback::capi
