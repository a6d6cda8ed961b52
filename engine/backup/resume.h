// Resuming an interrupted backup (backup --resume; docs/media-management.md, "Resume").
//
// The protocol: every piece is recorded in the catalog as soon as it is durable (synced,
// with its trailer naming each file extent it holds and their digests), not only at the end.
// A backup killed before its end record so leaves in the catalog the pieces that were whole,
// and their trailers say which files and sections they finish. A resume (same sources, same
// destination, the killed job's process gone) records that it now writes the backup, keeps
// every durable extent of each file whose size, mtime, ctime and inode are unchanged, backs up only the
// ranges they leave out (a section not finished, the end of a file) into new pieces, and
// ends the one backup with all of them. A file's durable extents are all kept or none: a
// restore takes every extent of a file from each piece its record names.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/backup/backup_channel.h"
#include "engine/transform/crypto.h"
#include "engine/backup/planner.h"
#include "storage/async/file.h"
#include "stripeback/result.h"

namespace stripeback::engine {

// What the durable pieces hold of one file.
struct HeldFile {
  FileMeta meta;
  std::vector<std::pair<Extent, std::string>> extents;  // each with the piece holding it
  std::vector<std::string> listed_in;  // the pieces whose trailer lists it (an empty file: no extent)
  // Set when two pieces list the file as it was in different states (size, mtime, ctime or
  // inode): an earlier run read it, it changed, and a later interrupted run (a resume) read
  // it again. Their extents mix two versions, so none of them is kept.
  bool states_differ = false;
};

struct ResumePoint {
  uint64_t backup_id = 0;
  std::vector<catalog::PieceRecord> pieces;  // recorded before the interruption
  std::map<std::string, HeldFile> held;      // by path
  // Filled by keep_finished_units():
  std::deque<WorkUnit> kept_units;           // the units not read again
  uint64_t files_kept = 0;                   // files all of whose units are kept
  uint64_t sections_kept = 0;                // kept units that are sections
  uint64_t bytes_kept = 0;
  // Files the pieces hold something of that are read again whole, with the reason (their
  // size, mtime, status change time or inode changed since the interrupted run).
  std::vector<std::pair<std::string, std::string>> reread;
};

// Which backup `--resume` names (`id`; 0: the newest interrupted backup to `dest`) and what
// its durable pieces hold. Errors name the backup and the reason: not_found (no such backup,
// none interrupted), invalid_argument (it ended, other sources or destination), unsupported
// (a level, removable media), busy (its job is still running).
Result<ResumePoint> find_resume_point(uint64_t id, const std::vector<std::string>& sources,
                                      const std::string& dest, bool has_level,
                                      const catalog::Catalog& cat, io::Direct direct,
                                      Keyring* keys);

// Adds to `rp.held` what the trailer `t` of piece `piece` holds: each file's state (the
// latest piece's) and extents.
void hold_trailer(ResumePoint& rp, const Trailer& t, const std::string& piece);

// Replaces in `sets` each unit something of which `rp` holds by units of the ranges still
// to read (none when it is finished; empty sets go) and returns what is kept as done units,
// for the backup's file records; they point into rp.kept_units.
std::vector<UnitDone> keep_finished_units(ResumePoint& rp, std::vector<WorkSet>& sets);

}  // namespace stripeback::engine
