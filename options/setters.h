// What the parts of the option schema share: reading a value (a whole number, a size, a
// boolean, a share) with the option's range and wording, and the setters made from a
// Settings field. Each part (schema_parts.h) keeps its own setters beside its entries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "options/schema.h"

namespace stripeback::options::setters {

inline constexpr unsigned kRestores = kRestore | kValidate;
inline constexpr unsigned kJobs = kBackup | kRestore | kValidate;
inline constexpr uint64_t kMaxSize = UINT64_MAX;

std::string quoted(std::string_view v);

// invalid_argument naming the option: "option --x WHAT".
Error bad(const Option& o, const std::string& what);

// `v` whole as a decimal number (strtod's syntax), or nullopt.
std::optional<double> number_in(std::string_view v);

// A whole number within [o.lo, o.hi].
Result<uint64_t> whole(const Option& o, std::string_view v);
// A size ("4M") within [o.lo, o.hi].
Result<uint64_t> bytes(const Option& o, std::string_view v);
Result<bool> boolean(const Option& o, std::string_view v);
// A share in percent ("1%", "0.5%"; the % may be left out), above 0 and at most 100, as a
// fraction.
Result<double> share_in(const Option& o, std::string_view v);

template <class T>
struct value_of {
  using type = T;
};
template <class T>
struct value_of<std::optional<T>> {
  using type = T;
};
template <auto F>
using field_t = typename value_of<std::remove_cvref_t<decltype(std::declval<Settings&>().*F)>>::type;

template <auto F>
void reset(Settings& s) {
  s.*F = Settings{}.*F;
}

template <auto F>
Result<void> text(const Option& o, Settings& s, std::string_view v) {
  if (v.empty()) return bad(o, "may not be empty");
  s.*F = std::string(v);
  return ok();
}
template <auto F>
Result<void> any_text(const Option&, Settings& s, std::string_view v) {
  s.*F = std::string(v);
  return ok();
}
template <auto F>
Result<void> add(const Option& o, Settings& s, std::string_view v) {
  if (v.empty()) return bad(o, "may not be empty");
  (s.*F).emplace_back(v);
  return ok();
}
template <auto F>
Result<void> yes_no(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(s.*F, boolean(o, v));
  return ok();
}
template <auto F>
Result<void> count(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(uint64_t n, whole(o, v));
  s.*F = static_cast<field_t<F>>(n);
  return ok();
}
template <auto F>
Result<void> size(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(uint64_t n, bytes(o, v));
  s.*F = static_cast<field_t<F>>(n);
  return ok();
}
template <std::string engine::KeySource::*F>
Result<void> key_source(const Option& o, Settings& s, std::string_view v) {
  if (v.empty()) return bad(o, "may not be empty");
  s.keys.*F = std::string(v);
  return ok();
}
template <std::string engine::KeySource::*F>
void reset_key_source(Settings& s) {
  (s.keys.*F).clear();
}

}  // namespace stripeback::options::setters
