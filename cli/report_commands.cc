#include "cli/report_commands.h"

#include <algorithm>
#include <cstdio>
#include <spdlog/spdlog.h>
#include <vector>

#include "cli/job_flags.h"
#include "cli/need_backup.h"
#include "cli/render.h"
#include "cli/wal_reports.h"
#include "engine/wiring/backends.h"
#include "util/escape.h"
#include "util/json.h"
#include "util/units.h"

namespace stripeback::cli {
namespace {

using catalog::IoFigures;
using catalog::JobRecord;
using catalog::WaitCounts;

double seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string num(uint64_t v) { return std::to_string(v); }

// Compression ratio of the data frames (bytes given to zstd over bytes out), or none.
std::optional<double> ratio(const JobRecord& j) {
  if (j.compress_out == 0) return std::nullopt;
  return static_cast<double>(j.compress_in) / static_cast<double>(j.compress_out);
}

double elapsed_s(const JobRecord& j) { return std::max(0.0, seconds(j.end_ns - j.start_ns)); }

std::string backups_text(const JobRecord& j) {
  std::string s;
  for (uint64_t id : j.backup_ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s.empty() ? "-" : s;
}

// Columns of text, each as wide as its widest cell; numbers right-aligned, the columns
// listed in `left` left-aligned. Cells are escaped.
class Table {
 public:
  Table(std::vector<std::string> head, std::vector<size_t> left)
      : left_(std::move(left)) {
    rows_.push_back(std::move(head));
  }
  void add(std::vector<std::string> row) {
    for (auto& c : row) c = util::escape_text(c);
    rows_.push_back(std::move(row));
  }
  std::string str() const {
    std::vector<size_t> w;
    for (const auto& r : rows_)
      for (size_t i = 0; i < r.size(); ++i) {
        if (w.size() <= i) w.push_back(0);
        w[i] = std::max(w[i], r[i].size());
      }
    std::string out;
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        const bool l = std::find(left_.begin(), left_.end(), i) != left_.end();
        const std::string pad(w[i] - r[i].size(), ' ');
        if (i) line += "  ";
        // The last column left-aligned takes no trailing padding.
        line += l ? r[i] + (i + 1 < r.size() ? pad : "") : pad + r[i];
      }
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> left_;
};

Result<std::unique_ptr<catalog::Catalog>> open_existing(const CommonFlags& c) {
  return open_catalog(c, catalog::Create::no);
}

int error_exit(const Error& e) {
  print_error(e.what);
  return e.code == Errc::invalid_argument || e.code == Errc::not_found ? kExitUsage : kExitFailed;
}

// A catalog that does not exist yet has no jobs: not an error.
int no_jobs(const CommonFlags& c, const std::string& dir) {
  if (c.json) {
    util::JsonWriter w;
    w.begin_object().kv("catalog", dir).begin_array("jobs").end_array().end_object();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("(no jobs in %s)\n", util::escape_text(dir).c_str());
  }
  return kExitOk;
}

std::string catalog_dir(const CommonFlags& c) {
  return c.catalog.empty() ? default_catalog_dir() : c.catalog;
}

void verdict_json(util::JsonWriter& w, const JobRecord& j) {
  w.begin_object("verdict");
  w.kv("bound_by", j.bound_by);
  w.kv("stage", j.stage);
  w.begin_object("busy");
  for (const auto& s : j.shares) w.kv(s.name, s.share);
  w.end_object();
  w.kv("evidence", j.evidence);
  if (j.suggestion.empty()) w.kv_null("suggestion");
  else w.kv("suggestion", j.suggestion);
  w.end_object();
}

void job_json(util::JsonWriter& w, const JobRecord& j) {
  w.kv("id", j.sequence);
  w.kv("type", j.type);
  w.kv("status", j.status);
  if (!j.message.empty()) w.kv("error", j.message);
  w.kv("start_time", format_time(j.start_ns));
  w.kv("start_time_ns", j.start_ns);
  w.kv("end_time", format_time(j.end_ns));
  w.kv("end_time_ns", j.end_ns);
  w.kv("elapsed_s", elapsed_s(j));
  w.kv("tag", j.tag);
  if (j.backup_ids.empty()) w.kv_null("backup_id");
  else w.kv("backup_id", j.backup_ids.front());
  w.begin_array("backup_ids");
  for (uint64_t id : j.backup_ids) w.value(id);
  w.end_array();
}

int report_jobs(const ReportFlags& f) {
  const CommonFlags& c = f.common;
  auto cat = open_existing(c);
  if (!cat && cat.error().code == Errc::not_found) return no_jobs(c, catalog_dir(c));
  if (!cat) return error_exit(cat.error());
  auto jobs = (*cat)->jobs();
  if (jobs.empty()) return no_jobs(c, (*cat)->dir());
  if (f.limit && jobs.size() > *f.limit)
    jobs.erase(jobs.begin(), jobs.end() - static_cast<std::ptrdiff_t>(*f.limit));
  if (c.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("catalog", (*cat)->dir());
    w.begin_array("jobs");
    for (const auto& j : jobs) {
      w.begin_object();
      job_json(w, j);
      w.kv("files", j.files);
      w.kv("bytes_read", j.bytes_in);
      w.kv("bytes_written", j.bytes_out);
      w.kv("mb_per_s", util::mb_per_s(j.bytes_in, elapsed_s(j)));
      if (auto r = ratio(j)) w.kv("compression_ratio", *r);
      else w.kv_null("compression_ratio");
      w.kv("bound_by", j.bound_by);
      verdict_json(w, j);
      w.end_object();
    }
    w.end_array();
    w.end_object();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  Table t({"JOB", "TYPE", "STATUS", "STARTED", "ENDED", "BACKUP", "FILES", "READ", "WRITTEN",
           "MB/S", "RATIO", "VERDICT"},
          {1, 2, 3, 4, 5, 11});
  std::vector<std::string> notes;
  for (const auto& j : jobs) {
    auto r = ratio(j);
    t.add({num(j.sequence), j.type, j.status, format_time(j.start_ns),
           format_time(j.end_ns), backups_text(j), num(j.files), util::format_bytes(j.bytes_in),
           util::format_bytes(j.bytes_out), fixed(util::mb_per_s(j.bytes_in, elapsed_s(j)), 1),
           r ? fixed(*r, 2) : "-", j.stage.empty() ? "-" : j.stage});
    if (!j.message.empty()) notes.push_back("job " + num(j.sequence) + ": " + j.message);
  }
  std::fputs(t.str().c_str(), stdout);
  for (const auto& n : notes) std::printf("%s\n", util::escape_text(n).c_str());
  return kExitOk;
}

void waits_json(util::JsonWriter& w, const char* key, const WaitCounts& x) {
  w.begin_object(key);
  w.kv("ready", x.ready);
  w.kv("short", x.short_waits);
  w.kv("long", x.long_waits);
  w.kv("total_s", seconds(x.total_ns));
  w.kv("max_s", seconds(x.max_ns));
  w.end_object();
}

// The figures of reads and writes as the summaries name them: reads, bytes_read,
// read_busy_s, read_mb_per_s (over the busy time), read_waits, and the same for writes.
void figures_json(util::JsonWriter& w, const IoFigures& rd, const IoFigures& wr) {
  w.kv("reads", rd.ios);
  w.kv("bytes_read", rd.bytes);
  w.kv("read_busy_s", seconds(rd.busy_ns));
  w.kv("read_mb_per_s", util::mb_per_s(rd.bytes, seconds(rd.busy_ns)));
  waits_json(w, "read_waits", rd.waits);
  w.kv("writes", wr.ios);
  w.kv("bytes_written", wr.bytes);
  w.kv("write_busy_s", seconds(wr.busy_ns));
  w.kv("write_mb_per_s", util::mb_per_s(wr.bytes, seconds(wr.busy_ns)));
  waits_json(w, "write_waits", wr.waits);
}

std::vector<std::string> figures_cells(const IoFigures& f) {
  return {num(f.ios),
          util::format_bytes(f.bytes),
          fixed(util::mb_per_s(f.bytes, seconds(f.busy_ns)), 1),
          fixed(seconds(f.busy_ns), 2),
          num(f.waits.ready),
          num(f.waits.short_waits),
          num(f.waits.long_waits),
          fixed(seconds(f.waits.total_ns), 3),
          fixed(seconds(f.waits.max_ns) * 1000, 1)};
}

const std::vector<std::string> kFigureHeads = {"IOS",   "BYTES", "MB/S", "BUSY S", "READY",
                                               "SHORT", "LONG",  "WAIT S", "MAX MS"};

// The job `report io` is about: --job N, or the job of --backup ID (the backup that wrote it,
// else the newest job that used it), or the newest job.
Result<JobRecord> pick_job(const catalog::Catalog& cat, const ReportFlags& f) {
  const auto jobs = cat.jobs();
  if (f.job) {
    for (const auto& j : jobs)
      if (j.sequence == *f.job) return j;
    return fail(Errc::not_found, "job " + std::to_string(*f.job) + " is not in the catalog '" +
                                     cat.dir() + "' (see 'stripeback report jobs')");
  }
  if (f.backup) {
    const auto backups = cat.backups();
    const bool known = std::any_of(backups.begin(), backups.end(),
                                   [&](const catalog::Backup& b) { return b.id == *f.backup; });
    if (!known)
      return fail(Errc::not_found, "backup " + std::to_string(*f.backup) +
                                       " is not in the catalog '" + cat.dir() + "'");
    const JobRecord* used = nullptr;
    for (const auto& j : jobs) {
      if (std::find(j.backup_ids.begin(), j.backup_ids.end(), *f.backup) == j.backup_ids.end())
        continue;
      if (j.type == "backup") return j;
      used = &j;
    }
    if (used) return *used;
    return fail(Errc::not_found, "backup " + std::to_string(*f.backup) +
                                     " has no job record (it was taken by a version that kept "
                                     "no job history)");
  }
  if (jobs.empty()) return fail(Errc::not_found, "no jobs");
  return jobs.back();
}

int report_io(const ReportFlags& f) {
  const CommonFlags& c = f.common;
  if (f.job && f.backup) {
    print_error("report io takes --backup ID or --job N, not both");
    return kExitUsage;
  }
  auto cat = open_existing(c);
  if (!cat && cat.error().code == Errc::not_found) return no_jobs(c, catalog_dir(c));
  if (!cat) return error_exit(cat.error());
  if (!f.job && !f.backup && (*cat)->jobs().empty()) return no_jobs(c, (*cat)->dir());
  auto picked = pick_job(**cat, f);
  if (!picked) return error_exit(picked.error());
  const JobRecord& j = *picked;
  const uint64_t left_out = j.files_total - std::min<uint64_t>(j.files_total, j.file_io.size());
  if (c.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("catalog", (*cat)->dir());
    w.begin_object("job");
    job_json(w, j);
    w.end_object();
    w.begin_array("channels");
    for (const auto& ch : j.channels) {
      w.begin_object();
      w.kv("channel", ch.channel);
      w.kv("io_engine", ch.io_engine);
      w.kv("io_mode", ch.io_mode);
      w.kv("buffers", ch.buffers);
      w.kv("buffer_size", ch.buffer_size);
      w.kv("multiplexing", ch.multiplexing);
      w.kv("elapsed_s", seconds(ch.elapsed_ns));
      figures_json(w, ch.read, ch.write);
      w.end_object();
    }
    w.end_array();
    w.kv("files_total", j.files_total);
    w.kv("files_left_out", left_out);
    w.begin_array("files");
    for (const auto& fi : j.file_io) {
      w.begin_object();
      w.kv("path", fi.path);
      w.kv("channel", fi.channel);
      figures_json(w, fi.read, fi.write);
      w.end_object();
    }
    w.end_array();
    w.end_object();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  std::printf("job %llu: %s, %s, backup %s, %s to %s\n",
              static_cast<unsigned long long>(j.sequence), j.type.c_str(), j.status.c_str(),
              backups_text(j).c_str(), format_time(j.start_ns).c_str(),
              format_time(j.end_ns).c_str());
  std::printf("waits: ready < %.0f ms, short < %.0f ms, long >= %.0f ms\n\n",
              seconds(catalog::kReadyWaitNs) * 1000, seconds(catalog::kShortWaitNs) * 1000,
              seconds(catalog::kShortWaitNs) * 1000);
  std::vector<std::string> head = {"CH", "ENGINE", "MODE", "BUFFERS", "MUX", "OP"};
  head.insert(head.end(), kFigureHeads.begin(), kFigureHeads.end());
  Table ch_table(head, {1, 2, 5});
  for (const auto& ch : j.channels) {
    for (int op = 0; op < 2; ++op) {
      const IoFigures& x = op == 0 ? ch.read : ch.write;
      std::vector<std::string> row = {
          num(ch.channel), ch.io_engine.empty() ? "-" : ch.io_engine, ch.io_mode,
          num(ch.buffers) + " x " + util::format_bytes(ch.buffer_size), num(ch.multiplexing),
          op == 0 ? "read" : "write"};
      auto cells = figures_cells(x);
      row.insert(row.end(), cells.begin(), cells.end());
      ch_table.add(std::move(row));
    }
  }
  std::fputs(ch_table.str().c_str(), stdout);
  std::printf("\n");
  std::vector<std::string> fhead = {"CH", "OP"};
  fhead.insert(fhead.end(), kFigureHeads.begin(), kFigureHeads.end());
  fhead.push_back("FILE");
  Table f_table(fhead, {1, fhead.size() - 1});
  for (const auto& fi : j.file_io) {
    for (int op = 0; op < 2; ++op) {
      const IoFigures& x = op == 0 ? fi.read : fi.write;
      if (x.ios == 0 && (op == 1 || fi.write.ios != 0)) continue;
      std::vector<std::string> row = {num(fi.channel), op == 0 ? "read" : "write"};
      auto cells = figures_cells(x);
      row.insert(row.end(), cells.begin(), cells.end());
      row.push_back(fi.path);
      f_table.add(std::move(row));
    }
  }
  std::fputs(f_table.str().c_str(), stdout);
  if (left_out)
    std::printf("(%llu more file(s) left out: a record keeps the %zu that moved the most bytes)\n",
                static_cast<unsigned long long>(left_out), JobRecord::kMaxFiles);
  return kExitOk;
}

}  // namespace

void add_report_commands(CLI::App* report, ReportFlags& f) {
  auto* jobs = report->add_subcommand(
      "jobs", "every backup, restore and validation the catalog recorded, oldest first: id, "
              "type, status, start and end (UTC), backups, bytes read and written, MB/s, "
              "compression ratio and what bounded it");
  jobs->add_option("--limit", f.limit, "the newest N jobs only")->check(CLI::Range(1, 1 << 30));
  add_common(jobs, f.common);
  auto* io = report->add_subcommand(
      "io", "the I/O of one job per channel and per file: requests, bytes, MB/s while busy, "
            "time busy, waits for completions (ready < 1 ms, short < 100 ms, long), buffers, "
            "multiplexing, sync or async I/O");
  io->add_option("--backup", f.backup, "the job that wrote this backup (else the newest that used it)");
  io->add_option("--job", f.job, "the job with this id (report jobs)");
  add_common(io, f.common);
  add_report_unrecoverable(report, f);
  add_report_need_backup(report, f);
}

int run_report_cmd(const CLI::App& report, const ReportFlags& f) {
  for (const auto* sub : report.get_subcommands()) {
    if (sub->get_name() == "jobs") return report_jobs(f);
    if (sub->get_name() == "io") return report_io(f);
    if (sub->get_name() == "unrecoverable") return run_report_unrecoverable(f);
    if (sub->get_name() == "need-backup") return run_report_need_backup(f);
  }
  return kExitUsage;
}

void record_job(catalog::Catalog& cat, const catalog::JobRecord& job) {
  if (auto r = cat.add_job(job); !r)
    spdlog::warn("catalog '{}': the {} job was not recorded in the job history: {}", cat.dir(),
                 job.type, r.error().what);
}

}  // namespace stripeback::cli
