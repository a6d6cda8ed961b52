// `stripeback status` on a catalog whose jobs/ directory holds things no job wrote: a
// directory, a FIFO, symbolic links (to /dev/zero, to a file elsewhere), a file too large
// to be a status file, garbage, thousands of status files of dead jobs. Each bad entry is
// reported in one line naming it and the cause, the good ones are listed, the command exits
// 0 and never hangs (every run has a timeout).
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <set>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

using namespace std::chrono_literals;

class HostileCatalog : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::mkdir((t_ / "cat").c_str(), 0700), 0);
    ASSERT_EQ(::mkdir(jobs_.c_str(), 0700), 0);
  }
  // A status file of a dead job (its pid is no process's) named `<host>.<pid>.status`.
  std::string dead_job(int64_t n) {
    const int64_t pid = unused_pid(n);
    const std::string id = host_name() + "." + std::to_string(pid);
    write_text(jobs_ + "/" + id + ".status", status_file_text(pid, host_name()));
    return id;
  }
  RunResult status(std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"status", "--catalog", t_ / "cat"};
    a.insert(a.end(), extra.begin(), extra.end());
    return sb(a, {}, 60s);
  }
  // The lines of `text` that contain `what`.
  static size_t lines_with(const std::string& text, const std::string& what) {
    size_t n = 0, at = 0;
    while (at < text.size()) {
      size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      if (text.substr(at, end - at).find(what) != std::string::npos) ++n;
      at = end + 1;
    }
    return n;
  }
  // `status` exits 0, lists the dead job `good`, and reports `entry` in one line with `cause`.
  void expect_reported(const std::string& entry, const std::string& cause,
                       const std::string& good) {
    RunResult r = status();
    SB_ASSERT_EXIT(r, 0);
    EXPECT_TRUE(contains(r.out, good + " dead")) << "the good entry is still listed";
    EXPECT_EQ(lines_with(r.err, entry), 1u) << r.err;
    EXPECT_TRUE(contains(r.err, cause)) << r.err;
    RunResult j = status({"--json"});
    SB_ASSERT_EXIT(j, 0);
    Json doc = parse_json(j);
    ASSERT_EQ(doc["jobs"].size(), 1u) << j.out;
    EXPECT_EQ(doc["jobs"][0]["id"].as_string(), good);
    ASSERT_EQ(doc["skipped"].size(), 1u) << j.out;
    EXPECT_TRUE(contains(doc["skipped"][0]["entry"].as_string(), entry));
    EXPECT_TRUE(contains(doc["skipped"][0]["why"].as_string(), cause));
  }
  TempDir t_{"sbit-hostile-cat"};
  std::string jobs_ = t_ / "cat/jobs";
};

TEST_F(HostileCatalog, AStatusFileThatIsADirectoryIsReportedAndSkipped) {
  const std::string good = dead_job(1);
  ASSERT_EQ(::mkdir((jobs_ + "/H.1.status").c_str(), 0700), 0);
  expect_reported("H.1.status", "is a directory", good);
}

TEST_F(HostileCatalog, AStatusFileThatIsAFifoIsReportedWithoutBlocking) {
  const std::string good = dead_job(1);
  ASSERT_EQ(::mkfifo((jobs_ + "/H.2.status").c_str(), 0600), 0);
  expect_reported("H.2.status", "is a FIFO", good);
}

TEST_F(HostileCatalog, ASymbolicLinkToDevZeroIsNotFollowed) {
  const std::string good = dead_job(1);
  ASSERT_EQ(::symlink("/dev/zero", (jobs_ + "/H.3.status").c_str()), 0);
  expect_reported("H.3.status", "is a symbolic link", good);
}

TEST_F(HostileCatalog, ASymbolicLinkToAStatusFileElsewhereIsNotFollowed) {
  const std::string good = dead_job(1);
  write_text(t_ / "elsewhere", status_file_text(unused_pid(2), host_name()));
  ASSERT_EQ(::symlink((t_ / "elsewhere").c_str(), (jobs_ + "/H.4.status").c_str()), 0);
  expect_reported("H.4.status", "is a symbolic link", good);
}

TEST_F(HostileCatalog, AFileLargerThanAStatusFileCanBeIsReportedAndSkipped) {
  const std::string good = dead_job(1);
  // Sparse: 64 MiB that read as zeros, a status file's text at the start.
  const std::string huge = jobs_ + "/H.5.status";
  write_text(huge, status_file_text(unused_pid(2), host_name()));
  ASSERT_EQ(::truncate(huge.c_str(), 64 << 20), 0);
  expect_reported("H.5.status", "larger than", good);
}

TEST_F(HostileCatalog, GarbageIsReportedAsNotAStatusFile) {
  const std::string good = dead_job(1);
  write_text(jobs_ + "/H.6.status", std::string("\x7f" "ELF\x02\x01\x01\0\0\0garbage\nmore", 22));
  expect_reported("H.6.status", "not a status file", good);
}

TEST_F(HostileCatalog, AnEmptyFileOfAGoneProcessIsReported) {
  // What a job killed before its first update leaves, or a machine that went down before
  // the file reached the disk.
  const std::string good = dead_job(1);
  const std::string name = host_name() + "." + std::to_string(unused_pid(2)) + ".status";
  write_text(jobs_ + "/" + name, "");
  expect_reported(name, "empty", good);
}

TEST_F(HostileCatalog, AControlCharacterInAnEntryNameIsEscaped) {
  const std::string good = dead_job(1);
  ::mkdir((jobs_ + "/H\x1b[2J.status").c_str(), 0700);
  RunResult r = status();
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.err, "H\\x1b[2J.status")) << r.err;
  EXPECT_FALSE(contains(r.err, "\x1b[2J")) << "the terminal sequence is not written";
}

TEST_F(HostileCatalog, EveryKindAtOnceIsReportedOneLineEachAndTheGoodOneListed) {
  const std::string good = dead_job(1);
  ::mkdir((jobs_ + "/H.1.status").c_str(), 0700);
  ::mkfifo((jobs_ + "/H.2.status").c_str(), 0600);
  ::symlink("/dev/zero", (jobs_ + "/H.3.status").c_str());
  ::symlink("/nowhere/at/all", (jobs_ + "/H.4.status").c_str());
  write_text(jobs_ + "/H.6.status", "no=end line\n");
  RunResult r = status({"--json"});
  SB_ASSERT_EXIT(r, 0);
  Json doc = parse_json(r);
  ASSERT_EQ(doc["jobs"].size(), 1u) << r.out;
  EXPECT_EQ(doc["skipped"].size(), 5u) << r.out;
  for (const char* e : {"H.1.status", "H.2.status", "H.3.status", "H.4.status", "H.6.status"})
    EXPECT_EQ(lines_with(r.err, e), 1u) << e << " in:\n" << r.err;
}

// --prune removes what a gone process of this host left (an empty file), never a directory
// or a link someone put there.
TEST_F(HostileCatalog, PruneRemovesAnEmptyFileOfAGoneProcessButNoOtherEntry) {
  const std::string empty = host_name() + "." + std::to_string(unused_pid(2)) + ".status";
  write_text(jobs_ + "/" + empty, "");
  ASSERT_EQ(::mkdir((jobs_ + "/H.1.status").c_str(), 0700), 0);
  ASSERT_EQ(::symlink("/dev/zero", (jobs_ + "/H.3.status").c_str()), 0);
  RunResult r = status({"--prune"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "removed " + jobs_ + "/" + empty + ": is empty")) << r.out;
  EXPECT_FALSE(exists(jobs_ + "/" + empty));
  EXPECT_TRUE(exists(jobs_ + "/H.1.status"));
  EXPECT_TRUE(exists(jobs_ + "/H.3.status"));
}

// The status files of 3000 dead jobs, a third of them cut short by the kill (the new text
// followed by the end of the old, longer one) and a third empty: listed in well under a
// few seconds (a generous bound, for a loaded machine), and none is read again and again.
TEST_F(HostileCatalog, ThreeThousandStaleStatusFilesAreListedQuickly) {
  const std::string here = host_name();
  for (int64_t n = 1; n <= 3000; ++n) {
    const int64_t pid = unused_pid(n);
    const std::string path = jobs_ + "/" + here + "." + std::to_string(pid) + ".status";
    std::string text = status_file_text(pid, here);
    if (n % 3 == 1) text += "0\nend=1\n";  // the tail of a longer earlier text
    if (n % 3 == 2) text.clear();
    write_text(path, text);
  }
  const auto start = std::chrono::steady_clock::now();
  RunResult r = status({"--json"});
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  SB_ASSERT_EXIT(r, 0);
  Json doc = parse_json(r);
  EXPECT_EQ(doc["jobs"].size(), 2000u);
  EXPECT_EQ(doc["skipped"].size(), 1000u);
  EXPECT_LT(took, 20.0) << "3000 stale status files took " << took << " s";
  std::printf("[ measured ] status of 3000 stale status files: %.3f s\n", took);
}

}  // namespace
}  // namespace stripeback::it
