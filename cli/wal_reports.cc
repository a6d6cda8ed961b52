#include "cli/wal_reports.h"

#include <cstdio>

#include "cli/job_flags.h"
#include "cli/render.h"
#include "database/recovery_plan.h"
#include "util/escape.h"
#include "util/json.h"

namespace stripeback::cli {
namespace {

// The complete, usable backups with a PostgreSQL record whose WAL the archive lacks, each
// with the first missing segment.
std::vector<std::pair<const catalog::Backup*, std::string>> unrecoverable(
    const std::vector<catalog::Backup>& backups, const std::vector<catalog::WalFile>& archive) {
  std::vector<std::pair<const catalog::Backup*, std::string>> out;
  for (const auto& b : backups) {
    if (!database::has_postgres_record(b) || !b.usable()) continue;
    if (auto missing = database::missing_backup_wal(archive, *b.hot)) out.emplace_back(&b, *missing);
  }
  return out;
}

}  // namespace

std::string wal_list_line(const catalog::Backup& b, const std::vector<catalog::WalFile>& archive) {
  if (!database::has_postgres_record(b)) return "";
  const auto missing = database::missing_backup_wal(archive, *b.hot);
  return util::escape_text("backup " + std::to_string(b.id) + ": WAL " + b.hot->start_wal +
                           " to " + b.hot->stop_wal +
                           (missing ? " is not complete in the archive: " + *missing +
                                          " is missing"
                                    : " is complete in the archive")) +
         "\n";
}

void add_report_unrecoverable(CLI::App* report, ReportFlags& f) {
  auto* sub = report->add_subcommand(
      "unrecoverable",
      "the backups of PostgreSQL clusters (backup --pg) that cannot be recovered to "
      "consistency: the archive lacks a WAL segment from the backup's start_wal to its "
      "stop_wal (on its timeline or a later one); each with the first missing segment. Exit 0, "
      "with an empty list when every backup can be");
  add_common(sub, f.common);
}

int run_report_unrecoverable(const ReportFlags& f) {
  const std::string dir = catalog_dir_of(f.common);
  std::vector<catalog::Backup> backups;
  std::vector<catalog::WalFile> archive;
  auto cat = open_catalog(f.common, catalog::Create::no);
  if (cat) {
    backups = (*cat)->backups();
    archive = (*cat)->wal_files();
  } else if (cat.error().code != Errc::not_found) {
    return report(cat.error());
  }
  const auto bad = unrecoverable(backups, archive);
  if (f.common.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("catalog", dir);
    w.begin_array("unrecoverable");
    for (const auto& [b, missing] : bad) {
      w.begin_object();
      w.kv("backup_id", b->id);
      w.kv("tag", b->begin.tag);
      w.kv("timeline", static_cast<uint64_t>(b->hot->timeline));
      w.kv("start_wal", b->hot->start_wal);
      w.kv("stop_wal", b->hot->stop_wal);
      w.kv("stop_time", format_time(b->hot->stop_time_ns));
      w.kv("first_missing_wal", missing);
      w.end_object();
    }
    w.end_array();
    w.end_object();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  if (bad.empty()) {
    std::printf("(every backup of a PostgreSQL cluster in %s has its WAL in the archive)\n",
                util::escape_text(dir).c_str());
    return kExitOk;
  }
  std::printf("%6s  %-18s %-20s  %-24s  %-24s  %s\n", "ID", "TAG", "STOPPED (UTC)", "START WAL",
              "STOP WAL", "FIRST MISSING");
  for (const auto& [b, missing] : bad)
    std::printf("%6llu  %-18s %-20s  %-24s  %-24s  %s\n", static_cast<unsigned long long>(b->id),
                b->begin.tag.empty() ? "-" : util::escape_text(b->begin.tag).c_str(),
                format_time(b->hot->stop_time_ns).c_str(), b->hot->start_wal.c_str(),
                b->hot->stop_wal.c_str(), missing.c_str());
  return kExitOk;
}

}  // namespace stripeback::cli
