// The state a backup job's phases share, and the phases (util/phases.h). Internal to
// engine/backup/: run_backup() (backup_job.cc) is the list of phases in order; each phase
// reads what the phases before it filled in and fills in its own part of BackupJob.
//
// A phase that fails returns the error run_backup() gives back; only the phases up to
// `begin` may (nothing is in the catalog before it). From `run channels` on, a failure is
// the summary's status, and a phase says Next::stop when the job ends without the rest.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catalog/catalog.h"
#include "engine/backup/backup_channel.h"
#include "engine/backup/backup_job.h"
#include "engine/backup/planner.h"
#include "engine/backup/resume.h"
#include "engine/pieces/change_map.h"
#include "engine/pieces/leftovers.h"
#include "engine/transform/page_check.h"
#include "engine/wiring/backends.h"
#include "stripeback/result.h"
#include "util/phases.h"

namespace stripeback::engine::backup_internal {

// Pieces recorded in the catalog as soon as they were durable, from the channels' threads.
struct RecordedPieces {
  std::mutex mu;
  std::set<std::string> names;
  std::vector<Error> errors;  // of the pieces that could not be recorded
};

struct BackupJob {
  BackupJob(const BackupOptions& o, catalog::Catalog& c) : opts(o), cat(c) {}

  const BackupOptions& opts;
  catalog::Catalog& cat;
  std::string_view phase;  // the phase running

  // check, plan
  ExcludeRules rules;  // BackupOptions::excludes
  Plan plan;
  size_t planned = 0;  // files planned, those --optimize takes out included
  std::string dest;    // as the catalog records it (a normal path unless removable media)
  std::unique_ptr<PageValidator> validator;  // --check-logical

  // open targets
  std::optional<MediaDestination> media;
  std::vector<PieceTarget> targets;  // one for all channels, or one drive each

  // resume
  std::optional<ResumePoint> resumed;
  std::vector<PieceFile> leftovers;  // earlier jobs' pieces that no backup uses

  // parents
  std::map<std::string, UnitMap> parents;
  std::vector<catalog::FileRecord> held;  // --optimize: files not read, held elsewhere
  std::vector<std::string> parent_warnings;

  // channels: the count the job runs (BackupOptions::channels, or chosen for auto)
  uint32_t channels = 0;

  // sets
  std::vector<WorkSet> sets;
  std::vector<UnitDone> kept_units;  // --resume: finished before the interruption
  uint32_t sections = 0;             // units that are sections of larger files
  BufferChoice buffers;

  // begin
  std::chrono::steady_clock::time_point start;
  catalog::BackupBegin begin;
  uint64_t id = 0;
  std::vector<std::string> leftover_notes;  // the interrupted job's pieces not removed
  // --lock-days: the lock the pieces are written with (begin + days); the end moves it.
  std::optional<storage::Retention> lock;

  // run channels
  ChannelConfig channel;  // as the channels ran it
  std::string stamp;      // in this job's piece names
  std::atomic<bool> abort{false};
  RecordedPieces recorded;
  std::vector<ChannelOutcome> outcomes;

  // gather, files, judge; then what is recorded
  BackupSummary sum;
  std::vector<catalog::PieceRecord> pieces;
  std::vector<PieceFile> unfinished;  // pieces the channels gave up
  std::vector<catalog::FileRecord> files;
  size_t read_files = 0;  // files read by this job (`files` less those --optimize held)
  std::vector<std::pair<std::string, UnitMap>> media_maps;
  catalog::BackupStatus status = catalog::BackupStatus::complete;
  bool corruption_failed = false;  // failed by --max-corrupt
  catalog::BackupStatus status_unless_corrupt = catalog::BackupStatus::complete;
  // alarm: what the channels counted of each file read (recorded before the end)
  catalog::FileProfiles profile;
};

using util::Next;

// job_check.cc
Result<Next> check_options(BackupJob& job);
Result<Next> plan_sources(BackupJob& job);
// job_targets.cc
Result<Next> open_targets(BackupJob& job);
Result<Next> find_resume(BackupJob& job);
Result<Next> begin_job(BackupJob& job);
// The lock `l` gives from `from_ns` (wall clock) on; real_now_ns(): the system clock,
// never a test's fake one (the store compares lock dates with its own).
storage::Retention lock_after(const BackupOptions::Lock& l, int64_t from_ns);
int64_t real_now_ns();
// job_since.cc
Result<Next> skip_backed_up(BackupJob& job);
// job_parents.cc
Result<Next> choose_parents(BackupJob& job);
// job_auto_channels.cc
Result<Next> choose_job_channels(BackupJob& job);
// job_sets.cc
Result<Next> make_job_sets(BackupJob& job);
// job_channels.cc
Result<Next> run_channels(BackupJob& job);
// job_summary.cc
Result<Next> gather_outcomes(BackupJob& job);
Result<Next> assemble_records(BackupJob& job);
Result<Next> judge_outcome(BackupJob& job);
// job_alarm.cc
Result<Next> sound_alarm(BackupJob& job);
// job_record.cc
Result<Next> record_page_checks(BackupJob& job);
Result<Next> record_backup(BackupJob& job);
Result<Next> end_hot_mode(BackupJob& job);
Result<Next> clean_up(BackupJob& job);
Result<Next> extend_locks(BackupJob& job);
Result<Next> end_job(BackupJob& job);
Result<Next> write_autobackup(BackupJob& job);

// Removes pieces of the running backup that no restorable backup will use; a warning when
// some could not be removed. For a failed backup, once every piece the channels know of
// is gone, also any other piece named with `prefix`, this job's own (backup id, catalog id
// and time stamp): a piece whose creation failed half-way.
std::optional<std::string> remove_own_pieces(std::vector<PieceFile> pieces, const std::string& dest,
                                             const std::string& prefix, const std::string& whose);

}  // namespace stripeback::engine::backup_internal
