// How the CLI and the C API name options in messages (util/option_words.h).
#include <string>

#include "options/schema.h"

namespace stripeback::options {
namespace {

std::string flag_of(std::string_view key) {
  const Option* o = find_option(key);
  if (o != nullptr && o->flag.starts_with("--")) return std::string(o->flag);
  std::string f = "--";
  for (char c : key) f += c == '_' ? '-' : c;
  return f;
}

std::string api_key(std::string_view key) { return "'" + std::string(key) + "'"; }

const util::OptionWording kCli{
    flag_of,
    [](std::string_view key, std::string_view placeholder) {
      return flag_of(key) + " " + std::string(placeholder);
    },
    [](std::string_view key) { return "use " + flag_of(key); },
    [](std::string_view name) -> std::string {
      if (name == "validate-sources") return "backup --validate";
      if (name == "delta-restore") return "restore --delta";
      if (name == "validate") return "validate";
      return "'stripeback " + std::string(name) + "'";
    },
};

// The C API runs a source validation as an operation, not with an option.
std::string api_option(std::string_view key) {
  if (key == "validate") return "SB_OP_VALIDATE_SOURCE";
  return api_key(key);
}

const util::OptionWording kApi{
    api_option,
    // A placeholder ("ID", "DIR or tape:URL") is the CLI's: the key says it. A value ("1",
    // "auto") stays.
    [](std::string_view key, std::string_view value) {
      const bool placeholder = !value.empty() && value[0] >= 'A' && value[0] <= 'Z';
      return placeholder || value.empty() ? api_option(key)
                                          : api_option(key) + " " + std::string(value);
    },
    [](std::string_view key) { return "set " + api_option(key); },
    [](std::string_view name) -> std::string {
      if (name == "list") return "sb_catalog_list";
      if (name == "validate-sources") return "a source validation";
      if (name == "delta-restore") return "a restore with 'delta'";
      if (name == "validate") return "a validation";
      return "the " + std::string(name) + " operation";
    },
};

}  // namespace

const util::OptionWording& cli_wording() { return kCli; }
const util::OptionWording& api_wording() { return kApi; }

}  // namespace stripeback::options
