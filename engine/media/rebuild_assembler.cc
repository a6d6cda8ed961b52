#include "engine/media/rebuild_assembler.h"

#include <algorithm>
#include <functional>

#include "engine/pieces/target_paths.h"
#include "util/digest.h"

namespace stripeback::engine::rebuild {
namespace {

// The units [first, last) an extent covers.
std::pair<uint64_t, uint64_t> units_covered(const Extent& e, uint32_t unit) {
  return {e.file_offset / unit, (e.file_offset + e.raw_len + unit - 1) / unit};
}

// Whether `parent`'s map serves as the base of `m` for every unit not in `written`: the same
// digest and length there, the rule a level 1 follows to leave a unit out.
bool serves_as_parent(const UnitMap& parent, const UnitMap& m, const std::vector<bool>& written) {
  if (parent.unit != m.unit) return false;
  for (uint64_t i = 0; i < m.digests.size(); ++i) {
    if (written[i]) continue;
    if (i >= parent.digests.size() ||
        unit_length(parent.size, parent.unit, i) != unit_length(m.size, m.unit, i) ||
        parent.digests[i] != m.digests[i])
      return false;
  }
  return true;
}

// What the pieces of one backup hold together.
struct Gathered {
  std::map<std::string, FileParts> files;
  std::map<uint32_t, std::set<uint32_t>> numbers;  // per channel
  int64_t first = 0, last = 0;
  uint64_t written = 0;
  uint32_t unit = 0;
};

// The files of `pieces` with their extents and maps; each piece's record goes to `b`.
Gathered gather(const std::vector<ScannedPiece>& pieces, catalog::Backup& b) {
  Gathered g;
  for (const auto& p : pieces) {
    b.pieces.push_back(p.record);
    g.written += p.record.size;
    g.numbers[p.record.channel].insert(p.record.number);
    const int64_t t = p.header.created_ns;
    g.first = g.first == 0 ? t : std::min(g.first, t);
    g.last = std::max(g.last, t);
    // A locked piece's trailer has the date it was written with: the backup's lock is at
    // least the latest of them (the catalog it came from may have known a later one).
    if (p.trailer.lock_mode != 0 && (!b.lock || p.trailer.lock_until_ns > b.lock->until_ns))
      b.lock = storage::Retention{static_cast<storage::Retention::Mode>(p.trailer.lock_mode),
                                  p.trailer.lock_until_ns};
    for (size_t i = 0; i < p.trailer.files.size(); ++i) {
      FileParts& f = g.files[p.trailer.files[i].path];
      if (f.pieces.empty()) f.meta = p.trailer.files[i];
      f.pieces.insert(p.record.name);
      const auto& ex = p.trailer.extents[i];
      f.extents.insert(f.extents.end(), ex.begin(), ex.end());
      if (i < p.maps.size())
        for (const auto& m : p.maps[i]) {
          f.maps.push_back(m);
          g.unit = m.unit;
        }
    }
  }
  return g;
}

// A channel's pieces are numbered from 1: one whose numbers have a gap lacks some.
std::vector<std::string> missing_pieces(const std::map<uint32_t, std::set<uint32_t>>& numbers,
                                        uint32_t channels) {
  std::vector<std::string> problems;
  for (uint32_t c = 1; c <= channels; ++c) {
    const auto it = numbers.find(c);
    const uint32_t n = it == numbers.end() ? 0 : *it->second.rbegin();
    if (it == numbers.end() || it->second.size() != n)
      problems.push_back("channel " + std::to_string(c) + " lacks some of its pieces");
  }
  return problems;
}

// The digest of a file without change maps, from its extents (sorted); false when they do
// not cover it from its start to its size without a gap.
bool whole_file_digest(const FileParts& f, catalog::FileRecord& r) {
  uint64_t at = 0;
  bool whole = true;
  util::DigestCombiner comb;
  for (const auto& e : f.extents) {
    whole = whole && e.file_offset == at;
    at = e.file_offset + e.raw_len;
    comb.add(e.file_offset, e.raw_len, e.raw_digest);
  }
  r.digest = comb.finish();
  return whole && at == r.size;
}

// The end of an assembled backup: failed when no file is whole, else complete or, with
// `problems`, partial.
void end_assembled(catalog::Backup& b, int64_t last, uint64_t bytes_read, uint64_t written,
                   const std::vector<std::string>& problems) {
  b.ended = true;
  b.end.end_time_ns = last;
  b.end.bytes_read = bytes_read;
  b.end.bytes_written = written;
  if (b.files.empty()) {
    b.end.status = catalog::BackupStatus::failed;
    b.end.message = "rebuilt from its pieces: no file is whole in them";
    b.pieces.clear();
    b.files.clear();
  } else {
    b.end.status =
        problems.empty() ? catalog::BackupStatus::complete : catalog::BackupStatus::partial;
    b.end.files = b.files.size();
    b.end.pieces = static_cast<uint32_t>(b.pieces.size());
    b.end.message = "rebuilt from its pieces alone: tag, sources, directories and end time "
                    "are not known";
    for (const auto& p : problems) b.end.message += "; " + p;
  }
}

}  // namespace

catalog::Backup PieceAssembler::assemble(uint64_t id, const std::vector<ScannedPiece>& pieces,
                                         const std::vector<std::string>& unreadable,
                                         uint64_t catalog_id, const std::string& medium,
                                         std::vector<std::string>& notes) {
  catalog::Backup b;
  b.id = id;
  b.begin.catalog_id = catalog_id;
  b.begin.destination = medium;
  Gathered g = gather(pieces, b);
  std::sort(b.pieces.begin(), b.pieces.end(), [](const auto& x, const auto& y) {
    return x.channel != y.channel ? x.channel < y.channel : x.number < y.number;
  });
  b.begin.start_time_ns = g.first;
  b.begin.channels = g.numbers.empty() ? 0 : g.numbers.rbegin()->first;
  if (g.unit) {
    b.begin.level = 0;
    b.begin.change_unit = g.unit;
  }
  std::vector<std::string> problems = missing_pieces(g.numbers, b.begin.channels);
  for (const auto& u : unreadable) problems.push_back("unreadable piece " + u);

  std::map<std::string, UnitMap>& mine = maps_[id];
  uint64_t bytes_read = 0;
  for (auto& [path, f] : g.files) {
    auto r = file_record(id, path, f, mine, problems);
    if (!r) continue;
    if (r->parent) b.begin.level = 1;
    bytes_read += r->size;
    b.files.push_back(std::move(*r));
  }
  notes = problems;
  end_assembled(b, g.last, bytes_read, g.written, problems);
  return b;
}

std::optional<catalog::FileRecord> PieceAssembler::file_record(
    uint64_t id, const std::string& path, FileParts& f, std::map<std::string, UnitMap>& mine,
    std::vector<std::string>& problems) {
  // A path no backup records (relative, empty, with '..' or a NUL) comes from a forged or
  // damaged trailer: restoring it would be refused, and with it the whole backup.
  if (!safe_components(path)) {
    problems.push_back("a piece names the file '" + path +
                       "', which is not a safe absolute path; left out");
    return std::nullopt;
  }
  std::sort(f.extents.begin(), f.extents.end(),
            [](const Extent& x, const Extent& y) { return x.file_offset < y.file_offset; });
  catalog::FileRecord r;
  r.path = path;
  r.size = f.meta.size;
  r.mode = f.meta.mode;
  r.mtime_ns = f.meta.mtime_ns;
  r.uid = f.meta.uid;
  r.gid = f.meta.gid;
  r.pieces.assign(f.pieces.begin(), f.pieces.end());
  if (!f.maps.empty()) {
    if (!level_file(id, f, r, mine, problems)) return std::nullopt;
  } else if (!whole_file_digest(f, r)) {
    problems.push_back("'" + path + "' is not whole in the pieces found; left out");
    return std::nullopt;
  }
  return r;
}

// A file of a backup with a level: its map from the map frames, its parent found among
// the earlier backups rebuilt here whose map agrees on every unit this one left out.
bool PieceAssembler::level_file(uint64_t id, FileParts& f, catalog::FileRecord& r,
                                std::map<std::string, UnitMap>& mine,
                                std::vector<std::string>& problems) {
  const uint32_t unit = f.maps.front().unit;
  auto m = join_maps(f.maps, r.size, unit, r.path);
  if (!m) {
    problems.push_back(m.error().what + "; left out");
    return false;
  }
  r.unit = unit;
  r.digest = map_file_digest(*m);
  std::vector<bool> written(m->digests.size(), false);
  for (const auto& e : f.extents) {
    auto [a, z] = units_covered(e, unit);
    for (uint64_t i = a; i < z && i < written.size(); ++i) written[i] = true;
  }
  r.units_written = static_cast<uint64_t>(std::count(written.begin(), written.end(), true));
  if (r.units_written < written.size() || written.empty()) {
    std::set<uint64_t, std::greater<>> candidates;
    for (const auto& [cid, maps] : maps_)
      if (cid < id) candidates.insert(cid);
    for (const auto& b : others_)
      if (b.id < id && b.usable() && b.begin.level >= 0) candidates.insert(b.id);
    for (uint64_t cid : candidates) {
      const UnitMap* pm = map_of(cid, r.path);
      if (pm && serves_as_parent(*pm, *m, written)) {
        r.parent = cid;
        r.change = r.units_written == 0 && pm->size == r.size ? catalog::FileChange::unchanged
                                                              : catalog::FileChange::changed;
        break;
      }
    }
    if (!r.parent && !written.empty()) {
      problems.push_back("'" + r.path + "' builds on a backup not found on the media; left out");
      return false;
    }
  }
  m->backup = id;
  mine[r.path] = std::move(*m);
  return true;
}

// The map of `path` in backup `id`: rebuilt here, or read from the pieces of a known one.
const UnitMap* PieceAssembler::map_of(uint64_t id, const std::string& path) {
  if (auto it = maps_.find(id); it != maps_.end()) {
    auto pm = it->second.find(path);
    if (pm != it->second.end()) return &pm->second;
  }
  for (const auto& b : others_) {
    if (b.id != id) continue;
    auto key = std::make_pair(id, path);
    if (auto c = read_.find(key); c != read_.end()) return c->second ? &*c->second : nullptr;
    std::optional<UnitMap> got;
    for (const auto& f : b.files)
      if (f.path == path && f.unit && !f.pieces.empty() && !on_media(b))
        if (auto m = load_file_map(b, f, cache_)) got = std::move(*m);
    auto& slot = read_[key];
    slot = std::move(got);
    return slot ? &*slot : nullptr;
  }
  return nullptr;
}

}  // namespace stripeback::engine::rebuild
