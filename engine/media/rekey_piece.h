// One piece's part of a rekey (rekey.h): reading its header and key slots, rewriting a
// slot in place. Internal to engine/media.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "catalog/catalog.h"
#include "engine/format/piece_format.h"
#include "engine/media/rekey.h"
#include "stripeback/result.h"

namespace stripeback::engine {

// A piece as a rekey sees it: its header (with its key slots) and whether its key slots
// can be rewritten where it lies.
struct RekeyTarget {
  const catalog::Backup* backup = nullptr;
  const catalog::PieceRecord* piece = nullptr;
  std::string path;  // as messages show it
  PieceHeader header;
  bool rewritable = false;
  std::string why_not;  // when not rewritable: the reason, for the report
};

// Reads the header block and key slots of `p` (any medium; removable media read in order).
Result<RekeyTarget> read_rekey_target(const catalog::Backup& b, const catalog::PieceRecord& p,
                                      int64_t now_ns);

// Rekeys one piece to `kek_version` (crash points rekey-slot-written, rekey-wrap-recorded,
// rekey-slot-erased). The keyrings hold the catalog's wraps; the new one has started its
// job key.
RekeyedPiece rekey_piece(catalog::Catalog& cat, RekeyTarget& t, Keyring& old_keys,
                         Keyring& new_keys, uint32_t kek_version, uint64_t rekey_id);

}  // namespace stripeback::engine
