// The restore and validate jobs (restore_job.h) as named phases (util/phases.h) over one
// RestoreJob, the state they share. restore_job.cc lists the phases of each job and runs
// them; the phases are in the files named below, in the order they run. Each phase returns
// an error that ends the job as it is (nothing written after it); a file's own failures go
// to the summary and the job goes on. Internal to engine/restore/.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "engine/pieces/change_map.h"
#include "engine/pieces/key_wraps.h"
#include "engine/transform/crypto.h"
#include "engine/pieces/piece_audit.h"
#include "engine/restore/frame_select.h"
#include "engine/restore/restore_channel.h"
#include "engine/restore/restore_delta.h"
#include "engine/restore/restore_job.h"
#include "engine/restore/restore_journal.h"
#include "engine/restore/restore_preview.h"
#include "engine/restore/restore_stream.h"
#include "engine/wiring/backends.h"
#include "util/phases.h"

namespace stripeback::engine {

// A file chosen to restore, and the backup whose record of it was chosen.
struct Choice {
  const catalog::Backup* backup;
  const catalog::FileRecord* file;
};

// The state the phases of one restore or validation share. The phases fill it in order;
// the channels read what the phases before them set (RestoreContext points into it).
// Members are declared in the order the phases make them, so they are destroyed in the
// reverse order: the files, the journal and the target close before the pieces.
struct RestoreJob {
  RestoreJob(const RestoreOptions& o, catalog::Catalog& c)
      : opts(o), cat(c), cache(o.channel.direct, o.keys.get()) {
    cache.set_catalog_dir(cat.dir());
    // A rekey may have left the newest wrap of a piece's data key only in the catalog.
    if (o.keys) o.keys->set_catalog_wraps(catalog_wraps(cat));
  }
  // The reader's piece name, from the catalog's records ("" for a reader not of them).
  const std::string& piece_name(const PieceReader* r) const {
    static const std::string none;
    auto it = piece_names.find(r);
    return it == piece_names.end() ? none : it->second;
  }

  std::string_view phase;  // util::run_phases
  const RestoreOptions& opts;
  catalog::Catalog& cat;
  std::chrono::steady_clock::time_point start{};
  int64_t start_ns = 0;
  std::vector<catalog::Backup> backups;  // the catalog's
  std::map<uint64_t, const catalog::Backup*> by_id;
  RestoreSummary sum;
  std::vector<Choice> choices;        // the files to restore, with the backup of each
  std::optional<Place> target_place;  // none when validating
  std::vector<const catalog::FileRecord*> dirs;  // directories, given attributes last
  PieceCache cache;                   // every piece opened, with its index
  std::vector<RestoreItem> items;     // files read through their pieces' indexes
  std::set<uint64_t> used;            // backups files come from
  StreamPlan stream;                  // files whose pieces are on media read in order
  std::unique_ptr<storage::Directory> root;  // the target (a restore)
  std::unique_ptr<RestoreJournal> journal;   // this restore's (restore_journal.h)
  std::atomic<size_t> next{0};        // the next chunk a channel takes
  RestoreContext ctx;
  // A delta restore: the existing file of each item compared in place (null: restored
  // whole), and the items it finished (unchanged, or failed).
  std::vector<std::unique_ptr<DeltaFile>> deltas;
  std::vector<bool> done;
  std::map<const PieceReader*, std::string> piece_names;  // a validation's
  FrameFilter keep;                    // a validation's: the frames it checks
  std::vector<RestoreChunk> chunks;    // files largest first, chunks in file order
  std::vector<std::unique_ptr<FileState>> states;
  CheckHistory history{{}};            // a validation's: when each frame was last checked
  std::map<const PieceReader*, std::unique_ptr<HeaderLog>> header_logs;  // a validation's
  std::map<const PieceReader*, std::vector<uint64_t>> verified;  // frames, per piece
  uint32_t media_channels = 0;         // channels reading pieces in order
  uint32_t channels = 0;               // the most channels reading through indexes
  // A preview (restore_preview.h): the phases plan and stop; pieces read in order are not
  // opened.
  bool previewing = false;
  RestorePreview preview;
};

// restore_choose.cc: the options, the backups and files, the target or the paths.
Result<util::Next> check_options(RestoreJob& job);
Result<util::Next> choose_backups(RestoreJob& job);
Result<util::Next> check_target(RestoreJob& job);  // a restore
Result<util::Next> check_paths(RestoreJob& job);   // a validation

// restore_plan.cc: the pieces (and for a backup with a level, the chain) of every file, or
// the stream that reads it from removable media.
Result<util::Next> plan_files(RestoreJob& job);

// restore_run.cc: the target made, the channels set up and run, the target finished.
Result<util::Next> open_target(RestoreJob& job);       // a restore
Result<util::Next> set_up_channels(RestoreJob& job);
// restore_auto_channels.cc: how many channels (--channels auto chooses).
Result<util::Next> choose_restore_channels(RestoreJob& job);
Result<util::Next> compare_in_place(RestoreJob& job);  // a restore (--delta)
Result<util::Next> chunk_files(RestoreJob& job);
Result<util::Next> run_channels(RestoreJob& job);
Result<util::Next> finish_target(RestoreJob& job);     // a restore
Result<util::Next> summarize(RestoreJob& job);

// validate_phases.cc: which frames a validation checks, the piece audit and the record.
Result<util::Next> select_frames(RestoreJob& job);
Result<util::Next> oldest_first(RestoreJob& job);
Result<util::Next> audit_pieces(RestoreJob& job);
Result<util::Next> record_checks(RestoreJob& job);

// restore_preview.cc: what the plan would read and write, instead of running it.
Result<util::Next> tally_preview(RestoreJob& job);

}  // namespace stripeback::engine
