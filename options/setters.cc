#include "options/setters.h"

#include <cerrno>
#include <charconv>
#include <cstdlib>

#include "util/units.h"

namespace stripeback::options::setters {

std::string quoted(std::string_view v) { return "'" + std::string(v) + "'"; }

Error bad(const Option& o, const std::string& what) {
  return Error{Errc::invalid_argument, 0, "option " + util::option_word(o.key) + " " + what};
}

std::optional<double> number_in(std::string_view v) {
  const std::string t(v);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(t.c_str(), &end);
  if (errno != 0 || end != t.c_str() + t.size()) return std::nullopt;
  return d;
}

Result<uint64_t> whole(const Option& o, std::string_view v) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || n < o.lo || n > o.hi)
    return bad(o, "wants a whole number from " + std::to_string(o.lo) + " to " +
                      std::to_string(o.hi) + "; got " + quoted(v));
  return n;
}

Result<uint64_t> bytes(const Option& o, std::string_view v) {
  auto n = util::parse_size(v);
  if (!n) return n.error().wrap("option " + util::option_word(o.key));
  if (*n < o.lo || *n > o.hi)
    return bad(o, "wants a size from " + util::format_bytes(o.lo) + " to " +
                      util::format_bytes(o.hi) + "; got " + quoted(v));
  return *n;
}

Result<bool> boolean(const Option& o, std::string_view v) {
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  return bad(o, "wants true or false (1/0, yes/no, on/off); got " + quoted(v));
}

Result<double> share_in(const Option& o, std::string_view v) {
  std::string_view t = v;
  if (!t.empty() && t.back() == '%') t.remove_suffix(1);
  const auto pct = number_in(t);
  if (!pct || !(*pct > 0) || *pct > 100)
    return bad(o, "wants a share above 0 and at most 100%, like 1%; got " + quoted(v));
  return *pct / 100;
}

}  // namespace stripeback::options::setters
