#include "util/digest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace stripeback::util {
namespace {

std::vector<uint8_t> noise(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  return v;
}

// digest_block must give what the zero test and the digest give apart.
void expect_same_as_apart(const std::vector<uint8_t>& b, const char* what) {
  const BlockDigest got = digest_block(b.data(), b.size());
  const bool zero = all_zero(b.data(), b.size());
  EXPECT_EQ(got.zero, zero) << what << ", " << b.size() << " bytes";
  EXPECT_EQ(got.digest, zero ? zero_digest(b.size()) : digest(b.data(), b.size()))
      << what << ", " << b.size() << " bytes";
}

TEST(DigestBlock, DataBlocksGetTheirDigest) {
  for (size_t n : {size_t{1}, size_t{63}, size_t{4096}, size_t{100000}, size_t{1} << 20})
    expect_same_as_apart(noise(n, 1), "noise");
}

TEST(DigestBlock, ZeroBlocksGetTheZeroDigest) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{65}, kZeroTestChunk, size_t{1} << 20,
                   (size_t{1} << 20) + 4096 + 7}) {
    std::vector<uint8_t> z(n, 0);
    const BlockDigest got = digest_block(z.data(), z.size());
    EXPECT_TRUE(got.zero) << n;
    EXPECT_EQ(got.digest, zero_digest(n)) << n;
  }
}

// Leading zeros in whole chunks are hashed from a zero buffer, not from the block: the
// digest must not change, wherever the first non-zero byte is.
TEST(DigestBlock, LeadingZerosOfAnyLengthGiveTheDigestOfTheWholeBlock) {
  const size_t n = size_t{1} << 20;
  for (size_t first : {size_t{8}, size_t{64}, kZeroTestChunk - 1, kZeroTestChunk,
                       kZeroTestChunk + 1, 3 * kZeroTestChunk + 4096, n - 64, n - 1}) {
    std::vector<uint8_t> b = noise(n, 2);
    std::fill(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(first), 0);
    expect_same_as_apart(b, "zeros then noise");
    std::vector<uint8_t> one(n, 0);
    one[first] = 1;
    expect_same_as_apart(one, "one byte set");
  }
}

TEST(DigestBlock, OddLengthsWithZeroChunksFirst) {
  for (size_t n : {kZeroTestChunk + 1, 2 * kZeroTestChunk + 17, 5 * kZeroTestChunk + 4095}) {
    std::vector<uint8_t> b(n, 0);
    b[n - 1] = 0x80;
    expect_same_as_apart(b, "last byte set");
    b[n - 1] = 0;
    b[n / 2] = 3;
    expect_same_as_apart(b, "middle byte set");
  }
}

TEST(AllZero, EveryByteCounts) {
  std::vector<uint8_t> b(4096 + 13, 0);
  EXPECT_TRUE(all_zero(b.data(), b.size()));
  for (size_t i : {size_t{0}, size_t{7}, size_t{8}, size_t{63}, size_t{64}, size_t{4095},
                   b.size() - 1}) {
    b[i] = 1;
    EXPECT_FALSE(all_zero(b.data(), b.size())) << i;
    EXPECT_TRUE(all_zero(b.data(), i)) << i;
    b[i] = 0;
  }
}

}  // namespace
}  // namespace stripeback::util
