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

// --compress: none, low, medium, high, zstd:N (N from 1 to 19) or auto. Returns the zstd
// level, 0 for none, kCompressAuto for auto. low/medium/high are levels 1, 3 and 9
// (docs/compression.md says why).
inline constexpr int kCompressAuto = -1;
Result<int> parse_compress(const std::string& text);

// --compress auto: the level of one channel, chosen while it runs from what its thread
// does. A window in which the thread often waited for I/O (the devices are the limit)
// moves one step up the ladder: compressing harder costs nothing and writes less. A
// window in which it never waited and spent most of its time compressing (compression is
// the limit) moves one step down. With a CPU budget (fraction of one core for this
// channel's compression) the level also steps down when over it, and never steps up when
// the next level's expected cost would pass it.
class AutoLevel {
 public:
  // Level 0 stores frames raw: where the devices outrun even level 1, compression steps
  // aside entirely.
  static constexpr int kLadder[] = {0, 1, 2, 3, 5, 7, 9};
  explicit AutoLevel(double cpu_budget = 0) : budget_(cpu_budget) {}
  int level() const { return kLadder[step_]; }
  // One window of the channel's life: wall seconds, seconds its thread sat waiting for
  // I/O, CPU seconds spent compressing. Returns the level for the next window.
  int update(double wall_s, double idle_s, double compress_s);

 private:
  double budget_;
  size_t step_ = 1;  // start at level 1, the cheapest that compresses
};

class Compressor {
 public:
  explicit Compressor(int level);
  ~Compressor();
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;
  static size_t bound(size_t n);
  int level() const { return level_; }
  void set_level(int level);
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
