#include "util/clock.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#if STRIPEBACK_TEST_HOOKS
#include <atomic>
#include <limits>
#endif

namespace stripeback::util {

std::string format_time_ns(int64_t ns) {
  time_t t = static_cast<time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

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

#if STRIPEBACK_TEST_HOOKS
namespace {

constexpr int64_t kRealClock = std::numeric_limits<int64_t>::min();
std::atomic<int64_t> g_fake_ns{kRealClock};

}  // namespace

namespace test_hooks {

Result<void> set_fake_now(std::string_view when) {
  if (when.empty()) {
    g_fake_ns.store(kRealClock, std::memory_order_relaxed);
    return ok();
  }
  const auto s = parse_utc_seconds(std::string(when));
  // Beyond about the year 2262 the nanoseconds do not fit in 64 bits.
  constexpr int64_t kMaxSeconds = std::numeric_limits<int64_t>::max() / 1'000'000'000;
  if (!s || *s > kMaxSeconds)
    return fail(Errc::invalid_argument,
                "fake time '" + std::string(when) +
                    "' is neither seconds since the epoch nor a UTC time like "
                    "2026-12-01T02:00:00Z");
  g_fake_ns.store(*s * 1'000'000'000, std::memory_order_relaxed);
  return ok();
}

}  // namespace test_hooks
#endif

int64_t wall_now_ns() {
#if STRIPEBACK_TEST_HOOKS
  if (const int64_t fake = g_fake_ns.load(std::memory_order_relaxed); fake != kRealClock)
    return fake;
#endif
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace stripeback::util
