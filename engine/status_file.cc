#include "engine/status_file.h"

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
#include <fstream>
#include <map>
#include <sstream>

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

bool parse_status(const std::string& text, ProgressSnapshot* s, uint64_t* proc_start) {
  std::istringstream in(text);
  std::string line;
  bool ended = false;
  std::map<std::string, std::string> kv;
  std::vector<ChannelSnapshot> channels;
  const int64_t now = wall_ns();
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) return false;
    const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "end") ended = true;
    if (k == "channel") {
      // "<n> <state> <since_ns wall> <bytes>"
      ChannelSnapshot c;
      char state[32] = {0};
      long long since = 0;
      unsigned long long bytes = 0;
      if (std::sscanf(v.c_str(), "%u %31s %lld %llu", &c.channel, state, &since, &bytes) != 4)
        return false;
      c.state = state;
      c.state_s = std::max(0.0, static_cast<double>(now - since) / 1e9);
      c.bytes = bytes;
      channels.push_back(std::move(c));
    } else {
      kv[k] = unesc(v);
    }
  }
  if (!ended) return false;
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
  s->channels = std::move(channels);
  *proc_start = static_cast<uint64_t>(num("proc_start"));
  return true;
}

}  // namespace

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
  f->fd_ = ::open(f->path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
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

std::vector<JobStatus> read_job_statuses(const std::string& catalog_dir) {
  std::vector<JobStatus> out;
  const std::string dir = catalog_dir + "/" + kJobsDir;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > std::strlen(kSuffix) &&
        n.compare(n.size() - std::strlen(kSuffix), std::string::npos, kSuffix) == 0)
      names.push_back(n);
  }
  ::closedir(d);
  const std::string here = util::hostname();
  const int64_t now = wall_ns();
  for (const auto& n : names) {
    JobStatus js;
    js.id = n.substr(0, n.size() - std::strlen(kSuffix));
    uint64_t proc_start = 0;
    bool ok = false;
    for (int attempt = 0; attempt < 5 && !ok; ++attempt) {
      std::ifstream in(dir + "/" + n);
      if (!in) break;
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      ok = parse_status(text, &js.snap, &proc_start);
      if (!ok) ::usleep(20000);
    }
    if (!ok) continue;
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
        std::snprintf(why, sizeof why, "no update from host %s for %.0f s", s.host.c_str(),
                      since_update);
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
    out.push_back(std::move(js));
  }
  std::sort(out.begin(), out.end(),
            [](const JobStatus& a, const JobStatus& b) { return a.snap.started_ns < b.snap.started_ns; });
  return out;
}

}  // namespace stripeback::engine
