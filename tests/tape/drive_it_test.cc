// The SSC command layer against tgtd's virtual tape drives (scripts/tape-server.sh).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "backends/tape/drive.h"
#include "tests/support/run.h"
#include "tests/support/tape_server.h"

namespace stripeback::tape {
namespace {

using stripeback::testing::TapeServer;

const bool kConfigured = [] {
  TapeServer::configure({.drives = 2, .size_mib = 8});
  return true;
}();

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  return v;
}

class DriveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& urls = TapeServer::urls();
    if (urls.empty()) GTEST_SKIP() << TapeServer::skip_reason();
    auto d = TapeDrive::open(urls[0]);
    ASSERT_TRUE(d) << d.error().what;
    drive = std::move(*d);
    auto r = drive->wait_ready(std::chrono::seconds(5));
    ASSERT_TRUE(r) << r.error().what;
    ASSERT_TRUE(drive->rewind());
  }
  std::unique_ptr<TapeDrive> drive;
};

TEST_F(DriveTest, InquiryAndBlockLimits) {
  auto inq = drive->inquiry();
  ASSERT_TRUE(inq) << inq.error().what;
  EXPECT_EQ(inq->device_type, 1);  // sequential access
  auto lim = drive->read_block_limits();
  ASSERT_TRUE(lim) << lim.error().what;
  EXPECT_EQ(lim->max, 1u << 20);
  EXPECT_EQ(lim->granule(), 512u);
}

TEST_F(DriveTest, BlockSizeSetAndChecked) {
  ASSERT_TRUE(drive->set_block_size(128 * 1024));
  auto bs = drive->block_size();
  ASSERT_TRUE(bs) << bs.error().what;
  EXPECT_EQ(*bs, 128u * 1024);
  auto lim = drive->read_block_limits();
  ASSERT_TRUE(lim);
  EXPECT_TRUE(check_block_size(262144, *lim, drive->name()));
  auto bad = check_block_size(1000000, *lim, drive->name());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().what.find("1000000"), std::string::npos) << bad.error().what;
  EXPECT_NE(bad.error().what.find("512"), std::string::npos) << bad.error().what;
  auto big = check_block_size(2 << 20, *lim, drive->name());
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().what.find("2097152"), std::string::npos) << big.error().what;
  EXPECT_NE(big.error().what.find("1048576"), std::string::npos) << big.error().what;
}

TEST_F(DriveTest, WriteAndReadBlocksWithFilemark) {
  const uint32_t bs = 64 * 1024;
  ASSERT_TRUE(drive->set_block_size(bs));
  auto data = pattern(8 * bs, 1);
  auto w = drive->write_fixed(data, bs);
  ASSERT_TRUE(w) << w.error().what;
  EXPECT_EQ(w->blocks, 8u);
  EXPECT_FALSE(w->early_warning);
  ASSERT_TRUE(drive->write_filemarks(1));
  EXPECT_EQ(drive->position().file, 1u);
  ASSERT_TRUE(drive->rewind());

  std::vector<uint8_t> back(8 * bs);
  auto r = drive->read_fixed(back, bs);
  ASSERT_TRUE(r) << r.error().what;
  EXPECT_EQ(r->blocks, 8u);
  EXPECT_FALSE(r->filemark);
  EXPECT_EQ(back, data);
  // The next read meets the filemark: nothing read, now in file 1.
  auto fm = drive->read_fixed(back, bs);
  ASSERT_TRUE(fm) << fm.error().what;
  EXPECT_EQ(fm->blocks, 0u);
  EXPECT_TRUE(fm->filemark);
  EXPECT_EQ(drive->position().file, 1u);
  EXPECT_EQ(drive->position().block, 0u);
}

TEST_F(DriveTest, ShortReadStopsAtFilemarkWithCount) {
  const uint32_t bs = 32 * 1024;
  ASSERT_TRUE(drive->set_block_size(bs));
  auto data = pattern(3 * bs, 2);
  ASSERT_TRUE(drive->write_fixed(data, bs));
  ASSERT_TRUE(drive->write_filemarks(1));
  ASSERT_TRUE(drive->rewind());
  std::vector<uint8_t> back(10 * bs);
  auto r = drive->read_fixed(back, bs);
  ASSERT_TRUE(r) << r.error().what;
  EXPECT_EQ(r->blocks, 3u);
  EXPECT_TRUE(r->filemark);
  back.resize(3 * bs);
  EXPECT_EQ(back, data);
}

TEST_F(DriveTest, VariableModeBlocksOfTheirOwnLength) {
  // tgt's variable-mode READ is only right when the request equals the block's length
  // (shorter or longer requests misbehave there), which is all this checks.
  ASSERT_TRUE(drive->set_block_size(0));
  auto a = pattern(5000, 5), b = pattern(3000, 6);
  auto w = drive->write_variable(a);
  ASSERT_TRUE(w) << w.error().what;
  ASSERT_TRUE(drive->write_variable(b));
  ASSERT_TRUE(drive->write_filemarks(1));
  ASSERT_TRUE(drive->rewind());
  std::vector<uint8_t> ba(5000), bb(3000), more(3000);
  auto r = drive->read_variable(ba);
  ASSERT_TRUE(r) << r.error().what;
  EXPECT_EQ(r->blocks, 5000u);
  EXPECT_EQ(ba, a);
  r = drive->read_variable(bb);
  ASSERT_TRUE(r) << r.error().what;
  EXPECT_EQ(r->blocks, 3000u);
  EXPECT_EQ(bb, b);
  r = drive->read_variable(more);
  ASSERT_TRUE(r) << r.error().what;
  EXPECT_TRUE(r->filemark);
  EXPECT_EQ(drive->position().file, 1u);
}

TEST_F(DriveTest, SpaceToFileN) {
  const uint32_t bs = 16 * 1024;
  ASSERT_TRUE(drive->set_block_size(bs));
  for (uint32_t f = 0; f < 4; ++f) {
    auto data = pattern((f + 1) * bs, 10 + f);
    ASSERT_TRUE(drive->write_fixed(data, bs));
    ASSERT_TRUE(drive->write_filemarks(1));
  }
  ASSERT_TRUE(drive->seek_file(2));
  EXPECT_EQ(drive->position().file, 2u);
  std::vector<uint8_t> back(8 * bs);
  auto r = drive->read_fixed(back, bs);
  ASSERT_TRUE(r) << r.error().what;
  EXPECT_EQ(r->blocks, 3u);
  EXPECT_TRUE(r->filemark);
  back.resize(3 * bs);
  EXPECT_EQ(back, pattern(3 * bs, 12));
  // Backwards: seek_file rewinds and spaces forward again.
  ASSERT_TRUE(drive->seek_file(1));
  back.assign(8 * bs, 0);
  r = drive->read_fixed(back, bs);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->blocks, 2u);
  back.resize(2 * bs);
  EXPECT_EQ(back, pattern(2 * bs, 11));
}

TEST_F(DriveTest, TgtHasNoPositionCommands) {
  auto p = drive->read_position();
  ASSERT_TRUE(p) << p.error().what;
  EXPECT_TRUE(p->unknown);
  auto l = drive->locate(5);
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().code, Errc::unsupported) << l.error().what;
  EXPECT_NE(l.error().what.find("LOCATE"), std::string::npos) << l.error().what;
}

TEST_F(DriveTest, EndOfMediumWarningOnSmallTape) {
  const uint32_t bs = 256 * 1024;
  ASSERT_TRUE(drive->set_block_size(bs));
  auto chunk = pattern(4 * bs, 3);  // 1 MiB per WRITE(6)
  uint64_t written = 0;
  bool warned = false;
  for (int i = 0; i < 64 && !warned; ++i) {
    auto w = drive->write_fixed(chunk, bs);
    ASSERT_TRUE(w) << w.error().what;
    EXPECT_EQ(w->blocks, 4u);  // tgt keeps the data of the warning write
    written += uint64_t{w->blocks} * bs;
    warned = w->early_warning;
  }
  EXPECT_TRUE(warned) << "no end of medium after " << written << " bytes on an 8 MiB tape";
  EXPECT_GE(written, 4u << 20);
  EXPECT_LE(written, 16u << 20);
  EXPECT_EQ(drive->position().block, written / bs);
}

TEST_F(DriveTest, NotReadyDriveGivesClearError) {
  ASSERT_EQ(TapeServer::tgtadm({"--lld", "iscsi", "--mode", "logicalunit", "--op", "update",
                                "--tid", "1", "--lun", "1", "--params", "online=0"}),
            0);
  std::string waited;
  auto r = drive->wait_ready(std::chrono::milliseconds(600),
                             [&](const std::string& msg) { waited = msg; });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::busy);
  EXPECT_NE(r.error().what.find("not ready"), std::string::npos) << r.error().what;
  EXPECT_NE(waited.find("waiting for tape"), std::string::npos) << waited;
  ASSERT_EQ(TapeServer::tgtadm({"--lld", "iscsi", "--mode", "logicalunit", "--op", "update",
                                "--tid", "1", "--lun", "1", "--params", "online=1"}),
            0);
  EXPECT_TRUE(drive->wait_ready(std::chrono::seconds(5)));
}

TEST(DriveUrl, BadUrlsAreRejected) {
  auto r = TapeDrive::open("tape:ftp://x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_NE(r.error().what.find("tape:iscsi://"), std::string::npos) << r.error().what;
  auto sg = TapeDrive::open("tape:/dev/null");
  ASSERT_FALSE(sg);
  EXPECT_NE(sg.error().what.find("/dev/null"), std::string::npos) << sg.error().what;
}

}  // namespace
}  // namespace stripeback::tape
