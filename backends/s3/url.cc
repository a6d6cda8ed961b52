#include "backends/s3/url.h"

#include <cctype>

#include "util/option_words.h"

namespace stripeback::s3 {
namespace {

constexpr const char* kNoun = "S3 location";

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// Four dot-separated runs of digits: what S3 refuses as a bucket name.
bool looks_like_ipv4(std::string_view b) {
  int dots = 0;
  for (char c : b) {
    if (c == '.') ++dots;
    else if (c < '0' || c > '9') return false;
  }
  return dots == 3;
}

Result<void> check_bucket(std::string_view text, std::string_view b) {
  auto bad = [&](const std::string& why) {
    return storage::invalid_location(text, "bucket '" + std::string(b) + "' " + why, kNoun);
  };
  if (b.empty()) return storage::invalid_location(text, "no bucket: expected s3://BUCKET/PREFIX", kNoun);
  if (b.size() < 3 || b.size() > 63) return bad("must have 3 to 63 characters");
  for (char c : b)
    if (!is_lower_alnum(c) && c != '.' && c != '-')
      return bad("may hold only lower-case letters, digits, '.' and '-'");
  if (!is_lower_alnum(b.front()) || !is_lower_alnum(b.back()))
    return bad("must start and end with a letter or digit");
  if (b.find("..") != std::string_view::npos) return bad("may not hold \"..\"");
  if (looks_like_ipv4(b)) return bad("may not look like an IP address");
  return ok();
}

}  // namespace

Result<storage::Location> parse_location(std::string_view text) {
  if (text.substr(0, 5) != "s3://")
    return storage::invalid_location(text, "expected s3://BUCKET/PREFIX", kNoun);
  for (char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return storage::invalid_location(text, "it holds a control character", kNoun);
  const std::string_view rest = text.substr(5);
  if (rest.find_first_of("?#") != std::string_view::npos)
    return storage::invalid_location(
        text, "an S3 location takes no query or fragment (endpoint, region and credentials "
              "are set with " + util::option_word("s3_endpoint") + ", " +
              util::option_word("s3_region") + " and the AWS_* environment)",
        kNoun);
  const size_t slash = rest.find('/');
  const std::string_view bucket = rest.substr(0, slash);
  SB_TRY(check_bucket(text, bucket));
  storage::Location at;
  at.scheme = "s3";
  at.authority = std::string(bucket);
  const std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (storage::has_component(path, "..") || storage::has_component(path, "."))
    return storage::invalid_location(text, "'.' and '..' are not key components", kNoun);
  at.path = storage::squeeze_slashes(path.empty() ? std::string("/") : std::string(path));
  return at;
}

std::string bucket_of(const storage::Location& at) { return at.authority; }

std::string key_of(const storage::Location& at) {
  if (at.path.empty() || at.path == "/") return "";
  return at.path.front() == '/' ? at.path.substr(1) : at.path;
}

}  // namespace stripeback::s3
