// Media management commands (docs/media-management.md): configure, crosscheck, report
// obsolete, delete obsolete and delete expired.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace stripeback::cli {

struct MediaFlags {
  // configure
  std::vector<std::string> setting;  // KEY VALUE... (e.g. retention redundancy 2)
  bool show = false;
  std::vector<std::string> clear;
  // crosscheck
  std::optional<uint64_t> backup;
  std::string tag;
  bool deep = false;
  std::vector<std::string> tape_drives;
  // delete
  bool dry_run = false;
};

struct MediaCommands {
  CLI::App* configure = nullptr;
  CLI::App* crosscheck = nullptr;
  CLI::App* report_obsolete = nullptr;
  CLI::App* delete_obsolete = nullptr;
  CLI::App* delete_expired = nullptr;
};

// Adds configure, crosscheck and delete to `app`, and `obsolete` under `report`.
MediaCommands add_media_commands(CLI::App& app, CLI::App& report, CommonFlags& c, MediaFlags& f);
// Runs whichever of them was parsed; -1 when none was.
int run_media_cmd(const MediaCommands& m, const CommonFlags& c, const MediaFlags& f);

// The settings `configure` knows: retention, channels, compression, key-file,
// passphrase-file, passphrase-env, destination. A backup, restore or validate flag given on
// the command line overrides them.
const std::vector<std::string>& setting_keys();

// Fills in from the catalog's settings what the command line of `sub` (backup, restore or
// validate) left out: --channels, --compress, the key source (for --encrypt and for
// reading), and a backup's --to. A catalog that does not exist yet has no settings.
Result<void> apply_settings(const CLI::App& sub, const CommonFlags& c, BackupFlags* backup,
                            RestoreFlags* restore);

}  // namespace stripeback::cli
