// The parents of a backup with a level (docs/incremental.md): --optimize takes out of the
// plan the files a backup already holds unchanged, and a level 1 finds, for each file, the
// backup it builds on and that backup's change map of it.
#include <algorithm>
#include <set>

#include "engine/backup/backup_job_state.h"
#include "engine/pieces/key_wraps.h"
#include "engine/transform/crypto.h"
#include "util/option_words.h"

namespace stripeback::engine::backup_internal {
namespace {

// Why file `path` of backup `b` cannot be a parent, or empty when it can.
std::string unusable_parent(const catalog::FileRecord& f, uint32_t unit) {
  if ((f.mode & 0170000) != 0100000) return "it was not a regular file";
  if (f.unit != unit)
    return "its change unit was " + std::to_string(f.unit) + " bytes, this backup's is " +
           std::to_string(unit);
  return "";
}

// Why the chain a level 1 would build on (file `f` of backup `b` and the backups it builds
// on in turn) cannot be restored, or empty: a backup of it is gone or not usable, or a piece
// is missing or not the one recorded (each piece is opened and its index checked once).
std::string broken_chain(const catalog::Backup& b, const catalog::FileRecord& f,
                         const std::vector<catalog::Backup>& backups, PieceCache& cache) {
  const catalog::Backup* cur = &b;
  const catalog::FileRecord* rec = &f;
  while (true) {
    // Pieces on removable media are checked when they are read (in order, from their
    // volume); here only that the catalog records them.
    for (const auto& name : rec->pieces) {
      auto pit = std::find_if(cur->pieces.begin(), cur->pieces.end(),
                              [&](const catalog::PieceRecord& p) { return p.name == name; });
      if (pit != cur->pieces.end() && pit->media) continue;
      if (auto r = cache.get(*cur, name); !r) return r.error().what;
    }
    if (!rec->parent) return "";
    auto pb = std::find_if(backups.begin(), backups.end(),
                           [&](const catalog::Backup& x) { return x.id == rec->parent; });
    if (pb == backups.end() || pb->id >= cur->id || !pb->usable())
      return "backup " + std::to_string(rec->parent) + ", which it builds on, is " +
             (pb == backups.end() || pb->id >= cur->id ? std::string("missing")
                                                       : pb->status_name());
    auto next = std::find_if(pb->files.begin(), pb->files.end(),
                             [&](const catalog::FileRecord& x) { return x.path == rec->path; });
    if (next == pb->files.end())
      return "backup " + std::to_string(pb->id) + ", which it builds on, does not hold it";
    cur = &*pb;
    rec = &*next;
  }
}

// --optimize: takes out of the plan every file whose newest copy in a backup with a level
// has its size, mtime, ctime and inode, and whose chain can be restored; returns the
// records that name the backups holding them.
std::vector<catalog::FileRecord> optimize_plan(Plan& plan,
                                               const std::vector<catalog::Backup>& backups,
                                               PieceCache& cache) {
  std::vector<catalog::FileRecord> held;
  std::map<std::string, const FileTask*> wanted;
  for (const auto& f : plan.files) wanted[f.path] = &f;
  std::set<std::string> skipped;
  for (auto it = backups.rbegin(); it != backups.rend() && !wanted.empty(); ++it) {
    const catalog::Backup& b = *it;
    if (!b.usable() || b.begin.level < 0) continue;
    for (const auto& rec : b.files) {
      auto w = wanted.find(rec.path);
      if (w == wanted.end()) continue;
      const FileTask& f = *w->second;
      wanted.erase(w);  // the newest copy decides
      if (rec.inode == 0 || rec.size != f.size || rec.mtime_ns != f.mtime_ns ||
          rec.ctime_ns != f.ctime_ns || rec.inode != f.ino || (rec.mode & 0170000) != 0100000)
        continue;
      auto copy = held_copy(b, rec, backups);
      if (!copy || !broken_chain(*copy->backup, *copy->file, backups, cache).empty()) continue;
      const catalog::Backup* hb = copy->backup;
      catalog::FileRecord r = *copy->file;
      r.pieces.clear();
      r.mode = f.mode;
      r.uid = f.uid;
      r.gid = f.gid;
      r.parent = 0;
      r.units_written = 0;
      r.change = catalog::FileChange::skipped;
      r.held_by = hb->id;
      held.push_back(std::move(r));
      skipped.insert(f.path);
    }
  }
  if (!skipped.empty()) {
    std::vector<FileTask> keep;
    for (auto& f : plan.files) {
      if (skipped.count(f.path))
        plan.total_bytes -= f.size;
      else
        keep.push_back(std::move(f));
    }
    plan.files = std::move(keep);
  }
  return held;
}

// Why a file's parent cannot serve (and so the file is backed up whole), or empty when it
// can: its copy is on the other kind of medium, of another change unit, or its chain cannot
// be restored.
std::string parent_refused(const BackupOptions& opts, const HeldCopy& held,
                           const std::vector<catalog::Backup>& backups, PieceCache& cache) {
  const catalog::Backup* hb = held.backup;
  const catalog::FileRecord& rec = *held.file;
  const bool media = opts.media.has_value();
  if (on_media(*hb) != media)
    return "backup " + std::to_string(hb->id) + ", which holds it, is on " +
           (media ? "a directory" : "removable media") + " and a chain stays on one kind of medium";
  if (auto why = unusable_parent(rec, opts.change_unit); !why.empty())
    return "in backup " + std::to_string(hb->id) + " " + why;
  if (auto broken = broken_chain(*hb, rec, backups, cache); !broken.empty())
    return "its backup chain cannot be restored (" + broken + ")";
  return "";
}

// Level backups: finds each planned file's parent (the newest level 0 or 1 holding it,
// only level 0 for a cumulative level 1) and reads its change map. A file without one is
// backed up whole; why is in the warnings when a parent existed but cannot serve.
std::map<std::string, UnitMap> find_parents(const BackupOptions& opts, const Plan& plan,
                                            const std::vector<catalog::Backup>& backups,
                                            const std::string& catalog_dir,
                                            std::vector<std::string>& warnings) {
  std::map<std::string, UnitMap> out;
  if (!opts.level || *opts.level != 1) return out;
  std::map<std::string, const FileTask*> wanted;
  for (const auto& f : plan.files) wanted[f.path] = &f;
  PieceCache cache(opts.channel.direct, opts.keys.get());
  cache.set_catalog_dir(catalog_dir);
  // A chain stays on one kind of medium: a level 1 to removable media builds on backups to
  // removable media (their maps kept with the catalog), one to a directory on backups to
  // directories.
  const bool media = opts.media.has_value();
  for (auto it = backups.rbegin(); it != backups.rend() && !wanted.empty(); ++it) {
    const catalog::Backup& b = *it;
    if (!b.usable() || b.begin.level < 0 || (opts.cumulative && b.begin.level != 0)) continue;
    if (on_media(b) != media) continue;
    for (const auto& skip_or_rec : b.files) {
      auto w = wanted.find(skip_or_rec.path);
      if (w == wanted.end()) continue;
      wanted.erase(w);  // the newest backup holding the file decides
      auto held = held_copy(b, skip_or_rec, backups);
      if (!held) {
        warnings.push_back("'" + skip_or_rec.path + "' is backed up whole: " + held.error().what);
        continue;
      }
      const catalog::FileRecord& rec = *held->file;
      if (auto why = parent_refused(opts, *held, backups, cache); !why.empty()) {
        warnings.push_back("'" + rec.path + "' is backed up whole: " + why);
        continue;
      }
      auto m = load_file_map(*held->backup, rec, cache);
      if (!m) {
        warnings.push_back("'" + rec.path + "' is backed up whole: its change map in backup " +
                           std::to_string(held->backup->id) + " cannot be read (" + m.error().what +
                           ")");
        continue;
      }
      out.emplace(rec.path, std::move(*m));
    }
  }
  return out;
}

}  // namespace

Result<Next> choose_parents(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  if (!opts.level) return Next::go_on;
  // Parents' pieces may open with this key only through the catalog's wraps (a rekey).
  if (opts.keys) opts.keys->set_catalog_wraps(catalog_wraps(job.cat));
  const auto known = job.cat.backups();
  if (opts.optimize && !opts.force) {
    PieceCache cache(opts.channel.direct, opts.keys.get());
    job.held = optimize_plan(job.plan, known, cache);
  }
  job.parents = find_parents(opts, job.plan, known, job.cat.dir(), job.parent_warnings);
  if (*opts.level == 1 && job.parents.empty() && !job.plan.files.empty()) {
    std::string what = std::string("no ") + (opts.cumulative ? "level 0" : "level 0 or 1") +
                       " backup in the catalog holds any of these files";
    if (opts.require_parent)
      return fail(Errc::not_found, what + " (" + util::option_word("require_parent") + "): nothing was backed up");
    job.parent_warnings.push_back(what + ": every file is backed up whole");
  }
  return Next::go_on;
}

}  // namespace stripeback::engine::backup_internal
