// Deleting backups and their pieces from the media, crash-safe (docs/media-management.md).
//
// The protocol: (1) the catalog records the intent (catalog::Deletion, the backups and every
// piece to remove, recorded pieces and orphans alike); (2) the pieces are removed from their
// media (a piece already gone counts as removed) and each directory is synced; (3) the
// catalog records the deletion done, and the backups are gone from it. A kill at any point
// leaves a catalog that opens: before (1) nothing happened; between (1) and (3) the backups
// are listed `deleting`, are never restored from, and the next `delete` finishes the job
// first. Pieces on removable media are not erased: their records go, and a volume whose
// every piece is gone from the catalog is free to be written again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "stripeback/result.h"

namespace stripeback::engine {

struct LockedBackup {
  uint64_t id = 0;
  storage::Retention lock;
};

struct DeletePlan {
  std::string reason;  // "obsolete", "expired", "requested" (delete backup)
  std::vector<uint64_t> backups;
  // Of the backups asked for, those whose pieces are locked on their medium (S3 Object
  // Lock) until a date still to come: kept, with nothing of theirs in `pieces`.
  std::vector<LockedBackup> locked;
  std::vector<catalog::DeletedPiece> pieces;  // what goes from the media
  uint64_t bytes() const;
};

// The pieces of `ids`: those the catalog records and, on their directories, any other piece
// named with their backup and catalog id (left by a job that died or failed). Plus, with
// `orphans`, every piece on the catalog's directories that no restorable, damaged or
// running backup uses (engine/pieces/leftovers.h). Backups locked at `now_ns` (wall clock)
// and their pieces are left out (DeletePlan::locked).
DeletePlan plan_deletion(const std::vector<catalog::Backup>& backups,
                         const std::vector<uint64_t>& ids, const std::string& reason,
                         bool orphans, int64_t now_ns);

struct DeleteOutcome {
  std::vector<DeletePlan> finished;  // unfinished deletions found and finished first
  DeletePlan done;                   // this one (empty when nothing was to be deleted)
  std::vector<std::string> errors;   // pieces that could not be removed, and why
  // Pieces removed (those already gone not counted), of the finished deletions too.
  uint64_t pieces_removed = 0;
};

// Held by a command that deletes (delete obsolete, delete expired, delete backup) from
// before it plans until it has carried the plan out: a second one waits, then plans from
// what the first left, so two never report (or record) the same deletion.
// `<catalog>/maintenance.lock`.
class MaintenanceLock {
 public:
  static Result<MaintenanceLock> acquire(const catalog::Catalog& cat);
  MaintenanceLock(MaintenanceLock&& o) noexcept;
  MaintenanceLock& operator=(MaintenanceLock&&) = delete;
  ~MaintenanceLock();

 private:
  MaintenanceLock() = default;
  int fd_ = -1;
};

// Finishes every unfinished deletion, then carries `plan` out by the protocol above. A piece
// that cannot be removed (read-only medium, server gone) leaves its deletion unfinished:
// the error names it, and a rerun tries again.
Result<DeleteOutcome> carry_out(catalog::Catalog& cat, const DeletePlan& plan);

}  // namespace stripeback::engine
