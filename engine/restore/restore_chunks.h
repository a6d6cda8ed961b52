// Planning a file's restore: its extents from every piece (and, for a backup with a level,
// from the backups it builds on) merged, checked against the catalog and cut into chunks
// the channels share.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/restore/restore_file.h"

namespace stripeback::engine {

inline constexpr uint64_t kRestoreChunk = 64u << 20;

// Merges the extents of `item` from all its pieces, checks each piece's record of the file
// and that together they cover it exactly, and cuts them into chunks. `max_frame` is the
// largest frame the channel buffers hold. With `delta`, only the blocks that differ in the
// existing file are written. With `keep` (a validation of some frames), only the data frames
// it keeps are read; the units of the others count as the map has them.
using FrameFilter = std::function<bool(const RestorePart&, const Extent&)>;
Result<std::unique_ptr<FileState>> make_file_state(const RestoreItem& item, size_t max_frame,
                                                   std::vector<RestoreChunk>& chunks,
                                                   DeltaFile* delta = nullptr,
                                                   const FrameFilter* keep = nullptr);

}  // namespace stripeback::engine
