// stripeback: command-line front end of the backup engine.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <spdlog/cfg/env.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <string_view>
#include <tuple>

#include "cli/catalog_commands.h"
#include "cli/commands.h"
#include "cli/environment.h"
#include "cli/media_commands.h"
#include "cli/progress_view.h"
#include "cli/report_commands.h"
#include "cli/tape_commands.h"
#include "cli/nfs_bench.h"
#include "cli/nfs_flags.h"
#include "engine/backup/backup_job.h"
#include "util/escape.h"
#include "util/log.h"

namespace {

std::atomic<bool> g_cancel{false};

void on_signal(int) { g_cancel.store(true); }

// The message of a log line, escaped like all text output: log lines quote file names.
class EscapedMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string text =
        stripeback::util::escape_text(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedMessage>();
  }
};

void set_up_logging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("stripeback");
  spdlog::set_default_logger(logger);
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedMessage>('*').set_pattern("%^%l%$: %*");
  spdlog::set_formatter(std::move(formatter));
  spdlog::set_level(spdlog::level::from_str(level));
  // The engine logs through its own seam (util/log.h); the CLI hands it to spdlog.
  stripeback::util::set_default_log_sink(std::make_shared<const stripeback::util::LogSink>(
      [](stripeback::util::LogLevel l, std::string_view m) {
        switch (l) {
          case stripeback::util::LogLevel::trace: spdlog::trace("{}", m); break;
          case stripeback::util::LogLevel::debug: spdlog::debug("{}", m); break;
          case stripeback::util::LogLevel::info: spdlog::info("{}", m); break;
          case stripeback::util::LogLevel::warn: spdlog::warn("{}", m); break;
          case stripeback::util::LogLevel::error: spdlog::error("{}", m); break;
        }
      }));
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void add_common(CLI::App* app, stripeback::cli::CommonFlags& c) {
  app->add_option("--catalog", c.catalog,
                  "catalog directory (default: $STRIPEBACK_CATALOG, else "
                  "$XDG_STATE_HOME/stripeback or ~/.local/state/stripeback)");
  app->add_flag("--json", c.json, "print the result as one JSON document on stdout");
}

void add_keys(CLI::App* app, stripeback::cli::KeyFlags& k, const char* purpose) {
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
void add_selection(CLI::App* app, stripeback::cli::RestoreFlags& f, const std::string& verb) {
  app->add_option("PATH", f.paths,
                  "original files or directories to " + verb + " (default: everything)");
  auto* tag = app->add_option("--tag", f.tag, verb + " the newest complete backup with this tag");
  auto* id = app->add_option("--backup", f.backup, verb + " this backup id");
  tag->excludes(id);
  app->add_option("--channels", f.channels, "parallel channels")
      ->default_val(stripeback::engine::kDefaultChannels)
      ->check(CLI::Range(1, 256));
}

// Live progress and the status file (docs/monitoring.md): backup, restore, validate.
void add_progress(CLI::App* app, stripeback::cli::CommonFlags& c) {
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

void add_io(CLI::App* app, stripeback::cli::CommonFlags& c) {
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

}  // namespace

int main(int argc, char** argv) {
  using namespace stripeback::cli;
  CLI::App app{
      "stripeback: multi-channel backup and restore of large datafiles.\n"
      "Backs files up into self-describing pieces, records them in a flat catalog, and "
      "restores them byte-exact.\nExit codes: 0 success, 1 the job failed, 2 bad usage or "
      "input, 3 a --partial backup stopped at its deadline, 4 wrong passphrase or key, 5 a "
      "complete backup in which files changed while they were read (their copies may be "
      "inconsistent; --json lists them in \"changed_files\").",
      "stripeback"};
  app.require_subcommand(1);
  // Parse errors quote what was typed: escaped like every other message.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    std::string text = CLI::FailureMessage::simple(a, e);  // starts with e.what() and "\n"
    std::string what = e.what();
    return stripeback::util::escape_text(what) + text.substr(std::min(what.size(), text.size()));
  });
  // A build with test hooks says so: the integration tests that need them skip otherwise.
#if STRIPEBACK_TEST_HOOKS
  app.set_version_flag("--version", "stripeback 0.1.0 (test hooks)");
#else
  app.set_version_flag("--version", "stripeback 0.1.0");
#endif
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "log level: trace, debug, info, warn, error, off")
      ->default_val("warn")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->group("Global");
  app.fallthrough();

  CommonFlags common;
  BackupFlags bf;
  auto* backup = app.add_subcommand(
      "backup", "back up files and directories into pieces in --to DIR");
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
  backup->add_option("--channels", bf.channels,
                     "parallel channels, each with its own I/O ring and pieces (a backup to "
                     "tape runs one per drive)")
      ->default_val(stripeback::engine::kDefaultChannels)
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
  backup->add_flag("--encrypt", bf.encrypt,
                   "encrypt every piece with AES-256-GCM (a random key per piece, wrapped with "
                   "the passphrase or key given below; see docs/encryption.md)")
      ->group("Encryption");
  add_keys(backup, bf.keys, "to encrypt with");
  add_common(backup, common);
  add_io(backup, common);
  add_progress(backup, common);
  NfsFlags nfs_flags;
  add_nfs_flags(backup, nfs_flags);

  RestoreFlags rf;
  auto* restore = app.add_subcommand(
      "restore",
      "restore backed-up files under --to DIR at their original absolute paths "
      "(/data/a.dbf --to /r becomes /r/data/a.dbf)");
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

  RestoreFlags vf;
  vf.verify_only = true;
  auto* validate = app.add_subcommand(
      "validate",
      "read and check every frame of backed-up files (checksums, authentication, "
      "decompression, whole-file digests) without writing anything; exit 1 names any damage");
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

  bool status_watch = false;
  auto* status = app.add_subcommand(
      "status",
      "the jobs running on a catalog, from another terminal: progress, rate, ETA and each "
      "channel's state; running, stalled (no progress for --hang-after seconds, or stopped) "
      "or dead (its process is gone), read from the job's status file without the catalog's "
      "lock (docs/monitoring.md)");
  status->add_flag("--watch", status_watch, "redraw every second until interrupted");
  bool status_prune = false;
  status->add_flag("--prune", status_prune,
                   "remove the status files of dead jobs (and empty or cut ones a gone process "
                   "of this host left), saying which; those of a backup that has ended or been "
                   "resumed go without it");
  add_common(status, common);

  auto* list = app.add_subcommand("list", "list the backups in the catalog");
  ListFlags lf;
  list->add_flag("--corrupt", lf.corrupt,
                 "list the corrupt pages the page checks (--check-logical) found and that no "
                 "later complete check of their file cleared: file, block, offset, reason, "
                 "and the backup or validation that found it");
  list->add_option("--backup", lf.backup, "only this backup");
  list->add_flag("--files", lf.files,
                 "with --backup: the files the backup holds, with sizes and the pieces each "
                 "lives in");
  add_common(list, common);

  auto* report = app.add_subcommand("report", "reports from the catalog");
  report->require_subcommand(1);
  MediaFlags mf;
  MediaCommands media = add_media_commands(app, *report, common, mf);
  ReportFlags report_flags;
  ReportCommands report_cmds = add_report_commands(*report, report_flags);

  DemoDataFlags df;
  auto* demo = app.add_subcommand(
      "demo-data", "generate a data set of datafile-like files for demos and benchmarks");
  demo->add_option("DIR", df.dir, "directory to create (must not exist or be empty)")
      ->required();
  demo->add_option("--size", df.size, "approximate total size")->default_val("300M");
  demo->add_option("--seed", df.seed, "random seed (same seed, same data)")->default_val(1);

  std::string key_path;
  auto* keygen = app.add_subcommand(
      "keygen", "write a new random 256-bit key file for backup --encrypt --key-file");
  keygen->add_option("FILE", key_path,
                     "file to create (mode 0600; never replaced); missing parent directories "
                     "are created with mode 0700")
      ->required();
  TapeFlags tf;
  auto* tape = add_tape_command(app, tf);
  CatalogFlags cf;
  auto* catalog_cmd = add_catalog_command(app, cf, common);
  auto* bench = app.add_subcommand("bench", "measure I/O paths on this machine");
  bench->require_subcommand(1);
  NfsBenchFlags nbf;
  auto* bench_nfs = add_nfs_bench(bench, nbf, nfs_flags);

  // Name an unknown command rather than CLI11's "a subcommand is required".
  bool known = false;
  std::string names;
  for (const auto* sub : app.get_subcommands({})) {
    known = known || (argc > 1 && sub->get_name() == argv[1]);
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    print_error("unknown command '" + std::string(argv[1]) + "' (expected one of " + names +
                "; see --help)");
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return e.get_exit_code() == 0 ? rc : kExitUsage;
  }

  set_up_logging(log_level);
  install_signal_handlers();
  if (auto r = apply_environment(); !r) {
    print_error(r.error().what);
    return kExitUsage;
  }
  if (auto r = apply_nfs_flags(nfs_flags, &g_cancel); !r) {
    print_error(r.error().what);
    return kExitUsage;
  }

  for (auto [sub, b, r] : {std::tuple{backup, &bf, (RestoreFlags*)nullptr},
                           std::tuple{restore, (BackupFlags*)nullptr, &rf},
                           std::tuple{validate, (BackupFlags*)nullptr, &vf}})
    if (sub->parsed())
      if (auto ok = apply_settings(*sub, common, b, r); !ok) {
        print_error(ok.error().what);
        return kExitUsage;
      }
  if (backup->parsed()) {
    if (auto r = resolve_backup_destinations(bf); !r) {
      print_error(r.error().what);
      return kExitUsage;
    }
    return run_backup_cmd(common, bf, g_cancel);
  }
  if (restore->parsed()) return run_restore_cmd(common, rf, g_cancel);
  if (validate->parsed()) return run_restore_cmd(common, vf, g_cancel);
  if (list->parsed()) return run_list_cmd(common, lf);
  if (status->parsed()) return run_status_cmd(common, status_watch, status_prune);
  if (int rc = run_media_cmd(media, common, mf); rc >= 0) return rc;
  if (int rc = run_report_cmd(report_cmds, report_flags); rc >= 0) return rc;
  if (demo->parsed()) return run_demo_data_cmd(df);
  if (keygen->parsed()) return run_keygen_cmd(key_path);
  if (tape->parsed()) return run_tape_cmd(*tape, tf, g_cancel);
  if (catalog_cmd->parsed()) return run_catalog_cmd(*catalog_cmd, cf, common);
  if (bench_nfs->parsed()) return run_nfs_bench_cmd(nbf);
  return kExitUsage;
}
