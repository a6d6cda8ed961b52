// restore --remap (engine/restore/path_remap.h): parsing, the longest whole-component
// prefix, where files land below the target, and the remaps refused before a restore
// writes anything.
#include "engine/restore/path_remap.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stripeback::engine {
namespace {

std::vector<PathRemap> remaps(const std::vector<std::string>& texts) {
  std::vector<PathRemap> out;
  for (const auto& t : texts) {
    auto r = parse_remap(t);
    EXPECT_TRUE(r.has_value()) << t << ": " << r.error().what;
    if (r) out.push_back(*r);
  }
  return out;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(PathRemap, ParsesOldAndNewAndDropsATrailingSlash) {
  auto r = parse_remap("/data/db/=/srv/db");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->from, "/data/db");
  EXPECT_EQ(r->to, "/srv/db");
  EXPECT_EQ(r->shown(), "'/data/db=/srv/db'");
  auto root = parse_remap("/data=/");
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->to, "/");
}

TEST(PathRemap, RefusesRelativeDotDotAndMalformedRemapsNamingThem) {
  for (const char* t : {"/data", "data=/srv", "/data=srv", "/data=/srv/../etc", "/a/./b=/c",
                        "/a//b=/c", "=/srv", "/data="}) {
    auto r = parse_remap(t);
    EXPECT_FALSE(r.has_value()) << "'" << t << "' accepted";
    if (!r) {
      EXPECT_EQ(r.error().code, Errc::invalid_argument);
      EXPECT_TRUE(has(r.error().what, std::string("'") + t + "'")) << r.error().what;
      EXPECT_TRUE(has(r.error().what, "remap")) << r.error().what;
    }
  }
  auto nul = parse_remap(std::string("/a\0b=/c", 7));
  EXPECT_FALSE(nul.has_value());
}

TEST(PathRemap, LongestWholeComponentPrefixWins) {
  auto r = remaps({"/data=/x", "/data/a=/y", "/data/a/deep=/z"});
  EXPECT_EQ(remap_place(r, "/data/a/f"), "/y/f");
  EXPECT_EQ(remap_place(r, "/data/a/deep/f"), "/z/f");
  EXPECT_EQ(remap_place(r, "/data/ab/f"), "/x/ab/f");  // /data/a is not a prefix of /data/ab
  EXPECT_EQ(remap_place(r, "/data/a"), "/y");
  EXPECT_EQ(remap_place(r, "/other/f"), "/other/f");
  EXPECT_EQ(remap_place(r, "/dat"), "/dat");
  ASSERT_NE(remap_for(r, "/data/a/g"), nullptr);
  EXPECT_EQ(remap_for(r, "/data/a/g")->to, "/y");
  EXPECT_EQ(remap_for(r, "/elsewhere"), nullptr);
}

TEST(PathRemap, RootOnEitherSide) {
  auto to_root = remaps({"/data=/"});
  EXPECT_EQ(remap_place(to_root, "/data/f"), "/f");
  EXPECT_EQ(remap_place(to_root, "/data"), "/");
  auto from_root = remaps({"/=/old"});
  EXPECT_EQ(remap_place(from_root, "/data/f"), "/old/data/f");
}

TEST(PathRemap, TargetComponentsAreRemappedAndStillSafe) {
  auto r = remaps({"/data=/srv/new"});
  auto c = target_components("/data/db/f.dbf", r);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(*c, (std::vector<std::string>{"srv", "new", "db", "f.dbf"}));
  auto plain = target_components("/etc/x", r);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(*plain, (std::vector<std::string>{"etc", "x"}));
  EXPECT_FALSE(target_components("/data/../etc/passwd", r).has_value());
  auto onto = target_components("/data", remaps({"/data=/"}));
  ASSERT_TRUE(onto.has_value());
  EXPECT_TRUE(onto->empty());
  // A file from a server is matched at /host/path.
  auto nfs = target_components("nfs://filer/export/db/f", remaps({"/filer/export=/local"}));
  ASSERT_TRUE(nfs.has_value());
  EXPECT_EQ(*nfs, (std::vector<std::string>{"local", "db", "f"}));
}

TEST(PathRemap, RefusesTheSameOldTwiceAndTwoOldsOntoOneNew) {
  auto same_old = check_remaps(remaps({"/a=/x", "/a=/y"}));
  ASSERT_FALSE(same_old.has_value());
  EXPECT_TRUE(has(same_old.error().what, "'/a=/x' and '/a=/y'")) << same_old.error().what;
  auto same_new = check_remaps(remaps({"/a=/x", "/b=/x"}));
  ASSERT_FALSE(same_new.has_value());
  EXPECT_TRUE(has(same_new.error().what, "'/a=/x' and '/b=/x'")) << same_new.error().what;
  EXPECT_TRUE(has(same_new.error().what, "onto one")) << same_new.error().what;
  EXPECT_TRUE(check_remaps(remaps({"/a=/x", "/b=/x/sub"})).has_value());
}

TEST(PathRemap, NestedNewsAreRefusedOnlyWhenTwoFilesWouldLandOnOnePlace) {
  auto r = remaps({"/a=/x", "/b=/x/sub"});
  EXPECT_TRUE(check_landings({{"/a/f", false}, {"/b/g", false}}, r).has_value());
  auto clash = check_landings({{"/a/sub/f", false}, {"/b/f", false}}, r);
  ASSERT_FALSE(clash.has_value());
  EXPECT_EQ(clash.error().code, Errc::invalid_argument);
  EXPECT_TRUE(has(clash.error().what, "'/a/sub/f'")) << clash.error().what;
  EXPECT_TRUE(has(clash.error().what, "'/b/f'")) << clash.error().what;
  EXPECT_TRUE(has(clash.error().what, "'/x/sub/f'")) << clash.error().what;
  EXPECT_TRUE(has(clash.error().what, "'/a=/x'")) << clash.error().what;
  EXPECT_TRUE(has(clash.error().what, "'/b=/x/sub'")) << clash.error().what;
  // Directories may share a place.
  EXPECT_TRUE(check_landings({{"/a/sub", true}, {"/b", true}}, r).has_value());
}

TEST(PathRemap, RefusesAFileOntoAnUnremappedFileAndAFileWhereADirectoryIsNeeded) {
  auto r = remaps({"/a=/b"});
  auto onto = check_landings({{"/a/f", false}, {"/b/f", false}}, r);
  ASSERT_FALSE(onto.has_value());
  EXPECT_TRUE(has(onto.error().what, "not remapped")) << onto.error().what;
  auto dir = check_landings({{"/a/f", false}, {"/b/f/g", false}}, r);
  ASSERT_FALSE(dir.has_value());
  EXPECT_TRUE(has(dir.error().what, "needs a directory")) << dir.error().what;
  auto target = check_landings({{"/a", false}}, remaps({"/a=/"}));
  ASSERT_FALSE(target.has_value());
  EXPECT_TRUE(has(target.error().what, "restore target itself")) << target.error().what;
  EXPECT_TRUE(check_landings({{"/a/f", false}, {"/b/f", false}}, {}).has_value());
}

}  // namespace
}  // namespace stripeback::engine
