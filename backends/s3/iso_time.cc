#include "backends/s3/iso_time.h"

#include <cstdio>

namespace stripeback::s3 {
namespace {

using std::chrono::days;
using std::chrono::seconds;

struct Civil {
  int year;
  unsigned month, day;
  long hour, minute, second;
};

Civil civil_of(TimePoint t) {
  auto secs = std::chrono::floor<seconds>(t);
  auto day = std::chrono::floor<days>(secs);
  std::chrono::year_month_day ymd{day};
  std::chrono::hh_mm_ss hms{secs - day};
  return {int(ymd.year()),           unsigned(ymd.month()),       unsigned(ymd.day()),
          long(hms.hours().count()), long(hms.minutes().count()), long(hms.seconds().count())};
}

// `n` decimal digits at text[at], or -1.
long digits_at(std::string_view text, size_t at, size_t n) {
  if (at + n > text.size()) return -1;
  long v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    v = v * 10 + (text[i] - '0');
  }
  return v;
}

Error bad_time(std::string_view text, const std::string& why) {
  return Error{Errc::invalid_argument, 0,
               "time '" + std::string(text.substr(0, 64)) + "' is not ISO 8601 UTC: " + why};
}

}  // namespace

std::string amz_date(TimePoint t) {
  Civil c = civil_of(t);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d%02u%02uT%02ld%02ld%02ldZ", c.year, c.month, c.day, c.hour,
                c.minute, c.second);
  return buf;
}

std::string amz_day(TimePoint t) { return amz_date(t).substr(0, 8); }

std::string iso8601(TimePoint t) {
  Civil c = civil_of(t);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02ld:%02ld:%02ldZ", c.year, c.month, c.day,
                c.hour, c.minute, c.second);
  return buf;
}

Result<TimePoint> parse_iso8601(std::string_view text) {
  // Fixed positions: YYYY-MM-DDTHH:MM:SS
  static constexpr std::string_view kShape = "0000-00-00T00:00:00";
  if (text.size() < kShape.size() + 1) return bad_time(text, "too short");
  for (size_t i = 0; i < kShape.size(); ++i)
    if (kShape[i] != '0' && text[i] != kShape[i])
      return bad_time(
          text, "expected '" + std::string(1, kShape[i]) + "' at offset " + std::to_string(i));
  long year = digits_at(text, 0, 4), month = digits_at(text, 5, 2), day = digits_at(text, 8, 2);
  long hour = digits_at(text, 11, 2), minute = digits_at(text, 14, 2);
  long second = digits_at(text, 17, 2);
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0)
    return bad_time(text, "a field is not all digits");
  std::chrono::year_month_day ymd{std::chrono::year(int(year)), std::chrono::month(unsigned(month)),
                                  std::chrono::day(unsigned(day))};
  if (!ymd.ok()) return bad_time(text, "no such date");
  if (hour > 23 || minute > 59 || second > 59) return bad_time(text, "no such time of day");
  size_t at = kShape.size();
  std::chrono::nanoseconds fraction{0};
  if (text[at] == '.') {
    size_t start = ++at;
    long long ns = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9' && at - start < 9)
      ns = ns * 10 + (text[at++] - '0');
    if (at == start) return bad_time(text, "no digits after the decimal point");
    for (size_t n = at - start; n < 9; ++n) ns *= 10;
    fraction = std::chrono::nanoseconds(ns);
  }
  if (at + 1 != text.size() || text[at] != 'Z')
    return bad_time(text, "it does not end in Z after the seconds (or their fraction)");
  // In seconds first: the system clock counts nanoseconds in 64 bits, which reach only the
  // years 1678 to 2261, and a time past them must be refused, not wrapped.
  const auto whole = std::chrono::sys_days(ymd) + std::chrono::hours(hour) +
                     std::chrono::minutes(minute) + seconds(second);
  if (whole < std::chrono::ceil<seconds>(TimePoint::min()) ||
      whole >= std::chrono::floor<seconds>(TimePoint::max()))
    return bad_time(text, "outside the range of the system clock");
  return std::chrono::time_point_cast<TimePoint::duration>(whole) +
         std::chrono::duration_cast<TimePoint::duration>(fraction);
}

}  // namespace stripeback::s3
