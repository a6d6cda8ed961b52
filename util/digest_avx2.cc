// XXH3-128 built for AVX2, for the header-only xxhash build (digest.cc picks it at run time
// where the CPU has AVX2). Compiled with -mavx2; nothing else here may run without it.
#if STRIPEBACK_XXHASH_HEADER_ONLY && defined(__x86_64__)
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstddef>

namespace stripeback::util {

XXH128_hash_t xxh3_128_avx2(const void* data, size_t len) { return XXH3_128bits(data, len); }

}  // namespace stripeback::util
#endif
