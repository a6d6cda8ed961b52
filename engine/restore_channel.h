// One restore channel: restores files one after another, each with several frame reads
// and file writes in flight through the channel's own IoEngine and buffer pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/backup_channel.h"
#include "engine/piece_reader.h"
#include "engine/stats.h"

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

struct RestoreContext {
  int target_fd = -1;  // the target directory, opened O_DIRECTORY
  std::string target;
  bool force = false;
  bool set_owner = false;  // running as root
  std::vector<RestoreItem>* items = nullptr;  // largest first
  std::atomic<size_t>* next = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  ChannelConfig config;
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
