#include "engine/format/piece_format.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace stripeback::engine {
namespace {

std::vector<std::byte> block() { return std::vector<std::byte>(kBlock); }
std::span<std::byte, kBlock> span_of(std::vector<std::byte>& b) {
  return std::span<std::byte, kBlock>(b.data(), kBlock);
}
// Bytes 10..11 of a piece header block.
size_t header_body_length(const std::vector<std::byte>& b) {
  return static_cast<size_t>(b[10]) | static_cast<size_t>(b[11]) << 8;
}

TEST(PieceFormat, HeaderRoundTrip) {
  PieceHeader h;
  h.backup_id = 42;
  h.channel = 3;
  h.piece_number = 7;
  h.created_ns = 1234567890123;
  h.name = "sb42-c3-p7.sbp";
  auto b = block();
  encode_piece_header(h, span_of(b));
  auto d = decode_piece_header(b);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  EXPECT_EQ(d->backup_id, 42u);
  EXPECT_EQ(d->channel, 3u);
  EXPECT_EQ(d->piece_number, 7u);
  EXPECT_EQ(d->created_ns, 1234567890123);
  EXPECT_EQ(d->name, h.name);
}

TEST(PieceFormat, HeaderDetectsDamage) {
  PieceHeader h;
  h.name = "x";
  auto b = block();
  encode_piece_header(h, span_of(b));
  b[20] ^= std::byte{0x01};
  auto d = decode_piece_header(b);
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().code, Errc::corrupt);
  EXPECT_NE(d.error().what.find("checksum"), std::string::npos);
  auto z = block();
  auto e = decode_piece_header(z);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().what.find("not a stripeback piece"), std::string::npos);
}

TEST(PieceFormat, HeaderRejectsNewerVersion) {
  PieceHeader h;
  h.version = kNewestPieceVersion + 1;
  auto b = block();
  encode_piece_header(h, span_of(b));
  auto d = decode_piece_header(b);
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().code, Errc::unsupported);
  EXPECT_NE(d.error().what.find("version " + std::to_string(kNewestPieceVersion + 1)),
            std::string::npos);
}

TEST(PieceFormat, HeaderCarriesTheCatalogId) {
  PieceHeader h;
  h.backup_id = 3;
  h.catalog_id = 0xfedcba9876543210;
  h.name = "sb3-fedcba9876543210-20240101T000000Z-0a0b-c1-p1.sbp";
  auto b = block();
  encode_piece_header(h, span_of(b));
  auto d = decode_piece_header(b);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  EXPECT_EQ(d->version, kPieceVersion);
  EXPECT_EQ(d->catalog_id, 0xfedcba9876543210u);
  EXPECT_EQ(d->name, h.name);
  // The id follows the name: the body is 8 bytes longer than in version 1.
  auto len = header_body_length(b);
  EXPECT_EQ(len, 64 + 4 + h.name.size() + 8);
}

// Pieces written before catalogs had identities are version 1: read, with catalog id 0,
// and encoded again byte for byte (an encrypted piece's key is bound to its header bytes).
TEST(PieceFormat, Version1HeaderIsStillReadAndReencodedExactly) {
  PieceHeader h;
  h.version = 1;
  h.backup_id = 9;
  h.catalog_id = 0x1111;  // not stored in version 1
  h.name = "sb9-20240101T000000Z-0a0b-c1-p1.sbp";
  auto b = block();
  encode_piece_header(h, span_of(b));
  auto len = header_body_length(b);
  EXPECT_EQ(len, 64 + 4 + h.name.size());
  auto d = decode_piece_header(b);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  EXPECT_EQ(d->version, 1);
  EXPECT_EQ(d->catalog_id, 0u);
  EXPECT_EQ(d->backup_id, 9u);
  auto again = block();
  encode_piece_header(*d, span_of(again));
  EXPECT_EQ(again, b);
}

TEST(PieceFormat, FrameHeaderRoundTripAndEveryBitMatters) {
  FrameHeader h;
  h.type = FrameType::data;
  h.file_id = 5;
  h.sequence = 99;
  h.offset = 1ull << 40;
  h.raw_len = 1 << 20;
  h.stored_len = 1 << 20;
  h.stored_crc = 0xdeadbeef;
  for (size_t i = 0; i < 16; ++i) h.raw_digest[i] = static_cast<uint8_t>(i * 7);
  auto b = block();
  encode_frame_header(h, span_of(b));
  auto d = decode_frame_header(b);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  EXPECT_EQ(d->file_id, 5u);
  EXPECT_EQ(d->sequence, 99u);
  EXPECT_EQ(d->offset, 1ull << 40);
  EXPECT_EQ(d->stored_crc, 0xdeadbeefu);
  EXPECT_EQ(d->raw_digest, h.raw_digest);
  for (size_t bit = 0; bit < kFrameHeaderSize * 8; ++bit) {
    auto c = b;
    c[bit / 8] ^= std::byte(1u << (bit % 8));
    EXPECT_FALSE(decode_frame_header(c).has_value()) << "bit " << bit << " went unnoticed";
  }
}

TEST(PieceFormat, CompressedFlagRoundTripsAndLengthsAreChecked) {
  FrameHeader h;
  h.type = FrameType::data;
  h.raw_len = 1 << 20;
  h.stored_len = 1000;
  h.compressed = true;
  auto b = block();
  encode_frame_header(h, span_of(b));
  auto d = decode_frame_header(b);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  EXPECT_TRUE(d->compressed);
  // A "compressed" frame that is not smaller, or a raw one whose lengths differ, is refused.
  h.stored_len = h.raw_len;
  encode_frame_header(h, span_of(b));
  EXPECT_FALSE(decode_frame_header(b).has_value());
  h.compressed = false;
  h.stored_len = 1000;
  encode_frame_header(h, span_of(b));
  EXPECT_FALSE(decode_frame_header(b).has_value());
}

// Version 5: an unsealed data frame may go without a payload CRC32C (flag bit 2), and
// nothing else may.
TEST(PieceFormat, DigestOnlyFlagRoundTripsOnUnsealedDataFramesOnly) {
  FrameHeader h;
  h.type = FrameType::data;
  h.raw_len = 1 << 20;
  h.stored_len = 1 << 20;
  h.digest_only = true;
  h.raw_digest[3] = 9;
  auto b = block();
  encode_frame_header(h, span_of(b));
  EXPECT_EQ(std::to_integer<int>(b[5]), 4);
  auto d = decode_frame_header(b);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  EXPECT_TRUE(d->digest_only);
  EXPECT_EQ(d->stored_crc, 0u);
  h.compressed = true;
  h.stored_len = 1000;
  encode_frame_header(h, span_of(b));
  ASSERT_TRUE(decode_frame_header(b).has_value());
  EXPECT_TRUE(decode_frame_header(b)->compressed);
  // A checksum beside the flag, a sealed frame, or any other type is refused.
  FrameHeader with_crc = h;
  with_crc.stored_crc = 1;
  encode_frame_header(with_crc, span_of(b));
  EXPECT_FALSE(decode_frame_header(b).has_value());
  FrameHeader sealed = h;
  sealed.sealed = true;
  sealed.stored_len = 1000 + kTagSize;
  encode_frame_header(sealed, span_of(b));
  EXPECT_FALSE(decode_frame_header(b).has_value());
  for (FrameType t : {FrameType::zero, FrameType::file, FrameType::trailer, FrameType::map}) {
    FrameHeader o;
    o.type = t;
    o.digest_only = true;
    encode_frame_header(o, span_of(b));
    EXPECT_FALSE(decode_frame_header(b).has_value()) << static_cast<int>(t);
  }
}

TEST(PieceFormat, OnlyUnsealedDataFramesFromVersion5GoWithoutAPayloadChecksum) {
  for (uint16_t v = kOldestPieceVersion; v < kDigestOnlyPieceVersion; ++v)
    for (FrameType t : {FrameType::data, FrameType::file, FrameType::map, FrameType::trailer})
      EXPECT_TRUE(needs_payload_crc(v, t, false)) << v;
  EXPECT_FALSE(needs_payload_crc(kDigestOnlyPieceVersion, FrameType::data, false));
  EXPECT_TRUE(needs_payload_crc(kDigestOnlyPieceVersion, FrameType::data, true));
  for (FrameType t : {FrameType::file, FrameType::map, FrameType::trailer})
    EXPECT_TRUE(needs_payload_crc(kDigestOnlyPieceVersion, t, false));
  EXPECT_EQ(kPieceVersion, kDigestOnlyPieceVersion);
  EXPECT_EQ(kNewestPieceVersion, kDigestOnlyPieceVersion);
}

TEST(PieceFormat, FooterRoundTripAndDamage) {
  Footer f{8192 * 5, 17, 0x12345678};
  auto b = block();
  encode_footer(f, span_of(b));
  auto d = decode_footer(b);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->trailer_offset, 8192u * 5);
  EXPECT_EQ(d->frames, 17u);
  EXPECT_EQ(d->piece_crc, 0x12345678u);
  b[9] ^= std::byte{0x40};
  EXPECT_FALSE(decode_footer(b).has_value());
}

TEST(PieceFormat, TrailerRoundTrip) {
  Trailer t;
  FileMeta m;
  m.file_id = 0;
  m.path = "/data/users01.dbf";
  m.size = 3 * (1 << 20) + 5;
  m.mode = 0100640;
  m.mtime_ns = 1700000000123456789;
  m.uid = 54321;
  m.gid = 54322;
  m.digest[0] = 9;
  t.files.push_back(m);
  t.extents.push_back({{0, 1 << 20, 4096, 1 << 20, FrameType::data, {}},
                       {1 << 20, 1 << 20, 4096 * 258, 0, FrameType::zero, {}}});
  auto bytes = encode_trailer(t);
  auto d = decode_trailer(bytes);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  ASSERT_EQ(d->files.size(), 1u);
  EXPECT_EQ(d->files[0].path, m.path);
  EXPECT_EQ(d->files[0].mtime_ns, m.mtime_ns);
  EXPECT_EQ(d->files[0].uid, 54321u);
  ASSERT_EQ(d->extents[0].size(), 2u);
  EXPECT_EQ(d->extents[0][1].type, FrameType::zero);
  EXPECT_EQ(d->extents[0][1].frame_offset, 4096u * 258);
  // A truncated trailer is refused, never half-read.
  for (size_t cut : {size_t{0}, size_t{1}, bytes.size() / 2, bytes.size() - 1}) {
    std::vector<uint8_t> t2(bytes.begin(), bytes.begin() + static_cast<long>(cut));
    EXPECT_FALSE(decode_trailer(t2).has_value()) << "cut at " << cut;
  }
}

// Regression (found by fuzz_piece_trailer): the file count was bounded by 60 bytes a
// file, but a file with a short path and no extents takes 56 + path length bytes, so a
// piece holding many empty files with short paths had its trailer refused as corrupt.
TEST(PieceFormat, TrailerOfManyEmptyFilesWithShortPaths) {
  Trailer t;
  for (uint32_t i = 0; i < 40; ++i) {
    FileMeta m;
    m.file_id = i;
    m.path = "/" + std::string(1, static_cast<char>('a' + i % 26));
    t.files.push_back(m);
    t.extents.emplace_back();
  }
  t.files[0].path.clear();  // the smallest entry the encoder writes
  auto d = decode_trailer(encode_trailer(t));
  ASSERT_TRUE(d.has_value()) << d.error().what;
  EXPECT_EQ(d->files.size(), 40u);
  EXPECT_EQ(d->files[39].path, "/n");
}

// Version 3 appends each file's ctime and inode after the map index; versions 2 and 1 are
// still read, and each re-encodes as it was.
TEST(PieceFormat, TrailerVersion3CarriesCtimeAndInodeAndOlderVersionsAreStillRead) {
  Trailer t;
  FileMeta m;
  m.path = "/data/a.dbf";
  m.size = 5 << 20;
  m.ctime_ns = 1764554400123456789;
  m.ino = 0x1234567890;
  t.files.push_back(m);
  t.extents.push_back({{0, 1 << 20, 4096, 1 << 20, FrameType::data, {}}});
  t.maps.push_back({{0, 65536, 80, 4096 * 300, 1300}});
  auto bytes = encode_trailer(t);
  EXPECT_EQ(bytes[0], 3);
  auto d = decode_trailer(bytes);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  EXPECT_EQ(d->version, 3);
  EXPECT_EQ(d->files[0].ctime_ns, m.ctime_ns);
  EXPECT_EQ(d->files[0].ino, m.ino);
  EXPECT_EQ(d->maps[0][0].stored_len, 1300u);
  EXPECT_EQ(encode_trailer(*d), bytes);
  // Version 2 is version 3 without the ctime and inode: read with both 0.
  std::vector<uint8_t> v2(bytes.begin(), bytes.end() - 16);
  v2[0] = 2;
  auto d2 = decode_trailer(v2);
  ASSERT_TRUE(d2.has_value()) << d2.error().what;
  EXPECT_EQ(d2->files[0].ctime_ns, 0);
  EXPECT_EQ(d2->files[0].ino, 0u);
  EXPECT_EQ(encode_trailer(*d2), v2);
  // Cut short inside the ctime and inode: refused.
  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 4);
  EXPECT_FALSE(decode_trailer(cut).has_value());
}

TEST(PieceFormat, TrailerVersion4CarriesTheLockAndVersion3IsWrittenWithoutOne) {
  Trailer t;
  FileMeta m;
  m.path = "/data/a.dbf";
  m.size = 1 << 20;
  t.files.push_back(m);
  t.extents.push_back({{0, 1 << 20, 4096, 1 << 20, FrameType::data, {}}});
  t.maps.push_back({});
  const auto plain = encode_trailer(t);
  EXPECT_EQ(plain[0], 3);
  t.version = kLockedTrailerVersion;
  t.lock_mode = 2;
  t.lock_until_ns = 1796000000123456789;
  auto bytes = encode_trailer(t);
  EXPECT_EQ(bytes[0], 4);
  EXPECT_EQ(bytes.size(), plain.size() + 9);
  auto d = decode_trailer(bytes);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  EXPECT_EQ(d->lock_mode, 2);
  EXPECT_EQ(d->lock_until_ns, t.lock_until_ns);
  EXPECT_EQ(encode_trailer(*d), bytes);
  auto d3 = decode_trailer(plain);
  ASSERT_TRUE(d3.has_value());
  EXPECT_EQ(d3->lock_mode, 0);
  // An unknown mode, or the lock cut short: refused.
  auto bad = bytes;
  bad[bad.size() - 9] = 7;
  EXPECT_FALSE(decode_trailer(bad).has_value());
  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 3);
  EXPECT_FALSE(decode_trailer(cut).has_value());
}

TEST(PieceFormat, TrailerVersion2CarriesTheMapIndexAndVersion1IsStillRead) {
  Trailer t;
  t.version = 2;
  FileMeta m;
  m.path = "/data/a.dbf";
  m.size = 5 << 20;
  t.files.push_back(m);
  t.extents.push_back({{0, 1 << 20, 4096, 1 << 20, FrameType::data, {}}});
  t.maps.push_back({{0, 65536, 80, 4096 * 300, 1300}});
  auto bytes = encode_trailer(t);
  EXPECT_EQ(bytes[0], 2);
  auto d = decode_trailer(bytes);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  ASSERT_EQ(d->maps.size(), 1u);
  ASSERT_EQ(d->maps[0].size(), 1u);
  EXPECT_EQ(d->maps[0][0].unit, 65536u);
  EXPECT_EQ(d->maps[0][0].units, 80u);
  EXPECT_EQ(d->maps[0][0].frame_offset, 4096u * 300);
  EXPECT_EQ(d->maps[0][0].stored_len, 1300u);
  // Version 1 is version 2 without the map index.
  std::vector<uint8_t> v1(bytes.begin(), bytes.end() - 4 - 28);
  v1[0] = 1;
  auto d1 = decode_trailer(v1);
  ASSERT_TRUE(d1.has_value()) << d1.error().what;
  ASSERT_EQ(d1->maps.size(), 1u);
  EXPECT_TRUE(d1->maps[0].empty());
  // A map count larger than the bytes left is refused.
  auto big = bytes;
  big[big.size() - 32] = 0xff;
  EXPECT_FALSE(decode_trailer(big).has_value());
}

TEST(PieceFormat, DigestMapRoundTripAndChecks) {
  DigestMap m{8192, 8192 * 16, {}};
  for (uint8_t i = 0; i < 5; ++i) {
    util::Digest d{};
    d[0] = i;
    d[15] = static_cast<uint8_t>(255 - i);
    m.digests.push_back(d);
  }
  auto bytes = encode_digest_map(m);
  auto d = decode_digest_map(bytes);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  EXPECT_EQ(d->unit, 8192u);
  EXPECT_EQ(d->offset, 8192u * 16);
  EXPECT_EQ(d->digests, m.digests);
  for (size_t cut : {size_t{0}, size_t{5}, bytes.size() - 1}) {
    std::vector<uint8_t> c(bytes.begin(), bytes.begin() + static_cast<long>(cut));
    EXPECT_FALSE(decode_digest_map(c).has_value()) << "cut at " << cut;
  }
  DigestMap odd = m;
  odd.unit = 12288;  // not a power of two
  EXPECT_FALSE(decode_digest_map(encode_digest_map(odd)).has_value());
  DigestMap off = m;
  off.offset = 4096;  // not on a unit boundary
  EXPECT_FALSE(decode_digest_map(encode_digest_map(off)).has_value());
}

TEST(PieceFormat, MapFrameTypeIsKnown) {
  std::array<std::byte, kBlock> b{};
  FrameHeader h;
  h.type = FrameType::map;
  h.file_id = 3;
  h.offset = 1 << 20;
  h.stored_len = 100;
  encode_frame_header(h, b);
  auto d = decode_frame_header(b);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  EXPECT_EQ(d->type, FrameType::map);
  b[4] = std::byte{6};  // one past the last type
  EXPECT_FALSE(decode_frame_header(b).has_value());
}

TEST(PieceFormat, FileMetaRoundTrip) {
  FileMeta m;
  m.file_id = 12;
  m.path = std::string(5000, 'p');
  m.size = 77;
  auto d = decode_file_meta(encode_file_meta(m));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->path, m.path);
  EXPECT_EQ(d->file_id, 12u);
}

TEST(PieceFormat, AllZero) {
  std::vector<std::byte> b(1 << 20);
  EXPECT_TRUE(all_zero(b.data(), b.size()));
  EXPECT_TRUE(all_zero(b.data(), 13));
  b.back() = std::byte{1};
  EXPECT_FALSE(all_zero(b.data(), b.size()));
  EXPECT_TRUE(all_zero(b.data(), b.size() - 1));
  b[3] = std::byte{1};
  EXPECT_FALSE(all_zero(b.data(), 5));
}

TEST(PieceFormat, AlignUp) {
  EXPECT_EQ(align_up(0), 0u);
  EXPECT_EQ(align_up(1), 4096u);
  EXPECT_EQ(align_up(4096), 4096u);
  EXPECT_EQ(align_up(4097), 8192u);
}

}  // namespace
}  // namespace stripeback::engine

namespace stripeback::engine {
namespace {

KeySlot sample_slot(uint64_t generation) {
  KeySlot s;
  s.generation = generation;
  s.wrap.kek_version = 3;
  s.wrap.kdf = Kdf::scrypt;
  s.wrap.log2_n = 17;
  s.wrap.r = 8;
  s.wrap.p = 1;
  s.wrap.salt.fill(0x11);
  s.wrap.check.fill(0x22);
  s.wrap.wrap_nonce.fill(0x33);
  s.wrap.wrapped_key.fill(0x44);
  return s;
}

TEST(PieceFormat, KeySlotRoundTripsAndAZeroBlockIsAnEmptySlot) {
  auto b = block();
  encode_key_slot(sample_slot(5), span_of(b));
  auto d = decode_key_slot(b);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  ASSERT_TRUE(d->has_value());
  EXPECT_EQ((*d)->generation, 5u);
  EXPECT_EQ((*d)->wrap.kek_version, 3u);
  EXPECT_EQ((*d)->wrap.kdf, Kdf::scrypt);
  EXPECT_EQ((*d)->wrap.log2_n, 17);
  EXPECT_EQ((*d)->wrap.salt, sample_slot(5).wrap.salt);
  EXPECT_EQ((*d)->wrap.wrapped_key, sample_slot(5).wrap.wrapped_key);
  auto zero = block();
  auto e = decode_key_slot(zero);
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->has_value());
}

// A torn rewrite of one slot leaves the other: the damaged one is ignored, and only a
// piece with no valid slot at all has lost its key.
TEST(PieceFormat, ADamagedKeySlotIsIgnoredAndNoValidSlotIsCorrupt) {
  std::vector<std::byte> slots(2 * kBlock);
  encode_key_slot(sample_slot(1), std::span<std::byte, kBlock>(slots.data(), kBlock));
  encode_key_slot(sample_slot(2), std::span<std::byte, kBlock>(slots.data() + kBlock, kBlock));
  slots[kBlock + 70] ^= std::byte{1};
  PieceHeader h;
  h.version = kSlottedPieceVersion;
  h.cipher = Cipher::aes256gcm;
  ASSERT_TRUE(read_key_slots(h, slots).has_value());
  ASSERT_TRUE(h.slots[0].has_value());
  EXPECT_EQ(h.slots[0]->generation, 1u);
  EXPECT_FALSE(h.slots[1].has_value());
  slots[70] ^= std::byte{1};
  auto r = read_key_slots(h, slots);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::corrupt);
}

// Version 4 headers of encrypted pieces carry only the nonce prefix; frames start after
// the key slots, and unencrypted pieces keep the version 3 layout.
TEST(PieceFormat, Version4HeaderHoldsOnlyTheNoncePrefixAndFramesFollowTheSlots) {
  PieceHeader h;
  h.version = kSlottedPieceVersion;
  h.cipher = Cipher::aes256gcm;
  h.name = "p.sbp";
  h.crypto.nonce_prefix.fill(7);
  h.crypto.wrapped_key.fill(9);  // not part of a version 4 header
  auto b = block();
  encode_piece_header(h, span_of(b));
  auto d = decode_piece_header(b);
  ASSERT_TRUE(d.has_value()) << d.error().what;
  EXPECT_EQ(d->version, kSlottedPieceVersion);
  EXPECT_EQ(d->crypto.nonce_prefix, h.crypto.nonce_prefix);
  EXPECT_EQ(d->crypto.wrapped_key, (std::array<uint8_t, 48>{}));
  EXPECT_EQ(first_frame_offset(*d), 3u * kBlock);
  PieceHeader plain;
  EXPECT_EQ(first_frame_offset(plain), kBlock);
}

}  // namespace
}  // namespace stripeback::engine
