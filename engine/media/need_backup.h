// `report need-backup` (docs/selection.md): the files whose backups fall short of a policy.
//
// A file is held by a backup when that backup is restorable (Backup::usable(): complete or
// partial, not damaged, expired or being deleted; as retention.h counts them) and records
// the file (a regular file), whatever its kind of record
// (a whole copy, a level 1's changes, an --optimize record naming the backup that holds
// it). A file needs a backup when
//   redundancy N: fewer than N backups hold it;
//   recovery-window D: none that holds it began within the D days before now.
// The files looked at are those the restorable backups hold, or, with present files given
// (the files found under SOURCEs now), those present files: any of them no backup holds
// needs one whatever the policy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/media/retention.h"

namespace stripeback::engine {

struct NeedBackup {
  std::string path;
  uint32_t backups = 0;     // restorable backups holding it
  uint64_t newest_id = 0;   // the newest of them (0: none)
  int64_t newest_time_ns = 0;  // its start time
};

// `policy` is redundancy or recovery-window (Kind::none is taken as redundancy 1). With
// `present` null, the files the restorable backups hold; else only the paths in it.
// Sorted by path.
std::vector<NeedBackup> find_need_backup(const std::vector<catalog::Backup>& backups,
                                         const RetentionPolicy& policy, int64_t now_ns,
                                         const std::vector<std::string>* present);

}  // namespace stripeback::engine
