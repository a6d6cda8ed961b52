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

TEST(ChangedFiles, AFileChangedWhileReadIsReportedWithItsOwnExitCode) {
  TempDir t("sbit-changed");
  std::string src = t / "src", to = t / "pieces", cat = t / "cat";
  const std::string grows = src + "/grows.dbf", rewritten = src + "/rewritten.dbf",
                    stable = src + "/stable.dbf";
  make_file(grows, 3 * kMiB, 81, 0644, kLongAgo);
  make_file(rewritten, 3 * kMiB, 82, 0644, kLongAgo);
  make_file(stable, kMiB, 83, 0644, kLongAgo);
  if (HasFatalFailure()) return;
  // One channel reading all three at once at 1 MiB/s: 7 s, the first read after 1 s.
  auto child = sb_start({"backup", src, "--to", to, "--catalog", cat, "--json", "--channels",
                         "1", "--rate", "1M"});
  ASSERT_TRUE(child->started());
  ASSERT_TRUE(wait_for_open(child->pid(), {grows, rewritten}, std::chrono::seconds(60)))
      << "the backup never had both files open";
  {
    int fd = ::open(grows.c_str(), O_WRONLY | O_APPEND);
    ASSERT_GE(fd, 0);
    std::string more(64 * 1024, 'g');
    EXPECT_EQ(::write(fd, more.data(), more.size()), static_cast<ssize_t>(more.size()));
    ::close(fd);
    fd = ::open(rewritten.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    std::string page(8192, 'r');
    EXPECT_EQ(::pwrite(fd, page.data(), page.size(), 0), static_cast<ssize_t>(page.size()));
    ::close(fd);
  }
  RunResult b = child->wait();
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

}  // namespace
}  // namespace stripeback::it
