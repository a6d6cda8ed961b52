#include "cli/need_backup.h"

#include <cstdio>
#include <spdlog/spdlog.h>

#include "cli/job_flags.h"
#include "cli/render.h"
#include "engine/backup/planner.h"
#include "engine/media/need_backup.h"
#include "util/clock.h"
#include "util/escape.h"
#include "util/json.h"

namespace stripeback::cli {
namespace {

// --redundancy, --days, else the configured retention policy, else redundancy 1.
Result<engine::RetentionPolicy> policy_for(const ReportFlags& f, const catalog::Catalog* cat) {
  engine::RetentionPolicy p;
  if (f.need_redundancy) {
    p.kind = engine::RetentionPolicy::Kind::redundancy;
    p.redundancy = *f.need_redundancy;
    return p;
  }
  if (!f.need_days.empty()) {
    SB_ASSIGN(p.window_days, engine::parse_days(f.need_days, "--days"));
    p.kind = engine::RetentionPolicy::Kind::window;
    return p;
  }
  if (cat)
    if (auto text = cat->setting("retention")) {
      auto configured = engine::parse_policy(*text);
      if (!configured) return configured.error().wrap("the configured retention policy");
      if (configured->kind != engine::RetentionPolicy::Kind::none) return *configured;
    }
  p.kind = engine::RetentionPolicy::Kind::redundancy;
  p.redundancy = 1;
  return p;
}

}  // namespace

void add_report_need_backup(CLI::App* report, ReportFlags& f) {
  auto* sub = report->add_subcommand(
      "need-backup",
      "the files whose backups fall short: fewer than --redundancy N complete (or partial) "
      "backups hold them, or none that began within the last --days D (default: the configured retention "
      "policy, else redundancy 1); with SOURCEs, the files found there now, so those no backup "
      "holds are listed too. Each with the backups holding it and the newest one. Exit 0 "
      "whether or not files are listed");
  auto* n = sub->add_option("--redundancy", f.need_redundancy,
                            "files held by fewer than N backups")
                ->check(CLI::Range(1, 1000000))
                ->option_text("N");
  sub->add_option("--days", f.need_days,
                  "files no backup begun within the last D days holds (a fraction allowed)")
      ->option_text("D")
      ->excludes(n);
  sub->add_option("SOURCE", f.need_sources,
                  "look at the files below these files or directories now, so files never "
                  "backed up are listed too (default: the files the catalog's backups hold)");
  add_common(sub, f.common);
}

int run_report_need_backup(const ReportFlags& f) {
  const std::string dir = catalog_dir_of(f.common);
  std::vector<catalog::Backup> backups;
  auto cat = open_catalog(f.common, catalog::Create::no);
  if (cat) backups = (*cat)->backups();
  else if (cat.error().code != Errc::not_found) return report(cat.error());
  auto policy = policy_for(f, cat ? cat.value().get() : nullptr);
  if (!policy) return report(policy.error());
  std::vector<std::string> present;
  if (!f.need_sources.empty()) {
    engine::PlanOptions po;
    po.skip_unreadable = true;
    auto plan = engine::make_plan(f.need_sources, po);
    if (!plan) return report(plan.error());
    for (const auto& s : plan->skipped) spdlog::warn("skipped '{}': {}", s.path, s.why);
    for (const auto& file : plan->files) present.push_back(file.path);
  }
  const auto rows = engine::find_need_backup(backups, *policy, util::wall_now_ns(),
                                             f.need_sources.empty() ? nullptr : &present);
  if (f.common.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("catalog", dir);
    w.kv("policy", policy->str());
    w.begin_array("sources");
    for (const auto& s : f.need_sources) w.value(s);
    w.end_array();
    w.begin_array("files");
    for (const auto& r : rows) {
      w.begin_object();
      w.kv("path", r.path);
      w.kv("backups", static_cast<uint64_t>(r.backups));
      if (r.newest_id) {
        w.kv("newest_backup_id", r.newest_id);
        w.kv("newest_time", format_time(r.newest_time_ns));
        w.kv("newest_time_ns", r.newest_time_ns);
      } else {
        w.kv_null("newest_backup_id");
        w.kv_null("newest_time");
        w.kv_null("newest_time_ns");
      }
      w.end_object();
    }
    w.end_array();
    w.end_object();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  std::printf("retention policy: %s\n", policy->str().c_str());
  if (rows.empty()) {
    std::printf("(no file needs a backup)\n");
    return kExitOk;
  }
  std::printf("%7s  %9s  %-20s  %s\n", "BACKUPS", "NEWEST ID", "NEWEST (UTC)", "PATH");
  for (const auto& r : rows)
    std::printf("%7u  %9s  %-20s  %s\n", r.backups,
                r.newest_id ? std::to_string(r.newest_id).c_str() : "-",
                r.newest_id ? format_time(r.newest_time_ns).c_str() : "never",
                util::escape_text(r.path).c_str());
  return kExitOk;
}

}  // namespace stripeback::cli
