// The whole program on a storage that fails on purpose (STRIPEBACK_FAULTS, a test hook,
// wraps every storage in a FaultStorage, storage/fault_storage.h): an I/O error on a piece write, a
// full disk on a catalog append, a failed sync of a piece, a failed rename of a restored
// file, short writes. Each gives exit code 1 and a message naming the object and the
// cause; the catalog still opens; an earlier backup still restores identical; no restored
// file is left under its final name unverified, and no temporary is left behind.
#include <filesystem>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

class StorageFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAULTS");
    src = work / "src";
    // Several files of a few MiB (more than one frame each), with an all-zero stretch.
    make_file(src + "/a.dbf", 6u << 20, 1);
    make_file(src + "/b.dbf", 3u << 20, 2);
    make_file(src + "/sub/c.dbf", (2u << 20) + 4321, 3);
    cat = work / "cat";
    auto good = sb({"backup", src, "--to", work / "good", "--catalog", cat, "--json"});
    ASSERT_TRUE(good.exited(0)) << good.describe();
    good_id = backup_id_of(parse_json(good));
  }

  static Env faults(const std::string& spec) { return {{"STRIPEBACK_FAULTS", spec}}; }

  // The catalog opens, lists the earlier backup complete, and it restores identical.
  void earlier_backup_is_intact() {
    auto list = sb({"list", "--catalog", cat});
    SB_ASSERT_EXIT(list, 0);
    auto r = sb({"restore", "--to", work / "check", "--catalog", cat, "--backup",
                 std::to_string(good_id)});
    SB_ASSERT_EXIT(r, 0);
    EXPECT_TRUE(restored_tree(work / "check", src));
  }

  // No temporary of a restore remains below `root`.
  static void no_temporaries(const std::string& root) {
    for (const auto& e : entries_under(root))
      EXPECT_EQ(std::filesystem::path(e).filename().string().find(".sbrestore-"),
                std::string::npos)
          << e;
  }

  TempDir work{"sb-faults"};
  std::string src, cat;
  uint64_t good_id = 0;
};

TEST_F(StorageFaults, EioOnThePieceWriteFailsTheBackupNamingThePiece) {
  auto r = sb({"backup", src, "--to", work / "p", "--catalog", cat, "--json"},
              faults("write:4:EIO:.sbp"));
  SB_ASSERT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, "unable to write piece '" + (work / "p") + "/sb"));
  EXPECT_TRUE(contains(r.err, "Input/output error (injected)"));
  EXPECT_TRUE(pieces_in(work / "p").empty()) << "the failed backup's pieces were left";
  earlier_backup_is_intact();
}

TEST_F(StorageFaults, EnospcOnACatalogAppendFailsTheBackupAndTheCatalogStillOpens) {
  // The first write to the log is the backup's begin record; the second its pieces.
  auto r = sb({"backup", src, "--to", work / "p", "--catalog", cat}, faults("write:2:ENOSPC:catalog.log"));
  SB_ASSERT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, "catalog.log"));
  EXPECT_TRUE(contains(r.err, "No space left on device (injected)"));
  auto list = sb({"list", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(list, 0);
  Json j = parse_json(list);
  ASSERT_EQ(j["backups"].items().size(), 2u) << list.out;
  EXPECT_EQ(j["backups"][1]["status"].as_string(), "failed") << list.out;
  earlier_backup_is_intact();
}

TEST_F(StorageFaults, EioOnThePieceSyncFailsTheBackupNamingThePiece) {
  auto r = sb({"backup", src, "--to", work / "p", "--catalog", cat}, faults("sync:1:EIO:.sbp"));
  SB_ASSERT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, "unable to sync '" + (work / "p") + "/sb"));
  EXPECT_TRUE(contains(r.err, "Input/output error (injected)"));
  EXPECT_TRUE(pieces_in(work / "p").empty());
  earlier_backup_is_intact();
}

TEST_F(StorageFaults, ShortPieceWriteFailsTheBackup) {
  auto r = sb({"backup", src, "--to", work / "p", "--catalog", cat}, faults("write:4+:short=4096:.sbp"));
  SB_ASSERT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, "4096 of "));
  EXPECT_TRUE(contains(r.err, "bytes written at offset"));
  EXPECT_TRUE(pieces_in(work / "p").empty());
  earlier_backup_is_intact();
}

TEST_F(StorageFaults, FailedRenameLeavesNoFileUnderItsFinalName) {
  std::string to = work / "r";
  auto r = sb({"restore", "--to", to, "--catalog", cat, "--channels", "1"},
              faults("rename:1:EIO:.sbrestore-"));
  SB_ASSERT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, "unable to move '" + to));
  EXPECT_TRUE(contains(r.err, "Input/output error (injected)"));
  // The largest file goes first: it is the one whose rename failed.
  EXPECT_FALSE(exists(restored_path(to, src + "/a.dbf")));
  // The others are complete and verified.
  EXPECT_TRUE(same_file(src + "/b.dbf", restored_path(to, src + "/b.dbf")));
  EXPECT_TRUE(same_file(src + "/sub/c.dbf", restored_path(to, src + "/sub/c.dbf")));
  no_temporaries(to);
  earlier_backup_is_intact();
}

TEST_F(StorageFaults, ShortRestoreWriteAndFailedSyncLeaveNoFileUnderItsFinalName) {
  std::string to = work / "r";
  auto r = sb({"restore", "--to", to, "--catalog", cat, "--channels", "1"},
              faults("write:2:short=4096:src/.sbrestore-;sync:1:EIO:src/.sbrestore-"));
  SB_ASSERT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, "4096 of "));
  EXPECT_TRUE(contains(r.err, "Input/output error (injected)"));
  size_t restored = 0;
  for (const char* f : {"/a.dbf", "/b.dbf", "/sub/c.dbf"}) {
    std::string at = restored_path(to, src + f);
    if (!exists(at)) continue;
    ++restored;
    EXPECT_TRUE(same_file(src + f, at));  // whatever is there is whole and verified
  }
  EXPECT_LE(restored, 1u);
  no_temporaries(to);
  earlier_backup_is_intact();
}

TEST_F(StorageFaults, BadFaultSpecIsAUsageErrorNamingTheVariable) {
  auto r = sb({"list", "--catalog", cat}, faults("scribble:1:EIO"));
  SB_EXPECT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "STRIPEBACK_FAULTS: fault rule 'scribble:1:EIO': unknown "
                              "operation 'scribble'"));
}

}  // namespace
}  // namespace stripeback::it
