// Reading the pieces on backup media for catalog rebuild (catalog_rebuild.h): what each
// piece says, from its header, trailer, map frames and footer. Pieces in directories are
// opened by name and read with random reads; pieces on removable media are found by
// reading each volume from its start, every piece walked front to back. Internal to
// engine/media/.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "catalog/catalog.h"
#include "engine/format/piece_format.h"
#include "engine/media/catalog_rebuild.h"
#include "engine/wiring/backends.h"
#include "stripeback/result.h"

namespace stripeback::engine {

class Keyring;

namespace rebuild {

// What one piece says, read from its header, trailer, map frames and footer.
struct ScannedPiece {
  catalog::PieceRecord record;
  PieceHeader header;
  Trailer trailer;
  std::vector<std::vector<DigestMap>> maps;  // per file id
};

// A medium with directories, as given and as listed (names sorted).
struct Medium {
  Place place;
  std::string text;
  std::vector<std::string> names;
};

// Whether a piece's error ends the rebuild (a wrong or missing key, what this build cannot
// read) rather than leaving that piece out as unreadable.
bool stops_rebuild(const Error& e);

// Piece `name` of medium `m`. Errors: those of opening and reading it (PieceReader::open).
Result<ScannedPiece> scan_piece(const Medium& m, const std::string& name, Keyring* keys);

// What the volumes in the drives hold: each piece with the index of its medium (in the
// order of the drives), and one MediumScan per drive.
struct MediaPieces {
  std::vector<std::pair<size_t, ScannedPiece>> pieces;
  std::vector<MediumScan> scans;
};

// Every piece on the volumes in `drives`, read from their starts, each piece walked and
// checked; a piece that spans volumes is read again across them once all are scanned. A
// piece that cannot be read is listed in its scan's `unreadable`. Errors: a drive that
// cannot be read, and the errors for which stops_rebuild() is true.
Result<MediaPieces> scan_media(const std::vector<std::string>& drives, Keyring* keys);

}  // namespace rebuild
}  // namespace stripeback::engine
