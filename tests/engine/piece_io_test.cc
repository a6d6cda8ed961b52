// PieceWriter and PieceReader together on a real file: a piece written frame by frame
// reads back with the same index, and damage anywhere is reported with piece and offset.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <set>
#include <vector>

#include "catalog/catalog.h"
#include "engine/media/catalog_rebuild.h"
#include "engine/transform/crypto.h"
#include "engine/format/piece_name.h"
#include "engine/pieces/piece_reader.h"
#include "engine/pieces/piece_writer.h"
#include "backends/local/local_storage.h"
#include "tests/support/temp_dir.h"
#include "util/crc32c.h"

namespace stripeback::engine {
namespace {

struct Written {
  std::string path;
  std::vector<uint8_t> data;  // the file's bytes
};

// Writes a piece holding one file of `size` bytes whose second MiB is zeros.
// `path`: the file's path as the trailer records it (a forged one, in some tests).
Written write_piece(const std::string& dir, uint64_t size, Keyring* keys = nullptr,
                    const std::string& name = "test.sbp", uint16_t version = kPieceVersion,
                    const std::string& path = "/src/file.dbf") {
  Written w;
  w.data.resize(size);
  for (size_t i = 0; i < size; ++i) w.data[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  if (size > (2u << 20)) std::memset(w.data.data() + (1 << 20), 0, 1 << 20);
  PieceHeader h;
  h.backup_id = 1;
  h.channel = 1;
  h.piece_number = 1;
  h.name = name;
  h.version = version;
  h.catalog_id = 0x0123456789abcdef;
  auto& st = io::local_storage();
  auto file = st.create(storage::Location::local(dir + "/" + name), {false, 0640});
  EXPECT_TRUE(file.has_value());
  auto pw = PieceWriter::start(std::move(*file), st.caps(), h, keys);
  EXPECT_TRUE(pw.has_value());
  auto& writer = **pw;
  auto write = [&](const std::byte* p, size_t n, uint64_t off) {
    EXPECT_TRUE(writer.file().write_at(p, n, off).has_value());
  };
  auto head = writer.header_block();
  EXPECT_TRUE(head.has_value());
  write(head->block->data, head->placement.length, head->placement.offset);
  FileMeta m;
  m.path = path;
  m.size = size;
  uint32_t id = writer.add_file(m);
  auto placed = writer.file_frame(id);
  EXPECT_TRUE(placed.has_value());
  const FramePlacement& fp = placed->placement;
  write(placed->block->data, fp.length, fp.offset);
  auto buf = AlignedBlock::make(2 * kBlock + (1 << 20));  // room for a tag after the data
  for (uint64_t off = 0; off < size; off += 1 << 20) {
    auto n = static_cast<uint32_t>(std::min<uint64_t>(1 << 20, size - off));
    std::memcpy(buf->data + kBlock, w.data.data() + off, n);
    FrameHeader fh;
    fh.type = FrameType::data;
    fh.file_id = id;
    fh.offset = off;
    fh.raw_len = n;
    auto f = encode_frame(fh, writer.next(), {buf->data, nullptr, 0},
                          {nullptr, writer.cipher(), writer.version()});
    EXPECT_TRUE(f.has_value());
    EXPECT_EQ(f->header.type, all_zero(buf->data + kBlock, n) ? FrameType::zero : FrameType::data);
    FramePlacement p = writer.add(*f);
    write(f->block, p.length, p.offset);
  }
  uint32_t crc = 0;
  auto tail = writer.trailer_block(&crc);
  EXPECT_TRUE(tail.has_value());
  write(tail->block->data, tail->placement.length, tail->placement.offset);
  EXPECT_TRUE(writer.complete().has_value());
  w.path = dir + "/" + name;
  return w;
}

TEST(PieceIo, WriteThenReadBack) {
  testing::TempDir dir;
  auto w = write_piece(dir.path(), 3 * (1 << 20) + 12345);
  auto r = PieceReader::open(w.path, io::Direct::no);
  ASSERT_TRUE(r.has_value()) << r.error().what;
  const auto& pr = **r;
  ASSERT_EQ(pr.trailer().files.size(), 1u);
  EXPECT_EQ(pr.find_file("/src/file.dbf"), 0);
  EXPECT_EQ(pr.find_file("/src/other"), -1);
  const auto& ex = pr.trailer().extents[0];
  ASSERT_EQ(ex.size(), 4u);
  EXPECT_EQ(ex[1].type, FrameType::zero);
  EXPECT_EQ(ex[3].raw_len, 12345u);
  // Every data frame verifies and holds the original bytes.
  auto buf = AlignedBlock::make(kBlock + (1 << 20));
  for (const Extent& e : ex) {
    size_t len = kBlock + align_up(e.stored_len);
    ASSERT_EQ(*pr.file()->read_at(buf->data, len, e.frame_offset), len);
    ASSERT_TRUE(verify_frame(buf->data, e, 0, pr.path(), "/src/file.dbf").has_value());
    if (e.type == FrameType::data) {
      EXPECT_EQ(std::memcmp(buf->data + kBlock, w.data.data() + e.file_offset, e.raw_len), 0);
    }
  }
}

TEST(PieceIo, FlippedPayloadByteIsReportedWithPieceOffsetAndFile) {
  testing::TempDir dir;
  auto w = write_piece(dir.path(), 3 * (1 << 20));
  auto r = PieceReader::open(w.path, io::Direct::no);
  ASSERT_TRUE(r.has_value());
  const Extent e = (*r)->trailer().extents[0][0];
  uint64_t at = e.frame_offset + kBlock + 1000;
  {
    int fd = ::open(w.path.c_str(), O_RDWR);
    char c;
    ASSERT_EQ(::pread(fd, &c, 1, static_cast<off_t>(at)), 1);
    c = static_cast<char>(c ^ 0x10);
    ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(at)), 1);
    ::close(fd);
  }
  auto buf = AlignedBlock::make(kBlock + (1 << 20));
  size_t len = kBlock + align_up(e.stored_len);
  ASSERT_EQ(*(*r)->file()->read_at(buf->data, len, e.frame_offset), len);
  auto v = verify_frame(buf->data, e, 0, w.path, "/src/file.dbf");
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code, Errc::corrupt);
  EXPECT_NE(v.error().what.find(w.path), std::string::npos) << v.error().what;
  EXPECT_NE(v.error().what.find(std::to_string(e.frame_offset + kBlock)), std::string::npos)
      << v.error().what;
  EXPECT_NE(v.error().what.find("/src/file.dbf"), std::string::npos);
}

// The frames of a piece, from its index, read back and decoded.
std::vector<std::pair<Extent, FrameHeader>> frames_of(const std::string& path, Keyring* keys) {
  std::vector<std::pair<Extent, FrameHeader>> out;
  auto r = PieceReader::open(path, io::Direct::no, keys);
  EXPECT_TRUE(r.has_value()) << r.error().what;
  if (!r) return out;
  auto buf = AlignedBlock::make(kBlock);
  for (const Extent& e : (*r)->trailer().extents[0]) {
    EXPECT_EQ(*(*r)->file()->read_at(buf->data, kBlock, e.frame_offset), kBlock);
    auto h = decode_frame_header({buf->data, kBlock});
    EXPECT_TRUE(h.has_value());
    if (h) out.emplace_back(e, *h);
  }
  return out;
}

// Version 5 data frames carry no payload CRC32C (their digest covers the payload); a
// version 3 piece written by the same code keeps one in every frame.
TEST(PieceIo, Version5DataFramesHaveNoPayloadChecksumAndVersion3OnesDo) {
  testing::TempDir dir;
  auto v5 = write_piece(dir.path(), 2 * (1 << 20) + 777, nullptr, "v5.sbp");
  auto v3 = write_piece(dir.path(), 2 * (1 << 20) + 777, nullptr, "v3.sbp", kMapPieceVersion);
  size_t data = 0;
  for (const auto& [e, h] : frames_of(v5.path, nullptr)) {
    if (h.type != FrameType::data) continue;
    ++data;
    EXPECT_TRUE(h.digest_only);
    EXPECT_EQ(h.stored_crc, 0u);
  }
  EXPECT_EQ(data, 2u);
  for (const auto& [e, h] : frames_of(v3.path, nullptr)) {
    if (h.type != FrameType::data) continue;
    EXPECT_FALSE(h.digest_only);
    EXPECT_NE(h.stored_crc, 0u);
  }
  auto r = PieceReader::open(v3.path, io::Direct::no);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ((*r)->header().version, kMapPieceVersion);
}

// A flipped payload byte: a version 3 frame fails its CRC32C, a version 5 frame (no CRC32C)
// its digest; both name the piece, the payload's offset and the file.
TEST(PieceIo, FlippedPayloadByteOfAFrameWithOrWithoutChecksumIsRejected) {
  testing::TempDir dir;
  for (uint16_t version : {kMapPieceVersion, kPieceVersion}) {
    const std::string name = "v" + std::to_string(version) + ".sbp";
    auto w = write_piece(dir.path(), 2 * (1 << 20), nullptr, name, version);
    auto r = PieceReader::open(w.path, io::Direct::no);
    ASSERT_TRUE(r.has_value());
    const Extent e = (*r)->trailer().extents[0][0];
    ASSERT_EQ(e.type, FrameType::data);
    for (uint64_t at : {e.frame_offset + kBlock, e.frame_offset + kBlock + e.stored_len - 1}) {
      auto buf = AlignedBlock::make(kBlock + (1 << 20));
      size_t len = kBlock + align_up(e.stored_len);
      ASSERT_EQ(*(*r)->file()->read_at(buf->data, len, e.frame_offset), len);
      buf->data[at - e.frame_offset] ^= std::byte{0x01};
      auto v = verify_frame(buf->data, e, 0, w.path, "/src/file.dbf");
      ASSERT_FALSE(v.has_value()) << "version " << version << ", offset " << at;
      EXPECT_EQ(v.error().code, Errc::corrupt);
      EXPECT_NE(v.error().what.find(version == kPieceVersion ? "data digest mismatch"
                                                             : "data checksum mismatch"),
                std::string::npos)
          << v.error().what;
      EXPECT_NE(v.error().what.find("at offset " + std::to_string(e.frame_offset + kBlock)),
                std::string::npos)
          << v.error().what;
      EXPECT_NE(v.error().what.find("/src/file.dbf"), std::string::npos);
    }
  }
}

TEST(PieceIo, TruncatedPieceIsRefused) {
  testing::TempDir dir;
  auto w = write_piece(dir.path(), 2 * (1 << 20));
  ASSERT_EQ(::truncate(w.path.c_str(), static_cast<off_t>(3 * kBlock + (1 << 20))), 0);
  auto r = PieceReader::open(w.path, io::Direct::no);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::corrupt);
  EXPECT_NE(r.error().what.find(w.path), std::string::npos) << r.error().what;
}

// Pieces whose trailers name hostile paths ('..', relative, empty, a NUL): a rebuild leaves
// those files out, says which, and keeps the backup's safe file restorable.
TEST(PieceIo, RebuildLeavesOutFilesWithHostilePathsAndSaysSo) {
  testing::TempDir dir;
  const uint64_t catalog_id = 0x0123456789abcdef;
  const std::string media = dir.path() + "/media";
  ASSERT_EQ(::mkdir(media.c_str(), 0755), 0);
  const std::string stamp = make_piece_stamp();
  const std::vector<std::string> paths{"/src/good.dbf", "/src/../../etc/evil", "relative/x", "",
                                       std::string("/src/a\0b", 8)};
  for (uint32_t i = 0; i < paths.size(); ++i)
    write_piece(media, 4096, nullptr, piece_name(1, catalog_id, stamp, i + 1, 1), kPieceVersion,
                paths[i]);
  auto cat = catalog::Catalog::open(dir.path() + "/cat", catalog::Create::yes, io::local_storage());
  ASSERT_TRUE(cat.has_value()) << cat.error().what;
  RebuildOptions o;
  o.media = {media};
  o.catalog_id = catalog_id;
  o.use_autobackup = false;
  auto rep = rebuild_catalog(**cat, o);
  ASSERT_TRUE(rep.has_value()) << rep.error().what;
  auto backups = (*cat)->backups();
  ASSERT_EQ(backups.size(), 1u);
  ASSERT_EQ(backups[0].files.size(), 1u);
  EXPECT_EQ(backups[0].files[0].path, "/src/good.dbf");
  EXPECT_EQ(backups[0].end.status, catalog::BackupStatus::partial);
  EXPECT_NE(backups[0].end.message.find("not a safe absolute path"), std::string::npos)
      << backups[0].end.message;
}

TEST(PieceIo, HeaderTellsTheCatalog) {
  testing::TempDir dir;
  auto w = write_piece(dir.path(), 1 << 20);
  auto r = PieceReader::open(w.path, io::Direct::no);
  ASSERT_TRUE(r.has_value()) << r.error().what;
  EXPECT_EQ((*r)->header().version, kPieceVersion);
  EXPECT_EQ((*r)->header().catalog_id, 0x0123456789abcdefu);
}

TEST(PieceIo, CreateNeverReplacesAPiece) {
  testing::TempDir dir;
  auto w = write_piece(dir.path(), 1 << 20);
  PieceHeader h;
  h.name = "test.sbp";
  auto again = io::local_storage().create(storage::Location::local(dir.path() + "/test.sbp"), {});
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, Errc::exists);
  EXPECT_NE(again.error().what.find("test.sbp"), std::string::npos);
  EXPECT_TRUE(PieceReader::open(w.path, io::Direct::no).has_value());
}


// --- encrypted pieces ---

std::shared_ptr<Keyring> key_file_keyring(const std::string& dir, const std::string& name) {
  std::string path = dir + "/" + name;
  if (::access(path.c_str(), F_OK) != 0) {
    EXPECT_TRUE(generate_key_file(path).has_value());
  }
  auto k = Keyring::load({"", "", path});
  EXPECT_TRUE(k.has_value());
  EXPECT_TRUE((*k)->start_job().has_value());
  return *k;
}

// Reads the frame of extent `e` into `buf` and checks it with the piece's cipher.
Result<const std::byte*> read_and_verify(const PieceReader& pr, const Extent& e, AlignedBlock& buf) {
  size_t len = kBlock + align_up(e.stored_len);
  EXPECT_EQ(*pr.file()->read_at(buf.data, len, e.frame_offset), len);
  return verify_frame(buf.data, e, 0, pr.path(), "/src/file.dbf", nullptr, nullptr, pr.cipher());
}

std::vector<std::byte> bytes_at(const std::string& path, uint64_t off, size_t n) {
  std::vector<std::byte> v(n);
  int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_EQ(::pread(fd, v.data(), n, static_cast<off_t>(off)), static_cast<ssize_t>(n));
  ::close(fd);
  return v;
}

void put_bytes(const std::string& path, uint64_t off, const std::vector<std::byte>& v) {
  int fd = ::open(path.c_str(), O_WRONLY);
  EXPECT_EQ(::pwrite(fd, v.data(), v.size(), static_cast<off_t>(off)),
            static_cast<ssize_t>(v.size()));
  ::close(fd);
}

TEST(EncryptedPiece, ReadsBackWithTheKeyAndHidesTheData) {
  testing::TempDir dir;
  auto keys = key_file_keyring(dir.path(), "k");
  auto w = write_piece(dir.path(), 3 * (1 << 20) + 12345, keys.get());
  // Neither data nor the file name appear in the piece.
  std::ifstream in(w.path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all.find("/src/file.dbf"), std::string::npos);
  EXPECT_EQ(all.find(std::string(reinterpret_cast<const char*>(w.data.data()) + 5000, 64)),
            std::string::npos);

  auto reader = Keyring::load({"", "", dir.path() + "/k"});
  ASSERT_TRUE(reader.has_value());
  auto r = PieceReader::open(w.path, io::Direct::no, reader->get());
  ASSERT_TRUE(r.has_value()) << r.error().what;
  const auto& pr = **r;
  EXPECT_EQ(pr.header().cipher, Cipher::aes256gcm);
  EXPECT_EQ(pr.header().version, kSlottedPieceVersion);
  EXPECT_EQ(pr.find_file("/src/file.dbf"), 0);
  // Sealed frames keep their payload CRC32C: a deep crosscheck checks them without the key.
  for (const auto& [e, h] : frames_of(w.path, reader->get())) {
    if (h.type == FrameType::data) {
      EXPECT_TRUE(h.sealed && !h.digest_only && h.stored_crc != 0);
    }
  }
  auto buf = AlignedBlock::make(2 * kBlock + (1 << 20));
  for (const Extent& e : pr.trailer().extents[0]) {
    auto v = read_and_verify(pr, e, *buf);
    ASSERT_TRUE(v.has_value()) << v.error().what;
    if (e.type == FrameType::data) {
      EXPECT_EQ(std::memcmp(*v, w.data.data() + e.file_offset, e.raw_len), 0);
    }
  }
}

// Version 1 pieces (no catalog id) written with and without encryption read back whole.
TEST(EncryptedPiece, Version1PiecesStillReadBack) {
  testing::TempDir dir;
  auto keys = key_file_keyring(dir.path(), "k");
  for (Keyring* k : {static_cast<Keyring*>(nullptr), keys.get()}) {
    std::string name = k ? "v1-sealed.sbp" : "v1.sbp";
    auto w = write_piece(dir.path(), 2 * (1 << 20) + 777, k, name, 1);
    auto r = PieceReader::open(w.path, io::Direct::no, k);
    ASSERT_TRUE(r.has_value()) << name << ": " << r.error().what;
    EXPECT_EQ((*r)->header().version, 1);
    EXPECT_EQ((*r)->header().catalog_id, 0u);
    auto buf = AlignedBlock::make(2 * kBlock + (1 << 20));
    for (const Extent& e : (*r)->trailer().extents[0]) {
      auto v = read_and_verify(**r, e, *buf);
      ASSERT_TRUE(v.has_value()) << name << ": " << v.error().what;
      if (e.type == FrameType::data) {
        EXPECT_EQ(std::memcmp(*v, w.data.data() + e.file_offset, e.raw_len), 0) << name;
      }
    }
  }
}

TEST(EncryptedPiece, NoKeyOrWrongKeyIsRefusedAtOpen) {
  testing::TempDir dir;
  auto keys = key_file_keyring(dir.path(), "k");
  auto w = write_piece(dir.path(), 1 << 20, keys.get());
  auto none = PieceReader::open(w.path, io::Direct::no);
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code, Errc::invalid_argument);
  EXPECT_NE(none.error().what.find("--key-file"), std::string::npos) << none.error().what;
  auto other = key_file_keyring(dir.path(), "other");
  auto wrong = PieceReader::open(w.path, io::Direct::no, other.get());
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code, Errc::wrong_key);
  EXPECT_NE(wrong.error().what.find(w.path), std::string::npos) << wrong.error().what;
}

TEST(EncryptedPiece, FlippedBitIsReportedWithPieceAndOffset) {
  testing::TempDir dir;
  auto keys = key_file_keyring(dir.path(), "k");
  auto w = write_piece(dir.path(), 3 * (1 << 20), keys.get());
  auto r = PieceReader::open(w.path, io::Direct::no, keys.get());
  ASSERT_TRUE(r.has_value());
  const Extent e = (*r)->trailer().extents[0][0];
  // Flip a bit and fix the CRC, so only the cipher can notice.
  auto frame = bytes_at(w.path, e.frame_offset, kBlock + e.stored_len);
  frame[kBlock + 777] ^= std::byte{4};
  auto h = decode_frame_header({frame.data(), kBlock});
  ASSERT_TRUE(h.has_value());
  h->stored_crc = util::crc32c(frame.data() + kBlock, e.stored_len);
  encode_frame_header(*h, std::span<std::byte, kBlock>(frame.data(), kBlock));
  put_bytes(w.path, e.frame_offset, frame);
  auto buf = AlignedBlock::make(2 * kBlock + (1 << 20));
  auto v = read_and_verify(**r, e, *buf);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code, Errc::corrupt);
  EXPECT_NE(v.error().what.find(w.path), std::string::npos);
  EXPECT_NE(v.error().what.find(std::to_string(e.frame_offset + kBlock)), std::string::npos)
      << v.error().what;
  EXPECT_NE(v.error().what.find("authentication failed"), std::string::npos) << v.error().what;
}

// Two pieces of the same data under the same passphrase: a frame copied from one into the
// same place in the other matches the index in every clear field, and is still caught.
TEST(EncryptedPiece, FrameSplicedFromAnotherPieceIsDetected) {
  testing::TempDir dir;
  auto keys = key_file_keyring(dir.path(), "k");
  auto a = write_piece(dir.path(), 3 * (1 << 20), keys.get(), "a.sbp");
  auto b = write_piece(dir.path(), 3 * (1 << 20), keys.get(), "b.sbp");
  auto ra = PieceReader::open(a.path, io::Direct::no, keys.get());
  auto rb = PieceReader::open(b.path, io::Direct::no, keys.get());
  ASSERT_TRUE(ra.has_value() && rb.has_value());
  const Extent e = (*ra)->trailer().extents[0][2];
  ASSERT_EQ(e.frame_offset, (*rb)->trailer().extents[0][2].frame_offset);
  put_bytes(a.path, e.frame_offset, bytes_at(b.path, e.frame_offset, kBlock + e.stored_len));
  auto buf = AlignedBlock::make(2 * kBlock + (1 << 20));
  auto v = read_and_verify(**ra, e, *buf);
  ASSERT_FALSE(v.has_value());
  EXPECT_NE(v.error().what.find("authentication failed"), std::string::npos) << v.error().what;
}

// Frames swapped within a piece, with headers rewritten to match the index they moved
// into, still fail: the sequence and position are sealed with each frame.
TEST(EncryptedPiece, ReorderedFramesAreDetected) {
  testing::TempDir dir;
  auto keys = key_file_keyring(dir.path(), "k");
  auto w = write_piece(dir.path(), 4 * (1 << 20), keys.get());
  auto r = PieceReader::open(w.path, io::Direct::no, keys.get());
  ASSERT_TRUE(r.has_value());
  const auto& ex = (*r)->trailer().extents[0];
  const Extent e0 = ex[0], e2 = ex[2];
  ASSERT_EQ(e0.stored_len, e2.stored_len);
  auto f0 = bytes_at(w.path, e0.frame_offset, kBlock + e0.stored_len);
  auto f2 = bytes_at(w.path, e2.frame_offset, kBlock + e2.stored_len);
  auto h0 = decode_frame_header({f0.data(), kBlock});
  auto h2 = decode_frame_header({f2.data(), kBlock});
  // f2's payload goes where f0 was, under a header that claims f0's file offset.
  h2->offset = h0->offset;
  encode_frame_header(*h2, std::span<std::byte, kBlock>(f2.data(), kBlock));
  put_bytes(w.path, e0.frame_offset, f2);
  auto buf = AlignedBlock::make(2 * kBlock + (1 << 20));
  auto v = read_and_verify(**r, e0, *buf);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code, Errc::corrupt);
}

// Dropping the last data frame and moving trailer and footer down is caught when the
// trailer is opened: its position is part of what it authenticates.
TEST(EncryptedPiece, TruncationWithMovedTrailerIsDetected) {
  testing::TempDir dir;
  auto keys = key_file_keyring(dir.path(), "k");
  auto w = write_piece(dir.path(), 3 * (1 << 20), keys.get());
  Footer f;
  uint64_t last_frame = 0, size = 0;
  {
    auto r = PieceReader::open(w.path, io::Direct::no, keys.get());
    ASSERT_TRUE(r.has_value());
    f = (*r)->footer();
    last_frame = (*r)->trailer().extents[0].back().frame_offset;
    size = (*r)->size();
  }
  auto tail = bytes_at(w.path, f.trailer_offset, size - f.trailer_offset);
  f.trailer_offset = last_frame;
  f.frames -= 1;
  encode_footer(f, std::span<std::byte, kBlock>(tail.data() + tail.size() - kBlock, kBlock));
  put_bytes(w.path, last_frame, tail);
  ASSERT_EQ(::truncate(w.path.c_str(), static_cast<off_t>(last_frame + tail.size())), 0);
  auto r = PieceReader::open(w.path, io::Direct::no, keys.get());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::corrupt);
  EXPECT_NE(r.error().what.find(w.path), std::string::npos);
}

// Property: across many pieces written with one job key, no two frames ever share a
// nonce (each piece has its own key too, so a repeat would need both to collide).
TEST(EncryptedPiece, NoTwoFramesShareANonceAcrossPieces) {
  testing::TempDir dir;
  auto keys = key_file_keyring(dir.path(), "k");
  std::set<std::array<uint8_t, 12>> seen;
  size_t frames = 0;
  for (int i = 0; i < 150; ++i) {
    auto w = write_piece(dir.path(), 2 * (1 << 20) + 4096, keys.get(), "p" + std::to_string(i));
    auto r = PieceReader::open(w.path, io::Direct::no, keys.get());
    ASSERT_TRUE(r.has_value());
    // Every sealed frame: the file frame, data frames, and the trailer (the last sequence).
    for (uint32_t seq = 0; seq <= (*r)->footer().frames; ++seq) {
      seen.insert((*r)->cipher()->nonce(seq));
      ++frames;
    }
    ::unlink(w.path.c_str());
  }
  EXPECT_EQ(seen.size(), frames);
  EXPECT_GE(frames, 600u);
}

}  // namespace
}  // namespace stripeback::engine
