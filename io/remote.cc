#include "io/remote.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <utility>

namespace stripeback::io {
namespace {

std::atomic<RemoteFs*> g_remote{nullptr};

std::string quoted(const std::string& s) { return "'" + s + "'"; }

RemoteFs* remote_of_fd(int fd) { return is_remote_fd(fd) ? g_remote.load() : nullptr; }

Result<RemoteFs*> need_remote(int fd, const std::string& what) {
  RemoteFs* fs = remote_of_fd(fd);
  if (fs == nullptr) return fail(Errc::invalid_argument, "no remote backend for " + quoted(what));
  return fs;
}

// Sends ops to one of two engines by descriptor and merges their completions. When both
// have work in flight it alternates a non-blocking look at the local engine with a short
// wait on the remote one, so neither starves the other.
class RoutingEngine final : public IoEngine {
 public:
  RoutingEngine(std::unique_ptr<IoEngine> local, std::unique_ptr<IoEngine> remote)
      : local_(std::move(local)), remote_(std::move(remote)) {}

  const char* name() const override { return local_->name(); }

  Result<void> submit(std::span<const IoOp> ops) override {
    std::vector<IoOp> l, r;
    for (const IoOp& op : ops) (is_remote_fd(op.fd) ? r : l).push_back(op);
    if (!l.empty()) SB_TRY(local_->submit(l));
    if (!r.empty()) SB_TRY(remote_->submit(r));
    return ok();
  }

  size_t reap(std::span<IoCompletion> out, size_t min_complete,
              Clock::time_point until) override {
    min_complete = std::min({min_complete, out.size(), in_flight()});
    if (remote_->in_flight() == 0) return local_->reap(out, min_complete, until);
    if (local_->in_flight() == 0) return remote_->reap(out, min_complete, until);
    // The remote engine waits in poll(); the local ring's descriptor wakes it.
    const int fd = local_->wait_fd();
    remote_->wake_on(fd);
    size_t n = 0;
    for (;;) {
      n += local_->reap(out.subspan(n), 0, Clock::now());
      if (n >= min_complete || n == out.size() || Clock::now() >= until) break;
      auto slice = fd >= 0 ? until : std::min(until, Clock::now() + std::chrono::milliseconds(1));
      n += remote_->reap(out.subspan(n), 1, slice);
      if (n >= min_complete || n == out.size() || Clock::now() >= until) break;
    }
    remote_->wake_on(-1);
    return n;
  }

  size_t in_flight() const override { return local_->in_flight() + remote_->in_flight(); }

 private:
  std::unique_ptr<IoEngine> local_, remote_;
};

}  // namespace

bool is_url(const std::string& path) {
  auto p = path.find("://");
  return p != std::string::npos && p > 0 &&
         std::all_of(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(p),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
}

std::string join_path(const std::string& dir, const std::string& name) {
  auto q = is_url(dir) ? dir.find('?') : std::string::npos;
  if (q == std::string::npos) return dir + "/" + name;
  return dir.substr(0, q) + "/" + name + dir.substr(q);
}

void register_remote(RemoteFs* fs) { g_remote.store(fs); }
RemoteFs* remote_fs() { return g_remote.load(); }

RemoteFs* remote_for(const std::string& path) {
  RemoteFs* fs = g_remote.load();
  return fs != nullptr && fs->handles(path) ? fs : nullptr;
}

Result<struct stat> stat_path(const std::string& path) {
  if (RemoteFs* fs = remote_for(path)) return fs->stat(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return sys_error(errno, "unable to stat " + quoted(path));
  return st;
}

Result<struct stat> lstat_path(const std::string& path) {
  if (RemoteFs* fs = remote_for(path)) return fs->stat(path);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return sys_error(errno, "unable to stat " + quoted(path));
  return st;
}

Result<std::vector<std::string>> list_dir(const std::string& path) {
  if (RemoteFs* fs = remote_for(path)) return fs->list_dir(path);
  std::error_code ec;
  std::filesystem::directory_iterator it(path, std::filesystem::directory_options::none, ec);
  if (ec) return Error{Errc::io, ec.value(), "unable to list " + quoted(path) + ": " + ec.message()};
  std::vector<std::string> names;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    names.push_back(it->path().filename().string());
  }
  if (ec) return Error{Errc::io, ec.value(), "unable to list " + quoted(path) + ": " + ec.message()};
  return names;
}

Result<struct stat> fstat_fd(int fd, const std::string& what) {
  if (is_remote_fd(fd)) {
    SB_ASSIGN(RemoteFs * fs, need_remote(fd, what));
    return fs->fstat(fd);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error(errno, "unable to stat " + quoted(what));
  return st;
}

Result<size_t> pread_fd(int fd, std::byte* buf, size_t len, uint64_t off, const std::string& what) {
  if (is_remote_fd(fd)) {
    SB_ASSIGN(RemoteFs * fs, need_remote(fd, what));
    return fs->pread(fd, buf, len, off);
  }
  size_t done = 0;
  while (done < len) {
    ssize_t r = ::pread(fd, buf + done, len - done, static_cast<off_t>(off + done));
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0)
      return sys_error(errno, "unable to read " + quoted(what) + " at offset " +
                                  std::to_string(off + done));
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

Result<void> pwrite_all_fd(int fd, const std::byte* buf, size_t len, uint64_t off,
                           const std::string& what) {
  if (is_remote_fd(fd)) {
    SB_ASSIGN(RemoteFs * fs, need_remote(fd, what));
    return fs->pwrite_all(fd, buf, len, off);
  }
  while (len > 0) {
    ssize_t r = ::pwrite(fd, buf, len, static_cast<off_t>(off));
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return sys_error(errno, "unable to write " + quoted(what) + " at offset " +
                                  std::to_string(off));
    }
    buf += r;
    len -= static_cast<size_t>(r);
    off += static_cast<uint64_t>(r);
  }
  return ok();
}

Result<void> datasync_fd(int fd, const std::string& what) {
  if (is_remote_fd(fd)) {
    SB_ASSIGN(RemoteFs * fs, need_remote(fd, what));
    return fs->sync(fd);
  }
  if (::fdatasync(fd) != 0) return sys_error(errno, "unable to sync " + quoted(what));
  return ok();
}

Result<void> truncate_fd(int fd, uint64_t size, const std::string& what) {
  if (is_remote_fd(fd)) {
    SB_ASSIGN(RemoteFs * fs, need_remote(fd, what));
    return fs->truncate(fd, size);
  }
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0)
    return sys_error(errno, "unable to trim " + quoted(what));
  return ok();
}

Result<void> unlink_path(const std::string& path) {
  if (RemoteFs* fs = remote_for(path)) return fs->unlink(path);
  if (::unlink(path.c_str()) != 0) return sys_error(errno, "unable to remove " + quoted(path));
  return ok();
}

Result<void> rename_path(const std::string& from, const std::string& to) {
  if (RemoteFs* fs = remote_for(from)) return fs->rename(from, to);
  if (::rename(from.c_str(), to.c_str()) != 0)
    return sys_error(errno, "unable to rename " + quoted(from) + " to " + quoted(to));
  return ok();
}

std::unique_ptr<IoEngine> make_routing_engine(std::unique_ptr<IoEngine> local,
                                              std::unique_ptr<IoEngine> remote) {
  return std::make_unique<RoutingEngine>(std::move(local), std::move(remote));
}

}  // namespace stripeback::io
