// The records of some backups as a stand-alone catalog log: the body of a catalog
// autobackup (docs/catalog-format.md, "Catalog autobackup"), and what `catalog rebuild`
// imports. Pure: bytes in, bytes out; no I/O, no locking.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "catalog/payload.h"
#include "stripeback/result.h"

namespace stripeback::catalog {

// A catalog log (file header, then per backup its BackupBegin, Piece, Files and BackupEnd
// records, numbered from sequence 1) holding exactly what `backups` say. Errors
// (invalid_argument) for a field too long to store.
Result<std::vector<uint8_t>> encode_backup_records(const std::vector<Backup>& backups);

// What a log made by encode_backup_records (or any catalog log) says about its backups, in
// id order, with the warnings a load of it gives (damaged records are skipped as in a
// catalog). Errors: corrupt when the bytes do not start with a catalog file header,
// unsupported for a newer format; `name` names the bytes in those errors.
struct DecodedRecords {
  std::vector<Backup> backups;
  std::vector<LoadWarning> warnings;
  uint64_t catalog_id = 0;  // of the first begin record that has one
};
Result<DecodedRecords> decode_backup_records(std::span<const uint8_t> bytes,
                                             const std::string& name);

// The records that re-create backup `b` in a catalog, in the order a backup writes them:
// begin, one Piece per piece (without files), Files, then the end (when it has one), and
// its Lock, Hot and Keep records.
Result<std::vector<EncodedRecord>> backup_as_records(const Backup& b);

}  // namespace stripeback::catalog
