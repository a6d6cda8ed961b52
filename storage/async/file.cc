#include "storage/async/file.h"
#include "util/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>


namespace stripeback::io {
namespace {

// open(2) can be interrupted on network and FUSE file systems; that is never a real error.
int open_retry(const std::string& path, int flags, mode_t mode) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), flags, mode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

void note_no_direct(const std::string& path) {
  static std::once_flag logged;
  std::call_once(logged, [&path] {
    util::log_info("O_DIRECT not supported for '" + path + "'; using buffered I/O");
  });
}

std::string quoted(const std::string& path) { return "'" + path + "'"; }

// Linux creates the file before it checks whether the file system allows O_DIRECT, so a
// refused O_CREAT|O_EXCL|O_DIRECT open leaves an empty file behind. That name was made by
// this call, so take it over rather than report "File exists" for it.
Result<OpenedFile> adopt_refused_direct_create(const std::string& path) {
  UniqueFd fd(open_retry(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0));
  if (!fd.valid()) {
    const int err = errno;
    return sys_error(err, "unable to create " + quoted(path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    const int err = errno;
    return sys_error(err, "unable to create " + quoted(path));
  }
  if (!S_ISREG(st.st_mode) || st.st_size != 0) {
    return sys_error(EEXIST, "unable to create " + quoted(path));  // someone else's file
  }
  note_no_direct(path);
  return OpenedFile{std::move(fd), false};
}

Result<void> make_one_dir(const std::string& dir, mode_t mode) {
  if (::mkdir(dir.c_str(), mode) == 0) return ok();
  int err = errno;
  // Whatever mkdir said (EEXIST, or EROFS/EACCES for a directory that already exists on
  // some file systems), an existing directory is what we wanted.
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return ok();
    err = ENOTDIR;
  }
  return sys_error(err, "unable to create directory " + quoted(dir));
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() { reset(); }

int UniqueFd::release() { return std::exchange(fd_, -1); }

void UniqueFd::reset() {
  if (fd_ < 0) return;
  // Not retried on EINTR: Linux has released the descriptor either way. Durability of
  // written files comes from explicit fsync/fdatasync, so a failure here is only logged.
  if (::close(fd_) != 0) {
    const int err = errno;
    util::log_warn("close of fd " + std::to_string(fd_) + " failed: " + std::strerror(err));
  }
  fd_ = -1;
}

void make_blocking(int fd) {
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0 && (fl & O_NONBLOCK)) (void)::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

Result<OpenedFile> open_read(const std::string& path, Direct want) {
  const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
  if (want == Direct::yes) {
    const int fd = open_retry(path, flags | O_DIRECT, 0);
    if (fd >= 0) {
      make_blocking(fd);
      return OpenedFile{UniqueFd(fd), true};
    }
    const int err = errno;
    if (err != EINVAL) return sys_error(err, "unable to open " + quoted(path) + " for read");
  }
  const int fd = open_retry(path, flags, 0);
  if (fd < 0) {
    const int err = errno;
    return sys_error(err, "unable to open " + quoted(path) + " for read");
  }
  make_blocking(fd);
  if (want == Direct::yes) note_no_direct(path);
  return OpenedFile{UniqueFd(fd), false};
}

Result<OpenedFile> create_exclusive(const std::string& path, mode_t mode, Direct want) {
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
  if (want == Direct::yes) {
    const int fd = open_retry(path, flags | O_DIRECT, mode);
    if (fd >= 0) return OpenedFile{UniqueFd(fd), true};
    const int err = errno;
    if (err != EINVAL) return sys_error(err, "unable to create " + quoted(path));
  }
  const int fd = open_retry(path, flags, mode);
  if (fd < 0) {
    const int err = errno;
    // EEXIST right after a refused O_DIRECT attempt (which passed the O_EXCL check) means
    // that attempt created the file.
    if (err == EEXIST && want == Direct::yes) return adopt_refused_direct_create(path);
    return sys_error(err, "unable to create " + quoted(path));
  }
  if (want == Direct::yes) note_no_direct(path);
  return OpenedFile{UniqueFd(fd), false};
}

Result<void> fsync_dir(const std::string& path) {
  UniqueFd fd(open_retry(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
  if (!fd.valid()) {
    const int err = errno;
    return sys_error(err, "unable to open directory " + quoted(path));
  }
  if (::fsync(fd.get()) != 0) {
    const int err = errno;
    return sys_error(err, "unable to fsync directory " + quoted(path));
  }
  return ok();
}

Result<void> make_dirs(const std::string& path, mode_t mode) {
  if (path.empty())
    return fail(Errc::invalid_argument, "unable to create directory '': empty path");
  // Creates each prefix ending before a '/', then the whole path; the search starts at 1 so
  // that the root of an absolute path is not a component, and empty components from
  // repeated or trailing slashes are skipped.
  size_t end = 0;
  do {
    end = path.find('/', end + 1);
    const std::string prefix = path.substr(0, end);
    if (prefix.back() == '/') continue;
    SB_TRY(make_one_dir(prefix, mode));
  } while (end != std::string::npos);
  return ok();
}

}  // namespace stripeback::io
