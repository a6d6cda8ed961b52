#include "util/clock.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace stripeback::util {

std::optional<int64_t> parse_utc_seconds(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (text.find_first_not_of("0123456789") == std::string::npos) {
    if (text.size() > 18) return std::nullopt;
    return static_cast<int64_t>(std::stoll(text));
  }
  std::tm tm{};
  int n = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 ||
      static_cast<size_t>(n) != text.size())
    return std::nullopt;
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm));
}

int64_t wall_now_ns() {
  if (const char* fake = std::getenv("STRIPEBACK_FAKE_NOW"))
    if (auto s = parse_utc_seconds(fake)) return *s * 1'000'000'000;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace stripeback::util
