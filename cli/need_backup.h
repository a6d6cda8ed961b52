// `stripeback report need-backup` (docs/selection.md): the files whose restorable backups
// fall short of the retention policy (or of --redundancy N, --days D), and with SOURCEs
// the files found there now that no backup holds.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/report_commands.h"

namespace stripeback::cli {

// Adds `need-backup` under the `report` command; runs it.
void add_report_need_backup(CLI::App* report, ReportFlags& f);
int run_report_need_backup(const ReportFlags& f);

}  // namespace stripeback::cli
