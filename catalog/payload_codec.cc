#include "catalog/payload_codec.h"

namespace stripeback::catalog {

Result<void> check_str(std::string_view s, const char* field) {
  if (s.size() <= kMaxString) return ok();
  return fail(Errc::invalid_argument, std::string("catalog field ") + field + " is " +
                                          std::to_string(s.size()) + " bytes long; the limit is " +
                                          std::to_string(kMaxString));
}

Result<void> check_id(uint64_t backup_id) {
  if (backup_id >= 1 && backup_id <= kMaxBackupId) return ok();
  return fail(Errc::invalid_argument, "catalog backup id " + std::to_string(backup_id) +
                                          " is out of range (1 to " +
                                          std::to_string(kMaxBackupId) + ")");
}

void put_entry(util::ByteWriter& w, const std::vector<uint8_t>& entry) {
  w.u32(static_cast<uint32_t>(entry.size()));
  w.bytes(entry.data(), entry.size());
}

Error malformed(const std::string& what) { return Error{Errc::corrupt, 0, what}; }

Result<void> check_decoded_id(uint64_t backup_id) {
  if (backup_id >= 1 && backup_id <= kMaxBackupId) return ok();
  return malformed("backup id " + std::to_string(backup_id) + " is out of range");
}

Result<uint8_t> read_raw_version(Cursor& c) {
  uint8_t v = c.r().u8();
  if (!c.ok()) return malformed("empty payload");
  if (v == 0) return malformed("payload version 0");
  return v;
}

Result<bool> read_version(Cursor& c) {
  SB_ASSIGN(uint8_t v, read_raw_version(c));
  return v > kPayloadVersion;
}

Result<void> check_end(bool ok, size_t trailing, bool newer, const char* what) {
  if (!ok) return malformed(std::string("truncated or malformed ") + what);
  if (trailing != 0 && !newer) {
    return malformed(std::to_string(trailing) + " unexpected bytes after the " + what);
  }
  return stripeback::ok();
}

}  // namespace stripeback::catalog
