#include "util/units.h"

#include <gtest/gtest.h>

namespace stripeback::util {
namespace {

TEST(ParseSize, AcceptsUnits) {
  EXPECT_EQ(*parse_size("4096"), 4096u);
  EXPECT_EQ(*parse_size("1M"), 1u << 20);
  EXPECT_EQ(*parse_size("256k"), 256u << 10);
  EXPECT_EQ(*parse_size("2GiB"), 2ull << 30);
  EXPECT_EQ(*parse_size("1T"), 1ull << 40);
}

TEST(ParseSize, RejectsGarbageWithMessage) {
  for (const char* bad : {"", "M", "-1", "1X", "99999999999999999999", "17179869184T"}) {
    auto r = parse_size(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().what.find("invalid size"), std::string::npos);
  }
}

TEST(ParseClockDuration, HoursMinutesAndSeconds) {
  EXPECT_EQ(*parse_clock_duration("01:30", "--duration"), std::chrono::seconds(5400));
  EXPECT_EQ(*parse_clock_duration("0:00:45", "--duration"), std::chrono::seconds(45));
  EXPECT_EQ(*parse_clock_duration("100:59:59", "--duration"), std::chrono::seconds(363599));
}

TEST(ParseClockDuration, RejectsGarbageNamingTheFlag) {
  for (const char* bad : {"", "1", ":", "1:60", "1:2:60", "1:2:3:4", "a:b", "-1:00", " 1:00"}) {
    auto r = parse_clock_duration(bad, "--duration");
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().what.find("invalid --duration"), std::string::npos) << r.error().what;
  }
}

// Regression (found by fuzz_units): "0:30:" was read as 30 minutes, and hours past
// 1193046 wrapped around in 32 bits ("1193047:00" gave 31 minutes 44 seconds).
TEST(ParseClockDuration, RefusesTrailingColonAndHoursThatDoNotFit) {
  for (const char* bad : {"0:30:", "1:00:00:", "1193047:00", "99999999999999999999:00"}) {
    auto r = parse_clock_duration(bad, "--duration");
    EXPECT_FALSE(r.has_value()) << bad << " gave " << r->count() << " s";
  }
  auto most = parse_clock_duration(std::to_string(kMaxClockHours) + ":59:59", "--duration");
  ASSERT_TRUE(most) << most.error().what;
  EXPECT_EQ(static_cast<uint64_t>(most->count()), kMaxClockHours * 3600 + 3599);
}

TEST(ParseInterval, UnitsAndPlainSeconds) {
  EXPECT_EQ(*parse_interval("500ms", "--nfs-timeout"), std::chrono::milliseconds(500));
  EXPECT_EQ(*parse_interval("10s", "--nfs-timeout"), std::chrono::milliseconds(10000));
  EXPECT_EQ(*parse_interval("2m", "--nfs-timeout"), std::chrono::milliseconds(120000));
  EXPECT_EQ(*parse_interval("7", "--nfs-timeout"), std::chrono::milliseconds(7000));
  EXPECT_EQ(*parse_interval("1440m", "--nfs-timeout"), std::chrono::hours(24));
}

TEST(ParseInterval, RejectsZeroTooLongAndGarbageNamingTheFlag) {
  for (const char* bad : {"", "0", "0s", "1441m", "1h", "ms", "-1s", "5 s"}) {
    auto r = parse_interval(bad, "--nfs-retry");
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().what.find("invalid --nfs-retry"), std::string::npos) << r.error().what;
  }
}

// Regression: the count was multiplied by the unit in 64 bits before the 24-hour bound
// was checked, so "18446744073709552s" wrapped to 384 ms and was accepted.
TEST(ParseInterval, RefusesCountsThatOverflowTheUnit) {
  for (const char* bad : {"18446744073709552s", "307445734561826m", "18446744073709552"}) {
    auto r = parse_interval(bad, "--nfs-timeout");
    EXPECT_FALSE(r.has_value()) << bad << " gave " << r->count() << " ms";
  }
}

}  // namespace
}  // namespace stripeback::util
