// What the payload encoders and decoders of every record family share (payload.cc: the
// backup records; check_payload.cc, media_payload.cc, job_payload.cc: the others): the
// writers' bounds on strings and backup ids, length-prefixed entries, and the readers'
// version byte and end checks. Internal to catalog/.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/payload.h"
#include "stripeback/result.h"
#include "util/bytes.h"

namespace stripeback::catalog {

// Writers: invalid_argument for a string longer than kMaxString, naming the field.
Result<void> check_str(std::string_view s, const char* field);
// Writers: invalid_argument for a backup id outside 1..kMaxBackupId.
Result<void> check_id(uint64_t backup_id);
// Writes `entry` prefixed with its u32 length.
void put_entry(util::ByteWriter& w, const std::vector<uint8_t>& entry);

// A ByteReader that can also step over length-prefixed entries.
class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> s) : s_(s), r_(s) {}
  util::ByteReader& r() { return r_; }
  // Reads a u32 length and returns the entry it prefixes; the cursor moves past it.
  std::span<const uint8_t> entry() {
    uint32_t n = r_.u32();
    size_t at = base_ + r_.position();
    if (!r_.ok() || n > s_.size() - at) {
      bad_ = true;
      return {};
    }
    base_ = at + n;
    r_ = util::ByteReader(s_.subspan(base_));
    return s_.subspan(at, n);
  }
  bool ok() const { return !bad_ && r_.ok(); }
  size_t remaining() const { return r_.remaining(); }

 private:
  std::span<const uint8_t> s_;
  util::ByteReader r_;
  size_t base_ = 0;
  bool bad_ = false;
};

// Readers: the error of a payload that does not decode (Errc::corrupt, `what`).
Error malformed(const std::string& what);
// Readers: corrupt for a backup id outside 1..kMaxBackupId.
Result<void> check_decoded_id(uint64_t backup_id);
// Reads the version byte: corrupt when there is none or it is 0. The caller compares it
// with the newest version it knows (`newer`: unknown trailing fields may follow).
Result<uint8_t> read_raw_version(Cursor& c);
// Reads the version byte; true when it is newer than kPayloadVersion.
Result<bool> read_version(Cursor& c);
// Corrupt when the reader failed (`ok` false) or, for a payload that is not of a newer
// version, when `trailing` bytes are left after `what`.
Result<void> check_end(bool ok, size_t trailing, bool newer, const char* what);

}  // namespace stripeback::catalog
