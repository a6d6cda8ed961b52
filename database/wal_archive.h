// The log archive (docs/postgresql.md, "WAL archiving"): archive-push stores a file
// PostgreSQL hands to its archive_command, archive-get gives one back to its
// restore_command. Each file is one object below the configured destination,
//   <destination>/wal/<system identifier, 16 hex digits>/<name>
// (wal_object.h says what an object holds), and one WalFile record in the catalog, appended
// only once the object is durable. The catalog is the archive's index: a file is in the
// archive when the catalog has a pushed record of it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/transform/crypto.h"
#include "stripeback/result.h"

namespace stripeback::database {

// Where and how the archive stores files, from the catalog's settings (configure).
struct ArchiveConfig {
  std::string destination;  // directory or URL; empty: none configured (push refuses)
  int level = 0;            // zstd level, 0: none
  engine::KeySource keys;   // empty: not encrypted
  bool async = false;       // archive-async on
  std::string spool;        // archive-spool-path
  uint32_t parallel = kDefaultParallel;  // archive-parallel
  static constexpr uint32_t kDefaultParallel = 4;
};

// The archive's settings of `cat` (`catalog_dir` for the spool's default, <catalog>/
// archive-spool). invalid_argument, naming the setting, when one is unusable.
Result<ArchiveConfig> archive_config(const catalog::Catalog& cat, const std::string& catalog_dir);

// The cluster's system identifier, read from global/pg_control of the data directory that
// holds `wal_path` (a file in its pg_wal, or a relative path from the data directory, the
// working directory), else from the long header of a segment's first page; 0 when neither
// says.
uint64_t system_id_for(const std::string& wal_path, std::span<const std::byte> bytes);

// Where archive-push stores `name` of the cluster `system_id` below `destination`.
std::string wal_object_location(const std::string& destination, uint64_t system_id,
                                const std::string& name);

struct PushResult {
  catalog::WalFile file;
  bool already = false;  // the same file was in the archive already: nothing written
};

// Reads the file at `path` and archives it under its file name. Errors name the file and
// the cause: invalid_argument for a name PostgreSQL does not archive, or without a
// destination or with a drive of removable media as the destination; exists, naming both
// digests, for other bytes under a name already archived (the archived file stays); the
// storage's error (no_space, io, ...) when it cannot be stored, with nothing recorded.
// `keys`: the loaded keyring (start_job() done) when the archive is encrypted.
Result<PushResult> push_wal(catalog::Catalog& cat, const ArchiveConfig& cfg,
                            engine::Keyring* keys, const std::string& path);

// The bytes of archived file `name`, checked against its record's digest. not_found when
// the archive has no such file; else the storage's or the decoder's error.
Result<std::vector<std::byte>> fetch_wal(const catalog::Catalog& cat, engine::Keyring* keys,
                                         const std::string& name);

// Writes `bytes` to `path` so that it appears whole or not at all: a temporary file beside
// it, synced, renamed over `path`.
Result<void> write_local_atomic(const std::string& path, const std::vector<std::byte>& bytes);

// Retention: the archived files no kept backup needs. Of `backups` (the ones that stay),
// those with a recorded start WAL (backup --pg) set the oldest segment kept; segments,
// partial segments and backup history files of lower segment numbers (any timeline) are
// obsolete, timeline history files never are. Nothing is obsolete while no kept backup
// has a start WAL.
std::vector<catalog::WalFile> obsolete_wal(const std::vector<catalog::Backup>& backups,
                                           const std::vector<catalog::WalFile>& files);

// Removes each of `files` from its medium (a file already gone counts as removed) and
// records its removal. The messages of those that could not be removed (they stay
// recorded) are returned.
std::vector<std::string> remove_wal(catalog::Catalog& cat,
                                    const std::vector<catalog::WalFile>& files);

}  // namespace stripeback::database
