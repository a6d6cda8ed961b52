// `stripeback tape ...` against tgtd's virtual drives (scripts/tape-server.sh).
#include <gtest/gtest.h>

#include "tests/integration/it_util.h"
#include "tests/support/tape_server.h"

namespace stripeback::it {
namespace {

using stripeback::testing::TapeServer;

const bool kConfigured = [] {
  TapeServer::configure({.drives = 2, .size_mib = 8});
  return true;
}();

class TapeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& urls = TapeServer::urls();
    if (urls.empty()) GTEST_SKIP() << TapeServer::skip_reason();
    u1 = "tape:" + urls[0];
    u2 = "tape:" + urls[1];
  }
  std::string u1, u2;
};

TEST_F(TapeCli, StatusOfBlankTapeThenLabel) {
  auto st = sb({"tape", "status", u1, "--json"});
  SB_ASSERT_EXIT(st, 0);
  Json j = parse_json(st);
  EXPECT_TRUE(j["ready"].as_bool());
  EXPECT_EQ(j["device_type"].as_u64(), 1u);
  EXPECT_EQ(j["block_limits"]["max"].as_u64(), 1048576u);
  EXPECT_TRUE(contains(j["label"].as_string(), "no Stripeback label"));

  auto lab = sb({"tape", "label", u1, "--volume", "VOL-A1"});
  SB_ASSERT_EXIT(lab, 0);
  st = sb({"tape", "status", u1, "--json"});
  SB_ASSERT_EXIT(st, 0);
  j = parse_json(st);
  EXPECT_EQ(j["label"]["volume"].as_string(), "VOL-A1");
  EXPECT_EQ(j["label"]["block_size"].as_u64(), 262144u);
  auto text = sb({"tape", "status", u1});
  SB_ASSERT_EXIT(text, 0);
  EXPECT_TRUE(contains(text.out, "volume VOL-A1, block size 262144"));
}

TEST_F(TapeCli, RelabelNeedsForce) {
  SB_ASSERT_EXIT(sb({"tape", "label", u1, "--volume", "V1", "--tape-block-size", "64K"}), 0);
  auto again = sb({"tape", "label", u1, "--volume", "V2"});
  SB_EXPECT_EXIT(again, 2);
  EXPECT_TRUE(contains(again.err, "already labelled as volume V1"));
  EXPECT_TRUE(contains(again.err, "--force"));
  SB_EXPECT_EXIT(sb({"tape", "label", u1, "--volume", "V2", "--force"}), 0);
  auto bad_id = sb({"tape", "label", u1, "--volume", "has space", "--force"});
  SB_EXPECT_EXIT(bad_id, 2);
  EXPECT_TRUE(contains(bad_id.err, "volume id 'has space'"));
}

TEST_F(TapeCli, BlockSizeRejectedNamingBothNumbers) {
  auto r = sb({"tape", "label", u1, "--volume", "V1", "--tape-block-size", "1000000"});
  SB_EXPECT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "1000000"));
  EXPECT_TRUE(contains(r.err, "granularity 512"));
  auto big = sb({"tape", "label", u1, "--volume", "V1", "--tape-block-size", "2M"});
  SB_EXPECT_EXIT(big, 2);
  EXPECT_TRUE(contains(big.err, "2097152"));
  EXPECT_TRUE(contains(big.err, "1048576"));
  auto t = sb({"tape", "test", u1, "--size", "1M", "--block-sizes", "64K,1000000"});
  SB_EXPECT_EXIT(t, 2);
  EXPECT_TRUE(contains(t.err, "1000000"));
}

TEST_F(TapeCli, RewindAndEject) {
  auto r = sb({"tape", "rewind", u1});
  SB_EXPECT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "rewound"));
  auto e = sb({"tape", "eject", u1});
  SB_EXPECT_EXIT(e, 0);
  EXPECT_TRUE(contains(e.out, "ejected"));
}

TEST_F(TapeCli, TestMeasuresBlockSizesAndSpansVolumes) {
  auto r = sb({"tape", "test", u1, u2, "--size", "4M", "--block-sizes", "64K,256K,1M",
               "--tape-block-size", "256K", "--json"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  ASSERT_EQ(j["block_sizes"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["block_sizes"][i]["bytes"].as_u64(), 4u << 20);
    EXPECT_GT(j["block_sizes"][i]["write_mb_s"].as_double(), 0.0);
    EXPECT_GT(j["block_sizes"][i]["read_mb_s"].as_double(), 0.0);
  }
  const Json& segs = j["span"]["segments"];
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0]["volume"].as_string(), "SBTEST1");
  EXPECT_EQ(segs[1]["volume"].as_string(), "SBTEST2");
  EXPECT_EQ(segs[0]["first_block"].as_u64(), 0u);
  // The second volume continues exactly where the first stopped.
  EXPECT_EQ(segs[1]["first_block"].as_u64(), segs[0]["blocks"].as_u64());
  EXPECT_GE(*segs[0]["blocks"].as_u64() * 262144, 8u << 20);  // the 8 MiB tape was filled
  auto text = sb({"tape", "test", u1, "--size", "2M", "--block-sizes", "128K"});
  SB_ASSERT_EXIT(text, 0);
  EXPECT_TRUE(contains(text.out, "MB/s"));
}

TEST_F(TapeCli, NotReadyDriveIsReported) {
  ASSERT_EQ(TapeServer::tgtadm({"--lld", "iscsi", "--mode", "logicalunit", "--op", "update",
                                "--tid", "1", "--lun", "1", "--params", "online=0"}),
            0);
  auto st = sb({"tape", "status", u1});
  SB_EXPECT_EXIT(st, 1);
  EXPECT_TRUE(contains(st.out, "ready:       no"));
  EXPECT_TRUE(contains(st.out, "not ready"));
  auto rw = sb({"tape", "rewind", u1}, {}, std::chrono::seconds(30));
  SB_EXPECT_EXIT(rw, 1);
  EXPECT_TRUE(contains(rw.err, "waiting for tape"));
  EXPECT_TRUE(contains(rw.err, "not ready"));
}

TEST(TapeCliUsage, BadUrlIsUsageError) {
  auto r = sb({"tape", "status", "tape:nfs://x/y"});
  SB_EXPECT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "tape:iscsi://HOST:PORT/IQN/LUN"));
}

}  // namespace
}  // namespace stripeback::it
