// S3 locations (backends/s3/url.h): parse_location on any string.
// Invariants: what parses names a bucket S3 accepts and a key without empty, "." or ".."
// components or control characters; its canonical spelling str() parses to the same
// location; a name joined below it keeps the bucket and extends the key.
#include <string>

#include "backends/s3/url.h"
#include "tests/fuzz/fuzz_check.h"

using namespace stripeback;

namespace {

void check_bucket(const std::string& b) {
  FUZZ_CHECK(b.size() >= 3 && b.size() <= 63);
  for (char c : b) FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-');
  FUZZ_CHECK(b.find("..") == std::string::npos);
}

void check_key(const std::string& k) {
  FUZZ_CHECK(k.empty() || (k.front() != '/' && k.back() != '/'));
  FUZZ_CHECK(k.find("//") == std::string::npos);
  for (char c : k) FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
  FUZZ_CHECK(k != "." && k != ".." && k.find("/../") == std::string::npos &&
             k.find("/./") == std::string::npos && k.rfind("../", 0) != 0 &&
             k.rfind("./", 0) != 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto at = s3::parse_location(text);
  if (!at) {
    FUZZ_CHECK(at.error().code == Errc::invalid_argument);
    return 0;
  }
  FUZZ_CHECK(at->scheme == "s3");
  check_bucket(s3::bucket_of(*at));
  const std::string key = s3::key_of(*at);
  check_key(key);
  auto again = s3::parse_location(at->str());
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(*again == *at);
  const std::string joined = s3::key_of(at->join("x"));
  FUZZ_CHECK(joined == (key.empty() ? std::string("x") : key + "/x"));
  return 0;
}
