// Bad usage and bad input exit with code 2 and a message that names the culprit, without
// writing anything.
#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

// One catalog with one complete backup, shared by the tests of this suite.
class Usage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("sbit-usage");
    make_file(*dir_ / "src/f1", 10000, 31);
    make_file(*dir_ / "src/d/f2", 20000, 32);
    backup_ = new RunResult(sb({"backup", *dir_ / "src", "--to", *dir_ / "pieces", "--catalog",
                                *dir_ / "cat", "--tag", "base"}));
  }
  static void TearDownTestSuite() {
    delete backup_;
    delete dir_;
    backup_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override { SB_ASSERT_EXIT(*backup_, 0); }

  static std::string cat() { return *dir_ / "cat"; }
  static std::string src() { return *dir_ / "src"; }
  // The number of backups the shared catalog lists.
  static size_t backups_listed() {
    RunResult l = sb({"list", "--catalog", cat(), "--json"});
    EXPECT_TRUE(l.exited(0)) << l.describe();
    return parse_json(l)["backups"].size();
  }

  static void expect_usage_error(const RunResult& r, const std::vector<std::string>& mentions) {
    EXPECT_TRUE(r.exited(2)) << r.describe();
    EXPECT_FALSE(r.err.empty()) << "no message on stderr\n" << r.describe();
    for (const auto& m : mentions) EXPECT_TRUE(contains(r.err, m)) << r.describe();
  }

  TempDir t_{"sbit-usage-t"};
  static TempDir* dir_;
  static RunResult* backup_;
};
TempDir* Usage::dir_ = nullptr;
RunResult* Usage::backup_ = nullptr;

TEST_F(Usage, UnknownFlag) {
  expect_usage_error(sb({"backup", src(), "--to", t_ / "p", "--catalog", cat(), "--frobnicate"}),
                     {"--frobnicate"});
  expect_usage_error(sb({"restore", "--to", t_ / "r", "--catalog", cat(), "--frobnicate"}),
                     {"--frobnicate"});
  expect_usage_error(sb({"list", "--catalog", cat(), "--frobnicate"}), {"--frobnicate"});
  EXPECT_FALSE(exists(t_ / "p"));
  EXPECT_FALSE(exists(t_ / "r"));
  EXPECT_EQ(backups_listed(), 1u);
}

TEST_F(Usage, NoOrUnknownCommand) {
  expect_usage_error(sb({}), {"subcommand"});
  // (CLI11 answers "A subcommand is required" here rather than naming "frobnicate".)
  expect_usage_error(sb({"frobnicate"}), {});
}

TEST_F(Usage, MissingSourcePathIsNamed) {
  std::string missing = t_ / "no-such-dir/file.dbf";
  expect_usage_error(sb({"backup", missing, "--to", t_ / "p", "--catalog", cat()}), {missing});
  // Also when it is one of several sources: nothing is backed up.
  expect_usage_error(sb({"backup", src(), missing, "--to", t_ / "p", "--catalog", cat()}),
                     {missing});
  EXPECT_TRUE(pieces_in(t_ / "p").empty());
  EXPECT_EQ(backups_listed(), 1u);
}

TEST_F(Usage, BackupWithoutTo) {
  expect_usage_error(sb({"backup", src(), "--catalog", cat()}), {"--to"});
  EXPECT_EQ(backups_listed(), 1u);
}

TEST_F(Usage, BackupWithoutSource) {
  expect_usage_error(sb({"backup", "--to", t_ / "p", "--catalog", cat()}), {"SOURCE"});
}

TEST_F(Usage, RestoreWithoutTo) {
  expect_usage_error(sb({"restore", "--catalog", cat()}), {"--to"});
}

TEST_F(Usage, RestoreTagAndBackupTogether) {
  expect_usage_error(
      sb({"restore", "--to", t_ / "r", "--catalog", cat(), "--tag", "base", "--backup", "1"}),
      {"--tag", "--backup"});
  EXPECT_FALSE(exists(t_ / "r"));
}

TEST_F(Usage, CatalogIsARegularFile) {
  std::string file = t_ / "not-a-dir";
  write_text(file, "precious");
  expect_usage_error(sb({"list", "--catalog", file}), {file});
  expect_usage_error(sb({"backup", src(), "--to", t_ / "p", "--catalog", file}), {file});
  expect_usage_error(sb({"restore", "--to", t_ / "r", "--catalog", file}), {file});
  EXPECT_EQ(stripeback::testing::read_file(file), "precious");
  EXPECT_TRUE(pieces_in(t_ / "p").empty());
  EXPECT_FALSE(exists(t_ / "r"));
}

TEST_F(Usage, CatalogDirectoryMissing) {
  std::string missing = t_ / "no-catalog";
  // Listing a catalog not made yet (a fresh install) finds no backups; restoring from it is
  // an error that names it.
  RunResult l = sb({"list", "--catalog", missing});
  EXPECT_TRUE(l.exited(0)) << l.describe();
  EXPECT_TRUE(contains(l.out, "does not exist yet"));
  expect_usage_error(sb({"restore", "--to", t_ / "r", "--catalog", missing}), {missing});
  EXPECT_FALSE(exists(missing)) << "a read-only command created the catalog";
}

TEST_F(Usage, RestoreBackupIdNotInCatalog) {
  expect_usage_error(sb({"restore", "--to", t_ / "r", "--catalog", cat(), "--backup", "999"}),
                     {"999"});
  EXPECT_FALSE(exists(t_ / "r"));
}

TEST_F(Usage, RestoreTagNotInCatalog) {
  expect_usage_error(sb({"restore", "--to", t_ / "r", "--catalog", cat(), "--tag", "nope"}),
                     {"nope"});
  EXPECT_FALSE(exists(t_ / "r"));
}

TEST_F(Usage, RestorePathMatchingNothing) {
  std::string nothing = src() + "/no-such-file";
  expect_usage_error(sb({"restore", "--to", t_ / "r", "--catalog", cat(), nothing}), {nothing});
  // One good path and one bad: still refused as a whole.
  expect_usage_error(sb({"restore", "--to", t_ / "r", "--catalog", cat(), src() + "/f1", nothing}),
                     {nothing});
  // A string prefix of a backed-up path is not a match ("src/f" is not "src/f1").
  expect_usage_error(sb({"restore", "--to", t_ / "r", "--catalog", cat(), src() + "/f"}),
                     {src() + "/f"});
  EXPECT_FALSE(exists(t_ / "r"));
}

TEST_F(Usage, BadNumbersAndSizes) {
  expect_usage_error(sb({"backup", src(), "--to", t_ / "p", "--catalog", cat(), "--channels", "0"}),
                     {"--channels"});
  expect_usage_error(
      sb({"backup", src(), "--to", t_ / "p", "--catalog", cat(), "--buffer-size", "5000"}),
      {"--buffer-size"});
  expect_usage_error(sb({"backup", src(), "--to", t_ / "p", "--catalog", cat(), "--buffers", "1"}),
                     {"--buffers"});
  expect_usage_error(sb({"restore", "--to", t_ / "r", "--catalog", cat(), "--backup", "x"}),
                     {"--backup"});
  EXPECT_TRUE(pieces_in(t_ / "p").empty());
  EXPECT_EQ(backups_listed(), 1u);
}

// Buffers no machine could give are refused before the job starts (nothing in the catalog,
// no catalog created), naming the flags and the total: 4096 x 16 MiB x 2 channels.
TEST_F(Usage, BufferMemoryBeyondTheLimitIsRefusedBeforeStarting) {
  std::string fresh = t_ / "fresh-catalog";
  for (const auto& catalog : {cat(), fresh}) {
    RunResult b = sb({"backup", src(), "--to", t_ / "p", "--catalog", catalog, "--buffers",
                      "4096", "--buffer-size", "16M"});
    expect_usage_error(b, {"--buffers 4096", "--buffer-size 16M", "128.00 GiB", "--channels"});
  }
  EXPECT_EQ(backups_listed(), 1u);
  EXPECT_FALSE(exists(fresh));
  EXPECT_FALSE(exists(t_ / "p"));
  // Restore and validate check theirs too (a read and a scratch buffer each).
  expect_usage_error(sb({"restore", "--to", t_ / "r", "--catalog", cat(), "--buffers", "4096",
                         "--buffer-size", "64M", "--channels", "4"}),
                     {"--buffers 4096", "--buffer-size 64M", "2.00 TiB"});
  expect_usage_error(sb({"validate", "--catalog", cat(), "--buffers", "4096", "--buffer-size",
                         "64M"}),
                     {"--buffers"});
  EXPECT_FALSE(exists(t_ / "r"));
  // Within the limit they are used as given.
  RunResult ok = sb({"backup", src(), "--to", t_ / "p2", "--catalog", t_ / "cat2", "--json",
                     "--buffers", "64", "--buffer-size", "256K"});
  SB_ASSERT_EXIT(ok, 0);
  EXPECT_EQ(parse_json(ok)["buffers"].as_u64(), 64u);
}

// A test hook's variable with a value that does not parse stops the CLI before it does
// anything, naming the variable and what is wrong (the library itself prints nothing).
TEST_F(Usage, AMalformedTestHookIsRefusedNamingTheVariable) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT, STRIPEBACK_FAKE_NOW and STRIPEBACK_FAULTS");
  const std::vector<std::string> backup{"backup", src(), "--to", t_ / "p", "--catalog", cat()};
  expect_usage_error(sb(backup, {{"STRIPEBACK_CRASH_AT", "piece-synced:0"}}),
                     {"STRIPEBACK_CRASH_AT: crash point 'piece-synced:0': the count after ':' "
                      "must be a whole number from 1"});
  expect_usage_error(sb(backup, {{"STRIPEBACK_CRASH_AT", ":2"}}),
                     {"STRIPEBACK_CRASH_AT: crash point ':2' has no point name"});
  expect_usage_error(sb(backup, {{"STRIPEBACK_FAKE_NOW", "tomorrow"}}),
                     {"STRIPEBACK_FAKE_NOW: fake time 'tomorrow' is neither seconds since the "
                      "epoch nor a UTC time like 2026-12-01T02:00:00Z"});
  expect_usage_error(sb(backup, {{"STRIPEBACK_FAULTS", "write:0:EIO"}}),
                     {"STRIPEBACK_FAULTS: fault rule 'write:0:EIO'", "not a number from 1"});
#if STRIPEBACK_WITH_NFS
  expect_usage_error(sb(backup, {{"STRIPEBACK_TEST_NFS_VERIFIER_CHANGE", "yes"}}),
                     {"STRIPEBACK_TEST_NFS_VERIFIER_CHANGE: 'yes' is neither 1"});
#endif
  EXPECT_FALSE(exists(t_ / "p"));
  EXPECT_EQ(backups_listed(), 1u);
  // Empty is unset.
  SB_EXPECT_EXIT(sb({"list", "--catalog", cat()}, {{"STRIPEBACK_CRASH_AT", ""},
                                                   {"STRIPEBACK_FAKE_NOW", ""},
                                                   {"STRIPEBACK_FAULTS", ""}}),
                 0);
}

}  // namespace
}  // namespace stripeback::it
