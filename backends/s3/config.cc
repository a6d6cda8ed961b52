#include "backends/s3/config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>

#include "util/escape.h"
#include "util/option_words.h"

extern char** environ;  // NOLINT: POSIX

namespace stripeback::s3 {
namespace {

constexpr uint32_t kMaxAttempts = 100;
constexpr uint32_t kMaxPartsInFlight = 64;

std::string config_trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(" \t\r") - b + 1));
}

std::string config_lower(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return o;
}

Error bad_setting(std::string_view key, const std::string& why) {
  return Error{Errc::invalid_argument, 0, "S3 " + util::option_word(key) + ": " + why};
}

// A shared file: section name -> key -> value. An indented "key = value" under a key whose
// value is empty ("s3 =") is kept as "s3.key".
using Section = std::map<std::string, std::string>;
using IniFile = std::map<std::string, Section>;

struct SharedFile {
  std::string path;             // empty: not looked for (no HOME)
  std::optional<IniFile> data;  // nullopt: no such file
};

Result<SharedFile> read_shared_file(std::string path) {
  SharedFile f{std::move(path), std::nullopt};
  if (f.path.empty()) return f;
  struct stat st {};
  if (::stat(f.path.c_str(), &st) != 0 && errno == ENOENT) return f;
  std::ifstream in(f.path);
  if (!in)
    return sys_error(errno != 0 ? errno : EIO,
                     "unable to read the AWS shared file '" + util::escape_text(f.path) + "'");
  IniFile ini;
  Section* section = nullptr;
  std::string line, parent;
  while (std::getline(in, line)) {
    const std::string t = config_trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t.front() == '[') {
      const size_t close = t.find(']');
      section = close == std::string::npos ? nullptr : &ini[config_trim(t.substr(1, close - 1))];
      parent.clear();
      continue;
    }
    const size_t eq = t.find('=');
    if (section == nullptr || eq == std::string::npos) continue;
    const std::string key = config_lower(config_trim(t.substr(0, eq)));
    const std::string value = config_trim(t.substr(eq + 1));
    const bool indented = line[0] == ' ' || line[0] == '\t';
    if (indented && !parent.empty()) {
      (*section)[parent + "." + key] = value;
      continue;
    }
    (*section)[key] = value;
    parent = value.empty() ? key : std::string();
  }
  if (in.bad())
    return fail(Errc::io, "unable to read the AWS shared file '" + util::escape_text(f.path) + "'");
  f.data = std::move(ini);
  return f;
}

// The profile's section of a file, or nullptr. The config file names a profile
// "[profile NAME]", except the default one, "[default]".
const Section* profile_section(const SharedFile& f, const std::string& profile, bool config_file) {
  if (!f.data) return nullptr;
  auto find = [&](const std::string& name) -> const Section* {
    auto it = f.data->find(name);
    return it == f.data->end() ? nullptr : &it->second;
  };
  if (!config_file) return find(profile);
  if (const Section* s = find("profile " + profile)) return s;
  return profile == "default" ? find("default") : nullptr;
}

std::string value_of(const Section* s, const std::string& key) {
  if (s == nullptr) return "";
  auto it = s->find(key);
  return it == s->end() ? "" : it->second;
}

std::string env_value(const Environment& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

std::string describe(const SharedFile& f) {
  if (f.path.empty()) return "(no file: HOME is not set)";
  return "'" + util::escape_text(f.path) + "'" + (f.data ? "" : " (no such file)");
}

struct Profiles {
  std::string name;
  bool explicit_name = false;  // given as a setting, not from AWS_PROFILE or the default
  SharedFile credentials, config;
};

Result<Credentials> resolve_credentials(const S3Flags& given, const Environment& env,
                                        const Profiles& p, std::string& source) {
  auto complete = [](const Credentials& c) {
    return !c.access_key.empty() && !c.secret_key.empty();
  };
  if (!given.access_key.empty() || !given.secret_key.empty()) {
    Credentials c{given.access_key, given.secret_key, given.session_token};
    if (!complete(c))
      return fail(Errc::invalid_argument,
                  "incomplete S3 credentials: an access key and a secret key are both needed");
    source = "the settings given";
    return c;
  }
  auto from_profile = [&](const SharedFile& f, bool config_file) -> std::optional<Credentials> {
    const Section* s = profile_section(f, p.name, config_file);
    Credentials c{value_of(s, "aws_access_key_id"), value_of(s, "aws_secret_access_key"),
                  value_of(s, "aws_session_token")};
    if (!complete(c)) return std::nullopt;
    source = "profile '" + util::escape_text(p.name) + "' of '" + util::escape_text(f.path) + "'";
    return c;
  };
  if (!p.explicit_name) {
    Credentials c{env_value(env, "AWS_ACCESS_KEY_ID"), env_value(env, "AWS_SECRET_ACCESS_KEY"),
                  env_value(env, "AWS_SESSION_TOKEN")};
    if (complete(c)) {
      source = "the environment (AWS_ACCESS_KEY_ID)";
      return c;
    }
    if (!c.access_key.empty() || !c.secret_key.empty())
      return fail(
          Errc::invalid_argument,
          std::string("incomplete S3 credentials in the environment: ") +
              (c.access_key.empty() ? "AWS_SECRET_ACCESS_KEY is set but not AWS_ACCESS_KEY_ID"
                                    : "AWS_ACCESS_KEY_ID is set but not AWS_SECRET_ACCESS_KEY"));
  }
  if (auto c = from_profile(p.credentials, false)) return *c;
  if (auto c = from_profile(p.config, true)) return *c;
  const std::string looked = "profile '" + util::escape_text(p.name) + "' of " +
                             describe(p.credentials) + " and of " + describe(p.config);
  if (p.explicit_name)
    return fail(Errc::invalid_argument, "no S3 credentials for the " +
                                            util::option_word("s3_profile") + " given: looked in " +
                                            looked);
  return fail(Errc::invalid_argument,
              "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give a "
              "profile of ~/.aws/credentials (" +
                  util::option_word("s3_profile") + "); looked in the environment and in " +
                  looked);
}

Result<void> check_region(const std::string& region) {
  for (char c : region)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
      return bad_setting("s3_region", "'" + util::escape_text(region) +
                                          "' is not a region name (lower-case letters, digits "
                                          "and '-')");
  return ok();
}

Result<void> apply_tuning(const S3Flags& given, S3Config& c) {
  if (given.attempt_timeout) {
    if (given.attempt_timeout->count() <= 0)
      return bad_setting("s3_timeout", "the time an attempt may take must be positive");
    c.attempt_timeout = *given.attempt_timeout;
  }
  if (given.attempts) {
    if (*given.attempts < 1 || *given.attempts > kMaxAttempts)
      return bad_setting("s3_attempts", std::to_string(*given.attempts) + " is not between 1 and " +
                                            std::to_string(kMaxAttempts));
    c.attempts = *given.attempts;
  }
  if (!given.checksum.empty()) {
    const std::string k = config_lower(given.checksum);
    if (k == "md5") {
      c.checksum = ChecksumKind::md5;
    } else if (k == "crc32c") {
      c.checksum = ChecksumKind::crc32c;
    } else if (k == "none") {
      c.checksum = ChecksumKind::none;
    } else {
      return bad_setting("s3_checksum",
                         "'" + util::escape_text(given.checksum) + "' is not md5, crc32c or none");
    }
  }
  if (given.part_size) {
    auto checked = check_part_size(*given.part_size);
    if (!checked) return bad_setting("s3_part_size", checked.error().what);
    c.part_size = *given.part_size;
  }
  if (given.parts_in_flight) {
    if (*given.parts_in_flight < 1 || *given.parts_in_flight > kMaxPartsInFlight)
      return bad_setting("s3_parts_in_flight", std::to_string(*given.parts_in_flight) +
                                                   " is not between 1 and " +
                                                   std::to_string(kMaxPartsInFlight));
    c.parts_in_flight = *given.parts_in_flight;
  }
  for (char ch : given.storage_class)
    if (!((ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_'))
      return bad_setting("s3_storage_class", "'" + util::escape_text(given.storage_class) +
                                                 "' is not a storage class (STANDARD, "
                                                 "STANDARD_IA, GLACIER_IR, ...)");
  c.storage_class = given.storage_class;
  if (given.sse.empty()) {
    c.sse = Sse::none;
  } else if (given.sse == "AES256") {
    c.sse = Sse::aes256;
  } else if (given.sse == "aws:kms") {
    c.sse = Sse::kms;
  } else {
    return bad_setting("s3_sse", "'" + util::escape_text(given.sse) + "' is not AES256 or aws:kms");
  }
  if (!given.sse_kms_key_id.empty() && c.sse != Sse::kms)
    return bad_setting("s3_sse_kms_key_id",
                       "a KMS key is given only with " + util::option_word("s3_sse") + " aws:kms");
  for (char ch : given.sse_kms_key_id)
    if (static_cast<unsigned char>(ch) < 0x21 || ch == 0x7f)
      return bad_setting("s3_sse_kms_key_id", "the key id holds a space or a control byte");
  c.sse_kms_key_id = given.sse_kms_key_id;
  return ok();
}

}  // namespace

std::string Endpoint::authority() const {
  const bool own_port =
      port == 0 || (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
  return own_port ? host : host + ":" + std::to_string(port);
}

std::string Endpoint::base_url() const { return scheme + "://" + authority(); }

Result<Endpoint> parse_endpoint(std::string_view url) {
  std::string shown(url);
  const size_t at_sign = url.find('@');
  const size_t scheme_end = url.find("://");
  if (at_sign != std::string_view::npos && scheme_end != std::string_view::npos &&
      at_sign > scheme_end)
    shown = std::string(url.substr(0, scheme_end + 3)) + "..." + std::string(url.substr(at_sign));
  auto bad = [&](const std::string& why) {
    return fail(Errc::invalid_argument,
                "S3 endpoint '" + util::escape_text(shown) + "' is not usable: " + why);
  };
  if (scheme_end == std::string_view::npos)
    return bad("expected http://HOST[:PORT] or https://...");
  Endpoint e;
  e.scheme = config_lower(url.substr(0, scheme_end));
  if (e.scheme != "http" && e.scheme != "https") return bad("the scheme is not http or https");
  std::string_view rest = url.substr(scheme_end + 3);
  if (rest.find_first_of("?#") != std::string_view::npos) return bad("it has a query or fragment");
  if (at_sign != std::string_view::npos)
    return bad("it holds a user name (give credentials apart)");
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos && slash + 1 != rest.size())
    return bad("it has a path (an endpoint is scheme, host and port only)");
  rest = rest.substr(0, slash);
  std::optional<std::string_view> port;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return bad("an IPv6 address lacks its ']'");
    e.host = std::string(rest.substr(0, close + 1));
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return bad("unexpected text after the IPv6 address");
    if (!rest.empty()) port = rest.substr(1);
    if (e.host.size() == 2) return bad("no host");
  } else {
    const size_t colon = rest.find(':');
    e.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
    if (e.host.empty()) return bad("no host");
    for (char c : e.host)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_'))
        return bad("the host holds a character no host name has");
  }
  if (e.host.size() > 1 && e.host.front() != '[') e.host = config_lower(e.host);
  if (port) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port->data(), port->data() + port->size(), value);
    if (port->empty() || ec != std::errc() || end != port->data() + port->size() || value < 1 ||
        value > 65535)
      return bad("the port is not a number from 1 to 65535");
    e.port = static_cast<uint16_t>(value);
  }
  return e;
}

Result<void> check_part_size(uint64_t bytes) {
  if (bytes < kMinPartSize || bytes > kMaxPartSize)
    return fail(Errc::invalid_argument, "a part size of " + std::to_string(bytes) +
                                            " bytes is outside S3's limits, " +
                                            std::to_string(kMinPartSize) + " (5 MiB) to " +
                                            std::to_string(kMaxPartSize) + " (5 GiB)");
  return ok();
}

Result<uint64_t> S3Config::part_size_for(uint64_t expected_bytes) const {
  if (expected_bytes > kMaxParts * kMaxPartSize)
    return fail(Errc::invalid_argument, "an object of " + std::to_string(expected_bytes) +
                                            " bytes is larger than S3 " + "allows in " +
                                            std::to_string(kMaxParts) + " parts of at most 5 GiB");
  uint64_t size = part_size;
  while (size < kMaxPartSize && (expected_bytes + size - 1) / size > kMaxParts)
    size = std::min(size * 2, kMaxPartSize);
  return size;
}

Environment process_environment() {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq != std::string_view::npos)
      env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

Result<S3Config> resolve_config(const S3Flags& given, const Environment& env) {
  S3Config c;
  Profiles p;
  p.explicit_name = !given.profile.empty();
  p.name = !given.profile.empty()                   ? given.profile
           : !env_value(env, "AWS_PROFILE").empty() ? env_value(env, "AWS_PROFILE")
                                                    : "default";
  const std::string home = env_value(env, "HOME");
  std::string cred_path = env_value(env, "AWS_SHARED_CREDENTIALS_FILE");
  std::string conf_path = env_value(env, "AWS_CONFIG_FILE");
  if (cred_path.empty() && !home.empty()) cred_path = home + "/.aws/credentials";
  if (conf_path.empty() && !home.empty()) conf_path = home + "/.aws/config";
  SB_ASSIGN(p.credentials, read_shared_file(cred_path));
  SB_ASSIGN(p.config, read_shared_file(conf_path));
  const Section* conf = profile_section(p.config, p.name, true);
  if (p.explicit_name && conf == nullptr &&
      profile_section(p.credentials, p.name, false) == nullptr)
    return bad_setting("s3_profile", "no profile '" + util::escape_text(p.name) + "' in " +
                                         describe(p.credentials) + " or " + describe(p.config));

  c.region = !given.region.empty()                           ? given.region
             : !env_value(env, "AWS_REGION").empty()         ? env_value(env, "AWS_REGION")
             : !env_value(env, "AWS_DEFAULT_REGION").empty() ? env_value(env, "AWS_DEFAULT_REGION")
                                                             : value_of(conf, "region");
  SB_TRY(check_region(c.region));

  std::string endpoint = given.endpoint;
  for (const char* name : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"})
    if (endpoint.empty()) endpoint = env_value(env, name);
  if (endpoint.empty()) endpoint = value_of(conf, "s3.endpoint_url");
  if (endpoint.empty()) endpoint = value_of(conf, "endpoint_url");
  const bool aws_default = endpoint.empty();
  if (aws_default) {
    if (c.region.empty())
      return bad_setting("s3_region", "no S3 region: set AWS_REGION, give " +
                                          util::option_word("s3_region") +
                                          " or a region in profile '" + util::escape_text(p.name) +
                                          "' of " + describe(p.config) + " (or an endpoint with " +
                                          util::option_word("s3_endpoint") + ")");
    endpoint = "https://s3." + c.region + ".amazonaws.com";
  } else if (c.region.empty()) {
    c.region = "us-east-1";  // what S3-compatible gateways take when they are not told
  }
  SB_ASSIGN(c.endpoint, parse_endpoint(endpoint));

  std::string style = config_lower(given.url_style);
  if (style.empty()) style = config_lower(value_of(conf, "s3.addressing_style"));
  if (style.empty() || style == "auto")
    c.addressing = aws_default || c.endpoint.host.ends_with(".amazonaws.com") ? Addressing::host
                                                                              : Addressing::path;
  else if (style == "path")
    c.addressing = Addressing::path;
  else if (style == "host" || style == "virtual")
    c.addressing = Addressing::host;
  else
    return bad_setting("s3_url_style",
                       "'" + util::escape_text(given.url_style) + "' is not path or host");

  SB_ASSIGN(c.credentials, resolve_credentials(given, env, p, c.credentials_source));
  c.ca_file = given.ca_file.empty() ? env_value(env, "AWS_CA_BUNDLE") : given.ca_file;
  if (given.verify_tls) c.verify_tls = *given.verify_tls;
  SB_TRY(apply_tuning(given, c));
  return c;
}

}  // namespace stripeback::s3
