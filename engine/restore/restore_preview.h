// restore --preview and validate --preview: the job's own phases up to its plan (the backups
// and files chosen, the target checked, each piece's index read, the files cut into the
// chunks the channels would read), then what that plan would read and write, instead of
// running it. No frame is read, nothing is created in the target, no journal is begun and
// nothing is recorded in the catalog; pieces on removable media are not opened at all.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/restore/restore_job.h"
#include "engine/wiring/piece_medium.h"
#include "stripeback/result.h"

namespace stripeback::engine {

struct PreviewBackup {
  uint64_t id = 0;
  int level = -1;          // -1: a plain full backup
  std::string tag;
  int64_t start_ns = 0;
  bool parent = false;     // used only for what files of a newer backup build on
};

struct PreviewPiece {
  uint64_t backup_id = 0;
  std::string name;
  std::string location;            // where it is; empty on removable media
  std::string medium;              // piece_medium() (engine/wiring/piece_medium.h)
  std::vector<std::string> volumes;  // the volumes of removable media holding it, in order
  uint64_t size = 0;               // bytes on the medium
  // What the job reads from it: the index and the frames the chosen files need, or the whole
  // piece when it is read in order (removable media) or walked whole (a full validation).
  uint64_t bytes_to_read = 0;
  bool whole = false;              // read whole
};

struct PreviewFile {
  std::string path;    // as backed up
  std::string target;  // where a restore puts it (after --remap); empty for a validation
  uint64_t backup_id = 0;
  uint64_t bytes = 0;
};

// Time the reads would take on one medium, from the catalog's history of finished jobs of
// the same kind (restore or validate) whose backups are all on that medium.
struct TimeEstimate {
  std::string medium;
  uint64_t bytes = 0;        // to read from it
  uint64_t jobs = 0;         // history jobs the rate comes from; 0: no estimate
  double mb_per_s = 0;       // their bytes read over their time
  double seconds = 0;        // bytes / rate; 0 without history
};

struct RestorePreview {
  bool verify_only = false;
  bool delta = false;       // bytes_to_read is an upper bound: only differing blocks are read
  std::string target;       // a restore's target directory
  std::string check_mode;   // a validation's (FrameSelection::mode())
  std::vector<PreviewBackup> backups;  // in id order
  std::vector<PreviewPiece> pieces;    // by backup, then name
  std::vector<PreviewFile> files;      // regular files, by path
  uint64_t directories = 0;
  uint64_t bytes = 0;          // file bytes to restore (or check)
  uint64_t bytes_to_read = 0;  // from the pieces, all together
  std::vector<TimeEstimate> estimates;  // one per medium read (engine/history/time_estimate.h)
  std::optional<double> seconds;        // all together; none when a medium has no history
  std::vector<Fallback> fallbacks;      // files whose newest copy is passed over
  std::vector<std::string> warnings;
  std::vector<std::string> errors;      // files the job would fail, and why
};

// The preview of the restore (or, with opts.verify_only, the validation) `opts` describes.
// Refuses what the job would refuse before writing anything, with the same errors. Reads
// the catalog and the pieces' indexes only; `estimates` are left empty (the history room
// fills them).
Result<RestorePreview> preview_restore(const RestoreOptions& opts, catalog::Catalog& cat);

}  // namespace stripeback::engine
