// The strong hash of raw block bytes: XXH3-128 (128-bit, non-cryptographic, collision
// resistant for accidental damage; tamper evidence is the job of the cipher's tag).
// File digests combine the per-frame digests in file-offset order, so sections of one file
// hashed on different channels still give one well-defined file digest.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace stripeback::util {

using Digest = std::array<uint8_t, 16>;

Digest digest(const void* data, size_t len);
// Digest of `len` zero bytes (cached for the common lengths).
Digest zero_digest(size_t len);
std::string to_hex(const Digest& d);

// Streaming combination of per-block digests into a file digest.
class DigestCombiner {
 public:
  DigestCombiner();
  ~DigestCombiner();
  DigestCombiner(const DigestCombiner&) = delete;
  DigestCombiner& operator=(const DigestCombiner&) = delete;
  // Blocks must be added in increasing file offset order.
  void add(uint64_t offset, uint32_t length, const Digest& block);
  Digest finish();

 private:
  void* state_;
};

}  // namespace stripeback::util
