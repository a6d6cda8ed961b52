#include "backends/s3/sigv4.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <span>

#include "util/escape.h"

namespace stripeback::s3 {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view kTerminator = "aws4_request";
constexpr char kUpperHex[] = "0123456789ABCDEF";

// The bytes of `s` as unsigned values, for the character class tests below.
std::span<const unsigned char> ubytes(std::string_view s) {
  return {reinterpret_cast<const unsigned char*>(s.data()), s.size()};
}

bool is_unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

bool is_upper_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); }

// RFC 9110 token characters: what a method or a header name may be made of.
bool is_token(std::string_view s) {
  static constexpr std::string_view kMarks = "!#$%&'*+-.^_`|~";
  if (s.empty()) return false;
  for (unsigned char c : ubytes(s))
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
          kMarks.find(char(c)) != std::string_view::npos))
      return false;
  return true;
}

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

Error bad_request(const Request& r, const std::string& why) {
  return Error{Errc::invalid_argument, 0,
               "unable to sign " + util::escape_text(r.method.substr(0, 16)) + " '" +
                   util::escape_text(r.path.substr(0, 256)) + "': " + why};
}

// SigV4's Trimall: no white space at either end, each inner run of it one space. Tabs count
// as white space too, as the AWS SDKs treat them. Control bytes are refused, not folded: a CR
// or LF in a value would end the header where the server reads it.
Result<std::string> trim_all(const Request& r, std::string_view name, std::string_view value) {
  std::string out;
  bool space = false;
  for (unsigned char c : ubytes(value)) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (is_control(c))
      return bad_request(
          r, "the value of header '" + util::escape_text(name) + "' holds a control byte");
    if (space) out.push_back(' ');
    space = false;
    out.push_back(static_cast<char>(c));
  }
  return out;
}

Result<void> check_host(const Request& r) {
  if (r.host.empty()) return bad_request(r, "no host");
  for (unsigned char c : ubytes(r.host))
    if (!(is_unreserved(c) || c == ':' || c == '[' || c == ']'))
      return bad_request(r, "host '" + util::escape_text(r.host) + "' is not a host name, an " +
                                "address or either with a port");
  return ok();
}

// The path must already be in the form encode_path() writes, so what is signed is what is sent.
Result<void> check_path(const Request& r) {
  const std::string& p = r.path;
  if (p.empty() || p[0] != '/') return bad_request(r, "the path does not start with '/'");
  for (size_t i = 0; i < p.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(p[i]);
    if (is_unreserved(c) || c == '/') continue;
    if (c == '%' && i + 2 < p.size() && is_upper_hex(p[i + 1]) && is_upper_hex(p[i + 2])) {
      i += 2;
      continue;
    }
    return bad_request(r, "the path is not URI-encoded (byte " + std::to_string(i) +
                              "; encode it with encode_path)");
  }
  return ok();
}

Result<void> check_payload_hash(const Request& r) {
  const std::string& h = r.payload_hash;
  if (h == kUnsignedPayload) return ok();
  bool hex = h.size() == 64 && std::all_of(h.begin(), h.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
             });
  if (!hex)
    return bad_request(r, "the payload hash is neither 64 lower-case hex digits nor " +
                              std::string(kUnsignedPayload));
  return ok();
}

bool is_scope_word(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

Result<void> check_signing_inputs(const Request& r, const Credentials& creds,
                                  const SigningParams& p) {
  if (creds.access_key.empty()) return bad_request(r, "the access key is empty");
  for (unsigned char c : ubytes(creds.access_key))
    if (c <= 0x20 || c >= 0x7f || c == '/' || c == ',')
      return bad_request(r,
                         "the access key holds a character an Authorization header cannot "
                         "carry (a space, a control byte, '/', ',' or a non-ASCII byte)");
  if (creds.secret_key.empty()) return bad_request(r, "the secret key is empty");
  for (unsigned char c : ubytes(creds.session_token))
    if (is_control(c)) return bad_request(r, "the session token holds a control byte");
  if (!is_scope_word(p.region))
    return bad_request(r, "region '" + util::escape_text(p.region) +
                              "' is not lower-case letters, digits and '-'");
  if (!is_scope_word(p.service))
    return bad_request(r, "service '" + util::escape_text(p.service) +
                              "' is not lower-case letters, digits and '-'");
  for (const Header& h : r.headers) {
    std::string name = lower(h.name);
    if (name == "authorization" || name == "x-amz-date" || name == "x-amz-content-sha256" ||
        name == "x-amz-security-token")
      return bad_request(r, "header '" + util::escape_text(h.name) + "' is set by the signer");
  }
  return ok();
}

// The session token's value in a canonical request kept for diagnosis, replaced: a token is a
// credential, and the text may end up in a log.
void redact_token(std::string& creq) {
  static constexpr std::string_view kLine = "\nx-amz-security-token:";
  size_t at = creq.find(kLine);
  if (at == std::string::npos) return;
  at += kLine.size();
  size_t end = creq.find('\n', at);
  creq.replace(at, end - at, "(redacted)");
}

}  // namespace

std::string uri_encode(std::string_view text, EncodeSlash slash) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : ubytes(text)) {
    if (is_unreserved(c) || (c == '/' && slash == EncodeSlash::no)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kUpperHex[c >> 4]);
      out.push_back(kUpperHex[c & 0xf]);
    }
  }
  return out;
}

std::string encode_path(std::string_view path) { return uri_encode(path, EncodeSlash::no); }

std::string canonical_query(const QueryParams& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query)
    encoded.emplace_back(uri_encode(name, EncodeSlash::yes), uri_encode(value, EncodeSlash::yes));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += name;
    out.push_back('=');
    out += value;
  }
  return out;
}

Result<CanonicalRequest> canonical_request(const Request& r) {
  if (!is_token(r.method)) return bad_request(r, "the method is not an HTTP token");
  SB_TRY(check_host(r));
  SB_TRY(check_path(r));
  SB_TRY(check_payload_hash(r));

  std::vector<std::pair<std::string, std::string>> headers;
  headers.reserve(r.headers.size() + 1);
  headers.emplace_back("host", r.host);
  for (const Header& h : r.headers) {
    if (!is_token(h.name))
      return bad_request(r, "header name '" + util::escape_text(h.name) + "' is not an HTTP token");
    std::string name = lower(h.name);
    if (name == "host")
      return bad_request(r, "a Host header is given besides the host the request is signed for");
    SB_ASSIGN(std::string value, trim_all(r, h.name, h.value));
    headers.emplace_back(std::move(name), std::move(value));
  }
  // Stable: the values of a repeated name keep the order they were given in.
  std::stable_sort(headers.begin(), headers.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });

  CanonicalRequest out;
  std::string lines;
  for (size_t i = 0; i < headers.size(); ++i) {
    bool repeat = i > 0 && headers[i].first == headers[i - 1].first;
    if (repeat) {
      lines.push_back(',');
    } else {
      if (i > 0) lines.push_back('\n');
      if (!out.signed_headers.empty()) out.signed_headers.push_back(';');
      out.signed_headers += headers[i].first;
      lines += headers[i].first;
      lines.push_back(':');
    }
    lines += headers[i].second;
  }
  out.text = r.method + '\n' + r.path + '\n' + canonical_query(r.query) + '\n' + lines + "\n\n" +
             out.signed_headers + '\n' + r.payload_hash;
  return out;
}

std::string credential_scope(std::string_view day, std::string_view region,
                             std::string_view service) {
  std::string s;
  for (std::string_view part : {day, region, service}) {
    s += part;
    s.push_back('/');
  }
  return s + std::string(kTerminator);
}

Result<std::string> string_to_sign(std::string_view amz_date, std::string_view scope,
                                   std::string_view canonical_request) {
  SB_ASSIGN(std::string hash, sha256_hex(canonical_request));
  std::string s(kAlgorithm);
  for (std::string_view part : {amz_date, scope, std::string_view(hash)}) {
    s.push_back('\n');
    s += part;
  }
  return s;
}

Result<Sha256> signing_key(std::string_view secret_key, std::string_view day,
                           std::string_view region, std::string_view service) {
  std::string first = "AWS4" + std::string(secret_key);
  auto key = hmac_sha256(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(first.data()), first.size()), day);
  // The secret's copy is not left in freed memory (a cleanse the compiler cannot drop).
  OPENSSL_cleanse(first.data(), first.size());
  for (std::string_view part : {region, service, kTerminator}) {
    if (!key) return key.error();
    key = hmac_sha256(*key, part);
  }
  return key;
}

Result<std::string> signature(const Sha256& key, std::string_view string_to_sign) {
  SB_ASSIGN(Sha256 mac, hmac_sha256(key, string_to_sign));
  return to_hex(mac);
}

std::string authorization(std::string_view access_key, std::string_view scope,
                          std::string_view signed_headers, std::string_view signature) {
  return std::string(kAlgorithm) + " Credential=" + std::string(access_key) + "/" +
         std::string(scope) + ", SignedHeaders=" + std::string(signed_headers) +
         ", Signature=" + std::string(signature);
}

Result<SignedRequest> sign(const Request& r, const Credentials& creds, const SigningParams& p,
                           TimePoint when) {
  SB_TRY(check_signing_inputs(r, creds, p));
  const std::string date = amz_date(when);
  const std::string day = date.substr(0, 8);

  SignedRequest out;
  out.headers.push_back({"x-amz-date", date});
  if (p.content_hash == ContentHashHeader::send)
    out.headers.push_back({"x-amz-content-sha256", r.payload_hash});
  if (!creds.session_token.empty())
    out.headers.push_back({"x-amz-security-token", creds.session_token});

  Request all = r;
  all.headers.insert(all.headers.end(), out.headers.begin(), out.headers.end());
  SB_ASSIGN(CanonicalRequest creq, canonical_request(all));
  const std::string scope = credential_scope(day, p.region, p.service);
  SB_ASSIGN(out.string_to_sign, string_to_sign(date, scope, creq.text));
  SB_ASSIGN(Sha256 key, signing_key(creds.secret_key, day, p.region, p.service));
  SB_ASSIGN(std::string sig, signature(key, out.string_to_sign));
  out.headers.push_back(
      {"Authorization", authorization(creds.access_key, scope, creq.signed_headers, sig)});
  out.canonical_request = std::move(creq.text);
  redact_token(out.canonical_request);
  return out;
}

}  // namespace stripeback::s3
