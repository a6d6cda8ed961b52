// Change maps of incremental backups (docs/incremental.md): a backup taken with a level
// keeps, for every file, the digest (XXH3-128) of each change unit (a power of two from
// 8 KiB to 1 MiB; the last unit ends at the file's size). They are stored on the media, in
// map frames of the pieces that hold the file (indexed by the trailer), so a later level 1
// finds what changed, and a restore of a chain proves the reassembled file, from the media
// alone.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/format/piece_format.h"
#include "storage/async/file.h"
#include "stripeback/result.h"
#include "util/digest.h"

namespace stripeback::engine {

class Keyring;
class PieceReader;

inline constexpr uint32_t kDefaultChangeUnit = 64u << 10;
inline constexpr uint32_t kMinChangeUnit = 8u << 10;
inline constexpr uint32_t kMaxChangeUnit = 1u << 20;

// The change units of one whole file.
struct UnitMap {
  uint64_t backup = 0;  // the backup it was read from (0: this one)
  uint32_t unit = 0;
  uint64_t size = 0;
  std::vector<util::Digest> digests;  // units_of(size, unit) of them
};

inline uint64_t units_of(uint64_t size, uint32_t unit) { return (size + unit - 1) / unit; }
inline uint32_t unit_length(uint64_t size, uint32_t unit, uint64_t index) {
  uint64_t off = index * unit;
  return static_cast<uint32_t>(size - off < unit ? size - off : unit);
}

// The whole-file digest of a file with a change map: its unit digests combined in order
// (the file record's digest for backups with a level).
util::Digest map_file_digest(const UnitMap& m);

// Joins the map frames a file's pieces hold into its map, checking that they cover the
// file's units exactly once.
Result<UnitMap> join_maps(std::vector<DigestMap> parts, uint64_t size, uint32_t unit,
                          const std::string& path);

// Backups on removable media keep a copy of their files' change maps with the catalog, so
// a later level 1 finds its parents' digests without mounting their volumes:
// `<catalog dir>/maps/<backup id>.sbmap`. The maps are on the media too (map frames), the
// copy only saves reading them. Format (little-endian): "SBMAPS01", u32 version (1), u64
// backup id, u32 files; per file u32 path length, the path, u64 size, u32 unit, u32 digests,
// 16 bytes each; then u32 CRC32C of all before it. Written under a temporary name, synced,
// renamed into place. For an encrypted backup (`keys`) the file is sealed as a piece's
// frame is: a 4 KiB piece header with a fresh wrapped data key, then all of the above
// encrypted with AES-256-GCM and its tag, so the unit digests are no plainer than in the
// pieces.
Result<void> save_media_maps(const std::string& catalog_dir, uint64_t backup_id,
                             const std::vector<std::pair<std::string, UnitMap>>& maps,
                             Keyring* keys);
Result<std::map<std::string, UnitMap>> load_media_maps(const std::string& catalog_dir,
                                                       uint64_t backup_id, Keyring* keys);

// True when the backup's pieces are on removable media.
bool on_media(const catalog::Backup& b);

// Pieces opened once for the maps of many files (and kept for reading their frames).
std::string recorded_piece_path(const catalog::PieceRecord& p);

class PieceCache {
 public:
  PieceCache(io::Direct direct, Keyring* keys);
  // Where the maps of backups on removable media are kept (the catalog's directory).
  void set_catalog_dir(std::string dir) { catalog_dir_ = std::move(dir); }
  // The change map of `path` in backup `b` on removable media, from the copy kept with
  // the catalog.
  Result<UnitMap> media_map(const catalog::Backup& b, const std::string& path);
  ~PieceCache();
  // The reader of piece `name` of backup `b`, opened and checked against its catalog record
  // (size and checksum) on first use. Errors name the piece; a piece on removable media is
  // unsupported (it is read in order, not through a reader).
  Result<PieceReader*> get(const catalog::Backup& b, const std::string& name);
  uint64_t metadata_bytes() const { return metadata_bytes_; }
  // Every piece opened so far, by path.
  const std::map<std::string, std::unique_ptr<PieceReader>>& readers() const { return readers_; }
  // The reader of piece record `p` if it was opened, else null.
  const PieceReader* opened(const catalog::PieceRecord& p) const {
    auto it = readers_.find(recorded_piece_path(p));
    return it == readers_.end() ? nullptr : it->second.get();
  }

 private:
  io::Direct direct_;
  Keyring* keys_;
  std::map<std::string, std::unique_ptr<PieceReader>> readers_;
  uint64_t metadata_bytes_ = 0;
  std::string catalog_dir_;
  std::map<uint64_t, Result<std::map<std::string, UnitMap>>> media_maps_;
};

// Reads the change map of file `f` of backup `b` from its pieces.
Result<UnitMap> load_file_map(const catalog::Backup& b, const catalog::FileRecord& f,
                              PieceCache& cache);

// The copy that holds the data of file `f` of backup `b`: that record itself, or for a file
// skipped by backup optimization its record in the backup `held_by` names (followed in
// turn). The error names the holding backup that is missing, unusable or without the file.
struct HeldCopy {
  const catalog::Backup* backup = nullptr;
  const catalog::FileRecord* file = nullptr;
};
Result<HeldCopy> held_copy(const catalog::Backup& b, const catalog::FileRecord& f,
                           const std::vector<catalog::Backup>& backups);

// The path of a piece recorded in the catalog: its location joined with its name.
std::string recorded_piece_path(const catalog::PieceRecord& p);

}  // namespace stripeback::engine
