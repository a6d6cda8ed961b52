// The catalog log (catalog/record_log.h): check_file_header on the first bytes, then
// scan_records over the input as the records after the file header, then Model::apply on
// every frame found. Mode bit 0: give every record-looking span a valid CRC32C first, so
// the fuzzer builds valid frames around payloads of its own; bits 1..7: the sequence of
// the last record already read.
// Invariants: valid frames and skipped regions tile the scanned bytes up to `end`, the rest
// is the torn tail; sequences increase; every frame re-encodes to its bytes; scanning the
// frames alone finds them again without damage; scanning in two parts split at a frame
// boundary (as refresh() does) finds the same; the model holds its invariants.
#include <algorithm>
#include <cstring>

#include "catalog/model.h"
#include "catalog/record_log.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/model_check.h"
#include "util/bytes.h"

using namespace stripeback;
using namespace stripeback::catalog;

namespace {

void reseal(std::vector<uint8_t>& b) {
  size_t i = 0;
  while (i + kFrameHeaderSize <= b.size()) {
    uint8_t* p = b.data() + i;
    uint32_t length = util::get_le32(p + 4);
    if (util::get_le32(p) != kRecordMagic || length > kMaxPayload ||
        b.size() - i - kFrameHeaderSize < length) {
      ++i;
      continue;
    }
    std::span<const uint8_t> covered(p + 12, kFrameHeaderSize - 12 + length);
    util::put_le32(p + 8, frame_crc(length, covered));
    i += kFrameHeaderSize + length;
  }
}

bool same(const Frame& a, const Frame& b) {
  return a.offset == b.offset && a.size == b.size && a.sequence == b.sequence &&
         a.type == b.type && a.flags == b.flags && a.payload.data() == b.payload.data() &&
         a.payload.size() == b.payload.size();
}

void check_scan(const ScanResult& r, const std::vector<uint8_t>& bytes, uint64_t base,
                uint64_t last_sequence) {
  const uint64_t limit = base + bytes.size();
  FUZZ_CHECK(r.end >= base && r.end <= limit);
  if (r.torn_tail) {
    FUZZ_CHECK(r.torn_tail->offset == r.end && r.end + r.torn_tail->length == limit);
    FUZZ_CHECK(r.torn_tail->length > 0);
  } else {
    FUZZ_CHECK(r.end == limit);
  }
  uint64_t seq = last_sequence;
  std::vector<std::pair<uint64_t, uint64_t>> tiles;
  for (const Frame& f : r.frames) {
    FUZZ_CHECK(f.sequence > seq);
    seq = f.sequence;
    FUZZ_CHECK(f.size == kFrameHeaderSize + f.payload.size() + f.seal.size());
    FUZZ_CHECK(f.seal.empty() || (f.seal.size() == kSealSize && (f.flags & kFlagSealed) &&
                                  f.seal.data() == f.payload.data() + f.payload.size()));
    FUZZ_CHECK(f.offset >= base && f.offset + f.size <= r.end);
    FUZZ_CHECK(f.payload.data() == bytes.data() + (f.offset - base) + kFrameHeaderSize);
    tiles.emplace_back(f.offset, f.size);
    // append_frame writes flags 0, or kFlagSealed with a seal: such a frame is reproduced
    // exactly.
    if (f.flags == (f.seal.empty() ? 0 : kFlagSealed)) {
      std::vector<uint8_t> e;
      append_frame(e, f.sequence, static_cast<RecordType>(f.type), f.payload, f.seal);
      FUZZ_CHECK(e.size() == f.size);
      FUZZ_CHECK(std::memcmp(e.data(), bytes.data() + (f.offset - base), e.size()) == 0);
    }
  }
  FUZZ_CHECK(r.last_sequence == seq);
  uint64_t prev_warning = base;
  for (const LoadWarning& w : r.warnings) {
    FUZZ_CHECK(!w.what.empty());
    FUZZ_CHECK(w.offset >= prev_warning && w.offset + w.length <= r.end);
    prev_warning = w.offset;
    if (w.length > 0) tiles.emplace_back(w.offset, w.length);
  }
  std::sort(tiles.begin(), tiles.end());
  uint64_t at = base;
  for (const auto& [offset, length] : tiles) {
    FUZZ_CHECK(offset == at);
    at += length;
  }
  FUZZ_CHECK(at == r.end);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::split_mode(data, size);
  auto bytes = fuzz::exact_copy(in.rest);
  auto header = check_file_header(bytes, "fuzz/catalog.log");
  if (header) {
    auto want = encode_file_header(*header);
    FUZZ_CHECK(std::memcmp(bytes.data(), want.data(), want.size()) == 0);
  }
  if (bytes.size() < kFileHeaderSize && is_header_prefix(bytes)) {
    auto want = encode_file_header();
    FUZZ_CHECK(std::equal(bytes.begin(), bytes.end(), want.begin()));
  }

  if (in.mode & 1) reseal(bytes);
  const uint64_t base = kFileHeaderSize;
  const uint64_t last = in.mode >> 1;
  ScanResult r = scan_records(bytes, base, last);
  check_scan(r, bytes, base, last);

  // The frames alone, re-encoded back to back, scan clean.
  std::vector<uint8_t> clean;
  for (const Frame& f : r.frames)
    append_frame(clean, f.sequence, static_cast<RecordType>(f.type), f.payload, f.seal);
  ScanResult c = scan_records(clean, base, last);
  FUZZ_CHECK(c.frames.size() == r.frames.size() && !c.torn_tail);
  for (const LoadWarning& w : c.warnings) FUZZ_CHECK(w.length == 0);

  // Two scans split after the middle frame find what one scan finds.
  if (!r.frames.empty()) {
    const Frame& mid = r.frames[r.frames.size() / 2];
    size_t split = mid.offset + mid.size - base;
    std::span<const uint8_t> all(bytes);
    ScanResult a = scan_records(all.first(split), base, last);
    ScanResult b = scan_records(all.subspan(split), base + split, a.last_sequence);
    FUZZ_CHECK(!a.torn_tail && a.end == base + split);
    FUZZ_CHECK(a.frames.size() + b.frames.size() == r.frames.size());
    FUZZ_CHECK(a.warnings.size() + b.warnings.size() == r.warnings.size());
    for (size_t i = 0; i < r.frames.size(); ++i) {
      const Frame& f = i < a.frames.size() ? a.frames[i] : b.frames[i - a.frames.size()];
      FUZZ_CHECK(same(f, r.frames[i]));
    }
    FUZZ_CHECK(b.end == r.end && b.torn_tail.has_value() == r.torn_tail.has_value());
  }

  Model m;
  for (const Frame& f : r.frames) m.apply(f);
  fuzz::check_model(m, r.frames.size());
  return 0;
}
