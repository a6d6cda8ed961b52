// `stripeback validate`: reads and checks every frame of the chosen backup without writing,
// on plain, compressed and encrypted backups; damage and a wrong key are reported.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>

#include "engine/format/piece_format.h"
#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

TEST(Validate, CleanEncryptedCompressedBackupPassesAndWritesNothing) {
  TempDir work("sb-validate");
  std::string src = work / "src", cat = work / "catalog", key = work / "k.key";
  make_file(src + "/a.dbf", (5u << 20) + 100, 1);
  make_file(src + "/d/b.dbf", 3u << 20, 2);
  SB_ASSERT_EXIT(sb({"keygen", key}), 0);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", work / "p", "--catalog", cat, "--compress", "medium",
                     "--encrypt", "--key-file", key}),
                 0);
  auto before = entries_under(work.path());
  auto v = sb({"validate", "--catalog", cat, "--key-file", key, "--json"});
  SB_ASSERT_EXIT(v, 0);
  Json j = parse_json(v);
  EXPECT_EQ(j["operation"].as_string(), "validate");
  EXPECT_EQ(j["status"].as_string(), "complete");
  EXPECT_EQ(*j["files"].as_u64(), 2u);
  EXPECT_EQ(*j["bytes"].as_u64(), (8u << 20) + 100);
  EXPECT_EQ(entries_under(work.path()), before);
  auto wrong = sb({"validate", "--catalog", cat, "--passphrase-env", "SB_IT_P"},
                  {{"SB_IT_P", "not the key"}});
  SB_EXPECT_EXIT(wrong, 4);
  EXPECT_TRUE(contains(wrong.err, "wrong passphrase or key"));
}

TEST(Validate, DamageIsReportedWithPieceOffsetAndFile) {
  TempDir work("sb-validate-bad");
  std::string src = work / "src", cat = work / "catalog";
  make_file(src + "/a.dbf", 4u << 20, 3);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", work / "p", "--catalog", cat, "--channels", "1"}), 0);
  auto pieces = pieces_in(work / "p");
  ASSERT_EQ(pieces.size(), 1u);
  int fd = ::open(pieces[0].c_str(), O_RDWR);
  char c = 0;
  off_t at = (2 << 20) + 999;
  ASSERT_EQ(::pread(fd, &c, 1, at), 1);
  c = static_cast<char>(~c);
  ASSERT_EQ(::pwrite(fd, &c, 1, at), 1);
  ::close(fd);
  auto v = sb({"validate", "--catalog", cat});
  SB_EXPECT_EXIT(v, 1);
  EXPECT_TRUE(contains(v.err, pieces[0]));
  EXPECT_TRUE(contains(v.err, "is corrupt at offset"));
  EXPECT_TRUE(contains(v.err, src + "/a.dbf"));
}

// The frames of a piece in order: offset and type, from their headers.
std::vector<std::pair<uint64_t, engine::FrameType>> frames_of_piece(const std::string& piece) {
  std::vector<std::pair<uint64_t, engine::FrameType>> out;
  std::string bytes = stripeback::testing::read_file(piece);
  if (bytes.size() < engine::kBlock) return out;
  // Frames start after the header block (and an encrypted piece's key slots).
  auto header = engine::decode_piece_header(
      {reinterpret_cast<const std::byte*>(bytes.data()), engine::kBlock});
  if (!header) return out;
  uint64_t p = engine::first_frame_offset(*header);
  while (p + engine::kBlock <= bytes.size()) {
    auto h = engine::decode_frame_header(
        {reinterpret_cast<const std::byte*>(bytes.data() + p), engine::kBlock});
    if (!h) break;
    out.emplace_back(p, h->type);
    if (h->type == engine::FrameType::trailer) break;
    p += engine::kBlock + engine::align_up(h->stored_len);
  }
  return out;
}

void flip(const std::string& path, uint64_t at, uint8_t mask) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  unsigned char c = 0;
  ASSERT_EQ(::pread(fd, &c, 1, static_cast<off_t>(at)), 1);
  c = static_cast<unsigned char>(c ^ mask);
  ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(at)), 1);
  ::close(fd);
}

class ValidateWholePiece : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    src_ = t_ / "src";
    make_file(src_ + "/a.dbf", 3u << 20, 51);
    // A file with an all-zero MiB in the middle: stored as a zero frame without data.
    make_file(src_ + "/z.dbf", 3u << 20, 52);
    std::string zeros(1u << 20, '\0');
    int fd = ::open((src_ + "/z.dbf").c_str(), O_WRONLY);
    ASSERT_EQ(::pwrite(fd, zeros.data(), zeros.size(), 1 << 20), static_cast<ssize_t>(1 << 20));
    ::close(fd);
    // A file that compresses: its frames are stored compressed with --compress.
    std::string text;
    while (text.size() < (2u << 20)) text += "row " + std::to_string(text.size()) + ";";
    FILE* f = std::fopen((src_ + "/t.dbf").c_str(), "w");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(text.data(), 1, text.size(), f), text.size());
    std::fclose(f);
    std::vector<std::string> args{"backup", src_, "--to", t_ / "p", "--catalog", t_ / "cat",
                                  "--channels", "1"};
    if (GetParam() == "compressed") args.insert(args.end(), {"--compress", "low"});
    if (GetParam() == "encrypted") {
      SB_ASSERT_EXIT(sb({"keygen", t_ / "k.key"}), 0);
      args.insert(args.end(), {"--encrypt", "--key-file", t_ / "k.key"});
      keys_ = {"--key-file", t_ / "k.key"};
    }
    SB_ASSERT_EXIT(sb(args), 0);
    auto pieces = pieces_in(t_ / "p");
    ASSERT_EQ(pieces.size(), 1u);
    piece_ = pieces[0];
    frames_ = frames_of_piece(piece_);
  }
  RunResult validate() {
    std::vector<std::string> args{"validate", "--catalog", t_ / "cat"};
    args.insert(args.end(), keys_.begin(), keys_.end());
    return sb(args);
  }
  uint64_t first(engine::FrameType type) {
    for (const auto& [off, t] : frames_)
      if (t == type) return off;
    ADD_FAILURE() << "no frame of type " << static_cast<int>(type);
    return 0;
  }
  TempDir t_{"sbit-validate-whole"};
  std::string src_, piece_;
  std::vector<std::string> keys_;
  std::vector<std::pair<uint64_t, engine::FrameType>> frames_;
};

TEST_P(ValidateWholePiece, CleanPiecePasses) { SB_EXPECT_EXIT(validate(), 0); }

TEST_P(ValidateWholePiece, FlipInAZeroFrameHeaderIsFound) {
  uint64_t at = first(engine::FrameType::zero);
  ASSERT_NE(at, 0u);
  flip(piece_, at + 20, 0x01);  // its file offset
  RunResult v = validate();
  SB_EXPECT_EXIT(v, 1);
  EXPECT_TRUE(contains(v.err, "is corrupt at offset " + std::to_string(at)));
}

TEST_P(ValidateWholePiece, FlipInAFileRecordFrameIsFound) {
  uint64_t at = first(engine::FrameType::file);
  ASSERT_NE(at, 0u);
  flip(piece_, at + engine::kBlock + 6, 0x08);  // its payload
  RunResult v = validate();
  SB_EXPECT_EXIT(v, 1);
  EXPECT_TRUE(contains(v.err, "is corrupt at offset " + std::to_string(at + engine::kBlock)));
}

TEST_P(ValidateWholePiece, PieceChecksumMustMatchTheCatalog) {
  // A footer that decodes but vouches for another piece checksum than the catalog recorded.
  std::string bytes = stripeback::testing::read_file(piece_);
  uint64_t foot = bytes.size() - engine::kBlock;
  auto f = engine::decode_footer({reinterpret_cast<const std::byte*>(bytes.data() + foot),
                                  engine::kBlock});
  ASSERT_TRUE(f.has_value());
  f->piece_crc ^= 0x5a5a;
  alignas(8) std::array<std::byte, engine::kBlock> block{};
  engine::encode_footer(*f, block);
  int fd = ::open(piece_.c_str(), O_WRONLY);
  ASSERT_EQ(::pwrite(fd, block.data(), block.size(), static_cast<off_t>(foot)),
            static_cast<ssize_t>(block.size()));
  ::close(fd);
  RunResult v = validate();
  SB_EXPECT_EXIT(v, 1);
  EXPECT_TRUE(contains(v.err, "but the catalog recorded"));
  std::vector<std::string> args{"restore", "--catalog", t_ / "cat", "--to", t_ / "r"};
  args.insert(args.end(), keys_.begin(), keys_.end());
  RunResult r = sb(args);
  SB_EXPECT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, "but the catalog recorded"));
}

// A flipped byte in a data frame's payload is found by validate, restore and a deep
// crosscheck. Unencrypted pieces are written in version 5, where a data frame carries no
// payload CRC32C: only its digest (over the raw bytes, after decompression) finds it.
TEST_P(ValidateWholePiece, FlipInADataFramePayloadIsFoundWithOrWithoutItsChecksum) {
  std::string bytes = stripeback::testing::read_file(piece_);
  const auto* b = reinterpret_cast<const std::byte*>(bytes.data());
  auto head = engine::decode_piece_header({b, engine::kBlock});
  ASSERT_TRUE(head.has_value());
  // The first data frame, and with --compress the first compressed one.
  uint64_t at = 0;
  std::optional<engine::FrameHeader> h;
  for (const auto& [off, type] : frames_) {
    if (type != engine::FrameType::data) continue;
    auto d = engine::decode_frame_header({b + off, engine::kBlock});
    ASSERT_TRUE(d.has_value());
    h = *d;
    at = off;
    if (GetParam() != "compressed" || h->compressed) break;
  }
  ASSERT_NE(at, 0u);
  const bool encrypted = GetParam() == "encrypted";
  EXPECT_EQ(head->version, encrypted ? engine::kSlottedPieceVersion : engine::kPieceVersion);
  EXPECT_EQ(h->digest_only, !encrypted);
  if (GetParam() == "compressed") {
    EXPECT_TRUE(h->compressed);
  }
  const uint64_t hit = at + engine::kBlock + h->stored_len / 2;
  flip(piece_, hit, 0x10);
  RunResult v = validate();
  SB_EXPECT_EXIT(v, 1);
  const std::string where = "' is corrupt at offset " + std::to_string(at + engine::kBlock);
  EXPECT_TRUE(contains(v.err, piece_ + where)) << v.describe();
  EXPECT_TRUE(contains(v.err, "(file '" + src_ + "/")) << v.describe();
  std::vector<std::string> args{"restore", "--catalog", t_ / "cat", "--to", t_ / "r"};
  args.insert(args.end(), keys_.begin(), keys_.end());
  RunResult r = sb(args);
  SB_EXPECT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, piece_ + where)) << r.describe();
  // crosscheck --deep checks an encrypted frame by its checksum, without opening it; the
  // key is only the catalog's (the encrypted backup sealed it).
  std::vector<std::string> deep_args{"crosscheck", "--deep", "--catalog", t_ / "cat", "--json"};
  deep_args.insert(deep_args.end(), keys_.begin(), keys_.end());
  RunResult deep = sb(deep_args);
  SB_ASSERT_EXIT(deep, 0);
  Json dj = parse_json(deep);
  ASSERT_EQ(dj["backups"].size(), 1u);
  ASSERT_GE(dj["backups"][0]["damaged_files"].size(), 1u) << deep.out;
}

INSTANTIATE_TEST_SUITE_P(Kinds, ValidateWholePiece,
                         ::testing::Values("plain", "compressed", "encrypted"));

}  // namespace
}  // namespace stripeback::it
