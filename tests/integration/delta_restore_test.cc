// Delta restore (restore --delta, docs/incremental.md): an existing target brought back to a
// backup by writing only the blocks that differ; files truncated, grown, missing and
// unchanged; a kill at every step and at random moments leaves each file as it was or
// verified new, never half-written under its final name; a failed write puts the file
// back; what is not a regular file is refused.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kPage = 8192;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Overwrites `count` distinct random 8 KiB pages of `path` (seeded); returns how many.
uint64_t scribble(const std::string& path, uint64_t count, uint32_t seed) {
  std::mt19937_64 rng(seed);
  const uint64_t pages = file_size(path) / kPage;
  std::set<uint64_t> picked;
  while (picked.size() < std::min(count, pages)) picked.insert(rng() % pages);
  int fd = ::open(path.c_str(), O_WRONLY);
  EXPECT_GE(fd, 0) << path;
  std::string page(kPage, '\0');
  for (uint64_t p : picked) {
    for (auto& c : page) c = static_cast<char>(rng());
    EXPECT_EQ(::pwrite(fd, page.data(), page.size(), static_cast<off_t>(p * kPage)),
              static_cast<ssize_t>(kPage));
  }
  ::close(fd);
  return picked.size();
}

uint64_t written_of(const Json& j) { return *j["bytes_written"].as_u64(); }

struct Fixture {
  TempDir work{"sb-delta"};
  std::string src = work / "src", cat = work / "cat", target = work / "target";
  std::vector<std::string> files;

  explicit Fixture(const std::vector<std::string>& backup_extra) {
    make_file(src + "/a.dbf", (12u << 20) + 4096, 1);
    make_file(src + "/b.dbf", (6u << 20) + 12345, 2);
    make_file(src + "/sub/c.dbf", 8u << 20, 3);
    files = files_under(src);
    std::vector<std::string> a{"backup", src, "--to", work / "pieces", "--catalog", cat};
    a.insert(a.end(), backup_extra.begin(), backup_extra.end());
    auto b = sb(a);
    EXPECT_TRUE(b.exited(0)) << b.describe();
    auto r = sb({"restore", "--to", target, "--catalog", cat});
    EXPECT_TRUE(r.exited(0)) << r.describe();
  }
  std::string at(const std::string& original) const { return restored_path(target, original); }
  Json delta(std::vector<std::string> extra = {}, int code = 0) {
    std::vector<std::string> a{"restore", "--delta", "--to", target, "--catalog", cat, "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    auto r = sb(a);
    EXPECT_TRUE(r.exited(code)) << r.describe();
    return parse_json(r);
  }
};

TEST(DeltaRestore, OnePercentOfPagesChangedWritesOnlyThosePages) {
  Fixture fx({"--level", "0", "--change-unit", "8K"});
  const uint64_t total = total_size(fx.files);
  uint64_t pages = 0;
  uint32_t seed = 10;
  for (const auto& f : fx.files) pages += scribble(fx.at(f), file_size(f) / kPage / 100, seed++);
  ASSERT_GE(pages, 30u);
  Json j = fx.delta();
  EXPECT_EQ(j["status"].as_string(), "complete");
  EXPECT_TRUE(restored_tree(fx.target, fx.src));
  // Exactly the changed pages are written (one change unit each), and saved once first.
  EXPECT_EQ(written_of(j), pages * kPage);
  EXPECT_LE(written_of(j), total / 100 + kPage * 3) << "about 1% of the bytes";
  EXPECT_EQ(*j["delta"]["undo_bytes"].as_u64(), pages * kPage);
  EXPECT_EQ(*j["delta"]["files_compared"].as_u64(), 3u);
  EXPECT_EQ(*j["delta"]["updated"].as_u64(), 3u);
  EXPECT_EQ(*j["delta"]["bytes_compared"].as_u64(), total);
  EXPECT_EQ(*j["files"].as_u64(), 3u);
  // Again: nothing differs, nothing is written.
  Json again = fx.delta();
  EXPECT_EQ(written_of(again), 0u);
  EXPECT_EQ(*again["delta"]["unchanged"].as_u64(), 3u);
  EXPECT_TRUE(restored_tree(fx.target, fx.src));
}

TEST(DeltaRestore, ChainOfLevelOneIsRestoredByItsUnits) {
  Fixture fx({"--level", "0"});
  // A level 1 of a changed source; the target (the level 0's tree) is brought to it.
  scribble(fx.src + "/a.dbf", 5, 40);
  auto l1 = sb({"backup", fx.src, "--to", fx.work / "pieces", "--catalog", fx.cat, "--level",
                "1"});
  SB_ASSERT_EXIT(l1, 0);
  Json j = fx.delta();
  EXPECT_TRUE(restored_tree(fx.target, fx.src));
  EXPECT_LE(written_of(j), 5u * (64u << 10)) << "at most the five 64 KiB units";
  EXPECT_GE(written_of(j), 5u * kPage);
  EXPECT_EQ(*j["delta"]["unchanged"].as_u64(), 2u);
}

TEST(DeltaRestore, TruncatedGrownMissingAndForeignFilesOfAPlainBackup) {
  Fixture fx({});
  // A plain backup is compared by its 1 MiB frames.
  ASSERT_EQ(::truncate(fx.at(fx.src + "/a.dbf").c_str(), 5u << 20), 0);  // cut short
  {
    std::ofstream grow(fx.at(fx.src + "/b.dbf"), std::ios::app | std::ios::binary);
    grow << std::string(3u << 20, 'g');  // grown past the backup's size
  }
  std::filesystem::remove(fx.at(fx.src + "/sub/c.dbf"));  // missing
  write_text(fx.at(fx.src + "/sub/foreign.txt"), "not in the backup");
  Json j = fx.delta();
  EXPECT_EQ(j["status"].as_string(), "complete");
  for (const auto& f : fx.files) EXPECT_TRUE(same_file(f, fx.at(f))) << f;
  EXPECT_EQ(read_all(fx.at(fx.src + "/sub/foreign.txt")), "not in the backup")
      << "a file the backup does not hold is left alone";
  EXPECT_EQ(*j["delta"]["files_compared"].as_u64(), 2u);
  // The cut-off 7 MiB of a.dbf and the 8 MiB of the missing c.dbf are written; b.dbf only
  // gets its size back.
  EXPECT_EQ(written_of(j), file_size(fx.src + "/a.dbf") - (5u << 20) +
                               file_size(fx.src + "/sub/c.dbf"));
  EXPECT_EQ(*j["delta"]["undo_bytes"].as_u64(), 3u << 20)
      << "the old tail b.dbf loses is saved first";
}

// Each file below the target's copy of `src` is either `old_` (before the delta restore)
// or new (the backup's), or absent while a killed restore had it under its temporary name
// (`allow_absent`); nothing else but temporaries is there.
::testing::AssertionResult old_or_new(const Fixture& fx,
                                      const std::map<std::string, std::string>& old_,
                                      bool allow_absent) {
  for (const auto& f : fx.files) {
    const std::string p = fx.at(f);
    if (!exists(p)) {
      if (allow_absent) continue;
      return ::testing::AssertionFailure() << "'" << p << "' is missing";
    }
    std::string now = read_all(p);
    if (now != old_.at(f) && now != read_all(f))
      return ::testing::AssertionFailure() << "'" << p << "' is half-written";
  }
  return ::testing::AssertionSuccess();
}

std::map<std::string, std::string> contents(const Fixture& fx) {
  std::map<std::string, std::string> m;
  for (const auto& f : fx.files) m[f] = read_all(fx.at(f));
  return m;
}

TEST(DeltaRestore, KilledAtEveryStepLeavesEachFileAsItWasOrVerifiedNew) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  for (const char* point : {"delta-undo-synced", "delta-file-renamed", "delta-block-written:3",
                            "restore-file-synced", "restore-file-renamed"}) {
    SCOPED_TRACE(point);
    Fixture fx({"--level", "0", "--change-unit", "8K"});
    uint32_t seed = 60;
    for (const auto& f : fx.files) scribble(fx.at(f), 200, seed++);
    const auto before = contents(fx);
    // One channel with two buffers: a kill at the third block written finds the file
    // mostly unwritten.
    auto r = sb({"restore", "--delta", "--to", fx.target, "--catalog", fx.cat, "--channels", "1",
                 "--buffers", "2"},
                {{"STRIPEBACK_CRASH_AT", point}});
    ASSERT_EQ(r.term_signal, SIGKILL) << r.describe();
    EXPECT_TRUE(old_or_new(fx, before, /*allow_absent=*/true));
    // The next restore into the target puts back what was being updated, then this one
    // (restoring one file that is already new or old) leaves the rest alone.
    auto next = sb({"restore", "--delta", "--to", fx.target, "--catalog", fx.cat, "--json",
                    fx.src + "/sub/c.dbf"});
    SB_ASSERT_EXIT(next, 0);
    EXPECT_TRUE(old_or_new(fx, before, /*allow_absent=*/false));
    if (std::string(point) == "delta-file-renamed" ||
        std::string(point) == "delta-block-written:3" ||
        std::string(point) == "restore-file-synced") {
      EXPECT_TRUE(contains(next.out, "back as it was before an interrupted delta restore"))
          << next.out;
    }
    Json done = fx.delta();
    EXPECT_EQ(done["status"].as_string(), "complete");
    EXPECT_TRUE(restored_tree(fx.target, fx.src)) << "no temporary, no undo log is left";
  }
}

TEST(DeltaRestore, KilledAtRandomMomentsNeverLeavesAFileHalfWritten) {
  Fixture fx({"--level", "0", "--change-unit", "8K"});
  std::mt19937 rng(77);
  int kills = 0;
  for (int round = 0; round < 6; ++round) {
    uint32_t seed = 100 + static_cast<uint32_t>(round) * 10;
    for (const auto& f : fx.files) scribble(fx.at(f), 200, seed++);
    const auto before = contents(fx);
    auto p = sb_start({"restore", "--delta", "--to", fx.target, "--catalog", fx.cat,
                       "--channels", "1", "--buffers", "2"});
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 60));
    if (p->running()) {
      p->kill(SIGKILL);
      ++kills;
    }
    p->wait();
    EXPECT_TRUE(old_or_new(fx, before, /*allow_absent=*/true)) << "round " << round;
    auto next = sb({"restore", "--delta", "--to", fx.target, "--catalog", fx.cat,
                    fx.src + "/sub/c.dbf"});
    SB_ASSERT_EXIT(next, 0);
    for (const auto& f : fx.files) {
      if (f != fx.src + "/sub/c.dbf") {
        EXPECT_TRUE(exists(fx.at(f))) << f << " round " << round;
      }
    }
  }
  Json done = fx.delta();
  EXPECT_TRUE(restored_tree(fx.target, fx.src));
  if (kills == 0) GTEST_SKIP() << "every delta restore finished before it could be killed";
}

TEST(DeltaRestore, AFailedWritePutsTheFileBackAsItWas) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAULTS");
  Fixture fx({"--level", "0", "--change-unit", "8K"});
  const std::string a = fx.src + "/a.dbf";
  scribble(fx.at(a), 3, 90);
  const std::string before = read_all(fx.at(a));
  // Writes to names with the temporary form: the journal's header (1), its entry for a.dbf
  // (2), the undo log's header (3) and two writes per saved page (4-9); the 10th is the
  // first of the update in place.
  auto r = sb({"restore", "--delta", "--to", fx.target, "--catalog", fx.cat, "--channels", "1",
               "--json", a},
              {{"STRIPEBACK_FAULTS", "write:10:EIO:.sbrestore-"}});
  SB_ASSERT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.out, "unable to write")) << r.out;
  EXPECT_TRUE(read_all(fx.at(a)) == before) << "the file is back as it was";
  for (const auto& e : entries_under(fx.target))
    EXPECT_EQ(e.find(".sbrestore-"), std::string::npos) << e;
  Json done = fx.delta();
  EXPECT_TRUE(same_file(a, fx.at(a)));
}

TEST(DeltaRestore, RefusesWhatIsNotARegularFileAndNamesIt) {
  Fixture fx({"--level", "0"});
  const std::string c = fx.at(fx.src + "/sub/c.dbf");
  std::filesystem::remove(c);
  ASSERT_EQ(::symlink("/etc/passwd", c.c_str()), 0);
  auto r = sb({"restore", "--delta", "--to", fx.target, "--catalog", fx.cat});
  SB_ASSERT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err + r.out, "refusing to update '" + c + "' with --delta"));
  struct stat st {};
  ASSERT_EQ(::lstat(c.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link is left alone";
  EXPECT_TRUE(same_file(fx.src + "/a.dbf", fx.at(fx.src + "/a.dbf")));
}

}  // namespace
}  // namespace stripeback::it
