// One backup channel: a thread that takes backup sets from the work queue and copies their
// units (files or file sections) into the channel's own pieces. It reads through its own
// IoLoop into its own buffer pool, several reads in flight at stripe-aligned offsets,
// from up to `max_open_files` units at once (multiplexing: their blocks interleave in one
// piece), frames each block and writes it while further reads run. It starts a new piece
// when the next frame would pass the piece size limit, takes read tokens from the rate
// limiters, and stops issuing reads at the job's deadline.
//
// Shares nothing with other channels but the queue, the job's token bucket and the flags.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/pieces/change_map.h"
#include "engine/pieces/channel_config.h"
#include "engine/transform/page_check.h"
#include "engine/pieces/leftovers.h"
#include "engine/backup/planner.h"
#include "engine/monitor/stats.h"
#include "engine/monitor/progress.h"
#include "engine/backup/throttle.h"
#include "storage/async/file.h"
#include "storage/storage.h"
#include "stripeback/result.h"
#include "util/digest.h"

namespace stripeback::engine {

class Keyring;

// Where a channel's pieces go: a directory of some storage, or a drive of removable media.
struct PieceTarget {
  storage::Storage* storage = nullptr;
  storage::Location dir;
};

struct BackupContext {
  uint64_t backup_id = 0;
  uint64_t catalog_id = 0;  // identity of the catalog, in piece names and headers
  std::string stamp;  // time stamp used in piece names (make_piece_stamp())
  WorkQueue* queue = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  // Set by the first channel that fails, so the others stop instead of filling the medium.
  std::atomic<bool>* abort = nullptr;
  TokenBucket* job_bucket = nullptr;  // shared by all channels; may be null
  std::chrono::steady_clock::time_point job_start{};  // for ChannelStats::start_s
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::atomic<uint64_t>* bytes_done = nullptr;  // job progress, for pacing
  JobProgress* progress = nullptr;              // live progress, or null
  Keyring* keys = nullptr;  // set: pieces are encrypted with keys from here
  // Set: every piece is created locked until then (its trailer says so).
  std::optional<storage::Retention> lock;
  ChannelConfig config;
  // Backups with a level (docs/incremental.md): every block is hashed per change unit of
  // this size, and only units whose digest differs from the parent's map are written. 0: a
  // plain full backup (no maps).
  uint32_t change_unit = 0;
  // The parent's change map of each file that has one, by path (null: none has).
  const std::map<std::string, UnitMap>* parents = nullptr;
  // Channel N writes its pieces to targets[(N - 1) % targets.size()]: one directory for
  // all, or one drive each.
  std::vector<PieceTarget> targets;
  // --check-logical (page_check.h): every page of the files it checks is checked as read.
  const PageValidator* validator = nullptr;
  // backup --validate: read and check everything, write nothing (no piece, no target).
  bool validate_only = false;
  // Called on the channel's thread as soon as a piece is durable, before the channel goes
  // on (the job records it in the catalog: a resume keeps it). May be empty.
  std::function<void(const catalog::PieceRecord&)> piece_durable;
};

// A page --check-logical found corrupt: as the catalog records it.
using CorruptBlock = catalog::CorruptPage;

// What the page checks of a channel did.
struct PageStats {
  uint64_t checked = 0;  // pages checked
  uint64_t retried = 0;  // pages read again after failing a check
  uint64_t recovered = 0;  // of those, valid when read again (a hot backup's page being written)
  uint64_t newer = 0;    // failing, but changed after the backup began: not reported
  std::vector<CorruptBlock> corrupt;
};

struct UnitExtent {
  uint64_t offset = 0;
  uint32_t length = 0;
  util::Digest digest{};
};

// A unit copied completely into durable pieces.
struct UnitDone {
  const WorkUnit* unit = nullptr;
  uint64_t size = 0;  // file size seen when it was opened
  uint32_t mode = 0, uid = 0, gid = 0;
  int64_t mtime_ns = 0;
  std::vector<UnitExtent> extents;
  // With a change unit: the digest of each unit of the range read, from unit first_unit.
  uint64_t first_unit = 0;
  std::vector<util::Digest> unit_digests;
  uint64_t units_written = 0;
  std::vector<std::string> pieces;
  // The file changed while this unit was read (its size or mtime differ from when it was
  // opened, or, for a section, from the plan): the copy may mix old and new contents.
  bool changed = false;
  // What the file profile counts of this unit (catalog::FileProfile): pages checked and
  // failing on every read, and the raw and stored bytes of the frames compressed.
  uint64_t pages_checked = 0, pages_failed = 0;
  uint64_t bytes_raw = 0, bytes_stored = 0;
};

struct ChannelOutcome {
  ChannelStats stats;
  std::vector<catalog::PieceRecord> pieces;  // finished and durable
  // Pieces given up after a failure, closed but still on the medium (with the end of the
  // writes known to have completed): the job removes them with the finished ones. Pieces
  // on media without directories are not files and are not listed.
  std::vector<PieceFile> unfinished;
  std::vector<UnitDone> units;
  Result<void> status;
  bool deadline_hit = false;
  std::vector<std::string> warnings;
  PageStats pages;
};

// Runs the channel to completion on the calling thread.
ChannelOutcome run_backup_channel(const BackupContext& ctx, uint32_t channel);

}  // namespace stripeback::engine
