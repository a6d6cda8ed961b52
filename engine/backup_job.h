// A backup job: plans the sources, registers the backup in the catalog, runs N channels in
// parallel and records the outcome. The catalog shows the backup complete only after every
// piece is durable and recorded.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/backup_channel.h"
#include "engine/stats.h"
#include "stripeback/result.h"

namespace stripeback::engine {

struct BackupOptions {
  std::vector<std::string> sources;
  std::string destination;  // directory for the pieces (created if missing)
  std::string tag;
  uint32_t channels = kDefaultChannels;
  ChannelConfig channel;
  const std::atomic<bool>* cancel = nullptr;
};

struct BackupSummary {
  uint64_t backup_id = 0;
  std::string status;  // "complete" or "failed"
  std::string error;   // set when failed
  uint64_t files = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint32_t pieces = 0;
  double elapsed_s = 0;
  std::vector<ChannelStats> channels;
  std::vector<SkippedEntry> skipped;
  std::vector<std::string> warnings;

  std::string to_json() const;
  std::string to_text() const;
};

// Errors before anything is written (bad source, unusable destination) come back as the
// Result's error with code invalid_argument or not_found. Once the job has started, a
// failure is reported in the summary (status "failed") and recorded in the catalog.
Result<BackupSummary> run_backup(const BackupOptions& opts, catalog::Catalog& cat);

}  // namespace stripeback::engine
