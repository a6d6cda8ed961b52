#include "backends/local/local_storage.h"

#include "backends/local/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "storage/async/file.h"
#include "storage/async/engine_queue.h"
#include "storage/async/io_engine.h"
#include "storage/io_loop.h"

namespace stripeback::io {
namespace {

using storage::Completion;
using storage::FileInfo;
using storage::Location;
using storage::Request;

std::string q(const std::string& s) { return "'" + s + "'"; }

FileInfo info_of(const struct stat& st) {
  FileInfo i;
  i.size = static_cast<uint64_t>(st.st_size);
  i.mode = st.st_mode;
  i.uid = st.st_uid;
  i.gid = st.st_gid;
  i.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  i.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  i.ino = static_cast<uint64_t>(st.st_ino);
  i.dev = st.st_dev;
  i.nlink = static_cast<uint32_t>(st.st_nlink);
  return i;
}

const char kQueueKey = 0;

// Queues `r` on the thread's ring: every request of a loop between two reaps goes out in
// one submit.
Result<void> submit_local(storage::IoLoop& loop, int fd, const Request& r) {
  loop.queue<EngineQueue>(&kQueueKey, [&loop] {
        return std::make_unique<EngineQueue>(make_engine({loop.queue_depth()}), "", false,
                                             loop.buffers());
      }).add(fd, r);
  return ok();
}

Result<void> set_fd_attrs(int fd, const storage::Attrs& a, const std::string& shown) {
  if (a.set_owner && ::fchown(fd, a.uid, a.gid) != 0)
    return sys_error(errno, "unable to set the owner of " + q(shown));
  if (::fchmod(fd, static_cast<mode_t>(a.mode & 07777)) != 0)
    return sys_error(errno, "unable to set the mode of " + q(shown));
  timespec ts[2];
  ts[0].tv_sec = 0;
  ts[0].tv_nsec = UTIME_OMIT;
  ts[1].tv_sec = a.mtime_ns / 1000000000;
  ts[1].tv_nsec = a.mtime_ns % 1000000000;
  if (::futimens(fd, ts) != 0)
    return sys_error(errno, "unable to set the modification time of " + q(shown));
  return ok();
}

class LocalFile final : public storage::ReadFile {
 public:
  LocalFile(OpenedFile f, std::string name) : f_(std::move(f)), name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  bool direct() const override { return f_.direct; }
  Result<void> submit(storage::IoLoop& loop, const Request& r) override {
    return submit_local(loop, f_.fd.get(), r);
  }
  Result<FileInfo> stat() override {
    struct stat st {};
    if (::fstat(f_.fd.get(), &st) != 0) return sys_error(errno, "unable to stat " + q(name_));
    return info_of(st);
  }
  Result<size_t> read_at(std::byte* buf, size_t len, uint64_t off) override {
    size_t done = 0;
    while (done < len) {
      ssize_t r = ::pread(f_.fd.get(), buf + done, len - done, static_cast<off_t>(off + done));
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r < 0)
        return sys_error(errno, "unable to read " + q(name_) + " at offset " +
                                    std::to_string(off + done));
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }

 private:
  OpenedFile f_;
  std::string name_;
};

class LocalWriteFile final : public storage::WriteFile {
 public:
  LocalWriteFile(OpenedFile f, std::string name) : f_(std::move(f)), name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  bool direct() const override { return f_.direct; }
  Result<void> submit(storage::IoLoop& loop, const Request& r) override {
    return submit_local(loop, f_.fd.get(), r);
  }
  Result<void> write_at(const std::byte* buf, size_t len, uint64_t off) override {
    while (len > 0) {
      ssize_t r = ::pwrite(f_.fd.get(), buf, len, static_cast<off_t>(off));
      if (r < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return sys_error(errno, "unable to write " + q(name_) + " at offset " + std::to_string(off));
      }
      buf += r;
      len -= static_cast<size_t>(r);
      off += static_cast<uint64_t>(r);
    }
    return ok();
  }
  Result<FileInfo> stat() override {
    struct stat st {};
    if (::fstat(f_.fd.get(), &st) != 0) return sys_error(errno, "unable to stat " + q(name_));
    return info_of(st);
  }
  Result<void> preallocate(uint64_t off, uint64_t len) override {
    if (no_prealloc_ || len == 0) return ok();
    if (::fallocate(f_.fd.get(), 0, static_cast<off_t>(off), static_cast<off_t>(len)) == 0)
      return ok();
    const int err = errno;
    if (err == EOPNOTSUPP || err == ENOSYS || err == EINVAL) {
      no_prealloc_ = true;  // the file system cannot: writes simply extend the file
      return ok();
    }
    return sys_error(err, "unable to allocate " + std::to_string(len) + " bytes for " + q(name_));
  }
  Result<void> truncate(uint64_t size) override {
    if (::ftruncate(f_.fd.get(), static_cast<off_t>(size)) != 0)
      return sys_error(errno, "unable to set the size of " + q(name_));
    return ok();
  }
  Result<void> commit() override {
    if (::fdatasync(f_.fd.get()) != 0) return sys_error(errno, "unable to sync " + q(name_));
    return ok();
  }
  Result<void> set_attrs(const storage::Attrs& a) override {
    SB_TRY(set_fd_attrs(f_.fd.get(), a, name_));
    // The attributes are metadata fdatasync may leave behind.
    if (::fsync(f_.fd.get()) != 0) return sys_error(errno, "unable to sync " + q(name_));
    return ok();
  }
  Result<void> close() override {
    f_.fd.reset();
    return ok();
  }
  void abandon() override { f_.fd.reset(); }

 private:
  OpenedFile f_;
  std::string name_;
  bool no_prealloc_ = false;
};

std::string child_name(const Location& dir, const std::string& name) {
  return dir.path == "/" ? "/" + name : dir.path + "/" + name;
}

class LocalDirectory final : public storage::Directory {
 public:
  LocalDirectory(UniqueFd fd, Location at) : fd_(std::move(fd)), at_(std::move(at)) {}
  const Location& location() const override { return at_; }

  Result<std::unique_ptr<storage::Directory>> open_dir(const std::string& name, bool create,
                                                       mode_t mode) override {
    const std::string shown = child_name(at_, name);
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = ::openat(fd_.get(), name.c_str(), flags);
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(fd_.get(), name.c_str(), mode) != 0 && errno != EEXIST)
        return sys_error(errno, "unable to create directory " + q(shown));
      fd = ::openat(fd_.get(), name.c_str(), flags);
    }
    if (fd < 0) {
      if (errno == ELOOP || errno == ENOTDIR)
        return fail(Errc::invalid_argument,
                    q(shown) + " is not a directory (a symbolic link or a file)");
      return sys_error(errno, "unable to open directory " + q(shown));
    }
    return std::unique_ptr<storage::Directory>(
        std::make_unique<LocalDirectory>(UniqueFd(fd), at_.join(name)));
  }

  Result<std::unique_ptr<storage::WriteFile>> create(const std::string& name,
                                                     const storage::CreateOptions& o) override {
    const std::string shown = child_name(at_, name);
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    bool direct = o.direct;
    int fd = ::openat(fd_.get(), name.c_str(), flags | (direct ? O_DIRECT : 0), o.mode);
    if (fd < 0 && errno == EINVAL && direct) {
      // The file system refuses O_DIRECT; the refused O_EXCL open may have left the name.
      ::unlinkat(fd_.get(), name.c_str(), 0);
      direct = false;
      fd = ::openat(fd_.get(), name.c_str(), flags, o.mode);
    }
    if (fd < 0) return sys_error(errno, "unable to create " + q(shown));
    return std::unique_ptr<storage::WriteFile>(
        std::make_unique<LocalWriteFile>(OpenedFile{UniqueFd(fd), direct}, shown));
  }

  Result<std::unique_ptr<storage::ReadFile>> open(const std::string& name,
                                                  const storage::OpenOptions& o) override {
    const std::string shown = child_name(at_, name);
    // O_NONBLOCK: a FIFO planted at `name` must not hang the open (make_blocking() after).
    const int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
    bool direct = o.direct;
    int fd = ::openat(fd_.get(), name.c_str(), flags | (direct ? O_DIRECT : 0));
    if (fd < 0 && errno == EINVAL && direct) {
      direct = false;
      fd = ::openat(fd_.get(), name.c_str(), flags);
    }
    if (fd < 0) return sys_error(errno, "unable to open " + q(shown) + " for read");
    make_blocking(fd);
    return std::unique_ptr<storage::ReadFile>(
        std::make_unique<LocalFile>(OpenedFile{UniqueFd(fd), direct}, shown));
  }

  Result<std::unique_ptr<storage::WriteFile>> open_write(const std::string& name,
                                                         const storage::OpenOptions& o) override {
    const std::string shown = child_name(at_, name);
    const int flags = O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
    bool direct = o.direct;
    int fd = ::openat(fd_.get(), name.c_str(), flags | (direct ? O_DIRECT : 0));
    if (fd < 0 && errno == EINVAL && direct) {
      direct = false;
      fd = ::openat(fd_.get(), name.c_str(), flags);
    }
    if (fd < 0) return sys_error(errno, "unable to open " + q(shown) + " for write");
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return fail(Errc::invalid_argument, q(shown) + " is not a regular file");
    }
    make_blocking(fd);
    return std::unique_ptr<storage::WriteFile>(
        std::make_unique<LocalWriteFile>(OpenedFile{UniqueFd(fd), direct}, shown));
  }

  Result<FileInfo> stat(const std::string& name) override {
    struct stat st {};
    if (::fstatat(fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return sys_error(errno, "unable to stat " + q(child_name(at_, name)));
    return info_of(st);
  }

  Result<std::vector<std::string>> list() override {
    int fd = ::openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return sys_error(errno, "unable to list " + q(at_.path));
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
      const int err = errno;
      ::close(fd);
      return sys_error(err, "unable to list " + q(at_.path));
    }
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    ::closedir(d);
    return names;
  }

  Result<void> remove(const std::string& name) override {
    if (::unlinkat(fd_.get(), name.c_str(), 0) != 0)
      return sys_error(errno, "unable to remove " + q(child_name(at_, name)));
    return ok();
  }

  Result<void> rename(const std::string& from, const std::string& to, bool replace) override {
    unsigned flags = replace ? 0 : RENAME_NOREPLACE;
    if (::renameat2(fd_.get(), from.c_str(), fd_.get(), to.c_str(), flags) != 0) {
      const int err = errno;
      if (err == EEXIST)
        return Error{Errc::exists, EEXIST, q(child_name(at_, to)) + " exists"};
      return sys_error(err, "unable to rename " + q(child_name(at_, from)) + " to " +
                                q(child_name(at_, to)));
    }
    return ok();
  }

  Result<void> set_attrs(const storage::Attrs& a) override {
    return set_fd_attrs(fd_.get(), a, at_.path);
  }

  Result<void> sync() override {
    if (::fsync(fd_.get()) != 0) return sys_error(errno, "unable to sync directory " + q(at_.path));
    return ok();
  }

 private:
  UniqueFd fd_;
  Location at_;
};

class LocalStorage final : public storage::Storage {
 public:
  LocalStorage() {
    caps_.preallocate = true;
    caps_.dir_sync = true;
    caps_.alignment = 4096;
  }
  const char* scheme() const override { return "local"; }
  const storage::StorageCaps& caps() const override { return caps_; }

  Result<std::unique_ptr<storage::ReadFile>> open_read(const Location& at,
                                                       const storage::OpenOptions& o) override {
    SB_ASSIGN(OpenedFile f, io::open_read(at.path, o.direct ? Direct::yes : Direct::no));
    return std::unique_ptr<storage::ReadFile>(std::make_unique<LocalFile>(std::move(f), at.path));
  }

  Result<std::unique_ptr<storage::WriteFile>> create(const Location& at,
                                                     const storage::CreateOptions& o) override {
    SB_ASSIGN(OpenedFile f,
              io::create_exclusive(at.path, o.mode, o.direct ? Direct::yes : Direct::no));
    return std::unique_ptr<storage::WriteFile>(
        std::make_unique<LocalWriteFile>(std::move(f), at.path));
  }

  Result<std::unique_ptr<storage::WriteFile>> open_write(const Location& at, mode_t mode) override {
    int fd = -1;
    do {
      fd = ::open(at.path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, mode);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return sys_error(errno, "unable to open " + q(at.path) + " for write");
    return std::unique_ptr<storage::WriteFile>(
        std::make_unique<LocalWriteFile>(OpenedFile{UniqueFd(fd), false}, at.path));
  }

  Result<std::unique_ptr<storage::Directory>> open_dir(const Location& at, bool create) override {
    if (create) SB_TRY(io::make_dirs(at.path));
    int fd = ::open(at.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return sys_error(errno, "unable to open directory " + q(at.path));
    return std::unique_ptr<storage::Directory>(std::make_unique<LocalDirectory>(UniqueFd(fd), at));
  }

  Result<FileInfo> stat(const Location& at, bool follow) override {
    struct stat st {};
    int rc = follow ? ::stat(at.path.c_str(), &st) : ::lstat(at.path.c_str(), &st);
    if (rc != 0) return sys_error(errno, "unable to stat " + q(at.path));
    return info_of(st);
  }

  std::optional<std::string> pseudo_file_system(const Location& dir, const FileInfo& st) override {
    return io::pseudo_file_system(dir.path, static_cast<dev_t>(st.dev));
  }
  Result<std::vector<std::string>> list(const Location& dir) override {
    SB_ASSIGN(auto d, open_dir(dir, false));
    return d->list();
  }

  Result<void> remove(const Location& at) override {
    if (::unlink(at.path.c_str()) != 0) return sys_error(errno, "unable to remove " + q(at.path));
    return ok();
  }

  Result<void> rename(const Location& from, const Location& to, bool replace) override {
    unsigned flags = replace ? 0 : RENAME_NOREPLACE;
    if (::renameat2(AT_FDCWD, from.path.c_str(), AT_FDCWD, to.path.c_str(), flags) != 0) {
      const int err = errno;
      if (err == EEXIST) return Error{Errc::exists, EEXIST, q(to.path) + " exists"};
      return sys_error(err, "unable to rename " + q(from.path) + " to " + q(to.path));
    }
    return ok();
  }

  Result<void> set_attrs(const Location& at, const storage::Attrs& a) override {
    UniqueFd fd(::open(at.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return sys_error(errno, "unable to open " + q(at.path));
    return set_fd_attrs(fd.get(), a, at.path);
  }

  Result<void> make_dirs(const Location& at, mode_t mode) override {
    return io::make_dirs(at.path, mode);
  }

  Result<void> sync_dir(const Location& dir) override { return io::fsync_dir(dir.path); }

 private:
  storage::StorageCaps caps_;
};

}  // namespace

storage::Storage& local_storage() {
  static LocalStorage s;
  return s;
}

storage::Backend local_backend() {
  storage::Backend b;
  b.parse = [](std::string_view text) -> Result<Location> {
    return Location::local(std::string(text));
  };
  b.storage = [](const Location&) -> Result<storage::Storage*> { return &local_storage(); };
  b.counted = &local_storage();
  return b;
}

}  // namespace stripeback::io
