#include "tests/support/s3_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>

#include "tests/support/run.h"

#ifndef STRIPEBACK_SOURCE_DIR
#error "STRIPEBACK_SOURCE_DIR must be defined"
#endif

namespace stripeback::testing {
namespace {

// scripts/s3-server.sh exits with this when the machine cannot run the gateway (packages
// missing, a port taken, bad settings): a reason to skip, not a failure.
constexpr int kScriptCannotRun = 2;
constexpr const char* kCurl = "/usr/bin/curl";

struct Gateway {
  bool tried = false;
  std::optional<S3Endpoint> endpoint;
  std::string skip;
  std::string state;  // the script's state directory
  int users_fd = -1;  // shared lock held while this process may use the gateway
};

// Never destroyed: the exit handler below still needs it.
Gateway& gateway() {
  static Gateway* g = new Gateway;
  return *g;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// The script's state directory, by the script's own rule.
std::string state_dir() {
  return env_or("SB_S3_STATE", "/tmp/stripeback-s3-" + env_or("SB_S3_PORT", "22080"));
}

std::string marker(const Gateway& g) { return g.state + "/started-by-test"; }

RunResult script(const std::string& verb) {
  RunOptions o;
  o.timeout = std::chrono::minutes(4);
  return run({"/bin/bash", std::string(STRIPEBACK_SOURCE_DIR) + "/scripts/s3-server.sh", verb}, o);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// The endpoint from the script's KEY=VALUE lines.
std::optional<S3Endpoint> parse_endpoint(const std::string& out) {
  S3Endpoint ep;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "AWS_ENDPOINT_URL") ep.url = value;
    if (key == "AWS_REGION") ep.region = value;
    if (key == "AWS_ACCESS_KEY_ID") ep.access_key = value;
    if (key == "AWS_SECRET_ACCESS_KEY") ep.secret_key = value;
    if (key == "SB_S3_KMS_KEY_ID") ep.kms_key_id = value;
  }
  if (ep.url.empty() || ep.region.empty() || ep.access_key.empty() || ep.secret_key.empty())
    return std::nullopt;
  return ep;
}

// At exit: the last user of a gateway a test started stops it. Taking the lock exclusively
// fails while any other process holds it shared; one that starts using the gateway after
// this waits for the stop to end and then starts a new gateway.
void release_gateway() {
  Gateway& g = gateway();
  if (g.users_fd < 0) return;
  if (::flock(g.users_fd, LOCK_EX | LOCK_NB) == 0 && std::filesystem::exists(marker(g)))
    script("stop");
  ::close(g.users_fd);
  g.users_fd = -1;
}

void start_gateway(Gateway& g) {
  if (::access(kCurl, X_OK) != 0) {
    g.skip = "curl is not installed (Debian package curl; scripts/install-deps.sh installs it)";
    return;
  }
  g.state = state_dir();
  const std::string users = g.state + ".users";
  g.users_fd = ::open(users.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (g.users_fd < 0 || ::flock(g.users_fd, LOCK_SH) != 0) {
    g.skip = "unable to lock '" + users + "': " + std::strerror(errno);
    ADD_FAILURE() << g.skip;
    return;
  }
  std::atexit(release_gateway);

  RunResult r = script("status");
  if (!r.exited(0)) {
    r = script("start");
    if (r.exited(kScriptCannotRun)) {
      g.skip = std::string(trim(r.err));
      return;
    }
    if (!r.exited(0)) {
      g.skip = "the S3 test gateway did not start";
      ADD_FAILURE() << "scripts/s3-server.sh start failed:\n" << r.describe();
      return;
    }
    std::ofstream(marker(g)) << ::getpid() << "\n";
  }
  g.endpoint = parse_endpoint(r.out);
  if (!g.endpoint) {
    g.skip = "the S3 test gateway printed no endpoint";
    ADD_FAILURE() << "scripts/s3-server.sh printed no endpoint:\n" << r.describe();
  }
}

bool unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

std::string uri_encode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    if (unreserved(c) || (keep_slash && c == '/')) {
      out += c;
    } else {
      const auto b = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 0xF];
    }
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string xml_unescape(std::string_view s) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  while (!s.empty()) {
    bool replaced = false;
    for (const auto& [entity, c] : kEntities) {
      if (s.starts_with(entity)) {
        out += c;
        s.remove_prefix(entity.size());
        replaced = true;
        break;
      }
    }
    if (!replaced) {
      out += s.front();
      s.remove_prefix(1);
    }
  }
  return out;
}

// The text of the first <tag>...</tag> in `xml`, unescaped; empty when there is none.
std::string xml_field(std::string_view xml, std::string_view tag) {
  const std::string open = "<" + std::string(tag) + ">", close = "</" + std::string(tag) + ">";
  const size_t from = xml.find(open);
  if (from == std::string_view::npos) return "";
  const size_t to = xml.find(close, from + open.size());
  if (to == std::string_view::npos) return "";
  return xml_unescape(xml.substr(from + open.size(), to - from - open.size()));
}

// Appends the <Version> and <DeleteMarker> entries of one ListObjectVersions page, in order.
void parse_versions(std::string_view xml, std::vector<S3ObjectVersion>* out) {
  size_t at = 0;
  while (true) {
    const size_t v = xml.find("<Version>", at), d = xml.find("<DeleteMarker>", at);
    if (v == std::string_view::npos && d == std::string_view::npos) return;
    const bool marker = d < v;
    const std::string_view close = marker ? "</DeleteMarker>" : "</Version>";
    const size_t from = marker ? d : v;
    const size_t to = xml.find(close, from);
    if (to == std::string_view::npos) return;
    const std::string_view entry = xml.substr(from, to - from);
    S3ObjectVersion o;
    o.key = xml_field(entry, "Key");
    o.version_id = xml_field(entry, "VersionId");
    o.delete_marker = marker;
    o.latest = xml_field(entry, "IsLatest") == "true";
    const std::string size = xml_field(entry, "Size");
    o.size = size.empty() ? 0 : std::stoull(size);
    out->push_back(std::move(o));
    at = to + close.size();
  }
}

}  // namespace

std::optional<S3Endpoint> s3_server(std::string* skip_reason) {
  Gateway& g = gateway();
  if (!g.tried) {
    g.tried = true;
    start_gateway(g);
  }
  if (!g.endpoint && skip_reason != nullptr) *skip_reason = g.skip;
  return g.endpoint;
}

std::optional<std::string> S3Response::header(std::string_view name) const {
  std::istringstream in(headers);
  std::string line;
  std::getline(in, line);  // the status line
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (iequals(trim(std::string_view(line).substr(0, colon)), name))
      return std::string(trim(std::string_view(line).substr(colon + 1)));
  }
  return std::nullopt;
}

std::string S3Response::describe() const {
  std::ostringstream os;
  os << request << ": ";
  if (status == 0) {
    os << "no answer\n" << error;
  } else {
    os << "HTTP " << status << "\n" << headers;
    os << (body.size() > 2000 ? body.substr(0, 2000) + "..." : body) << "\n";
  }
  return os.str();
}

S3Response s3_curl(const S3Endpoint& ep, std::string_view method, const std::string& path,
                   const std::vector<std::string>& curl_args) {
  S3Response res;
  res.request = std::string(method) + " " + path;
  // -g and --path-as-is: the path goes out exactly as given, as it was signed.
  std::vector<std::string> argv{kCurl, "-sS", "-g", "--path-as-is", "--max-time", "300",
                                "--aws-sigv4", "aws:amz:" + ep.region + ":s3", "--user",
                                ep.access_key + ":" + ep.secret_key,
                                // The gateway refuses SigV4 requests without it.
                                "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"};
  if (method == "HEAD") {
    argv.push_back("-I");
  } else {
    argv.insert(argv.end(), {"-D", "-", "-X", std::string(method)});
  }
  argv.insert(argv.end(), curl_args.begin(), curl_args.end());
  argv.push_back(ep.url + path);
  RunOptions o;
  o.timeout = std::chrono::minutes(6);
  const RunResult r = run(argv, o);
  if (!r.exited(0)) {
    res.error = r.describe();
    return res;
  }
  // The output is the header blocks (a "100 Continue" one first, for uploads), then the body.
  std::string_view rest = r.out;
  while (rest.starts_with("HTTP/")) {
    const size_t end = rest.find("\r\n\r\n");
    const size_t len = end == std::string_view::npos ? rest.size() : end + 4;
    const std::string_view block = rest.substr(0, len);
    rest.remove_prefix(len);
    const size_t space = block.find(' ');
    const int status = space == std::string_view::npos ? 0 : std::atoi(block.data() + space + 1);
    if (status >= 200 || status < 100) {
      res.status = status;
      res.headers = std::string(block);
      break;
    }
  }
  res.body = std::string(rest);
  if (res.status == 0) res.error = "no HTTP status line in curl's output:\n" + r.describe();
  return res;
}

std::string s3_path(std::string_view bucket, std::string_view key) {
  std::string path = "/" + std::string(bucket);
  if (!key.empty()) path += "/" + uri_encode(key, true);
  return path;
}

std::string s3_create_bucket(const S3Endpoint& ep, ObjectLock lock, std::string* error) {
  static unsigned counter = 0;
  static const unsigned salt = std::random_device{}();
  std::ostringstream name;
  name << "sbt-" << ::getpid() << "-" << std::hex << salt << "-" << std::dec << ++counter;
  std::vector<std::string> args;
  if (lock == ObjectLock::yes) args = {"-H", "x-amz-bucket-object-lock-enabled: true"};
  const S3Response r = s3_curl(ep, "PUT", s3_path(name.str()), args);
  if (r.status != 200) {
    *error = "unable to create bucket '" + name.str() + "': " + r.describe();
    return "";
  }
  return name.str();
}

std::optional<std::vector<S3ObjectVersion>> s3_list_versions(const S3Endpoint& ep,
                                                             const std::string& bucket,
                                                             std::string* error) {
  std::vector<S3ObjectVersion> out;
  std::string query = "?versions=";
  while (true) {
    const S3Response r = s3_curl(ep, "GET", s3_path(bucket) + query);
    if (r.status != 200) {
      *error = "unable to list the versions in bucket '" + bucket + "': " + r.describe();
      return std::nullopt;
    }
    parse_versions(r.body, &out);
    if (xml_field(r.body, "IsTruncated") != "true") return out;
    // Parameters in alphabetical order: the signature is computed over them so.
    query = "?key-marker=" + uri_encode(xml_field(r.body, "NextKeyMarker"), false) +
            "&version-id-marker=" + uri_encode(xml_field(r.body, "NextVersionIdMarker"), false) +
            "&versions=";
  }
}

bool s3_empty_bucket(const S3Endpoint& ep, const std::string& bucket, std::string* error) {
  const auto versions = s3_list_versions(ep, bucket, error);
  if (!versions) return false;
  bool all = true;
  for (const S3ObjectVersion& v : *versions) {
    // A governance lock gives way to a user allowed to bypass it (the test user owns the
    // bucket); a compliance lock does not.
    const S3Response r = s3_curl(
        ep, "DELETE", s3_path(bucket, v.key) + "?versionId=" + uri_encode(v.version_id, false),
        {"-H", "x-amz-bypass-governance-retention: true"});
    if (r.status != 204 && r.status != 200) {
      if (all)
        *error = "unable to delete '" + v.key + "' version " + v.version_id + ": " + r.describe();
      all = false;
    }
  }
  return all;
}

bool s3_delete_bucket(const S3Endpoint& ep, const std::string& bucket, std::string* error) {
  if (!s3_empty_bucket(ep, bucket, error)) return false;
  const S3Response r = s3_curl(ep, "DELETE", s3_path(bucket));
  if (r.status != 204) {
    *error = "unable to delete bucket '" + bucket + "': " + r.describe();
    return false;
  }
  return true;
}

}  // namespace stripeback::testing
