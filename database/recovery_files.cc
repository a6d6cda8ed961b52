#include "database/recovery_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stripeback::database {
namespace {

// Owner and group to give what is created: the data directory's.
struct Owner {
  uid_t uid = 0;
  gid_t gid = 0;
};

Error io_error(const std::string& what, const std::string& path, int err) {
  return Error{Errc::io, err, "unable to " + what + " '" + path + "': " + std::strerror(err)};
}

// Gives `path` the owner; refused when this process may not (it is not root): kept as is.
void give(const std::string& path, const Owner& o) {
  if (::geteuid() == 0 && ::chown(path.c_str(), o.uid, o.gid) != 0) {
    // Root may be refused on some file systems; PostgreSQL then says what it needs.
  }
}

Result<void> sync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return io_error("open", path, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return io_error("sync", path, err);
  return ok();
}

// Writes `text` to `path`: replacing it, or appended to it.
enum class Append : bool { no, yes };
Result<void> write_file(const std::string& path, const std::string& text, Append append,
                        const Owner& o) {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append == Append::yes ? O_APPEND : O_TRUNC);
  const int fd = ::open(path.c_str(), flags, 0600);
  if (fd < 0) return io_error("open", path, errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return io_error("write", path, err);
    }
    done += static_cast<size_t>(n);
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return io_error("sync", path, err);
  give(path, o);
  return ok();
}

}  // namespace

const std::vector<std::string>& startup_directories() {
  static const std::vector<std::string> kDirs = {
      "pg_wal",       "pg_wal/archive_status", "pg_commit_ts",        "pg_dynshmem",
      "pg_notify",    "pg_serial",             "pg_snapshots",        "pg_stat",
      "pg_stat_tmp",  "pg_subtrans",           "pg_twophase",         "pg_replslot",
      "pg_tblspc",    "pg_logical",            "pg_logical/snapshots", "pg_logical/mappings"};
  return kDirs;
}

std::string tablespace_map_below(const std::string& map, const std::string& root,
                                 const PathMap& remap) {
  std::string base = root;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.empty() && !remap) return map;
  std::string out;
  size_t pos = 0;
  while (pos < map.size()) {
    size_t end = map.find('\n', pos);
    if (end == std::string::npos) end = map.size();
    const std::string line = map.substr(pos, end - pos);
    const size_t space = line.find(' ');
    if (space != std::string::npos && space + 1 < line.size() && line[space + 1] == '/')
      out += line.substr(0, space + 1) + base +
             (remap ? remap(line.substr(space + 1)) : line.substr(space + 1));
    else
      out += line;
    if (end < map.size()) out += '\n';
    pos = end + 1;
  }
  return out;
}

Result<std::vector<std::string>> write_recovery_files(const RecoveryFiles& f) {
  struct stat st{};
  if (::stat(f.data_dir.c_str(), &st) != 0) return io_error("stat", f.data_dir, errno);
  if (!S_ISDIR(st.st_mode))
    return fail(Errc::invalid_argument, "'" + f.data_dir + "' is not a directory");
  const Owner owner{st.st_uid, st.st_gid};
  const std::string dir = f.data_dir + "/";
  std::vector<std::string> written;
  for (const auto& d : startup_directories()) {
    const std::string path = dir + d;
    if (::mkdir(path.c_str(), 0700) == 0) {
      give(path, owner);
      written.push_back(d + "/");
    } else if (errno != EEXIST) {
      return io_error("create directory", path, errno);
    }
  }
  SB_TRY(write_file(dir + "backup_label", f.hot.backup_label, Append::no, owner));
  written.push_back("backup_label");
  if (!f.hot.tablespace_map.empty()) {
    SB_TRY(write_file(dir + "tablespace_map",
                      tablespace_map_below(f.hot.tablespace_map, f.restore_root, f.remap), Append::no,
                      owner));
    written.push_back("tablespace_map");
  }
  if (f.recovery) {
    const std::string signal = f.recovery->standby ? "standby.signal" : "recovery.signal";
    SB_TRY(write_file(dir + signal, "", Append::no, owner));
    written.push_back(signal);
    const std::string conf = dir + "postgresql.auto.conf";
    std::string text = recovery_settings(*f.recovery, f.restore_command);
    // Settings appended after a last line without its newline would join that line.
    struct stat cs{};
    if (::stat(conf.c_str(), &cs) == 0 && cs.st_size > 0) {
      const int fd = ::open(conf.c_str(), O_RDONLY | O_CLOEXEC);
      char last = '\n';
      if (fd >= 0) {
        if (::pread(fd, &last, 1, cs.st_size - 1) != 1) last = '\n';
        ::close(fd);
      }
      if (last != '\n') text.insert(0, "\n");
    }
    SB_TRY(write_file(conf, text, Append::yes, owner));
    written.push_back("postgresql.auto.conf");
  }
  SB_TRY(sync_path(f.data_dir, O_RDONLY | O_DIRECTORY));
  return written;
}

}  // namespace stripeback::database
