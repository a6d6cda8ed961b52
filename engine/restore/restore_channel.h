// One restore channel: restores chunks of files (runs of consecutive extents, up to
// kRestoreChunk bytes), several frame reads and file writes in flight through the channel's
// own IoLoop and buffer pool. Channels share the chunks of one file, so a large file is
// restored by all of them at once; whichever channel completes a file's last chunk verifies
// the whole file, syncs it, sets its attributes and renames it into place.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/monitor/stats.h"
#include "engine/restore/restore_chunks.h"
#include "engine/restore/restore_file.h"

namespace stripeback::engine {

struct RestoreOutcome {
  bool deadline_hit = false;  // chunks were left for the deadline
  ChannelStats stats;
  std::vector<Error> errors;
  uint64_t file_bytes = 0;
};

RestoreOutcome run_restore_channel(const RestoreContext& ctx, uint32_t channel);

}  // namespace stripeback::engine
