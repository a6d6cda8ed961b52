// Piece header blocks (engine/format/piece_format.h): decode_piece_header on any bytes.
// Mode bit 0: make the seal (CRC32C after the body) valid before decoding, so the fuzzer
// reaches the field checks behind it.
// Invariants: a decoded header re-encodes to a block that decodes to a header that encodes
// to the same bytes; what decodes has the block size, codec, cipher and hash a reader
// accepts; any prefix shorter than a block is refused as truncated.
#include <array>
#include <cstring>

#include "engine/format/piece_format.h"
#include "tests/fuzz/fuzz_check.h"
#include "util/bytes.h"
#include "util/crc32c.h"

using namespace stripeback;
using namespace stripeback::engine;

namespace {

std::array<std::byte, kBlock> encode(const PieceHeader& h) {
  std::array<std::byte, kBlock> b;
  encode_piece_header(h, b);
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::split_mode(data, size);
  auto exact = fuzz::exact_copy(in.rest);
  if (exact.size() < kBlock) {
    auto d = decode_piece_header(fuzz::as_bytes(exact));
    FUZZ_CHECK(!d && d.error().code == Errc::corrupt);
  }
  auto block = fuzz::padded(in.rest, kBlock);
  if (in.mode & 1) {
    size_t len = util::get_le16(block.data() + 10);
    if (len >= 12 && len + 4 <= kBlock)
      util::put_le32(block.data() + len, util::crc32c(block.data(), len));
  }
  auto h = decode_piece_header(fuzz::as_bytes(block));
  if (!h) {
    FUZZ_CHECK(!h.error().what.empty());
    return 0;
  }
  FUZZ_CHECK(h->version >= kOldestPieceVersion && h->version <= kNewestPieceVersion);
  FUZZ_CHECK(h->block == kBlock);
  FUZZ_CHECK(h->version >= 2 || h->catalog_id == 0);
  FUZZ_CHECK(h->codec <= Codec::zstd && h->cipher <= Cipher::aes256gcm);
  FUZZ_CHECK(h->hash == HashAlg::xxh3_128);
  FUZZ_CHECK(h->name.size() <= 1024);
  auto e1 = encode(*h);
  auto h2 = decode_piece_header(e1);
  FUZZ_CHECK(h2.has_value());
  FUZZ_CHECK(h2->name == h->name && h2->backup_id == h->backup_id);
  FUZZ_CHECK(h2->version == h->version && h2->catalog_id == h->catalog_id);
  auto e2 = encode(*h2);
  FUZZ_CHECK(std::memcmp(e1.data(), e2.data(), kBlock) == 0);
  // The encoder writes exactly the fields the decoder reads, so the input's body up to the
  // end of the fields read is reproduced byte for byte, apart from the reserved byte 39.
  const auto* out = reinterpret_cast<const uint8_t*>(e1.data());
  size_t used = util::get_le16(out + 10);
  std::vector<uint8_t> want(block.data(), block.data() + used);
  want[39] = 0;
  util::put_le16(want.data() + 10, static_cast<uint16_t>(used));
  FUZZ_CHECK(std::memcmp(want.data(), out, used) == 0);
  return 0;
}
