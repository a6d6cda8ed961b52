// `stripeback run FILE` (docs/rman.md): an RMAN-style command file run as the stripeback
// commands it stands for, in this one process: a backup, a listing and a restore from one
// file give back the same bytes; the file may come on standard input; an error anywhere in
// the file, the last statement included, runs nothing; a failing statement stops the file
// with its exit code; --dry-run prints the commands.
#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class RunFile : public ::testing::Test {
 protected:
  void SetUp() override {
    make_file(t_ / "src/a.dbf", 9 * kMiB + 123, 1);
    make_file(t_ / "src/sub/b.dbf", 3 * kMiB, 2);
    make_file(t_ / "src/c d.dbf", 70000, 3);
  }
  // Writes the command file; "@" stands for the test's directory.
  std::string script(const std::string& name, std::string text) {
    for (size_t at = text.find('@'); at != std::string::npos; at = text.find('@', at))
      text.replace(at, 1, t_.path());
    write_text(t_ / name, text);
    return t_ / name;
  }
  TempDir t_{"sbit-run"};
};

constexpr const char* kNightly =
    "# back up, list and restore in one file\n"
    "RUN {\n"
    "  ALLOCATE CHANNEL c1 DEVICE TYPE DISK FORMAT '@/pieces/%U' MAXPIECESIZE 4M;\n"
    "  allocate channel c2 device type disk format '@/pieces/db_%d_%s_%p' maxpiecesize 4M;\n"
    "  BACKUP INCREMENTAL LEVEL 0 FILESPERSET 2 TAG 'nightly' DATAFILE '@/src';\n"
    "}\n"
    "LIST BACKUP SUMMARY;\n"
    "RESTORE DATAFILE '@/src' TO '@/restored';\n";

TEST_F(RunFile, ABackupListAndRestoreFromOneFileGiveBackTheSameBytes) {
  const std::string file = script("nightly.rman", kNightly);
  RunResult r = sb({"run", file, "--catalog", t_ / "cat"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_GE(pieces_in(t_ / "pieces").size(), 3u) << "two channels, 4 MiB pieces";
  const size_t listed = r.out.find("TAG");
  ASSERT_NE(listed, std::string::npos) << "LIST BACKUP printed the table of backups\n" << r.out;
  EXPECT_TRUE(contains(r.out.substr(listed), "nightly")) << "with the backup and its tag";
  EXPECT_TRUE(contains(r.err, file + ":5: stripeback backup --catalog " + t_.path() +
                                  "/cat --channels 2 --to " + t_.path() +
                                  "/pieces --max-piece-size 4M --level 0"));
  EXPECT_TRUE(
      contains(r.err, file + ":8: stripeback restore --catalog " + t_.path() + "/cat --to "));
  EXPECT_TRUE(restored_tree(t_ / "restored", t_ / "src"));
  // What the file did is what the commands do: one level 0 backup with the tag.
  Json l = parse_json(sb({"list", "--catalog", t_ / "cat", "--json"}));
  ASSERT_EQ(l["backups"].size(), 1u);
  EXPECT_EQ(l["backups"][0]["tag"].as_string(), "nightly");
  EXPECT_EQ(*l["backups"][0]["level"].as_u64(), 0u);
}

TEST_F(RunFile, TheCommandFileMayComeOnStandardInput) {
  const std::string file = script("nightly.rman", kNightly);
  RunResult r = stripeback::testing::run(
      {"/bin/sh", "-c", "exec \"$0\" run - --catalog \"$1\" < \"$2\"", binary(), t_ / "cat",
       file});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.err, "standard input:8: stripeback restore"));
  EXPECT_TRUE(restored_tree(t_ / "restored", t_ / "src"));
}

TEST_F(RunFile, AnErrorInTheLastStatementRunsNothing) {
  const std::string file =
      script("bad.rman",
             "RUN {\n"
             "  ALLOCATE CHANNEL c1 DEVICE TYPE DISK FORMAT '@/pieces/%U';\n"
             "  BACKUP DATAFILE '@/src';\n"
             "}\n"
             "CONFIGURE RETENTION POLICY TO REDUNDANCY 1;\n"
             "RESTORE DATAFILE '@/src' TO '@/restored' UNTIL TIME 'SYSDATE-1';\n");
  RunResult r = sb({"run", file, "--catalog", t_ / "cat"});
  SB_ASSERT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "stripeback: " + file + ":6:" )) << "the file, line and column";
  EXPECT_TRUE(contains(r.err, "RESTORE UNTIL is not supported: stripeback restore --target-time"));
  EXPECT_FALSE(exists(t_ / "pieces")) << "the backup before it did not run";
  EXPECT_FALSE(exists(t_ / "cat")) << "nor the configure";
  EXPECT_FALSE(exists(t_ / "restored"));
}

TEST_F(RunFile, AFailingStatementStopsTheFileWithItsExitCode) {
  make_file(t_ / "restored" + t_.path() + "/src/a.dbf", 10, 9);  // in the restore's way
  const std::string file = script("stops.rman",
                                  "BACKUP FORMAT '@/pieces/%U' DATAFILE '@/src';\n"
                                  "RESTORE TO '@/restored';\n"
                                  "CONFIGURE RETENTION POLICY TO REDUNDANCY 3;\n");
  RunResult r = sb({"run", file, "--catalog", t_ / "cat"});
  SB_ASSERT_EXIT(r, 2) << "restore refuses to overwrite without FORCE: exit 2";
  EXPECT_TRUE(contains(r.err, file + ":2: RESTORE failed (exit 2); the statements after it did "
                                     "not run"));
  RunResult shown = sb({"configure", "--show", "--catalog", t_ / "cat"});
  SB_ASSERT_EXIT(shown, 0);
  EXPECT_FALSE(contains(shown.out, "redundancy 3")) << "CONFIGURE after it did not run";
  EXPECT_EQ(file_size(t_ / "restored" + t_.path() + "/src/a.dbf"), 10u) << "nothing overwritten";
  // With FORCE the same file runs to the end.
  const std::string forced = script("forced.rman",
                                    "RESTORE TO '@/restored' FORCE;\n"
                                    "CONFIGURE RETENTION POLICY TO REDUNDANCY 3;\n");
  SB_ASSERT_EXIT(sb({"run", forced, "--catalog", t_ / "cat"}), 0);
  EXPECT_TRUE(restored_exactly(t_ / "restored", files_under(t_ / "src")));
  shown = sb({"configure", "--show", "--catalog", t_ / "cat"});
  EXPECT_TRUE(contains(shown.out, "redundancy 3")) << shown.out;
}

TEST_F(RunFile, DryRunPrintsTheCommandsShellQuotedAndRunsNothing) {
  const std::string file = script("dry.rman",
                                  "RUN {\n"
                                  "  ALLOCATE CHANNEL c1 DEVICE TYPE DISK FORMAT '@/p q/%U' "
                                  "RATE 200M;\n"
                                  "  BACKUP DURATION 01:30 PARTIAL MINIMIZE LOAD DATAFILE "
                                  "'@/src/c d.dbf', '@/src/a.dbf';\n"
                                  "}\n"
                                  "DELETE NOPROMPT OBSOLETE;\n");
  RunResult r = sb({"run", "--dry-run", file, "--catalog", t_ / "cat"});
  SB_ASSERT_EXIT(r, 0);
  const std::string& d = t_.path();
  EXPECT_EQ(r.out, "stripeback backup --catalog " + d + "/cat --channels 1 --to '" + d +
                   "/p q' --rate 200M --duration 01:30 --partial --minimize-load '" + d +
                   "/src/c d.dbf' " + d + "/src/a.dbf\n"
                   "stripeback delete obsolete --catalog " + d + "/cat\n");
  EXPECT_FALSE(exists(t_ / "p q"));
  EXPECT_FALSE(exists(t_ / "cat"));
}

TEST_F(RunFile, AFileThatCannotBeReadIsBadUsage) {
  RunResult r = sb({"run", t_ / "missing.rman", "--catalog", t_ / "cat"});
  SB_ASSERT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "unable to read the command file '" + t_.path() +
                                  "/missing.rman': No such file or directory"));
  RunResult help = sb({"run", "--help"});
  SB_ASSERT_EXIT(help, 0);
  EXPECT_TRUE(contains(help.out, "docs/rman.md"));
  EXPECT_TRUE(contains(help.out, "--dry-run"));
}

}  // namespace
}  // namespace stripeback::it
