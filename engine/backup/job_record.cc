// The backup's outcome in the catalog, in the order that keeps it true at every moment: the
// page checks, then the pieces, the files and the end record (a reader sees the backup
// complete or partial only when all it names is there), the pieces of a failed backup
// removed before its end, and last the catalog's copy beside the pieces.
#include <algorithm>
#include <set>

#include "engine/backup/backup_job_state.h"
#include "engine/format/piece_name.h"
#include "engine/media/catalog_autobackup.h"
#include "storage/registry.h"
#include "util/clock.h"
#include "util/crash_point.h"
#include "util/option_words.h"

namespace stripeback::engine::backup_internal {

std::optional<std::string> remove_own_pieces(std::vector<PieceFile> pieces, const std::string& dest,
                                             const std::string& prefix, const std::string& whose) {
  std::sort(pieces.begin(), pieces.end(),
            [](const PieceFile& a, const PieceFile& b) { return a.name < b.name; });
  Removal r = remove_pieces(pieces);
  if (r.remaining.empty() && !prefix.empty()) {
    Removal more = remove_pieces(pieces_with_prefix(dest, prefix));
    more.removed += r.removed;
    r = std::move(more);
  }
  auto place = place_of(dest);
  if (r.removed > 0 && place && place->storage->caps().dir_sync)
    (void)place->storage->sync_dir(place->at);
  if (r.remaining.empty()) return std::nullopt;
  // A file system with directory sync is local: it answers stat even when it refuses
  // removal, and the size there counts preallocated space. Another may not answer at all
  // (a server gone): keep the bytes written.
  if (place && place->storage->caps().dir_sync)
    for (auto& p : r.remaining)
      if (auto st = place->storage->stat(place->at.join(p.name), true)) p.bytes = st->size;
  return unremoved_warning(r, whose, dest);
}

namespace {

PieceFile file_of(const catalog::PieceRecord& p) { return {p.location, p.name, p.size}; }

bool failed(const BackupJob& job) { return job.status == catalog::BackupStatus::failed; }

// The backup fails with `e`.
void fail_with(BackupJob& job, const Error& e) {
  job.sum.error = e.what;
  job.sum.error_code = e.code;
  job.status = catalog::BackupStatus::failed;
}

// A partial backup: pieces that hold no completed file (the deadline cut their files
// short) are of no use.
void drop_unused_pieces(BackupJob& job) {
  std::set<std::string> used;
  for (const auto& f : job.files) used.insert(f.pieces.begin(), f.pieces.end());
  std::vector<catalog::PieceRecord> kept;
  std::vector<PieceFile> unused;
  for (auto& p : job.pieces) {
    // A piece already recorded stays: the end record counts every recorded piece.
    if (used.count(p.name) || job.recorded.names.count(p.name))
      kept.push_back(std::move(p));
    else if (!p.media)
      unused.push_back(file_of(p));
  }
  if (auto w = remove_own_pieces(unused, job.dest, "", "holding no completely backed-up file"))
    job.sum.warnings.push_back(*w);
  job.pieces = std::move(kept);
  job.sum.pieces = static_cast<uint32_t>(job.pieces.size());
}

// Pieces not recorded yet (those recorded when they became durable stay as they are), then
// the files and the directories walked.
void record_pieces_and_files(BackupJob& job) {
  for (const auto& p : job.pieces)
    if (job.recorded.names.count(p.name))
      continue;  // recorded when it became durable
    else if (auto r = job.cat.add_piece(job.id, p, {}); !r && job.sum.error.empty())
      fail_with(job, r.error());
  util::crash_point("backup-pieces-recorded");
  if (failed(job)) return;
  for (const auto& d : job.plan.dirs)
    job.files.push_back({d.path, 0, d.mode, d.mtime_ns, d.uid, d.gid, {}, {}});
  if (auto r = job.cat.add_files(job.id, job.files); !r) fail_with(job, r.error());
  util::crash_point("backup-files-recorded");
}

}  // namespace

Result<Next> record_page_checks(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  BackupSummary& sum = job.sum;
  // The page checks go to the catalog (list --corrupt): complete when every planned file was
  // read through, whatever was found in it.
  if (job.validator) {
    catalog::PageCheck pc;
    pc.time_ns = job.begin.start_time_ns;
    pc.backup_id = job.id;
    pc.format = job.validator->name();
    pc.complete = job.read_files == job.plan.files.size() &&
                  (!failed(job) || job.corruption_failed) && !(opts.cancel && opts.cancel->load());
    pc.sources = job.begin.sources;
    pc.pages_checked = sum.pages.checked;
    pc.corrupt_total = sum.pages.corrupt.size();
    pc.corrupt = sum.pages.corrupt;
    if (auto r = job.cat.add_page_check(pc); !r)
      sum.warnings.push_back("the page checks were not recorded in the catalog: " + r.error().what);
  }
  if (!opts.validate_only) return Next::go_on;
  // Nothing was written; the catalog holds only the page checks: the summary is the result.
  sum.status = failed(job) ? "failed" : "complete";
  if (job.status == catalog::BackupStatus::partial) sum.status = "partial";
  return Next::stop;
}

Result<Next> record_backup(BackupJob& job) {
  if (job.status == catalog::BackupStatus::partial) drop_unused_pieces(job);
  // A level backup on removable media keeps its maps with the catalog before it is
  // recorded: a later level 1 reads them there instead of mounting the volumes.
  if (!failed(job) && !job.media_maps.empty())
    if (auto r = save_media_maps(job.cat.dir(), job.id, job.media_maps, job.opts.keys.get()); !r)
      fail_with(job, r.error());
  // Record pieces, then files, then the end: a reader sees the backup complete (or
  // partial) only when all it names is there. A failed backup keeps nothing.
  if (!failed(job) && !job.recorded.errors.empty()) {
    const Error& e = job.recorded.errors.front();
    job.sum.error = "a piece could not be recorded in the catalog: " + e.what;
    job.sum.error_code = e.code;
    job.status = catalog::BackupStatus::failed;
  }
  if (!failed(job)) record_pieces_and_files(job);
  // The file profiles before the end, for the next backup's alarm; without them this
  // backup is only not compared with, so a failure is a warning.
  if (!failed(job) && !job.profile.files.empty())
    if (auto r = job.cat.add_file_profiles(job.profile); !r)
      job.sum.warnings.push_back("the file profiles were not recorded in the catalog: " +
                                 r.error().what);
  // A hot backup's record before its end: a reader that sees it complete sees what it needs.
  if (!failed(job) && job.sum.hot)
    if (auto r = job.cat.add_hot(*job.sum.hot); !r) fail_with(job, r.error());
  return Next::go_on;
}

Result<Next> end_hot_mode(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  if (!opts.hot || opts.validate_only) return Next::go_on;
  catalog::HotBackup hot;
  if (opts.end_hot) {
    auto r = opts.end_hot(job.status == catalog::BackupStatus::complete, hot);
    if (!r && !failed(job)) fail_with(job, r.error());
  }
  hot.backup_id = job.id;
  hot.fuzzy = job.sum.fuzzy_files;
  job.sum.hot = std::move(hot);
  return Next::go_on;
}

Result<Next> clean_up(BackupJob& job) {
  if (!failed(job)) return Next::go_on;
  BackupSummary& sum = job.sum;
  if (job.resumed) {
    // A resume that fails leaves the backup interrupted: what is durable stays for the next
    // resume, and only the pieces this job did not finish go.
    if (auto w = remove_own_pieces(job.unfinished, job.dest, "", "this job did not finish"))
      sum.warnings.push_back(*w);
    sum.warnings.push_back("backup " + std::to_string(job.id) +
                           " stays interrupted: run the "
                           "same backup with " +
                           util::option_value_word("resume", std::to_string(job.id)) + " again");
    sum.status = "failed";
    sum.pieces = 0;
    sum.files = 0;
    return Next::stop;
  }
  if (!job.opts.media) {
    // Nothing of a failed backup is usable: its pieces go, or a warning says where they are.
    std::vector<PieceFile> own;
    for (const auto& p : job.pieces) own.push_back(file_of(p));
    own.insert(own.end(), job.unfinished.begin(), job.unfinished.end());
    const std::string job_prefix = piece_name_prefix(job.id, job.cat.identity()) + job.stamp + "-";
    if (auto w = remove_own_pieces(own, job.dest, job_prefix, "of this failed backup"))
      sum.warnings.push_back(*w);
  }
  sum.pieces = 0;
  sum.files = 0;
  sum.changed_files.clear();
  sum.file_changes.clear();
  sum.parents.clear();
  return Next::go_on;
}

Result<Next> extend_locks(BackupJob& job) {
  if (!job.lock || failed(job)) return Next::go_on;
  // The pieces were written locked until N days after the begin; now that the backup
  // ends, each moves to N days after the end, then the catalog records the date.
  const int64_t now = real_now_ns();
  const storage::Retention later = lock_after(*job.opts.lock, now);
  job.sum.lock = job.lock;
  for (const auto& p : job.pieces) {
    auto place = place_of(p.location);
    Result<void> r = place ? place->storage->set_retention(place->at.join(p.name), later)
                           : Result<void>(place.error());
    if (!r) {
      job.sum.warnings.push_back("the lock of the pieces could not be moved to " +
                                 util::format_time_ns(later.until_ns) +
                                 " (they stay locked until " +
                                 util::format_time_ns(job.lock->until_ns) + "): " + r.error().what);
      return Next::go_on;
    }
  }
  if (auto r = job.cat.add_lock({job.id, now, later}); !r) {
    job.sum.warnings.push_back("the lock until " + util::format_time_ns(later.until_ns) +
                               " was not recorded in the catalog: " + r.error().what);
    return Next::go_on;
  }
  job.lock = later;
  job.sum.lock = later;
  return Next::go_on;
}

Result<Next> end_job(BackupJob& job) {
  BackupSummary& sum = job.sum;
  catalog::BackupEnd end;
  end.status = job.status;
  end.end_time_ns = wall_ns();
  end.files = sum.files;
  end.bytes_read = sum.bytes_read;
  end.bytes_written = sum.bytes_written;
  end.pieces = failed(job) ? 0 : static_cast<uint32_t>(job.pieces.size());
  end.message = sum.error;
  sum.status = job.status == catalog::BackupStatus::complete  ? "complete"
               : job.status == catalog::BackupStatus::partial ? "partial"
                                                              : "failed";
  if (auto r = job.cat.end_backup(job.id, end); !r) {
    sum.status = "failed";
    sum.error = r.error().what;
    sum.error_code = r.error().code;
  }
  util::crash_point("backup-ended");
  return Next::go_on;
}

Result<Next> write_autobackup(BackupJob& job) {
  // A copy of the catalog's records of this destination's backups goes beside the pieces,
  // for `catalog rebuild`; it cannot change the outcome of the backup, only warn.
  if (!job.opts.media && job.sum.status != "failed")
    if (auto r = write_catalog_autobackup(job.cat, job.dest, job.id, job.opts.keys.get(), job.lock);
        !r)
      job.sum.warnings.push_back("the catalog autobackup was not written: " + r.error().what);
  return Next::go_on;
}

}  // namespace stripeback::engine::backup_internal
