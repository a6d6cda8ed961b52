// Symbolic links and special files below a source directory are skipped and reported; the
// backup still completes and holds the regular files.
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

TEST(SpecialFiles, SymlinksAndFifoAreSkippedWithAReport) {
  TempDir t("sbit-special");
  std::string src = t / "src";
  make_file(src + "/data.dbf", 100000, 51);
  make_file(src + "/sub/inner.dbf", 5000, 52);
  if (HasFatalFailure()) return;
  const std::string link = src + "/link-to-data";
  const std::string dangling = src + "/dangling";
  const std::string dirlink = src + "/dirlink";
  const std::string odd = src + "/sub/odd \"name\" \\ with\ttab";
  const std::string fifo = src + "/sub/pipe";
  ASSERT_EQ(::symlink("data.dbf", link.c_str()), 0);
  ASSERT_EQ(::symlink("nowhere", dangling.c_str()), 0);
  ASSERT_EQ(::symlink("sub", dirlink.c_str()), 0);
  ASSERT_EQ(::symlink("../data.dbf", odd.c_str()), 0);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);

  // A fifo must not be opened: the timeout turns a hang into a failure.
  RunResult b = sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat", "--json"}, {},
                   std::chrono::seconds(60));
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  EXPECT_EQ(j["status"].as_string(), "complete");
  EXPECT_EQ(j["files"].as_u64(), 2u);
  std::map<std::string, std::string> skipped;
  for (const auto& s : j["skipped"].items())
    skipped[s["path"].as_string()] = s["reason"].as_string();
  EXPECT_EQ(skipped.size(), 5u) << b.describe();
  for (const auto& p : {link, dangling, dirlink, odd})
    EXPECT_TRUE(contains(skipped[p], "symbolic link")) << p << "\n" << b.describe();
  EXPECT_TRUE(contains(skipped[fifo], "fifo")) << b.describe();
  // Also reported on stderr.
  EXPECT_TRUE(contains(b.err, "skipped"));
  EXPECT_TRUE(contains(b.err, fifo));
  EXPECT_TRUE(contains(b.err, dangling));

  RunResult l = sb({"list", "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(l, 0);
  EXPECT_EQ(parse_json(l)["backups"][0]["files"].as_u64(), 2u);

  RunResult r = sb({"restore", "--to", t / "r", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(
      restored_exactly(t / "r", {src + "/data.dbf", src + "/sub/inner.dbf"}, {src, src + "/sub"}));
}

// The text output reports skipped entries too.
TEST(SpecialFiles, TextOutputReportsSkippedEntries) {
  TempDir t("sbit-special-txt");
  std::string src = t / "src";
  make_file(src + "/data.dbf", 4096, 53);
  if (HasFatalFailure()) return;
  ASSERT_EQ(::mkfifo((src + "/pipe").c_str(), 0600), 0);
  RunResult b = sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat"}, {},
                   std::chrono::seconds(60));
  SB_ASSERT_EXIT(b, 0);
  EXPECT_TRUE(contains(b.out + b.err, src + "/pipe"));
  EXPECT_TRUE(contains(b.out, "complete"));
}

// A symbolic link named as a SOURCE is followed (as cp -H and find -H do): its files are
// recorded under the link's path. Links found below it are still skipped.
TEST(SpecialFiles, SymlinkGivenAsSourceIsFollowed) {
  TempDir t("sbit-special-srclink");
  const std::string real = t / "real";
  make_file(real + "/a.dbf", 30000, 54);
  make_file(real + "/sub/b.dbf", 40000, 55);
  if (HasFatalFailure()) return;
  ASSERT_EQ(::symlink("a.dbf", (real + "/inner-link").c_str()), 0);
  const std::string dir_link = t / "dir-link", file_link = t / "file-link";
  ASSERT_EQ(::symlink(real.c_str(), dir_link.c_str()), 0);
  ASSERT_EQ(::symlink((real + "/a.dbf").c_str(), file_link.c_str()), 0);
  RunResult b = sb({"backup", dir_link, file_link, "--to", t / "pieces", "--catalog", t / "cat",
                    "--json"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  EXPECT_EQ(j["files"].as_u64(), 3u) << b.describe();
  ASSERT_EQ(j["skipped"].size(), 1u) << b.describe();
  EXPECT_EQ(j["skipped"][0]["path"].as_string(), dir_link + "/inner-link");
  EXPECT_TRUE(contains(j["skipped"][0]["reason"].as_string(), "symbolic link"));

  RunResult r = sb({"restore", "--to", t / "r", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(same_file(real + "/a.dbf", restored_path(t / "r", dir_link + "/a.dbf")));
  EXPECT_TRUE(same_file(real + "/sub/b.dbf", restored_path(t / "r", dir_link + "/sub/b.dbf")));
  EXPECT_TRUE(same_file(real + "/a.dbf", restored_path(t / "r", file_link)));
  EXPECT_FALSE(exists(restored_path(t / "r", real))) << "recorded under the target's path";

  // A link that leads nowhere is a source that does not exist.
  const std::string dangling = t / "dangling";
  ASSERT_EQ(::symlink("nowhere", dangling.c_str()), 0);
  RunResult d = sb({"backup", dangling, "--to", t / "pieces", "--catalog", t / "cat"});
  SB_EXPECT_EXIT(d, 2);
  EXPECT_TRUE(contains(d.err, dangling));
}

// A special file named directly as the source is bad input, named in the message.
TEST(SpecialFiles, FifoAsSourceIsRefused) {
  TempDir t("sbit-special-src");
  std::string fifo = t / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  RunResult b = sb({"backup", fifo, "--to", t / "pieces", "--catalog", t / "cat"}, {},
                   std::chrono::seconds(60));
  EXPECT_EQ(b.exit_code, 2) << b.describe();
  EXPECT_TRUE(contains(b.err, fifo));
  EXPECT_TRUE(pieces_in(t / "pieces").empty());
}

}  // namespace
}  // namespace stripeback::it
