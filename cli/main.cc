// stripeback: command-line front end of the backup engine.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/nfs_bench.h"
#include "cli/nfs_flags.h"
#include "engine/backup_job.h"

namespace {

std::atomic<bool> g_cancel{false};

void on_signal(int) { g_cancel.store(true); }

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

void add_io(CLI::App* app, stripeback::cli::CommonFlags& c) {
  app->add_option("--buffers", c.buffers,
                  "I/O buffers per channel (default: 16, or by the multiplexing rule)")
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
      "input, 3 a --partial backup stopped at its deadline.",
      "stripeback"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stripeback 0.1.0");
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
                     "files or directories to back up (directories recursively; symbolic "
                     "links and special files are reported and skipped)")
      ->required();
  backup->add_option("--to", bf.to, "directory that receives the backup pieces")->required();
  backup->add_option("--channels", bf.channels,
                     "parallel channels, each with its own I/O ring and pieces")
      ->default_val(stripeback::engine::kDefaultChannels)
      ->check(CLI::Range(1, 256));
  backup->add_option("--tag", bf.tag, "a tag to find this backup by");
  backup->add_option("--files-per-set", bf.files_per_set,
                     "files per backup set; a channel multiplexes the files of one set")
      ->default_val(64)
      ->check(CLI::Range(1, 1000000));
  backup->add_option("--max-open-files", bf.max_open_files,
                     "files a channel reads at once, interleaving their blocks in one piece "
                     "(the multiplexing level)")
      ->default_val(8)
      ->check(CLI::Range(1, 256));
  backup->add_option("--max-piece-size", bf.max_piece_size,
                     "start a new piece before one would pass this size (e.g. 4G)");
  backup->add_option("--section-size", bf.section_size,
                     "split files larger than this into sections that channels back up in "
                     "parallel (e.g. 256M)");
  backup->add_option("--rate", bf.rate,
                     "most bytes per second each channel reads (e.g. 100M)");
  backup->add_option("--job-rate", bf.job_rate,
                     "most bytes per second the whole job reads (e.g. 200M)");
  backup->add_option("--duration", bf.duration,
                     "longest time the backup may run, HH:MM or HH:MM:SS; at the end it stops "
                     "(failed, or partial with --partial)");
  backup->add_flag("--partial", bf.partial,
                   "with --duration: keep and record what finished by the deadline (exit code "
                   "3); files backed up least recently go first");
  backup->add_option("--compress", bf.compress,
                     "compress each frame with zstd: none, low (level 1), medium (3), high "
                     "(9) or zstd:N; frames that do not shrink by 1/16 are stored raw")
      ->default_val("none");
  backup->add_flag("--minimize-load", bf.minimize_load,
                   "with --duration: pace the backup to end just inside the window instead "
                   "of running at full speed");
  add_common(backup, common);
  add_io(backup, common);
  NfsFlags nfs_flags;
  add_nfs_flags(backup, nfs_flags);

  RestoreFlags rf;
  auto* restore = app.add_subcommand(
      "restore",
      "restore backed-up files under --to DIR at their original absolute paths "
      "(/data/a.dbf --to /r becomes /r/data/a.dbf)");
  restore->add_option("PATH", rf.paths,
                      "original files or directories to restore (default: everything)");
  restore->add_option("--to", rf.to, "directory to restore into")->required();
  auto* tag_opt = restore->add_option("--tag", rf.tag,
                                      "restore the newest complete backup with this tag");
  auto* id_opt = restore->add_option("--backup", rf.backup, "restore this backup id");
  tag_opt->excludes(id_opt);
  restore->add_option("--channels", rf.channels, "parallel restore channels")
      ->default_val(stripeback::engine::kDefaultChannels)
      ->check(CLI::Range(1, 256));
  restore->add_flag("--force", rf.force, "replace files that already exist");
  add_common(restore, common);
  add_io(restore, common);
  add_nfs_flags(restore, nfs_flags);

  auto* list = app.add_subcommand("list", "list the backups in the catalog");
  add_common(list, common);

  DemoDataFlags df;
  auto* demo = app.add_subcommand(
      "demo-data", "generate a data set of datafile-like files for demos and benchmarks");
  demo->add_option("DIR", df.dir, "directory to create (must not exist or be empty)")
      ->required();
  demo->add_option("--size", df.size, "approximate total size")->default_val("300M");
  demo->add_option("--seed", df.seed, "random seed (same seed, same data)")->default_val(1);

  auto* bench = app.add_subcommand("bench", "measure I/O paths on this machine");
  bench->require_subcommand(1);
  NfsBenchFlags nbf;
  auto* bench_nfs = add_nfs_bench(bench, nbf, nfs_flags);

  // Name an unknown command rather than CLI11's "a subcommand is required".
  bool known = false;
  for (const auto* sub : app.get_subcommands({})) known = known || (argc > 1 && sub->get_name() == argv[1]);
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::fprintf(stderr,
                 "stripeback: unknown command '%s' (expected backup, restore, list, "
                 "demo-data or bench; see --help)\n",
                 argv[1]);
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return e.get_exit_code() == 0 ? rc : kExitUsage;
  }

  auto logger = spdlog::stderr_color_mt("stripeback");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%^%l%$: %v");
  spdlog::set_level(spdlog::level::from_str(log_level));
  install_signal_handlers();
  if (auto r = apply_nfs_flags(nfs_flags, &g_cancel); !r) {
    std::fprintf(stderr, "stripeback: %s\n", r.error().what.c_str());
    return kExitUsage;
  }

  if (backup->parsed()) return run_backup_cmd(common, bf, g_cancel);
  if (restore->parsed()) return run_restore_cmd(common, rf, g_cancel);
  if (list->parsed()) return run_list_cmd(common);
  if (demo->parsed()) return run_demo_data_cmd(df);
  if (bench_nfs->parsed()) return run_nfs_bench_cmd(nbf);
  return kExitUsage;
}
