// Backups kept by the operator (stripeback keep, docs/media-management.md): a kept backup
// is never obsolete, nor are the backups it depends on, and `delete backup` refuses it,
// until its date passes or, kept forever, until the keep is cleared.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "catalog/catalog.h"
#include "stripeback/result.h"

namespace stripeback::engine {

// What backup `id` depends on: the parents of its files (a level 1's level 0 or 1) and the
// backups holding the files --optimize skipped, transitively; `id` itself left out.
std::set<uint64_t> chain_of(const std::vector<catalog::Backup>& backups, uint64_t id);

// The backups kept at `now_ns` (wall clock) and every backup their chains need.
std::set<uint64_t> kept_backups(const std::vector<catalog::Backup>& backups, int64_t now_ns);

struct KeepOutcome {
  catalog::Keep keep;            // what was recorded
  bool recorded = true;          // false: a clear of a backup that was not kept
  std::vector<uint64_t> chain;   // the backups it depends on, kept with it (chain_of)
};

// Records that backup `id` is kept until `until_ns` (Kind::until, wall clock), forever, or
// no longer (Kind::cleared). The one way to keep a backup, for a command and for a job
// that keeps a backup on its own (after a backup, the previous clean one). A date already
// past is recorded and protects nothing. Errors: not_found for a backup the catalog does
// not have, saying so when a deletion removed it; invalid_argument for keeping a backup
// that is being deleted, failed, or has no end record (Catalog::add_keep).
Result<KeepOutcome> keep_backup(catalog::Catalog& cat, uint64_t id, catalog::Keep::Kind kind,
                                int64_t until_ns = 0);

}  // namespace stripeback::engine
