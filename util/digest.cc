#include "util/digest.h"

#if STRIPEBACK_XXHASH_HEADER_ONLY
// xxhash compiled into this file (static builds: Debian's libxxhash.a has no dispatcher);
// the AVX2 variant is digest_avx2.cc, picked at run time below.
#define XXH_INLINE_ALL
// gcc 12 sees xxhash's streaming update, inlined here, as reading outside the 28-byte record
// the combiner hashes (false positives on branches the length rules out).
#pragma GCC diagnostic ignored "-Wstringop-overread"
#pragma GCC diagnostic ignored "-Warray-bounds"
#include <xxhash.h>
#else
#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif
#endif

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "util/bytes.h"

namespace stripeback::util {

#if STRIPEBACK_XXHASH_HEADER_ONLY && defined(__x86_64__)
XXH128_hash_t xxh3_128_avx2(const void* data, size_t len);  // digest_avx2.cc
#endif

namespace {

Digest canonical(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  Digest d;
  static_assert(sizeof(c.digest) == 16);
  for (size_t i = 0; i < 16; ++i) d[i] = c.digest[i];
  return d;
}

}  // namespace

Digest digest(const void* data, size_t len) {
#if STRIPEBACK_XXHASH_HEADER_ONLY && defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  XXH128_hash_t h = avx2 ? xxh3_128_avx2(data, len) : XXH3_128bits(data, len);
#elif STRIPEBACK_XXHASH_HEADER_ONLY
  XXH128_hash_t h = XXH3_128bits(data, len);
#elif defined(__x86_64__)
  // The dispatching entry point picks AVX2/AVX-512 at run time (about 4x the baseline).
  XXH128_hash_t h = XXH3_128bits_dispatch(data, len);
#else
  XXH128_hash_t h = XXH3_128bits(data, len);
#endif
  return canonical(h);
}

Digest zero_digest(size_t len) {
  static std::mutex mu;
  static std::map<size_t, Digest> cache;
  std::lock_guard lock(mu);
  auto it = cache.find(len);
  if (it != cache.end()) return it->second;
  std::vector<uint8_t> zeros(len, 0);
  Digest d = digest(zeros.data(), zeros.size());
  if (cache.size() < 64) cache.emplace(len, d);
  return d;
}

bool all_zero(const void* data, size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  // A datafile block almost always starts with a non-zero header: its first word decides.
  if (len >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    if (w != 0) return false;
  }
  // A cache line at a time: eight words or'ed together take one branch, and the compiler
  // may use vector loads; memory, not instructions, bounds the rest.
  for (; i + 64 <= len; i += 64) {
    uint64_t w[8];
    std::memcpy(w, p + i, sizeof w);
    if ((w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) != 0) return false;
  }
  for (; i < len; ++i)
    if (p[i] != 0) return false;
  return true;
}

namespace {

// The digest of the `len` bytes at `p`, of which the first `zeros` are known to be zero,
// streamed: those come from a static block (untouched zero pages, always in cache).
Digest digest_after_zeros(const unsigned char* p, size_t zeros, size_t len) {
  static const unsigned char kZeros[kZeroTestChunk] = {};
  XXH3_state_t* st = XXH3_createState();
  if (!st) return digest(p, len);
  XXH3_128bits_reset(st);
  for (size_t done = 0; done < zeros;) {
    const size_t n = std::min(kZeroTestChunk, zeros - done);
    XXH3_128bits_update(st, kZeros, n);
    done += n;
  }
  XXH3_128bits_update(st, p + zeros, len - zeros);
  Digest d = canonical(XXH3_128bits_digest(st));
  XXH3_freeState(st);
  return d;
}

}  // namespace

BlockDigest digest_block(const void* data, size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
  size_t zeros = 0;  // leading bytes in whole chunks found zero
  while (zeros < len) {
    const size_t n = std::min(kZeroTestChunk, len - zeros);
    if (!all_zero(p + zeros, n)) break;
    zeros += n;
  }
  if (zeros == len) return {true, zero_digest(len)};
  // Most blocks: the first chunk has data, and the test stopped at its first non-zero
  // line. The digest reads the block from there on; what it reads twice is in cache.
  if (zeros == 0) return {false, digest(p, len)};
  return {false, digest_after_zeros(p, zeros, len)};
}

std::string to_hex(const Digest& d) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  s.reserve(32);
  for (uint8_t b : d) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

DigestCombiner::DigestCombiner() : state_(XXH3_createState()) {
  XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_));
}

DigestCombiner::~DigestCombiner() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void DigestCombiner::add(uint64_t offset, uint32_t length, const Digest& block) {
  uint8_t rec[12 + 16];
  put_le64(rec, offset);
  put_le32(rec + 8, length);
  for (size_t i = 0; i < 16; ++i) rec[12 + i] = block[i];
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), rec, sizeof rec);
}

Digest DigestCombiner::finish() {
  return canonical(XXH3_128bits_digest(static_cast<XXH3_state_t*>(state_)));
}

}  // namespace stripeback::util
