#include "backends/s3/hashes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stripeback::s3 {
namespace {

std::span<const uint8_t> u8(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
std::span<const std::byte> bytes(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

TEST(S3Hashes, Base64MatchesRfc4648) {
  EXPECT_EQ(base64(u8("")), "");
  EXPECT_EQ(base64(u8("f")), "Zg==");
  EXPECT_EQ(base64(u8("fo")), "Zm8=");
  EXPECT_EQ(base64(u8("foo")), "Zm9v");
  EXPECT_EQ(base64(u8("foob")), "Zm9vYg==");
  EXPECT_EQ(base64(u8("fooba")), "Zm9vYmE=");
  EXPECT_EQ(base64(u8("foobar")), "Zm9vYmFy");
  const uint8_t high[] = {0xfb, 0xff, 0xbf};
  EXPECT_EQ(base64(high), "+/+/");
}

TEST(S3Hashes, HexIsLowerCase) {
  const uint8_t b[] = {0x00, 0x0f, 0xa5, 0xff};
  EXPECT_EQ(to_hex(b), "000fa5ff");
}

TEST(S3Hashes, Sha256OfKnownInputs) {
  EXPECT_EQ(*sha256_hex(std::string_view()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(*sha256_hex(std::string_view("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(*sha256_hex(bytes("abc")), *sha256_hex(std::string_view("abc")));
}

TEST(S3Hashes, HmacSha256MatchesRfc4231) {
  std::vector<uint8_t> key(20, 0x0b);  // test case 1
  EXPECT_EQ(to_hex(*hmac_sha256(key, "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(to_hex(*hmac_sha256(u8("Jefe"), "what do ya want for nothing?")),  // test case 2
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(S3Hashes, ContentMd5IsTheBase64OfTheDigest) {
  EXPECT_EQ(*md5_base64(std::string_view()), "1B2M2Y8AsgTpgAmY7PhCfg==");
  EXPECT_EQ(*md5_base64(std::string_view("Welcome to Amazon S3.")), "1EfQ6PKJ8WoS/2AnznfCWA==");
}

TEST(S3Hashes, Crc32cChecksumIsBigEndianBase64) {
  // CRC32C("123456789") = 0xE3069283, sent as the bytes e3 06 92 83.
  EXPECT_EQ(crc32c_base64(bytes("123456789")), "4waSgw==");
  EXPECT_EQ(crc32c_base64(0xE3069283u), "4waSgw==");
  EXPECT_EQ(crc32c_base64(bytes("")), "AAAAAA==");
}

}  // namespace
}  // namespace stripeback::s3
