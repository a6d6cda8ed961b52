#include "util/json.h"

#include <cassert>
#include <cmath>
#include <cstdio>

namespace stripeback::util {

std::string JsonWriter::escape(std::string_view s) {
  std::string o;
  o.reserve(s.size() + 2);
  o.push_back('"');
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o.push_back(ch);
        }
    }
  }
  o.push_back('"');
  return o;
}

void JsonWriter::key(std::string_view k) {
  if (!first_.empty()) {
    if (!first_.back()) out_.push_back(',');
    first_.back() = false;
  }
  if (!k.empty()) {
    out_ += escape(k);
    out_.push_back(':');
  }
}

JsonWriter& JsonWriter::begin_object(std::string_view k) {
  key(k);
  out_.push_back('{');
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  assert(!first_.empty());
  first_.pop_back();
  out_.push_back('}');
  return *this;
}
JsonWriter& JsonWriter::begin_array(std::string_view k) {
  key(k);
  out_.push_back('[');
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  assert(!first_.empty());
  first_.pop_back();
  out_.push_back(']');
  return *this;
}
JsonWriter& JsonWriter::kv(std::string_view k, std::string_view v) {
  key(k);
  out_ += escape(v);
  return *this;
}
JsonWriter& JsonWriter::value(std::string_view v) { return kv({}, v); }
JsonWriter& JsonWriter::kv_null(std::string_view k) {
  key(k);
  out_ += "null";
  return *this;
}
JsonWriter& JsonWriter::kv(std::string_view k, uint64_t v) {
  key(k);
  out_ += std::to_string(v);
  return *this;
}
JsonWriter& JsonWriter::kv(std::string_view k, int64_t v) {
  key(k);
  out_ += std::to_string(v);
  return *this;
}
JsonWriter& JsonWriter::kv(std::string_view k, double v) {
  key(k);
  if (!std::isfinite(v)) {
    out_ += "null";
    return *this;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  out_ += buf;
  return *this;
}
JsonWriter& JsonWriter::kv(std::string_view k, bool v) {
  key(k);
  out_ += v ? "true" : "false";
  return *this;
}

}  // namespace stripeback::util
