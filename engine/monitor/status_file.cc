#include "engine/monitor/status_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "util/escape.h"
#include "util/process.h"

namespace stripeback::engine {
namespace {

constexpr const char* kJobsDir = "jobs";
constexpr const char* kSuffix = ".status";

// Values are one line: newlines and backslashes escaped.
std::string esc(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

std::string unesc(const std::string& v) {
  std::string o;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\' && i + 1 < v.size()) {
      o += v[i + 1] == 'n' ? '\n' : v[i + 1];
      ++i;
    } else {
      o += v[i];
    }
  }
  return o;
}

// What a status file's read gives: the text, or why there is none.
struct Read {
  enum Kind { text, skip, vanished } kind = skip;
  std::string data;
  std::string why;
  struct stat st {};
};

const char* type_name(mode_t m) {
  if (S_ISDIR(m)) return "is a directory";
  if (S_ISFIFO(m)) return "is a FIFO";
  if (S_ISSOCK(m)) return "is a socket";
  if (S_ISCHR(m)) return "is a character device";
  if (S_ISBLK(m)) return "is a block device";
  if (S_ISLNK(m)) return "is a symbolic link";
  return "is of an unknown type";
}

// Opens `name` in `dirfd` without following a link and without blocking (a FIFO with no
// writer, a device), and reads it only when it is a regular file of at most
// kMaxStatusFileSize bytes.
Read read_entry(int dirfd, const std::string& name) {
  Read r;
  const int fd =
      ::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) {
      r.kind = Read::vanished;  // its job ended meanwhile
    } else if (e == ELOOP) {
      r.why = "is a symbolic link, not followed";
    } else {
      struct stat st {};
      r.why = ::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)
                  ? std::string(type_name(st.st_mode)) + ", not a regular file"
                  : std::string("cannot be opened: ") + std::strerror(e);
    }
    return r;
  }
  if (::fstat(fd, &r.st) != 0) {
    r.why = std::string("cannot be examined: ") + std::strerror(errno);
  } else if (!S_ISREG(r.st.st_mode)) {
    r.why = std::string(type_name(r.st.st_mode)) + ", not a regular file";
  } else if (static_cast<uint64_t>(r.st.st_size) > kMaxStatusFileSize) {
    r.why = std::to_string(r.st.st_size) + " bytes, larger than the " +
            std::to_string(kMaxStatusFileSize >> 20) + " MiB a status file may be";
  } else {
    // One byte more than the limit tells a file that grew since fstat.
    r.data.resize(kMaxStatusFileSize + 1);
    size_t got = 0;
    while (got < r.data.size()) {
      const ssize_t n = ::read(fd, r.data.data() + got, r.data.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        r.why = std::string("cannot be read: ") + std::strerror(errno);
        break;
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    r.data.resize(got);
    if (r.why.empty() && got > kMaxStatusFileSize)
      r.why = "larger than the " + std::to_string(kMaxStatusFileSize >> 20) +
              " MiB a status file may be";
    else if (r.why.empty())
      r.kind = Read::text;
  }
  ::close(fd);
  return r;
}

// The pid a status file's name "<host>.<pid>[-<n>]" gives when the host is this one, else 0.
pid_t pid_of_name(const std::string& id, const std::string& here) {
  if (here.empty() || id.size() <= here.size() + 1 || id.compare(0, here.size(), here) != 0 ||
      id[here.size()] != '.')
    return 0;
  const std::string rest = id.substr(here.size() + 1);
  char* end = nullptr;
  errno = 0;
  const long pid = std::strtol(rest.c_str(), &end, 10);
  if (errno != 0 || end == rest.c_str() || (*end != '\0' && *end != '-') || pid <= 0 ||
      pid > std::numeric_limits<pid_t>::max())
    return 0;
  return static_cast<pid_t>(pid);
}

// Whether the name is that of a process of this host (running or not).
bool name_is_process_of(const std::string& id, const std::string& here) {
  return pid_of_name(id, here) != 0;
}

// The process a status file's name gives, "<host>.<pid>[-<n>]", when the host is this one
// and that process runs; a file it has just made and not yet written is its own.
bool name_is_running_process(const std::string& id, const std::string& here) {
  const pid_t pid = pid_of_name(id, here);
  char state = '?';
  return pid != 0 && util::process_start_ticks(pid, &state) != 0 && state != 'Z';
}

}  // namespace

Result<void> parse_status_text(const std::string& text, ProgressSnapshot* s,
                               uint64_t* proc_start) {
  if (text.empty()) return fail(Errc::corrupt, "empty");
  std::istringstream in(text);
  std::string line;
  bool ended = false;
  size_t n = 0;
  std::map<std::string, std::string> kv;
  std::vector<ChannelSnapshot> channels;
  const int64_t now = wall_ns();
  // Lines after the end line are the tail of a longer earlier text, not yet cut off.
  while (!ended && std::getline(in, line)) {
    ++n;
    const size_t eq = line.find('=');
    if (eq == std::string::npos)
      return fail(Errc::corrupt, "line " + std::to_string(n) + " is not key=value");
    const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "end") {
      ended = true;
    } else if (k == "channel") {
      // "<n> <state> <since_ns wall> <bytes>"
      ChannelSnapshot c;
      char state[32] = {0};
      long long since = 0;
      unsigned long long bytes = 0;
      if (std::sscanf(v.c_str(), "%u %31s %lld %llu", &c.channel, state, &since, &bytes) != 4)
        return fail(Errc::corrupt, "line " + std::to_string(n) + " is not a channel");
      c.state = state;
      c.state_s = std::max(0.0, static_cast<double>(now - since) / 1e9);
      c.bytes = bytes;
      channels.push_back(std::move(c));
    } else {
      kv[k] = unesc(v);
    }
  }
  if (!ended) return fail(Errc::corrupt, "no end line (cut short, or being written)");
  for (const char* k : {"operation", "pid", "host", "started_ns", "last_update_ns"})
    if (!kv.count(k)) return fail(Errc::corrupt, std::string("no ") + k + " line");
  auto num = [&](const char* k) { return std::strtoll(kv[k].c_str(), nullptr, 10); };
  s->operation = kv["operation"];
  s->id = static_cast<uint64_t>(num("backup_id"));
  s->tag = kv["tag"];
  s->pid = static_cast<int32_t>(num("pid"));
  s->host = kv["host"];
  s->started_ns = num("started_ns");
  s->last_update_ns = num("last_update_ns");
  s->last_progress_ns = num("last_progress_ns");
  s->bytes_done = static_cast<uint64_t>(num("bytes_done"));
  s->bytes_total = static_cast<uint64_t>(num("bytes_total"));
  s->rate = std::strtod(kv["rate"].c_str(), nullptr);
  s->eta_s = std::strtod(kv["eta_s"].c_str(), nullptr);
  s->hang_after_s = std::strtod(kv["hang_after_s"].c_str(), nullptr);
  s->finished = kv["finished"] == "1";
  s->verdict = kv["verdict"];
  s->suspicious = kv["suspicious"];
  s->channels = std::move(channels);
  *proc_start = static_cast<uint64_t>(num("proc_start"));
  return ok();
}

Result<std::unique_ptr<StatusFile>> StatusFile::create(const std::string& catalog_dir) {
  const std::string dir = catalog_dir + "/" + kJobsDir;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return fail(Errc::io, "unable to create the job status directory '" + dir + "': " +
                              std::strerror(errno));
  std::unique_ptr<StatusFile> f(new StatusFile());
  // The first job of a process is "<host>.<pid>"; a program that runs more (an embedder of
  // the C API, several at once) names the later ones "<host>.<pid>-<n>".
  static std::atomic<uint32_t> made{0};
  const uint32_t n = made.fetch_add(1, std::memory_order_relaxed) + 1;
  f->path_ = dir + "/" + util::hostname() + "." + std::to_string(::getpid()) +
             (n > 1 ? "-" + std::to_string(n) : std::string()) + kSuffix;
  // A file of this name is that of a gone process whose pid this one has now. It goes, and
  // a new file takes its place: a reader that is about to remove the old one as dead sees
  // another file and leaves it.
  ::unlink(f->path_.c_str());
  f->fd_ = ::open(f->path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (f->fd_ < 0)
    return fail(Errc::io, "unable to create the job status file '" + f->path_ + "': " +
                              std::strerror(errno));
  f->proc_start_ = util::process_start_ticks(::getpid());
  return f;
}

StatusFile::~StatusFile() {
  if (fd_ >= 0) ::close(fd_);
  ::unlink(path_.c_str());
}

void StatusFile::write(const ProgressSnapshot& s) {
  std::string t;
  auto put = [&](const char* k, const std::string& v) { t += std::string(k) + "=" + esc(v) + "\n"; };
  put("operation", s.operation);
  put("backup_id", std::to_string(s.id));
  put("tag", s.tag);
  put("pid", std::to_string(s.pid));
  put("proc_start", std::to_string(proc_start_));
  put("host", s.host);
  put("started_ns", std::to_string(s.started_ns));
  put("last_update_ns", std::to_string(s.last_update_ns));
  put("last_progress_ns", std::to_string(s.last_progress_ns));
  put("bytes_done", std::to_string(s.bytes_done));
  put("bytes_total", std::to_string(s.bytes_total));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", s.rate);
  put("rate", buf);
  std::snprintf(buf, sizeof buf, "%.1f", s.eta_s);
  put("eta_s", buf);
  std::snprintf(buf, sizeof buf, "%.1f", s.hang_after_s);
  put("hang_after_s", buf);
  put("finished", s.finished ? "1" : "0");
  put("verdict", s.verdict);
  if (!s.suspicious.empty()) put("suspicious", s.suspicious);
  for (const auto& c : s.channels) {
    const auto since = s.last_update_ns - static_cast<int64_t>(c.state_s * 1e9);
    std::snprintf(buf, sizeof buf, "%u %s %lld %llu", c.channel, c.state.c_str(),
                  static_cast<long long>(since), static_cast<unsigned long long>(c.bytes));
    put("channel", buf);
  }
  put("end", "1");
  // In place: one write of the whole text, then the size. A reader that catches it half
  // written finds no end line and reads again.
  if (::pwrite(fd_, t.data(), t.size(), 0) == static_cast<ssize_t>(t.size()))
    (void)::ftruncate(fd_, static_cast<off_t>(t.size()));
}

namespace {

// The state of the job whose file `js` holds, as of `now`.
void judge(JobStatus& js, uint64_t proc_start, const std::string& here, int64_t now) {
  const ProgressSnapshot& s = js.snap;
  const double since_update = static_cast<double>(now - s.last_update_ns) / 1e9;
  const double since_progress = static_cast<double>(now - s.last_progress_ns) / 1e9;
  char pstate = '?';
  const bool local = s.host == here;
  const bool alive =
      local ? s.pid > 0 && util::process_start_ticks(s.pid, &pstate) == proc_start &&
                  proc_start != 0 && pstate != 'Z'
            : since_update < std::max(30.0, s.hang_after_s);
  char why[160];
  if (!alive) {
    js.state = "dead";
    if (local)
      std::snprintf(why, sizeof why, "process %d is gone (last update %.0f s ago)", s.pid,
                    since_update);
    else
      std::snprintf(why, sizeof why, "no update from host %s for %.0f s",
                    util::escape_text(s.host).c_str(), since_update);
    js.why = why;
  } else if (pstate == 'T' || pstate == 't') {
    js.state = "stalled";
    std::snprintf(why, sizeof why, "process %d is stopped (no update for %.0f s)", s.pid,
                  since_update);
    js.why = why;
  } else if (since_progress > s.hang_after_s || since_update > std::max(10.0, s.hang_after_s)) {
    js.state = "stalled";
    std::snprintf(why, sizeof why, "no progress for %.0f s (hang-after %.0f s)", since_progress,
                  s.hang_after_s);
    js.why = why;
  } else {
    js.state = "running";
  }
}

}  // namespace

JobStatuses read_job_statuses(const std::string& catalog_dir) {
  JobStatuses out;
  const std::string dir = catalog_dir + "/" + kJobsDir;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > std::strlen(kSuffix) &&
        n.compare(n.size() - std::strlen(kSuffix), std::string::npos, kSuffix) == 0)
      names.push_back(std::move(n));
  }
  std::sort(names.begin(), names.end());
  const int dirfd = ::dirfd(d);
  const std::string here = util::hostname();
  // Each file is read once; those caught half rewritten (no end line yet, or cut) are read
  // again after one pause shared by all of them, so that many such files cost one pause,
  // not one each.
  constexpr int kRounds = 3;
  constexpr useconds_t kPause = 30000;
  std::vector<std::pair<std::string, std::string>> torn;  // name, what is wrong
  std::vector<std::string> unread = std::move(names);
  for (int round = 0; round < kRounds && !unread.empty(); ++round) {
    if (round > 0) ::usleep(kPause);
    torn.clear();
    for (const auto& n : unread) {
      const Read r = read_entry(dirfd, n);
      if (r.kind == Read::vanished) continue;
      if (r.kind == Read::skip) {
        out.skipped.push_back({dir + "/" + n, r.why});
        continue;
      }
      JobStatus js;
      js.id = n.substr(0, n.size() - std::strlen(kSuffix));
      uint64_t proc_start = 0;
      if (auto p = parse_status_text(r.data, &js.snap, &proc_start); !p) {
        torn.emplace_back(n, p.error().what);
        continue;
      }
      js.dev = static_cast<uint64_t>(r.st.st_dev);
      js.ino = static_cast<uint64_t>(r.st.st_ino);
      js.mtime_ns =
          static_cast<int64_t>(r.st.st_mtim.tv_sec) * 1'000'000'000 + r.st.st_mtim.tv_nsec;
      judge(js, proc_start, here, wall_ns());
      out.jobs.push_back(std::move(js));
    }
    unread.clear();
    for (const auto& t : torn) unread.push_back(t.first);
  }
  ::closedir(d);
  for (const auto& [n, why] : torn) {
    const std::string id = n.substr(0, n.size() - std::strlen(kSuffix));
    if (name_is_running_process(id, here)) continue;
    out.skipped.push_back({dir + "/" + n,
                           why == "empty" ? "is empty (its job died before its first update, "
                                            "or the system went down before it reached the disk)"
                                          : "is not a status file: " + why,
                           name_is_process_of(id, here)});
  }
  std::sort(out.skipped.begin(), out.skipped.end(),
            [](const SkippedJobEntry& a, const SkippedJobEntry& b) { return a.path < b.path; });
  std::sort(out.jobs.begin(), out.jobs.end(), [](const JobStatus& a, const JobStatus& b) {
    return a.snap.started_ns < b.snap.started_ns;
  });
  return out;
}

std::string dead_job_over(const JobStatus& j, const std::vector<catalog::Backup>& backups) {
  if (j.state != "dead" || j.snap.operation != "backup" || j.snap.id == 0) return "";
  const std::string name = "backup " + std::to_string(j.snap.id);
  for (const auto& b : backups) {
    if (b.id != j.snap.id) continue;
    if (b.ended) return name + " has ended (" + b.status_name() + ")";
    if (b.begin.pid != j.snap.pid || b.begin.host != j.snap.host)
      return name + " was resumed by process " + std::to_string(b.begin.pid) + " on " +
             util::escape_text(b.begin.host);
    return "";
  }
  return "";
}

Result<void> remove_job_status(const std::string& catalog_dir, const JobStatus& j) {
  const std::string path = catalog_dir + "/" + kJobsDir + "/" + j.id + kSuffix;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return ok();  // gone already
    return sys_error(errno, "unable to examine the job status file '" + path + "'");
  }
  // A job that has started since under the same name (its pid reused) has made a new file.
  const int64_t mtime =
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_dev) != j.dev ||
      static_cast<uint64_t>(st.st_ino) != j.ino || mtime != j.mtime_ns)
    return fail(Errc::busy, "the job status file '" + path + "' was rewritten since it was read");
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return sys_error(errno, "unable to remove the job status file '" + path + "'");
  return ok();
}

Result<void> remove_skipped(const SkippedJobEntry& e) {
  struct stat st {};
  if (!e.left_by_gone_process || ::lstat(e.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return fail(Errc::invalid_argument, "'" + e.path + "' is not a file a gone job left");
  if (::unlink(e.path.c_str()) != 0 && errno != ENOENT)
    return sys_error(errno, "unable to remove '" + e.path + "'");
  return ok();
}

std::vector<std::string> remove_dead_jobs_of(const std::string& catalog_dir, uint64_t backup_id) {
  std::vector<std::string> removed;
  if (backup_id == 0) return removed;
  for (const auto& j : read_job_statuses(catalog_dir).jobs)
    if (j.state == "dead" && j.snap.operation == "backup" && j.snap.id == backup_id &&
        remove_job_status(catalog_dir, j))
      removed.push_back(j.id);
  return removed;
}

}  // namespace stripeback::engine
