// The `stripeback` subcommands: each turns parsed flags into engine options, runs the job
// and prints its result. Exit codes: 0 success, 1 the job failed, 2 bad usage or input,
// 3 a partial backup, 4 a wrong passphrase or key, 5 a complete backup in which some files
// changed while they were read.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "stripeback/result.h"

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
  std::optional<unsigned> buffers;
  std::optional<std::string> buffer_size;
  bool no_direct = false;
};

struct BackupFlags {
  std::vector<std::string> sources;
  bool one_file_system = false;
  bool skip_unreadable = false;
  std::string checkpoint_interval;  // empty: the defaults
  std::string to;
  std::string tag;
  unsigned channels = 2;
  unsigned files_per_set = 64;
  unsigned max_open_files = 8;
  std::string max_piece_size;
  std::string section_size;
  std::string rate;
  std::string job_rate;
  std::string duration;
  bool partial = false;
  bool minimize_load = false;
  std::string compress = "none";
  std::optional<double> cpu_budget;
  bool encrypt = false;
  KeyFlags keys;
  std::optional<int> level;  // incremental backups (docs/incremental.md)
  bool cumulative = false;
  std::string change_unit;
  bool require_parent = false;
  bool optimize = false;
  bool force = false;
  // Source validation (docs/page-checks.md)
  bool validate = false;
  std::string resume;  // "last" or a backup id (backup --resume)
  std::string check_logical;  // empty: not given; "auto" when given without a format
  uint64_t max_corrupt = 0;
  std::string page_size;
  // Tape (see cli/tape_commands.h): every --to as given; tape:URL ones become drives. The
  // tape flags are unset when not given (a backup to a directory refuses them).
  std::vector<std::string> to_all;
  std::vector<std::string> tape_volumes;
  std::optional<std::string> tape_block_size;  // default 256K
  std::optional<std::string> tape_io;          // async (default) or sync
  std::optional<unsigned> tape_wait;  // seconds to wait for a drive that is not ready (10)
  bool label_blank = false;  // label a blank tape with a generated volume id
};

struct RestoreFlags {
  std::string to;
  std::string tag;
  std::optional<uint64_t> backup;
  std::vector<std::string> paths;
  unsigned channels = 2;
  bool force = false;
  bool delta = false;
  KeyFlags keys;
  bool verify_only = false;  // the validate command
  bool no_fallback = false;
  bool allow_fallback = false;  // a restore that fell back exits 0, not kExitFellBack  // fail a file whose newest copy is expired or damaged
  std::string tape_spool;  // ignored: tape pieces are streamed, not staged
  std::vector<std::string> tape_drives;  // where to look for the volumes
  // validate: some frames only (docs/validate.md)
  std::string sample;        // "10%"
  std::optional<uint64_t> seed;
  std::string part;          // "2/7"
  std::string max_duration;  // "30m", "90s", "01:30"
};

struct DemoDataFlags {
  std::string dir;
  std::string size = "300M";
  uint32_t seed = 1;
};

int run_backup_cmd(const CommonFlags& c, const BackupFlags& f, const std::atomic<bool>& cancel);
int run_restore_cmd(const CommonFlags& c, const RestoreFlags& f, const std::atomic<bool>& cancel);
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
Result<std::unique_ptr<catalog::Catalog>> open_catalog(const CommonFlags& c, catalog::Create create);
// The exit code for an error (kExitUsage for bad input, kExitWrongKey, else kExitFailed).
int exit_code_for(const Error& e);
// Prints the error (print_error) and returns exit_code_for(e).
int report(const Error& e);

}  // namespace stripeback::cli
