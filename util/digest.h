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

// True when each of the `len` bytes is zero.
bool all_zero(const void* data, size_t len);

// A data block as a frame stores it: all zeros (digest = zero_digest(len)), or its digest.
struct BlockDigest {
  bool zero = false;
  Digest digest{};
};
// The zero test and the digest of a block in one pass over memory, for buffers that DMA
// filled and that are not in the CPU's cache: the block is tested for zeros a chunk
// (kZeroTestChunk bytes) at a time, and hashing starts at the chunk where a non-zero byte
// shows, while that chunk is in cache; the leading all-zero chunks are hashed from a zero
// buffer that stays in cache, not read from the block again. The result equals
// {all_zero(data, len), all_zero(data, len) ? zero_digest(len) : digest(data, len)}.
inline constexpr size_t kZeroTestChunk = size_t{64} << 10;
BlockDigest digest_block(const void* data, size_t len);
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
