// Crosscheck: is every recorded piece still there and whole? (docs/media-management.md)
//
// For each piece of the chosen backups, on whatever medium holds it: its size, its header
// block (magic, version, checksum, and that it names this piece and backup), its footer
// (checksum, and the whole-piece checksum the catalog recorded) and its trailer frame (header
// and payload checksums). With `deep`, every frame of the piece is read and its header and
// payload checksums checked, and the whole-piece checksum is recomputed. No key is needed:
// the checksums cover the stored (sealed) bytes. A piece on removable media is checked by
// its header block (its drive must hold the volume); with `deep`, read whole.
//
// The outcome of each piece is recorded (catalog::Crosscheck): `expired` when it is missing
// or not whole, `available` otherwise; a piece found again later becomes available again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "stripeback/result.h"

namespace stripeback::engine {

struct CrosscheckOptions {
  std::optional<uint64_t> backup_id;  // only this backup
  std::optional<std::string> tag;     // only the backups with this tag
  bool deep = false;
  std::vector<std::string> media_drives;  // where to look for volumes (by label)
};

struct CrosscheckedPiece {
  uint64_t backup_id = 0;
  std::string piece;
  std::string location;
  uint64_t size = 0;
  bool expired = false;
  std::string reason;
};

struct CrosscheckSummary {
  std::vector<CrosscheckedPiece> pieces;
  std::vector<uint64_t> backups;          // crosschecked, in id order
  std::vector<uint64_t> expired_backups;  // of those, now expired
  uint64_t bytes_read = 0;
  double elapsed_s = 0;
};

// Checks the pieces of the ended (complete, partial) backups chosen and records what it
// found. Errors: not_found for an unknown backup or tag; a failure to record.
Result<CrosscheckSummary> run_crosscheck(catalog::Catalog& cat, const CrosscheckOptions& opts);

// Checks one piece as described above; the error says why it is not there or not whole.
// `bytes` counts what was read.
Result<void> check_piece(const catalog::PieceRecord& p, uint64_t backup_id, bool deep,
                         const std::vector<std::string>& media_drives, uint64_t* bytes);

}  // namespace stripeback::engine
