// Shared by the fuzz targets (docs/reliability.md). Every target defines
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// and is linked either with libFuzzer (build/fuzz) or with replay_main.cc, which feeds it
// the files of its committed corpus under ctest. An invariant that does not hold aborts:
// libFuzzer saves the input as a crash, the replay test fails with the message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>
#include <vector>

#define FUZZ_CHECK(cond)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

namespace stripeback::fuzz {

// The input as a byte span, with the first byte split off: most targets read it as a mode
// (which decoder, whether to repair checksums before decoding).
struct Input {
  uint8_t mode = 0;
  std::span<const uint8_t> rest;
};
inline Input split_mode(const uint8_t* data, size_t size) {
  if (size == 0) return {};
  return {data[0], {data + 1, size - 1}};
}

// A heap copy of exactly `bytes`, so that AddressSanitizer sees a read one past the end.
inline std::vector<uint8_t> exact_copy(std::span<const uint8_t> bytes) {
  return {bytes.begin(), bytes.end()};
}

// `bytes` copied into a zero-filled buffer of `size` bytes (truncated if longer).
inline std::vector<uint8_t> padded(std::span<const uint8_t> bytes, size_t size) {
  std::vector<uint8_t> out(size, 0);
  for (size_t i = 0; i < bytes.size() && i < size; ++i) out[i] = bytes[i];
  return out;
}

inline std::span<const std::byte> as_bytes(const std::vector<uint8_t>& v) {
  return std::as_bytes(std::span<const uint8_t>(v));
}

}  // namespace stripeback::fuzz
