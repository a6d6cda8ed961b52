#include "engine/restore/restore_job.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <span>
#include <thread>

#include "engine/wiring/backends.h"
#include "engine/pieces/change_map.h"
#include "engine/restore/restore_channel.h"
#include "engine/restore/restore_delta.h"
#include "engine/restore/restore_journal.h"
#include "engine/restore/restore_stream.h"
#include "storage/async/file.h"
#include "util/escape.h"
#include "util/json.h"
#include "util/units.h"
#include "storage/registry.h"
#include "util/log.h"
#include "util/phases.h"

namespace stripeback::engine {
namespace {

using util::Next;

bool under(const std::string& path, const std::string& filter) {
  if (filter == "/") return true;
  return path == filter ||
         (path.size() > filter.size() && path.compare(0, filter.size(), filter) == 0 &&
          path[filter.size()] == '/');
}

struct Choice {
  const catalog::Backup* backup;
  const catalog::FileRecord* file;
};

// Why backup `b` is passed over for the files it holds: its expired pieces.
std::string expired_why(const catalog::Backup& b) {
  for (const auto& p : b.pieces)
    if (p.expired) return "piece '" + p.name + "' is expired: " + p.expired_reason;
  return "it is " + b.status_name();
}

Result<std::vector<Choice>> select_files(const RestoreOptions& opts,
                                         const std::vector<catalog::Backup>& backups,
                                         std::vector<Fallback>& fallbacks) {
  std::vector<const catalog::Backup*> candidates;
  // Backups passed over because crosscheck found them expired, newest first.
  std::vector<const catalog::Backup*> expired;
  if (opts.backup_id) {
    auto it = std::find_if(backups.begin(), backups.end(),
                           [&](const catalog::Backup& b) { return b.id == *opts.backup_id; });
    if (it == backups.end())
      return fail(Errc::not_found, "backup " + std::to_string(*opts.backup_id) +
                                       " is not in the catalog");
    if (it->damaged())
      return fail(Errc::corrupt, "backup " + std::to_string(it->id) + " is damaged (" +
                                     it->damage + "): nothing was restored");
    if (!it->usable())
      return fail(Errc::invalid_argument,
                  "backup " + std::to_string(*opts.backup_id) + " is " + it->status_name() +
                      ", not restorable" +
                      (it->expired() ? " (" + expired_why(*it) + ")" : std::string()));
    candidates.push_back(&*it);
  } else {
    // A damaged backup may have held the newest copy of any file (its file records are what
    // is lost): restoring around it would quietly bring back older data.
    std::vector<const catalog::Backup*> damaged;
    // A tag names its newest backup; files named by PATH are searched in every backup with
    // the tag, newest first.
    const bool every_tagged = opts.tag && !opts.paths.empty();
    for (auto it = backups.rbegin(); it != backups.rend(); ++it) {
      if (opts.tag && it->begin.tag != *opts.tag) continue;
      if (it->damaged()) damaged.push_back(&*it);
      if (it->expired() && it->ended && !it->deleting) expired.push_back(&*it);
      if (!it->usable()) continue;
      candidates.push_back(&*it);
      if (opts.tag && !every_tagged) break;  // the newest complete backup with that tag
    }
    if (!damaged.empty()) {
      std::string ids;
      for (const auto* b : damaged) ids += (ids.empty() ? "" : ", ") + std::to_string(b->id);
      return fail(Errc::corrupt,
                  "backup " + ids + (damaged.size() > 1 ? " are" : " is") + " damaged (backup " +
                      std::to_string(damaged.front()->id) + ": " + damaged.front()->damage +
                      "), so the newest copy of a file may be lost; nothing was restored. "
                      "Name a backup to use with --backup ID (see 'stripeback list')");
    }
    if (candidates.empty()) {
      std::string also;
      if (!expired.empty())
        also = " (backup " + std::to_string(expired.front()->id) + " is expired: " +
               expired_why(*expired.front()) + ")";
      return fail(Errc::not_found, (opts.tag ? "no complete backup with tag '" + *opts.tag + "'"
                                             : std::string("no complete backup in the catalog")) +
                                       also);
    }
  }
  std::vector<std::string> filters;
  for (const auto& p : opts.paths) filters.push_back(storage::normal_path(p));
  std::vector<bool> matched(filters.size(), false);
  std::set<std::string> taken;
  std::vector<Choice> out;
  auto skipped = [&](const std::string& path, uint64_t id) {
    auto it = opts.skip.find(path);
    return it != opts.skip.end() && it->second.count(id) != 0;
  };
  for (const catalog::Backup* b : candidates) {
    for (const auto& f : b->files) {
      bool want = filters.empty();
      for (size_t i = 0; i < filters.size(); ++i)
        if (under(f.path, filters[i])) want = matched[i] = true;
      if (!want || skipped(f.path, b->id) || !taken.insert(f.path).second) continue;
      out.push_back({b, &f});
    }
  }
  // Files whose newest copy is in an expired backup: restored from the next newest copy
  // (said so), or not at all with --no-fallback.
  std::map<std::string, const catalog::Backup*> newest_expired;
  for (const catalog::Backup* e : expired)
    for (const auto& f : e->files) {
      auto [it, fresh] = newest_expired.emplace(f.path, e);
      if (!fresh && it->second->id < e->id) it->second = e;
    }
  if (!newest_expired.empty()) {
    std::vector<Choice> kept;
    for (const Choice& c : out) {
      auto it = newest_expired.find(c.file->path);
      if (it == newest_expired.end() || it->second->id < c.backup->id) {
        kept.push_back(c);
        continue;
      }
      if (!opts.fallback)
        return fail(Errc::not_found, "the newest copy of '" + c.file->path + "' is in backup " +
                                         std::to_string(it->second->id) + ", which is expired (" +
                                         expired_why(*it->second) +
                                         "); not restoring an older copy (--no-fallback)");
      if (!S_ISDIR(c.file->mode))
        fallbacks.push_back({c.file->path, it->second->id, c.backup->id,
                             "backup " + std::to_string(it->second->id) + " is expired (" +
                                 expired_why(*it->second) + ")"});
      kept.push_back(c);
    }
    out = std::move(kept);
  }
  for (size_t i = 0; i < filters.size(); ++i)
    if (!matched[i])
      return fail(Errc::not_found,
                  "no backed-up file matches '" + opts.paths[i] + "'" +
                      (opts.tag ? " in the backups with tag '" + *opts.tag + "'" : std::string()));
  return out;
}

// The chain of a file of a backup with a level on removable media: the backups it builds
// on (newest first, each on such media), its change map and the backup each unit is read
// from: the newest of the chain that wrote it (the rule a level 1 follows to write a unit:
// its digest or length differs from its parent's, or the parent has no such unit).
struct MediaChain {
  std::shared_ptr<const UnitMap> units;
  std::vector<std::pair<const catalog::Backup*, const catalog::FileRecord*>> older;
  std::vector<uint64_t> owner;
};

Result<MediaChain> media_chain(const catalog::Backup& b, const catalog::FileRecord& f,
                               const std::map<uint64_t, const catalog::Backup*>& by_id,
                               PieceCache& cache) {
  MediaChain c;
  std::vector<UnitMap> maps;
  SB_ASSIGN(UnitMap top, load_file_map(b, f, cache));
  maps.push_back(std::move(top));
  const catalog::FileRecord* cur = &f;
  uint64_t below = b.id;
  while (cur->parent) {
    const std::string needs = "'" + f.path + "' (backup " + std::to_string(b.id) +
                              ") builds on backup " + std::to_string(cur->parent);
    auto it = by_id.find(cur->parent);
    if (it == by_id.end() || cur->parent >= below)
      return fail(Errc::not_found, needs + ", which is not in the catalog");
    const catalog::Backup& pb = *it->second;
    if (!pb.usable())
      return fail(Errc::not_found, needs + ", which is " + pb.status_name() + ": it cannot be restored");
    if (!on_media(pb))
      return fail(Errc::unsupported, needs + ", which is not on removable media");
    auto fit = std::find_if(pb.files.begin(), pb.files.end(),
                            [&](const catalog::FileRecord& x) { return x.path == cur->path; });
    if (fit == pb.files.end() || fit->unit != f.unit)
      return fail(Errc::not_found, needs + ", which does not hold it");
    auto m = load_file_map(pb, *fit, cache);
    if (!m) return m.error().wrap(needs);
    maps.push_back(std::move(*m));
    c.older.push_back({&pb, &*fit});
    below = pb.id;
    cur = &*fit;
  }
  const UnitMap& want = maps.front();
  std::vector<uint64_t> ids{b.id};
  for (const auto& [ob, of] : c.older) ids.push_back(ob->id);
  c.owner.assign(want.digests.size(), 0);
  for (uint64_t u = 0; u < want.digests.size(); ++u) {
    size_t i = 0;
    for (; i + 1 < maps.size(); ++i) {
      const UnitMap& mine = maps[i];
      const UnitMap& parent = maps[i + 1];
      // The unit as this backup read it; its parent had it the same: the parent owns it.
      if (u >= mine.digests.size() || u >= parent.digests.size() ||
          unit_length(parent.size, parent.unit, u) != unit_length(mine.size, mine.unit, u) ||
          parent.digests[u] != mine.digests[u])
        break;
    }
    c.owner[u] = ids[i];
  }
  c.units = std::make_shared<const UnitMap>(maps.front());
  return c;
}

// Where `original` is restored below the target, relative to it ("a/b/c").
std::string relative_below(const std::string& original) {
  auto comps = safe_components(original);
  if (!comps) return restore_relative(original).substr(1);
  std::string rel;
  for (const auto& c : *comps) rel += (rel.empty() ? "" : "/") + c;
  return rel;
}

}  // namespace

namespace {

// The frame check records of a validation: for each backup with a piece read, the frames
// verified (from the header logs) as ranges, and when its every frame was last checked.
std::vector<catalog::FrameCheck> frame_checks_of(
    const std::vector<catalog::Backup>& backups, const PieceCache& cache,
    const std::map<const PieceReader*, std::vector<uint64_t>>& verified,
    const CheckHistory& history, const std::string& mode, int64_t time_ns,
    const std::vector<std::string>& errors) {
  std::vector<catalog::FrameCheck> out;
  for (const auto& b : backups) {
    catalog::FrameCheck fc;
    fc.backup_id = b.id;
    fc.time_ns = time_ns;
    fc.mode = mode;
    bool all_open = !b.pieces.empty(), any = false;
    int64_t oldest = std::numeric_limits<int64_t>::max();
    for (const auto& p : b.pieces) {
      const PieceReader* reader = cache.opened(p);
      if (!reader) {
        all_open = false;
        continue;
      }
      any = true;
      std::vector<uint64_t> frames;
      for (const auto& file : reader->trailer().extents)
        for (const Extent& e : file)
          if (e.type == FrameType::data) frames.push_back(e.frame_offset);
      std::sort(frames.begin(), frames.end());
      static const std::vector<uint64_t> none;
      auto v = verified.find(reader);
      const std::vector<uint64_t>& now = v == verified.end() ? none : v->second;
      fc.frames_checked += now.size();
      auto ranges = checked_ranges(frames, now);
      for (uint64_t f : frames) {
        const bool checked = std::binary_search(now.begin(), now.end(), f);
        oldest = std::min(oldest, checked ? time_ns : history.last(p.name, f));
      }
      if (!ranges.empty()) fc.pieces.push_back({p.name, std::move(ranges)});
    }
    // Failures are counted by the errors that name one of the backup's pieces.
    for (const auto& e : errors)
      for (const auto& p : b.pieces)
        if (e.find(p.name) != std::string::npos) {
          ++fc.frames_failed;
          break;
        }
    if (!any || (fc.frames_checked == 0 && fc.frames_failed == 0)) continue;
    fc.full_check_ns = all_open && oldest != std::numeric_limits<int64_t>::max() ? oldest : 0;
    out.push_back(std::move(fc));
  }
  return out;
}

}  // namespace

namespace {

// The state the phases of one restore or validation share. The phases fill it in order;
// the channels read what the phases before them set (RestoreContext points into it).
// Members are declared in the order they are made, so they go in the reverse order: the
// files, the journal and the target close before the pieces.
struct RestoreJob {
  RestoreJob(const RestoreOptions& o, catalog::Catalog& c)
      : opts(o), cat(c), cache(o.channel.direct, o.keys.get()) {
    cache.set_catalog_dir(cat.dir());
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
};

// What planning a file found wrong, when something did: the file fails alone and the job
// goes on (an Error in a Result stops the job).
using FileFailure = std::optional<Error>;

// A failure to open a file's pieces that stops the job before anything is written: a wrong
// key, or an encrypted piece and no key.
bool stops_the_job(const Error& e, const RestoreOptions& opts) {
  return e.code == Errc::wrong_key || (e.code == Errc::invalid_argument && !opts.keys);
}

// The pieces holding `f` of backup `b`, with the file's id in each.
Result<std::vector<RestorePart>> load_parts(RestoreJob& job, const catalog::Backup& b,
                                            const catalog::FileRecord& f) {
  std::vector<RestorePart> parts;
  for (const std::string& pname : f.pieces) {
    if (std::none_of(b.pieces.begin(), b.pieces.end(),
                     [&](const catalog::PieceRecord& p) { return p.name == pname; }))
      return fail(Errc::not_found, "piece '" + pname + "' of '" + f.path +
                                       "' is not recorded in the catalog");
    auto r = job.cache.get(b, pname);
    if (!r) {
      if (stops_the_job(r.error(), job.opts)) return r.error();
      return fail(r.error().code, r.error().what + " (needed for '" + f.path + "')");
    }
    int fid = (*r)->find_file(f.path);
    if (fid < 0)
      return fail(Errc::corrupt, "piece '" + (*r)->path() + "' does not hold '" + f.path + "'");
    parts.push_back({*r, static_cast<uint32_t>(fid)});
  }
  return parts;
}

// The backups a file of a backup with a level builds on, newest first, down to the one
// that holds it whole: their pieces go to item.older, their ids to `chain`.
Result<FileFailure> load_older(RestoreJob& job, const Choice& c, RestoreItem& item,
                               std::vector<uint64_t>& chain) {
  const catalog::FileRecord* cur = c.file;
  while (cur->parent) {
    auto it = job.by_id.find(cur->parent);
    const std::string needs = "'" + c.file->path + "' (backup " + std::to_string(c.backup->id) +
                              ") builds on backup " + std::to_string(cur->parent);
    if (it == job.by_id.end() || cur->parent >= chain.back())
      return FileFailure{Error{Errc::not_found, 0, needs + ", which is not in the catalog"}};
    const catalog::Backup& pb = *it->second;
    if (!pb.usable())
      return FileFailure{Error{Errc::not_found, 0,
                               needs + ", which is " + pb.status_name() +
                                   ": it cannot be restored"}};
    auto fit = std::find_if(pb.files.begin(), pb.files.end(),
                            [&](const catalog::FileRecord& f) { return f.path == cur->path; });
    if (fit == pb.files.end() || fit->unit != c.file->unit)
      return FileFailure{Error{Errc::not_found, 0, needs + ", which does not hold it"}};
    auto pparts = load_parts(job, pb, *fit);
    if (!pparts) {
      if (stops_the_job(pparts.error(), job.opts)) return pparts.error();
      return FileFailure{Error{pparts.error().code, 0,
                               pparts.error().what + " (of backup " + std::to_string(pb.id) +
                                   ", which '" + c.file->path + "' builds on)"}};
    }
    item.older.push_back({pb.id, fit->size, std::move(*pparts)});
    chain.push_back(pb.id);
    cur = &*fit;
  }
  return FileFailure{};
}

// The change map of a file of a backup with a level: every unit restored is checked
// against it.
FileFailure load_units(RestoreJob& job, const Choice& c, RestoreItem& item) {
  auto m = load_file_map(*c.backup, *c.file, job.cache);
  if (m) {
    item.units = std::make_shared<const UnitMap>(std::move(*m));
    return {};
  }
  if (c.file->parent || m.error().code == Errc::wrong_key) return m.error();
  // Held whole by its own backup: its frames restore it; only the level 1s built on this
  // backup need the map.
  item.map_lost = true;
  job.sum.warnings.push_back("the digest map of '" + c.file->path + "' in backup " +
                             std::to_string(c.backup->id) + " cannot be read (" +
                             m.error().what + "): restored and checked frame by frame; "
                             "level 1 backups built on it cannot use it");
  return {};
}

// A file read through its pieces' indexes: its pieces and, for a backup with a level, those
// of the backups it builds on and its change map. `chosen_id`: the backup the file was
// chosen from, which a fallback passes over when the file fails.
Result<void> plan_indexed_file(RestoreJob& job, const Choice& c, uint64_t chosen_id) {
  RestoreItem item{*c.file, c.backup->id, {}, {}, {}};
  std::vector<uint64_t> chain{c.backup->id};
  FileFailure failed;
  if (auto parts = load_parts(job, *c.backup, *c.file); !parts) {
    if (stops_the_job(parts.error(), job.opts)) return parts.error();
    failed = parts.error();
  } else {
    item.parts = std::move(*parts);
    if (c.file->unit) {
      SB_ASSIGN(failed, load_older(job, c, item, chain));
      if (!failed) failed = load_units(job, c, item);
    }
  }
  if (failed) {
    job.sum.add_error(*failed);
    job.sum.failed_files.push_back({c.file->path, chosen_id, failed->what});
    return ok();
  }
  job.items.push_back(std::move(item));
  job.used.insert(chain.begin(), chain.end());
  return ok();
}

// A file whose pieces are on media read in order is streamed from them (restore_stream.h);
// one of a backup with a level takes what its backup does not hold from those below it.
Result<void> plan_media_file(RestoreJob& job, const Choice& c) {
  const FrameSelection& select = job.opts.select;
  if (select.partial())
    return fail(Errc::invalid_argument,
                "validate " + std::string(select.parts ? "--part" : select.sample ? "--sample"
                                                                                  : "--max-duration") +
                    " reads frames out of order, which removable media cannot; backup " +
                    std::to_string(c.backup->id) + " is on them: validate it whole");
  if (!c.file->unit) {
    if (auto r = job.stream.add(*c.file, *c.backup); !r) job.sum.add_error(r.error());
    else job.used.insert(c.backup->id);
    return ok();
  }
  auto chain = media_chain(*c.backup, *c.file, job.by_id, job.cache);
  if (!chain) {
    // A missing or wrong key stops the restore before anything is written.
    if (stops_the_job(chain.error(), job.opts)) return chain.error();
    job.sum.add_error(chain.error());
    return ok();
  }
  auto r = job.stream.add_chain(*c.file, *c.backup, chain->units, chain->older,
                                std::move(chain->owner));
  if (!r) {
    job.sum.add_error(r.error());
    return ok();
  }
  job.used.insert(c.backup->id);
  for (const auto& [ob, of] : chain->older) job.used.insert(ob->id);
  return ok();
}

// One chosen file (not a directory). A file backup optimization skipped comes from the
// backup holding that version.
Result<void> plan_file(RestoreJob& job, const Choice& chosen) {
  auto held = held_copy(*chosen.backup, *chosen.file, job.backups);
  if (!held) {
    job.sum.add_error(held.error());
    return ok();
  }
  const Choice c{held->backup, held->file};
  if (c.file->pieces.empty()) {
    job.sum.add_error({Errc::corrupt, 0, "catalog names no piece for '" + c.file->path + "'"});
    return ok();
  }
  if (on_media(*c.backup)) return plan_media_file(job, c);
  return plan_indexed_file(job, c, chosen.backup->id);
}

// Phase: the options, before anything is read. The job's time counts from here.
Result<Next> check_options(RestoreJob& job) {
  const RestoreOptions& opts = job.opts;
  if (opts.channels < 1 || opts.channels > 256)
    return fail(Errc::invalid_argument, "--channels must be between 1 and 256");
  if (opts.target.empty() && !opts.verify_only)
    return fail(Errc::invalid_argument, "no restore target given (--to)");
  if (opts.delta && opts.verify_only)
    return fail(Errc::invalid_argument, "--delta updates a restore target; validate has none");
  if (opts.select.partial() && !opts.verify_only)
    return fail(Errc::invalid_argument, "--sample, --part and --max-duration are for validate");
  job.start = std::chrono::steady_clock::now();
  job.start_ns = wall_ns();
  return Next::go_on;
}

// Phase: the files to restore and the backup each comes from (select_files).
Result<Next> choose_backups(RestoreJob& job) {
  job.backups = job.cat.backups();
  for (const auto& b : job.backups) job.by_id[b.id] = &b;
  SB_ASSIGN(job.choices, select_files(job.opts, job.backups, job.sum.fallbacks));
  return Next::go_on;
}

// Phase (restore): every destination is checked before anything is written: the target is
// usable, no path could escape it, and no file exists there unless forced or updated in
// place.
Result<Next> check_target(RestoreJob& job) {
  const RestoreOptions& opts = job.opts;
  std::string target = storage::normal_path(opts.target);
  auto pl = place_of(target);
  if (!pl) return fail(Errc::invalid_argument, "restore target is not usable: " + pl.error().what);
  job.target_place = std::move(*pl);
  const Place& place = *job.target_place;
  if (opts.delta && !place.storage->caps().random_write)
    return fail(Errc::unsupported, "restore --delta updates files in place, which " +
                                       std::string(place.storage->scheme()) +
                                       " targets cannot ('" + target + "')");
  std::vector<std::string> existing;
  for (const auto& c : job.choices) {
    SB_TRY(safe_components(c.file->path));
    if (S_ISDIR(c.file->mode)) {
      job.dirs.push_back(c.file);
      continue;
    }
    if (opts.force || opts.delta) continue;
    storage::Location dest = place.at.join(relative_below(c.file->path));
    if (place.storage->stat(dest, /*follow=*/false)) existing.push_back(dest.str());
  }
  if (!existing.empty()) {
    std::string msg = "refusing to overwrite " + std::to_string(existing.size()) +
                      " existing file(s), e.g. '" + existing.front() +
                      "' (use --force to replace them)";
    return fail(Errc::exists, msg);
  }
  return Next::go_on;
}

// Phase (validate): nothing is written, but a path that could escape a target is refused
// as a restore refuses it.
Result<Next> check_paths(RestoreJob& job) {
  for (const auto& c : job.choices) SB_TRY(safe_components(c.file->path));
  return Next::go_on;
}

// Phase: opens each needed piece once, loads its index and plans every file from it. A
// missing or wrong key stops the job; other failures are the file's.
Result<Next> plan_files(RestoreJob& job) {
  for (const Choice& chosen : job.choices)
    if (!S_ISDIR(chosen.file->mode)) SB_TRY(plan_file(job, chosen));
  job.sum.piece_bytes_read += job.cache.metadata_bytes();
  // Pieces read in order are opened only now, with the key checked on their header.
  SB_TRY(job.stream.check_keys(job.opts.keys.get(), job.opts.media_drives));
  return Next::go_on;
}

// Phase (restore): the target is made only now, once every piece (and key) is known good.
// It is reached through its Directory, never following a link below it. Temporaries of a
// killed restore into this target are named and removed before this one creates any
// (restore_journal.h); its own journal comes first, to learn the owner the medium gives
// this restore's files.
Result<Next> open_target(RestoreJob& job) {
  const Place& place = *job.target_place;
  auto r = place.storage->open_dir(place.at, /*create=*/true);
  if (!r) return fail(Errc::invalid_argument, "restore target is not usable: " + r.error().what);
  job.root = std::move(*r);
  SB_ASSIGN(job.journal, RestoreJournal::create(*job.root));
  for (auto& w : clean_restore_leftovers(*job.root, ::geteuid() == 0, *job.journal))
    job.sum.warnings.push_back(std::move(w));
  return Next::go_on;
}

// Phase: the files largest first, and what every channel shares (RestoreContext), with
// buffers that hold the largest frame the pieces hold, whatever buffer size the backup
// used.
Result<Next> set_up_channels(RestoreJob& job) {
  const RestoreOptions& opts = job.opts;
  job.sum.backups_used.assign(job.used.begin(), job.used.end());
  std::sort(job.items.begin(), job.items.end(), [](const RestoreItem& a, const RestoreItem& b) {
    return a.file.size != b.file.size ? a.file.size > b.file.size : a.file.path < b.file.path;
  });
  ChannelConfig config = opts.channel;
  auto fit_frames = [&](const std::vector<RestorePart>& parts) {
    for (const auto& part : parts)
      for (const Extent& e : part.piece->trailer().extents[part.file_id])
        config.buffer_size = std::max<size_t>(
            config.buffer_size, align_up(std::max(e.stored_len, e.raw_len)));
  };
  for (const auto& it : job.items) {
    fit_frames(it.parts);
    for (const auto& l : it.older) fit_frames(l.parts);
  }
  RestoreContext& ctx = job.ctx;
  ctx.header_logs = nullptr;
  ctx.verify_only = opts.verify_only;
  ctx.job_start = job.start;
  ctx.root = job.root.get();
  ctx.caps = job.target_place ? &job.target_place->storage->caps() : nullptr;
  ctx.force = opts.force || opts.delta;
  ctx.set_owner = ::geteuid() == 0;
  ctx.cancel = opts.cancel;
  ctx.config = config;
  ctx.journal = job.journal.get();
  job.deltas.resize(job.items.size());
  job.done.assign(job.items.size(), false);
  return Next::go_on;
}

// Compares the delta chunks' blocks, `channels` threads at most (restore_delta.h).
void compare_blocks(RestoreJob& job, std::vector<DeltaChunk>& dchunks, size_t span) {
  std::atomic<size_t> dnext{0};
  const uint32_t n = std::max<uint32_t>(
      1, std::min<uint32_t>(job.opts.channels, static_cast<uint32_t>(dchunks.size())));
  std::vector<std::thread> cmp;
  if (!dchunks.empty())
    for (uint32_t c = 0; c < n; ++c)
      cmp.emplace_back([&, log_sink = util::current_log_sink(),
                        storages = storage::current_registry()] {
        util::ScopedLogSink logs(log_sink);
        storage::ScopedRegistry registered(storages);
        run_delta_compare(job.ctx, dchunks, dnext, span);
      });
  for (auto& t : cmp) t.join();
}

// Phase (restore --delta): the existing files are compared with the backup first, in
// parallel. A file found equal is done (its attributes set); one that differs goes on with
// only its differing blocks, or whole when most differ.
Result<Next> compare_in_place(RestoreJob& job) {
  if (!job.opts.delta) return Next::go_on;
  RestoreSummary& sum = job.sum;
  sum.delta.used = true;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<DeltaChunk> dchunks;
  size_t span = job.ctx.config.buffer_size;
  for (size_t i = 0; i < job.items.size(); ++i) {
    auto d = open_delta_file(*job.root, job.items[i], job.ctx.config, dchunks);
    if (!d) {
      sum.add_error(d.error());
      job.done[i] = true;
      continue;
    }
    job.deltas[i] = std::move(*d);
    if (job.deltas[i])
      for (const auto& b : job.deltas[i]->blocks)
        span = std::max<size_t>(span, align_up(b.len) + kBlock);
  }
  compare_blocks(job, dchunks, span);
  DeltaSummary& totals = sum.delta;
  for (size_t i = 0; i < job.items.size(); ++i) {
    auto& delta = job.deltas[i];
    if (!delta) continue;
    bool whole = false;
    Error err;
    if (!settle_delta_file(job.ctx, *delta, &whole, &err, totals)) {
      job.done[i] = true;
      if (!err.what.empty()) sum.add_error(err);
      else {
        ++sum.files;
        sum.bytes += job.items[i].file.size;
      }
    }
    if (whole && delta->linked)
      sum.warnings.push_back("'" + delta->shown + "' has " + std::to_string(delta->linked) +
                             " hard links: replaced by a whole copy rather than updated in "
                             "place, so its other names keep their contents");
    if (whole) delta.reset();
  }
  totals.compare_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Next::go_on;
}

// Phase (validate): which frames are checked (frame_select.h): the data frames of the files
// and those selected are counted, and every verified frame's header is logged, for the
// piece audit (piece_audit.h) and the catalog's record.
Result<Next> select_frames(RestoreJob& job) {
  for (const auto& b : job.backups)
    for (const auto& p : b.pieces)
      if (const PieceReader* r = job.cache.opened(p)) job.piece_names[r] = p.name;
  job.keep = [&job](const RestorePart& part, const Extent& e) {
    return e.type == FrameType::data &&
           job.opts.select.keep(job.piece_name(part.piece), e.frame_offset);
  };
  RestoreSummary& sum = job.sum;
  auto count = [&](const std::vector<RestorePart>& parts) {
    for (const auto& part : parts)
      for (const Extent& e : part.piece->trailer().extents[part.file_id]) {
        if (e.type != FrameType::data) continue;
        ++sum.frames_total;
        if (job.keep(part, e)) ++sum.frames_selected;
      }
  };
  for (size_t i = 0; i < job.items.size(); ++i) {
    if (job.done[i]) continue;
    count(job.items[i].parts);
    for (const auto& l : job.items[i].older) count(l.parts);
  }
  for (const auto& [name, reader] : job.cache.readers())
    job.header_logs[reader.get()] = std::make_unique<HeaderLog>();
  job.ctx.header_logs = &job.header_logs;
  return Next::go_on;
}

// Phase: each file's extents, merged from its pieces and checked against the catalog, cut
// into the chunks the channels share (restore_chunks.h). A file that fails here fails
// alone; one compared for a delta restore gives up its undo log (nothing was changed).
Result<Next> chunk_files(RestoreJob& job) {
  const FrameSelection& select = job.opts.select;
  const bool some = select.sample || select.parts;
  for (size_t i = 0; i < job.items.size(); ++i) {
    if (job.done[i]) continue;
    const auto& it = job.items[i];
    auto st = make_file_state(it, job.ctx.config.buffer_size, job.chunks, job.deltas[i].get(),
                              some ? &job.keep : nullptr);
    if (!st) {
      if (job.deltas[i]) {
        FileState gone;
        gone.item = &it;
        gone.delta = job.deltas[i].get();
        gone.dir = std::move(job.deltas[i]->dir);
        abandon_restore_file(job.ctx, gone);
      }
      job.sum.add_error(st.error());
      continue;
    }
    job.states.push_back(std::move(*st));
  }
  for (auto& st : job.states) st->chunks_total = 0;
  for (auto& c : job.chunks) ++c.file->chunks_total;
  return Next::go_on;
}

// Phase (validate): when each frame was last checked (the catalog's records). With
// --max-duration the chunks whose frames have gone longest without a check go first, and
// no chunk is begun after the deadline.
Result<Next> oldest_first(RestoreJob& job) {
  job.history = CheckHistory(job.cat.frame_checks());
  const FrameSelection& select = job.opts.select;
  if (!select.max_duration) return Next::go_on;
  std::vector<std::pair<int64_t, size_t>> order;
  for (size_t i = 0; i < job.chunks.size(); ++i) {
    int64_t oldest = std::numeric_limits<int64_t>::max();
    const FileState& f = *job.chunks[i].file;
    for (size_t e = job.chunks[i].begin; e < job.chunks[i].end; ++e)
      oldest = std::min(oldest, job.history.last(job.piece_name(f.extents[e].part->piece),
                                                 f.extents[e].extent->frame_offset));
    order.push_back({oldest, i});
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<RestoreChunk> sorted;
  for (const auto& [t, i] : order) sorted.push_back(job.chunks[i]);
  job.chunks = std::move(sorted);
  job.ctx.deadline = job.start + *job.opts.select.max_duration;
  return Next::go_on;
}

// What the channels did, into the summary.
void add_outcomes(RestoreJob& job, std::vector<RestoreOutcome>& outs) {
  RestoreSummary& sum = job.sum;
  for (const auto& st : job.states)
    if (st->failed && !S_ISDIR(st->item->file.mode))
      sum.failed_files.push_back({st->item->file.path, st->item->backup_id, st->error.what});
  for (const auto& p : job.stream.pieces_read()) sum.media_pieces.push_back(p);
  sum.media_bytes_read = job.stream.bytes_read();
  for (auto& o : outs) {
    sum.deadline_hit = sum.deadline_hit || o.deadline_hit;
    sum.channels.push_back(o.stats);
    sum.files += o.stats.files;
    sum.bytes += o.file_bytes;
    sum.piece_bytes_read += o.stats.bytes_read;
    for (auto& e : o.errors) sum.add_error(e);
  }
}

// Phase: the channels restore (or verify) the chunks, one thread each, and pieces read in
// order get one channel per drive beside them (restore_stream.h).
Result<Next> run_channels(RestoreJob& job) {
  const RestoreOptions& opts = job.opts;
  RestoreContext& ctx = job.ctx;
  job.sum.verify_only = opts.verify_only;
  ctx.chunks = &job.chunks;
  ctx.next = &job.next;
  const uint32_t nch =
      job.chunks.empty()
          ? 0
          : std::max<uint32_t>(1, std::min<uint32_t>(opts.channels,
                                                     static_cast<uint32_t>(job.chunks.size())));
  const uint32_t nstream = job.media_channels = job.stream.channels();
  ctx.progress = opts.progress;
  if (opts.progress) {
    uint64_t total = 0;
    for (const auto& st : job.states)
      for (const PartExtent& pe : st->extents) total += pe.extent->raw_len;
    opts.progress->start(nch + nstream, total);
  }
  std::vector<RestoreOutcome> outs(nch + nstream);
  std::vector<std::thread> threads;
  const auto log_sink = util::current_log_sink();
  const auto storages = storage::current_registry();
  for (uint32_t c = 0; c < nch; ++c)
    threads.emplace_back([&, c] {
      util::ScopedLogSink logs(log_sink);
      storage::ScopedRegistry registered(storages);
      outs[c] = run_restore_channel(ctx, c + 1);
    });
  for (uint32_t c = 0; c < nstream; ++c)
    threads.emplace_back([&, c] {
      util::ScopedLogSink logs(log_sink);
      storage::ScopedRegistry registered(storages);
      outs[nch + c] =
          job.stream.run_channel(ctx, c, nch + c + 1, opts.keys.get(), opts.media_drives);
    });
  for (auto& t : threads) t.join();
  add_outcomes(job, outs);
  return Next::go_on;
}

// Phase (restore): directories get their attributes last, deepest first (adding files
// changes a directory's mtime), unless cancelled; then the journal goes when every
// temporary it noted has settled.
Result<Next> finish_target(RestoreJob& job) {
  auto& dirs = job.dirs;
  std::sort(dirs.begin(), dirs.end(), [](const auto* a, const auto* b) {
    return a->path.size() != b->path.size() ? a->path.size() > b->path.size() : a->path < b->path;
  });
  if (!(job.opts.cancel && job.opts.cancel->load()))
    for (const auto* d : dirs)
      if (auto r = restore_dir_attributes(*job.root, *d, job.ctx.set_owner); !r)
        job.sum.add_error(r.error());
  if (auto w = job.journal->finish(); !w.empty()) job.sum.warnings.push_back(std::move(w));
  return Next::go_on;
}

// Phase (validate): the frames verified, per piece; a full validation then walks every
// piece whole (piece_audit.h).
Result<Next> audit_pieces(RestoreJob& job) {
  RestoreSummary& sum = job.sum;
  const bool cancelled = job.opts.cancel && job.opts.cancel->load();
  sum.pieces_audited = !job.opts.select.partial() && !cancelled;
  for (const auto& [reader, log] : job.header_logs) {
    auto seen = log->take();
    auto& v = job.verified[reader];
    for (const auto& [off, h] : seen) v.push_back(off);
    sum.frames_checked += v.size();
    if (!sum.pieces_audited) continue;
    auto audited = audit_piece(*reader, seen);
    if (!audited) sum.add_error(audited.error());
    else sum.piece_bytes_read += *audited;
  }
  return Next::go_on;
}

// Phase (validate): what was checked goes to the catalog, a FrameCheck per backup.
Result<Next> record_checks(RestoreJob& job) {
  RestoreSummary& sum = job.sum;
  sum.check_mode = job.opts.select.mode();
  sum.frame_checks = frame_checks_of(job.backups, job.cache, job.verified, job.history,
                                     sum.check_mode, job.start_ns, sum.errors);
  for (const auto& fc : sum.frame_checks)
    if (auto r = job.cat.add_frame_check(fc); !r) {
      sum.warnings.push_back("what was checked is not recorded in the catalog: " +
                             r.error().what);
      break;
    }
  return Next::go_on;
}

// Phase: the job's time, what bounded it (stats.h) and its status.
Result<Next> summarize(RestoreJob& job) {
  RestoreSummary& sum = job.sum;
  sum.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - job.start).count();
  VerdictInputs vi;
  if (job.media_channels > 0) {
    vi.source = "removable media";
  } else if (!job.cache.readers().empty()) {
    if (auto src = place_of(job.cache.readers().begin()->first)) vi.source = src->storage->scheme();
  }
  vi.target = job.target_place ? job.target_place->storage->scheme() : "";
  uint64_t moved = 0;
  for (const auto& ch : sum.channels) moved += ch.bytes_read + ch.bytes_written;
  vi.bytes = moved;
  sum.verdict = explain_verdict(sum.channels, vi);
  sum.status = sum.errors.empty() ? "complete" : "failed";
  return Next::go_on;
}

// A restore and a validation run the same phases, except that a validation has no target
// (it writes nothing) and records in the catalog which frames it checked.
const util::Phase<RestoreJob> kRestore[] = {
    {"check options", check_options},     {"choose backups", choose_backups},
    {"check target", check_target},       {"plan files", plan_files},
    {"open target", open_target},         {"set up channels", set_up_channels},
    {"compare in place", compare_in_place}, {"chunk files", chunk_files},
    {"run channels", run_channels},       {"finish target", finish_target},
    {"summary", summarize}};
const util::Phase<RestoreJob> kValidate[] = {
    {"check options", check_options},     {"choose backups", choose_backups},
    {"check paths", check_paths},         {"plan files", plan_files},
    {"set up channels", set_up_channels}, {"select frames", select_frames},
    {"chunk files", chunk_files},         {"oldest first", oldest_first},
    {"run channels", run_channels},       {"audit pieces", audit_pieces},
    {"record checks", record_checks},     {"summary", summarize}};

Result<RestoreSummary> restore_once(const RestoreOptions& opts, catalog::Catalog& cat) {
  RestoreJob job(opts, cat);
  std::span<const util::Phase<RestoreJob>> phases = kRestore;
  if (opts.verify_only) phases = kValidate;
  SB_TRY(util::run_phases(job, phases));
  return std::move(job.sum);
}

}  // namespace

Result<RestoreSummary> run_restore(const RestoreOptions& opts, catalog::Catalog& cat) {
  SB_ASSIGN(RestoreSummary sum, restore_once(opts, cat));
  // Fallback: each file that failed from its newest copy is restored again from the next
  // newest copy, until one succeeds or none is left.
  if (!opts.fallback || opts.backup_id || opts.verify_only) return sum;
  RestoreOptions again = opts;
  again.progress = nullptr;
  const auto backups = cat.backups();
  for (int round = 0; round < 16 && !sum.failed_files.empty(); ++round) {
    if (opts.cancel && opts.cancel->load()) break;
    again.paths.clear();
    std::vector<FailedFile> retry;
    for (const FailedFile& f : sum.failed_files) {
      again.skip[f.path].insert(f.backup_id);
      const bool older = std::any_of(backups.begin(), backups.end(), [&](const catalog::Backup& b) {
        return b.usable() && b.id < f.backup_id && !again.skip[f.path].count(b.id) &&
               (!opts.tag || b.begin.tag == *opts.tag) &&
               std::any_of(b.files.begin(), b.files.end(),
                           [&](const catalog::FileRecord& r) { return r.path == f.path; });
      });
      if (older) {
        again.paths.push_back(f.path);
        retry.push_back(f);
      }
    }
    if (again.paths.empty()) break;
    auto next = restore_once(again, cat);
    if (!next) {
      sum.warnings.push_back("restoring older copies of the files that failed: " + next.error().what);
      break;
    }
    std::map<std::string, const FailedFile*> failed_again;
    for (const FailedFile& f : next->failed_files) failed_again[f.path] = &f;
    std::vector<FailedFile> still;
    for (const FailedFile& f : sum.failed_files) {
      const bool retried = std::any_of(retry.begin(), retry.end(),
                                       [&](const FailedFile& r) { return r.path == f.path; });
      if (!retried || failed_again.count(f.path)) {
        if (!retried) still.push_back(f);
        continue;
      }
      // Restored from an older copy: its failure is now a fallback.
      auto e = std::find(sum.errors.begin(), sum.errors.end(), f.error);
      if (e != sum.errors.end()) {
        sum.error_codes.erase(sum.error_codes.begin() + (e - sum.errors.begin()));
        sum.errors.erase(e);
      }
      uint64_t used = 0;
      for (uint64_t id : next->backups_used) used = std::max(used, id);
      for (const auto& c : next->fallbacks)
        if (c.file == f.path) used = c.used_backup;
      sum.fallbacks.push_back({f.path, f.backup_id, used, "backup " + std::to_string(f.backup_id) +
                                                              ": " + f.error});
    }
    // Files that failed again: their older copy's failure replaces nothing yet; try older.
    for (const FailedFile& f : next->failed_files) still.push_back(f);
    for (size_t i = 0; i < next->errors.size(); ++i) {
      const std::string& e = next->errors[i];
      if (std::none_of(next->failed_files.begin(), next->failed_files.end(),
                       [&](const FailedFile& f) { return f.error == e; }))
        sum.add_error({next->error_codes[i], 0, e});
    }
    sum.files += next->files;
    sum.bytes += next->bytes;
    sum.piece_bytes_read += next->piece_bytes_read;
    for (uint64_t id : next->backups_used)
      if (std::find(sum.backups_used.begin(), sum.backups_used.end(), id) == sum.backups_used.end())
        sum.backups_used.push_back(id);
    for (auto& w : next->warnings) sum.warnings.push_back(std::move(w));
    sum.failed_files = std::move(still);
  }
  for (const auto& fb : sum.fallbacks)
    sum.warnings.push_back("'" + fb.file + "' was restored from backup " +
                           std::to_string(fb.used_backup) + ", not from its newest copy (" +
                           fb.reason + ")");
  sum.status = sum.errors.empty() ? "complete" : "failed";
  return sum;
}

}  // namespace stripeback::engine
