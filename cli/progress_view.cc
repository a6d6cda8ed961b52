#include "cli/progress_view.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "cli/render.h"
#include "cli/status_endpoint.h"
#include "catalog/catalog.h"
#include "engine/wiring/backends.h"
#include "engine/monitor/status_file.h"
#include "util/escape.h"
#include "util/units.h"

namespace stripeback::cli {
namespace {

std::string clock_text(double s) {
  if (s < 0) return "--:--";
  const auto t = static_cast<long long>(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lld:%02lld", t / 60, t % 60);
  return buf;
}

}  // namespace

void snapshot_json(util::JsonWriter& w, const engine::ProgressSnapshot& s) {
  w.kv("tag", s.tag);
  w.kv("operation", s.operation);
  if (s.id) w.kv("backup_id", s.id);
  else w.kv_null("backup_id");
  w.kv("pid", static_cast<int64_t>(s.pid));
  w.kv("host", s.host);
  w.kv("started", format_time(s.started_ns));
  w.kv("started_ns", s.started_ns);
  w.kv("last_update", format_time(s.last_update_ns));
  w.kv("last_update_ns", s.last_update_ns);
  w.kv("last_progress_ns", s.last_progress_ns);
  w.kv("bytes_done", s.bytes_done);
  w.kv("bytes_total", s.bytes_total);
  w.kv("percent", s.bytes_total ? 100.0 * static_cast<double>(s.bytes_done) /
                                      static_cast<double>(s.bytes_total)
                                : (s.finished ? 100.0 : 0.0));
  w.kv("rate", s.rate);
  if (s.eta_s >= 0) w.kv("eta_s", s.eta_s);
  else w.kv_null("eta_s");
  w.kv("hang_after_s", s.hang_after_s);
  w.kv("finished", s.finished);
  if (!s.verdict.empty()) w.kv("bound_by", s.verdict);
  if (!s.suspicious.empty()) w.kv("suspicious", s.suspicious);
  w.begin_array("channels");
  for (const auto& c : s.channels) {
    w.begin_object();
    w.kv("channel", c.channel);
    w.kv("state", c.state);
    w.kv("state_s", c.state_s);
    w.kv("bytes", c.bytes);
    w.end_object();
  }
  w.end_array();
}

std::string progress_lines(const engine::ProgressSnapshot& s) {
  char buf[256];
  const double pct = s.bytes_total ? 100.0 * static_cast<double>(s.bytes_done) /
                                         static_cast<double>(s.bytes_total)
                                   : 0;
  std::snprintf(buf, sizeof buf, "%s%s: %s / %s  %5.1f%%  %.1f MB/s  ETA %s\n",
                util::escape_text(s.operation).c_str(),
                s.id ? (" " + std::to_string(s.id)).c_str() : "",
                util::format_bytes(s.bytes_done).c_str(), util::format_bytes(s.bytes_total).c_str(),
                pct, s.rate / 1e6, clock_text(s.eta_s).c_str());
  std::string out = buf;
  for (const auto& c : s.channels) {
    std::snprintf(buf, sizeof buf, "  channel %u: %-9s %6.1f s  %s\n", c.channel,
                  util::escape_text(c.state).c_str(),
                  c.state_s, util::format_bytes(c.bytes).c_str());
    out += buf;
  }
  return out;
}

struct ProgressView::Impl {
  std::unique_ptr<StatusEndpoint> endpoint;
  std::unique_ptr<engine::StatusFile> status;
  FILE* json = nullptr;
  bool close_json = false;
  bool tty = false;
  size_t drawn = 0;  // terminal lines on screen
  int64_t last_json_ns = 0;
  std::unique_ptr<engine::ProgressPublisher> publisher;

  void draw(const engine::ProgressSnapshot& s) {
    std::string text;
    // Back to the first line drawn, and clear from there down.
    if (drawn) text += "\x1b[" + std::to_string(drawn) + "F";
    text += "\x1b[J";
    drawn = 0;
    if (!s.finished) {
      text += progress_lines(s);
      for (char ch : text)
        if (ch == '\n') ++drawn;
    }
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
  }
  void json_line(const engine::ProgressSnapshot& s) {
    if (!s.finished && s.last_update_ns - last_json_ns < 950'000'000) return;
    last_json_ns = s.last_update_ns;
    util::JsonWriter w;
    w.begin_object();
    snapshot_json(w, s);
    w.end_object();
    std::fprintf(json, "%s\n", w.str().c_str());
    std::fflush(json);
  }
};

ProgressView::ProgressView(const CommonFlags& c, const std::string& operation,
                           const std::string& tag, const std::string& catalog_dir)
    : job_(operation, tag, c.hang_after), impl_(std::make_unique<Impl>()) {
  std::vector<engine::ProgressPublisher::Sink> sinks;
  if (!catalog_dir.empty()) {
    auto st = engine::StatusFile::create(catalog_dir);
    if (st) {
      impl_->status = std::move(*st);
      sinks.push_back([this](const engine::ProgressSnapshot& s) { impl_->status->write(s); });
    }
  }
  if (!c.status_listen.empty()) {
    auto ep = StatusEndpoint::start(c.status_listen);
    if (!ep) {
      error_ = ep.error().what;
      return;
    }
    impl_->endpoint = std::move(*ep);
    spdlog::info("status endpoint on {}: GET /status, GET /metrics", impl_->endpoint->address());
    sinks.push_back([this](const engine::ProgressSnapshot& s) { impl_->endpoint->update(s); });
  }
  impl_->tty = c.progress == "always" || (c.progress == "auto" && ::isatty(STDERR_FILENO));
  if (impl_->tty)
    sinks.push_back([this](const engine::ProgressSnapshot& s) { impl_->draw(s); });
  if (!c.progress_json.empty()) {
    if (c.progress_json == "-") {
      impl_->json = stderr;
    } else {
      impl_->json = std::fopen(c.progress_json.c_str(), "a");
      impl_->close_json = impl_->json != nullptr;
      if (!impl_->json)
        std::fprintf(stderr, "stripeback: unable to open --progress-json file '%s'\n",
                     util::escape_text(c.progress_json).c_str());
    }
    if (impl_->json)
      sinks.push_back([this](const engine::ProgressSnapshot& s) { impl_->json_line(s); });
  }
  impl_->publisher = std::make_unique<engine::ProgressPublisher>(job_, std::move(sinks));
}

void ProgressView::finished(const std::string& verdict) {
  if (!impl_->publisher) return;
  job_.finish(verdict);
  impl_->publisher.reset();  // the last snapshot goes to every sink, then it stops
  impl_->status.reset();     // the status file goes with the job
  impl_->endpoint.reset();   // and so does the endpoint
  if (impl_->close_json) std::fclose(impl_->json);
  impl_->json = nullptr;
}

ProgressView::~ProgressView() { finished(""); }

namespace {

// The status files of dead jobs of no more use (their backup has ended in the catalog, or
// was resumed), and with `prune` those of every dead job: removed, and taken off `jobs`.
// The catalog is read only when a dead backup job names a backup; a catalog that cannot be
// read removes nothing.
std::vector<std::pair<std::string, std::string>> remove_dead(const std::string& dir,
                                                             engine::JobStatuses& st, bool prune) {
  std::vector<std::pair<std::string, std::string>> removed;  // id, why
  std::vector<catalog::Backup> backups;
  bool loaded = false;
  std::erase_if(st.jobs, [&](const engine::JobStatus& j) {
    if (j.state != "dead") return false;
    std::string why;
    if (j.snap.operation == "backup" && j.snap.id != 0) {
      if (!loaded) {
        loaded = true;
        if (auto s = engine::storage_for(storage::Location::local(dir)))
          if (auto cat = catalog::Catalog::open(dir, catalog::Create::no, **s))
            backups = (*cat)->backups();
      }
      why = engine::dead_job_over(j, backups);
    }
    if (why.empty() && prune) why = "dead: " + j.why;
    if (why.empty()) return false;
    if (auto r = engine::remove_job_status(dir, j); !r) {
      spdlog::warn("{}", r.error().what);
      return false;
    }
    removed.emplace_back(j.id, why);
    return true;
  });
  if (prune)
    std::erase_if(st.skipped, [&](const engine::SkippedJobEntry& e) {
      if (!e.left_by_gone_process) return false;
      if (auto r = engine::remove_skipped(e); !r) {
        spdlog::warn("{}", r.error().what);
        return false;
      }
      removed.emplace_back(e.path, e.why);
      return true;
    });
  return removed;
}

}  // namespace

int run_status_cmd(const CommonFlags& c, bool watch, bool prune) {
  const std::string dir = c.catalog.empty() ? default_catalog_dir() : c.catalog;
  if (dir.empty()) {
    print_error("no catalog directory: give --catalog or set STRIPEBACK_CATALOG or HOME");
    return kExitUsage;
  }
  while (true) {
    auto st = engine::read_job_statuses(dir);
    auto removed = remove_dead(dir, st, prune);
    // One line for each entry that is not a readable status file, and the rest is listed.
    for (const auto& s : st.skipped) spdlog::warn("skipped '{}': {}", s.path, s.why);
    const auto& jobs = st.jobs;
    if (c.json) {
      util::JsonWriter w;
      w.begin_object();
      w.kv("catalog", dir);
      w.begin_array("jobs");
      for (const auto& j : jobs) {
        w.begin_object();
        w.kv("id", j.id);
        w.kv("state", j.state);
        if (!j.why.empty()) w.kv("why", j.why);
        snapshot_json(w, j.snap);
        w.end_object();
      }
      w.end_array();
      w.begin_array("removed");
      for (const auto& [id, why] : removed) {
        w.begin_object();
        w.kv("id", id);
        w.kv("why", why);
        w.end_object();
      }
      w.end_array();
      w.begin_array("skipped");
      for (const auto& s : st.skipped) {
        w.begin_object();
        w.kv("entry", s.path);
        w.kv("why", s.why);
        w.end_object();
      }
      w.end_array();
      w.end_object();
      std::printf("%s\n", w.str().c_str());
    } else {
      if (watch) std::fputs("\x1b[H\x1b[J", stdout);
      if (prune)
        for (const auto& [id, why] : removed)
          std::printf("removed %s: %s\n", util::escape_text(id).c_str(),
                      util::escape_text(why).c_str());
      if (jobs.empty()) std::printf("(no jobs running on %s)\n", util::escape_text(dir).c_str());
      for (const auto& j : jobs) {
        std::printf("%s %s (pid %d on %s, started %s, last update %s)%s%s\n",
                    util::escape_text(j.id).c_str(), j.state.c_str(), j.snap.pid,
                    util::escape_text(j.snap.host).c_str(), format_time(j.snap.started_ns).c_str(),
                    format_time(j.snap.last_update_ns).c_str(), j.why.empty() ? "" : ": ",
                    util::escape_text(j.why).c_str());
        std::fputs(progress_lines(j.snap).c_str(), stdout);
        if (!j.snap.suspicious.empty())
          std::printf("  SUSPICIOUS: %s\n", util::escape_text(j.snap.suspicious).c_str());
      }
    }
    std::fflush(stdout);
    if (!watch) return kExitOk;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

}  // namespace stripeback::cli
