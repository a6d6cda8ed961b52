// How the catalog's seal (docs/security.md, "Tamper-evident catalog") is shown by `list`:
// the `catalog_seal` object of --json and the lines of the text listing. Shared by the CLI
// and the C API through stripeback_render.
#pragma once

#include <string>

#include "catalog/catalog.h"
#include "util/json.h"

namespace stripeback::cli {

// "catalog_seal": {"state", "key_version" (sealed only), "tampering": [{offset, sequence,
// what}]} (field names are stable, docs/json.md).
void seal_json(util::JsonWriter& w, const catalog::Catalog& cat);

// The listing's line about the seal (empty for a catalog not sealed), then one line per
// sign of tampering.
std::string seal_text(const catalog::Catalog& cat);

}  // namespace stripeback::cli
