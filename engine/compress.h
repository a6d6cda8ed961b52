// Per-frame zstd compression. Each frame is compressed on its own, so any frame can be
// decoded alone: restore of one file and random access work with compression on.
// A frame is stored compressed only when that saves at least 1/16 of it; otherwise it is
// stored raw at almost no cost (incompressible data does not grow).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "stripeback/result.h"

namespace stripeback::engine {

// --compress: none, low, medium, high or zstd:N (N from 1 to 19). Returns the zstd level,
// 0 for none. low/medium/high are levels 1, 3 and 9 (docs/compression.md says why).
Result<int> parse_compress(const std::string& text);

class Compressor {
 public:
  explicit Compressor(int level);
  ~Compressor();
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;
  static size_t bound(size_t n);
  int level() const { return level_; }
  // Compresses `n` bytes into `out` (capacity `cap`, at least bound(n)). Returns the
  // compressed size, or 0 when compressing does not save enough (store the frame raw).
  size_t compress(const std::byte* in, size_t n, std::byte* out, size_t cap);

 private:
  int level_;
  void* cctx_;
};

class Decompressor {
 public:
  Decompressor();
  ~Decompressor();
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;
  // Decodes one frame's payload; it must expand to exactly `raw_len` bytes.
  Result<void> decompress(const std::byte* in, size_t n, std::byte* out, size_t raw_len);

 private:
  void* dctx_;
};

}  // namespace stripeback::engine
