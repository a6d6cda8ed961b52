#include "engine/backup/exclude.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "engine/backup/planner.h"
#include "tests/support/temp_dir.h"

namespace stripeback::engine {
namespace {

// Whether `patterns` leave out the file at `rel` (directories above it included, as the
// planner asks about each directory before walking it).
bool leaves_out(const std::vector<std::string>& patterns, const std::string& rel) {
  auto rules = ExcludeRules::make(patterns);
  EXPECT_TRUE(rules.has_value()) << rules.error().what;
  if (!rules) return false;
  for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1))
    if (rules->match(rel.substr(0, slash), true)) return true;
  return rules->match(rel, false) != nullptr;
}

TEST(Glob, StarAndQuestionMarkMatchWithinOneName) {
  EXPECT_TRUE(glob_matches("*.tmp", "a.tmp"));
  EXPECT_TRUE(glob_matches("*.tmp", ".tmp"));
  EXPECT_FALSE(glob_matches("*.tmp", "a.tmpx"));
  EXPECT_TRUE(glob_matches("a*b*c", "aXXbYYc"));
  EXPECT_TRUE(glob_matches("a*b*c", "abbc"));
  EXPECT_FALSE(glob_matches("a*b*c", "acb"));
  EXPECT_TRUE(glob_matches("f?le", "file"));
  EXPECT_FALSE(glob_matches("f?le", "fle"));
  EXPECT_TRUE(glob_matches("*", ""));
  EXPECT_FALSE(glob_matches("?", ""));
  EXPECT_TRUE(glob_matches("pgsql_tmp*", "pgsql_tmp12345.0"));
}

TEST(Glob, ClassesRangesNegationAndEscapes) {
  EXPECT_TRUE(glob_matches("[abc].dat", "b.dat"));
  EXPECT_FALSE(glob_matches("[abc].dat", "d.dat"));
  EXPECT_TRUE(glob_matches("log[0-9]", "log7"));
  EXPECT_FALSE(glob_matches("log[0-9]", "logx"));
  EXPECT_TRUE(glob_matches("log[!0-9]", "logx"));
  EXPECT_TRUE(glob_matches("log[^0-9]", "logx"));
  EXPECT_FALSE(glob_matches("log[!0-9]", "log1"));
  EXPECT_TRUE(glob_matches("[]]", "]"));
  EXPECT_TRUE(glob_matches("[a-]", "-"));
  EXPECT_TRUE(glob_matches("\\*", "*"));
  EXPECT_FALSE(glob_matches("\\*", "x"));
  EXPECT_TRUE(glob_matches("a\\?", "a?"));
  EXPECT_FALSE(glob_matches("a\\?", "ab"));
}

TEST(ExcludeRules, APatternWithoutSlashMatchesANameAtAnyDepth) {
  EXPECT_TRUE(leaves_out({"*.tmp"}, "a.tmp"));
  EXPECT_TRUE(leaves_out({"*.tmp"}, "x/y/z/a.tmp"));
  EXPECT_TRUE(leaves_out({"pgsql_tmp*"}, "base/pgsql_tmp/f"));
  EXPECT_FALSE(leaves_out({"*.tmp"}, "a.tmp.keep"));
  EXPECT_FALSE(leaves_out({"cache"}, "caches/f"));
}

TEST(ExcludeRules, APatternWithSlashIsAnchoredAtTheSource) {
  EXPECT_TRUE(leaves_out({"/cache"}, "cache/f"));
  EXPECT_FALSE(leaves_out({"/cache"}, "x/cache/f"));
  EXPECT_TRUE(leaves_out({"logs/*.old"}, "logs/a.old"));
  EXPECT_FALSE(leaves_out({"logs/*.old"}, "app/logs/a.old"));
  // '*' does not cross '/'.
  EXPECT_FALSE(leaves_out({"/a*c"}, "ab/c"));
  EXPECT_FALSE(leaves_out({"/a?c"}, "a/c"));
}

TEST(ExcludeRules, DoubleStarSpansComponentsAtStartMiddleAndEnd) {
  // Start: at any depth, the source's own level included.
  EXPECT_TRUE(leaves_out({"**/logs/*.old"}, "logs/a.old"));
  EXPECT_TRUE(leaves_out({"**/logs/*.old"}, "app/x/logs/a.old"));
  EXPECT_FALSE(leaves_out({"**/logs/*.old"}, "app/logs/sub/a.old"));
  // Middle: none or any number of components.
  EXPECT_TRUE(leaves_out({"data/**/*.tmp"}, "data/a.tmp"));
  EXPECT_TRUE(leaves_out({"data/**/*.tmp"}, "data/1/2/3/a.tmp"));
  EXPECT_FALSE(leaves_out({"data/**/*.tmp"}, "other/data/a.tmp"));
  // End: everything below, and (none) the directory itself.
  auto rules = ExcludeRules::make({"data/**"});
  ASSERT_TRUE(rules.has_value());
  EXPECT_NE(rules->match("data/x/y", false), nullptr);
  EXPECT_NE(rules->match("data", true), nullptr);
  EXPECT_EQ(rules->match("database", true), nullptr);
  // Repeated ** are one.
  EXPECT_TRUE(leaves_out({"**/**/k"}, "a/b/k"));
  EXPECT_TRUE(leaves_out({"**"}, "anything/at/all"));
}

TEST(ExcludeRules, ATrailingSlashMatchesDirectoriesOnly) {
  auto rules = ExcludeRules::make({"cache/"});
  ASSERT_TRUE(rules.has_value());
  EXPECT_NE(rules->match("a/cache", true), nullptr);
  EXPECT_EQ(rules->match("a/cache", false), nullptr);
}

TEST(ExcludeRules, TheFirstMatchingPatternIsNamed) {
  auto rules = ExcludeRules::make({"*.log", "*.tmp"});
  ASSERT_TRUE(rules.has_value());
  const std::string* p = rules->match("x/a.tmp", false);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, "*.tmp");
  EXPECT_EQ(rules->match("", true), nullptr) << "a source itself is never excluded";
}

TEST(ExcludeRules, BadPatternsAreRefusedNamingThePattern) {
  for (const std::string bad : {"[abc", "a[!x", "*.tm[", "", "/", "a//b", "trail\\", "//"}) {
    auto r = ExcludeRules::make({"ok*", bad});
    ASSERT_FALSE(r.has_value()) << "'" << bad << "' was accepted";
    EXPECT_EQ(r.error().code, Errc::invalid_argument);
    EXPECT_NE(r.error().what.find("'" + bad + "'"), std::string::npos) << r.error().what;
  }
  auto unclosed = ExcludeRules::check("data/[0-9");
  ASSERT_FALSE(unclosed.has_value());
  EXPECT_NE(unclosed.error().what.find("not closed"), std::string::npos) << unclosed.error().what;
  EXPECT_TRUE(ExcludeRules::check("[]]").has_value());
  EXPECT_TRUE(ExcludeRules::check("a\\[b").has_value());
}

TEST(PlannerExcludes, AnExcludedDirectoryIsNotWalkedAndEachExclusionIsListed) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir / "keep/sub");
  std::filesystem::create_directories(dir / "cache/deep");
  testing::write_pattern_file(dir / "keep/a.dat", 10, 1);
  testing::write_pattern_file(dir / "keep/b.tmp", 10, 2);
  testing::write_pattern_file(dir / "keep/sub/c.dat", 10, 3);
  testing::write_pattern_file(dir / "cache/deep/d.dat", 10, 4);
  auto rules = ExcludeRules::make({"*.tmp", "/cache"});
  ASSERT_TRUE(rules.has_value());
  PlanOptions po;
  po.rules = &*rules;
  auto plan = make_plan({dir.path()}, po);
  ASSERT_TRUE(plan.has_value()) << plan.error().what;
  std::vector<std::string> files;
  for (const auto& f : plan->files) files.push_back(f.path);
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{dir / "keep/a.dat", dir / "keep/sub/c.dat"}));
  EXPECT_EQ(plan->excluded, (std::vector<std::string>{dir / "cache", dir / "keep/b.tmp"}));
  for (const auto& d : plan->dirs) EXPECT_NE(d.path, dir / "cache/deep") << "not walked";
}

}  // namespace
}  // namespace stripeback::engine
