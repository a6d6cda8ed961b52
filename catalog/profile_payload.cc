// Payload of the FileProfile record (docs/catalog-format.md): a backup's per-file page
// failures and compression. A backup may record many files, so the entries are packed:
// every number is a LEB128 varint (most are small), and each entry is prefixed with its
// length so that a reader skips the fields a newer writer appends to it.
#include <string>

#include "catalog/payload.h"
#include "catalog/payload_codec.h"

namespace stripeback::catalog {
namespace {

// version u8 + backup id u64 + entry count u32.
constexpr size_t kProfilePrefix = 1 + 8 + 4;
constexpr size_t kMaxVarint = 10;

void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

// Reads a varint at `at` of `s`, moving `at` past it; false when it runs past the end or
// is longer than a 64-bit number takes.
bool get_varint(std::span<const uint8_t> s, size_t& at, uint64_t& v) {
  v = 0;
  for (size_t i = 0; i < kMaxVarint; ++i) {
    if (at >= s.size()) return false;
    const uint8_t b = s[at++];
    if (i == kMaxVarint - 1 && b > 1) return false;
    v |= uint64_t{b & 0x7fu} << (7 * i);
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

Result<std::vector<uint8_t>> encode_entry(const FileProfile& f) {
  SB_TRY(check_str(f.path, "profiled file path"));
  if (f.path.empty()) return fail(Errc::invalid_argument, "a file profile without a path");
  std::vector<uint8_t> body;
  put_varint(body, f.path.size());
  body.insert(body.end(), f.path.begin(), f.path.end());
  for (uint64_t v : {f.pages_checked, f.pages_failed, f.bytes_raw, f.bytes_stored})
    put_varint(body, v);
  std::vector<uint8_t> out;
  put_varint(out, body.size());
  out.insert(out.end(), body.begin(), body.end());
  if (out.size() + kProfilePrefix > kMaxPayload)
    return fail(Errc::invalid_argument, "the profile of '" + f.path + "' is too long to record");
  return out;
}

}  // namespace

Result<std::vector<EncodedRecord>> encode_file_profiles(const FileProfiles& p) {
  SB_TRY(check_id(p.backup_id));
  if (p.files.empty()) return fail(Errc::invalid_argument, "a file profile record names no file");
  std::vector<std::vector<uint8_t>> entries;
  entries.reserve(p.files.size());
  for (const FileProfile& f : p.files) {
    SB_ASSIGN(auto e, encode_entry(f));
    entries.push_back(std::move(e));
  }
  std::vector<EncodedRecord> out;
  size_t next = 0;
  while (next < entries.size()) {
    size_t size = kProfilePrefix, end = next;
    while (end < entries.size() && size + entries[end].size() <= kMaxPayload)
      size += entries[end++].size();
    util::ByteWriter w;
    w.u8(kPayloadVersion);
    w.u64(p.backup_id);
    w.u32(static_cast<uint32_t>(end - next));
    for (; next < end; ++next) w.bytes(entries[next].data(), entries[next].size());
    out.push_back({RecordType::file_profile, w.take()});
  }
  return out;
}

Result<FileProfiles> decode_file_profiles(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  FileProfiles out;
  out.backup_id = r.u64();
  const uint32_t n = r.u32();
  if (!r.ok()) return malformed("truncated file profile payload");
  SB_TRY(check_decoded_id(out.backup_id));
  const std::span<const uint8_t> rest = payload.subspan(kProfilePrefix);
  // Every entry takes at least 7 bytes: its length, a path of one byte and four numbers.
  if (n == 0 || n > rest.size() / 7)
    return malformed("file profile payload: " + std::to_string(n) + " files");
  out.files.reserve(n);
  size_t at = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t len = 0;
    if (!get_varint(rest, at, len) || len > rest.size() - at)
      return malformed("truncated file profile entry " + std::to_string(i));
    const std::span<const uint8_t> e = rest.subspan(at, len);
    at += len;
    size_t k = 0;
    uint64_t path_len = 0;
    if (!get_varint(e, k, path_len) || path_len == 0 || path_len > e.size() - k)
      return malformed("file profile entry " + std::to_string(i) + " has no path");
    FileProfile f;
    f.path.assign(reinterpret_cast<const char*>(e.data() + k), path_len);
    k += path_len;
    for (uint64_t* v : {&f.pages_checked, &f.pages_failed, &f.bytes_raw, &f.bytes_stored})
      if (!get_varint(e, k, *v))
        return malformed("truncated file profile of '" + f.path + "'");
    if (k != e.size() && !newer)
      return malformed("unexpected bytes in the file profile of '" + f.path + "'");
    if (f.pages_failed > f.pages_checked)
      return malformed("file profile of '" + f.path + "' has more failing pages than checked");
    out.files.push_back(std::move(f));
  }
  SB_TRY(check_end(true, rest.size() - at, newer, "file profile payload"));
  return out;
}

}  // namespace stripeback::catalog
