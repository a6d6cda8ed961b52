// Pieces on a destination that no restorable backup uses: those a failed (or partial)
// backup could not remove, and those of backups killed before their end record. Finding
// them at the start of a backup, removing a backup's own, and the warnings that name them.
//
// A piece is attributed to a backup only through its name (engine/format/piece_name.h): it must
// carry the catalog id and the backup id recorded in that backup's begin record. Pieces of
// other catalogs sharing the destination, and pieces named before catalogs had identities,
// are never named nor removed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"

namespace stripeback::engine {

struct PieceFile {
  std::string dir;  // directory or URL
  std::string name;
  uint64_t bytes = 0;
  std::string path() const;
};

// Whether the job that began `b` (a backup without an end record) may still be writing:
// true unless it ran on this host and its process is gone. A job on another host cannot
// be proven dead.
bool may_still_run(const catalog::Backup& b);

// Which of `names` (entries of a destination directory) are pieces that no restorable
// backup uses: pieces of a backup in `backups` that has failed, or that has no end record
// and is not running (`running`), or that is complete or partial but does not record
// them. Pieces of damaged backups, any piece a usable, damaged or running backup mentions,
// and the pieces an interrupted backup recorded (kept for backup --resume until retention
// deletes the backup) are never chosen. In the order of `names`.
std::vector<std::string> unused_piece_names(
    const std::vector<catalog::Backup>& backups, const std::vector<std::string>& names,
    const std::function<bool(const catalog::Backup&)>& running);

// The unused pieces in directory `dest`, with their sizes, sorted by name; empty when the
// directory cannot be listed.
std::vector<PieceFile> find_unused_pieces(const std::vector<catalog::Backup>& backups,
                                          const std::string& dest);

// The pieces in `dir` whose names start with `prefix`, with their sizes (empty when the
// directory cannot be listed).
std::vector<PieceFile> pieces_with_prefix(const std::string& dir, const std::string& prefix);

// Unfinished writes of pieces on `dest` (S3 multipart uploads whose job was killed: parts
// the store keeps, and bills for, until they are aborted) that belong to a backup of
// `backups` with the same catalog id that has ended or is not running (`running`): each
// is abandoned. Returns what was done or could not be ("2 unfinished upload(s) ... were
// aborted"), or nothing when there were none. Unfinished writes of running backups and of
// other catalogs are left alone.
std::optional<std::string> abandon_unfinished_pieces(
    const std::vector<catalog::Backup>& backups, const std::string& dest,
    const std::function<bool(const catalog::Backup&)>& running);

struct Removal {
  std::vector<PieceFile> remaining;  // the piece that could not be removed and those after it
  std::string error;                 // why it could not be
  uint64_t removed = 0;  // pieces that were there and were removed (not those already gone)
};

// Removes `pieces` in order. A piece already gone counts as removed. Stops at the first
// other failure: a medium that refuses one removal (read-only, server gone) refuses the
// rest, and on a network medium each attempt would first wait out the retry window.
Removal remove_pieces(const std::vector<PieceFile>& pieces);

// "3 piece(s) (48.00 MiB) ... remain in 'dest': 'a', 'b', 'c'" and the advice, for
// pieces found at the start of a backup.
std::string leftover_warning(const std::vector<PieceFile>& pieces, const std::string& dest);

// For pieces of the running backup that could not be removed; `what` says whose they are
// ("of this failed backup").
std::string unremoved_warning(const Removal& r, const std::string& what, const std::string& dest);

}  // namespace stripeback::engine
