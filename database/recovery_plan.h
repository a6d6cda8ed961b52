// Which backup a point-in-time restore starts from, and whether the log archive holds the
// WAL that recovery needs (docs/postgresql.md, "Point-in-time restore" and "Reports"). Pure:
// works on what the catalog says (backups, Hot and Wal records), reads no file.
//
// A segment counts as archived when the archive holds a segment file with its number on the
// backup's timeline or on a later one (recovery follows the latest timeline), and, when
// both are known, of the same cluster (system identifier).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "database/recovery_target.h"
#include "stripeback/result.h"

namespace stripeback::database {

// A backup taken with PostgreSQL's backup mode (a Hot record of database "postgres").
bool has_postgres_record(const catalog::Backup& b);

// The first segment from `first` to `last` (segment numbers) that the archive lacks, by
// name on `hot`'s timeline; nullopt when every one is there.
std::optional<std::string> first_missing_segment(const std::vector<catalog::WalFile>& archive,
                                                 const catalog::HotBackup& hot, uint64_t first,
                                                 uint64_t last);
// The WAL the backup itself needs to reach consistency: start_wal to stop_wal.
std::optional<std::string> missing_backup_wal(const std::vector<catalog::WalFile>& archive,
                                              const catalog::HotBackup& hot);
// The newest segment number archived for `hot`'s cluster on its timeline or a later one.
std::optional<uint64_t> newest_archived_segment(const std::vector<catalog::WalFile>& archive,
                                                const catalog::HotBackup& hot);

// Which backups a restore may choose from: all, or only `backup_id`, or the backups tagged
// `tag` (a restore's --backup and --tag).
struct BackupFilter {
  std::optional<uint64_t> backup_id;
  std::string tag;
};

struct RecoveryPlan {
  uint64_t backup_id = 0;
  catalog::HotBackup hot;
  uint64_t first_segment = 0, last_segment = 0;  // the WAL recovery reads, all archived
};

// The backup to restore for `t` and the WAL it needs. The backup is the newest complete,
// usable one with a PostgreSQL record that ends at or before the target: its stop time
// (a time target) or stop LSN (an LSN target); for a transaction id, which no record can
// place, the newest. The WAL: from its start_wal to the segment holding the target LSN, or
// for a time or transaction target (and none) to the newest archived segment, at least to
// its stop_wal. Errors: invalid_argument when the filter names a backup without a
// PostgreSQL record, or none is in the catalog; not_found when no backup ends before the
// target (naming the oldest's end) or when the archive lacks a segment (naming the first).
Result<RecoveryPlan> plan_recovery(const std::vector<catalog::Backup>& backups,
                                   const std::vector<catalog::WalFile>& archive,
                                   const RecoveryTarget& t, const BackupFilter& filter);

}  // namespace stripeback::database
