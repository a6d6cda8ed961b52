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

// `list`'s text line for a backup with a PostgreSQL record ("backup 3: WAL ... is complete
// in the archive"), with its newline; empty for any other backup.
std::string wal_list_line(const catalog::Backup& b, const std::vector<catalog::WalFile>& archive);

// Adds `unrecoverable` under the `report` command; runs it.
void add_report_unrecoverable(CLI::App* report, ReportFlags& f);
int run_report_unrecoverable(const ReportFlags& f);

}  // namespace stripeback::cli
