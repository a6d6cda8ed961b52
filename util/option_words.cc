#include "util/option_words.h"

#include <atomic>

namespace stripeback::util {
namespace {

std::string flag_of(std::string_view key) {
  std::string f = "--";
  for (char c : key) f += c == '_' ? '-' : c;
  return f;
}

const OptionWording kDefault{
    [](std::string_view key) { return flag_of(key); },
    [](std::string_view key, std::string_view placeholder) {
      return flag_of(key) + " " + std::string(placeholder);
    },
    [](std::string_view key) { return "use " + flag_of(key); },
    [](std::string_view name) { return "'stripeback " + std::string(name) + "'"; },
};

std::atomic<const OptionWording*> installed{&kDefault};

const OptionWording& wording() { return *installed.load(std::memory_order_acquire); }

}  // namespace

void set_option_wording(const OptionWording* w) {
  installed.store(w ? w : &kDefault, std::memory_order_release);
}

std::string option_word(std::string_view key) { return wording().option(key); }
std::string option_value_word(std::string_view key, std::string_view placeholder) {
  return wording().option_value(key, placeholder);
}
std::string ask_option(std::string_view key) { return wording().ask(key); }
std::string command_word(std::string_view name) { return wording().command(name); }

}  // namespace stripeback::util
