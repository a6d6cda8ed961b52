// stripeback rekey (docs/security.md, "Key rotation"): wraps every encrypted piece's data
// key with a new key-encryption key, in the piece's key slot where the medium can rewrite
// it in place and in the catalog, without reading or rewriting any frame.
//
// Crash-safe and resumable: a Rekey intent record comes first; each piece gets its new
// wrap in its spare key slot (synced), then a KeyWrap record, then its old slot is erased
// (synced); the done record comes last. Killed anywhere and run again with the same keys,
// it finishes the same rekey (same key version). At every moment each piece opens with the
// old key or the new one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "stripeback/result.h"

namespace stripeback::engine {

class Keyring;

struct RekeyOptions {
  bool dry_run = false;  // say what would be done; write nothing
};

enum class RekeyOutcome : uint8_t {
  rewrapped,     // new wrap in the piece's key slot (old one erased) and in the catalog
  catalog_only,  // the medium cannot rewrite the slot: the new wrap is in the catalog only
  old_format,    // format 1 to 3 (key in the checksummed header): catalog only; rewrite it
  already,       // an earlier run of this rekey did it
  unencrypted,   // nothing to do
  failed,        // not rewrapped: missing, unreadable or damaged
};
const char* rekey_outcome_name(RekeyOutcome o);

struct RekeyedPiece {
  uint64_t backup_id = 0;
  std::string name;
  std::string location;
  RekeyOutcome outcome = RekeyOutcome::failed;
  std::string detail;  // why (catalog only, failed), for messages
};

struct RekeyReport {
  uint64_t rekey_id = 0;     // 0 on a dry run
  uint32_t kek_version = 0;  // the new key's version
  bool resumed = false;      // an earlier, unfinished rekey was finished
  bool finished = false;     // the done record is written (no piece failed)
  // A finished rekey from the second on compacts the catalog: the earlier rekeys' KeyWrap
  // records, wraps under keys now retired, are left out (catalog::Catalog::compact). How
  // many records that removed, or why the compaction failed (the rekey itself is done; a
  // later `catalog compact` removes them).
  uint64_t superseded_removed = 0;
  std::string compact_error;
  // The catalog's seal (docs/security.md): sealed anew under the new key at the end.
  bool catalog_resealed = false;
  std::vector<RekeyedPiece> pieces;
  uint32_t count(RekeyOutcome o) const;
};

// Errors before anything is written: invalid_argument when `new_keys` holds the same
// secret as `old_keys`; Errc::wrong_key when some encrypted piece opens with neither key
// (naming it). A piece that fails later is reported in RekeyReport::pieces and leaves the
// rekey unfinished (a rerun finishes it).
Result<RekeyReport> run_rekey(catalog::Catalog& cat, Keyring& old_keys, Keyring& new_keys,
                              const RekeyOptions& o);

}  // namespace stripeback::engine
