#include "engine/change_map.h"

#include <algorithm>
#include <cstdio>

#include "engine/piece_reader.h"
#include "storage/location.h"

namespace stripeback::engine {

util::Digest map_file_digest(const UnitMap& m) {
  util::DigestCombiner comb;
  for (uint64_t i = 0; i < m.digests.size(); ++i)
    comb.add(i * m.unit, unit_length(m.size, m.unit, i), m.digests[i]);
  return comb.finish();
}

Result<UnitMap> join_maps(std::vector<DigestMap> parts, uint64_t size, uint32_t unit,
                          const std::string& path) {
  std::sort(parts.begin(), parts.end(),
            [](const DigestMap& a, const DigestMap& b) { return a.offset < b.offset; });
  UnitMap m;
  m.unit = unit;
  m.size = size;
  const uint64_t want = units_of(size, unit);
  m.digests.reserve(want);
  for (auto& p : parts) {
    if (p.unit != unit || p.offset != m.digests.size() * uint64_t{unit})
      return fail(Errc::corrupt, "the digest maps of '" + path + "' have a gap or an overlap at "
                                 "offset " + std::to_string(m.digests.size() * uint64_t{unit}));
    m.digests.insert(m.digests.end(), p.digests.begin(), p.digests.end());
  }
  if (m.digests.size() != want)
    return fail(Errc::corrupt, "the digest maps of '" + path + "' cover " +
                                   std::to_string(m.digests.size()) + " of its " +
                                   std::to_string(want) + " change units");
  return m;
}

Result<HeldCopy> held_copy(const catalog::Backup& b, const catalog::FileRecord& f,
                           const std::vector<catalog::Backup>& backups) {
  HeldCopy c{&b, &f};
  while (c.file->held_by) {
    const uint64_t id = c.file->held_by;
    auto pb = std::find_if(backups.begin(), backups.end(),
                           [&](const catalog::Backup& x) { return x.id == id; });
    const std::string what = "'" + f.path + "' (backup " + std::to_string(c.backup->id) +
                             ") is held by backup " + std::to_string(id);
    if (pb == backups.end() || pb->id >= c.backup->id)
      return fail(Errc::not_found, what + ", which is not in the catalog");
    if (!pb->usable()) return fail(Errc::not_found, what + ", which is " + pb->status_name());
    auto next = std::find_if(pb->files.begin(), pb->files.end(),
                             [&](const catalog::FileRecord& x) { return x.path == f.path; });
    if (next == pb->files.end()) return fail(Errc::not_found, what + ", which does not hold it");
    c = HeldCopy{&*pb, &*next};
  }
  return c;
}

std::string recorded_piece_path(const catalog::PieceRecord& p) {
  auto loc = storage::Location::parse(p.location);
  return loc ? loc->join(p.name).str() : p.location + "/" + p.name;
}

PieceCache::PieceCache(io::Direct direct, Keyring* keys) : direct_(direct), keys_(keys) {}
PieceCache::~PieceCache() = default;

Result<PieceReader*> PieceCache::get(const catalog::Backup& b, const std::string& name) {
  auto pit = std::find_if(b.pieces.begin(), b.pieces.end(),
                          [&](const catalog::PieceRecord& p) { return p.name == name; });
  if (pit == b.pieces.end())
    return fail(Errc::not_found, "piece '" + name + "' of backup " + std::to_string(b.id) +
                                     " is not recorded in the catalog");
  if (pit->media)
    return fail(Errc::unsupported, "piece '" + name + "' of backup " + std::to_string(b.id) +
                                       " is on removable media");
  std::string path = recorded_piece_path(*pit);
  auto& r = readers_[path];
  if (r) return r.get();
  auto opened = PieceReader::open(path, direct_, keys_);
  if (!opened) {
    readers_.erase(path);
    return opened.error();
  }
  if ((*opened)->footer().piece_crc != pit->checksum || (*opened)->size() != pit->size) {
    // The trailer's checksum of the whole piece is the one the catalog recorded, or this is
    // not the piece the backup wrote.
    auto hex32 = [](uint32_t v) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%08x", v);
      return std::string(buf);
    };
    const PieceReader& got = **opened;
    std::string what =
        got.footer().piece_crc != pit->checksum
            ? "piece '" + path + "' has checksum " + hex32(got.footer().piece_crc) +
                  " but the catalog recorded " + hex32(pit->checksum)
            : "piece '" + path + "' is " + std::to_string(got.size()) + " bytes but the catalog " +
                  "recorded " + std::to_string(pit->size);
    readers_.erase(path);
    return fail(Errc::corrupt, what + ": it is damaged or not the piece this backup wrote");
  }
  metadata_bytes_ += (*opened)->metadata_bytes();
  r = std::move(*opened);
  return r.get();
}

Result<UnitMap> load_file_map(const catalog::Backup& b, const catalog::FileRecord& f,
                              PieceCache& cache) {
  if (f.unit == 0)
    return fail(Errc::invalid_argument, "'" + f.path + "' in backup " + std::to_string(b.id) +
                                            " has no change map (a plain full backup)");
  std::vector<DigestMap> parts;
  for (const auto& name : f.pieces) {
    SB_ASSIGN(PieceReader * r, cache.get(b, name));
    int fid = r->find_file(f.path);
    if (fid < 0)
      return fail(Errc::corrupt, "piece '" + r->path() + "' does not hold '" + f.path + "'");
    SB_ASSIGN(auto maps, r->read_maps(static_cast<uint32_t>(fid)));
    for (auto& m : maps) parts.push_back(std::move(m));
  }
  SB_ASSIGN(UnitMap m, join_maps(std::move(parts), f.size, f.unit, f.path));
  if (map_file_digest(m) != f.digest)
    return fail(Errc::corrupt, "the change map of '" + f.path + "' in backup " +
                                   std::to_string(b.id) + " does not match its file record");
  m.backup = b.id;
  return m;
}

}  // namespace stripeback::engine
