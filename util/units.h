// Parsing and printing of sizes ("1M", "256K", "4GiB") and durations.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "stripeback/result.h"

namespace stripeback::util {

// Accepts a plain byte count or a number with K, M, G, T (optionally followed by "iB" or
// "B"), all powers of 1024. Rejects zero-length, negative and overflowing values.
Result<uint64_t> parse_size(std::string_view text);
// A length of time as HH:MM or HH:MM:SS (minutes and seconds below 60, hours up to
// kMaxClockHours). `flag` names the option in the error message ("--duration").
inline constexpr uint64_t kMaxClockHours = 999999;
Result<std::chrono::seconds> parse_clock_duration(std::string_view text, std::string_view flag);
// An interval as "500ms", "10s", "2m" or a plain number of seconds, above zero and at most
// 24 hours. `flag` names the option in the error message ("--nfs-timeout").
Result<std::chrono::milliseconds> parse_interval(std::string_view text, std::string_view flag);
// A length of time in either form: HH:MM or HH:MM:SS (parse_clock_duration), or a number
// with a unit, "500ms", "90s", "90m", "2h", "2d" (a plain number is seconds); above zero, at most
// kMaxClockHours hours. The one parser of --duration, --max-duration and
// --checkpoint-interval. `flag` names the option in the error message.
Result<std::chrono::milliseconds> parse_duration(std::string_view text, std::string_view flag);
std::string format_bytes(uint64_t bytes);  // "1.50 GiB"
double mb_per_s(uint64_t bytes, double seconds);  // 10^6 bytes per second

}  // namespace stripeback::util
