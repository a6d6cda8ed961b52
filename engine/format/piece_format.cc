#include "engine/format/piece_format.h"

#include <cstdio>
#include <cstring>

#include "util/bytes.h"
#include "util/crc32c.h"

namespace stripeback::engine {
namespace {

constexpr char kPieceMagic[8] = {'S', 'B', 'P', 'I', 'E', 'C', 'E', '1'};
constexpr char kFooterMagic[8] = {'S', 'B', 'F', 'O', 'O', 'T', 'R', '1'};
constexpr char kSlotMagic[8] = {'S', 'B', 'K', 'S', 'L', 'O', 'T', '1'};
constexpr size_t kSlotBody = 116;  // bytes 0..115 of a key slot, then their CRC32C
constexpr uint32_t kFrameMagic = 0x52464253;  // "SBFR"
constexpr size_t kMaxPath = 64 * 1024;
// The smallest trailer entry of a file: file id, path length (empty path), size, mode,
// mtime, uid, gid, digest, extent count. Bounds the file count a trailer may claim.
constexpr size_t kMinTrailerFile = 4 + 4 + 8 + 4 + 8 + 4 + 4 + 16 + 4;
// And of an extent: file offset, raw length, frame offset, stored length, type, digest.
constexpr size_t kTrailerExtent = 8 + 4 + 8 + 4 + 1 + 16;

uint8_t* raw(std::span<std::byte, kBlock> out) {
  std::memset(out.data(), 0, out.size());
  return reinterpret_cast<uint8_t*>(out.data());
}
const uint8_t* raw(std::span<const std::byte> in) {
  return reinterpret_cast<const uint8_t*>(in.data());
}

// Writes `body` into the block followed by its CRC32C; the block holds body + 4 bytes.
void seal(uint8_t* block, const std::vector<uint8_t>& body) {
  std::memcpy(block, body.data(), body.size());
  util::put_le32(block + body.size(), util::crc32c(body.data(), body.size()));
}

Result<size_t> check_seal(const uint8_t* block, size_t body_len, const char* what) {
  uint32_t want = util::get_le32(block + body_len);
  if (util::crc32c(block, body_len) != want)
    return fail(Errc::corrupt, std::string(what) + " checksum mismatch");
  return body_len;
}

}  // namespace

void encode_piece_header(const PieceHeader& h, std::span<std::byte, kBlock> out) {
  uint8_t* p = raw(out);
  util::ByteWriter w;
  w.bytes(kPieceMagic, 8);
  w.u16(h.version);
  w.u16(0);  // header body length, patched below
  w.u32(h.block);
  w.u64(h.backup_id);
  w.u32(h.channel);
  w.u32(h.piece_number);
  w.u32(h.set_number);
  w.u8(static_cast<uint8_t>(h.codec));
  w.u8(static_cast<uint8_t>(h.cipher));
  w.u8(static_cast<uint8_t>(h.hash));
  w.u8(0);
  w.bytes(h.key_id.data(), h.key_id.size());
  w.i64(h.created_ns);
  w.str(h.name.substr(0, 1024));
  if (has_key_slots(h)) {
    w.bytes(h.crypto.nonce_prefix.data(), h.crypto.nonce_prefix.size());
  } else if (h.cipher != Cipher::none) {
    const PieceCrypto& c = h.crypto;
    w.u8(static_cast<uint8_t>(c.kdf));
    w.u8(c.log2_n);
    w.u8(c.r);
    w.u8(c.p);
    w.bytes(c.salt.data(), c.salt.size());
    w.bytes(c.check.data(), c.check.size());
    w.bytes(c.nonce_prefix.data(), c.nonce_prefix.size());
    w.bytes(c.wrap_nonce.data(), c.wrap_nonce.size());
    w.bytes(c.wrapped_key.data(), c.wrapped_key.size());
  }
  if (h.version >= 2) w.u64(h.catalog_id);
  auto body = w.take();
  util::put_le16(body.data() + 10, static_cast<uint16_t>(body.size()));
  seal(p, body);
}

Result<PieceHeader> decode_piece_header(std::span<const std::byte> block) {
  if (block.size() < kBlock) return fail(Errc::corrupt, "piece header is truncated");
  const uint8_t* p = raw(block);
  if (std::memcmp(p, kPieceMagic, 8) != 0)
    return fail(Errc::corrupt, "not a stripeback piece (bad magic)");
  uint16_t version = util::get_le16(p + 8);
  if (version < kOldestPieceVersion || version > kNewestPieceVersion)
    return fail(Errc::unsupported, "piece format version " + std::to_string(version) +
                                       " is not supported (this build reads versions " +
                                       std::to_string(kOldestPieceVersion) + " to " +
                                       std::to_string(kNewestPieceVersion) + ")");
  size_t len = util::get_le16(p + 10);
  if (len < 12 || len + 4 > kBlock) return fail(Errc::corrupt, "piece header length is invalid");
  SB_TRY(check_seal(p, len, "piece header"));
  util::ByteReader r({p + 12, len - 12});
  PieceHeader h;
  h.version = version;
  h.block = r.u32();
  h.backup_id = r.u64();
  h.channel = r.u32();
  h.piece_number = r.u32();
  h.set_number = r.u32();
  h.codec = static_cast<Codec>(r.u8());
  h.cipher = static_cast<Cipher>(r.u8());
  h.hash = static_cast<HashAlg>(r.u8());
  r.u8();
  r.bytes(h.key_id.data(), h.key_id.size());
  h.created_ns = r.i64();
  h.name = r.str(1024);
  if (has_key_slots(h)) {
    r.bytes(h.crypto.nonce_prefix.data(), h.crypto.nonce_prefix.size());
  } else if (h.cipher != Cipher::none) {
    PieceCrypto& c = h.crypto;
    c.kdf = static_cast<Kdf>(r.u8());
    c.log2_n = r.u8();
    c.r = r.u8();
    c.p = r.u8();
    r.bytes(c.salt.data(), c.salt.size());
    r.bytes(c.check.data(), c.check.size());
    r.bytes(c.nonce_prefix.data(), c.nonce_prefix.size());
    r.bytes(c.wrap_nonce.data(), c.wrap_nonce.size());
    r.bytes(c.wrapped_key.data(), c.wrapped_key.size());
  }
  if (version >= 2) h.catalog_id = r.u64();
  if (!r.ok()) return fail(Errc::corrupt, "piece header is malformed");
  if (h.block != kBlock)
    return fail(Errc::unsupported, "piece block size " + std::to_string(h.block) +
                                       " is not supported");
  if (h.codec > Codec::zstd || h.cipher > Cipher::aes256gcm || h.hash != HashAlg::xxh3_128 ||
      (h.cipher != Cipher::none && !has_key_slots(h) &&
       (h.crypto.kdf == Kdf::none || h.crypto.kdf > Kdf::key_file)))
    return fail(Errc::unsupported, "piece uses a codec, cipher or hash this build lacks");
  return h;
}

void encode_frame_header(const FrameHeader& h, std::span<std::byte, kBlock> out) {
  uint8_t* p = raw(out);
  util::put_le32(p, kFrameMagic);
  p[4] = static_cast<uint8_t>(h.type);
  p[5] = static_cast<uint8_t>((h.compressed ? 1 : 0) | (h.sealed ? 2 : 0) |
                              (h.digest_only ? 4 : 0));  // flags
  util::put_le16(p + 6, static_cast<uint16_t>(kFrameHeaderSize));
  util::put_le32(p + 8, h.file_id);
  util::put_le32(p + 12, h.sequence);
  util::put_le64(p + 16, h.offset);
  util::put_le32(p + 24, h.raw_len);
  util::put_le32(p + 28, h.stored_len);
  util::put_le32(p + 32, h.stored_crc);
  std::memcpy(p + 36, h.raw_digest.data(), 16);
  // bytes 52..59 reserved (zero)
  util::put_le32(p + 60, util::crc32c(p, 60));
}

Result<FrameHeader> decode_frame_header(std::span<const std::byte> block) {
  if (block.size() < kFrameHeaderSize) return fail(Errc::corrupt, "frame header is truncated");
  const uint8_t* p = raw(block);
  if (util::get_le32(p) != kFrameMagic) return fail(Errc::corrupt, "bad frame magic");
  if (util::crc32c(p, 60) != util::get_le32(p + 60))
    return fail(Errc::corrupt, "frame header checksum mismatch");
  FrameHeader h;
  h.type = static_cast<FrameType>(p[4]);
  if (h.type < FrameType::data || h.type > FrameType::map)
    return fail(Errc::corrupt, "unknown frame type " + std::to_string(p[4]));
  h.compressed = (p[5] & 1) != 0;
  h.sealed = (p[5] & 2) != 0;
  h.digest_only = (p[5] & 4) != 0;
  if ((p[5] & ~7) != 0) return fail(Errc::unsupported, "frame uses unknown flags");
  h.file_id = util::get_le32(p + 8);
  h.sequence = util::get_le32(p + 12);
  h.offset = util::get_le64(p + 16);
  h.raw_len = util::get_le32(p + 24);
  h.stored_len = util::get_le32(p + 28);
  h.stored_crc = util::get_le32(p + 32);
  std::memcpy(h.raw_digest.data(), p + 36, 16);
  if (h.sealed && (h.type == FrameType::zero || h.stored_len < kTagSize))
    return fail(Errc::corrupt, "sealed frame is inconsistent");
  uint32_t payload = h.stored_len - (h.sealed ? kTagSize : 0);
  if (h.type == FrameType::data && (h.compressed ? payload >= h.raw_len : payload != h.raw_len))
    return fail(Errc::corrupt, "frame lengths are inconsistent");
  if (h.compressed && h.type != FrameType::data)
    return fail(Errc::corrupt, "only data frames may be compressed");
  if (h.digest_only && (h.type != FrameType::data || h.sealed || h.stored_crc != 0))
    return fail(Errc::corrupt, "only unsealed data frames may go without a payload checksum");
  return h;
}

void encode_footer(const Footer& f, std::span<std::byte, kBlock> out) {
  uint8_t* p = raw(out);
  util::ByteWriter w;
  w.bytes(kFooterMagic, 8);
  w.u64(f.trailer_offset);
  w.u32(f.frames);
  w.u32(f.piece_crc);
  seal(p, w.take());
}

void encode_key_slot(const KeySlot& s, std::span<std::byte, kBlock> out) {
  uint8_t* p = raw(out);
  const PieceCrypto& c = s.wrap;
  util::ByteWriter w;
  w.bytes(kSlotMagic, 8);
  w.u64(s.generation);
  w.u32(c.kek_version);
  w.u8(static_cast<uint8_t>(c.kdf));
  w.u8(c.log2_n);
  w.u8(c.r);
  w.u8(c.p);
  w.bytes(c.salt.data(), c.salt.size());
  w.bytes(c.check.data(), c.check.size());
  w.bytes(c.wrap_nonce.data(), c.wrap_nonce.size());
  w.bytes(c.wrapped_key.data(), c.wrapped_key.size());
  seal(p, w.take());
}

Result<std::optional<KeySlot>> decode_key_slot(std::span<const std::byte> block) {
  if (block.size() < kBlock) return fail(Errc::corrupt, "key slot is truncated");
  const uint8_t* p = raw(block);
  if (all_zero(block.data(), kBlock)) return std::optional<KeySlot>();
  if (std::memcmp(p, kSlotMagic, 8) != 0) return fail(Errc::corrupt, "key slot has a bad magic");
  SB_TRY(check_seal(p, kSlotBody, "key slot"));
  util::ByteReader r({p + 8, kSlotBody - 8});
  KeySlot s;
  PieceCrypto& c = s.wrap;
  s.generation = r.u64();
  c.kek_version = r.u32();
  c.kdf = static_cast<Kdf>(r.u8());
  c.log2_n = r.u8();
  c.r = r.u8();
  c.p = r.u8();
  r.bytes(c.salt.data(), c.salt.size());
  r.bytes(c.check.data(), c.check.size());
  r.bytes(c.wrap_nonce.data(), c.wrap_nonce.size());
  r.bytes(c.wrapped_key.data(), c.wrapped_key.size());
  if (!r.ok() || s.generation == 0 || c.kek_version == 0)
    return fail(Errc::corrupt, "key slot is malformed");
  if (c.kdf == Kdf::none || c.kdf > Kdf::key_file)
    return fail(Errc::unsupported, "key slot uses a key derivation this build lacks");
  return std::optional<KeySlot>(s);
}

Result<void> read_key_slots(PieceHeader& h, std::span<const std::byte> blocks) {
  if (blocks.size() < size_t{kBlock} * kKeySlots)
    return fail(Errc::corrupt, "key slots are truncated");
  bool any = false;
  for (uint32_t i = 0; i < kKeySlots; ++i) {
    auto s = decode_key_slot(blocks.subspan(size_t{kBlock} * i, kBlock));
    h.slots[i] = s ? *s : std::nullopt;
    if (s && *s) any = true;
    else if (!s && s.error().code == Errc::unsupported) return s.error();
  }
  if (!any) return fail(Errc::corrupt, "no key slot holds the piece's data key");
  return ok();
}

std::string checksum_hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

Result<Footer> decode_footer(std::span<const std::byte> block) {
  if (block.size() < kBlock) return fail(Errc::corrupt, "piece footer is truncated");
  const uint8_t* p = raw(block);
  if (std::memcmp(p, kFooterMagic, 8) != 0)
    return fail(Errc::corrupt, "piece footer missing (piece incomplete or truncated)");
  SB_TRY(check_seal(p, 24, "piece footer"));
  Footer f;
  f.trailer_offset = util::get_le64(p + 8);
  f.frames = util::get_le32(p + 16);
  f.piece_crc = util::get_le32(p + 20);
  return f;
}

namespace {
void put_meta(util::ByteWriter& w, const FileMeta& m) {
  w.u32(m.file_id);
  w.str(m.path);
  w.u64(m.size);
  w.u32(m.mode);
  w.i64(m.mtime_ns);
  w.u32(m.uid);
  w.u32(m.gid);
  w.bytes(m.digest.data(), m.digest.size());
}
FileMeta get_meta(util::ByteReader& r) {
  FileMeta m;
  m.file_id = r.u32();
  m.path = r.str(kMaxPath);
  m.size = r.u64();
  m.mode = r.u32();
  m.mtime_ns = r.i64();
  m.uid = r.u32();
  m.gid = r.u32();
  r.bytes(m.digest.data(), m.digest.size());
  return m;
}
}  // namespace

std::vector<uint8_t> encode_file_meta(const FileMeta& m) {
  util::ByteWriter w;
  w.u8(1);  // record version
  put_meta(w, m);
  return w.take();
}

Result<FileMeta> decode_file_meta(std::span<const uint8_t> payload) {
  util::ByteReader r(payload);
  if (r.u8() != 1) return fail(Errc::corrupt, "file record has an unknown version");
  FileMeta m = get_meta(r);
  if (!r.ok()) return fail(Errc::corrupt, "file record is malformed");
  return m;
}

std::vector<uint8_t> encode_trailer(const Trailer& t) {
  util::ByteWriter w;
  // Trailer version: 2 adds the map index after the files, 3 each file's ctime and inode
  // after that.
  w.u8(t.version);
  w.u32(static_cast<uint32_t>(t.files.size()));
  for (size_t i = 0; i < t.files.size(); ++i) {
    put_meta(w, t.files[i]);
    const auto& ex = t.extents[i];
    w.u32(static_cast<uint32_t>(ex.size()));
    for (const Extent& e : ex) {
      w.u64(e.file_offset);
      w.u32(e.raw_len);
      w.u64(e.frame_offset);
      w.u32(e.stored_len);
      w.u8(static_cast<uint8_t>(e.type));
      w.bytes(e.raw_digest.data(), e.raw_digest.size());
    }
  }
  for (size_t i = 0; t.version != 1 && i < t.files.size(); ++i) {
    const auto* maps = i < t.maps.size() ? &t.maps[i] : nullptr;
    w.u32(maps ? static_cast<uint32_t>(maps->size()) : 0);
    if (!maps) continue;
    for (const MapRef& m : *maps) {
      w.u64(m.file_offset);
      w.u32(m.unit);
      w.u32(m.units);
      w.u64(m.frame_offset);
      w.u32(m.stored_len);
    }
  }
  for (size_t i = 0; t.version >= 3 && i < t.files.size(); ++i) {
    w.i64(t.files[i].ctime_ns);
    w.u64(t.files[i].ino);
  }
  if (t.version >= kLockedTrailerVersion) {
    w.u8(t.lock_mode);
    w.i64(t.lock_until_ns);
  }
  return w.take();
}

std::vector<uint8_t> encode_digest_map(const DigestMap& m) {
  util::ByteWriter w;
  w.u8(1);  // map version
  w.u32(m.unit);
  w.u64(m.offset);
  w.u32(static_cast<uint32_t>(m.digests.size()));
  for (const auto& d : m.digests) w.bytes(d.data(), d.size());
  return w.take();
}

Result<DigestMap> decode_digest_map(std::span<const uint8_t> payload) {
  util::ByteReader r(payload);
  if (r.u8() != 1) return fail(Errc::corrupt, "digest map has an unknown version");
  DigestMap m;
  m.unit = r.u32();
  m.offset = r.u64();
  uint32_t n = r.u32();
  if (!r.ok() || n != r.remaining() / 16 || r.remaining() % 16 != 0)
    return fail(Errc::corrupt, "digest map is malformed");
  if (m.unit < 4096 || (m.unit & (m.unit - 1)) != 0 || m.offset % m.unit != 0)
    return fail(Errc::corrupt, "digest map has an invalid change unit " + std::to_string(m.unit));
  m.digests.resize(n);
  for (auto& d : m.digests) r.bytes(d.data(), d.size());
  if (!r.ok()) return fail(Errc::corrupt, "digest map is malformed");
  return m;
}

Result<Trailer> decode_trailer(std::span<const uint8_t> payload) {
  util::ByteReader r(payload);
  const uint8_t version = r.u8();
  if (version < 1 || version > kLockedTrailerVersion)
    return fail(Errc::corrupt, "trailer has an unknown version");
  Trailer t;
  t.version = version;
  uint32_t n = r.u32();
  // Bound the count by the payload before reserving.
  if (n > payload.size() / kMinTrailerFile)
    return fail(Errc::corrupt, "trailer file count is invalid");
  t.files.reserve(n);
  t.extents.resize(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    t.files.push_back(get_meta(r));
    uint32_t ne = r.u32();
    if (ne > r.remaining() / kTrailerExtent)
      return fail(Errc::corrupt, "trailer extent count is invalid");
    auto& ex = t.extents[i];
    ex.resize(ne);
    for (Extent& e : ex) {
      e.file_offset = r.u64();
      e.raw_len = r.u32();
      e.frame_offset = r.u64();
      e.stored_len = r.u32();
      e.type = static_cast<FrameType>(r.u8());
      r.bytes(e.raw_digest.data(), e.raw_digest.size());
    }
  }
  t.maps.resize(n);
  if (version >= 2) {
    constexpr size_t kMapRef = 8 + 4 + 4 + 8 + 4;
    for (uint32_t i = 0; i < n && r.ok(); ++i) {
      uint32_t nm = r.u32();
      if (nm > r.remaining() / kMapRef) return fail(Errc::corrupt, "trailer map count is invalid");
      auto& maps = t.maps[i];
      maps.resize(nm);
      for (MapRef& m : maps) {
        m.file_offset = r.u64();
        m.unit = r.u32();
        m.units = r.u32();
        m.frame_offset = r.u64();
        m.stored_len = r.u32();
      }
    }
  }
  for (uint32_t i = 0; version >= 3 && i < n && r.ok(); ++i) {
    t.files[i].ctime_ns = r.i64();
    t.files[i].ino = r.u64();
  }
  if (version >= kLockedTrailerVersion) {
    t.lock_mode = r.u8();
    t.lock_until_ns = r.i64();
    if (r.ok() && (t.lock_mode < 1 || t.lock_mode > 2))
      return fail(Errc::corrupt, "trailer has an unknown lock mode");
  }
  if (!r.ok()) return fail(Errc::corrupt, "trailer is malformed");
  return t;
}

void PieceChecksum::add_piece_header(std::span<const std::byte> block) {
  crc_ = util::crc32c_extend(crc_, block.data(), block.size());
}

void PieceChecksum::add_frame_header(std::span<const std::byte> block) {
  crc_ = util::crc32c_extend(crc_, block.data(), kFrameHeaderSize);
}

bool all_zero(const std::byte* p, size_t n) { return util::all_zero(p, n); }

}  // namespace stripeback::engine
