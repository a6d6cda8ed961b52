#include "cli/job_flags.h"

#include <CLI/CLI.hpp>
#include <string>

#include "cli/tape_commands.h"
#include "engine/backup/backup_job.h"

namespace stripeback::cli {
namespace {

void add_keys(CLI::App* app, KeyFlags& k, const char* purpose) {
  std::string p = purpose;
  auto* pf = app->add_option("--passphrase-file", k.passphrase_file,
                             "file whose first line is the passphrase " + p)
                 ->group("Encryption");
  auto* pe = app->add_option("--passphrase-env", k.passphrase_env,
                             "name of an environment variable holding the passphrase " + p)
                 ->group("Encryption");
  auto* kf = app->add_option("--key-file", k.key_file,
                             "file holding a 256-bit key (64 hex digits, see 'stripeback "
                             "keygen') " + p)
                 ->group("Encryption");
  pf->excludes(pe)->excludes(kf);
  pe->excludes(kf);
}

// What restore and validate work on: PATHs, --tag or --backup, and their channels.
void add_selection(CLI::App* app, RestoreFlags& f, const std::string& verb) {
  app->add_option("PATH", f.paths,
                  "original files or directories to " + verb + " (default: everything)");
  auto* tag = app->add_option("--tag", f.tag, verb + " the newest complete backup with this tag");
  auto* id = app->add_option("--backup", f.backup, verb + " this backup id");
  tag->excludes(id);
  app->add_option("--channels", f.channels, "parallel channels")
      ->default_val(engine::kDefaultChannels)
      ->check(CLI::Range(1, 256));
}

// Live progress and the status file (docs/monitoring.md): backup, restore, validate.
void add_progress(CLI::App* app, CommonFlags& c) {
  app->add_option("--progress", c.progress,
                  "draw the job's progress on stderr, redrawn a few times a second and "
                  "cleared at the end: auto (when stderr is a terminal, the default), always, "
                  "never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->group("Monitoring");
  app->add_flag("--progress-json{-}", c.progress_json,
                "write one JSON status line per second (the fields of `stripeback status "
                "--json`) to stderr, or with =FILE to FILE")
      ->option_text("[=FILE]")
      ->group("Monitoring");
  app->add_option("--status-listen", c.status_listen,
                  "serve GET /status (JSON) and GET /metrics (Prometheus) while the job runs, "
                  "on a Unix socket path or [HOST:]PORT (HOST 127.0.0.1 unless given)")
      ->option_text("ADDR")
      ->group("Monitoring");
  app->add_option("--hang-after", c.hang_after,
                  "call the job stalled in `stripeback status` when it makes no progress for "
                  "this many seconds (default 60)")
      ->check(CLI::Range(1.0, 86400.0 * 7))
      ->group("Monitoring");
}

void add_io(CLI::App* app, CommonFlags& c) {
  app->add_option("--buffers", c.buffers,
                  "I/O buffers per channel (default: 16, or by the multiplexing rule; twice "
                  "that for backup --validate, whose buffers are all reads in flight); all "
                  "the job's buffers must fit in half of this machine's memory (at most 64G)")
      ->check(CLI::Range(2, 4096));
  app->add_option("--buffer-size", c.buffer_size,
                  "size of each I/O buffer, a multiple of 4K (default: 1M, or by the "
                  "multiplexing rule)");
  app->add_flag("--no-direct", c.no_direct,
                "use buffered I/O instead of O_DIRECT for files and pieces");
}

// What to back up and where to: SOURCEs, how they are walked, --to and the tape flags.
void add_backup_what(CLI::App* backup, BackupFlags& bf) {
  backup->add_option("SOURCE", bf.sources,
                     "files or directories to back up, directories recursively. A SOURCE "
                     "that is a symbolic link is followed (its files are recorded under the "
                     "link's path); symbolic links and special files found below a SOURCE "
                     "are reported and skipped, as are pseudo file systems (/proc, /sys, "
                     "/dev, cgroup, ...)")
      ->required();
  backup->add_flag("--one-file-system", bf.one_file_system,
                   "do not descend into directories on another file system than the SOURCE "
                   "they are below (mount points are reported as skipped)");
  backup->add_flag("--skip-unreadable", bf.skip_unreadable,
                   "back up the rest when a directory below a SOURCE cannot be read, and "
                   "record it as skipped (without it, an unreadable directory fails the "
                   "backup with exit 1 before anything is written)");
  backup->add_option("--to", bf.to_all,
                     "directory that receives the backup pieces, or a tape drive "
                     "tape:iscsi://HOST:PORT/IQN/LUN or tape:/dev/sgN (repeat for more drives: "
                     "one channel each); not with --validate")
      ->allow_extra_args(false);
  add_backup_tape_flags(backup, bf);
}

// Checks of the pages read (docs/page-checks.md).
void add_backup_validation(CLI::App* backup, BackupFlags& bf) {
  backup->add_flag("--validate", bf.validate,
                   "read every block as a backup would (channels, multiplexing, sections, "
                   "rate, duration, NFS sources) and report every problem found, writing "
                   "nothing: no --to, no piece, no backup record (with --check-logical the "
                   "catalog records the pages found corrupt: list --corrupt). Exit 0 when "
                   "clean, 1 when corruption was found (docs/page-checks.md)")
      ->group("Validation");
  backup->add_flag("--check-logical{auto}", bf.check_logical,
                   "check the pages inside each block as they are read: "
                   "--check-logical=postgres (page header, and the page checksum when the "
                   "cluster has data checksums; relation files only), or bare/auto to detect "
                   "a PostgreSQL data directory among the sources. Corrupt pages are listed "
                   "in the summary and --json (file, block, offset, reason)")
      ->option_text("[=FORMAT]")
      ->group("Validation");
  backup->add_option("--max-corrupt", bf.max_corrupt,
                     "with --check-logical: corrupt pages a file may have before the backup "
                     "fails (default 0); up to it they are listed")
      ->group("Validation");
  backup->add_option("--page-size", bf.page_size,
                     "with --check-logical: the page size, instead of the one the database's "
                     "control file gives (e.g. 8K)")
      ->group("Validation");
}

// How the work is cut: channels, sets, pieces, sections, checkpoints; and --tag, --resume.
void add_backup_shape(CLI::App* backup, BackupFlags& bf) {
  backup->add_option("--channels", bf.channels,
                     "parallel channels, each with its own I/O ring and pieces (a backup to "
                     "tape runs one per drive)")
      ->default_val(engine::kDefaultChannels)
      ->check(CLI::Range(1, 256));
  backup->add_option("--tag", bf.tag, "a tag to find this backup by");
  backup->add_option("--resume", bf.resume,
                     "continue an interrupted backup (killed, or its machine went down) of the "
                     "same SOURCEs to the same --to: the files and sections its durable pieces "
                     "finished are kept, not read again (give the same --section-size), the "
                     "rest is backed up, and the result is that one backup. ID or 'last' (the "
                     "newest interrupted backup to --to)")
      ->option_text("ID|last");
  backup->add_option("--files-per-set", bf.files_per_set,
                     "files per backup set; a channel multiplexes the files of one set")
      ->default_val(64)
      ->check(CLI::Range(1, 1000000));
  backup->add_option("--max-open-files", bf.max_open_files,
                     "files a channel reads at once, interleaving their blocks in one piece "
                     "(the multiplexing level)")
      ->default_val(8)
      ->check(CLI::Range(1, 256));
  backup->add_option("--checkpoint-interval", bf.checkpoint_interval,
                     "how often each channel closes its piece and records it in the catalog, so "
                     "a killed backup resumes from there (backup --resume): a size of piece "
                     "(1G), a time (5m, 00:05), both (256M,1m: whichever comes first) or off; "
                     "default 256M,1m (not on tape, which is not resumed)");
  backup->add_option("--max-piece-size", bf.max_piece_size,
                     "start a new piece before one would pass this size (e.g. 4G)");
  backup->add_option("--section-size", bf.section_size,
                     "split files larger than this into sections that channels back up in "
                     "parallel (e.g. 256M)");
}

// How fast the backup reads and how much it writes: rates, duration, compression.
void add_backup_rates(CLI::App* backup, BackupFlags& bf) {
  backup->add_option("--rate", bf.rate,
                     "most bytes per second each channel reads (e.g. 100M), from the first "
                     "read on: at most one buffer more is saved up while idle");
  backup->add_option("--job-rate", bf.job_rate,
                     "most bytes per second the whole job reads (e.g. 200M), with the same "
                     "bound");
  backup->add_option("--duration", bf.duration,
                     "longest time the backup may run: HH:MM, HH:MM:SS, or a number with a "
                     "unit (90m, 5400s, 2h); at the end it stops (failed, or partial with "
                     "--partial)");
  backup->add_flag("--partial", bf.partial,
                   "with --duration: keep and record what finished by the deadline (exit code "
                   "3); files backed up least recently go first");
  backup->add_option("--compress", bf.compress,
                     "compress each frame with zstd: none, low (level 1), medium (3), high "
                     "(9), zstd:N, or auto (each channel picks levels 1-9 as it runs so "
                     "compression never holds the devices back); frames that do not shrink "
                     "by 1/16 are stored raw")
      ->default_val("none");
  backup->add_option("--cpu-budget", bf.cpu_budget,
                     "with --compress auto: cores the job's compression may use in all (e.g. "
                     "0.5); levels step down when over it");
  backup->add_flag("--minimize-load", bf.minimize_load,
                   "with --duration: pace the backup to end just inside the window instead "
                   "of running at full speed");
}

// Incremental backups (docs/incremental.md).
void add_backup_incremental(CLI::App* backup, BackupFlags& bf) {
  backup->add_option("--level", bf.level,
                     "incremental backups: 0 is a full backup later level 1s build on; 1 "
                     "writes only the change units whose digest differs from the newest level "
                     "0 or 1 of each file (every block is still read). Without --level: a "
                     "plain full backup (docs/incremental.md)")
      ->check(CLI::IsMember({0, 1}))
      ->group("Incremental");
  backup->add_flag("--cumulative", bf.cumulative,
                   "with --level 1: hold what changed since the newest level 0 (not since the "
                   "newest level 0 or 1)")
      ->group("Incremental");
  backup->add_option("--change-unit", bf.change_unit,
                     "with --level: granularity of change tracking, a power of two from 8K to "
                     "1M (default 64K); a level 1 compares with parents of the same unit")
      ->group("Incremental");
  backup->add_flag("--require-parent", bf.require_parent,
                   "with --level 1: fail, writing nothing, when no file has a parent backup "
                   "(instead of backing everything up whole)")
      ->group("Incremental");
  backup->add_flag("--optimize", bf.optimize,
                   "with --level: do not read a file whose size, mtime, ctime and inode equal "
                   "those of the copy the newest backup with a level holds (its chain must be "
                   "restorable); the new backup's record names that backup, and restore "
                   "takes the file from there")
      ->group("Incremental");
  backup->add_flag("--force", bf.force,
                   "with --optimize: read and back up every file anyway")
      ->group("Incremental");
}

}  // namespace

void add_common(CLI::App* app, CommonFlags& c) {
  app->add_option("--catalog", c.catalog,
                  "catalog directory (default: $STRIPEBACK_CATALOG, else "
                  "$XDG_STATE_HOME/stripeback or ~/.local/state/stripeback)");
  app->add_flag("--json", c.json, "print the result as one JSON document on stdout");
}

void add_backup_flags(CLI::App* backup, BackupFlags& bf, CommonFlags& common,
                      NfsFlags& nfs_flags) {
  add_backup_what(backup, bf);
  add_backup_validation(backup, bf);
  add_backup_shape(backup, bf);
  add_backup_rates(backup, bf);
  add_backup_incremental(backup, bf);
  backup->add_flag("--encrypt", bf.encrypt,
                   "encrypt every piece with AES-256-GCM (a random key per piece, wrapped with "
                   "the passphrase or key given below; see docs/encryption.md)")
      ->group("Encryption");
  add_keys(backup, bf.keys, "to encrypt with");
  add_common(backup, common);
  add_io(backup, common);
  add_progress(backup, common);
  add_nfs_flags(backup, nfs_flags);
}

void add_restore_flags(CLI::App* restore, RestoreFlags& rf, CommonFlags& common,
                       NfsFlags& nfs_flags) {
  add_selection(restore, rf, "restore");
  restore->add_option("--to", rf.to, "directory to restore into")->required();
  restore->add_flag("--force", rf.force, "replace files that already exist");
  restore->add_flag("--no-fallback", rf.no_fallback,
                    "fail a file whose newest copy is expired (crosscheck) or fails its checks, "
                    "instead of restoring the next newest complete copy (said in the summary)");
  restore->add_flag("--allow-fallback", rf.allow_fallback,
                    "exit 0 when files were restored from an older copy than the newest "
                    "(without it such a restore exits 6, so a script sees it got older data)");
  restore->add_flag("--delta", rf.delta,
                    "update files that already exist in place: read each one, compare its "
                    "blocks (the change units of a --level backup, else its 1 MiB frames) "
                    "with the backup's digests and write only those that differ; the old "
                    "bytes are saved first, so a killed delta restore leaves every file as "
                    "it was or verified new (see docs/incremental.md). Missing files are "
                    "restored whole");
  add_keys(restore, rf.keys, "of an encrypted backup");
  restore->add_option("--tape-spool", rf.tape_spool,
                      "accepted for old scripts and ignored: pieces on tape are read straight "
                      "from the tape, with no spool");
  restore->add_option("--tape-drive", rf.tape_drives,
                      "look for the tape volumes in these drives (by their labels) instead "
                      "of the drives recorded at backup; repeatable")
      ->allow_extra_args(false);
  add_common(restore, common);
  add_io(restore, common);
  add_progress(restore, common);
  add_nfs_flags(restore, nfs_flags);
}

void add_validate_flags(CLI::App* validate, RestoreFlags& vf, CommonFlags& common) {
  vf.verify_only = true;
  add_selection(validate, vf, "check");
  validate->add_option("--sample", vf.sample,
                       "check a random share of the data frames, e.g. 10% (chosen by a hash of "
                       "--seed, the piece and the frame: the same seed picks the same frames); "
                       "whole-file digests are checked against the index, pieces are not "
                       "walked whole")
      ->option_text("PERCENT");
  validate->add_option("--seed", vf.seed,
                       "seed of --sample (default: a random one, reported in the summary)");
  validate->add_option("--part", vf.part,
                       "check part K of N: one deterministic N-th of the frames (16 MiB runs "
                       "of each piece); N runs with K = 1..N check every frame once")
      ->option_text("K/N");
  validate->add_option("--max-duration", vf.max_duration,
                       "stop beginning new work after this long (\"30m\", \"90s\", \"01:30\"), "
                       "checking first the frames that have gone longest without a check; the "
                       "catalog remembers what was checked when, so repeated runs cover every "
                       "backup (list shows when each was last fully checked)")
      ->option_text("DURATION");
  add_keys(validate, vf.keys, "of an encrypted backup");
  add_common(validate, common);
  add_io(validate, common);
  add_progress(validate, common);
}

}  // namespace stripeback::cli
