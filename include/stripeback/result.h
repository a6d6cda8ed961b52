// Result<T> and Error: the error vocabulary shared by every module.
//
// Errors from the outside world are translated once, where they enter (errno in io/,
// on-disk format checks in engine/ and catalog/), into an Error whose code tells the caller
// what it can do and whose message names the object and the cause, in lower case:
//   unable to open '/db/users01.dbf' for read: Permission denied
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace stripeback {

enum class Errc {
  not_found,
  busy,
  io,
  no_space,
  end_of_medium,
  corrupt,
  cancelled,
  unsupported,
  invalid_argument,
  timed_out,
  exists,
  wrong_key,  // a passphrase or key that does not open the data
  tampered,   // the catalog's seal shows records changed, removed or added without the key
};

const char* errc_name(Errc code);

struct Error {
  Errc code = Errc::io;
  int sys_errno = 0;  // the errno behind it, 0 if none
  std::string what;   // names the object and the cause

  // Returns a copy whose message is prefixed with `context: `.
  Error wrap(const std::string& context) const { return {code, sys_errno, context + ": " + what}; }
};

// Builds an Error from an errno value: "<what>: <strerror(err)>". Maps the errno to an Errc.
Error sys_error(int err, const std::string& what);

struct Unexpected {
  Error error;
};
inline Unexpected fail(Error e) { return Unexpected{std::move(e)}; }
inline Unexpected fail(Errc code, std::string what) {
  return Unexpected{Error{code, 0, std::move(what)}};
}

// Spelled like std::expected so it can become an alias once the toolchain allows it.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
  Result(Unexpected u) : v_(std::in_place_index<1>, std::move(u.error)) {}  // NOLINT
  Result(Error e) : v_(std::in_place_index<1>, std::move(e)) {}  // NOLINT

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  const Error& error() const {
    assert(!has_value());
    return std::get<1>(v_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  template <typename F>
  auto and_then(F&& f) & -> decltype(f(std::declval<T&>())) {
    if (!has_value()) return error();
    return f(value());
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Unexpected u) : err_(std::move(u.error)), ok_(false) {}  // NOLINT
  Result(Error e) : err_(std::move(e)), ok_(false) {}  // NOLINT

  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  void value() const { assert(ok_); }
  const Error& error() const {
    assert(!ok_);
    return err_;
  }

  template <typename F>
  auto and_then(F&& f) -> decltype(f()) {
    if (!ok_) return err_;
    return f();
  }

 private:
  Error err_;
  bool ok_ = true;
};

inline Result<void> ok() { return {}; }

}  // namespace stripeback

// Propagates an error from an expression returning Result<...>.
#define SB_TRY(expr)                                          \
  do {                                                        \
    auto sb_try_result_ = (expr);                             \
    if (!sb_try_result_.has_value()) return sb_try_result_.error(); \
  } while (0)

#define SB_CONCAT_INNER(a, b) a##b
#define SB_CONCAT(a, b) SB_CONCAT_INNER(a, b)
// Declares `lhs` from the value of a Result expression, or returns its error.
#define SB_ASSIGN(lhs, expr) SB_ASSIGN_IMPL(SB_CONCAT(sb_assign_, __LINE__), lhs, expr)
#define SB_ASSIGN_IMPL(tmp, lhs, expr)              \
  auto tmp = (expr);                                \
  if (!tmp.has_value()) return tmp.error();         \
  lhs = std::move(tmp).value()
