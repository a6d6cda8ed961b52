#include "catalog/record_log.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "util/bytes.h"
#include "util/crc32c.h"

namespace stripeback::catalog {
namespace {

// Offsets of the frame header fields.
constexpr size_t kMagicAt = 0, kLengthAt = 4, kCrcAt = 8, kSequenceAt = 12, kTypeAt = 20,
                 kFlagsAt = 22;
constexpr size_t kVersionAt = kFileMagic.size();
constexpr size_t kHeaderCrcAt = kVersionAt + 2;
static_assert(kHeaderCrcAt + 4 == kFileHeaderSize);
static_assert(kFlagsAt + 2 == kFrameHeaderSize);

enum class Defect { none, short_header, bad_magic, too_long, short_payload, bad_crc };

// Examines the bytes at `pos` as a frame, cheapest checks first (magic, then length bound,
// then crc) because resynchronisation calls this at every offset of a damaged region.
Defect probe(std::span<const uint8_t> bytes, size_t pos, Frame* out) {
  size_t avail = bytes.size() - pos;
  const uint8_t* p = bytes.data() + pos;
  if (avail < 4) return Defect::short_header;
  if (util::get_le32(p + kMagicAt) != kRecordMagic) return Defect::bad_magic;
  if (avail < kFrameHeaderSize) return Defect::short_header;
  uint32_t length = util::get_le32(p + kLengthAt);
  if (length > kMaxPayload) return Defect::too_long;
  if (avail - kFrameHeaderSize < length) return Defect::short_payload;
  std::span<const uint8_t> covered(p + kSequenceAt, kFrameHeaderSize - kSequenceAt + length);
  if (frame_crc(length, covered) != util::get_le32(p + kCrcAt)) return Defect::bad_crc;
  if (out) {
    out->size = kFrameHeaderSize + length;
    out->sequence = util::get_le64(p + kSequenceAt);
    out->type = util::get_le16(p + kTypeAt);
    out->flags = util::get_le16(p + kFlagsAt);
    out->payload = std::span<const uint8_t>(p + kFrameHeaderSize, length);
    out->seal = {};
    if ((out->flags & kFlagSealed) && length >= kSealSize) {
      out->seal = out->payload.last(kSealSize);
      out->payload = out->payload.first(length - kSealSize);
    }
  }
  return Defect::none;
}

std::string describe(Defect d, std::span<const uint8_t> bytes, size_t pos) {
  size_t avail = bytes.size() - pos;
  const uint8_t* p = bytes.data() + pos;
  switch (d) {
    case Defect::none:
      return "valid";
    case Defect::short_header:
      return "incomplete record header, " + std::to_string(avail) + " of " +
             std::to_string(kFrameHeaderSize) + " bytes";
    case Defect::bad_magic: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "bad magic 0x%08x", util::get_le32(p + kMagicAt));
      return buf;
    }
    case Defect::too_long:
      return "length " + std::to_string(util::get_le32(p + kLengthAt)) + " exceeds the limit of " +
             std::to_string(kMaxPayload);
    case Defect::short_payload:
      return "incomplete record, " + std::to_string(avail) + " of " +
             std::to_string(kFrameHeaderSize + util::get_le32(p + kLengthAt)) + " bytes";
    case Defect::bad_crc:
      return "crc mismatch";
  }
  return "unknown defect";
}

// The first offset at or after `from` where a valid frame with a sequence greater than
// `last_sequence` starts, or bytes.size() if there is none.
size_t resync(std::span<const uint8_t> bytes, size_t from, uint64_t last_sequence) {
  uint8_t magic[4];
  util::put_le32(magic, kRecordMagic);
  for (size_t pos = from; pos + kFrameHeaderSize <= bytes.size(); ++pos) {
    if (std::memcmp(bytes.data() + pos, magic, 4) != 0) continue;
    Frame f;
    if (probe(bytes, pos, &f) == Defect::none && f.sequence > last_sequence) return pos;
  }
  return bytes.size();
}

}  // namespace

const char* record_type_name(uint16_t type) {
  switch (static_cast<RecordType>(type)) {
    case RecordType::backup_begin:
      return "backup begin";
    case RecordType::piece:
      return "piece";
    case RecordType::files:
      return "files";
    case RecordType::backup_end:
      return "backup end";
    case RecordType::page_check:
      return "page check";
    case RecordType::frame_check:
      return "frame check";
    case RecordType::setting:
      return "setting";
    case RecordType::crosscheck:
      return "crosscheck";
    case RecordType::deletion:
      return "deletion";
    case RecordType::resume:
      return "resume";
    case RecordType::job:
      return "job";
    case RecordType::lock:
      return "lock";
    case RecordType::hot:
      return "hot";
    case RecordType::wal:
      return "wal";
    case RecordType::keep:
      return "keep";
    case RecordType::key_wrap:
      return "key wrap";
    case RecordType::rekey:
      return "rekey";
    case RecordType::file_profile:
      return "file profile";
    case RecordType::seal:
      return "seal";
  }
  return "unknown";
}

std::vector<uint8_t> encode_file_header(uint16_t version) {
  std::vector<uint8_t> h(kFileHeaderSize, 0);
  std::memcpy(h.data(), kFileMagic.data(), kFileMagic.size());
  util::put_le16(h.data() + kVersionAt, version);
  util::put_le32(h.data() + kHeaderCrcAt, util::crc32c(h.data(), kHeaderCrcAt));
  return h;
}

bool is_header_prefix(std::span<const uint8_t> bytes) {
  std::vector<uint8_t> h = encode_file_header();  // a new log is never sealed yet
  // Not memcmp: an empty span's data() may be null, which memcmp must not get.
  return bytes.size() <= h.size() && std::equal(bytes.begin(), bytes.end(), h.begin());
}

Result<uint16_t> check_file_header(std::span<const uint8_t> bytes, const std::string& path) {
  if (bytes.size() < kFileHeaderSize ||
      std::memcmp(bytes.data(), kFileMagic.data(), kFileMagic.size()) != 0) {
    return fail(Errc::corrupt, "'" + path + "' is not a stripeback catalog (bad file header)");
  }
  if (util::get_le32(bytes.data() + kHeaderCrcAt) != util::crc32c(bytes.data(), kHeaderCrcAt)) {
    return fail(Errc::corrupt, "catalog file header of '" + path + "' is damaged (crc mismatch)");
  }
  uint16_t version = util::get_le16(bytes.data() + kVersionAt);
  if (version != kFormatVersion && version != kSealedFormatVersion) {
    return fail(Errc::unsupported, "'" + path + "' has catalog format version " +
                                       std::to_string(version) + "; this build reads versions " +
                                       std::to_string(kFormatVersion) + " and " +
                                       std::to_string(kSealedFormatVersion));
  }
  return version;
}

uint32_t frame_crc(uint32_t length, std::span<const uint8_t> seq_type_flags_payload) {
  uint8_t len[4];
  util::put_le32(len, length);
  uint32_t crc = util::crc32c(len, sizeof len);
  return util::crc32c_extend(crc, seq_type_flags_payload.data(), seq_type_flags_payload.size());
}

void append_frame(std::vector<uint8_t>& out, uint64_t sequence, RecordType type,
                  std::span<const uint8_t> payload, std::span<const uint8_t> seal) {
  size_t start = out.size();
  out.resize(start + kFrameHeaderSize + payload.size() + seal.size());
  uint8_t* p = out.data() + start;
  auto length = static_cast<uint32_t>(payload.size() + seal.size());
  util::put_le32(p + kMagicAt, kRecordMagic);
  util::put_le32(p + kLengthAt, length);
  util::put_le64(p + kSequenceAt, sequence);
  util::put_le16(p + kTypeAt, static_cast<uint16_t>(type));
  util::put_le16(p + kFlagsAt, seal.empty() ? 0 : kFlagSealed);
  if (!payload.empty()) std::memcpy(p + kFrameHeaderSize, payload.data(), payload.size());
  if (!seal.empty())
    std::memcpy(p + kFrameHeaderSize + payload.size(), seal.data(), seal.size());
  std::span<const uint8_t> covered(p + kSequenceAt, kFrameHeaderSize - kSequenceAt + length);
  util::put_le32(p + kCrcAt, frame_crc(length, covered));
}

ScanResult scan_records(std::span<const uint8_t> bytes, uint64_t base, uint64_t last_sequence) {
  ScanResult r;
  r.last_sequence = last_sequence;
  size_t pos = 0;
  bool resynced = false;  // the previous step skipped damage and already reported the gap
  while (pos < bytes.size()) {
    Frame f;
    Defect d = probe(bytes, pos, &f);
    if (d == Defect::none && f.sequence <= r.last_sequence) {
      r.warnings.push_back({base + pos, f.size,
                            "record with sequence " + std::to_string(f.sequence) +
                                " does not follow sequence " + std::to_string(r.last_sequence) +
                                " (duplicated or replayed data); skipped"});
      pos += f.size;
      continue;
    }
    if (d == Defect::none) {
      if (!resynced && f.sequence != r.last_sequence + 1) {
        r.warnings.push_back({base + pos, 0,
                              "sequence jumps from " + std::to_string(r.last_sequence) + " to " +
                                  std::to_string(f.sequence) + " (" +
                                  std::to_string(f.sequence - r.last_sequence - 1) +
                                  " record(s) missing)"});
      }
      f.offset = base + pos;
      r.frames.push_back(f);
      r.last_sequence = f.sequence;
      pos += f.size;
      resynced = false;
      continue;
    }
    size_t next = resync(bytes, pos + 1, r.last_sequence);
    if (next == bytes.size()) {
      r.torn_tail =
          LoadWarning{base + pos, bytes.size() - pos,
                      "torn record at end of log (" + describe(d, bytes, pos) + "); ignored"};
      r.end = base + pos;
      return r;
    }
    Frame g;
    (void)probe(bytes, next, &g);
    std::string what = "damaged record (" + describe(d, bytes, pos) + "); skipped " +
                       std::to_string(next - pos) + " bytes up to the record with sequence " +
                       std::to_string(g.sequence);
    if (g.sequence > r.last_sequence + 1) {
      what += " (" + std::to_string(g.sequence - r.last_sequence - 1) + " record(s) lost)";
    }
    r.warnings.push_back({base + pos, next - pos, std::move(what)});
    pos = next;
    resynced = true;
  }
  r.end = base + pos;
  return r;
}

}  // namespace stripeback::catalog
