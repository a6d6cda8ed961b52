#include "cli/command_table.h"

#include <CLI/CLI.hpp>

#include "cli/job_flags.h"
#include "cli/progress_view.h"

namespace stripeback::cli {
namespace {

using Cancel = std::atomic<bool>;

// The subcommand of `cmd` that was parsed, or null.
const CLI::App* parsed_sub(const CLI::App& cmd) {
  const auto subs = cmd.get_subcommands();
  return subs.empty() ? nullptr : subs.front();
}

// backup, restore and validate take what the command line leaves out from the catalog's
// settings (configure).
int run_backup(const CLI::App&, CommandLine& l, const Cancel& cancel) {
  Result<void> ok = l.backup.apply();
  if (ok) ok = apply_settings(l.common, l.backup.settings, true);
  if (!ok) {
    print_error(ok.error().what);
    return kExitUsage;
  }
  return run_backup_cmd(l.common, l.backup.settings, cancel);
}

int run_restore_or_validate(CommandLine& l, JobFlags& f, bool verify_only, const Cancel& cancel) {
  Result<void> ok = f.apply();
  if (ok) ok = apply_settings(l.common, f.settings, false);
  if (!ok) {
    print_error(ok.error().what);
    return kExitUsage;
  }
  return run_restore_cmd(l.common, f.settings, verify_only, cancel);
}

void add_status(CLI::App* status, CommandLine& l) {
  status->add_flag("--watch", l.status_watch, "redraw every second until interrupted");
  status->add_flag("--prune", l.status_prune,
                   "remove the status files of dead jobs (and empty or cut ones a gone process "
                   "of this host left), saying which; those of a backup that has ended or been "
                   "resumed go without it");
  add_common(status, l.common);
}

void add_list(CLI::App* list, CommandLine& l) {
  list->add_flag("--corrupt", l.list.corrupt,
                 "list the corrupt pages the page checks (--check-logical) found and that no "
                 "later complete check of their file cleared: file, block, offset, reason, "
                 "and the backup or validation that found it");
  list->add_option("--backup", l.list.backup, "only this backup");
  list->add_flag("--files", l.list.files,
                 "with --backup: the files the backup holds, with sizes and the pieces each "
                 "lives in");
  add_common(list, l.common);
  add_catalog_key_flags(list, l.common);
}

// `report obsolete` is a media command; the other reports read the job history.
void add_report(CLI::App* report, CommandLine& l) {
  report->require_subcommand(1);
  add_report_obsolete(report, l.common);
  add_report_commands(report, l.report);
}

int run_report(const CLI::App& cmd, CommandLine& l, const Cancel&) {
  const CLI::App* sub = parsed_sub(cmd);
  if (sub && sub->get_name() == "obsolete") return run_report_obsolete_cmd(l.common, l.media);
  return run_report_cmd(cmd, l.report);
}

void add_demo_data(CLI::App* demo, CommandLine& l) {
  demo->add_option("DIR", l.demo_data.dir, "directory to create (must not exist or be empty)")
      ->required();
  demo->add_option("--size", l.demo_data.size, "approximate total size")->default_val("300M");
  demo->add_option("--seed", l.demo_data.seed, "random seed (same seed, same data)")
      ->default_val(1);
}

void add_keygen(CLI::App* keygen, CommandLine& l) {
  keygen->add_option("FILE", l.key_path,
                     "file to create (mode 0600; never replaced); missing parent directories "
                     "are created with mode 0700")
      ->required();
}

void add_bench(CLI::App* bench, CommandLine& l) {
  bench->require_subcommand(1);
  add_nfs_bench(bench, l.bench_nfs, l.nfs);
}

int run_bench(const CLI::App& cmd, CommandLine& l, const Cancel&) {
  const CLI::App* sub = parsed_sub(cmd);
  if (sub && sub->get_name() == "nfs") return run_nfs_bench_cmd(l.bench_nfs);
  return kExitUsage;
}

const Command kCommands[] = {
    {"backup", "back up files and directories into pieces in --to DIR",
     [](CLI::App* cmd, CommandLine& l) { add_backup_flags(cmd, l.backup, l.common, l.nfs); },
     run_backup},
    {"restore",
     "restore backed-up files under --to DIR at their original absolute paths "
     "(/data/a.dbf --to /r becomes /r/data/a.dbf)",
     [](CLI::App* cmd, CommandLine& l) { add_restore_flags(cmd, l.restore, l.common, l.nfs); },
     [](const CLI::App&, CommandLine& l, const Cancel& cancel) {
       return run_restore_or_validate(l, l.restore, false, cancel);
     }},
    {"validate",
     "read and check every frame of backed-up files (checksums, authentication, "
     "decompression, whole-file digests) without writing anything; exit 1 names any damage",
     [](CLI::App* cmd, CommandLine& l) { add_validate_flags(cmd, l.validate, l.common); },
     [](const CLI::App&, CommandLine& l, const Cancel& cancel) {
       return run_restore_or_validate(l, l.validate, true, cancel);
     }},
    {"status",
     "the jobs running on a catalog, from another terminal: progress, rate, ETA and each "
     "channel's state; running, stalled (no progress for --hang-after seconds, or stopped) "
     "or dead (its process is gone), read from the job's status file without the catalog's "
     "lock (docs/monitoring.md)",
     add_status,
     [](const CLI::App&, CommandLine& l, const Cancel&) {
       return run_status_cmd(l.common, l.status_watch, l.status_prune);
     }},
    {"list", "list the backups in the catalog", add_list,
     [](const CLI::App&, CommandLine& l, const Cancel&) { return run_list_cmd(l.common, l.list); }},
    {"report", "reports from the catalog", add_report, run_report},
    {"configure",
     "store defaults in the catalog: 'configure retention redundancy N', 'configure retention "
     "recovery-window DAYS', 'configure resume-window DAYS' (how long an interrupted backup "
     "is kept for backup --resume before it is obsolete; default 7), 'configure channels "
     "N|auto', 'configure compression LEVEL', 'configure key-file PATH' (or passphrase-file PATH, "
     "passphrase-env NAME: where the key is, never the key), 'configure lock-days N' and "
     "'configure lock-mode compliance|governance' (backups locked in S3, as --lock-days; a "
     "recovery window shorter than the lock is refused), 'configure destination "
     "DIR|URL', and for the log archive 'configure archive-async on|off', 'configure "
     "archive-spool-path DIR' and 'configure archive-parallel N' (docs/postgresql.md); flags "
     "of a command override them. Without a setting, or with --show, prints "
     "them all",
     [](CLI::App* cmd, CommandLine& l) { add_configure_flags(cmd, l.common, l.media); },
     [](const CLI::App&, CommandLine& l, const Cancel&) {
       return run_configure_cmd(l.common, l.media);
     }},
    {"crosscheck",
     "check that every recorded piece is on its medium and whole (size, header, footer, "
     "trailer checksums; --deep reads every byte) and mark pieces and backups available or "
     "expired (list shows it; restore and validate skip expired backups); --deep marks a "
     "whole piece with damaged frames 'damaged' with the files they hold, which alone will "
     "not restore from it",
     [](CLI::App* cmd, CommandLine& l) { add_crosscheck_flags(cmd, l.common, l.media); },
     [](const CLI::App&, CommandLine& l, const Cancel&) {
       return run_crosscheck_cmd(l.common, l.media);
     }},
    {"delete", "remove backups from the media and the catalog",
     [](CLI::App* cmd, CommandLine& l) { add_delete_commands(cmd, l.common, l.media); },
     [](const CLI::App& cmd, CommandLine& l, const Cancel&) {
       return run_delete_cmd(cmd, l.common, l.media);
     }},
    {"keep",
     "keep a backup until a date, forever, or no more (--clear): retention (delete "
     "obsolete) keeps it and the backups it needs, delete backup refuses it",
     [](CLI::App* cmd, CommandLine& l) { add_keep_flags(cmd, l.common, l.keep); },
     [](const CLI::App&, CommandLine& l, const Cancel&) { return run_keep_cmd(l.common, l.keep); }},
    {"demo-data", "generate a data set of datafile-like files for demos and benchmarks",
     add_demo_data,
     [](const CLI::App&, CommandLine& l, const Cancel&) {
       return run_demo_data_cmd(l.demo_data);
     }},
    {"keygen", "write a new random 256-bit key file for backup --encrypt --key-file",
     add_keygen,
     [](const CLI::App&, CommandLine& l, const Cancel&) { return run_keygen_cmd(l.key_path); }},
    {"rekey",
     "wrap every encrypted piece's data key with a new key (--new-key-file, "
     "--new-passphrase-file or --new-passphrase-env), in the pieces and in the catalog, "
     "without rewriting any data; crash-safe: a rerun finishes an interrupted rekey "
     "(docs/security.md)",
     [](CLI::App* cmd, CommandLine& l) { add_rekey_flags(cmd, l.common, l.rekey); },
     [](const CLI::App&, CommandLine& l, const Cancel&) {
       return run_rekey_cmd(l.common, l.rekey);
     }},
    {"tape", "operate tape drives: tape:iscsi://HOST:PORT/IQN/LUN or tape:/dev/sgN",
     [](CLI::App* cmd, CommandLine& l) { add_tape_commands(cmd, l.tape); },
     [](const CLI::App& cmd, CommandLine& l, const Cancel& cancel) {
       return run_tape_cmd(cmd, l.tape, cancel);
     }},
    {"catalog", "catalog maintenance: rebuild from media, compact",
     [](CLI::App* cmd, CommandLine& l) { add_catalog_commands(cmd, l.catalog, l.common); },
     [](const CLI::App& cmd, CommandLine& l, const Cancel&) {
       return run_catalog_cmd(cmd, l.catalog, l.common);
     }},
    {"archive-push",
     "PostgreSQL's archive_command: archive-push [--catalog DIR] %p stores a WAL file in the "
     "log archive below the configured destination and records it (docs/postgresql.md)",
     [](CLI::App* cmd, CommandLine& l) { add_archive_push(cmd, l.common, l.archive); },
     [](const CLI::App&, CommandLine& l, const Cancel&) {
       return run_archive_push_cmd(l.common, l.archive);
     }},
    {"archive-get",
     "PostgreSQL's restore_command: archive-get [--catalog DIR] %f %p writes an archived WAL "
     "file to %p; exit 1 without a word when the archive does not hold it",
     [](CLI::App* cmd, CommandLine& l) { add_archive_get(cmd, l.common, l.archive); },
     [](const CLI::App&, CommandLine& l, const Cancel&) {
       return run_archive_get_cmd(l.common, l.archive);
     }},
    {"bench", "measure I/O paths on this machine", add_bench, run_bench},
    {"run",
     "run an RMAN-style command file (RUN { ALLOCATE CHANNEL ...; BACKUP ...; }, RESTORE, "
     "VALIDATE, CROSSCHECK, DELETE, LIST, REPORT OBSOLETE, CONFIGURE) as the stripeback "
     "commands it stands for; the whole file is checked before anything runs, --dry-run "
     "prints the commands (docs/rman.md)",
     [](CLI::App* cmd, CommandLine& l) { add_run_flags(cmd, l.common, l.run); },
     [](const CLI::App&, CommandLine& l, const Cancel& cancel) {
       return run_run_cmd(l.common, l.run, cancel);
     }},
};

}  // namespace

std::span<const Command> commands() { return kCommands; }

CommandApps add_commands(CLI::App& app, CommandLine& line) {
  CommandApps subs;
  for (const Command& c : commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    c.add(sub, line);
    subs.emplace_back(&c, sub);
  }
  return subs;
}

}  // namespace stripeback::cli
