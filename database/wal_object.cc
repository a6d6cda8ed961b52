#include "database/wal_object.h"

#include <cstring>
#include <memory>

#include "catalog/catalog.h"
#include "engine/format/piece_format.h"
#include "engine/transform/compress.h"
#include "util/bytes.h"
#include "util/crc32c.h"

namespace stripeback::database {
namespace {

constexpr uint8_t kMagic[8] = {'S', 'B', 'W', 'A', 'L', 'O', 'B', '1'};
constexpr uint16_t kVersion = 1;
constexpr size_t kCrcAt = kWalHead - 4;
constexpr uint32_t kKnownFlags = catalog::kWalCompressed | catalog::kWalEncrypted;
// magic, version, flags, two sizes, digest, name length and the longest name, then the CRC.
static_assert(8 + 2 + 2 + 8 + 8 + 16 + 4 + kMaxNameInHead + 4 <= kWalHead);

const uint8_t* u8p(const std::byte* p) { return reinterpret_cast<const uint8_t*>(p); }

std::vector<uint8_t> head_bytes(const std::string& name, const WalObjectInfo& info,
                                uint64_t body_size) {
  util::ByteWriter w;
  w.bytes(kMagic, sizeof kMagic);
  w.u16(kVersion);
  w.u16(static_cast<uint16_t>(info.flags));
  w.u64(info.raw_size);
  w.u64(body_size);
  w.bytes(info.digest.data(), info.digest.size());
  w.str(name);
  std::vector<uint8_t> head = w.take();
  head.resize(kWalHead, 0);
  util::put_le32(head.data() + kCrcAt, util::crc32c(head.data(), kCrcAt));
  return head;
}

struct Head {
  WalObjectInfo info;
  uint64_t body_size = 0;
  std::string name;
};

Result<Head> parse_head(std::span<const std::byte> object, const std::string& shown) {
  auto bad = [&](const std::string& why) {
    return fail(Errc::corrupt, "archived WAL file '" + shown + "' is damaged: " + why);
  };
  if (object.size() < kWalHead) return bad("it is shorter than its head");
  const uint8_t* h = u8p(object.data());
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0) return bad("bad magic");
  if (util::get_le32(h + kCrcAt) != util::crc32c(h, kCrcAt)) return bad("head checksum mismatch");
  util::ByteReader r({h + sizeof kMagic, kCrcAt - sizeof kMagic});
  const uint16_t version = r.u16();
  if (version != kVersion)
    return fail(Errc::unsupported, "archived WAL file '" + shown + "' has version " +
                                       std::to_string(version) + "; this build reads version 1");
  Head out;
  out.info.flags = r.u16();
  out.info.raw_size = r.u64();
  out.body_size = r.u64();
  r.bytes(out.info.digest.data(), out.info.digest.size());
  out.name = r.str(kMaxNameInHead);
  if (!r.ok()) return bad("its name does not fit its head");
  if ((out.info.flags & ~kKnownFlags) != 0) return bad("unknown flags");
  return out;
}

}  // namespace

Result<std::vector<std::byte>> encode_wal_object(const std::string& name,
                                                 std::span<const std::byte> raw, int level,
                                                 engine::Keyring* keys, WalObjectInfo* info,
                                                 const util::Digest* digest) {
  if (name.empty() || name.size() > kMaxNameInHead)
    return fail(Errc::invalid_argument, "'" + name + "' is not a name of the log archive");
  WalObjectInfo i;
  i.raw_size = raw.size();
  i.digest = digest ? *digest : util::digest(raw.data(), raw.size());
  // The body is compressed into a buffer that is not cleared first (only the bytes the
  // compressor writes are touched), then goes into the object after its head in one copy.
  std::unique_ptr<std::byte[]> packed;
  size_t packed_size = 0;
  if (level > 0 && !raw.empty()) {
    engine::Compressor c(level);
    const size_t bound = engine::Compressor::bound(raw.size());
    packed.reset(new std::byte[bound]);
    packed_size = c.compress(raw.data(), raw.size(), packed.get(), bound);
    if (packed_size > 0) i.flags |= catalog::kWalCompressed;
  }
  const std::span<const std::byte> body =
      (i.flags & catalog::kWalCompressed) ? std::span<const std::byte>(packed.get(), packed_size) : raw;
  if (keys) i.flags |= catalog::kWalEncrypted;
  const uint64_t body_size = body.size() + (keys ? engine::kTagSize : 0);
  const std::vector<uint8_t> head = head_bytes(name, i, body_size);
  std::vector<std::byte> out;
  out.reserve(head.size() + (keys ? engine::kBlock : 0) + body_size);
  out.insert(out.end(), reinterpret_cast<const std::byte*>(head.data()),
             reinterpret_cast<const std::byte*>(head.data()) + head.size());
  std::unique_ptr<engine::FrameCipher> cipher;
  if (keys) {
    // The key block of a small object (as the catalog autobackup's): the key in the
    // header, no key slots; the pieces' format version would ask for slot blocks.
    engine::PieceHeader h;
    h.version = engine::kKeyBlockVersion;
    h.name = name;
    SB_ASSIGN(cipher, keys->new_piece(h));
    const size_t at = out.size();
    out.resize(at + engine::kBlock);
    engine::encode_piece_header(h, std::span<std::byte, engine::kBlock>(out.data() + at,
                                                                        engine::kBlock));
  }
  const size_t body_at = out.size();
  out.insert(out.end(), body.begin(), body.end());
  if (cipher) {
    out.resize(out.size() + engine::kTagSize);
    SB_TRY(cipher->seal(out.data() + body_at, body.size(), 0,
                        std::span<const uint8_t>(head.data(), head.size())));
  }
  if (info) *info = i;
  return out;
}

Result<WalObjectInfo> read_wal_head(std::span<const std::byte> object, const std::string& shown) {
  SB_ASSIGN(Head h, parse_head(object, shown));
  return h.info;
}

Result<std::vector<std::byte>> decode_wal_object(const std::string& name,
                                                 std::span<const std::byte> object,
                                                 engine::Keyring* keys, const std::string& shown) {
  auto bad = [&](const std::string& why) {
    return fail(Errc::corrupt, "archived WAL file '" + shown + "' is damaged: " + why);
  };
  SB_ASSIGN(Head h, parse_head(object, shown));
  if (h.name != name) return bad("it holds '" + h.name + "', not '" + name + "'");
  const bool sealed = (h.info.flags & catalog::kWalEncrypted) != 0;
  const size_t body_at = kWalHead + (sealed ? engine::kBlock : 0);
  if (object.size() < body_at || object.size() - body_at != h.body_size)
    return bad("its length does not match its head");
  std::vector<std::byte> body(object.begin() + static_cast<std::ptrdiff_t>(body_at), object.end());
  if (sealed) {
    if (!keys)
      return fail(Errc::invalid_argument, "archived WAL file '" + shown +
                                              "' is encrypted and no key is configured "
                                              "(configure key-file, passphrase-file or "
                                              "passphrase-env)");
    auto ph = engine::decode_piece_header(object.subspan(kWalHead, engine::kBlock));
    if (!ph) return bad(ph.error().what);
    if (ph->name != name) return bad("its key block is another file's");
    if (body.size() < engine::kTagSize) return bad("shorter than its tag");
    SB_ASSIGN(auto cipher, keys->open_piece(*ph, shown));
    if (auto o = cipher->open(body.data(), body.size(), 0,
                              std::span<const uint8_t>(u8p(object.data()), kWalHead));
        !o)
      return bad(o.error().what);
    body.resize(body.size() - engine::kTagSize);
  }
  std::vector<std::byte> raw;
  if ((h.info.flags & catalog::kWalCompressed) != 0) {
    if (h.info.raw_size > (uint64_t{1} << 31)) return bad("its size is impossible");
    raw.resize(h.info.raw_size);
    engine::Decompressor d;
    if (auto r = d.decompress(body.data(), body.size(), raw.data(), raw.size()); !r)
      return bad(r.error().what);
  } else {
    raw = std::move(body);
  }
  if (raw.size() != h.info.raw_size) return bad("its size does not match its head");
  if (util::digest(raw.data(), raw.size()) != h.info.digest)
    return bad("its bytes do not match their digest");
  return raw;
}

}  // namespace stripeback::database
