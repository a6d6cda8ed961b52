// S3Config: where the S3 client sends its requests and how (endpoint, region, addressing,
// credentials, TLS, timeouts, retries, integrity checks, multipart part sizes, storage class
// and server-side encryption), and resolve_config(), which builds one from what a front end
// was given, the environment and the AWS shared files.
//
// Precedence, per setting: the explicit settings (S3Flags: what the CLI and the C API take)
// over the environment (AWS_ENDPOINT_URL, AWS_REGION / AWS_DEFAULT_REGION,
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, AWS_PROFILE) over the shared
// files (the credentials file, AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, with one
// [NAME] section a profile; the config file, AWS_CONFIG_FILE or ~/.aws/config, with
// [default] and [profile NAME] sections). An explicit profile selects that profile's keys
// over the environment's. The environment is passed in as a map ("~" is its HOME), so the
// result depends on nothing else but the files it names.
//
// Errors are invalid_argument (or io when a file exists and cannot be read); they name the
// setting by its option key (util::option_word) and where it was looked for, and never hold
// a secret key or a session token. Pure apart from reading the two files; any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "backends/s3/sigv4.h"
#include "stripeback/result.h"

namespace stripeback::s3 {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kMinPartSize = 5 * kMiB;           // every part but the last
inline constexpr uint64_t kMaxPartSize = uint64_t{5} << 30;  // 5 GiB
inline constexpr uint64_t kMaxParts = 10000;
inline constexpr uint64_t kDefaultPartSize = 16 * kMiB;

// Where an S3 service listens: http or https, a host name or address, a port.
struct Endpoint {
  std::string scheme;  // "http" or "https"
  std::string host;    // a name, an IPv4 address or a bracketed IPv6 address ("[::1]")
  uint16_t port = 0;   // 0: the scheme's own (80, 443)

  // "host" or "host:port" when the port is not the scheme's own: the Host header.
  std::string authority() const;
  // "scheme://authority"
  std::string base_url() const;
};

// "https://host[:port][/]": no user, path, query or fragment. Errors (invalid_argument) name
// the text (without any user information it held) and what is wrong.
Result<Endpoint> parse_endpoint(std::string_view url);

// Path style: scheme://endpoint/BUCKET/KEY. Host style (virtual-hosted):
// scheme://BUCKET.endpoint/KEY.
enum class Addressing { path, host };
enum class ChecksumKind { md5, crc32c, none };  // the integrity header of data bodies
enum class Sse { none, aes256, kms };           // server-side encryption requested
enum class VerifyPeer : bool { no, yes };

struct S3Config {
  Endpoint endpoint;
  std::string region;
  Addressing addressing = Addressing::path;
  Credentials credentials;
  // Where the credentials came from, for messages: "the environment (AWS_ACCESS_KEY_ID)",
  // "profile 'x' of /home/u/.aws/credentials". Never the keys themselves.
  std::string credentials_source;
  std::string ca_file;  // PEM bundle; empty: the system's store
  VerifyPeer verify_tls = VerifyPeer::yes;
  std::chrono::milliseconds attempt_timeout{60'000};  // each attempt of a request
  uint32_t attempts = 10;                             // attempts of a request, first included
  // Backoff before attempt n+1: a uniformly random wait in [0, min(cap, first * 2^(n-1))].
  std::chrono::milliseconds backoff_first{100};
  std::chrono::milliseconds backoff_cap{5'000};
  ChecksumKind checksum = ChecksumKind::md5;
  uint64_t part_size = kDefaultPartSize;
  uint32_t parts_in_flight = 4;
  std::string storage_class;  // empty: the bucket's default
  Sse sse = Sse::none;
  std::string sse_kms_key_id;  // with Sse::kms only; empty: the account's default key

  // The part size to use for an object of about `expected_bytes`: part_size, doubled as
  // often as needed so the object fits in kMaxParts parts, at most kMaxPartSize. Fails
  // (invalid_argument) for an object larger than kMaxParts * kMaxPartSize.
  Result<uint64_t> part_size_for(uint64_t expected_bytes) const;
};

// The explicit settings, as the front ends give them; empty or nullopt: not given.
struct S3Flags {
  std::string endpoint;                  // s3_endpoint: https://host[:port]
  std::string region;                    // s3_region
  std::string profile;                   // s3_profile
  std::string url_style;                 // s3_url_style: "path" or "host" (alias "virtual")
  std::string ca_file;                   // s3_ca_file
  std::optional<VerifyPeer> verify_tls;  // s3_verify_tls
  std::optional<std::chrono::milliseconds> attempt_timeout;  // s3_timeout
  std::optional<uint32_t> attempts;                          // s3_attempts
  std::string checksum;                                      // s3_checksum: md5 | crc32c | none
  std::optional<uint64_t> part_size;                         // s3_part_size
  std::optional<uint32_t> parts_in_flight;                   // s3_parts_in_flight
  std::string storage_class;                                 // s3_storage_class
  std::string sse;                                           // s3_sse: "AES256" or "aws:kms"
  std::string sse_kms_key_id;                                // s3_sse_kms_key_id
  // Keys given directly (the C API); both or neither.
  std::string access_key;
  std::string secret_key;
  std::string session_token;
};

// Variable name -> value.
using Environment = std::map<std::string, std::string>;
// This process's environment, for the front ends (tests build their own).
Environment process_environment();

Result<S3Config> resolve_config(const S3Flags& given, const Environment& env);

// The limits part sizes must keep: kMinPartSize to kMaxPartSize.
Result<void> check_part_size(uint64_t bytes);

}  // namespace stripeback::s3
