// Tape destinations of a backup: one drive per channel, spare volumes for end of medium,
// and where each volume's free space starts (from the catalog: tgt cannot say).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/tape_sink.h"
#include "stripeback/result.h"

namespace stripeback::engine {

inline constexpr uint32_t kDefaultTapeBlockSize = 256 * 1024;

struct TapeOptions {
  std::vector<std::string> drives;   // tape:iscsi://... or tape:/dev/sgN, one channel each
  std::vector<std::string> volumes;  // spare volumes (drive URLs) taken at end of medium
  uint32_t block_size = kDefaultTapeBlockSize;
  size_t buffers = 8;                // tape I/O helper ring, per drive
  bool sync_io = false;              // write on the channel's thread (for comparison)
  std::chrono::milliseconds ready_wait{std::chrono::seconds(10)};
};

struct TapeDestination {
  std::unique_ptr<tape::VolumeList> spares;
  std::vector<std::unique_ptr<TapeChannelSink>> sinks;  // sinks[c] for channel c + 1
};

// The next free tape file of each volume the catalog knows (after the last piece recorded
// on it); volumes it does not know start at file 1, right after the label.
tape::FirstFreeFile first_free_files(const catalog::Catalog& cat);

// Opens every drive, waits for it to be ready, checks the block size against its READ BLOCK
// LIMITS and its label, and starts its I/O helper. Fails before anything is written:
// invalid_argument for a bad block size or an unlabelled tape (the message names both
// numbers or the fix), busy for a drive that stays not ready.
Result<TapeDestination> open_tape_destination(const TapeOptions& opts,
                                              const catalog::Catalog& cat);

// Reads the piece `p` of backup `backup_id` from tape into the file `path` (created, never
// replacing anything). Goes straight to each segment's tape file. Each volume is looked for
// in the drive recorded for it, or, when `drives` is not empty, in whichever of those
// drives holds it (by its label). Returns bytes read from tape.
Result<uint64_t> stage_tape_piece(const catalog::PieceRecord& p, uint64_t backup_id,
                                  const std::string& path,
                                  const std::vector<std::string>& drives = {});

}  // namespace stripeback::engine
