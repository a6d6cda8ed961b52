// A small strict JSON parser for checking `--json` output in tests (RFC 8259; numbers keep
// their text so 64-bit integers are read exactly).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stripeback::testing {

class Json {
 public:
  enum class Type { null, boolean, number, string, array, object };

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::null; }
  bool is_bool() const { return type_ == Type::boolean; }
  bool is_number() const { return type_ == Type::number; }
  bool is_string() const { return type_ == Type::string; }
  bool is_array() const { return type_ == Type::array; }
  bool is_object() const { return type_ == Type::object; }

  bool as_bool() const { return bool_; }
  double as_double() const;
  // The number as an unsigned integer, or nullopt when it is not one (negative, fraction).
  std::optional<uint64_t> as_u64() const;
  const std::string& as_string() const { return text_; }  // a string's value
  const std::vector<Json>& items() const { return items_; }
  const std::vector<std::pair<std::string, Json>>& members() const { return members_; }
  size_t size() const { return is_array() ? items_.size() : members_.size(); }

  bool has(std::string_view key) const { return find(key) != nullptr; }
  const Json* find(std::string_view key) const;
  // A member or element, or a null value when absent.
  const Json& operator[](std::string_view key) const;
  const Json& operator[](const char* key) const { return (*this)[std::string_view(key)]; }
  const Json& operator[](size_t i) const;
  const Json& operator[](int i) const {  // so that j[0] is not ambiguous
    return i < 0 ? (*this)[std::string_view()] : (*this)[static_cast<size_t>(i)];
  }

  // Parses a whole document (surrounding white space allowed). On failure returns nullopt
  // and sets *error to what is wrong and where.
  static std::optional<Json> parse(std::string_view text, std::string* error = nullptr);

 private:
  friend class JsonParser;
  Type type_ = Type::null;
  bool bool_ = false;
  std::string text_;  // string value, or the number's text
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

}  // namespace stripeback::testing
