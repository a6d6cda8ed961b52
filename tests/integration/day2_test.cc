// Defects of features run every night, each kept found: a resume that keeps only what is
// still true of a file and never ends damaged, unreadable directories that fail a backup
// unless told to skip them, and a destination inside a source.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

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

// Runs `args` killed (SIGKILL) at crash point `at`, then `args` with `--resume last` and
// `extra`: the resume's result.
RunResult kill_then_resume(const std::vector<std::string>& args, const std::string& at,
                           const std::vector<std::string>& extra = {},
                           const std::function<void()>& between = {}) {
  RunResult killed = sb(args, {{"STRIPEBACK_CRASH_AT", at}});
  EXPECT_EQ(killed.term_signal, SIGKILL) << killed.describe();
  if (between) between();
  std::vector<std::string> again = args;
  again.insert(again.end(), {"--resume", "last"});
  again.insert(again.end(), extra.begin(), extra.end());
  return sb(again);
}

// Killed with some sections durable; the file is then rewritten at its start and end with
// its size and mtime put back. The resume must not keep the old sections: the restored file
// is the file as it is now, not old head + new tail.
TEST(Day2Resume, AFileRewrittenWithItsMtimePutBackIsReadAgainWhole) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  TempDir t("sbit-resume-ctime");
  const std::string src = t / "src", cat = t / "cat";
  make_file(src + "/big.dbf", 32 * kMiB, 91);
  for (int i = 0; i < 3; ++i) make_file(src + "/f" + std::to_string(i), 3 * kMiB, 92 + i);
  const std::vector<std::string> args{"backup",     src,  "--to",           t / "dest",
                                      "--catalog",  cat,  "--channels",     "1",
                                      "--section-size", "4M", "--max-piece-size", "5M"};
  RunResult r = kill_then_resume(args, "piece-synced:5", {"--json"}, [&] {
    rewrite_keeping_mtime(src + "/big.dbf", 0, 8192, 'H');
    rewrite_keeping_mtime(src + "/big.dbf", 32 * kMiB - 8192, 8192, 'T');
  });
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
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  TempDir t("sbit-resume-empty");
  const std::string src = t / "mini", cat = t / "cat";
  make_file(src + "/a.dbf", 48 * kMiB, 81);
  make_file(src + "/b.dbf", 16 * kMiB, 82);
  write_text(src + "/empty.dat", "");
  const std::vector<std::string> args{"backup", src, "--to", t / "bk", "--catalog", cat,
                                      "--channels", "1", "--max-piece-size", "8M"};
  SB_ASSERT_EXIT(kill_then_resume(args, "piece-synced:3"), 0);
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

// Killed after its file records and before its end record: the resume records the files
// again and the backup is complete, not "damaged: 4 of its 2 file records".
TEST(Day2Resume, AResumeAfterAKillBetweenFilesAndEndIsComplete) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  TempDir t("sbit-resume-files-end");
  const std::string src = t / "src", cat = t / "cat";
  make_file(src + "/a.dbf", 3 * kMiB, 111);
  make_file(src + "/b.dbf", 2 * kMiB, 112);
  const std::vector<std::string> args{"backup", src, "--to", t / "p", "--catalog", cat,
                                      "--channels", "2"};
  SB_ASSERT_EXIT(kill_then_resume(args, "backup-files-recorded"), 0);
  RunResult l = sb({"list", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(l, 0);
  Json lj = parse_json(l);
  ASSERT_EQ(lj["backups"].size(), 1u);
  EXPECT_EQ(lj["backups"][0]["status"].as_string(), "complete") << l.out << l.err;
  SB_ASSERT_EXIT(sb({"restore", "--to", t / "r", "--catalog", cat}), 0);
  EXPECT_TRUE(restored_tree(t / "r", src));
}

// A backup killed, another completed, then the first resumed, all within a second or so:
// a rebuild from the destination takes the autobackup the resume wrote (the newest, though
// its backup id is the smaller) and finds the resumed backup complete with every file.
TEST(Day2Resume, ARebuildAfterAResumeFindsTheResumedBackupComplete) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  TempDir t("sbit-resume-rebuild");
  const std::string src = t / "src", cat = t / "cat";
  for (int i = 0; i < 6; ++i) make_file(src + "/f" + std::to_string(i), 3 * kMiB, 160 + i);
  const std::vector<std::string> args{"backup", src, "--to", t / "p", "--catalog", cat,
                                      "--channels", "1", "--max-open-files", "1",
                                      "--checkpoint-interval", "4M"};
  RunResult killed = sb(args, {{"STRIPEBACK_CRASH_AT", "piece-synced:2"}});
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed.describe();
  SB_ASSERT_EXIT(sb(args), 0);  // backup 2, complete
  std::vector<std::string> again = args;
  again.insert(again.end(), {"--resume", "1"});
  SB_ASSERT_EXIT(sb(again), 0);
  RunResult rb = sb({"catalog", "rebuild", "--from", t / "p", "--catalog", t / "new"});
  SB_ASSERT_EXIT(rb, 0);
  Json lj = parse_json(sb({"list", "--catalog", t / "new", "--json"}));
  ASSERT_EQ(lj["backups"].size(), 2u) << rb.out;
  for (const auto& b : lj["backups"].items()) {
    EXPECT_EQ(b["status"].as_string(), "complete") << b["id"].as_u64().value_or(0);
    EXPECT_EQ(*b["files"].as_u64(), 6u);
  }
  SB_ASSERT_EXIT(sb({"restore", "--to", t / "r", "--catalog", t / "new", "--backup", "1"}), 0);
  EXPECT_TRUE(restored_tree(t / "r", src));
}

// A single large file, no sections, one file open at a time: killed after a few
// checkpoints, the resume keeps the finished start of the file and reads only the rest
// (before checkpoints, the one open piece held everything and a resume kept nothing).
TEST(Day2Resume, CheckpointsMakeAKilledBackupResumable) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  TempDir t("sbit-checkpoints");
  const std::string src = t / "src", cat = t / "cat";
  make_file(src + "/one.dbf", 40 * kMiB, 101);
  const std::vector<std::string> args{"backup", src, "--to", t / "dest", "--catalog", cat,
                                      "--channels", "1", "--max-open-files", "1",
                                      "--checkpoint-interval", "8M"};
  RunResult r = kill_then_resume(args, "piece-synced:3", {"--json"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  const uint64_t kept = *j["resumed"]["bytes_kept"].as_u64();
  EXPECT_GE(kept, 14 * kMiB) << "two checkpoints of 8 MiB were durable";
  EXPECT_EQ(*j["bytes_read"].as_u64() + kept, 40 * kMiB) << "nothing kept is read again";
  SB_ASSERT_EXIT(sb({"restore", "--to", t / "r", "--catalog", cat}), 0);
  EXPECT_TRUE(restored_tree(t / "r", src));
}

// Checkpoints are on by default (every 256 MiB or minute), by time too, and can be turned
// off; a bad value is refused naming the flag.
TEST(Day2Resume, CheckpointsByDefaultByTimeAndOff) {
  TempDir t("sbit-checkpoints-default");
  const std::string src = t / "src";
  make_file(src + "/a.dbf", 12 * kMiB, 102);
  RunResult d = sb({"backup", src, "--to", t / "d1", "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(d, 0);
  Json dj = parse_json(d);
  EXPECT_EQ(*dj["checkpoint_bytes"].as_u64(), 256 * kMiB);
  EXPECT_EQ(dj["checkpoint_interval_s"].as_double(), 60.0);
  // 12 MiB read at 4 MiB/s with a checkpoint every second: at least two checkpoints.
  RunResult timed = sb({"backup", src, "--to", t / "d2", "--catalog", t / "cat", "--json",
                        "--channels", "1", "--rate", "4M", "--checkpoint-interval", "1s"});
  SB_ASSERT_EXIT(timed, 0);
  EXPECT_GE(*parse_json(timed)["channels"][0]["checkpoints"].as_u64(), 2u) << timed.out;
  EXPECT_GE(pieces_in(t / "d2").size(), 3u);
  RunResult off = sb({"backup", src, "--to", t / "d3", "--catalog", t / "cat", "--json",
                      "--channels", "1", "--checkpoint-interval", "off"});
  SB_ASSERT_EXIT(off, 0);
  EXPECT_EQ(*parse_json(off)["checkpoint_bytes"].as_u64(), 0u);
  EXPECT_EQ(pieces_in(t / "d3").size(), 1u);
  SB_ASSERT_EXIT(sb({"restore", "--to", t / "r", "--catalog", t / "cat", "--backup", "2"}), 0);
  EXPECT_TRUE(restored_tree(t / "r", src));
  RunResult bad = sb({"backup", src, "--to", t / "d4", "--catalog", t / "cat",
                      "--checkpoint-interval", "often"});
  SB_EXPECT_EXIT(bad, 2);
  EXPECT_TRUE(contains(bad.err, "--checkpoint-interval")) << bad.describe();
}

// --duration takes the same forms as --max-duration: 90m is an hour and a half.
TEST(Day2Backup, DurationTakesUnitsLikeMaxDuration) {
  TempDir t("sbit-duration-units");
  make_file(t / "src/a.dbf", 1 * kMiB, 103);
  for (const char* d : {"90m", "01:30", "5400s", "2h"})
    SB_EXPECT_EXIT(sb({"backup", t / "src", "--to", t / "d", "--catalog", t / "cat",
                       "--duration", d}), 0);
  RunResult bad = sb({"backup", t / "src", "--to", t / "d", "--catalog", t / "cat",
                      "--duration", "90x"});
  SB_EXPECT_EXIT(bad, 2);
  EXPECT_TRUE(contains(bad.err, "invalid --duration"));
}

// Smaller defects: a job with nothing to do has no bottleneck; --delta and --force are
// alternatives; a restore's progress ends at its total, zero blocks counted; report jobs
// records what a delta restore wrote, not the files' size.
TEST(Day2Report, EmptyJobsDeltaWithForceProgressAndJobTotals) {
  TempDir t("sbit-day2-report");
  std::filesystem::create_directories(t / "empty");
  RunResult e = sb({"backup", t / "empty", "--to", t / "pe", "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(e, 0);
  EXPECT_EQ(parse_json(e)["verdict"]["bound_by"].as_string(), "none") << e.out;

  // 8 MiB with 4 MiB of zeros in the middle: zero frames are part of the progress total.
  const std::string src = t / "src", file = src + "/z.dbf";
  make_file(file, 8 * kMiB, 131);
  {
    int fd = ::open(file.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    std::string zeros(4 * kMiB, '\0');
    ASSERT_EQ(::pwrite(fd, zeros.data(), zeros.size(), 2 * kMiB), static_cast<ssize_t>(zeros.size()));
    ::close(fd);
  }
  SB_ASSERT_EXIT(sb({"backup", src, "--to", t / "p", "--catalog", t / "cat"}), 0);
  const std::string log = t / "progress.log";
  SB_ASSERT_EXIT(sb({"restore", "--to", t / "r", "--catalog", t / "cat", "--backup", "2",
                     "--progress-json=" + log}), 0);
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  std::string error;
  auto j = Json::parse(last, &error);
  ASSERT_TRUE(j) << error << ": " << last;
  EXPECT_TRUE((*j)["finished"].as_bool());
  EXPECT_EQ(*(*j)["bytes_done"].as_u64(), *(*j)["bytes_total"].as_u64()) << last;
  EXPECT_EQ(*(*j)["bytes_total"].as_u64(), 8 * kMiB);

  RunResult both = sb({"restore", "--to", t / "r", "--catalog", t / "cat", "--delta", "--force"});
  SB_EXPECT_EXIT(both, 2);
  EXPECT_TRUE(contains(both.err, "alternatives"));

  // One page changed, restored with --delta: report jobs has what was written.
  make_file(t / "one/x.dbf", 8 * kMiB, 132);
  SB_ASSERT_EXIT(sb({"backup", t / "one", "--to", t / "p3", "--catalog", t / "cat"}), 0);
  SB_ASSERT_EXIT(sb({"restore", "--to", t / "r3", "--catalog", t / "cat", "--backup", "3"}), 0);
  const std::string restored = restored_path(t / "r3", t / "one/x.dbf");
  {
    int fd = ::open(restored.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    std::string page(8192, 'x');
    ASSERT_EQ(::pwrite(fd, page.data(), page.size(), 4 * kMiB), 8192);
    ::close(fd);
  }
  RunResult d = sb({"restore", "--to", t / "r3", "--catalog", t / "cat", "--backup", "3",
                    "--delta", "--json"});
  SB_ASSERT_EXIT(d, 0);
  const uint64_t written = *parse_json(d)["bytes_written"].as_u64();
  EXPECT_LT(written, 8 * kMiB) << d.out;
  RunResult jobs = sb({"report", "jobs", "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(jobs, 0);
  Json jj = parse_json(jobs);
  bool found = false;
  for (const auto& job : jj["jobs"].items())
    if (job["type"].as_string() == "restore" && *job["bytes_written"].as_u64() == written)
      found = true;
  EXPECT_TRUE(found) << jobs.out;
}

// Two `delete obsolete` at once: one deletes, the other waits and finds nothing left; no
// deletion is reported twice. The text summary counts the pieces actually removed.
TEST(Day2Delete, TwoDeletesAtOnceNeverReportTheSameDeletion) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  TempDir t("sbit-delete-twice");
  make_file(t / "src/a.dbf", 4 * kMiB, 141);
  for (int i = 0; i < 4; ++i)
    SB_ASSERT_EXIT(sb({"backup", t / "src", "--to", t / "p", "--catalog", t / "cat"}), 0);
  SB_ASSERT_EXIT(sb({"configure", "retention", "redundancy", "1", "--catalog", t / "cat"}), 0);
  auto one = sb_start({"delete", "obsolete", "--catalog", t / "cat", "--json"});
  auto two = sb_start({"delete", "obsolete", "--catalog", t / "cat", "--json"});
  RunResult r1 = one->wait(), r2 = two->wait();
  SB_ASSERT_EXIT(r1, 0);
  SB_ASSERT_EXIT(r2, 0);
  std::multiset<uint64_t> reported;
  for (const RunResult* r : {&r1, &r2}) {
    const Json j = parse_json(*r);
    for (const auto& b : j["backups"].items()) reported.insert(*b["backup_id"].as_u64());
  }
  EXPECT_EQ(reported, (std::multiset<uint64_t>{1, 2, 3})) << r1.out << "\n" << r2.out;
  // A missing piece is not counted as removed.
  SB_ASSERT_EXIT(sb({"backup", t / "src", "--to", t / "p", "--catalog", t / "cat"}), 0);
  for (const auto& p : pieces_in(t / "p")) {
    if (base_names({p})[0].starts_with("sb4-")) {
      ASSERT_EQ(::unlink(p.c_str()), 0);
    }
  }
  RunResult d = sb({"delete", "obsolete", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(d, 0);
  EXPECT_TRUE(contains(d.out, "1 backup(s) deleted, 0 piece(s) removed")) << d.out;
  // Killed once its intent is recorded: the rerun finishes it and says so in its count.
  SB_ASSERT_EXIT(sb({"backup", t / "src", "--to", t / "p", "--catalog", t / "cat"}), 0);
  RunResult killed = sb({"delete", "obsolete", "--catalog", t / "cat"},
                        {{"STRIPEBACK_CRASH_AT", "delete-intent-recorded"}});
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed.describe();
  RunResult rerun = sb({"delete", "obsolete", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(rerun, 0);
  EXPECT_TRUE(contains(rerun.out, "1 backup(s) deleted (1 by finishing an interrupted deletion)"))
      << rerun.out;
}

// --partial with multiplexing: the files finished before the window closed are kept and
// restore identical, and every piece left on the destination is one the catalog records
// (none orphaned, none unresumable).
TEST(Day2Backup, APartialBackupWithMultiplexingKeepsItsFinishedFilesAndNoOrphans) {
  TempDir t("sbit-partial-multiplex");
  for (int i = 0; i < 8; ++i)
    make_file(t / ("src/f" + std::to_string(i) + ".dbf"), 4 * kMiB, 150 + i);
  RunResult r = sb({"backup", t / "src", "--to", t / "p", "--catalog", t / "cat", "--json",
                    "--channels", "2", "--max-open-files", "8", "--rate", "4M",
                    "--duration", "0:00:02", "--partial", "--checkpoint-interval", "2M"});
  SB_ASSERT_EXIT(r, 3);
  Json j = parse_json(r);
  const uint64_t kept = *j["files"].as_u64();
  EXPECT_GE(kept, 1u) << r.out;
  EXPECT_LT(kept, 8u) << r.out;
  RunResult l = sb({"list", "--catalog", t / "cat", "--json"});
  Json lj = parse_json(l);
  std::set<std::string> recorded;
  for (const auto& p : lj["backups"][0]["piece_list"].items()) recorded.insert(p["name"].as_string());
  for (const auto& p : base_names(pieces_in(t / "p")))
    EXPECT_TRUE(recorded.count(p)) << p << " is on the destination but not recorded";
  SB_ASSERT_EXIT(sb({"restore", "--to", t / "r", "--catalog", t / "cat"}), 0);
  size_t restored = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string f = t / ("src/f" + std::to_string(i) + ".dbf");
    if (!exists(restored_path(t / "r", f))) continue;
    ++restored;
    EXPECT_TRUE(same_file(f, restored_path(t / "r", f)));
  }
  EXPECT_EQ(restored, kept);
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
  if (::geteuid() == 0 &&
      stripeback::testing::run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                "--clear-groups", "/usr/bin/test", "-x", binary()})
              .exit_code != 0) {
    GTEST_SKIP() << "the CLI under test (" << binary()
                 << ") is not reachable by user nobody (a private directory above it): it "
                    "cannot be run unprivileged here";
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
