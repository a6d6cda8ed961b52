#include "engine/throttle.h"

#include <gtest/gtest.h>

#include <thread>

#include "engine/backup_job.h"

namespace stripeback::engine {
namespace {

TEST(TokenBucket, UnlimitedNeverWaits) {
  TokenBucket b(0, 1 << 20);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(b.wait_time(), TokenBucket::Clock::duration::zero());
    b.consume(1 << 20);
  }
}

TEST(TokenBucket, DebtMakesTheCallerWaitInProportion) {
  const double rate = 10 << 20;  // 10 MiB/s, burst one 1 MiB buffer
  TokenBucket b(rate, 1 << 20);
  EXPECT_EQ(b.wait_time(), TokenBucket::Clock::duration::zero());
  b.consume(1 << 20);  // spends the burst
  b.consume(1 << 20);  // one buffer of debt: about 100 ms at 10 MiB/s
  auto w = std::chrono::duration<double>(b.wait_time()).count();
  EXPECT_GT(w, 0.08);
  EXPECT_LT(w, 0.11);
}

TEST(TokenBucket, HoldsTheRateOverTime) {
  const double rate = 40 << 20;
  TokenBucket b(rate, 1 << 20);
  auto start = TokenBucket::Clock::now();
  uint64_t taken = 0;
  while (taken < (12u << 20)) {  // 12 MiB at 40 MiB/s: about 0.27 s after the burst
    auto w = b.wait_time();
    if (w > TokenBucket::Clock::duration::zero()) {
      std::this_thread::sleep_for(w);
      continue;
    }
    b.consume(1 << 20);
    taken += 1 << 20;
  }
  double s = std::chrono::duration<double>(TokenBucket::Clock::now() - start).count();
  double expect = static_cast<double>(taken - (2u << 20)) / rate;  // burst and last debt
  EXPECT_GT(s, expect * 0.9);
  EXPECT_LT(s, expect * 2 + 0.1);  // sleeps only overshoot; a loaded machine overshoots more
}

TEST(BufferRule, FollowsMultiplexingAndKeeps16MiB) {
  auto c1 = choose_buffers(1, {}, {});
  EXPECT_EQ(c1.buffers, 16u);
  EXPECT_EQ(c1.buffer_size, 1u << 20);
  auto c4 = choose_buffers(4, {}, {});
  EXPECT_EQ(c4.buffers * c4.buffer_size, 16u << 20);
  EXPECT_EQ(c4.buffer_size, 1u << 20);
  auto c8 = choose_buffers(8, {}, {});
  EXPECT_EQ(c8.buffers, 32u);
  EXPECT_EQ(c8.buffer_size, 512u << 10);
  auto c9 = choose_buffers(9, {}, {});
  EXPECT_EQ(c9.buffers, 64u);
  EXPECT_EQ(c9.buffer_size, 256u << 10);
  // Overrides: a size alone keeps the 16 MiB total; both given win outright.
  auto s = choose_buffers(1, {}, size_t{4u << 20});
  EXPECT_EQ(s.buffers, 4u);
  EXPECT_EQ(s.buffer_size, 4u << 20);
  auto both = choose_buffers(9, size_t{3}, size_t{8192});
  EXPECT_EQ(both.buffers, 3u);
  EXPECT_EQ(both.buffer_size, 8192u);
  EXPECT_EQ(both.multiplexing, 9u);
}

TEST(BufferRule, CompressionUsesOneMiBFramesWithinTheSameMemory) {
  auto c = choose_buffers(8, {}, {}, /*compressing=*/true);
  EXPECT_EQ(c.buffer_size, 1u << 20);
  EXPECT_EQ(c.buffers, 16u);
  auto given = choose_buffers(8, {}, size_t{256u << 10}, true);
  EXPECT_EQ(given.buffer_size, 256u << 10);
}

}  // namespace
}  // namespace stripeback::engine
