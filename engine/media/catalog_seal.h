// The catalog's seal seen from the engine (docs/security.md, "Tamper-evident catalog"):
// attaching a job's key to its catalog, and refusing to work from a catalog that shows
// tampering.
#pragma once

#include <string>

#include "catalog/catalog.h"
#include "stripeback/result.h"

namespace stripeback::engine {

class Keyring;

// Attaches the seal key derived from `keys` to `cat`, unless one is attached already: for a
// sealed catalog with the parameters of its Seal record (wrong_key when `keys` is not its
// key), for one not sealed yet with new ones (a fresh salt, the catalog's newest key
// version), which its next append writes; from then on every record appended is sealed
// and every record read is verified.
Result<void> attach_catalog_key(catalog::Catalog& cat, Keyring& keys);

// What a job checks before it relies on its catalog: tampered, naming the first finding
// and the count, when the catalog shows tampering; invalid_argument (a key not given) when
// it is sealed and no key is attached (the job could not verify it, nor append to it).
Result<void> check_catalog_trust(const catalog::Catalog& cat);

// Before a job relies on its catalog: attach_catalog_key with `keys` when given, then
// check_catalog_trust.
Result<void> prepare_catalog_seal(catalog::Catalog& cat, Keyring* keys);

// "verified", "not verified (no key)", "not sealed", or "tampered": the catalog's state
// for `list` and --json (docs/json.md: catalog_seal).
std::string catalog_seal_state(const catalog::Catalog& cat);

}  // namespace stripeback::engine
