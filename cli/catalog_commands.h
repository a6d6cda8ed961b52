// `stripeback catalog rebuild|compact`: re-creating a lost catalog from the media, and
// rewriting the record log without damage (docs/media-management.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace CLI {
class App;
}

namespace stripeback::cli {

struct CatalogFlags {
  std::vector<std::string> from;  // rebuild: media (directories or nfs:// URLs)
  KeyFlags keys;
  bool no_autobackup = false;
  std::string catalog_id;  // rebuild: 16 hex digits, whose pieces to take
};

// Adds the subcommands of the `catalog` command to it. `common` receives --catalog and
// --json.
void add_catalog_commands(CLI::App* catalog, CatalogFlags& flags, CommonFlags& common);
// Runs the subcommand of `catalog` that was parsed.
int run_catalog_cmd(const CLI::App& catalog, const CatalogFlags& flags, const CommonFlags& common);

}  // namespace stripeback::cli
