#include "engine/restore/restore_phases.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/pieces/change_map.h"
#include "util/option_words.h"

namespace stripeback::engine {
namespace {

using util::Next;

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
  if (select.partial()) {
    const std::string option =
        util::option_word(select.parts ? "part" : select.sample ? "sample" : "max_duration");
    return fail(Errc::invalid_argument,
                util::command_word("validate") + " " + option +
                    " reads frames out of order, which removable media cannot; backup " +
                    std::to_string(c.backup->id) + " is on them: validate it whole");
  }
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

}  // namespace

// Phase: opens each needed piece once, loads its index and plans every file from it. A
// missing or wrong key stops the job; other failures are the file's.
Result<Next> plan_files(RestoreJob& job) {
  for (const Choice& chosen : job.choices)
    if (!S_ISDIR(chosen.file->mode)) SB_TRY(plan_file(job, chosen));
  job.sum.piece_bytes_read += job.cache.metadata_bytes();
  // Pieces read in order are opened only now, with the key checked on their header (a
  // preview leaves the media alone).
  if (!job.previewing) SB_TRY(job.stream.check_keys(job.opts.keys.get(), job.opts.media_drives));
  return Next::go_on;
}

}  // namespace stripeback::engine
