#include "catalog/payload.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "util/bytes.h"

namespace stripeback::catalog {
namespace {

// version u8 + backup id u64 + entry count u32: the most any payload spends before entries.
constexpr size_t kPayloadPrefix = 1 + 8 + 4;

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

Result<std::vector<uint8_t>> encode_file(const FileRecord& f) {
  SB_TRY(check_str(f.path, "file path"));
  util::ByteWriter w;
  w.str(f.path);
  w.u64(f.size);
  w.u32(f.mode);
  w.i64(f.mtime_ns);
  w.u32(f.uid);
  w.u32(f.gid);
  w.bytes(f.digest.data(), f.digest.size());
  w.u32(static_cast<uint32_t>(f.pieces.size()));
  for (const auto& p : f.pieces) {
    SB_TRY(check_str(p, "file piece name"));
    w.str(p);
  }
  if (f.unit != 0) {
    w.u32(f.unit);
    w.u64(f.parent);
    w.u8(static_cast<uint8_t>(f.change));
    w.u64(f.units_written);
    w.i64(f.ctime_ns);
    w.u64(f.inode);
    w.u64(f.held_by);
  }
  if (w.size() + kPayloadPrefix + 4 > kMaxPayload) {
    return fail(Errc::invalid_argument, "catalog record for file '" + f.path + "' is " +
                                            std::to_string(w.size()) + " bytes; the limit is " +
                                            std::to_string(kMaxPayload - kPayloadPrefix - 4));
  }
  return w.take();
}

// Packs file entries into as few payloads as the size limit allows. The first payload
// starts with `head` (which ends just before the entry count), the rest with `tail_head`.
Result<std::vector<EncodedRecord>> pack_files(RecordType first_type, std::vector<uint8_t> head,
                                              const std::vector<uint8_t>& tail_head,
                                              const std::vector<FileRecord>& files) {
  std::vector<std::vector<uint8_t>> entries;
  entries.reserve(files.size());
  for (const auto& f : files) {
    SB_ASSIGN(auto e, encode_file(f));
    entries.push_back(std::move(e));
  }
  std::vector<EncodedRecord> out;
  size_t next = 0;
  RecordType type = first_type;
  do {
    const std::vector<uint8_t>& prefix = out.empty() ? head : tail_head;
    size_t size = prefix.size() + 4, end = next;
    while (end < entries.size() && size + 4 + entries[end].size() <= kMaxPayload) {
      size += 4 + entries[end++].size();
    }
    util::ByteWriter w;
    w.bytes(prefix.data(), prefix.size());
    w.u32(static_cast<uint32_t>(end - next));
    for (; next < end; ++next) put_entry(w, entries[next]);
    out.push_back({type, w.take()});
    type = RecordType::files;
  } while (next < entries.size());
  return out;
}

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

Error malformed(const std::string& what) { return Error{Errc::corrupt, 0, what}; }

Result<void> check_decoded_id(uint64_t backup_id) {
  if (backup_id >= 1 && backup_id <= kMaxBackupId) return ok();
  return malformed("backup id " + std::to_string(backup_id) + " is out of range");
}

// Reads the version byte; `newer` tells whether unknown trailing fields may follow.
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

bool any_level(const std::vector<FileRecord>& files) {
  for (const auto& f : files)
    if (f.unit != 0) return true;
  return false;
}

Result<FileRecord> decode_file(std::span<const uint8_t> entry, uint8_t version, bool newer) {
  util::ByteReader r(entry);
  FileRecord f;
  f.path = r.str();
  f.size = r.u64();
  f.mode = r.u32();
  f.mtime_ns = r.i64();
  f.uid = r.u32();
  f.gid = r.u32();
  r.bytes(f.digest.data(), f.digest.size());
  uint32_t n = r.u32();
  for (uint32_t i = 0; i < n && r.ok(); ++i) f.pieces.push_back(r.str());
  if (version >= kLevelPayloadVersion && r.ok() && r.remaining() > 0) {
    f.unit = r.u32();
    f.parent = r.u64();
    const uint8_t change = r.u8();
    f.units_written = r.u64();
    f.ctime_ns = r.i64();
    f.inode = r.u64();
    f.held_by = r.u64();
    if (r.ok() && (f.unit == 0 || change > static_cast<uint8_t>(FileChange::skipped) ||
                   (change == static_cast<uint8_t>(FileChange::skipped)) != (f.held_by != 0)))
      return malformed("file entry of '" + f.path + "' has an invalid change record");
    f.change = static_cast<FileChange>(change);
  }
  SB_TRY(check_end(r.ok(), r.remaining(), newer, "file entry"));
  return f;
}

Result<std::vector<FileRecord>> decode_file_list(Cursor& c, uint8_t version, bool newer) {
  std::vector<FileRecord> files;
  uint32_t n = c.r().u32();
  for (uint32_t i = 0; i < n && c.ok(); ++i) {
    auto e = c.entry();
    if (!c.ok()) break;
    SB_ASSIGN(auto f, decode_file(e, version, newer));
    files.push_back(std::move(f));
  }
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "file list"));
  return files;
}

}  // namespace

Result<EncodedRecord> encode_begin(uint64_t backup_id, const BackupBegin& b) {
  SB_TRY(check_id(backup_id));
  SB_TRY(check_str(b.tag, "tag"));
  SB_TRY(check_str(b.destination, "destination"));
  SB_TRY(check_str(b.host, "host"));
  util::ByteWriter w;
  const bool level = b.level >= 0;
  if (level && (b.level > 1 || b.change_unit == 0 || b.catalog_id == 0))
    return fail(Errc::invalid_argument, "catalog backup begin record has an invalid level");
  w.u8(level ? kLevelPayloadVersion : b.catalog_id != 0 ? kBeginPayloadVersion : kPayloadVersion);
  w.u64(backup_id);
  w.str(b.tag);
  w.i64(b.start_time_ns);
  w.str(b.destination);
  w.u32(static_cast<uint32_t>(b.sources.size()));
  for (const auto& s : b.sources) {
    SB_TRY(check_str(s, "source"));
    w.str(s);
  }
  w.u32(b.channels);
  w.str(b.host);
  w.u32(static_cast<uint32_t>(b.pid));
  if (b.catalog_id != 0) w.u64(b.catalog_id);
  if (level) {
    w.u8(static_cast<uint8_t>(b.level));
    w.u8(b.cumulative ? 1 : 0);
    w.u32(b.change_unit);
  }
  if (w.size() > kMaxPayload) {
    return fail(Errc::invalid_argument, "catalog backup begin record is " +
                                            std::to_string(w.size()) + " bytes; the limit is " +
                                            std::to_string(kMaxPayload));
  }
  return EncodedRecord{RecordType::backup_begin, w.take()};
}

Result<std::vector<EncodedRecord>> encode_piece(uint64_t backup_id, const PieceRecord& p,
                                                const std::vector<FileRecord>& files) {
  SB_TRY(check_id(backup_id));
  SB_TRY(check_str(p.name, "piece name"));
  SB_TRY(check_str(p.location, "piece location"));
  util::ByteWriter pe;
  pe.str(p.name);
  pe.str(p.location);
  pe.u32(p.channel);
  pe.u32(p.number);
  pe.u64(p.size);
  pe.u32(p.checksum);
  if (p.media) {
    pe.u8(1);  // medium: tape
    pe.u32(p.media->block_size);
    pe.u64(p.media->bytes);
    pe.u32(static_cast<uint32_t>(p.media->spans.size()));
    for (const MediaSpan& sp : p.media->spans) {
      SB_TRY(check_str(sp.volume_id, "tape volume id"));
      SB_TRY(check_str(sp.url, "tape url"));
      pe.str(sp.volume_id);
      pe.str(sp.url);
      pe.u32(sp.file);
      pe.u64(sp.block);
      pe.u64(sp.first_seq);
      pe.u64(sp.blocks);
      pe.u64(sp.address);
    }
  }
  util::ByteWriter head, tail_head;
  const bool level = any_level(files);
  head.u8(level ? kLevelPayloadVersion : p.media ? kTapePiecePayloadVersion : kPayloadVersion);
  head.u64(backup_id);
  put_entry(head, pe.buffer());
  tail_head.u8(level ? kLevelPayloadVersion : kPayloadVersion);
  tail_head.u64(backup_id);
  return pack_files(RecordType::piece, head.take(), tail_head.buffer(), files);
}

Result<std::vector<EncodedRecord>> encode_files(uint64_t backup_id,
                                                const std::vector<FileRecord>& files) {
  SB_TRY(check_id(backup_id));
  util::ByteWriter head;
  head.u8(any_level(files) ? kLevelPayloadVersion : kPayloadVersion);
  head.u64(backup_id);
  return pack_files(RecordType::files, head.buffer(), head.buffer(), files);
}

Result<EncodedRecord> encode_end(uint64_t backup_id, const BackupEnd& e) {
  SB_TRY(check_id(backup_id));
  SB_TRY(check_str(e.message, "end message"));
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u64(backup_id);
  w.u8(static_cast<uint8_t>(e.status));
  w.i64(e.end_time_ns);
  w.u64(e.files);
  w.u64(e.bytes_read);
  w.u64(e.bytes_written);
  w.u32(e.pieces);
  w.str(e.message);
  return EncodedRecord{RecordType::backup_end, w.take()};
}

Result<BeginPayload> decode_begin(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(uint8_t version, read_raw_version(c));
  const bool newer = version > kLevelPayloadVersion;
  util::ByteReader& r = c.r();
  BeginPayload out;
  out.backup_id = r.u64();
  BackupBegin& b = out.begin;
  b.tag = r.str();
  b.start_time_ns = r.i64();
  b.destination = r.str();
  uint32_t n = r.u32();
  for (uint32_t i = 0; i < n && r.ok(); ++i) b.sources.push_back(r.str());
  b.channels = r.u32();
  b.host = r.str();
  b.pid = static_cast<int32_t>(r.u32());
  if (version >= kBeginPayloadVersion) {
    b.catalog_id = r.u64();
    if (r.ok() && b.catalog_id == 0) return malformed("catalog id 0 in a backup begin payload");
  }
  if (version >= kLevelPayloadVersion) {
    const uint8_t level = r.u8();
    const uint8_t cumulative = r.u8();
    b.change_unit = r.u32();
    if (r.ok() && (level > 1 || cumulative > 1 || b.change_unit == 0))
      return malformed("invalid level in a backup begin payload");
    b.level = level;
    b.cumulative = cumulative == 1;
  }
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "backup begin payload"));
  SB_TRY(check_decoded_id(out.backup_id));
  return out;
}

Result<PiecePayload> decode_piece(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(uint8_t version, read_raw_version(c));
  const bool newer = version > kLevelPayloadVersion;
  PiecePayload out;
  out.backup_id = c.r().u64();
  util::ByteReader pr(c.entry());
  if (!c.ok()) return malformed("truncated piece payload");
  PieceRecord& p = out.piece;
  p.name = pr.str();
  p.location = pr.str();
  p.channel = pr.u32();
  p.number = pr.u32();
  p.size = pr.u64();
  p.checksum = pr.u32();
  if (version >= kTapePiecePayloadVersion && pr.ok() && pr.remaining() > 0) {
    const uint8_t medium = pr.u8();
    if (medium != 1) return malformed("unknown piece medium " + std::to_string(medium));
    MediaLocation t;
    t.block_size = pr.u32();
    t.bytes = pr.u64();
    const uint32_t n = pr.u32();
    for (uint32_t i = 0; i < n && pr.ok(); ++i) {
      MediaSpan sp;
      sp.volume_id = pr.str();
      sp.url = pr.str();
      sp.file = pr.u32();
      sp.block = pr.u64();
      sp.first_seq = pr.u64();
      sp.blocks = pr.u64();
      sp.address = pr.u64();
      t.spans.push_back(std::move(sp));
    }
    p.media = std::move(t);
  }
  SB_TRY(check_end(pr.ok(), pr.remaining(), newer, "piece entry"));
  SB_ASSIGN(out.files, decode_file_list(c, version, newer));
  SB_TRY(check_decoded_id(out.backup_id));
  return out;
}

Result<FilesPayload> decode_files(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(uint8_t version, read_raw_version(c));
  const bool newer = version > kLevelPayloadVersion;
  FilesPayload out;
  out.backup_id = c.r().u64();
  SB_ASSIGN(out.files, decode_file_list(c, version, newer));
  SB_TRY(check_decoded_id(out.backup_id));
  return out;
}

Result<EndPayload> decode_end(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  EndPayload out;
  out.backup_id = r.u64();
  uint8_t status = r.u8();
  BackupEnd& e = out.end;
  e.end_time_ns = r.i64();
  e.files = r.u64();
  e.bytes_read = r.u64();
  e.bytes_written = r.u64();
  e.pieces = r.u32();
  e.message = r.str();
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "backup end payload"));
  if (status < static_cast<uint8_t>(BackupStatus::complete) ||
      status > static_cast<uint8_t>(BackupStatus::partial)) {
    return malformed("unknown backup status " + std::to_string(status));
  }
  e.status = static_cast<BackupStatus>(status);
  SB_TRY(check_decoded_id(out.backup_id));
  return out;
}

Result<EncodedRecord> encode_page_check(const PageCheck& c) {
  if (c.backup_id > kMaxBackupId)
    return fail(Errc::invalid_argument, "catalog page check names backup id " +
                                            std::to_string(c.backup_id) + ", out of range");
  SB_TRY(check_str(c.format, "page format"));
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u64(c.backup_id);
  w.i64(c.time_ns);
  w.str(c.format);
  w.u8(c.complete ? 1 : 0);
  w.u32(static_cast<uint32_t>(c.sources.size()));
  for (const auto& src : c.sources) {
    SB_TRY(check_str(src, "source"));
    w.str(src);
  }
  w.u64(c.pages_checked);
  const size_t kept = std::min(c.corrupt.size(), PageCheck::kMaxCorrupt);
  w.u64(std::max<uint64_t>(c.corrupt_total, c.corrupt.size()));
  w.u32(static_cast<uint32_t>(kept));
  for (size_t i = 0; i < kept; ++i) {
    const CorruptPage& p = c.corrupt[i];
    SB_TRY(check_str(p.file, "corrupt page file"));
    SB_TRY(check_str(p.reason, "corrupt page reason"));
    w.str(p.file);
    w.u64(p.block);
    w.u64(p.offset);
    w.str(p.reason);
  }
  if (w.size() > kMaxPayload)
    return fail(Errc::invalid_argument, "catalog page check record is " +
                                            std::to_string(w.size()) + " bytes; the limit is " +
                                            std::to_string(kMaxPayload));
  return EncodedRecord{RecordType::page_check, w.take()};
}

Result<EncodedRecord> encode_frame_check(const FrameCheck& c) {
  SB_TRY(check_id(c.backup_id));
  SB_TRY(check_str(c.mode, "check mode"));
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u64(c.backup_id);
  w.i64(c.time_ns);
  w.str(c.mode);
  w.u64(c.frames_checked);
  w.u64(c.frames_failed);
  w.i64(c.full_check_ns);
  w.u32(static_cast<uint32_t>(c.pieces.size()));
  for (const CheckedPiece& p : c.pieces) {
    SB_TRY(check_str(p.piece, "piece name"));
    w.str(p.piece);
    w.u32(static_cast<uint32_t>(p.ranges.size()));
    for (const CheckedRange& r : p.ranges) {
      if (r.first > r.last)
        return fail(Errc::invalid_argument, "catalog frame check of piece '" + p.piece +
                                                "' has a range that ends before it begins");
      w.u64(r.first);
      w.u64(r.last);
    }
  }
  if (w.size() > kMaxPayload)
    return fail(Errc::invalid_argument, "catalog frame check record is " +
                                            std::to_string(w.size()) + " bytes; the limit is " +
                                            std::to_string(kMaxPayload));
  return EncodedRecord{RecordType::frame_check, w.take()};
}

Result<PageCheck> decode_page_check(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  PageCheck out;
  out.backup_id = r.u64();
  out.time_ns = r.i64();
  out.format = r.str();
  const uint8_t complete = r.u8();
  const uint32_t n = r.u32();
  for (uint32_t i = 0; i < n && r.ok(); ++i) out.sources.push_back(r.str());
  out.pages_checked = r.u64();
  out.corrupt_total = r.u64();
  const uint32_t m = r.u32();
  if (r.ok() && m > PageCheck::kMaxCorrupt) return malformed("too many corrupt pages in a page check");
  for (uint32_t i = 0; i < m && r.ok(); ++i) {
    CorruptPage p;
    p.file = r.str();
    p.block = r.u64();
    p.offset = r.u64();
    p.reason = r.str();
    out.corrupt.push_back(std::move(p));
  }
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "page check payload"));
  if (complete > 1) return malformed("invalid complete flag in a page check payload");
  if (out.backup_id != 0) SB_TRY(check_decoded_id(out.backup_id));
  if (out.corrupt_total < out.corrupt.size())
    return malformed("page check counts fewer corrupt pages than it lists");
  out.complete = complete == 1;
  return out;
}

Result<FrameCheck> decode_frame_check(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  FrameCheck out;
  out.backup_id = r.u64();
  out.time_ns = r.i64();
  out.mode = r.str();
  out.frames_checked = r.u64();
  out.frames_failed = r.u64();
  out.full_check_ns = r.i64();
  const uint32_t n = r.u32();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    CheckedPiece p;
    p.piece = r.str();
    const uint32_t m = r.u32();
    // Each range takes 16 bytes: a count beyond what is left is malformed, not a big reserve.
    if (r.ok() && m > r.remaining() / 16) return malformed("truncated frame check payload");
    for (uint32_t j = 0; j < m && r.ok(); ++j) {
      CheckedRange cr;
      cr.first = r.u64();
      cr.last = r.u64();
      if (r.ok() && cr.first > cr.last) return malformed("frame check range ends before it begins");
      p.ranges.push_back(cr);
    }
    out.pieces.push_back(std::move(p));
  }
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "frame check payload"));
  SB_TRY(check_decoded_id(out.backup_id));
  return out;
}

// Media management records.

Result<EncodedRecord> encode_setting(const Setting& s) {
  SB_TRY(check_str(s.key, "setting key"));
  SB_TRY(check_str(s.value, "setting value"));
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.i64(s.time_ns);
  w.str(s.key);
  w.str(s.value);
  return EncodedRecord{RecordType::setting, w.take()};
}

Result<Setting> decode_setting(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  Setting out;
  out.time_ns = r.i64();
  out.key = r.str();
  out.value = r.str();
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "setting payload"));
  if (out.key.empty()) return malformed("setting with an empty key");
  return out;
}

Result<EncodedRecord> encode_crosscheck(const Crosscheck& c) {
  util::ByteWriter w;
  const bool any_damage =
      std::any_of(c.pieces.begin(), c.pieces.end(), [](const PieceCheck& p) { return p.damaged; });
  w.u8(any_damage ? kCrosscheckDamagePayloadVersion : kPayloadVersion);
  w.i64(c.time_ns);
  w.u8(c.deep ? 1 : 0);
  w.u32(static_cast<uint32_t>(c.pieces.size()));
  for (const PieceCheck& p : c.pieces) {
    SB_TRY(check_id(p.backup_id));
    SB_TRY(check_str(p.piece, "piece name"));
    SB_TRY(check_str(p.reason, "crosscheck reason"));
    w.u64(p.backup_id);
    w.str(p.piece);
    w.u8(p.expired ? 1 : 0);
    w.str(p.reason);
  }
  if (any_damage) {
    // Per damaged piece: its index in the list above, what was found, the files.
    uint32_t n = 0;
    for (const PieceCheck& p : c.pieces) n += p.damaged ? 1 : 0;
    w.u32(n);
    for (uint32_t i = 0; i < c.pieces.size(); ++i) {
      const PieceCheck& p = c.pieces[i];
      if (!p.damaged) continue;
      SB_TRY(check_str(p.damage, "crosscheck damage"));
      w.u32(i);
      w.str(p.damage);
      w.u32(static_cast<uint32_t>(p.damaged_files.size()));
      for (const auto& f : p.damaged_files) {
        SB_TRY(check_str(f, "damaged file path"));
        w.str(f);
      }
    }
  }
  if (w.size() > kMaxPayload)
    return fail(Errc::invalid_argument, "catalog crosscheck record is " +
                                            std::to_string(w.size()) + " bytes; the limit is " +
                                            std::to_string(kMaxPayload));
  return EncodedRecord{RecordType::crosscheck, w.take()};
}

Result<Crosscheck> decode_crosscheck(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(uint8_t version, read_raw_version(c));
  const bool newer = version > kCrosscheckDamagePayloadVersion;
  util::ByteReader& r = c.r();
  Crosscheck out;
  out.time_ns = r.i64();
  const uint8_t deep = r.u8();
  const uint32_t n = r.u32();
  // Each entry takes at least 17 bytes: a count beyond what is left is malformed.
  if (r.ok() && n > r.remaining() / 17) return malformed("truncated crosscheck payload");
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    PieceCheck p;
    p.backup_id = r.u64();
    p.piece = r.str();
    const uint8_t expired = r.u8();
    p.reason = r.str();
    if (r.ok() && expired > 1) return malformed("crosscheck state " + std::to_string(expired));
    if (r.ok()) SB_TRY(check_decoded_id(p.backup_id));
    p.expired = expired == 1;
    out.pieces.push_back(std::move(p));
  }
  if (version >= kCrosscheckDamagePayloadVersion && r.ok()) {
    const uint32_t damaged = r.u32();
    // Each entry takes at least 12 bytes.
    if (r.ok() && damaged > r.remaining() / 12) return malformed("truncated crosscheck damage");
    for (uint32_t k = 0; k < damaged && r.ok(); ++k) {
      const uint32_t i = r.u32();
      std::string what = r.str();
      const uint32_t files = r.u32();
      if (!r.ok()) break;  // cut short: check_end() below says so
      if (i >= out.pieces.size() || files > r.remaining() / 4)
        return malformed("crosscheck damage entry out of range");
      PieceCheck& p = out.pieces[i];
      p.damaged = true;
      p.damage = std::move(what);
      for (uint32_t f = 0; f < files && r.ok(); ++f) p.damaged_files.push_back(r.str());
    }
  }
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "crosscheck payload"));
  if (deep > 1) return malformed("crosscheck deep flag " + std::to_string(deep));
  out.deep = deep == 1;
  return out;
}

Result<EncodedRecord> encode_deletion(const Deletion& d) {
  if (d.id == 0) return fail(Errc::invalid_argument, "catalog deletion id 0");
  SB_TRY(check_str(d.reason, "deletion reason"));
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u64(d.id);
  w.u8(d.done ? 1 : 0);
  w.i64(d.time_ns);
  w.str(d.reason);
  w.u32(static_cast<uint32_t>(d.backups.size()));
  for (uint64_t id : d.backups) {
    SB_TRY(check_id(id));
    w.u64(id);
  }
  w.u32(static_cast<uint32_t>(d.pieces.size()));
  for (const DeletedPiece& p : d.pieces) {
    SB_TRY(check_str(p.name, "piece name"));
    SB_TRY(check_str(p.location, "piece location"));
    w.u64(p.backup_id);
    w.str(p.name);
    w.str(p.location);
    w.u64(p.size);
  }
  if (w.size() > kMaxPayload)
    return fail(Errc::invalid_argument, "catalog deletion record is " + std::to_string(w.size()) +
                                            " bytes; the limit is " +
                                            std::to_string(kMaxPayload));
  return EncodedRecord{RecordType::deletion, w.take()};
}

Result<Deletion> decode_deletion(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  Deletion out;
  out.id = r.u64();
  const uint8_t done = r.u8();
  out.time_ns = r.i64();
  out.reason = r.str();
  const uint32_t nb = r.u32();
  if (r.ok() && nb > r.remaining() / 8) return malformed("truncated deletion payload");
  for (uint32_t i = 0; i < nb && r.ok(); ++i) {
    out.backups.push_back(r.u64());
    if (r.ok()) SB_TRY(check_decoded_id(out.backups.back()));
  }
  const uint32_t np = r.u32();
  if (r.ok() && np > r.remaining() / 24) return malformed("truncated deletion payload");
  for (uint32_t i = 0; i < np && r.ok(); ++i) {
    DeletedPiece p;
    p.backup_id = r.u64();
    p.name = r.str();
    p.location = r.str();
    p.size = r.u64();
    out.pieces.push_back(std::move(p));
  }
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "deletion payload"));
  if (out.id == 0) return malformed("deletion id 0");
  if (done > 1) return malformed("deletion phase " + std::to_string(done));
  out.done = done == 1;
  return out;
}

Result<EncodedRecord> encode_resume(const Resume& r) {
  SB_TRY(check_id(r.backup_id));
  SB_TRY(check_str(r.host, "host"));
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u64(r.backup_id);
  w.i64(r.time_ns);
  w.str(r.host);
  w.u32(static_cast<uint32_t>(r.pid));
  return EncodedRecord{RecordType::resume, w.take()};
}

Result<Resume> decode_resume(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  Resume out;
  out.backup_id = r.u64();
  out.time_ns = r.i64();
  out.host = r.str();
  out.pid = static_cast<int32_t>(r.u32());
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "resume payload"));
  SB_TRY(check_decoded_id(out.backup_id));
  return out;
}

namespace {

void put_figures(util::ByteWriter& w, const IoFigures& f) {
  w.u64(f.ios);
  w.u64(f.bytes);
  w.i64(f.busy_ns);
  w.u64(f.waits.ready);
  w.u64(f.waits.short_waits);
  w.u64(f.waits.long_waits);
  w.i64(f.waits.total_ns);
  w.i64(f.waits.max_ns);
}

IoFigures get_figures(util::ByteReader& r) {
  IoFigures f;
  f.ios = r.u64();
  f.bytes = r.u64();
  f.busy_ns = r.i64();
  f.waits.ready = r.u64();
  f.waits.short_waits = r.u64();
  f.waits.long_waits = r.u64();
  f.waits.total_ns = r.i64();
  f.waits.max_ns = r.i64();
  return f;
}

bool figures_valid(const IoFigures& f) {
  return f.busy_ns >= 0 && f.waits.total_ns >= 0 && f.waits.max_ns >= 0 &&
         f.waits.max_ns <= f.waits.total_ns;
}

uint32_t to_millionths(double share) {
  if (!(share > 0)) return 0;
  const double m = share * 1e6 + 0.5;
  return m >= 4294967295.0 ? 0xffffffffu : static_cast<uint32_t>(m);
}

}  // namespace

Result<EncodedRecord> encode_job(const JobRecord& j) {
  if (j.type.empty() || j.status.empty())
    return fail(Errc::invalid_argument, "catalog job record needs a type and a status");
  for (const std::string* s : {&j.type, &j.status, &j.message, &j.tag, &j.bound_by, &j.stage,
                               &j.evidence, &j.suggestion})
    SB_TRY(check_str(*s, "job field"));
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.str(j.type);
  w.str(j.status);
  w.str(j.message);
  w.i64(j.start_ns);
  w.i64(j.end_ns);
  w.str(j.tag);
  w.u32(static_cast<uint32_t>(j.backup_ids.size()));
  for (uint64_t id : j.backup_ids) {
    SB_TRY(check_id(id));
    w.u64(id);
  }
  w.u64(j.bytes_in);
  w.u64(j.bytes_out);
  w.u64(j.files);
  w.u64(j.compress_in);
  w.u64(j.compress_out);
  w.str(j.bound_by);
  w.str(j.stage);
  w.str(j.evidence);
  w.str(j.suggestion);
  w.u32(static_cast<uint32_t>(j.shares.size()));
  for (const VerdictShare& v : j.shares) {
    SB_TRY(check_str(v.name, "verdict share name"));
    w.str(v.name);
    w.u32(to_millionths(v.share));
  }
  w.u32(static_cast<uint32_t>(j.channels.size()));
  for (const ChannelIoRecord& c : j.channels) {
    SB_TRY(check_str(c.io_engine, "channel io engine"));
    SB_TRY(check_str(c.io_mode, "channel io mode"));
    if (c.elapsed_ns < 0 || !figures_valid(c.read) || !figures_valid(c.write))
      return fail(Errc::invalid_argument, "catalog job record of channel " +
                                              std::to_string(c.channel) +
                                              " has negative or inconsistent times");
    util::ByteWriter e;
    e.u32(c.channel);
    e.str(c.io_engine);
    e.str(c.io_mode);
    e.u32(c.buffers);
    e.u32(c.buffer_size);
    e.u32(c.multiplexing);
    e.i64(c.elapsed_ns);
    put_figures(e, c.read);
    put_figures(e, c.write);
    put_entry(w, e.buffer());
  }
  const size_t kept = std::min(j.file_io.size(), JobRecord::kMaxFiles);
  w.u64(std::max<uint64_t>(j.files_total, kept));
  w.u32(static_cast<uint32_t>(kept));
  for (size_t i = 0; i < kept; ++i) {
    const FileIoRecord& f = j.file_io[i];
    SB_TRY(check_str(f.path, "file path"));
    if (!figures_valid(f.read) || !figures_valid(f.write))
      return fail(Errc::invalid_argument, "catalog job record of file '" + f.path +
                                              "' has negative or inconsistent times");
    util::ByteWriter e;
    e.str(f.path);
    e.u32(f.channel);
    put_figures(e, f.read);
    put_figures(e, f.write);
    put_entry(w, e.buffer());
  }
  if (w.size() > kMaxPayload)
    return fail(Errc::invalid_argument, "catalog job record is " + std::to_string(w.size()) +
                                            " bytes; the limit is " + std::to_string(kMaxPayload));
  return EncodedRecord{RecordType::job, w.take()};
}

Result<JobRecord> decode_job(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  JobRecord j;
  {
    util::ByteReader& r = c.r();
    j.type = r.str();
    j.status = r.str();
    j.message = r.str();
    j.start_ns = r.i64();
    j.end_ns = r.i64();
    j.tag = r.str();
    const uint32_t ids = r.u32();
    if (r.ok() && ids > r.remaining() / 8) return malformed("truncated job payload");
    for (uint32_t i = 0; i < ids && r.ok(); ++i) {
      const uint64_t id = r.u64();
      if (r.ok()) SB_TRY(check_decoded_id(id));
      j.backup_ids.push_back(id);
    }
    j.bytes_in = r.u64();
    j.bytes_out = r.u64();
    j.files = r.u64();
    j.compress_in = r.u64();
    j.compress_out = r.u64();
    j.bound_by = r.str();
    j.stage = r.str();
    j.evidence = r.str();
    j.suggestion = r.str();
    const uint32_t shares = r.u32();
    // Each share takes at least 8 bytes: a count beyond what is left is malformed.
    if (r.ok() && shares > r.remaining() / 8) return malformed("truncated job payload");
    for (uint32_t i = 0; i < shares && r.ok(); ++i) {
      VerdictShare v;
      v.name = r.str();
      v.share = r.u32() / 1e6;
      j.shares.push_back(std::move(v));
    }
  }
  const uint32_t channels = c.r().u32();
  if (c.ok() && channels > c.remaining() / 4) return malformed("truncated job payload");
  for (uint32_t i = 0; i < channels && c.ok(); ++i) {
    auto e = c.entry();
    if (!c.ok()) break;
    util::ByteReader r(e);
    ChannelIoRecord ch;
    ch.channel = r.u32();
    ch.io_engine = r.str();
    ch.io_mode = r.str();
    ch.buffers = r.u32();
    ch.buffer_size = r.u32();
    ch.multiplexing = r.u32();
    ch.elapsed_ns = r.i64();
    ch.read = get_figures(r);
    ch.write = get_figures(r);
    SB_TRY(check_end(r.ok(), r.remaining(), newer, "job channel entry"));
    if (ch.elapsed_ns < 0 || !figures_valid(ch.read) || !figures_valid(ch.write))
      return malformed("job channel entry has negative or inconsistent times");
    j.channels.push_back(std::move(ch));
  }
  j.files_total = c.r().u64();
  const uint32_t files = c.r().u32();
  if (c.ok() && files > JobRecord::kMaxFiles) return malformed("too many files in a job payload");
  for (uint32_t i = 0; i < files && c.ok(); ++i) {
    auto e = c.entry();
    if (!c.ok()) break;
    util::ByteReader r(e);
    FileIoRecord f;
    f.path = r.str();
    f.channel = r.u32();
    f.read = get_figures(r);
    f.write = get_figures(r);
    SB_TRY(check_end(r.ok(), r.remaining(), newer, "job file entry"));
    if (!figures_valid(f.read) || !figures_valid(f.write))
      return malformed("job file entry has negative or inconsistent times");
    j.file_io.push_back(std::move(f));
  }
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "job payload"));
  if (j.type.empty() || j.status.empty()) return malformed("job payload without type or status");
  if (j.files_total < j.file_io.size())
    return malformed("job payload counts fewer files than it lists");
  return j;
}

}  // namespace stripeback::catalog
