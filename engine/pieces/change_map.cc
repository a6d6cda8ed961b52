#include "engine/pieces/change_map.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "engine/wiring/backends.h"
#include "engine/transform/crypto.h"
#include "engine/pieces/piece_reader.h"
#include "storage/location.h"
#include "util/bytes.h"
#include "util/crc32c.h"
#include "util/option_words.h"

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
    const PieceReader& got = **opened;
    std::string what =
        got.footer().piece_crc != pit->checksum
            ? "piece '" + path + "' has checksum " + checksum_hex(got.footer().piece_crc) +
                  " but the catalog recorded " + checksum_hex(pit->checksum)
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
  if (on_media(b)) {
    SB_ASSIGN(UnitMap m, cache.media_map(b, f.path));
    if (m.unit != f.unit || m.size != f.size || map_file_digest(m) != f.digest)
      return fail(Errc::corrupt, "the change map of '" + f.path + "' kept for backup " +
                                     std::to_string(b.id) + " does not match its file record");
    m.backup = b.id;
    return m;
  }
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

namespace {

constexpr char kMapsMagic[8] = {'S', 'B', 'M', 'A', 'P', 'S', '0', '1'};
constexpr uint32_t kMapsVersion = 1;
constexpr uint64_t kMaxMapsFile = 1ull << 30;

std::string maps_name(uint64_t backup_id) { return std::to_string(backup_id) + ".sbmap"; }

}  // namespace

bool on_media(const catalog::Backup& b) {
  return std::any_of(b.pieces.begin(), b.pieces.end(),
                     [](const catalog::PieceRecord& p) { return p.media.has_value(); });
}

Result<void> save_media_maps(const std::string& catalog_dir, uint64_t backup_id,
                             const std::vector<std::pair<std::string, UnitMap>>& maps,
                             Keyring* keys) {
  util::ByteWriter w;
  w.bytes(kMapsMagic, sizeof kMapsMagic);
  w.u32(kMapsVersion);
  w.u64(backup_id);
  w.u32(static_cast<uint32_t>(maps.size()));
  for (const auto& [path, m] : maps) {
    w.str(path);
    w.u64(m.size);
    w.u32(m.unit);
    w.u32(static_cast<uint32_t>(m.digests.size()));
    for (const auto& d : m.digests) w.bytes(d.data(), d.size());
  }
  w.u32(util::crc32c(w.buffer().data(), w.size()));
  if (keys) {
    // Sealed: a piece header with the wrapped key, then the maps and their tag.
    PieceHeader h;
    h.version = kKeyBlockVersion;
    h.backup_id = backup_id;
    h.name = maps_name(backup_id);
    SB_ASSIGN(auto cipher, keys->new_piece(h));
    std::vector<uint8_t> body = w.take();
    std::vector<uint8_t> sealed(kBlock + body.size() + kTagSize);
    encode_piece_header(h, std::span<std::byte, kBlock>(
                               reinterpret_cast<std::byte*>(sealed.data()), kBlock));
    std::memcpy(sealed.data() + kBlock, body.data(), body.size());
    SB_TRY(cipher->seal(reinterpret_cast<std::byte*>(sealed.data() + kBlock), body.size(), 0, {}));
    w.buffer() = std::move(sealed);
  }
  SB_ASSIGN(Place dir, place_of(catalog_dir + "/maps"));
  const std::string shown = dir.at.join(maps_name(backup_id)).str();
  auto what = [&](const Error& e) {
    return e.wrap("unable to keep the change maps of backup " + std::to_string(backup_id) +
                  " with the catalog ('" + shown + "')");
  };
  if (auto r = dir.storage->make_dirs(dir.at, 0700); !r) return what(r.error());
  auto bytes = std::as_bytes(std::span(w.buffer()));
  if (auto r = storage::write_file_atomic(*dir.storage, dir.at.join(maps_name(backup_id)), bytes); !r)
    return what(r.error());
  return ok();
}

Result<std::map<std::string, UnitMap>> load_media_maps(const std::string& catalog_dir,
                                                       uint64_t backup_id, Keyring* keys) {
  SB_ASSIGN(Place dir, place_of(catalog_dir + "/maps"));
  const storage::Location at = dir.at.join(maps_name(backup_id));
  const std::string shown = at.str();
  auto in = dir.storage->open_read(at, {false});
  if (!in)
    return in.error().wrap("the change maps of backup " + std::to_string(backup_id) +
                           " (on removable media) are not kept with the catalog");
  SB_ASSIGN(storage::FileInfo st, (*in)->stat());
  if (!S_ISREG(st.mode) || st.size > kMaxMapsFile || st.size < sizeof kMapsMagic + 20)
    return fail(Errc::corrupt, "'" + shown + "' is not a file of change maps" +
                                   (S_ISREG(st.mode) ? "" : " (not a regular file)"));
  std::vector<uint8_t> buf(st.size);
  SB_ASSIGN(size_t got, (*in)->read_at(reinterpret_cast<std::byte*>(buf.data()), buf.size(), 0));
  if (got == buf.size() && std::memcmp(buf.data(), kMapsMagic, sizeof kMapsMagic) != 0 &&
      buf.size() > kBlock + kTagSize) {
    // Sealed (an encrypted backup's): opened with the backup's key.
    auto h = decode_piece_header({reinterpret_cast<const std::byte*>(buf.data()), kBlock});
    if (!h) return fail(Errc::corrupt, "'" + shown + "' is not a file of change maps");
    if (h->cipher != Cipher::none) {
      if (!keys)
        return fail(Errc::invalid_argument,
                    "'" + shown + "' holds the change maps of an encrypted backup: give its "
                    "passphrase or key with " + key_options());
      SB_ASSIGN(auto cipher, keys->open_piece(*h, shown));
      SB_TRY(cipher->open(reinterpret_cast<std::byte*>(buf.data() + kBlock), buf.size() - kBlock,
                          0, {}));
      buf.erase(buf.begin(), buf.begin() + kBlock);
      buf.resize(buf.size() - kTagSize);
    }
  }
  if (buf.size() < sizeof kMapsMagic + 20 || got != st.size ||
      util::crc32c(buf.data(), buf.size() - 4) != util::get_le32(buf.data() + buf.size() - 4) ||
      std::memcmp(buf.data(), kMapsMagic, sizeof kMapsMagic) != 0)
    return fail(Errc::corrupt, "'" + shown + "' is damaged (its checksum does not match)");
  util::ByteReader r({buf.data() + sizeof kMapsMagic, buf.size() - sizeof kMapsMagic - 4});
  const uint32_t version = r.u32();
  const uint64_t id = r.u64();
  const uint32_t n = r.u32();
  if (version != kMapsVersion || id != backup_id)
    return fail(Errc::corrupt, "'" + shown + "' holds the maps of backup " + std::to_string(id) +
                                   " in version " + std::to_string(version));
  std::map<std::string, UnitMap> out;
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    std::string path = r.str(1u << 16);
    UnitMap m;
    m.backup = backup_id;
    m.size = r.u64();
    m.unit = r.u32();
    const uint32_t count = r.u32();
    if (!r.ok() || m.unit == 0 || count != units_of(m.size, m.unit)) break;
    m.digests.resize(count);
    for (auto& d : m.digests) r.bytes(d.data(), d.size());
    out.emplace(std::move(path), std::move(m));
  }
  if (!r.ok() || out.size() != n)
    return fail(Errc::corrupt, "'" + shown + "' is damaged (a record is cut short)");
  return out;
}

Result<UnitMap> PieceCache::media_map(const catalog::Backup& b, const std::string& path) {
  auto it = media_maps_.find(b.id);
  if (it == media_maps_.end())
    it = media_maps_.emplace(b.id, load_media_maps(catalog_dir_, b.id, keys_)).first;
  if (!it->second) return it->second.error();
  auto m = it->second->find(path);
  if (m == it->second->end())
    return fail(Errc::not_found, "the change maps kept for backup " + std::to_string(b.id) +
                                     " have none for '" + path + "'");
  return m->second;
}

}  // namespace stripeback::engine
