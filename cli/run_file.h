// `stripeback run FILE`: an RMAN-style command file (docs/rman.md). The file is read and
// every statement translated (cli/rman/translate.h) and its command line checked by the
// command's own parser before anything runs; then each command runs in order, in this
// process, through the command table (cli/command_table.h), and the first that fails stops
// the file with its exit code.
#pragma once

#include <atomic>
#include <string>

#include "cli/commands.h"

namespace CLI {
class App;
}

namespace stripeback::cli {

struct RunFlags {
  std::string file;  // "-": standard input
  bool dry_run = false;
};

void add_run_flags(CLI::App* run, CommonFlags& c, RunFlags& f);
// Exit codes: 0 every statement ran (or, with --dry-run, the file is sound); 2 the file
// cannot be read or has an error (nothing ran); else the exit code of the first command
// that failed.
int run_run_cmd(const CommonFlags& c, const RunFlags& f, const std::atomic<bool>& cancel);

}  // namespace stripeback::cli
