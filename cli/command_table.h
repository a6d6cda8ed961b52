// The commands of `stripeback`, one table entry each: its name and help, the function that
// adds its flags (and subcommands) to its CLI11 App, and the function that runs it once the
// command line is parsed. main() builds the parser from the table, in the table's order
// (the order --help lists the commands in), and runs the entry whose command was given.
#pragma once

#include <atomic>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cli/archive_commands.h"
#include "cli/catalog_commands.h"
#include "cli/commands.h"
#include "cli/lifecycle_commands.h"
#include "cli/media_commands.h"
#include "cli/nfs_bench.h"
#include "cli/nfs_flags.h"
#include "cli/rekey_command.h"
#include "cli/report_commands.h"
#include "cli/run_file.h"
#include "cli/tape_commands.h"

namespace CLI {
class App;
}

namespace stripeback::cli {

// What the parser fills: the flags of every command. Some are shared: --catalog and --json
// (common), and the NFS client's flags, which backup, restore and bench nfs take and every
// command applies.
struct CommandLine {
  CommonFlags common;
  NfsFlags nfs;
  JobFlags backup;
  JobFlags restore;
  JobFlags validate;
  bool status_watch = false;
  bool status_prune = false;
  ListFlags list;
  MediaFlags media;
  ReportFlags report;
  DemoDataFlags demo_data;
  std::string key_path;  // keygen
  TapeFlags tape;
  CatalogFlags catalog;
  NfsBenchFlags bench_nfs;
  ArchiveFlags archive;
  KeepFlags keep;
  RunFlags run;
  RekeyFlags rekey;
};

struct Command {
  const char* name;
  const char* help;
  // Adds the command's flags and subcommands to `cmd`, bound to `line` (which must outlive
  // the parse).
  void (*add)(CLI::App* cmd, CommandLine& line);
  // Runs the command `cmd` that was parsed; returns the exit code. `cancel` is set by
  // SIGINT and SIGTERM.
  int (*run)(const CLI::App& cmd, CommandLine& line, const std::atomic<bool>& cancel);
};

// Every command, in the order --help lists them.
std::span<const Command> commands();

// The parser of every command: one subcommand of `app` per entry of the table, in its
// order, with the flags its `add` gives, bound to `line`. main() builds its parser so, and
// `stripeback run` one per statement of a command file. After app.parse, the entry whose
// App was parsed is the command to run.
using CommandApps = std::vector<std::pair<const Command*, CLI::App*>>;
CommandApps add_commands(CLI::App& app, CommandLine& line);

}  // namespace stripeback::cli
