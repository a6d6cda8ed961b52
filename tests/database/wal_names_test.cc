#include "database/wal_names.h"

#include <gtest/gtest.h>

namespace stripeback::database {
namespace {

TEST(WalNames, LsnsReadAndWriteAsPostgresShowsThem) {
  auto l = parse_lsn("16/B374D848");
  ASSERT_TRUE(l);
  EXPECT_EQ(*l, (uint64_t{0x16} << 32) | 0xB374D848u);
  EXPECT_EQ(lsn_text(*l), "16/B374D848");
  EXPECT_EQ(*parse_lsn("0/3000028"), 0x3000028u);
  EXPECT_EQ(*parse_lsn("a/ff"), (uint64_t{10} << 32) | 0xff);
  for (const char* bad : {"", "/", "0/", "/1", "123456789/0", "0/123456789", "g/1", "1-2", "1/2/3"}) {
    auto r = parse_lsn(bad, "--target-lsn");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().what.find("--target-lsn '"), std::string::npos) << r.error().what;
  }
}

TEST(WalNames, KindsOfArchivedFiles) {
  EXPECT_EQ(wal_kind("000000010000000000000003"), WalKind::segment);
  EXPECT_EQ(wal_kind("000000010000000000000003.partial"), WalKind::partial);
  EXPECT_EQ(wal_kind("000000010000000000000003.00000028.backup"), WalKind::backup_history);
  EXPECT_EQ(wal_kind("00000002.history"), WalKind::timeline_history);
  EXPECT_EQ(wal_kind("00000001000000000000000g"), WalKind::other);
  EXPECT_EQ(wal_kind("../etc/passwd"), WalKind::other);
  EXPECT_EQ(wal_kind("0000000100000000000000030"), WalKind::other);
  EXPECT_EQ(wal_kind(""), WalKind::other);
}

TEST(WalNames, SegmentPositionsFollowTheSegmentSize) {
  auto p = segment_pos("0000000200000001000000FF");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->timeline, 2u);
  EXPECT_EQ(p->number, 256u + 255u);  // 256 segments of 16 MiB per 4 GiB "log"
  EXPECT_EQ(segment_name(*p), "0000000200000001000000FF");
  EXPECT_EQ(segment_name({2, p->number + 1}), "000000020000000200000000");
  // 64 MiB segments: 64 per log; a segment number past that names none.
  EXPECT_FALSE(segment_pos("000000010000000000000040", 64u << 20));
  EXPECT_EQ(segment_pos("00000001000000010000003F", 64u << 20)->number, 64u + 63u);
  EXPECT_EQ(segment_of(0x3000028), 3u);
  EXPECT_EQ(history_name(10), "0000000A.history");
  EXPECT_EQ(segment_pos("000000010000000000000003.00000028.backup")->number, 3u);
  EXPECT_FALSE(segment_pos("00000002.history"));
}

}  // namespace
}  // namespace stripeback::database
