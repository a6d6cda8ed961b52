// Frame headers (engine/format/piece_format.h): decode_frame_header on any bytes.
// Mode bit 0: make the header CRC32C (bytes 60..63) valid before decoding.
// Invariants: what decodes is consistent (known type and flags, lengths as the format
// requires) and re-encodes to the input's 64 bytes, with only the header length (6..7)
// and the reserved bytes (52..59) normalised; inputs shorter than a header are refused.
#include <algorithm>
#include <array>
#include <cstring>

#include "engine/format/piece_format.h"
#include "tests/fuzz/fuzz_check.h"
#include "util/bytes.h"
#include "util/crc32c.h"

using namespace stripeback;
using namespace stripeback::engine;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::split_mode(data, size);
  auto exact = fuzz::exact_copy(in.rest);
  if (exact.size() < kFrameHeaderSize) {
    auto d = decode_frame_header(fuzz::as_bytes(exact));
    FUZZ_CHECK(!d && d.error().code == Errc::corrupt);
  }
  auto block = fuzz::padded(in.rest, std::max<size_t>(in.rest.size(), kFrameHeaderSize));
  if (in.mode & 1) util::put_le32(block.data() + 60, util::crc32c(block.data(), 60));
  auto h = decode_frame_header(fuzz::as_bytes(block));
  if (!h) {
    FUZZ_CHECK(!h.error().what.empty());
    return 0;
  }
  FUZZ_CHECK(h->type >= FrameType::data && h->type <= FrameType::map);
  if (h->compressed) FUZZ_CHECK(h->type == FrameType::data);
  if (h->sealed) FUZZ_CHECK(h->type != FrameType::zero && h->stored_len >= kTagSize);
  if (h->digest_only) FUZZ_CHECK(h->type == FrameType::data && !h->sealed && h->stored_crc == 0);
  uint32_t payload = h->stored_len - (h->sealed ? kTagSize : 0);
  if (h->type == FrameType::data) {
    if (h->compressed) FUZZ_CHECK(payload < h->raw_len);
    else FUZZ_CHECK(payload == h->raw_len);
  }
  std::array<std::byte, kBlock> e;
  encode_frame_header(*h, e);
  const auto* out = reinterpret_cast<const uint8_t*>(e.data());
  std::vector<uint8_t> want(block.data(), block.data() + kFrameHeaderSize);
  util::put_le16(want.data() + 6, static_cast<uint16_t>(kFrameHeaderSize));
  std::memset(want.data() + 52, 0, 8);
  util::put_le32(want.data() + 60, util::crc32c(want.data(), 60));
  FUZZ_CHECK(std::memcmp(want.data(), out, kFrameHeaderSize) == 0);
  for (size_t i = kFrameHeaderSize; i < kBlock; ++i) FUZZ_CHECK(out[i] == 0);
  auto h2 = decode_frame_header(e);
  FUZZ_CHECK(h2.has_value());
  FUZZ_CHECK(h2->offset == h->offset && h2->raw_digest == h->raw_digest);
  return 0;
}
