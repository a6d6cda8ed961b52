// What a restored PostgreSQL data directory needs besides the backed-up files before the
// server can start from it (docs/postgresql.md, "Point-in-time restore"): backup_label and
// tablespace_map as PostgreSQL's backup mode returned them, the directories a base backup
// leaves empty or out, and for recovery from the archive a signal file and the recovery
// settings appended to postgresql.auto.conf.
//
// Local files only. Each file written is fsynced, and so is the data directory. Created
// files and directories get the data directory's owner and group when this process may
// give them (it runs as root); otherwise they are this process's.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "database/recovery_target.h"
#include "stripeback/result.h"

namespace stripeback::database {

// Directories, relative to the data directory, that PostgreSQL 15 needs at start and a
// base backup may leave out or empty (parents before children).
const std::vector<std::string>& startup_directories();

// An original absolute path to the one a restore used instead.
using PathMap = std::function<std::string(const std::string&)>;

struct RecoveryFiles {
  std::string data_dir;  // the restored data directory (it exists)
  // Where the restore put the backed-up files (its --to): tablespace_map's paths are moved
  // below it, where the restore put the tablespaces. Empty or "/": left as recorded.
  std::string restore_root;
  // Where the restore put an original path below restore_root when that is not the path
  // itself (restore --remap); unset: the path as recorded.
  PathMap remap;
  catalog::HotBackup hot;
  // Recovery from the archive: recovery.signal (standby.signal for t.standby) and
  // recovery_settings() appended to postgresql.auto.conf. Unset: backup_label,
  // tablespace_map and the directories only (the server then needs the WAL in pg_wal/).
  std::optional<RecoveryTarget> recovery;
  std::string restore_command;
};

// Writes them; returns the paths written or created, relative to the data directory.
// backup_label and tablespace_map replace any there; postgresql.auto.conf is appended to
// (created when missing). Errors: io naming the file and the cause.
Result<std::vector<std::string>> write_recovery_files(const RecoveryFiles& f);

// tablespace_map's lines "OID PATH" with each PATH moved below `root`, as `remap` gives it
// when set (restore --remap of a tablespace's location).
std::string tablespace_map_below(const std::string& map, const std::string& root,
                                 const PathMap& remap = {});

}  // namespace stripeback::database
