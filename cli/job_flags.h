// The flags of the job commands (backup, restore, validate), and --catalog and --json,
// which every command that reads a catalog takes. A job's own options come from the option
// schema (options/schema.h), which the C API's keys come from too; the flags of the CLI
// alone (monitoring, the NFS client) are added here. Each function adds flags to a
// command's CLI11 App, in the order its --help lists them, bound to the structures given
// (which must outlive the parse).
#pragma once

#include <string>

#include "cli/commands.h"
#include "cli/nfs_flags.h"

namespace CLI {
class App;
}

namespace stripeback::cli {

// --catalog and --json.
void add_common(CLI::App* app, CommonFlags& c);
// --passphrase-file, --passphrase-env and --key-file into `k`, whose help says they are the
// key `of` something ("of encrypted pieces").
void add_key_flags(CLI::App* app, KeyFlags& k, const std::string& of);
// --key-file, --passphrase-file, --passphrase-env of a command that only needs the key to
// verify the catalog and seal what it appends (docs/security.md).
void add_catalog_key_flags(CLI::App* app, CommonFlags& c);
void add_backup_flags(CLI::App* backup, JobFlags& f, CommonFlags& c, NfsFlags& nfs);
void add_restore_flags(CLI::App* restore, JobFlags& f, CommonFlags& c, NfsFlags& nfs);
void add_validate_flags(CLI::App* validate, JobFlags& f, CommonFlags& c);

}  // namespace stripeback::cli
