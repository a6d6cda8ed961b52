// Backups assembled from their pieces alone for catalog rebuild (catalog_rebuild.h): the
// files, their extents and change maps as the pieces' trailers and map frames hold them,
// and what the pieces could not tell. Internal to engine/media/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "catalog/catalog.h"
#include "engine/media/rebuild_scan.h"
#include "engine/pieces/change_map.h"

namespace stripeback::engine::rebuild {

// One file of a backup as its pieces hold it.
struct FileParts {
  FileMeta meta;
  std::vector<Extent> extents;
  std::set<std::string> pieces;
  std::vector<DigestMap> maps;
};

// The backups rebuilt from pieces alone, in id order; each level file's map is kept for the
// level 1s after it.
class PieceAssembler {
 public:
  // `others`: backups known from the catalog or an autobackup, whose files' maps (read from
  // their pieces through `cache`) may serve as parents too. Both must outlive the assembler.
  PieceAssembler(const std::vector<catalog::Backup>& others, PieceCache& cache)
      : others_(others), cache_(cache) {}

  // Backup `id` from `pieces` (those that could not be read in `unreadable`), of catalog
  // `catalog_id`, found on `medium`. Call in id order. `notes` gets what the pieces could
  // not tell and what was left out; a backup with no whole file comes back failed, without
  // pieces or files.
  catalog::Backup assemble(uint64_t id, const std::vector<ScannedPiece>& pieces,
                           const std::vector<std::string>& unreadable, uint64_t catalog_id,
                           const std::string& medium, std::vector<std::string>& notes);

  // The change maps of the files of a backup assembled here, or null.
  const std::map<std::string, UnitMap>* maps_of(uint64_t id) const {
    auto it = maps_.find(id);
    return it == maps_.end() || it->second.empty() ? nullptr : &it->second;
  }

 private:
  // The record of one file of backup `id`, or none when it is left out (said in
  // `problems`).
  std::optional<catalog::FileRecord> file_record(uint64_t id, const std::string& path,
                                                 FileParts& f,
                                                 std::map<std::string, UnitMap>& mine,
                                                 std::vector<std::string>& problems);
  bool level_file(uint64_t id, FileParts& f, catalog::FileRecord& r,
                  std::map<std::string, UnitMap>& mine, std::vector<std::string>& problems);
  const UnitMap* map_of(uint64_t id, const std::string& path);

  const std::vector<catalog::Backup>& others_;
  PieceCache& cache_;
  std::map<uint64_t, std::map<std::string, UnitMap>> maps_;
  std::map<std::pair<uint64_t, std::string>, std::optional<UnitMap>> read_;
};

}  // namespace stripeback::engine::rebuild
