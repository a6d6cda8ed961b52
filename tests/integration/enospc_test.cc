// A destination that fills up: the backup fails with the cause and the piece named, exit
// code 1, removes every piece it wrote (finished or not) and so has nothing to warn about,
// records the backup as failed, an earlier complete backup in the same catalog stays
// restorable, and the next backup to the emptied destination finds nothing left over.
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

TEST(NoSpace, FullDestinationFailsCleanly) {
  const std::string& data = small_data();
  ASSERT_FALSE(data.empty());
  TempDir work("sb-enospc");
  std::string mnt = work / "small-fs";
  std::filesystem::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=16m") != 0)
    GTEST_SKIP() << "cannot mount a 16 MiB tmpfs here (" << std::strerror(errno)
                 << "); a full file system cannot be shown without one";
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mnt};
  std::string cat = work / "catalog";

  // A complete backup first, elsewhere, that must survive the failure untouched.
  auto good = sb({"backup", data, "--to", work / "good-pieces", "--catalog", cat});
  SB_ASSERT_EXIT(good, 0);

  // tmpfs has no O_DIRECT: the run also covers the buffered fallback for pieces.
  auto r = sb({"backup", data, "--to", mnt + "/pieces", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, "No space left on device"));
  EXPECT_TRUE(contains(r.err, mnt + "/pieces/sb2-"));
  EXPECT_TRUE(pieces_in(mnt + "/pieces").empty()) << "a half-written piece was left behind";
  EXPECT_TRUE(warnings_with(parse_json(r), "remain in").empty()) << r.out;

  // Two channels and small pieces: several finished pieces and two unfinished ones go.
  auto r2 = sb({"backup", data, "--to", mnt + "/pieces", "--catalog", cat, "--channels", "2",
                "--max-piece-size", "4M", "--json"});
  SB_ASSERT_EXIT(r2, 1);
  EXPECT_TRUE(contains(r2.err, "No space left on device"));
  EXPECT_TRUE(pieces_in(mnt + "/pieces").empty()) << "pieces were left behind";
  EXPECT_TRUE(warnings_with(parse_json(r2), "remain in").empty()) << r2.out;

  // Something that fits: it completes and names nothing left over.
  make_file(work / "fits/a.dbf", 1 << 20, 5);
  auto fits = sb({"backup", work / "fits", "--to", mnt + "/pieces", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(fits, 0);
  EXPECT_TRUE(warnings_with(parse_json(fits), "remain in").empty()) << fits.out;

  auto list = sb({"list", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(list, 0);
  Json j = parse_json(list);
  const auto& backups = j["backups"].items();
  ASSERT_EQ(backups.size(), 4u);
  EXPECT_EQ(backups[0]["status"].as_string(), "complete");
  EXPECT_EQ(backups[1]["status"].as_string(), "failed");
  EXPECT_EQ(backups[2]["status"].as_string(), "failed");
  EXPECT_EQ(backups[3]["status"].as_string(), "complete");

  std::string out = work / "restore";
  auto rr = sb({"restore", "--to", out, "--catalog", cat, "--backup", "1"});
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(out, data));
}

}  // namespace
}  // namespace stripeback::it
