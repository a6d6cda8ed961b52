#include "util/escape.h"

#include <cstdint>

namespace stripeback::util {
namespace {

// Length of the valid UTF-8 sequence at the start of `s` (which begins with a byte >= 0x80),
// or 0 when it is not one: overlong forms, surrogates and code points above U+10FFFF are
// not valid.
size_t utf8_length(std::string_view s, uint32_t* code_point) {
  auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char c = b(0);
  size_t n = 0;
  uint32_t cp = 0, min = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2, cp = c & 0x1fu, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, cp = c & 0x0fu, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, cp = c & 0x07u, min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i) & 0x3fu);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  *code_point = cp;
  return n;
}

void put_hex(std::string& out, unsigned char c) {
  static const char* digits = "0123456789abcdef";
  out += "\\x";
  out.push_back(digits[c >> 4]);
  out.push_back(digits[c & 15]);
}

}  // namespace

std::string escape_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      uint32_t cp = 0;
      size_t n = utf8_length(text.substr(i), &cp);
      if (n == 0) {
        put_hex(out, c);
        ++i;
      } else if (cp <= 0x9f) {  // a C1 control
        for (size_t k = 0; k < n; ++k) put_hex(out, static_cast<unsigned char>(text[i + k]));
        i += n;
      } else {
        out.append(text.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) put_hex(out, c);
        else out.push_back(static_cast<char>(c));
    }
    ++i;
  }
  return out;
}

}  // namespace stripeback::util
