#include "util/digest.h"

#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif

#include <map>
#include <mutex>
#include <vector>

#include "util/bytes.h"

namespace stripeback::util {

Digest digest(const void* data, size_t len) {
#if defined(__x86_64__)
  // The dispatching entry point picks AVX2/AVX-512 at run time (about 4x the baseline).
  XXH128_hash_t h = XXH3_128bits_dispatch(data, len);
#else
  XXH128_hash_t h = XXH3_128bits(data, len);
#endif
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  Digest d;
  static_assert(sizeof(c.digest) == 16);
  for (size_t i = 0; i < 16; ++i) d[i] = c.digest[i];
  return d;
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
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<XXH3_state_t*>(state_));
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  Digest d;
  for (size_t i = 0; i < 16; ++i) d[i] = c.digest[i];
  return d;
}

}  // namespace stripeback::util
