// stripeback: command-line front end of the backup engine.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <spdlog/cfg/env.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/command_table.h"
#include "cli/commands.h"
#include "cli/environment.h"
#include "cli/nfs_flags.h"
#include "options/schema.h"
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

// Names an unknown command rather than CLI11's "a subcommand is required": the message, or
// empty when argv[1] is a command or an option.
std::string unknown_command(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return {};
  bool known = false;
  std::string names;
  for (const auto& c : stripeback::cli::commands()) {
    known = known || c.name == std::string_view(argv[1]);
    names += (names.empty() ? "" : ", ") + std::string(c.name);
  }
  if (known) return {};
  return "unknown command '" + std::string(argv[1]) + "' (expected one of " + names +
         "; see --help)";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stripeback::cli;
  // Messages name options by their flags (--files-per-set).
  stripeback::util::set_option_wording(&stripeback::options::cli_wording());
  CLI::App app{
      "stripeback: multi-channel backup and restore of large datafiles.\n"
      "Backs files up into self-describing pieces, records them in a flat catalog, and "
      "restores them byte-exact.\nExit codes: 0 success, 1 the job failed, 2 bad usage or "
      "input, 3 a --partial backup stopped at its deadline, 4 wrong passphrase or key, 5 a "
      "complete backup in which files changed while they were read (their copies may be "
      "inconsistent; --json lists them in \"changed_files\"; a --hot or --pg backup "
      "expects such files, records them as fuzzy and exits 0).",
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

  // Each command of the table, with the flags it adds; `line` receives what is given.
  CommandLine line;
  const CommandApps subs = add_commands(app, line);
  if (std::string unknown = unknown_command(argc, argv); !unknown.empty()) {
    print_error(unknown);
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
  if (auto r = apply_nfs_flags(line.nfs, &g_cancel); !r) {
    print_error(r.error().what);
    return kExitUsage;
  }
  for (const auto& [c, sub] : subs)
    if (sub->parsed()) return c->run(*sub, line, g_cancel);
  return kExitUsage;
}
