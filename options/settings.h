// The settings of a job (backup, source validation, restore, validation) as a user gives
// them, each one checked when it is set (options/schema.h) and all of them turned into the
// engine's options, with the checks that relate one to another, by options/job_options.h.
// The CLI's flags and the C API's keys both fill this one structure.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/pieces/channel_config.h"
#include "engine/wiring/backends.h"
#include "engine/transform/crypto.h"
#include "engine/restore/path_remap.h"
#include "database/recovery_target.h"

namespace stripeback::options {

struct Settings {
  // What and where.
  std::vector<std::string> sources;       // backup
  std::vector<std::string> paths;         // restore, validate: limit to these
  std::vector<std::string> destinations;  // backup --to: one directory or tape drives
  std::string target;                     // restore --to
  std::string tag;
  std::optional<uint64_t> backup_id;
  bool one_file_system = false, skip_unreadable = false;
  // What a backup leaves out (docs/selection.md): patterns, and files of patterns (read
  // by backup_options()).
  std::vector<std::string> exclude, exclude_from;
  // backup --not-backed-up-since: a time (wall clock, ns), or an age counted back from
  // when the job's options are made (backup_options()).
  std::optional<int64_t> not_backed_up_since_ns;
  std::optional<std::chrono::milliseconds> not_backed_up_for;
  // How the work is cut.
  uint32_t channels = engine::kDefaultChannels;
  bool channels_auto = false;  // --channels auto: the job chooses (`channels` unused)
  uint32_t files_per_set = 64, max_open_files = 8;
  std::optional<engine::Checkpoints> checkpoints;  // unset: the defaults
  uint64_t max_piece_size = 0, section_size = 0;   // 0: none
  std::optional<uint64_t> resume;                  // 0: the newest interrupted backup
  // Locked backups (S3 Object Lock): days after the end, and the mode.
  std::optional<uint32_t> lock_days;
  storage::Retention::Mode lock_mode = storage::Retention::Mode::compliance;
  // Rates, duration, compression.
  uint64_t rate = 0, job_rate = 0;  // bytes per second; 0: unlimited
  std::optional<std::chrono::seconds> duration;
  bool partial = false, minimize_load = false;
  std::string compress = "none";
  int compress_level = 0;  // engine::parse_compress of `compress`
  std::optional<double> cpu_budget;
  // Encryption: names of where the key is, never the key.
  bool encrypt = false;
  engine::KeySource keys;
  // Incremental backups.
  std::optional<int> level;
  bool cumulative = false, require_parent = false, optimize = false;
  bool force = false;  // backup: with optimize, read everything; restore: replace files
  std::optional<uint32_t> change_unit;
  // Source validation and page checks.
  bool validate = false;  // backup --validate (the C API's SB_OP_VALIDATE_SOURCE)
  std::optional<std::string> check_logical;
  uint64_t max_corrupt = 0;
  std::optional<uint32_t> page_size;
  // The ransomware alarm (--no-alarm, --alarm-page-share, ...): fractions and a factor.
  bool alarm = true;
  double alarm_page_share = 0.01, alarm_page_factor = 10, alarm_compression_drop = 0.5;
  // Databases: a hot backup (--hot), of a PostgreSQL cluster through libpq (--pg CONNINFO).
  bool hot = false;
  std::string pg;
  // Tape.
  std::vector<std::string> tape_volumes;
  std::optional<uint32_t> tape_block_size;
  std::optional<bool> tape_sync_io;
  std::optional<uint32_t> tape_wait;  // seconds
  bool label_blank = false;
  std::vector<std::string> tape_drives;  // restore: where to look for the volumes
  // Restore.
  bool delta = false, no_fallback = false, allow_fallback = false;
  std::vector<engine::PathRemap> remaps;  // restore --remap OLD=NEW, checked when given
  bool preview = false;  // restore, validate: print the plan, read no frame, write nothing
  // Restore to a point in time (docs/postgresql.md): the recovery target, checked when set;
  // the CLI's alone (no C API key).
  database::RecoveryTarget recovery;
  // Validate: some frames only.
  std::optional<double> sample;  // a share, 0 < sample <= 1
  std::optional<uint64_t> seed;
  std::optional<std::pair<uint32_t, uint32_t>> part;  // K of N
  std::optional<std::chrono::milliseconds> max_duration;
  // I/O.
  std::optional<size_t> buffers, buffer_size;  // unset: the buffer rule chooses
  bool direct = true;
  // For an embedder (the CLI has its own monitoring flags).
  uint32_t progress_interval_ms = 250;
  bool status_file = true;
  bool nfs_tune_malloc = false;
  // S3 (s3:// locations): engine::configure_s3 before the job.
  engine::S3Options s3;
  // Each key set, with the text last given for it: messages quote what the user wrote.
  std::map<std::string, std::string, std::less<>> given;

  bool was_given(std::string_view key) const { return given.find(key) != given.end(); }
};

}  // namespace stripeback::options
