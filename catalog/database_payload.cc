// Payloads of the database records (docs/catalog-format.md): Hot (a hot backup's fuzzy
// files and database backup mode) and Wal (a file of the log archive).
#include "catalog/payload.h"
#include "catalog/payload_codec.h"

namespace stripeback::catalog {

Result<EncodedRecord> encode_hot(const HotBackup& h) {
  SB_TRY(check_id(h.backup_id));
  for (const auto& f : h.fuzzy) SB_TRY(check_str(f, "fuzzy file"));
  for (const auto* s : {&h.database, &h.data_dir, &h.start_wal, &h.stop_wal, &h.label,
                        &h.backup_label, &h.tablespace_map})
    SB_TRY(check_str(*s, "hot backup field"));
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u64(h.backup_id);
  w.u32(static_cast<uint32_t>(h.fuzzy.size()));
  for (const auto& f : h.fuzzy) w.str(f);
  w.str(h.database);
  w.str(h.data_dir);
  w.u64(h.system_id);
  w.u32(h.timeline);
  w.u32(h.wal_segment_size);
  w.u64(h.start_lsn);
  w.u64(h.stop_lsn);
  w.str(h.start_wal);
  w.str(h.stop_wal);
  w.i64(h.start_time_ns);
  w.i64(h.stop_time_ns);
  w.str(h.label);
  w.str(h.backup_label);
  w.str(h.tablespace_map);
  return EncodedRecord{RecordType::hot, w.take()};
}

Result<HotBackup> decode_hot(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  HotBackup h;
  h.backup_id = r.u64();
  const uint32_t n = r.u32();
  // Each name takes at least its 4-byte length: a count beyond that is damage.
  if (n > r.remaining() / 4) return malformed("hot payload: " + std::to_string(n) + " fuzzy files");
  for (uint32_t i = 0; i < n && r.ok(); ++i) h.fuzzy.push_back(r.str());
  h.database = r.str();
  h.data_dir = r.str();
  h.system_id = r.u64();
  h.timeline = r.u32();
  h.wal_segment_size = r.u32();
  h.start_lsn = r.u64();
  h.stop_lsn = r.u64();
  h.start_wal = r.str();
  h.stop_wal = r.str();
  h.start_time_ns = r.i64();
  h.stop_time_ns = r.i64();
  h.label = r.str();
  h.backup_label = r.str();
  h.tablespace_map = r.str();
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "hot payload"));
  SB_TRY(check_decoded_id(h.backup_id));
  return h;
}

Result<EncodedRecord> encode_wal(const WalFile& f) {
  SB_TRY(check_str(f.name, "archived file name"));
  SB_TRY(check_str(f.stored_at, "archived file location"));
  if (f.name.empty()) return fail(Errc::invalid_argument, "an archived file needs a name");
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u8(static_cast<uint8_t>(f.event));
  w.str(f.name);
  w.i64(f.time_ns);
  w.u64(f.size);
  w.bytes(f.digest.data(), f.digest.size());
  w.u64(f.stored_size);
  w.str(f.stored_at);
  w.u64(f.system_id);
  w.u32(f.flags);
  return EncodedRecord{RecordType::wal, w.take()};
}

Result<WalFile> decode_wal(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  WalFile f;
  const uint8_t event = r.u8();
  f.name = r.str();
  f.time_ns = r.i64();
  f.size = r.u64();
  r.bytes(f.digest.data(), f.digest.size());
  f.stored_size = r.u64();
  f.stored_at = r.str();
  f.system_id = r.u64();
  f.flags = r.u32();
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "wal payload"));
  if (event != static_cast<uint8_t>(WalFile::Event::pushed) &&
      event != static_cast<uint8_t>(WalFile::Event::removed))
    return malformed("unknown wal event " + std::to_string(event));
  if (f.name.empty()) return malformed("wal payload without a name");
  f.event = static_cast<WalFile::Event>(event);
  return f;
}

}  // namespace stripeback::catalog
