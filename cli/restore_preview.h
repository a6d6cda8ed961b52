// restore --preview and validate --preview (engine/restore/restore_preview.h): the plan the
// job would run, with a time estimate from the catalog's history, printed as text or JSON
// (docs/json.md). Nothing is written, in the target or in the catalog.
#pragma once

#include <string>

#include "catalog/catalog.h"
#include "cli/commands.h"
#include "engine/restore/restore_preview.h"

namespace stripeback::cli {

std::string preview_json(const engine::RestorePreview& p);
std::string preview_text(const engine::RestorePreview& p);

// Prints the preview of `o`; exits as the job would refuse to start (exit_code_for), 1 when
// some file would fail, else 0.
int run_preview(const CommonFlags& c, const engine::RestoreOptions& o, catalog::Catalog& cat);

}  // namespace stripeback::cli
