// The --compress auto controller: up the ladder while the channel waits for its devices,
// down when compression keeps the thread busy, and within a CPU budget when one is given.
#include <gtest/gtest.h>

#include "engine/transform/compress.h"

namespace stripeback::engine {
namespace {

TEST(AutoLevel, ParsesAndStartsAtTheCheapestLevel) {
  auto a = parse_compress("auto");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a, kCompressAuto);
  EXPECT_EQ(AutoLevel().level(), 1);
  auto bad = parse_compress("automatic");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().what.find("auto"), std::string::npos);
}

TEST(AutoLevel, ClimbsWhileDevicesAreTheLimitAndStopsAtTheTop) {
  AutoLevel a;
  std::vector<int> seen;
  for (int i = 0; i < 10; ++i) seen.push_back(a.update(1.0, 0.5, 0.2));
  EXPECT_EQ(seen.front(), 2);
  EXPECT_EQ(seen.back(), 9);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i], seen[i - 1]);
}

TEST(AutoLevel, StepsDownWhenCompressionIsTheLimit) {
  AutoLevel a;
  for (int i = 0; i < 5; ++i) a.update(1.0, 0.5, 0.1);
  int high = a.level();
  EXPECT_GT(high, 3);
  // Never waiting, 90% of the time compressing: one step down per window.
  EXPECT_LT(a.update(1.0, 0.0, 0.9), high);
  for (int i = 0; i < 10; ++i) a.update(1.0, 0.0, 0.9);
  EXPECT_EQ(a.level(), 0) << "devices faster than level 1: frames are stored raw";
  // Stored raw, the thread waits for its devices again: back to compressing.
  EXPECT_EQ(a.update(1.0, 0.5, 0.0), 1);
}

TEST(AutoLevel, HoldsInBetween) {
  AutoLevel a;
  a.update(1.0, 0.5, 0.1);
  int l = a.level();
  // Some waiting, moderate compression: no reason to move.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a.update(1.0, 0.1, 0.4), l);
}

TEST(AutoLevel, BudgetCapsTheClimbAndForcesStepsDown) {
  AutoLevel a(0.3);
  // Idle devices, compression at 0.2 of a core: the next step (x1.3) still fits, the one
  // after (x1.6/1.3 of that) would pass 0.3.
  EXPECT_EQ(a.update(1.0, 0.5, 0.2), 2);
  EXPECT_EQ(a.update(1.0, 0.5, 0.26), 2);
  // Over budget: down even though the devices wait, if need be to storing raw.
  EXPECT_EQ(a.update(1.0, 0.5, 0.35), 1);
  EXPECT_EQ(a.update(1.0, 0.5, 0.35), 0);
}

TEST(AutoLevel, EmptyWindowChangesNothing) {
  AutoLevel a;
  EXPECT_EQ(a.update(0.0, 0.0, 0.0), 1);
}

}  // namespace
}  // namespace stripeback::engine
