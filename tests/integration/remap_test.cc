// restore --remap OLD=NEW: files at or below OLD are restored at NEW below the target, the
// rest where they always go; the longest OLD wins; remaps that could put two files at one
// place, or that are relative or climb out, are refused before anything is written; a
// delta restore, a killed restore's cleanup and --preview follow the remap.
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

struct Fixture {
  TempDir work{"sb-remap"};
  std::string src = work / "src", cat = work / "cat", target = work / "target";

  Fixture() {
    make_file(src + "/dirA/x.dbf", (3u << 20) + 123, 1);
    make_file(src + "/dirA/sub/y.dbf", 1u << 20, 2);
    make_file(src + "/dirAB/w.dbf", 70000, 3);
    make_file(src + "/dirB/z.dbf", (2u << 20) + 5, 4);
    auto b = sb({"backup", src, "--to", work / "pieces", "--catalog", cat, "--level", "0",
                 "--change-unit", "64K"});
    EXPECT_TRUE(b.exited(0)) << b.describe();
  }
  RunResult restore(std::vector<std::string> extra) {
    std::vector<std::string> a{"restore", "--to", target, "--catalog", cat};
    a.insert(a.end(), extra.begin(), extra.end());
    return sb(a);
  }
  // Each pair (original, where it must be now) identical, and no other file in the target.
  ::testing::AssertionResult restored_at(
      const std::vector<std::pair<std::string, std::string>>& where) const {
    std::vector<std::string> want;
    for (const auto& [orig, at] : where) {
      auto same = same_file(orig, at);
      if (!same) return same << " (" << orig << " at " << at << ")";
      want.push_back(at);
    }
    std::sort(want.begin(), want.end());
    auto got = files_under(target);
    if (got != want) {
      auto f = ::testing::AssertionFailure() << "the target holds:";
      for (const auto& g : got) f << " " << g;
      return f;
    }
    return ::testing::AssertionSuccess();
  }
};

TEST(Remap, FilesUnderOldGoToNewAndTheRestToTheirUsualPlace) {
  Fixture fx;
  auto r = fx.restore({"--remap", fx.src + "/dirA=/moved/here", "--json"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(fx.restored_at({
      {fx.src + "/dirA/x.dbf", fx.target + "/moved/here/x.dbf"},
      {fx.src + "/dirA/sub/y.dbf", fx.target + "/moved/here/sub/y.dbf"},
      // dirAB is not below dirA: prefixes match whole components.
      {fx.src + "/dirAB/w.dbf", fx.target + fx.src + "/dirAB/w.dbf"},
      {fx.src + "/dirB/z.dbf", fx.target + fx.src + "/dirB/z.dbf"},
  }));
  EXPECT_FALSE(exists(fx.target + fx.src + "/dirA"));
  // The remapped directory has the attributes of the original.
  EXPECT_TRUE(same_dir(fx.src + "/dirA/sub", fx.target + "/moved/here/sub"));
}

TEST(Remap, TheLongestMatchingOldWins) {
  Fixture fx;
  auto r = fx.restore({"--remap", fx.src + "=/all", "--remap", fx.src + "/dirA/sub=/deep"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(fx.restored_at({
      {fx.src + "/dirA/x.dbf", fx.target + "/all/dirA/x.dbf"},
      {fx.src + "/dirA/sub/y.dbf", fx.target + "/deep/y.dbf"},
      {fx.src + "/dirAB/w.dbf", fx.target + "/all/dirAB/w.dbf"},
      {fx.src + "/dirB/z.dbf", fx.target + "/all/dirB/z.dbf"},
  }));
}

TEST(Remap, WithTargetRootNewIsThePathItself) {
  Fixture fx;
  const std::string landing = fx.work / "landed";
  auto r = sb({"restore", "--to", "/", "--catalog", fx.cat, "--remap", fx.src + "=" + landing,
               fx.src + "/dirB"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(same_file(fx.src + "/dirB/z.dbf", landing + "/dirB/z.dbf"));
}

// Each refusal: its exit code and message, and nothing written (no target directory).
struct Refusal {
  std::vector<std::string> remaps;
  std::string message;
};

TEST(Remap, RefusedRemapsNameTheRemapAndWriteNothing) {
  Fixture fx;
  const std::string a = fx.src + "/dirA", b = fx.src + "/dirB";
  const std::vector<Refusal> refusals{
      {{a + "=/x", b + "=/x"}, "remap two paths onto one, '/x'"},
      {{a + "=/x", a + "=/y"}, "remap the same path"},
      {{"relative/dir=/x"}, "'relative/dir' is not an absolute path"},
      {{a + "=new/place"}, "'new/place' is not an absolute path"},
      {{a + "=/x/../../etc"}, "'/x/../../etc' has an empty, '.' or '..' component"},
      {{a + "/x.dbf"}, "wants OLD=NEW"},
      // A remapped file onto one restored where it always goes.
      {{a + "/x.dbf=" + b + "/z.dbf"}, "would both be restored at '" + b + "/z.dbf'"},
      // A file onto a directory that is restored.
      {{b + "/z.dbf=" + a + "/sub"}, "would both be restored at '" + a + "/sub'"},
      // A file where the files of another remap need a directory.
      {{b + "/z.dbf=/q", a + "=/q/r"}, "needs a directory"},
  };
  for (const auto& ref : refusals) {
    std::vector<std::string> args;
    for (const auto& m : ref.remaps) args.insert(args.end(), {"--remap", m});
    SCOPED_TRACE(::testing::PrintToString(ref.remaps));
    auto r = fx.restore(args);
    SB_EXPECT_EXIT(r, 2);
    EXPECT_TRUE(contains(r.err, ref.message));
    EXPECT_TRUE(contains(r.err, "remap"));
    EXPECT_FALSE(exists(fx.target)) << "the refused restore created its target";
  }
  // Nested NEWs are refused only when two files would meet: dirA/sub/y.dbf and a
  // dirB/y.dbf at /c/sub/y.dbf.
  make_file(fx.src + "/dirB/y.dbf", 4096, 9);
  auto b2 = sb({"backup", fx.src, "--to", fx.work / "pieces", "--catalog", fx.cat});
  SB_ASSERT_EXIT(b2, 0);
  auto clash = fx.restore({"--remap", a + "=/c", "--remap", b + "=/c/sub"});
  SB_EXPECT_EXIT(clash, 2);
  EXPECT_TRUE(contains(clash.err, "'" + a + "/sub/y.dbf'"));
  EXPECT_TRUE(contains(clash.err, "'" + b + "/y.dbf'"));
  EXPECT_TRUE(contains(clash.err, "would both be restored at '/c/sub/y.dbf'"));
  EXPECT_TRUE(contains(clash.err, "'" + a + "=/c'"));
  EXPECT_TRUE(contains(clash.err, "'" + b + "=/c/sub'"));
  EXPECT_FALSE(exists(fx.target));
  auto fine = fx.restore({"--remap", a + "=/c", "--remap", b + "=/c/other"});
  SB_EXPECT_EXIT(fine, 0);
}

TEST(Remap, RemapIsNotAnOptionOfValidate) {
  Fixture fx;
  auto r = sb({"validate", "--catalog", fx.cat, "--remap", "/a=/b"});
  SB_EXPECT_EXIT(r, 2);
}

TEST(Remap, DeltaRestoreUpdatesTheRemappedFilesInPlace) {
  Fixture fx;
  const std::string remap = fx.src + "/dirA=/moved";
  SB_ASSERT_EXIT(fx.restore({"--remap", remap}), 0);
  const std::string x = fx.target + "/moved/x.dbf";
  {
    std::fstream f(x, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100000);
    f.write("scribbled", 9);
  }
  auto r = fx.restore({"--remap", remap, "--delta", "--json"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_EQ(*j["delta"]["files_compared"].as_u64(), 4u);
  EXPECT_EQ(*j["delta"]["updated"].as_u64(), 1u);
  EXPECT_EQ(*j["delta"]["unchanged"].as_u64(), 3u);
  EXPECT_LT(*j["bytes_written"].as_u64(), 1u << 20);
  EXPECT_TRUE(fx.restored_at({
      {fx.src + "/dirA/x.dbf", x},
      {fx.src + "/dirA/sub/y.dbf", fx.target + "/moved/sub/y.dbf"},
      {fx.src + "/dirAB/w.dbf", fx.target + fx.src + "/dirAB/w.dbf"},
      {fx.src + "/dirB/z.dbf", fx.target + fx.src + "/dirB/z.dbf"},
  }));
}

TEST(Remap, AKilledRemappedRestoreIsCleanedUpByTheNext) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  Fixture fx;
  const std::string remap = fx.src + "/dirA=/moved";
  auto killed = sb({"restore", "--to", fx.target, "--catalog", fx.cat, "--remap", remap,
                    "--channels", "1"},
                   {{"STRIPEBACK_CRASH_AT", "restore-file-synced"}});
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed.describe();
  ASSERT_FALSE(files_under(fx.target).empty()) << "the killed restore left no temporary";
  auto next = fx.restore({"--remap", remap, "--force", "--json"});
  SB_ASSERT_EXIT(next, 0);
  EXPECT_TRUE(contains(next.out, "temporary file(s) left by an interrupted restore"));
  EXPECT_TRUE(fx.restored_at({
      {fx.src + "/dirA/x.dbf", fx.target + "/moved/x.dbf"},
      {fx.src + "/dirA/sub/y.dbf", fx.target + "/moved/sub/y.dbf"},
      {fx.src + "/dirAB/w.dbf", fx.target + fx.src + "/dirAB/w.dbf"},
      {fx.src + "/dirB/z.dbf", fx.target + fx.src + "/dirB/z.dbf"},
  }));
}

TEST(Remap, PreviewShowsTheRemappedTargets) {
  Fixture fx;
  auto r = fx.restore({"--remap", fx.src + "/dirA=/moved", "--preview", "--json"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  std::map<std::string, std::string> at;
  for (const auto& f : j["planned_files"].items()) at[f["path"].as_string()] = f["target"].as_string();
  EXPECT_EQ(at[fx.src + "/dirA/sub/y.dbf"], fx.target + "/moved/sub/y.dbf");
  EXPECT_EQ(at[fx.src + "/dirB/z.dbf"], fx.target + fx.src + "/dirB/z.dbf");
  EXPECT_FALSE(exists(fx.target));
}

}  // namespace
}  // namespace stripeback::it
