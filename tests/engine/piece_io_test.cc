// PieceWriter and PieceReader together on a real file: a piece written frame by frame
// reads back with the same index, and damage anywhere is reported with piece and offset.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "engine/piece_reader.h"
#include "engine/piece_writer.h"
#include "tests/support/temp_dir.h"
#include "util/crc32c.h"

namespace stripeback::engine {
namespace {

struct Written {
  std::string path;
  std::vector<uint8_t> data;  // the file's bytes
};

// Writes a piece holding one file of `size` bytes whose second MiB is zeros.
Written write_piece(const std::string& dir, uint64_t size) {
  Written w;
  w.data.resize(size);
  for (size_t i = 0; i < size; ++i) w.data[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  if (size > (2u << 20)) std::memset(w.data.data() + (1 << 20), 0, 1 << 20);
  PieceHeader h;
  h.backup_id = 1;
  h.channel = 1;
  h.piece_number = 1;
  h.name = "test.sbp";
  auto pw = PieceWriter::create(dir, h, io::Direct::no);
  EXPECT_TRUE(pw.has_value());
  auto& writer = **pw;
  FileMeta m;
  m.path = "/src/file.dbf";
  m.size = size;
  uint32_t id = writer.add_file(m);
  auto [fblock, fp] = writer.file_frame(id);
  EXPECT_EQ(::pwrite(writer.fd(), fblock->data, fp.length, static_cast<off_t>(fp.offset)),
            static_cast<ssize_t>(fp.length));
  auto buf = AlignedBlock::make(kBlock + (1 << 20));
  for (uint64_t off = 0; off < size; off += 1 << 20) {
    auto n = static_cast<uint32_t>(std::min<uint64_t>(1 << 20, size - off));
    std::memcpy(buf->data + kBlock, w.data.data() + off, n);
    FrameHeader fh;
    fh.file_id = id;
    fh.offset = off;
    fh.raw_len = n;
    if (all_zero(buf->data + kBlock, n)) {
      fh.type = FrameType::zero;
      fh.raw_digest = util::zero_digest(n);
    } else {
      fh.stored_len = n;
      fh.stored_crc = util::crc32c(buf->data + kBlock, n);
      fh.raw_digest = util::digest(buf->data + kBlock, n);
    }
    auto p = writer.place(fh, buf->data);
    EXPECT_EQ(::pwrite(writer.fd(), buf->data, p.length, static_cast<off_t>(p.offset)),
              static_cast<ssize_t>(p.length));
  }
  auto crc = writer.finish();
  EXPECT_TRUE(crc.has_value());
  w.path = dir + "/test.sbp";
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
    ASSERT_EQ(::pread(pr.fd(), buf->data, len, static_cast<off_t>(e.frame_offset)),
              static_cast<ssize_t>(len));
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
  ASSERT_EQ(::pread((*r)->fd(), buf->data, len, static_cast<off_t>(e.frame_offset)),
            static_cast<ssize_t>(len));
  auto v = verify_frame(buf->data, e, 0, w.path, "/src/file.dbf");
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code, Errc::corrupt);
  EXPECT_NE(v.error().what.find(w.path), std::string::npos) << v.error().what;
  EXPECT_NE(v.error().what.find(std::to_string(e.frame_offset + kBlock)), std::string::npos)
      << v.error().what;
  EXPECT_NE(v.error().what.find("/src/file.dbf"), std::string::npos);
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

TEST(PieceIo, CreateNeverReplacesAPiece) {
  testing::TempDir dir;
  auto w = write_piece(dir.path(), 1 << 20);
  PieceHeader h;
  h.name = "test.sbp";
  auto again = PieceWriter::create(dir.path(), h, io::Direct::no);
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().what.find("test.sbp"), std::string::npos);
  EXPECT_TRUE(PieceReader::open(w.path, io::Direct::no).has_value());
}

}  // namespace
}  // namespace stripeback::engine
