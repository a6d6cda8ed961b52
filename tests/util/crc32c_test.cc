#include "util/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stripeback::util {
namespace {

TEST(Crc32c, KnownVectors) {
  // RFC 3720 B.4 test vectors.
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), inc(32);
  for (size_t i = 0; i < 32; ++i) inc[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8a9136aau);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62a8ab43u);
  EXPECT_EQ(crc32c(inc.data(), inc.size()), 0x46dd794eu);
  const std::string s = "123456789";
  EXPECT_EQ(crc32c(s.data(), s.size()), 0xe3069283u);
}

TEST(Crc32c, ExtendEqualsWhole) {
  std::vector<uint8_t> data(10007);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + 7);
  uint32_t whole = crc32c(data.data(), data.size());
  for (size_t split : {0ul, 1ul, 7ul, 4096ul, 10006ul}) {
    uint32_t c = crc32c_extend(0, data.data(), split);
    c = crc32c_extend(c, data.data() + split, data.size() - split);
    EXPECT_EQ(c, whole) << "split at " << split;
  }
}

// Lengths around the three-stream chunking (3 x 4096) against a bit-at-a-time reference.
TEST(Crc32c, MatchesReferenceAcrossChunkBoundaries) {
  auto reference = [](const uint8_t* p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; ++i) {
      c ^= p[i];
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    }
    return ~c;
  };
  std::vector<uint8_t> data(3 * 4096 * 3 + 77);
  uint32_t x = 12345;
  for (auto& b : data) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
  for (size_t n : {0ul, 12287ul, 12288ul, 12289ul, 24576ul, 30000ul, data.size()}) {
    EXPECT_EQ(crc32c(data.data(), n), reference(data.data(), n)) << "length " << n;
    EXPECT_EQ(crc32c(data.data() + 3, n - (n ? 3 : 0)), reference(data.data() + 3, n - (n ? 3 : 0)))
        << "unaligned, length " << n;
  }
}

}  // namespace
}  // namespace stripeback::util
