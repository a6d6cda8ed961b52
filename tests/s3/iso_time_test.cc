#include "backends/s3/iso_time.h"

#include <gtest/gtest.h>

namespace stripeback::s3 {
namespace {

TimePoint at(int y, unsigned m, unsigned d, int hh, int mm, int ss) {
  using namespace std::chrono;
  return sys_days(year(y) / month(m) / day(d)) + hours(hh) + minutes(mm) + seconds(ss);
}

TEST(S3Time, FormatsTheBasicAndExtendedForms) {
  TimePoint t = at(2015, 8, 30, 12, 36, 0) + std::chrono::milliseconds(999);
  EXPECT_EQ(amz_date(t), "20150830T123600Z");
  EXPECT_EQ(amz_day(t), "20150830");
  EXPECT_EQ(iso8601(t), "2015-08-30T12:36:00Z");
  EXPECT_EQ(iso8601(at(1999, 12, 31, 23, 59, 59)), "1999-12-31T23:59:59Z");
  EXPECT_EQ(amz_date(at(2024, 2, 29, 0, 0, 1)), "20240229T000001Z");
}

TEST(S3Time, ParsesWhatS3Writes) {
  auto t = parse_iso8601("2009-10-12T17:50:30.000Z");
  ASSERT_TRUE(t.has_value()) << t.error().what;
  EXPECT_EQ(*t, at(2009, 10, 12, 17, 50, 30));
  t = parse_iso8601("2015-08-30T12:36:00Z");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(*t, at(2015, 8, 30, 12, 36, 0));
  t = parse_iso8601("2015-08-30T12:36:00.5Z");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(*t, at(2015, 8, 30, 12, 36, 0) + std::chrono::milliseconds(500));
  t = parse_iso8601("2015-08-30T12:36:00.123456789Z");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(*t - at(2015, 8, 30, 12, 36, 0), std::chrono::nanoseconds(123456789));
}

TEST(S3Time, FormattingThenParsingGivesTheSameSecond) {
  TimePoint t = at(2038, 1, 19, 3, 14, 8);
  EXPECT_EQ(*parse_iso8601(iso8601(t)), t);
}

TEST(S3Time, RefusesOtherShapesAndImpossibleDates) {
  for (const char* bad :
       {"", "2015-08-30", "2015-08-30T12:36:00", "2015-08-30 12:36:00Z",
        "2015-08-30T12:36:00+00:00", "2015-02-30T00:00:00Z", "2015-13-01T00:00:00Z",
        "2015-08-30T24:00:00Z", "2015-08-30T12:60:00Z", "2015-08-30T12:36:60Z",
        "2015-08-30T12:36:00.Z", "2015-08-30T12:36:00.1234567890Z", "2015-08-30T12:36:00ZZ",
        "+015-08-30T12:36:00Z", "2015-08-30t12:36:00Z"}) {
    auto t = parse_iso8601(bad);
    ASSERT_FALSE(t.has_value()) << bad;
    EXPECT_EQ(t.error().code, Errc::invalid_argument);
    EXPECT_NE(t.error().what.find("is not ISO 8601 UTC"), std::string::npos) << t.error().what;
  }
}

TEST(S3Time, RefusesTimesTheSystemClockCannotHold) {
  // Found by the s3_xml fuzz target: year 1012 overflowed the nanosecond count.
  for (const char* far : {"1012-10-12T17:50:30.000Z", "0000-01-01T00:00:00Z",
                          "9999-12-31T23:59:59.999999999Z", "2262-04-12T00:00:00Z"}) {
    auto t = parse_iso8601(far);
    ASSERT_FALSE(t.has_value()) << far;
    EXPECT_NE(t.error().what.find("outside the range of the system clock"), std::string::npos);
  }
  EXPECT_TRUE(parse_iso8601("1678-01-01T00:00:00Z").has_value());
  EXPECT_TRUE(parse_iso8601("2262-04-11T00:00:00.999999999Z").has_value());
}

}  // namespace
}  // namespace stripeback::s3
