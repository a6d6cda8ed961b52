// A file that changes while it is read leaves a copy that may mix old and new contents. The
// backup still completes, but a monitoring script can tell: exit code 5, the file named in
// --json "changed_files" and in a warning.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr int64_t kLongAgo = 1600000000LL * 1000000000;  // an mtime in 2020

// Waits until process `pid` has every one of `paths` open (seen in /proc/PID/fd): only a
// change made after the backup opened a file is one it can notice. A piece appearing is not
// enough: it comes with the first file of a set, maybe before the others are open. False
// after `limit` or once the process is gone.
bool wait_for_open(pid_t pid, const std::vector<std::string>& paths, std::chrono::seconds limit) {
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    std::error_code ec;
    std::set<std::string> open;
    for (const auto& e : std::filesystem::directory_iterator(fds, ec)) {
      std::error_code lec;
      auto target = std::filesystem::read_symlink(e.path(), lec);
      if (!lec) open.insert(target.string());
    }
    if (ec) return false;
    bool all = true;
    for (const auto& p : paths) {
      std::error_code cec;
      auto real = std::filesystem::canonical(p, cec);
      all = all && open.count(cec ? p : real.string()) != 0;
    }
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Three files, two of them changed while one slow channel reads them: appended to and
// rewritten in place. `extra` goes on the backup's command line.
struct ChangedSet {
  std::string src, to, cat, grows, rewritten, stable;
};

ChangedSet make_changed_set(const TempDir& t) {
  ChangedSet c{t / "src", t / "pieces", t / "cat", "", "", ""};
  c.grows = c.src + "/grows.dbf";
  c.rewritten = c.src + "/rewritten.dbf";
  c.stable = c.src + "/stable.dbf";
  make_file(c.grows, 3 * kMiB, 81, 0644, kLongAgo);
  make_file(c.rewritten, 3 * kMiB, 82, 0644, kLongAgo);
  make_file(c.stable, kMiB, 83, 0644, kLongAgo);
  return c;
}

RunResult backup_while_changing(const ChangedSet& c, const std::vector<std::string>& extra) {
  // One channel reading all three at once at 1 MiB/s: 7 s, the first read after 1 s.
  std::vector<std::string> args{"backup", c.src, "--to", c.to, "--catalog", c.cat, "--json",
                                "--channels", "1", "--rate", "1M"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto child = sb_start(args);
  EXPECT_TRUE(child->started());
  EXPECT_TRUE(wait_for_open(child->pid(), {c.grows, c.rewritten}, std::chrono::seconds(60)))
      << "the backup never had both files open";
  int fd = ::open(c.grows.c_str(), O_WRONLY | O_APPEND);
  EXPECT_GE(fd, 0);
  std::string more(64 * 1024, 'g');
  EXPECT_EQ(::write(fd, more.data(), more.size()), static_cast<ssize_t>(more.size()));
  ::close(fd);
  fd = ::open(c.rewritten.c_str(), O_WRONLY);
  EXPECT_GE(fd, 0);
  std::string page(8192, 'r');
  EXPECT_EQ(::pwrite(fd, page.data(), page.size(), 0), static_cast<ssize_t>(page.size()));
  ::close(fd);
  return child->wait();
}

TEST(ChangedFiles, AFileChangedWhileReadIsReportedWithItsOwnExitCode) {
  TempDir t("sbit-changed");
  const ChangedSet c = make_changed_set(t);
  if (HasFatalFailure()) return;
  const std::string &src = c.src, &to = c.to, &cat = c.cat, &grows = c.grows,
                    &rewritten = c.rewritten, &stable = c.stable;
  RunResult b = backup_while_changing(c, {});
  SB_ASSERT_EXIT(b, 5);
  Json j = parse_json(b);
  EXPECT_EQ(j["status"].as_string(), "complete") << b.describe();
  EXPECT_EQ(j["files"].as_u64(), 3u) << b.describe();
  ASSERT_EQ(j["changed_files"].size(), 2u) << b.describe();
  EXPECT_EQ(j["changed_files"][0].as_string(), grows);
  EXPECT_EQ(j["changed_files"][1].as_string(), rewritten);
  EXPECT_TRUE(contains(b.err, "'" + grows + "' changed while it was backed up"));
  EXPECT_TRUE(contains(b.err, "2 file(s) changed while they were read"));
  EXPECT_EQ(b.err.find(stable), std::string::npos) << b.describe();

  // An unchanged data set exits 0, with an empty list.
  RunResult again = sb({"backup", src, "--to", to, "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(again, 0);
  EXPECT_EQ(parse_json(again)["changed_files"].size(), 0u) << again.describe();
}

// --hot: the operator says the sources are in a database's backup mode, where files change
// while they are read and the database's redo repairs them. The same changes are recorded as
// fuzzy, not as damage: exit 0, one note, "fuzzy_files" in --json, and the catalog says so.
TEST(ChangedFiles, HotBackupRecordsChangedFilesAsFuzzyAndExitsZero) {
  TempDir t("sbit-hot");
  const ChangedSet c = make_changed_set(t);
  if (HasFatalFailure()) return;
  RunResult b = backup_while_changing(c, {"--hot", "--level", "0"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  EXPECT_EQ(j["status"].as_string(), "complete") << b.describe();
  EXPECT_TRUE(j["hot"].as_bool()) << b.describe();
  EXPECT_EQ(j["changed_files"].size(), 0u) << b.describe();
  ASSERT_EQ(j["fuzzy_files"].size(), 2u) << b.describe();
  EXPECT_EQ(j["fuzzy_files"][0].as_string(), c.grows);
  EXPECT_EQ(j["fuzzy_files"][1].as_string(), c.rewritten);
  EXPECT_TRUE(contains(b.err, "is hot: 2 file(s) changed while they were read")) << b.describe();
  EXPECT_FALSE(contains(b.err, "changed while it was backed up")) << b.describe();
  const std::string id = std::to_string(j["backup_id"].as_u64().value_or(0));

  // The catalog keeps which files are fuzzy.
  RunResult l = sb({"list", "--backup", id, "--catalog", c.cat, "--json"});
  SB_ASSERT_EXIT(l, 0);
  EXPECT_TRUE(contains(l.out, "\"fuzzy_files\"")) << l.describe();
  EXPECT_TRUE(contains(l.out, c.rewritten)) << l.describe();

  // A level 1 on top, hot too, with nothing changing: exit 0 and no fuzzy file.
  RunResult one = sb({"backup", c.src, "--to", c.to, "--catalog", c.cat, "--json", "--hot",
                      "--level", "1"});
  SB_ASSERT_EXIT(one, 0);
  EXPECT_EQ(parse_json(one)["fuzzy_files"].size(), 0u) << one.describe();
  EXPECT_FALSE(contains(one.err, "is hot")) << one.describe();

  // The same changes without --hot keep exit 5.
  TempDir t2("sbit-hot-not");
  const ChangedSet c2 = make_changed_set(t2);
  RunResult cold = backup_while_changing(c2, {});
  SB_ASSERT_EXIT(cold, 5);
  EXPECT_FALSE(parse_json(cold)["hot"].as_bool()) << cold.describe();
}

}  // namespace
}  // namespace stripeback::it
