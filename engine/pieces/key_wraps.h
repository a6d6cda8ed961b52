// The catalog's wraps of pieces' data keys (KeyWrap records, docs/security.md) in the
// piece format's terms, for Keyring::set_catalog_wraps, and back.
#pragma once

#include <map>
#include <string>

#include "catalog/catalog.h"
#include "engine/format/piece_format.h"

namespace stripeback::engine {

PieceCrypto piece_crypto_of(const catalog::KeyWrap& w);
catalog::KeyWrap key_wrap_of(uint64_t backup_id, const std::string& piece, const PieceCrypto& c,
                             bool in_piece);
// The newest wrap of every piece the catalog holds one for, by piece name.
std::map<std::string, PieceCrypto> catalog_wraps(const catalog::Catalog& cat);

}  // namespace stripeback::engine
