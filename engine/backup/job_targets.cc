// Where the backup goes and under which id: the targets opened (a directory, the drives of
// removable media, or none for a validation), the interrupted backup a resume carries on,
// what earlier jobs left at the destination, and the catalog's begin record.
#include <unistd.h>

#include <algorithm>
#include <set>

#include "engine/backup/backup_job_state.h"
#include "engine/format/piece_name.h"
#include "engine/monitor/status_file.h"
#include "storage/registry.h"
#include "util/process.h"
#include "util/option_words.h"

namespace stripeback::engine::backup_internal {

Result<Next> open_targets(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  if (opts.lock && (opts.validate_only || opts.media))
    return fail(Errc::invalid_argument,
                util::option_word("lock_days") + " locks pieces in a directory of object "
                    "storage; " +
                    (opts.media ? "drives of removable media keep no object locks"
                                : "a validation writes nothing"));
  if (opts.validate_only) {
    // Nothing is written: the channels get a target they never use.
    SB_ASSIGN(Place nowhere, place_of("/"));
    job.targets.push_back({nowhere.storage, nowhere.at});
  } else if (opts.media) {
    // Drives, labels and block size are checked before anything is written.
    SB_ASSIGN(MediaDestination md, open_media_destination(*opts.media, job.cat));
    job.media = std::move(md);
    for (size_t i = 0; i < job.media->drives.size(); ++i)
      job.targets.push_back({job.media->drives[i].get(), job.media->locations[i]});
  } else {
    const std::string& dest = job.dest;
    auto place = place_of(dest);
    if (!place) return place.error().wrap("backup destination is not usable");
    if (auto r = place->storage->make_dirs(place->at); !r)
      return fail(Errc::invalid_argument, "backup destination is not usable: " + r.error().what);
    if (place->at.is_local() && ::access(dest.c_str(), W_OK) != 0)
      return sys_error(errno, "backup destination '" + dest + "' is not writable")
          .wrap("backup destination is not usable");
    if (opts.lock)
      if (auto r = place->storage->retention_available(place->at); !r) {
        // A destination that cannot hold locks is the user's choice to change (exit 2).
        Error e = r.error().wrap(util::option_word("lock_days") + " cannot lock pieces in '" +
                                 dest + "'");
        if (e.code == Errc::unsupported) e.code = Errc::invalid_argument;
        return e;
      }
    job.targets.push_back({place->storage, place->at});
  }
  return Next::go_on;
}

// The store compares lock dates with its own clock: they come from the real one, never
// from a test's fake wall clock.
int64_t real_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

storage::Retention lock_after(const BackupOptions::Lock& l, int64_t from_ns) {
  constexpr int64_t kDayNs = 86400LL * 1000000000LL;
  return storage::Retention{l.mode, from_ns + static_cast<int64_t>(l.days) * kDayNs};
}

namespace {

// The pattern of `rules` that leaves out `path` (a file below one of `sources`) or a
// directory above it, or null.
const std::string* excluding(const ExcludeRules& rules, const std::vector<std::string>& sources,
                             const std::string& path) {
  for (const auto& src : sources) {
    const std::string root = src.ends_with('/') ? src : src + "/";
    if (!path.starts_with(root)) continue;
    const std::string rel = path.substr(root.size());
    for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1))
      if (const std::string* p = rules.match(rel.substr(0, slash), true)) return p;
    if (const std::string* p = rules.match(rel, false)) return p;
  }
  return nullptr;
}

}  // namespace

Result<Next> find_resume(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  if (opts.resume) {
    if (opts.validate_only || opts.media)
      return fail(Errc::invalid_argument, util::option_word("resume") + " continues a backup to a directory");
    std::vector<std::string> srcs;
    for (const auto& s : opts.sources) srcs.push_back(storage::normal_path(s));
    SB_ASSIGN(ResumePoint rp,
              find_resume_point(*opts.resume, srcs, job.dest, opts.level.has_value(), job.cat,
                                opts.channel.direct, opts.keys.get()));
    // The catalog does not record the patterns a backup began with: a resume applies its
    // own, and refuses when the interrupted run backed up something they leave out (the
    // resumed backup is then what a backup with these patterns would hold).
    for (const auto& [path, held] : rp.held)
      if (const std::string* p = excluding(job.rules, srcs, path))
        return fail(Errc::invalid_argument,
                    "backup " + std::to_string(rp.backup_id) + " already holds '" + path +
                        "', which the exclude pattern '" + *p + "' leaves out: resume it with "
                        "the exclusions it began with");
    job.resumed = std::move(rp);
  }
  if (!opts.media && !opts.validate_only) {
    job.leftovers = find_unused_pieces(job.cat.backups(), job.dest);
    // Uploads a killed backup began and never completed hold space the store bills for.
    if (auto note = abandon_unfinished_pieces(job.cat.backups(), job.dest, may_still_run))
      job.leftover_notes.push_back(*note);
  }
  if (job.resumed) {
    // The pieces of the backup being resumed are its own, not leftovers.
    const std::string own = piece_name_prefix(job.resumed->backup_id, job.cat.identity());
    std::erase_if(job.leftovers, [&](const PieceFile& p) { return p.name.starts_with(own); });
  }
  return Next::go_on;
}

namespace {

// The catalog hears that this job now writes the interrupted backup; what the killed job
// left that a resume does not keep goes.
Result<void> take_over_backup(BackupJob& job) {
  const uint64_t id = job.id = job.resumed->backup_id;
  SB_TRY(job.cat.resume_backup({id, job.begin.start_time_ns, job.begin.host, job.begin.pid}));
  // The status file the killed job left (`stripeback status` would list it dead) is of
  // no more use: this job carries the backup on.
  remove_dead_jobs_of(job.cat.dir(), id);
  // The killed job's pieces that were never recorded (unfinished, or finished just before
  // the kill) are this job's to remove now.
  std::set<std::string> kept;
  for (const auto& p : job.resumed->pieces) kept.insert(p.name);
  std::vector<PieceFile> stale;
  for (auto& p : pieces_with_prefix(job.dest, piece_name_prefix(id, job.cat.identity())))
    if (!kept.count(p.name)) stale.push_back(std::move(p));
  if (auto w = remove_own_pieces(stale, job.dest, "", "left unfinished by the interrupted job"))
    job.leftover_notes.push_back(*w);
  return ok();
}

}  // namespace

Result<Next> begin_job(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  // The job key is derived (scrypt) before the catalog hears of the backup.
  if (opts.keys) SB_TRY(opts.keys->start_job());

  job.start = std::chrono::steady_clock::now();
  catalog::BackupBegin& begin = job.begin;
  begin.tag = opts.tag;
  begin.start_time_ns = wall_ns();
  begin.destination = job.dest;
  for (const auto& s : opts.sources) begin.sources.push_back(storage::normal_path(s));
  begin.channels = job.channels;
  begin.host = util::hostname();
  begin.pid = static_cast<int32_t>(::getpid());
  if (opts.level) {
    begin.level = *opts.level;
    begin.cumulative = opts.cumulative;
    begin.change_unit = opts.change_unit;
  }
  if (job.resumed) {
    SB_TRY(take_over_backup(job));
  } else if (!opts.validate_only) {
    SB_ASSIGN(job.id, job.cat.begin_backup(begin));
  }
  if (opts.lock && !opts.validate_only) {
    // Recorded before any piece is written with it: whatever becomes of the job, the
    // catalog knows its pieces cannot be deleted before then.
    job.lock = lock_after(*opts.lock, real_now_ns());
    SB_TRY(job.cat.add_lock({job.id, begin.start_time_ns, *job.lock}));
  }
  return Next::go_on;
}

}  // namespace stripeback::engine::backup_internal
