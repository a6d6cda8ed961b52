#include "engine/transform/compress.h"

#if STRIPEBACK_WITH_ZSTD
#include <zstd.h>
#endif

#include <cstdlib>
#include <iterator>

#include "engine/wiring/backends.h"
#include "util/option_words.h"

namespace stripeback::engine {

namespace {
Result<int> parse_level(const std::string& text) {
  if (text.empty() || text == "none") return 0;
  if (text == "low") return 1;
  if (text == "medium") return 3;
  if (text == "high") return 9;
  if (text == "auto") return kCompressAuto;
  if (text.rfind("zstd:", 0) == 0) {
    std::string n = text.substr(5);
    char* end = nullptr;
    long v = std::strtol(n.c_str(), &end, 10);
    if (!n.empty() && end && *end == '\0' && v >= 1 && v <= 19) return static_cast<int>(v);
  }
  return fail(Errc::invalid_argument, "invalid value '" + text +
                                          "': expected none, low, medium, high, auto or "
                                          "zstd:N with N from 1 to 19");
}
}  // namespace

Result<int> parse_compress(const std::string& text) {
  SB_ASSIGN(int level, parse_level(text));
#if !STRIPEBACK_WITH_ZSTD
  // A build without libzstd stores every frame raw and decodes no compressed one.
  if (level != 0) return left_out("compression", "STRIPEBACK_WITH_ZSTD", util::option_value_word("compress", text));
#endif
  return level;
}

int AutoLevel::update(double wall_s, double idle_s, double compress_s) {
  if (wall_s <= 0) return level();
  // Relative CPU cost of each ladder step on datafile-like pages (docs/compression.md).
  static constexpr double kCost[] = {0.05, 1.0, 1.3, 1.6, 2.6, 3.6, 5.0};
  constexpr size_t kTop = std::size(kLadder) - 1;
  double idle = idle_s / wall_s, busy = compress_s / wall_s;
  if (budget_ > 0 && busy > budget_) {
    if (step_ > 0) --step_;
  } else if (idle > 0.25 && step_ < kTop) {
    if (budget_ <= 0 || busy * kCost[step_ + 1] / kCost[step_] <= budget_) ++step_;
  } else if (idle < 0.05 && busy > 0.6 && step_ > 0) {
    --step_;
  }
  return level();
}

#if STRIPEBACK_WITH_ZSTD
Compressor::Compressor(int level) : level_(level), cctx_(ZSTD_createCCtx()) {
  ZSTD_CCtx_setParameter(static_cast<ZSTD_CCtx*>(cctx_), ZSTD_c_compressionLevel, level);
  // The frame header carries the sizes and a CRC32C; zstd's own checksum would be a third.
  ZSTD_CCtx_setParameter(static_cast<ZSTD_CCtx*>(cctx_), ZSTD_c_checksumFlag, 0);
}

void Compressor::set_level(int level) {
  level_ = level;
  ZSTD_CCtx_setParameter(static_cast<ZSTD_CCtx*>(cctx_), ZSTD_c_compressionLevel, level);
}

Compressor::~Compressor() { ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(cctx_)); }

size_t Compressor::bound(size_t n) { return ZSTD_compressBound(n); }

size_t Compressor::compress(const std::byte* in, size_t n, std::byte* out, size_t cap) {
  size_t r = ZSTD_compress2(static_cast<ZSTD_CCtx*>(cctx_), out, cap, in, n);
  if (ZSTD_isError(r) || r > n - n / 16) return 0;
  return r;
}

Decompressor::Decompressor() : dctx_(ZSTD_createDCtx()) {}

Decompressor::~Decompressor() { ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(dctx_)); }

Result<void> Decompressor::decompress(const std::byte* in, size_t n, std::byte* out,
                                      size_t raw_len) {
  size_t r = ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(dctx_), out, raw_len, in, n);
  if (ZSTD_isError(r))
    return fail(Errc::corrupt, std::string("compressed data does not decode: ") +
                                   ZSTD_getErrorName(r));
  if (r != raw_len)
    return fail(Errc::corrupt, "compressed data decodes to " + std::to_string(r) +
                                   " bytes instead of " + std::to_string(raw_len));
  return ok();
}

#else
Compressor::Compressor(int level) : level_(level), cctx_(nullptr) {}
void Compressor::set_level(int level) { level_ = level; }
Compressor::~Compressor() = default;
size_t Compressor::bound(size_t n) { return n; }
size_t Compressor::compress(const std::byte*, size_t, std::byte*, size_t) { return 0; }
Decompressor::Decompressor() : dctx_(nullptr) {}
Decompressor::~Decompressor() = default;
Result<void> Decompressor::decompress(const std::byte*, size_t, std::byte*, size_t) {
  return left_out("compression", "STRIPEBACK_WITH_ZSTD", "a compressed frame");
}
#endif

}  // namespace stripeback::engine
