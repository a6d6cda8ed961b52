#include "engine/resume.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/change_map.h"
#include "engine/leftovers.h"
#include "engine/piece_reader.h"

namespace stripeback::engine {

Result<ResumePoint> find_resume_point(uint64_t id, const std::vector<std::string>& sources,
                                      const std::string& dest, bool has_level,
                                      const catalog::Catalog& cat, io::Direct direct,
                                      Keyring* keys) {
  const auto backups = cat.backups();
  const catalog::Backup* b = nullptr;
  for (auto it = backups.rbegin(); it != backups.rend() && !b; ++it) {
    if (id ? it->id == id : (!it->ended && it->begin.destination == dest && !may_still_run(*it)))
      b = &*it;
  }
  if (!b)
    return fail(Errc::not_found, id ? "backup " + std::to_string(id) + " is not in the catalog"
                                    : "no interrupted backup to '" + dest + "' in the catalog");
  const std::string name = "backup " + std::to_string(b->id);
  if (b->ended)
    return fail(Errc::invalid_argument, name + " has ended (" + b->status_name() +
                                            "): there is nothing to resume");
  if (b->begin_missing) return fail(Errc::invalid_argument, name + " is damaged: " + b->damage);
  if (may_still_run(*b))
    return fail(Errc::busy, name + " is still running (pid " + std::to_string(b->begin.pid) +
                                " on " + b->begin.host + ")");
  if (b->begin.sources != sources) {
    std::string had;
    for (const auto& s : b->begin.sources) had += (had.empty() ? "'" : ", '") + s + "'";
    return fail(Errc::invalid_argument,
                name + " backed up " + had + ": resume it with the same sources");
  }
  if (b->begin.destination != dest)
    return fail(Errc::invalid_argument, name + " went to '" + b->begin.destination +
                                            "', not '" + dest + "'");
  if (b->begin.level >= 0 || has_level)
    return fail(Errc::unsupported, name + ": backups with a level are not resumed; start a new one");
  if (b->begin.catalog_id != cat.identity())
    return fail(Errc::invalid_argument, name + " was begun in another catalog");

  ResumePoint rp;
  rp.backup_id = b->id;
  rp.pieces = b->pieces;
  for (const auto& p : b->pieces) {
    if (p.media)
      return fail(Errc::unsupported, name + " has pieces on removable media, which a resume "
                                            "cannot reopen; start a new backup");
    auto r = PieceReader::open(recorded_piece_path(p), direct, keys);
    if (!r) return r.error().wrap(name + ": a piece it recorded cannot be read");
    const PieceReader& pr = **r;
    if (pr.footer().piece_crc != p.checksum || pr.size() != p.size)
      return fail(Errc::corrupt, name + ": piece '" + p.name + "' is not the one it recorded");
    if ((pr.header().cipher != Cipher::none) != (keys != nullptr))
      return fail(Errc::invalid_argument,
                  name + (keys ? " is not encrypted: resume it without --encrypt"
                               : " is encrypted: resume it with --encrypt and its key"));
    const Trailer& t = pr.trailer();
    for (size_t i = 0; i < t.files.size(); ++i) {
      HeldFile& h = rp.held[t.files[i].path];
      h.meta = t.files[i];
      for (const Extent& e : t.extents[i]) h.extents.emplace_back(e, p.name);
    }
  }
  return rp;
}

namespace {

// Whether the extents of `h` that start in [o, o + len) tile it exactly, none reaching out.
bool covers(const HeldFile& h, uint64_t o, uint64_t len) {
  std::vector<const Extent*> in;
  for (const auto& [e, piece] : h.extents)
    if (e.file_offset + e.raw_len > o && e.file_offset < o + len) in.push_back(&e);
  std::sort(in.begin(), in.end(),
            [](const Extent* x, const Extent* y) { return x->file_offset < y->file_offset; });
  uint64_t at = o;
  for (const Extent* e : in) {
    if (e->file_offset != at) return false;  // a gap, an overlap, or one from before
    at += e->raw_len;
  }
  return at == o + len;
}

}  // namespace

std::vector<UnitDone> keep_finished_units(ResumePoint& rp, std::vector<WorkSet>& sets) {
  // Per file, the candidate units: unchanged since, covered by the durable pieces.
  std::map<std::string, std::vector<const WorkUnit*>> units, kept;
  for (const auto& set : sets)
    for (const auto& u : set) units[u.file->path].push_back(&u);
  for (const auto& [path, list] : units) {
    auto h = rp.held.find(path);
    const FileTask& f = *list.front()->file;
    if (h == rp.held.end() || h->second.meta.size != f.size || h->second.meta.mtime_ns != f.mtime_ns)
      continue;
    std::vector<const WorkUnit*> k;
    for (const WorkUnit* u : list)
      if (covers(h->second, u->offset, u->length)) k.push_back(u);
    // A piece holding an extent of the file outside the kept units would give it twice to a
    // restore: the units with extents in such a piece are read again, until none is left.
    for (bool again = true; again && !k.empty();) {
      again = false;
      std::set<std::string> tainted;
      for (const auto& [e, piece] : h->second.extents) {
        const bool inside = std::any_of(k.begin(), k.end(), [&](const WorkUnit* u) {
          return e.file_offset >= u->offset && e.file_offset + e.raw_len <= u->offset + u->length;
        });
        if (!inside) tainted.insert(piece);
      }
      if (tainted.empty()) break;
      std::erase_if(k, [&](const WorkUnit* u) {
        for (const auto& [e, piece] : h->second.extents)
          if (tainted.count(piece) && e.file_offset >= u->offset &&
              e.file_offset < u->offset + u->length) {
            again = true;
            return true;
          }
        return false;
      });
    }
    if (!k.empty()) kept[path] = std::move(k);
  }
  std::vector<UnitDone> done;
  std::set<const WorkUnit*> gone;
  for (const auto& [path, list] : kept) {
    const HeldFile& h = rp.held.at(path);
    if (list.size() == units[path].size()) ++rp.files_kept;
    for (const WorkUnit* u : list) {
      rp.kept_units.push_back(*u);
      UnitDone d;
      d.unit = &rp.kept_units.back();
      d.size = h.meta.size;
      d.mode = h.meta.mode;
      d.uid = h.meta.uid;
      d.gid = h.meta.gid;
      d.mtime_ns = h.meta.mtime_ns;
      std::set<std::string> pieces;
      for (const auto& [e, piece] : h.extents)
        if (e.file_offset >= u->offset && e.file_offset < u->offset + u->length) {
          d.extents.push_back({e.file_offset, e.raw_len, e.raw_digest});
          pieces.insert(piece);
        }
      d.pieces.assign(pieces.begin(), pieces.end());
      rp.bytes_kept += u->length;
      if (u->sections > 1) ++rp.sections_kept;
      done.push_back(std::move(d));
      gone.insert(u);
    }
  }
  for (auto& set : sets) std::erase_if(set, [&](const WorkUnit& u) { return gone.count(&u) > 0; });
  std::erase_if(sets, [](const WorkSet& s) { return s.empty(); });
  return done;
}

}  // namespace stripeback::engine
