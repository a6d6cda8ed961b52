// A restore job: picks from the catalog the backed-up files to bring back, loads the index
// of every piece that holds them, and restores the files in parallel channels. Each file is
// written under a temporary name beside its final place, verified frame by frame and as a
// whole, synced, given its size, mode, owner and mtime, and only then renamed into place.
// Nothing is created outside the target directory and nothing is overwritten unless forced.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/pieces/channel_config.h"
#include "engine/pieces/target_paths.h"
#include "engine/transform/crypto.h"
#include "engine/restore/frame_select.h"
#include "engine/restore/path_remap.h"
#include "engine/monitor/stats.h"
#include "stripeback/result.h"

namespace stripeback::engine {

struct RestoreOptions {
  std::string target;                // files go to target + original absolute path
  std::optional<uint64_t> backup_id;  // restore from this backup only
  std::optional<std::string> tag;     // or from the newest complete backup with this tag
  std::vector<std::string> paths;     // limit to these original files or directories
  // Files at or below a remap's `from` go to its `to` below the target (path_remap.h).
  std::vector<PathRemap> remaps;
  uint32_t channels = kDefaultChannels;
  // Choose the count for the pieces' medium instead (engine/tuning/auto_channels.h).
  bool auto_channels = false;
  bool force = false;                 // replace existing files
  // Update existing files in place, writing only the blocks that differ (restore_delta.h).
  bool delta = false;
  bool verify_only = false;           // validate: check every frame, write nothing
  // validate: which frames (all by default); the checked ones are recorded in the catalog.
  FrameSelection select;
  ChannelConfig channel;
  std::shared_ptr<Keyring> keys;  // opens encrypted pieces (engine/transform/crypto.h)
  const std::atomic<bool>* cancel = nullptr;
  // Live progress (progress.h), or null: given the channels and the total before they start.
  JobProgress* progress = nullptr;
  // Pieces on removable media are read in order, straight from the medium, one channel
  // per drive. Drives to look for the volumes in (by label); empty: the drives recorded in
  // the catalog.
  std::vector<std::string> media_drives;
  // When the newest copy of a file is expired or fails its checks, restore the next newest
  // copy and say so (RestoreSummary::fallbacks); off: such a file fails. Not with backup_id.
  bool fallback = true;
  // Copies not to use: path -> backups (a fallback's second pass passes over the failed ones).
  std::map<std::string, std::set<uint64_t>> skip;
};

struct FailedFile {
  std::string path;
  uint64_t backup_id = 0;  // the copy that failed
  std::string error;       // as in RestoreSummary::errors
};

// A file restored from an older copy than the newest (RestoreOptions::fallback).
struct Fallback {
  std::string file;
  uint64_t from_backup = 0;  // the newest copy, not used
  uint64_t used_backup = 0;  // where the file came from
  std::string reason;        // why the newest copy was not used
};

// What a delta restore (restore_delta.h) found and did.
struct DeltaSummary {
  bool used = false;         // the restore was a delta restore
  uint64_t files = 0;        // existing files compared
  uint64_t unchanged = 0;    // found equal: attributes only
  uint64_t updated = 0;      // updated in place by the blocks that differ
  uint64_t whole = 0;        // existing files restored whole (most blocks differed)
  uint64_t bytes_compared = 0;  // read from the target
  uint64_t bytes_differing = 0;
  uint64_t undo_bytes = 0;   // old bytes saved in undo logs
  double compare_s = 0;
};

struct RestoreSummary {
  bool verify_only = false;
  std::string status;  // "complete" or "failed"
  std::vector<std::string> errors;
  std::vector<Errc> error_codes;  // the kind of each of errors, in the same order
  std::vector<std::string> warnings;  // e.g. leftovers of a killed restore removed
  uint64_t files = 0;
  uint64_t bytes = 0;           // file bytes restored
  uint64_t piece_bytes_read = 0;
  uint64_t media_bytes_read = 0;          // read from removable media
  std::vector<std::string> media_pieces;  // pieces read from removable media, in order
  double elapsed_s = 0;
  std::vector<uint64_t> backups_used;
  std::vector<Fallback> fallbacks;  // files restored from an older copy, and why
  std::vector<FailedFile> failed_files;  // files not restored (their errors are in errors)
  DeltaSummary delta;
  std::vector<ChannelStats> channels;
  Verdict verdict;  // what bounded the job (stats.h)
  // validate: which frames were checked (frame_select.h), and what the catalog now records.
  std::string check_mode;       // FrameSelection::mode()
  uint64_t frames_total = 0;    // data frames of the files validated
  uint64_t frames_selected = 0; // of those, in the sample or part
  uint64_t frames_checked = 0;  // read and verified
  bool deadline_hit = false;    // --max-duration ended the run with frames left
  bool pieces_audited = false;  // every piece was walked whole (full validations only)
  std::vector<catalog::FrameCheck> frame_checks;  // one per backup, as recorded
  // The channels the job ran at most, and with --channels auto why that many (else empty).
  uint32_t channels_chosen = 0;
  std::string channels_reason;

  // The kind of the first failure (no_space, corrupt, wrong_key, ...), io when none failed:
  // what a caller that maps failures to its own codes goes by.
  Errc error_code() const { return error_codes.empty() ? Errc::io : error_codes.front(); }
  // What the channels wrote (a delta restore: only the blocks that differ), not `bytes`.
  uint64_t bytes_written() const {
    uint64_t n = 0;
    for (const auto& c : channels) n += c.bytes_written;
    return n;
  }
  // Records a failure with its kind.
  void add_error(const Error& e) {
    errors.push_back(e.what);
    error_codes.push_back(e.code);
  }
};

// Errors found before anything is written (nothing matches, a target exists without
// force, an unusable backup id, an unsafe path, an encrypted piece without a key or with
// the wrong one) come back as the Result's error (invalid_argument, not_found, exists or
// wrong_key). Failures while restoring are in the summary.
// A validation records in `cat` what it checked (a FrameCheck per backup).
Result<RestoreSummary> run_restore(const RestoreOptions& opts, catalog::Catalog& cat);


}  // namespace stripeback::engine
