// Per-frame zstd compression: every level restores identical, compressible data shrinks,
// incompressible data does not grow beyond the frame overhead.
#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

class Compress : public ::testing::TestWithParam<const char*> {};

TEST_P(Compress, RoundTripIdenticalAndSmaller) {
  const std::string& data = small_data();
  ASSERT_FALSE(data.empty());
  TempDir work("sb-compress");
  std::string cat = work / "catalog";
  auto b = sb({"backup", data, "--to", work / "pieces", "--catalog", cat, "--json",
               "--compress", GetParam()});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  uint64_t read = *j["bytes_read"].as_u64();
  uint64_t written = *j["bytes_written"].as_u64();
  EXPECT_LT(written, read * 3 / 4) << "datafile pages should compress";
  uint64_t in = 0, out = 0;
  for (const auto& c : j["channels"].items()) {
    in += *c["compress_in"].as_u64();
    out += *c["compress_out"].as_u64();
  }
  EXPECT_GT(in, 0u);
  EXPECT_LT(out, in);
  // Every compressed byte is accounted to the level that compressed it.
  uint64_t by_level = 0;
  for (const auto& c : j["channels"].items())
    for (const auto& [level, bytes] : c["compress_levels"].members()) by_level += *bytes.as_u64();
  EXPECT_EQ(by_level, in);
  std::string r = work / "restore";
  auto rr = sb({"restore", "--to", r, "--catalog", cat});
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(r, data));
}

INSTANTIATE_TEST_SUITE_P(Levels, Compress,
                         ::testing::Values("low", "medium", "high", "zstd:2", "auto"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           std::string n = p.param;
                           for (auto& ch : n)
                             if (ch == ':') ch = '_';
                           return n;
                         });

TEST(CompressIncompressible, DoesNotGrowBeyondFrameOverhead) {
  TempDir work("sb-compress-rand");
  std::string src = work / "src";
  make_file(src + "/random.dat", (32u << 20) + 777, 99);
  auto b = sb({"backup", src, "--to", work / "pieces", "--catalog", work / "catalog", "--json",
               "--compress", "medium", "--channels", "1"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  uint64_t read = *j["bytes_read"].as_u64();
  uint64_t written = *j["bytes_written"].as_u64();
  // One 4 KiB header block per 1 MiB frame, padding of the last frame, the file record,
  // piece header, trailer and footer.
  uint64_t overhead = 33 * 4096 + 4096 + 4 * 4096 + 8192;
  EXPECT_LE(written, read + overhead) << "incompressible data grew";
  auto rr = sb({"restore", "--to", work / "r", "--catalog", work / "catalog"});
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(same_file(src + "/random.dat", work / "r" + src + "/random.dat"));
}

TEST(CompressUsage, BadLevelIsRefused) {
  TempDir work("sb-compress-usage");
  for (const char* bad : {"zstd:0", "zstd:20", "ultra", "zstd:"}) {
    auto b = sb({"backup", "/etc/hostname", "--to", work / "p", "--catalog", work / "c",
                 "--compress", bad});
    SB_EXPECT_EXIT(b, 2);
    EXPECT_TRUE(contains(b.err, "--compress"));
  }
}

}  // namespace
}  // namespace stripeback::it

namespace stripeback::it {
namespace {

TEST(CompressUsage, CpuBudgetNeedsAutoAndAPositiveNumber) {
  TempDir work("sb-compress-budget");
  std::string src = work / "src";
  make_file(src + "/a.dbf", 1u << 20, 1);
  auto r = sb({"backup", src, "--to", work / "p", "--catalog", work / "c", "--compress",
               "medium", "--cpu-budget", "1"});
  SB_EXPECT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "--cpu-budget needs --compress auto"));
  auto z = sb({"backup", src, "--to", work / "p", "--catalog", work / "c", "--compress", "auto",
               "--cpu-budget", "0"});
  SB_EXPECT_EXIT(z, 2);
  EXPECT_TRUE(contains(z.err, "--cpu-budget must be"));
  EXPECT_TRUE(pieces_in(work / "p").empty());
}

}  // namespace
}  // namespace stripeback::it
