#include "engine/backup/resume.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/pieces/change_map.h"
#include "engine/pieces/leftovers.h"
#include "engine/pieces/piece_reader.h"
#include "util/option_words.h"

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
                  name + (keys ? " is not encrypted: resume it without " + util::option_word("encrypt")
                               : " is encrypted: resume it with " + util::option_word("encrypt") +
                                     " and its key"));
    hold_trailer(rp, pr.trailer(), p.name);
  }
  return rp;
}

void hold_trailer(ResumePoint& rp, const Trailer& t, const std::string& piece) {
  for (size_t i = 0; i < t.files.size(); ++i) {
    const FileMeta& m = t.files[i];
    HeldFile& h = rp.held[m.path];
    if (!h.listed_in.empty() && (h.meta.size != m.size || h.meta.mtime_ns != m.mtime_ns ||
                                 h.meta.ctime_ns != m.ctime_ns || h.meta.ino != m.ino))
      h.states_differ = true;
    h.meta = m;
    h.listed_in.push_back(piece);
    if (i < t.extents.size())
      for (const Extent& e : t.extents[i]) h.extents.emplace_back(e, piece);
  }
}

namespace {

// The durable extents of `h` inside [o, o + len), in file order; false when one reaches
// out of it (a layout this resume does not take apart).
using HeldExtent = std::pair<Extent, std::string>;  // an extent and the piece holding it

// Why what the pieces hold of a file cannot be kept for the file as it is now, or "".
// Size and mtime can be put back by anyone who writes the file (touch -d); its status
// change time cannot, and a file replaced under its name has another inode.
std::string changed_since(const FileMeta& held, const FileTask& now) {
  if (held.size != now.size) return "its size changed";
  if (held.mtime_ns != now.mtime_ns) return "its modification time changed";
  if (held.ctime_ns == 0 && held.ino == 0)
    return "its pieces were written without its status change time";
  if (held.ino != now.ino) return "it was replaced (another inode)";
  if (held.ctime_ns != now.ctime_ns) return "its status change time changed (it was written to)";
  return "";
}

bool extents_in(const HeldFile& h, uint64_t o, uint64_t len, std::vector<const Extent*>& in,
                std::vector<const HeldExtent*>& held) {
  for (const auto& he : h.extents) {
    const Extent& e = he.first;
    if (e.file_offset + e.raw_len <= o || e.file_offset >= o + len) continue;
    if (e.file_offset < o || e.file_offset + e.raw_len > o + len) return false;
    in.push_back(&e);
    held.push_back(&he);
  }
  std::sort(in.begin(), in.end(),
            [](const Extent* x, const Extent* y) { return x->file_offset < y->file_offset; });
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i]->file_offset < in[i - 1]->file_offset + in[i - 1]->raw_len) return false;
  return true;
}

// The ranges of [o, o + len) that `in` (sorted, disjoint) leaves out.
std::vector<std::pair<uint64_t, uint64_t>> gaps(const std::vector<const Extent*>& in, uint64_t o,
                                                uint64_t len) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  uint64_t at = o;
  for (const Extent* e : in) {
    if (e->file_offset > at) out.push_back({at, e->file_offset - at});
    at = e->file_offset + e->raw_len;
  }
  if (at < o + len) out.push_back({at, o + len - at});
  return out;
}

}  // namespace

std::vector<UnitDone> keep_finished_units(ResumePoint& rp, std::vector<WorkSet>& sets) {
  // Per file, its units (by set and position), in the order the plan made them.
  std::map<std::string, std::vector<std::pair<size_t, size_t>>> files;
  for (size_t si = 0; si < sets.size(); ++si)
    for (size_t ui = 0; ui < sets[si].size(); ++ui) files[sets[si][ui].file->path].push_back({si, ui});
  // What replaces each unit: the ranges still to read (none: it is finished).
  std::map<std::pair<size_t, size_t>, std::vector<std::pair<uint64_t, uint64_t>>> replaced;
  std::vector<UnitDone> done;
  for (const auto& [path, where] : files) {
    auto h = rp.held.find(path);
    const WorkUnit& first = sets[where.front().first][where.front().second];
    if (h == rp.held.end()) continue;  // not in the durable pieces: read whole
    if (h->second.states_differ) {
      // Checked first: the latest state may match the file now while the extents an earlier
      // run read are of the version before.
      rp.reread.push_back({path, "the interrupted runs read it in different states (it changed "
                                 "between them)"});
      continue;
    }
    if (std::string why = changed_since(h->second.meta, *first.file); !why.empty()) {
      rp.reread.push_back({path, why});  // changed since: read again whole
      continue;
    }
    // Every durable extent of the file is kept, or none: a restore takes every extent of a
    // file from each piece its record names.
    std::vector<std::vector<const Extent*>> in(where.size());
    std::vector<std::vector<const HeldExtent*>> held(where.size());
    std::vector<std::vector<std::pair<uint64_t, uint64_t>>> rest(where.size());
    bool usable = true;
    size_t counted = 0;
    for (size_t i = 0; i < where.size() && usable; ++i) {
      const WorkUnit& u = sets[where[i].first][where[i].second];
      usable = extents_in(h->second, u.offset, u.length, in[i], held[i]);
      counted += in[i].size();
      rest[i] = gaps(in[i], u.offset, u.length);
      // A whole file is read from a start to its size: only a finished start is kept.
      if (u.sections == 1 && rest[i].size() == 1 && rest[i][0].first + rest[i][0].second != u.offset + u.length)
        usable = false;
      if (u.sections == 1 && rest[i].size() > 1) usable = false;
    }
    if (!usable || counted != h->second.extents.size() || (counted == 0 && first.length > 0))
      continue;
    bool whole = true;
    for (size_t i = 0; i < where.size(); ++i) {
      const WorkUnit& u = sets[where[i].first][where[i].second];
      whole = whole && rest[i].empty();
      if (in[i].empty() && u.length > 0) continue;  // nothing of it is durable
      rp.kept_units.push_back(u);
      UnitDone d;
      d.unit = &rp.kept_units.back();
      d.size = h->second.meta.size;
      d.mode = h->second.meta.mode;
      d.uid = h->second.meta.uid;
      d.gid = h->second.meta.gid;
      d.mtime_ns = h->second.meta.mtime_ns;
      std::set<std::string> pieces;
      uint64_t bytes = 0;
      for (const Extent* e : in[i]) {
        d.extents.push_back({e->file_offset, e->raw_len, e->raw_digest});
        bytes += e->raw_len;
      }
      for (const HeldExtent* he : held[i]) pieces.insert(he->second);
      // An empty file has no extent: its record names the piece that lists it, as a
      // backup that was not interrupted does.
      if (u.length == 0 && pieces.empty())
        pieces.insert(h->second.listed_in.begin(), h->second.listed_in.end());
      d.pieces.assign(pieces.begin(), pieces.end());
      rp.bytes_kept += bytes;
      if (u.sections > 1 && rest[i].empty()) ++rp.sections_kept;
      done.push_back(std::move(d));
      replaced[where[i]] = rest[i];
    }
    if (whole) ++rp.files_kept;
  }
  // Each unit something of which is kept becomes units of the ranges still to read.
  for (size_t si = 0; si < sets.size(); ++si) {
    WorkSet next;
    for (size_t ui = 0; ui < sets[si].size(); ++ui) {
      auto r = replaced.find({si, ui});
      if (r == replaced.end()) {
        next.push_back(sets[si][ui]);
        continue;
      }
      for (const auto& [o, len] : r->second) {
        WorkUnit part = sets[si][ui];
        part.offset = o;
        part.length = len;
        next.push_back(part);
      }
    }
    sets[si] = std::move(next);
  }
  std::erase_if(sets, [](const WorkSet& s) { return s.empty(); });
  return done;
}

}  // namespace stripeback::engine
