#include "engine/format/piece_name.h"

#include <cstdio>
#include <ctime>
#include <random>

namespace stripeback::engine {
namespace {

constexpr std::string_view kSuffix = ".sbp";
constexpr size_t kCatalogIdDigits = 16;

// Parses the digits at the front of `s` (base 10 or 16, lower case), all of `digits` of
// them when given; moves `s` past them.
std::optional<uint64_t> take_number(std::string_view& s, int base, size_t digits = 0) {
  uint64_t v = 0;
  size_t n = 0;
  for (; n < s.size() && (digits == 0 || n < digits); ++n) {
    char c = s[n];
    unsigned d = 0;
    if (c >= '0' && c <= '9')
      d = static_cast<unsigned>(c - '0');
    else if (base == 16 && c >= 'a' && c <= 'f')
      d = static_cast<unsigned>(c - 'a' + 10);
    else
      break;
    if (v > (UINT64_MAX - d) / static_cast<unsigned>(base)) return std::nullopt;
    v = v * static_cast<unsigned>(base) + d;
  }
  if (n == 0 || (digits != 0 && n != digits)) return std::nullopt;
  s.remove_prefix(n);
  return v;
}

}  // namespace

std::string format_catalog_id(uint64_t catalog_id) {
  char buf[kCatalogIdDigits + 1];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(catalog_id));
  return buf;
}

std::string make_piece_stamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  std::random_device rd;
  char rnd[8];
  std::snprintf(rnd, sizeof rnd, "%04x", rd() & 0xffff);
  return std::string(buf) + "-" + rnd;
}

std::string piece_name_prefix(uint64_t backup_id, uint64_t catalog_id) {
  return "sb" + std::to_string(backup_id) + "-" + format_catalog_id(catalog_id) + "-";
}

std::string piece_name(uint64_t backup_id, uint64_t catalog_id, const std::string& stamp,
                       uint32_t channel, uint32_t piece) {
  return piece_name_prefix(backup_id, catalog_id) + stamp + "-c" + std::to_string(channel) + "-p" +
         std::to_string(piece) + std::string(kSuffix);
}

std::optional<PieceNameOwner> parse_piece_name(std::string_view name) {
  if (name.size() < kSuffix.size() || name.substr(name.size() - kSuffix.size()) != kSuffix ||
      name.substr(0, 2) != "sb")
    return std::nullopt;
  std::string_view s = name.substr(2);
  // Leading zeros are refused: each backup has exactly one spelling of its prefix.
  if (s.empty() || s[0] == '0') return std::nullopt;
  auto backup = take_number(s, 10);
  if (!backup || s.empty() || s[0] != '-') return std::nullopt;
  s.remove_prefix(1);
  auto catalog = take_number(s, 16, kCatalogIdDigits);
  if (!catalog || *catalog == 0 || s.empty() || s[0] != '-') return std::nullopt;
  return PieceNameOwner{*backup, *catalog};
}

}  // namespace stripeback::engine
