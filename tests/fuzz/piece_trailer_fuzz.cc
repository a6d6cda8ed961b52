// Trailer and file record payloads (engine/format/piece_format.h): decode_trailer (mode bit 0
// clear) or decode_file_meta (set) on any bytes.
// Invariants: the decoder reads a prefix of its input and the encoder writes that prefix
// back byte for byte; a trailer has an extent list per file; re-decoding the encoding
// gives the same encoding.
#include <cstring>

#include "engine/format/piece_format.h"
#include "tests/fuzz/fuzz_check.h"

using namespace stripeback;
using namespace stripeback::engine;

namespace {

void check_prefix(const std::vector<uint8_t>& encoded, const std::vector<uint8_t>& input) {
  FUZZ_CHECK(encoded.size() <= input.size());
  FUZZ_CHECK(std::memcmp(encoded.data(), input.data(), encoded.size()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::split_mode(data, size);
  auto payload = fuzz::exact_copy(in.rest);
  if (in.mode & 1) {
    auto m = decode_file_meta(payload);
    if (!m) return 0;
    auto e = encode_file_meta(*m);
    check_prefix(e, payload);
    auto m2 = decode_file_meta(e);
    FUZZ_CHECK(m2 && encode_file_meta(*m2) == e);
    return 0;
  }
  auto t = decode_trailer(payload);
  if (!t) {
    FUZZ_CHECK(t.error().code == Errc::corrupt);
    return 0;
  }
  FUZZ_CHECK(t->extents.size() == t->files.size());
  auto e = encode_trailer(*t);
  check_prefix(e, payload);
  auto t2 = decode_trailer(e);
  FUZZ_CHECK(t2 && encode_trailer(*t2) == e);
  return 0;
}
