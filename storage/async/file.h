// Local files: a move-only fd owner and the open/create/sync calls the engine needs, with
// errors that name the file and the cause.
#pragma once

#include <sys/types.h>

#include <string>

#include "stripeback/result.h"

namespace stripeback::io {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int release();
  bool valid() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

enum class Direct : bool { no, yes };

struct OpenedFile {
  UniqueFd fd;
  bool direct = false;  // O_DIRECT is in effect
};

// Opens for reading; with Direct::yes tries O_DIRECT first and falls back to buffered I/O
// where the file system refuses it (logging one line, the first time in the process).
Result<OpenedFile> open_read(const std::string& path, Direct want);
// Opens are made with O_NONBLOCK, so a FIFO (or a device) found at a path does not hang
// the open; this takes the flag off again, since io_uring honours it on regular files
// (it would return EAGAIN instead of waiting). `fd` stays open whatever happens.
void make_blocking(int fd);
// Creates a new file (O_EXCL: never replaces anything) for writing, O_DIRECT if possible.
Result<OpenedFile> create_exclusive(const std::string& path, mode_t mode, Direct want);
// fsync of a directory, so the names created in it are durable.
Result<void> fsync_dir(const std::string& path);
// Creates the directory and its parents; new local ones get `mode` (less the umask).
Result<void> make_dirs(const std::string& path, mode_t mode = 0755);

}  // namespace stripeback::io
