// Restore never replaces an existing file unless --force is given; with --force it puts
// back exactly the backed-up file.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

class Overwrite : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = t_ / "src";
    make_file(src_ + "/a.dbf", 300000, 21, 0640, int64_t{1700000000123456789});
    make_file(src_ + "/sub/b.dbf", 5000, 22, 0600, int64_t{1600000000987654321});
    make_file(src_ + "/sub/c.dbf", 1 << 20, 23, 0644);
    if (HasFatalFailure()) return;
    RunResult b = sb({"backup", src_, "--to", t_ / "pieces", "--catalog", t_ / "cat"});
    SB_ASSERT_EXIT(b, 0);
    root_ = t_ / "restore";
    RunResult r = sb({"restore", "--to", root_, "--catalog", t_ / "cat"});
    SB_ASSERT_EXIT(r, 0);
    ASSERT_TRUE(restored_tree(root_, src_));
  }

  std::string restored(const std::string& rel) const {
    return restored_path(root_, src_ + "/" + rel);
  }

  TempDir t_{"sbit-overwrite"};
  std::string src_, root_;
};

TEST_F(Overwrite, RefusesWithoutForceAndTouchesNothing) {
  // a.dbf is the one file in the way; the others are gone from the target.
  write_text(restored("a.dbf"), "local edits that must survive\n");
  ASSERT_EQ(::unlink(restored("sub/b.dbf").c_str()), 0);
  ASSERT_EQ(::unlink(restored("sub/c.dbf").c_str()), 0);

  RunResult r = sb({"restore", "--to", root_, "--catalog", t_ / "cat"});
  EXPECT_TRUE(r.term_signal == 0 && r.exit_code != 0) << r.describe();
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, restored("a.dbf")));
  EXPECT_TRUE(contains(r.err, "--force"));
  EXPECT_EQ(stripeback::testing::read_file(restored("a.dbf")), "local edits that must survive\n");
  // The check comes before any write: the missing files were not restored either.
  EXPECT_FALSE(exists(restored("sub/b.dbf")));
  EXPECT_FALSE(exists(restored("sub/c.dbf")));
  for (const auto& e : entries_under(root_))
    EXPECT_EQ(e.find(".sbrestore-"), std::string::npos) << "temporary file left: " << e;
}

TEST_F(Overwrite, RefusesSingleFileRestoreOntoExistingFile) {
  write_text(restored("sub/c.dbf"), "mine");
  RunResult r = sb({"restore", "--to", root_, "--catalog", t_ / "cat", src_ + "/sub/c.dbf"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, restored("sub/c.dbf")));
  EXPECT_TRUE(contains(r.err, "--force"));
  EXPECT_EQ(stripeback::testing::read_file(restored("sub/c.dbf")), "mine");
}

TEST_F(Overwrite, ForceReplacesWithBackedUpContent) {
  write_text(restored("a.dbf"), "local edits\n");
  ASSERT_EQ(::chmod(restored("a.dbf").c_str(), 0777), 0);
  write_text(restored("sub/c.dbf"), std::string(2 << 20, 'x'));  // longer than the original
  ASSERT_EQ(::unlink(restored("sub/b.dbf").c_str()), 0);

  RunResult r = sb({"restore", "--to", root_, "--catalog", t_ / "cat", "--force"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(root_, src_));
}

// A symbolic link planted in the restore tree is never followed out of the target.
TEST_F(Overwrite, RefusesSymlinkInRestorePath) {
  std::string outside = t_ / "outside";
  ASSERT_TRUE(std::filesystem::create_directories(outside));
  std::string root = t_ / "restore2";
  std::string sub = restored_path(root, src_ + "/sub");
  ASSERT_TRUE(std::filesystem::create_directories(restored_path(root, src_)));
  ASSERT_EQ(::symlink(outside.c_str(), sub.c_str()), 0);

  RunResult r = sb({"restore", "--to", root, "--catalog", t_ / "cat"});
  EXPECT_TRUE(r.exited(1) || r.exited(2)) << r.describe();
  EXPECT_TRUE(contains(r.err, restored_path(root, src_ + "/sub/b.dbf")));
  EXPECT_TRUE(entries_under(outside).empty()) << "restore wrote through a symbolic link";
  // The file not below the link is restored (or at least not damaged).
  if (exists(restored_path(root, src_ + "/a.dbf"))) {
    EXPECT_TRUE(same_file(src_ + "/a.dbf", restored_path(root, src_ + "/a.dbf")));
  }
}

}  // namespace
}  // namespace stripeback::it
