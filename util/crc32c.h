// CRC32C (Castagnoli), as used by the piece format and the catalog.
// Uses the SSE4.2 instruction when the CPU has it, a table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stripeback::util {

// Extends `crc` (0 for a fresh checksum) over `len` bytes of `data`.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t len);
inline uint32_t crc32c(const void* data, size_t len) { return crc32c_extend(0, data, len); }

}  // namespace stripeback::util
