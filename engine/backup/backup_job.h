// A backup job: plans the sources into backup sets, registers the backup in the catalog,
// runs N channels in parallel and records the outcome. The catalog shows the backup
// complete (or partial) only after every piece it names is durable and recorded, and every
// file it lists is complete in them. run_backup() runs the job as a list of named phases
// over one state (backup_job_state.h), from the options' check to the catalog autobackup.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/backup/alarm.h"
#include "engine/backup/backup_channel.h"
#include "engine/monitor/progress.h"
#include "engine/transform/crypto.h"
#include "engine/monitor/stats.h"
#include "engine/wiring/backends.h"
#include "stripeback/result.h"

namespace stripeback::engine {

struct BackupOptions {
  std::vector<std::string> sources;
  bool one_file_system = false;  // do not cross mount points below the sources
  bool skip_unreadable = false;  // directories that cannot be listed are skipped, not an error
  std::string destination;  // directory for the pieces (created if missing)
  std::string tag;
  uint32_t channels = kDefaultChannels;
  // Choose the channel count for this job's media instead (engine/tuning/auto_channels.h):
  // from 1 to kAutoChannelsMost, within the memory limit of the buffers; `channels` unused,
  // and channel.cpu_budget is the whole job's (split over the channels chosen).
  bool auto_channels = false;
  ChannelConfig channel;
  // Buffer count and size as the user gave them; unset ones follow the multiplexing rule
  // (see choose_buffers).
  std::optional<size_t> buffers, buffer_size;
  uint32_t files_per_set = 64;
  uint64_t section_size = 0;  // 0: never split files
  double job_rate = 0;        // bytes per second for the whole job; 0: unlimited
  std::optional<std::chrono::seconds> duration;
  bool partial = false;        // at the deadline keep what is complete (status partial)
  bool minimize_load = false;  // pace the job to end just inside the duration
  std::shared_ptr<Keyring> keys;  // set: encrypt every piece (see engine/transform/crypto.h)
  const std::atomic<bool>* cancel = nullptr;
  // Live progress (progress.h), or null: given the channels and the total before they start.
  JobProgress* progress = nullptr;
  // Incremental backups (docs/incremental.md): unset for a plain full backup; 0 for a
  // level 0 (a full backup later level 1s build on); 1 for what changed since the newest
  // level 0 or 1 of each file (or, cumulative, since the newest level 0).
  std::optional<int> level;
  bool cumulative = false;
  uint32_t change_unit = kDefaultChangeUnit;
  bool require_parent = false;  // a level 1 with no parent for any file fails
  // Backup optimization: a file whose size, mtime, ctime and inode equal those of a copy
  // a backup with a level already holds is not read; its record names that backup. `force`
  // reads everything anyway.
  bool optimize = false;
  bool force = false;
  // Backup to drives of removable media instead of a directory: `destination` is then only
  // recorded, and `channels` must equal the number of drives.
  std::optional<MediaOptions> media;
  // Source validation (docs/page-checks.md). `check_logical`: a page format ("auto",
  // "postgres") whose pages are checked as they are read; `max_corrupt`: corrupt pages a
  // file may have before the backup fails; `validate_only`: read and check, write nothing
  // (no destination, no catalog record).
  std::optional<std::string> check_logical;
  std::optional<uint32_t> page_size;
  uint64_t max_corrupt = 0;
  bool validate_only = false;
  // Resume this interrupted backup (0: the newest one to the destination) instead of
  // beginning a new one (engine/backup/resume.h).
  std::optional<uint64_t> resume;
  // Lock every piece and the catalog autobackup on the medium (S3 Object Lock) until `days`
  // after the backup ends (docs/s3.md, "Locked backups"). The destination must allow it.
  struct Lock {
    storage::Retention::Mode mode = storage::Retention::Mode::compliance;
    uint32_t days = 0;
  };
  std::optional<Lock> lock;
  // A hot backup (docs/postgresql.md): the sources are in a database's backup mode, so a
  // file that changes while it is read is expected ("fuzzy": the database's redo replays
  // over it) and is recorded as such instead of making the backup one with changed files.
  bool hot = false;
  // Called once, after the channels ran and the outcome is judged and before anything
  // records the backup complete: ends the database's backup mode (backup --pg) and fills in
  // what it reported. `copied`: every file was read. An error fails the backup. Not called
  // when the job fails before its channels run: the caller ends the mode then.
  std::function<Result<void>(bool copied, catalog::HotBackup& hot)> end_hot;
  // Asked for every entry below a source before it is read: true leaves it out (backup
  // --pg's list of what a base backup leaves out), unrecorded.
  std::function<bool(const std::string& path)> exclude;
  // Exclusion patterns (engine/backup/exclude.h; backup --exclude, --exclude-from): what
  // they match is not backed up (a directory not walked) and is listed in
  // BackupSummary::excluded. A resume must give the patterns its backup began with.
  std::vector<std::string> excludes;
  // backup --not-backed-up-since (docs/selection.md): a file that a complete backup begun
  // at or after this time (wall clock, ns) holds with its present size and modification
  // time is not backed up again (BackupSummary::skipped_backed_up).
  std::optional<int64_t> not_backed_up_since_ns;
  // Page checks (--check-logical) of a backup that knows where the database's redo begins
  // (backup --pg: the start LSN): a failing page stamped from there on is being written,
  // one stamped before it is corrupt (make_validator).
  std::optional<uint64_t> pages_changing_from;
  // The ransomware alarm (engine/backup/alarm.h, docs/security.md): a backup that checks
  // pages or compresses records its file profiles and compares them with the newest earlier
  // complete backup that profiled the same files. When a rule fires the backup is recorded
  // complete all the same (its corrupt pages do not fail it: they are the evidence), the
  // earlier backup is kept forever and BackupSummary::suspicious says why. Unset: off.
  std::optional<AlarmThresholds> alarm = AlarmThresholds{};
};

struct BufferChoice {
  size_t buffers = 16;
  size_t buffer_size = 1 << 20;
  uint32_t multiplexing = 1;
};

// The buffer rule: with multiplexing level L (units a channel reads at once) up to 4, 16
// buffers of 1 MiB per channel shared by the open files; up to 8, 32 of 512 KiB; above,
// 64 of 256 KiB: always 16 MiB per channel. With compression the buffers (and so the
// independently compressed frames) are 1 MiB at any level: larger frames compress better
// and cost less CPU per byte. A validation (backup --validate: every buffer is a read in
// flight, none waits for a write) gets twice as many buffers, 32 MiB per channel: with
// several streams per channel (sections, multiplexed files) 8 reads of 1 MiB in flight per
// stream leave the disk idle between requests (docs/benchmarks.md, "Current figures: reads in flight").
// --buffers and --buffer-size override.
BufferChoice choose_buffers(uint32_t multiplexing, std::optional<size_t> buffers,
                            std::optional<size_t> buffer_size, bool compressing = false,
                            bool validating = false);

// What a backup with a level made of one file.
struct FileChangeInfo {
  std::string path;
  // "new" (whole: no usable parent), "changed", "unchanged" or "skipped" (--optimize)
  std::string change;
  uint64_t units_written = 0;
  uint64_t parent = 0;  // backup id of the parent (0 for new)
  uint64_t held_by = 0;  // "skipped": the backup holding this version
};

struct BackupSummary {
  uint64_t backup_id = 0;
  bool validate_only = false;
  std::string page_format;  // the --check-logical validator's name, or empty
  PageStats pages;          // all channels' page checks, corrupt blocks in file order
  std::string status;  // "complete", "partial" or "failed"
  std::string error;   // set when failed or partial
  // What kind of failure `error` is (the first channel's, a deadline's timed_out, ...), so
  // a caller can tell a full destination from a wrong key without reading the text.
  Errc error_code = Errc::io;
  uint64_t files = 0;
  uint64_t files_planned = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint32_t pieces = 0;
  uint32_t sets = 0;
  uint32_t sections = 0;  // units that are sections of larger files
  BufferChoice buffers;
  uint64_t max_piece_size = 0;
  uint64_t checkpoint_bytes = 0;     // the checkpoints in force (0: off)
  double checkpoint_interval_s = 0;
  uint64_t section_size = 0;
  double rate = 0, job_rate = 0;  // limits in bytes per second (0: none)
  double effective_rate = 0;      // bytes read per second of elapsed time
  bool deadline_hit = false;
  std::string encryption = "none";  // or "aes-256-gcm (passphrase)" / "(key file)"
  double elapsed_s = 0;
  std::vector<ChannelStats> channels;
  Verdict verdict;  // what bounded the job (stats.h)
  std::vector<SkippedEntry> skipped;
  std::vector<std::string> warnings;
  // --lock-days: until when the pieces are locked on their medium.
  std::optional<storage::Retention> lock;
  // Recorded files that changed (size or mtime) while they were read: their copies may mix
  // old and new contents. Sorted; empty for a failed backup.
  std::vector<std::string> changed_files;
  // A hot backup: the recorded files that changed while they were read (expected: the
  // database's redo repairs them), sorted; and what its record in the catalog says.
  std::vector<std::string> fuzzy_files;
  std::optional<catalog::HotBackup> hot;
  std::vector<std::string> excluded;  // paths BackupOptions::excludes left out, in walk order
  // --not-backed-up-since: the files left out because a complete backup since holds them
  // as they are, sorted by path.
  std::vector<std::string> skipped_backed_up;
  int level = -1;  // -1: a plain full backup
  bool cumulative = false;
  uint32_t change_unit = 0;
  std::vector<uint64_t> parents;  // backups the files build on
  std::vector<FileChangeInfo> file_changes;  // level backups: every recorded file, by path
  // backup --resume: the backup resumed, and the files (and their bytes) kept from before
  // its interruption, not read again.
  uint64_t resumed_from = 0;
  uint64_t resumed_files = 0;     // files all of whose units were kept
  uint64_t resumed_sections = 0;  // sections kept (of files read in part again, or whole)
  uint64_t resumed_bytes = 0;
  // Files the interrupted run had backed up (some of) that were read again whole, and why.
  std::vector<std::pair<std::string, std::string>> resumed_reread;
  // Blank volumes of removable media the backup labelled itself (MediaOptions::label_blank).
  std::vector<LabelledVolume> labelled_volumes;
  // The channels the job ran, and with --channels auto why that many (empty otherwise).
  uint32_t channels_chosen = 0;
  std::string channels_reason;
  // The alarm: the backup its file profiles were compared with (0: none), and, when a rule
  // fired, the evidence.
  uint64_t alarm_compared_with = 0;
  std::optional<Suspicion> suspicious;
};

// Errors before anything is written (bad source, unusable destination) come back as the
// Result's error with code invalid_argument or not_found. Once the job has started, a
// failure is reported in the summary (status "failed") and recorded in the catalog; the
// pieces of a failed backup are removed, and those that cannot be (a medium turned
// read-only, a server gone) are named in a warning, as they are by the next backup to the
// destination. That one also names pieces of this catalog's killed backups.
Result<BackupSummary> run_backup(const BackupOptions& opts, catalog::Catalog& cat);

}  // namespace stripeback::engine
