#include "engine/planner.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/temp_dir.h"

namespace stripeback::engine {
namespace {

TEST(Planner, LargestFirstAndSkipsSpecialFiles) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir / "a/b");
  testing::write_pattern_file(dir / "small", 10, 1);
  testing::write_pattern_file(dir / "a/big", 5000, 2);
  testing::write_pattern_file(dir / "a/b/mid", 300, 3);
  testing::write_pattern_file(dir / "a/b/empty", 0, 4);
  ASSERT_EQ(::symlink("small", (dir / "link").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  auto plan = make_plan({dir.path()});
  ASSERT_TRUE(plan.has_value()) << plan.error().what;
  ASSERT_EQ(plan->files.size(), 4u);
  EXPECT_EQ(plan->files[0].path, dir / "a/big");
  EXPECT_EQ(plan->files[1].path, dir / "a/b/mid");
  EXPECT_EQ(plan->files[2].path, dir / "small");
  EXPECT_EQ(plan->files[3].size, 0u);
  EXPECT_EQ(plan->total_bytes, 5310u);
  ASSERT_EQ(plan->skipped.size(), 2u);
  EXPECT_EQ(plan->dirs.size(), 3u);  // the source itself, a, a/b
}

TEST(Planner, OverlappingSourcesTakeEachFileOnce) {
  testing::TempDir dir;
  testing::write_pattern_file(dir / "f", 100, 1);
  auto plan = make_plan({dir.path(), dir / "f", dir.path() + "/./f"});
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->files.size(), 1u);
}

TEST(Planner, MissingSourceIsNamed) {
  auto plan = make_plan({"/nonexistent/stripeback-source"});
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.error().what.find("/nonexistent/stripeback-source"), std::string::npos);
  EXPECT_EQ(plan.error().code, Errc::not_found);
}

TEST(Planner, SpecialFileAsSourceIsRefused) {
  auto plan = make_plan({"/dev/null"});
  ASSERT_FALSE(plan.has_value());
  EXPECT_EQ(plan.error().code, Errc::invalid_argument);
  EXPECT_NE(plan.error().what.find("character device"), std::string::npos);
}

TEST(WorkQueue, HandsOutEachFileOnce) {
  std::vector<FileTask> files(5);
  WorkQueue q(files);
  int n = 0;
  while (q.next()) ++n;
  EXPECT_EQ(n, 5);
  EXPECT_EQ(q.next(), nullptr);
}

}  // namespace
}  // namespace stripeback::engine
