// Sizes and durations (util/units.h): mode bits 0..1 choose parse_size, parse_clock_duration
// or parse_interval for the rest of the input, as text.
// Invariants: every accepted value equals what a plain reference reading of the text gives
// (computed here in 128-bit arithmetic, so no overflow can hide); every refused text is
// one the reference refuses too; accepted sizes print, and their byte count parses back.
#include <optional>
#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_check.h"
#include "util/units.h"

using namespace stripeback;
__extension__ typedef unsigned __int128 u128;

namespace {

// Leading decimal digits as a 128-bit number (saturating far above any valid value).
size_t digits(std::string_view s, u128* value) {
  size_t i = 0;
  *value = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i)
    if (*value < (u128{1} << 100)) *value = *value * 10 + static_cast<unsigned>(s[i] - '0');
  return i;
}

std::string upper(std::string_view s) {
  std::string out;
  for (char c : s) out.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
  return out;
}

// The reference reading of a size: nullopt where it must be refused.
std::optional<uint64_t> ref_size(std::string_view s) {
  u128 v = 0;
  size_t n = digits(s, &v);
  if (n == 0) return std::nullopt;
  std::string unit = upper(s.substr(n));
  int shift = -1;
  if (unit.empty() || unit == "B") shift = 0;
  for (auto [u, sh] : {std::pair{'K', 10}, {'M', 20}, {'G', 30}, {'T', 40}})
    if (unit == std::string(1, u) || unit == std::string(1, u) + "B" ||
        unit == std::string(1, u) + "IB")
      shift = sh;
  if (shift < 0) return std::nullopt;
  u128 bytes = v << shift;
  if (bytes > UINT64_MAX) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

// HH:MM or HH:MM:SS in seconds.
std::optional<u128> ref_clock(std::string_view s) {
  u128 part[3] = {0, 0, 0};
  size_t parts = 0, i = 0;
  while (true) {
    if (parts == 3) return std::nullopt;
    size_t n = digits(s.substr(i), &part[parts]);
    if (n == 0) return std::nullopt;
    i += n;
    ++parts;
    if (i == s.size()) break;
    if (s[i] != ':') return std::nullopt;
    ++i;
  }
  if (parts < 2 || part[0] > util::kMaxClockHours || part[1] > 59 ||
      part[2] > 59)
    return std::nullopt;
  return part[0] * 3600 + part[1] * 60 + part[2];
}

// 500ms, 10s, 2m or seconds, in milliseconds.
std::optional<u128> ref_interval(std::string_view s) {
  u128 v = 0;
  size_t n = digits(s, &v);
  if (n == 0) return std::nullopt;
  std::string_view unit = s.substr(n);
  u128 ms = 0;
  if (unit == "ms") ms = v;
  else if (unit.empty() || unit == "s") ms = v * 1000;
  else if (unit == "m") ms = v * 60000;
  else return std::nullopt;
  if (ms == 0 || ms > u128{24} * 3600 * 1000) return std::nullopt;
  return ms;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::split_mode(data, size);
  const std::string text(reinterpret_cast<const char*>(in.rest.data()), in.rest.size());
  switch (in.mode & 3) {
    case 0:
    case 3: {
      auto v = util::parse_size(text);
      auto want = ref_size(text);
      FUZZ_CHECK(v.has_value() == want.has_value());
      if (!v) {
        FUZZ_CHECK(v.error().code == Errc::invalid_argument);
        return 0;
      }
      FUZZ_CHECK(*v == *want);
      FUZZ_CHECK(!util::format_bytes(*v).empty());
      auto again = util::parse_size(std::to_string(*v));
      FUZZ_CHECK(again && *again == *v);
      return 0;
    }
    case 1: {
      auto d = util::parse_clock_duration(text, "--duration");
      auto want = ref_clock(text);
      FUZZ_CHECK(d.has_value() == want.has_value());
      if (!d) {
        FUZZ_CHECK(d.error().what.find("--duration") != std::string::npos);
        return 0;
      }
      FUZZ_CHECK(static_cast<u128>(d->count()) == *want);
      return 0;
    }
    case 2: {
      auto d = util::parse_interval(text, "--nfs-timeout");
      auto want = ref_interval(text);
      FUZZ_CHECK(d.has_value() == want.has_value());
      if (d) FUZZ_CHECK(static_cast<u128>(d->count()) == *want);
      return 0;
    }
  }
  return 0;
}
