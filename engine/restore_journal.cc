#include "engine/restore_journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <ctime>

#include "engine/restore_job.h"
#include "io/remote.h"
#include "util/process.h"

namespace stripeback::engine {
namespace {

constexpr const char* kMagic = "stripeback-restore-journal 1\n";
constexpr size_t kRandomDigits = 16;
constexpr size_t kMaxJournal = 64u << 20;

struct Owner {
  std::string host;
  pid_t pid = 0;
  uint64_t start = 0;
};

std::string header_of(const Owner& o) {
  return std::string(kMagic) + "host=" + o.host + "\npid=" + std::to_string(o.pid) +
         "\nstart=" + std::to_string(o.start) + "\n\n";
}

// Parses a journal: its owner and the temporaries it lists. False when it is not one.
bool parse(const std::string& text, Owner* owner, std::vector<std::string>* temps) {
  if (text.compare(0, std::char_traits<char>::length(kMagic), kMagic) != 0) return false;
  size_t end = text.find("\n\n");
  if (end == std::string::npos) return false;
  size_t pos = std::char_traits<char>::length(kMagic);
  while (pos < end) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    try {
      if (line.rfind("host=", 0) == 0) owner->host = line.substr(5);
      else if (line.rfind("pid=", 0) == 0) owner->pid = std::stoi(line.substr(4));
      else if (line.rfind("start=", 0) == 0) owner->start = std::stoull(line.substr(6));
    } catch (...) {
      return false;
    }
  }
  pos = end + 2;
  while (pos < text.size()) {
    size_t z = text.find('\0', pos);
    if (z == std::string::npos) break;  // an entry cut short by the kill: never created
    temps->push_back(text.substr(pos, z - pos));
    pos = z + 1;
  }
  return true;
}

// Opens the directory `comps[0..n-1)` below the target without following links or
// creating anything; -1 when it is not there.
io::UniqueFd open_dir_nofollow(int root, const std::vector<std::string>& comps) {
  io::UniqueFd dir(::dup(root));
  for (size_t i = 0; dir.valid() && i + 1 < comps.size(); ++i)
    dir = io::UniqueFd(
        ::openat(dir.get(), comps[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  return dir;
}

Result<std::string> read_local(int root, const std::string& name) {
  io::UniqueFd fd(::openat(root, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, "unable to read restore journal '" + name + "'");
  std::string text;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0 && text.size() < kMaxJournal)
    text.append(buf, static_cast<size_t>(n));
  if (n < 0) return sys_error(errno, "unable to read restore journal '" + name + "'");
  return text;
}

Result<std::string> read_remote(const std::string& path) {
  SB_ASSIGN(auto f, io::open_read(path, io::Direct::no));
  std::string text;
  std::vector<std::byte> buf(1u << 20);
  uint64_t off = 0;
  while (text.size() < kMaxJournal) {
    SB_ASSIGN(size_t n, io::pread_fd(f.fd.get(), buf.data(), buf.size(), off, path));
    if (n == 0) break;
    text.append(reinterpret_cast<const char*>(buf.data()), n);
    off += n;
  }
  return text;
}

// Removes one listed temporary if it is still a regular file of the temporary form.
// True when it was removed.
bool remove_temp(const std::string& target, int root, const std::string& rel) {
  auto comps = safe_components("/" + rel);
  if (!comps || !is_restore_temp_name(comps->back())) return false;
  if (root >= 0) {
    io::UniqueFd dir = open_dir_nofollow(root, *comps);
    struct stat st;
    if (!dir.valid() ||
        ::fstatat(dir.get(), comps->back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
      return false;
    return ::unlinkat(dir.get(), comps->back().c_str(), 0) == 0;
  }
  std::string path = target;
  for (const auto& c : *comps) path = io::join_path(path, c);
  auto st = io::lstat_path(path);
  if (!st || !S_ISREG(st->st_mode)) return false;
  return io::unlink_path(path).has_value();
}

Result<struct stat> local_stat(int root, const std::string& name) {
  struct stat st;
  if (::fstatat(root, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return sys_error(errno, "unable to stat '" + name + "'");
  return st;
}

Result<std::vector<std::string>> list_journals(const std::string& target, int root) {
  std::vector<std::string> names;
  if (root >= 0) {
    int fd = ::dup(root);
    DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
    if (!d) {
      if (fd >= 0) ::close(fd);
      return sys_error(errno, "unable to list restore target '" + target + "'");
    }
    while (dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
    ::closedir(d);
  } else {
    SB_ASSIGN(names, io::list_dir(target));
  }
  std::vector<std::string> out;
  for (auto& n : names)
    if (n.rfind(kRestoreJournalPrefix, 0) == 0) out.push_back(std::move(n));
  return out;
}

}  // namespace

std::string restore_temp_name() {
  return kRestoreTempPrefix + util::random_hex(kRandomDigits / 2);
}

bool is_restore_temp_name(const std::string& name) {
  std::string prefix = kRestoreTempPrefix;
  if (name.size() != prefix.size() + kRandomDigits || name.rfind(prefix, 0) != 0) return false;
  for (size_t i = prefix.size(); i < name.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

RestoreJournal::~RestoreJournal() = default;

Result<std::unique_ptr<RestoreJournal>> RestoreJournal::create(const std::string& target,
                                                               int target_fd) {
  std::unique_ptr<RestoreJournal> j(new RestoreJournal());
  Owner me{util::hostname(), ::getpid(), util::process_start_ticks(::getpid())};
  std::string head = header_of(me);
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string name = kRestoreJournalPrefix + util::random_hex(kRandomDigits / 2);
    if (target_fd >= 0) {
      j->path_ = target + "/" + name;
      int fd = ::openat(target_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                        O_CLOEXEC, 0600);
      if (fd < 0 && errno == EEXIST) continue;
      if (fd < 0) return sys_error(errno, "unable to create restore journal '" + j->path_ + "'");
      j->fd_ = io::UniqueFd(fd);
    } else {
      j->path_ = io::join_path(target, name);
      auto made = io::create_exclusive(j->path_, 0600, io::Direct::no);
      if (!made && made.error().code == Errc::exists) continue;
      if (!made) return made.error().wrap("unable to create restore journal");
      j->fd_ = std::move(made->fd);
    }
    SB_TRY(io::pwrite_all_fd(j->fd_.get(), reinterpret_cast<const std::byte*>(head.data()),
                             head.size(), 0, "restore journal '" + j->path_ + "'"));
    j->offset_ = head.size();
    return j;
  }
  return fail(Errc::exists, "unable to find a free restore journal name in '" + target + "'");
}

Result<void> RestoreJournal::note(const std::vector<std::string>& rel) {
  std::string entry;
  for (const auto& c : rel) entry += (entry.empty() ? "" : "/") + c;
  entry.push_back('\0');
  std::lock_guard lock(mu_);
  SB_TRY(io::pwrite_all_fd(fd_.get(), reinterpret_cast<const std::byte*>(entry.data()),
                           entry.size(), offset_, "restore journal '" + path_ + "'"));
  offset_ += entry.size();
  ++open_temps_;
  return ok();
}

void RestoreJournal::settle() {
  std::lock_guard lock(mu_);
  if (open_temps_ > 0) --open_temps_;
}

std::string RestoreJournal::finish() {
  std::lock_guard lock(mu_);
  fd_.reset();
  if (open_temps_ > 0)
    return "restore journal '" + path_ + "' is kept: " + std::to_string(open_temps_) +
           " temporary file(s) could not be removed; the next restore into this target "
           "removes them";
  if (auto r = io::unlink_path(path_); !r) return r.error().what;
  return "";
}

std::vector<std::string> clean_restore_leftovers(const std::string& target, int target_fd) {
  std::vector<std::string> out;
  auto journals = list_journals(target, target_fd);
  if (!journals) {
    out.push_back(journals.error().what);
    return out;
  }
  for (const auto& name : *journals) {
    std::string path = target_fd >= 0 ? target + "/" + name : io::join_path(target, name);
    auto text = target_fd >= 0 ? read_local(target_fd, name) : read_remote(path);
    Owner owner;
    std::vector<std::string> temps;
    if (!text) {
      out.push_back(text.error().what);
      continue;
    }
    if (!parse(*text, &owner, &temps)) {
      // A restore killed between creating its journal and writing the header leaves it
      // empty or cut short; one still starting writes its header within microseconds, so
      // only one older than a minute is taken for a leftover.
      std::string magic = kMagic;
      bool cut_short = text->size() < magic.size() && magic.compare(0, text->size(), *text) == 0;
      auto st = target_fd >= 0 ? local_stat(target_fd, name) : io::lstat_path(path);
      bool old_enough = st && S_ISREG(st->st_mode) && st->st_mtime + 60 < ::time(nullptr);
      if (!cut_short) {
        out.push_back("'" + path + "' is not a restore journal; left alone");
      } else if (old_enough) {
        bool gone = target_fd >= 0 ? ::unlinkat(target_fd, name.c_str(), 0) == 0
                                   : io::unlink_path(path).has_value();
        out.push_back(gone ? "removed the empty journal '" + path +
                                 "' of a restore killed as it started"
                           : "unable to remove the empty restore journal '" + path + "'");
      }
      continue;
    }
    if (util::process_alive(owner.host, owner.pid, owner.start)) {
      if (owner.host != util::hostname())
        out.push_back("restore journal '" + path + "' belongs to a restore on host '" +
                      owner.host + "' that may still be running; left alone");
      continue;  // a restore running now into the same target: its files are its own
    }
    size_t removed = 0;
    for (const auto& rel : temps) removed += remove_temp(target, target_fd, rel) ? 1 : 0;
    bool gone = target_fd >= 0 ? ::unlinkat(target_fd, name.c_str(), 0) == 0
                               : io::unlink_path(path).has_value();
    out.push_back("removed " + std::to_string(removed) +
                  " temporary file(s) left by an interrupted restore (pid " +
                  std::to_string(owner.pid) + ")" +
                  (gone ? "" : "; its journal '" + path + "' could not be removed"));
  }
  return out;
}

}  // namespace stripeback::engine
