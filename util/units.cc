#include "util/units.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>

namespace stripeback::util {

Result<uint64_t> parse_size(std::string_view text) {
  auto bad = [&] {
    return fail(Errc::invalid_argument,
                "invalid size '" + std::string(text) + "': expected a number with an optional "
                "unit K, M, G or T (powers of 1024), e.g. 1M");
  };
  size_t i = 0;
  uint64_t v = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return bad();
    v = v * 10 + d;
    ++i;
  }
  if (i == 0) return bad();
  std::string unit;
  for (; i < text.size(); ++i)
    unit.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(text[i]))));
  int shift = 0;
  if (unit.empty() || unit == "B") shift = 0;
  else if (unit == "K" || unit == "KB" || unit == "KIB") shift = 10;
  else if (unit == "M" || unit == "MB" || unit == "MIB") shift = 20;
  else if (unit == "G" || unit == "GB" || unit == "GIB") shift = 30;
  else if (unit == "T" || unit == "TB" || unit == "TIB") shift = 40;
  else return bad();
  if (shift && v > (std::numeric_limits<uint64_t>::max() >> shift)) return bad();
  return v << shift;
}

Result<std::chrono::seconds> parse_clock_duration(std::string_view text, std::string_view flag) {
  auto bad = [&] {
    return fail(Errc::invalid_argument, "invalid " + std::string(flag) + " '" +
                                            std::string(text) + "': expected HH:MM or HH:MM:SS");
  };
  // Two or three fields of digits separated by ':', nothing else (no sign, no space, no
  // empty field), each read in 64 bits and bounded before any arithmetic.
  uint64_t field[3] = {0, 0, 0};
  size_t fields = 0;
  for (size_t i = 0;; ++i) {
    if (fields == 3) return bad();
    size_t end = i;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    auto [p, ec] = std::from_chars(text.data() + i, text.data() + end, field[fields]);
    if (end == i || ec != std::errc()) return bad();
    ++fields;
    i = end;
    if (i == text.size()) break;
    if (text[i] != ':') return bad();
  }
  if (fields < 2 || field[0] > kMaxClockHours || field[1] > 59 || field[2] > 59) return bad();
  return std::chrono::seconds(static_cast<int64_t>(field[0] * 3600 + field[1] * 60 + field[2]));
}

Result<std::chrono::milliseconds> parse_interval(std::string_view text, std::string_view flag) {
  auto bad = [&] {
    return fail(Errc::invalid_argument, "invalid " + std::string(flag) + " '" +
                                            std::string(text) +
                                            "': expected a duration like 500ms, 10s or 2m");
  };
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || p == text.data()) return bad();
  std::string_view unit(p, static_cast<size_t>(text.data() + text.size() - p));
  // Every unit is at least a millisecond: a count above the bound is refused before the
  // multiplication below could wrap.
  constexpr uint64_t kMaxMs = 24ull * 3600 * 1000;
  if (n > kMaxMs) return bad();
  uint64_t ms = 0;
  if (unit == "ms") ms = n;
  else if (unit.empty() || unit == "s") ms = n * 1000;
  else if (unit == "m") ms = n * 60000;
  else return bad();
  if (ms == 0 || ms > kMaxMs) return bad();
  return std::chrono::milliseconds(ms);
}

Result<std::chrono::milliseconds> parse_duration(std::string_view text, std::string_view flag) {
  if (text.find(':') != std::string_view::npos) {
    SB_ASSIGN(auto d, parse_clock_duration(text, flag));
    if (d.count() == 0)
      return fail(Errc::invalid_argument, std::string(flag) + " must be above zero");
    return std::chrono::duration_cast<std::chrono::milliseconds>(d);
  }
  auto bad = [&] {
    return fail(Errc::invalid_argument,
                "invalid " + std::string(flag) + " '" + std::string(text) +
                    "': expected HH:MM, HH:MM:SS or a number with a unit (500ms, 90s, 90m, 2h, 2d)");
  };
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || p == text.data()) return bad();
  std::string_view unit(p, static_cast<size_t>(text.data() + text.size() - p));
  constexpr uint64_t kMaxMs = kMaxClockHours * 3600 * 1000;
  uint64_t scale = 0;
  if (unit == "ms") scale = 1;
  else if (unit.empty() || unit == "s") scale = 1000;
  else if (unit == "m") scale = 60000;
  else if (unit == "h") scale = 3600000;
  else if (unit == "d") scale = 86400000;
  else return bad();
  if (n == 0 || n > kMaxMs / scale) return bad();
  return std::chrono::milliseconds(n * scale);
}

std::string format_bytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
  return buf;
}

double mb_per_s(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0.0;
}

}  // namespace stripeback::util
