// catalog rebuild (docs/media-management.md, "Catalog rebuild, autobackup and compaction"):
// re-creates the catalog records of the backups found on backup media from the newest
// catalog autobackup there and from the pieces themselves, which are self-describing
// (header, trailer with every file and extent, map frames, footer checksum). Nothing is
// written to the media; the catalog gets the records of backups it does not know, in one
// append.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "stripeback/result.h"

namespace stripeback::engine {

class Keyring;

struct RebuildOptions {
  std::vector<std::string> media;  // directories or URLs holding pieces
  Keyring* keys = nullptr;         // for encrypted pieces and autobackups
  bool use_autobackup = true;      // false: from the pieces alone
  // Whose pieces to take: 0 means the target catalog's identity, or, for a catalog without
  // one, the only catalog id found on the media.
  uint64_t catalog_id = 0;
};

struct RebuiltBackup {
  uint64_t id = 0;
  std::string from;    // "autobackup" or "pieces"
  std::string status;  // as the catalog will list it
  uint64_t files = 0;
  uint64_t pieces = 0;
  bool added = false;
  std::string reason;               // why it was not added
  std::vector<std::string> notes;   // what the pieces could not tell, what was left out
};

struct MediumScan {
  std::string medium;
  std::string autobackup;        // the autobackup read, or empty
  uint64_t pieces_found = 0;     // piece names of the catalog on the medium
  uint64_t pieces_known = 0;     // of them, already in the catalog or the autobackup
  uint64_t pieces_read = 0;      // opened and read (header, trailer, maps)
  std::vector<std::string> unreadable;  // "name: why"
};

struct RebuildReport {
  uint64_t catalog_id = 0;
  std::vector<MediumScan> media;
  std::vector<RebuiltBackup> backups;  // in id order
  std::vector<std::string> warnings;
};

// Errors, before the catalog is written: invalid_argument for a medium that cannot be
// listed or has no directories, for pieces of several catalogs and no catalog_id, for a
// catalog_id other than the target's; invalid_argument (no key given) or wrong_key for
// encrypted pieces; the catalog's own errors.
Result<RebuildReport> rebuild_catalog(catalog::Catalog& cat, const RebuildOptions& o);

}  // namespace stripeback::engine
