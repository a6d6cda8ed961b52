#include "tests/support/json_value.h"

#include <cerrno>
#include <cstdlib>

namespace stripeback::testing {

class JsonParser {
 public:
  explicit JsonParser(std::string_view s) : s_(s) {}

  std::optional<Json> document(std::string* error) {
    Json v;
    bool good = value(v, 0);
    if (good) {
      ws();
      if (pos_ != s_.size()) good = bad("trailing characters after the document");
    }
    if (!good) {
      if (error) *error = error_;
      return std::nullopt;
    }
    return v;
  }

 private:
  bool bad(const std::string& what) {
    if (error_.empty()) error_ = what + " at offset " + std::to_string(pos_);
    return false;
  }
  void ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return bad("invalid literal");
    pos_ += word.size();
    return true;
  }

  bool value(Json& v, int depth) {
    if (depth > 64) return bad("nesting too deep");
    ws();
    if (pos_ >= s_.size()) return bad("unexpected end of input");
    char c = s_[pos_];
    switch (c) {
      case '{':
        return object(v, depth);
      case '[':
        return array(v, depth);
      case '"':
        v.type_ = Json::Type::string;
        return string(v.text_);
      case 't':
        v.type_ = Json::Type::boolean;
        v.bool_ = true;
        return literal("true");
      case 'f':
        v.type_ = Json::Type::boolean;
        v.bool_ = false;
        return literal("false");
      case 'n':
        v.type_ = Json::Type::null;
        return literal("null");
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return number(v);
        return bad(std::string("unexpected character '") + c + "'");
    }
  }

  bool object(Json& v, int depth) {
    v.type_ = Json::Type::object;
    ++pos_;  // {
    ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') return bad("object key expected");
      std::string key;
      if (!string(key)) return false;
      for (const auto& m : v.members_)
        if (m.first == key) return bad("duplicate key '" + key + "'");
      ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') return bad("':' expected");
      ++pos_;
      Json member;
      if (!value(member, depth + 1)) return false;
      v.members_.emplace_back(std::move(key), std::move(member));
      ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return bad("',' or '}' expected");
    }
  }

  bool array(Json& v, int depth) {
    v.type_ = Json::Type::array;
    ++pos_;  // [
    ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      Json item;
      if (!value(item, depth + 1)) return false;
      v.items_.push_back(std::move(item));
      ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return bad("',' or ']' expected");
    }
  }

  static void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  bool hex4(uint32_t& cp) {
    if (pos_ + 4 > s_.size()) return bad("short \\u escape");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      char h = s_[pos_++];
      cp <<= 4;
      if (h >= '0' && h <= '9')
        cp |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f')
        cp |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        cp |= static_cast<uint32_t>(h - 'A' + 10);
      else
        return bad("bad hex digit in \\u escape");
    }
    return true;
  }

  bool string(std::string& out) {
    ++pos_;  // "
    while (true) {
      if (pos_ >= s_.size()) return bad("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return bad("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return bad("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xd800 && cp < 0xdc00 && s_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            uint32_t lo = 0;
            if (!hex4(lo)) return false;
            if (lo < 0xdc00 || lo >= 0xe000) return bad("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          put_utf8(out, cp);
          break;
        }
        default:
          return bad(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  bool number(Json& v) {
    size_t start = pos_;
    auto digits = [&] {
      size_t d = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ > d;
    };
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0')
      ++pos_;
    else if (!digits())
      return bad("digit expected");
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digits()) return bad("digit expected after '.'");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digits()) return bad("digit expected in exponent");
    }
    v.type_ = Json::Type::number;
    v.text_ = std::string(s_.substr(start, pos_ - start));
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

double Json::as_double() const {
  if (!is_number()) return 0;
  return std::strtod(text_.c_str(), nullptr);
}

std::optional<uint64_t> Json::as_u64() const {
  if (!is_number() || text_.empty() || text_[0] == '-' ||
      text_.find_first_of(".eE") != std::string::npos)
    return std::nullopt;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text_.c_str(), &end, 10);
  if (errno != 0 || end != text_.c_str() + text_.size()) return std::nullopt;
  return static_cast<uint64_t>(v);
}

const Json* Json::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& m : members_)
    if (m.first == key) return &m.second;
  return nullptr;
}

const Json& Json::operator[](std::string_view key) const {
  static const Json kNull;
  const Json* v = find(key);
  return v ? *v : kNull;
}

const Json& Json::operator[](size_t i) const {
  static const Json kNull;
  return is_array() && i < items_.size() ? items_[i] : kNull;
}

std::optional<Json> Json::parse(std::string_view text, std::string* error) {
  return JsonParser(text).document(error);
}

}  // namespace stripeback::testing
