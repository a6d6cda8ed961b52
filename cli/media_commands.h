// Media management commands (docs/media-management.md): configure, crosscheck, report
// obsolete, delete obsolete and delete expired (delete backup: lifecycle_commands.h).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "engine/media/media_ops.h"

namespace stripeback::engine {
struct DeletePlan;
struct DeleteOutcome;
}  // namespace stripeback::engine
namespace stripeback::util {
class JsonWriter;
}

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
  // delete backup
  uint64_t delete_id = 0;
  bool with_dependents = false;
};

// The flags of configure and crosscheck, added to their commands; the `obsolete` and
// `expired` subcommands of `delete`; `obsolete` under `report`.
void add_configure_flags(CLI::App* configure, CommonFlags& c, MediaFlags& f);
void add_crosscheck_flags(CLI::App* crosscheck, CommonFlags& c, MediaFlags& f);
void add_delete_commands(CLI::App* del, CommonFlags& c, MediaFlags& f);
void add_report_obsolete(CLI::App* report, CommonFlags& c);
int run_configure_cmd(const CommonFlags& c, const MediaFlags& f);
int run_crosscheck_cmd(const CommonFlags& c, const MediaFlags& f);
int run_report_obsolete_cmd(const CommonFlags& c, const MediaFlags& f);
// Runs the subcommand of `delete` that was parsed.
int run_delete_cmd(const CLI::App& del, const CommonFlags& c, const MediaFlags& f);

// A deletion's --json fields: `pieces` (each backup_id, name, location, bytes) and `bytes`,
// and once carried out (`act`) `pieces_removed`, `complete` and `errors`.
void deletion_json(util::JsonWriter& w, const engine::DeletePlan& plan, bool act,
                   const engine::DeleteOutcome& outcome);

// The settings `configure` knows: retention, channels, compression, key-file,
// passphrase-file, passphrase-env, destination. A backup, restore or validate flag given on
// the command line overrides them.
const std::vector<std::string>& setting_keys();

// Fills in from the catalog's settings what the command line of a job left out: its
// channels, a backup's compression, the key source (for --encrypt and for reading), and a
// backup's --to. A catalog that does not exist yet has no settings.
// A deletion is planned and carried out under the maintenance lock, from the catalog as the
// previous holder left it: when `take` (not for a dry run), the lock is taken and the
// catalog read again; otherwise nothing is locked.
Result<std::optional<engine::MaintenanceLock>> lock_for_deletion(catalog::Catalog& cat, bool take);

Result<void> apply_settings(const CommonFlags& c, options::Settings& job, bool backup);

}  // namespace stripeback::cli
