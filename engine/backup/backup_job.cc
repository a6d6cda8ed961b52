#include "engine/backup/backup_job.h"
#include "engine/media/catalog_autobackup.h"
#include "engine/transform/compress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <cstdio>
#include <thread>

#include "engine/backup/buffer_budget.h"
#include "engine/pieces/change_map.h"
#include "engine/pieces/leftovers.h"
#include "engine/format/piece_format.h"
#include "engine/format/piece_name.h"
#include "engine/backup/planner.h"
#include "engine/backup/resume.h"
#include "engine/monitor/status_file.h"
#include "storage/async/file.h"
#include "engine/wiring/backends.h"
#include "util/crash_point.h"
#include "util/escape.h"
#include "util/json.h"
#include "util/process.h"
#include "util/units.h"
#include "storage/registry.h"
#include "util/log.h"

namespace stripeback::engine {
namespace {

Result<void> check_options(const BackupOptions& o) {
  if (o.channels < 1 || o.channels > 256)
    return fail(Errc::invalid_argument, "--channels must be between 1 and 256");
  if (o.destination.empty() && !o.validate_only)
    return fail(Errc::invalid_argument, "no destination given (--to)");
  if (o.media && o.media->drives.size() != o.channels)
    return fail(Errc::invalid_argument, "a backup to removable media runs one channel per drive: " +
                                            std::to_string(o.media->drives.size()) +
                                            " drive(s), " + std::to_string(o.channels) +
                                            " channel(s)");
  SB_TRY(check_buffer_overrides(o.buffers, o.buffer_size));
  if (o.files_per_set < 1) return fail(Errc::invalid_argument, "--files-per-set must be at least 1");
  if (o.channel.max_open_files < 1 || o.channel.max_open_files > 256)
    return fail(Errc::invalid_argument, "--max-open-files must be between 1 and 256");
  if (o.section_size && o.section_size < (1u << 20))
    return fail(Errc::invalid_argument, "--section-size must be at least 1 MiB");
  if (o.duration && o.duration->count() <= 0)
    return fail(Errc::invalid_argument, "--duration must be longer than zero");
  if ((o.partial || o.minimize_load) && !o.duration)
    return fail(Errc::invalid_argument, "--partial and --minimize-load need --duration");
  if (o.level && *o.level != 0 && *o.level != 1)
    return fail(Errc::invalid_argument, "--level must be 0 or 1");
  if ((o.cumulative || o.require_parent) && (!o.level || *o.level != 1))
    return fail(Errc::invalid_argument, "--cumulative and --require-parent need --level 1");
  if (o.level && (o.change_unit < kMinChangeUnit || o.change_unit > kMaxChangeUnit ||
                  (o.change_unit & (o.change_unit - 1)) != 0))
    return fail(Errc::invalid_argument,
                "--change-unit must be a power of two from 8 KiB to 1 MiB");
  if (o.level && o.buffer_size && *o.buffer_size % o.change_unit != 0)
    return fail(Errc::invalid_argument, "--buffer-size must be a multiple of --change-unit");
  if ((o.optimize || o.force) && !o.level)
    return fail(Errc::invalid_argument, "--optimize and --force need --level");
  if (o.validate_only && (o.level || o.keys || o.media || o.channel.compress_level != 0))
    return fail(Errc::invalid_argument,
                "backup --validate writes nothing: --level, --encrypt, --compress and removable "
                "destinations do not go with it");
  if ((o.max_corrupt != 0 || o.page_size) && !o.check_logical)
    return fail(Errc::invalid_argument, "--max-corrupt and --page-size need --check-logical");
  return ok();
}

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
                                               PieceCache& cache);

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
      const catalog::Backup* hb = held->backup;
      const catalog::FileRecord& rec = *held->file;
      if (on_media(*hb) != media) {
        warnings.push_back("'" + rec.path + "' is backed up whole: backup " +
                           std::to_string(hb->id) + ", which holds it, is on " +
                           (media ? "a directory" : "removable media") +
                           " and a chain stays on one kind of medium");
        continue;
      }
      if (auto why = unusable_parent(rec, opts.change_unit); !why.empty()) {
        warnings.push_back("'" + rec.path + "' is backed up whole: in backup " +
                           std::to_string(hb->id) + " " + why);
        continue;
      }
      if (auto broken = broken_chain(*hb, rec, backups, cache); !broken.empty()) {
        warnings.push_back("'" + rec.path + "' is backed up whole: its backup chain cannot be "
                           "restored (" + broken + ")");
        continue;
      }
      auto m = load_file_map(*hb, rec, cache);
      if (!m) {
        warnings.push_back("'" + rec.path + "' is backed up whole: its change map in backup " +
                           std::to_string(hb->id) + " cannot be read (" + m.error().what + ")");
        continue;
      }
      out.emplace(rec.path, std::move(*m));
    }
  }
  return out;
}

// For --partial: files that have gone longest without a backup come first (never backed
// up before anything), then largest first. Returns when each was last backed up, in the
// new order (the lowest int64_t for never).
std::vector<int64_t> order_least_recent_first(std::vector<FileTask>& files,
                                              const catalog::Catalog& cat) {
  std::map<std::string, int64_t> last;
  for (const auto& b : cat.backups()) {
    if (!b.ended || (b.end.status != catalog::BackupStatus::complete &&
                     b.end.status != catalog::BackupStatus::partial))
      continue;
    for (const auto& f : b.files) {
      auto& t = last[f.path];
      t = std::max(t, b.begin.start_time_ns);
    }
  }
  auto when = [&](const FileTask& f) {
    auto it = last.find(f.path);
    return it == last.end() ? std::numeric_limits<int64_t>::min() : it->second;
  };
  std::stable_sort(files.begin(), files.end(), [&](const FileTask& a, const FileTask& b) {
    int64_t ta = when(a), tb = when(b);
    return ta != tb ? ta < tb : a.size > b.size;
  });
  std::vector<int64_t> times;
  for (const auto& f : files) times.push_back(when(f));
  return times;
}

// Removes pieces of the running backup that no restorable backup will use; a warning when
// some could not be removed. For a failed backup, once every piece the channels know of
// is gone, also any other piece named with `prefix`, this job's own (backup id, catalog id
// and time stamp): a piece whose creation failed half-way.
std::optional<std::string> remove_own_pieces(std::vector<PieceFile> pieces,
                                             const std::string& dest, const std::string& prefix,
                                             const std::string& whose) {
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

PieceFile file_of(const catalog::PieceRecord& p) { return {p.location, p.name, p.size}; }

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
      if (skipped.count(f.path)) plan.total_bytes -= f.size;
      else keep.push_back(std::move(f));
    }
    plan.files = std::move(keep);
  }
  return held;
}

struct FileAssembly {
  const FileTask* file = nullptr;
  UnitDone attrs;  // of its first section
  std::set<uint32_t> sections;
  std::vector<UnitExtent> extents;
  std::set<std::string> pieces;
  std::vector<DigestMap> maps;  // level backups: the unit digests of each section
  uint64_t units_written = 0;
};

// Files whose every section is in a durable piece, with their whole-file digests. In a
// backup with a change unit the digest combines the unit digests (change_map.h), and each
// record says how it relates to its parent. `kept`: units a resumed backup's durable pieces
// finished before the interruption.
std::vector<catalog::FileRecord> assemble_files(
    std::vector<ChannelOutcome>& outcomes, uint32_t unit,
    const std::map<std::string, UnitMap>& parents,
    std::vector<std::pair<std::string, UnitMap>>* maps, std::vector<UnitDone>& kept) {
  std::map<std::string, FileAssembly> byname;
  std::vector<std::vector<UnitDone>*> all;
  for (auto& o : outcomes) all.push_back(&o.units);
  all.push_back(&kept);
  for (auto* units : all)
    for (auto& u : *units) {
      auto& a = byname[u.unit->file->path];
      if (!a.file || u.unit->section == 0) a.attrs = u;
      a.file = u.unit->file;
      a.sections.insert(u.unit->section);
      a.extents.insert(a.extents.end(), u.extents.begin(), u.extents.end());
      a.pieces.insert(u.pieces.begin(), u.pieces.end());
      if (unit) {
        a.maps.push_back({unit, u.first_unit * unit, std::move(u.unit_digests)});
        a.units_written += u.units_written;
      }
    }
  std::vector<catalog::FileRecord> out;
  for (auto& [path, a] : byname) {
    auto* first = a.attrs.unit;
    if (a.sections.size() != first->sections) continue;
    std::sort(a.extents.begin(), a.extents.end(),
              [](const UnitExtent& x, const UnitExtent& y) { return x.offset < y.offset; });
    util::DigestCombiner comb;
    for (const auto& e : a.extents) comb.add(e.offset, e.length, e.digest);
    catalog::FileRecord r;
    r.path = path;
    r.size = a.attrs.size;
    r.mode = a.attrs.mode;
    r.mtime_ns = a.attrs.mtime_ns;
    r.uid = a.attrs.uid;
    r.gid = a.attrs.gid;
    r.digest = comb.finish();
    r.pieces.assign(a.pieces.begin(), a.pieces.end());
    if (unit) {
      auto m = join_maps(std::move(a.maps), r.size, unit, path);
      if (!m) continue;  // cannot happen: the channels hashed every unit they read
      r.digest = map_file_digest(*m);
      if (maps) maps->emplace_back(path, *m);
      r.unit = unit;
      r.ctime_ns = a.file->ctime_ns;
      r.inode = a.file->ino;
      r.units_written = a.units_written;
      if (auto p = parents.find(path); p != parents.end()) {
        r.parent = p->second.backup;
        r.change = a.units_written == 0 && p->second.size == r.size
                       ? catalog::FileChange::unchanged
                       : catalog::FileChange::changed;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

// The recorded files that changed while they were read (some unit of theirs saw it).
std::vector<std::string> changed_files(const std::vector<ChannelOutcome>& outcomes,
                                       const std::vector<catalog::FileRecord>& files) {
  std::set<std::string> recorded, changed;
  for (const auto& f : files) recorded.insert(f.path);
  for (const auto& o : outcomes)
    for (const auto& u : o.units)
      if (u.changed && recorded.count(u.unit->file->path)) changed.insert(u.unit->file->path);
  return {changed.begin(), changed.end()};
}

// --minimize-load: every quarter second, set the job's rate to what finishes the remaining
// bytes a little before the deadline.
class Pacer {
 public:
  Pacer(TokenBucket& bucket, uint64_t total, const std::atomic<uint64_t>& done,
        std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point deadline,
        double cap)
      : thread_([this, &bucket, total, &done, start, deadline, cap] {
          auto window = deadline - start;
          // Aim to end at 95% of the window, at least 1 s before the deadline.
          auto target = start + std::min<std::chrono::steady_clock::duration>(
                                    window * 95 / 100, window - std::chrono::seconds(1));
          if (target <= start) target = start + window / 2;
          std::unique_lock lock(mu_);
          while (!stop_) {
            auto now = std::chrono::steady_clock::now();
            double left = std::chrono::duration<double>(target - now).count();
            uint64_t d = done.load(std::memory_order_relaxed);
            double remaining = total > d ? static_cast<double>(total - d) : 0.0;
            double rate = left > 0.05 ? remaining / left : 0.0;  // 0: unlimited, catch up
            if (rate > 0) rate = std::max(rate, 64.0 * 1024);
            if (cap > 0) rate = rate > 0 ? std::min(rate, cap) : cap;
            bucket.set_rate(rate);
            cv_.wait_for(lock, std::chrono::milliseconds(250));
          }
        }) {}
  ~Pacer() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

BufferChoice choose_buffers(uint32_t multiplexing, std::optional<size_t> buffers,
                            std::optional<size_t> buffer_size, bool compressing,
                            bool validating) {
  BufferChoice c;
  c.multiplexing = std::max<uint32_t>(1, multiplexing);
  if (c.multiplexing > 8) {
    c.buffers = 64;
    c.buffer_size = 256 << 10;
  } else if (c.multiplexing > 4) {
    c.buffers = 32;
    c.buffer_size = 512 << 10;
  }
  if (compressing && !buffer_size) buffer_size = size_t{1} << 20;
  if (buffer_size && !buffers) c.buffers = std::max<size_t>(2, (16u << 20) / *buffer_size);
  if (buffers) c.buffers = *buffers;
  else if (validating) c.buffers *= 2;
  if (buffer_size) c.buffer_size = *buffer_size;
  return c;
}

namespace {

// A destination inside a source would have every backup read the pieces of the ones before.
// Compared with symbolic links resolved, so no link makes one look outside the other.
Result<void> check_destination_outside(const std::vector<std::string>& sources,
                                       const std::string& dest) {
  if (storage::has_scheme(dest)) {
    for (const auto& s : sources) {
      const std::string src = storage::normal_path(s);
      if (dest == src || dest.starts_with(src + "/"))
        return fail(Errc::invalid_argument, "backup destination '" + dest +
                                                "' is inside the source '" + src +
                                                "': choose a destination outside the sources");
    }
    return ok();
  }
  auto real = [](const std::string& p) {
    std::error_code ec;
    auto r = std::filesystem::weakly_canonical(p, ec);
    return ec ? p : r.string();
  };
  const std::string d = real(dest);
  for (const auto& s : sources) {
    if (storage::has_scheme(s)) continue;
    std::string src = real(storage::normal_path(s));
    while (src.size() > 1 && src.back() == '/') src.pop_back();
    if (d == src || d.starts_with(src == "/" ? src : src + "/"))
      return fail(Errc::invalid_argument,
                  "backup destination '" + dest + "' is inside the source '" + s +
                      "': every backup would read the pieces of the ones before; choose a "
                      "destination outside the sources");
  }
  return ok();
}

}  // namespace

Result<BackupSummary> run_backup(const BackupOptions& opts, catalog::Catalog& cat) {
  SB_TRY(check_options(opts));
  SB_ASSIGN(Plan plan, make_plan(opts.sources, {opts.one_file_system, opts.skip_unreadable}));
  std::string dest = opts.media ? opts.destination : storage::normal_path(opts.destination);
  if (!opts.media && !opts.validate_only) SB_TRY(check_destination_outside(opts.sources, dest));
  std::optional<MediaDestination> media_dest;
  std::vector<PieceTarget> targets;
  std::unique_ptr<PageValidator> validator;
  if (opts.check_logical) {
    SB_ASSIGN(validator, make_validator(*opts.check_logical, opts.sources, opts.page_size));
  }
  if (opts.validate_only) {
    // Nothing is written: the channels get a target they never use.
    SB_ASSIGN(Place nowhere, place_of("/"));
    targets.push_back({nowhere.storage, nowhere.at});
  } else if (opts.media) {
    // Drives, labels and block size are checked before anything is written.
    SB_ASSIGN(MediaDestination md, open_media_destination(*opts.media, cat));
    media_dest = std::move(md);
    for (size_t i = 0; i < media_dest->drives.size(); ++i)
      targets.push_back({media_dest->drives[i].get(), media_dest->locations[i]});
  } else {
    auto place = place_of(dest);
    if (!place) return place.error().wrap("backup destination is not usable");
    if (auto r = place->storage->make_dirs(place->at); !r)
      return fail(Errc::invalid_argument, "backup destination is not usable: " + r.error().what);
    if (place->at.is_local() && ::access(dest.c_str(), W_OK) != 0)
      return sys_error(errno, "backup destination '" + dest + "' is not writable")
          .wrap("backup destination is not usable");
    targets.push_back({place->storage, place->at});
  }
  std::optional<ResumePoint> resumed;
  std::vector<std::string> leftover_notes;
  if (opts.resume) {
    if (opts.validate_only || opts.media)
      return fail(Errc::invalid_argument, "--resume continues a backup to a directory");
    std::vector<std::string> srcs;
    for (const auto& s : opts.sources) srcs.push_back(storage::normal_path(s));
    SB_ASSIGN(ResumePoint rp, find_resume_point(*opts.resume, srcs, dest, opts.level.has_value(),
                                                cat, opts.channel.direct, opts.keys.get()));
    resumed = std::move(rp);
  }
  std::vector<PieceFile> leftovers;
  if (!opts.media && !opts.validate_only) leftovers = find_unused_pieces(cat.backups(), dest);
  if (resumed) {
    // The pieces of the backup being resumed are its own, not leftovers.
    const std::string own = piece_name_prefix(resumed->backup_id, cat.identity());
    std::erase_if(leftovers, [&](const PieceFile& p) { return p.name.starts_with(own); });
  }

  SetOptions so;
  so.section_size = opts.section_size;
  so.files_per_set = opts.files_per_set;
  so.channels = opts.channels;
  std::vector<std::string> parent_warnings;
  std::map<std::string, UnitMap> parents;
  std::vector<catalog::FileRecord> held;  // --optimize: files not read, held elsewhere
  const size_t planned = plan.files.size();
  if (opts.level) {
    const auto known = cat.backups();
    if (opts.optimize && !opts.force) {
      PieceCache cache(opts.channel.direct, opts.keys.get());
      held = optimize_plan(plan, known, cache);
    }
    parents = find_parents(opts, plan, known, cat.dir(), parent_warnings);
    if (*opts.level == 1 && parents.empty() && !plan.files.empty()) {
      std::string what = std::string("no ") + (opts.cumulative ? "level 0" : "level 0 or 1") +
                         " backup in the catalog holds any of these files";
      if (opts.require_parent)
        return fail(Errc::not_found, what + " (--require-parent): nothing was backed up");
      parent_warnings.push_back(what + ": every file is backed up whole");
    }
  }
  // After --optimize took its files out: one time for each file still planned.
  if (opts.partial) so.last_backup = order_least_recent_first(plan.files, cat);
  std::vector<WorkSet> sets = make_sets(plan.files, so);
  std::vector<UnitDone> kept_units;  // --resume: finished before the interruption
  if (resumed) {
    kept_units = keep_finished_units(*resumed, sets);
    plan.total_bytes -= std::min(plan.total_bytes, resumed->bytes_kept);
  }
  size_t largest_set = 0;
  uint32_t sections = 0;
  for (const auto& st : sets) {
    largest_set = std::max(largest_set, st.size());
    for (const auto& u : st) sections += u.sections > 1 ? 1 : 0;
  }
  BufferChoice buffers = choose_buffers(
      std::min<uint32_t>(opts.channel.max_open_files, static_cast<uint32_t>(largest_set)),
      opts.buffers, opts.buffer_size, opts.channel.compress_level != 0, opts.validate_only);
  // Change units never straddle a buffer.
  if (opts.level && buffers.buffer_size < opts.change_unit) {
    buffers.buffers = std::max<size_t>(2, buffers.buffers * buffers.buffer_size / opts.change_unit);
    buffers.buffer_size = opts.change_unit;
  }
  if (opts.channel.max_piece_size &&
      opts.channel.max_piece_size < buffers.buffer_size + 16 * kBlock + (64u << 10))
    return fail(Errc::invalid_argument,
                "--max-piece-size " + std::to_string(opts.channel.max_piece_size) +
                    " is too small: a piece must hold at least one buffer of " +
                    std::to_string(buffers.buffer_size) + " bytes plus 128 KiB of metadata");

  // The job key is derived (scrypt) before the catalog hears of the backup.
  if (opts.keys) SB_TRY(opts.keys->start_job());

  auto start = std::chrono::steady_clock::now();
  catalog::BackupBegin begin;
  begin.tag = opts.tag;
  begin.start_time_ns = wall_ns();
  begin.destination = dest;
  for (const auto& s : opts.sources) begin.sources.push_back(storage::normal_path(s));
  begin.channels = opts.channels;
  begin.host = util::hostname();
  begin.pid = static_cast<int32_t>(::getpid());
  if (opts.level) {
    begin.level = *opts.level;
    begin.cumulative = opts.cumulative;
    begin.change_unit = opts.change_unit;
  }
  uint64_t id = 0;
  if (resumed) {
    id = resumed->backup_id;
    SB_TRY(cat.resume_backup({id, begin.start_time_ns, begin.host, begin.pid}));
    // The status file the killed job left (`stripeback status` would list it dead) is of
    // no more use: this job carries the backup on.
    remove_dead_jobs_of(cat.dir(), id);
    // The killed job's pieces that were never recorded (unfinished, or finished just before
    // the kill) are this job's to remove now.
    std::set<std::string> kept;
    for (const auto& p : resumed->pieces) kept.insert(p.name);
    std::vector<PieceFile> stale;
    for (auto& p : pieces_with_prefix(dest, piece_name_prefix(id, cat.identity())))
      if (!kept.count(p.name)) stale.push_back(std::move(p));
    if (auto w = remove_own_pieces(stale, dest, "", "left unfinished by the interrupted job"))
      leftover_notes.push_back(*w);
  } else if (!opts.validate_only) {
    SB_ASSIGN(id, cat.begin_backup(begin));
  }

  WorkQueue queue(sets, opts.channels);
  BackupContext ctx;
  ctx.backup_id = id;
  ctx.catalog_id = cat.identity();
  ctx.targets = targets;
  ctx.job_start = start;
  ctx.stamp = make_piece_stamp();
  ctx.queue = &queue;
  ctx.cancel = opts.cancel;
  std::atomic<bool> abort{false};
  ctx.abort = &abort;
  ctx.config = opts.channel;
  ctx.config.buffers = buffers.buffers;
  ctx.config.buffer_size = buffers.buffer_size;
  if (opts.partial) ctx.config.read_order = ReadOrder::set_order;
  if (opts.media || opts.validate_only) {
    // Removable media are not resumed (a checkpoint would only add files to the medium), and
    // a validation writes no piece.
    ctx.config.checkpoint_bytes = 0;
    ctx.config.checkpoint_interval = std::chrono::milliseconds(0);
  }
  ctx.keys = opts.keys.get();
  ctx.validator = validator.get();
  ctx.validate_only = opts.validate_only;
  if (opts.level) {
    ctx.change_unit = opts.change_unit;
    ctx.parents = &parents;
  }
  std::atomic<uint64_t> bytes_done{0};
  ctx.bytes_done = &bytes_done;
  // Each piece is recorded as soon as it is durable: a resume keeps what a killed job made.
  std::mutex recorded_mu;
  std::set<std::string> recorded;
  std::vector<Error> record_errors;
  if (!opts.validate_only)
    ctx.piece_durable = [&](const catalog::PieceRecord& p) {
      auto r = cat.add_piece(id, p, {});
      std::lock_guard lock(recorded_mu);
      if (r) recorded.insert(p.name);
      else record_errors.push_back(r.error());
    };
  std::unique_ptr<TokenBucket> job_bucket;
  if (opts.job_rate > 0 || opts.minimize_load) {
    job_bucket = std::make_unique<TokenBucket>(opts.job_rate,
                                               static_cast<double>(buffers.buffer_size));
    ctx.job_bucket = job_bucket.get();
  }
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (opts.duration) deadline = start + *opts.duration;
  ctx.deadline = deadline;

  ctx.progress = opts.progress;
  if (opts.progress) {
    opts.progress->set_id(id);
    opts.progress->start(opts.channels, plan.total_bytes);
  }
  std::vector<ChannelOutcome> outcomes(opts.channels);
  {
    std::unique_ptr<Pacer> pacer;
    if (opts.minimize_load)
      pacer = std::make_unique<Pacer>(*job_bucket, plan.total_bytes, bytes_done, start,
                                      *deadline, opts.job_rate);
    std::vector<std::thread> threads;
    const auto log_sink = util::current_log_sink();
    const auto storages = storage::current_registry();
    for (uint32_t c = 0; c < opts.channels; ++c)
      threads.emplace_back([&, c] {
        util::ScopedLogSink logs(log_sink);
        storage::ScopedRegistry registered(storages);
        outcomes[c] = run_backup_channel(ctx, c + 1);
      });
    for (auto& t : threads) t.join();
  }

  BackupSummary sum;
  sum.backup_id = id;
  if (media_dest && media_dest->labelled) sum.labelled_volumes = *media_dest->labelled;
  sum.validate_only = opts.validate_only;
  if (validator) sum.page_format = validator->name();
  if (!leftovers.empty()) sum.warnings.push_back(leftover_warning(leftovers, dest));
  for (auto& w : parent_warnings) sum.warnings.push_back(std::move(w));
  for (auto& w : leftover_notes) sum.warnings.push_back(std::move(w));
  if (opts.level) {
    sum.level = *opts.level;
    sum.cumulative = opts.cumulative;
    sum.change_unit = opts.change_unit;
  }
  sum.skipped = plan.skipped;
  sum.files_planned = planned;
  sum.sets = static_cast<uint32_t>(sets.size());
  sum.sections = sections;
  sum.buffers = buffers;
  sum.max_piece_size = opts.channel.max_piece_size;
  sum.checkpoint_bytes = ctx.config.checkpoint_bytes;
  sum.checkpoint_interval_s =
      std::chrono::duration<double>(ctx.config.checkpoint_interval).count();
  sum.section_size = opts.section_size ? std::max<uint64_t>(1u << 20, opts.section_size >> 20 << 20) : 0;
  sum.rate = opts.channel.rate;
  sum.job_rate = opts.job_rate;
  if (opts.keys) sum.encryption = std::string("aes-256-gcm (") + opts.keys->kind_name() + ")";
  bool first_is_secondary = false;  // the error kept so far only echoes another channel's
  std::vector<catalog::PieceRecord> pieces;
  std::vector<PieceFile> unfinished;
  for (auto& o : outcomes) {
    unfinished.insert(unfinished.end(), o.unfinished.begin(), o.unfinished.end());
    sum.channels.push_back(o.stats);
    sum.bytes_read += o.stats.bytes_read;
    sum.bytes_written += o.stats.bytes_written;
    sum.deadline_hit = sum.deadline_hit || o.deadline_hit;
    pieces.insert(pieces.end(), o.pieces.begin(), o.pieces.end());
    for (auto& w : o.warnings) sum.warnings.push_back(w);
    sum.pages.checked += o.pages.checked;
    sum.pages.retried += o.pages.retried;
    sum.pages.recovered += o.pages.recovered;
    sum.pages.newer += o.pages.newer;
    for (auto& c : o.pages.corrupt) sum.pages.corrupt.push_back(std::move(c));
    if (!o.status && (sum.error.empty() || first_is_secondary)) {
      first_is_secondary = o.status.error().code == Errc::cancelled && abort.load();
      sum.error = o.status.error().what;
      sum.error_code = o.status.error().code;
    }
  }
  if (resumed) {
    // The pieces made before the interruption are the backup's too (recorded then).
    pieces.insert(pieces.begin(), resumed->pieces.begin(), resumed->pieces.end());
    for (const auto& p : resumed->pieces) recorded.insert(p.name);
  }
  std::vector<std::pair<std::string, UnitMap>> media_maps;
  auto files = assemble_files(outcomes, ctx.change_unit, parents,
                              opts.level && opts.media ? &media_maps : nullptr, kept_units);
  const size_t read_files = files.size();
  files.insert(files.end(), held.begin(), held.end());
  if (resumed) {
    sum.resumed_files = resumed->files_kept;
    sum.resumed_sections = resumed->sections_kept;
    sum.resumed_bytes = resumed->bytes_kept;
    sum.resumed_from = resumed->backup_id;
    sum.resumed_reread = resumed->reread;
    for (const auto& [path, why] : resumed->reread)
      sum.warnings.push_back("resume: '" + path + "' is read again whole: " + why +
                             " since the interrupted run");
  }
  std::sort(files.begin(), files.end(),
            [](const catalog::FileRecord& a, const catalog::FileRecord& b) { return a.path < b.path; });
  if (opts.level) {
    std::set<uint64_t> used;
    for (const auto& f : files) {
      if (f.parent) used.insert(f.parent);
      sum.file_changes.push_back({f.path,
                                  f.change == catalog::FileChange::unchanged ? "unchanged"
                                  : f.change == catalog::FileChange::changed ? "changed"
                                  : f.change == catalog::FileChange::skipped ? "skipped"
                                                                             : "new",
                                  f.units_written, f.parent, f.held_by});
    }
    sum.parents.assign(used.begin(), used.end());
  }
  sum.changed_files = changed_files(outcomes, files);
  for (const auto& path : sum.changed_files)
    sum.warnings.push_back("'" + path + "' changed while it was backed up (size or mtime): its "
                           "copy may hold a mix of old and new contents");
  sum.files = files.size();
  sum.pieces = static_cast<uint32_t>(pieces.size());
  sum.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  {
    VerdictInputs vi;
    if (auto src = opts.sources.empty() ? Result<Place>(fail(Errc::not_found, ""))
                                        : place_of(opts.sources.front()))
      vi.source = src->storage->scheme();
    if (opts.validate_only) vi.target.clear();
    else if (!targets.empty() && targets.front().storage) {
      vi.target = targets.front().storage->scheme();
      vi.target_removable = targets.front().storage->caps().removable;
    }
    vi.paced = opts.minimize_load;
    vi.compress_auto = opts.channel.compress_level == kCompressAuto;
    vi.bytes = sum.bytes_read;
    sum.verdict = explain_verdict(sum.channels, vi);
  }
  sum.effective_rate = sum.elapsed_s > 0 ? static_cast<double>(sum.bytes_read) / sum.elapsed_s : 0;

  catalog::BackupStatus status = catalog::BackupStatus::complete;
  if (!sum.error.empty()) {
    status = catalog::BackupStatus::failed;
  } else if (read_files == 0 && !plan.files.empty()) {
    status = catalog::BackupStatus::failed;
    sum.error = "the duration ended before any file was completely backed up";
    sum.error_code = Errc::timed_out;
  } else if (read_files < plan.files.size()) {
    std::string why = "the duration ended with " + std::to_string(files.size()) + " of " +
                      std::to_string(planned) + " files backed up";
    status = opts.partial ? catalog::BackupStatus::partial : catalog::BackupStatus::failed;
    sum.error = opts.partial ? why : why + " (use --partial to keep them)";
    sum.error_code = Errc::timed_out;
  }
  // --max-corrupt: a file with more corrupt pages fails the backup (each is listed).
  std::sort(sum.pages.corrupt.begin(), sum.pages.corrupt.end(),
            [](const CorruptBlock& a, const CorruptBlock& b) {
              return a.file != b.file ? a.file < b.file : a.offset < b.offset;
            });
  bool corruption_failed = false;
  if (!opts.validate_only) {
    // Per file: its corrupt pages, and the block of the first.
    std::map<std::string, std::pair<uint64_t, uint64_t>> per_file;
    for (const auto& c : sum.pages.corrupt)
      ++per_file.try_emplace(c.file, 0, c.block).first->second.first;
    for (const auto& [file, found] : per_file)
      if (found.first > opts.max_corrupt && status != catalog::BackupStatus::failed) {
        status = catalog::BackupStatus::failed;
        corruption_failed = true;
        sum.error_code = Errc::corrupt;
        sum.error = "'" + file + "' has " + std::to_string(found.first) +
                    " corrupt page(s), more than --max-corrupt " +
                    std::to_string(opts.max_corrupt) + " allows (the first: block " +
                    std::to_string(found.second) + ")";
      }
  }

  // The page checks go to the catalog (list --corrupt): complete when every planned file was
  // read through, whatever was found in it.
  if (validator) {
    catalog::PageCheck pc;
    pc.time_ns = begin.start_time_ns;
    pc.backup_id = id;
    pc.format = validator->name();
    pc.complete = read_files == plan.files.size() &&
                  (status != catalog::BackupStatus::failed || corruption_failed) &&
                  !(opts.cancel && opts.cancel->load());
    pc.sources = begin.sources;
    pc.pages_checked = sum.pages.checked;
    pc.corrupt_total = sum.pages.corrupt.size();
    pc.corrupt = sum.pages.corrupt;
    if (auto r = cat.add_page_check(pc); !r)
      sum.warnings.push_back("the page checks were not recorded in the catalog: " +
                             r.error().what);
  }
  if (opts.validate_only) {
    // Nothing was written; the catalog holds only the page checks: the summary is the result.
    sum.status = status == catalog::BackupStatus::failed ? "failed" : "complete";
    if (status == catalog::BackupStatus::partial) sum.status = "partial";
    return sum;
  }
  // Pieces that hold no completed file (the deadline cut their files short) are of no use.
  if (status == catalog::BackupStatus::partial) {
    std::set<std::string> used;
    for (const auto& f : files) used.insert(f.pieces.begin(), f.pieces.end());
    std::vector<catalog::PieceRecord> kept;
    std::vector<PieceFile> unused;
    for (auto& p : pieces) {
      // A piece already recorded stays: the end record counts every recorded piece.
      if (used.count(p.name) || recorded.count(p.name)) kept.push_back(std::move(p));
      else if (!p.media) unused.push_back(file_of(p));
    }
    if (auto w = remove_own_pieces(unused, dest, "", "holding no completely backed-up file"))
      sum.warnings.push_back(*w);
    pieces = std::move(kept);
    sum.pieces = static_cast<uint32_t>(pieces.size());
  }
  // A level backup on removable media keeps its maps with the catalog before it is
  // recorded: a later level 1 reads them there instead of mounting the volumes.
  if (status != catalog::BackupStatus::failed && !media_maps.empty())
    if (auto r = save_media_maps(cat.dir(), id, media_maps, opts.keys.get()); !r) {
      sum.error = r.error().what;
      sum.error_code = r.error().code;
      status = catalog::BackupStatus::failed;
    }
  // Record pieces, then files, then the end: a reader sees the backup complete (or
  // partial) only when all it names is there. A failed backup keeps nothing.
  if (status != catalog::BackupStatus::failed && !record_errors.empty()) {
    sum.error = "a piece could not be recorded in the catalog: " + record_errors.front().what;
    sum.error_code = record_errors.front().code;
    status = catalog::BackupStatus::failed;
  }
  if (status != catalog::BackupStatus::failed) {
    for (const auto& p : pieces)
      if (recorded.count(p.name)) continue;  // recorded when it became durable
      else if (auto r = cat.add_piece(id, p, {}); !r && sum.error.empty()) {
        sum.error = r.error().what;
        sum.error_code = r.error().code;
        status = catalog::BackupStatus::failed;
      }
    util::crash_point("backup-pieces-recorded");
    if (status != catalog::BackupStatus::failed) {
      for (const auto& d : plan.dirs)
        files.push_back({d.path, 0, d.mode, d.mtime_ns, d.uid, d.gid, {}, {}});
      if (auto r = cat.add_files(id, files); !r) {
        sum.error = r.error().what;
        sum.error_code = r.error().code;
        status = catalog::BackupStatus::failed;
      }
      util::crash_point("backup-files-recorded");
    }
  }
  if (resumed && status == catalog::BackupStatus::failed) {
    // A resume that fails leaves the backup interrupted: what is durable stays for the next
    // resume, and only the pieces this job did not finish go.
    if (auto w = remove_own_pieces(unfinished, dest, "", "this job did not finish"))
      sum.warnings.push_back(*w);
    sum.warnings.push_back("backup " + std::to_string(id) + " stays interrupted: run the same "
                           "backup with --resume " + std::to_string(id) + " again");
    sum.status = "failed";
    sum.pieces = 0;
    sum.files = 0;
    return sum;
  }
  if (status == catalog::BackupStatus::failed && !opts.media) {
    // Nothing of a failed backup is usable: its pieces go, or a warning says where they are.
    std::vector<PieceFile> own;
    for (const auto& p : pieces) own.push_back(file_of(p));
    own.insert(own.end(), unfinished.begin(), unfinished.end());
    const std::string job_prefix = piece_name_prefix(id, ctx.catalog_id) + ctx.stamp + "-";
    if (auto w = remove_own_pieces(own, dest, job_prefix, "of this failed backup"))
      sum.warnings.push_back(*w);
  }
  if (status == catalog::BackupStatus::failed) {
    sum.pieces = 0;
    sum.files = 0;
    sum.changed_files.clear();
    sum.file_changes.clear();
    sum.parents.clear();
  }
  catalog::BackupEnd end;
  end.status = status;
  end.end_time_ns = wall_ns();
  end.files = sum.files;
  end.bytes_read = sum.bytes_read;
  end.bytes_written = sum.bytes_written;
  end.pieces = status == catalog::BackupStatus::failed ? 0 : static_cast<uint32_t>(pieces.size());
  end.message = sum.error;
  sum.status = status == catalog::BackupStatus::complete  ? "complete"
               : status == catalog::BackupStatus::partial ? "partial"
                                                          : "failed";
  if (auto r = cat.end_backup(id, end); !r) {
    sum.status = "failed";
    sum.error = r.error().what;
    sum.error_code = r.error().code;
  }
  util::crash_point("backup-ended");
  // A copy of the catalog's records of this destination's backups goes beside the pieces,
  // for `catalog rebuild`; it cannot change the outcome of the backup, only warn.
  if (!opts.media && sum.status != "failed")
    if (auto r = write_catalog_autobackup(cat, dest, id, opts.keys.get()); !r)
      sum.warnings.push_back("the catalog autobackup was not written: " + r.error().what);
  return sum;
}

}  // namespace stripeback::engine
