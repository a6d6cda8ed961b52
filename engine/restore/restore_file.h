// A file being restored: what the job plans for it (its item, the pieces and extents that
// hold it, its chunks) and the steps every restored file takes, whatever the target's
// storage and however its pieces are read (restore_channel.h reads them through the
// pieces' indexes, restore_stream.h in order from removable media). A file is written
// under a temporary name beside its final place, verified as a whole, synced, given its
// attributes and only then renamed into place.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/pieces/channel_config.h"
#include "engine/pieces/change_map.h"
#include "engine/pieces/piece_audit.h"
#include "engine/pieces/piece_reader.h"
#include "engine/restore/path_remap.h"
#include "engine/restore/restore_journal.h"
#include "engine/monitor/stats.h"
#include "storage/async/file.h"
#include "storage/storage.h"

namespace stripeback::engine {

// Where a file's extents are: one entry per piece holding some of them.
struct RestorePart {
  const PieceReader* piece = nullptr;
  uint32_t file_id = 0;  // the file's id in that piece
};

// A file of a backup with a level takes what its newest backup does not hold from the
// backups it builds on (its chain), newest first.
struct RestoreLayer {
  uint64_t backup_id = 0;
  uint64_t size = 0;  // the file's size in that backup
  std::vector<RestorePart> parts;
};

struct RestoreItem {
  catalog::FileRecord file;
  uint64_t backup_id = 0;
  std::vector<RestorePart> parts;
  std::vector<RestoreLayer> older;  // the chain below `backup_id`, newest first
  // The change map of the file in `backup_id`: every restored unit is checked against it.
  // Null for files of plain full backups.
  std::shared_ptr<const UnitMap> units;
  // A file its backup holds whole whose digest map cannot be read (only the level 1s built
  // on it need the map): restored and checked frame by frame against the piece's index,
  // and the frames must cover the file from 0 to its size.
  bool map_lost = false;
};

struct PartExtent {
  const Extent* extent = nullptr;
  const RestorePart* part = nullptr;
  // The byte ranges (file offset, length) of the frame to write, when not all of it: the
  // units a newer backup of the chain does not hold, clipped to the file's size.
  std::vector<std::pair<uint64_t, uint32_t>> ranges;
};

struct DeltaFile;  // restore_delta.h

// One file being restored, shared by the channels restoring its chunks. `extents` and
// `chunks_total` are set before the channels start; the rest is guarded by `mu`.
struct FileState {
  const RestoreItem* item = nullptr;
  std::vector<PartExtent> extents;  // in file offset order, covering the file exactly
  size_t chunks_total = 0;
  // With a change map: the digest of each unit as restored (each written by one channel).
  std::vector<util::Digest> got;
  // A delta restore updates the existing file in place (restore_delta.h).
  DeltaFile* delta = nullptr;
  // A validation checks only some frames (frame_select.h): `extents` holds those.
  bool sampled = false;

  std::mutex mu;
  bool opened = false;
  bool failed = false;
  Error error;                     // the first failure
  size_t chunks_done = 0;
  std::unique_ptr<storage::Directory> dir;  // parent directory (null: the target itself)
  std::unique_ptr<storage::WriteFile> out;  // the temporary file
  std::string shown, name, temp;   // path as shown, final name, temporary name
  bool temp_made = false;          // the temporary exists (until renamed into place)
};

struct RestoreChunk {
  FileState* file = nullptr;
  size_t begin = 0, end = 0;  // extents [begin, end) of the file's merged extent list
};

struct RestoreContext {
  bool verify_only = false;  // validate: read and check every frame, write nothing
  std::chrono::steady_clock::time_point job_start{};  // for ChannelStats::start_s
  storage::Directory* root = nullptr;        // the target directory (null when validating)
  const storage::StorageCaps* caps = nullptr;  // of the target's storage
  bool force = false;
  bool set_owner = false;  // running as root
  std::vector<RestoreChunk>* chunks = nullptr;  // files largest first, chunks in file order
  std::atomic<size_t>* next = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  ChannelConfig config;
  RestoreJournal* journal = nullptr;  // null when validating
  const std::vector<PathRemap>* remaps = nullptr;  // where files go below root; null: none
  // When validating: where the headers of verified data frames go, for the piece audit.
  const std::map<const PieceReader*, std::unique_ptr<HeaderLog>>* header_logs = nullptr;
  JobProgress* progress = nullptr;  // live progress, or null
  // validate --max-duration: no chunk is begun after this.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// The steps every restored file takes, whatever the target's storage and however its
// pieces are read (call with f.mu held):
// Creates the file's temporary in its final directory (creating the directories on the
// way, never following a link) under a new random name, noted in the journal first, and
// reserves its size where the medium can (writes then land inside the file instead of
// extending it: an extending O_DIRECT write takes the inode lock exclusively).
Result<void> open_restore_file(const RestoreContext& ctx, FileState& f);
// Checks the whole-file digest of f.extents against the catalog's, sets the size, makes
// the file durable, gives it its attributes and renames it into place (never over an
// existing file unless forced), then syncs the directory where the medium can.
Result<void> finish_restore_file(const RestoreContext& ctx, FileState& f);
// After a failure: gives up the file and removes its temporary. True when removed.
bool abandon_restore_file(const RestoreContext& ctx, FileState& f);
// The attributes a restored file gets from its record (the owner with `set_owner`).
storage::Attrs restore_attrs(const catalog::FileRecord& f, bool set_owner);
// Records the file's first failure.
void fail_file(FileState& f, const Error& e);

// Creates the directory `d.path` (remapped) under the target (if missing) and gives it the
// recorded mode, mtime and, with `set_owner`, owner. Never follows symbolic links. A
// directory remapped onto the target itself leaves the target as it is.
Result<void> restore_dir_attributes(storage::Directory& root, const catalog::FileRecord& d,
                                    bool set_owner, const std::vector<PathRemap>& remaps);

}  // namespace stripeback::engine