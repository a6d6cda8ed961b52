// Resuming an interrupted backup (backup --resume; docs/media-management.md, "Resume").
//
// The protocol: every piece is recorded in the catalog as soon as it is durable (synced,
// with its trailer naming each file extent it holds and their digests), not only at the end.
// A backup killed before its end record so leaves in the catalog the pieces that were whole,
// and their trailers say which files they finish. A resume (same sources, same destination,
// the killed job's process gone) records that it now writes the backup, keeps every file
// whose extents those pieces cover completely and whose size and mtime are unchanged, backs
// up the rest into new pieces, and ends the one backup with all of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/crypto.h"
#include "engine/planner.h"
#include "io/file.h"
#include "stripeback/result.h"

namespace stripeback::engine {

struct ResumePoint {
  uint64_t backup_id = 0;
  std::vector<catalog::PieceRecord> pieces;  // recorded before the interruption
  std::vector<catalog::FileRecord> files;    // finished then: not read again
  uint64_t bytes_kept = 0;                   // their size
};

// Which backup `--resume` names (`id`; 0: the newest interrupted backup to `dest`) and what
// of it is kept; the finished files are taken out of `plan`. Errors name the backup and the
// reason: not_found (no such backup, none interrupted), invalid_argument (it ended, other
// sources or destination, a level), busy (its job is still running).
Result<ResumePoint> find_resume_point(uint64_t id, const std::vector<std::string>& sources,
                                      const std::string& dest, bool has_level,
                                      const catalog::Catalog& cat, Plan& plan,
                                      io::Direct direct, Keyring* keys);

}  // namespace stripeback::engine
