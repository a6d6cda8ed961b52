// Defects of features run every night, each kept found: a resume that keeps only what is
// still true of a file and never ends damaged, unreadable directories that fail a backup
// unless told to skip them, and a destination inside a source.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// Writes `len` bytes of `byte` at `off` of `path`, then puts its size and mtime back as
// they were (what `touch -d` does): only its ctime tells that it changed.
void rewrite_keeping_mtime(const std::string& path, uint64_t off, size_t len, char byte) {
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  std::string data(len, byte);
  ASSERT_EQ(::pwrite(fd, data.data(), len, static_cast<off_t>(off)), static_cast<ssize_t>(len));
  ::close(fd);
  timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

// Killed with some sections durable; the file is then rewritten at its start and end with
// its size and mtime put back. The resume must not keep the old sections: the restored file
// is the file as it is now, not old head + new tail.
TEST(Day2Resume, AFileRewrittenWithItsMtimePutBackIsReadAgainWhole) {
  TempDir t("sbit-resume-ctime");
  const std::string src = t / "src", cat = t / "cat";
  make_file(src + "/big.dbf", 32 * kMiB, 91);
  for (int i = 0; i < 3; ++i) make_file(src + "/f" + std::to_string(i), 3 * kMiB, 92 + i);
  const std::vector<std::string> args{"backup",     src,  "--to",           t / "dest",
                                      "--catalog",  cat,  "--channels",     "1",
                                      "--section-size", "4M", "--max-piece-size", "5M"};
  RunResult killed = sb(args, {{"STRIPEBACK_CRASH_AT", "piece-synced:5"}});
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed.describe();
  rewrite_keeping_mtime(src + "/big.dbf", 0, 8192, 'H');
  rewrite_keeping_mtime(src + "/big.dbf", 32 * kMiB - 8192, 8192, 'T');
  std::vector<std::string> again = args;
  again.insert(again.end(), {"--resume", "last", "--json"});
  RunResult r = sb(again);
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_EQ(j["status"].as_string(), "complete");
  bool named = false;
  for (const auto& f : j["resumed"]["files_read_again"].items())
    named = named || f["path"].as_string() == src + "/big.dbf";
  EXPECT_TRUE(named) << r.out;
  SB_ASSERT_EXIT(sb({"restore", "--to", t / "r", "--catalog", cat}), 0);
  EXPECT_TRUE(restored_tree(t / "r", src));
  SB_ASSERT_EXIT(sb({"validate", "--catalog", cat}), 0);
}

// An empty file finished before the kill: its record after the resume names the piece that
// lists it, so the backup is complete, restores and validates (it ended "damaged: names no
// piece" while the resume exited 0).
TEST(Day2Resume, AResumedBackupWithAnEmptyFileIsCompleteAndRestores) {
  TempDir t("sbit-resume-empty");
  const std::string src = t / "mini", cat = t / "cat";
  make_file(src + "/a.dbf", 48 * kMiB, 81);
  make_file(src + "/b.dbf", 16 * kMiB, 82);
  write_text(src + "/empty.dat", "");
  const std::vector<std::string> args{"backup", src, "--to", t / "bk", "--catalog", cat,
                                      "--channels", "1", "--max-piece-size", "8M"};
  RunResult killed = sb(args, {{"STRIPEBACK_CRASH_AT", "piece-synced:3"}});
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed.describe();
  std::vector<std::string> again = args;
  again.insert(again.end(), {"--resume", "last"});
  SB_ASSERT_EXIT(sb(again), 0);
  RunResult l = sb({"list", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(l, 0);
  Json lj = parse_json(l);
  ASSERT_EQ(lj["backups"].size(), 1u);
  EXPECT_EQ(lj["backups"][0]["status"].as_string(), "complete") << l.out;
  EXPECT_FALSE(contains(l.out, "names no piece"));
  SB_ASSERT_EXIT(sb({"restore", "--to", t / "r", "--catalog", cat}), 0);
  EXPECT_TRUE(restored_tree(t / "r", src));
  SB_ASSERT_EXIT(sb({"validate", "--catalog", cat}), 0);
}

// Runs the CLI as the unprivileged user nobody (root reads every directory whatever its
// mode), or as ourselves when we are not root.
RunResult sb_unprivileged(const std::vector<std::string>& args) {
  if (::geteuid() != 0) return sb(args);
  std::vector<std::string> argv{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                "--clear-groups", binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return stripeback::testing::run(argv, {{{"STRIPEBACK_CATALOG", std::nullopt}}});
}

TEST(Day2Backup, AnUnreadableDirectoryFailsTheBackupUnlessSkipped) {
  if (::geteuid() == 0 && !exists("/usr/bin/setpriv")) {
    GTEST_SKIP() << "running as root without setpriv: no user to whom a directory is unreadable";
  }
  TempDir t("sbit-unreadable-dir");
  ASSERT_EQ(::chmod(t.path().c_str(), 0777), 0);
  const std::string src = t / "src";
  make_file(src + "/a.dbf", 1 * kMiB, 71);
  make_file(src + "/ts/secret.dbf", 1 * kMiB, 72);
  ASSERT_EQ(::chmod(src.c_str(), 0755), 0);
  ASSERT_EQ(::chmod((src + "/a.dbf").c_str(), 0644), 0);
  ASSERT_EQ(::chmod((src + "/ts").c_str(), 0700), 0);  // root's: unreadable to nobody
  if (::geteuid() != 0) {
    ASSERT_EQ(::chmod((src + "/ts").c_str(), 0), 0);
  }
  std::filesystem::create_directories(t / "work");
  ASSERT_EQ(::chmod((t / "work").c_str(), 0777), 0);
  const std::string cat = t / "work/cat", dest = t / "work/dest";

  RunResult failed = sb_unprivileged({"backup", src, "--to", dest, "--catalog", cat});
  SB_EXPECT_EXIT(failed, 1);
  EXPECT_TRUE(contains(failed.err, src + "/ts")) << failed.describe();
  EXPECT_TRUE(contains(failed.err, "--skip-unreadable"));
  EXPECT_TRUE(!exists(dest) || pieces_in(dest).empty()) << "nothing is written";

  RunResult skipped =
      sb_unprivileged({"backup", src, "--to", dest, "--catalog", cat, "--skip-unreadable", "--json"});
  SB_ASSERT_EXIT(skipped, 0);
  EXPECT_TRUE(contains(skipped.out, src + "/ts")) << "what was skipped is recorded";
  EXPECT_EQ(*parse_json(skipped)["files"].as_u64(), 1u);
  if (::geteuid() != 0) ::chmod((src + "/ts").c_str(), 0700);
}

TEST(Day2Backup, ADestinationInsideASourceIsRefused) {
  TempDir t("sbit-dest-inside");
  const std::string src = t / "src";
  make_file(src + "/a.dbf", 1 * kMiB, 61);
  for (const std::string& dest : {src + "/inside", src, src + "/./deeper/../inside2"}) {
    RunResult r = sb({"backup", src, "--to", dest, "--catalog", t / "cat"});
    SB_EXPECT_EXIT(r, 2);
    EXPECT_TRUE(contains(r.err, "is inside the source")) << r.describe();
  }
  // Through a symbolic link to a directory inside the source.
  ASSERT_EQ(::symlink(src.c_str(), (t / "link").c_str()), 0);
  RunResult via = sb({"backup", src, "--to", t / "link/pieces", "--catalog", t / "cat"});
  SB_EXPECT_EXIT(via, 2);
  EXPECT_TRUE(contains(via.err, "is inside the source"));
  EXPECT_EQ(files_under(src).size(), 1u) << "nothing was written into the source";
  // A sibling whose name starts like the source is not inside it.
  SB_EXPECT_EXIT(sb({"backup", src, "--to", src + "-pieces", "--catalog", t / "cat"}), 0);
}

}  // namespace
}  // namespace stripeback::it
