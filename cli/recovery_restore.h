// restore of a PostgreSQL cluster (docs/postgresql.md, "Point-in-time restore"): around
// the normal restore, the choice of backup for a recovery target (before anything is
// written) and the files the restored data directory needs (after a complete restore).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "database/recovery_plan.h"
#include "engine/restore/restore_job.h"
#include "options/settings.h"
#include "stripeback/result.h"

namespace stripeback::cli {

// With a recovery target or --standby: the backup to restore and the WAL it needs, checked
// against the catalog's log archive, and `o` narrowed to that backup. Without: nullopt and
// `o` as it was. Errors name the gap (database::plan_recovery).
Result<std::optional<database::RecoveryPlan>> plan_pg_restore(const options::Settings& s,
                                                              const catalog::Catalog& cat,
                                                              engine::RestoreOptions& o);

// What a restore wrote into a PostgreSQL data directory.
struct PgRestoreFiles {
  uint64_t backup_id = 0;
  std::string data_dir;             // where the data directory was restored
  std::vector<std::string> files;   // written, relative to it
  std::string target;               // database::target_text(), or empty for a plain restore
  std::string restore_command;      // empty for a plain restore
};

// After a complete restore: for the newest backup used that has a PostgreSQL record (the
// planned one with a target), the files its data directory needs (database::
// write_recovery_files), with the restore_command this binary serves from `catalog_dir`.
// nullopt when no backup used has such a record, or the restore was of some paths only
// (its data directory is not whole).
Result<std::optional<PgRestoreFiles>> finish_pg_restore(
    const options::Settings& s, const catalog::Catalog& cat, const engine::RestoreSummary& sum,
    const std::optional<database::RecoveryPlan>& plan);

// restore_command for a catalog: "<this binary> archive-get --catalog <dir> %f %p", the
// paths absolute and quoted for the shell.
std::string restore_command_for(const std::string& catalog_dir);

// The text lines and the --json member ("postgres": {...}) that report them.
std::string pg_restore_text(const PgRestoreFiles& p);
std::string pg_restore_json_member(const PgRestoreFiles& p);

}  // namespace stripeback::cli
