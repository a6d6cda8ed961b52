// Payloads of the key rotation records (docs/catalog-format.md): KeyWrap (wraps of pieces'
// data keys under a newer key-encryption key) and Rekey (a rekey's intent and end).
#include "catalog/payload.h"
#include "catalog/payload_codec.h"

namespace stripeback::catalog {
namespace {
// A wrap's fixed-size part after the name: version, kdf and scrypt cost, salt, check,
// wrap nonce, wrapped key, in_piece.
constexpr size_t kWrapFixed = 8 + 4 + 4 + 16 + 16 + 12 + 48 + 1;
}  // namespace

Result<EncodedRecord> encode_key_wraps(const KeyWraps& k) {
  if (k.wraps.empty()) return fail(Errc::invalid_argument, "a key wrap record names no piece");
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u64(k.rekey_id);
  w.i64(k.time_ns);
  w.u32(static_cast<uint32_t>(k.wraps.size()));
  for (const KeyWrap& x : k.wraps) {
    SB_TRY(check_id(x.backup_id));
    SB_TRY(check_str(x.piece, "piece name"));
    if (x.kek_version == 0) return fail(Errc::invalid_argument, "key wrap version 0");
    w.u64(x.backup_id);
    w.str(x.piece);
    w.u32(x.kek_version);
    w.u8(x.kdf);
    w.u8(x.log2_n);
    w.u8(x.r);
    w.u8(x.p);
    w.bytes(x.salt.data(), x.salt.size());
    w.bytes(x.check.data(), x.check.size());
    w.bytes(x.wrap_nonce.data(), x.wrap_nonce.size());
    w.bytes(x.wrapped_key.data(), x.wrapped_key.size());
    w.u8(x.in_piece ? 1 : 0);
  }
  return EncodedRecord{RecordType::key_wrap, w.take()};
}

Result<KeyWraps> decode_key_wraps(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  KeyWraps out;
  out.rekey_id = r.u64();
  out.time_ns = r.i64();
  const uint32_t n = r.u32();
  if (n == 0 || n > r.remaining() / (4 + kWrapFixed))
    return malformed("key wrap payload: " + std::to_string(n) + " wraps");
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    KeyWrap x;
    x.backup_id = r.u64();
    x.piece = r.str();
    x.kek_version = r.u32();
    x.kdf = r.u8();
    x.log2_n = r.u8();
    x.r = r.u8();
    x.p = r.u8();
    r.bytes(x.salt.data(), x.salt.size());
    r.bytes(x.check.data(), x.check.size());
    r.bytes(x.wrap_nonce.data(), x.wrap_nonce.size());
    r.bytes(x.wrapped_key.data(), x.wrapped_key.size());
    const uint8_t in_piece = r.u8();
    if (!r.ok()) break;
    SB_TRY(check_decoded_id(x.backup_id));
    if (x.kek_version == 0 || x.piece.empty() || in_piece > 1)
      return malformed("key wrap of '" + x.piece + "' is invalid");
    x.in_piece = in_piece == 1;
    out.wraps.push_back(std::move(x));
  }
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "key wrap payload"));
  return out;
}

Result<EncodedRecord> encode_rekey(const Rekey& k) {
  if (k.id == 0 || k.kek_version < 2)
    return fail(Errc::invalid_argument, "a rekey needs an id and a key version from 2");
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u64(k.id);
  w.u8(k.done ? 1 : 0);
  w.i64(k.time_ns);
  w.u32(k.kek_version);
  w.u32(k.rewrapped);
  w.u32(k.catalog_only);
  w.u32(k.old_format);
  w.u32(k.failed);
  return EncodedRecord{RecordType::rekey, w.take()};
}

Result<Rekey> decode_rekey(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  Rekey out;
  out.id = r.u64();
  const uint8_t done = r.u8();
  out.time_ns = r.i64();
  out.kek_version = r.u32();
  out.rewrapped = r.u32();
  out.catalog_only = r.u32();
  out.old_format = r.u32();
  out.failed = r.u32();
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "rekey payload"));
  if (out.id == 0) return malformed("rekey id 0");
  if (done > 1) return malformed("rekey phase " + std::to_string(done));
  if (out.kek_version < 2) return malformed("rekey to key version " + std::to_string(out.kek_version));
  out.done = done == 1;
  return out;
}

}  // namespace stripeback::catalog
