// Payloads of the backup records (begin, piece, files, end) and of the file entries in
// piece and files payloads.
#include "catalog/payload.h"

#include <string>

#include "catalog/payload_codec.h"

namespace stripeback::catalog {
namespace {

// version u8 + backup id u64 + entry count u32: the most any payload spends before entries.
constexpr size_t kPayloadPrefix = 1 + 8 + 4;

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

}  // namespace stripeback::catalog
