// Crosscheck: is every recorded piece still there and whole? (docs/media-management.md)
//
// For each piece of the chosen backups, on whatever medium holds it: its size, its header
// block (magic, version, checksum, and that it names this piece and backup), its footer
// (checksum, and the whole-piece checksum the catalog recorded) and its trailer frame (header
// and payload checksums). With `deep`, every frame of the piece is read and its header and
// payload checksums checked (an unsealed data frame of version 5, which has no payload
// checksum, against its raw digest), and the whole-piece checksum is recomputed. No key is
// needed: the checksums cover the stored (sealed) bytes. A piece on removable media is checked by
// its header block (its drive must hold the volume); with `deep`, read whole.
//
// The outcome of each piece is recorded (catalog::Crosscheck): `expired` when it is missing
// or not whole, `available` otherwise; a piece found again later becomes available again.
// A deep check that finds frames whose payload fails its checksum in a piece that is
// otherwise whole (its headers, trailer and footer hold) records the piece as `damaged`
// with the files those frames belong to: the piece, its backup and every other file stay
// available (catalog::PieceRecord::damaged), and the finding stays until a deep check
// finds the piece good again.
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
  bool damaged = false;  // damaged frames in a piece otherwise whole (deep only)
  std::string damage;
  std::vector<std::string> damaged_files;
};

struct CrosscheckSummary {
  std::vector<CrosscheckedPiece> pieces;
  std::vector<uint64_t> backups;          // crosschecked, in id order
  std::vector<uint64_t> expired_backups;  // of those, now expired
  std::vector<uint64_t> damaged_backups;  // of those, with damaged frames (not expired)
  uint64_t bytes_read = 0;
  double elapsed_s = 0;
};

// Checks the pieces of the ended (complete, partial) backups chosen and records what it
// found. Errors: not_found for an unknown backup or tag; a failure to record.
Result<CrosscheckSummary> run_crosscheck(catalog::Catalog& cat, const CrosscheckOptions& opts);

// What a deep check found damaged inside a whole piece: nothing when `frames` is 0.
struct PieceDamage {
  uint32_t frames = 0;
  std::string what;                 // "2 frames fail their payload checksum (at offsets ...)"
  std::vector<std::string> files;   // the files those frames belong to, when known
};

// Checks one piece as described above; the error says why it is not there or not whole.
// `bytes` counts what was read. `holders`: the files the catalog says the piece holds, named
// as damaged when the piece's own file table is sealed (encrypted, and no key is used).
Result<PieceDamage> check_piece(const catalog::PieceRecord& p, uint64_t backup_id, bool deep,
                                const std::vector<std::string>& media_drives, uint64_t* bytes,
                                const std::vector<std::string>& holders = {});

}  // namespace stripeback::engine
