// What the log archive means for the backups of PostgreSQL clusters (docs/postgresql.md,
// "Reports"): whether each backup taken in backup mode has the WAL from its start to its
// end in the archive (list), and `report unrecoverable`, the backups that lack some.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "cli/report_commands.h"

namespace stripeback::cli {

// `list`'s text lines for `backups`: one per backup with a PostgreSQL record.
std::string wal_list_lines(const std::vector<catalog::Backup>& backups,
                           const std::vector<catalog::WalFile>& archive);

// Adds `unrecoverable` under the `report` command; runs it.
void add_report_unrecoverable(CLI::App* report, ReportFlags& f);
int run_report_unrecoverable(const ReportFlags& f);

}  // namespace stripeback::cli
