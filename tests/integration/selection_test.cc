// What a backup selects (docs/selection.md): --exclude and --exclude-from leave files and
// directories out (counted and listed, not restored, an excluded directory not read at
// all), also with --level and --resume; `report need-backup` lists the files whose backups
// fall short of a policy; --not-backed-up-since skips what a recent complete backup holds.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kMiB = 1 << 20;

std::set<std::string> strings_of(const Json& array) {
  std::set<std::string> out;
  for (const auto& v : array.items()) out.insert(v.as_string());
  return out;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class Selection : public ::testing::Test {
 protected:
  void SetUp() override {
    make_file(src() + "/a.dbf", 3 * kMiB + 11, 1);
    make_file(src() + "/b.tmp", 1 * kMiB, 2);
    make_file(src() + "/sub/c.dbf", 2 * kMiB, 3);
    make_file(src() + "/sub/d.tmp", 100, 4);
    make_file(src() + "/cache/e.dbf", 1 * kMiB, 5);
    make_file(src() + "/base/pgsql_tmp42/f", 4096, 6);
  }
  std::string src() const { return t_ / "src"; }
  std::string cat() const { return t_ / "cat"; }
  RunResult backup(std::vector<std::string> extra, const Env& env = {}) {
    std::vector<std::string> a{"backup", src(), "--to", t_ / "dest", "--catalog", cat()};
    a.insert(a.end(), extra.begin(), extra.end());
    return sb(a, env);
  }
  Json backup_json(std::vector<std::string> extra, const Env& env = {}) {
    extra.push_back("--json");
    RunResult r = backup(extra, env);
    EXPECT_TRUE(r.exited(0)) << r.describe();
    return parse_json(r);
  }
  TempDir t_{"sbit-selection"};
};

TEST_F(Selection, ExcludedPathsAreNotBackedUpNorRestoredAndAreListed) {
  Json j = backup_json({"--exclude", "*.tmp", "--exclude", "/cache", "--exclude", "pgsql_tmp*"});
  EXPECT_EQ(j["files"].as_u64(), 2u);
  EXPECT_EQ(j["excluded"].as_u64(), 4u);
  EXPECT_EQ(strings_of(j["excluded_paths"]),
            (std::set<std::string>{src() + "/b.tmp", src() + "/sub/d.tmp", src() + "/cache",
                                   src() + "/base/pgsql_tmp42"}));
  SB_ASSERT_EXIT(sb({"restore", "--to", t_ / "r", "--catalog", cat()}), 0);
  EXPECT_TRUE(restored_exactly(t_ / "r", {src() + "/a.dbf", src() + "/sub/c.dbf"}));
  EXPECT_FALSE(exists(restored_path(t_ / "r", src() + "/cache")))
      << "an excluded directory is not recorded either";
  // The text summary says how many were left out.
  RunResult text = backup({"--exclude", "*.tmp"});
  SB_ASSERT_EXIT(text, 0);
  EXPECT_TRUE(contains(text.out, "excluded: 2 path(s)"));
  // Without exclusions the counts are there, at zero.
  Json none = backup_json({});
  EXPECT_EQ(none["excluded"].as_u64(), 0u);
  EXPECT_EQ(none["excluded_paths"].size(), 0u);
  EXPECT_EQ(none["files"].as_u64(), 6u);
}

TEST_F(Selection, AnAnchoredPatternWithDoubleStarLeavesOutOnlyWhatItNames) {
  make_file(src() + "/logs/x.old", 10, 7);
  make_file(src() + "/app/logs/y.old", 10, 8);
  make_file(src() + "/app/logs/y.new", 10, 9);
  Json j = backup_json({"--exclude", "**/logs/*.old"});
  EXPECT_EQ(strings_of(j["excluded_paths"]),
            (std::set<std::string>{src() + "/logs/x.old", src() + "/app/logs/y.old"}));
  Json k = backup_json({"--exclude", "logs/*.old"});
  EXPECT_EQ(strings_of(k["excluded_paths"]), (std::set<std::string>{src() + "/logs/x.old"}));
}

TEST_F(Selection, ExcludeFromReadsOnePatternALineSkippingCommentsAndBlankLines) {
  write_text(t_ / "patterns", "# scratch files\n\n*.tmp\r\n/cache\n#/sub\n");
  Json j = backup_json({"--exclude-from", t_ / "patterns"});
  EXPECT_EQ(strings_of(j["excluded_paths"]),
            (std::set<std::string>{src() + "/b.tmp", src() + "/sub/d.tmp", src() + "/cache"}));
  EXPECT_EQ(j["files"].as_u64(), 3u) << "a.dbf, sub/c.dbf and base/pgsql_tmp42/f";
}

TEST_F(Selection, AnUnreadableExcludeFromFileOrABadPatternIsRefusedBeforeAnythingIsWritten) {
  RunResult missing = backup({"--exclude-from", t_ / "no-such-file"});
  SB_EXPECT_EXIT(missing, 2);
  EXPECT_TRUE(contains(missing.err, "--exclude-from '" + (t_ / "no-such-file") + "'"));
  EXPECT_TRUE(contains(missing.err, "No such file"));
  RunResult dir = backup({"--exclude-from", t_.path()});
  SB_EXPECT_EXIT(dir, 2);
  EXPECT_TRUE(contains(dir.err, "is a directory"));
  RunResult bad = backup({"--exclude", "data[0-9"});
  SB_EXPECT_EXIT(bad, 2);
  EXPECT_TRUE(contains(bad.err, "'data[0-9'"));
  EXPECT_TRUE(contains(bad.err, "not closed"));
  write_text(t_ / "bad-patterns", "*.tmp\n[oops\n");
  RunResult bad_line = backup({"--exclude-from", t_ / "bad-patterns"});
  SB_EXPECT_EXIT(bad_line, 2);
  EXPECT_TRUE(contains(bad_line.err, "line 2"));
  EXPECT_TRUE(contains(bad_line.err, "'[oops'"));
  EXPECT_FALSE(exists(t_ / "dest")) << "nothing was written";
}

// Runs the CLI as user nobody (root reads every directory whatever its mode), or as
// ourselves when we are not root.
RunResult sb_unprivileged(const std::vector<std::string>& args) {
  if (::geteuid() != 0) return sb(args);
  std::vector<std::string> argv{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                "--clear-groups", binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return stripeback::testing::run(argv, {{{"STRIPEBACK_CATALOG", std::nullopt}}});
}

TEST(SelectionWalk, AnExcludedDirectoryIsNotReadSoAnUnreadableOneIsNoError) {
  if (::geteuid() == 0 && !exists("/usr/bin/setpriv"))
    GTEST_SKIP() << "running as root without setpriv: no user to whom a directory is unreadable";
  if (::geteuid() == 0 &&
      stripeback::testing::run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                "--clear-groups", "/usr/bin/test", "-x", binary()})
              .exit_code != 0)
    GTEST_SKIP() << "the CLI under test (" << binary()
                 << ") is not reachable by user nobody: it cannot be run unprivileged here";
  TempDir t("sbit-excluded-unreadable");
  ASSERT_EQ(::chmod(t.path().c_str(), 0777), 0);
  const std::string src = t / "src";
  make_file(src + "/a.dbf", 1 * kMiB, 71);
  make_file(src + "/private/secret.dbf", 1 * kMiB, 72);
  ASSERT_EQ(::chmod(src.c_str(), 0755), 0);
  ASSERT_EQ(::chmod((src + "/a.dbf").c_str(), 0644), 0);
  ASSERT_EQ(::chmod((src + "/private").c_str(), ::geteuid() == 0 ? 0700 : 0), 0);
  std::filesystem::create_directories(t / "work");
  ASSERT_EQ(::chmod((t / "work").c_str(), 0777), 0);
  const std::string cat = t / "work/cat", dest = t / "work/dest";
  // Not excluded, the directory fails the backup: the test's premise.
  SB_EXPECT_EXIT(sb_unprivileged({"backup", src, "--to", dest, "--catalog", cat}), 1);
  RunResult r = sb_unprivileged(
      {"backup", src, "--to", dest, "--catalog", cat, "--exclude", "/private", "--json"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_EQ(j["files"].as_u64(), 1u);
  EXPECT_EQ(j["skipped"].size(), 0u) << "nothing was tried and skipped";
  EXPECT_EQ(strings_of(j["excluded_paths"]), (std::set<std::string>{src + "/private"}));
  if (::geteuid() != 0) ::chmod((src + "/private").c_str(), 0700);
}

// A level 1 with exclusions holds what changed of the files it takes; a file it leaves out
// is not "deleted": restoring the level 1 gives its files, and a restore of everything
// still takes the left-out file from the level 0.
TEST_F(Selection, ALevel1WithExclusionsRestoresCorrectly) {
  const uint64_t l0 = backup_id_of(backup_json({"--level", "0"}));
  const std::string b_before = bytes_of(src() + "/b.tmp");
  make_file(src() + "/a.dbf", 3 * kMiB + 11, 21);  // changed
  make_file(src() + "/b.tmp", 1 * kMiB, 22);       // changed, but left out
  Json l1 = backup_json({"--level", "1", "--exclude", "*.tmp"});
  const uint64_t l1_id = backup_id_of(l1);
  EXPECT_EQ(l1["excluded"].as_u64(), 2u);
  for (const auto& p : l1["parents"].items()) EXPECT_EQ(p.as_u64(), l0);
  SB_ASSERT_EXIT(sb({"restore", "--to", t_ / "r1", "--catalog", cat(), "--backup",
                     std::to_string(l1_id)}),
                 0);
  EXPECT_TRUE(restored_exactly(t_ / "r1", {src() + "/a.dbf", src() + "/sub/c.dbf",
                                           src() + "/cache/e.dbf",
                                           src() + "/base/pgsql_tmp42/f"}));
  SB_ASSERT_EXIT(sb({"restore", "--to", t_ / "all", "--catalog", cat()}), 0);
  EXPECT_TRUE(same_file(src() + "/a.dbf", restored_path(t_ / "all", src() + "/a.dbf")));
  EXPECT_EQ(bytes_of(restored_path(t_ / "all", src() + "/b.tmp")), b_before)
      << "the left-out file comes from the level 0";
  SB_ASSERT_EXIT(sb({"validate", "--catalog", cat(), "--backup", std::to_string(l1_id)}), 0);
}

// A resume applies the exclusions it is given; it refuses them when the interrupted run
// already backed up what they leave out.
TEST_F(Selection, AResumeRefusesExclusionsThatLeaveOutWhatTheInterruptedRunHolds) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  for (int i = 0; i < 4; ++i) make_file(src() + "/big" + std::to_string(i) + ".dbf", 6 * kMiB, 30 + i);
  const std::vector<std::string> args{"--channels", "1", "--max-piece-size", "5M",
                                      "--files-per-set", "1"};
  RunResult killed = backup(args, {{"STRIPEBACK_CRASH_AT", "piece-synced:2"}});
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed.describe();
  std::vector<std::string> again = args;
  again.insert(again.end(), {"--resume", "last", "--exclude", "big*"});
  RunResult refused = backup(again);
  SB_EXPECT_EXIT(refused, 2);
  EXPECT_TRUE(contains(refused.err, "already holds"));
  EXPECT_TRUE(contains(refused.err, "'big*'"));
  again = args;
  again.insert(again.end(), {"--resume", "last", "--exclude", "*.tmp", "--json"});
  RunResult resumed = backup(again);
  SB_ASSERT_EXIT(resumed, 0);
  Json j = parse_json(resumed);
  EXPECT_GT(j["resumed"]["backup_id"].as_u64().value_or(0), 0u);
  EXPECT_EQ(j["excluded"].as_u64(), 2u);
  SB_ASSERT_EXIT(sb({"restore", "--to", t_ / "r", "--catalog", cat()}), 0);
  EXPECT_FALSE(exists(restored_path(t_ / "r", src() + "/b.tmp")));
  for (int i = 0; i < 4; ++i) {
    const std::string f = src() + "/big" + std::to_string(i) + ".dbf";
    EXPECT_TRUE(same_file(f, restored_path(t_ / "r", f)));
  }
}

std::string day(int d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2026-11-%02dT02:00:00Z", d);
  return buf;
}

class NeedBackup : public ::testing::Test {
 protected:
  void SetUp() override {
    make_file(t_ / "src/a.dbf", 1 * kMiB, 41);
    make_file(t_ / "src/b.dbf", 1 * kMiB, 42);
  }
  // A backup of `source` on day `d` (fake clock).
  void backup_on(int d, const std::string& source) {
    SB_ASSERT_EXIT(sb({"backup", source, "--to", t_ / "dest", "--catalog", t_ / "cat"},
                      {{"STRIPEBACK_FAKE_NOW", day(d)}}),
                   0);
  }
  Json report(std::vector<std::string> extra, int on_day = 6) {
    std::vector<std::string> a{"report", "need-backup", "--catalog", t_ / "cat", "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    RunResult r = sb(a, {{"STRIPEBACK_FAKE_NOW", day(on_day)}});
    EXPECT_TRUE(r.exited(0)) << r.describe();
    return parse_json(r);
  }
  std::map<std::string, const Json*> by_path(const Json& j) {
    std::map<std::string, const Json*> out;
    for (const auto& f : j["files"].items()) out[f["path"].as_string()] = &f;
    return out;
  }
  TempDir t_{"sbit-need-backup"};
};

TEST_F(NeedBackup, RedundancyAndDaysListTheFilesThatFallShort) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAKE_NOW");
  const std::string a = t_ / "src/a.dbf", b = t_ / "src/b.dbf";
  backup_on(1, t_ / "src");  // 1: a, b
  backup_on(5, a);           // 2: a
  Json two = report({"--redundancy", "2"});
  EXPECT_EQ(two["policy"].as_string(), "redundancy 2");
  auto rows = by_path(two);
  ASSERT_EQ(rows.size(), 1u) << "only b has fewer than two backups";
  ASSERT_TRUE(rows.count(b));
  EXPECT_EQ((*rows[b])["backups"].as_u64(), 1u);
  EXPECT_EQ((*rows[b])["newest_backup_id"].as_u64(), 1u);
  EXPECT_EQ((*rows[b])["newest_time"].as_string(), "2026-11-01T02:00:00Z");
  EXPECT_EQ(report({"--redundancy", "1"})["files"].size(), 0u);
  // On day 6, a window of 3 days: b's newest backup (day 1) is older; a's (day 5) is not.
  Json days = report({"--days", "3"});
  EXPECT_EQ(days["policy"].as_string(), "recovery-window 3");
  rows = by_path(days);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows.count(b));
  Json wide = report({"--days", "6"});
  EXPECT_EQ(wide["files"].size(), 0u);
  // Day 12: neither is within 3 days.
  EXPECT_EQ(report({"--days", "3"}, 12)["files"].size(), 2u);
  // The configured policy is the default.
  SB_ASSERT_EXIT(sb({"configure", "retention", "redundancy", "2", "--catalog", t_ / "cat"}), 0);
  Json configured = report({});
  EXPECT_EQ(configured["policy"].as_string(), "redundancy 2");
  EXPECT_EQ(by_path(configured).count(b), 1u);
  // Text: a table with the path, and exit 0.
  RunResult text = sb({"report", "need-backup", "--redundancy", "2", "--catalog", t_ / "cat"},
                      {{"STRIPEBACK_FAKE_NOW", day(6)}});
  SB_ASSERT_EXIT(text, 0);
  EXPECT_TRUE(contains(text.out, b));
  EXPECT_FALSE(contains(text.out, a));
}

TEST_F(NeedBackup, WithASourceAFileNeverBackedUpIsListed) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAKE_NOW");
  backup_on(1, t_ / "src");
  make_file(t_ / "src/new/n.dbf", 4096, 43);
  Json j = report({t_ / "src"});
  EXPECT_EQ(j["policy"].as_string(), "redundancy 1") << "the default without a configured policy";
  auto rows = by_path(j);
  ASSERT_EQ(rows.size(), 1u);
  const std::string n = t_ / "src/new/n.dbf";
  ASSERT_TRUE(rows.count(n));
  EXPECT_EQ((*rows[n])["backups"].as_u64(), 0u);
  EXPECT_TRUE((*rows[n])["newest_backup_id"].is_null());
  EXPECT_TRUE((*rows[n])["newest_time"].is_null());
  // Without SOURCE only what the catalog knows is looked at.
  EXPECT_EQ(report({})["files"].size(), 0u);
  RunResult text = sb({"report", "need-backup", t_ / "src", "--catalog", t_ / "cat"});
  SB_ASSERT_EXIT(text, 0);
  EXPECT_TRUE(contains(text.out, "never"));
  // A catalog not made yet: every file under SOURCE needs a backup; exit 0.
  RunResult fresh = sb({"report", "need-backup", t_ / "src", "--catalog", t_ / "none", "--json"});
  SB_ASSERT_EXIT(fresh, 0);
  EXPECT_EQ(parse_json(fresh)["files"].size(), 3u);
  SB_EXPECT_EXIT(sb({"report", "need-backup", "--redundancy", "1", "--days", "2", "--catalog",
                     t_ / "cat"}),
                 2);
}

TEST_F(Selection, NotBackedUpSinceSkipsWhatARecentCompleteBackupHolds) {
  backup_json({});
  make_file(src() + "/sub/c.dbf", 2 * kMiB + 1, 51);  // changed: size and mtime
  make_file(src() + "/new.dbf", 1 * kMiB, 52);        // never backed up
  Json j = backup_json({"--not-backed-up-since", "1h"});
  EXPECT_EQ(j["files"].as_u64(), 2u);
  EXPECT_EQ(strings_of(j["skipped_backed_up_paths"]),
            (std::set<std::string>{src() + "/a.dbf", src() + "/b.tmp", src() + "/sub/d.tmp",
                                   src() + "/cache/e.dbf", src() + "/base/pgsql_tmp42/f"}));
  EXPECT_EQ(j["skipped_backed_up"].as_u64(), 5u);
  const uint64_t id = backup_id_of(j);
  SB_ASSERT_EXIT(sb({"restore", "--to", t_ / "r", "--catalog", cat(), "--backup",
                     std::to_string(id)}),
                 0);
  EXPECT_TRUE(restored_exactly(t_ / "r", {src() + "/sub/c.dbf", src() + "/new.dbf"}))
      << "this backup alone holds only what it did not skip";
  // Nothing is skipped for a time after every backup began, and the summary says so.
  Json later = backup_json({"--not-backed-up-since", "2099-01-01T00:00:00Z"});
  EXPECT_EQ(later["skipped_backed_up"].as_u64(), 0u);
  EXPECT_EQ(later["files"].as_u64(), 7u);
  RunResult text = backup({"--not-backed-up-since", "2d"});
  SB_ASSERT_EXIT(text, 0);
  EXPECT_TRUE(contains(text.out, "skipped: 7 file(s)"));
  RunResult bad = backup({"--not-backed-up-since", "yesterday"});
  SB_EXPECT_EXIT(bad, 2);
  EXPECT_TRUE(contains(bad.err, "--not-backed-up-since"));
}

TEST_F(Selection, NotBackedUpSinceCountsOnlyRestorableBackups) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  RunResult killed = backup({"--channels", "1"}, {{"STRIPEBACK_CRASH_AT", "piece-synced:1"}});
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed.describe();
  Json j = backup_json({"--not-backed-up-since", "1h"});
  EXPECT_EQ(j["skipped_backed_up"].as_u64(), 0u) << "an interrupted backup does not count";
  EXPECT_EQ(j["files"].as_u64(), 6u);
}

}  // namespace
}  // namespace stripeback::it
