// Payloads of the media management records: settings, crosschecks, deletions, resumes,
// locks and keeps.
#include <algorithm>
#include <string>

#include "catalog/payload.h"
#include "catalog/payload_codec.h"

namespace stripeback::catalog {

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
    // Entries name pieces in increasing order, each once (as encode_crosscheck writes them).
    uint64_t next = 0;
    for (uint32_t k = 0; k < damaged && r.ok(); ++k) {
      const uint32_t i = r.u32();
      std::string what = r.str();
      const uint32_t files = r.u32();
      if (!r.ok()) break;  // cut short: check_end() below says so
      if (i >= out.pieces.size() || i < next || files > r.remaining() / 4)
        return malformed("crosscheck damage entry out of range");
      next = uint64_t{i} + 1;
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

Result<EncodedRecord> encode_lock(const Lock& l) {
  SB_TRY(check_id(l.backup_id));
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u64(l.backup_id);
  w.i64(l.time_ns);
  w.u8(static_cast<uint8_t>(l.retention.mode));
  w.i64(l.retention.until_ns);
  return EncodedRecord{RecordType::lock, w.take()};
}

Result<Lock> decode_lock(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  Lock out;
  out.backup_id = r.u64();
  out.time_ns = r.i64();
  const uint8_t mode = r.u8();
  out.retention.until_ns = r.i64();
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "lock payload"));
  if (mode != static_cast<uint8_t>(storage::Retention::Mode::governance) &&
      mode != static_cast<uint8_t>(storage::Retention::Mode::compliance))
    return malformed("unknown lock mode " + std::to_string(mode));
  out.retention.mode = static_cast<storage::Retention::Mode>(mode);
  SB_TRY(check_decoded_id(out.backup_id));
  return out;
}

Result<EncodedRecord> encode_keep(const Keep& k) {
  SB_TRY(check_id(k.backup_id));
  if (k.kind != Keep::Kind::until && k.kind != Keep::Kind::forever &&
      k.kind != Keep::Kind::cleared)
    return fail(Errc::invalid_argument, "catalog keep record of unknown kind");
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u64(k.backup_id);
  w.i64(k.time_ns);
  w.u8(static_cast<uint8_t>(k.kind));
  w.i64(k.kind == Keep::Kind::until ? k.until_ns : 0);
  return EncodedRecord{RecordType::keep, w.take()};
}

Result<Keep> decode_keep(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  Keep out;
  out.backup_id = r.u64();
  out.time_ns = r.i64();
  const uint8_t kind = r.u8();
  out.until_ns = r.i64();
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "keep payload"));
  if (kind < static_cast<uint8_t>(Keep::Kind::until) ||
      kind > static_cast<uint8_t>(Keep::Kind::cleared))
    return malformed("unknown keep kind " + std::to_string(kind));
  out.kind = static_cast<Keep::Kind>(kind);
  if (out.kind != Keep::Kind::until && out.until_ns != 0)
    return malformed("keep record of kind " + std::to_string(kind) + " with a date");
  SB_TRY(check_decoded_id(out.backup_id));
  return out;
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

}  // namespace stripeback::catalog
