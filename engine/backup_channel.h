// One backup channel: a thread that takes files from the work queue, reads them through
// its own IoEngine into its own buffer pool (several reads in flight at 1 MiB
// stripe-aligned offsets), frames each block and writes it to the channel's piece while
// further reads run. Shares nothing with other channels but the queue, the catalog and the
// cancel flag.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/planner.h"
#include "engine/stats.h"
#include "io/file.h"
#include "stripeback/result.h"

namespace stripeback::engine {

inline constexpr uint32_t kDefaultChannels = 2;

struct ChannelConfig {
  size_t buffers = 16;
  size_t buffer_size = 1 << 20;
  unsigned queue_depth = 64;
  io::Direct direct = io::Direct::yes;
};

struct BackupContext {
  uint64_t backup_id = 0;
  std::string dest_dir;
  std::string stamp;  // time stamp used in piece names
  WorkQueue* queue = nullptr;
  catalog::Catalog* catalog = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  // Set by the first channel that fails, so the others stop instead of filling the medium.
  std::atomic<bool>* abort = nullptr;
  ChannelConfig config;
};

struct ChannelOutcome {
  ChannelStats stats;
  std::vector<catalog::PieceRecord> pieces;  // recorded in the catalog, durable
  Result<void> status;
  std::vector<std::string> warnings;
};

// Runs the channel to completion on the calling thread.
ChannelOutcome run_backup_channel(const BackupContext& ctx, uint32_t channel);

}  // namespace stripeback::engine
