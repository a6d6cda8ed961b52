// `stripeback tape status|label|rewind|eject|test`: operator commands for tape drives.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "engine/wiring/backends.h"
#include "stripeback/result.h"

namespace CLI {
class App;
}

namespace stripeback::cli {

struct TapeFlags {
  std::vector<std::string> urls;
  std::string volume;
  std::string block_size = "256K";
  std::string size = "256M";
  std::string block_sizes = "64K,256K,1M";
  bool force = false;
  bool json = false;
};

// Adds the subcommands of the `tape` command to it.
void add_tape_commands(CLI::App* tape, TapeFlags& flags);
// Runs the subcommand of `tape` that was parsed.
int run_tape_cmd(const CLI::App& tape, const TapeFlags& flags, const std::atomic<bool>& cancel);

}  // namespace stripeback::cli
