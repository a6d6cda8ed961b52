// The `stripeback` subcommands: each turns parsed flags into engine options, runs the job
// and prints its result. Exit codes: 0 success, 1 the job failed, 2 bad usage or input,
// 3 a partial backup, 4 a wrong passphrase or key, 5 a complete backup in which some files
// changed while they were read, 8 a backup the ransomware alarm fired on.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "options/schema.h"
#include "stripeback/result.h"

namespace CLI {
class Option;
}

namespace stripeback::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitPartial = 3;  // backup --partial stopped at its deadline
inline constexpr int kExitWrongKey = 4;  // the passphrase or key does not open the backup
// The backup is complete, but files changed (size or mtime) while they were read: their
// copies may be inconsistent (listed in --json "changed_files"). A partial backup exits 3
// even so, with the same list.
inline constexpr int kExitChanged = 5;
// restore or validate complete, but some files came from an older copy than the newest
// (the newest was expired or failed its checks), without --allow-fallback.
inline constexpr int kExitFellBack = 6;
// (7: archive-get.) Suspicious: the backup looks like encrypted or destroyed data. The
// ransomware alarm fired (docs/security.md): it is recorded complete as the evidence, and
// the backup it was compared with is kept forever. Before kExitChanged.
inline constexpr int kExitSuspicious = 8;
// The catalog's seal shows tampering (docs/security.md, "Tamper-evident catalog"): records
// changed, removed, reordered or added without the key. Distinct from damage (exit 1).
inline constexpr int kExitTampered = 9;

// Where the encryption key comes from: names only, never the secret itself.
struct KeyFlags {
  std::string passphrase_file;
  std::string passphrase_env;
  std::string key_file;
};

struct CommonFlags {
  std::string catalog;  // empty: the default location
  bool json = false;
  // backup, restore, validate: live progress (docs/monitoring.md)
  std::string progress = "auto";  // auto | always | never
  std::string progress_json;      // empty: none; "-": stderr; else a file
  double hang_after = 60;
  std::string status_listen;      // socket path or [HOST:]PORT of the status endpoint
  // The key of the catalog's seal (docs/security.md, "Tamper-evident catalog"): given
  // (add_catalog_key_flags; a job command's own key), else the catalog's configured one.
  KeyFlags keys;
};

// The options of a job command (backup, restore, validate), made from the option schema
// (options/schema.h): the parser keeps each flag's text, apply() sets every flag given
// through the schema, in the schema's order, so the CLI checks a value as the C API does.
struct JobFlags {
  struct Bound {
    const options::Option* option = nullptr;
    CLI::Option* flag = nullptr;
    std::string value;                // an option with one value
    std::vector<std::string> values;  // a list
    bool on = false;                  // a flag
  };
  options::Settings settings;
  std::deque<Bound> bound;  // stable addresses: CLI11 writes into them
  std::string tape_spool;   // restore --tape-spool: accepted and ignored

  // Sets what was given into `settings`; errors are bad usage.
  Result<void> apply();
};

struct DemoDataFlags {
  std::string dir;
  std::string size = "300M";
  uint32_t seed = 1;
};

int run_backup_cmd(const CommonFlags& c, const options::Settings& s,
                   const std::atomic<bool>& cancel);
// restore, or validate with `verify_only`.
int run_restore_cmd(const CommonFlags& c, const options::Settings& s, bool verify_only,
                    const std::atomic<bool>& cancel);
struct ListFlags {
  bool corrupt = false;  // the corrupt pages known now instead of the backups
  std::optional<uint64_t> backup;  // only this backup
  bool files = false;              // with backup: the files it holds
};
int run_list_cmd(const CommonFlags& c, const ListFlags& f);
int run_demo_data_cmd(const DemoDataFlags& f);
int run_keygen_cmd(const std::string& path);

// Prints "stripeback: MESSAGE" on stderr. Messages quote file names, tags and URLs as they
// are; this escapes them (util::escape_text) so that no control byte reaches the terminal.
void print_error(const std::string& message);

// $STRIPEBACK_CATALOG, else $XDG_STATE_HOME/stripeback, else ~/.local/state/stripeback.
std::string default_catalog_dir();
// --catalog, else the default.
std::string catalog_dir_of(const CommonFlags& c);
// Opens the catalog of --catalog (or the default), logging its load warnings. Errors say
// "catalog is not usable: ..." (not_found when it does not exist and `create` is no).
// `c` with the key of a job command's options as the catalog's seal key.
CommonFlags with_job_key(const CommonFlags& c, const options::Settings& f);
// How open_catalog treats the catalog's seal (docs/security.md, "Tamper-evident catalog").
enum class SealUse {
  work,        // attach the key; a catalog that shows tampering is an error (exit 9)
  inspect,     // attach the key; tampering is for the caller to show (list)
  unattached,  // neither: the engine attaches the keys it holds (rekey)
};
// Opens the catalog and attaches the seal key (CommonFlags::keys, else the catalog's
// configured key-file, passphrase-file or passphrase-env) when there is one.
Result<std::unique_ptr<catalog::Catalog>> open_catalog(const CommonFlags& c, catalog::Create create,
                                                       SealUse use = SealUse::work);
// The exit code for an error (kExitUsage for bad input, kExitWrongKey, else kExitFailed).
int exit_code_for(const Error& e);
// Prints the error (print_error) and returns exit_code_for(e).
int report(const Error& e);

}  // namespace stripeback::cli
