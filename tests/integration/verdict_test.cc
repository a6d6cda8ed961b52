// The bottleneck verdict (docs/monitoring.md#the-verdict) is right when the bottleneck is
// provoked: a --rate, a slow target (the fault-injecting storage delays every piece write),
// compression on compressible data; each with its evidence and a suggestion, in --json and
// in the text summary. (A stopped NFS server: tests/nfs.)
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class VerdictTest : public ::testing::Test {
 protected:
  Json backup(const std::string& src, std::vector<std::string> extra, const Env& env = {}) {
    std::vector<std::string> a{"backup", src, "--to", t_ / "p", "--catalog", t_ / "cat", "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    RunResult r = sb(a, env);
    EXPECT_TRUE(r.exited(0)) << r.describe();
    Json j = parse_json(r);
    EXPECT_EQ(j["bound_by"].as_string(), j["verdict"]["bound_by"].as_string());
    EXPECT_FALSE(j["verdict"]["evidence"].as_string().empty());
    return j["verdict"];
  }
  TempDir t_{"sbit-verdict"};
};

TEST_F(VerdictTest, ARateIsTheThrottle) {
  make_file(t_ / "src/a.dbf", 16 * kMiB, 31);
  Json v = backup(t_ / "src", {"--rate", "8M", "--channels", "1"});
  EXPECT_EQ(v["bound_by"].as_string(), "rate limit");
  EXPECT_EQ(v["stage"].as_string(), "throttle");
  EXPECT_GT(v["busy"]["throttle"].as_double(), 0.5);
  EXPECT_TRUE(contains(v["suggestion"].as_string(), "--rate"));
}

TEST_F(VerdictTest, ASlowTargetIsTheTargetWrite) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAULTS");
  make_file(t_ / "src/a.dbf", 24 * kMiB, 32);
  Json v = backup(t_ / "src", {"--channels", "1"},
                  {{"STRIPEBACK_FAULTS", "write:1+:delay=40:.sbp"}});
  EXPECT_EQ(v["bound_by"].as_string(), "write");
  EXPECT_EQ(v["stage"].as_string(), "target write (local)");
  EXPECT_GT(v["busy"]["wait_write"].as_double(), v["busy"]["wait_read"].as_double());
  EXPECT_TRUE(contains(v["suggestion"].as_string(), "faster target"));
}

TEST_F(VerdictTest, HighCompressionOfCompressibleDataIsCompressionCpu) {
  // Text that zstd shrinks a lot, and slowly at level 9.
  {
    std::filesystem::create_directories(t_ / "text");
    std::ofstream f(t_ / "text/c.dbf", std::ios::binary);
    uint32_t x = 7;
    std::string line;
    for (uint64_t n = 0; n < 48 * kMiB;) {
      x = x * 1103515245u + 12345u;
      line = "row " + std::to_string(x % 100000) + " value " + std::to_string((x >> 8) % 977) +
             " status " + ((x >> 3) % 3 ? "committed" : "aborted") + "\n";
      f << line;
      n += line.size();
    }
  }
  Json v = backup(t_ / "text", {"--compress", "high", "--channels", "1"});
  EXPECT_EQ(v["bound_by"].as_string(), "cpu");
  EXPECT_EQ(v["stage"].as_string(), "compression CPU");
  EXPECT_GT(v["busy"]["compress"].as_double(), 0.3);
  EXPECT_TRUE(contains(v["suggestion"].as_string(), "--compress"));
}

TEST_F(VerdictTest, TheTextSummaryNamesTheStageAndTheEvidence) {
  make_file(t_ / "src/a.dbf", 8 * kMiB, 33);
  RunResult r = sb({"backup", t_ / "src", "--to", t_ / "p", "--catalog", t_ / "cat", "--rate",
                    "4M", "--channels", "1"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "  bound by throttle: of 1 channel(s)' time: working ")) << r.out;
  EXPECT_TRUE(contains(r.out, "throttled ")) << r.out;
}

}  // namespace
}  // namespace stripeback::it
