// Tape volume labels (tape/label.h): decode_label on any bytes. Mode bit 0: make the CRC32C
// at bytes 60..63 valid first.
// Invariants: inputs shorter than the 64 label bytes are refused; a decoded label
// re-encodes to the input's 64 bytes, with only what the decoder does not read normalised
// (bytes used 10..11, label block size 56..59, volume id bytes after its first NUL), and
// decodes again to the same label.
#include <algorithm>
#include <cstring>

#include "backends/tape/label.h"
#include "tests/fuzz/fuzz_check.h"
#include "util/bytes.h"
#include "util/crc32c.h"

using namespace stripeback;
using namespace stripeback::tape;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kUsed = 64;
  auto in = fuzz::split_mode(data, size);
  auto exact = fuzz::exact_copy(in.rest);
  if (exact.size() < kUsed) {
    auto d = decode_label(exact);
    FUZZ_CHECK(!d && d.error().code == Errc::corrupt);
  }
  auto block = fuzz::padded(in.rest, std::max<size_t>(in.rest.size(), kUsed));
  if (in.mode & 1) util::put_le32(block.data() + 60, util::crc32c(block.data(), 60));
  auto l = decode_label(block);
  if (!l) {
    FUZZ_CHECK(l.error().code == Errc::corrupt || l.error().code == Errc::unsupported);
    return 0;
  }
  FUZZ_CHECK(l->version == 1 && l->volume_id.size() <= kMaxVolumeId);
  FUZZ_CHECK(l->volume_id.find('\0') == std::string::npos);
  auto e = encode_label(*l);
  std::vector<uint8_t> want(block.data(), block.data() + kUsed);
  util::put_le16(want.data() + 10, static_cast<uint16_t>(kUsed));
  std::memset(want.data() + 16 + l->volume_id.size(), 0, kMaxVolumeId - l->volume_id.size());
  util::put_le32(want.data() + 56, kLabelBlock);
  util::put_le32(want.data() + 60, util::crc32c(want.data(), 60));
  FUZZ_CHECK(std::memcmp(want.data(), e.data(), kUsed) == 0);
  for (size_t i = kUsed; i < e.size(); ++i) FUZZ_CHECK(e[i] == 0);
  auto l2 = decode_label(e);
  FUZZ_CHECK(l2 && l2->volume_id == l->volume_id && l2->block_size == l->block_size &&
             l2->created_ns == l->created_ns);
  return 0;
}
