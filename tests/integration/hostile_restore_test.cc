// Restore as a hostile user or an unlucky one would meet it: links planted in the target,
// names as long as the file system allows, restores killed midway and run again.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

// Restore temporaries and journals below `dir`; quiet while the tree changes under a
// running restore.
std::vector<std::string> temporaries_under(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->path().filename().string().find(".sbrestore-") != std::string::npos)
      out.push_back(it->path().string());
  return out;
}

bool has_file_temporary(const std::string& dir) {
  for (const auto& p : temporaries_under(dir))
    if (p.find(".sbrestore-journal-") == std::string::npos) return true;
  return false;
}

TEST(HostileRestore, HardLinksAtTemporaryNamesAreNeverWrittenThrough) {
  TempDir t("sbit-hostile-link");
  std::string src = t / "src";
  make_file(src + "/a.dbf", 200000, 31, 0644);
  RunResult b = sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(b, 0);
  // A file outside the target, linked at every name an earlier version used for the
  // temporary (".NAME.sbrestore-PID") for the pids that come next, and at names of the
  // current form.
  std::string outside = t / "outside.txt";
  write_text(outside, "must not change\n");
  ASSERT_EQ(::chmod(outside.c_str(), 0640), 0);
  std::string dir = restored_path(t / "target", src);
  std::filesystem::create_directories(dir);
  pid_t next = ::getpid();
  for (int i = 1; i <= 2000; ++i) {
    std::string name = dir + "/.a.dbf.sbrestore-" + std::to_string(next + i);
    ASSERT_EQ(::link(outside.c_str(), name.c_str()), 0) << name;
  }
  for (const char* n : {".sbrestore-0000000000000000", ".sbrestore-ffffffffffffffff"})
    ASSERT_EQ(::link(outside.c_str(), (dir + "/" + n).c_str()), 0);

  RunResult r = sb({"restore", "--to", t / "target", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_EQ(stripeback::testing::read_file(outside), "must not change\n");
  struct stat st {};
  ASSERT_EQ(::stat(outside.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_TRUE(same_file(src + "/a.dbf", dir + "/a.dbf"));
}

TEST(HostileRestore, SymlinkAtTemporaryNameIsNotFollowed) {
  TempDir t("sbit-hostile-symlink");
  std::string src = t / "src";
  make_file(src + "/a.dbf", 5000, 32, 0644);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat"}), 0);
  std::string dir = restored_path(t / "target", src);
  std::filesystem::create_directories(dir);
  for (int i = 1; i <= 500; ++i)
    ASSERT_EQ(::symlink((t / "victim").c_str(),
                        (dir + "/.a.dbf.sbrestore-" + std::to_string(::getpid() + i)).c_str()),
              0);
  RunResult r = sb({"restore", "--to", t / "target", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_FALSE(exists(t / "victim"));
  EXPECT_TRUE(same_file(src + "/a.dbf", dir + "/a.dbf"));
}

TEST(HostileRestore, NamesAsLongAsTheFileSystemAllowsRoundTrip) {
  TempDir t("sbit-hostile-long");
  std::string src = t / "src";
  std::vector<std::string> files;
  for (size_t len : {238u, 239u, 240u, 254u, 255u}) {
    std::string f = src + "/" + std::string(len, static_cast<char>('a' + len % 26));
    make_file(f, 10000 + len, static_cast<uint32_t>(len));
    files.push_back(f);
  }
  // A deep path of long directory names as well.
  std::string deep = src;
  for (int i = 0; i < 12; ++i) deep += "/" + std::string(250, static_cast<char>('k' + i));
  make_file(deep + "/" + std::string(255, 'z'), 777, 7);
  files.push_back(deep + "/" + std::string(255, 'z'));
  SB_ASSERT_EXIT(sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat"}), 0);
  RunResult r = sb({"restore", "--to", t / "target", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(t / "target", src));
}

TEST(HostileRestore, AwkwardNamesAndDeepTreesRoundTrip) {
  TempDir t("sbit-hostile-names");
  std::string src = t / "src";
  for (const std::string& name :
       {std::string("with spaces .dbf"), std::string("new\nline"), std::string("-leading-dash"),
        std::string("--force"), std::string("tab\there"), std::string("\xff\xfe invalid utf8"),
        std::string("esc\x1b[31mred"), std::string(255, 'n'), std::string("\\back\\slash")})
    make_file(src + "/" + name, 3000 + name.size(), static_cast<uint32_t>(name.size()));
  std::string deep = src;
  for (int i = 0; i < 60; ++i) deep += "/d" + std::to_string(i);
  make_file(deep + "/bottom.dbf", 12345, 60);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat"}), 0);
  SB_ASSERT_EXIT(sb({"validate", "--catalog", t / "cat"}), 0);
  RunResult r = sb({"restore", "--to", t / "target", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(t / "target", src));
  // One file by its awkward name, given after "--" so it is not taken for a flag.
  RunResult one = sb({"restore", "--to", t / "one", "--catalog", t / "cat", "--",
                      src + "/-leading-dash"});
  SB_ASSERT_EXIT(one, 0);
  EXPECT_TRUE(same_file(src + "/-leading-dash", restored_path(t / "one", src + "/-leading-dash")));
}

TEST(HostileRestore, KilledRestoreLeftoversAreNamedAndRemovedByTheNext) {
  TempDir t("sbit-hostile-kill");
  std::string src = t / "src";
  make_file(src + "/big.dbf", 256u << 20, 33);
  make_file(src + "/small.dbf", 4096, 34);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat"}), 0);
  std::string target = t / "target";
  std::filesystem::create_directories(target);
  size_t kills = 0;
  for (int round = 0; round < 3; ++round) {
    // One channel with small buffers, so the big file takes a while; kill it once its
    // temporary exists.
    auto child = sb_start({"restore", "--to", target, "--catalog", t / "cat", "--channels", "1",
                           "--buffers", "2", "--force"});
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (child->running() && !has_file_temporary(target) &&
           std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (!child->running()) break;
    child->kill(SIGKILL);
    RunResult k = child->wait();
    ASSERT_EQ(k.term_signal, SIGKILL) << k.describe();
    ++kills;
  }
  ASSERT_GT(kills, 0u) << "every restore finished before it could be killed";
  EXPECT_TRUE(has_file_temporary(target));

  RunResult r = sb({"restore", "--to", target, "--catalog", t / "cat", "--force"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "temporary file(s) left by an interrupted restore"));
  EXPECT_FALSE(contains(r.out, "removed 0 temporary"));
  EXPECT_TRUE(temporaries_under(target).empty());
  EXPECT_TRUE(restored_tree(target, src));
}

TEST(HostileRestore, EmptyJournalOfARestoreKilledAsItStartedIsRemoved) {
  TempDir t("sbit-hostile-empty-journal");
  std::string src = t / "src";
  make_file(src + "/a.dbf", 5000, 37);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat"}), 0);
  std::string target = t / "target";
  std::filesystem::create_directories(target);
  // Killed between creating its journal and writing the header: an empty journal, and one
  // cut inside the header, both older than a minute; and an empty one made just now, which
  // stays empty across the pause a restore gives a journal that may be just starting.
  std::string old_empty = target + "/.sbrestore-journal-00000000000000aa";
  std::string old_cut = target + "/.sbrestore-journal-00000000000000bb";
  std::string fresh = target + "/.sbrestore-journal-00000000000000cc";
  write_text(old_empty, "");
  write_text(old_cut, "stripeback-resto");
  write_text(fresh, "");
  timespec past[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, old_empty.c_str(), past, 0), 0);
  ASSERT_EQ(::utimensat(AT_FDCWD, old_cut.c_str(), past, 0), 0);
  RunResult r = sb({"restore", "--to", target, "--catalog", t / "cat"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "removed the empty journal"));
  EXPECT_FALSE(exists(old_empty));
  EXPECT_FALSE(exists(old_cut));
  EXPECT_FALSE(exists(fresh));
  EXPECT_FALSE(contains(r.out, "is not a restore journal"));
}

TEST(HostileRestore, ARunningRestoresTemporariesAreLeftAlone) {
  TempDir t("sbit-hostile-concurrent");
  std::string src = t / "src";
  make_file(src + "/big.dbf", 192u << 20, 35);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat"}), 0);
  std::string target = t / "target";
  std::filesystem::create_directories(target);
  auto first = sb_start({"restore", "--to", target, "--catalog", t / "cat", "--channels", "1",
                         "--buffers", "2", src + "/big.dbf"});
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (first->running() && temporaries_under(target).empty() &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  // A second restore into the same target while the first runs: another file only.
  make_file(t / "src2/x.dbf", 1000, 36);
  SB_ASSERT_EXIT(sb({"backup", t / "src2", "--to", t / "pieces2", "--catalog", t / "cat2"}), 0);
  RunResult second = sb({"restore", "--to", target, "--catalog", t / "cat2"});
  SB_EXPECT_EXIT(second, 0);
  EXPECT_FALSE(contains(second.out, "interrupted restore"));
  RunResult r = first->wait();
  SB_EXPECT_EXIT(r, 0);
  EXPECT_TRUE(same_file(src + "/big.dbf", restored_path(target, src + "/big.dbf")));
  EXPECT_TRUE(temporaries_under(target).empty());
}

}  // namespace
}  // namespace stripeback::it
