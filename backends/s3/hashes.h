// The digests and encodings S3 requests carry: SHA-256 and HMAC-SHA256 for signing (sigv4.h),
// Content-MD5, x-amz-checksum-crc32c, and their hex and base64 spellings.
//
// Pure functions over caller-owned bytes, safe from any thread. The OpenSSL calls fail only
// when the library cannot give the algorithm (MD5 under a FIPS-only provider) or is out of
// memory; that comes back as an Error (unsupported, io), never as a wrong digest.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "stripeback/result.h"

namespace stripeback::s3 {

using Sha256 = std::array<uint8_t, 32>;

// Lower-case hex, two digits a byte.
std::string to_hex(std::span<const uint8_t> bytes);
// Standard base64 (RFC 4648 section 4) with '=' padding.
std::string base64(std::span<const uint8_t> bytes);

Result<Sha256> sha256(std::span<const std::byte> data);
// The hex SHA-256 of `data`: a payload hash for x-amz-content-sha256, the hash of a canonical
// request.
Result<std::string> sha256_hex(std::string_view data);
Result<std::string> sha256_hex(std::span<const std::byte> data);

Result<Sha256> hmac_sha256(std::span<const uint8_t> key, std::string_view data);

// Content-MD5: the base64 of the body's MD5.
Result<std::string> md5_base64(std::span<const std::byte> data);
Result<std::string> md5_base64(std::string_view data);

// x-amz-checksum-crc32c: the base64 of the 4 big-endian bytes of a CRC32C (util/crc32c.h),
// from a checksum computed elsewhere (a stream hashed as it is sent) or over `data`.
std::string crc32c_base64(uint32_t crc);
std::string crc32c_base64(std::span<const std::byte> data);

}  // namespace stripeback::s3
