// backup --pg (docs/postgresql.md): PostgreSQL's backup mode around a backup of a cluster's
// data directory, through libpq. The copy engine stays agnostic: this arms its options
// (hot, exclusions, tablespaces as sources, the page checks' bound, and the hook that ends
// the mode before the backup is recorded), and fills in the catalog's Hot record.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/backup/backup_job.h"
#include "stripeback/result.h"

namespace stripeback::database {

class PgBackupMode {
 public:
  // Connects through `conninfo` (a libpq connection string) and checks, before anything
  // is written, that the server is PostgreSQL 15 or later and that the backup's one source
  // is its data directory. Errors name the cause (the server's message included).
  static Result<std::unique_ptr<PgBackupMode>> connect(const std::string& conninfo,
                                                       const std::vector<std::string>& sources);
  ~PgBackupMode();
  PgBackupMode(const PgBackupMode&) = delete;
  PgBackupMode& operator=(const PgBackupMode&) = delete;

  // pg_backup_start(label, fast => true) on this session, then arms `opts`: hot, what a
  // base backup leaves out excluded, tablespaces added as sources, the page checks bounded
  // by the start LSN, and end_hot (pg_backup_stop on this session). `opts` must outlive
  // the backup and this object must outlive `opts`.
  Result<void> start(const std::string& label, engine::BackupOptions& opts);
  // Ends the backup mode if the backup did not (it failed before its channels ran): the
  // mode always ends. Harmless when it has ended.
  void end_if_open();
  // After the backup: waits up to `timeout_s` for PostgreSQL's archiver to have archived
  // the last segment the backup needs (when archive_mode is on); a warning when it has not
  // (the backup stays; `list` shows whether its WAL is complete).
  std::vector<std::string> wait_for_archive(int timeout_s);
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Whether PostgreSQL's base backups leave out `rel`, a path relative to a data directory
  // (or to a tablespace's directory): pg_wal/ and the other runtime directories' contents,
  // postmaster.pid and .opts, pg_internal.init, temporary files, tablespace links.
  static bool left_out(const std::string& rel);

 private:
  struct Impl;
  explicit PgBackupMode(std::unique_ptr<Impl> impl);
  Result<void> stop(bool copied, catalog::HotBackup& hot);
  std::unique_ptr<Impl> impl_;
  std::vector<std::string> warnings_;
};

}  // namespace stripeback::database
