// How a message names an option. The engine never spells a front end's flag: it names an
// option by its key (the C API's spelling, e.g. "files_per_set") through option_word(),
// and the front end that runs the job says how keys read in its messages. The CLI installs
// the flag spelling (--files-per-set, --to for "destination"), the C API quotes the key
// ('files_per_set'). options/wording.cc holds both; without one installed, a key reads as
// the flag its name makes ("--files-per-set").
#pragma once

#include <string>
#include <string_view>

namespace stripeback::util {

struct OptionWording {
  // The option as a message names it: "--channels" or "'channels'".
  std::string (*option)(std::string_view key);
  // An option with its value's placeholder: "--backup ID" or "'backup_id'".
  std::string (*option_value)(std::string_view key, std::string_view placeholder);
  // Asking the user to give an option: "use --force" or "set 'force'".
  std::string (*ask)(std::string_view key);
  // A command or operation: "'stripeback list'" or "sb_catalog_list" for "list".
  std::string (*command)(std::string_view name);
};

// Installs the wording of a front end for this process (the pointer must stay valid); null
// goes back to the default. Set once, before any job runs.
void set_option_wording(const OptionWording* w);

std::string option_word(std::string_view key);
std::string option_value_word(std::string_view key, std::string_view placeholder);
std::string ask_option(std::string_view key);
std::string command_word(std::string_view name);

}  // namespace stripeback::util
