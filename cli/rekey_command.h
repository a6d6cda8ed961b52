// stripeback rekey (docs/security.md, "Key rotation"): wraps every encrypted piece's data
// key with a new key, in the pieces and in the catalog.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "engine/transform/crypto.h"

namespace stripeback::cli {

struct RekeyFlags {
  engine::KeySource old_key;  // --key-file, --passphrase-file, --passphrase-env
  engine::KeySource new_key;  // --new-key-file, --new-passphrase-file, --new-passphrase-env
  bool dry_run = false;
};

void add_rekey_flags(CLI::App* rekey, CommonFlags& c, RekeyFlags& f);
int run_rekey_cmd(const CommonFlags& c, const RekeyFlags& f);

}  // namespace stripeback::cli
