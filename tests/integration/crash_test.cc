// A backup killed with SIGKILL in the middle: the catalog stays readable and shows it
// incomplete, restores never use it, and running the same backup again succeeds.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <thread>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

std::vector<uint64_t> backups_used(const Json& restore_json) {
  std::vector<uint64_t> ids;
  for (const auto& b : restore_json["backups"].items()) ids.push_back(b["id"].as_u64().value_or(0));
  return ids;
}

TEST(Crash, KilledBackupIsIncompleteIgnoredAndRerunSucceeds) {
  const std::string& big = big_data();
  ASSERT_FALSE(big.empty());
  auto originals = files_under(big);
  uint64_t total = total_size(originals);
  TempDir t("sbit-kill");
  std::string pieces = t / "pieces", cat = t / "cat";

  // An earlier, complete backup in the same catalog.
  std::string early = t / "early";
  std::filesystem::create_directories(early + "/d");
  stripeback::testing::write_pattern_file(early + "/d/a", 200000, 11);
  stripeback::testing::write_pattern_file(early + "/b", 4097, 12);
  RunResult b1 = sb({"backup", early, "--to", pieces, "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(b1, 0);
  uint64_t id1 = backup_id_of(parse_json(b1));
  auto early_pieces = pieces_in(pieces);
  std::set<std::string> before(early_pieces.begin(), early_pieces.end());

  // The backup to kill: one channel with two buffers, so it takes a few seconds; kill it
  // once its piece has grown past the threshold.
  const uint64_t threshold = std::min<uint64_t>(64u << 20, total / 8);
  std::vector<std::string> args{"backup", big,          "--to", pieces,      "--catalog",
                                cat,      "--channels", "1",    "--buffers", "2"};
  auto child = sb_start(args);
  ASSERT_TRUE(child->started());
  bool killed = false;
  uint64_t seen = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (child->running() && std::chrono::steady_clock::now() < deadline) {
    for (const auto& p : pieces_in(pieces))
      if (!before.count(p)) seen = std::max(seen, file_size(p));
    if (seen > threshold) {
      child->kill(SIGKILL);
      killed = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  RunResult k = child->wait();
  ASSERT_TRUE(killed) << "the backup was not killed midway (it ended, or its piece never "
                         "passed "
                      << threshold << " bytes; largest seen " << seen
                      << "): use a larger data set\n"
                      << k.describe();
  ASSERT_EQ(k.term_signal, SIGKILL) << k.describe();
  ASSERT_LT(seen, total) << "the kill came too late to be midway";

  // The catalog is readable and shows the killed backup incomplete.
  RunResult l = sb({"list", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(l, 0);
  Json lj = parse_json(l);
  ASSERT_EQ(lj["backups"].size(), 2u) << l.describe();
  EXPECT_EQ(lj["backups"][0]["id"].as_u64(), id1);
  EXPECT_EQ(lj["backups"][0]["status"].as_string(), "complete");
  uint64_t id2 = lj["backups"][1]["id"].as_u64().value_or(0);
  EXPECT_GT(id2, id1);
  EXPECT_EQ(lj["backups"][1]["status"].as_string(), "incomplete") << l.describe();
  RunResult lt = sb({"list", "--catalog", cat});
  SB_EXPECT_EXIT(lt, 0);
  EXPECT_TRUE(contains(lt.out, "incomplete"));

  // Restores do not use it: not by id, not by default, not for its files.
  RunResult r2 =
      sb({"restore", "--to", t / "r-killed", "--catalog", cat, "--backup", std::to_string(id2)});
  EXPECT_EQ(r2.exit_code, 2) << r2.describe();
  EXPECT_TRUE(contains(r2.err, "incomplete"));
  EXPECT_FALSE(exists(t / "r-killed"));
  RunResult rd = sb({"restore", "--to", t / "r-default", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(rd, 0);
  EXPECT_EQ(backups_used(parse_json(rd)), std::vector<uint64_t>{id1}) << rd.describe();
  EXPECT_TRUE(restored_tree(t / "r-default", early));
  RunResult rb = sb({"restore", "--to", t / "r-big", "--catalog", cat, big});
  EXPECT_EQ(rb.exit_code, 2) << rb.describe();
  EXPECT_TRUE(contains(rb.err, big));
  EXPECT_FALSE(exists(t / "r-big"));

  // The same backup again succeeds and restores identical.
  args.push_back("--json");
  RunResult b3 = sb(args);
  SB_ASSERT_EXIT(b3, 0);
  Json b3j = parse_json(b3);
  EXPECT_EQ(b3j["status"].as_string(), "complete");
  uint64_t id3 = backup_id_of(b3j);
  EXPECT_GT(id3, id2);
  // The killed backup's unfinished piece is reported, by name, so an operator can remove it.
  bool reported = false;
  for (const auto& w : b3j["warnings"].items())
    reported = reported || (w.as_string().find("failed or were killed remain in") !=
                                std::string::npos &&
                            w.as_string().find("'sb" + std::to_string(id2) + "-") !=
                                std::string::npos);
  EXPECT_TRUE(reported) << b3.out;
  l = sb({"list", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(l, 0);
  lj = parse_json(l);
  ASSERT_EQ(lj["backups"].size(), 3u) << l.describe();
  EXPECT_EQ(lj["backups"][1]["status"].as_string(), "incomplete");
  EXPECT_EQ(lj["backups"][2]["status"].as_string(), "complete");
  EXPECT_EQ(lj["backups"][2]["files"].as_u64(), originals.size());

  RunResult r3 = sb({"restore", "--to", t / "r-big", "--catalog", cat, "--json", big});
  SB_ASSERT_EXIT(r3, 0);
  EXPECT_EQ(backups_used(parse_json(r3)), std::vector<uint64_t>{id3}) << r3.describe();
  EXPECT_TRUE(restored_tree(t / "r-big", big));
}

// SIGTERM is a cancellation, not a crash: the backup stops, is recorded as failed, and
// leaves no unfinished piece behind.
TEST(Crash, TerminatedBackupIsRecordedFailedAndRemovesItsPieces) {
  const std::string& big = big_data();
  ASSERT_FALSE(big.empty());
  uint64_t total = total_size(files_under(big));
  TempDir t("sbit-term");
  std::string pieces = t / "pieces", cat = t / "cat";
  const uint64_t threshold = std::min<uint64_t>(32u << 20, total / 16);
  auto child = sb_start({"backup", big, "--to", pieces, "--catalog", cat, "--channels", "2",
                         "--buffers", "2", "--json"});
  ASSERT_TRUE(child->started());
  bool signalled = false;
  uint64_t seen = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (child->running() && std::chrono::steady_clock::now() < deadline) {
    for (const auto& p : pieces_in(pieces)) seen = std::max(seen, file_size(p));
    if (seen > threshold) {
      child->kill(SIGTERM);
      signalled = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  RunResult k = child->wait();
  ASSERT_TRUE(signalled) << "the backup ended before SIGTERM could be sent midway\n"
                         << k.describe();
  EXPECT_TRUE(k.exited(1)) << k.describe();
  Json kj = parse_json(k);
  EXPECT_EQ(kj["status"].as_string(), "failed") << k.describe();
  EXPECT_TRUE(contains(k.err, "cancelled"));
  EXPECT_TRUE(pieces_in(pieces).empty()) << "unfinished pieces were left behind";

  RunResult l = sb({"list", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(l, 0);
  Json lj = parse_json(l);
  ASSERT_EQ(lj["backups"].size(), 1u) << l.describe();
  EXPECT_EQ(lj["backups"][0]["status"].as_string(), "failed");
  RunResult r = sb({"restore", "--to", t / "r", "--catalog", cat});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_FALSE(exists(t / "r"));
}

}  // namespace
}  // namespace stripeback::it
