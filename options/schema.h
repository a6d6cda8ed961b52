// The one schema of job options: each option once, with its C API key, its CLI flag, its
// type, the jobs that take it, its default and help, and the function that checks a value
// and sets it in Settings. The CLI's flags of backup, restore and validate
// (cli/job_flags.cc) and the C API's keys (capi/options.cc) are made from it; the checks
// that relate options to one another are in job_options.cc, shared by both.
//
// Messages name an option through util::option_word(key), so each front end words it:
// the CLI installs cli_wording() ("--files-per-set"), the C API api_wording()
// ("'files_per_set'").
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "options/settings.h"
#include "stripeback/result.h"
#include "util/option_words.h"

namespace stripeback::options {

enum class Type {
  text,    // one value (given again: replaced)
  list,    // values added one by one (the CLI: repeatable)
  flag,    // true or false (the CLI: a flag without a value)
  number,  // a whole number or a size ("4M"), given as text or as an integer
};

// The jobs an option belongs to.
enum Jobs : unsigned {
  kBackup = 1,    // backup, and backup --validate
  kRestore = 2,   // restore
  kValidate = 4,  // validate
};

struct Option {
  std::string_view key;   // the C API's key; messages name the option by it
  std::string_view flag;  // the CLI's flag ("--to"), a positional's name ("SOURCE"), or empty
  Type type;
  unsigned jobs;
  std::string_view help;
  std::string_view group = {};        // --help section; empty: the command's own options
  std::string_view placeholder = {};  // --help: the value's name ("SIZE")
  std::string_view default_text = {};  // --help: the default, when one is worth showing
  uint64_t lo = 0, hi = 0;            // number: the range
  // Checks `value` and sets it (a list: adds it). Errors are invalid_argument and name
  // the option.
  Result<void> (*set)(const Option& o, Settings& s, std::string_view value) = nullptr;
  void (*reset)(Settings& s) = nullptr;  // back to the default
  bool api = true;            // a C API key
  bool cli_inverted = false;  // the CLI's flag sets the key false (--no-direct)
  bool cli_required = false;
  char cli_delimiter = 0;            // the CLI splits a list's values at this character
  std::string_view cli_bare = {};    // the CLI: the value of the flag given bare (--check-logical)
  std::string_view api_type = {};    // docs/embedding.md: how the C API takes it
};

// Every option, in the order --help lists them. A key may have one entry per job when its
// help differs (force, tag, the targets); they set the same field.
std::span<const Option> schema();

// The first entry with this key, or null.
const Option* find_option(std::string_view key);

// Sets `value` for the option and records it in Settings::given. A list adds it.
Result<void> set_option(const Option& o, Settings& s, std::string_view value);

// How each front end names options in messages (util/option_words.h).
const util::OptionWording& cli_wording();
const util::OptionWording& api_wording();

}  // namespace stripeback::options
