// The lifecycle of a chosen backup (docs/media-management.md, "Deleting or keeping one
// backup"): `delete backup ID` and `keep ID --until DATE | --forever | --clear`.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "cli/commands.h"
#include "cli/media_commands.h"

namespace stripeback::cli {

struct KeepFlags {
  uint64_t id = 0;
  std::string until;  // a time as --target-time takes it
  bool forever = false;
  bool clear = false;
};

// `delete backup` under `delete` (its flags in MediaFlags: dry_run, delete_id,
// with_dependents).
void add_delete_backup(CLI::App* del, CommonFlags& c, MediaFlags& f);
int run_delete_backup(const CommonFlags& c, const MediaFlags& f);

void add_keep_flags(CLI::App* keep, CommonFlags& c, KeepFlags& f);
int run_keep_cmd(const CommonFlags& c, const KeepFlags& f);

}  // namespace stripeback::cli
