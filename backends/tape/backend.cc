#include "backends/tape/backend.h"

#include <charconv>

namespace stripeback::tape {
namespace {

using storage::absolute_path;
using storage::check_address;
using storage::has_component;
using storage::invalid_location;
using storage::Location;

constexpr std::string_view kTape = "tape:";
constexpr std::string_view kIscsi = "iscsi://";
constexpr std::string_view kDev = "/dev/";
constexpr const char* kIscsiShape = "expected tape:iscsi://HOST[:PORT]/IQN/LUN";

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

Result<void> check_iscsi(std::string_view text, std::string_view drive) {
  std::string_view rest = drive.substr(kIscsi.size());
  size_t slash = rest.find('/');
  std::string_view portal = rest.substr(0, slash);
  if (portal.empty()) return invalid_location(text, std::string("no iSCSI portal address; ") + kIscsiShape);
  SB_TRY(check_address(text, portal, "portal"));
  if (slash == std::string_view::npos)
    return invalid_location(text, std::string("missing the target IQN and LUN; ") + kIscsiShape);
  rest = rest.substr(slash + 1);
  slash = rest.find('/');
  std::string_view iqn = rest.substr(0, slash);
  if (iqn.empty()) return invalid_location(text, std::string("missing the target IQN; ") + kIscsiShape);
  for (char c : iqn)
    if (!is_alnum(c) && c != '.' && c != '-' && c != ':' && c != '_')
      return invalid_location(text,
                     "'" + std::string(iqn) + "' is not an iSCSI target name; " + kIscsiShape);
  if (slash == std::string_view::npos)
    return invalid_location(text, std::string("missing the LUN after the target IQN; ") + kIscsiShape);
  std::string_view lun = rest.substr(slash + 1);
  if (lun.empty()) return invalid_location(text, std::string("missing the LUN; ") + kIscsiShape);
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(lun.data(), lun.data() + lun.size(), n);
  if (!is_digit(lun[0]) || ec != std::errc() || end != lun.data() + lun.size() || n > 65535)
    return invalid_location(
        text, "LUN '" + std::string(lun) + "' is not a number from 0 to 65535; " + kIscsiShape);
  return ok();
}
}  // namespace


Result<Location> parse_location(std::string_view text) {
  std::string_view rest = text.substr(kTape.size());
  if (rest.empty())
    return invalid_location(text,
                   "nothing after 'tape:' (use tape:iscsi://HOST[:PORT]/IQN/LUN or "
                   "tape:/dev/sgN)");
  size_t hash = rest.find('#');
  std::string_view drive = rest.substr(0, hash);
  Location loc;
  loc.scheme = "tape";
  loc.opaque = true;
  if (drive.empty()) return invalid_location(text, "no drive address before '#'");
  if (drive.starts_with(kIscsi)) {
    SB_TRY(check_iscsi(text, drive));
    loc.authority = std::string(drive);
  } else if (drive.starts_with(kDev)) {
    std::string dev = storage::squeeze_slashes(std::string(drive));
    if (dev.size() <= kDev.size() || dev.back() == '/')
      return invalid_location(text, "no device name after /dev/ (tape:/dev/sgN)");
    if (has_component(dev, ".") || has_component(dev, ".."))
      return invalid_location(text, "'.' and '..' are not allowed in a device path");
    loc.authority = std::move(dev);
  } else {
    return invalid_location(text, "'" + std::string(drive) +
                             "' is neither an iscsi:// URL nor a /dev/ device (use "
                             "tape:iscsi://HOST[:PORT]/IQN/LUN or tape:/dev/sgN)");
  }
  if (hash != std::string_view::npos) {
    std::string_view entry = rest.substr(hash + 1);
    if (has_component(entry, ".."))
      return invalid_location(text, "'..' is not allowed in a tape entry name");
    loc.path = absolute_path("", entry);
    if (loc.path == "/") return invalid_location(text, "no entry name after '#'");
  }
  return loc;
}


storage::Backend backend() {
  storage::Backend b;
  b.scheme = "tape";
  b.opaque = true;
  b.example = "tape:...";
  b.parse = parse_location;
  b.storage = [](const Location& at) -> Result<storage::Storage*> {
    return fail(Errc::invalid_argument,
                "'" + at.str() + "' is a drive of removable media, not a directory or file");
  };
  return b;
}

}  // namespace stripeback::tape
