#include "cli/run_file.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <vector>

#include "cli/command_table.h"
#include "cli/rman/translate.h"
#include "database/recovery_target.h"
#include "util/escape.h"

namespace stripeback::cli {
namespace {

// Larger than any command file a person writes; a bigger "file" is the wrong file.
constexpr size_t kMaxScript = 1 << 20;

Result<std::string> read_text(FILE* f, const std::string& file) {
  std::string text;
  char buf[65536];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    text.append(buf, n);
    if (text.size() > kMaxScript)
      return fail(Errc::invalid_argument, "the command file '" + file + "' is larger than " +
                                              std::to_string(kMaxScript) + " bytes");
  }
  if (std::ferror(f))
    return sys_error(errno ? errno : EIO, "unable to read the command file '" + file + "'");
  return text;
}

Result<std::string> read_script(const std::string& file) {
  if (file == "-") return read_text(stdin, "-");
  FILE* f = std::fopen(file.c_str(), "rb");
  if (!f) return sys_error(errno, "unable to read the command file '" + file + "'");
  Result<std::string> text = read_text(f, file);
  std::fclose(f);
  return text;
}

std::string shell_line(const std::vector<std::string>& args) {
  std::string line = "stripeback";
  for (const auto& a : args) line += " " + database::shell_quote(a);
  return line;
}

// The command's line with --catalog added after the command's name (and its subcommand's:
// delete obsolete, report obsolete).
std::vector<std::string> with_catalog(std::vector<std::string> args, const CommonFlags& c) {
  if (c.catalog.empty() || args.empty()) return args;
  const size_t words = args[0] == "delete" || args[0] == "report" ? 2 : 1;
  args.insert(args.begin() + static_cast<std::ptrdiff_t>(std::min(words, args.size())),
              {"--catalog", c.catalog});
  return args;
}

// One command line parsed by the parser main() builds from the command table. The parser
// keeps `line` (what the flags are bound to) and its App alive until the command has run.
class ParsedCommand {
 public:
  // Parses `args` (without "stripeback"); a refused line is its parser's message.
  Result<void> parse(const std::vector<std::string>& args) {
    app_.require_subcommand(1);
    subs_ = add_commands(app_, line_);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      app_.parse(reversed);
    } catch (const CLI::ParseError& e) {
      return fail(Errc::invalid_argument, e.what());
    }
    return ok();
  }

  int run(const std::atomic<bool>& cancel) {
    if (auto r = apply_nfs_flags(line_.nfs, &cancel); !r) return report(r.error());
    for (const auto& [c, sub] : subs_)
      if (sub->parsed()) return c->run(*sub, line_, cancel);
    return kExitUsage;
  }

 private:
  CLI::App app_{"stripeback", "stripeback"};
  CommandLine line_;
  CommandApps subs_;
};

}  // namespace

void add_run_flags(CLI::App* run, CommonFlags& c, RunFlags& f) {
  run->add_option("FILE", f.file,
                  "the command file, or - for standard input: RMAN's syntax for what maps onto "
                  "Stripeback (RUN { ... }, ALLOCATE CHANNEL, BACKUP, RESTORE, VALIDATE, "
                  "CROSSCHECK, DELETE, LIST, REPORT OBSOLETE, CONFIGURE; docs/rman.md)")
      ->required();
  run->add_flag("--dry-run", f.dry_run,
                "check the file and print the stripeback command of each statement, one a "
                "line, shell-quoted; run nothing");
  run->add_option("--catalog", c.catalog,
                  "catalog directory, given to every command (default: $STRIPEBACK_CATALOG, "
                  "else $XDG_STATE_HOME/stripeback or ~/.local/state/stripeback)");
}

int run_run_cmd(const CommonFlags& c, const RunFlags& f, const std::atomic<bool>& cancel) {
  const std::string name = f.file == "-" ? "standard input" : f.file;
  Result<std::string> text = read_script(f.file);
  if (!text) {
    print_error(text.error().what);
    return kExitUsage;
  }
  auto steps = rman::translate(*text);
  if (!steps) {
    print_error(name + ":" + steps.error().what);
    return kExitUsage;
  }
  for (auto& cmd : *steps) {
    cmd.args = with_catalog(std::move(cmd.args), c);
    ParsedCommand check;
    if (auto r = check.parse(cmd.args); !r) {
      print_error(name + ":" + std::to_string(cmd.at.line) + ":" + std::to_string(cmd.at.column) +
                  ": " + cmd.statement + " gives '" + shell_line(cmd.args) +
                  "', which stripeback refuses: " + r.error().what);
      return kExitUsage;
    }
  }
  if (f.dry_run) {
    for (const auto& cmd : *steps)
      std::printf("%s\n", util::escape_text(shell_line(cmd.args)).c_str());
    return kExitOk;
  }
  for (const auto& cmd : *steps) {
    const std::string where = name + ":" + std::to_string(cmd.at.line);
    if (cancel.load()) {
      print_error("interrupted: " + where + " and the statements after it did not run");
      return kExitFailed;
    }
    std::fprintf(stderr, "stripeback: %s: %s\n", util::escape_text(where).c_str(),
                 util::escape_text(shell_line(cmd.args)).c_str());
    std::fflush(stdout);
    ParsedCommand parsed;
    if (auto r = parsed.parse(cmd.args); !r) return report(r.error());
    const int rc = parsed.run(cancel);
    std::fflush(stdout);
    if (rc != kExitOk) {
      print_error(where + ": " + cmd.statement + " failed (exit " + std::to_string(rc) +
                  "); the statements after it did not run");
      return rc;
    }
  }
  return kExitOk;
}

}  // namespace stripeback::cli
