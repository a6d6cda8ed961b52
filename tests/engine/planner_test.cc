#include "engine/backup/planner.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
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

TEST(WorkQueue, HandsOutEachSetOnce) {
  std::vector<WorkSet> sets(5);
  WorkQueue q(sets, 1);
  int n = 0;
  while (q.next(1)) ++n;
  EXPECT_EQ(n, 5);
  EXPECT_EQ(q.next(1), nullptr);
}

// A channel that asks late still gets its own set: channel 1 takes every set it can before
// channel 2 asks, and channel 2 gets set 1 (the second), then nothing.
TEST(WorkQueue, EachChannelKeepsItsFirstSetForALateStart) {
  std::vector<WorkSet> sets(4);
  WorkQueue q(sets, 2);
  std::vector<const WorkSet*> first;
  while (const WorkSet* s = q.next(1)) first.push_back(s);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0], &sets[0]);
  EXPECT_EQ(first[1], &sets[2]);
  EXPECT_EQ(first[2], &sets[3]);
  EXPECT_EQ(q.next(2), &sets[1]);
  EXPECT_EQ(q.next(2), nullptr);
  EXPECT_EQ(q.next(1), nullptr);
}

// More channels than sets: the sets go one to each of the first channels, the others get
// none; every set is handed out once, whatever the order of the asks.
TEST(WorkQueue, MoreChannelsThanSetsHandsEachSetOnce) {
  std::vector<WorkSet> sets(2);
  WorkQueue q(sets, 4);
  EXPECT_EQ(q.next(4), nullptr);
  EXPECT_EQ(q.next(2), &sets[1]);
  EXPECT_EQ(q.next(3), nullptr);
  EXPECT_EQ(q.next(1), &sets[0]);
  EXPECT_EQ(q.next(1), nullptr);
  EXPECT_EQ(q.next(2), nullptr);
}

std::vector<FileTask> files_of(std::initializer_list<uint64_t> sizes) {
  std::vector<FileTask> f;
  int i = 0;
  for (uint64_t s : sizes) f.push_back({"/f" + std::to_string(i++), s, 0100644, 0, 0, 0});
  return f;
}

TEST(MakeSets, AtLeastOneSetPerChannelBalancedByBytes) {
  auto files = files_of({100, 90, 50, 40, 10, 5});
  SetOptions o;
  o.channels = 2;
  auto sets = make_sets(files, o);
  ASSERT_EQ(sets.size(), 2u);
  uint64_t a = 0, b = 0;
  for (auto& u : sets[0]) a += u.length;
  for (auto& u : sets[1]) b += u.length;
  EXPECT_EQ(a + b, 295u);
  EXPECT_LE(a > b ? a - b : b - a, 20u) << a << " vs " << b;
}

TEST(MakeSets, FilesPerSetLimitsSetSize) {
  auto files = files_of({9, 8, 7, 6, 5, 4, 3});
  SetOptions o;
  o.files_per_set = 2;
  auto sets = make_sets(files, o);
  EXPECT_EQ(sets.size(), 4u);
  size_t units = 0;
  for (auto& s : sets) {
    EXPECT_LE(s.size(), 2u);
    units += s.size();
  }
  EXPECT_EQ(units, 7u);
}

TEST(MakeSets, LargeFilesSplitIntoAlignedSectionsThatCoverThem) {
  auto files = files_of({(10u << 20) + 123, 1u << 20});
  SetOptions o;
  o.section_size = (3u << 20) + 5;  // rounded down to whole MiB
  auto sets = make_sets(files, o);
  uint64_t covered = 0, next = 0;
  uint32_t sections = 0;
  for (auto& s : sets)
    for (auto& u : s)
      if (u.file == &files[0]) {
        EXPECT_EQ(u.sections, 4u);
        EXPECT_EQ(s.size(), 1u) << "a section shares its set";
        ++sections;
        covered += u.length;
      }
  EXPECT_EQ(sections, 4u);
  EXPECT_EQ(covered, files[0].size);
  std::vector<WorkUnit> secs;
  for (auto& s : sets)
    for (auto& u : s)
      if (u.file == &files[0]) secs.push_back(u);
  std::sort(secs.begin(), secs.end(),
            [](const WorkUnit& x, const WorkUnit& y) { return x.offset < y.offset; });
  for (auto& u : secs) {
    EXPECT_EQ(u.offset, next);
    EXPECT_EQ(u.offset % (1u << 20), 0u);
    next += u.length;
  }
}

// With the time each file was last backed up, sets never mix files of different times and
// the oldest come first: a channel never multiplexes an overdue file with one backed up
// since, and the queue hands out overdue work (sections included) before the rest.
TEST(MakeSets, LastBackupGroupsComeOldestFirstAndNeverMix) {
  constexpr int64_t kNever = INT64_MIN;
  // The caller's order: never backed up first, then by time; largest first within.
  auto files = files_of({5u << 20, 100, 1, 500, 50, 5});
  const std::vector<int64_t> when = {kNever, kNever, kNever, 10, 10, 20};
  SetOptions o;
  o.channels = 2;
  o.section_size = 2u << 20;  // the first file: 3 sections
  o.last_backup = when;
  auto sets = make_sets(files, o);
  auto time_of = [&](const FileTask* f) { return when[static_cast<size_t>(f - files.data())]; };
  std::vector<int64_t> order;
  size_t units = 0;
  for (const auto& set : sets) {
    ASSERT_FALSE(set.empty());
    for (const auto& u : set) {
      EXPECT_EQ(time_of(u.file), time_of(set.front().file)) << "a set mixes last-backup times";
      ++units;
    }
    order.push_back(time_of(set.front().file));
  }
  EXPECT_EQ(units, 3u + 5u);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end())) << "sets are not oldest first";
  // The never backed up group: 3 sections and the two whole files over 2 sets.
  ASSERT_GE(sets.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(time_of(sets[i].front().file), kNever) << i;
  EXPECT_EQ(time_of(sets.back().front().file), 20);
}

TEST(MakeSets, WithoutLastBackupTimesAllFilesAreOneGroup) {
  auto files = files_of({1, 100, 50});
  SetOptions o;
  o.channels = 1;
  auto sets = make_sets(files, o);
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0].size(), 3u);
  EXPECT_EQ(sets[0].front().file, &files[0]) << "the caller's order is kept within a set";
}

}  // namespace
}  // namespace stripeback::engine
