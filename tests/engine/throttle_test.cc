#include "engine/backup/throttle.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine/backup/backup_job.h"

namespace stripeback::engine {
namespace {

TEST(TokenBucket, UnlimitedNeverWaits) {
  TokenBucket b(0, 1 << 20);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(b.wait_time(1 << 20), TokenBucket::Clock::duration::zero());
    EXPECT_EQ(b.take(1 << 20), TokenBucket::Clock::duration::zero());
  }
}

double seconds(TokenBucket::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// No burst at the start: the first request waits for its own tokens. (Rates here are low
// enough that a thread descheduled for tens of milliseconds still sees the same answers.)
TEST(TokenBucket, StartsEmpty) {
  const double rate = 10 << 20;  // 10 MiB/s: 1 MiB takes 100 ms
  TokenBucket b(rate, 1 << 20);
  double w = seconds(b.wait_time(1 << 20));
  EXPECT_GT(w, 0.05);
  EXPECT_LE(w, 0.1);
  EXPECT_GT(b.take(1 << 20), TokenBucket::Clock::duration::zero()) << "took before refilled";
}

TEST(TokenBucket, TakeSpendsTokensWaitTimeDoesNot) {
  const double rate = 10 << 20;
  TokenBucket b(rate, 1 << 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // full: one buffer saved up
  EXPECT_EQ(b.wait_time(1 << 20), TokenBucket::Clock::duration::zero());
  EXPECT_EQ(b.wait_time(1 << 20), TokenBucket::Clock::duration::zero());
  EXPECT_EQ(b.take(1 << 20), TokenBucket::Clock::duration::zero());
  // The saved-up buffer is spent: the next one waits (idle time saves at most `burst`).
  double w = seconds(b.wait_time(1 << 20));
  EXPECT_GT(w, 0.05);
  EXPECT_LE(w, 0.1);
}

TEST(TokenBucket, RequestsAboveTheBurstGoAndLeaveDebt) {
  const double rate = 10 << 20;
  TokenBucket b(rate, 1 << 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(b.take(3 << 20), TokenBucket::Clock::duration::zero());  // 2 MiB of debt
  double w = seconds(b.wait_time(1 << 20));
  EXPECT_GT(w, 0.25);  // the debt and the next MiB: 300 ms
  EXPECT_LE(w, 0.3);
}

// From the start, n bytes take about n / rate: nothing goes before its tokens are there.
TEST(TokenBucket, HoldsTheRateFromTheStart) {
  const double rate = 40 << 20;
  TokenBucket b(rate, 1 << 20);
  auto start = TokenBucket::Clock::now();
  uint64_t taken = 0;
  while (taken < (12u << 20)) {  // 12 MiB at 40 MiB/s: 0.3 s
    auto w = b.take(1 << 20);
    if (w > TokenBucket::Clock::duration::zero()) {
      std::this_thread::sleep_for(w);
      continue;
    }
    taken += 1 << 20;
  }
  double s = seconds(TokenBucket::Clock::now() - start);
  double expect = static_cast<double>(taken) / rate;
  EXPECT_GT(s, expect * 0.95);
  EXPECT_LT(s, expect * 2 + 0.1);  // sleeps only overshoot; a loaded machine overshoots more
}

// Two threads sharing a bucket get no more than the rate between them.
TEST(TokenBucket, SharedBucketIsNeverOverdrawn) {
  const double rate = 40 << 20;
  TokenBucket b(rate, 1 << 20);
  std::atomic<uint64_t> taken{0};
  auto start = TokenBucket::Clock::now();
  auto worker = [&] {
    while (taken.load() < (12u << 20)) {
      auto w = b.take(1 << 20);
      if (w > TokenBucket::Clock::duration::zero()) std::this_thread::sleep_for(w);
      else taken += 1 << 20;
    }
  };
  std::thread t1(worker), t2(worker);
  t1.join();
  t2.join();
  double s = seconds(TokenBucket::Clock::now() - start);
  // The last MiB each thread took may pass the 12 MiB mark: count what was taken.
  EXPECT_GT(s, static_cast<double>(taken.load() - (1u << 20)) / rate * 0.95);
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

// A validation's buffers are all reads in flight: twice the count, 32 MiB per channel, at
// every multiplexing level and with a size alone; a count given is kept.
TEST(BufferRule, ValidationHasTwiceTheBuffers) {
  for (uint32_t level : {1u, 4u, 8u, 9u}) {
    auto backup = choose_buffers(level, {}, {});
    auto v = choose_buffers(level, {}, {}, false, /*validating=*/true);
    EXPECT_EQ(v.buffer_size, backup.buffer_size) << level;
    EXPECT_EQ(v.buffers, 2 * backup.buffers) << level;
    EXPECT_EQ(v.buffers * v.buffer_size, 32u << 20) << level;
  }
  auto sized = choose_buffers(1, {}, size_t{4u << 20}, false, true);
  EXPECT_EQ(sized.buffers, 8u);
  auto given = choose_buffers(1, size_t{5}, {}, false, true);
  EXPECT_EQ(given.buffers, 5u);
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
