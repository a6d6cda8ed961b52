// One restore channel: restores chunks of files (runs of consecutive extents, up to
// kRestoreChunk bytes), several frame reads and file writes in flight through the channel's
// own IoEngine and buffer pool. Channels share the chunks of one file, so a large file is
// restored by all of them at once; whichever channel completes a file's last chunk verifies
// the whole file, syncs it, sets its attributes and renames it into place.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/backup_channel.h"
#include "engine/piece_audit.h"
#include "engine/piece_reader.h"
#include "engine/restore_journal.h"
#include "engine/stats.h"
#include "io/file.h"

namespace stripeback::engine {

// Where a file's extents are: one entry per piece holding some of them.
struct RestorePart {
  const PieceReader* piece = nullptr;
  uint32_t file_id = 0;  // the file's id in that piece
};

struct RestoreItem {
  catalog::FileRecord file;
  uint64_t backup_id = 0;
  std::vector<RestorePart> parts;
};

inline constexpr uint64_t kRestoreChunk = 64u << 20;

struct PartExtent {
  const Extent* extent = nullptr;
  const RestorePart* part = nullptr;
};

// One file being restored, shared by the channels restoring its chunks. `extents` and
// `chunks_total` are set before the channels start; the rest is guarded by `mu`.
struct FileState {
  const RestoreItem* item = nullptr;
  std::vector<PartExtent> extents;  // in file offset order, covering the file exactly
  size_t chunks_total = 0;

  std::mutex mu;
  bool opened = false;
  bool failed = false;
  Error error;                     // the first failure
  size_t chunks_done = 0;
  io::UniqueFd dir, out;           // parent directory, temporary file
  std::string shown, name, temp;   // path as shown, final name, temporary name
  bool temp_made = false;          // the temporary exists (until renamed into place)
  bool direct = false;
};

struct RestoreChunk {
  FileState* file = nullptr;
  size_t begin = 0, end = 0;  // extents [begin, end) of the file's merged extent list
};

// Merges the extents of `item` from all its pieces, checks each piece's record of the file
// and that together they cover it exactly, and cuts them into chunks. `max_frame` is the
// largest frame the channel buffers hold.
Result<std::unique_ptr<FileState>> make_file_state(const RestoreItem& item, size_t max_frame,
                                                   std::vector<RestoreChunk>& chunks);

struct RestoreContext {
  bool verify_only = false;  // validate: read and check every frame, write nothing
  int target_fd = -1;  // the target directory, opened O_DIRECTORY
  std::string target;
  bool force = false;
  bool set_owner = false;  // running as root
  std::vector<RestoreChunk>* chunks = nullptr;  // files largest first, chunks in file order
  std::atomic<size_t>* next = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  ChannelConfig config;
  RestoreJournal* journal = nullptr;  // null when validating
  // When validating: where the headers of verified data frames go, for the piece audit.
  const std::map<const PieceReader*, std::unique_ptr<HeaderLog>>* header_logs = nullptr;
};

struct RestoreOutcome {
  ChannelStats stats;
  std::vector<std::string> errors;
  uint64_t file_bytes = 0;
};

RestoreOutcome run_restore_channel(const RestoreContext& ctx, uint32_t channel);

// Creates the directory `d.path` under the target (if missing) and gives it the recorded
// mode, mtime and, with `set_owner`, owner. Never follows symbolic links.
Result<void> restore_dir_attributes(int target_fd, const std::string& shown_prefix,
                                    const catalog::FileRecord& d, bool set_owner);

}  // namespace stripeback::engine
