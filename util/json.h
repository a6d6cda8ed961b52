// A small streaming JSON writer for `--json` output. Keys and strings are escaped;
// the caller is responsible for well-formed nesting (asserted in debug builds).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stripeback::util {

class JsonWriter {
 public:
  JsonWriter& begin_object(std::string_view key = {});
  JsonWriter& end_object();
  JsonWriter& begin_array(std::string_view key = {});
  JsonWriter& end_array();
  JsonWriter& kv(std::string_view key, std::string_view value);
  JsonWriter& kv(std::string_view key, const char* value) { return kv(key, std::string_view(value)); }
  JsonWriter& kv(std::string_view key, uint64_t value);
  JsonWriter& kv(std::string_view key, int64_t value);
  JsonWriter& kv(std::string_view key, int value) { return kv(key, static_cast<int64_t>(value)); }
  JsonWriter& kv(std::string_view key, unsigned value) { return kv(key, static_cast<uint64_t>(value)); }
  JsonWriter& kv(std::string_view key, double value);
  JsonWriter& kv(std::string_view key, bool value);
  JsonWriter& value(std::string_view v);
  JsonWriter& value(uint64_t v) { return kv({}, v); }
  JsonWriter& kv_null(std::string_view key);
  const std::string& str() const { return out_; }

  static std::string escape(std::string_view s);

 private:
  void key(std::string_view k);
  std::string out_;
  std::vector<bool> first_;
};

}  // namespace stripeback::util
