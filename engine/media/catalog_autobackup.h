// Catalog autobackup (docs/catalog-format.md, "Catalog autobackup"): at the end of every
// backup to a destination with directories, a copy of the catalog's records of the backups
// on that destination is written there as a small file of its own,
//   sb-catalog-<catalog id>-<UTC time stamp>-<backup id>.sbcat
// so that `catalog rebuild` gets back what pieces cannot tell (tag, sources, level and
// parents, status, end time, directories). Written through the storage seam like a piece:
// a temporary name, synced, renamed, the directory synced. Sealed with the backup's key
// when the backup is encrypted. The newest kAutobackupsKept per catalog id are kept.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/backup_records.h"
#include "catalog/catalog.h"
#include "engine/wiring/backends.h"
#include "stripeback/result.h"

namespace stripeback::engine {

class Keyring;

inline constexpr size_t kAutobackupsKept = 2;

struct AutobackupName {
  uint64_t catalog_id = 0;
  std::string stamp;  // YYYYMMDDTHHMMSSZ
  uint64_t backup_id = 0;
  // When it was written, from its header (autobackup_written_ns); 0 when not read. Within
  // one second of the name's stamp it tells which is newer: a resume of an older backup
  // writes its autobackup after a newer backup's, under a smaller backup id.
  int64_t written_ns = 0;
  // Newer sorts later: by time stamp, then by when it was written, then by backup id.
  bool operator<(const AutobackupName& o) const {
    if (stamp != o.stamp) return stamp < o.stamp;
    if (written_ns != o.written_ns) return written_ns < o.written_ns;
    return backup_id < o.backup_id;
  }
};
// When autobackup `name` in `dir` was written, from its header (checked). When the header
// cannot be read or is damaged: the latest time possible, so that a damaged autobackup is
// not taken for older than it is (a rebuild still picks it, reports the damage and reads
// the pieces instead, as it does for any damaged newest autobackup).
int64_t autobackup_written_ns(const Place& dir, const std::string& name);
std::string autobackup_name(const AutobackupName& n);
// Set only for a name of the form above (never for a piece or a temporary file).
std::optional<AutobackupName> parse_autobackup_name(std::string_view name);

// Writes the autobackup of `cat`'s backups whose destination is `dest` (as recorded in
// their begin records), named for backup `backup_id`, then removes all but the newest
// kAutobackupsKept of this catalog on `dest`. `keys` (after start_job) seals it. Returns the
// name written. Errors name the file and the cause; unsupported for a destination without
// directories.
// With `lock`, the autobackup is written locked until then (as the backup's pieces).
Result<std::string> write_catalog_autobackup(const catalog::Catalog& cat, const std::string& dest,
                                             uint64_t backup_id, Keyring* keys,
                                             const std::optional<storage::Retention>& lock = {});

// Reads and checks autobackup `name` in `dir`: corrupt for damage, invalid_argument when it
// is sealed and no key was given, wrong_key for the wrong one.
Result<catalog::DecodedRecords> read_catalog_autobackup(const Place& dir, const std::string& name,
                                                        Keyring* keys);

}  // namespace stripeback::engine
