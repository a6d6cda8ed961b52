#include "database/wal_names.h"

#include <cstdio>

namespace stripeback::database {
namespace {

bool hex_upper(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'))) return false;
  return !s.empty();
}

uint64_t hex_value(std::string_view s) {
  uint64_t v = 0;
  for (char c : s) v = v * 16 + static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'A' + 10);
  return v;
}

std::string hex8(uint64_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08llX", static_cast<unsigned long long>(v & 0xffffffffu));
  return buf;
}

}  // namespace

Result<uint64_t> parse_lsn(std::string_view text, std::string_view what) {
  const size_t slash = text.find('/');
  auto bad = [&] {
    return fail(Errc::invalid_argument, std::string(what) + " '" + std::string(text) +
                                            "' is not an LSN as PostgreSQL writes one "
                                            "(two hexadecimal numbers, e.g. 0/3000028)");
  };
  if (slash == std::string_view::npos || slash == 0 || slash > 8 || text.size() - slash - 1 == 0 ||
      text.size() - slash - 1 > 8)
    return bad();
  std::string upper(text);
  for (char& c : upper)
    if (c >= 'a' && c <= 'f') c = static_cast<char>(c - 'a' + 'A');
  std::string_view hi = std::string_view(upper).substr(0, slash);
  std::string_view lo = std::string_view(upper).substr(slash + 1);
  if (!hex_upper(hi) || !hex_upper(lo)) return bad();
  return (hex_value(hi) << 32) | hex_value(lo);
}

std::string lsn_text(uint64_t lsn) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%X/%X", static_cast<unsigned>(lsn >> 32),
                static_cast<unsigned>(lsn & 0xffffffffu));
  return buf;
}

WalKind wal_kind(std::string_view name) {
  if (name.size() == 24 && hex_upper(name)) return WalKind::segment;
  if (name.size() == 32 && name.substr(24) == ".partial" && hex_upper(name.substr(0, 24)))
    return WalKind::partial;
  if (name.size() == 40 && name.substr(33) == ".backup" && name[24] == '.' &&
      hex_upper(name.substr(0, 24)) && hex_upper(name.substr(25, 8)))
    return WalKind::backup_history;
  if (name.size() == 16 && name.substr(8) == ".history" && hex_upper(name.substr(0, 8)))
    return WalKind::timeline_history;
  return WalKind::other;
}

std::optional<SegmentPos> segment_pos(std::string_view name, uint32_t segment_size) {
  const WalKind k = wal_kind(name);
  if (k != WalKind::segment && k != WalKind::partial && k != WalKind::backup_history)
    return std::nullopt;
  if (segment_size == 0 || (segment_size & (segment_size - 1)) != 0) return std::nullopt;
  const uint64_t per_log = (uint64_t{1} << 32) / segment_size;
  const uint64_t log = hex_value(name.substr(8, 8));
  const uint64_t seg = hex_value(name.substr(16, 8));
  if (seg >= per_log) return std::nullopt;
  return SegmentPos{static_cast<uint32_t>(hex_value(name.substr(0, 8))), log * per_log + seg};
}

std::string segment_name(SegmentPos pos, uint32_t segment_size) {
  const uint64_t per_log = (uint64_t{1} << 32) / segment_size;
  return hex8(pos.timeline) + hex8(pos.number / per_log) + hex8(pos.number % per_log);
}

std::string history_name(uint32_t timeline) { return hex8(timeline) + ".history"; }

}  // namespace stripeback::database
