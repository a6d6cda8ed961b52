#include "catalog/file_ops.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <limits>

namespace stripeback::catalog {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

// close(2) errors are ignored on purpose: every write that matters was followed by
// fdatasync, whose result was checked, and retrying close after EINTR is unsafe on Linux.
Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Result<Fd> open_file(const std::string& path, int flags, mode_t mode, const std::string& what) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return sys_error(errno, "unable to open " + what + " '" + path + "'");
  return Fd(fd);
}

Result<FileLock> FileLock::acquire(int fd, int op, const std::string& path) {
  int rc;
  do {
    rc = ::flock(fd, op);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    return sys_error(errno, std::string("unable to lock '") + path + "' " +
                                (op == LOCK_EX ? "exclusively" : "shared"));
  }
  return FileLock(fd);
}

// Closing the descriptor would release the lock anyway; an explicit unlock lets the same
// descriptor be locked again. Failure is impossible for a valid, locked descriptor.
FileLock::~FileLock() {
  if (fd_ >= 0) (void)::flock(fd_, LOCK_UN);
}

Result<uint64_t> file_size(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error(errno, "unable to stat '" + path + "'");
  return static_cast<uint64_t>(st.st_size);
}

Result<std::vector<uint8_t>> read_range(int fd, uint64_t offset, uint64_t length,
                                        const std::string& path) {
  if (length > static_cast<uint64_t>(std::numeric_limits<ssize_t>::max())) {
    return fail(Errc::invalid_argument,
                "unable to read " + std::to_string(length) + " bytes of '" + path + "': too large");
  }
  std::vector<uint8_t> buf(static_cast<size_t>(length));
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t n =
        ::pread(fd, buf.data() + done, buf.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error(errno,
                       "unable to read '" + path + "' at offset " + std::to_string(offset + done));
    }
    if (n == 0) break;  // the file is shorter than expected: the caller sees fewer bytes
    done += static_cast<size_t>(n);
  }
  buf.resize(done);
  return buf;
}

Result<void> write_at(int fd, uint64_t offset, std::span<const uint8_t> data,
                      const std::string& path, const std::string& what) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n =
        ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error(errno, "unable to write " + what + " to '" + path + "'");
    }
    done += static_cast<size_t>(n);
  }
  return ok();
}

Result<void> sync_data(int fd, const std::string& path) {
  if (::fdatasync(fd) != 0) return sys_error(errno, "unable to sync '" + path + "'");
  return ok();
}

Result<void> truncate_to(int fd, uint64_t size, const std::string& path) {
  int rc;
  do {
    rc = ::ftruncate(fd, static_cast<off_t>(size));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    return sys_error(errno,
                     "unable to truncate '" + path + "' to " + std::to_string(size) + " bytes");
  }
  return ok();
}

Result<void> sync_dir(const std::string& dir) {
  SB_ASSIGN(Fd fd, open_file(dir, O_RDONLY | O_DIRECTORY, 0, "directory"));
  if (::fsync(fd.get()) != 0) return sys_error(errno, "unable to sync directory '" + dir + "'");
  return ok();
}

Result<void> make_dirs(const std::string& path, mode_t mode) {
  // Walk the components left to right so every missing parent is created in turn.
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), mode) == 0) continue;
    int err = errno;
    struct stat st {};
    if (err == EEXIST && ::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    return sys_error(err, "unable to create directory '" + prefix + "'");
  }
  return ok();
}

Result<std::string> save_new_file(const std::string& dir, const std::string& name,
                                  std::span<const uint8_t> data) {
  std::string path = dir + "/" + name;
  Fd fd;
  for (int attempt = 1;; ++attempt) {
    auto opened = open_file(path, O_WRONLY | O_CREAT | O_EXCL, 0600, "file");
    if (opened) {
      fd = std::move(opened).value();
      break;
    }
    if (opened.error().sys_errno != EEXIST || attempt > 100) return opened.error();
    path = dir + "/" + name + "-" + std::to_string(attempt);
  }
  SB_TRY(write_at(fd.get(), 0, data, path, "saved bytes"));
  if (::fsync(fd.get()) != 0) return sys_error(errno, "unable to sync '" + path + "'");
  SB_TRY(sync_dir(dir));
  return path;
}

}  // namespace stripeback::catalog
