// AWS Signature Version 4 for S3: the Authorization header of a request whose payload is
// sent in one piece (its SHA-256 known up front, or UNSIGNED-PAYLOAD).
//
// Signing is four pure steps, each exposed so tests check them against published vectors:
//   canonical_request(request)            method, path, query, headers, payload hash
//   string_to_sign(time, scope, creq)     AWS4-HMAC-SHA256, the time, the scope, SHA-256(creq)
//   signing_key(secret, day, region, svc) HMAC chain over "AWS4"+secret
//   signature(key, sts)                   hex HMAC of the string to sign
// and sign() runs them for a request at a given time and returns the headers to add.
//
// What the caller promises: the request goes out with exactly `path`, the query that
// canonical_query() spells, a Host header equal to `host`, and every header in `headers`
// plus the ones sign() returns, unchanged. Headers the HTTP layer adds on its own
// (Content-Length, Expect, ...) are simply not signed.
//
// Secrets: nothing here prints a secret key or a session token, and no Error names one.
// All functions are pure and safe from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/s3/hashes.h"
#include "backends/s3/iso_time.h"
#include "stripeback/result.h"

namespace stripeback::s3 {

struct Credentials {
  std::string access_key;
  std::string secret_key;     // never printed, never in an Error's text
  std::string session_token;  // temporary credentials only; empty otherwise
};

struct Header {
  std::string name;  // any case; compared and signed in lower case
  std::string value;
};
using Headers = std::vector<Header>;
// Unencoded name/value pairs, in any order; a name given alone has an empty value ("?uploads").
using QueryParams = std::vector<std::pair<std::string, std::string>>;

inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
// SHA-256 of nothing: the payload hash of a request without a body.
inline constexpr std::string_view kEmptyPayloadHash =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

struct Request {
  std::string method;  // GET, PUT, POST, DELETE, HEAD
  std::string host;    // as in the Host header: with ":port" when it is not the default
  // The path as sent, already URI-encoded (encode_path()); S3 signs it as it is, with no
  // normalization: "a//b/./c" stays so.
  std::string path = "/";
  QueryParams query;
  Headers headers;  // signed in addition to host; a name given twice is signed as "v1,v2"
  std::string payload_hash = std::string(kEmptyPayloadHash);  // hex SHA-256 or kUnsignedPayload
};

enum class EncodeSlash : bool { no, yes };
// RFC 3986 percent-encoding as SigV4 wants it: A-Z a-z 0-9 - . _ ~ stay, every other byte
// becomes %XX (upper-case hex); '/' stays unless `slash` is yes.
std::string uri_encode(std::string_view text, EncodeSlash slash);
// An unencoded path ("/bucket/a b/c") as it is sent and signed: each segment encoded, '/' kept.
std::string encode_path(std::string_view path);
// The query as signed and as it must be sent: names and values encoded (slash too), pairs
// sorted by name then value, "name=value" joined with '&' (an empty value leaves "name=").
std::string canonical_query(const QueryParams& query);

struct CanonicalRequest {
  std::string text;            // the six lines SigV4 hashes
  std::string signed_headers;  // "host;x-amz-date", as the Authorization header lists them
};
// Fails with invalid_argument, naming the part, when the method or a header name is not an
// HTTP token, a value holds a control byte (a CR or LF would split the header), the host is
// empty or not a host, the path is not absolute or not encoded as encode_path() writes it,
// the payload hash is neither 64 lower-case hex digits nor UNSIGNED-PAYLOAD, or a header
// repeats the host.
Result<CanonicalRequest> canonical_request(const Request& r);

// "20150830/us-east-1/s3/aws4_request"
std::string credential_scope(std::string_view day, std::string_view region,
                             std::string_view service);
Result<std::string> string_to_sign(std::string_view amz_date, std::string_view scope,
                                   std::string_view canonical_request);
// The key is as secret as the secret key it comes from: valid for one day, region, service.
Result<Sha256> signing_key(std::string_view secret_key, std::string_view day,
                           std::string_view region, std::string_view service);
Result<std::string> signature(const Sha256& key, std::string_view string_to_sign);
std::string authorization(std::string_view access_key, std::string_view scope,
                          std::string_view signed_headers, std::string_view signature);

// S3 wants the payload hash sent as x-amz-content-sha256 as well as signed; other services
// (and the generic SigV4 test suite) take it only inside the canonical request.
enum class ContentHashHeader : bool { omit, send };

struct SigningParams {
  std::string region;  // us-east-1, or what the gateway expects
  std::string service = "s3";
  ContentHashHeader content_hash = ContentHashHeader::send;
};

struct SignedRequest {
  // To add to the request: x-amz-date, x-amz-content-sha256 (unless omitted),
  // x-amz-security-token (with a session token; it is signed, as S3 wants), Authorization.
  Headers headers;
  // For diagnosing a SignatureDoesNotMatch (S3 returns its own canonical request in the
  // error): neither holds a secret; the session token's value reads "(redacted)".
  std::string canonical_request;
  std::string string_to_sign;
};

// Signs `r` as of `when`. Besides canonical_request()'s failures, refuses (invalid_argument)
// headers that sign() sets itself (authorization, x-amz-date, x-amz-content-sha256,
// x-amz-security-token), an empty or unusable access key or secret, a token with control
// bytes, and a region or service that is not lower-case letters, digits and '-'.
Result<SignedRequest> sign(const Request& r, const Credentials& creds, const SigningParams& p,
                           TimePoint when);

}  // namespace stripeback::s3
