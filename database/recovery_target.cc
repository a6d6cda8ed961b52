#include "database/recovery_target.h"

#include <charconv>
#include <cstdio>
#include <ctime>
#include <limits>

#include "database/wal_names.h"

namespace stripeback::database {
namespace {

// Reads exactly `n` digits at `pos`, advancing it.
bool digits(std::string_view s, size_t& pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  pos += n;
  out = v;
  return true;
}

bool expect(std::string_view s, size_t& pos, char c) {
  if (pos >= s.size() || s[pos] != c) return false;
  ++pos;
  return true;
}

// Nanoseconds of ".25" (pos at the dot): up to nine digits count, more are cut.
bool fraction(std::string_view s, size_t& pos, int64_t& ns) {
  ns = 0;
  if (pos >= s.size() || s[pos] != '.') return true;
  ++pos;
  const size_t first = pos;
  int64_t scale = 100000000;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
    ns += (s[pos] - '0') * scale;
    scale /= 10;
    ++pos;
  }
  return pos > first;
}

// "Z", "+HH", "+HHMM", "+HH:MM" (or '-'): seconds east of UTC.
bool zone(std::string_view s, size_t& pos, int64_t& east) {
  if (pos < s.size() && s[pos] == 'Z') {
    ++pos;
    east = 0;
    return true;
  }
  if (pos >= s.size() || (s[pos] != '+' && s[pos] != '-')) return false;
  const int sign = s[pos] == '-' ? -1 : 1;
  ++pos;
  int hh = 0, mm = 0;
  if (!digits(s, pos, 2, hh) || hh > 15) return false;
  if (pos < s.size()) {
    expect(s, pos, ':');
    if (!digits(s, pos, 2, mm) || mm > 59) return false;
  }
  east = sign * (hh * 3600 + mm * 60);
  return true;
}

Error bad_time(std::string_view text, std::string_view what, const std::string& why) {
  return Error{Errc::invalid_argument, 0,
               std::string(what) + " '" + std::string(text.substr(0, 64)) + "' " + why +
                   ": expected ISO 8601 with a zone (2026-12-07T14:45:32Z, "
                   "2026-12-07 14:45:32.5+01:00) or seconds since the epoch"};
}

}  // namespace

Result<int64_t> parse_target_time(std::string_view text, std::string_view what) {
  constexpr int64_t kMaxSeconds = std::numeric_limits<int64_t>::max() / 1'000'000'000 - 1;
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos) {
    int64_t s = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), s);
    if (ec != std::errc() || p != text.data() + text.size() || s > kMaxSeconds)
      return bad_time(text, what, "is out of range");
    return s * 1'000'000'000;
  }
  std::tm tm{};
  size_t pos = 0;
  int64_t ns = 0, east = 0;
  if (!digits(text, pos, 4, tm.tm_year) || !expect(text, pos, '-') ||
      !digits(text, pos, 2, tm.tm_mon) || !expect(text, pos, '-') ||
      !digits(text, pos, 2, tm.tm_mday) ||
      !(expect(text, pos, 'T') || expect(text, pos, ' ')) || !digits(text, pos, 2, tm.tm_hour) ||
      !expect(text, pos, ':') || !digits(text, pos, 2, tm.tm_min) || !expect(text, pos, ':') ||
      !digits(text, pos, 2, tm.tm_sec) || !fraction(text, pos, ns))
    return bad_time(text, what, "is not a time");
  if (!zone(text, pos, east) || pos != text.size())
    return bad_time(text, what, "has no time zone (or one that is not Z or +HH:MM)");
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
      tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60 || tm.tm_year < 1970)
    return bad_time(text, what, "is not a valid time");
  const int day = tm.tm_mday;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const time_t t = timegm(&tm);
  if (tm.tm_mday != day) return bad_time(text, what, "is not a valid date");
  const int64_t seconds = static_cast<int64_t>(t) - east;
  if (seconds < 0 || seconds > kMaxSeconds) return bad_time(text, what, "is out of range");
  return seconds * 1'000'000'000 + ns;
}

Result<uint64_t> parse_target_xid(std::string_view text, std::string_view what) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || v < 3 ||
      v > std::numeric_limits<uint32_t>::max())
    return fail(Errc::invalid_argument,
                std::string(what) + " '" + std::string(text.substr(0, 64)) +
                    "' is not a transaction id (a whole number from 3 to 4294967295)");
  return v;
}

Result<TargetAction> parse_target_action(std::string_view text, std::string_view what) {
  if (text == "pause") return TargetAction::pause;
  if (text == "promote") return TargetAction::promote;
  if (text == "shutdown") return TargetAction::shutdown;
  return fail(Errc::invalid_argument, std::string(what) + " '" +
                                          std::string(text.substr(0, 64)) +
                                          "' is not one of promote, pause, shutdown");
}

const char* target_action_name(TargetAction a) {
  switch (a) {
    case TargetAction::promote:
      return "promote";
    case TargetAction::shutdown:
      return "shutdown";
    case TargetAction::pause:
      break;
  }
  return "pause";
}

std::string pg_time_text(int64_t ns) {
  const time_t t = static_cast<time_t>(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%06lld+00", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(ns % 1'000'000'000 / 1000));
  return buf;
}

std::string iso_time_text(int64_t ns) {
  std::string s = pg_time_text(ns);  // "YYYY-MM-DD HH:MM:SS.ffffff+00"
  s[10] = 'T';
  s.resize(s.size() - 3);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s + "Z";
}

std::string target_text(const RecoveryTarget& t) {
  switch (t.kind) {
    case TargetKind::time:
      return "time " + iso_time_text(t.time_ns);
    case TargetKind::lsn:
      return "LSN " + lsn_text(t.lsn);
    case TargetKind::xid:
      return "transaction " + std::to_string(t.xid);
    case TargetKind::none:
      break;
  }
  return "the end of the archived WAL";
}

std::string conf_quote(std::string_view value) {
  std::string s = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') s += c;
    s += c;
  }
  return s + "'";
}

std::string shell_quote(std::string_view word) {
  bool plain = !word.empty();
  for (char c : word)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          std::string_view("_./:=@%+-").find(c) != std::string_view::npos))
      plain = false;
  if (plain) return std::string(word);
  std::string s = "'";
  for (char c : word) {
    if (c == '\'') s += "'\\''";
    else s += c;
  }
  return s + "'";
}

std::string recovery_settings(const RecoveryTarget& t, const std::string& restore_command) {
  std::string s = "# recovery settings written by stripeback restore (" + target_text(t) +
                  (t.standby ? ", standby" : "") + ")\n";
  auto line = [&s](const char* name, const std::string& value) {
    s += std::string(name) + " = " + conf_quote(value) + "\n";
  };
  line("restore_command", restore_command);
  switch (t.kind) {
    case TargetKind::time:
      line("recovery_target_time", pg_time_text(t.time_ns));
      break;
    case TargetKind::lsn:
      line("recovery_target_lsn", lsn_text(t.lsn));
      break;
    case TargetKind::xid:
      line("recovery_target_xid", std::to_string(t.xid));
      break;
    case TargetKind::none:
      break;
  }
  if (t.kind != TargetKind::none) {
    line("recovery_target_inclusive", t.inclusive ? "on" : "off");
    line("recovery_target_action", target_action_name(t.action));
  }
  line("recovery_target_timeline", "latest");
  return s;
}

}  // namespace stripeback::database
