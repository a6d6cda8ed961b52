// The wall clock stands still at a fake time only when a test sets one through the
// test-hook API, and a malformed time is refused.
#include "util/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

namespace stripeback::util {
namespace {

int64_t real_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(FakeClock, StandsStillAtTheTimeSetAndRunsAgainWhenCleared) {
  ASSERT_TRUE(test_hooks::set_fake_now("2025-12-01T02:00:00Z").has_value());
  EXPECT_EQ(wall_now_ns(), int64_t{1764554400} * 1'000'000'000);
  ASSERT_TRUE(test_hooks::set_fake_now("1764554401").has_value());
  EXPECT_EQ(wall_now_ns(), int64_t{1764554401} * 1'000'000'000);
  ASSERT_TRUE(test_hooks::set_fake_now("").has_value());
  EXPECT_LT(std::abs(wall_now_ns() - real_now_ns()), int64_t{60} * 1'000'000'000);
}

TEST(FakeClock, AMalformedTimeIsRefusedAndChangesNothing) {
  ASSERT_TRUE(test_hooks::set_fake_now("1764554400").has_value());
  for (const char* when :
       {"yesterday", "2026-13-01T00:00:00Z", "2026-12-01", "12x", "999999999999999999"}) {
    auto r = test_hooks::set_fake_now(when);
    ASSERT_FALSE(r.has_value()) << when;
    EXPECT_EQ(r.error().code, Errc::invalid_argument);
    EXPECT_NE(r.error().what.find(std::string("'") + when + "'"), std::string::npos)
        << r.error().what;
  }
  EXPECT_EQ(wall_now_ns(), int64_t{1764554400} * 1'000'000'000);
  ASSERT_TRUE(test_hooks::set_fake_now("").has_value());
}

}  // namespace
}  // namespace stripeback::util
