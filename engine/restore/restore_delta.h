// Delta restore (restore --delta): brings existing files of the target back to a backup's
// version by writing only the blocks that differ.
//
// Before the restore proper, the channels read every existing target file and compare each
// block with the digest the backup holds for it: the change units of a backup with a level
// (its digest map), the frames of a plain backup. The old bytes of every block that
// differs, and of any tail the backup's size cuts off, are saved in the file's undo log
// (delta_undo.h), noted in the restore journal first. The restore proper then writes only
// the blocks that differ, into the file renamed to a temporary name, verifies the whole
// file and renames it back (finish_restore_file), then drops the undo log. A file with no
// block that differs gets its attributes only; one where most blocks differ, and one that
// is missing, is restored whole.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/restore/delta_undo.h"
#include "engine/restore/restore_channel.h"
#include "engine/restore/restore_job.h"
#include "util/digest.h"

namespace stripeback::engine {

struct DeltaFile {
  struct Block {
    uint64_t off = 0;
    uint32_t len = 0;
    util::Digest want{};
    bool tail = false;  // beyond the backup's size: saved, never compared or written
  };
  const RestoreItem* item = nullptr;
  std::vector<std::string> dir_comps;  // the file's directory below the target
  std::string name, shown;
  OldFile old;
  uint32_t unit = 0;          // the change unit compared by (0: the backup's frames)
  std::vector<Block> blocks;  // in offset order; the backup's blocks, then the old tail
  std::vector<uint8_t> differs;  // per block; each written by the one channel comparing it
  std::unique_ptr<storage::Directory> dir;  // null: the target itself
  std::unique_ptr<storage::ReadFile> in;

  std::mutex mu;
  bool failed = false;
  Error error;
  std::unique_ptr<UndoLog> undo;  // made at the first block that differs
  std::string temp, undo_name;
  std::atomic<uint64_t> bytes_compared{0};  // by every channel comparing a chunk of it
  // The file's link count when it has other names (hard links): never compared or updated
  // in place, it is replaced by a whole copy, so its other names keep their bytes,
  // mode and times. 0 otherwise.
  uint32_t linked = 0;
};

struct DeltaChunk {
  DeltaFile* file = nullptr;
  size_t begin = 0, end = 0;  // blocks
};


// The file of `item` in the target (where `remaps` put it), when it exists as a regular
// file: its DeltaFile with its blocks and compare chunks. Null when it is missing (it is
// restored whole); an error when something else is in its place.
Result<std::unique_ptr<DeltaFile>> open_delta_file(storage::Directory& root,
                                                   const RestoreItem& item,
                                                   const ChannelConfig& config,
                                                   const std::vector<PathRemap>& remaps,
                                                   std::vector<DeltaChunk>& chunks);

// Compares the chunks' blocks, channels taking chunks from `next` (one call per channel
// thread). Errors are recorded on their file.
void run_delta_compare(const RestoreContext& ctx, std::vector<DeltaChunk>& chunks,
                       std::atomic<size_t>& next, size_t buffer_size);

// After the compare: decides each file's fate (unchanged, updated or restored whole), makes
// the undo logs durable and gives unchanged files their attributes. False when the file is
// done (unchanged, or failed with the error in *err, whose message is then not empty); true
// when it goes on to the restore proper, with *whole set when it is restored whole.
bool settle_delta_file(const RestoreContext& ctx, DeltaFile& f, bool* whole, Error* err,
                       DeltaSummary& totals);

// The block ranges (offset, length) of `f` that differ, clipped to the backup's size.
std::vector<std::pair<uint64_t, uint64_t>> differing_ranges(const DeltaFile& f);

}  // namespace stripeback::engine
