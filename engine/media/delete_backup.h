// Deleting a chosen backup (stripeback delete backup, docs/media-management.md): which
// backups go, or why none may. The deletion itself is media_ops.h's: plan_deletion, then
// carry_out, crash-safe as for delete obsolete.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "catalog/catalog.h"
#include "engine/media/media_ops.h"
#include "stripeback/result.h"

namespace stripeback::engine {

enum class Dependents : bool { refuse, delete_too };

struct BackupDeletion {
  uint64_t id = 0;
  // The backups that need it (their chains hold it, keep.h chain_of), in id order: deleted
  // with it under Dependents::delete_too; under Dependents::refuse nothing is planned and
  // the caller refuses, naming them.
  std::vector<uint64_t> dependents;
  // It is being deleted already (an interrupted deletion): carry_out finishes that first,
  // and `plan` is empty.
  bool interrupted = false;
  DeletePlan plan;  // reason "requested"
};

// Plans the deletion of backup `id` among `backups` (Catalog::backups()), `deleted` the
// ids a finished deletion removed. Errors, with nothing planned: not_found for an id the
// catalog does not have (saying so when it was deleted); busy for a backup, or a dependent
// to delete, that may still be running (`running`); invalid_argument for one, itself or a
// dependent to delete, that is kept (keep.h) or locked at `now_ns`, naming the date.
Result<BackupDeletion> plan_backup_deletion(
    const std::vector<catalog::Backup>& backups, const std::vector<uint64_t>& deleted,
    uint64_t id, Dependents dependents, int64_t now_ns,
    const std::function<bool(const catalog::Backup&)>& running);

}  // namespace stripeback::engine
