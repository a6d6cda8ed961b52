// `stripeback report jobs` and `report io`: what the catalog remembers of finished jobs
// (docs/monitoring.md#job-history). `report jobs` lists the jobs, `report io` shows the I/O
// figures of one job per channel and per file; other reports sit beside them.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "cli/commands.h"

namespace stripeback::cli {

struct ReportFlags {
  CommonFlags common;
  std::optional<size_t> limit;     // report jobs: the newest N only
  std::optional<uint64_t> backup;  // report io: the job that wrote (or else used) this backup
  std::optional<uint64_t> job;     // report io: the job with this id
  // report need-backup: the policy (--redundancy N or --days D) and the SOURCEs.
  std::optional<uint32_t> need_redundancy;
  std::string need_days;
  std::vector<std::string> need_sources;
};

// Adds `jobs` and `io` under the `report` command.
void add_report_commands(CLI::App* report, ReportFlags& f);
// Runs whichever of them was parsed.
int run_report_cmd(const CLI::App& report, const ReportFlags& f);

// Appends a finished job's record to its catalog. A failure to do so is a warning: the job's
// own outcome stands.
void record_job(catalog::Catalog& cat, const catalog::JobRecord& job);

}  // namespace stripeback::cli
