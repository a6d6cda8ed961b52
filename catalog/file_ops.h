// The few file-system calls the catalog makes, each returning an Error that names the
// object and the cause. Kept local to catalog/ so the catalog does not depend on io/
// (and through it on io_uring).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "stripeback/result.h"

namespace stripeback::catalog {

// Owns a file descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// open(2) with O_CLOEXEC added; `what` names the file in errors ("catalog log").
Result<Fd> open_file(const std::string& path, int flags, mode_t mode, const std::string& what);

// flock(2) held for the lifetime of the object. flock locks belong to the open file
// description, so two Catalog objects (each with its own descriptor) exclude each other
// even inside one process, while a descriptor inherited over fork() would not.
class FileLock {
 public:
  // op is LOCK_SH or LOCK_EX; blocks until granted.
  static Result<FileLock> acquire(int fd, int op, const std::string& path);
  FileLock(FileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

Result<uint64_t> file_size(int fd, const std::string& path);
// Reads [offset, offset + length); returns fewer bytes only if the file ends first.
Result<std::vector<uint8_t>> read_range(int fd, uint64_t offset, uint64_t length,
                                        const std::string& path);
// Writes all of `data` at `offset`: one pwrite(2) unless the kernel returns short.
// `what` names the data in errors: "unable to write catalog record to '<path>': ...".
Result<void> write_at(int fd, uint64_t offset, std::span<const uint8_t> data,
                      const std::string& path, const std::string& what);
Result<void> sync_data(int fd, const std::string& path);
Result<void> truncate_to(int fd, uint64_t size, const std::string& path);
// fsync of a directory, so names created in it survive a crash.
Result<void> sync_dir(const std::string& dir);
// mkdir -p; directories it creates get `mode`.
Result<void> make_dirs(const std::string& path, mode_t mode);
// Writes `data` to a new file `<dir>/<name>` (never replacing one: "-1", "-2", ... are
// appended on a clash), syncs it and the directory. Returns the path used.
Result<std::string> save_new_file(const std::string& dir, const std::string& name,
                                  std::span<const uint8_t> data);

}  // namespace stripeback::catalog
