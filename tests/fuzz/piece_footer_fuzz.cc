// Piece footer blocks (engine/format/piece_format.h): decode_footer on any bytes.
// Mode bit 0: make the footer's seal (CRC32C of bytes 0..23 at 24..27) valid first.
// Invariants: a decoded footer re-encodes to the input's first 28 bytes and a zero rest;
// inputs shorter than a block are refused as truncated.
#include <array>
#include <cstring>

#include "engine/format/piece_format.h"
#include "tests/fuzz/fuzz_check.h"
#include "util/bytes.h"
#include "util/crc32c.h"

using namespace stripeback;
using namespace stripeback::engine;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kSealed = 24;
  auto in = fuzz::split_mode(data, size);
  auto exact = fuzz::exact_copy(in.rest);
  if (exact.size() < kBlock) {
    auto d = decode_footer(fuzz::as_bytes(exact));
    FUZZ_CHECK(!d && d.error().code == Errc::corrupt);
  }
  auto block = fuzz::padded(in.rest, kBlock);
  if (in.mode & 1) util::put_le32(block.data() + kSealed, util::crc32c(block.data(), kSealed));
  auto f = decode_footer(fuzz::as_bytes(block));
  if (!f) {
    FUZZ_CHECK(f.error().code == Errc::corrupt);
    return 0;
  }
  std::array<std::byte, kBlock> e;
  encode_footer(*f, e);
  const auto* out = reinterpret_cast<const uint8_t*>(e.data());
  FUZZ_CHECK(std::memcmp(out, block.data(), kSealed + 4) == 0);
  for (size_t i = kSealed + 4; i < kBlock; ++i) FUZZ_CHECK(out[i] == 0);
  auto f2 = decode_footer(e);
  FUZZ_CHECK(f2 && f2->trailer_offset == f->trailer_offset && f2->frames == f->frames &&
             f2->piece_crc == f->piece_crc);
  return 0;
}
