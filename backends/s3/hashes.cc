#include "backends/s3/hashes.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <climits>

#include "util/crc32c.h"

namespace stripeback::s3 {
namespace {

// OpenSSL's reason for the last failure, for the message; clears its error queue.
std::string openssl_reason() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no reason given";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

Result<std::array<uint8_t, EVP_MAX_MD_SIZE>> one_shot_digest(const char* name, const EVP_MD* md,
                                                             std::span<const std::byte> data,
                                                             unsigned int want) {
  std::array<uint8_t, EVP_MAX_MD_SIZE> out{};
  unsigned int len = 0;
  if (md == nullptr || EVP_Digest(data.data(), data.size(), out.data(), &len, md, nullptr) != 1)
    return fail(Errc::unsupported,
                std::string("unable to compute ") + name + " with OpenSSL: " + openssl_reason());
  if (len != want)
    return fail(Errc::io, std::string("OpenSSL gave a ") + std::to_string(len) + "-byte " + name +
                              " digest, not " + std::to_string(want) + " bytes");
  return out;
}

std::span<const std::byte> bytes_of(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

}  // namespace

std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

std::string base64(std::span<const uint8_t> bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = uint32_t(bytes[i]) << 16 | uint32_t(bytes[i + 1]) << 8 | bytes[i + 2];
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kAlphabet[(v >> shift) & 0x3f]);
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t(bytes[i]) << 16 | (rest == 2 ? uint32_t(bytes[i + 1]) << 8 : 0);
    out.push_back(kAlphabet[(v >> 18) & 0x3f]);
    out.push_back(kAlphabet[(v >> 12) & 0x3f]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 0x3f] : '=');
    out.push_back('=');
  }
  return out;
}

Result<Sha256> sha256(std::span<const std::byte> data) {
  SB_ASSIGN(auto full, one_shot_digest("SHA-256", EVP_sha256(), data, 32));
  Sha256 out;
  std::copy_n(full.begin(), out.size(), out.begin());
  return out;
}

Result<std::string> sha256_hex(std::span<const std::byte> data) {
  SB_ASSIGN(Sha256 d, sha256(data));
  return to_hex(d);
}

Result<std::string> sha256_hex(std::string_view data) { return sha256_hex(bytes_of(data)); }

Result<Sha256> hmac_sha256(std::span<const uint8_t> key, std::string_view data) {
  // The HMAC() one-shot is not deprecated in OpenSSL 3 (its HMAC_CTX functions are); the keys
  // here are a secret plus a prefix or a 32-byte MAC, far below INT_MAX.
  if (key.size() > INT_MAX) return fail(Errc::invalid_argument, "HMAC key is too long");
  Sha256 out{};
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(),
           &len) == nullptr ||
      len != out.size())
    return fail(Errc::unsupported,
                "unable to compute HMAC-SHA256 with OpenSSL: " + openssl_reason());
  return out;
}

Result<std::string> md5_base64(std::span<const std::byte> data) {
  SB_ASSIGN(auto full, one_shot_digest("MD5", EVP_md5(), data, 16));
  return base64(std::span<const uint8_t>(full.data(), 16));
}

Result<std::string> md5_base64(std::string_view data) { return md5_base64(bytes_of(data)); }

std::string crc32c_base64(uint32_t crc) {
  const uint8_t be[4] = {uint8_t(crc >> 24), uint8_t(crc >> 16), uint8_t(crc >> 8), uint8_t(crc)};
  return base64(be);
}

std::string crc32c_base64(std::span<const std::byte> data) {
  return crc32c_base64(util::crc32c(data.data(), data.size()));
}

}  // namespace stripeback::s3
