// The two spellings of a UTC time that S3 uses: the basic ISO 8601 form of x-amz-date and the
// signing scope (20150830T123600Z, 20150830), and the extended form of XML bodies
// (2015-08-30T12:36:00Z; S3 adds milliseconds when it writes one: 2015-08-30T12:36:00.000Z).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "stripeback/result.h"

namespace stripeback::s3 {

using TimePoint = std::chrono::system_clock::time_point;

// 20150830T123600Z (seconds, fractions dropped).
std::string amz_date(TimePoint t);
// 20150830, the date of a signing scope.
std::string amz_day(TimePoint t);
// 2015-08-30T12:36:00Z (seconds, fractions dropped).
std::string iso8601(TimePoint t);

// YYYY-MM-DDTHH:MM:SS, optional fraction of 1 to 9 digits, then Z: the form S3 writes. Other
// offsets, a missing Z or an impossible date (February 30) are refused with invalid_argument,
// naming the text.
Result<TimePoint> parse_iso8601(std::string_view text);

}  // namespace stripeback::s3
