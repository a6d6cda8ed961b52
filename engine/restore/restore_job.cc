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

namespace stripeback::engine {
namespace {

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

Result<RestoreSummary> restore_once(const RestoreOptions& opts, catalog::Catalog& cat) {
  if (opts.channels < 1 || opts.channels > 256)
    return fail(Errc::invalid_argument, "--channels must be between 1 and 256");
  if (opts.target.empty() && !opts.verify_only)
    return fail(Errc::invalid_argument, "no restore target given (--to)");
  if (opts.delta && opts.verify_only)
    return fail(Errc::invalid_argument, "--delta updates a restore target; validate has none");
  const FrameSelection& select = opts.select;
  if (select.partial() && !opts.verify_only)
    return fail(Errc::invalid_argument, "--sample, --part and --max-duration are for validate");
  auto start = std::chrono::steady_clock::now();
  const int64_t start_ns = wall_ns();
  auto backups = cat.backups();
  RestoreSummary sum;
  SB_ASSIGN(auto choices, select_files(opts, backups, sum.fallbacks));

  std::string target = storage::normal_path(opts.target);
  std::optional<Place> target_place;
  if (!opts.verify_only) {
    auto pl = place_of(target);
    if (!pl) return fail(Errc::invalid_argument, "restore target is not usable: " + pl.error().what);
    target_place = std::move(*pl);
    if (opts.delta && !target_place->storage->caps().random_write)
      return fail(Errc::unsupported, "restore --delta updates files in place, which " +
                                         std::string(target_place->storage->scheme()) +
                                         " targets cannot ('" + target + "')");
  }
  // Check every destination before writing anything.
  std::vector<std::string> existing;
  std::vector<const catalog::FileRecord*> dirs;
  for (const auto& c : choices) {
    SB_TRY(safe_components(c.file->path));
    if (S_ISDIR(c.file->mode)) {
      dirs.push_back(c.file);
      continue;
    }
    if (opts.force || opts.verify_only || opts.delta) continue;
    storage::Location dest = target_place->at.join(relative_below(c.file->path));
    if (target_place->storage->stat(dest, /*follow=*/false)) existing.push_back(dest.str());
  }
  if (!existing.empty()) {
    std::string msg = "refusing to overwrite " + std::to_string(existing.size()) +
                      " existing file(s), e.g. '" + existing.front() +
                      "' (use --force to replace them)";
    return fail(Errc::exists, msg);
  }
  // Open each needed piece once and load its index.
  PieceCache cache(opts.channel.direct, opts.keys.get());
  cache.set_catalog_dir(cat.dir());
  std::vector<RestoreItem> items;
  std::set<uint64_t> used;
  // Files whose pieces are on media read in order only: streamed, piece by piece.
  StreamPlan stream;
  std::map<uint64_t, const catalog::Backup*> by_id;
  for (const auto& b : backups) by_id[b.id] = &b;
  // The pieces holding `f` of backup `b`, with the file's id in each. A missing or wrong
  // key is fatal (nothing is written); other failures are the file's.
  auto load_parts = [&](const catalog::Backup& b, const catalog::FileRecord& f,
                        bool* fatal) -> Result<std::vector<RestorePart>> {
    std::vector<RestorePart> parts;
    for (const std::string& pname : f.pieces) {
      if (std::none_of(b.pieces.begin(), b.pieces.end(),
                       [&](const catalog::PieceRecord& p) { return p.name == pname; }))
        return fail(Errc::not_found, "piece '" + pname + "' of '" + f.path +
                                         "' is not recorded in the catalog");
      auto r = cache.get(b, pname);
      if (!r) {
        *fatal = r.error().code == Errc::wrong_key ||
                 (r.error().code == Errc::invalid_argument && !opts.keys);
        if (*fatal) return r.error();
        return fail(r.error().code, r.error().what + " (needed for '" + f.path + "')");
      }
      int fid = (*r)->find_file(f.path);
      if (fid < 0)
        return fail(Errc::corrupt, "piece '" + (*r)->path() + "' does not hold '" + f.path + "'");
      parts.push_back({*r, static_cast<uint32_t>(fid)});
    }
    return parts;
  };
  for (const auto& chosen : choices) {
    Choice c = chosen;
    if (S_ISDIR(c.file->mode)) continue;
    // A file backup optimization skipped comes from the backup holding that version.
    if (auto held = held_copy(*c.backup, *c.file, backups); !held) {
      sum.add_error(held.error());
      continue;
    } else {
      c = Choice{held->backup, held->file};
    }
    if (c.file->pieces.empty()) {
      sum.add_error({Errc::corrupt, 0, "catalog names no piece for '" + c.file->path + "'"});
      continue;
    }
    RestoreItem item{*c.file, c.backup->id, {}, {}, {}};
    if (on_media(*c.backup) && select.partial())
      return fail(Errc::invalid_argument,
                  "validate " + std::string(select.parts ? "--part" : select.sample ? "--sample"
                                                                                    : "--max-duration") +
                      " reads frames out of order, which removable media cannot; backup " +
                      std::to_string(c.backup->id) + " is on them: validate it whole");
    if (on_media(*c.backup)) {
      if (!c.file->unit) {
        if (auto r = stream.add(*c.file, *c.backup); !r) sum.add_error(r.error());
        else used.insert(c.backup->id);
        continue;
      }
      auto chain = media_chain(*c.backup, *c.file, by_id, cache);
      if (!chain) {
        // A missing or wrong key stops the restore before anything is written.
        if (chain.error().code == Errc::wrong_key ||
            (chain.error().code == Errc::invalid_argument && !opts.keys))
          return chain.error();
        sum.add_error(chain.error());
        continue;
      }
      auto r = stream.add_chain(*c.file, *c.backup, chain->units, chain->older,
                                std::move(chain->owner));
      if (!r) {
        sum.add_error(r.error());
        continue;
      }
      used.insert(c.backup->id);
      for (const auto& [ob, of] : chain->older) used.insert(ob->id);
      continue;
    }
    bool fatal = false;
    auto parts = load_parts(*c.backup, *c.file, &fatal);
    if (!parts) {
      if (fatal) return parts.error();
      sum.add_error(parts.error());
      sum.failed_files.push_back({c.file->path, chosen.backup->id, parts.error().what});
      continue;
    }
    item.parts = std::move(*parts);
    std::vector<uint64_t> chain{c.backup->id};
    std::string err;
    Errc err_code = Errc::not_found;  // a backup the file builds on is missing or unusable
    if (c.file->unit) {
      // The backups the file builds on, down to the one that holds it whole.
      const catalog::FileRecord* cur = c.file;
      while (err.empty() && cur->parent) {
        auto it = by_id.find(cur->parent);
        const std::string needs = "'" + c.file->path + "' (backup " +
                                  std::to_string(c.backup->id) + ") builds on backup " +
                                  std::to_string(cur->parent);
        if (it == by_id.end() || cur->parent >= chain.back()) {
          err = needs + ", which is not in the catalog";
          break;
        }
        const catalog::Backup& pb = *it->second;
        if (!pb.usable()) {
          err = needs + ", which is " + pb.status_name() + ": it cannot be restored";
          break;
        }
        auto fit = std::find_if(pb.files.begin(), pb.files.end(),
                                [&](const catalog::FileRecord& f) { return f.path == cur->path; });
        if (fit == pb.files.end() || fit->unit != c.file->unit) {
          err = needs + ", which does not hold it";
          break;
        }
        auto pparts = load_parts(pb, *fit, &fatal);
        if (!pparts) {
          if (fatal) return pparts.error();
          err_code = pparts.error().code;
          err = pparts.error().what + " (of backup " + std::to_string(pb.id) + ", which '" +
                c.file->path + "' builds on)";
          break;
        }
        item.older.push_back({pb.id, fit->size, std::move(*pparts)});
        chain.push_back(pb.id);
        cur = &*fit;
      }
      if (err.empty()) {
        auto m = load_file_map(*c.backup, *c.file, cache);
        if (m) {
          item.units = std::make_shared<const UnitMap>(std::move(*m));
        } else if (!c.file->parent && m.error().code != Errc::wrong_key) {
          // Held whole by its own backup: its frames restore it; only the level 1s built on
          // this backup need the map.
          item.map_lost = true;
          sum.warnings.push_back("the digest map of '" + c.file->path + "' in backup " +
                                 std::to_string(c.backup->id) + " cannot be read (" +
                                 m.error().what + "): restored and checked frame by frame; "
                                 "level 1 backups built on it cannot use it");
        } else {
          err = m.error().what;
          err_code = m.error().code;
        }
      }
    }
    if (!err.empty()) {
      sum.add_error({err_code, 0, err});
      sum.failed_files.push_back({c.file->path, chosen.backup->id, err});
      continue;
    }
    items.push_back(std::move(item));
    used.insert(chain.begin(), chain.end());
  }
  sum.piece_bytes_read += cache.metadata_bytes();
  // Pieces read in order are opened only now, with the key checked on their header.
  SB_TRY(stream.check_keys(opts.keys.get(), opts.media_drives));
  // The target is made only now, once every piece (and key) is known good. It is reached
  // through its Directory, never following a link below it.
  std::unique_ptr<storage::Directory> root;
  if (!opts.verify_only) {
    auto r = target_place->storage->open_dir(target_place->at, /*create=*/true);
    if (!r) return fail(Errc::invalid_argument, "restore target is not usable: " + r.error().what);
    root = std::move(*r);
  }

  // Temporaries of a killed restore into this target are named and removed before this
  // one creates any (restore_journal.h); its own journal comes first, to learn the owner
  // the medium gives this restore's files.
  std::unique_ptr<RestoreJournal> journal;
  if (!opts.verify_only) {
    SB_ASSIGN(journal, RestoreJournal::create(*root));
    for (auto& w : clean_restore_leftovers(*root, ::geteuid() == 0, *journal))
      sum.warnings.push_back(std::move(w));
  }

  sum.backups_used.assign(used.begin(), used.end());
  std::sort(items.begin(), items.end(), [](const RestoreItem& a, const RestoreItem& b) {
    return a.file.size != b.file.size ? a.file.size > b.file.size : a.file.path < b.file.path;
  });

  // Buffers must hold the largest frame the pieces hold, whatever buffer size the backup used.
  ChannelConfig config = opts.channel;
  auto fit_frames = [&](const std::vector<RestorePart>& parts) {
    for (const auto& part : parts)
      for (const Extent& e : part.piece->trailer().extents[part.file_id])
        config.buffer_size = std::max<size_t>(
            config.buffer_size, align_up(std::max(e.stored_len, e.raw_len)));
  };
  for (const auto& it : items) {
    fit_frames(it.parts);
    for (const auto& l : it.older) fit_frames(l.parts);
  }

  std::atomic<size_t> next{0};
  RestoreContext ctx;
  ctx.header_logs = nullptr;
  ctx.verify_only = opts.verify_only;
  ctx.job_start = start;
  ctx.root = root.get();
  ctx.caps = target_place ? &target_place->storage->caps() : nullptr;
  ctx.force = opts.force || opts.delta;
  ctx.set_owner = ::geteuid() == 0;
  ctx.cancel = opts.cancel;
  ctx.config = config;
  ctx.journal = journal.get();

  // A delta restore first compares the existing files with the backup, in parallel.
  std::vector<std::unique_ptr<DeltaFile>> deltas(items.size());
  std::vector<bool> done(items.size(), false);
  if (opts.delta) {
    sum.delta.used = true;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<DeltaChunk> dchunks;
    size_t span = config.buffer_size;
    for (size_t i = 0; i < items.size(); ++i) {
      auto d = open_delta_file(*root, items[i], config, dchunks);
      if (!d) {
        sum.add_error(d.error());
        done[i] = true;
        continue;
      }
      deltas[i] = std::move(*d);
      if (deltas[i])
        for (const auto& b : deltas[i]->blocks) span = std::max<size_t>(span, align_up(b.len) + kBlock);
    }
    std::atomic<size_t> dnext{0};
    const uint32_t n = std::max<uint32_t>(
        1, std::min<uint32_t>(opts.channels, static_cast<uint32_t>(dchunks.size())));
    std::vector<std::thread> cmp;
    if (!dchunks.empty())
      for (uint32_t c = 0; c < n; ++c)
        cmp.emplace_back([&, log_sink = util::current_log_sink(),
                          storages = storage::current_registry()] {
          util::ScopedLogSink logs(log_sink);
          storage::ScopedRegistry registered(storages);
          run_delta_compare(ctx, dchunks, dnext, span);
        });
    for (auto& t : cmp) t.join();
    DeltaSummary& totals = sum.delta;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!deltas[i]) continue;
      bool whole = false;
      Error err;
      if (!settle_delta_file(ctx, *deltas[i], &whole, &err, totals)) {
        done[i] = true;
        if (!err.what.empty()) sum.add_error(err);
        else {
          ++sum.files;
          sum.bytes += items[i].file.size;
        }
      }
      if (whole && deltas[i]->linked)
        sum.warnings.push_back("'" + deltas[i]->shown + "' has " +
                               std::to_string(deltas[i]->linked) +
                               " hard links: replaced by a whole copy rather than updated in "
                               "place, so its other names keep their contents");
      if (whole) deltas[i].reset();
    }
    totals.compare_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // A validation of some frames: the sample or part of each piece's data frames.
  std::map<const PieceReader*, std::string> piece_names;
  for (const auto& b : backups)
    for (const auto& p : b.pieces)
      if (const PieceReader* r = cache.opened(p)) piece_names[r] = p.name;
  auto name_of = [&](const PieceReader* r) -> const std::string& {
    static const std::string none;
    auto it = piece_names.find(r);
    return it == piece_names.end() ? none : it->second;
  };
  const FrameFilter keep = [&](const RestorePart& part, const Extent& e) {
    return e.type == FrameType::data && select.keep(name_of(part.piece), e.frame_offset);
  };
  const bool some = select.sample || select.parts;
  std::vector<RestoreChunk> chunks;
  std::vector<std::unique_ptr<FileState>> states;
  for (size_t i = 0; i < items.size(); ++i) {
    if (done[i]) continue;
    const auto& it = items[i];
    if (opts.verify_only) {
      auto count = [&](const std::vector<RestorePart>& parts) {
        for (const auto& part : parts)
          for (const Extent& e : part.piece->trailer().extents[part.file_id]) {
            if (e.type != FrameType::data) continue;
            ++sum.frames_total;
            if (keep(part, e)) ++sum.frames_selected;
          }
      };
      count(it.parts);
      for (const auto& l : it.older) count(l.parts);
    }
    auto st = make_file_state(it, config.buffer_size, chunks, deltas[i].get(), some ? &keep : nullptr);
    if (!st) {
      // A file compared for a delta restore gives up its undo log: nothing was changed.
      if (deltas[i]) {
        FileState gone;
        gone.item = &it;
        gone.delta = deltas[i].get();
        gone.dir = std::move(deltas[i]->dir);
        abandon_restore_file(ctx, gone);
      }
      sum.add_error(st.error());
      continue;
    }
    states.push_back(std::move(*st));
  }
  for (auto& st : states) st->chunks_total = 0;
  for (auto& c : chunks) ++c.file->chunks_total;
  // --max-duration: the chunks whose frames have gone longest without a check go first.
  const CheckHistory history(opts.verify_only ? cat.frame_checks()
                                              : std::vector<catalog::FrameCheck>{});
  if (select.max_duration) {
    std::vector<std::pair<int64_t, size_t>> order;
    for (size_t i = 0; i < chunks.size(); ++i) {
      int64_t oldest = std::numeric_limits<int64_t>::max();
      const FileState& f = *chunks[i].file;
      for (size_t e = chunks[i].begin; e < chunks[i].end; ++e)
        oldest = std::min(oldest, history.last(name_of(f.extents[e].part->piece),
                                               f.extents[e].extent->frame_offset));
      order.push_back({oldest, i});
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<RestoreChunk> sorted;
    for (const auto& [t, i] : order) sorted.push_back(chunks[i]);
    chunks = std::move(sorted);
    ctx.deadline = start + *select.max_duration;
  }

  // Validation audits every piece whole once the channels are done (piece_audit.h).
  std::map<const PieceReader*, std::unique_ptr<HeaderLog>> header_logs;
  if (opts.verify_only)
    for (const auto& [name, reader] : cache.readers())
      header_logs[reader.get()] = std::make_unique<HeaderLog>();

  ctx.header_logs = opts.verify_only ? &header_logs : nullptr;
  sum.verify_only = opts.verify_only;
  ctx.chunks = &chunks;
  ctx.next = &next;
  uint32_t nch = chunks.empty() ? 0
                              : std::max<uint32_t>(1, std::min<uint32_t>(
                                                          opts.channels,
                                                          static_cast<uint32_t>(chunks.size())));
  // Pieces read in order get one channel per drive, beside the others.
  const uint32_t nstream = stream.channels();
  ctx.progress = opts.progress;
  if (opts.progress) {
    uint64_t total = 0;
    for (const auto& st : states)
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
      outs[nch + c] = stream.run_channel(ctx, c, nch + c + 1, opts.keys.get(), opts.media_drives);
    });
  for (auto& t : threads) t.join();
  for (const auto& st : states)
    if (st->failed && !S_ISDIR(st->item->file.mode))
      sum.failed_files.push_back({st->item->file.path, st->item->backup_id, st->error.what});
  for (const auto& p : stream.pieces_read()) sum.media_pieces.push_back(p);
  sum.media_bytes_read = stream.bytes_read();
  for (auto& o : outs) {
    sum.deadline_hit = sum.deadline_hit || o.deadline_hit;
    sum.channels.push_back(o.stats);
    sum.files += o.stats.files;
    sum.bytes += o.file_bytes;
    sum.piece_bytes_read += o.stats.bytes_read;
    for (auto& e : o.errors) sum.add_error(e);
  }
  // Directories last, deepest first: adding files changes a directory's mtime.
  std::sort(dirs.begin(), dirs.end(), [](const auto* a, const auto* b) {
    return a->path.size() != b->path.size() ? a->path.size() > b->path.size() : a->path < b->path;
  });
  if (!(opts.cancel && opts.cancel->load()) && !opts.verify_only)
    for (const auto* d : dirs)
      if (auto r = restore_dir_attributes(*root, *d, ctx.set_owner); !r)
        sum.add_error(r.error());
  if (journal)
    if (auto w = journal->finish(); !w.empty()) sum.warnings.push_back(std::move(w));
  // Frames verified, per piece; a full validation then walks every piece whole.
  std::map<const PieceReader*, std::vector<uint64_t>> verified;
  const bool cancelled = opts.cancel && opts.cancel->load();
  sum.pieces_audited = opts.verify_only && !select.partial() && !cancelled;
  for (const auto& [reader, log] : header_logs) {
    auto seen = log->take();
    auto& v = verified[reader];
    for (const auto& [off, h] : seen) v.push_back(off);
    sum.frames_checked += v.size();
    if (!sum.pieces_audited) continue;
    auto audited = audit_piece(*reader, seen);
    if (!audited) sum.add_error(audited.error());
    else sum.piece_bytes_read += *audited;
  }
  if (opts.verify_only) {
    sum.check_mode = select.mode();
    sum.frame_checks = frame_checks_of(backups, cache, verified, history, sum.check_mode,
                                       start_ns, sum.errors);
    for (const auto& fc : sum.frame_checks)
      if (auto r = cat.add_frame_check(fc); !r) {
        sum.warnings.push_back("what was checked is not recorded in the catalog: " +
                               r.error().what);
        break;
      }
  }
  sum.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  {
    VerdictInputs vi;
    if (nstream > 0) vi.source = "removable media";
    else if (!cache.readers().empty())
      if (auto src = place_of(cache.readers().begin()->first)) vi.source = src->storage->scheme();
    vi.target = target_place ? target_place->storage->scheme() : "";
    uint64_t moved = 0;
    for (const auto& ch : sum.channels) moved += ch.bytes_read + ch.bytes_written;
    vi.bytes = moved;
    sum.verdict = explain_verdict(sum.channels, vi);
  }
  sum.status = sum.errors.empty() ? "complete" : "failed";
  return sum;
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
